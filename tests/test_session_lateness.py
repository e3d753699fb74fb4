"""Sessions under allowed lateness as Flink's merging windows (docs/semantics.md 8.4 and 8.5):
a session is forgotten once the bound passes ``end + L`` (Flink's cleanup time); a later tuple
merges only with the sessions still kept, or opens its own; it is late (``wid`` NULL) only when
that own session is past cleanup already.

Expected results are transcribed from Flink's
flink-streaming-java/src/test/java/org/apache/flink/streaming/runtime/operators/windowing/WindowOperatorTest.java
(the session cases with allowed lateness; ``EventTimeSessionWindows.withGap(3 s)``, elements
``("key2", 1)``, output ``("key2-<sum>", start, end)``): timestamps in milliseconds as a long
column, ``[SESSION 3000 WATTR ts]``. Flink's watermark ``W`` promises no element at or below
``W``: the punctuation bound ``W + 1``. wid's revisions carry everything admitted so far, as
Flink's accumulating ``EventTimeTrigger``; a ``PurgingTrigger`` case fires the same windows
(extents, firing points, side output) with only the elements since the last firing.

Then a Hypothesis property on realistic streams (two-decimal doubles, out of order, several
keys, duplicates) against :func:`flink_operator`, an event-by-event simulator of Flink's
merging-window rule with cleanup written here, and live mode against replay on one stream.
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import pairwise

import pytest
from chispa import assert_df_equality
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import wid
from wid import punctuate
from wid.stream.live import run as live_run
from wid.stream.live.job import live

FLINK_QUERY = "SELECT k, count(*) AS n, sum(v) AS total FROM flink [SESSION 3000 WATTR ts] GROUP BY k"

#: The element/watermark sequence shared by Flink's session lateness tests (``e``: an element of
#: ``key2`` at that timestamp, ``w``: a watermark), row_num = position.
FLINK_EVENTS = [("e", 1000), ("w", 1999), ("e", 2000), ("w", 4998), ("e", 4500), ("e", 8500), ("w", 7400),
                ("e", 7000), ("w", 11501), ("e", 11600), ("w", 14600), ("e", 10000), ("e", 14500),
                ("w", 20000), ("w", 100000)]


_REPLAYED: dict = {}  # (events, lateness) -> flink_replay's answer: the purging cases read the accumulating ones'


def flink_replay(spark, events, lateness):
    """``(results, late)`` of :data:`FLINK_QUERY` replayed over Flink test ``events``:
    results ``(wid, revision, session_start, session_end, n, emit_row)``, late ``(ts, wid)``."""
    if (tuple(events), lateness) in _REPLAYED:
        return _REPLAYED[(tuple(events), lateness)]
    tuples = [(i, "key2", ts, 1) for i, (kind, ts) in enumerate(events) if kind == "e"]
    spark.createDataFrame(tuples, "row_num long, k string, ts long, v long").createOrReplaceTempView("flink")
    bounds = spark.createDataFrame([(i, None, w + 1) for i, (kind, w) in enumerate(events) if kind == "w"],
                                   "row_num long, k string, ts long")
    rep = wid.replay(spark, FLINK_QUERY, punctuation=punctuate.embedded(bounds), allowed_lateness=lateness)
    results = {(r.wid, r.revision, r.session_start, r.session_end, r.n, r.emit_row) for r in rep.results.collect()}
    _REPLAYED[(tuple(events), lateness)] = results, {(r.ts, r.wid) for r in rep.late.collect()}
    return _REPLAYED[(tuple(events), lateness)]


def row_of(events, event):
    """The row_num of ``event`` (``("w", 11501)``: that watermark) in ``events``."""
    return events.index(event)


def test_side_output_due_to_lateness_session_zero_lateness(spark):
    """WindowOperatorTest.testSideOutputDueToLatenessSessionZeroLateness (L = 0): ``[1000,
    11500)`` with 5 elements fires at the watermark 11501, ``[11600, 14600)`` at 14600, both then
    cleaned up. 10000 touches only them: its own window ``[10000, 13000)`` is past cleanup:
    side output. 14500 touches the forgotten ``[11600, 14600)`` but its own window is not late:
    a new session ``[14500, 17500)``, fired at 20000 (id 2, overlapping its predecessor)."""
    results, late = flink_replay(spark, FLINK_EVENTS, 0)
    ev = FLINK_EVENTS
    assert results == {(0, 0, 1000, 11500, 5, row_of(ev, ("w", 11501))),
                       (1, 0, 11600, 14600, 1, row_of(ev, ("w", 14600))),
                       (2, 0, 14500, 17500, 1, row_of(ev, ("w", 20000)))}
    assert late == {(10000, None)}


def test_side_output_due_to_lateness_session_zero_lateness_purging_trigger(spark):
    """WindowOperatorTest.testSideOutputDueToLatenessSessionZeroLatenessPurgingTrigger: as
    above with a second late element, 10100, right after 10000: both side output, "not
    accidentally merged" (a late tuple opens no session)."""
    events = [*FLINK_EVENTS[:12], ("e", 10100), *FLINK_EVENTS[12:]]
    results, late = flink_replay(spark, events, 0)
    assert {(s, e, n) for _, _, s, e, n, _ in results} == {(1000, 11500, 5), (11600, 14600, 1), (14500, 17500, 1)}
    assert late == {(10000, None), (10100, None)}


