"""Live mode (docs/semantics.md section 10): run to completion over files, the output equals ``wid.replay``.

A seeded random stream (out of order, row_num with gaps, embedded punctuations in the same
files) is split into parquet files read one per micro-batch with ``Trigger.AvailableNow``;
every generator's live query runs (one streaming query each, a few at once, one Spark session) and
its committed sink is compared with ``wid.replay`` on the same rows: results with
``emit_row`` (an avg of a decimal exact and of Spark's type), and every late row; so are a
restart after a stop, a flush on stop and a run over Spark Connect. ``wid.replay`` is checked
against an independent streaming simulation in tests/test_replay.py. All slow, the suite's
largest file: each micro-batch of a streaming query costs Spark about 0.7 s on the 2-core machine
(its first, planning the stateful step, about 1.5 s), whatever the few rows it holds.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from chispa import assert_approx_df_equality, assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid import punctuate
from wid.cli.commands import main
from wid.errors import WidError
from wid.bench.experiment import punctuation_of
from wid.plan import Plan
from wid.windows.flink import CountEviction, CountTrigger, DeltaTrigger, Discretization, TimeEviction, TimeTrigger
from wid.stream.live import run as live_run
from wid.stream.live.job import live
from wid.stream.replay import replay

from connect_server import spark_env
from live_jobs import run_in_waves

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]

VIEW = "wid_live_s"
QUERY = (f"SELECT k, count(*) AS n, sum(v) AS total, avg(v) AS mean, max(x) AS hi, avg(d) AS exact FROM {VIEW} "
         "[RANGE 6 SLIDE 2 WATTR x] GROUP BY k")
FLAG = "is_punctuation"
COLUMNS = f"row_num long, k string, x double, v long, d decimal(20, 6), arrival double, {FLAG} boolean"
#: ROWS windows (positions counted in arrival order as tuples come; each tuple punctuates its partition).
ROWS_QUERIES = {
    "rows_pattr": f"SELECT k, count(*) AS n, sum(v) AS total, avg(d) AS exact FROM {VIEW} "
                  "[RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR k]",
    "rows_hopping_where": f"SELECT count(*) AS n, max(x) AS hi FROM {VIEW} [RANGE 2 ROWS SLIDE 3 ROWS WATTR row_num] "
                          "WHERE v > 2",
}


#: A nanosecond arrival clock as ``row_num`` (past 2**53: no double holds it).
CLOCK = 1_764_000_000_000_000_001


def rows(seed: int = 7, n: int = 90, clock: int = 0) -> list[tuple]:
    """``(row_num, k, x, v, d, arrival, is_punctuation)``: tuples ``x`` up to 5 behind arrival
    (30 %), row_num with gaps from ``clock``, ``d`` a decimal of 14 digits (its avg has more
    digits than a double holds); every 9th element also a punctuation (a key or the wildcard,
    bound 1 behind arrival: some tuples come after it)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        x = i - (rnd.uniform(0, 5) if rnd.random() < 0.3 else 0.0)
        d = Decimal(rnd.randint(-10 ** 14, 10 ** 14)).scaleb(-6)
        out.append((clock + 2 * i, rnd.choice("abc"), x, rnd.randint(0, 9), d, float(i), False))
        if i % 9 == 8:
            out.append((clock + 2 * i, rnd.choice(["a", "b", None]), i - 1.0, None, None, None, True))
    return out


def generators(spark: SparkSession, punctuations: DataFrame) -> dict:
    return {
        "slack": punctuate.slack(1),
        "slack_consistent": punctuate.slack(2, mode="consistent"),
        "slack_rows": punctuate.slack(6, by="rows"),
        "heartbeat": punctuate.heartbeat(2, 1, clock="arrival"),
        "ordered_by": punctuate.ordered_by("k"),
        "embedded": punctuate.embedded(punctuations),
        "embedded_consistent": punctuate.embedded(punctuations, mode="consistent"),
        "end_only": None,
    }


@pytest.fixture(scope="module")
def stream(spark, tmp_path_factory) -> tuple[Path, DataFrame]:
    """The files (2 parts + the end marker: 3 micro-batches, a boundary between tuples) and the static
    tuples registered as the replayed view; ``row_num`` a nanosecond clock."""
    everything = spark.createDataFrame(rows(clock=CLOCK), COLUMNS)
    directory = live_run.split_into_files(everything, tmp_path_factory.mktemp("live") / "in", 2)
    everything.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW)
    return directory, everything


def _split(source: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Tuples and embedded punctuations of one streaming source (so they share its micro-batches)."""
    tuples = source.where(~F.coalesce(F.col(FLAG), F.lit(False))).drop(FLAG)
    return tuples, source.where(F.col(FLAG)).select("row_num", "k", "x")


@pytest.fixture(scope="module")
def outputs(spark, stream, tmp_path_factory) -> dict:
    """Every generator's live query run to completion, a few at a time."""
    directory, everything = stream
    static_punctuations = everything.where(F.col(FLAG)).select("row_num", "k", "x")
    source = live_run.source(spark, directory)
    tuples, punctuations = _split(source)
    work = tmp_path_factory.mktemp("sinks")
    jobs = {name: live(spark, QUERY, tuples, generator) for name, generator in generators(spark, punctuations).items()}
    jobs.update({name: live(spark, text, tuples) for name, text in ROWS_QUERIES.items()})
    run_in_waves(jobs, work)
    return {name: (live_run.read_output(spark, job, work / name / "out"), static_punctuations)
            for name, job in jobs.items()}


def _live_and_replay(spark, text: str, frame: DataFrame, generator, tmp_path: Path):
    """``(results, late)`` of ``text`` live over ``frame`` split into 2 files, and its replay."""
    job = live(spark, text, live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2)), generator)
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    return (*live_run.read_output(spark, job, tmp_path / "out"), replay(spark, text, punctuation=generator))


