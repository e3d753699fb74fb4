"""Live mode's sessions under allowed lateness ``L`` (docs/semantics.md 8.4 and 8.5), as replay's:
an emitted session is kept until the bound passes its end + ``L`` (Flink's cleanup time); a
tuple touching it revises it (``revision`` + 1, ``emit_row`` the tuple once complete); an id a
merge retires gets an empty last revision; a tuple is late only when its own session would be
past cleanup. Over any split into micro-batches, and across a restart from the checkpoint, the
results (with ``revision`` and ``emit_row``) and late rows are :func:`wid.replay`'s with the same
``L``, and conserve: each tuple is in its id's last revision or late.
"""

from __future__ import annotations

import tempfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from chispa import assert_df_equality
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import wid
from wid.cli.commands import main
from wid.plan import Plan
from test_session_lateness import (FLINK_EVENTS, FLINK_QUERY, QUERY, assert_conserved, draw, flink_operator, outcome,
                                   realistic, row_of)
from wid import punctuate
from wid.errors import WidError
from wid.stream.live import run as live_run
from live_jobs import streaming_examples

FLAG = "is_punctuation"


def elements(spark, rows, puncts, x="x", x_type="double"):
    """Tuples (``row_num, k, x, v``) and embedded punctuations (``row_num, k, x``; ``k`` NULL: on
    every key) in one frame in arrival order, the punctuations flagged."""
    stream = [(t["row_num"], t["k"], t[x], t["v"], False) for t in rows] + \
             [(p["row_num"], p["k"], p[x], None, True) for p in puncts]
    return spark.createDataFrame(sorted(stream), f"row_num long, k string, {x} {x_type}, v long, {FLAG} boolean")


def bounds(frame, x="x"):
    """The punctuations of :func:`elements`' frame (a streaming one too)."""
    return frame.where(F.col(FLAG)).select("row_num", "k", x)


def live_job(spark, text, source, lateness, x="x"):
    """``wid.live`` of ``text`` over :func:`elements` streamed from ``source`` under its embedded punctuations."""
    tuples = source.where(~F.coalesce(F.col(FLAG), F.lit(False))).drop(FLAG)
    return wid.live(spark, text, tuples, punctuate.embedded(bounds(source, x)), allowed_lateness=lateness)


def assert_replayed(spark, got, frame, text, lateness, x="x"):
    """Live's ``(results, late)`` are replay's over the same elements with the same lateness."""
    expected = wid.replay(spark, text, punctuation=punctuate.embedded(bounds(frame, x)), allowed_lateness=lateness)
    results, late = got
    assert results.columns == expected.results.columns and late.columns == expected.late.columns
    assert_df_equality(results, expected.results, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(late, expected.late, ignore_row_order=True, ignore_nullable=True)


def run_live(spark, work: Path, frame, text, lateness, parts, x="x"):
    """:func:`live_job` over ``frame`` split into ``parts`` micro-batches, run to completion."""
    source = live_run.source(spark, live_run.split_into_files(frame, work / "in", parts))
    job = live_job(spark, text, source, lateness, x)
    live_run.run(live_run.start(job, work / "out", work / "checkpoint"))
    return live_run.read_output(spark, job, work / "out")


def flink_elements(spark):
    """Flink's session lateness events (:data:`FLINK_EVENTS`): ``key2`` tuples and watermarks ``W``
    as punctuations on every key with bound ``W + 1``; the tuples also as the view ``flink``."""
    rows = [{"row_num": i, "k": "key2", "ts": ts, "v": 1} for i, (kind, ts) in enumerate(FLINK_EVENTS) if kind == "e"]
    puncts = [{"row_num": i, "k": None, "ts": w + 1} for i, (kind, w) in enumerate(FLINK_EVENTS) if kind == "w"]
    frame = elements(spark, rows, puncts, "ts", "long")
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView("flink")
    return frame


def test_flinks_session_with_lateness_live_as_replay(spark, tmp_path):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithLateness (L = 10 ms) in two
    micro-batches: ``[1000, 11500)`` fires at the watermark 11501, ``[11600, 14600)`` at 14600 and
    is kept (14599 + 10 > 14600); 10000 revises it at once (``[10000, 14600)``, 2 elements, its
    ``emit_row``; testDropDueToLatenessSessionWithLatenessPurgingTrigger's same firing), 14500
    extends it, fired at 20000. Nothing late; replay's rows, columns included."""
    frame = flink_elements(spark)
    got = run_live(spark, tmp_path, frame, FLINK_QUERY, 10, 2, "ts")
    ev = FLINK_EVENTS
    assert {(r.wid, r.revision, r.session_start, r.session_end, r.n, r.emit_row) for r in got[0].collect()} == {
        (0, 0, 1000, 11500, 5, row_of(ev, ("w", 11501))), (1, 0, 11600, 14600, 1, row_of(ev, ("w", 14600))),
        (1, 1, 10000, 14600, 2, row_of(ev, ("e", 10000))), (1, 2, 10000, 17500, 3, row_of(ev, ("w", 20000)))}
    assert got[1].count() == 0
    assert_replayed(spark, got, frame, FLINK_QUERY, 10, "ts")


@pytest.mark.slow
def test_flinks_session_with_huge_lateness_retires_an_id_live_as_replay(spark, tmp_path):
    """WindowOperatorTest.testNotSideOutputDueToLatenessSessionWithHugeLateness (L = 10 s) in
    three micro-batches: 10000 bridges both kept sessions, ``[1000, 14600)`` with 7 elements
    revised at once, and id 1 retires with an empty last revision (``n`` 0, NULL extent, ``total``
    NULL) on the same row; L = 0 leaves 10000 late. Replay's rows."""
    frame = flink_elements(spark)
    got = run_live(spark, tmp_path, frame, FLINK_QUERY, 10000, 3, "ts")
    ten = row_of(FLINK_EVENTS, ("e", 10000))
    assert {tuple(r) for r in got[0].where(f"emit_row = {ten}").select("wid", "revision", "session_start",
                                                                        "session_end", "n", "total").collect()} == {
        (0, 1, 1000, 14600, 7, 7), (1, 1, None, None, 0, None)}
    assert_replayed(spark, got, frame, FLINK_QUERY, 10000, "ts")


@pytest.mark.slow
@streaming_examples(2)  # a streaming query per example
@given(st.lists(draw, min_size=1, max_size=30), st.sampled_from([1.25, 4]), st.integers(1, 3))
def test_live_is_replay_on_any_stream_and_split(spark, draws, lateness, parts):
    """Two-decimal readings out of order, duplicates, several keys, punctuations on one key or
    all, gap 2.5 (tuples at a session's end, bounds at ``end + L``), in 1 to 3 micro-batches:
    live mode's results and late rows are replay's (and Flink's merging windows'), and conserve."""
    rows, puncts = realistic(draws)
    if not rows:
        return
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows],
                          "row_num long, k string, x double, v long").createOrReplaceTempView("s")
    frame, text = elements(spark, rows, puncts), QUERY.format(gap=2.5)
    with tempfile.TemporaryDirectory() as work:
        got = run_live(spark, Path(work), frame, text, lateness, parts)
        assert_replayed(spark, got, frame, text, lateness)
        simulated = flink_operator([{**t, "kind": "t"} for t in rows] + [{**p, "kind": "p"} for p in puncts],
                                   Fraction(5, 2), Fraction(lateness))
        assert outcome(*got) == simulated
        assert_conserved(rows, *simulated)


