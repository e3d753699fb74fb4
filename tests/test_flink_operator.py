"""Flink's window operator (assigner, trigger, evictor, allowed lateness): expected results
transcribed from Flink's own WindowOperatorTest and EvictingWindowOperatorTest, and properties
against an event-by-event simulator written here after Flink's WindowOperator code.

The Flink tests drive a keyed operator with elements ``("key2", 1)`` at millisecond timestamps
and watermarks. Here an element is a row ``(k, v, ts)`` (``ts`` a long in ms; the operator's
sizes in ms) and ``Watermark(W)`` an embedded punctuation right after the element before it with
bound ``W + 1`` (no element with ``ts < W + 1``, i.e. ``ts <= W``, arrives after it). Flink's
output timestamp is the window's ``maxTimestamp`` = ``window_end - 1`` (``Long.MAX_VALUE`` for
the global window: ``window_end`` NULL). A test without watermarks is the query itself.

Sources (apache/flink, flink-streaming-java/src/test/java/org/apache/flink/streaming/runtime/
operators/windowing/): WindowOperatorTest.java (the current JUnit 5 file) and
EvictingWindowOperatorTest.java.
"""

from __future__ import annotations

import heapq
import math
from datetime import datetime
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wid
from wid.bucket.flink.operator import bucket, path
from wid.bucket.flink.keyed import KeyOperator
from wid.errors import WidError
from wid.windows.flink import (CountEvictor, EventTimeSessionWindows, EventTimeTrigger, GlobalWindows, PurgingTrigger,
                            SlidingEventTimeWindows, TimeEvictor, TumblingEventTimeWindows, WindowOperator)
from wid.windows.flink_operator import CountTrigger

MAX = 2**63 - 1  # Long.MAX_VALUE: the global window's maxTimestamp
QUERY = "SELECT k, sum(v) AS total FROM flink_in [flink] GROUP BY k"


class Harness:
    """``wid.replay`` of the harness calls ``steps`` (``("key2", 1, 3999)`` is
    ``processElement(new StreamRecord<>(new Tuple2<>("key2", 1), 3999))``, an int ``W`` is
    ``processWatermark(new Watermark(W))``; the rows numbered in order from 0), its results and
    late rows collected once."""

    def __init__(self, spark, steps, operator):
        rows, marks = [], []
        for step in steps:
            if isinstance(step, tuple):
                rows.append((len(rows), *step))
            else:
                marks.append((len(rows) - 1, step + 1))
        spark.createDataFrame(rows, "row_num long, k string, v long, ts long").createOrReplaceTempView("flink_in")
        punctuation = wid.punctuate.embedded(spark.createDataFrame(marks, "row_num long, ts long")) if marks else None
        self.replay = wid.replay(spark, QUERY, punctuation, window=operator)
        self.results = self.replay.results.collect()

    @property
    def late(self):
        """The late rows, collected when a test reads them."""
        return self.replay.late.collect()

    def outputs(self):
        """Flink's ``Tuple2ResultSortComparator`` view of the output: ``(key, sum, timestamp)`` sorted."""
        return sorted((r.k, r.total, MAX if r.window_end is None else r.window_end - 1) for r in self.results)

    def sessions(self):
        """The ``SessionWindowFunction``'s ``(key-sum, start, end)``, sorted."""
        return sorted((f"{r.k}-{r.total}", r.window_start, r.window_end) for r in self.results)

    def side_output(self):
        """The late elements every window of which was late, each once: ``(key, value, timestamp)``."""
        late = {(r.row_num, r.k, r.v, r.ts) for r in self.late if r.side_output}
        return sorted((k, v, ts) for _, k, v, ts in late)


# --- WindowOperatorTest ----------------------------------------------------------------------

ELEMENTS = [("key2", 1, 3999), ("key2", 1, 3000), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
            ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000)]


def test_sliding_event_time_windows_reduce(spark):
    """WindowOperatorTest.testSlidingEventTimeWindowsReduce: SlidingEventTimeWindows.of(3 s, 1 s),
    EventTimeTrigger; the elements added out of order, then watermarks 999 to 7999."""
    op = WindowOperator(SlidingEventTimeWindows(3000, 1000))
    rep = Harness(spark, [*ELEMENTS, 999, 1999, 2999, 3999, 4999, 5999, 6999, 7999], op)
    assert rep.outputs() == sorted([("key1", 3, 999), ("key1", 3, 1999), ("key2", 3, 1999), ("key1", 3, 2999),
                                   ("key2", 3, 2999), ("key2", 5, 3999), ("key2", 2, 4999), ("key2", 2, 5999)])
    # each window fires on the watermark that passes it (all after the last element, row 7), once
    assert {(r.wid, r.emit_row) for r in rep.results} == {(0, 7)}


