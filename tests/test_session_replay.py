"""Replay of session windows against a plain-Python streaming simulator that re-sessionizes
the accepted tuples of the kept sessions with the brute-force oracle at every event (sessions
that touch merge: a tuple at ``last + g`` joins, and a punctuation completes a session once its
bound passes ``last + g``; a session is forgotten once it passes ``last + g + L``, Flink's
cleanup), and against Spark's own streaming session tests."""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import seconds, sessions

import wid
from wid import punctuate

SCHEMA = "row_num long, k string, x double, v long"


def simulate(rows, puncts, gap: Fraction):
    """``(results, late)``: results ``(k, wid, n, sum v, emit_row)``, late ``(row_num, wid)``."""
    events = sorted([(t["row_num"], 0, t) for t in rows] + [(p["row_num"], 1, p) for p in puncts],
                    key=lambda e: e[:2])
    keys = sorted({t["k"] for t in rows})
    accepted, frozen, bound = defaultdict(list), defaultdict(list), {}
    results, late = set(), set()

    def open_rows(k):
        members = {u["row_num"] for *_, run in frozen[k] for u in run}
        return [u for u in accepted[k] if u["row_num"] not in members]

    def close(k, emit_row):
        runs = [run for _, _, run in sessions(open_rows(k), gap, "x")]
        done = [run for run in runs if emit_row is None or seconds(run[-1]["x"]) + gap < bound[k]]
        for run in sorted(done, key=lambda r: seconds(r[0]["x"])):
            w = len(frozen[k])
            frozen[k].append((seconds(run[0]["x"]), seconds(run[-1]["x"]) + gap, w, run))
            results.add((k, w, len(run), sum(u["v"] for u in run), emit_row))

    for row_num, kind, e in events:
        if kind == 1:
            for k in keys if e["k"] is None else [e["k"]]:
                bound[k] = max(bound.get(k, e["x"]), e["x"])
                close(k, row_num)
            continue
        k, x = e["k"], seconds(e["x"])  # the emitted (frozen) sessions are forgotten
        run = next(run for _, _, run in sessions(open_rows(k) + [e], gap, "x") if e in run)
        if len(run) == 1 and k in bound and x + gap < bound[k]:
            late.add((row_num, None))
            continue
        accepted[k].append(e)
    for k in keys:
        close(k, None)
    return results, late


def run(spark, rows, puncts, gap):
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows], SCHEMA).createOrReplaceTempView("s")
    frame = spark.createDataFrame([(p["row_num"], p["k"], p["x"]) for p in puncts], "row_num long, k string, x double")
    rep = wid.replay(spark, f"SELECT k, count(*) AS n, sum(v) AS total FROM s [SESSION {gap} WATTR x] GROUP BY k",
                     punctuation=punctuate.embedded(frame))
    results = {(r.k, r.wid, r.n, r.total, r.emit_row) for r in rep.results.collect()}
    late = {(r.row_num, r.wid) for r in rep.late.collect()}
    return results, late


def test_a_tuple_bridging_two_forgotten_sessions_is_late_with_no_id(spark):
    """g = 3: sessions {1} (ends 4) and {6} (ends 9) emitted and forgotten at the punctuation
    20; then 3.5 would bridge them (6 - 3 <= 3.5 <= 4), but its own session would end at 6.5 <
    20: late, no id. 30 opens session 2."""
    rows = [{"row_num": i, "k": "a", "x": x, "v": 1} for i, x in [(0, 1.0), (1, 6.0), (3, 3.5), (4, 30.0)]]
    puncts = [{"row_num": 2, "k": None, "x": 20.0}]
    results, late = run(spark, rows, puncts, 3)
    assert results == {("a", 0, 1, 1, 2), ("a", 1, 1, 1, 2), ("a", 2, 1, 1, None)}
    assert late == {(3, None)}
    assert (results, late) == simulate(rows, puncts, Fraction(3))


