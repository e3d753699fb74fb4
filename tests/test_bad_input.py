"""Bad input (docs/semantics.md section 11): a clear error naming the problem, never a silently wrong result."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger

import wid
from wid import WidError, punctuate
from wid.errors import QUERY_CONTEXT_LOGGERS

ROWS = [(3, 0, 1.5, "a", 1_767_225_600_000_000), (8, 1, -2.25, "b", 1_767_225_601_500_000)]
#: How an error names view ``s`` and its columns (never those wid adds: wid_lo, wid_x, _wid_v1, ...).
IN_S = re.escape("in view 's' (its columns: row_num, k, x, name, ts)")


@pytest.fixture(scope="module")
def view(spark):
    """View ``s``: row_num, k, x (double), name (string), ts (timestamp)."""
    spark.createDataFrame(ROWS, "row_num long, k long, x double, name string, ts_us long") \
        .selectExpr("row_num", "k", "x", "name", "timestamp_micros(ts_us) AS ts").createOrReplaceTempView("s")
    return "s"


def query(spark, window: str, select: str = "k, count(*) AS n", rest: str = "GROUP BY k", source: str = "s"):
    return wid.query(spark, f"SELECT {select} FROM {source} [{window}] {rest}")


@pytest.mark.parametrize(
    "window, message",
    [
        ("5 SLIDE 2 WATTR x", r"starts with RANGE, SLIDE, CUMULATE or SESSION"),
        ("RANGE 5 SLIDE WATTR x", r"SLIDE needs an amount"),
        ("RANGE five SLIDE 2 WATTR x", r"RANGE needs a number, got 'five'"),
        ("RANGE 5 2 1 SLIDE 2 WATTR x", r"RANGE needs an amount and an optional unit"),
        ("RANGE 5 WATTR x", r"missing SLIDE"),
        ("SLIDE 2 WATTR x", r"missing RANGE"),
        ("RANGE 5 SLIDE 2", r"missing WATTR"),
        ("RANGE 5 SLIDE 2 WATTR", r"WATTR needs a column name"),
        ("RANGE 5 RANGE 6 SLIDE 2 WATTR x", r"RANGE given twice"),
        ("RANGE 5 SLIDE 2 WATTR x WATTR ts", r"WATTR given twice"),
        ("RANGE 5 FORTNIGHTS SLIDE 2 WATTR x", r"unknown unit 'FORTNIGHTS' after RANGE"),
        ("RANGE 5 MINUTES SLIDE 2 PARSECS WATTR ts", r"unknown unit 'PARSECS' after SLIDE"),
        ("RANGE 5 SLIDE UNBOUNDED WATTR x", r"only RANGE may be UNBOUNDED"),
        ("RANGE 10 ROWS SLIDE 2 WATTR row_num", r"RANGE and SLIDE must both be in ROWS"),
        ("RANGE 5 SLIDE 2 WATTR x PATTR k", r"PATTR partitions tuple-based \(ROWS\) windows"),
    ],
)
def test_malformed_clause_names_the_problem(spark, view, window, message):
    with pytest.raises(WidError, match=message):
        query(spark, window)


@pytest.mark.parametrize(
    "window, message",
    [
        ("RANGE 0 SLIDE 2 WATTR x", r"RANGE must be positive, got 0"),
        ("RANGE -5 SLIDE 2 WATTR x", r"RANGE must be positive, got -5"),
        ("RANGE 5 SLIDE 0 WATTR x", r"SLIDE must be positive, got 0"),
        ("RANGE 5 SLIDE -0.5 WATTR x", r"SLIDE must be positive, got -0.5"),
        ("RANGE 0 MINUTES SLIDE 1 MINUTE WATTR ts", r"RANGE must be positive"),
        ("RANGE UNBOUNDED SLIDE 0 WATTR x", r"SLIDE must be positive"),
        ("RANGE 0 ROWS SLIDE 1 ROWS WATTR row_num", r"RANGE must be positive"),
        ("RANGE 2.5 ROWS SLIDE 1 ROWS WATTR row_num", r"RANGE in ROWS must be a whole number, got 2.5"),
        ("RANGE 4 ROWS SLIDE 1.5 ROWS WATTR row_num", r"SLIDE in ROWS must be a whole number, got 1.5"),
        ("SESSION 0 WATTR x", r"SESSION must be positive, got 0 in \[SESSION 0 WATTR x\]"),
        ("SESSION 1e400 WATTR x", r"SESSION gap 1E\+400 exceeds 2\*\*61"),
        ("SESSION 2305843009213693953 WATTR k", r"SESSION gap 2305843009213693953 exceeds 2\*\*61"),
        ("SESSION 1e15 SECONDS WATTR ts", r"SESSION gap 1000000000000000 exceeds 2\*\*61 microseconds of 'ts': "
                                          r"session ends would overflow a long"),
    ],
)
def test_non_positive_or_fractional_range_and_slide(spark, view, window, message):
    with pytest.raises(WidError, match=message):
        query(spark, window)


@pytest.mark.parametrize(
    "window, select, rest, message",
    [
        ("RANGE 5 SLIDE 2 WATTR speed", "k, count(*) AS n", "GROUP BY k", r"unknown column 'speed'"),
        ("RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR seg", "count(*) AS n", "", r"unknown column 'seg'"),
        ("RANGE 5 SLIDE 2 WATTR x", "k, max(speed) AS hi", "GROUP BY k", rf"^unknown column 'speed' {IN_S}$"),
        ("RANGE 5 SLIDE 2 WATTR x", "k, count(*) AS n", "WHERE speed > 3 GROUP BY k",
         rf"^unknown column 'speed' {IN_S}$"),
        ("RANGE 5 SLIDE 2 WATTR x", "seg, count(*) AS n", "GROUP BY seg", rf"^unknown column 'seg' {IN_S}$"),
        ("RANGE 5 SLIDE 2 WATTR x", "k, count(*) + max(sped) AS n", "GROUP BY k", rf"^unknown column 'sped' {IN_S}$"),
        ("RANGE 5 SLIDE 2 WATTR x", "k, count(*) AS n", "GROUP BY k HAVING nope > 1",
         r"^unknown column 'nope' in HAVING or ORDER BY, which name the output columns \(nearest: .*\bn\b"),
        ("RANGE 5 SLIDE 2 WATTR x", "k, velocity(x) AS v", "GROUP BY k", r"^unknown function 'velocity'$"),
        ("RANGE 5 SLIDE 2 WATTR name", "k, count(*) AS n", "GROUP BY k",
         r"window attribute 'name' must be numeric or a timestamp, not string"),
    ],
)
def test_unknown_column_or_bad_attribute_type(spark, view, window, select, rest, message):
    with pytest.raises(WidError, match=message):
        query(spark, window, select, rest)


@pytest.mark.parametrize(
    "text, message",
    [
        ("SELECT k, count(*) AS n FROM nowhere [RANGE 5 SLIDE 2 WATTR x] GROUP BY k", r"unknown view 'nowhere'"),
        ("SELECT * FROM s [RANGE 5 SLIDE 2 WATTR x]", r"SELECT \* is not a window aggregate"),
        ("SELECT x, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k", r"'x' is neither grouped"),
        ("SELECT k FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k", r"needs at least one aggregate"),
        ("SELECT k, count(*) AS n FROM s GROUP BY k", r"expected SELECT <items> FROM <view> \[<window clause>\]"),
        ("SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k GROUP BY k", r"GROUP BY given twice"),
        ("SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k WHERE x > 0", r"clauses must come in"),
        ("SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] k", r"unexpected text after the window clause"),
        ("SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k LIMIT ten", r"LIMIT needs a whole"),
        ("SELECT k, count((*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k", r"unbalanced"),
    ],
)
def test_malformed_query_names_the_problem(spark, view, text, message):
    with pytest.raises(WidError, match=message):
        wid.query(spark, text)


def _fails_naming_the_tuple(spark, rows, schema, window, row_num):
    """The query on ``rows`` fails (when built, for windows that read the stream's range or
    positions first, or when its result is computed), naming the tuple's row_num."""
    spark.createDataFrame(rows, schema).selectExpr("*", "timestamp_micros(t_us) AS ts").createOrReplaceTempView("bad")
    with pytest.raises(PySparkException, match=rf"NULL or NaN window attribute .* row_num={row_num}\b"):
        query(spark, window, "k, count(*) AS n", "GROUP BY k", source="bad").collect()