def test_tumbling_event_time_windows_reduce(spark):
    """WindowOperatorTest.testTumblingEventTimeWindowsReduce: TumblingEventTimeWindows.of(3 s)."""
    rep = Harness(spark, [*ELEMENTS, 999, 1999, 2999, 3999, 4999, 5999, 6999, 7999],
                        WindowOperator(TumblingEventTimeWindows(3000)))
    assert rep.outputs() == sorted([("key1", 3, 2999), ("key2", 3, 2999), ("key2", 2, 5999)])


@pytest.mark.slow
def test_session_windows_with_count_trigger(spark):
    """WindowOperatorTest.testSessionWindowsWithCountTrigger: EventTimeSessionWindows.withGap(3 s),
    PurgingTrigger.of(CountTrigger.of(4)), no watermark. key1's two sessions (counts 3 and 3)
    merge on the element at 4500: count 3 + 3 + 1 >= 4 fires the merged session."""
    steps = [("key2", 1, 0), ("key2", 2, 1000), ("key2", 3, 2500), ("key2", 4, 3500),
             ("key1", 1, 10), ("key1", 2, 1000), ("key1", 3, 2500),
             ("key1", 1, 6000), ("key1", 2, 6500), ("key1", 3, 7000), ("key1", 10, 4500)]
    rep = Harness(spark, steps, WindowOperator(EventTimeSessionWindows(3000), PurgingTrigger(CountTrigger(4))))
    assert rep.sessions() == [("key1-22", 10, 10000), ("key2-10", 0, 6500)]
    # the count trigger fires on the arrival of the 4th (key2, row 3) and of the merging element (row 10)
    assert sorted((r.k, r.emit_row) for r in rep.results) == [("key1", 10), ("key2", 3)]
    # the query is the same operator over the whole stream: the same firings
    query = wid.query(spark, QUERY, WindowOperator(EventTimeSessionWindows(3000), PurgingTrigger(CountTrigger(4))))
    assert sorted(tuple(r) for r in query.collect()) == [(0, 0, 6500, "key2", 10), (0, 10, 10000, "key1", 22)]


@pytest.mark.slow
def test_side_output_due_to_lateness_tumbling(spark):
    """WindowOperatorTest.testSideOutputDueToLatenessTumbling: tumbling 2 s, lateness 0. The element
    at 1980 after watermark 1985 is kept (its window ends after it); the one at 1998 after
    watermark 1999 goes to the side output."""
    steps = [("key2", 1, 1000), 1985, ("key2", 1, 1980), 1999, ("key2", 1, 1998), ("key2", 1, 2001), 2999, 3999]
    rep = Harness(spark, steps, WindowOperator(TumblingEventTimeWindows(2000)))
    assert rep.outputs() == [("key2", 1, 3999), ("key2", 2, 1999)]
    assert rep.side_output() == [("key2", 1, 1998)]
    assert sorted((r.window_end, r.emit_row) for r in rep.results) == [(2000, 1), (4000, 3)]


def test_side_output_due_to_lateness_sliding(spark):
    """WindowOperatorTest.testSideOutputDueToLatenessSliding: sliding 3 s by 1 s, lateness 0. The
    elements at 2400 skip their window ending at 2999 (late) and join the later two; the
    element at 3001 after watermark 6000 is late for all its windows: side output."""
    steps = [("key2", 1, 1000), 1999, ("key2", 1, 2000), 3000, ("key1", 1, 3001), ("key2", 1, 2400),
             ("key2", 1, 2400), ("key1", 1, 3001), ("key2", 1, 3900), 6000, ("key1", 1, 3001), 25000]
    rep = Harness(spark, steps, WindowOperator(SlidingEventTimeWindows(3000, 1000)))
    assert rep.outputs() == sorted([("key2", 1, 1999), ("key2", 2, 2999), ("key2", 5, 3999), ("key1", 2, 3999),
                                   ("key2", 4, 4999), ("key1", 2, 4999), ("key2", 1, 5999), ("key1", 2, 5999)])
    assert rep.side_output() == [("key1", 1, 3001)]
    # wid also reports what Flink drops without a side output: the 2400s' window [0, 3000)
    assert sorted((r.ts, r.window_end, r.side_output) for r in rep.late) == [
        (2400, 3000, False), (2400, 3000, False), (3001, 4000, True), (3001, 5000, True), (3001, 6000, True)]


