"""Window views in a Spark Declarative Pipeline (docs/guide/pipelines.md): the example project
plans/pipeline/ run by ``spark-pipelines run --remote`` in a temporary folder, on a Spark Connect
server bound to 127.0.0.1, its tables equal to wid on the same readings:

- ``speed_windows`` (Python definitions: ``spark.sql(wid.to_sql(spark, query, schema=...))`` over
  the pipeline's temporary view) and ``speed_tumbling`` (SQL definitions, the file
  ``wid sql-pipeline`` writes) equal :func:`wid.query`;
- ``speed_live`` (a streaming table: :func:`wid.live`, its stateful step run by the pipeline)
  holds replay's results and late rows, ``speed_late`` (:func:`wid.replay`'s late rows) the latter;
- what cannot work is refused in one line: wid inside a query function, a dataset of the
  pipeline as a source at the definitions' top level.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from pyspark.sql import functions as F

import wid
from wid.cli import main as wid_main
from connect_server import ROOT, SPARK_HOME, spark_env

PROJECT = ROOT / "plans" / "pipeline"
READINGS = "row_num long, ts timestamp, seg_id string, speed double"
SPEEDS = ("SELECT seg_id, max(speed) AS hi, avg(speed) AS mean, count(*) AS n "
          "FROM readings [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id")
TUMBLING = ("SELECT seg_id, min(speed) AS lo, sum(speed) AS total, count(speed) AS n "
            "FROM readings [RANGE 2 MINUTES SLIDE 2 MINUTES WATTR ts] WHERE speed > 0 GROUP BY seg_id")
SQL_PIPELINE = ["sql-pipeline", "--source", f"readings={PROJECT / 'data' / 'readings.csv'}",
                "--view", "speed_tumbling", TUMBLING]

#: Definitions the tests add to the project: what wid refuses in a pipeline, one line each in refusals.txt.
REFUSALS = '''
from pathlib import Path
from pyspark import pipelines as dp
import wid

QUERY = "SELECT seg_id, count(*) AS n FROM readings [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id"
refused = []


def attempt(label, build):
    try:
        build()
        refused.append(f"{label}: accepted")
    except wid.WidError as error:
        refused.append(f"{label}: {error}")


attempt("FROM a dataset", lambda: wid.query(spark, QUERY))
attempt("source= a dataset", lambda: wid.query(spark, QUERY, source=spark.read.table("readings")))
attempt("replay of a dataset", lambda: wid.replay(spark, QUERY, source=spark.read.table("readings")))


@dp.materialized_view
def refusal_probe():
    attempt("query in a query function", lambda: wid.query(spark, QUERY, source=spark.read.csv(
        str(Path("data/readings.csv").resolve()), header=True, schema="row_num long, ts timestamp, seg_id string, speed double")))
    attempt("live in a query function", lambda: wid.live(spark, QUERY, spark.readStream.csv(
        str(Path("data").resolve()), header=True, schema="row_num long, ts timestamp, seg_id string, speed double")))
    Path("refusals.txt").write_text("\\n".join(refused) + "\\n")
    return spark.sql("SELECT count(*) AS n FROM readings")
'''


def readings(spark):
    return spark.read.csv(str(PROJECT / "data" / "readings.csv"), header=True, schema=READINGS)


def rows(df, *columns):
    """The rows of ``df``'s ``columns``, sorted; doubles to 9 places (a sum of doubles depends on the
    order Spark adds them in, here its partitions, which differ between the pipeline and this session)."""
    return sorted((tuple(round(v, 9) if isinstance(v, float) else v for v in row)
                   for row in df.select(*columns).collect()), key=repr)


def test_sql_pipeline_writes_the_example_sql_file(spark, tmp_path, capsys):
    assert wid_main([*SQL_PIPELINE[:1], str(tmp_path), *SQL_PIPELINE[1:]], spark) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'speed_tumbling.sql'} (CREATE MATERIALIZED VIEW speed_tumbling)\n"
    written = (tmp_path / "speed_tumbling.sql").read_text()
    assert written == (PROJECT / "transformations" / "speed_tumbling.sql").read_text()
    assert written.startswith("-- Written by `wid sql-pipeline`") and "CREATE MATERIALIZED VIEW `speed_tumbling` AS" in written


@pytest.mark.parametrize("argv, message", [
    (["--view", "w", TUMBLING], "wid: view w reads FROM readings: give its columns with --source readings=PATH_OR_TABLE "
                                "or --schema readings=DDL"),
    (["--schema", "readings", "--view", "w", TUMBLING], "wid: --schema readings: expected NAME=DDL"),
    (["--schema", "readings=ts timestamp, v double", "--view", "w",
      "SELECT count(*) AS n FROM readings [sliding, delta(v, 1.5)]"],
     "wid: view w: SPL windows with a delta policy or partition eviction are not compiled to SQL"),
])
def test_sql_pipeline_refuses_before_spark(tmp_path, capsys, argv, message):
    assert wid_main(["sql-pipeline", str(tmp_path / "out"), *argv]) == 2
    assert capsys.readouterr().err.startswith(message)
    assert not (tmp_path / "out").exists()


def test_to_sql_with_a_schema_refuses_what_is_not_one(spark):
    with pytest.raises(wid.WidError, match=r"^schema= 'ts timestamp, speed' is not a schema: "):
        wid.to_sql(spark, SPEEDS, schema="ts timestamp, speed")
    with pytest.raises(wid.WidError, match=r"^give the source's columns once"):
        wid.to_sql(spark, SPEEDS, source=readings(spark), schema=READINGS)


@pytest.fixture(scope="module")
def pipeline(spark, connect_url, connect_warehouse, tmp_path_factory):
    """The example project run once by ``spark-pipelines run`` in a temporary folder (its SQL file
    written by ``wid sql-pipeline`` there, the definitions of :data:`REFUSALS` added), on the run's
    Spark Connect server (conftest's ``connect_url``; ``spark-pipelines`` alone would start one on
    port 15002 of every interface): the folder, and the server's warehouse with the pipeline's tables."""
    folder = tmp_path_factory.mktemp("pipeline") / "project"
    shutil.copytree(PROJECT, folder)
    (folder / "transformations" / "speed_tumbling.sql").unlink()
    assert wid_main([*SQL_PIPELINE[:1], str(folder / "transformations"), *SQL_PIPELINE[1:]], spark) == 0
    (folder / "transformations" / "refusals.py").write_text(REFUSALS)
    spec = folder / "spark-pipeline.yml"
    spec.write_text(spec.read_text().replace("file:///tmp/wid-pipeline/storage", (folder / "storage").as_uri()))
    run = subprocess.run([str(SPARK_HOME / "bin" / "spark-pipelines"), "run", "--remote", connect_url], cwd=folder,
                         env=spark_env(), capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Run is COMPLETED" in run.stdout + run.stderr
    return folder, connect_warehouse


def table(spark, pipeline, name):
    return spark.read.parquet(str(pipeline[1] / name))


@pytest.mark.slow
def test_python_and_sql_definitions_equal_wid_query(spark, pipeline):
    expected = wid.query(spark, SPEEDS, source=readings(spark))
    assert rows(table(spark, pipeline, "speed_windows"), *expected.columns) == rows(expected, *expected.columns)
    assert len(rows(expected, "wid")) > 20
    expected = wid.query(spark, TUMBLING, source=readings(spark))
    assert rows(table(spark, pipeline, "speed_tumbling"), *expected.columns) == rows(expected, *expected.columns)


@pytest.mark.slow
def test_live_streaming_table_and_replay_late_rows_equal_replay(spark, pipeline):
    rep = wid.replay(spark, SPEEDS, wid.punctuate.slack(20), source=readings(spark))
    live = table(spark, pipeline, "speed_live")
    results, late = live.where(F.col("kind") == "result"), live.where(F.col("kind") == "late")
    assert rows(results, *rep.results.columns) == rows(rep.results, *rep.results.columns)
    assert rows(late, *rep.late.columns) == rows(rep.late, *rep.late.columns)
    assert rows(table(spark, pipeline, "speed_late"), *rep.late.columns) == rows(rep.late, *rep.late.columns)
    assert rep.late.count() == 4  # (reading, window) pairs of readings over 20 s behind the latest one


@pytest.mark.slow
def test_what_cannot_work_is_refused_in_one_line(pipeline):
    refused = (pipeline[0] / "refusals.txt").read_text().splitlines()
    assert refused == [
        "FROM a dataset: unknown view 'readings': register the stream as a temp view first, or pass the DataFrame "
        "as source= (a dataset of a pipeline: wid.to_sql(spark, query, schema=...))",
        "source= a dataset: the source given for 'readings' does not resolve here ([TABLE_OR_VIEW_NOT_FOUND] The "
        "table or view `readings` cannot be found); a dataset of a pipeline has no schema before the pipeline runs: "
        "only wid.to_sql(spark, query, schema=...) compiles for it (return spark.sql(text) from the query function)",
        "replay of a dataset: the source given for 'readings' does not resolve here ([TABLE_OR_VIEW_NOT_FOUND] The "
        "table or view `readings` cannot be found); a dataset of a pipeline has no schema before the pipeline runs: "
        "only wid.to_sql(spark, query, schema=...) compiles for it (return spark.sql(text) from the query function)",
        *[f"{what} in a query function: wid compiles a query with Spark's analysis, which a pipeline query function "
          "refuses: call it at the top level of the definitions file and return its DataFrame from the function (over "
          "a dataset of the pipeline: text = wid.to_sql(spark, query, schema=...) at the top level, spark.sql(text) "
          "in the function)" for what in ("query", "live")],
    ]
