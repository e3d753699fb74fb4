"""Session windows with a gap per tuple, ``[SESSION <expr> [unit] WATTR a]`` (issue 41, item 2):
Spark's dynamic gap (``session_window(time, gap_expr)``). Per key in ``a`` order, a session ends
at the largest ``a + gap`` of its tuples and a next tuple joins when ``a <= end``. Expected values
transcribed from Spark's ``DataFrameSessionWindowingSuite``, then Spark's own operator on
realistic data, an exact reference in Fractions on integers and decimals, and replay at the end
of the stream. Live mode, run to completion over a few micro-batches, is replay (and, at the end
of the stream, Spark's ``session_window``); a gap Spark's analysis marks nondeterministic is
refused everywhere."""

from __future__ import annotations

import datetime as dt
import random
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.sql import functions as F

import wid
from wid.errors import WidError
from wid.stream.live import run as live_run
from wid.stream.live.compile import compiled_live
from wid.stream.sessions import KeySessions
from wid.windows.aware import Session
from wid.windows.clause import parse_window

from live_jobs import run_in_waves, streaming_examples

T0 = dt.datetime(2024, 5, 1, 8, 0, 0)
SUITE = "sql/core/src/test/scala/org/apache/spark/sql/DataFrameSessionWindowingSuite.scala"


def test_clause():
    """A lone number is the constant gap; anything else an expression, in the clause's unit."""
    assert parse_window("SESSION 30 SECONDS WATTR ts") == Session(30, "ts")
    assert parse_window("SESSION CASE WHEN k = 'a' THEN 10 ELSE 5 END SECONDS WATTR ts PATTR k") == \
        Session("CASE WHEN k = 'a' THEN 10 ELSE 5 END", "ts", "k")
    assert parse_window("SESSION IF(k = 'session', 2, 1) MINUTES WATTR ts").gap == "(IF(k = 'session', 2, 1)) * 60"
    assert parse_window("SESSION gap WATTR x").gap == "gap"
    for bad, message in [("SESSION v ROWS WATTR ts", "ROWS"), ("SESSION -2 WATTR ts", "positive")]:
        with pytest.raises(WidError, match=message):
            parse_window(bad)


@pytest.fixture
def temp(spark):
    """``withTempTable`` of the suite: ``(time, value, duration)``, the duration in seconds."""
    rows = [(0, "2016-03-27 19:39:34", 1, 10), (1, "2016-03-27 19:39:56", 2, 20), (2, "2016-03-27 19:39:27", 4, 30)]
    spark.createDataFrame(rows, "row_num long, t string, value int, duration int") \
        .selectExpr("row_num", "CAST(t AS TIMESTAMP) AS time", "value", "duration").createOrReplaceTempView("temp")
    return "temp"


def _sessions(spark, text):
    """``(start, end, value, n)`` strings of ``text``, by the query and by its SQL text (the same)."""
    got = [sorted((str(r.session_start), str(r.session_end), *r[3:]) for r in frame.collect())
           for frame in (wid.query(spark, text), spark.sql(wid.to_sql(spark, text)))]
    assert got[0] == got[1]
    return got[0]


# Spark's tests select session_window(...) per row, ungrouped: each row is its own session; GROUP BY value
# (one row per value) gives each row its own session in wid.
@pytest.mark.parametrize("gap, expected", [
    # "SPARK-36465: time window in SQL with dynamic string expression" (a duration column)
    ("duration", [("2016-03-27 19:39:27", "2016-03-27 19:39:57", 4), ("2016-03-27 19:39:34", "2016-03-27 19:39:44", 1),
                  ("2016-03-27 19:39:56", "2016-03-27 19:40:16", 2)]),
    # "SPARK-36465: time window in SQL with UDF as gap duration" (i * 10 seconds)
    ("value * 10", [("2016-03-27 19:39:27", "2016-03-27 19:40:07", 4),
                    ("2016-03-27 19:39:34", "2016-03-27 19:39:44", 1),
                    ("2016-03-27 19:39:56", "2016-03-27 19:40:16", 2)]),
    # "SPARK-36465: time window in SQL with conditional expression as gap duration"
    ("CASE WHEN value = 1 THEN 2 WHEN value = 2 THEN 10 ELSE 20 END",
     [("2016-03-27 19:39:27", "2016-03-27 19:39:47", 4), ("2016-03-27 19:39:34", "2016-03-27 19:39:36", 1),
      ("2016-03-27 19:39:56", "2016-03-27 19:40:06", 2)]),
])
def test_sparks_dynamic_gap_per_row(spark, temp, gap, expected):
    got = _sessions(spark, f"SELECT value, count(*) AS n FROM temp [SESSION {gap} SECONDS WATTR time] GROUP BY value")
    assert got == [(*e, 1) for e in expected]