@pytest.mark.parametrize(
    "window, bad_row",
    [
        pytest.param("RANGE 1 SLIDE 4 WATTR x", (17, 1, float("nan"), 0), id="nan-number-hopping"),
        pytest.param("RANGE UNBOUNDED SLIDE 1 MINUTE WATTR ts", (17, 0, 1.0, None), id="null-timestamp-landmark"),
    ],
)
def test_null_or_nan_window_attribute_fails_naming_the_row(spark, window, bad_row):
    rows = [(3, 0, 1.5, 10**6), bad_row, (20, 1, 2.0, 2 * 10**6)]
    _fails_naming_the_tuple(spark, rows, "row_num long, k long, x double, t_us long", window, 17)


@pytest.mark.parametrize("window, value, dtype", [
    ("SESSION 2 WATTR x", float("-inf"), "double"), ("SESSION 2 WATTR x", float("inf"), "float"),
    ("RANGE 2 RATTR x SLIDE 1 ROW SATTR row_num", float("-inf"), "double"),
    ("RANGE 2 SLIDE 1 WATTR x", float("-inf"), "double")])
@pytest.mark.parametrize("replayed", [False, True])
@pytest.mark.slow
def test_an_infinite_window_attribute_fails_naming_the_row(spark, window, value, dtype, replayed):
    """An infinite double or float has no place on the attribute's axis (a session's gap, an
    extent's bounds): the query and its replay fail naming the tuple, not with an arithmetic
    error inside."""
    spark.createDataFrame([(3, 0, 1.5), (17, 0, value), (20, 0, 2.5)], f"row_num long, k long, x {dtype}") \
        .createOrReplaceTempView("infinite")
    text = f"SELECT k, count(*) AS n FROM infinite [{window}] GROUP BY k"
    shown = "-Infinity" if value < 0 else "Infinity"
    with pytest.raises(Exception, match=rf"'x' = {shown} is infinite.* in the tuple with row_num=17\b"):
        if replayed:
            rep = wid.replay(spark, text, wid.punctuate.slack(1))
            rep.results.collect()
            rep.late.collect()
        else:
            wid.query(spark, text).collect()