SESSION_STEPS = [("key2", 1, 1000), 1999, ("key2", 1, 2000), 4998, ("key2", 1, 4500), ("key2", 1, 8500), 7400,
                 ("key2", 1, 7000), 11501, ("key2", 1, 11600), 14600]


def test_side_output_due_to_lateness_session_zero_lateness_purging_trigger(spark):
    """WindowOperatorTest.testSideOutputDueToLatenessSessionZeroLatenessPurgingTrigger: gap 3 s,
    PurgingTrigger(EventTimeTrigger), lateness 0: sessions cleaned up at their end are forgotten;
    10000 and 10100 are late (and not merged with each other), 14500 starts a new session."""
    steps = [*SESSION_STEPS, ("key2", 1, 10000), ("key2", 1, 10100), ("key2", 1, 14500), 20000, 100000]
    op = WindowOperator(EventTimeSessionWindows(3000), PurgingTrigger(EventTimeTrigger()))
    rep = Harness(spark, steps, op)
    assert rep.sessions() == [("key2-1", 11600, 14600), ("key2-1", 14500, 17500), ("key2-5", 1000, 11500)]
    assert rep.side_output() == [("key2", 1, 10000), ("key2", 1, 10100)]


def test_side_output_due_to_lateness_session_zero_lateness(spark):
    """WindowOperatorTest.testSideOutputDueToLatenessSessionZeroLateness: the same with EventTimeTrigger."""
    steps = [*SESSION_STEPS, ("key2", 1, 10000), ("key2", 1, 14500), 20000, 100000]
    rep = Harness(spark, steps, WindowOperator(EventTimeSessionWindows(3000)))
    assert rep.sessions() == [("key2-1", 11600, 14600), ("key2-1", 14500, 17500), ("key2-5", 1000, 11500)]
    assert rep.side_output() == [("key2", 1, 10000)]


def test_drop_due_to_lateness_session_with_lateness_purging_trigger(spark):
    """WindowOperatorTest.testDropDueToLatenessSessionWithLatenessPurgingTrigger: lateness 10 ms
    keeps session [11600, 14600) (purged) until 14610: 10000 merges with it and fires at once
    (the merged end 14600 is behind the watermark), alone since the contents were purged."""
    steps = [*SESSION_STEPS, ("key2", 1, 10000), ("key2", 1, 14500), 20000, 100000]
    op = WindowOperator(EventTimeSessionWindows(3000), PurgingTrigger(EventTimeTrigger()), allowed_lateness=10)
    rep = Harness(spark, steps, op)
    assert rep.sessions() == [("key2-1", 10000, 14600), ("key2-1", 10000, 17500), ("key2-1", 11600, 14600),
                             ("key2-5", 1000, 11500)]
    assert rep.late == []
    # the watermark after row 5 fires [11600, 14600); the late firing comes on the element's arrival
    # (row 6), as Flink's onElement FIRE
    assert sorted((r.window_start, r.emit_row) for r in rep.results if r.window_end == 14600) == [(10000, 6),
                                                                                                   (11600, 5)]


def test_not_side_output_due_to_lateness_session_with_lateness(spark):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithLateness: the accumulating
    EventTimeTrigger with lateness 10 ms: the merged session [10000, 14600) fires with 2 elements,
    then [10000, 17500) with 3."""
    steps = [*SESSION_STEPS, ("key2", 1, 10000), ("key2", 1, 14500), 20000, 100000]
    rep = Harness(spark, steps, WindowOperator(EventTimeSessionWindows(3000), allowed_lateness=10))
    assert rep.sessions() == [("key2-1", 11600, 14600), ("key2-2", 10000, 14600), ("key2-3", 10000, 17500),
                             ("key2-5", 1000, 11500)]
    assert rep.late == []


@pytest.mark.slow
def test_not_side_output_due_to_lateness_session_with_huge_lateness(spark):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithHugeLateness (10 s) and its
    PurgingTrigger twin testNotSideOutputDueToLatenessSessionWithHugeLatenessPurgingTrigger:
    10000 merges both kept sessions into [1000, 14600), fired at once."""
    steps = [*SESSION_STEPS, ("key2", 1, 10000), ("key2", 1, 14500), 20000, 100000]
    accumulating = Harness(spark, steps, WindowOperator(EventTimeSessionWindows(3000), allowed_lateness=10000))
    assert accumulating.sessions() == [("key2-1", 11600, 14600), ("key2-5", 1000, 11500), ("key2-7", 1000, 14600),
                                      ("key2-8", 1000, 17500)]
    purging = Harness(spark, steps, WindowOperator(EventTimeSessionWindows(3000),
                                                         PurgingTrigger(EventTimeTrigger()), allowed_lateness=10000))
    assert purging.sessions() == [("key2-1", 1000, 14600), ("key2-1", 1000, 17500), ("key2-1", 11600, 14600),
                                 ("key2-5", 1000, 11500)]
    # firings of one session are numbered in order: [1000, 11500) then [1000, 14600) then [1000, 17500)
    assert sorted((r.window_end, r.wid) for r in purging.results if r.window_start == 1000) == [
        (11500, 0), (14600, 1), (17500, 2)]


