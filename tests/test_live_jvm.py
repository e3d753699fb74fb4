"""Live mode's pane step on the JVM (wid.jvm, wid.stream.live.jvm): where the session has the jar
(tests/conftest.py's session, started by wid.session.local_session, does), a live query of a
sliding, tumbling, landmark or ROWS window runs ``wid.jvm.PaneStep`` in Spark's own
``transformWithState``. Its sink equals ``wid.replay`` (results with ``emit_row``, every late row)
and the Python step's on random streams, micro-batch splits, buckets and punctuation generators;
a restart from its checkpoint after a stop gives the same output; without the step (``WID_JVM=off``,
no JDK) live mode says so in one line and the Python step gives the same output.
"""

from __future__ import annotations

import logging
import random
import zipfile

import pytest
from chispa import assert_approx_df_equality, assert_df_equality
from hypothesis import example, given
from hypothesis import strategies as st
from live_jobs import run_in_waves, streaming_examples
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid import jvm, punctuate
from wid.stream.live import run as live_run
from wid.stream.live.job import live
from wid.stream.live.output import Live
from wid.stream.replay import replay

VIEW = "wid_live_jvm"
FLAG = "is_punctuation"
COLUMNS = f"row_num long, k string, x double, v double, n long, arrival double, {FLAG} boolean"
AGGREGATES = "count(*) AS c, sum(v) AS s, min(v) AS lo, max(x) AS hi, avg(n) AS m, sum(n) AS t"
#: Window clause -> the generators it runs under (ROWS windows punctuate themselves).
WINDOWS = {
    "[RANGE 6 SLIDE 2 WATTR x]": ("slack", "slack_consistent", "slack_rows", "heartbeat", "ordered_by", "embedded",
                                  "embedded_consistent", "end_only"),
    "[RANGE 3 SLIDE 3 WATTR x]": ("slack", "ordered_by", "embedded", "end_only"),
    "[RANGE UNBOUNDED SLIDE 3 WATTR x]": ("slack", "ordered_by", "end_only"),
    "[RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR k]": ("end_only",),
    "[RANGE 2 ROWS SLIDE 3 ROWS WATTR row_num]": ("end_only",),
}