@pytest.mark.slow
def test_live_with_lateness_restarts_from_its_checkpoint(spark, tmp_path):
    """A gap per tuple (``[SESSION g WATTR x]``, decimals) and L = 1.25: stopped after the first of three
    micro-batches (kept emitted sessions, their ids and revisions in the state), restarted from
    the checkpoint: replay's output, revisions included."""
    draws = [("tttp"[i % 4], "abc"[i % 3] if i % 5 else None, [0, 0.37, 1.25, 0][i % 4], [0, 2.5, 0, 3.07, 0.5][i % 5])
             for i in range(60)]
    rows, puncts = realistic(draws)
    gaps = {t["row_num"]: Decimal(["1.50", "2.50", "0.75"][t["row_num"] % 3]) for t in rows}
    stream = [(t["row_num"], t["k"], Decimal(f"{t['x']:.2f}"), t["v"], gaps[t["row_num"]], False) for t in rows] + \
             [(p["row_num"], p["k"], Decimal(f"{p['x']:.2f}"), None, None, True) for p in puncts]
    frame = spark.createDataFrame(sorted(stream), f"row_num long, k string, x decimal(10, 2), v long, "
                                                  f"g decimal(4, 2), {FLAG} boolean")
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView("gaps")
    text = "SELECT k, count(*) AS n, sum(v) AS total FROM gaps [SESSION g WATTR x] GROUP BY k"
    source = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 2))
    first = live_run.run(live_run.start(live_job(spark, text, source, 1.25), tmp_path / "out",
                                        tmp_path / "checkpoint"), stop_after=1)
    assert 1 <= len(first) < 3
    again = live_job(spark, text, source, 1.25)
    live_run.run(live_run.start(again, tmp_path / "out", tmp_path / "checkpoint"))
    got = live_run.read_output(spark, again, tmp_path / "out")
    assert got[0].where("revision > 0").count() > 0
    assert_replayed(spark, got, frame, text, 1.25)


def test_lateness_on_other_windows_is_refused_in_one_line(spark, tmp_path):
    """Allowed lateness live is for sessions; a sliding window's names what takes it."""
    frame = spark.createDataFrame([(0, "a", 1.5, 2, False)], f"row_num long, k string, x double, v long, {FLAG} boolean")
    frame.where(~F.col(FLAG)).drop(FLAG).createOrReplaceTempView("s")
    source = live_run.source(spark, live_run.split_into_files(frame, tmp_path / "in", 1))
    text = "SELECT k, count(*) AS n FROM s [RANGE 4 SLIDE 2 WATTR x] GROUP BY k"
    with pytest.raises(WidError, match=r"^allowed lateness in live mode is for session windows, not \w+ windows: "
                                       r"wid\.replay takes it \(allowed_lateness=\.\.\.\)$"):
        live_job(spark, text, source, 2)


@pytest.mark.slow
def test_wid_live_takes_a_plans_allowed_lateness(spark, capsys, tmp_path):
    """``wid live`` with ``allowed_lateness`` in the ``[live]`` table: plans/session_lateness.toml's
    replay (slack 2 s, L = 7 s) over its first 400 readings in two files: replay's results,
    revisions and retired ids included."""
    root = Path(__file__).resolve().parents[1]
    text = (root / "plans" / "session_lateness.toml").read_text().replace("[replay]", "[live]\nfiles = 2")
    path = tmp_path / "plan.toml"
    path.write_text(text)
    assert main(["live", str(path), "--dir", str(tmp_path / "work"), "--rows", "400"], spark=spark) == 0
    plan = Plan.load(path)
    expected = wid.replay(spark, plan.query, punctuation=punctuate.slack(2.0), allowed_lateness=7).results
    written = spark.read.parquet(str(tmp_path / "work" / "out")).where("kind = 'result'").select(*expected.columns)
    assert expected.where("revision > 0").count() > 0
    assert_df_equality(written, expected, ignore_row_order=True, ignore_nullable=True)
    assert capsys.readouterr().out.startswith(f"{expected.count()} results and ")