def _replayed(spark, name: str, static_punctuations: DataFrame):
    return replay(spark, QUERY, punctuation=generators(spark, static_punctuations)[name])


@pytest.mark.parametrize("name", list(generators(None, None)))
def test_live_equals_replay(spark, outputs, name):
    (results, late), static_punctuations = outputs[name]
    expected = _replayed(spark, name, static_punctuations)
    assert results.columns == expected.results.columns and late.columns == expected.late.columns
    assert late.columns[-3:] == ["wid", "window_start", "window_end"]  # each late row's extent, as results
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    assert results.where(F.col("emit_row").isNotNull()).count() > 0 or name == "end_only"
    assert results.schema["exact"].dataType.simpleString() == "decimal(24,10)"  # Spark's avg of a decimal(20, 6)


@pytest.mark.parametrize("name", list(ROWS_QUERIES))
def test_live_rows_windows_equal_replay(spark, outputs, name):
    """Positions per partition (or of the whole stream, in one bucket) across micro-batches."""
    (results, late), _ = outputs[name]
    expected = replay(spark, ROWS_QUERIES[name])
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert late.count() == expected.late.count() == 0  # arrival order: a ROWS window is never late
    assert results.where(F.col("emit_row").isNotNull()).count() > 0


def test_live_rows_window_with_a_null_partition_equals_replay(spark, tmp_path):
    """A NULL ``PATTR`` value is a partition of its own, as in replay; NULLs in every batch; more
    buckets than partitions (a bucket that only sees the end of the stream)."""
    rnd = random.Random(3)
    frame = spark.createDataFrame([(2 * i, rnd.choice(["a", "b", None]), rnd.uniform(-5, 5)) for i in range(40)],
                                  "row_num long, p string, y double")
    frame.createOrReplaceTempView(VIEW + "_p")
    text = f"SELECT p, count(*) AS n, min(y) AS lo FROM {VIEW}_p [RANGE 3 ROWS SLIDE 2 ROWS WATTR row_num PATTR p]"
    job = live(spark, text, live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2)), buckets=4)
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    results, _ = live_run.read_output(spark, job, tmp_path / "out")
    assert results.where(F.col("p").isNull() & F.col("emit_row").isNotNull()).count() > 0
    assert_df_equality(results, replay(spark, text).results, ignore_row_order=True, ignore_nullable=True)


def test_live_null_keys_with_keyed_and_wildcard_punctuations_equal_replay(spark, tmp_path):
    """A NULL GROUP BY key is a key of its own that only wildcard punctuations close; in one
    bucket, a batch whose closed windows are all of the NULL key, with a keyed punctuation in it
    (key 'a' is closed far ahead by its own punctuations: its later tuples are late), emits them."""
    rows = [(i, None if i % 3 else "a", float(i), 1) for i in range(30)]
    bounds = [(i, "a", 100.0) for i in range(3, 30, 4)] + [(i, None, float(i - 2)) for i in range(6, 30, 4)]
    frame = spark.createDataFrame([(r, k, x, v, False) for r, k, x, v in rows] +
                                  [(r, k, x, None, True) for r, k, x in bounds],
                                  f"row_num long, k string, x double, v long, {FLAG} boolean")
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_n")
    text = f"SELECT k, count(*) AS n, sum(v) AS total FROM {VIEW}_n [RANGE 4 SLIDE 2 WATTR x] GROUP BY k"
    tuples, punctuations = _split(live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 4)))
    job = live(spark, text, tuples, punctuate.embedded(punctuations), buckets=1)
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    results, late = live_run.read_output(spark, job, tmp_path / "out")
    expected = replay(spark, text, punctuate.embedded(frame.where(F.col(FLAG)).select("row_num", "k", "x")))
    assert results.where(F.col("k").isNull() & F.col("emit_row").isNotNull()).count() > 0
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)


def test_live_late_rows_on_microsecond_timestamps_carry_replays_bounds(spark, tmp_path):
    """A timestamp attribute with microseconds: each late row's ``window_start``/``window_end``
    (timestamps, the extent of its ``wid``) are replay's, as are the results."""
    frame = spark.createDataFrame(rows(seed=5, n=45), COLUMNS).where(~F.col(FLAG)).drop(FLAG).withColumn(
        "ts", F.timestamp_micros((F.col("x") * 1_000_000 + 1_700_000_000_000_000 + 7).cast("long")))
    frame.createOrReplaceTempView(VIEW + "_ts")
    text = (f"SELECT k, count(*) AS n, sum(v) AS total FROM {VIEW}_ts [RANGE 6 SECONDS SLIDE 2 SECONDS WATTR ts] "
            "GROUP BY k")
    results, late, expected = _live_and_replay(spark, text, frame, punctuate.slack(1), tmp_path)
    assert late.schema["window_start"].dataType.simpleString() == "timestamp" and late.count() > 0
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)


