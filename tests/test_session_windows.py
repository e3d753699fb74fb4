"""Session windows ``[SESSION g WATTR a]``: against Spark's own ``session_window`` and the
brute-force oracle (exact values), on timestamps, longs, decimals and doubles."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import seconds, sessions
from pyspark.sql import functions as F

import wid
from wid.errors import WidError
from wid.windows.clause import parse_window
from wid.windows.aware import Session

T0 = dt.datetime(2024, 5, 1, 8, 0, 0)


def test_clause():
    assert parse_window("SESSION 30 SECONDS WATTR ts") == Session(30, "ts")
    assert parse_window("session 2 minutes wattr ts pattr seg") == Session(120, "ts", "seg")
    assert parse_window("SESSION 1.5 WATTR x") == Session(1.5, "x")
    for bad, message in [("SESSION 0 WATTR ts", "positive"), ("SESSION 3 ROWS WATTR ts", "ROWS"),
                         ("SESSION 3 WATTR ts SLIDE 2", "not SLIDE"), ("SESSION 3", "missing WATTR"),
                         ("SESSION UNBOUNDED WATTR ts", "UNBOUNDED")]:
        with pytest.raises(WidError, match=message):
            parse_window(bad)


def _spark_vs_ours(spark, rows, gap):
    """``(ours, Spark's, ours by its SQL text)``: ``(k, start, end, n, total, hi)`` of
    ``[SESSION 30 SECONDS WATTR ts] GROUP BY k`` and of ``session_window(ts, gap)``."""
    df = spark.createDataFrame(rows, "row_num long, k string, ts timestamp, v long")
    df.createOrReplaceTempView("clicks")
    text = ("SELECT k, count(*) AS n, sum(v) AS total, max(v) AS hi "
            "FROM clicks [SESSION 30 SECONDS WATTR ts] GROUP BY k")
    ours, compiled = wid.query(spark, text).collect(), spark.sql(wid.to_sql(spark, text)).collect()
    theirs = df.groupBy("k", F.session_window("ts", gap).alias("s")).agg(
        F.count("*").alias("n"), F.sum("v").alias("total"), F.max("v").alias("hi")).collect()
    return ({(r.k, r.session_start, r.session_end, r.n, r.total, r.hi) for r in ours},
            {(r.k, r.s.start, r.s.end, r.n, r.total, r.hi) for r in theirs},
            {(r.k, r.session_start, r.session_end, r.n, r.total, r.hi) for r in compiled}, ours)


def test_matches_sparks_session_window(spark):
    """Same rows, same sessions and aggregates as ``session_window(ts, '30 seconds')``, by the
    query and by its SQL text; ids count each key's sessions from 0 in start order."""
    rng = random.Random(7)
    rows = [(i, rng.choice("abc"), T0 + dt.timedelta(microseconds=rng.randint(0, 8 * 10**9)), rng.randint(0, 9))
            for i in range(300)]
    got, expected, compiled, ours = _spark_vs_ours(spark, rows, "30 seconds")
    assert got == expected == compiled and 20 < len(got) < 280
    ids = {}
    for r in ours:
        ids.setdefault(r.k, []).append((r.session_start, r.wid))
    assert all([w for _, w in sorted(v)] == list(range(len(v))) for v in ids.values())  # per key, in order


@pytest.mark.slow
def test_a_tuple_exactly_g_after_the_last_joins_its_session(spark):
    """docs/semantics.md 3.10: the next tuple joins iff ``a <= previous a + g``: sessions that
    touch merge, as in Spark's ``session_window``. Microsecond timestamps on a 10 s grid, some
    1 us off: exactly 30 s apart joins, 30 s + 1 us apart splits; so Spark with the gap 1 us
    shorter differs. Also against the oracle."""
    rng = random.Random(8)
    rows = [(i, rng.choice("ab"), T0 + dt.timedelta(microseconds=rng.randint(0, 300) * 10_000_000
                                                     + rng.choice([0, 0, 1, -1])), 1) for i in range(200)]
    got, same_gap, compiled, _ = _spark_vs_ours(spark, rows, "30 seconds")
    assert got == same_gap == compiled
    assert got != _spark_vs_ours(spark, rows, "29999999 microseconds")[1]  # the ties at exactly 30 s
    by_key = {k: sorted(r[2] for r in rows if r[1] == k) for k in "ab"}
    assert any(b - a == dt.timedelta(seconds=30) for ts in by_key.values() for a, b in zip(ts, ts[1:]))
    _check_against_oracle(spark, rows, "row_num long, k string, x timestamp, v long", Fraction(30),
                          "SESSION 30 SECONDS WATTR x")


def _spark_suite_rows(*rows: tuple) -> list[tuple]:
    """A Spark suite's ``(time, value, id)`` rows (time as written, in UTC), with a row_num."""
    return [(i, dt.datetime.fromisoformat(t), *rest) for i, (t, *rest) in enumerate(rows)]


ROWS_34_56_27 = _spark_suite_rows(("2016-03-27 19:39:34", 1, "a"), ("2016-03-27 19:39:56", 2, "a"),
                                  ("2016-03-27 19:39:27", 4, "b"))
ROWS_A_A_A_A_B = [("2016-03-27 19:39:34", 1, 2, "a"), ("2016-03-27 19:39:39", 1, 2, "a"),
                  ("2016-03-27 19:39:56", 2, 4, "a"), ("2016-03-27 19:40:04", 2, 4, "a"),
                  ("2016-03-27 19:39:27", 4, 8, "b")]
ONE_VALUE = _spark_suite_rows(*[(t, v, k) for t, v, _, k in ROWS_A_A_A_A_B])  # as (time, value, id)
TVI = "time timestamp, value long, id string"


@pytest.mark.parametrize("rows, schema, query, expected", [
    pytest.param(_spark_suite_rows(("2016-03-27 19:39:30", 1, "a")), TVI,
                 "SELECT count(*) AS counts FROM t [SESSION 10 SECONDS WATTR time]",
                 [("2016-03-27 19:39:30", "2016-03-27 19:39:40", 1)],
                 id="simple session window with record at window start"),
    pytest.param(ROWS_34_56_27, TVI,
                 "SELECT count(*) AS counts FROM t [SESSION 10 SECONDS WATTR time]",
                 [(2,), (1,)], id="session window groupBy statement"),
    pytest.param(ONE_VALUE, TVI,
                 "SELECT id, count(*) AS counts, sum(value) AS sum FROM t [SESSION 10 SECONDS WATTR time] GROUP BY id",
                 [("2016-03-27 19:39:27", "2016-03-27 19:39:37", "b", 1, 4),
                  ("2016-03-27 19:39:34", "2016-03-27 19:39:49", "a", 2, 2),
                  ("2016-03-27 19:39:56", "2016-03-27 19:40:14", "a", 2, 4)],
                 id="session window groupBy with multiple keys statement"),
    pytest.param(ONE_VALUE, TVI,
                 "SELECT id, count(*) AS counts, sum(DISTINCT value) AS sum FROM t [SESSION 10 SECONDS WATTR time] "
                 "GROUP BY id",
                 [("2016-03-27 19:39:27", "2016-03-27 19:39:37", "b", 1, 4),
                  ("2016-03-27 19:39:34", "2016-03-27 19:39:49", "a", 2, 1),
                  ("2016-03-27 19:39:56", "2016-03-27 19:40:14", "a", 2, 2)],
                 id="session window groupBy with multiple keys statement - one distinct"),
    pytest.param(_spark_suite_rows(*ROWS_A_A_A_A_B), "time timestamp, value long, value2 long, id string",
                 "SELECT id, sum(DISTINCT value) AS sum, sum(DISTINCT value2) AS sum2 FROM t "
                 "[SESSION 10 SECONDS WATTR time] GROUP BY id",
                 [("2016-03-27 19:39:27", "2016-03-27 19:39:37", "b", 4, 8),
                  ("2016-03-27 19:39:34", "2016-03-27 19:39:49", "a", 1, 2),
                  ("2016-03-27 19:39:56", "2016-03-27 19:40:14", "a", 2, 4)],
                 id="session window groupBy with multiple keys statement - two distinct"),
    pytest.param(_spark_suite_rows(("2016-03-27 19:39:34", 1, "a"), ("2016-03-27 19:39:39", 1, "b"),
                                   ("2016-03-27 19:39:40", 2, "a"), ("2016-03-27 19:39:45", 2, "b"),
                                   ("2016-03-27 19:39:27", 4, "b")), TVI,
                 "SELECT id, count(*) AS counts, sum(value) AS sum FROM t [SESSION 10 SECONDS WATTR time] GROUP BY id",
                 [("2016-03-27 19:39:27", "2016-03-27 19:39:37", "b", 1, 4),
                  ("2016-03-27 19:39:34", "2016-03-27 19:39:50", "a", 2, 3),
                  ("2016-03-27 19:39:39", "2016-03-27 19:39:55", "b", 2, 3)],
                 id="session window groupBy with multiple keys statement - keys overlapped with sessions"),
    pytest.param(_spark_suite_rows(("2016-03-27 19:39:30", 1, "a"), ("2016-03-27 19:39:25", 2, "a")),
                 "time timestamp_ntz, value long, id string",
                 "SELECT count(*) AS counts FROM t [SESSION 10 SECONDS WATTR time]",
                 [("2016-03-27 19:39:25", "2016-03-27 19:39:40", 2)],
                 id="SPARK-36724: Support timestamp_ntz as a type of time column for SessionWindow"),
    pytest.param(_spark_suite_rows(("2016-03-11 09:00:07", 1)), "dt timestamp, v long",
                 "SELECT sum(v) AS total FROM t [SESSION 5 SECONDS WATTR dt]",
                 [("2016-03-11 09:00:07", "2016-03-11 09:00:12", 1)], id="pyspark session_window doctest"),
])
def test_sparks_own_session_window_tests(spark, rows, schema, query, expected):
    """Spark's ``DataFrameSessionWindowingSuite``
    (sql/core/src/test/scala/org/apache/spark/sql/DataFrameSessionWindowingSuite.scala; each case
    named by its test there, inputs and expected rows transcribed) and the pyspark
    ``session_window`` doctest (python/pyspark/sql/functions/builtin.py): the same sessions by
    ``wid.query`` and by its SQL text, ordered by start as Spark's tests order them, times as
    Spark prints them (UTC). Its "null timestamps" test is in tests/test_where.py."""
    spark.createDataFrame(rows, f"row_num long, {schema}").createOrReplaceTempView("t")
    text = f"{query} ORDER BY session_start"
    for out in (wid.query(spark, text), spark.sql(wid.to_sql(spark, text))):
        got = [tuple(str(v) if isinstance(v, dt.datetime) else v for v in r[1:]) for r in out.collect()]
        assert [g[-len(e):] for g, e in zip(got, expected)] == expected and len(got) == len(expected)


#: "complete mode - session window": the lines added (each word a sessionId, the number its
#: eventTime in seconds) and, after each, the whole result Spark's complete mode checks:
#: (sessionId, start, end, durationMs as the suite names it, numEvents).
COMPLETE_MODE = [
    ([("hello world spark streaming", 40), ("world hello structured streaming", 41)],
     {("hello", 40, 51, 11, 2), ("world", 40, 51, 11, 2), ("streaming", 40, 51, 11, 2), ("spark", 40, 50, 10, 1),
      ("structured", 41, 51, 10, 1)}),
    ([("spark streaming", 25)],  # placing new sessions "before" previous sessions
     {("spark", 25, 35, 10, 1), ("streaming", 25, 35, 10, 1), ("hello", 40, 51, 11, 2), ("world", 40, 51, 11, 2),
      ("streaming", 40, 51, 11, 2), ("spark", 40, 50, 10, 1), ("structured", 41, 51, 10, 1)}),
    ([("spark streaming", 30)],  # concatenating multiple previous sessions into one: spark's 40 = 30 + 10 touches
     {("spark", 25, 50, 25, 3), ("streaming", 25, 51, 26, 4), ("hello", 40, 51, 11, 2), ("world", 40, 51, 11, 2),
      ("structured", 41, 51, 10, 1)}),
    ([("hello apache spark", 60)],  # placing new sessions after previous sessions
     {("spark", 25, 50, 25, 3), ("streaming", 25, 51, 26, 4), ("hello", 40, 51, 11, 2), ("world", 40, 51, 11, 2),
      ("structured", 41, 51, 10, 1), ("hello", 60, 70, 10, 1), ("apache", 60, 70, 10, 1), ("spark", 60, 70, 10, 1)}),
    ([("structured streaming", 90)],
     {("spark", 25, 50, 25, 3), ("streaming", 25, 51, 26, 4), ("hello", 40, 51, 11, 2), ("world", 40, 51, 11, 2),
      ("structured", 41, 51, 10, 1), ("hello", 60, 70, 10, 1), ("apache", 60, 70, 10, 1), ("spark", 60, 70, 10, 1),
      ("structured", 90, 100, 10, 1), ("streaming", 90, 100, 10, 1)}),
]


def test_sparks_streaming_session_window_in_complete_mode(spark):
    """Spark's ``StreamingSessionWindowSuite``
    (sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingSessionWindowSuite.scala),
    "complete mode - session window" (gap 10 s): complete mode
    shows the sessions of all the data so far (its watermark is not honoured), that is
    ``wid.query`` over the lines added so far, after each addition. The third addition (30)
    merges ``spark``'s sessions at 25 and 40 into one, 40 lying exactly 10 s after 30."""
    lines = []
    for added, expected in COMPLETE_MODE:
        lines += added
        rows = [(i, word, dt.datetime(1970, 1, 1) + dt.timedelta(seconds=t))
                for i, (word, t) in enumerate((w, t) for line, t in lines for w in line.split())]
        schema = "row_num long, sessionId string, eventTime timestamp"
        spark.createDataFrame(rows, schema).createOrReplaceTempView("words")
        out = wid.query(spark, "SELECT sessionId, count(*) AS numEvents FROM words "
                               "[SESSION 10 SECONDS WATTR eventTime] GROUP BY sessionId").collect()
        got = {(r.sessionId, int(seconds(r.session_start)), int(seconds(r.session_end)), r.numEvents) for r in out}
        assert got == {(k, start, end, n) for k, start, end, duration, n in expected}
        assert all(end - start == duration for _, start, end, duration, _ in expected)


def _check_against_oracle(spark, rows, schema, gap, clause, keys=("k",), sql=False):
    """The query on ``rows`` (and, with ``sql``, its SQL text) gives the oracle's sessions: per key
    and id, the count, ``sum(v)``, the first row_num and the start."""
    spark.createDataFrame(rows, schema).createOrReplaceTempView("s")
    names = schema.split(", ")
    dicts = [dict(zip([n.split()[0] for n in names], r)) for r in rows]
    group = f" GROUP BY {', '.join(keys)}" if keys and "PATTR" not in clause else ""
    text = (f"SELECT {', '.join(keys)}, count(*) AS n, sum(v) AS total, min(row_num) AS first "
            f"FROM s [{clause}]{group}")
    expected = {(key, w, len(run), sum(t["v"] for t in run), min(t["row_num"] for t in run), seconds(run[0]["x"]))
                for key, w, run in sessions(dicts, gap, "x", keys)}
    for out in [wid.query(spark, text), *([spark.sql(wid.to_sql(spark, text))] if sql else [])]:
        out = out.collect()
        got = {(tuple(r[k] for k in keys), r.wid, r.n, r.total, r.first, seconds(r.session_start)) for r in out}
        assert got == expected
    return out


#: A grid value, a third of the gap apart, and a nudge of one unit (1 us, 0.01) off it: a next
#: tuple often lies exactly ``g`` after the previous one, or one unit more or less.
grid = st.tuples(st.sampled_from("ab"), st.integers(-12, 12), st.sampled_from([0, 0, 0, 1, -1]), st.integers(0, 9))


@pytest.mark.slow
@given(st.lists(grid, min_size=1, max_size=30), st.sampled_from(["timestamp", "double", "decimal(6,2)"]))
def test_touching_sessions_as_the_oracle(spark, draws, kind):
    """``[SESSION g WATTR x]`` by the query and by its SQL text against the oracle (cut where
    ``x_next - x_prev > g``), on microsecond timestamps (grid 0.5 s, g = 1.5 s), doubles with
    two decimals (grid 0.25, g = 0.75: a double such as 0.26 is not 0.26, so ``0.26 + 0.75``
    touches or not as their binary values do) and decimals."""
    if kind == "timestamp":
        rows = [(i, k, T0 + dt.timedelta(microseconds=500_000 * n + d), v) for i, (k, n, d, v) in enumerate(draws)]
        gap, clause = Fraction(3, 2), "SESSION 1.5 SECONDS WATTR x"
    else:
        values = [Decimal(25 * n + d) / 100 for _, n, d, _ in draws]
        rows = [(i, k, float(x) if kind == "double" else x, v) for i, ((k, *_, v), x) in enumerate(zip(draws, values))]
        gap, clause = Fraction(3, 4), "SESSION 0.75 WATTR x"  # 0.75: a double exactly
    _check_against_oracle(spark, rows, f"row_num long, k string, x {kind}, v long", gap, clause, sql=True)


def test_doubles_decide_each_gap_exactly(spark):
    """Pairs whose difference rounds to the gap in double arithmetic but is below it (or above)."""
    g = 0.3
    pairs = []
    for base in (0.01, 0.02, 0.05, 0.001, 1e-05, 0.013, 0.1, 0.7, 1e6 + 0.1):
        b = base + g
        for _ in range(3):
            b = math.nextafter(b, -math.inf)
        for _ in range(7):
            pairs.append((base, b))
            b = math.nextafter(b, math.inf)
    close = [(a, b) for a, b in pairs if b - a == g]
    assert any(Fraction(b) - Fraction(a) < Fraction(g) for a, b in close)  # (0.05, 0.35): one session
    assert any(Fraction(b) - Fraction(a) > Fraction(g) for a, b in close)
    rows = [(2 * i + j, f"k{i}", x, 1) for i, pair in enumerate(pairs) for j, x in enumerate(pair)]
    _check_against_oracle(spark, rows, "row_num long, k string, x double, v long", Fraction(g), "SESSION 0.3 WATTR x")


def test_longs_decimals_and_pattr(spark):
    rng = random.Random(3)
    longs = [(i, rng.choice("ab"), rng.randint(0, 60), rng.randint(1, 5)) for i in range(120)]
    _check_against_oracle(spark, longs, "row_num long, k string, x long, v long", Fraction(5), "SESSION 5 WATTR x")
    _check_against_oracle(spark, longs, "row_num long, k string, x long, v long", Fraction(5, 2),
                          "SESSION 2.5 WATTR x PATTR k")
    decimals = [(i, rng.choice("ab"), Decimal(rng.randint(0, 300)) / 10, rng.randint(1, 5)) for i in range(120)]
    out = _check_against_oracle(spark, decimals, "row_num long, k string, x decimal(10,1), v long", Fraction(1, 10),
                                "SESSION 0.1 WATTR x")
    assert all(r.session_end - r.session_start >= Decimal("0.1") for r in out)


def test_timestamps_to_the_microsecond(spark):
    rng = random.Random(5)
    rows = [(i, "a", T0 + dt.timedelta(microseconds=rng.randint(0, 30) * 500_000 + rng.choice([0, 1, -1])), 1)
            for i in range(80)]
    _check_against_oracle(spark, rows, "row_num long, k string, x timestamp, v long", Fraction(1, 2),
                          "SESSION 0.5 SECONDS WATTR x")


def test_bad_input(spark):
    spark.createDataFrame([(0, T0, 1)], "row_num long, ts timestamp, v long").createOrReplaceTempView("s")
    with pytest.raises(WidError, match="whole number of microseconds"):
        wid.query(spark, "SELECT count(*) FROM s [SESSION 0.0000001 SECONDS WATTR ts]")
    with pytest.raises(WidError, match="unknown column"):
        wid.query(spark, "SELECT count(*) FROM s [SESSION 1 WATTR ts] GROUP BY nope")
