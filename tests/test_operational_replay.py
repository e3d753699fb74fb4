"""wid.replay of SPL windows and Flink discretizations: the operator's windows, each with the
row whose arrival fired it, against the event-by-event simulators of tests/operational_sim.py
(extended to record that row), on the seeds' worked examples and random streams."""

from __future__ import annotations

import math
import random

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from tests.operational_sim import simulate, simulate_flink

import wid
from wid import punctuate
from wid.errors import WidError
from wid.windows.flink import (CountEviction, CountTrigger, DeltaTrigger, Discretization, PunctuationEviction,
                            PunctuationTrigger, TimeEviction, TimeTrigger, TumblingEviction)
from wid.windows.spl_clause import parse_spl

SCHEMA = "row_num long, v double, k string, arrival_ts double, punct boolean"


def stream(spark, rows):
    full = [{"v": 0.0, "k": "a", "arrival_ts": float(r["row_num"]), "punct": False, **r} for r in rows]
    full = [{**r, "v": float(r["v"]), "arrival_ts": float(r["arrival_ts"])} for r in full]
    spark.createDataFrame([tuple(r[c.split()[0]] for c in SCHEMA.split(", ")) for r in full], SCHEMA) \
        .createOrReplaceTempView("s")
    return full


def replayed(spark, clause: str, window=None, keyed=False) -> set[tuple]:
    """``{(k?, wid, sorted row_nums, emit_row)}`` of the replay; its late frame is empty, with
    the stream's columns and ``wid``."""
    key = "k, " if keyed else ""
    rep = wid.replay(spark, f"SELECT wid, {key}sort_array(collect_list(row_num)) AS ids FROM s [{clause}]"
                     + (" GROUP BY k" if keyed else ""), window=window)
    assert rep.late.count() == 0 and rep.late.columns == [*spark.table("s").columns, "wid"]
    assert {r.revision for r in rep.results.collect()} <= {0}
    return {(*([r.k] if keyed else []), r.wid, tuple(r.ids), r.emit_row) for r in rep.results.collect()}


def expected(windows, fired, keyed=False) -> set[tuple]:
    return {(*(key if keyed else ()), w, tuple(sorted(t["row_num"] for t in content)), fired[(key, w)])
            for key, w, content in windows}


# --- seed 003's examples: the emitting arrival of each window -------------------------------------

@pytest.mark.parametrize("clause, rows, windows", [
    # count(4) flushes on the 4th insertion; the end of the stream flushes (5, 6)
    ("tumbling, count(4)", [{"row_num": i} for i in range(1, 7)], {(0, (1, 2, 3, 4), 4), (1, (5, 6), None)}),
    # *(2,1) *(4,3,2,1) *(6,5,4,3): the count trigger fires on the tuple just inserted
    ("sliding, count(4), count(2)", [{"row_num": i} for i in range(1, 7)],
     {(0, (1, 2), 2), (1, (1, 2, 3, 4), 4), (2, (3, 4, 5, 6), 6)}),
    # the delta trigger fires on 8 (row 3) and 10 (row 5), which it excludes
    ("sliding, count(10), delta(v, 1.5)", [{"row_num": i, "v": x} for i, x in enumerate([5, 6, 8, 8.5, 10], 1)],
     {(0, (1, 2), 3), (1, (1, 2, 3, 4), 5)}),
    # ticks at 1, 2, 3, 4: tick 1 is processed just before row 3 (arrival 1), tick 2 before row 4
    # (3.2); the open window [3, 4) flushes at the end of the stream
    ("tumbling, time(1)", [{"row_num": i, "arrival_ts": x} for i, x in enumerate([0, 0.5, 1, 3.2, 3.9], 1)],
     {(0, (1, 2), 3), (1, (3,), 4), (3, (4, 5), None)}),
    # punctuation rows 3 and 5 flush; 7 at the end
    ("tumbling, punct()",
     [{"row_num": i, "punct": m} for i, m in enumerate([False, False, True, False, True, True, False], 1)],
     {(0, (1, 2), 3), (1, (4,), 5), (3, (7,), None)}),
])
def test_spl_worked_examples(spark, clause, rows, windows):
    rows = stream(spark, rows)
    fired = {}
    simulate(rows, parse_spl(clause), fired)
    assert replayed(spark, clause) == windows == expected(simulate(rows, parse_spl(clause)), fired)


def test_flink_active_ticks_fire_on_the_first_arrival_after_them(spark):
    """Items at 1, 2, 4, 5, 9, 11, time TP every 2 from 2, EP 4: the ticks 4, 6, 8, 10 are
    processed before the items at 4 (row 2), 9 (row 4, ticks 6 and 8) and 11 (row 5); the
    end emits (9, 11)."""
    rows = stream(spark, [{"row_num": i, "arrival_ts": t} for i, t in enumerate([1, 2, 4, 5, 9, 11])])
    d = Discretization([TimeTrigger(2, delay=2, start=0)], [TimeEviction(4)])
    fired = {}
    windows = simulate_flink(rows, d, fired)
    assert replayed(spark, "flink", d) == {(0, (0, 1), 2), (1, (1, 2, 3), 4), (2, (2, 3), 4), (3, (4,), 5),
                                           (4, (4, 5), None)} == expected(windows, fired)


def random_rows(rng: random.Random, n: int) -> list[dict]:
    rows, t = [], 0.0
    for i in range(n):
        t += rng.choice([0, 0.5, 0.5, 1, 2.5])
        rows.append({"row_num": 3 * i + rng.randint(0, 2), "v": float(rng.randint(0, 20)), "k": rng.choice("abc"),
                     "arrival_ts": t, "punct": rng.random() < 0.1})
    return rows


