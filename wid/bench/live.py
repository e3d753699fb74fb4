"""``wid bench --live``: rows/s of wid live mode vs Spark's streaming window aggregation.

One generated traffic stream is split into parquet files (one micro-batch each, the same
files and ``Trigger.AvailableNow`` for both), after a warm-up run of each engine over a stream
of ``warm_files`` micro-batches (up to 200,000 rows): a long-running query's steady state, in
which the JIT has compiled the code each micro-batch runs once (planning, scheduling, the
stateful step's per-batch work), not its first minute.
wid live runs ``[RANGE r SLIDE s WATTR ts]`` (or ``[SESSION g WATTR ts]``) per segment closed by
``slack(delay)``; Spark runs ``groupBy(window(ts, r, s), seg_id)`` (or ``session_window(ts, g)``)
with ``withWatermark(ts, delay)`` into a parquet sink; both stateful steps have ``buckets``
partitions and the session's state store (RocksDB, which wid's ``transformWithState`` needs).
Reported: rows/s of each (one run, wall clock from start to the end of the last batch) and the
largest state of each operator, per key and per (key, open window): Spark's
from its operator's metric, wid's panes read back from its checkpoint after each batch (the
operator's metric counts a bucket's state, all its panes, as one row); an emitted session is
forgotten at once; with the machine's load average before the run (idle or loaded). Where
the JVM step runs, so does the floor (:func:`wid.jvm.counted`): the same files, each row
shuffled to its bucket's stateful step on the JVM and only counted there, the speed no step
that sees every row can pass.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from wid.datasets.traffic import traffic
from wid.jvm import counted, python_step, unavailable
from wid.stream.live import run as live_run
from wid.stream.live.job import END_COLUMN, live
from wid.stream.punctuate import slack
from wid.stream.live.state_rows import frame_rows

WID_CHECKPOINT = "wid_checkpoint"
JVM, PYTHON = "wid live, JVM step (slack)", "wid live, Python step (slack)"
#: Every row to its bucket's stateful step on the JVM, counted there (:func:`wid.jvm.counted`).
FLOOR = "floor: each row read and counted by a JVM stateful step"


def _timed(start: Callable[[], StreamingQuery]) -> tuple[float, list[dict]]:
    """Seconds from starting a query to the end of its last batch, and its progress."""
    began = time.perf_counter()
    progress = live_run.run(start())
    return time.perf_counter() - began, progress


def _steady(progress: list[dict], rows: int, files: int) -> float:
    """Rows per second over the micro-batches after the first (whose time is mostly start-up:
    planning, Python workers), from each batch's ``triggerExecution`` time; the rows are the
    stream's after its first file (a query that reads its source more than once, as wid's does
    for the end marker, may count a row as often in ``numInputRows``)."""
    millis = sum(p["durationMs"].get("triggerExecution", 0) for p in progress[1:])
    return (rows - -(-rows // files)) / (millis / 1000) if millis else 0.0


def _state_rows(progress: list[dict]) -> int:
    """The largest ``numRowsTotal`` of a stateful operator over the batches."""
    return max((int(s.get("numRowsTotal", 0)) for batch in progress for s in batch.get("stateOperators", [])),
               default=0)


def _frames(spark: SparkSession, checkpoint: Path, batch: int) -> list[dict[str, list[tuple]]]:
    """The state frames of each bucket of wid's stateful step after micro-batch ``batch``
    (frame name -> state rows: :func:`wid.stream.live.state_rows.frame_rows`), read from its checkpoint
    with Spark's state data source."""
    cells = (spark.read.format("statestore").option("path", str(checkpoint)).option("stateVarName", "bucket")
             .option("batchId", batch).load().select("value.frames").collect())
    return [frame_rows(cell) for cell, in cells]


def _pane_rows(spark: SparkSession, checkpoint: Path, progress: list[dict]) -> int:
    """The most panes (rows of the frames ``panes``) of wid's stateful step after a micro-batch."""
    return max((sum(len(f.get("panes", [])) for f in _frames(spark, checkpoint, p["batchId"])) for p in progress),
               default=0)


def _windows(range_s: int, slide_s: int, gap: int | None) -> tuple[str, Column]:
    """wid's window clause and Spark's window column: sliding, or sessions of ``gap`` seconds."""
    if gap is not None:
        return f"[SESSION {gap} SECONDS WATTR ts]", F.session_window("ts", f"{gap} seconds")
    return (f"[RANGE {range_s} SECONDS SLIDE {slide_s} SECONDS WATTR ts]",
            F.window("ts", f"{range_s} seconds", f"{slide_s} seconds"))


