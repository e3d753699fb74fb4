"""SPL operational windows (seeds 000, 003, 004): worked examples, decisions, and the
compiled range-tag path and sequential scan against the event-by-event simulator."""

from __future__ import annotations

import random

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from tests.operational_sim import aggregate, simulate

import wid
from wid.errors import WidError
from wid.bucket.spl.bucket import compiled, operational_bucket, path
from wid.bucket.positions import beyond
from wid.windows.spl import Count, PartitionAge, PartitionCount, Sliding, Tumbling, TupleCount
from wid.windows.spl_clause import parse_spl

SCHEMA = "row_num long, v double, k string, arrival_ts double, punct boolean"


def stream(spark, rows, view="s"):
    full = [{"v": 0.0, "k": "a", "arrival_ts": float(r["row_num"]), "punct": False, **r} for r in rows]
    full = [{**r, "v": float(r["v"]), "arrival_ts": float(r["arrival_ts"])} for r in full]
    spark.createDataFrame([tuple(r[c.split()[0]] for c in SCHEMA.split(", ")) for r in full], SCHEMA) \
        .createOrReplaceTempView(view)
    return full


def windows(spark, clause, keyed=False):
    """{(k?, wid): sorted row_nums} of the query's windows."""
    key = "k, " if keyed else ""
    out = wid.query(spark, f"SELECT wid, {key}sort_array(collect_list(row_num)) AS ids FROM s [{clause}]")
    return {((r.k, r.wid) if keyed else r.wid): list(r.ids) for r in out.collect()}


# --- seed 003: tumbling and sliding, count(4), items 1..6 -----------------------------------

def test_tumbling_count_flushes_when_the_nth_tuple_is_inserted(spark):
    stream(spark, [{"row_num": i} for i in range(1, 7)])
    # (4,3,2,1) -> flush -> (5) (6,5); the end of the stream flushes the open (6,5)
    assert windows(spark, "tumbling, count(4)") == {0: [1, 2, 3, 4], 1: [5, 6]}
    assert windows(spark, "tumbling, count(4), aggregateIncompleteWindows(false)") == {0: [1, 2, 3, 4]}


def test_sliding_count_evicts_the_oldest_and_triggers_on_every_tuple(spark):
    stream(spark, [{"row_num": i} for i in range(1, 7)])
    assert windows(spark, "sliding, count(4)") == {
        0: [1], 1: [1, 2], 2: [1, 2, 3], 3: [1, 2, 3, 4], 4: [2, 3, 4, 5], 5: [3, 4, 5, 6]}
    assert windows(spark, "sliding, count(4), count(1)") == windows(spark, "sliding, count(4)")


def test_sliding_count_trigger_count_2(spark):
    stream(spark, [{"row_num": i} for i in range(1, 7)])
    # *(2,1) *(4,3,2,1) *(6,5,4,3)
    assert windows(spark, "sliding, count(4), count(2)") == {0: [1, 2], 1: [1, 2, 3, 4], 2: [3, 4, 5, 6]}
    # aggregatePartialWindows(false): the trigger before the window is first full is skipped
    assert windows(spark, "sliding, count(4), count(2), aggregatePartialWindows(false)") == {
        1: [1, 2, 3, 4], 2: [3, 4, 5, 6]}


PARTITIONED = "1a 2b 3a 4b 5b 6b 7a 8a 9b 10b 11a 13a"


def partitioned_stream(spark):
    stream(spark, [{"row_num": int(item[:-1]), "k": item[-1]} for item in PARTITIONED.split()])


def test_partitioned_tumbling_count(spark):
    partitioned_stream(spark)
    # a: (8,7,3,1) -> () (11) (13,11); b: (6,5,4,2) -> () (9) (10,9); the open ones flush at the end
    assert windows(spark, "tumbling, count(4) partitioned BY k", keyed=True) == {
        ("a", 0): [1, 3, 7, 8], ("a", 1): [11, 13], ("b", 0): [2, 4, 5, 6], ("b", 1): [9, 10]}


def test_partitioned_sliding_count(spark):
    partitioned_stream(spark)
    got = windows(spark, "sliding, count(4), partitioned BY k", keyed=True)
    assert [got["a", w] for w in range(6)] == [[1], [1, 3], [1, 3, 7], [1, 3, 7, 8], [3, 7, 8, 11], [7, 8, 11, 13]]
    assert [got["b", w] for w in range(6)] == [[2], [2, 4], [2, 4, 5], [2, 4, 5, 6], [4, 5, 6, 9], [5, 6, 9, 10]]
    assert len(got) == 12