def test_sparks_dynamic_gap_merges_across_rows(spark, temp):
    """The same rows in one session: 19:39:27 + 30 s reaches 19:39:34 and 19:39:56; it ends at the
    largest end, 19:39:56 + 20 s (not the last tuple's own end only)."""
    got = _sessions(spark, "SELECT count(*) AS n FROM temp [SESSION duration SECONDS WATTR time]")
    assert got == [("2016-03-27 19:39:27", "2016-03-27 19:40:16", 3)]


def test_long_integer_gaps_on_timestamps(spark, temp):
    """An int gap of hours is taken in microseconds on longs (no int overflow): the session of
    19:39:27 + 30 h holds all three tuples and ends there."""
    got = _sessions(spark, "SELECT count(*) AS n FROM temp [SESSION duration HOURS WATTR time]")
    assert got == [("2016-03-27 19:39:27", "2016-03-29 01:39:27", 3)]


def test_sparks_filter_out_negative_and_zero_gaps_with_where(spark, temp):
    """"SPARK-36465: filter out events with negative/zero gap duration": Spark drops value 1 (0 s)
    and value 2 (-10 s) silently; wid fails naming the tuple, and WHERE drops them explicitly."""
    gap = "CASE WHEN value = 1 THEN 0 WHEN value = 2 THEN -10 ELSE 5 END"
    text = f"SELECT count(*) AS n FROM temp [SESSION {gap} SECONDS WATTR time]"
    with pytest.raises(PySparkException, match=rf"SESSION gap {gap} = (0|-10) is not positive .*WHERE {gap} > 0 .*"
                                               r"in the tuple with row_num=[01]\b"):
        wid.query(spark, text).collect()
    got = _sessions(spark, f"{text} WHERE {gap} > 0")
    assert got == [("2016-03-27 19:39:27", "2016-03-27 19:39:32", 1)]


def test_sparks_filter_out_invalid_gaps_with_where(spark, temp):
    """"SPARK-36465: filter out events with invalid gap duration.": an invalid duration is NULL in
    Spark, dropped silently; wid fails naming the tuple (by its columns in a stream without
    ``row_num``), WHERE drops it."""
    gap = "CASE WHEN value = 1 THEN 2 WHEN value = 2 THEN NULL ELSE 20 END"
    spark.table("temp").drop("row_num").createOrReplaceTempView("temp_nameless")
    with pytest.raises(PySparkException, match=r"= NULL is not positive .* in the tuple with "
                                               r"time=2016-03-27 19:39:56, value=2, duration=20"):
        wid.query(spark, f"SELECT count(*) AS n FROM temp_nameless [SESSION {gap} SECONDS WATTR time]").collect()
    got = _sessions(spark, f"SELECT value, count(*) AS n FROM temp [SESSION {gap} SECONDS WATTR time] "
                           f"WHERE {gap} > 0 GROUP BY value")
    assert got == [("2016-03-27 19:39:27", "2016-03-27 19:39:47", 4, 1),
                   ("2016-03-27 19:39:34", "2016-03-27 19:39:36", 1, 1)]


