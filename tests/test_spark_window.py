"""Differential test: time-based sliding windows against Spark's own ``window()`` group-by.

Our window ``w`` has extent ``[(w+1)s - r, (w+1)s)``: Spark's window with the same duration
and slide whose ``end`` is ``(w+1)s``, i.e. ``w = end/s - 1``. Spark's windows start at
``startTime`` + multiples of the slide, so ``startTime = (-r) mod s`` aligns their ends with
ours when ``r`` is not a multiple of ``s``.
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

import wid
from tests.test_windows import START_US, register, stream

AGGREGATES = "count(*) AS n, min(v) AS lo, max(v) AS hi, sum(i) AS isum"


@pytest.mark.parametrize(
    "clause, duration, slide, start_time, origin_us",
    [
        pytest.param("RANGE 5 MINUTES SLIDE 1 MINUTE", "5 minutes", "1 minute", "0 seconds", START_US, id="q1"),
        pytest.param("RANGE 150 SECONDS SLIDE 1 MINUTE", "150 seconds", "60 seconds", "30 seconds", -300_000_000,
                     id="range-not-multiple-of-slide-before-1970"),
    ],
)
def test_time_sliding_windows_match_spark_window(spark, clause, duration, slide, start_time, origin_us):
    register(spark, stream(seed=7, n=300, ts_origin_us=origin_us), "traffic")
    ours = wid.query(spark, f"SELECT k, {AGGREGATES} FROM traffic [{clause} WATTR ts] GROUP BY k")
    slide_us = int(slide.split()[0]) * (60 if "minute" in slide else 1) * 10**6
    theirs = (
        spark.table("traffic")
        .groupBy(F.window("ts", duration, slide, start_time).alias("window"), "k")
        .agg(F.count("*").alias("n"), F.min("v").alias("lo"), F.max("v").alias("hi"), F.sum("i").alias("isum"))
        .select((F.unix_micros("window.end") / slide_us - 1).cast("long").alias("wid"),
                F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                "k", "n", "lo", "hi", "isum")
    )
    assert_df_equality(ours, theirs, ignore_row_order=True, ignore_nullable=True)