def rows(seed: int, n: int) -> list[tuple]:
    """``(row_num, k, x, v, n, arrival, is_punctuation)``: ``x`` with two decimals, 30 % up to 4
    behind arrival, ``v`` a double with two decimals (NULL at times), a NULL key among the keys;
    every 7th element also a punctuation on a key or all keys (NULL), 1 behind arrival."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        x = round(i * 0.5 - (rnd.uniform(0, 4) if rnd.random() < 0.3 else 0.0), 2)
        v = None if rnd.random() < 0.1 else round(rnd.uniform(-9, 9), 2)
        out.append((3 * i, rnd.choice(["a", "b", "c", None]), x, v, rnd.randint(-3, 9), i * 0.5, False))
        if i % 7 == 6:
            out.append((3 * i, rnd.choice(["a", "b", None]), i * 0.5 - 1, None, None, None, True))
    return out


def generator(name: str, punctuations: DataFrame):
    return {"slack": punctuate.slack(1), "slack_consistent": punctuate.slack(1.5, mode="consistent"),
            "slack_rows": punctuate.slack(5, by="rows"), "heartbeat": punctuate.heartbeat(2, 1, clock="arrival"),
            "ordered_by": punctuate.ordered_by("k"), "embedded": punctuate.embedded(punctuations),
            "embedded_consistent": punctuate.embedded(punctuations, mode="consistent"), "end_only": None}[name]


def query(window: str, view: str = VIEW) -> str:
    """The query of the aggregates over ``window``: per key ``k`` (a ROWS window's partition, or GROUP BY)."""
    if "ROWS" in window:
        return f"SELECT {'k, ' if 'PATTR' in window else ''}{AGGREGATES} FROM {view} {window}"
    return f"SELECT k, {AGGREGATES} FROM {view} {window} GROUP BY k"


def on_jvm(job: Live) -> bool:
    """The query's stateful step is the JVM's (no Python packing, no pandas processor in its plan)."""
    plan = job.frame._jdf.queryExecution().logical().toString()
    return "TransformWithState" in plan and "MapInArrow" not in plan


def split(source: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Tuples and embedded punctuations of one streaming source (so they share its micro-batches)."""
    return (source.where(~F.coalesce(F.col(FLAG), F.lit(False))).drop(FLAG),
            source.where(F.col(FLAG)).select("row_num", "k", "x"))


def assert_same(got: tuple[DataFrame, DataFrame], expected: tuple[DataFrame, DataFrame]) -> None:
    """Results equal (sums of doubles to 1e-9: added in another order), late rows exactly."""
    assert got[0].columns == expected[0].columns and got[1].columns == expected[1].columns
    assert_approx_df_equality(got[0], expected[0], 1e-9, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(got[1], expected[1], ignore_row_order=True, ignore_nullable=True)


CASES = [(window, name) for window, names in WINDOWS.items() for name in names]


@pytest.mark.slow
@streaming_examples(2)  # + the 2 explicit examples; 2 queries each
@given(case=st.sampled_from(CASES), seed=st.integers(0, 10**6), parts=st.integers(1, 4), buckets=st.integers(1, 3))
@example(case=("[RANGE UNBOUNDED SLIDE 3 WATTR x]", "slack"), seed=3, parts=3, buckets=3)  # both columns spread
@example(case=("[RANGE 2 ROWS SLIDE 3 ROWS WATTR row_num]", "end_only"), seed=4, parts=3, buckets=2)  # one bucket counts
def test_jvm_step_equals_replay_and_the_python_step(spark, tmp_path_factory, case, seed, parts, buckets):
    window, name = case
    everything = spark.createDataFrame(rows(seed, 60), COLUMNS)
    everything.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView(VIEW)
    work = tmp_path_factory.mktemp("jvm")
    tuples, punctuations = split(live_run.source(spark, live_run.split_into_files(everything, work / "in", parts)))
    text = query(window)
    jobs = {"jvm": live(spark, text, tuples, generator(name, punctuations), buckets=buckets)}
    with jvm.python_step():
        jobs["python"] = live(spark, text, tuples, generator(name, punctuations), buckets=buckets)
    assert on_jvm(jobs["jvm"]) and not on_jvm(jobs["python"])
    run_in_waves(jobs, work)
    out = {n: live_run.read_output(spark, job, work / n / "out") for n, job in jobs.items()}
    expected = replay(spark, text, punctuation=generator(name, everything.where(F.col(FLAG)).select("row_num", "k", "x")))
    assert_same(out["jvm"], (expected.results, expected.late))
    assert_same(out["jvm"], out["python"])


@pytest.mark.slow
def test_jvm_step_restarts_from_its_checkpoint_after_a_stop(spark, tmp_path):
    """Stopped once two micro-batches are done, restarted: the panes, bounds, ROWS counts and
    pending marks come back from the checkpoint (a sliding window under slack, a ROWS window)."""
    everything = spark.createDataFrame(rows(11, 80), COLUMNS).where(~F.col(FLAG)).drop(FLAG)
    everything.createOrReplaceTempView(VIEW + "_r")
    tuples = live_run.source(spark, live_run.split_into_files(everything, tmp_path / "in", 4))
    for window, punctuation in [("[RANGE 6 SLIDE 2 WATTR x]", punctuate.slack(1)),
                                ("[RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR k]", None)]:
        text, sink, checkpoint = query(window, VIEW + "_r"), tmp_path / window / "out", tmp_path / window / "cp"
        first = live(spark, text, tuples, punctuation)
        assert on_jvm(first)
        assert 2 <= len(live_run.run(live_run.start(first, sink, checkpoint), stop_after=2)) < 5
        again = live(spark, text, tuples, punctuation)
        live_run.run(live_run.start(again, sink, checkpoint))
        expected = replay(spark, text, punctuation=punctuation)
        assert_same(live_run.read_output(spark, again, sink), (expected.results, expected.late))


@pytest.mark.slow
def test_without_the_jvm_step_live_mode_says_so_in_one_line_and_runs_the_python_step(spark, monkeypatch, caplog,
                                                                                     tmp_path):
    everything = spark.createDataFrame(rows(5, 40), COLUMNS).where(~F.col(FLAG)).drop(FLAG)
    everything.createOrReplaceTempView(VIEW + "_f")
    text = query("[RANGE 6 SLIDE 2 WATTR x]", VIEW + "_f")
    tuples = live_run.source(spark, live_run.split_into_files(everything, tmp_path / "in", 2))
    monkeypatch.setenv(jvm.SWITCH, "off")
    with caplog.at_level(logging.WARNING, logger="wid.live"):
        job = live(spark, text, tuples, punctuate.slack(1))
    assert [r.getMessage() for r in caplog.records] == ["wid: live mode uses the Python step: WID_JVM=off"]
    assert not on_jvm(job)
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    expected = replay(spark, text, punctuation=punctuate.slack(1))
    assert_same(live_run.read_output(spark, job, tmp_path / "out"), (expected.results, expected.late))


def test_without_a_jdk_there_is_no_jar_and_one_line_says_so(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("WID_JDK", str(tmp_path))  # a JDK home without bin/javac
    with caplog.at_level(logging.WARNING, logger="wid.live"):
        assert jvm.jar_path() is None
    assert len(caplog.records) == 1 and caplog.records[0].getMessage().startswith(
        "wid: no JDK (javac) found for live mode's JVM step: live mode uses the Python step")


@pytest.mark.slow
def test_the_jar_is_built_once_into_the_users_cache(monkeypatch, tmp_path):
    """Compiled against the running pyspark's jars, keyed by the wid and Spark versions."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = jvm.jar_path()
    assert jar == jvm.cached_jar() and jar.is_relative_to(tmp_path / "wid" / "jvm")
    assert "wid/jvm/PaneStep.class" in zipfile.ZipFile(jar).namelist()
    built = jar.stat().st_mtime_ns
    assert jvm.jar_path() == jar and jar.stat().st_mtime_ns == built  # not again


@pytest.mark.slow
def test_timestamps_cross_the_jvm_step_as_replay_gives_them(spark, tmp_path):
    """A timestamp window attribute with microseconds, its min and max per window and the late
    rows carrying it: the JVM step (timestamps as epoch microseconds inside) equals replay."""
    view = "wid_live_jvm_timestamps"
    micros = (F.col("x") * 1_000_000).cast("long") + F.col("row_num") % 7  # not whole seconds
    everything = (spark.createDataFrame(rows(11, 60), COLUMNS).where(~F.col(FLAG)).drop(FLAG)
                  .withColumn("t", F.timestamp_micros(micros)))
    everything.createOrReplaceTempView(view)
    text = (f"SELECT k, count(*) AS c, min(t) AS first, max(t) AS last FROM {view} "
            "[RANGE 6 SECONDS SLIDE 2 SECONDS WATTR t] GROUP BY k")
    stream = live_run.source(spark, live_run.split_into_files(everything, tmp_path / "in", 3))
    job = live(spark, text, stream, punctuate.slack(1), buckets=2)
    assert on_jvm(job)
    run_in_waves({"jvm": job}, tmp_path)
    got = live_run.read_output(spark, job, tmp_path / "jvm" / "out")
    expected = replay(spark, text, punctuation=punctuate.slack(1))
    assert expected.late.count() > 0  # late rows carry t
    assert_same(got, (expected.results, expected.late))
