import re
from importlib.resources import files

import pyspark.sql.functions as F
import pytest

from wid.datasets.traffic import traffic

ROWS = 5_000


def _rows(df):
    return df.orderBy("row_num").collect()


def test_same_seed_same_rows_whatever_the_partitioning(spark):
    one = _rows(traffic(spark, ROWS, seed=7, partitions=1))
    many = _rows(traffic(spark, ROWS, seed=7, partitions=7))
    assert one == many
    assert one != _rows(traffic(spark, ROWS, seed=8, partitions=1))


def test_row_num_is_unique_and_dense(spark):
    stats = traffic(spark, ROWS).agg(
        F.count("*").alias("n"),
        F.countDistinct("row_num").alias("distinct"),
        F.min("row_num").alias("lo"),
        F.max("row_num").alias("hi"),
    ).first()
    assert (stats.n, stats.distinct, stats.lo, stats.hi) == (ROWS, ROWS, 0, ROWS - 1)


def test_clocks_are_non_decreasing_in_arrival_order(spark):
    df = traffic(spark, ROWS, rate=10.0, start="2026-01-01 00:00:00")
    rows = _rows(df.select("row_num", F.unix_micros("ts").alias("ts"), F.unix_micros("arrival_ts").alias("at")))
    start = 1_767_225_600_000_000  # 2026-01-01 00:00:00 UTC
    assert rows[0].ts >= start
    assert rows[-1].ts < start + ROWS * 100_000  # row_num / rate seconds, in micros
    for before, after in zip(rows, rows[1:]):
        assert before.ts <= after.ts
        assert before.at <= after.at
    assert all(0 <= r.at - r.ts < 1_000_000 for r in rows)


def test_value_ranges(spark):
    rows = traffic(spark, ROWS, segments=12).collect()
    assert all(re.fullmatch(r"s\d\d", r.seg_id) for r in rows)
    assert {r.seg_id for r in rows} == {f"s{i:02d}" for i in range(12)}
    assert all(20.0 <= r.speed <= 80.0 and round(r.speed, 1) == r.speed for r in rows)


def test_bad_parameters_are_rejected(spark):
    with pytest.raises(ValueError, match="rate > 0"):
        traffic(spark, 10, rate=0)


def test_bundled_sample_is_seed_1(spark):
    sample = spark.read.parquet(str(files("wid.datasets") / "traffic_sample.parquet"))
    assert _rows(sample) == _rows(traffic(spark, 2_000, seed=1))
