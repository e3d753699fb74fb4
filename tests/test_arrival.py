"""Arrival order only where it matters (docs/semantics.md section 1.1).

A file of events without ``row_num`` (ISO timestamps with microseconds, two-decimal values,
duplicates, rows out of time order) is queried as it is by the windows that read values
alone, with the oracle's results; the windows, replay and live mode that read arrival order
refuse it before any Spark job, naming the fix; :func:`wid.arrival` numbers it, by columns
(ties by position in the source) or by position alone, the same on every read.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
import re
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from pyspark.errors import PySparkException
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

import wid
from tests.oracle import Landmark, Rows, SlideByTuple, Sliding, evaluate, sessions
from tests.strategies import cases
from tests.test_properties import aggregates_of, assert_same, bounds, collected, expected_rows, query_text
from wid.errors import WidError
from wid.plan import Plan

#: 2026-03-01 09:00:00 UTC in epoch microseconds.
START_US = 1_772_355_600_000_000
QUERY = "SELECT key, count(*) AS n, sum(value) AS total, max(value) AS hi FROM events [{}] GROUP BY key"
FIX = r"add one with wid\.arrival\(df, by=\.\.\.\) \(or --arrival on the command line\)$"


def iso(micros: int) -> str:
    """Epoch microseconds as an ISO timestamp with microseconds, as a CSV export writes it."""
    return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)).isoformat(sep=" ", timespec="microseconds")


def seconds(value: dt.datetime) -> Fraction:
    """A timestamp read back from Spark (the session is in UTC) as exact epoch seconds."""
    delta = value.replace(tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return Fraction(delta.days * 86_400 + delta.seconds) + Fraction(delta.microseconds, 10**6)


@pytest.fixture(scope="module")
def events(spark, tmp_path_factory) -> list[dict]:
    """200 events over 20 minutes in a CSV file with a header and no ``row_num``, registered as
    view ``events``; returns them for the oracle (``ts`` in exact epoch seconds; ``row_num``
    their line, which no window below may read)."""
    rng = random.Random(38)
    lines = []
    for _ in range(190):
        micros = START_US + rng.randrange(20 * 60 * 10**6)
        if rng.random() < 0.2:  # on a minute boundary
            micros -= micros % 60_000_000
        lines.append((micros, rng.choice("abc"), rng.randint(-5000, 9999) / 100))
    lines += rng.sample(lines, 10)  # exact duplicates
    rng.shuffle(lines)  # out of time order
    path = tmp_path_factory.mktemp("events") / "events.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["ts", "key", "value"])
        out.writerows((iso(micros), key, f"{value:.2f}") for micros, key, value in lines)
    df = spark.read.option("header", True).option("inferSchema", True).csv(str(path))
    assert df.columns == ["ts", "key", "value"] and isinstance(df.schema["ts"].dataType, TimestampType)
    df.createOrReplaceTempView("events")
    return [{"row_num": i, "ts": Fraction(micros, 10**6), "key": key, "value": value}
            for i, (micros, key, value) in enumerate(lines)]


ORACLE = {"n": ("count", None), "total": ("sum", "value"), "hi": ("max", "value")}


def assert_oracle(rows: list, expected: list[dict], fca: bool = False) -> None:
    """``rows`` (wid, ..., key, n, total, hi) hold the oracle's rows: counts and maxima exact,
    sums of doubles to the last bits."""
    got = {(seconds(r.wid) if fca else r.wid, r.key): (r.n, r.total, r.hi) for r in rows}  # FCA: wid = ts
    want = {(r["wid"], r["key"]): (r["n"], r["total"], r["hi"]) for r in expected}
    assert set(got) == set(want) and len(got) == len(rows)
    for window, (n, total, hi) in want.items():
        assert got[window][0] == n and got[window][2] == hi
        assert got[window][1] == pytest.approx(total, rel=1e-12, abs=1e-9)


WINDOWS = [
    ("RANGE 2 MINUTES SLIDE 30 SECONDS WATTR ts", Sliding(120, 30, "ts")),
    ("RANGE 1 MINUTE SLIDE 1 MINUTE WATTR ts", Sliding(60, 60, "ts")),
    ("RANGE 45 SECONDS SLIDE 2 MINUTES WATTR ts", Sliding(45, 120, "ts")),
    ("RANGE UNBOUNDED SLIDE 5 MINUTES WATTR ts", Landmark(300, "ts")),
    ("RANGE 90 SECONDS RATTR ts SLIDE 1 ROW SATTR row_num", SlideByTuple(90, "ts")),
]


@pytest.mark.parametrize("clause, window", WINDOWS, ids=[c for c, _ in WINDOWS])
@pytest.mark.slow
def test_value_windows_read_no_arrival_order(spark, events, clause, window):
    """Sliding, tumbling, hopping, landmark and slide-by-tuple (SLIDE 1 ROW) windows on a view
    without row_num: the exact oracle's rows."""
    out = wid.query(spark, QUERY.format(clause))
    assert_oracle(out.collect(), evaluate(events, window, ORACLE, group_by=["key"]), isinstance(window, SlideByTuple))