def test_ordered_by_a_null_key_punctuates_that_key_only(spark):
    """g = 2, each key in x order: NULL's 5 closes NULL's session {0} (ends 2) at row 2 and not
    a's; a's 1 joins {0.5}; a's 3.5 closes [0.5, 3) at row 4; the rest close at the end."""
    rows = [{"row_num": i, "k": k, "x": x, "v": 1}
            for i, k, x in [(0, None, 0.0), (1, "a", 0.5), (2, None, 5.0), (3, "a", 1.0), (4, "a", 3.5)]]
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows], SCHEMA).createOrReplaceTempView("s")
    rep = wid.replay(spark, "SELECT k, count(*) AS n FROM s [SESSION 2 WATTR x] GROUP BY k",
                     punctuation=punctuate.ordered_by("k"))
    got = {(r.k, r.wid, r.n, r.emit_row) for r in rep.results.collect()}
    assert got == {(None, 0, 1, 2), (None, 1, 1, None), ("a", 0, 2, 4), ("a", 1, 1, None)}
    assert rep.late.count() == 0


def test_replay_matches_the_streaming_simulator_and_conserves(spark):
    rng = random.Random(11)
    rows, puncts, clock = [], [], 0.0
    for i in range(240):
        clock += rng.choice([0.5, 1, 2, 6])
        rows.append({"row_num": 2 * i, "k": rng.choice("abc"), "x": clock - rng.choice([0, 0, 0, 3, 9]),
                     "v": rng.randint(1, 9)})
        if rng.random() < 0.3:
            puncts.append({"row_num": 2 * i + 1, "k": rng.choice(["a", "b", "c", None]), "x": clock - 4})
    results, late = run(spark, rows, puncts, 2.5)
    expected = simulate(rows, puncts, Fraction(5, 2))
    assert (results, late) == expected
    assert late and all(w is None for _, w in late) and any(n > 1 for *_, n, _, _ in results)
    for k in "abc":  # conservation: emitted count + late tuples = the key's tuples
        emitted = sum(n for key, _, n, _, _ in results if key == k)
        lost = {r for r, _ in late} & {t["row_num"] for t in rows if t["k"] == k}
        assert emitted + len(lost) == sum(t["k"] == k for t in rows)


def test_without_late_tuples_replay_equals_the_query(spark):
    rng = random.Random(2)
    rows = [{"row_num": i, "k": rng.choice("ab"), "x": float(rng.randint(0, 200)), "v": 1} for i in range(100)]
    results, late = run(spark, rows, [], 4)
    exact = wid.query(spark, "SELECT k, count(*) AS n, sum(v) AS total FROM s [SESSION 4 WATTR x] GROUP BY k")
    assert late == set() and results == {(r.k, r.wid, r.n, r.total, None) for r in exact.collect()}