def test_null_row_num_fails_a_rows_window(spark):
    rows = [(3, 0, 1.5, 0), (None, 0, 2.0, 0), (20, 1, 2.0, 0)]
    _fails_naming_the_tuple(spark, rows, "row_num long, k long, x double, t_us long",
                            "RANGE 2 ROWS SLIDE 1 ROWS WATTR row_num", "NULL")


@pytest.mark.parametrize("window, slack", [("RANGE 2 SLIDE 1 WATTR x", True), ("SESSION 2 WATTR x", True),
                                           ("RANGE 2 RATTR x SLIDE 1 ROW SATTR row_num", True),
                                           ("tumbling, count(2)", False)])
@pytest.mark.slow
def test_null_row_num_fails_a_replay_that_orders_by_it(spark, window, slack):
    """A replay that reads arrival order (punctuations, sessions, slide-by-tuple, SPL buffers):
    a tuple without a place in it is an error, not a tuple sorted first or last."""
    spark.createDataFrame([(3, 0, 1.5), (None, 1, 2.0), (20, 0, 2.5)], "row_num long, k long, x double") \
        .createOrReplaceTempView("no_order")
    with pytest.raises(Exception, match="tuple with a NULL row_num: arrival order needs one"):  # Py4J's, from a subquery
        rep = wid.replay(spark, f"SELECT count(*) AS n FROM no_order [{window}]", wid.punctuate.slack(1) if slack else None)
        rep.results.collect()
        rep.late.collect()