def _queries(spark: SparkSession, work: Path, rows: int, segments: int, windows: tuple[str, Column], delay: int,
             files: int, buckets: int) -> dict[str, Callable[[], StreamingQuery]]:
    """wid live (the JVM step where the session has it, and the Python step) and Spark's window()
    over the same ``files`` files of ``rows`` generated rows."""
    data = traffic(spark, rows, segments=segments)
    live_run.split_into_files(data, work / "in", files)
    clause, window = windows
    text = f"SELECT seg_id, count(*) AS n, max(speed) AS top FROM traffic {clause} GROUP BY seg_id"
    jobs = {}
    if "SESSION" not in clause and unavailable(spark) is None:
        jobs[JVM] = live(spark, text, live_run.source(spark, work / "in"), slack(delay), buckets=buckets)
    with python_step():
        jobs[PYTHON] = live(spark, text, live_run.source(spark, work / "in"), slack(delay), buckets=buckets)
    stream = live_run.source(spark, work / "in").where(~F.col(END_COLUMN))
    windowed = (stream.withWatermark("ts", f"{delay} seconds").groupBy(window, "seg_id")
                .agg(F.count(F.lit(1)).alias("n"), F.max("speed").alias("top")))
    spark_name = "spark session_window" if "SESSION" in clause else "spark window"
    queries = {name: partial(live_run.start, job, work / f"{name}_out", work / _checkpoint(name))
               for name, job in jobs.items()}
    queries[f"{spark_name} + watermark"] = partial(_appended, windowed, work / "spark", buckets)
    if JVM in jobs:
        bucketed = stream.withColumn("bucket", F.pmod(F.hash("seg_id"), F.lit(buckets)))
        queries[FLOOR] = partial(_appended, counted(bucketed, "bucket"), work / "floor", buckets)
    return queries


def _appended(frame: DataFrame, work: Path, buckets: int) -> StreamingQuery:
    """``frame`` appended to parquet files under ``work`` (its state: ``buckets`` partitions, as
    many as wid's stateful step has), over the files there are now."""
    with live_run.state_partitions(frame.sparkSession, buckets):
        return (frame.writeStream.format("parquet").outputMode("append")
                .option("checkpointLocation", str(work / "checkpoint")).trigger(availableNow=True)
                .start(str(work / "out")))


def _checkpoint(name: str) -> str:
    return WID_CHECKPOINT + ("_jvm" if name == JVM else "")


def live_bench(spark: SparkSession, rows: int, segments: int = 50, range_s: int = 60, slide_s: int = 20,
               delay: int = 5, files: int = 8, buckets: int = 2, gap: int | None = None,
               warm_files: int = 20) -> list[str]:
    """Report lines of one run of each engine over the same files (after a warm-up of each over
    ``warm_files`` micro-batches); ``gap``: session windows of that gap (seconds) instead of sliding ones."""
    shape = (segments, _windows(range_s, slide_s, gap), delay)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="wid-bench-live-") as work:
        for start in _queries(spark, Path(work) / "warm", min(rows, 200_000), *shape, warm_files, buckets).values():
            _timed(start)
        timings = {name: _timed(start)
                   for name, start in _queries(spark, Path(work) / "run", rows, *shape, files, buckets).items()}
        checkpoint = Path(work) / "run" / WID_CHECKPOINT
        panes = _pane_rows(spark, checkpoint, timings[PYTHON][1])
        spark_name = next(name for name in timings if name.startswith("spark"))
        spark_seconds, spark_progress = timings[spark_name]
        sizes = {PYTHON: (panes, "panes"), spark_name: (_state_rows(spark_progress), "state rows")}
    open_windows = 1 if gap is not None else -(-range_s // slide_s)  # sessions: one open per key, or none
    what = f"[SESSION {gap}]" if gap is not None else f"[RANGE {range_s} SLIDE {slide_s}]"
    lines = [f"{rows} rows, {segments} keys, {what} (~{open_windows} open windows "
             f"per key), {files} files + end marker, Trigger.AvailableNow, {buckets} RocksDB state partitions each, "
             f"one run after a warm-up over {warm_files} micro-batches, load average {load:.2f} before the warm-up"]
    for name, (seconds, progress) in timings.items():  # wid's steps, Spark, the floor
        n, what = sizes.get(name, (panes, "panes (the Python step's: the same step)"))
        state = (f"; state: {n} {what} max ({n / segments:.1f} per key, "
                 f"{n / segments / open_windows:.2f} per key and window)" if name != FLOOR else "")
        lines.append(f"{name}: {seconds:.1f} s, {rows / seconds:,.0f} rows/s "
                     f"({_steady(progress, rows, files):,.0f} rows/s after the first batch){state}")
    spark_steady = _steady(spark_progress, rows, files) or 1
    for name in [n for n in (JVM, PYTHON, FLOOR) if n in timings]:
        seconds, progress = timings[name]
        lines.append(f"{name.split(' (')[0].split(':')[0]} / spark: {spark_seconds / seconds:.2f}x throughput "
                     f"({_steady(progress, rows, files) / spark_steady:.2f}x after the first batch)")
    return lines