# --- EvictingWindowOperatorTest --------------------------------------------------------------

EVICTING = [("key2", 1, 3000), ("key2", 1, 3999), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
            ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000)]


def test_count_trigger(spark):
    """EvictingWindowOperatorTest.testCountTrigger: GlobalWindows, CountTrigger.of(2),
    CountEvictor.of(4) (before the function): windows of the last 4 every 2 elements."""
    steps = [*EVICTING, ("key1", 1, 10999), ("key2", 1, 1000)]
    rep = Harness(spark, steps, WindowOperator(GlobalWindows(), CountTrigger(2), CountEvictor(4)))
    assert rep.outputs() == sorted([("key2", 2, MAX), ("key2", 4, MAX), ("key1", 2, MAX), ("key1", 4, MAX),
                                   ("key2", 4, MAX)])


def test_count_evictor_evict_after(spark):
    """EvictingWindowOperatorTest.testCountEvictorEvictAfter: CountEvictor.of(4, true): the firing
    sees every element, then all but the last 4 leave."""
    steps = [*EVICTING, ("key1", 1, 10999), ("key2", 1, 1000), ("key2", 1, 1000), ("key2", 1, 1000)]
    rep = Harness(spark, steps, WindowOperator(GlobalWindows(), CountTrigger(2), CountEvictor(4, evict_after=True)))
    assert rep.outputs() == sorted([("key2", 2, MAX), ("key2", 4, MAX), ("key1", 2, MAX), ("key1", 4, MAX),
                                   ("key2", 6, MAX), ("key2", 6, MAX)])
    assert sorted((r.k, r.wid, r.emit_row) for r in rep.results) == [
        ("key1", 0, 3), ("key1", 1, 8), ("key2", 0, 1), ("key2", 1, 6), ("key2", 2, 9), ("key2", 3, 11)]


def test_time_evictor_evict_after(spark):
    """EvictingWindowOperatorTest.testTimeEvictorEvictAfter: TimeEvictor.of(2 s, true) keeps the
    elements with a timestamp above the largest minus 2 s, whatever their order (not FIFO)."""
    steps = [("key2", 1, 1000), ("key2", 1, 4000), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
             ("key2", 1, 3500), ("key2", 1, 2001), ("key2", 1, 1001), ("key1", 1, 10999), ("key2", 1, 1002)]
    rep = Harness(spark, steps, WindowOperator(GlobalWindows(), CountTrigger(2), TimeEvictor(2000, evict_after=True)))
    assert rep.outputs() == sorted([("key2", 2, MAX), ("key1", 2, MAX), ("key2", 3, MAX), ("key1", 4, MAX),
                                   ("key2", 5, MAX)])


def test_time_evictor_evict_before(spark):
    """EvictingWindowOperatorTest.testTimeEvictorEvictBefore: TumblingEventTimeWindows.of(4 s),
    CountTrigger.of(2), TimeEvictor.of(2 s): key2's first firing keeps 3999 only (1000 <= 3999 - 2000)."""
    steps = [("key2", 1, 1000), ("key2", 1, 3999), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
             ("key1", 1, 5999), ("key2", 1, 3500), ("key2", 1, 2001), ("key2", 1, 1001), ("key1", 1, 6500),
             ("key2", 1, 1002)]
    rep = Harness(spark, steps, WindowOperator(TumblingEventTimeWindows(4000), CountTrigger(2), TimeEvictor(2000)))
    assert rep.outputs() == sorted([("key2", 1, 3999), ("key1", 2, 3999), ("key2", 3, 3999), ("key1", 2, 7999),
                                   ("key2", 3, 3999)])