def test_not_side_output_due_to_lateness_session_with_lateness(spark):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithLateness (L = 10 ms,
    accumulating): at the watermark 14600 ``[1000, 11500)`` is cleaned up (11499 + 10 <= 14600)
    but ``[11600, 14600)`` is kept (14599 + 10 > 14600). 10000 merges with the kept one only:
    ``[10000, 14600)``, 2 elements, complete: fired at once ("key2-2"). 14500 extends it to
    ``[10000, 17500)``, fired at 20000 ("key2-3"). Nothing is side output."""
    results, late = flink_replay(spark, FLINK_EVENTS, 10)
    ev = FLINK_EVENTS
    assert results == {(0, 0, 1000, 11500, 5, row_of(ev, ("w", 11501))),
                       (1, 0, 11600, 14600, 1, row_of(ev, ("w", 14600))),
                       (1, 1, 10000, 14600, 2, row_of(ev, ("e", 10000))),
                       (1, 2, 10000, 17500, 3, row_of(ev, ("w", 20000)))}
    assert late == set()


def test_drop_due_to_lateness_session_with_lateness_purging_trigger(spark):
    """WindowOperatorTest.testDropDueToLatenessSessionWithLatenessPurgingTrigger (L = 10 ms):
    the same windows fire at the same points ("key2-1" ``[10000, 14600)`` on 10000's arrival,
    ``[10000, 17500)`` at 20000), each with the elements since the last firing: the differences
    of wid's accumulated revisions."""
    results, late = flink_replay(spark, FLINK_EVENTS, 10)
    fired = sorted((emit, s, e, n) for _, _, s, e, n, emit in results)
    ev = FLINK_EVENTS
    assert [(emit, s, e) for emit, s, e, _ in fired] == [
        (row_of(ev, ("w", 11501)), 1000, 11500), (row_of(ev, ("w", 14600)), 11600, 14600),
        (row_of(ev, ("e", 10000)), 10000, 14600), (row_of(ev, ("w", 20000)), 10000, 17500)]
    assert [n for *_, n in fired[1:]] == [1, 2, 3]  # Flink's purged firings: key2-1, key2-1, key2-1
    assert late == set()


