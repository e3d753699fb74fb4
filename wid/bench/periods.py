"""``wid bench --periods``: cumulating and calendar windows against the Spark SQL a user would
write for them, on readings spread over about a year.

- Cumulating: a day's running aggregates every hour, ``[CUMULATE STEP 1 HOUR SIZE 1 DAY WATTR
  ts]``, against each reading exploded into the hours of its day from its own on (``sequence``),
  grouped by segment, day and hour: Flink's CUMULATE as a Spark user spells it.
- Calendar: the last 7 local days at every local midnight of Berlin, ``[RANGE 7 DAYS SLIDE 1 DAY
  WATTR ts TIMEZONE 'Europe/Berlin']``, against each reading's local date
  (``from_utc_timestamp``) exploded into the 7 windows that hold it, grouped by segment and day.

Both formulations are checked equal to wid (count, min and max per window and segment) first.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.bench.common import VIEW, progress_lines, timed
from wid.compiler.query import query
from wid.datasets.traffic import traffic

#: Readings per second: 2,000,000 readings span about 463 days.
RATE = 0.05
AGGREGATES = "count(*) AS n, min(speed) AS lo, max(speed) AS hi, avg(speed) AS mean"
CUMULATE = f"SELECT seg_id, {AGGREGATES} FROM {VIEW} [CUMULATE STEP 1 HOUR SIZE 1 DAY WATTR ts] GROUP BY seg_id"
CALENDAR = (f"SELECT seg_id, {AGGREGATES} FROM {VIEW} [RANGE 7 DAYS SLIDE 1 DAY WATTR ts TIMEZONE 'Europe/Berlin'] "
            "GROUP BY seg_id")


def _aggregated(exploded: DataFrame, *keys: str) -> DataFrame:
    return exploded.groupBy("seg_id", *keys).agg(F.count("*").alias("n"), F.min("speed").alias("lo"),
                                                 F.max("speed").alias("hi"), F.avg("speed").alias("mean"))


def spark_cumulate(data: DataFrame) -> DataFrame:
    """Each reading in the hours ``its hour .. 23`` of its (UTC) day: ``window_end`` = day + hour + 1.

    >>> reading = spark.createDataFrame([("s1", 50.0, "2026-01-01 21:30:00")], "seg_id string, speed double, t string")
    >>> sorted(str(r.window_end) for r in spark_cumulate(reading.selectExpr("*", "CAST(t AS TIMESTAMP) AS ts")).collect())
    ['2026-01-01 22:00:00', '2026-01-01 23:00:00', '2026-01-02 00:00:00']
    """
    day = F.date_trunc("day", "ts")
    hour = F.hour("ts")
    exploded = data.select("seg_id", "speed", day.alias("day"),
                           F.explode(F.sequence(hour, F.lit(23))).alias("hour"))
    return _aggregated(exploded, "day", "hour").select(
        "seg_id", F.col("day").alias("window_start"),
        (F.col("day") + F.make_interval(hours=F.col("hour") + 1)).alias("window_end"), "n", "lo", "hi", "mean")


def spark_calendar(data: DataFrame) -> DataFrame:
    """Each reading in the 7 windows ending at the local midnights after its Berlin date.

    >>> reading = spark.createDataFrame([("s1", 50.0, "2026-03-22 23:30:00")], "seg_id string, speed double, t string")
    >>> ends = spark_calendar(reading.selectExpr("*", "CAST(t AS TIMESTAMP) AS ts")).orderBy("window_end")
    >>> [str(r.window_end) for r in ends.collect()][::3]  # Berlin's March 23 to 29, clocks forward on the 29th
    ['2026-03-23 23:00:00', '2026-03-26 23:00:00', '2026-03-29 22:00:00']
    """
    local = F.to_date(F.from_utc_timestamp("ts", "Europe/Berlin"))
    exploded = data.select("seg_id", "speed", F.explode(F.sequence(local, F.date_add(local, 6))).alias("last"))
    end = F.to_utc_timestamp(F.date_add("last", 1).cast("timestamp"), "Europe/Berlin")
    return _aggregated(exploded, "last").select("seg_id", end.alias("window_end"), "n", "lo", "hi", "mean")


def _check(ours: DataFrame, theirs: DataFrame, what: str) -> None:
    keys = ["seg_id", "window_end", "n", "lo", "hi"]
    a, b = ours.select(*keys), theirs.select(*keys)
    differ = a.exceptAll(b).count() + b.exceptAll(a).count()
    if differ:
        raise RuntimeError(f"wid and the Spark formulation of the {what} window differ on {differ} rows")


def periods(spark: SparkSession, rows: int, segments: int = 50, repeat: int = 3) -> dict[str, float]:
    """Median seconds of wid and of the Spark formulation of each window, after a check and a warm-up.

    >>> times = periods(spark, 2000, segments=3, repeat=1)
    >>> sorted(times)
    ['calendar: Spark', 'calendar: wid', 'cumulate: Spark', 'cumulate: wid']
    """
    progress = progress_lines()
    data = traffic(spark, rows, segments, rate=RATE).cache()
    progress(f"generated and cached {data.count()} readings over {rows / RATE / 86400:.0f} days")
    data.createOrReplaceTempView(VIEW)
    try:
        builds = {"cumulate: wid": lambda: query(spark, CUMULATE), "cumulate: Spark": lambda: spark_cumulate(data),
                  "calendar: wid": lambda: query(spark, CALENDAR), "calendar: Spark": lambda: spark_calendar(data)}
        _check(builds["cumulate: wid"](), builds["cumulate: Spark"](), "cumulating")
        _check(builds["calendar: wid"](), builds["calendar: Spark"](), "calendar")
        progress("checked: wid = the Spark formulations (count, min, max per window and segment)")
        times = {}
        for name, build in builds.items():
            timed(build)  # warm-up
            runs = sorted(timed(build) for _ in range(repeat))
            times[name] = runs[len(runs) // 2]
            progress(f"{name}: {times[name]:.2f} s")
        return times
    finally:
        data.unpersist()
        spark.catalog.dropTempView(VIEW)
