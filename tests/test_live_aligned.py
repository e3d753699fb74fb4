"""The newer windows in every mode: a grid shifted by OFFSET, a cumulating window and Spark's own
``window()`` syntax, each run live over files (two micro-batches) and replayed under the same
punctuations: the committed sink equals ``wid.replay`` (results with ``emit_row``, late rows),
and replay with no punctuation but the end of the stream equals ``wid.query``. Slow: streaming
queries (docs/live.md).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

import wid
from wid import punctuate
from wid.stream.live import run as live_run
from wid.stream.live.job import live
from wid.stream.replay import replay

from live_jobs import run_in_waves

pytestmark = pytest.mark.slow
VIEW = "wid_live_aligned"
QUERIES = {
    "offset": f"SELECT k, count(*) AS n, sum(v) AS total FROM {VIEW} "
              "[RANGE 6 SECONDS SLIDE 2 SECONDS OFFSET -0.5 SECONDS WATTR ts] GROUP BY k",
    "cumulate": f"SELECT k, count(*) AS n, max(v) AS hi FROM {VIEW} "
                "[CUMULATE STEP 2 SECONDS SIZE 8 SECONDS OFFSET 1 SECOND WATTR ts] GROUP BY k",
    "spark": f"SELECT window.start AS s, window, k, count(*) AS n, sum(v) AS total FROM {VIEW} "
             "GROUP BY window(ts, '6 seconds', '2 seconds', '1 second'), k",
}


def rows(seed: int = 11, n: int = 80) -> list[tuple]:
    """``(row_num, k, ts, v)``: microsecond times about one a second, 30 % up to 3 s behind
    arrival; amounts with two decimals; row_num with gaps."""
    rnd = random.Random(seed)
    start = dt.datetime(2026, 3, 29, 0, 59, 50)
    out = []
    for i in range(n):
        behind = rnd.uniform(0, 3) if rnd.random() < 0.3 else 0
        ts = start + dt.timedelta(seconds=i - behind, microseconds=rnd.randint(0, 999_999))
        out.append((3 * i + rnd.randint(0, 2), rnd.choice("abc"), ts, Decimal(rnd.randint(-9999, 9999)).scaleb(-2)))
    return out


def test_live_and_replay_of_the_newer_windows_agree(spark, tmp_path):
    frame = spark.createDataFrame(rows(), "row_num long, k string, ts timestamp, v decimal(8,2)")
    frame.createOrReplaceTempView(VIEW)
    tuples = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2))
    generator = punctuate.slack(1.5)
    jobs = {name: live(spark, text, tuples, generator) for name, text in QUERIES.items()}
    run_in_waves(jobs, tmp_path)
    for name, text in QUERIES.items():
        results, late = live_run.read_output(spark, jobs[name], tmp_path / name / "out")
        expected = replay(spark, text, punctuation=generator)
        assert results.columns == expected.results.columns, name
        assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
        assert late.count() > 0 and results.where(F.col("emit_row").isNotNull()).count() > 0, name
    assert jobs["spark"].results.columns[:2] == ["s", "window"]


@pytest.mark.parametrize("name", list(QUERIES))
def test_replay_at_the_end_of_the_stream_is_the_query(spark, name):
    """With no punctuation but the stream's end, every window closes there: the query's rows."""
    spark.createDataFrame(rows(), "row_num long, k string, ts timestamp, v decimal(8,2)").createOrReplaceTempView(VIEW)
    rep = replay(spark, QUERIES[name], punctuation=None)
    assert rep.late.count() == 0
    assert rep.results.where(F.col("emit_row").isNotNull()).count() == 0
    assert_df_equality(rep.results.drop("emit_row", "revision"), wid.query(spark, QUERIES[name]),
                       ignore_row_order=True, ignore_nullable=True)
