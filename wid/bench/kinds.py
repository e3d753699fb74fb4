"""``wid bench`` cases beyond the sliding window: SPL clauses (compiled and delta chain vs scan),
unpartitioned ROWS windows with the cores busy, slide-by-tuple bins vs Spark's RANGE frame, and
replay against the query on a disordered stream."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from wid.aggregate.fca import aggregate as fca_aggregate
from wid.aggregate.partials import Aggregate
from wid.aggregate.range import range_aggregate
from wid.bench.common import VIEW, cached, progress_lines, timed
from wid.bucket.columns import WID_HI, WID_LO
from wid.bucket.fca import units
from wid.bucket.spl.bucket import operational_bucket
from wid.datasets.disorder import disorder
from wid.compiler.query import compile_query, query
from wid.windows.spl_clause import parse_spl
from wid.stream.punctuate import heartbeat
from wid.stream.replay import replay


SPL_CLAUSE = "sliding, count(1000), count(10)"


def spl(spark: SparkSession, rows: int, repeat: int = 3) -> dict[str, float]:
    """Best seconds of the SPL clause :data:`SPL_CLAUSE` on the compiled range-tag path (count,
    max and avg speed of the last 1000 readings, every 10 readings), and of the same windows as
    Spark's ``ROWS BETWEEN 999 PRECEDING`` frame kept at every 10th row."""
    frame = Window.orderBy("row_num").rowsBetween(-999, 0)
    with cached(spark, rows) as data:
        builds = {
            "wid": lambda: query(spark, f"SELECT count(*) AS n, max(speed) AS hi, avg(speed) AS mean "
                                        f"FROM {VIEW} [{SPL_CLAUSE}]"),
            "rows frame": lambda: data.select(
                (F.row_number().over(Window.orderBy("row_num")) - 1).alias("pos"),
                F.count("*").over(frame).alias("n"), F.max("speed").over(frame).alias("hi"),
                F.avg("speed").over(frame).alias("mean"),
            ).where(F.col("pos") % 10 == 9),
        }
        times = {}
        for name, build in builds.items():
            timed(build)  # warm-up
            times[name] = min(timed(build) for _ in range(repeat))
        return times


SPL_DELTA_CLAUSES = ("sliding, delta(ts, 60), delta(ts, 10)", "tumbling, delta(ts, 60)")


def spl_delta(spark: SparkSession, rows: int, repeat: int = 3) -> dict[tuple[str, str], float]:
    """Best seconds of each clause in :data:`SPL_DELTA_CLAUSES` (count, max and avg speed; ``ts``
    never decreases) on the compiled delta chain and on the sequential scan (same tags checked first)."""
    aggregates = [Aggregate("n", "count"), Aggregate("hi", "max", "speed"), Aggregate("mean", "avg", "speed")]
    with cached(spark, rows) as data:
        times = {}
        for clause in SPL_DELTA_CLAUSES:

            def build(how: str) -> DataFrame:
                return range_aggregate(operational_bucket(data, parse_spl(clause), how), [], aggregates)

            tags = [sorted(operational_bucket(data, parse_spl(clause), how).select("row_num", WID_LO, WID_HI).collect())
                    for how in ("chain", "scan")]
            if tags[0] != tags[1]:
                raise RuntimeError(f"the delta chain and the scan tag [{clause}] differently")
            for how in ("chain", "scan"):
                times[clause, how] = min(timed(lambda: build(how)) for _ in range(repeat))
        return times


ROWS_CLAUSE = "RANGE 1000 ROWS SLIDE 10 ROWS WATTR row_num"


