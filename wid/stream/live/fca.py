"""Live mode's stateful step for slide-by-tuple windows (FCA, and FCB: every n-th tuple):
replay's scan over the stream so far, each output row emitted in the micro-batch that produced it.

A slide-by-tuple window is the value of a tuple of any key, so the windows are the stream's: a
window defined after its key's punctuation passed it is emitted on the arrival of its defining
tuple, and one defined after a wildcard punctuation passed it is lost, every contribution to it
late, tuples of earlier micro-batches included (docs/semantics.md section 8.3). Any tuple may
still be needed, so the step keeps every tuple (the columns the scan and the late rows read) and
every punctuation, and per micro-batch runs the scan of replay
(:func:`wid.stream.fca_scan.elements_scanner`) over all of them: its output is replay's over the
stream so far, and the step emits the rows this micro-batch produced:

- a window whose ``emit_row`` is in it (at the end of the stream, also the windows it closes,
  ``emit_row`` NULL);
- a late (tuple, window) pair whose tuple, or the window's first defining tuple, arrived in it
  (whichever came later: the pair exists from then on).

Windows come with their partials (:func:`wid.aggregate.bin_columns.spark_partials`), which Spark
finishes as for every live kind. State and the work per micro-batch grow with the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql.types import BooleanType, DataType, LongType, StructField, StructType

from wid.aggregate.bin_columns import spark_partials
from wid.aggregate.fca import DEFINES, NULLABLE, arrow_schema, numeric_types
from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_CLOSED, WID_IN, WID_X, rattr_value
from wid.bucket.fca import units
from wid.errors import WidError
from wid.windows.numbers import Number
from wid.stream.fca_scan import LATE, elements_scanner
from wid.stream.live.arrival import aligned, stack
from wid.stream.live.state import KEPT, PaneProcessor
from wid.stream.live.windows import Layout


@dataclass(frozen=True)
class SlideStep:
    """A slide-by-tuple window in live mode: ``r``, the RANGE in ``wid_x`` units; ``dtype``, the
    attribute's type; ``every``, the n of FCB (1: every tuple defines a window); ``numeric``, the
    bins' types of the value columns (:func:`wid.aggregate.fca.numeric_types`).

    >>> from wid.compiler.query import compile_query
    >>> text = "SELECT count(*) AS n, avg(v) AS m FROM readings [RANGE 2 RATTR ts SLIDE 2 ROWS SATTR row_num]"
    >>> SlideStep.of(compile_query(spark, text))  # every 2nd tuple's ts defines a window
    SlideStep(r=2, dtype=DoubleType(), every=2, numeric={'_wid_v1': dtype('int64')})
    """

    r: Number
    dtype: DataType
    every: int
    numeric: dict[str, np.dtype]

    #: The column the step reads besides the pane step's: each tuple's exact ``x``.
    columns: ClassVar[tuple[str, ...]] = (WID_X,)

    @classmethod
    def of(cls, compiled) -> SlideStep:
        """The step of ``compiled`` (a slide-by-tuple :class:`wid.compiler.query.CompiledQuery`)."""
        numeric = numeric_types(compiled.tagged, compiled.aggregates)
        if numeric is None:
            raise WidError("live slide-by-tuple windows hold count, sum, avg, min and max of numbers (not "
                           "decimals) in their bins; query the other aggregates with wid.query")
        r, dtype = units(compiled.tagged, compiled.spec)
        return cls(r, dtype, compiled.spec.every, numeric)

    def wid(self, column: Column) -> Column:
        """The window-id as a value of the attribute's type (``column`` in ``wid_x`` units)."""
        return rattr_value(column, self.dtype)

    def processor(self, layout: Layout, events: StructType) -> SlideProcessor:
        """The stateful step (``events``: its input schema)."""
        return SlideProcessor(layout, events, self)