# --- user errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("build, message", [
    (lambda: TumblingEventTimeWindows(-5), "TumblingEventTimeWindows size must be positive, got -5"),
    (lambda: SlidingEventTimeWindows(10, 0), "SlidingEventTimeWindows slide must be positive, got 0"),
    (lambda: TumblingEventTimeWindows(5, offset=5), "offset must lie strictly between -5 and 5, got 5"),
    (lambda: EventTimeSessionWindows(0), "EventTimeSessionWindows gap must be positive, got 0"),
    (lambda: EventTimeSessionWindows(30, slide=10), "EventTimeSessionWindows takes a gap, not a slide"),
    (lambda: CountTrigger(-2), "CountTrigger count must be a positive whole number, got -2"),
    (lambda: CountEvictor(0), "CountEvictor max_count must be a positive whole number, got 0"),
    (lambda: TimeEvictor(0), "TimeEvictor size must be positive, got 0"),
    (lambda: WindowOperator(GlobalWindows()), "GlobalWindows needs a trigger"),
    (lambda: WindowOperator("tumbling"), "the assigner is TumblingEventTimeWindows"),
    (lambda: WindowOperator(GlobalWindows(), CountTrigger(2), CountTrigger(3)), "the evictor is CountEvictor"),
    (lambda: WindowOperator(TumblingEventTimeWindows(5), allowed_lateness=-1), "allowed_lateness must be"),
])
def test_bad_operators_are_refused_in_one_line(build, message):
    with pytest.raises(WidError, match=message) as error:
        build()
    assert "\n" not in str(error.value)


def test_replay_takes_lateness_from_the_operator_and_sql_is_refused(spark):
    spark.createDataFrame([(0, "key2", 1, 1000)], "row_num long, k string, v long, ts long") \
        .createOrReplaceTempView("flink_in")
    op = WindowOperator(TumblingEventTimeWindows(2000))
    with pytest.raises(WidError, match="allowed_lateness=2"):
        wid.replay(spark, QUERY, allowed_lateness=2, window=op)
    with pytest.raises(WidError, match="not compiled to SQL"):
        wid.to_sql(spark, QUERY, window=op)


# --- the simulator ---------------------------------------------------------------------------


