"""Spark's window syntax inside wid: for every query Spark accepts, ``wid.query(spark, q)`` returns
what ``spark.sql(q)`` returns, column names and types included (docs/semantics.md, "Other
engines' syntax"). Spark's own execution of the same text is the oracle.

The streams look like real ones: microsecond timestamps around a window boundary and before
1970, two-decimal amounts, duplicates, several keys (one of them NULL), rows out of time order,
NULL times and amounts that the query's WHERE removes or the aggregates skip.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wid
from wid.errors import WidError

EPOCH = dt.datetime(1970, 1, 1)
#: Where a stream's times start (naive UTC: the session's time zone): 2024's DST night, just before 1970.
ORIGINS = (dt.datetime(2024, 3, 31, 0, 59, 58, 999_999), dt.datetime(1969, 12, 31, 23, 58, 1, 250_000))
#: Durations as Spark users write them, with their length in microseconds.
DURATIONS = (("1 second", 10**6), ("2.5 seconds", 2_500_000), ("1500 milliseconds", 1_500_000),
             ("10 seconds", 10**7), ("1 minute", 6 * 10**7), ("1 minute 30 seconds", 9 * 10**7),
             ("interval 45 seconds", 45 * 10**6))
AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS total, min(v), max(v), avg(v) AS mean"
COLUMNS = "ts timestamp, k string, v decimal(12,2), g string"


@st.composite
def streams(draw, unit_us: int) -> list[tuple]:
    """1 to 60 rows spread over a few windows of ``unit_us``: times on a microsecond grid, often
    on a window edge or repeated; amounts with two decimals, negative too; NULLs."""
    origin = draw(st.sampled_from(ORIGINS))
    n = draw(st.integers(1, 60))
    span = unit_us * draw(st.sampled_from((2, 5, 12)))
    rows, times = [], []
    for _ in range(n):
        how = draw(st.integers(0, 5))
        if how == 0 and times:
            at = draw(st.sampled_from(times))  # a duplicate
        elif how == 1:
            at = origin + dt.timedelta(microseconds=draw(st.integers(-2, 5)) * unit_us // 2 + draw(st.sampled_from((-1, 0, 1))))
        else:
            at = origin + dt.timedelta(microseconds=draw(st.integers(-span // 4, span)))
        times.append(at)
        ts = None if draw(st.integers(0, 19)) == 0 else at
        v = None if draw(st.integers(0, 9)) == 0 else Decimal(draw(st.integers(-99_999, 99_999))).scaleb(-2)
        gap = draw(st.sampled_from(("2 seconds", "750 milliseconds", "1 minute", "10 seconds")))
        rows.append((ts, draw(st.sampled_from(("a", "b", "c", None))), v, gap))
    return rows


def same(spark, query: str, rows: list[tuple]) -> None:
    """``wid.query`` and ``spark.sql`` agree on ``query`` over ``rows``: schema and rows."""
    spark.createDataFrame(rows, COLUMNS).createOrReplaceTempView("events")
    theirs, ours = spark.sql(query), wid.query(spark, query)
    assert ours.schema.simpleString() == theirs.schema.simpleString(), query
    expected, actual = sorted(map(repr, theirs.collect())), sorted(map(repr, ours.collect()))
    assert actual == expected, f"{query}: {len(actual)} rows, Spark {len(expected)}"


@st.composite
def sliding(draw, multiple: bool | None, start: bool) -> tuple[str, int]:
    """``window(ts, r, s[, startTime])`` text and its slide (microseconds): a range that is a
    multiple of the slide (``multiple``), one that is not (False), or a tumbling window (None)."""
    s_text, s = draw(st.sampled_from(DURATIONS))
    if multiple is None:
        args = f"'{s_text}'"
    else:
        r = s * draw(st.integers(2, 4)) + (0 if multiple else draw(st.sampled_from((s // 2, s // 3, 1))))
        args = f"'{r} microseconds', '{s_text}'"
    if start:
        offset = draw(st.sampled_from((s // 2, -s // 3, s - 1, 1, -1)))
        args += f", '{offset} microseconds'" if multiple is not None else f", '{s_text}', '{offset} microseconds'"
    return f"window(ts, {args})", s


SELECTS = (
    "SELECT window, k, {aggregates} FROM events WHERE ts IS NOT NULL GROUP BY {window}, k",
    "SELECT window.start, window.end AS until, {aggregates} FROM events WHERE ts IS NOT NULL AND v > -500 "
    "GROUP BY {window}",
    "SELECT k, window.end, count(*) * 2 AS twice, sum(v) / count(*) AS ratio FROM events WHERE ts IS NOT NULL "
    "GROUP BY k, {window} HAVING count(*) > 1",
)


@pytest.mark.parametrize("multiple", [None, pytest.param(True, marks=pytest.mark.slow),
                                      pytest.param(False, marks=pytest.mark.slow)],
                         ids=["tumbling", "range-a-multiple", "range-not-a-multiple"])
@given(data=st.data())
def test_window_equals_sparks(spark, multiple, data):
    """``GROUP BY window(ts, r[, s])``: tumbling, sliding with r a multiple of s and not."""
    window, s = data.draw(sliding(multiple, start=False))
    query = data.draw(st.sampled_from(SELECTS)).format(window=window, aggregates=AGGREGATES)
    same(spark, query, data.draw(streams(s)))


@pytest.mark.slow
@given(data=st.data())
def test_window_with_a_start_time_equals_sparks(spark, data):
    """``window(ts, r, s, startTime)``, startTime negative or positive, below the slide."""
    window, s = data.draw(sliding(data.draw(st.sampled_from((None, True, False))), start=True))
    query = data.draw(st.sampled_from(SELECTS)).format(window=window, aggregates=AGGREGATES)
    same(spark, query, data.draw(streams(s)))


@pytest.mark.parametrize("gap", ["'2 seconds'", pytest.param("g", marks=pytest.mark.slow),
                                 pytest.param("CASE WHEN k = 'a' THEN '1500 milliseconds' ELSE g END",
                                              marks=pytest.mark.slow)],
                         ids=["literal", "column", "expression"])
@given(data=st.data())
def test_session_window_equals_sparks(spark, gap, data):
    """``GROUP BY session_window(ts, gap)``: a literal gap, a column of interval strings, an
    expression of them."""
    query = (f"SELECT session_window, k, {AGGREGATES} FROM events WHERE ts IS NOT NULL "
             f"GROUP BY session_window(ts, {gap}), k")
    same(spark, query, data.draw(streams(2 * 10**6)))


def test_the_same_windows_as_the_bracket_clause(spark):
    """Spark's ``window(ts, '10 seconds', '4 seconds', '1 second')`` is the bracket clause's
    ``[RANGE 10 SECONDS SLIDE 4 SECONDS OFFSET 3 SECONDS]``: (1 + 10) mod 4 = 3."""
    rows = [(dt.datetime(2024, 1, 1, 0, 0, s, u), "a", Decimal("1.25"), "1 second")
            for s, u in ((0, 0), (2, 999_999), (3, 0), (6, 500), (13, 1))]
    spark.createDataFrame(rows, COLUMNS).createOrReplaceTempView("events")
    ours = wid.query(spark, "SELECT window.start, window.end, count(*) AS n FROM events "
                            "GROUP BY window(ts, '10 seconds', '4 seconds', '1 second')")
    clause = wid.query(spark, "SELECT count(*) AS n FROM events [RANGE 10 SECONDS SLIDE 4 SECONDS OFFSET 3 SECONDS "
                              "WATTR ts]")
    assert sorted(map(tuple, ours.collect())) == sorted((r.window_start, r.window_end, r.n) for r in clause.collect())


@pytest.mark.parametrize("query, message", [
    ("SELECT window, count(*) FROM events GROUP BY window(ts, '10 seconds', '20 seconds')",
     "the slide duration (20 s) must be less than or equal to the window duration (10 s), as Spark requires"),
    ("SELECT window, count(*) FROM events GROUP BY window(ts, '10 seconds', '5 seconds', '5 seconds')",
     "the absolute value of the start time (5 s) must be less than the slide duration (5 s), as Spark requires"),
    ("SELECT window, count(*) FROM events GROUP BY window(ts, '1 month')",
     "a month has no fixed length, so '1 month' cannot size a time window"),
    ("SELECT window, count(*) FROM events GROUP BY window(ts, 'ten minutes')", "cannot read the duration 'ten minutes'"),
    ("SELECT window, count(*) FROM events GROUP BY window(ts, v)", "the window duration must be a literal duration"),
    ("SELECT window(ts, '1 minute'), v FROM events", "wid runs window() and session_window() as the GROUP BY"),
    ("SELECT count(*) FROM events GROUP BY window(ts, '1 minute'), window(ts, '2 minutes')",
     "GROUP BY holds 2 window() or session_window() calls; wid needs exactly one"),
    ("SELECT count(*) FROM events GROUP BY window(CAST(v AS TIMESTAMP), '1 minute')",
     "window() needs a column of the view as its time column"),
    ("SELECT count(*) FROM (SELECT * FROM events) GROUP BY window(ts, '1 minute')",
     "reads one view or table in FROM (no join or subquery)"),
])
def test_what_wid_cannot_run_the_wid_way_is_one_line(spark, query, message):
    """Spark's own checks, and the queries wid does not run the wid way, each in one line before any job."""
    with pytest.raises(WidError, match=message.replace("(", r"\(").replace(")", r"\)")) as error:
        wid.query(spark, query)
    assert "\n" not in str(error.value)


