"""docs/semantics.md section 9: everything works the same on a Spark Connect session as on a classic one.

A Spark Connect server is started from the installed pyspark on a loopback port (once for the
run: conftest's ``connect_url``). Each case of :data:`CASES` runs the public API on a seeded
random stream; a client process (this file run as a script: a Connect session marks the whole
Python process as Connect, so it cannot share the classic test session's process) runs every
case through ``SparkSession.builder.remote(...)`` and has the server write the results as
parquet; the tests compare them with the same cases on the classic session.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

import wid
from wid import punctuate
from wid.stream.replay import replay

from connect_server import assert_wid_run_matches_local, spark_env

VIEW = "wid_connect_stream"
SLIDING = f"SELECT seg_id, count(*) AS n, max(speed) AS hi, avg(speed) AS mean FROM {VIEW} " \
          "[RANGE 20 SECONDS SLIDE 5 SECONDS WATTR ts] GROUP BY seg_id"
SESSIONS = f"SELECT seg_id, count(*) AS n, max(speed) AS hi FROM {VIEW} [SESSION 2 SECONDS WATTR ts] GROUP BY seg_id"


def stream(spark: SparkSession) -> DataFrame:
    """200 tuples in arrival order, timestamps with microseconds, out of order by up to 3 s."""
    rng = random.Random(42)
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = [(i, f"s{rng.randrange(4)}", rng.randrange(20, 80),
             base + dt.timedelta(seconds=i * 0.25 - rng.uniform(0, 3)))
            for i in range(200)]
    df = spark.createDataFrame(rows, "row_num long, seg_id string, speed long, ts timestamp")
    df.createOrReplaceTempView(VIEW)
    return df


def _replay(spark: SparkSession, generator, text: str = SLIDING, **options) -> dict[str, DataFrame]:
    rep = replay(spark, text, punctuation=generator, **options)
    return {"results": rep.results, "late": rep.late}


def _sql(spark: SparkSession) -> dict[str, DataFrame]:
    wid.register(spark)
    wid.create_view(spark, "wid_connect_q1", SLIDING)
    wid.run_sql(spark, f"CREATE OR REPLACE TEMP VIEW wid_connect_q2 AS {SLIDING.replace('20 SECONDS', '10 SECONDS')}")
    return {
        "functions": spark.sql(f"SELECT row_num, wid_lo(ts, 20, 5) AS lo, wid_hi(ts, 20, 5) AS hi, "
                               f"wid_start(wid_lo(ts, 20, 5), 20, 5) AS start, wid_end(wid_lo(ts, 20, 5), 20, 5) AS end, "
                               f"wid_closed(ts, 5) AS closed FROM {VIEW}"),
        "create_view": spark.table("wid_connect_q1"),
        "run_sql": wid.run_sql(spark, "SELECT seg_id, sum(n) AS n FROM wid_connect_q2 GROUP BY seg_id"),
    }


def _punctuations(spark: SparkSession) -> DataFrame:
    """Embedded punctuations: every 50 tuples, all segments closed up to 1 s behind the arrival
    (closer than the disorder, so some tuples arrive late)."""
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = [(i, None, base + dt.timedelta(seconds=i * 0.25 - 1)) for i in range(49, 200, 50)]
    return spark.createDataFrame(rows, "row_num long, seg_id string, ts timestamp")


def _hostile_names(spark: SparkSession) -> dict[str, DataFrame]:
    """Column names with a dot and a back quote (tests/test_names.py): a replay, and SPL's delta
    chain (pandas per partition), over them."""
    spark.table(VIEW).toDF("row_num", "seg.id", "sp`eed", "t.s").createOrReplaceTempView(f"{VIEW}_names")
    rep = replay(spark, f"SELECT `seg.id`, count(*) AS n, max(`sp``eed`) AS hi FROM {VIEW}_names "
                        "[RANGE 20 SECONDS SLIDE 5 SECONDS WATTR `t.s`] GROUP BY `seg.id`", punctuation=punctuate.slack(1))
    spl = wid.query(spark, f"SELECT `seg.id`, count(*) AS n FROM {VIEW}_names "
                           "[sliding, delta(row_num, 20), delta(row_num, 5) partitioned BY `seg.id`]")
    def compared(df: DataFrame) -> DataFrame:  # chispa sorts by names as F.col reads them
        return df.toDF(*[c.replace(".", "_").replace("`", "_") for c in df.columns])

    return {"results": compared(rep.results), "late": compared(rep.late), "spl": compared(spl)}


def _without_row_num(spark: SparkSession) -> dict[str, DataFrame]:
    """The stream without row_num: a sliding window reads no arrival order; wid.arrival numbers it by ts."""
    bare = spark.table(VIEW).drop("row_num")
    bare.createOrReplaceTempView(f"{VIEW}_bare")
    return {"out": wid.query(spark, SLIDING.replace(VIEW, f"{VIEW}_bare")), "arrival": wid.arrival(bare, by=["ts"])}


CASES: dict[str, Callable[[SparkSession], dict[str, DataFrame]]] = {
    "sliding": lambda spark: {"out": wid.query(spark, SLIDING)},
    "partitioned_rows": lambda spark: {"out": wid.query(
        spark, f"SELECT seg_id, sum(speed) AS total, min(ts) AS first FROM {VIEW} "
               "[RANGE 10 ROWS SLIDE 5 ROWS WATTR row_num PATTR seg_id]")},
    "replay_embedded": lambda spark: _replay(spark, punctuate.embedded(_punctuations(spark), mode="consistent")),
    # deep plans: several range aggregates, revisions and late rows of one replay
    "replay_lateness": lambda spark: _replay(spark, punctuate.slack(1), allowed_lateness=2),
    "replay_sessions": lambda spark: _replay(spark, punctuate.slack(1), SESSIONS),
    # Arrow/pandas grouped functions: the FCA bins, and SPL's delta chain (row_num never decreases)
    "slide_by_tuple": lambda spark: {"out": wid.query(
        spark, f"SELECT seg_id, count(*) AS n, max(speed) AS hi FROM {VIEW} "
               "[RANGE 5 SECONDS RATTR ts SLIDE 1 ROW SATTR row_num] GROUP BY seg_id")},
    "spl_delta_chain": lambda spark: {"out": wid.query(
        spark, f"SELECT seg_id, count(*) AS n, max(speed) AS hi FROM {VIEW} "
               "[sliding, delta(row_num, 20), delta(row_num, 5) partitioned BY seg_id]")},
    "sql": _sql,
    "hostile_names": lambda spark: _hostile_names(spark),
    "without_row_num": _without_row_num,
}
#: Bad input: the same wid message on both sessions.
ERRORS = {
    "bad_clause": (f"SELECT count(*) AS n FROM {VIEW} [RANGE 10 SLIDE 0 WATTR ts]", "SLIDE must be positive"),
    "unknown_column": (f"SELECT count(*) AS n FROM {VIEW} [RANGE 10 SLIDE 5 WATTR nope]", "unknown column 'nope'"),
    "null_attribute": ("SELECT count(*) AS n FROM wid_connect_nulls [RANGE 10 SLIDE 5 WATTR ts]",
                       "NULL or NaN window attribute 'ts' in the tuple with row_num=1"),
}


def _error(spark: SparkSession, text: str) -> str:
    spark.createDataFrame([(0, 1.0), (1, None)], "row_num long, ts double").createOrReplaceTempView("wid_connect_nulls")
    try:
        wid.query(spark, text).collect()
    except Exception as error:  # noqa: BLE001 - the message is what is compared
        return str(error).strip().splitlines()[0]
    return "no error"


def run_remote(url: str, out: Path) -> None:
    """Run every case on a Connect session; the server writes each DataFrame to ``out/case/name``."""
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        stream(spark)
        for case, build in CASES.items():
            for name, df in build(spark).items():
                df.write.parquet(str(out / case / name))
        (out / "errors.json").write_text(json.dumps({k: _error(spark, q) for k, (q, _) in ERRORS.items()}))
    finally:
        spark.stop()


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def remote(connect_url, tmp_path_factory) -> Path:
    """The directory where the Connect client left every case's results."""
    out = tmp_path_factory.mktemp("remote")
    client = subprocess.run([sys.executable, __file__, connect_url, str(out)], env=spark_env(),
                            capture_output=True, text=True, timeout=900)
    assert client.returncode == 0, client.stderr[-5000:]
    return out


@pytest.fixture(scope="module")
def classic(spark) -> SparkSession:
    stream(spark)
    return spark


@pytest.mark.parametrize("case", CASES)
def test_case_is_the_same_on_connect_and_classic(classic, remote, case):
    expected = CASES[case](classic)
    for name, df in expected.items():
        actual = classic.read.parquet(str(remote / case / name))
        assert actual.columns == df.columns
        assert_df_equality(actual, df, ignore_row_order=True, ignore_nullable=True)
    assert any(classic.read.parquet(str(remote / case / name)).count() for name in expected)


@pytest.mark.parametrize("error", ERRORS)
def test_bad_input_gives_the_same_message_on_connect(classic, remote, error):
    text, message = ERRORS[error]
    assert message in _error(classic, text)
    assert message in json.loads((remote / "errors.json").read_text())[error]


def test_wid_run_remote_prints_the_local_result(classic, connect_url, capsys):
    assert_wid_run_matches_local(classic, capsys, "--remote", connect_url)


if __name__ == "__main__":
    run_remote(sys.argv[1], Path(sys.argv[2]))