def test_refusals(spark, temp):
    """A double attribute or gap (no exact ``a + g``), a gap that is no number, one of no whole
    microseconds on a timestamp, live mode: each one line, naming the user's own text."""
    spark.createDataFrame([(0, 1.25, 2.5, "x")], "row_num long, x double, g double, s string") \
        .createOrReplaceTempView("doubles")
    for text, message in [
        ("SELECT count(*) FROM doubles [SESSION 2 + 1 WATTR x]", "not the double 'x'"),
        ("SELECT count(*) FROM temp [SESSION duration * 0.5e0 SECONDS WATTR time]", "is a double"),
        ("SELECT count(*) FROM temp [SESSION concat(value, 's') SECONDS WATTR time]", "is a string"),
        ("SELECT count(*) FROM temp [SESSION nope + 1 SECONDS WATTR time]", "SESSION gap nope \\+ 1: .*nope"),
        ("SELECT count(*) FROM temp [SESSION value * * 2 SECONDS WATTR time]", "SESSION gap value \\* \\* 2: "),
        ("SELECT count(*) FROM temp [SESSION (value * 2 SECONDS WATTR time]", "unbalanced"),
    ]:
        with pytest.raises(WidError, match=message) as err:
            wid.query(spark, text)
        assert "\n" not in str(err.value) and "wid_" not in str(err.value)
    spark.createDataFrame([(0, Decimal("1.5"))], "row_num long, d decimal(38, 10)").createOrReplaceTempView("wide")
    with pytest.raises(WidError, match=r"d \+ SESSION gap 1 \+ 1 is a decimal\(38,9\): Spark rounds it"):
        wid.query(spark, "SELECT count(*) FROM wide [SESSION 1 + 1 WATTR d]")
    with pytest.raises(PySparkException, match=r"SESSION gap value \* 0.0000005 = [\d.]+ is no whole number of micro"):
        wid.query(spark, "SELECT count(*) FROM temp [SESSION value * 0.0000005 SECONDS WATTR time]").collect()
    with pytest.raises(WidError, match="SESSION gap value \\* 0.5e0 is a double"):  # live mode: before the stream runs
        compiled_live(spark, "SELECT count(*) AS n FROM temp [SESSION value * 0.5e0 SECONDS WATTR time]",
                      spark.table("temp"), None)


@pytest.mark.parametrize("gap", ["CAST(rand() * 10 AS INT) + 1", "IF(value > 1, 2, length(uuid()))",
                                 "CASE WHEN shuffle(array(1, 2))[0] = 1 THEN 5 ELSE duration END"])
def test_a_nondeterministic_gap_is_refused_in_every_path(spark, temp, tmp_path, gap):
    """Spark's analysis marks ``rand()``, ``uuid()``, ``shuffle`` nondeterministic: a tuple's gap
    would differ between the two reads of it (replay's state machine reads it after Bucket; a
    session's end and a tuple's join test read it in different window functions). One line in
    the query, its SQL text, replay and live mode, before Spark runs anything."""
    text = f"SELECT value, count(*) AS n FROM temp [SESSION {gap} SECONDS WATTR time] GROUP BY value"
    stream = live_run.source(spark, live_run.split_into_files(spark.table("temp"), tmp_path / "in", 1))
    for run in (lambda: wid.query(spark, text), lambda: wid.to_sql(spark, text),
                lambda: wid.replay(spark, text, wid.punctuate.slack(1)), lambda: wid.live(spark, text, stream)):
        with pytest.raises(WidError, match=r"^SESSION gap .* is not deterministic: each tuple needs one gap") as err:
            run()
        assert "\n" not in str(err.value) and "wid_" not in str(err.value)
    assert _sessions(spark, text.replace(gap, "IF(current_date() > DATE'2000-01-01', duration, 1)")) == [
        ("2016-03-27 19:39:27", "2016-03-27 19:39:57", 4, 1), ("2016-03-27 19:39:34", "2016-03-27 19:39:44", 1, 1),
        ("2016-03-27 19:39:56", "2016-03-27 19:40:16", 2, 1)]  # current_date(): one value per query, deterministic


def _clicks(seed, n=400):
    """Realistic clicks: several keys, microsecond timestamps, two-decimal amounts, row_num out of
    time order, duplicates of time."""
    rng = random.Random(seed)
    times = [T0 + dt.timedelta(microseconds=rng.randint(0, 6 * 10**8)) for _ in range(n)]
    times += rng.sample(times, 20)
    rng.shuffle(times)
    return [(i, rng.choice("abcd"), t, round(rng.uniform(-20, 120), 2)) for i, t in enumerate(times)]