class FlinkSim:
    """Flink's ``WindowOperator``/``EvictingWindowOperator`` as their Java code reads, for one
    key: a merging window set (window -> state window), list state and a count per state window,
    a timer queue deduplicated per (time, window), the watermark ``wm`` (bounds as fractions:
    ``isWindowLate`` is ``end + L <= wm``, ``EventTimeTrigger`` fires when ``end <= wm``).
    ``out``: ``(start, end, emit, values)`` per firing; ``late``: ``(index, start, end, side)``."""

    def __init__(self, op: WindowOperator, xs: list[Fraction]):
        self.op, self.xs = op, xs
        self.purge = isinstance(op.trigger, PurgingTrigger)
        self.trig = op.trigger.trigger if self.purge else op.trigger
        self.L = Fraction(str(op.allowed_lateness))
        self.wm = -math.inf
        self.state: dict = {}  # state window -> list of element indices
        self.count: dict = {}
        self.merging: dict = {}  # session window -> state window
        self.timers: set = set()
        self.queue: list = []
        self.out, self.late = [], []

    def windows(self, x):
        a = self.op.assigner
        if isinstance(a, GlobalWindows):
            return [(-math.inf, math.inf)]
        if isinstance(a, EventTimeSessionWindows):
            return [(x, x + Fraction(str(a.gap)))]
        size, slide = Fraction(str(a.size)), Fraction(str(a.slide))
        offset = Fraction(str(a.offset))
        start = x - (x - offset) % slide  # getWindowStartWithOffset, floored
        out = []
        while start > x - size:
            out.append((start, start + size))
            start -= slide
        return out

    def timer(self, time, window):
        if (time, window) not in self.timers:
            self.timers.add((time, window))
            heapq.heappush(self.queue, (time, window))

    def add_session(self, new):
        """``MergingWindowSet.addWindow``: sort, sweep-merge, merge the state of the new window's group."""
        ws = sorted([*self.merging, new])
        groups, cur = [], [ws[0]]
        for w in ws[1:]:
            cover = (min(c[0] for c in cur), max(c[1] for c in cur))
            if cover[0] <= w[1] and cover[1] >= w[0]:  # TimeWindow.intersects
                cur.append(w)
            else:
                groups.append(cur)
                cur = [w]
        groups.append(cur)
        group = next(g for g in groups if new in g)
        result = (min(w[0] for w in group), max(w[1] for w in group))
        old = [w for w in group if w != new and w in self.merging]
        if old == [result]:
            return result
        if not old:
            self.merging[result] = result
            return result
        target = self.merging[old[0]]
        for w in old:
            sw = self.merging.pop(w)
            self.timers.discard((w[1], w))  # trigger.clear() and deleteCleanupTimer of merged windows
            self.timers.discard((w[1] + self.L, w))
            if sw != target:
                self.state.setdefault(target, []).extend(self.state.pop(sw, []))
                self.count[target] = self.count.get(target, 0) + self.count.pop(sw, 0)
        self.state[target] = sorted(self.state.get(target, []))
        self.merging[result] = target
        if isinstance(self.trig, EventTimeTrigger) and result[1] > self.wm:  # onMerge
            self.timer(result[1], result)
        return result

    def emit(self, window, sw, emit):
        """``emitWindowContents``: evictBefore, the function, evictAfter (the state keeps what is left)."""
        if not self.state.get(sw):
            return
        ev = self.op.evictor
        if ev is not None and not ev.evict_after:
            self.evicting(sw, ev)
        self.out.append((window[0], window[1], emit, list(self.state[sw])))
        if ev is not None and ev.evict_after:
            self.evicting(sw, ev)

    def evicting(self, sw, ev):
        items = self.state[sw]
        if isinstance(ev, CountEvictor):
            self.state[sw] = items[max(0, len(items) - ev.max_count):]
        else:
            cutoff = max(self.xs[i] for i in items) - Fraction(str(ev.size))
            self.state[sw] = [i for i in items if not self.xs[i] <= cutoff]

    def element(self, i, row):
        x, late = self.xs[i], []
        assigned = self.windows(x)
        for w in assigned:
            if isinstance(self.op.assigner, EventTimeSessionWindows):
                w = self.add_session(w)
                sw = self.merging[w]
                if w[1] + self.L <= self.wm:
                    self.merging.pop(w)  # retireWindow
                    late.append(w)
                    continue
            else:
                sw = w
                if w[1] + self.L <= self.wm:
                    late.append(w)
                    continue
            self.state.setdefault(sw, []).append(i)
            fire = False
            if isinstance(self.trig, CountTrigger):
                self.count[sw] = self.count.get(sw, 0) + 1
                if self.count[sw] >= self.trig.count:
                    self.count[sw], fire = 0, True
            elif w[1] <= self.wm:
                fire = True
            else:
                self.timer(w[1], w)
            if fire:
                self.emit(w, sw, row)
                if self.purge:
                    self.state[sw] = []
            if not math.isinf(w[1]):
                self.timer(w[1] + self.L, w)  # registerCleanupTimer
        self.late += [(i, w[0], w[1], len(late) == len(assigned)) for w in late]

    def watermark(self, wm, row):
        self.wm = max(self.wm, wm)
        while self.queue and self.queue[0][0] <= self.wm:
            time, w = heapq.heappop(self.queue)
            if (time, w) not in self.timers:
                continue
            self.timers.discard((time, w))
            if isinstance(self.op.assigner, EventTimeSessionWindows):
                if w not in self.merging:
                    continue
                sw = self.merging[w]
            else:
                sw = w
            if isinstance(self.trig, EventTimeTrigger) and time == w[1]:
                self.emit(w, sw, row)
                if self.purge:
                    self.state[sw] = []
            if time == w[1] + self.L:  # isCleanupTime: clearAllState
                self.state.pop(sw, None)
                self.count.pop(sw, None)
                self.merging.pop(w, None)


def simulate(op, events):
    """``events``: ``("e", index, row)`` and ``("w", bound, row)`` of one key; the end of the stream last."""
    xs = [x for kind, x, _ in events if kind == "e"]
    sim, n = FlinkSim(op, xs), 0
    for kind, value, row in events:
        if kind == "e":
            sim.element(n, row)
            n += 1
        else:
            sim.watermark(value, row)
    sim.watermark(math.inf, None)
    return sim


cents = st.integers(-300, 1500)
operators = st.builds(
    lambda assigner, trigger, purge, evictor, lateness: WindowOperator(
        assigner, PurgingTrigger(trigger) if purge else trigger, evictor, lateness),
    st.one_of(st.sampled_from([2.5, 1, 0.75]).map(TumblingEventTimeWindows),
              st.tuples(st.sampled_from([3, 1.5]), st.sampled_from([1, 0.5])).map(
                  lambda t: SlidingEventTimeWindows(*t)),
              st.sampled_from([0.5, 1, 2.25]).map(EventTimeSessionWindows),
              st.just(TumblingEventTimeWindows(2, offset=0.5)), st.just(GlobalWindows())),
    st.one_of(st.just(EventTimeTrigger()), st.integers(1, 4).map(CountTrigger)),
    st.booleans(),
    st.one_of(st.none(), st.builds(CountEvictor, st.integers(1, 3), st.booleans()),
              st.builds(TimeEvictor, st.sampled_from([0.5, 1.5]), st.booleans())),
    st.sampled_from([0, 0.5, 2]))