def test_a_null_time_is_reported_not_dropped(spark):
    """Spark drops a row whose time is NULL from every window; wid reports it, naming the tuple
    (nothing is dropped without a trace): ``WHERE ts IS NOT NULL`` drops it explicitly."""
    spark.createDataFrame([(None, "a", Decimal("1.00"), "1 second")], COLUMNS).createOrReplaceTempView("events")
    with pytest.raises(Exception, match="wid: NULL or NaN window attribute 'ts' in the tuple with ts=NULL, k=a"):
        wid.query(spark, "SELECT window, count(*) FROM events GROUP BY window(ts, '1 minute')").collect()


#: The input rows of Spark's DataFrameTimeWindowingSuite (sql/core/src/test/scala/org/apache/spark/sql/):
#: ``(time, value, id)``.
SUITE_ROWS = [("2016-03-27 19:39:34", 1, "a"), ("2016-03-27 19:39:56", 2, "a"), ("2016-03-27 19:39:27", 4, "b")]


@pytest.mark.parametrize("test, rows, group, expected", [
    ("simple tumbling window with record at window start", [("2016-03-27 19:39:30", 1, "a")],
     "window(time, '10 seconds')", [("2016-03-27 19:39:30", "2016-03-27 19:39:40", 1)]),
    ("SPARK-21590: tumbling window using negative start time",
     [("2016-03-27 19:39:30", 1, "a"), ("2016-03-27 19:39:25", 2, "a")],
     "window(time, '10 seconds', '10 seconds', '-5 seconds')", [("2016-03-27 19:39:25", "2016-03-27 19:39:35", 2)]),
    ("tumbling window groupBy statement with startTime", SUITE_ROWS,
     "window(time, '10 seconds', '10 seconds', '5 seconds'), id", [1, 1, 1]),
    ("SPARK-21590: tumbling window groupBy statement with negative startTime", SUITE_ROWS,
     "window(time, '10 seconds', '10 seconds', '-5 seconds'), id", [1, 1, 1]),
    ("sliding window grouping", SUITE_ROWS, "window(time, '10 seconds', '3 seconds', '0 second')", [
        ("2016-03-27 19:39:18", "2016-03-27 19:39:28", 1), ("2016-03-27 19:39:21", "2016-03-27 19:39:31", 1),
        ("2016-03-27 19:39:24", "2016-03-27 19:39:34", 1), ("2016-03-27 19:39:27", "2016-03-27 19:39:37", 2),
        ("2016-03-27 19:39:30", "2016-03-27 19:39:40", 1), ("2016-03-27 19:39:33", "2016-03-27 19:39:43", 1),
        ("2016-03-27 19:39:48", "2016-03-27 19:39:58", 1), ("2016-03-27 19:39:51", "2016-03-27 19:40:01", 1),
        ("2016-03-27 19:39:54", "2016-03-27 19:40:04", 1)]),
    ("millisecond precision sliding windows",
     [("2016-03-27 09:00:00.41", 3, "a"), ("2016-03-27 09:00:00.62", 6, "a"), ("2016-03-27 09:00:00.715", 8, "a")],
     "window(time, '200 milliseconds', '40 milliseconds', '0 milliseconds')", [
        ("2016-03-27 09:00:00.24", "2016-03-27 09:00:00.44", 1), ("2016-03-27 09:00:00.28", "2016-03-27 09:00:00.48", 1),
        ("2016-03-27 09:00:00.32", "2016-03-27 09:00:00.52", 1), ("2016-03-27 09:00:00.36", "2016-03-27 09:00:00.56", 1),
        ("2016-03-27 09:00:00.4", "2016-03-27 09:00:00.6", 1), ("2016-03-27 09:00:00.44", "2016-03-27 09:00:00.64", 1),
        ("2016-03-27 09:00:00.48", "2016-03-27 09:00:00.68", 1), ("2016-03-27 09:00:00.52", "2016-03-27 09:00:00.72", 2),
        ("2016-03-27 09:00:00.56", "2016-03-27 09:00:00.76", 2), ("2016-03-27 09:00:00.6", "2016-03-27 09:00:00.8", 2),
        ("2016-03-27 09:00:00.64", "2016-03-27 09:00:00.84", 1), ("2016-03-27 09:00:00.68", "2016-03-27 09:00:00.88", 1)]),
    # "negative timestamps" selects window(...) per row; grouped by the window here, one row per window.
    ("negative timestamps", [("1970-01-01 00:00:02", 1, "a"), ("1970-01-01 00:00:12", 2, "a")],
     "window(time, '10 seconds', '10 seconds', '5 seconds')",
     [("1969-12-31 23:59:55", "1970-01-01 00:00:05", 1), ("1970-01-01 00:00:05", "1970-01-01 00:00:15", 1)]),
])
def test_sparks_own_time_windowing_suite(spark, test, rows, group, expected):
    """The grouped cases of Spark's ``DataFrameTimeWindowingSuite`` (start times negative and
    positive, milliseconds, before 1970), their expected rows as the suite states them: the
    window's bounds as strings and the count, or the counts alone in window order."""
    spark.createDataFrame(rows, "t string, value int, id string").selectExpr(
        "CAST(t AS TIMESTAMP) AS time", "value", "id").createOrReplaceTempView("suite")
    out = wid.query(spark, f"SELECT CAST(window.start AS STRING) AS s, CAST(window.end AS STRING) AS e, "
                           f"count(*) AS counts FROM suite GROUP BY {group} ORDER BY window.start")
    got = [tuple(r) for r in out.collect()]
    assert (got if isinstance(expected[0], tuple) else [r[2] for r in got]) == expected, test
