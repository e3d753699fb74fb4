"""What live mode's stateful step receives: stream elements routed to hash buckets of the
grouping keys, packed into Arrow IPC cells.

An element is a row of the bucketed stream with ``row_num``, a kind (:data:`KIND`: tuple,
mark, punctuation, end of stream) and its bucket. ``transformWithStateInPandas`` hands its
Python worker a bucket's rows one Python object at a time (pyspark regroups each Arrow batch
with ``itertuples``, ~10 us a row, most of a short window's cost), so :func:`pack`, a
stateless ``mapInArrow`` (Arrow in and out, no Python object per row), turns each Arrow batch
of a partition into one row per bucket, ``(bucket, rows)`` with ``rows`` an Arrow IPC stream,
and :func:`unpack` reads a bucket's cells back as one table.

Some columns of every tuple must reach every bucket: ``wid_closed`` when the tuples' marks
bind all keys (slack, heartbeat), ``wid_lo`` when ranges are open (landmark windows: the end of
the stream closes them at the stream's largest ``wid_lo``). Of a batch's tuples only the records
matter there (a tuple whose value exceeds that of every earlier tuple of the batch; a later, not
higher one never raises a bound), so :func:`pack` sends only those, and the batch's last tuple
(so that each bucket sees how far the stream has come), to the other buckets as narrow mark
rows.

>>> import pyarrow as pa
>>> batch = pa.record_batch({"_wid_bucket": pa.array([1, 0, 1], pa.int32()), "row_num": [4, 5, 6],
...                          "_wid_kind": pa.array([TUPLE] * 3, pa.int32()), "wid_closed": [3, 2, 3]})
>>> [cells] = pack(iter([batch]), buckets=2, spread=("wid_closed",))
>>> cells.column(0).to_pylist() == list(bucket_keys(2))
True
>>> bucket_0 = unpack([cells.column(1)[0].as_py()]).sort_by("row_num")
>>> bucket_0.column("row_num").to_pylist(), bucket_0.column("_wid_kind").to_pylist()
([4, 5, 6], [1, 0, 1])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache

import numpy as np
import pyarrow as pa


TUPLE, MARK, PUNCTUATION, END = 0, 1, 2, 3
KIND, BUCKET, ROWS = "_wid_kind", "_wid_bucket", "_wid_rows"
LAST = np.iinfo(np.int64).max  # the row_num of an end marker without one: after everything
_M32 = 0xFFFFFFFF


def spark_hash(value: int) -> int:
    """Spark's ``hash`` of an INT ``value``: Murmur3 x86 32-bit, seed 42, as a signed int (the hash
    Spark's shuffle partitions a grouping key by, ``pmod(hash(key), partitions)``).

    >>> spark_hash(0), spark_hash(1), spark_hash(-7)
    (933211791, -559580957, -1618159745)
    """
    if not -2**31 <= value < 2**31:
        raise ValueError(f"spark_hash takes an INT (32 bits), got {value}")
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _M32

    k = rotl((value & _M32) * 0xCC9E2D51 & _M32, 15) * 0x1B873593 & _M32
    h = ((rotl(42 ^ k, 13) * 5 + 0xE6546B64) & _M32) ^ 4  # length: 4 bytes
    h = (h ^ h >> 16) * 0x85EBCA6B & _M32
    h = (h ^ h >> 13) * 0xC2B2AE35 & _M32
    h ^= h >> 16
    return h - (1 << 32) if h >> 31 else h


@cache
def bucket_keys(buckets: int) -> tuple[int, ...]:
    """The stateful step's key of each hash bucket ``b``: the least whole number ``v >= 0`` with
    ``pmod(hash(v), buckets) = b``. Spark's shuffle into ``buckets`` partitions (as
    :func:`wid.stream.live.run.start` starts the query) then gives each bucket a partition, and
    a core, of its own; the keys ``0 .. buckets - 1`` would not (``hash`` sends 0 and 1 both to
    partition 1 of 2). A checkpoint's state is keyed by them: one written before they were
    (keys ``0 .. buckets - 1``) cannot be resumed.

    >>> bucket_keys(2)
    (2, 0)
    """
    keys: dict[int, int] = {}
    for v in range(2**31):
        if len(keys) == buckets:
            break
        keys.setdefault(spark_hash(v) % buckets, v)
    return tuple(keys[b] for b in range(buckets))


def _marks(batch: pa.RecordBatch, spread: tuple[str, ...]) -> pa.RecordBatch:
    """The batch's tuples that must reach every bucket, as mark rows (``row_num``, the
    ``spread`` columns and their own bucket; NULL elsewhere): the records of each ``spread``
    column in ``row_num`` order, and the last tuple."""
    tuples = np.flatnonzero(batch.column(KIND).to_numpy(zero_copy_only=False) == TUPLE)
    rows = batch.column("row_num").to_numpy(zero_copy_only=False)[tuples]
    tuples = tuples[np.argsort(rows, kind="stable")]
    keep = np.zeros(len(tuples), dtype=bool)
    keep[-1:] = True
    for name in spread:
        keep |= _records(batch.column(name).take(pa.array(tuples)))
    taken = pa.array(tuples[keep])
    given = {"row_num", BUCKET, *spread}
    columns = [batch.column(f.name).take(taken) if f.name in given else
               pa.array(np.full(len(taken), MARK, np.int32)) if f.name == KIND else pa.nulls(len(taken), f.type)
               for f in batch.schema]
    return pa.record_batch(columns, schema=batch.schema)


def _records(values: pa.Array) -> np.ndarray:
    """Per value: above every earlier one (a NULL never is), compared exactly in the column's
    own type (longs as longs, decimals as decimals: a session bound is a value of ``x``).

    >>> _records(pa.array([2**60, None, 2**60 + 100, 2**60 + 50])).tolist()
    [True, False, True, False]
    """
    if pa.types.is_integer(values.type):
        lowest = np.iinfo(np.int64).min
        exact = values.fill_null(lowest).to_numpy(zero_copy_only=False).astype("int64")
    elif pa.types.is_floating(values.type):
        lowest, exact = -np.inf, values.fill_null(np.nan).to_numpy(zero_copy_only=False).astype("float64")
        exact = np.where(np.isnan(exact), lowest, exact)
    else:
        lowest = -np.inf
        exact = np.array([lowest if v is None else v for v in values.to_pylist()], dtype=object)
    if not len(exact):
        return np.zeros(0, dtype=bool)
    before = np.maximum.accumulate(np.concatenate([np.array([lowest], dtype=exact.dtype), exact]))[:-1]
    return exact > before


def _cell(rows: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_batch(rows)
    return sink.getvalue().to_pybytes()


def pack(batches: Iterator[pa.RecordBatch], buckets: int, spread: tuple[str, ...] = ()) -> Iterator[pa.RecordBatch]:
    """Per batch, one row ``(key, IPC stream)`` per bucket ``b`` with elements, ``key`` the
    bucket's :func:`bucket_keys`: the batch's rows of bucket ``b`` and, when some columns must
    ``spread`` to every bucket, the other buckets' tuples that carry their records, as marks
    (see the module doc); schema ``(_wid_bucket int, _wid_rows binary)``.

    >>> batch = pa.record_batch({BUCKET: pa.array([1, 0, 1], pa.int32()), "row_num": [4, 5, 6],
    ...                          KIND: pa.array([TUPLE] * 3, pa.int32())})
    >>> [cells] = pack(iter([batch]), buckets=2)
    >>> cells.column(BUCKET).to_pylist(), [unpack([c])["row_num"].to_pylist() for c in cells.column(ROWS).to_pylist()]
    ([2, 0], [[5], [4, 6]])
    """
    keys = bucket_keys(buckets)
    for batch in batches:
        if not batch.num_rows:
            continue
        ids = batch.column(BUCKET).to_numpy(zero_copy_only=False)
        marks = _marks(batch, spread) if spread else None
        values, cells = [], []
        for b in range(buckets):
            rows = batch.filter(pa.array(ids == b))
            if marks is not None:
                others = marks.filter(pa.array(marks.column(BUCKET).to_numpy(zero_copy_only=False) != b))
                at = others.schema.get_field_index(BUCKET)  # the field as is (not nullable for a constant)
                others = others.set_column(at, others.schema.field(at), pa.array(np.full(others.num_rows, b, np.int32)))
                rows = pa.concat_batches([rows, others])
            if rows.num_rows:
                values.append(keys[b])
                cells.append(_cell(rows))
        yield pa.record_batch([pa.array(values, pa.int32()), pa.array(cells, pa.binary())], names=[BUCKET, ROWS])


def unpack(cells: Iterable[bytes]) -> pa.Table:
    """The rows packed into ``cells`` by :func:`pack`, in one table (in cell order).

    >>> batch = pa.record_batch({BUCKET: pa.array([1, 0, 1], pa.int32()), "row_num": [4, 5, 6],
    ...                          KIND: pa.array([TUPLE] * 3, pa.int32())})
    >>> [cells] = pack(iter([batch]), buckets=2)
    >>> unpack(cells.column(ROWS).to_pylist()).column("row_num").to_pylist()
    [5, 4, 6]
    """
    return pa.concat_tables([pa.ipc.open_stream(cell).read_all() for cell in cells])