@st.composite
def streams(draw, keys=("a", "b", "c")):
    """Rows ``(row_num, k, v, ts)``, ``ts`` two-decimal doubles out of order with duplicates, and
    punctuations ``(row_num, ts)`` some rows followed by a bound ``max ts so far - lag``."""
    n = draw(st.integers(0, 30))
    pool = draw(st.lists(cents, min_size=1, max_size=8))
    rows, marks, top = [], [], None
    for i in range(n):
        ts = draw(st.one_of(st.sampled_from(pool), cents)) / 100
        top = ts if top is None else max(top, ts)
        rows.append((i, draw(st.sampled_from(keys)), draw(st.integers(-999, 999)) / 100, ts))
        if draw(st.integers(0, 3)) == 0:
            marks.append((i, round(top - draw(st.sampled_from([0, 0.5, 1.25, 3])), 2)))
    return rows, marks


def per_key(rows, marks, key):
    """The events of ``key``'s operator: its elements and every punctuation (the watermark is shared)."""
    events = [(r, 0, ("e", Fraction(ts), r)) for r, k, _, ts in rows if k == key]
    events += [(r, 1, ("w", Fraction(b), r)) for r, b in marks]
    return [e for _, _, e in sorted(events, key=lambda e: e[:2])]


@settings(max_examples=300, deadline=None)
@given(operators, streams())
def test_key_operator_equals_the_simulator(op, data):
    """Bucket's operator (one key, exact fractions) fires what the simulator fires, in order, with
    the same contents, arrival rows and late contributions."""
    rows, marks = data
    for key in ("a", "b", "c"):
        events = per_key(rows, marks, key)
        xs = [x for kind, x, _ in events if kind == "e"]
        mine = KeyOperator(op, 1, xs)
        i = 0
        for kind, value, row in events:
            if kind == "e":
                mine.arrive(i, row)
                i += 1
            else:
                mine.watermark(row, value)
        mine.finish()
        sim = simulate(op, events)
        assert [(s, e, at, m) for s, e, _, at, m in mine.firings] == sim.out
        assert mine.late == sim.late


@pytest.mark.slow
@given(operators, streams())
def test_replay_equals_the_simulator(spark, op, data):
    """``wid.replay`` under embedded punctuations, per key: one results row per firing of the
    simulator (window, arrival row, ``count(*)``, ``sum(v)``), firings of a window numbered in
    arrival order; late rows as the simulator's skipped contributions; the query equals the
    replay without punctuations."""
    rows, marks = data
    spark.createDataFrame(rows, "row_num long, k string, v double, ts double").createOrReplaceTempView("flink_in")
    punctuation = wid.punctuate.embedded(spark.createDataFrame(marks, "row_num long, ts double"))
    text = "SELECT k, count(*) AS n, sum(v) AS total FROM flink_in [flink] GROUP BY k"
    rep = wid.replay(spark, text, punctuation, window=op)
    values = {r: v for r, _, v, _ in rows}

    def bound(b):
        return None if math.isinf(b) else float(b)

    expected, late = [], []
    for key in ("a", "b", "c"):
        events = per_key(rows, marks, key)
        index = [row for kind, _, row in events if kind == "e"]
        sim = simulate(op, events)
        expected += [(key, bound(s), bound(e), at, len(m), round(sum(values[index[i]] for i in m), 6))
                     for s, e, at, m in sim.out]
        late += [(index[i], bound(s), bound(e), side) for i, s, e, side in sim.late]
    got = rep.results.collect()
    assert sorted(((r.k, r.window_start, r.window_end, r.emit_row, r.n, round(r.total, 6)) for r in got), key=str) \
        == sorted(expected, key=str)
    windows = {}
    for r in got:
        windows.setdefault((r.k, r.window_start, r.window_end), []).append((r.wid, math.inf if r.emit_row is None
                                                                              else r.emit_row))
    for fired in windows.values():
        assert len({w for w, _ in fired}) == len(fired)
        assert [at for _, at in sorted(fired)] == sorted(at for _, at in fired)
    assert sorted(map(str, ((r.row_num, r.window_start, r.window_end, r.side_output) for r in rep.late.collect()))) \
        == sorted(map(str, late))
    query = wid.query(spark, text, op)
    alone = wid.replay(spark, text, window=op).results.drop("emit_row", "revision")
    def rounded(rows):  # a double sum's last bits depend on Spark's order of addition
        return sorted(map(str, ((r.wid, r.window_start, r.window_end, r.k, r.n, round(r.total, 6)) for r in rows)))

    assert rounded(query.collect()) == rounded(alone.collect())


