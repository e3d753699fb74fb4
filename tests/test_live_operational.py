"""Live SPL and Flink windows (docs/semantics.md section 10): the scan of replay run a micro-batch
at a time, its state pickled between batches as the stateful step keeps it, emits every window
of the event-by-event simulators of tests/operational_sim.py (independent oracles), with the
same tuples and the same firing row, whatever the batch boundaries. pandas only (no Spark); the
Spark runs against wid.replay are in tests/test_live.py."""

from __future__ import annotations

import pickle
from functools import partial

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.operational_sim import simulate, simulate_flink
from wid.bucket.clock import T
from wid.bucket.flink.scan import Buffers
from wid.bucket.positions import LiveScan
from wid.bucket.spl.scan import Scanner
from wid.errors import WidError
from wid.windows.flink import (CountEviction, CountTrigger, DeltaEviction, DeltaTrigger, Discretization,
                            PunctuationEviction, PunctuationTrigger, TimeEviction, TimeTrigger, TumblingEviction)
from wid.windows.spl_clause import parse_spl

#: Every policy of seed 003's tables, partitioned and not, with partition eviction.
CLAUSES = ["tumbling, count(3)", "tumbling, count(2) partitioned BY k", "tumbling, delta(v, 2.5) partitioned BY k",
           "tumbling, time(1.5)", "tumbling, time(2) partitioned BY k", "tumbling, punct() partitioned BY k",
           "tumbling, punct() partitioned BY k, partitionCount(2)", "tumbling, count(4) partitioned BY k, tupleCount(3)",
           "sliding, count(3), count(1)", "sliding, count(4), count(2) partitioned BY k, aggregatePartialWindows(false)",
           "sliding, delta(v, 3), count(2) partitioned BY k", "sliding, count(3), delta(v, 1.5) partitioned BY k",
           "sliding, time(2.5), time(1)", "sliding, time(2), count(2) partitioned BY k",
           "sliding, count(5), time(1.5) partitioned BY k, partitionAge(3)"]
#: Every trigger and eviction policy of seed 001, per group and not; active time TPs share the clock.
DISCRETIZATIONS = [
    Discretization([TimeTrigger(1.5), CountTrigger(4)], [CountEviction(5)], per_group=("k",)),
    Discretization([DeltaTrigger(3, "v"), CountTrigger(5)], [TumblingEviction(), CountEviction(3)]),
    Discretization([PunctuationTrigger(), CountTrigger(6)], [PunctuationEviction(), TimeEviction(3)], per_group=("k",)),
    Discretization([TimeTrigger(1, active=False)], [TimeEviction(2.5)], per_group=("k",)),
    Discretization([TimeTrigger(2, delay=1, start=0)], [TimeEviction(4)], per_group=("k",)),
    Discretization([CountTrigger(3)], [DeltaEviction(2, "v")], per_group=("k",)),
    Discretization([TimeTrigger(1)], [CountEviction(3, delete=2)]),
]


@st.composite
def streams(draw, least: int = 0) -> list[dict]:
    """Tuples in arrival order: row_num with gaps, keys with NULLs (strings, or doubles: NaN in
    pandas), values with decimals, negative and repeated; an arrival clock with ties; about one
    punctuation row in ten."""
    n = draw(st.integers(least, 40))
    keys = draw(st.sampled_from([["a", "b", None], [1.5, -2.0, None]]))
    rows, t = [], draw(st.sampled_from([0.0, 1.5, 1000.25]))
    row_num = draw(st.sampled_from([0, 2**62 + 1]))  # far from 0 too (a nanosecond clock: past 2**53)
    for _ in range(n):
        row_num += draw(st.integers(1, 3))
        t += draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5]))
        rows.append({"row_num": row_num, "k": draw(st.sampled_from(keys)),
                     "v": draw(st.sampled_from([-1.5, 0.0, 0.1, 2.3, 2.3, 4.75, 7.0])), "arrival_ts": t,
                     "punct": draw(st.integers(0, 9)) == 0})
    return rows