@pytest.mark.slow
def test_null_row_num_fails_an_embedded_punctuation(spark, view):
    bounds = spark.createDataFrame([(3, 1.0), (None, 2.0)], "row_num long, x double")
    with pytest.raises(Exception, match="punctuation with a NULL row_num: arrival order needs one"):
        rep = wid.replay(spark, f"SELECT count(*) AS n FROM {view} [RANGE 2 SLIDE 1 WATTR x]", wid.punctuate.embedded(bounds))
        rep.results.collect()
        rep.late.collect()


# --- query text (issue 11): comments, names, LIMIT, ';', quoted and unicode names ------------------------

#: ``k, count(*) AS n`` over view ``s`` in [RANGE 5 SLIDE 2 WATTR x], worked by hand: x = 1.5 lies in
#: (w+1)2 - 5 <= 1.5 < (w+1)2 for w = 0, 1, 2; x = -2.25 for w = -2, -1, 0.
COUNTS = {(0, 0, 1), (1, 0, 1), (2, 0, 1), (-2, 1, 1), (-1, 1, 1), (0, 1, 1)}


def _exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _rows(result) -> set[tuple]:
    return {tuple(row) for row in result.drop("window_start", "window_end").collect()}


@pytest.mark.parametrize(
    "text",
    [
        "SELECT k, count(*) AS n /* ] [ */ FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k",
        "SELECT k, count(*) AS n FROM s [RANGE 5 -- five ]\n SLIDE 2 /* ] [ */ WATTR x] GROUP BY k",
        "SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] -- by key ]\n GROUP BY k /* done */",
        "SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k;",
        "SELECT `k`, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k",
        "SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR é] GROUP BY k",
        "SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR `x y`] GROUP BY `k`",
    ],
    ids=["comment-in-select", "comments-in-brackets", "comments-after-brackets", "trailing-semicolon",
         "backquoted-first-item", "unicode-wattr", "backquoted-wattr"],
)
def test_comments_semicolon_quoted_and_unicode_names_read_as_written(spark, view, text):
    spark.table("s").selectExpr("*", "x AS `é`", "x AS `x y`").createOrReplaceTempView("s_names")
    result = wid.query(spark, text.replace("FROM s ", "FROM s_names "))
    assert result.columns == ["wid", "window_start", "window_end", "k", "n"]
    assert _rows(result) == COUNTS


@pytest.mark.parametrize(
    "select, message",
    [
        ("k, count(*) AS n, max(x) AS n", "output name 'n' given twice in SELECT: give each item its own alias"),
        ("k, count(*) AS N, max(x) AS n", "output name 'n' given twice in SELECT: give each item its own alias"),
        ("k, count(*) AS k", "output name 'k' given twice in SELECT: give each item its own alias"),
        ("k, count(*) AS wid", "output name 'wid' is a column wid adds (wid, window_start, window_end, emit_row): "
                               "choose another alias"),
        ("k AS window_start, count(*) AS n", "output name 'window_start' is a column wid adds "
                                             "(wid, window_start, window_end, emit_row): choose another alias"),
        ("k, max(x) AS window_end", "output name 'window_end' is a column wid adds "
                                    "(wid, window_start, window_end, emit_row): choose another alias"),
        ("k, count(*) AS emit_row", "output name 'emit_row' is a column wid adds "
                                    "(wid, window_start, window_end, emit_row): choose another alias"),
        ("k, max(count(*)) AS m", "nested aggregate in select item 'max(count(*))': a window query computes each "
                                  "aggregate over the tuples of an extent, not over another aggregate"),
    ],
)
def test_duplicate_or_reserved_output_names_and_nested_aggregates(spark, view, select, message):
    with pytest.raises(WidError, match=_exactly(message)):
        query(spark, "RANGE 5 SLIDE 2 WATTR x", select)