LANDMARK = "SELECT k, count(*) AS c, sum(n) AS t FROM {view} [RANGE UNBOUNDED SLIDE 3 WATTR x] GROUP BY k"


def test_live_landmark_windows_equal_replay(spark, tmp_path):
    """Open ranges stay open until the end of the stream closes them at its largest window (NULL
    keys among the tuples: a key of its own for ``ordered_by``)."""
    rnd = random.Random(5)
    frame = spark.createDataFrame(
        [(2 * i, rnd.choice(["a", "b", "c", None]), i * 0.5 - (rnd.uniform(0, 4) if rnd.random() < 0.3 else 0.0),
          rnd.randint(-3, 9)) for i in range(80)], "row_num long, k string, x double, n long")
    frame.createOrReplaceTempView(VIEW + "_l")
    directory = live_run.split_into_files(frame, tmp_path / "in", 2)
    text = LANDMARK.format(view=VIEW + "_l")
    generators = {"slack": punctuate.slack(1.5), "ordered_by": punctuate.ordered_by("k")}
    jobs = {name: live(spark, text, live_run.source(spark, directory), g) for name, g in generators.items()}
    run_in_waves(jobs, tmp_path)
    for name, generator in generators.items():
        results, late = live_run.read_output(spark, jobs[name], tmp_path / name / "out")
        expected = replay(spark, text, punctuation=generator)
        assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
        assert late.count() > 0 and results.where(F.col("emit_row").isNull()).count() > 0  # closed by the end


def test_live_landmark_window_with_where_equals_replay(spark, tmp_path):
    """WHERE after Bucket, as replay: the tuple with the stream's largest ``x`` fails WHERE and
    still decides the last window; no expression is evaluated on a tuple WHERE drops (``12 DIV n``
    with n = 0 fails the query); a sum of longs past 2**53 stays exact (marks carry NULLs)."""
    rnd = random.Random(11)
    data = [(2 * i, rnd.choice(["a", "b", None]), i * 0.5 - (rnd.uniform(0, 4) if rnd.random() < 0.3 else 0.0),
             rnd.randint(-3, 9), 2**54 + rnd.randint(0, 999)) for i in range(60)]
    data.append((200, "a", 60.0, 0, 2**54 + 1))  # the largest x, dropped by WHERE
    frame = spark.createDataFrame(data, "row_num long, k string, x double, n long, big long")
    frame.createOrReplaceTempView(VIEW + "_w")
    text = (f"SELECT k, count(*) AS c, sum(12 DIV n) AS q, sum(big) AS b FROM {VIEW}_w "
            "[RANGE UNBOUNDED SLIDE 3 WATTR x] WHERE n <> 0 GROUP BY k")
    results, late, expected = _live_and_replay(spark, text, frame, punctuate.slack(1.5), tmp_path)
    assert results.agg(F.max("wid")).first()[0] == 20  # the window of x = 60.0, which no kept tuple reaches
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)


def test_a_landmark_window_closed_beyond_the_data_is_an_error(spark, tmp_path):
    """A punctuation from the source closing windows no tuple has opened yet: which of them the
    rest of the stream opens (replay's windows run to the stream's largest) is unknown live."""
    frame = spark.createDataFrame([(0, "a", 1.0, 1, False), (1, None, 100.0, None, True), (2, "a", 2.0, 1, False),
                                   (3, "a", 200.0, 1, False)],  # after it, in the same micro-batch: too late
                                  f"row_num long, k string, x double, n long, {FLAG} boolean")
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_a")
    source = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 1))
    tuples = source.where(~F.coalesce(F.col(FLAG), F.lit(False))).drop(FLAG)
    job = live(spark, LANDMARK.format(view=VIEW + "_a"), tuples,
               punctuate.embedded(source.where(F.col(FLAG)).select("row_num", "k", "x")))
    with pytest.raises(WidError, match=r"row_num 1 closes window 32 of a landmark window, beyond the stream's "
                                       r"largest window so far \(0\)"):
        live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))


SESSIONS = ("SELECT k, count(*) AS n, sum(v) AS total, avg(d) AS exact, max(x) AS hi FROM {view} "
            "[SESSION 1.5 WATTR x] GROUP BY k")


#: Window clause (or a Flink discretization for ``[flink]``) -> WHERE: SPL subwindows on two
#: buckets, a clock shared by all (one bucket, the end's flush), punctuation rows with partition
#: eviction; Flink per-group buffers on two buckets, and an active time TP whose ticks fire in
#: every buffer on the first row of any at or after them.
OPERATIONAL = [
    ("sliding, count(4), count(2) partitioned BY k", None, ""),
    ("tumbling, time(2) partitioned BY k", None, " WHERE n > 2"),
    ("tumbling, punct() partitioned BY k, partitionCount(2)", None, ""),
    ("flink", Discretization([DeltaTrigger(3, "v"), CountTrigger(5)], [CountEviction(4)], per_group=("k",)), ""),
    ("flink", Discretization([TimeTrigger(1.5), CountTrigger(4)], [TimeEviction(3)], per_group=("k",)), ""),
]