SPL = ["tumbling, time(2) partitioned BY k", "tumbling, punct() partitioned BY k, partitionCount(2)",
       "sliding, count(4), count(3) partitioned BY k, aggregatePartialWindows(false)",
       "sliding, time(2.5), time(1)", "sliding, delta(v, 3), delta(v, 2) partitioned BY k"]


@pytest.mark.parametrize("clause", SPL)
def test_spl_replay_matches_the_simulator(spark, clause):
    rows = stream(spark, random_rows(random.Random(clause), 100))
    spec = parse_spl(clause)
    fired = {}
    windows = simulate(rows, spec, fired)
    assert any(e is None for e in fired.values()) or "sliding" in clause
    assert replayed(spark, clause, keyed=bool(spec.partition_by)) == expected(windows, fired, bool(spec.partition_by))


@pytest.mark.parametrize("dtype", ["long", "double", "string"])
def test_spl_null_partition_values_are_one_partition(spark, dtype):
    """The NULL partition value is one subwindow whatever the column's type (the scan reads a NULL
    long or double as NaN, which is never equal to itself): its windows and their firing rows."""
    rows = [{"row_num": i, "k": k, "v": 0.0} for i, k in enumerate([None, None, 1, None, 1, None, None])]
    value = str if dtype == "string" else float if dtype == "double" else int
    spark.createDataFrame([(r["row_num"], None if r["k"] is None else value(r["k"]), r["v"]) for r in rows],
                          f"row_num long, k {dtype}, v double").createOrReplaceTempView("s")
    clause = "tumbling, count(2) partitioned BY k"
    fired = {}
    windows = simulate(rows, parse_spl(clause), fired)
    got = {(None if k is None else int(k), *rest) for k, *rest in replayed(spark, clause, keyed=True)}
    assert got == expected(windows, fired, keyed=True)
    assert (None, 1, (3, 5), 5) in got


NAN = float("nan")  # one object: the simulator's dicts find it by identity, as one key


@pytest.mark.slow
@pytest.mark.parametrize("clause", ["tumbling, count(2) partitioned BY k",
                                    "tumbling, count(2) partitioned BY k, partitionCount(2)"])
def test_spl_nan_partition_is_apart_from_the_null_one(spark, clause):
    """A NaN partition value is a subwindow of its own, not the NULL one (Spark groups them apart;
    pandas reads both as NaN): windows and firing rows equal the simulator's, through the firing
    scan and through the whole-stream scan of partition eviction."""
    rng = random.Random(clause)
    rows = [{"row_num": i, "k": rng.choice([None, NAN, 1.5]), "v": rng.choice([NAN, None, float("inf"), -2.25])}
            for i in range(40)]
    stream = spark.createDataFrame([(r["row_num"], r["k"], r["v"]) for r in rows], "row_num long, k double, v double")
    stream.createOrReplaceTempView("s")
    fired = {}
    windows = simulate(rows, parse_spl(clause), fired)

    def named(rows: set[tuple]) -> set[tuple]:
        return {("NaN" if k is not None and math.isnan(k) else k, *rest) for k, *rest in rows}

    got = named(replayed(spark, clause, keyed=True))
    assert got == named(expected(windows, fired, keyed=True))
    assert {k for k, *_ in got} == {None, "NaN", 1.5}
    # values: NaN above +inf, as Spark's own aggregates over each window's tuples
    values = "count(v) AS c, sum(v) AS total, min(v) AS lo, max(v) AS hi"
    results = wid.replay(spark, f"SELECT k, collect_list(row_num) AS ids, {values} FROM s [{clause}] GROUP BY k").results
    by_spark = (results.select("wid", "k", F.explode("ids").alias("row_num")).join(stream.drop("k"), "row_num")
                .groupBy("wid", "k").agg(*[F.expr(v) for v in values.split(", ")]))
    assert_df_equality(results.select(*by_spark.columns), by_spark, ignore_row_order=True, ignore_nullable=True,
                       allow_nan_equality=True)


FLINK = [Discretization([TimeTrigger(1.5), CountTrigger(4)], [CountEviction(5)], per_group=("k",)),
         Discretization([DeltaTrigger(3, "v"), CountTrigger(5)], [TumblingEviction(), CountEviction(3)]),
         Discretization([PunctuationTrigger(), CountTrigger(6)], [PunctuationEviction(), TimeEviction(3)],
                        per_group=("k",)),
         Discretization([TimeTrigger(1, active=False)], [TimeEviction(2.5)], per_group=("k",))]


@pytest.mark.parametrize("d", FLINK, ids=[f"flink{i}" for i in range(len(FLINK))])
def test_flink_replay_matches_the_simulator(spark, d):
    rows = stream(spark, random_rows(random.Random(repr(d)), 100))
    fired = {}
    windows = simulate_flink(rows, d, fired)
    keyed = bool(d.per_group)
    assert replayed(spark, "flink", d, keyed) == expected(windows, fired, keyed)


def test_punctuations_and_lateness_do_not_apply(spark):
    stream(spark, [{"row_num": i} for i in range(4)])
    q = "SELECT count(*) AS n FROM s [tumbling, count(2)]"
    with pytest.raises(WidError, match="fire on their own policies in arrival order"):
        wid.replay(spark, q, punctuation=punctuate.slack(1))
    with pytest.raises(WidError, match="nothing is late"):
        wid.replay(spark, q, allowed_lateness=1)
