"""``wid bench --live``: rows/s of wid live mode vs Spark's streaming window aggregation.

One generated traffic stream is split into parquet files (one micro-batch each, the same
files and ``Trigger.AvailableNow`` for both), after a warm-up run of both on a small stream
(the JVM's first queries, not the engines, would otherwise decide the first one measured).
wid live runs ``[RANGE r SLIDE s WATTR ts]`` (or ``[SESSION g WATTR ts]``) per segment closed by
``slack(delay)``; Spark runs ``groupBy(window(ts, r, s), seg_id)`` (or ``session_window(ts, g)``)
with ``withWatermark(ts, delay)`` into a parquet sink; both stateful steps have ``buckets``
partitions. Reported: rows/s of each (one run, wall clock from start to the end of the last
batch) and the largest state of each operator, per key and per (key, open window): Spark's
from its operator's metric, wid's panes read back from its checkpoint after each batch (the
operator's metric counts a bucket's state, all its panes, as one row), and for sessions the emitted
sessions wid keeps; with the machine's load average before the run (idle or loaded).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from wid.datasets.traffic import traffic
from wid.stream.live import run as live_run
from wid.stream.live.job import END_COLUMN, live
from wid.stream.punctuate import slack
from wid.stream.live.state_rows import frame_rows

WID_CHECKPOINT = "wid_checkpoint"


def _timed(start: Callable[[], StreamingQuery]) -> tuple[float, list[dict]]:
    """Seconds from starting a query to the end of its last batch, and its progress."""
    began = time.perf_counter()
    progress = live_run.run(start())
    return time.perf_counter() - began, progress


def _steady(progress: list[dict]) -> float:
    """Rows per second over the micro-batches after the first (whose time is mostly start-up:
    planning, Python workers), from each batch's ``triggerExecution`` time."""
    later = progress[1:]
    millis = sum(p["durationMs"].get("triggerExecution", 0) for p in later)
    return sum(p.get("numInputRows") or 0 for p in later) / (millis / 1000) if millis else 0.0


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


def _emitted_sessions(spark: SparkSession, checkpoint: Path, batch: int) -> int:
    """The sessions emitted up to micro-batch ``batch``, all kept in ``emitted`` (in the rows
    ``(keys, count)`` of the frames ``counts``: per key, how many)."""
    return sum(row[-1] for f in _frames(spark, checkpoint, batch) for row in f.get("counts", []))


def _windows(range_s: int, slide_s: int, gap: int | None) -> tuple[str, Column]:
    """wid's window clause and Spark's window column: sliding, or sessions of ``gap`` seconds."""
    if gap is not None:
        return f"[SESSION {gap} SECONDS WATTR ts]", F.session_window("ts", f"{gap} seconds")
    return (f"[RANGE {range_s} SECONDS SLIDE {slide_s} SECONDS WATTR ts]",
            F.window("ts", f"{range_s} seconds", f"{slide_s} seconds"))


def _queries(spark: SparkSession, work: Path, rows: int, segments: int, windows: tuple[str, Column], delay: int,
             files: int, buckets: int) -> dict[str, Callable[[], StreamingQuery]]:
    """wid live and Spark's window() over the same ``files`` files of ``rows`` generated rows."""
    data = traffic(spark, rows, segments=segments)
    live_run.split_into_files(data, work / "in", files)
    clause, window = windows
    text = f"SELECT seg_id, count(*) AS n, max(speed) AS top FROM traffic {clause} GROUP BY seg_id"
    job = live(spark, text, live_run.source(spark, work / "in"), slack(delay), buckets=buckets)
    stream = live_run.source(spark, work / "in").where(~F.col(END_COLUMN))
    windowed = (stream.withWatermark("ts", f"{delay} seconds").groupBy(window, "seg_id")
                .agg(F.count(F.lit(1)).alias("n"), F.max("speed").alias("top")))

    def spark_query() -> StreamingQuery:
        with live_run.state_partitions(spark, buckets):  # as many as wid's stateful step has
            return (windowed.writeStream.format("parquet").outputMode("append")
                    .option("checkpointLocation", str(work / "spark_checkpoint")).trigger(availableNow=True)
                    .start(str(work / "spark_out")))

    spark_name = "spark session_window" if "SESSION" in clause else "spark window"
    return {"wid live (slack)": lambda: live_run.start(job, work / "wid_out", work / WID_CHECKPOINT),
            f"{spark_name} + watermark": spark_query}


def live_bench(spark: SparkSession, rows: int, segments: int = 50, range_s: int = 60, slide_s: int = 20,
               delay: int = 5, files: int = 8, buckets: int = 2, gap: int | None = None) -> list[str]:
    """Report lines of one run of each engine over the same files (after a warm-up of both);
    ``gap``: session windows of that gap (seconds) instead of sliding ones."""
    shape = (segments, _windows(range_s, slide_s, gap), delay)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="wid-bench-live-") as work:
        for start in _queries(spark, Path(work) / "warm", min(rows, 20000), *shape, 2, buckets).values():
            _timed(start)
        timings = {name: _timed(start)
                   for name, start in _queries(spark, Path(work) / "run", rows, *shape, files, buckets).items()}
        (wid_seconds, wid_progress), (spark_seconds, spark_progress) = timings.values()
        checkpoint = Path(work) / "run" / WID_CHECKPOINT
        sizes = [("panes", _pane_rows(spark, checkpoint, wid_progress)), ("state rows", _state_rows(spark_progress))]
        emitted = _emitted_sessions(spark, checkpoint, wid_progress[-1]["batchId"]) if gap is not None else None
    open_windows = 1 if gap is not None else -(-range_s // slide_s)  # sessions: one open per key, or none
    what = f"[SESSION {gap}]" if gap is not None else f"[RANGE {range_s} SLIDE {slide_s}]"
    lines = [f"{rows} rows, {segments} keys, {what} (~{open_windows} open windows "
             f"per key), {files} files + end marker, Trigger.AvailableNow, {buckets} state partitions each, one run "
             f"after a warm-up, load average {load:.2f} before the warm-up"]
    for (name, (seconds, progress)), (what, n) in zip(timings.items(), sizes):  # wid, then Spark
        lines.append(f"{name}: {seconds:.1f} s, {rows / seconds:,.0f} rows/s "
                     f"({_steady(progress):,.0f} rows/s after the first batch); state: {n} {what} max "
                     f"({n / segments:.1f} per key, {n / segments / open_windows:.2f} per key and window)")
    if emitted is not None:  # what a late tuple may touch: (id, start, last) of each, a state row per key and batch
        lines.append(f"wid emitted sessions kept at the end: {emitted} ({emitted / segments:.1f} per key)")
    lines.append(f"wid live / spark: {spark_seconds / wid_seconds:.2f}x throughput "
                 f"({_steady(wid_progress) / (_steady(spark_progress) or 1):.2f}x after the first batch)")
    return lines