@pytest.mark.slow
def test_sessions_read_no_arrival_order(spark, events):
    """``[SESSION 20 SECONDS WATTR ts] GROUP BY key``: each key's sessions, as the oracle cuts them."""
    out = wid.query(spark, "SELECT key, count(*) AS n, max(value) AS hi FROM events "
                           "[SESSION 20 SECONDS WATTR ts] GROUP BY key").collect()
    got = {(r.key, r.wid): (r.n, r.hi, seconds(r.session_start), seconds(r.session_end)) for r in out}
    want = {(key[0], w): (len(run), max(t["value"] for t in run), run[0]["ts"], run[-1]["ts"] + 20)
            for key, w, run in sessions(events, Fraction(20), "ts", ["key"])}
    assert got == want and len(out) == len(want)


@pytest.mark.slow
def test_sql_over_a_view_without_row_num(spark, events):
    """``CREATE TEMP VIEW`` through wid.run_sql, and wid.to_sql's plain SQL text, over the view
    without row_num: the oracle's rows."""
    text = QUERY.format("RANGE 2 MINUTES SLIDE 30 SECONDS WATTR ts")
    wid.run_sql(spark, "CREATE OR REPLACE TEMP VIEW per_minute AS " + text)
    expected = evaluate(events, Sliding(120, 30, "ts"), ORACLE, ["key"])
    assert_oracle(spark.table("per_minute").collect(), expected)
    assert_oracle(spark.sql(wid.to_sql(spark, text)).collect(), expected)


def _no_job(spark, run) -> WidError:
    """The WidError that ``run()`` raises, having started no Spark job."""
    sc = spark.sparkContext
    sc.setJobGroup("wid-arrival-check", "checks before any job")
    try:
        with pytest.raises(WidError) as error:
            run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup("wid-arrival-check") == []
    return error.value


@pytest.mark.parametrize("clause", [
    "RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num",
    "RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR key",
    "RANGE UNBOUNDED SLIDE 3 ROWS WATTR row_num",
    "RANGE 2 MINUTES RATTR ts SLIDE 3 ROWS SATTR row_num",
    "RANGE 2 MINUTES RATTR ts SLIDE 3 ROWS SATTR rank(ts)",
    "tumbling, count(4)",
])
def test_windows_that_read_arrival_order_name_the_fix(spark, events, clause):
    """Before any Spark job, through wid.query and wid.to_sql alike."""
    text = f"SELECT key, count(*) AS n FROM events [{clause}] GROUP BY key"
    for run in (wid.query, wid.to_sql):
        error = _no_job(spark, lambda: run(spark, text))
        assert re.fullmatch(rf"\[{re.escape(clause)}\] reads arrival order but view 'events' has no row_num column: "
                            + FIX, str(error))


def test_replay_and_live_name_the_fix(spark, events, tmp_path):
    text = QUERY.format("RANGE 1 MINUTE SLIDE 1 MINUTE WATTR ts")
    error = _no_job(spark, lambda: wid.replay(spark, text, wid.punctuate.slack(5)))
    assert re.fullmatch("replay reads arrival order but view 'events' has no row_num column: " + FIX, str(error))
    stream = spark.readStream.schema(spark.table("events").schema).parquet(str(tmp_path))
    error = _no_job(spark, lambda: wid.live(spark, text, stream, wid.punctuate.slack(5)))
    assert "live mode reads arrival order but the stream has no row_num column" in str(error)
    assert "wid.arrival(df, by=...)" in str(error)