GAP = "CASE WHEN k = 'a' THEN 10 WHEN v > 100 THEN 2.5 WHEN v < 0 THEN 0.000001 ELSE 4.75 END"


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_matches_sparks_session_window_with_a_gap_expression(spark, kind):
    """Same sessions and aggregates as Spark's own ``session_window(ts, gap)`` with the gap as an
    interval of the same seconds, by the query and by its SQL text."""
    df = spark.createDataFrame(_clicks(3), f"row_num long, k string, ts {kind}, v double")
    df.createOrReplaceTempView("clicks")
    text = (f"SELECT k, count(*) AS n, sum(v) AS total, max(v) AS hi "
            f"FROM clicks [SESSION {GAP} SECONDS WATTR ts] GROUP BY k")
    interval = F.expr(f"make_interval(0, 0, 0, 0, 0, 0, CAST({GAP} AS DECIMAL(18, 6)))")
    theirs = df.groupBy("k", F.session_window("ts", interval).alias("s")).agg(
        F.count("*").alias("n"), F.sum("v").alias("total"), F.max("v").alias("hi")).collect()
    expected = {(r.k, r.s.start, r.s.end, r.n, round(r.total, 2), r.hi) for r in theirs}
    for frame in (wid.query(spark, text), spark.sql(wid.to_sql(spark, text))):
        got = {(r.k, r.session_start, r.session_end, r.n, round(r.total, 2), r.hi) for r in frame.collect()}
        assert got == expected
    assert 30 < len(expected) < 300


def _reference(rows):
    """``{(key, start, end): count}`` by the rule, in Fractions: per key in ``a`` order, a tuple
    joins while ``a <= end``, the end the largest ``a + g`` so far."""
    by_key: dict = {}
    for k, a, g in rows:
        by_key.setdefault(k, []).append((Fraction(a), Fraction(g)))
    out = {}
    for k, items in by_key.items():
        runs: list[list] = []  # [start, end, count]
        for a, g in sorted(items):
            if runs and a <= runs[-1][1]:
                runs[-1][1:] = [max(runs[-1][1], a + g), runs[-1][2] + 1]
            else:
                runs.append([a, a + g, 1])
        out.update({(k, start, end): n for start, end, n in runs})
    return out


@pytest.mark.parametrize("kind", ["bigint", "decimal(12, 2)"])
def test_exact_on_integers_and_decimals(spark, kind):
    """Integer and decimal attributes, with integer and decimal gaps: exact ends, touching
    sessions merge (``a = end``), equal values share a session."""
    rng = random.Random(11)
    decimal = kind.startswith("decimal")
    rows = [(i, rng.choice("xy"), rng.randint(-3000, 3000), rng.randint(1, 9)) for i in range(300)]
    rows += [(300, "x", 4000, 1), (301, "x", 4001, 1), (302, "x", 4002, 3), (303, "x", 4002, 1)]  # touching, equal
    rows = [(i, k, Decimal(a) / 100 if decimal else a, g) for i, k, a, g in rows]
    spark.createDataFrame(rows, f"row_num long, k string, a {kind}, g int") \
        .createOrReplaceTempView("points")
    gap = "IF(g > 5, g * 0.25, g)"
    text = f"SELECT k, count(*) AS n FROM points [SESSION {gap} WATTR a] GROUP BY k"
    expected = _reference([(k, a, Fraction(g, 4) if g > 5 else g) for _, k, a, g in rows])
    for frame in (wid.query(spark, text), spark.sql(wid.to_sql(spark, text))):
        got = {(r.k, Fraction(r.session_start), Fraction(r.session_end)): r.n for r in frame.collect()}
        assert got == expected


def _replayed(spark):
    """The query text over 220 clicks and its exact ``(k, wid, start, end, n)``."""
    spark.createDataFrame(_clicks(5, 200), "row_num long, k string, ts timestamp, v double") \
        .createOrReplaceTempView("clicks")
    text = f"SELECT k, count(*) AS n FROM clicks [SESSION {GAP} SECONDS WATTR ts] GROUP BY k"
    return text, {(r.k, r.wid, r.session_start, r.session_end, r.n) for r in wid.query(spark, text).collect()}


def test_replay_at_the_end_of_the_stream_is_the_query(spark):
    """Without punctuation every session closes at the end of the stream: the query's sessions."""
    text, exact = _replayed(spark)
    ended = wid.replay(spark, text, None).results.collect()
    assert {(r.k, r.wid, r.session_start, r.session_end, r.n) for r in ended} == exact
    assert {r.emit_row for r in ended} == {None}


