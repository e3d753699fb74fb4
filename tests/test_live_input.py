"""Live mode's input packing (wid.stream.live.input), against a plain-Python reading of what
each bucket must receive: its own elements, unchanged, and, for each column that must spread
to every bucket (``wid_closed`` of marks on all keys, ``wid_lo`` of open ranges), every record
of it over the whole batch in ``row_num`` order (a tuple above every earlier one) and the
batch's last tuple, as narrow mark rows: ``pack`` is the function ``mapInArrow`` runs
(tests/test_live.py runs it in the streaming job). The buckets' keys are checked against
Spark's own hash and shuffle."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.sql import functions as F

from wid.stream.live.input import BUCKET, KIND, MARK, PUNCTUATION, TUPLE, bucket_keys, pack, spark_hash, unpack

BUCKETS = 3
NAMES = (BUCKET, "row_num", KIND, "wid_closed", "wid_lo", "speed")
bound = st.one_of(st.none(), st.integers(-3, 12))  # NULL: no bound
element = st.tuples(st.integers(0, BUCKETS - 1), st.integers(-5, 40),  # bucket, row_num
                    st.sampled_from([TUPLE, TUPLE, TUPLE, PUNCTUATION]), bound, bound,
                    st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)))  # a payload value
elements = st.lists(element, min_size=1, max_size=60).map(lambda rows: [dict(zip(NAMES, r)) for r in rows])
#: Each row_num once: a mark is told from the bucket's own element of the same row_num.
distinct = st.lists(element, min_size=1, max_size=60, unique_by=lambda r: r[1]).map(
    lambda rows: [dict(zip(NAMES, r)) for r in rows])


def _batch(rows: list[dict]) -> pa.RecordBatch:
    types = {BUCKET: pa.int32(), KIND: pa.int32(), "speed": pa.float64()}
    return pa.record_batch({n: pa.array([r[n] for r in rows], types.get(n, pa.int64())) for n in NAMES})


def _received(rows: list[dict], spread: tuple[str, ...]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    bucket_of = {key: b for b, key in enumerate(bucket_keys(BUCKETS))}
    for cells in pack(iter([_batch(rows)]), BUCKETS, spread):
        for key, cell in zip(cells.column(BUCKET).to_pylist(), cells.column("_wid_rows").to_pylist()):
            out.setdefault(bucket_of[key], []).extend(unpack([cell]).to_pylist())
    return out


def _records(rows: list[dict], name: str) -> set[int]:
    """The row_nums of the tuples whose ``name`` exceeds every earlier tuple's, and the last."""
    tuples = sorted((r for r in rows if r[KIND] == TUPLE), key=lambda r: r["row_num"])
    out, high = set(), None
    for r in tuples:
        if r[name] is not None and (high is None or r[name] > high):
            out.add(r["row_num"])
            high = r[name]
    return out | ({tuples[-1]["row_num"]} if tuples else set())


@given(elements)
def test_each_bucket_gets_its_own_elements_unchanged(rows):
    received = _received(rows, ())
    for b in range(BUCKETS):
        assert sorted(received.get(b, []), key=repr) == sorted([r for r in rows if r[BUCKET] == b], key=repr)


@pytest.mark.parametrize("spread", [("wid_closed",), ("wid_lo",), ("wid_closed", "wid_lo")])
@given(rows=distinct)
def test_spread_columns_bring_every_record_to_every_bucket(spread, rows):
    received = _received(rows, spread)
    for b in range(BUCKETS):
        got = received.get(b, [])
        assert [r for r in got if r[KIND] != MARK] == [r for r in rows if r[BUCKET] == b]
        marks = [r for r in got if r[KIND] == MARK]
        assert all(m["speed"] is None and m[BUCKET] == b for m in marks)  # narrow rows, in this bucket
        others = [r for r in rows if r[KIND] == TUPLE and r[BUCKET] != b]  # a mark is another bucket's tuple
        assert {tuple(m[n] for n in ("row_num", *spread)) for m in marks} <= {
            tuple(r[n] for n in ("row_num", *spread)) for r in others}
        for name in spread:
            assert _records(rows, name) & {r["row_num"] for r in others} <= {m["row_num"] for m in marks}


@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=200))
@example([-2**31, -1, 0, 1, 2**31 - 1])
def test_spark_hash_is_the_hash_spark_computes(spark, values):
    frame = spark.createDataFrame([(v,) for v in values], "v int")
    assert [r.h for r in frame.select(F.hash("v").alias("h")).collect()] == [spark_hash(v) for v in values]


@pytest.mark.parametrize("buckets", [1, 2, 3, 4, 7, 8])
def test_each_bucket_has_a_shuffle_partition_of_its_own(spark, buckets):
    """Spark's shuffle by the bucket key (the stateful step's grouping) into as many partitions
    as buckets puts each bucket alone in one: the buckets run on as many cores."""
    keys = spark.createDataFrame([(k,) for k in bucket_keys(buckets)], "k int").repartition(buckets, "k")
    per_partition = keys.groupBy(F.spark_partition_id()).count().collect()
    assert len(per_partition) == buckets and {r["count"] for r in per_partition} == {1}