@pytest.mark.parametrize(
    "rest, message",
    [
        ("GROUP BY k LIMIT 99999999999999999999",
         "LIMIT must be at most 2147483647 (Spark's limit is an int), got 99999999999999999999"),
        ("GROUP BY k LIMIT -1", "LIMIT needs a whole number, got '-1'"),
        ("GROUP BY k; SELECT 1", "a window query is one statement, text follows its ';': "
                                 "SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k; SELECT 1"),
        ("GROUP BY k UNION SELECT 1", "a window query is one SELECT: "
                                      "SELECT k, count(*) AS n FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k UNION SELECT 1"),
    ],
)
def test_limit_and_statement_end_named_clearly(spark, view, rest, message):
    with pytest.raises(WidError, match=_exactly(message)):
        query(spark, "RANGE 5 SLIDE 2 WATTR x", rest=rest)


def test_an_unknown_unicode_attribute_is_named(spark, view):
    with pytest.raises(WidError, match=r"^unknown column 'vélo' \(columns: row_num, k, x, name, ts\)$"):
        query(spark, "RANGE 5 SLIDE 2 WATTR vélo")


# --- errors before work (issue 38): each generator's columns, misspelt columns, nothing on stderr ----------

#: A replayed query over view ``s`` (window attribute ``x``, a double; GROUP BY key ``k``, a long).
REPLAYED = "SELECT k, count(*) AS n FROM s [RANGE 2 SLIDE 1 WATTR x] GROUP BY k"


@contextmanager
def _no_spark_job(spark):
    """The block runs no Spark job (its checks read schemas only)."""
    sc = spark.sparkContext
    sc.setJobGroup("wid-checks", "checks before any job")
    try:
        yield
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup("wid-checks") == []


@pytest.mark.parametrize(
    "generator, message",
    [
        pytest.param(lambda spark: punctuate.heartbeat(2, 0),
                     "heartbeat: view 's' has no clock column 'arrival_ts' (its columns: row_num, k, x, name, ts); "
                     "name the arrival clock with heartbeat(every, skew, clock=COLUMN)", id="heartbeat-no-arrival_ts"),
        pytest.param(lambda spark: punctuate.heartbeat(2, 0, clock="name"),
                     "heartbeat: clock column 'name' of view 's' is string: it must be a number or a timestamp",
                     id="heartbeat-string-clock"),
        pytest.param(lambda spark: punctuate.heartbeat(2, 0, clock="TS"),
                     "heartbeat: clock column 'ts' (timestamp) and window attribute 'x' (double) of view 's' must "
                     "both be timestamps or both numbers", id="heartbeat-timestamp-clock-double-attribute"),
        pytest.param(lambda spark: punctuate.ordered_by("seg"),
                     "ordered_by: view 's' has no column 'seg' (its columns: row_num, k, x, name, ts)",
                     id="ordered_by-unknown-key"),
        pytest.param(lambda spark: punctuate.ordered_by("k", "name"),
                     "ordered_by: column 'name' of view 's' is not a GROUP BY key of the query (keys: k)",
                     id="ordered_by-not-a-key"),
        pytest.param(lambda spark: punctuate.embedded(spark.createDataFrame([(3, 0, 1.25)], "row_num long, k long, "
                                                                                            "bound double")),
                     "embedded punctuations have no bound column 'x', named like the window attribute of view 's' "
                     "(their columns: row_num, k, bound)", id="embedded-no-bound"),
        pytest.param(lambda spark: punctuate.embedded(spark.createDataFrame([(0, 1.25)], "k long, x double")),
                     "embedded punctuations have no row_num column (their columns: k, x)", id="embedded-no-row_num"),
        pytest.param(lambda spark: punctuate.embedded(spark.createDataFrame([(3, "s1", 1.25)], "row_num long, "
                                                                                               "seg string, x double")),
                     "embedded punctuations: view 's' has no column 'seg' (its columns: row_num, k, x, name, ts)",
                     id="embedded-unknown-key"),
        pytest.param(lambda spark: punctuate.embedded(spark.createDataFrame([(3, "0", 1.25)], "row_num long, "
                                                                                              "k string, x double")),
                     "embedded punctuations: column 'k' is string, but 'k' of view 's' is bigint",
                     id="embedded-key-of-another-type"),
        pytest.param(lambda spark: punctuate.embedded(spark.createDataFrame([(3, "1.25")], "row_num long, x string")),
                     "embedded punctuations: column 'x' is string, but 'x' of view 's' is double",
                     id="embedded-bound-of-another-type"),
    ],
)
def test_each_generators_columns_are_checked_before_any_spark_job(spark, view, generator, message):
    """A generator's columns are named with the generator and the view, from the schemas alone:
    no Spark exception with a plan dump, no column wid adds in the message."""
    punctuation = generator(spark)
    with _no_spark_job(spark), pytest.raises(WidError, match=_exactly(message)):
        wid.replay(spark, REPLAYED, punctuation)