@pytest.mark.slow
def test_replay_under_punctuation(spark):
    """Under ``slack(0)`` each tuple is in one emitted session or late (conservation); with an
    allowed lateness past the stream's span the last revisions are the query's sessions."""
    text, exact = _replayed(spark)
    rep = wid.replay(spark, text, wid.punctuate.slack(0))
    assert rep.results.groupBy().sum("n").first()[0] + rep.late.count() == 220
    rep = wid.replay(spark, text, wid.punctuate.slack(0), allowed_lateness=3600)
    last = rep.results.groupBy("k", "wid").agg(F.max("revision").alias("revision"))
    final = rep.results.join(last, ["k", "wid", "revision"]).where("n > 0").collect()
    assert rep.late.count() == 0
    assert {(r.k, r.session_start, r.session_end, r.n) for r in final} == {e[:1] + e[2:] for e in exact}


# Event by event: the state machine replay runs per key (:class:`wid.stream.sessions.KeySessions`), pure Python.
TUPLES = st.lists(st.tuples(st.integers(-40, 40), st.integers(1, 12)), min_size=1, max_size=25)


@settings(max_examples=300)
@given(TUPLES, st.randoms(use_true_random=False))
def test_key_sessions_in_any_arrival_order_are_the_rule(items, rnd):
    """With a gap per tuple and no punctuation, whatever the arrival order, the sessions at the
    end of the stream are the rule's (tuples spanning ``[a, a + g]`` merge when they touch)."""
    order = list(range(len(items)))
    rnd.shuffle(order)
    key = KeySessions(None)
    for row in order:
        key.arrive(row, items[row][0], gap=items[row][1])
    key.punctuate(None, None)
    expected = _reference([("k", a, g) for a, g in items])
    assert {("k", s.start, s.reach): len(s.members) for s in key.sessions} == expected
    assert not key.late and sorted(m for m, *_ in key.members) == sorted(order)


def _last_revisions(key):
    """``{wid: rows}`` of each id's last revision (none when a merge retired the id)."""
    revisions = {}
    for member, w, revision, _ in key.members:
        revisions.setdefault(w, {}).setdefault(revision, []).append(member)
    for _, w, revision, _ in key.retired:
        revisions.setdefault(w, {})[revision] = []
    return {w: rows[max(rows)] for w, rows in revisions.items() if rows[max(rows)]}


@settings(max_examples=300)
@given(TUPLES, st.randoms(use_true_random=False), st.integers(0, 6), st.booleans())
def test_key_sessions_under_punctuation(items, rnd, lateness, kept):
    """Punctuations after random tuples. Each bound at most the least ``a`` still to come (a
    promise the stream keeps): nothing is late and the last revisions are the rule's sessions.
    Any bounds: each tuple is in exactly one last revision or late (conservation)."""
    order = list(range(len(items)))
    rnd.shuffle(order)
    key = KeySessions(None, lateness)
    for i, row in enumerate(order):
        key.arrive(row, items[row][0], gap=items[row][1])
        if rnd.random() < 0.4:
            rest = [items[r][0] for r in order[i + 1:]]
            key.punctuate(len(items) + i, min(rest, default=50) if kept else items[row][0] + rnd.randint(-5, 15))
    key.punctuate(None, None)
    final = _last_revisions(key)
    assert sorted([m for rows in final.values() for m in rows] + key.late) == sorted(order)
    if kept:
        sessions = {("k", min(items[m][0] for m in rows), max(sum(items[m]) for m in rows)): len(rows)
                    for rows in final.values()}
        assert not key.late and sessions == _reference([("k", a, g) for a, g in items])


# Live mode: the session step keeps each open session's end (the largest x + g) in its state.
LIVE_GAP = "CASE WHEN v < 0 THEN NULL WHEN k = 'a' THEN 10 WHEN v > 100 THEN 2.5 ELSE 4.75 END"


