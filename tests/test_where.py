"""docs/semantics.md section 2: ``WHERE`` runs before Bucket wherever a kept tuple's windows do not
depend on the tuples it drops (windows on a value attribute: sliding, tumbling, hopping;
sessions), so a tuple it drops never fails the query, even with a NULL or NaN window attribute,
which fails the query when kept (section 11). Where Bucket reads every tuple (a landmark's last
window, slide-by-tuple window values, ROWS positions), ``WHERE`` runs after it and such a tuple
still fails. The query, its SQL text and its replay alike, against the oracle."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

import pytest
from oracle import Sliding, evaluate, seconds, sessions

import wid

NAN = float("nan")
#: Readings with two decimals; rows 1 (NULL) and 3 (NaN) have no place on the axis, and v = 0.
ROWS = [(0, "a", 1.25, 1), (1, "a", None, 0), (2, "b", 2.5, 1), (3, "a", NAN, 0), (4, "a", 3.75, 1),
        (5, "b", 4.0, 1), (6, "a", 4.5, 2), (7, "b", 5.3, 4)]
WINDOWS = {"sliding": "RANGE 2 SLIDE 1 WATTR x", "tumbling": "RANGE 1.5 SLIDE 1.5 WATTR x",
           "hopping": "RANGE 1 SLIDE 2 WATTR x", "session": "SESSION 1.25 WATTR x"}


def _expected(window: str, kept: list[dict]) -> set[tuple]:
    """``(k, wid, n, total)`` of the oracle over the tuples WHERE keeps."""
    if window == "session":
        runs = sessions(kept, Fraction(5, 4), "x", ["k"])
        return {(key[0], w, len(run), sum(t["v"] for t in run)) for key, w, run in runs}
    r, s = {"sliding": (2, 1), "tumbling": (1.5, 1.5), "hopping": (1, 2)}[window]
    out = evaluate(kept, Sliding(r, s, "x"), {"n": ("count", None), "total": ("sum", "v")}, ["k"])
    return {(t["k"], t["wid"], t["n"], t["total"]) for t in out}


@pytest.fixture
def readings(spark):
    spark.createDataFrame(ROWS, "row_num long, k string, x double, v long").createOrReplaceTempView("where_readings")
    return [dict(zip(["row_num", "k", "x", "v"], r)) for r in ROWS]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("condition", ["v > 0", "x IS NOT NULL AND NOT isnan(x)"])
@pytest.mark.slow
def test_a_tuple_where_drops_never_fails_the_query(spark, readings, window, condition):
    """The NULL and the NaN readings, dropped by a condition on another column or on ``x``
    itself: the query, its SQL text and its replay (to the end of the stream, and under
    ``slack(1)``, nothing lost) give the oracle's windows over the kept readings."""
    text = (f"SELECT k, count(*) AS n, sum(v) AS total FROM where_readings [{WINDOWS[window]}] "
            f"WHERE {condition} GROUP BY k")
    expected = _expected(window, [t for t in readings if t["v"] > 0])
    rep = wid.replay(spark, text, punctuation=None)
    for out in (wid.query(spark, text), spark.sql(wid.to_sql(spark, text)), rep.results):
        assert {(r.k, r.wid, r.n, r.total) for r in out.collect()} == expected
    slack = wid.replay(spark, text, punctuation=wid.punctuate.slack(1))
    kept = sum(t["v"] > 0 for t in readings)
    late = {r.row_num for r in slack.late.collect()}
    if window in ("tumbling", "session"):  # each tuple in one window: conservation by tuples
        assert sum(r.n for r in slack.results.collect()) + len(late) == kept
    assert late <= {t["row_num"] for t in readings if t["v"] > 0}


@pytest.mark.slow
@pytest.mark.parametrize("window", WINDOWS)
def test_a_null_attribute_where_keeps_still_fails(spark, readings, window):
    """``WHERE v >= 0`` keeps the NULL reading (row 1): the query, its SQL text and its replay fail
    naming it."""
    text = f"SELECT k, count(*) AS n FROM where_readings [{WINDOWS[window]}] WHERE v >= 0 GROUP BY k"
    message = r"NULL or NaN window attribute 'x' in the tuple with row_num=[13]\b"
    with pytest.raises(Exception, match=message):
        wid.query(spark, text).collect()
    with pytest.raises(Exception, match=message):
        spark.sql(wid.to_sql(spark, text)).collect()
    with pytest.raises(Exception, match=message):
        wid.replay(spark, text, punctuation=wid.punctuate.slack(1)).results.collect()


@pytest.mark.parametrize("window", ["RANGE UNBOUNDED SLIDE 2 WATTR x", "RANGE 2 RATTR x SLIDE 1 ROW SATTR row_num"])
def test_where_bucket_reads_every_tuple_a_dropped_null_still_fails(spark, readings, window):
    """A landmark's last window is the one holding the stream's largest ``x``, and every tuple
    defines a slide-by-tuple window, even one WHERE drops: Bucket reads every tuple, WHERE runs
    after it, and the NULL reading fails the query (docs/semantics.md section 2)."""
    with pytest.raises(Exception, match=r"NULL or NaN window attribute 'x' in the tuple with row_num=[13]\b"):
        wid.query(spark, f"SELECT k, count(*) AS n FROM where_readings [{window}] WHERE v > 0 GROUP BY k").collect()


@pytest.mark.slow
def test_sparks_null_timestamps(spark):
    """Spark's ``DataFrameSessionWindowingSuite``
    (sql/core/src/test/scala/org/apache/spark/sql/DataFrameSessionWindowingSuite.scala), "null
    timestamps": ``session_window(time, '10 seconds')`` drops the rows whose time is NULL and
    gives the values 1 and 2, in sessions of their own. wid fails on a NULL window attribute
    (naming the row), and ``WHERE time IS NOT NULL`` gives Spark's answer."""
    rows = [(0, "2016-03-27 09:00:05", 1), (1, "2016-03-27 09:00:32", 2), (2, None, 3), (3, None, 4)]
    spark.createDataFrame([(i, t and dt.datetime.fromisoformat(t), v) for i, t, v in rows],
                          "row_num long, time timestamp, value long").createOrReplaceTempView("null_times")
    text = "SELECT sum(value) AS value FROM null_times [SESSION 10 SECONDS WATTR time]"
    with pytest.raises(Exception, match=r"NULL or NaN window attribute 'time' in the tuple with row_num=[23]\b"):
        wid.query(spark, text).collect()
    kept = f"{text} WHERE time IS NOT NULL ORDER BY session_start"
    for out in (wid.query(spark, kept), spark.sql(wid.to_sql(spark, kept))):
        got = [(seconds(r.session_end) - seconds(r.session_start), r.value) for r in out.collect()]
        assert got == [(10, 1), (10, 2)]
