"""The punctuation generators (docs/semantics.md section 7) against their definitions computed in plain Python."""

from __future__ import annotations

import math
import random

import pytest
from pyspark.sql import functions as F

from wid import punctuate
from wid.errors import WidError
from wid.compiler.query import compile_query
from wid.stream.scan import before, running

SLIDE = 5
QUERY = f"SELECT k, count(*) AS n FROM p [RANGE 10 SLIDE {SLIDE} WATTR x] GROUP BY k"


def closed(bound: float) -> int:
    """The largest window whose extent end (w+1)s <= bound."""
    return math.floor(bound / SLIDE) - 1


@pytest.fixture(scope="module")
def rows(spark):
    rnd = random.Random(11)
    data = [(3 * i, rnd.choice("xy"), i + rnd.uniform(-8, 0), i * 0.5 + rnd.uniform(0, 0.4)) for i in range(200)]
    spark.createDataFrame(data, "row_num long, k string, x double, arrival double").createOrReplaceTempView("p")
    return data


def frame(spark, generator) -> dict:
    compiled = compile_query(spark, QUERY)
    got = generator.punctuations(compiled)
    return {tuple(r) for r in got.frame.select("row_num", *got.pattern, "wid_closed").collect()}


def test_value_slack_bound_is_the_max_seen_minus_the_amount(spark, rows):
    seen, want = -math.inf, set()
    for row_num, _, x, _ in rows:
        seen = max(seen, x)
        want.add((row_num, closed(seen - 3)))
    assert frame(spark, punctuate.slack(3)) == want


def test_tuple_count_slack_lags_the_max_seen_by_n_row_nums(spark, rows):
    seen, want = -math.inf, set()
    for row_num, _, x, _ in rows:
        seen = max(seen, x)
        want.add((row_num + 10, closed(seen)))
    assert frame(spark, punctuate.slack(10, by="rows", mode="consistent")) == want


def test_heartbeat_bound_is_the_last_tick_minus_the_skew(spark, rows):
    want = {(row_num, closed(math.floor(a / 4) * 4 - 2)) for row_num, _, _, a in rows}
    assert frame(spark, punctuate.heartbeat(4, 2, clock="arrival")) == want


def test_heartbeat_clock_is_named_in_any_case(spark, rows):
    upper, lower = (frame(spark, punctuate.heartbeat(4, 2, clock=clock)) for clock in ("ARRIVAL", "arrival"))
    assert upper == lower


def test_ordered_by_punctuates_each_key_up_to_its_own_value(spark, rows):
    assert frame(spark, punctuate.ordered_by("k")) == {(r, k, closed(x)) for r, k, x, _ in rows}


def test_ordered_by_a_key_named_twice_punctuates_it_once(spark, rows):
    compiled = compile_query(spark, QUERY)
    assert punctuate.ordered_by("k", "K").punctuations(compiled).pattern == ("k",)
    assert frame(spark, punctuate.ordered_by("k", "k")) == frame(spark, punctuate.ordered_by("k"))


def test_embedded_bounds_become_wid_closed_and_null_keys_are_wildcards(spark, rows):
    given = [(5, "x", 42.0), (9, None, 17.5), (12, "y", -3.0)]
    df = spark.createDataFrame(given, "row_num long, k string, x double")
    assert frame(spark, punctuate.embedded(df)) == {(r, k, closed(b)) for r, k, b in given}


def test_embedded_bounds_of_another_number_type_are_read_as_numbers(spark, rows):
    given = [(5, "x", 42), (9, None, 17), (12, "Y", -3)]  # long bounds on the double x; keys as given
    df = spark.createDataFrame(given, "row_num int, K string, x long")
    assert frame(spark, punctuate.embedded(df)) == {(r, k, closed(b)) for r, k, b in given}


def test_embedded_null_bound_is_an_error_naming_the_punctuation(spark, rows):
    df = spark.createDataFrame([(5, None)], "row_num long, x double")
    with pytest.raises(Exception, match="NULL bound in the punctuation with row_num=5"):
        frame(spark, punctuate.embedded(df))


@pytest.mark.slow
def test_running_scan_crosses_chunks_and_partitions(spark):
    rnd = random.Random(2)
    data = [(i, rnd.choice("ab"), rnd.randint(-50, 50)) for i in range(300)]
    df = spark.createDataFrame(data, "i long, g string, v long")
    out = running(df, "v", ["i"], F.floor(F.col("i") / 7), "m", partition=("g",))
    back = running(df, "v", ["i"], F.floor(F.col("i") / 7), "m", partition=("g",), agg="min", reverse=True)
    for got, fn, order in ((out, max, data), (back, min, data[::-1])):
        want, best = set(), {}
        for i, g, v in order:
            best[g] = v if g not in best else fn(best[g], v)
            want.add((i, best[g]))
        assert {(r.i, r.m) for r in got.collect()} == want