def test_not_side_output_due_to_lateness_session_with_huge_lateness(spark):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithHugeLateness (L = 10 s): both
    sessions are kept; 10000 bridges them: ``[1000, 14600)`` with 7 elements fired at once
    ("key2-7"; id 1 retires with an empty revision), 14500 extends it, fired at 20000
    ("key2-8", ``[1000, 17500)``)."""
    results, late = flink_replay(spark, FLINK_EVENTS, 10000)
    ev, ten = FLINK_EVENTS, row_of(FLINK_EVENTS, ("e", 10000))
    assert results == {(0, 0, 1000, 11500, 5, row_of(ev, ("w", 11501))),
                       (1, 0, 11600, 14600, 1, row_of(ev, ("w", 14600))),
                       (0, 1, 1000, 14600, 7, ten), (1, 1, None, None, 0, ten),
                       (0, 2, 1000, 17500, 8, row_of(ev, ("w", 20000)))}
    assert late == set()


def test_not_side_output_due_to_lateness_session_with_huge_lateness_purging_trigger(spark):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithHugeLatenessPurgingTrigger:
    the same firings, ``[1000, 14600)`` on 10000's arrival and ``[1000, 17500)`` at 20000."""
    results, _ = flink_replay(spark, FLINK_EVENTS, 10000)
    ev = FLINK_EVENTS
    assert sorted((emit, s, e) for _, _, s, e, n, emit in results if n) == [
        (row_of(ev, ("w", 11501)), 1000, 11500), (row_of(ev, ("w", 14600)), 11600, 14600),
        (row_of(ev, ("e", 10000)), 1000, 14600), (row_of(ev, ("w", 20000)), 1000, 17500)]


def test_cleanup_timer_with_empty_reduce_state_for_session_windows(spark):
    """WindowOperatorTest.testCleanupTimerWithEmptyReduceStateForSessionWindows (L = 10 ms):
    ``[1000, 4000)`` fires at the watermark 4998; the cleanup at 14600 emits nothing more."""
    events = [("e", 1000), ("w", 4998), ("w", 14600)]
    assert flink_replay(spark, events, 10) == ({(0, 0, 1000, 4000, 1, 1)}, set())


def flink_operator(events, gap: Fraction, lateness: Fraction):
    """Flink's ``WindowOperator`` with a merging assigner (sessions of ``gap``), an accumulating
    event-time trigger and allowed ``lateness``, event by event, in wid's terms: per key a set of
    windows ``[start, last + gap]`` (touching ones intersect, as ``TimeWindow.intersects``); a
    tuple's window merges with every kept window it intersects, or is dropped to the side output
    when it intersects none and its own cleanup time has passed (``x + gap + L < B``); a window
    fires when the bound passes its end (at once if it already has), and is cleaned up (forgotten)
    once the bound passes ``end + L``. wid's ids: a window's id is given at its first firing
    (counting the key's fired windows), kept by a merge (the least), the others retiring with an
    empty revision. Returns ``(results, late)``: ``(k, wid, revision, n, sum v, emit_row,
    session_start, session_end)`` and ``(row_num, None)``."""
    keyed, results, late, wildcard = {}, set(), set(), []

    def windows(k):
        return keyed.setdefault(k, {"bound": None, "windows": [], "ids": 0})

    def bound(k):
        found = [b for b in [windows(k)["bound"], *wildcard] if b is not None]
        return max(found) if found else None

    def fire(k, w, row):
        state = windows(k)
        if w["wid"] is None:
            w["wid"], state["ids"] = state["ids"], state["ids"] + 1
        w["revision"] += 1
        w["fired"] = True
        results.add((k, w["wid"], w["revision"], len(w["rows"]), sum(t["v"] for t in w["rows"]), row,
                     float(w["start"]), float(w["last"] + gap)))

    def passed(k, end):
        return bound(k) is not None and end < bound(k)

    for e in sorted(events, key=lambda e: (e["row_num"], e["kind"])):
        if e["kind"] == "t":
            k, x = e["k"], Fraction(e["x"])
            state = windows(k)
            hit = [w for w in state["windows"] if w["start"] <= x + gap and w["last"] + gap >= x]
            if not hit and passed(k, x + gap + lateness):
                late.add((e["row_num"], None))
                continue
            named = sorted((w for w in hit if w["wid"] is not None), key=lambda w: w["wid"])
            for w in named[1:]:
                results.add((k, w["wid"], w["revision"] + 1, 0, None, e["row_num"], None, None))
            merged = {"start": min([x, *(w["start"] for w in hit)]), "last": max([x, *(w["last"] for w in hit)]),
                      "rows": [e, *(t for w in hit for t in w["rows"])], "fired": False,
                      "wid": named[0]["wid"] if named else None, "revision": named[0]["revision"] if named else -1}
            state["windows"] = [w for w in state["windows"] if w not in hit] + [merged]
            if passed(k, merged["last"] + gap):
                fire(k, merged, e["row_num"])
        else:
            if e["k"] is None:
                wildcard.append(Fraction(e["x"]))
            else:
                windows(e["k"])["bound"] = max(b for b in [windows(e["k"])["bound"], Fraction(e["x"])] if b is not None)
            for k in [e["k"]] if e["k"] is not None else list(keyed):
                state = windows(k)
                for w in sorted(state["windows"], key=lambda w: w["start"]):
                    if not w["fired"] and passed(k, w["last"] + gap):
                        fire(k, w, e["row_num"])
                state["windows"] = [w for w in state["windows"]
                                    if not (w["fired"] and passed(k, w["last"] + gap + lateness))]
    for k, state in keyed.items():
        for w in sorted(state["windows"], key=lambda w: w["start"]):
            if not w["fired"]:
                fire(k, w, None)
    return results, late


