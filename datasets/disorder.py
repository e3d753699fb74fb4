"""Disordered traffic streams for replay experiments (paper, Exp. 2 and 3), with the
punctuations their source could supply.

- **bounded disorder**: a ``late_fraction`` of the readings arrive up to ``max_delay``
  seconds after their ``ts`` (uniform delay), the others with the generator's small network
  delay; arrival order = ``arrival_ts`` order. The source's punctuations are exact: after
  each tuple, the least ``ts`` still to come.
- **block-sorted disorder**: readings are cut into blocks of ``block`` seconds of ``ts``;
  a block is released at its end, in random order inside. The source punctuates
  ``ts = block end`` after the last tuple of each block.

``row_num`` is the dense arrival position 0..rows-1, computed per chunk of arrival time
(a row_number per chunk plus the sizes of the earlier chunks), so nothing ever sits in
one Spark partition.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from wid.datasets.traffic import _uniform, traffic
from wid.stream.scan import ROW_CHUNK, running

KINDS = ("bounded", "block_sorted")
_ORDER_CHUNK_SECONDS = 600.0


def _arrival_positions(df: DataFrame, chunk: Column, order: list[Column]) -> DataFrame:
    """``df`` with ``row_num`` = 0-based position in ``order``; ``chunk`` is non-decreasing in it."""
    df = df.withColumn("_chunk", chunk)
    sizes = df.groupBy("_chunk").count().select(
        "_chunk", F.coalesce(F.sum("count").over(Window.orderBy("_chunk").rowsBetween(Window.unboundedPreceding, -1)),
                             F.lit(0)).alias("_offset"))
    position = F.row_number().over(Window.partitionBy("_chunk").orderBy(*order)) - 1 + F.col("_offset")
    return df.join(F.broadcast(sizes), "_chunk").withColumn("row_num", position.cast("long")).drop("_chunk", "_offset")


def bounded_disorder(spark: SparkSession, rows: int, max_delay: float = 10.0, late_fraction: float = 0.2,
                     segments: int = 50, seed: int = 1, rate: float = 10.0) -> DataFrame:
    """Traffic readings (``row_num, seg_id, speed, ts, arrival_ts``) where a ``late_fraction``
    arrive up to ``max_delay`` seconds late: every reading arrives at most ``max_delay``
    seconds (plus the network delay) after its ``ts``.

    Ten readings, each late by up to 2 s with probability 0.3: ``ts`` out of order in ``row_num`` (arrival) order, every
    delay within ``max_delay`` plus the network delay (under ``2 / rate`` + 0.05 s):

    >>> stream = bounded_disorder(spark, 10, max_delay=2.0, late_fraction=0.3, segments=3)
    >>> [r.ts for r in stream.orderBy("row_num").select(F.date_format("ts", "ss.SSS").alias("ts")).collect()]
    ['00.001', '00.195', '00.299', '00.358', '00.704', '00.808', '00.661', '00.407', '00.511', '00.970']
    >>> delay = stream.select(F.max(F.unix_micros("arrival_ts") - F.unix_micros("ts"))).first()[0] / 1e6
    >>> delay, delay <= 2.0 + 2 / 10 + 0.05
    (1.706976, True)
    """
    if max_delay < 0 or not 0 <= late_fraction <= 1:
        raise ValueError("bounded_disorder needs max_delay >= 0 and 0 <= late_fraction <= 1")
    base = traffic(spark, rows, segments, seed, rate).withColumnRenamed("row_num", "_source_row")
    row = F.col("_source_row")
    late = _uniform(seed, row, 6) < late_fraction
    delay_us = F.when(late, F.floor(_uniform(seed, row, 7) * max_delay * 1e6)).otherwise(0)
    arrival = F.timestamp_micros(F.unix_micros("arrival_ts") + delay_us)
    df = base.withColumn("arrival_ts", arrival)
    chunk = F.floor(F.unix_micros("arrival_ts") / (_ORDER_CHUNK_SECONDS * 1e6))
    ordered = _arrival_positions(df, chunk, [F.col("arrival_ts"), row])
    return ordered.select("row_num", "seg_id", "speed", "ts", "arrival_ts")


def block_sorted(spark: SparkSession, rows: int, block: float = 30.0, segments: int = 50, seed: int = 1,
                 rate: float = 10.0) -> DataFrame:
    """Traffic readings released in blocks of ``block`` seconds of ``ts``, each block at its
    end (``arrival_ts`` = block end) in random order inside.

    Ten readings in blocks of half a second: each block arrives at its end, shuffled inside:

    >>> clock = lambda c: F.date_format(c, "ss.SSS").alias(c)
    >>> stream = block_sorted(spark, 10, block=0.5, segments=3).select("row_num", clock("ts"), clock("arrival_ts"))
    >>> sorted(tuple(r) for r in stream.collect())  # doctest: +NORMALIZE_WHITESPACE
    [(0, '00.358', '00.500'), (1, '00.001', '00.500'), (2, '00.407', '00.500'), (3, '00.195', '00.500'),
     (4, '00.299', '00.500'), (5, '00.704', '01.000'), (6, '00.661', '01.000'), (7, '00.808', '01.000'),
     (8, '00.511', '01.000'), (9, '00.970', '01.000')]
    """
    if block <= 0:
        raise ValueError("block_sorted needs block > 0")
    base = traffic(spark, rows, segments, seed, rate).withColumnRenamed("row_num", "_source_row")
    block_us = round(block * 1e6)
    number = F.floor(F.unix_micros("ts") / F.lit(block_us))
    df = base.withColumn("arrival_ts", F.timestamp_micros((number + 1) * F.lit(block_us)))
    shuffled = [F.xxhash64(F.lit(seed), F.lit(8), F.col("_source_row")), F.col("_source_row")]
    ordered = _arrival_positions(df, number, shuffled)
    return ordered.select("row_num", "seg_id", "speed", "ts", "arrival_ts")


def disorder(spark: SparkSession, rows: int, kind: str = "bounded", max_delay: float = 10.0,
             late_fraction: float = 0.2, block: float = 30.0, segments: int = 50, seed: int = 1,
             rate: float = 10.0) -> DataFrame:
    """The plan generator: :func:`bounded_disorder` or :func:`block_sorted` by ``kind``.

    >>> sorted(disorder(spark, 6, "block_sorted", block=0.5).collect()) == sorted(block_sorted(spark, 6, 0.5).collect())
    True
    >>> disorder(spark, 6, "sorted")
    Traceback (most recent call last):
    ValueError: disorder kind must be one of bounded, block_sorted, got 'sorted'
    """
    if kind == "bounded":
        return bounded_disorder(spark, rows, max_delay, late_fraction, segments, seed, rate)
    if kind == "block_sorted":
        return block_sorted(spark, rows, block, segments, seed, rate)
    raise ValueError(f"disorder kind must be one of {', '.join(KINDS)}, got {kind!r}")


def source_punctuations(stream: DataFrame, kind: str) -> DataFrame:
    """The punctuations ``(row_num, ts)`` the source of ``stream`` supplies (wildcard on keys).

    bounded: after tuple ``r - 1``, ``ts`` = the least ``ts`` of the tuples ``>= r`` (exact);
    block_sorted: after the last tuple of each block, ``ts`` = the block's end (its arrival).

    The streams of :func:`bounded_disorder`'s and :func:`block_sorted`'s examples; no tuple after a
    punctuation has a smaller ``ts`` than it:

    >>> stream = bounded_disorder(spark, 10, max_delay=2.0, late_fraction=0.3, segments=3)
    >>> marks, clock = source_punctuations(stream, "bounded"), F.date_format("ts", "ss.SSS").alias("ts")
    >>> sorted(tuple(r) for r in marks.select("row_num", clock).collect())  # doctest: +NORMALIZE_WHITESPACE
    [(-1, '00.001'), (0, '00.195'), (1, '00.299'), (2, '00.358'), (3, '00.407'), (4, '00.407'), (5, '00.407'),
     (6, '00.407'), (7, '00.511'), (8, '00.970')]
    >>> bounds = marks.toDF("after", "bound")
    >>> stream.join(bounds, F.col("row_num") > F.col("after")).where(F.col("ts") < F.col("bound")).count()
    0
    >>> blocks = source_punctuations(block_sorted(spark, 10, block=0.5, segments=3), "block_sorted")
    >>> sorted(tuple(r) for r in blocks.select("row_num", clock).collect())
    [(4, '00.500'), (9, '01.000')]
    """
    if kind == "bounded":
        low = running(stream.select("row_num", "ts"), "ts", ["row_num"], F.floor(F.col("row_num") / ROW_CHUNK),
                      "_low", agg="min", reverse=True)
        return low.select((F.col("row_num") - 1).alias("row_num"), F.col("_low").alias("ts"))
    if kind == "block_sorted":
        return stream.groupBy("arrival_ts").agg(F.max("row_num").alias("row_num")).select(
            "row_num", F.col("arrival_ts").alias("ts"))
    raise ValueError(f"disorder kind must be one of {', '.join(KINDS)}, got {kind!r}")