# --- seed 004: time and delta eviction --------------------------------------------------------

def test_time_eviction_keeps_the_last_p_seconds(spark):
    t = 100.0
    # A@t, B@t+1, C@t+3.5, D@t+6, E@t+7.5; ticks every second from t
    stream(spark, [{"row_num": i, "arrival_ts": t + dt} for i, dt in enumerate([0, 1, 3.5, 6, 7.5], start=1)])
    got = windows(spark, "sliding, time(5.0), time(1)")
    assert got[3] == [1, 2, 3]  # at t+4: A, B, C
    assert got[6] == [3, 4]  # at t+7: A (7 s) and B (6 s) are gone, C and D remain


@pytest.mark.parametrize("route", ["columns", "scan"])
def test_a_period_a_billionth_off_a_whole_number_is_used_as_written(spark, route):
    """time(3.0000000005) keeps a tuple 3.0000000003 s old (a period rounded to 3 s would evict it)."""
    rows = stream(spark, [{"row_num": 1, "arrival_ts": 0.0}, {"row_num": 2, "arrival_ts": 3.0000000003}])
    spec = parse_spl("sliding, time(3.0000000005), count(1)")
    tagged = operational_bucket(spark.table("s"), spec, route)
    got = {w: sorted(r.row_num for r in tagged.collect() if r.wid_lo <= w <= r.wid_hi) for w in (0, 1)}
    assert got == {0: [1], 1: [1, 2]} == {wid: [r["row_num"] for r in content]
                                          for _, wid, content in simulate(rows, spec)}


def test_delta_eviction_on_a_non_monotonic_attribute_is_not_a_slide(spark):
    temps = [16.4, 16.0, 17.1, 17.6, 14.0]  # A B C D E
    stream(spark, [{"row_num": i, "v": x} for i, x in enumerate(temps, start=1)])
    got = windows(spark, "sliding, delta(v, 1.5)")
    assert got[2] == [1, 2, 3]  # 17.1 evicts nothing
    assert got[3] == [1, 3, 4]  # 17.6 - 16.0 > 1.5 evicts B, not the oldest A
    assert got[4] == [1, 3, 4, 5]  # 14.0 evicts nothing; A stays
    assert not compiled(wid_source(spark), parse_spl("sliding, delta(v, 1.5)"))


def wid_source(spark):
    return spark.table("s")


def test_delta_tumbling_flushes_before_inserting_the_tuple_beyond_delta(spark):
    stream(spark, [{"row_num": i, "v": x} for i, x in enumerate([0, 30, 60, 61, 130, 131], start=1)])
    # 61 - 0 > 60 flushes (0, 30, 60) first; 130 - 61 > 60 flushes (61); the end flushes (130, 131)
    assert windows(spark, "tumbling, delta(v, 60)") == {0: [1, 2, 3], 1: [4], 2: [5, 6]}


def test_gedik_fig2_count_and_delta_on_a_sequence_number(spark):
    stream(spark, [{"row_num": i, "v": float(i)} for i in range(8)])
    by_count = windows(spark, "sliding, count(2), count(1)")
    by_delta = windows(spark, "sliding, delta(v, 1), delta(v, 0)")
    # the delta trigger fires on the next arrival, which it excludes: one window fewer at the end
    assert by_delta == {w: ids for w, ids in by_count.items() if w < 7}
    assert windows(spark, "sliding, count(2), count(1), aggregatePartialWindows(false)") == {
        w: ids for w, ids in by_count.items() if w >= 1}


# --- decisions the seeds leave open ------------------------------------------------------------

def test_delta_trigger_first_reference_is_the_first_tuple_and_the_trigger_excludes_its_tuple(spark):
    stream(spark, [{"row_num": i, "v": x} for i, x in enumerate([5, 6, 8, 8.5, 10], start=1)])
    # reference 5: 8 - 5 > 2 fires on (5, 6), excluding 8; then reference 8: 10 - 8 > 2 is false
    assert windows(spark, "sliding, count(10), delta(v, 2)") == {0: [1, 2]}
    assert windows(spark, "sliding, count(10), delta(v, 1.5)") == {0: [1, 2], 1: [1, 2, 3, 4]}