def test_live_operational_windows_equal_replay(spark, tmp_path):
    """SPL and Flink windows fire as the operator's buffers do, whatever the micro-batches: each
    window emitted when it fires, with its tuples then (WHERE after the buffers, as replay) and
    the firing row (NULL: the end of the stream's flush); nothing is late. A NULL partition is
    one of its own; the arrival clock has ties."""
    rnd = random.Random(13)
    rows, t = [], 0.0
    for i in range(90):
        t += rnd.choice([0.0, 0.5, 0.5, 1.0, 2.5])
        rows.append((2 * i, rnd.choice(["a", "b", None]), round(rnd.uniform(-5, 5), 2), rnd.randint(0, 9), t,
                     rnd.random() < 0.1))
    frame = spark.createDataFrame(rows, "row_num long, k string, v double, n long, arrival_ts double, punct boolean")
    frame.createOrReplaceTempView(VIEW + "_op")
    source = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2))
    texts = [f"SELECT k, count(*) AS c, sum(n) AS total, min(v) AS lo, max(v) AS hi, avg(n) AS mean "
             f"FROM {VIEW}_op [{clause}]{where} GROUP BY k" for clause, _, where in OPERATIONAL]
    jobs = {str(i): live(spark, text, source, window=window)
            for i, (text, (_, window, _)) in enumerate(zip(texts, OPERATIONAL))}
    run_in_waves(jobs, tmp_path)
    flushed = 0
    for i, (text, (_, window, _)) in enumerate(zip(texts, OPERATIONAL)):
        results, late = live_run.read_output(spark, jobs[str(i)], tmp_path / str(i) / "out")
        assert_df_equality(results, replay(spark, text, window=window).results, ignore_row_order=True,
                           ignore_nullable=True)
        assert late.count() == 0 and results.where(F.col("emit_row").isNotNull()).count() > 0
        flushed += results.where(F.col("emit_row").isNull()).count()
    assert flushed > 0  # the end of the stream emits
    with pytest.raises(WidError, match="fire on their own policies"):
        live(spark, texts[0], source, punctuate.slack(1))


def test_live_slide_by_tuple_windows_equal_replay(spark, tmp_path):
    """Slide-by-tuple windows (every 3rd tuple's ``x`` in arrival order, and every tuple's) over
    two files' micro-batches: results, ``emit_row`` and late rows are replay's, for slack (consistent,
    with WHERE: dropped tuples still define windows and punctuate) and source punctuations on a
    key or every key (windows defined after a wildcard bound passed them are lost); by rank is
    refused (its windows change with every tuple until the stream ends). ``row_num`` a nanosecond
    clock, past 2**53: late rows and ``emit_row`` exact."""
    frame = spark.createDataFrame(rows(seed=3, n=60, clock=CLOCK), COLUMNS)
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_fca")
    static = frame.where(F.col(FLAG)).select("row_num", "k", "x")
    tuples, punctuations = _split(live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2)))
    text = ("SELECT k, count(*) AS n, sum(v) AS total, avg(v) AS mean, min(x) AS lo FROM {view} "
            "[RANGE 2.5 RATTR x SLIDE {slide}] {where}GROUP BY k")
    cases = {"slack": (text.format(view=VIEW + "_fca", slide="3 ROWS SATTR row_num", where="WHERE v > 2 "),
                       punctuate.slack(1, mode="consistent"), punctuate.slack(1, mode="consistent")),
             "embedded": (text.format(view=VIEW + "_fca", slide="1 ROW SATTR row_num", where=""),
                          punctuate.embedded(punctuations), punctuate.embedded(static))}
    jobs = {name: live(spark, query, tuples, generator) for name, (query, generator, _) in cases.items()}
    run_in_waves(jobs, tmp_path)
    for name, (query, _, generator) in cases.items():
        results, late = live_run.read_output(spark, jobs[name], tmp_path / name / "out")
        expected = replay(spark, query, punctuation=generator)
        assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
        assert late.count() > 0 and results.where(F.col("emit_row").isNotNull()).count() > 0
    with pytest.raises(WidError, match="live mode supports"):
        live(spark, text.format(view=VIEW + "_fca", slide="3 ROWS SATTR rank(x)", where=""), tuples)
    with pytest.raises(WidError, match="not decimals"):  # the bins hold numbers in numpy types
        live(spark, f"SELECT avg(d) AS exact FROM {VIEW}_fca [RANGE 2.5 RATTR x SLIDE 1 ROW SATTR row_num]", tuples)


NAN = float("nan")
#: Aggregates Spark finishes differently over NaN than over NULL: count counts it, sum, avg and max
#: give NaN, min skips it unless every value is NaN.
NAN_AGGREGATES = "count(*) AS n, count(v) AS c, sum(v) AS total, avg(v) AS mean, min(v) AS lo, max(v) AS hi"
#: name -> (query, generator; "embedded": the stream's own punctuations).
NAN_QUERIES = {
    "sliding": (f"SELECT k, {NAN_AGGREGATES} FROM {VIEW}_nan [RANGE 6 SLIDE 2 WATTR x] GROUP BY k",
                "embedded"),
    "session": (f"SELECT k, {NAN_AGGREGATES} FROM {VIEW}_nan [SESSION 2 WATTR x] GROUP BY k",
                punctuate.slack(1)),
    "slide_by_tuple": (f"SELECT k, {NAN_AGGREGATES} FROM {VIEW}_nan [RANGE 4 RATTR x SLIDE 1 ROW SATTR row_num] "
                       "GROUP BY k", "embedded"),
    "spl": (f"SELECT k, {NAN_AGGREGATES} FROM {VIEW}_nan [sliding, count(4), count(2), partitioned BY k]", None),
}