@pytest.mark.parametrize("replayed", [False, True], ids=["query", "replay"])
def test_a_misspelt_aggregate_argument_names_only_the_views_columns(spark, view, replayed):
    text = "SELECT k, max(sped) AS hi FROM s [RANGE 2 SLIDE 1 WATTR x] GROUP BY k"
    with pytest.raises(WidError) as raised:
        wid.replay(spark, text, punctuate.slack(1)) if replayed else wid.query(spark, text)
    assert str(raised.value) == "unknown column 'sped' in view 's' (its columns: row_num, k, x, name, ts)"
    assert not re.search(r"wid_|window_|SQLSTATE|\n", str(raised.value))


def test_a_refused_query_logs_nothing_on_stderr(spark, view, capfd):
    """PySpark logs each analysis error it captures (JSON lines of its ``SQLQueryContextLogger``,
    with Spark's plan and Java stack trace); wid says it once, in the WidError, and leaves the
    loggers as it found them."""
    capfd.readouterr()
    with pytest.raises(WidError, match="unknown column 'speed'"):
        query(spark, "RANGE 5 SLIDE 2 WATTR x", "k, max(speed) AS hi")
    with pytest.raises(WidError, match="unknown column 'nope'"):
        query(spark, "RANGE 5 SLIDE 2 WATTR x", rest="GROUP BY k ORDER BY nope")
    with pytest.raises(WidError, match="no clock column 'arrival_ts'"):
        wid.replay(spark, REPLAYED, punctuate.heartbeat(2, 0))
    out, err = capfd.readouterr()
    assert "QueryContextLogger" not in out + err and "AnalysisException" not in out + err
    assert [line for line in (out + err).splitlines() if line.lstrip().startswith("{")] == []
    assert not any(PySparkLogger.getLogger(name).disabled for name in QUERY_CONTEXT_LOGGERS)


@pytest.mark.parametrize("name", ["wid", "window_start", "WINDOW_END"])
def test_a_view_with_a_column_wid_adds_is_refused(spark, name):
    spark.createDataFrame([(0, 1.5, 2)], f"row_num long, x double, `{name}` long").createOrReplaceTempView("taken")
    with pytest.raises(WidError, match=f"view 'taken' already has a column named '{name.lower()}'"):
        wid.query(spark, "SELECT count(*) AS n FROM taken [RANGE 2 SLIDE 1 WATTR x]")