@pytest.mark.slow
def test_numbered_by_arrival_they_replay(spark, events):
    """With wid.arrival's row_num, by ts: the ROWS window of the oracle over those positions."""
    numbered = wid.arrival(spark.table("events"), by=["ts"])
    numbered.createOrReplaceTempView("arrived")
    rows = [{"row_num": r.row_num, "ts": seconds(r.ts), "key": r.key, "value": r.value} for r in numbered.collect()]
    assert sorted(r["row_num"] for r in rows) == list(range(len(events)))
    assert [r["ts"] for r in sorted(rows, key=lambda r: r["row_num"])] == sorted(t["ts"] for t in events)
    out = wid.query(spark, QUERY.format("RANGE 5 ROWS SLIDE 2 ROWS WATTR row_num").replace("events", "arrived"))
    assert_oracle(out.collect(), evaluate(rows, Rows(5, 2), ORACLE, group_by=["key"]))
    rep = wid.replay(spark, QUERY.format("RANGE 1 MINUTE SLIDE 1 MINUTE WATTR ts").replace("events", "arrived"),
                     wid.punctuate.slack(0))
    assert rep.late.count() == 0  # in ts order nothing is late


def _null_message(run) -> str:
    with pytest.raises(PySparkException) as error:
        run()
    found = re.search(r"wid: (.*?)(?: SQLSTATE: \w+)?$", str(error.value), re.MULTILINE)
    assert found, str(error.value)
    return found.group(1)


@pytest.mark.parametrize("clause", ["RANGE 1 MINUTE SLIDE 1 MINUTE WATTR ts", "SESSION 20 SECONDS WATTR ts",
                                    "RANGE UNBOUNDED SLIDE 5 MINUTES WATTR ts",
                                    "RANGE 90 SECONDS RATTR ts SLIDE 1 ROW SATTR row_num"])
@pytest.mark.slow
def test_a_null_window_attribute_is_named_by_the_users_columns(spark, clause):
    """Without row_num the tuple is named by all its columns, internal ones never."""
    spark.createDataFrame([(dt.datetime(2026, 3, 1, 9, 0, 1, 250000), "a", 12.5), (None, "b", -3.75)],
                          "ts timestamp, key string, value double").createOrReplaceTempView("holes")
    text = QUERY.format(clause).replace("events", "holes")
    for run in (lambda: wid.query(spark, text).collect(), lambda: spark.sql(wid.to_sql(spark, text)).collect()):
        message = _null_message(run)
        assert message == "NULL or NaN window attribute 'ts' in the tuple with ts=NULL, key=b, value=-3.75"


# --- wid.arrival -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parts(tmp_path_factory) -> tuple[Path, list[dict]]:
    """Three parquet files of 60 rows each (row groups of 7 rows), written in the order
    part-0, part-1, part-2; ``ts`` repeats within and across files, ``tag`` says where each row
    lies (file, line)."""
    rng = random.Random(5)
    directory = tmp_path_factory.mktemp("parts")
    rows = []
    for f in range(3):
        batch = [{"ts": rng.choice([None, *range(10)]), "key": rng.choice("xy"), "tag": f * 1000 + line}
                 for line in range(60)]
        pq.write_table(pa.Table.from_pylist(batch, pa.schema([("ts", pa.int64()), ("key", pa.string()),
                                                              ("tag", pa.int64())])),
                       directory / f"part-{f}.parquet", row_group_size=7)
        rows += batch
    return directory, rows


def _tags(df) -> list[int]:
    return [r.tag for r in df.orderBy("row_num").collect()]