def simulate_lateness(rows, puncts, gap: Fraction, lateness: Fraction):
    """Allowed lateness by re-sessionizing the accepted tuples with the oracle at every event:
    results ``(k, wid, revision, n, sum v, emit_row)`` (a retired id's last row: n 0, sum None),
    late ``(row_num, wid)``. An emission is remembered by its tuples; a session (oracle run) is
    closed while it equals its last emission, forgotten (its tuples leave ``accepted``) when also
    ``last + g + L < B``; the runs a new tuple joins keep the least id, the others retire; a run
    complete by then (``last + g < B``) is emitted at once."""
    events = sorted([(t["row_num"], 0, t) for t in rows] + [(p["row_num"], 1, p) for p in puncts],
                    key=lambda e: e[:2])
    keys = sorted({t["k"] for t in rows})
    accepted, bound = defaultdict(list), {}
    emitted = defaultdict(dict)  # k -> wid -> [row_nums of the last emission, revision, retired]
    results, late = set(), set()

    def runs(k, extra=()):
        return [run for _, _, run in sessions(accepted[k] + list(extra), gap, "x")]

    def end(run):
        return seconds(run[-1]["x"]) + gap

    def ids_in(k, run):
        members = {u["row_num"] for u in run}
        return sorted(w for w, (rs, _, retired) in emitted[k].items() if not retired and rs <= members)

    def closed(k, run):
        return any(rs == {u["row_num"] for u in run} for rs, _, retired in emitted[k].values() if not retired)

    def emit(k, run, emit_row):
        named = ids_in(k, run)
        w = named[0] if named else len(emitted[k])
        revision = emitted[k][w][1] + 1 if named else 0
        emitted[k][w] = [{u["row_num"] for u in run}, revision, False]
        results.add((k, w, revision, len(run), sum(u["v"] for u in run), emit_row))

    for row_num, kind, e in events:
        if kind == 1:
            for k in keys if e["k"] is None else [e["k"]]:
                bound[k] = max(bound.get(k, e["x"]), e["x"])
                for run in sorted(runs(k), key=lambda r: seconds(r[0]["x"])):
                    if not closed(k, run) and end(run) < bound[k]:
                        emit(k, run, row_num)
                gone = {u["row_num"] for run in runs(k) if closed(k, run) and end(run) + lateness < bound[k]
                        for u in run}
                accepted[k] = [u for u in accepted[k] if u["row_num"] not in gone]
            continue
        k = e["k"]
        joined = next(run for run in runs(k, [e]) if e in run)
        before = [run for run in runs(k) if all(u in joined for u in run)]
        b = bound.get(k)
        if not before and b is not None and seconds(e["x"]) + gap + lateness < b:
            late.add((row_num, None))
            continue
        accepted[k].append(e)
        for w in ids_in(k, joined)[1:]:
            emitted[k][w][1:] = [emitted[k][w][1] + 1, True]
            results.add((k, w, emitted[k][w][1], 0, None, row_num))
        if b is not None and end(joined) < b:
            emit(k, joined, row_num)
    for k in keys:
        for run in sorted(runs(k), key=lambda r: seconds(r[0]["x"])):
            if not closed(k, run):
                emit(k, run, None)
    return results, late


def lateness_run(spark, rows, puncts, gap, lateness):
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows], SCHEMA).createOrReplaceTempView("s")
    frame = spark.createDataFrame([(p["row_num"], p["k"], p["x"]) for p in puncts], "row_num long, k string, x double")
    rep = wid.replay(spark, f"SELECT k, count(*) AS n, sum(v) AS total FROM s [SESSION {gap} WATTR x] GROUP BY k",
                     punctuation=punctuate.embedded(frame), allowed_lateness=lateness)
    results = {(r.k, r.wid, r.revision, r.n, r.total, r.emit_row) for r in rep.results.collect()}
    return results, {(r.row_num, r.wid) for r in rep.late.collect()}


def test_allowed_lateness_extends_and_merges_emitted_sessions(spark):
    """g = 3, L = 7: sessions {1} (ends 4) and {6} (ends 9) emitted at the punctuation 10 (row 2).
    3.5 (row 3) bridges them: 4 + 7 is not below 10, so session 0 becomes {1, 3.5, 6} (ends 9),
    complete already: revision 1 with 3 tuples, and id 1 retires (revision 1, empty). 8.5 (row 5,
    bound 11) extends session 0 to end at 11.5, open again: revision 2 at the bound 20 (row 6).
    0 (row 7) touches only session 0, forgotten (11.5 + 7 < 20), and its own would end at
    3 + 7 < 20: late, no id. 15 (row 9) touches nothing and 15 + 3 < 20 <= 15 + 3 + 7: a new
    session (id 2), emitted on arrival."""
    rows = [{"row_num": i, "k": "a", "x": x, "v": 1}
            for i, x in [(0, 1.0), (1, 6.0), (3, 3.5), (5, 8.5), (7, 0.0), (9, 15.0)]]
    puncts = [{"row_num": 2, "k": None, "x": 10.0}, {"row_num": 4, "k": None, "x": 11.0},
              {"row_num": 6, "k": None, "x": 20.0}]
    results, late = lateness_run(spark, rows, puncts, 3, 7)
    assert results == {("a", 0, 0, 1, 1, 2), ("a", 1, 0, 1, 1, 2), ("a", 0, 1, 3, 3, 3), ("a", 1, 1, 0, None, 3),
                       ("a", 0, 2, 4, 4, 6), ("a", 2, 0, 1, 1, 9)}
    assert late == {(7, None)}
    assert (results, late) == simulate_lateness(rows, puncts, Fraction(3), Fraction(7))