class SlideProcessor(PaneProcessor):
    """:class:`PaneProcessor` for slide-by-tuple windows (the module doc): frame ``held``, every
    tuple so far (the columns of ``events``, the step's input schema, that the scan and the late
    rows read, and :data:`DEFINES`); frame ``marks``, every punctuation so far; frame
    ``boundary``, the windows emitted at the last ``row_num`` of the earlier micro-batches."""

    def __init__(self, layout: Layout, events: StructType, step: SlideStep) -> None:
        super().__init__(layout)
        self.step = step
        values = [a.arg for a in layout.aggregates if a.arg is not None]
        read = dict.fromkeys([*layout.payload, *layout.keys, *values, WID_X, KEPT])
        self.held_schema = StructType([*[f for f in events.fields if f.name in read],
                                       StructField(DEFINES, BooleanType())])
        closed = layout.closed_schema
        self.marks_schema = StructType([StructField("row_num", LongType()),
                                        *[closed[c] for c in layout.bounds.pattern], closed[WID_CLOSED]])
        fields = {f.name: f for f in layout.output.fields}
        parts = [fields[name] for i, a in enumerate(layout.aggregates) for name, _ in a.partials(i)]
        self.window_schema = StructType([*[fields[k] for k in layout.keys], fields[WID]])
        self.scan_schema = arrow_schema(StructType([
            *self.window_schema.fields, *parts, StructField(EMIT_ROW, LongType()),
            StructField(REVISION, LongType()), StructField(LATE, LongType())]))

    def schemas(self) -> dict[str, StructType]:
        """:meth:`PaneProcessor.schemas`, ``held``, ``marks`` and ``boundary``."""
        return {**super().schemas(), "held": self.held_schema, "marks": self.marks_schema,
                "boundary": self.window_schema}

    def _sequence(self, events: pd.DataFrame, end: bool) -> pd.DataFrame:
        """:meth:`PaneProcessor._sequence`, the last ``row_num`` of the earlier batches kept first
        (``since``: None in the first batch)."""
        last = self.frames.row("last")
        self.since = None if last is None else int(last[0])
        return super()._sequence(events, end)

    def _advance(self, events: pd.DataFrame, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                 end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The scan over every tuple and punctuation so far: ``(results, late)`` of this batch."""
        held, marks = self.frames.get("held"), self.frames.get("marks")
        every = self.step.every  # every tuple reaches the one bucket: positions are the stream's
        arrived = tuples.assign(**{DEFINES: (len(held) + np.arange(len(tuples))) % every == every - 1})
        rows = stack([held, arrived[held.columns]]).reset_index(drop=True)
        marks = stack([marks, punctuations[marks.columns]]).reset_index(drop=True)
        self.frames.put("held", rows)
        self.frames.put("marks", marks)
        out = self._scan(rows, marks).to_pandas(types_mapper=NULLABLE.get)  # longs stay exact, NULLs and all
        late = out[LATE].notna().to_numpy()
        results = self._new(out[~late].drop(columns=[REVISION, LATE]), int(events["row_num"].max()), end)
        return results, self._late(rows, out[late])

    def _new(self, results: pd.DataFrame, last: int, end: bool) -> pd.DataFrame:
        """The windows this batch emitted: ``emit_row`` after ``since`` (at the end of the stream,
        also NULL), and at ``since`` itself those not emitted then (a punctuation right after the
        last tuple of the batch before, at its ``row_num``: frame ``boundary``)."""
        since, emit = self.since, results[EMIT_ROW]
        new = results[(emit.notna() if since is None else (emit > since).fillna(False)) | (emit.isna() & end)]
        boundary = self.frames.get("boundary")
        if since is not None:
            at = results[(emit == since).fillna(False)]
            window = list(self.window_schema.names)
            left, right = aligned(at[window], boundary, window)
            seen = left.merge(right, on=window, how="left", indicator=True)["_merge"].eq("both").to_numpy()
            new = stack([new, at[~seen]])
        emitted = new[(new[EMIT_ROW] == last).fillna(False)][list(self.window_schema.names)]
        self.frames.put("boundary", stack([boundary, emitted]) if since == last else emitted)
        return new

    def _scan(self, rows: pd.DataFrame, marks: pd.DataFrame) -> pa.Table:
        """Replay's scan (:func:`wid.stream.fca_scan.elements_scanner`) of ``rows`` and ``marks``,
        without the windows emitted before row ``since``."""
        lay, step = self.layout, self.step
        values = [a.arg for a in lay.aggregates if a.arg is not None]
        columns = list(dict.fromkeys([*lay.keys, *values, "row_num", WID_X]))
        tuples = rows[columns].assign(**{WID_IN: rows[KEPT].astype("boolean").fillna(False).astype(bool),
                                         DEFINES: rows[DEFINES].astype(bool)})
        scan = elements_scanner(step.r, list(lay.keys), list(lay.aggregates), step.numeric, lay.bounds.pattern,
                                lay.bounds.wildcard, lay.consistent, 0, self.scan_schema, spark_partials, self.since)
        plain = pa.Table.from_pandas(marks, preserve_index=False).to_pandas(types_mapper=NULLABLE.get)  # as replay's
        return scan(pa.Table.from_pandas(tuples, preserve_index=False), plain)

    def _late(self, rows: pd.DataFrame, late: pd.DataFrame) -> pd.DataFrame:
        """The late pairs this batch produced (the module doc), as the tuple's row plus ``wid``."""
        first = rows[rows[DEFINES].astype(bool)].groupby(WID_X)["row_num"].min()
        tuple_row = late[LATE].to_numpy("int64")
        when = np.maximum(tuple_row, first.reindex(late[WID]).to_numpy("int64"))
        keep = when > self.since if self.since is not None else np.ones(len(late), dtype=bool)
        pairs = pd.DataFrame({"row_num": pd.array(tuple_row[keep], dtype="Int64"),
                              WID: late[WID].to_numpy(object)[keep]})
        return rows.astype({"row_num": "Int64"}).merge(pairs, on="row_num")  # nullable: exact beside the results