def jvm_cpu_seconds(spark: SparkSession) -> float | None:
    """User + system CPU seconds of the session's JVM so far (None: not a local JVM on Linux)."""
    try:
        pid = spark._jvm.ProcessHandle.current().pid()  # noqa: SLF001 - py4j gateway, classic sessions only
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (AttributeError, OSError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rows_parallel(spark: SparkSession, rows: int, repeat: int = 3) -> dict[str, tuple[float, float | None]]:
    """Median ``(seconds, cores busy)`` of count, max and avg speed over ``[ROWS_CLAUSE]``: over
    the unpartitioned stream (positions by parallel slices) and ``PATTR seg_id`` (positions
    per segment); cores busy = the JVM's CPU seconds over the wall seconds of the run."""
    progress = progress_lines()
    select = f"SELECT count(*) AS n, max(speed) AS hi, avg(speed) AS mean FROM {VIEW}"
    texts = {"unpartitioned": f"{select} [{ROWS_CLAUSE}]", "PATTR seg_id": f"{select} [{ROWS_CLAUSE} PATTR seg_id]"}
    with cached(spark, rows):
        progress(f"generated and cached {rows} rows")
        runs: dict[str, list[tuple[float, float | None]]] = {name: [] for name in texts}
        for round_ in range(repeat + 1):
            for name, text in texts.items():
                cpu = jvm_cpu_seconds(spark)
                wall = timed(lambda: query(spark, text))
                used = jvm_cpu_seconds(spark)
                cores = None if cpu is None or used is None else (used - cpu) / wall
                if round_:
                    runs[name].append((wall, cores))
                progress(f"[{ROWS_CLAUSE}] {name}: {'warm-up' if not round_ else f'run {round_}/{repeat}'} "
                         f"{wall:.2f} s" + ("" if cores is None else f", {cores:.2f} cores busy"))
        return {name: (statistics.median(w for w, _ in r),
                       None if r[0][1] is None else statistics.median(c for _, c in r)) for name, r in runs.items()}


#: Spark 4.2+: sliding ROWS/RANGE frames of min/max/sum/count/avg in O(log W) per row.
SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"


def has_conf(spark: SparkSession, key: str) -> bool:
    """Whether this Spark build knows the SQL conf ``key``."""
    try:
        spark.conf.get(key)
    except Exception:  # noqa: BLE001 - classic and Connect raise different types for an unknown key
        return False
    return True


@contextmanager
def _conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` in the session's conf for the duration, then the previous values."""
    previous = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)


def fca(spark: SparkSession, rows: int, range_seconds: int, repeat: int = 3) -> dict[str, float]:
    """Median seconds of slide-by-tuple count and max speed over the ``range_seconds`` ending at
    each reading: wid (start/end bins), wid's Spark SQL range join, and Spark's frame
    ``ORDER BY ts RANGE BETWEEN r PRECEDING AND CURRENT ROW`` on integer micros with the open
    lower bound ``w - r < u.ts`` (``r - 1`` micros), one row per distinct ts, as it is by default
    and, when this build has :data:`SEGMENT_TREE`, with it on; after checking that wid's rows
    equal each frame's. The cases alternate in each of ``repeat`` rounds, after one warm-up
    round; a progress line per run."""
    progress = progress_lines()
    frame = Window.orderBy(F.unix_micros("ts")).rangeBetween(-(range_seconds * 10**6 - 1), 0)
    with cached(spark, rows) as data:
        compiled = compile_query(spark, f"SELECT count(*) AS n, max(speed) AS hi FROM {VIEW} "
                                        f"[RANGE {range_seconds} SECONDS RATTR ts SLIDE 1 ROW SATTR row_num]")

        def wid_fca(method: str) -> Callable[[], DataFrame]:
            return lambda: compiled.finish(fca_aggregate(compiled.tagged, *units(compiled.tagged, compiled.spec), [],
                                                         compiled.aggregates, method))

        def range_frame() -> DataFrame:
            return data.select(
                F.col("ts").alias("wid"), F.count("*").over(frame).alias("n"), F.max("speed").over(frame).alias("hi"),
            ).dropDuplicates(["wid"])

        builds = {"wid": (wid_fca("bins"), {}), "wid sql": (wid_fca("sql"), {}), "range frame": (range_frame, {})}
        if has_conf(spark, SEGMENT_TREE):
            builds["range frame, segment tree"] = (range_frame, {SEGMENT_TREE: "true"})
        ours = builds["wid"][0]()
        for name, (build, settings) in builds.items():
            if name.startswith("range frame"):
                with _conf(spark, settings):
                    theirs = build()
                    if ours.exceptAll(theirs).count() or theirs.exceptAll(ours).count():
                        raise RuntimeError(f"wid and the {name} differ at range {range_seconds} s")
        progress(f"checked: wid = the range frame at range {range_seconds} s")
        times = {name: [] for name in builds}
        for round_ in range(repeat + 1):
            for name, (build, settings) in builds.items():
                with _conf(spark, settings):
                    times[name].append(timed(build))
                progress(f"{name}: {'warm-up' if round_ == 0 else f'run {round_}/{repeat}'} {times[name][-1]:.2f} s")
        return {name: statistics.median(t[1:]) for name, t in times.items()}


REPLAY_QUERY = ("SELECT seg_id, avg(speed) AS v, count(*) AS n FROM stream "
                "[RANGE 300 SECONDS SLIDE 60 SECONDS WATTR ts] GROUP BY seg_id")


def replay_vs_query(spark: SparkSession, rows: int, repeat: int = 3) -> dict[str, float]:
    """Median seconds of :data:`REPLAY_QUERY` over ``rows`` bounded-disorder readings (20% up to
    10 s late, :func:`wid.datasets.disorder.disorder`, cached as the view ``stream``): ``query``
    (:func:`wid.query`), and :func:`wid.replay` with ``heartbeat(5, 5)``: its ``results`` and its
    ``late`` rows, each evaluated in full, and ``replay`` their sum. One warm-up round, then
    ``repeat`` rounds; a progress line per run."""
    progress = progress_lines()
    data = disorder(spark, rows, "bounded", 10.0, 0.2, seed=1).cache()
    data.createOrReplaceTempView("stream")
    try:
        progress(f"generated and cached {data.count()} bounded-disorder rows")
        times: dict[str, list[float]] = {"query": [], "replay results": [], "replay late": []}
        for round_ in range(repeat + 1):
            played = replay(spark, REPLAY_QUERY, heartbeat(5.0, 5.0))
            builds = {"query": lambda: query(spark, REPLAY_QUERY), "replay results": lambda: played.results,
                      "replay late": lambda: played.late}
            for name, build in builds.items():
                times[name].append(timed(build))
                progress(f"{name}: {'warm-up' if not round_ else f'run {round_}/{repeat}'} {times[name][-1]:.2f} s")
        best = {name: statistics.median(t[1:]) for name, t in times.items()}
        return {**best, "replay": best["replay results"] + best["replay late"]}
    finally:
        data.unpersist()
