"""The state store's row format for live mode's stateful step (:mod:`wid.stream.live.state`):
frames to and from state rows (whole numbers exact, NULLs kept), a bucket's frames kept in one
value-state row (:class:`Frames`), and the emitted sessions of a micro-batch packed into one
row (:mod:`wid.stream.live.sessions.state`)."""

from __future__ import annotations

import pickle
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.types import BinaryType, DoubleType, LongType, StructField, StructType

from wid.aggregate.fca import NULLABLE, arrow_schema
from wid.bucket.positions import plain
from wid.errors import WidError

#: Sessions: the sessions emitted in a micro-batch, ``(keys, wid, start, last)`` each, as an Arrow IPC stream.
SESSIONS = "_wid_sessions"
#: Spark's integral type names: held as pandas' nullable integers.
INTEGRAL = ("long", "integer", "short", "byte")


def records(frame: pd.DataFrame, schema: StructType) -> list[tuple]:
    """Rows of ``frame`` as tuples of Python values of ``schema``'s types, NULL as None (for a
    state store; whole numbers that pandas holds as floats become ints; numpy scalars and
    pandas timestamps become Python's).

    >>> records(pd.DataFrame({"n": [2.0, None], "x": pd.Series([np.float64(0.5), None], dtype=object)}),
    ...         StructType([StructField("n", LongType()), StructField("x", DoubleType())]))
    [(2, 0.5), (None, None)]
    """
    columns = []
    for c, field in zip(frame.columns, schema.fields):
        cast = int if field.dataType.typeName() in INTEGRAL else plain
        columns.append([None if pd.isna(v) else cast(v) for v in frame[c].tolist()])
    return list(zip(*columns))


def state_frame(rows: Iterable[tuple], schema: StructType) -> pd.DataFrame:
    """State rows (tuples of ``schema``'s fields) as a frame; whole numbers as pandas' nullable
    integers, so that a NULL among longs does not turn them into doubles (inexact past 2**53).

    >>> state_frame([(2**53 + 1,), (None,)], StructType([StructField("n", LongType())]))["n"].tolist()
    [9007199254740993, <NA>]
    """
    rows = list(rows)
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    return pd.DataFrame({f.name: pd.array(list(v), dtype="Int64") if f.dataType.typeName() in INTEGRAL
                         else pd.Series(list(v), dtype=None if rows else object)
                         for f, v in zip(schema.fields, columns)})


def history(sessions: StructType) -> pa.Schema:
    """The Arrow schema of emitted sessions ``sessions`` (keys, ``wid``, start, last), timestamps
    in UTC (as the Arrow batches Spark hands Python).

    >>> from pyspark.sql.types import DecimalType, StringType
    >>> history(StructType([StructField("k", StringType()), StructField("wid", LongType()),
    ...                     StructField("start", DecimalType(12, 3)), StructField("last", DecimalType(12, 3))])).types
    [DataType(string), DataType(int64), Decimal128Type(decimal128(12, 3)), Decimal128Type(decimal128(12, 3))]
    """
    return arrow_schema(sessions)


