"""A TIMESTAMP_NTZ attribute is a wall clock: whatever the session time zone, its windows and
sessions are those of Spark's ``window()`` and ``session_window()`` on it, also across a
daylight-saving change (where a cast to TIMESTAMP would skip or repeat an hour), through
``wid.query`` and through its compiled SQL (``wid.to_sql``); a TIMESTAMP bound or clock for it
is its wall-clock time in the session time zone."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from pyspark.sql import functions as F

import wid

#: America/New_York's changes in 2026 (02:00 -> 03:00, 02:00 -> 01:00), and a time before the epoch.
AROUND = [dt.datetime(2026, 3, 8, 2, 0), dt.datetime(2026, 11, 1, 1, 0), dt.datetime(1969, 12, 31, 23, 0)]


@pytest.fixture
def new_york(spark):
    """The session time zone America/New_York while the test runs; view ``wall`` of readings
    (``k``, ``ts`` TIMESTAMP_NTZ with microseconds within 3 hours of each change, ``v``)."""
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    rnd = random.Random(11)
    rows = [(i, rnd.choice("ab"), rnd.choice(AROUND) + dt.timedelta(microseconds=rnd.randint(-3 * 3600 * 10**6,
                                                                                              3 * 3600 * 10**6)),
             rnd.randint(-5, 5)) for i in range(400)]
    df = spark.createDataFrame(rows, "row_num long, k string, ts timestamp_ntz, v long")
    df.createOrReplaceTempView("wall")
    try:
        yield df
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.parametrize("compiled", [False, True])
def test_sliding_windows_on_a_wall_clock_are_sparks_window(spark, new_york, compiled):
    text = ("SELECT k, count(*) AS n, min(v) AS lo, max(v) AS hi "
            "FROM wall [RANGE 30 MINUTES SLIDE 10 MINUTES WATTR ts] GROUP BY k")
    ours = spark.sql(wid.to_sql(spark, text)) if compiled else wid.query(spark, text)
    theirs = new_york.groupBy("k", F.window("ts", "30 minutes", "10 minutes").alias("w")).agg(
        F.count("*").alias("n"), F.min("v").alias("lo"), F.max("v").alias("hi"))
    assert ours.schema["window_start"].dataType.simpleString() == "timestamp_ntz"
    got = {(r.k, r.window_start, r.window_end, r.n, r.lo, r.hi) for r in ours.collect()}
    assert got == {(r.k, r.w.start, r.w.end, r.n, r.lo, r.hi) for r in theirs.collect()} and len(got) > 100


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.slow
def test_sessions_on_a_wall_clock_are_sparks_session_window(spark, new_york, compiled):
    text = "SELECT k, count(*) AS n, sum(v) AS total FROM wall [SESSION 20 MINUTES WATTR ts] GROUP BY k"
    ours = spark.sql(wid.to_sql(spark, text)) if compiled else wid.query(spark, text)
    theirs = new_york.groupBy("k", F.session_window("ts", "20 minutes").alias("s")).agg(
        F.count("*").alias("n"), F.sum("v").alias("total"))
    got = {(r.k, r.session_start, r.session_end, r.n, r.total) for r in ours.collect()}
    assert got == {(r.k, r.s.start, r.s.end, r.n, r.total) for r in theirs.collect()} and len(got) > 6


@pytest.mark.slow
def test_timestamp_bounds_and_clocks_read_on_a_wall_clock(spark, new_york):
    """Readings at 10:00, 10:01, 10:20, 10:21 (wall clock, TIMESTAMP_NTZ) arriving a second later
    (TIMESTAMP, New York time): a TIMESTAMP punctuation at 10:05 New York time closes only
    ``[10:00, 10:05)``, and heartbeats on the arrival clock close no window before its tuples:
    nothing is late."""
    spark.sql("""SELECT * FROM VALUES
        (0L, 'a', TIMESTAMP_NTZ'2026-01-05 10:00:00', TIMESTAMP'2026-01-05 10:00:01'),
        (1L, 'a', TIMESTAMP_NTZ'2026-01-05 10:01:00', TIMESTAMP'2026-01-05 10:01:01'),
        (3L, 'a', TIMESTAMP_NTZ'2026-01-05 10:20:00', TIMESTAMP'2026-01-05 10:20:01'),
        (4L, 'a', TIMESTAMP_NTZ'2026-01-05 10:21:00', TIMESTAMP'2026-01-05 10:21:01') AS t(row_num, k, ts, arrival_ts)
        """).createOrReplaceTempView("arrivals")
    text = "SELECT k, count(*) AS n FROM arrivals [RANGE 5 MINUTES SLIDE 5 MINUTES WATTR ts] GROUP BY k"
    bound = spark.sql("SELECT 2L AS row_num, TIMESTAMP'2026-01-05 10:05:00' AS ts")
    for generator in (wid.punctuate.embedded(bound), wid.punctuate.heartbeat(60, 0)):
        rep = wid.replay(spark, text, generator)
        assert rep.late.count() == 0
        assert sum(r.n for r in rep.results.collect()) == 4