@pytest.mark.slow
@pytest.mark.parametrize("lateness", [0, 4])
def test_allowed_lateness_matches_the_simulator_and_conserves(spark, lateness):
    """A stream (seed 24) where L = 4 gives revisions on arrival and at punctuations, a retired
    id, sessions emitted on a late tuple's arrival, and late tuples."""
    rng = random.Random(24)
    rows, puncts, clock = [], [], 0.0
    for i in range(160):
        clock += rng.choice([1, 2, 3, 4])
        rows.append({"row_num": 2 * i, "k": rng.choice("ab"), "x": clock - rng.choice([0, 0, 0, 3, 6, 12]),
                     "v": rng.randint(1, 9)})
        if rng.random() < 0.4:
            puncts.append({"row_num": 2 * i + 1, "k": rng.choice(["a", "b", None]), "x": clock - 1})
    results, late = lateness_run(spark, rows, puncts, 2.5, lateness)
    assert (results, late) == simulate_lateness(rows, puncts, Fraction(5, 2), Fraction(lateness))
    assert any(rev > 0 for _, _, rev, *_ in results) == bool(lateness) == any(n == 0 for *_, n, _, _ in results)
    assert late
    if not lateness:
        assert {(k, w, n, total, e) for k, w, _, n, total, e in results} == run(spark, rows, puncts, 2.5)[0]
    last = {}
    for k, w, rev, n, *_ in sorted(results, key=lambda r: r[2]):
        last[(k, w)] = n
    for k in "ab":  # conservation: last revisions' count + late tuples = the key's tuples
        lost = {r for r, _ in late} & {t["row_num"] for t in rows if t["k"] == k}
        assert sum(n for (key, _), n in last.items() if key == k) + len(lost) == sum(t["k"] == k for t in rows)


#: Tuples and punctuations on a grid of quarters (exact doubles), the gap three of them: a tuple
#: often lies exactly ``g`` after another, and a bound exactly at a session's end (+ ``L``).
element = st.tuples(st.sampled_from("ttp"), st.sampled_from(["a", "b", None]), st.integers(-12, 12),
                    st.integers(1, 9))


@pytest.mark.slow
@given(st.lists(element, min_size=1, max_size=30), st.sampled_from([0, 0.5]))
def test_touching_sessions_match_the_simulator(spark, draws, lateness):
    """Any order, punctuations on one key or all: replay (with allowed lateness 0 or 0.5) is
    the simulator's, where a tuple exactly ``g`` after a session's last tuple joins it and a
    bound exactly at its end leaves it open."""
    rows = [{"row_num": i, "k": k or "a", "x": n / 4, "v": v} for i, (kind, k, n, v) in enumerate(draws) if kind == "t"]
    puncts = [{"row_num": i, "k": k, "x": n / 4} for i, (kind, k, n, _) in enumerate(draws) if kind == "p"]
    if not rows:
        return
    got = lateness_run(spark, rows, puncts, 0.75, lateness)
    assert got == simulate_lateness(rows, puncts, Fraction(3, 4), Fraction(lateness))