@pytest.mark.slow
def test_arrival_by_source_position_is_file_then_line_on_every_read(spark, parts):
    """The same files, read twice, and once more split into many small pieces: the same numbers."""
    directory, rows = parts
    first = wid.arrival(spark.read.parquet(str(directory)))
    assert first.columns == ["row_num", "ts", "key", "tag"]
    assert [r.row_num for r in first.orderBy("row_num").collect()] == list(range(len(rows)))
    assert _tags(first) == [r["tag"] for r in rows]
    assert _tags(wid.arrival(spark.read.parquet(str(directory)))) == _tags(first)
    conf = {"spark.sql.files.maxPartitionBytes": "600", "spark.sql.files.openCostInBytes": "0"}
    saved = {k: spark.conf.get(k) for k in conf}
    try:
        for k, v in conf.items():
            spark.conf.set(k, v)
        split = spark.read.parquet(str(directory))
        assert split.select(F.spark_partition_id()).distinct().count() > 3  # the row groups in many splits
        assert _tags(wid.arrival(split)) == _tags(first)
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)


@pytest.mark.slow
def test_arrival_by_columns_breaks_ties_by_source_position(spark, parts):
    """By ``ts`` (NULLs first), ties by file then line; by ``key, ts`` likewise."""
    directory, rows = parts
    df = spark.read.parquet(str(directory))
    position = {r["tag"]: i for i, r in enumerate(rows)}
    by_ts = sorted(rows, key=lambda r: (r["ts"] is not None, r["ts"] or 0, position[r["tag"]]))
    assert _tags(wid.arrival(df, by="ts")) == [r["tag"] for r in by_ts]
    by_both = sorted(rows, key=lambda r: (r["key"], r["ts"] is not None, r["ts"] or 0, position[r["tag"]]))
    assert _tags(wid.arrival(df, by=["KEY", "ts"])) == [r["tag"] for r in by_both]


def test_arrival_refuses_what_it_cannot_number(spark, parts):
    df = spark.read.parquet(str(parts[0]))
    with pytest.raises(WidError, match=r"^unknown column 'when' \(columns: ts, key, tag\)$"):
        wid.arrival(df, by=["ts", "when"])
    with pytest.raises(WidError, match="already has a row_num column"):
        wid.arrival(df.withColumn("ROW_NUM", F.lit(1)))
    with pytest.raises(WidError, match="column names"):
        wid.arrival(df, by=[F.col("ts")])


@pytest.mark.slow
def test_a_plan_adds_arrival_order_to_its_input(spark, parts, tmp_path):
    """``[input] arrival``: ``"source"`` or a list of columns; anything else refused at load."""
    directory, rows = parts
    lines = ['query = "SELECT key, count(*) AS n FROM p [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num] GROUP BY key"',
             'view = "p"', "[input]", f'path = "{directory / "part-1.parquet"}"']
    plan_path = tmp_path / "p.toml"
    plan_path.write_text("\n".join([*lines, 'arrival = ["ts"]']))
    source = Plan.load(plan_path).register(spark, rows=5)
    assert [r.tag for r in source.orderBy("row_num").collect()] == \
        [r["tag"] for r in sorted(rows[60:120], key=lambda r: (r["ts"] is not None, r["ts"] or 0, r["tag"]))][:5]
    plan_path.write_text("\n".join([*lines, 'arrival = "source"']))
    Plan.load(plan_path).register(spark)
    assert wid.query(spark, Plan.load(plan_path).query).groupBy().sum("n").first()[0] == 2 * 60  # r/s windows each
    plan_path.write_text("\n".join(lines))
    with pytest.raises(WidError, match=r'has no row_num column: add arrival = "source" \(or a list of columns\) to'):
        Plan.load(plan_path).register(spark, rows=5)
    plan_path.write_text("\n".join([*lines, "arrival = 3"]))
    with pytest.raises(WidError, match=r'\[input\] arrival must be "source" or a list of column names, got 3$'):
        Plan.load(plan_path)


# --- a property: any value window, with or without row_num --------------------------------


@pytest.mark.slow
@given(case=cases(("sliding", "tumbling", "hopping", "landmark", "slide-by-tuple"), most=200))
def test_value_windows_equal_the_oracle_without_row_num(spark, case):
    """Any stream of tests/strategies.py, its row_num dropped: the oracle's rows."""
    aggregates = aggregates_of(case)
    case.register(spark).drop("row_num").createOrReplaceTempView("s")
    out = wid.query(spark, query_text(case, aggregates))
    assert_same(case, collected(out), expected_rows(case, aggregates), [*bounds(case), *aggregates])