def _arriving(seed, n=160):
    """Clicks as a stream brings them: mostly in time order, 30 % up to 20 s late, duplicates of
    time, microsecond timestamps, four keys and NULL, two-decimal values (some negative: WHERE
    drops them, their gap NULL), a two-decimal ``d`` (seconds since the start) for a decimal
    attribute and a gap column ``g`` (2 to 9 seconds, two decimals)."""
    rng = random.Random(seed)
    times = sorted(rng.randint(0, 4 * 10**8) for _ in range(n))
    times = [t - (rng.randint(0, 2 * 10**7) if rng.random() < 0.3 else 0) for t in times]
    times += rng.sample(times, 10)
    rows = []
    for i, t in enumerate(times):
        t = max(t, 0) // 10**4 * 10**4 if i % 5 == 0 else max(t, 0)  # some on a 10 ms grid: exact ends meet
        rows.append((i, rng.choice(["a", "b", "c", None]), T0 + dt.timedelta(microseconds=t),
                     round(rng.uniform(-10, 120), 2), Decimal(t // 10**4) / 100, Decimal(rng.randint(200, 900)) / 100))
    return rows


ARRIVING = "row_num long, k string, ts timestamp, v double, d decimal(12, 2), g decimal(5, 2)"


def _live(spark, tmp_path, frame, jobs: dict, parts: int = 2) -> dict:
    """Each ``name: (text, generator)`` of ``jobs`` live over ``frame`` in ``parts`` files (and the
    end marker), run to completion: ``{name: (results, late)}``."""
    stream = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", parts))
    started = {name: wid.live(spark, text, stream, generator) for name, (text, generator) in jobs.items()}
    run_in_waves(started, tmp_path)
    return {name: live_run.read_output(spark, job, tmp_path / name / "out") for name, job in started.items()}


def _rows(frame):
    """``frame``'s rows, sorted, double sums to 6 places (they add in another order)."""
    return sorted((tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in frame.collect()), key=repr)


def _same(got, expected):
    """Live's ``(results, late)`` are replay's, row for row (``emit_row``, ids, extents, late rows)."""
    for mine, theirs in zip(got, (expected.results, expected.late)):
        assert _rows(mine) == _rows(theirs)
        assert mine.columns == theirs.columns


@pytest.mark.slow
def test_live_with_a_gap_per_tuple_is_replay_and_sparks_session_window(spark, tmp_path):
    """A CASE gap on microsecond timestamps under ``slack(5)`` and the end of the stream only, a
    gap column on a decimal attribute under ``ordered_by`` and ``slack`` by rows, over two files'
    micro-batches: live mode's results (``emit_row``, ids, ``session_end`` the largest ``a +
    g``) and late rows are replay's; ended by the stream alone, the sessions are Spark's own
    ``session_window(ts, gap)``."""
    frame = spark.createDataFrame(_arriving(23), ARRIVING)
    frame.createOrReplaceTempView("arriving")
    on_ts = (f"SELECT k, count(*) AS n, sum(v) AS total, max(d) AS hi FROM arriving "
             f"[SESSION {LIVE_GAP} SECONDS WATTR ts] WHERE v >= 0 GROUP BY k")
    on_d = "SELECT k, count(*) AS n, min(v) AS lo FROM arriving [SESSION g WATTR d] GROUP BY k"
    jobs = {"ts_slack": (on_ts, wid.punctuate.slack(5)), "ts_end": (on_ts, None),
            "d_ordered": (on_d, wid.punctuate.ordered_by("k")), "d_rows": (on_d, wid.punctuate.slack(20, by="rows"))}
    got = _live(spark, tmp_path, frame, jobs)
    for name, (text, generator) in jobs.items():
        _same(got[name], wid.replay(spark, text, generator))
    results, late = got["ts_slack"]
    assert late.count() > 0 and results.where("emit_row IS NOT NULL AND n > 1").count() > 5
    interval = F.expr(f"make_interval(0, 0, 0, 0, 0, 0, CAST({LIVE_GAP} AS DECIMAL(18, 6)))")
    theirs = frame.where("v >= 0").groupBy("k", F.session_window("ts", interval).alias("s")).agg(
        F.count("*").alias("n"), F.sum("v").alias("total"))
    expected = {(r.k, r.s.start, r.s.end, r.n, round(r.total, 2)) for r in theirs.collect()}
    ended = {(r.k, r.session_start, r.session_end, r.n, round(r.total, 2)) for r in got["ts_end"][0].collect()}
    assert ended == expected and len(expected) > 20


@pytest.mark.slow
def test_live_with_a_gap_per_tuple_restarts_from_its_checkpoint(spark, tmp_path):
    """Stopped after the first of three micro-batches (open sessions and their ends in the
    state), restarted from the checkpoint: replay's output. A checkpoint written by the same
    query with a constant gap has another state layout (no end per session): refused in one line."""
    frame = spark.createDataFrame(_arriving(29, 90), ARRIVING)
    frame.createOrReplaceTempView("arriving_again")
    text = "SELECT k, count(*) AS n, sum(v) AS total FROM arriving_again [SESSION g * 2 WATTR d] GROUP BY k"
    stream = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2))
    generator = wid.punctuate.slack(3)
    first = live_run.run(live_run.start(wid.live(spark, text, stream, generator), tmp_path / "out",
                                        tmp_path / "checkpoint"), stop_after=1)
    assert 1 <= len(first) < 3
    again = wid.live(spark, text, stream, generator)
    live_run.run(live_run.start(again, tmp_path / "out", tmp_path / "checkpoint"))
    _same(live_run.read_output(spark, again, tmp_path / "out"), wid.replay(spark, text, generator))
    constant = text.replace("g * 2", "9")
    live_run.run(live_run.start(wid.live(spark, constant, stream, generator), tmp_path / "old" / "out",
                                tmp_path / "old" / "checkpoint"), stop_after=1)
    with pytest.raises(WidError, match=r"^the checkpoint's state has another layout .*fresh checkpoint$"):
        live_run.run(live_run.start(wid.live(spark, text, stream, generator), tmp_path / "old" / "out",
                                    tmp_path / "old" / "checkpoint"))


@pytest.mark.slow
def test_live_fails_on_a_null_gap_naming_the_tuple_as_replay(spark, tmp_path):
    """A NULL gap (a negative ``v`` that no WHERE drops) fails the live query with replay's line,
    naming the tuple by its ``row_num``."""
    rows = [r for r in _arriving(31, 30) if r[3] >= 0][:12]
    rows[7] = (*rows[7][:3], -1.25, *rows[7][4:])
    frame = spark.createDataFrame(rows, ARRIVING)
    frame.createOrReplaceTempView("arriving_null")
    text = f"SELECT k, count(*) AS n FROM arriving_null [SESSION {LIVE_GAP} SECONDS WATTR ts] GROUP BY k"
    line = rf"SESSION gap {re.escape(LIVE_GAP)} = NULL is not positive .* in the tuple with row_num={rows[7][0]}\b"
    with pytest.raises(PySparkException, match=line):
        wid.replay(spark, text, wid.punctuate.slack(1)).results.collect()
    stream = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2))
    with pytest.raises(WidError, match=line):
        live_run.run(live_run.start(wid.live(spark, text, stream, wid.punctuate.slack(1)), tmp_path / "out",
                                    tmp_path / "checkpoint"))


