"""Disordered datasets, replay metrics and ``wid experiment`` on small streams."""

from __future__ import annotations

import csv
from datetime import timedelta

import pytest
from pyspark.sql import functions as F

import wid
from wid import punctuate
from wid.cli.commands import main
from wid.datasets.disorder import block_sorted, bounded_disorder, source_punctuations
from wid.stream.metrics import extent_metrics, summary

QUERY = "SELECT seg_id, count(*) AS n FROM d [RANGE 20 SECONDS SLIDE 10 SECONDS WATTR ts] GROUP BY seg_id"


def test_bounded_disorder_is_dense_in_arrival_order_and_bounded(spark):
    rows = bounded_disorder(spark, 600, max_delay=4.0, late_fraction=0.3, segments=3).orderBy("row_num").collect()
    assert [r.row_num for r in rows] == list(range(600))
    assert all(a.arrival_ts <= b.arrival_ts for a, b in zip(rows, rows[1:]))
    assert all(timedelta(0) < r.arrival_ts - r.ts <= timedelta(seconds=4.3) for r in rows)
    assert any(a.ts > b.ts for a, b in zip(rows, rows[1:]))  # really out of order


def test_block_sorted_releases_each_block_at_its_end(spark):
    rows = block_sorted(spark, 600, block=6.0, segments=3).orderBy("row_num").collect()
    assert [r.row_num for r in rows] == list(range(600))
    for r in rows:
        end = r.arrival_ts.timestamp()
        assert end % 6 == 0 and end - 6 <= r.ts.timestamp() < end
    assert any(a.ts > b.ts for a, b in zip(rows, rows[1:]))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bounded", "block_sorted"])
def test_source_punctuations_are_exact(spark, kind):
    stream = (bounded_disorder(spark, 500, max_delay=5.0, segments=3) if kind == "bounded"
              else block_sorted(spark, 500, block=7.0, segments=3))
    stream.createOrReplaceTempView("d")
    rep = wid.replay(spark, QUERY, punctuation=punctuate.embedded(source_punctuations(stream, kind)))
    assert rep.late.count() == 0
    m = extent_metrics(rep, "n")
    assert m.where(F.col("incorrect")).count() == 0
    # emitted once the extent is complete, so never before the arrival of its last tuple
    # (wids(t) = floor(ts/10) .. floor((ts+20)/10) - 1)
    last = spark.table("d").select("seg_id", F.explode(F.sequence(
        F.floor(F.unix_seconds("ts") / 10), F.floor(F.unix_seconds("ts") / 10) + 1)).alias("wid"), "row_num")
    last = last.groupBy("seg_id", "wid").agg(F.max("row_num").alias("last"))
    assert m.join(last, ["seg_id", "wid"]).where(F.col("emit_row") < F.col("last")).count() == 0


@pytest.mark.slow
def test_metrics_count_late_tuples_as_errors(spark):
    stream = bounded_disorder(spark, 500, max_delay=5.0, late_fraction=0.5, segments=3)
    stream.createOrReplaceTempView("d")
    rep = wid.replay(spark, QUERY, punctuation=punctuate.slack(0, mode="generous"))
    m = extent_metrics(rep, "n").collect()
    exact = {(r.seg_id, r.wid): r.n for r in wid.query(spark, QUERY).collect()}
    late = {}
    for r in rep.late.collect():
        late[(r.seg_id, r.wid)] = late.get((r.seg_id, r.wid), 0) + 1
    for r in m:
        assert r.exact == exact[(r.seg_id, r.wid)]
        assert (r.emitted or 0) + late.get((r.seg_id, r.wid), 0) == r.exact
        assert r.rel_error == pytest.approx(late.get((r.seg_id, r.wid), 0) / r.exact)
        assert r.latency is not None and r.latency_rows is not None
    figures = summary(rep, "n")
    assert figures["late_rows"] == sum(late.values()) > 0
    assert 0 < figures["frac_incorrect"] <= 1


@pytest.mark.slow
def test_wid_experiment_writes_csv_and_plot(spark, tmp_path):
    plan = tmp_path / "exp.toml"
    plan.write_text(f"""
title = "tiny"
query = "{QUERY}"
view = "d"
[input]
generator = "disorder"
kind = "bounded"
rows = 400
segments = 2
max_delay = 5.0
[experiment]
metric = "n"
csv = "out.csv"
png = "out.png"
[[experiment.curves]]
label = "slack"
punctuation = "slack"
amount = [0, 6]
[[experiment.curves]]
label = "source"
punctuation = "source"
""")
    assert main(["experiment", str(plan)], spark) == 0
    points = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert [(p["label"], p["value"]) for p in points] == [("slack", "0"), ("slack", "6"), ("source", "")]
    exact = [p for p in points if p["value"] != "0"]
    assert all(float(p["avg_rel_error"]) == 0 and int(p["late_rows"]) == 0 for p in exact)
    assert float(points[0]["avg_rel_error"]) > 0
    assert float(points[2]["latency"]) <= float(points[1]["latency"])  # external beats exact slack
    assert (tmp_path / "out.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_latency_of_a_hand_worked_replay(spark):
    """Tumbling windows of 10 on ts, slack 0: window 0 ([0, 10)) closes at row 2 (ts 12) whose
    arrival is 12: latency 12 - 10 = 2, in rows 2 - 1 (row 1 is the last to arrive before 10);
    row 3 (ts 8) is late for it (2 of 3 emitted). Window 1 ([10, 20)) closes at row 4, arrival
    26: latency 6, rows 4 - 3. Window 2 closes at the end of the stream: clock max(26, 30) = 30,
    latency 0, rows (4 + 1) - 4."""
    rows = [(0, 1.0, 1.0), (1, 5.0, 5.0), (2, 12.0, 12.0), (3, 8.0, 13.0), (4, 25.0, 26.0)]
    spark.createDataFrame(rows, "row_num long, ts double, arrival_ts double").createOrReplaceTempView("lat")
    rep = wid.replay(spark, "SELECT count(*) AS n FROM lat [RANGE 10 SLIDE 10 WATTR ts]",
                     punctuation=punctuate.slack(0))
    got = {r.wid: (r.exact, r.emitted, r.emit_row, r.latency, r.latency_rows, r.rel_error)
           for r in extent_metrics(rep, "n").collect()}
    assert got == {0: (3, 2, 2, 2.0, 1.0, pytest.approx(1 / 3)), 1: (1, 1, 4, 6.0, 1.0, 0.0),
                   2: (1, 1, None, 0.0, 1.0, 0.0)}