def test_live_keeps_nan_apart_from_null_as_replay(spark, tmp_path):
    """A double key and a double value holding NaN, NULL and infinities: NaN is a key of its own
    (Spark's GROUP BY; a source punctuation on the NaN key binds it, one with a NULL key binds
    every key), and an aggregate takes NaN as Spark does, though pandas reads NULL and NaN alike;
    late rows carry NaN back. Live equals replay (results and late rows, NaN equal to NaN) for
    panes (sliding windows under source punctuations, sessions under slack), the slide-by-tuple
    bins (source punctuations) and an SPL scan."""
    rnd = random.Random(3)
    rows = []
    for i in range(60):
        rows.append((2 * i, rnd.choice([1.5, NAN, None]), i - (rnd.uniform(0, 12) if rnd.random() < 0.3 else 0.0),
                     rnd.choice([NAN, NAN, None, float("inf"), 1.25, -2.5, round(rnd.uniform(-9, 9), 3)]), False))
        if i % 5 == 4:
            rows.append((2 * i, [1.5, NAN, None][i % 3], i - 1.0, None, True))
    frame = spark.createDataFrame(rows, f"row_num long, k double, x double, v double, {FLAG} boolean")
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_nan")
    static = punctuate.embedded(frame.where(F.col(FLAG)).select("row_num", "k", "x"))
    tuples, punctuations = _split(live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2)))
    jobs = {name: live(spark, text, tuples, punctuate.embedded(punctuations) if generator == "embedded" else generator)
            for name, (text, generator) in NAN_QUERIES.items()}
    run_in_waves(jobs, tmp_path)
    late_nan = 0
    for name, (text, generator) in NAN_QUERIES.items():
        results, late = live_run.read_output(spark, jobs[name], tmp_path / name / "out")
        expected = replay(spark, text, punctuation=static if generator == "embedded" else generator)
        assert results.where(F.isnan("k")).count() > 0 and results.where(F.isnan("total")).count() > 0
        assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True,
                           allow_nan_equality=True)
        assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True, allow_nan_equality=True)
        late_nan += late.where(F.isnan("k") | F.isnan("v")).count()
    assert late_nan > 0


def session_rows(seed: int = 5, n: int = 90) -> list[tuple]:
    """Bursts of readings per key (``x`` with decimals, gaps between bursts longer than the
    session gap), 40 % up to 6 behind arrival, a NULL key among the keys; every 7th element a
    punctuation on a key or all keys (NULL), 1 behind arrival."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        now = i * 0.7 + 3 * (i // 6)
        x = round(now - (rnd.uniform(0, 6) if rnd.random() < 0.4 else 0.0), 3)
        d = Decimal(rnd.randint(-10 ** 14, 10 ** 14)).scaleb(-6)
        out.append((2 * i, rnd.choice(["a", "b", None]), x, rnd.randint(0, 9), d, float(now), False))
        if i % 7 == 6:
            out.append((2 * i, rnd.choice(["a", "b", None]), now - 1.0, None, None, None, True))
    return out


def test_live_sessions_equal_replay(spark, tmp_path):
    """Sessions form per key as tuples arrive (NULL a key of its own), over two files' micro-batches,
    for every kind of generator: results (``session_start``, ``session_end``, ids,
    ``emit_row``, an exact decimal avg) and late rows, with and without an id, are replay's."""
    frame = spark.createDataFrame(session_rows(), COLUMNS)
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_se")
    static = frame.where(F.col(FLAG)).select("row_num", "k", "x")
    tuples, punctuations = _split(live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2)))
    text = SESSIONS.format(view=VIEW + "_se")
    cases = {"slack": (punctuate.slack(1.5), punctuate.slack(1.5)),
             "heartbeat": (punctuate.heartbeat(3, 2, clock="arrival"),) * 2,
             "ordered_by": (punctuate.ordered_by("k"),) * 2,
             "embedded": (punctuate.embedded(punctuations), punctuate.embedded(static)),
             "end_only": (None, None)}
    jobs = {name: live(spark, text, tuples, generator) for name, (generator, _) in cases.items()}
    run_in_waves(jobs, tmp_path)
    lates = {}
    for name, (_, generator) in cases.items():
        results, late = live_run.read_output(spark, jobs[name], tmp_path / name / "out")
        expected = replay(spark, text, punctuation=generator)
        assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
        assert results.where(F.col("n") > 1).count() > 0
        assert results.where(F.col("emit_row").isNotNull()).count() > 0 or name == "end_only"
        lates[name] = (late.where(F.col("wid").isNotNull()).count(), late.where(F.col("wid").isNull()).count())
    assert lates.pop("end_only") == (0, 0) and all(not with_id and without for with_id, without in lates.values())