@streaming_examples(2)  # a streaming query per example
@given(st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 60), st.integers(1, 9),
                          st.integers(0, 3)), min_size=5, max_size=30),
       st.integers(1, 3), st.sampled_from([0, 1, 4]))
@pytest.mark.slow
def test_live_on_any_stream_with_a_gap_per_tuple_is_replay(spark, tmp_path_factory, items, parts, slack):
    """Streams drawn by Hypothesis: a gap column on two-decimal decimals (quarter steps:
    tuples exactly at a session's end), up to 3 behind arrival, duplicates, keys and NULL, over
    1 to 3 micro-batches under ``slack``: live mode is replay."""
    rows = [(i, k, Decimal(t - back) / 4, Decimal(g) / 4) for i, (k, t, g, back) in enumerate(items)]
    frame = spark.createDataFrame(rows, "row_num long, k string, d decimal(12, 2), g decimal(5, 2)")
    frame.createOrReplaceTempView("drawn")
    text = "SELECT k, count(*) AS n, max(g) AS widest FROM drawn [SESSION g WATTR d] GROUP BY k"
    got = _live(spark, tmp_path_factory.mktemp("drawn"), frame, {"drawn": (text, wid.punctuate.slack(slack))}, parts)
    _same(got["drawn"], wid.replay(spark, text, wid.punctuate.slack(slack)))