def test_running_scan_of_separate_values_looks_up_each_point(spark):
    rnd = random.Random(3)
    values = [(rnd.randint(0, 400), rnd.choice("ab"), rnd.randint(-50, 50)) for _ in range(200)]
    points = [(rnd.randint(-10, 410), rnd.choice("abc"), n) for n in range(150)] + [(None, "a", 150)]
    after = F.lit(1).alias("kind")  # a point sees the values at its own i
    got = running(spark.createDataFrame(points, "i long, g string, n long").select("*", after), "v", ["i", "kind"],
                  F.floor(F.col("i") / 16), "m", partition=("g",),
                  values=spark.createDataFrame(values, "i long, g string, v long").select("*", F.lit(0).alias("kind")))
    want = {(n, None if i is None else max((v for j, h, v in values if h == g and j <= i), default=None))
            for i, g, n in points}  # a point with no place in the order sees nothing
    assert {(r.n, r.m) for r in got.collect()} == want


def test_before_looks_up_the_values_strictly_earlier_across_chunks_and_keys(spark):
    """``before``: the max over the values of the point's key (NULL a key) with a smaller row_num
    (and the min over those at or after it);
    row_nums spread over many 4096-row chunks, repeated, and past the last value."""
    rnd = random.Random(4)
    keys = ["a", "b", None]
    values = [(rnd.randint(0, 60_000), rnd.choice(keys), rnd.randint(-50, 50)) for _ in range(300)]
    values += [(values[0][0], values[0][1], 99)]  # two values at one row_num
    points = [(rnd.randint(0, 70_000), rnd.choice([*keys, "c"]), n) for n in range(400)]
    points += [(values[1][0], values[1][1], 400), (values[1][0] + 1, values[1][1], 401)]
    p = spark.createDataFrame(points, "row_num long, g string, n long")
    v = spark.createDataFrame(values, "row_num long, g string, v long")
    got = before(p, v, "v", "m", ("g",))
    want = {(n, max((v for j, h, v in values if h == g and j < i), default=None)) for i, g, n in points}
    assert {(r.n, r.m) for r in got.collect()} == want
    # a suffix min (at or after the point), as replay's emit_row takes it: -j < 1 - i
    back = before(p, v.select("g", "v", (-F.col("row_num")).alias("o")), "v", "m", ("g",), order="o",
                  at=1 - F.col("row_num"), agg="min")
    want = {(n, min((v for j, h, v in values if h == g and j >= i), default=None)) for i, g, n in points}
    assert {(r.n, r.m) for r in back.collect()} == want


@pytest.mark.parametrize("make, message", [
    (lambda: punctuate.slack(-1), "slack amount must be a finite number >= 0, got -1"),
    (lambda: punctuate.slack(math.inf, by="rows"), "slack amount must be a finite number >= 0, got inf"),
    (lambda: punctuate.heartbeat(math.inf, 0), "heartbeat every must be a finite number > 0, got inf"),
    (lambda: punctuate.heartbeat(2, math.inf), "heartbeat skew must be a finite number >= 0, got inf"),
    (lambda: punctuate.slack(1.5, by="rows"), "whole number"),
    (lambda: punctuate.slack(1, by="time"), "'value' or 'rows'"),
    (lambda: punctuate.heartbeat(0, 1), "heartbeat every must be a finite number > 0, got 0"),
    (lambda: punctuate.ordered_by(), "at least one key"),
    (lambda: punctuate.heartbeat(1, 1, mode="eager"), "mode must be one of"),
])
def test_bad_generator_options_are_named(make, message):
    with pytest.raises(WidError, match=message):
        make()


def test_heartbeat_clock_must_match_the_window_attribute(spark, rows):
    spark.createDataFrame([(0, "x", 1.0)], "row_num long, k string, x double").withColumn(
        "arrival_ts", F.current_timestamp()).createOrReplaceTempView("p_ts")
    with pytest.raises(WidError, match="both be timestamps or both numbers"):
        punctuate.heartbeat(1, 0).punctuations(compile_query(spark, QUERY.replace("FROM p", "FROM p_ts")))
