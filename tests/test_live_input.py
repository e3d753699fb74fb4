"""Live mode's input packing (wid.stream.live_input), against a plain-Python reading of what
each bucket must receive: its own elements, unchanged, and, when the tuples' marks bind all
keys, every record of ``wid_closed`` over the whole batch in ``row_num`` order (a tuple above
every earlier one) and the batch's last tuple, as narrow mark rows. No Spark: ``pack`` is the
function ``mapInArrow`` runs; tests/test_live.py runs it in the streaming job."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from wid.stream.live_input import BUCKET, KIND, MARK, PUNCTUATION, TUPLE, pack, unpack

BUCKETS = 3

elements = st.lists(st.tuples(st.integers(0, BUCKETS - 1), st.integers(-5, 40),  # bucket, row_num (repeats)
                              st.sampled_from([TUPLE, TUPLE, TUPLE, PUNCTUATION]),
                              st.one_of(st.none(), st.integers(-3, 12)),      # wid_closed, NULL: no bound
                              st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False))),  # a payload value
                    min_size=1, max_size=60)


def _batch(rows: list[tuple]) -> pa.RecordBatch:
    bucket, row_num, kind, closed, value = zip(*rows)
    return pa.record_batch({BUCKET: pa.array(bucket, pa.int32()), "row_num": pa.array(row_num, pa.int64()),
                            KIND: pa.array(kind, pa.int32()), "speed": pa.array(value, pa.float64()),
                            "wid_closed": pa.array(closed, pa.int64())})


def _received(rows: list[tuple], on_all: bool) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for cells in pack(iter([_batch(rows)]), BUCKETS, on_all):
        for b, cell in zip(cells.column(BUCKET).to_pylist(), cells.column("_wid_rows").to_pylist()):
            out.setdefault(b, []).extend(unpack([cell]).to_pylist())
    return out


def _records(rows: list[tuple]) -> set[int]:
    """The row_nums of the tuples whose wid_closed exceeds every earlier tuple's, and the last."""
    tuples = sorted((r for r in rows if r[2] == TUPLE), key=lambda r: r[1])
    out, high = set(), None
    for _, row_num, _, closed, _ in tuples:
        if closed is not None and (high is None or closed > high):
            out.add(row_num)
            high = closed
    return out | ({tuples[-1][1]} if tuples else set())


@given(elements)
def test_each_bucket_gets_its_own_elements_unchanged(rows):
    received = _received(rows, on_all=False)
    for b in range(BUCKETS):
        own = [{BUCKET: r[0], "row_num": r[1], KIND: r[2], "speed": r[4], "wid_closed": r[3]} for r in rows if r[0] == b]
        assert sorted(received.get(b, []), key=repr) == sorted(own, key=repr)


@given(elements)
def test_marks_on_all_keys_bring_every_record_to_every_bucket(rows):
    received, records = _received(rows, on_all=True), _records(rows)
    for b in range(BUCKETS):
        got = received.get(b, [])
        own = [r for r in got if r[KIND] != MARK]
        marks = [r for r in got if r[KIND] == MARK]
        assert len(own) == sum(r[0] == b for r in rows)
        assert all(m["speed"] is None and m[BUCKET] == b for m in marks)  # narrow rows, in this bucket
        seen = {r["row_num"] for r in got if r[KIND] in (TUPLE, MARK)}
        others = {r[1] for r in rows if r[2] == TUPLE and r[0] != b}
        assert records & others <= seen
        assert {(m["row_num"], m["wid_closed"]) for m in marks} <= {(r[1], r[3]) for r in rows
                                                                   if r[2] == TUPLE and r[0] != b}