def test_a_late_tuple_touching_sessions_emitted_in_an_earlier_micro_batch_has_no_id(spark, tmp_path):
    """Three files of three elements; the first emits ``a``'s and the NULL key's sessions (bound
    10, on all keys), forgotten at once (allowed lateness 0, Flink's cleanup); in the second 2.2
    touches ``a``'s ``[1, 2.5)`` and 0.9 the NULL key's ``[2, 3.5)``, but their own sessions would
    end below the bound: late, no id; in the third 5.0 touches nothing below the bound (late, no
    id); the end emits ``b``'s and ``a``'s last sessions."""
    one = Decimal("0.000001")
    elements = [(0, "a", 1.0, 1, one, 0.0, False), (2, None, 2.0, 2, one, 1.0, False),
                (4, None, 10.0, None, None, None, True),
                (6, "a", 2.2, 3, one, 2.0, False), (8, None, 0.9, 4, one, 3.0, False),
                (10, "b", 11.0, 5, one, 4.0, False),
                (12, "a", 5.0, 6, one, 5.0, False), (14, "a", 20.0, 7, one, 6.0, False),
                (16, "b", 11.5, 8, one, 7.0, False)]
    frame = spark.createDataFrame(elements, COLUMNS)
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_late")
    tuples, punctuations = _split(live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 3)))
    text = SESSIONS.format(view=VIEW + "_late")
    job = live(spark, text, tuples, punctuate.embedded(punctuations))
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    results, late = live_run.read_output(spark, job, tmp_path / "out")
    expected = replay(spark, text, punctuation=punctuate.embedded(frame.where(F.col(FLAG)).select("row_num", "k", "x")))
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    assert sorted((r.row_num, r.wid) for r in late.collect()) == [(6, None), (8, None), (12, None)]
    assert sorted((r.k or "", r.wid, r.n, r.emit_row) for r in results.collect()) == [
        ("", 0, 1, 4), ("a", 0, 1, 4), ("a", 1, 1, None), ("b", 0, 2, None)]


def test_a_late_tuple_before_any_session_is_emitted_touches_none(spark, tmp_path):
    """One bucket, nothing emitted in the first file (``a``'s bound 5 is below its session at
    10); in the second, 1.0 is below the bound, its session would end below it: late, no id."""
    one = Decimal("0.000001")
    elements = [(0, "a", 10.0, 1, one, 0.0, False), (2, "a", 5.0, None, None, None, True),
                (4, "b", 20.0, 2, one, 1.0, False), (6, "a", 1.0, 3, one, 2.0, False),
                (8, "a", 11.0, 4, one, 3.0, False), (10, "b", 21.0, 5, one, 4.0, False)]
    frame = spark.createDataFrame(elements, COLUMNS)
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW + "_none")
    tuples, punctuations = _split(live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2)))
    text = SESSIONS.format(view=VIEW + "_none")
    job = live(spark, text, tuples, punctuate.embedded(punctuations), buckets=1)
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    results, late = live_run.read_output(spark, job, tmp_path / "out")
    expected = replay(spark, text, punctuation=punctuate.embedded(frame.where(F.col(FLAG)).select("row_num", "k", "x")))
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    assert [(r.row_num, r.wid) for r in late.collect()] == [(6, None)]


def test_live_sessions_on_timestamps_with_where_equal_replay(spark, tmp_path):
    """A timestamp attribute with microseconds: gaps compared in epoch microseconds,
    ``session_start``/``session_end`` timestamps; WHERE drops tuples before sessions form; a
    timestamp among the keys (the open sessions kept in the state hold it)."""
    rows = [(r, k, x, v, d, arrival) for r, k, x, v, d, arrival, flag in session_rows(seed=17) if not flag]
    frame = spark.createDataFrame(rows, "row_num long, k string, x double, v long, d decimal(20, 6), arrival double") \
        .withColumn("ts", F.timestamp_micros((F.col("x") * 1_000_000 + 1_700_000_000_000_000 + 7).cast("long"))) \
        .withColumn("kt", F.timestamp_micros(F.when(F.col("k") == "a", 1_700_000_000_000_001).when(
            F.col("k") == "b", -86_400_000_001)))
    frame.createOrReplaceTempView(VIEW + "_st")
    text = (f"SELECT k, kt, count(*) AS n, min(v) AS lo FROM {VIEW}_st [SESSION 1.5 SECONDS WATTR ts] "
            "WHERE v <> 3 GROUP BY k, kt")
    results, late, expected = _live_and_replay(spark, text, frame, punctuate.slack(1), tmp_path)
    assert results.schema["session_end"].dataType.simpleString() == "timestamp"
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    assert late.count() > 0


def test_some_generators_have_late_rows(outputs):
    lates = {name: out[0][1].count() for name, out in outputs.items() if name not in ROWS_QUERIES}
    assert lates["slack"] > 0 and lates["embedded_consistent"] > lates["embedded"] > 0 and lates["end_only"] == 0


