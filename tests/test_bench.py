"""``wid bench --rows-window``: the ROWS query over the unpartitioned stream and per key, timed;
``wid bench --replay``: replay's results and late rows against the query, timed; ``wid bench
--live``: wid live and Spark's streaming window() over the same files, after a warm-up; ``wid bench
--scale``: the time, peak memory and spill of a large query and replay."""

from __future__ import annotations

import re

import pytest

from wid.bench import kinds as bench_kinds
from wid.bench import scale as bench_scale
from wid.bench.live import live_bench


@pytest.mark.slow
def test_rows_parallel_times_both_queries_with_the_cores_busy(spark):
    times = bench_kinds.rows_parallel(spark, rows=3000, repeat=1)
    assert set(times) == {"unpartitioned", "PATTR seg_id"}
    assert all(wall > 0 and cores is not None and cores > 0 for wall, cores in times.values())


@pytest.mark.slow
def test_replay_vs_query_times_the_query_and_both_outputs_of_replay(spark):
    times = bench_kinds.replay_vs_query(spark, rows=3000, repeat=1)
    assert set(times) == {"query", "replay results", "replay late", "replay"}
    assert all(seconds > 0 for seconds in times.values())
    assert times["replay"] == times["replay results"] + times["replay late"]


@pytest.mark.slow
def test_live_bench_reports_both_engines_with_the_machine_load(spark):
    lines = live_bench(spark, rows=2000, segments=5, range_s=60, slide_s=20, files=2, warm_files=2)
    assert len(lines) == 8 and "load average" in lines[0] and "warm-up over 2 micro-batches" in lines[0]
    assert lines[1].startswith("wid live, JVM step (slack): ") and lines[2].startswith("wid live, Python step (slack): ")
    assert lines[3].startswith("spark window + watermark: ") and lines[4].startswith("floor: ")
    assert all("rows/s" in line for line in lines[1:5]) and "state rows max" in lines[3] and "; state:" not in lines[4]
    # wid's state, read back from its checkpoint: the open panes, at most range/slide per key
    # (nondecreasing ts, so nothing older stays open), and some open after each file
    panes = int(re.search(r"state: (\d+) panes max", lines[2]).group(1))
    assert 5 <= panes <= 5 * 3
    assert lines[5].startswith("wid live, JVM step / spark: ") and lines[6].startswith("wid live, Python step / spark: ")
    assert lines[7].startswith("floor / spark: ")


@pytest.mark.slow
def test_live_session_bench_reports_both_engines(spark):
    lines = live_bench(spark, rows=2000, segments=5, gap=1, files=2, warm_files=2)
    assert len(lines) == 4 and "[SESSION 1]" in lines[0]
    assert lines[1].startswith("wid live, Python step (slack): ")
    assert lines[2].startswith("spark session_window + watermark: ")
    # open sessions: at most a few per key at a time (an emitted one is forgotten)
    assert 1 <= int(re.search(r"state: (\d+) panes max", lines[1]).group(1)) <= 5 * 3
    assert lines[3].startswith("wid live, Python step / spark: ")


@pytest.mark.slow
def test_scale_reports_time_peak_memory_and_spill_of_each_case(spark):
    lines = bench_scale.scale(spark, rows=3000, replay_rows=2000)
    assert [line.split(":")[0] for line in lines] == ["wid.query, sliding RANGE 300 s SLIDE 60 s", "wid.replay, heartbeat(5, 5)",
                                                      "wid.replay, heartbeat(5, 5)"]
    assert all(re.search(r"rows in [\d.]+ s; peak RSS: JVM [\d,]+ MiB, Python driver [\d,]+ MiB; spilled", line)
               for line in lines)


@pytest.mark.slow
def test_footprint_counts_the_bytes_a_case_spills(spark):
    """A window function over one partition spills once its buffer passes the thresholds; the
    same without them spills nothing."""
    def build():
        return spark.range(20000).selectExpr("id", "sum(id) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS s")

    assert bench_scale.footprint(spark, build).spilled_disk == 0
    settings = {"spark.sql.windowExec.buffer.in.memory.threshold": "100", "spark.sql.windowExec.buffer.spill.threshold": "100"}
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        spilled = bench_scale.footprint(spark, build)
    finally:
        for key, value in previous.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)
    assert spilled.spilled_disk > 0 and spilled.jvm_mib > 0 and spilled.python_mib > 0
