"""Deterministic synthetic traffic-speed stream, generated with Spark column expressions.

Every value is a hash of ``(seed, row_num)`` (or of the segment), so a seed always gives
the same rows, whatever the partitioning, and the generator scales to any row count
without touching driver memory.

Regenerate the bundled sample::

    python -m wid.datasets.traffic --rows 2000 --seed 1 --single-file \
        --out datasets/traffic_sample.parquet
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

_UNIT = 1 << 53  # uniform doubles in [0, 1) from the low 53 bits of a 64-bit hash
_LATENCY = 0.05  # seconds of fixed network latency before a reading arrives


def _uniform(seed: int, key: Column, stream: int) -> Column:
    """Pseudo-random double in [0, 1) from ``(seed, key)``; ``stream`` picks an independent draw."""
    return F.pmod(F.xxhash64(F.lit(seed), F.lit(stream), key), F.lit(_UNIT)) / F.lit(float(_UNIT))


def _epoch_micros(start: str) -> int:
    """Microseconds since the epoch of ``start``; a naive time is taken as UTC."""
    moment = datetime.fromisoformat(start)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return round(moment.timestamp() * 1_000_000)


def traffic(
    spark: SparkSession,
    rows: int,
    segments: int = 50,
    seed: int = 1,
    rate: float = 10.0,
    start: str = "2026-01-01 00:00:00",
    *,
    partitions: int | None = None,
) -> DataFrame:
    """Return ``rows`` speed readings arriving at ``rate`` readings per second.

    Columns: ``row_num`` (long, 0..rows-1, arrival order), ``seg_id`` (string, ``s00``..),
    ``speed`` (double, mph in [25, 75], one decimal: a per-segment base plus noise),
    ``ts`` (timestamp, ``start + (row_num + jitter) / rate`` with jitter in [0, 1), so
    non-decreasing) and ``arrival_ts`` (timestamp, ``ts`` plus a small positive delay,
    also non-decreasing). ``partitions`` only sets the parallelism, never the values.

    Four readings of three segments, both clocks non-decreasing in ``row_num`` (session time zone UTC):

    >>> clock = lambda c: F.date_format(c, "HH:mm:ss.SSS").alias(c)
    >>> rows = traffic(spark, 4, segments=3).select("row_num", "seg_id", "speed", clock("ts"), clock("arrival_ts"))
    >>> sorted(tuple(r) for r in rows.collect())  # doctest: +NORMALIZE_WHITESPACE
    [(0, 's02', 45.1, '00:00:00.001', '00:00:00.200'), (1, 's01', 61.2, '00:00:00.195', '00:00:00.292'),
     (2, 's01', 57.6, '00:00:00.299', '00:00:00.375'), (3, 's00', 62.2, '00:00:00.358', '00:00:00.472')]
    >>> sorted(traffic(spark, 4, segments=3, partitions=3).collect()) == sorted(traffic(spark, 4, segments=3).collect())
    True
    """
    if rows < 0 or segments < 1 or rate <= 0:
        raise ValueError("traffic() needs rows >= 0, segments >= 1 and rate > 0")
    row = F.col("id")
    seg = F.floor(_uniform(seed, row, 0) * segments)
    base = 35.0 + 30.0 * _uniform(seed, seg, 1)  # per segment, in [35, 65)
    noise = 10.0 * (_uniform(seed, row, 2) + _uniform(seed, row, 3) - 1.0)  # in (-10, 10)
    start_us = _epoch_micros(start)
    # Reading i is taken in [i, i + 1) / rate and arrives in [i + 1, i + 2) / rate plus
    # the latency, so both clocks are non-decreasing in row_num and arrival follows ts.
    ts_us = F.floor((row + _uniform(seed, row, 4)) * (1e6 / rate))
    arrival_us = F.floor((row + 1.0 + _uniform(seed, row, 5)) * (1e6 / rate) + _LATENCY * 1e6)
    width = max(2, len(str(segments - 1)))
    return spark.range(0, rows, 1, partitions).select(
        row.alias("row_num"),
        F.format_string(f"s%0{width}d", seg.cast("int")).alias("seg_id"),
        F.round(base + noise, 1).alias("speed"),
        F.timestamp_micros(ts_us + start_us).alias("ts"),
        F.timestamp_micros(arrival_us + start_us).alias("arrival_ts"),
    )


def main(argv: list[str] | None = None) -> None:
    """Command line: write a generated stream as parquet."""
    parser = argparse.ArgumentParser(prog="python -m wid.datasets.traffic", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--segments", type=int, default=50)
    parser.add_argument("--rate", type=float, default=10.0, help="readings per second")
    parser.add_argument("--out", required=True, help="output path (a directory unless --single-file)")
    parser.add_argument(
        "--single-file", action="store_true", help="write one parquet file via Arrow (small outputs only)"
    )
    args = parser.parse_args(argv)

    from wid.session import local_session

    spark = local_session()
    try:
        df = traffic(spark, args.rows, args.segments, args.seed, args.rate)
        if args.single_file:
            import pyarrow.parquet as pq

            pq.write_table(df.orderBy("row_num").toArrow(), args.out)
        else:
            df.write.mode("overwrite").parquet(args.out)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