@pytest.mark.parametrize("kind", ["sliding", "slide_by_tuple"])
def test_restart_after_a_stop_in_the_middle_gives_the_replay_output(spark, stream, tmp_path, kind):
    """Stopped once the first micro-batch is done (in the second of three), restarted from the
    checkpoint: the panes, or every tuple so far (slide-by-tuple windows closed by the end only: each needs
    the tuples of every batch)."""
    directory, _ = stream
    tuples, _ = _split(live_run.source(spark, directory))
    text, generator = (QUERY, punctuate.slack(1, mode="consistent")) if kind == "sliding" else (REMOTE[kind][0], None)
    first = live(spark, text, tuples, generator)
    done = live_run.run(live_run.start(first, tmp_path / "out", tmp_path / "checkpoint"), stop_after=1)
    assert 1 <= len(done) < 3
    again = live(spark, text, tuples, generator)
    live_run.run(live_run.start(again, tmp_path / "out", tmp_path / "checkpoint"))
    results, late = live_run.read_output(spark, again, tmp_path / "out")
    expected = replay(spark, text, punctuation=generator)
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)


def test_stop_with_flush_closes_the_open_windows_as_replay_ends(spark, stream, tmp_path):
    """Files without the end marker, a trigger every second: a flush on stop ends the stream."""
    _, everything = stream
    directory = live_run.split_into_files(everything, tmp_path / "in", 2, end=False)
    tuples, _ = _split(live_run.source(spark, directory))
    generator = punctuate.slack(1)
    job = live(spark, QUERY, tuples, generator)
    query = live_run.start(job, tmp_path / "out", tmp_path / "checkpoint", available_now=False)
    query.processAllAvailable()
    live_run.stop(query, directory, flush=True)
    results, late = live_run.read_output(spark, job, tmp_path / "out")
    expected = replay(spark, QUERY, punctuation=generator)
    assert results.where(F.col("emit_row").isNull()).count() > 0  # closed by the flush
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)


def test_row_num_going_backwards_across_micro_batches_is_an_error(spark, tmp_path):
    one = Decimal(1)
    frame = spark.createDataFrame([(10, "a", 1.0, 1, one), (11, "a", 2.0, 1, one), (5, "b", 3.0, 1, one),
                                   (12, "b", 4.0, 1, one)],
                                  "row_num long, k string, x double, v long, d decimal(20, 6)")
    directory = tmp_path / "in"
    directory.mkdir()
    for i, part in enumerate([frame.limit(2), frame.where("row_num = 5 or row_num = 12")]):
        live_run.split_into_files(part, directory / f"p{i}", 1, end=False)
        shutil.move(directory / f"p{i}" / "part-00000.parquet", directory / f"part-{i}.parquet")
        (directory / f"p{i}").rmdir()
    spark.read.parquet(str(directory)).drop("wid_end").createOrReplaceTempView(VIEW + "_bad")
    lv = live(spark, QUERY.replace(VIEW, VIEW + "_bad"), live_run.source(spark, directory), punctuate.slack(1))
    with pytest.raises(WidError, match="row_num 5 arrives after row_num 11"):
        live_run.run(live_run.start(lv, tmp_path / "out", tmp_path / "checkpoint"))


def test_a_null_row_num_is_an_error(spark, tmp_path):
    one = Decimal(1)
    frame = spark.createDataFrame([(10, "a", 1.0, 1, one), (None, "b", 2.0, 1, one), (12, "a", 3.0, 1, one)],
                                  "row_num long, k string, x double, v long, d decimal(20, 6)")
    directory = live_run.split_into_files(frame, tmp_path / "in", 1)
    lv = live(spark, QUERY, live_run.source(spark, directory), punctuate.slack(1))
    with pytest.raises(WidError, match="NULL row_num: arrival order needs one"):
        live_run.run(live_run.start(lv, tmp_path / "out", tmp_path / "checkpoint"))


def test_bad_arguments_are_named(spark, stream):
    directory, _ = stream
    tuples, _ = _split(live_run.source(spark, directory))
    with pytest.raises(WidError, match="streaming DataFrame"):
        live(spark, QUERY, spark.table(VIEW))
    with pytest.raises(WidError, match="wid.punctuate"):
        live(spark, QUERY, tuples, punctuation="slack")
    with pytest.raises(WidError, match="wid.punctuate"):  # before anything else is checked or compiled
        live(spark, "SELECT nonsense", tuples, punctuation="slack", buckets=0)
    with pytest.raises(WidError, match="ORDER BY and LIMIT"):
        live(spark, QUERY + " ORDER BY k", tuples)
    with pytest.raises(WidError, match="implied by arrival order"):
        live(spark, f"SELECT count(*) AS n FROM {VIEW} [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num]", tuples,
             punctuate.slack(1))
    with pytest.raises(WidError, match="consistent punctuation drops a late tuple from all its landmark windows"):
        live(spark, LANDMARK.format(view=VIEW).replace("sum(n)", "sum(v)"), tuples, punctuate.slack(1, mode="consistent"))
    with pytest.raises(WidError, match="not Landmark"):
        live(spark, f"SELECT count(*) AS n FROM {VIEW} [RANGE UNBOUNDED SLIDE 2 ROWS WATTR row_num]", tuples)