def test_empty_time_windows_consume_their_number(spark):
    stream(spark, [{"row_num": i, "arrival_ts": x} for i, x in enumerate([0, 0.5, 1, 3.2, 3.9], start=1)])
    # ticks at 1, 2, 3, 4; window [1, 2) and [2, 3) hold (3) and nothing; the open [3, 4) flushes at the end
    assert windows(spark, "tumbling, time(1)") == {0: [1, 2], 1: [3], 3: [4, 5]}
    assert windows(spark, "tumbling, time(1), aggregateIncompleteWindows(false)") == {0: [1, 2], 1: [3]}


def test_punctuations_flush_tumbling_windows(spark):
    marks = [False, False, True, False, True, True, False]
    stream(spark, [{"row_num": i, "punct": m} for i, m in enumerate(marks, start=1)])
    # 1 2 | 4 | | 7: the empty window between two punctuations yields no row
    assert windows(spark, "tumbling, punct()") == {0: [1, 2], 1: [4], 3: [7]}
    assert windows(spark, "tumbling, punct(), aggregateIncompleteWindows(false)") == {0: [1, 2], 1: [4]}


def test_partition_age_counts_insertions_only(spark):
    rows = [("a", 0), ("b", 1), ("a", 2), ("b", 5), ("a", 6), ("a", 6.5)]
    stream(spark, [{"row_num": i, "k": k, "arrival_ts": float(t)} for i, (k, t) in enumerate(rows, start=1)])
    # idle times at each arrival stay <= 4.5 s: nothing is deleted
    got = windows(spark, "tumbling, count(3) partitioned BY k, partitionAge(4.5)", keyed=True)
    assert got == {("a", 0): [1, 3, 5], ("a", 1): [6], ("b", 0): [2, 4]}
    # age 2.5: when b arrives at 5, a (last insertion at 2) and b (at 1) are deleted with their
    # tuples 1, 3 and 2; b restarts with 4 and a with 5
    got = windows(spark, "tumbling, count(3) partitioned BY k, partitionAge(2.5)", keyed=True)
    assert got == {("a", 0): [5, 6], ("b", 0): [4]}


def test_partition_count_evicts_the_least_recently_inserted(spark):
    partitioned_stream(spark)
    got = windows(spark, "sliding, count(2), partitioned BY k, partitionCount(1)", keyed=True)
    # every switch of partition deletes the other one; b's numbering continues after it comes back
    assert got[("a", 0)] == [1] and got[("b", 0)] == [2] and got[("b", 1)] == [4] and got[("b", 2)] == [4, 5]