# --- the columns path --------------------------------------------------------------------------

READINGS = [(0, "a", 1.25, 0.18), (1, "a", -2.5, 0.18), (2, "b", 9.99, -2.57), (3, "a", -9.98, -2.83),
            (4, "c", 3.18, 0.76), (5, "b", -4.56, 4.28), (6, "a", 1.32, 1.51), (7, "b", 1.99, 0.9),
            (8, "c", 0.42, 14.49), (9, "a", -2.64, 2.85), (10, "b", 4.17, 2.9), (11, "b", -5.45, 7.57),
            (12, "a", -9.61, 0.18), (13, "a", -5.33, -3.0), (14, "c", 0.01, 0.75), (15, "a", 2.0, 0.5)]


@pytest.mark.parametrize("op", [
    WindowOperator(SlidingEventTimeWindows(1.5, 0.5), CountTrigger(2), CountEvictor(3)),
    WindowOperator(SlidingEventTimeWindows(1.5, 0.5, offset=0.25), CountTrigger(2), CountEvictor(1, evict_after=True)),
    WindowOperator(TumblingEventTimeWindows(2.5), PurgingTrigger(CountTrigger(3)), CountEvictor(2)),
    WindowOperator(SlidingEventTimeWindows(0.5, 2), EventTimeTrigger(), CountEvictor(2)),
    WindowOperator(GlobalWindows(), CountTrigger(3)),
], ids=["sliding-count-evict-before", "offset-evict-after", "purging-count", "hopping-event-time", "global"])
def test_the_query_of_columns_equals_the_scan(spark, op):
    """The query's columns path (no Python) tags each element with the firings the operator's scan
    gives it, on two-decimal doubles out of order with duplicates and three keys."""
    assert path(op) == "columns"
    rows = spark.createDataFrame(READINGS, "row_num long, k string, v double, ts double")
    op = op.grouped(("k",))
    tags = [sorted(tuple(r) for r in bucket(rows, op, how).select("row_num", "wid_lo", "wid_hi", "window_start",
                                                                  "window_end").collect())
            for how in ("columns", "scan")]
    assert tags[0] == tags[1] and tags[0]


@pytest.mark.slow
def test_timestamps_microseconds_and_a_null_time(spark):
    """On a timestamp attribute the operator's numbers are seconds: tumbling windows of 0.5 s over
    microsecond timestamps, on both paths (the query's columns, replay's scan), bounds as
    timestamps; a NULL time fails the query naming the tuple."""
    rows = [(0, "a", 1.0, datetime(2026, 1, 1, 0, 0, 0, 499999)), (1, "a", 2.0, datetime(2026, 1, 1, 0, 0, 0, 500000)),
            (2, "b", 4.0, datetime(2026, 1, 1, 0, 0, 0, 250000)), (3, "a", 8.0, datetime(2026, 1, 1, 0, 0, 0, 999999))]
    schema = "row_num long, k string, v double, ts timestamp_ntz"
    spark.createDataFrame(rows, schema).createOrReplaceTempView("flink_in")
    op = WindowOperator(TumblingEventTimeWindows(0.5))
    expected = [("a", datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 0, 0, 500000), 1.0),
                ("a", datetime(2026, 1, 1, 0, 0, 0, 500000), datetime(2026, 1, 1, 0, 0, 1), 10.0),
                ("b", datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 0, 0, 500000), 4.0)]
    for out in (wid.query(spark, QUERY, op), wid.replay(spark, QUERY, window=op).results):
        assert sorted((r.k, r.window_start, r.window_end, r.total) for r in out.collect()) == expected
    spark.createDataFrame([*rows, (4, "b", 1.0, None)], schema).createOrReplaceTempView("flink_in")
    with pytest.raises(Exception, match=r"NULL or NaN window attribute 'ts' in the tuple with row_num=4"):
        wid.query(spark, QUERY, WindowOperator(GlobalWindows(), CountTrigger(2))).collect()