def live_windows(scan: LiveScan, rows: list[dict], cuts: list[int]) -> dict:
    """``(key, wid) -> (row_nums, emit_row)`` of ``scan`` over ``rows`` in micro-batches cut at
    ``cuts``, the state pickled between them as the stateful step keeps it."""
    frame = pd.DataFrame(rows, columns=["row_num", "k", "v", "arrival_ts", "punct"]).assign(**{T: lambda f: f["arrival_ts"]})
    held, values, out = frame.iloc[0:0], None, {}
    bounds = [0, *sorted(set(cuts)), len(frame)]
    for last, (start, stop) in enumerate(zip(bounds, bounds[1:]), 2 - len(bounds)):
        batch = pd.concat([held, frame.iloc[start:stop]]).reset_index(drop=True)
        scanner = scan.scanner(batch)
        if values is not None:
            scanner.resume(pickle.loads(values))
        scanner.advance(len(held))
        if last == 0:  # the end-of-stream marker comes with the last batch
            scanner.finish()
        for (key, wid, at), members in zip(scanner.fired, scanner.members):
            if members:
                assert (key, wid) not in out, "a window emitted twice"
                out[(key, wid)] = (sorted(batch["row_num"].iloc[members]),
                                   None if at is None else int(batch["row_num"].iat[at]))
        state, kept = scanner.state()
        values, held = pickle.dumps(state, protocol=5), batch.iloc[kept]
    return out


def spl(clause: str) -> LiveScan:
    spec = parse_spl(clause)
    return LiveScan(partial(Scanner, spec, scale=1, members=True), (T,), spec.partition_by, spec.partition_by)


def flink(d: Discretization) -> LiveScan:
    return LiveScan(partial(Buffers, d, scale=1), (T,), d.per_group, d.per_group)


def expected(windows: list, fired: dict) -> dict:
    return {(key, wid): (sorted(r["row_num"] for r in content), fired[(key, wid)]) for key, wid, content in windows}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(clause=st.sampled_from(CLAUSES), rows=streams(), data=st.data())
def test_spl_scanned_a_batch_at_a_time_emits_the_simulators_windows(clause, rows, data):
    cuts = data.draw(st.lists(st.integers(0, len(rows)), max_size=5))
    fired = {}
    assert live_windows(spl(clause), rows, cuts) == expected(simulate(rows, parse_spl(clause), fired), fired)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(d=st.sampled_from(DISCRETIZATIONS), rows=streams(1), data=st.data())  # the simulator needs a row
def test_flink_scanned_a_batch_at_a_time_emits_the_simulators_windows(d, rows, data):
    cuts = data.draw(st.lists(st.integers(0, len(rows)), max_size=5))
    fired = {}
    assert live_windows(flink(d), rows, cuts) == expected(simulate_flink(rows, d, fired), fired)


def test_a_clock_going_back_across_micro_batches_is_an_error():
    rows = [{"row_num": 1, "k": "a", "v": 0.0, "arrival_ts": 5.0, "punct": False},
            {"row_num": 2, "k": "a", "v": 0.0, "arrival_ts": 4.0, "punct": False}]
    with pytest.raises(WidError, match="arrival_ts decreases in row_num order at row_num=2"):
        live_windows(spl("tumbling, time(1)"), rows, [1])
    with pytest.raises(WidError, match="arrival_ts decreases in row_num order at row_num=2"):
        live_windows(flink(Discretization([TimeTrigger(1)])), rows, [1])


def test_a_partition_evicted_in_one_micro_batch_keeps_its_numbering_in_the_next():
    """partitionCount(1): b's arrival evicts a; a comes back after the batch boundary as window 1."""
    rows = [{"row_num": i, "k": k, "v": 0.0, "arrival_ts": 0.0, "punct": False} for i, k in enumerate("aba")]
    windows = live_windows(spl("tumbling, count(1) partitioned BY k, partitionCount(1)"), rows, [2])
    assert windows == {(("a",), 0): ([0], 0), (("b",), 0): ([1], 1), (("a",), 1): ([2], 2)}