@pytest.mark.slow
def test_paths(spark):
    stream(spark, [{"row_num": i, "v": float(i // 2)} for i in range(5)])  # v non-decreasing, with ties
    source = spark.table("s")
    paths = {
        "columns": ["tumbling, count(4)", "tumbling, time(2)", "tumbling, punct()", "sliding, count(4), count(2)",
                    "sliding, time(5), count(1)", "sliding, count(100), time(60)", "sliding, time(5), time(1)",
                    "sliding, count(4) partitioned BY k"],
        "chain": ["tumbling, delta(v, 2)", "sliding, delta(v, 1.5)", "sliding, delta(v, 0.3), count(2)", "sliding, count(4), delta(v, 1)", "sliding, delta(v, 3), delta(v, 0)",
                  "sliding, time(3), delta(v, 1) partitioned BY k"],
        "scan": ["sliding, delta(v, 2), time(1)", "sliding, count(4) partitioned BY k, tupleCount(10)",
                 "tumbling, delta(v, 2) partitioned BY k, partitionCount(1)"],
    }
    for expected, clauses in paths.items():
        for clause in clauses:
            assert path(source, parse_spl(clause)) == expected, clause
            assert compiled(source, parse_spl(clause)) == (expected != "scan"), clause
    stream(spark, [{"row_num": i, "v": float(x)} for i, x in enumerate([0, 3, 2, 5])])  # v decreases once
    for clause in paths["chain"] + ["sliding, delta(v, 1.5)"]:
        assert path(spark.table("s"), parse_spl(clause)) == "scan", clause


@pytest.mark.parametrize("clause, message", [
    ("tumbling", "one eviction policy"),
    ("sliding, punct()", "punct() is a tumbling policy"),
    ("sliding, count(0)", "positive whole number"),
    ("sliding, count(2.5)", "whole number"),
    ("tumbling, time(-1)", "time(p) must be a finite number > 0, got -1"),
    ("tumbling, time(" + "9" * 400 + ")", "time(p) must be a finite number > 0, got 9999...999"),
    ("tumbling, sizeof(3)", "unknown policy"),
    ("tumbling, count(4), partitioned", "partitioned BY col"),
    ("tumbling, count(4), partitionAge(3)", "needs a partitioned window"),
    ("tumbling, count(4) partitioned BY k, partitionCount(0)", "partitionCount(c) must be a positive whole number"),
    ("tumbling, count(4) partitioned BY k, tupleCount(2.5)", "tupleCount needs a whole number"),
    ("sliding, time(4), aggregatePartialWindows(false)", "count(n) eviction"),
    ("tumbling, count(2), aggregatePartialWindows(false)", "aggregateIncompleteWindows"),
    ("sliding, count(1), count(1), count(1)", "optional trigger"),
])
def test_malformed_clauses(clause, message):
    with pytest.raises(WidError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_spl(clause)


@pytest.mark.parametrize("policy, value, message", [
    *[(PartitionAge, v, r"partitionAge\(s\) must be a finite number >= 0")
      for v in (True, float("nan"), float("inf"), -1)],
    (TupleCount, 2.5, r"tupleCount\(t\) must be a positive whole number, got 2.5"),
    (PartitionCount, True, r"partitionCount\(c\) must be a positive whole number, got True"),
    (lambda v: Tumbling(eviction=Count(2), incomplete=v), "no", r"aggregateIncompleteWindows must be true or false"),
    (lambda v: Sliding(v, eviction=Count(2)), Count(3), r"partition_by must be column names, got Count\(n=3\) "
                                                        r"\(given positionally\?"),
])
def test_policies_and_options_name_their_bad_argument(policy, value, message):
    with pytest.raises(WidError, match=message):
        policy(value)


def test_partition_by_takes_one_column_name_or_a_list():
    assert Sliding("k", eviction=Count(2)).partition_by == Sliding(["k"], eviction=Count(2)).partition_by == ("k",)


def test_bad_streams_are_reported(spark):
    stream(spark, [{"row_num": 1, "arrival_ts": 5.0}, {"row_num": 2, "arrival_ts": 4.0}])
    with pytest.raises(Exception, match="arrival_ts decreases"):
        wid.query(spark, "SELECT wid, count(*) AS n FROM s [tumbling, time(1)]").collect()
    with pytest.raises(WidError, match="unknown column 'w'"):
        wid.query(spark, "SELECT wid, count(*) AS n FROM s [sliding, delta(w, 1)]")
    with pytest.raises(WidError, match="must be boolean"):
        wid.query(spark, "SELECT wid, count(*) AS n FROM s [tumbling, punct(k)]")


# --- random differential tests: the engine against the simulator --------------------------------

FAMILIES = [
    "tumbling, count(3)", "tumbling, count(4) partitioned BY k, aggregateIncompleteWindows(false)",
    "tumbling, time(1.5)", "tumbling, time(2) partitioned BY k, aggregateIncompleteWindows(false)",
    "tumbling, delta(v, 4)", "tumbling, delta(v, 3) partitioned BY k", "tumbling, punct() partitioned BY k",
    "sliding, count(5), count(2)", "sliding, count(4), count(3) partitioned BY k, aggregatePartialWindows(false)",
    "sliding, count(6), time(1.5)", "sliding, count(3), time(1) partitioned BY k, aggregatePartialWindows(false)",
    "sliding, count(4), delta(v, 2)",
    "sliding, time(3), count(2)", "sliding, time(2.5), time(1)", "sliding, time(2), delta(v, 3) partitioned BY k",
    "sliding, delta(v, 3), count(2)", "sliding, delta(v, 2.5), time(1) partitioned BY k",
    "sliding, delta(v, 3), delta(v, 2)", "sliding, count(5), delta(v, 2), aggregatePartialWindows(false)",
    "tumbling, delta(v, 0) partitioned BY k, aggregateIncompleteWindows(false)",
    "sliding, count(3), count(1) partitioned BY k, partitionAge(2)",
    "sliding, count(3), count(2) partitioned BY k, partitionCount(2)",
    "tumbling, count(3) partitioned BY k, tupleCount(5)",
    "tumbling, punct() partitioned BY k, partitionCount(2)",
]


def random_rows(rng: random.Random, n: int, monotone: bool, punctuated: bool) -> list[dict]:
    """``n`` tuples with ``row_num`` gaps, ties and tick-aligned ``arrival_ts``, 3 partitions."""
    rows, t, v = [], 0.0, 0.0
    for i in range(n):
        t += rng.choice([0, 0.5, 0.5, 1, 2.5])
        v = v + rng.choice([0, 1, 2]) if monotone else float(rng.randint(0, 20))
        rows.append({"row_num": 3 * i + rng.randint(0, 2), "v": float(v), "k": rng.choice("abc"),
                     "arrival_ts": t, "punct": punctuated and rng.random() < 0.1})
    return rows


# the order of v matters only to delta policies: the others run once, on an unordered v
CASES = [(c, m) for c in FAMILIES for m in ([True, False] if "delta" in c else [False])]


@pytest.mark.parametrize("clause, monotone", CASES, ids=[f"{'ordered' if m else 'unordered'}-{c}" for c, m in CASES])
def test_engine_matches_the_simulator(spark, clause, monotone):
    rng = random.Random(f"{clause}/{monotone}")
    rows = stream(spark, random_rows(rng, 120, monotone, punctuated="punct" in clause))
    spec = parse_spl(clause)
    key = "k, " if spec.partition_by else ""
    out = wid.query(spark, f"SELECT wid, {key}count(*) AS n, sum(v) AS total, min(row_num) AS lo, "
                           f"max(row_num) AS hi FROM s [{clause}]")
    got = {(*([r.k] if key else []), r.wid, r.n, r.total, r.lo, r.hi) for r in out.collect()}
    expected = {(*w, ids[0], ids[-1]) for *w, ids in aggregate(simulate(rows, spec))}
    assert got == expected


CHAINS = [
    "tumbling, delta(v, 0.3)", "tumbling, delta(ts, 2.5) partitioned BY k, aggregateIncompleteWindows(false)",
    "sliding, count(4), delta(v, 0.2)", "sliding, count(5), delta(v, 0.1) partitioned BY k, aggregatePartialWindows(false)",
    "sliding, delta(v, 0.7), delta(v, 0.3)", "sliding, delta(ts, 3), delta(v, 0) partitioned BY k",
    "sliding, time(2), delta(ts, 3)", "sliding, delta(v, 0.3), count(2)", "sliding, delta(v, 0.1) partitioned BY k",
]


@pytest.mark.slow
@pytest.mark.parametrize("clause", CHAINS)
def test_delta_chain_tags_equal_the_scan(spark, clause):
    """On a non-decreasing attribute (decimal doubles, or a timestamp in microseconds) the delta
    chain tags every tuple with the same range as the event-by-event scan."""
    rng = random.Random(clause)
    rows, v = random_rows(rng, 300, monotone=False, punctuated=False), 0.0
    for row in rows:
        v = row["v"] = round(v + rng.choice([0, 0.1, 0.1, 0.2, 0.3]), 1)
    stream(spark, rows)
    source = spark.table("s").withColumn("ts", F.timestamp_seconds(F.col("v") * 5))
    spec = parse_spl(clause)
    assert path(source, spec) == "chain"
    assert_df_equality(operational_bucket(source, spec, "chain"), operational_bucket(source, spec, "scan"),
                       ignore_row_order=True)


def test_next_position_uses_the_policy_comparison_on_doubles():
    """``beyond`` (the delta chain's next link) agrees with ``v_j - v_i > d`` evaluated in doubles,
    where the binary search for ``v_i + d`` alone rounds the other way on most decimal streams."""
    rng = random.Random(7)
    for _ in range(200):
        v = np.sort([round(rng.uniform(0, 3), rng.choice([1, 2, 15])) for _ in range(rng.randint(1, 40))])
        d = rng.choice([0, 0.1, 0.2, 0.3, 1.5])
        brute = [next((j for j in range(len(v)) if v[j] - v[i] > d), len(v)) for i in range(len(v))]
        assert beyond(v, d).tolist() == brute
        brute = [next((j for j in range(len(v)) if v[i] < v[j] - d), len(v)) for i in range(len(v))]
        assert beyond(v, d, lambda later, earlier: earlier < later - d).tolist() == brute