@pytest.mark.parametrize("path", sorted((ROOT / "plans").glob("live_*.toml")), ids=lambda p: p.stem)
def test_wid_live_runs_each_live_plan_to_the_replay_output(spark, capsys, tmp_path, path):
    """``wid live PLAN``: the plan's input split into files (2 here, not the plan's 4: a micro-batch
    costs ~0.7 s, the split is no part of the plan's query), the sink's results are replay's."""
    text = re.sub(r"^files = 4\b", "files = 2", path.read_text(), count=1, flags=re.MULTILINE)
    assert text != path.read_text()
    plan_copy = tmp_path / path.name
    plan_copy.write_text(text.replace('"../datasets/', f'"{ROOT / "datasets"}/'))
    assert main(["live", str(plan_copy), "--dir", str(tmp_path / "work")], spark=spark) == 0
    plan = Plan.load(path)
    settings = {k: v for k, v in plan.sections["live"].items() if k not in ("files", "buckets", "punctuation")}
    generator = punctuation_of(plan.sections["live"]["punctuation"], settings, plan, spark.table(plan.view))
    expected = replay(spark, plan.query, punctuation=generator, window=plan.window).results
    written = spark.read.parquet(str(tmp_path / "work" / "out")).where("kind = 'result'").select(*expected.columns)
    # a double's avg: Spark's double sums, over panes first, so equal to ~15 digits (longs, decimals: exactly)
    assert_approx_df_equality(written, expected, 1e-9, ignore_row_order=True, ignore_nullable=True)
    assert capsys.readouterr().out.startswith(f"{expected.count()} results and ")


@pytest.mark.parametrize("setting, value, shown", [("files", "0", "0"), ("files", "true", "True"),
                                                    ("files", "2.5", "2.5"), ("buckets", "0", "0")])
def test_wid_live_refuses_a_plan_whose_counts_are_no_positive_whole_numbers(spark, capsys, tmp_path, setting, value,
                                                                             shown):
    """``files = true`` is no count (TOML's true is no 1): exit 2, one line naming the plan, nothing written."""
    text = (ROOT / "plans" / "live_traffic.toml").read_text()
    text = text.replace("files = 4", f"files = 4\n{setting} = {value}" if setting != "files" else f"files = {value}")
    path = tmp_path / "plan.toml"
    path.write_text(text.replace('"../datasets/', f'"{ROOT / "datasets"}/'))
    assert main(["live", str(path), "--dir", str(tmp_path / "work")], spark=spark) == 2
    assert f"[live] {setting} must be a positive whole number, got {shown}" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()


#: Run over Spark Connect too: slide-by-tuple windows under slack, an SPL window (no generator).
REMOTE = {"slide_by_tuple": (f"SELECT k, count(*) AS n, sum(v) AS total, max(x) AS hi FROM {VIEW} "
                             "[RANGE 2.5 RATTR x SLIDE 1 ROW SATTR row_num] GROUP BY k", punctuate.slack(1)),
          "spl": (f"SELECT k, count(*) AS n, sum(v) AS total, avg(d) AS exact FROM {VIEW} "
                  "[sliding, count(4), count(2) partitioned BY k] GROUP BY k", None)}


def run_remote(url: str, directory: Path, work: Path) -> None:
    """On a Spark Connect session: slack (consistent) live over the files in ``directory``,
    sessions under slack, and the :data:`REMOTE` queries."""
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        tuples, _ = _split(live_run.source(spark, directory))
        job = live(spark, QUERY, tuples, punctuate.slack(1, mode="consistent"))
        progress = live_run.run(live_run.start(job, work / "out", work / "checkpoint"))
        if progress[-1]["stateOperators"][0]["operatorName"] == "transformWithStateExec":
            print("JVM step over Spark Connect")
        sessions = live(spark, SESSIONS.format(view=VIEW), tuples, punctuate.slack(1.5))
        live_run.run(live_run.start(sessions, work / "sessions" / "out", work / "sessions" / "checkpoint"))
        for name, (text, generator) in REMOTE.items():
            job = live(spark, text, tuples, generator)
            live_run.run(live_run.start(job, work / name / "out", work / name / "checkpoint"))
    finally:
        spark.stop()


def test_live_over_spark_connect_equals_replay(spark, connect_url, stream, tmp_path):
    directory, _ = stream
    client = subprocess.run([sys.executable, __file__, connect_url, str(directory), str(tmp_path)], env=spark_env(),
                            capture_output=True, text=True, timeout=1500)
    assert client.returncode == 0, client.stderr[-5000:]
    # the pane step ran on the server's JVM, through wid's relation plugin
    assert "uses the Python step" not in client.stderr and "JVM step over Spark Connect" in client.stdout
    tuples, _ = _split(live_run.source(spark, directory))
    job = live(spark, QUERY, tuples, punctuate.slack(1, mode="consistent"))
    results, late = live_run.read_output(spark, job, tmp_path / "out")
    expected = replay(spark, QUERY, punctuation=punctuate.slack(1, mode="consistent"))
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    text = SESSIONS.format(view=VIEW)
    results, late = live_run.read_output(spark, live(spark, text, tuples, punctuate.slack(1.5)),
                                         tmp_path / "sessions" / "out")
    expected = replay(spark, text, punctuation=punctuate.slack(1.5))
    assert results.where(F.col("n") > 1).count() > 0
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
    for name, (text, generator) in REMOTE.items():
        results, late = live_run.read_output(spark, live(spark, text, tuples, generator), tmp_path / name / "out")
        expected = replay(spark, text, punctuation=generator)
        assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)
        assert results.where(F.col("emit_row").isNotNull()).count() > 0


if __name__ == "__main__":
    run_remote(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