def _spark_stream(spark, batches: list[list[tuple[str, int]]], select: str):
    """Spark's ``StreamingSessionWindowSuite``
    (sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingSessionWindowSuite.scala)
    replayed: each micro-batch's lines (each word a ``sessionId``, the number its ``eventTime`` in
    seconds), rows ``100 b, 100 b + 1, ...`` for batch ``b``, each batch followed (row
    ``100 b + 99``) by its watermark: a punctuation on every key 30 s behind the largest
    ``eventTime`` so far, as ``withWatermark("eventTime", "30 seconds")``. Replays
    ``SELECT sessionId, <select> ... [SESSION 10 SECONDS WATTR eventTime] GROUP BY sessionId``."""
    epoch = dt.datetime(1970, 1, 1)
    tuples, puncts, seen = [], [], []
    for b, batch in enumerate(batches):
        words = [(word, t) for line, t in batch for word in line.split()]
        tuples += [(100 * b + i, word, epoch + dt.timedelta(seconds=t)) for i, (word, t) in enumerate(words)]
        seen += [t for _, t in batch]
        puncts.append((100 * b + 99, epoch + dt.timedelta(seconds=max(seen) - 30)))
    schema = "row_num long, sessionId string, eventTime timestamp"
    spark.createDataFrame(tuples, schema).createOrReplaceTempView("words")
    frame = spark.createDataFrame(puncts, "row_num long, eventTime timestamp")
    return wid.replay(spark, f"SELECT sessionId, {select} FROM words [SESSION 10 SECONDS WATTR eventTime] "
                             "GROUP BY sessionId", punctuation=punctuate.embedded(frame))


def test_sparks_streaming_session_window_in_append_mode(spark):
    """"append mode - session window": the line at 0 arrives when the watermark is 11, its
    sessions would end at 10: Spark drops its 2 rows (late here, ``wid`` NULL). The line at 30
    merges ``spark``'s sessions at 25 and 40 (40 = 30 + 10: they touch) and ``streaming``'s. The
    watermark 60 emits the 5 sessions of Spark's last ``CheckNewAnswer``; the end of the stream
    emits the rest (the suite's "current sessions" comment there)."""
    rep = _spark_stream(spark, [[("hello world spark streaming", 40), ("world hello structured streaming", 41)],
                                [("spark streaming", 25)], [("spark streaming", 0)], [("spark streaming", 30)],
                                [("hello apache spark", 60)], [("structured streaming", 90)]],
                        "count(*) AS numEvents")
    got = {(r.sessionId, int(seconds(r.session_start)), int(seconds(r.session_end)), r.numEvents, r.emit_row)
           for r in rep.results.collect()}
    assert got == {("spark", 25, 50, 3, 599), ("streaming", 25, 51, 4, 599), ("hello", 40, 51, 2, 599),
                   ("world", 40, 51, 2, 599), ("structured", 41, 51, 1, 599),
                   ("hello", 60, 70, 1, None), ("apache", 60, 70, 1, None), ("spark", 60, 70, 1, None),
                   ("structured", 90, 100, 1, None), ("streaming", 90, 100, 1, None)}
    assert sorted((r.row_num, r.sessionId, r.wid) for r in rep.late.collect()) == [(200, "spark", None),
                                                                                   (201, "streaming", None)]


@pytest.mark.parametrize("select, expected", [
    pytest.param("min(eventTime) AS minTime, max(eventTime) AS maxTime", (40, 42),
                 id="session window with first/last function"),
    pytest.param("avg(unix_seconds(eventTime)) AS meanTime, stddev(unix_seconds(eventTime)) AS stdDevTime, "
                 "variance(unix_seconds(eventTime)) AS varTime, sum(unix_seconds(eventTime)) AS mySumSingle",
                 (41, 1, 1, 123), id="session window - with more aggregation functions and UDAFs"),
])
def test_sparks_streaming_session_aggregates(spark, select, expected):
    """Events of key ``a`` at 41, 42 and 40 (a micro-batch each), then ``b`` at 100 ("move the
    watermark past the end of the session") and 101: ``a``'s session ``[40, 52]`` is emitted once
    the watermark passes 52, before the end of the stream, with the aggregates Spark's test
    expects (times in seconds; its median is not among wid's aggregates)."""
    rep = _spark_stream(spark, [[("a", 41)], [("a", 42)], [("a", 40)], [("b", 100)], [("b", 101)]], select)
    [row] = [r for r in rep.results.collect() if r.sessionId == "a"]
    assert (int(seconds(row.session_start)), int(seconds(row.session_end)), row.emit_row) == (40, 52, 399)
    values = tuple(int(seconds(v)) if isinstance(v, dt.datetime) else v for v in row[4:-2])  # after sessionId
    assert values == expected
    assert [r.emit_row for r in rep.results.collect() if r.sessionId == "b"] == [None]