SCHEMA = "row_num long, k string, x double, v long"
QUERY = "SELECT k, count(*) AS n, sum(v) AS total FROM s [SESSION {gap} WATTR x] GROUP BY k"


def replayed(spark, rows, puncts, gap, lateness):
    """Replay of :data:`QUERY` over ``rows`` under embedded ``puncts``: ``(results, late)`` as
    :func:`flink_operator` gives them."""
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows], SCHEMA).createOrReplaceTempView("s")
    frame = spark.createDataFrame([(p["row_num"], p["k"], p["x"]) for p in puncts], "row_num long, k string, x double")
    rep = wid.replay(spark, QUERY.format(gap=gap), punctuation=punctuate.embedded(frame), allowed_lateness=lateness)
    return outcome(rep.results, rep.late)


def outcome(results, late):
    """``(results, late)`` frames as :func:`flink_operator` gives them."""
    return ({(r.k, r.wid, r.revision, r.n, r.total, r.emit_row, r.session_start, r.session_end)
             for r in results.collect()}, {(r.row_num, r.wid) for r in late.collect()})


def assert_conserved(rows, results, late):
    """Every tuple counted exactly once: in its id's last revision or in ``late``, per key."""
    last = {}
    for k, w, revision, n, *_ in sorted(results, key=lambda r: r[2]):
        last[(k, w)] = n
    for k in {t["k"] for t in rows}:
        lost = {r for r, _ in late} & {t["row_num"] for t in rows if t["k"] == k}
        assert sum(n for (key, _), n in last.items() if key == k) + len(lost) == sum(t["k"] == k for t in rows)


def realistic(draws):
    """Tuples and punctuations from draws ``(kind, key, step, delay)``: a clock advancing by
    ``step`` (0: duplicates), ``x`` two-decimal doubles ``delay`` behind it (out of order), a
    punctuation's bound 0.5 behind the clock (a wildcard when its key is None); row_num gaps."""
    rows, puncts, clock = [], [], 100.0
    for i, (kind, k, step, delay) in enumerate(draws):
        clock = round(clock + step, 2)
        if kind == "t":
            rows.append({"row_num": 3 * i, "k": k or "a", "x": round(clock - delay, 2), "v": i % 7 + 1})
        else:
            puncts.append({"row_num": 3 * i, "k": k, "x": round(clock - 0.5, 2)})
    return rows, puncts


draw = st.tuples(st.sampled_from("tttp"), st.sampled_from(["a", "b", "c", None]),
                 st.sampled_from([0, 0, 0.01, 0.37, 1.25, 2.5, 4.99]), st.sampled_from([0, 0, 0, 0.5, 2.5, 3.07, 9.5]))


