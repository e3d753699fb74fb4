"""Running live mode: a stream split into parquet files, a checkpointed file sink, progress lines.

- :func:`split_into_files`: a table in ``row_num`` order as ``parts`` parquet files (modification
  times increasing, the order a file source reads them in), each with ``wid_end`` false, and a
  last file holding the end-of-stream marker (:func:`end_marker`);
- :func:`start`: ``Live.frame`` into a parquet sink with a checkpoint (one micro-batch per
  file, ``Trigger.AvailableNow`` by default, else a trigger every second);
- :func:`run`: wait for a query, logging a line per micro-batch;
- :func:`stop`: stop a running query; ``flush=True`` first appends the end marker to its source
  directory and waits for it, so the end of the stream closes every open window (as replay's);
- :func:`read_output`: the sink's committed rows as ``(results, late)``.

The file sink records each micro-batch in its log, and the checkpoint holds the source offsets
and the state: a query stopped or killed in the middle of a batch re-runs that batch on restart,
and readers of the sink see every row exactly once.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from wid.errors import WidError
from wid.windows.numbers import positive_whole
from wid.windows.sqlexpr import columns
from wid.stream.live.job import END_COLUMN, Live
from wid.stream.live.output import results_of

log = logging.getLogger("wid.live")
PARTITIONS = "spark.sql.shuffle.partitions"


def split_into_files(table: DataFrame, directory: str | Path, parts: int, end: bool = True) -> Path:
    """Write ``table`` (with ``row_num``) into ``directory`` as ``parts`` files of consecutive
    ``row_num`` ranges, plus the end marker (:func:`end_marker`) when ``end``.

    The view ``readings`` of :func:`wid.query`'s example in two files, oldest first, then the marker:

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> files = split_into_files(spark.table("readings"), Path(tmp.name, "in"), 2)
    >>> by_age = sorted(files.iterdir(), key=lambda p: p.stat().st_mtime)
    >>> [(p.name, pq.read_table(p).column("row_num").to_pylist()) for p in by_age]
    [('part-00000.parquet', [0, 1]), ('part-00001.parquet', [2, 3]), ('part-end.parquet', [None])]
    >>> split_into_files(spark.table("readings"), files, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: .../in is not empty
    >>> split_into_files(spark.table("readings"), Path(tmp.name, "none"), 0)
    Traceback (most recent call last):
    wid.errors.WidError: parts must be a positive whole number, got 0
    >>> tmp.cleanup()
    """
    positive_whole("parts", parts)
    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()):
        raise WidError(f"{directory} is not empty")
    directory.mkdir(parents=True, exist_ok=True)
    frame = table.orderBy("row_num").toArrow()
    frame = frame.cast(pa.schema([f.with_nullable(True) for f in frame.schema]))  # the marker's NULLs
    frame = frame.append_column(END_COLUMN, pa.array([False] * frame.num_rows, pa.bool_()))
    size = -(-frame.num_rows // parts)
    pieces = [frame.slice(i * size, size) for i in range(parts)]
    base = time.time() - len(pieces) - 10
    for i, piece in enumerate(pieces):
        path = directory / f"part-{i:05d}.parquet"
        pq.write_table(piece, path)
        os.utime(path, (base + i, base + i))
    if end:
        end_marker(directory, frame.schema, base + parts)
    return directory


def end_marker(directory: str | Path, schema: pa.Schema, mtime: float | None = None) -> Path:
    """The end-of-stream marker file in ``directory``: one row of ``schema`` with ``wid_end``
    true and every other column NULL (``row_num`` NULL: after every element), modified at
    ``mtime`` (default now: read after every file already there).

    >>> import tempfile
    >>> schema = pa.schema([("row_num", pa.int64()), ("k", pa.string()), (END_COLUMN, pa.bool_())])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     marker = end_marker(d, schema, mtime=1000)
    ...     print(marker.name, marker.stat().st_mtime, pq.read_table(marker).to_pylist())
    part-end.parquet 1000.0 [{'row_num': None, 'k': None, 'wid_end': True}]
    """
    schema = pa.schema([f.with_nullable(True) for f in schema])
    marker = {f.name: pa.nulls(1, f.type) for f in schema}
    marker[END_COLUMN] = pa.array([True])
    path = Path(directory) / "part-end.parquet"
    pq.write_table(pa.table(marker, schema=schema), path)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def source(spark: SparkSession, directory: str | Path, files_per_batch: int = 1) -> DataFrame:
    """A streaming DataFrame over the parquet files of ``directory``, oldest first (``files_per_batch``
    files per micro-batch), of the schema of the files already there.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     stream = source(spark, split_into_files(spark.table("readings"), Path(d, "in"), 2))
    ...     print(stream.isStreaming, stream.columns)
    True ['row_num', 'ts', 'arrival_ts', 'k', 'v', 'wid_end']
    """
    schema = spark.read.parquet(str(directory)).schema
    return (spark.readStream.schema(schema).option("maxFilesPerTrigger", files_per_batch)
            .parquet(str(directory)))


def start(live: Live, sink: str | Path, checkpoint: str | Path, available_now: bool = True) -> StreamingQuery:
    """``live.frame`` appended to the parquet files of ``sink``, checkpointed in ``checkpoint``;
    its stateful step has ``live.buckets`` partitions (Spark fixes a query's state partitions
    at its first start from ``spark.sql.shuffle.partitions``, set for the start only: each
    partition costs a task, a Python worker call and a state store commit per micro-batch).

    A query over ``readings`` (one file and the end marker) with 3 buckets: 3 state partitions, the
    session's setting kept:

    >>> import tempfile
    >>> text = "SELECT k, sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k"
    >>> before = spark.conf.get(PARTITIONS)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     files = split_into_files(spark.table("readings"), Path(d, "in"), 1)
    ...     job = wid.live(spark, text, source(spark, files), wid.punctuate.slack(0), buckets=3)
    ...     query = start(job, Path(d, "out"), Path(d, "checkpoint"))
    ...     progress = run(query)
    >>> progress[-1]["stateOperators"][0]["numShufflePartitions"], spark.conf.get(PARTITIONS) == before
    (3, True)
    """
    writer = live.frame.writeStream.format("parquet").option("checkpointLocation", str(checkpoint))
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="1 second")
    with state_partitions(live.frame.sparkSession, live.buckets):
        return writer.outputMode("append").start(str(sink))


@contextmanager
def state_partitions(spark: SparkSession, partitions: int) -> Iterator[None]:
    """``spark.sql.shuffle.partitions`` set to ``partitions`` while the block runs: a streaming
    query started in it keeps that many state partitions (a stateful step's partitions are fixed
    at the query's first start); the previous value is restored after it.

    >>> before = spark.conf.get(PARTITIONS)
    >>> with state_partitions(spark, 3):
    ...     print(spark.conf.get(PARTITIONS))
    3
    >>> spark.conf.get(PARTITIONS) == before
    True
    """
    previous = spark.conf.get(PARTITIONS)
    spark.conf.set(PARTITIONS, str(partitions))
    try:
        yield
    finally:
        spark.conf.set(PARTITIONS, previous)


def progress_line(progress: dict) -> str:
    """One line for a micro-batch's progress: rows in, rows/s, state rows of each operator.

    >>> progress_line({"batchId": 4, "numInputRows": 250, "processedRowsPerSecond": 812.6,
    ...                "stateOperators": [{"numRowsTotal": 2}, {"numRowsTotal": 7}]})
    'batch 4: 250 rows in, 813 rows/s; 2 state rows, 7 state rows'
    >>> progress_line({"batchId": 0, "numInputRows": 0})
    'batch 0: 0 rows in, 0 rows/s'
    """
    states = [f"{s.get('numRowsTotal', 0)} state rows" for s in progress.get("stateOperators", [])]
    line = (f"batch {progress.get('batchId')}: {progress.get('numInputRows') or 0} rows in, "
            f"{progress.get('processedRowsPerSecond') or 0.0:.0f} rows/s")
    return line + "; " + ", ".join(states) if states else line


def run(query: StreamingQuery, stop_after: int | None = None) -> list[dict]:
    """Wait for ``query`` to end, logging each micro-batch; ``stop_after``: stop it once that
    many batches are done (a stop in the middle of the next one). The progress of every batch.

    ``readings`` in two files and the end marker: one micro-batch per file:

    >>> import tempfile
    >>> text = "SELECT k, sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     files = split_into_files(spark.table("readings"), Path(d, "in"), 2)
    ...     job = wid.live(spark, text, source(spark, files), wid.punctuate.slack(0))
    ...     progress = run(start(job, Path(d, "out"), Path(d, "checkpoint")))
    >>> [p["batchId"] for p in progress]
    [0, 1, 2]
    """
    seen: list[dict] = []
    while True:
        try:
            done = query.awaitTermination(0.5)
        except StreamingQueryException as error:
            raise _failure(error) from None
        for progress in query.recentProgress:
            if progress["batchId"] > (seen[-1]["batchId"] if seen else -1):
                seen.append(progress)
                log.info(progress_line(progress))
        if done or not query.isActive:
            break
        if stop_after is not None and len(seen) >= stop_after:
            query.stop()
            break
    if query.exception() is not None:
        raise _failure(query.exception())
    return seen


def stop(query: StreamingQuery, directory: str | Path, flush: bool = False) -> None:
    """Stop ``query`` (started by :func:`start` over :func:`source` of ``directory``). ``flush``:
    first the end marker into ``directory`` and every file processed: the end of the stream
    closes every open window (``emit_row`` NULL), as at the end of replay. Without it, open
    windows stay in the checkpoint's state for a restart.

    ``readings`` in two files without the end marker, under ``slack(0)``: the flush emits window 4
    (``ts = 9.0``), which no punctuation closes:

    >>> import tempfile
    >>> text = "SELECT k, sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     files = split_into_files(spark.table("readings"), Path(d, "in"), 2, end=False)
    ...     job = wid.live(spark, text, source(spark, files), wid.punctuate.slack(0))
    ...     query = start(job, Path(d, "out"), Path(d, "checkpoint"), available_now=False)
    ...     stop(query, files, flush=True)
    ...     results, _ = read_output(spark, job, Path(d, "out"))
    ...     print(query.isActive, sorted(tuple(r) for r in results.select("wid", "emit_row").collect()))
    False [(0, 1), (2, 3), (4, None)]
    """
    if flush:
        if not query.isActive:
            raise WidError("flush needs a running query (an AvailableNow query ends on its own)")
        files = sorted(Path(directory).glob("*.parquet"))
        schema = pq.read_schema(files[0]) if files else None
        if schema is None or END_COLUMN not in schema.names:
            raise WidError(f"flush writes an end marker: {directory} needs parquet files with a {END_COLUMN} column")
        end_marker(directory, schema)
        try:
            query.processAllAvailable()
        except StreamingQueryException as error:
            raise _failure(error) from None
    query.stop()


def _failure(error: Exception) -> WidError:
    """wid's own message when one of its checks (a :class:`WidError` in a processor, or a Column's
    ``raise_error``) failed the query.

    >>> _failure(Exception("[PYTHON_EXCEPTION] ...\\nwid.errors.WidError: the checkpoint's state has another layout"))
    WidError("the checkpoint's state has another layout")
    """
    text = str(error).split("=== Streaming Query ===")[0]  # not the plan dump after it
    found = re.findall(r"(?:wid|WidError): ([^\n]*?)(?: SQLSTATE: \w+)?$", text, re.MULTILINE)  # the last: raised
    return WidError(found[-1] if found else f"live query failed: {text.splitlines()[0]}")


def read_output(spark: SparkSession, live: Live, sink: str | Path) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` from the sink's committed files, in ``live``'s columns.

    >>> import tempfile
    >>> text = "SELECT k, sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     files = split_into_files(spark.table("readings"), Path(d, "in"), 1)
    ...     job = wid.live(spark, text, source(spark, files), wid.punctuate.slack(0))
    ...     _ = run(start(job, Path(d, "out"), Path(d, "checkpoint")))
    ...     results, late = read_output(spark, job, Path(d, "out"))
    ...     print(results.count(), late.count(), results.columns == job.results.columns)
    3 1 True
    """
    rows = spark.read.schema(live.frame.schema).parquet(str(sink))
    return results_of(live.compiled, rows), rows.where(rows.kind == "late").select(*columns(live.late.columns))