def packed(added: pd.DataFrame, arrow: pa.Schema) -> bytes:
    """Emitted sessions ``added`` (``arrow``'s columns: keys, ``wid``, start, last), one row
    each, as one Arrow IPC stream: a state row per micro-batch, not per session or key.

    >>> arrow = pa.schema([("k", pa.string()), ("wid", pa.int64()), ("s", pa.int64()), ("e", pa.int64())])
    >>> cell = packed(pd.DataFrame({"k": ["a", None, "a"], "wid": [0, 0, 1], "s": [1, 2, 5], "e": [3, 2, 9]}), arrow)
    >>> unpacked([cell, cell], arrow).values.tolist()[:3], unpacked([], arrow).columns.tolist()
    ([['a', 0, 1, 3], [None, 0, 2, 2], ['a', 1, 5, 9]], ['k', 'wid', 's', 'e'])
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, arrow) as writer:
        writer.write_table(pa.Table.from_pandas(added[arrow.names], schema=arrow, preserve_index=False))
    return sink.getvalue().to_pybytes()


def unpacked(cells: Iterable[bytes], arrow: pa.Schema) -> pd.DataFrame:
    """The sessions of :func:`packed` cells, one row each: ``arrow``'s columns.

    >>> arrow = pa.schema([("k", pa.string()), ("wid", pa.int64())])
    >>> cells = [packed(pd.DataFrame({"k": ["a", None], "wid": [2**53 + 1, 4]}), arrow),
    ...          packed(pd.DataFrame({"k": ["b"], "wid": [7]}), arrow)]
    >>> unpacked(cells, arrow)["wid"].tolist(), unpacked(cells, arrow)["wid"].dtype
    ([9007199254740993, 4, 7], Int64Dtype())
    """
    tables = [pa.ipc.open_stream(cell).read_all() for cell in cells]
    return (pa.concat_tables(tables) if tables else arrow.empty_table()).to_pandas(types_mapper=NULLABLE.get)


def frame_rows(cell: bytes | bytearray) -> dict[str, list[tuple]]:
    """The state rows, by frame name, of a :class:`Frames` value-state row's cell.

    >>> frames = Frames(None, {"n": StructType([StructField("n", LongType())])})
    >>> frames.put("n", pd.DataFrame({"n": [3.0, None]})); frames.set_row("last", (7, 1))
    >>> frame_rows(frames.cell()[0])
    {'n': [(3,), (None,)], 'last': [(7, 1)], '_wid_fields': {'n': ['n']}}
    """
    return pickle.loads(cell)


class Frames:
    """A bucket's state frames (name -> state rows of ``schemas[name]``), kept pickled in one
    value-state row of :attr:`SCHEMA`: read once and written once per micro-batch (each call to
    Spark's state server is a round trip of several milliseconds; the step made a dozen). The
    whole bucket travels as one message each way (Spark's limit: 2 GB), as a list state's
    ``put`` rewrote it whole before. ``cell``: that row's value (None: no state yet).

    >>> schemas = {"n": StructType([StructField("n", LongType())])}
    >>> frames = Frames(None, schemas)
    >>> frames.put("n", pd.DataFrame({"n": [2**53 + 1]})); frames.set_row("last", (7, None))
    >>> again = Frames(frames.cell(), schemas)
    >>> again.get("n")["n"].tolist(), again.row("last"), again.row("top")
    ([9007199254740993], (7, None), None)
    >>> Frames(frames.cell(), {"n": StructType([StructField("k", LongType()), StructField("n", LongType())])})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    wid.errors.WidError: the checkpoint's state has another layout (written by another query or an older wid): ...
    """

    SCHEMA = StructType([StructField("frames", BinaryType())])
    #: The entry holding each frame's column names, checked when the state is read back: state
    #: written for another layout (another query, an older wid) is refused, never misread.
    FIELDS = "_wid_fields"

    def __init__(self, cell: tuple[bytes | bytearray] | None, schemas: dict[str, StructType]) -> None:
        self.rows = frame_rows(cell[0]) if cell else {}
        self.schemas = schemas
        fields = self.rows.pop(self.FIELDS, None)
        if self.rows and fields != self._fields():
            raise WidError("the checkpoint's state has another layout (written by another query or an older wid): "
                           "start the query with a fresh checkpoint")

    def get(self, name: str) -> pd.DataFrame:
        """Frame ``name`` (empty, with its columns, when there is none)."""
        return state_frame(self.rows.get(name, []), self.schemas[name])

    def put(self, name: str, frame: pd.DataFrame) -> None:
        """Frame ``name`` replaced by ``frame`` (its columns in the schema's order)."""
        self.rows[name] = records(frame, self.schemas[name])

    def row(self, name: str) -> tuple | None:
        """The one row ``name`` (:meth:`set_row`), None when there is none."""
        return self.rows.get(name, [None])[0]

    def set_row(self, name: str, value: tuple) -> None:
        """The one row ``name`` replaced by ``value`` (Python values)."""
        self.rows[name] = [value]

    def cell(self) -> tuple[bytes]:
        """The value-state row holding every frame (and their column names)."""
        # protocol fixed: a checkpoint outlives the Python that wrote it
        return (pickle.dumps({**self.rows, self.FIELDS: self._fields()}, protocol=5),)

    def _fields(self) -> dict[str, list[str]]:
        return {name: schema.names for name, schema in self.schemas.items()}