@pytest.mark.slow
@given(st.lists(draw, min_size=1, max_size=40), st.sampled_from([0, 1.25, 4]))
def test_replay_follows_flinks_merging_windows_with_cleanup(spark, draws, lateness):
    """Any realistic stream, gap 2.5 (a tuple often exactly at a session's end, a bound exactly
    at ``end + L``): replay is :func:`flink_operator`'s, and conserves."""
    rows, puncts = realistic(draws)
    if not rows:
        return
    got = replayed(spark, rows, puncts, 2.5, lateness)
    assert got == flink_operator([{**t, "kind": "t"} for t in rows] + [{**p, "kind": "p"} for p in puncts],
                                 Fraction(5, 2), Fraction(lateness))
    assert_conserved(rows, *got)


@pytest.mark.parametrize("lateness", [0, 3])
def test_a_forgotten_session_and_its_successor(spark, lateness):
    """A seeded stream of 300 readings on four keys where sessions are forgotten and followed
    by successors (a tuple touching a forgotten session, on time for its own), with late tuples:
    replay is the simulator's and conserves; with ``L = 3`` fewer tuples are late."""
    rnd = random.Random(41)
    draws = [(rnd.choice("tttp"), rnd.choice(["a", "b", "c", "d", None]), rnd.choice([0, 0.25, 0.5, 1.1]),
              rnd.choice([0, 0, 0, 1.5, 4.2, 8])) for _ in range(400)]
    rows, puncts = realistic(draws)
    results, late = replayed(spark, rows, puncts, 1.5, lateness)
    events = [{**t, "kind": "t"} for t in rows] + [{**p, "kind": "p"} for p in puncts]
    assert (results, late) == flink_operator(events, Fraction(3, 2), Fraction(lateness))
    assert_conserved(rows, results, late)
    assert late and len(late) < len(rows) // 4
    last = {}  # each id's last extent: a successor starts within g of its forgotten predecessor's end
    for k, w, _, n, _, _, start, end in sorted(results, key=lambda r: r[2]):
        last[(k, w)] = (start, end) if n else None
    spans = sorted((k, *extent) for (k, _), extent in last.items() if extent)
    assert any(k == k2 and s2 <= e for (k, s, e), (k2, s2, _) in pairwise(spans))


@pytest.mark.slow
def test_live_equals_replay_on_a_realistic_stream(spark, tmp_path):
    """Live mode (allowed lateness 0) over three micro-batches of a realistic stream with late
    tuples and successors of forgotten sessions: results and late rows are replay's, and the
    simulator's."""
    rnd = random.Random(7)
    draws = [(rnd.choice("tttp"), rnd.choice(["a", "b", "c", None]), rnd.choice([0, 0.25, 0.5, 1.1]),
              rnd.choice([0, 0, 0, 1.5, 4.2, 8])) for _ in range(150)]
    rows, puncts = realistic(draws)
    flag = "is_punctuation"
    elements = [(t["row_num"], t["k"], t["x"], t["v"], False) for t in rows] + \
               [(p["row_num"], p["k"], p["x"], None, True) for p in puncts]
    frame = spark.createDataFrame(sorted(elements), f"row_num long, k string, x double, v long, {flag} boolean")
    frame.where(~F.col(flag)).drop(flag).createOrReplaceTempView("s")
    text = QUERY.format(gap=1.5)
    source = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 3))
    tuples = source.where(~F.coalesce(F.col(flag), F.lit(False))).drop(flag)
    job = live(spark, text, tuples, punctuate.embedded(source.where(F.col(flag)).select("row_num", "k", "x")))
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    results, late = live_run.read_output(spark, job, tmp_path / "out")
    expected = wid.replay(spark, text, punctuation=punctuate.embedded(frame.where(F.col(flag)).select("row_num", "k", "x")))
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    simulated = flink_operator([{**t, "kind": "t"} for t in rows] +
                               [{**p, "kind": "p"} for p in puncts], Fraction(3, 2), 0)
    assert outcome(results, late) == simulated
    assert late.count() > 0
