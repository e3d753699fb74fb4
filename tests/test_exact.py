"""Exact window membership at the edges of every number type (issue 11), against the exact
oracle (:mod:`tests.oracle`, Fractions: doubles as their binary value, clause numbers as the
decimals written), never against wid. Where ids cannot be exact, a clear error naming the row."""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction

import pytest
from pyspark.errors import PySparkException
from pyspark.sql.types import DecimalType, DoubleType, LongType, StructField, StructType

import wid
from wid.aggregate.fca import aggregate
from wid.bucket.fca import units
from wid.compiler.query import compile_query
from tests.oracle import SlideByTuple, Sliding, evaluate
from wid.errors import WidError


def _view(spark, name: str, xs: list, dtype) -> list[dict]:
    rows = [{"row_num": i, "x": x} for i, x in enumerate(xs)]
    schema = StructType([StructField("row_num", LongType()), StructField("x", dtype)])
    spark.createDataFrame([(r["row_num"], r["x"]) for r in rows], schema).createOrReplaceTempView(name)
    return rows


def _windows(spark, name: str, clause: str) -> dict:
    """``{wid: count}`` of ``SELECT count(*) ... [clause]``."""
    out = wid.query(spark, f"SELECT count(*) AS n FROM {name} [{clause}]").collect()
    return {r["wid"]: r["n"] for r in out}


def _expected(rows: list[dict], window) -> dict:
    return {r["wid"]: r["n"] for r in evaluate(rows, window, {"n": ("count", None)})}


@pytest.mark.parametrize("xs, r, s", [
    ([2**53 + 1], 3, 3),                               # above 2**53: a double division rounds
    ([2**62 - 5, 2**62 - 20], 10, 10),                 # near the top of the exact range
    ([2**60 + k for k in range(0, 30, 5)], 14, 7),     # sliding: wid_lo > wid_hi dropped every row
    ([-(2**62) + 3], 14, 7),                           # the bottom of the exact range
    ([-7, -1, 0, 7], 14, 7),                           # negatives: floor, not truncation
])
def test_longs_over_their_whole_range(spark, xs, r, s):
    rows = _view(spark, "exact_longs", xs, LongType())
    got = _windows(spark, "exact_longs", f"RANGE {r} SLIDE {s} WATTR x")
    assert got == _expected(rows, Sliding(r, s, "x"))
    assert got  # nothing lost


@pytest.mark.parametrize("x", [
    Decimal("12345678901234567890.123456789012345678"),
    Decimal("59.999999999999999999"),
    Decimal("-0.000000000000000001"),
    Decimal("60.000000000000000000"),
])
def test_decimal_38_18_tumbling(spark, x):
    rows = _view(spark, "exact_decimals", [x], DecimalType(38, 18))
    assert _windows(spark, "exact_decimals", "RANGE 60 SLIDE 60 WATTR x") == _expected(rows, Sliding(60, 60, "x"))


def test_decimal_table_rows(spark):
    """The issue's figures, worked by hand: floor(12345678901234567890.12.../60) and floor(59.99.../60)."""
    _view(spark, "exact_decimals", [Decimal("12345678901234567890.123456789012345678")], DecimalType(38, 18))
    assert set(_windows(spark, "exact_decimals", "RANGE 60 SLIDE 60 WATTR x")) == {205761315020576131}
    _view(spark, "exact_decimals", [Decimal("59.999999999999999999")], DecimalType(38, 18))
    assert set(_windows(spark, "exact_decimals", "RANGE 60 SLIDE 60 WATTR x")) == {0}


@pytest.mark.parametrize("xs, r, s", [
    ([-1e-15], "60", "60"),                 # a tiny negative is in window -1, not 0
    ([0.0], "0.3", "0.1"),                  # extent(2) = [0, 0.3): the clause numbers are decimals
    ([0.3, 0.1, 0.2, 0.7], "0.3", "0.1"),   # doubles just below the decimal boundaries they print as
    ([1e15 + 0.125], "1.5", "0.5"),         # (the oracle walks every window between the values:
    ([-1e15 - 0.5], "1.5", "0.5"),          # one value per case keeps it short)
    ([59.99999999999999, 60.0, 119.99999999999999], "60", "60"),
])
def test_doubles_against_decimal_boundaries(spark, xs, r, s):
    rows = _view(spark, "exact_doubles", xs, DoubleType())
    got = _windows(spark, "exact_doubles", f"RANGE {r} SLIDE {s} WATTR x")
    assert got == _expected(rows, Sliding(r, s, "x"))


def test_table_rows_for_doubles(spark):
    """By hand: floor(-1e-15 / 60) = -1; 0 lies in [(w+1)/10 - 3/10, (w+1)/10) for w = 0, 1, 2."""
    _view(spark, "exact_doubles", [-1e-15], DoubleType())
    assert set(_windows(spark, "exact_doubles", "RANGE 60 SLIDE 60 WATTR x")) == {-1}
    _view(spark, "exact_doubles", [0.0], DoubleType())
    assert set(_windows(spark, "exact_doubles", "RANGE 0.3 SLIDE 0.1 WATTR x")) == {0, 1, 2}


def _traffic(seed: int = 99, n: int = 400) -> list[dict]:
    rng = random.Random(seed)
    return [{"row_num": i, "seg_id": rng.choice("xyz"), "ts": round(rng.uniform(0, 2000), 2),
             "speed": round(rng.uniform(0, 100), 1)} for i in range(n)]


FCA_QUERY = ("SELECT seg_id, count(*) AS n, min(ts) AS lo FROM traffic "
             "[RANGE 60 RATTR ts SLIDE 1 ROW SATTR row_num] GROUP BY seg_id")


@pytest.fixture(scope="module")
def traffic(spark):
    rows = _traffic()
    spark.createDataFrame(rows).createOrReplaceTempView("traffic")
    expected = evaluate(rows, SlideByTuple(60, "ts"), {"n": ("count", None), "lo": ("min", "ts")}, ["seg_id"])
    return rows, {(e["seg_id"], e["wid"]): (e["n"], e["lo"]) for e in expected}


def test_issue_reproduction_window_267_68(spark, traffic):
    """The issue's case, by hand: key z, window 267.68, extent (207.68, 267.68] holds 250.72 and 251.4."""
    rows, _ = traffic
    assert sorted(r["ts"] for r in rows if r["seg_id"] == "z" and 207.68 < r["ts"] <= 267.68) == [250.72, 251.4]
    out = wid.query(spark, FCA_QUERY).where("seg_id = 'z' AND wid = 267.68").collect()
    assert [(r["n"], r["lo"]) for r in out] == [(2, 250.72)]


@pytest.mark.parametrize("method", ["bins", "sql"])
def test_slide_by_tuple_doubles_every_window(spark, traffic, method):
    """Doubles with two decimals, arrival order unrelated to ts: every (key, window) exact,
    for the bins and for the plain Spark SQL formulation."""
    _, expected = traffic
    compiled = compile_query(spark, FCA_QUERY)
    out = compiled.finish(aggregate(compiled.tagged, *units(compiled.tagged, compiled.spec), compiled.keys,
                                    compiled.aggregates, method=method)).collect()
    assert {(r["seg_id"], r["wid"]): (r["n"], r["lo"]) for r in out} == expected


@pytest.mark.slow
def test_slide_by_tuple_replay_exact_punctuations(spark, traffic):
    """Replay with punctuations that hold (a bound below every later tuple): nothing late, the
    query's exact results."""
    rows, expected = traffic
    later_min, bounds = float("inf"), []
    for r in sorted(rows, key=lambda t: -t["row_num"]):
        bounds.append({"row_num": r["row_num"], "ts": later_min})
        later_min = min(later_min, r["ts"])
    punct = spark.createDataFrame([b for b in bounds if b["ts"] != float("inf")][::7])
    rep = wid.replay(spark, FCA_QUERY, punctuation=wid.punctuate.embedded(punct))
    assert rep.late.count() == 0
    assert {(r["seg_id"], r["wid"]): (r["n"], r["lo"]) for r in rep.results.collect()} == expected


@pytest.mark.parametrize("dtype, xs, r", [
    (LongType(), [2**62 - 10, 2**62 - 3, 2**62, -(2**62)], "7"),
    (DecimalType(38, 18), [Decimal("1.000000000000000001"), Decimal("0.000000000000000001"),
                           Decimal("-0.999999999999999999"), Decimal("2.000000000000000001")], "1"),
    (DoubleType(), [0.1, 0.2, 0.30000000000000004, 0.3, -0.5, 0.625, 0.75], "0.5"),
])
def test_slide_by_tuple_types(spark, dtype, xs, r):
    rows = _view(spark, "exact_fca", xs, dtype)
    got = _windows(spark, "exact_fca", f"RANGE {r} RATTR x SLIDE 1 ROW SATTR row_num")
    assert got == _expected(rows, SlideByTuple(r, "x"))


def test_longs_whose_window_bounds_overflow_are_refused(spark):
    """x = 2**63 - 5, tumbling 10: its id 922337203685477580 fits a long, but its extent's end
    9223372036854775810 (window_end) does not: refused, naming the row, not wrapped."""
    _view(spark, "exact_longs", [2**63 - 5], LongType())
    with pytest.raises(PySparkException, match=r"'x' = 9223372036854775803 is infinite or beyond .* row_num=0"):
        _windows(spark, "exact_longs", "RANGE 10 SLIDE 10 WATTR x")


@pytest.mark.parametrize("x, message", [
    (1e300, r"'x' = 1\.0E300 is infinite or beyond .* row_num=0"),
    (float("inf"), r"'x' = Infinity is infinite or beyond .* row_num=0"),
])
def test_huge_attribute_fails_naming_the_row(spark, x, message):
    _view(spark, "exact_huge", [x], DoubleType())
    with pytest.raises(PySparkException, match=message):
        wid.query(spark, "SELECT count(*) AS n FROM exact_huge [RANGE 60 SLIDE 60 WATTR x]").collect()


@pytest.mark.parametrize("clause, message", [
    ("RANGE 1e-300 SLIDE 1e-300 WATTR x", "more than 18 decimal places"),
    ("RANGE 0.1 RATTR x SLIDE 1 ROW SATTR row_num", "not a binary fraction"),
    ("RANGE 10000000000000000000 SLIDE 1 WATTR x", "exceeds 2\\*\\*61"),
])
def test_inexact_clauses_refused(spark, clause, message):
    _view(spark, "exact_refused", [1.5], DoubleType())
    with pytest.raises(WidError, match=message):
        wid.query(spark, f"SELECT count(*) AS n FROM exact_refused [{clause}]").collect()


def test_range_in_seconds_beyond_a_long_of_microseconds(spark):
    spark.sql("SELECT 0L AS row_num, TIMESTAMP'2026-01-01 00:00:00' AS ts").createOrReplaceTempView("exact_ts")
    with pytest.raises(WidError, match="RANGE .* exceeds 2\\*\\*61"):
        wid.query(spark, "SELECT count(*) AS n FROM exact_ts [RANGE 1000000000000000000 SECONDS "
                         "SLIDE 1 SECONDS WATTR ts]").collect()


def test_fraction_oracle_sanity():
    """The oracle reads a double as its binary value and a clause number as its decimal."""
    assert Fraction(0.3) < Fraction("0.3") and Fraction("0.3") - Fraction("0.1") * 3 == 0


def test_avg_of_a_decimal_is_sparks_avg(spark):
    """avg(decimal(10, 3)) per tumbling window: the type and the digits of Spark's own avg over
    the same rows (a plain GROUP BY on the window-id, each tuple being in one window)."""
    rng = random.Random(5)
    rows = [(i, i // 3, Decimal(rng.randint(-10**6, 10**6)) / 1000) for i in range(60)]
    spark.createDataFrame(rows, "row_num long, x long, d decimal(10,3)").createOrReplaceTempView("exact_avg")
    got = wid.query(spark, "SELECT avg(d) AS m FROM exact_avg [RANGE 7 SLIDE 7 WATTR x]").select("wid", "m")
    theirs = spark.sql("SELECT floor(x / 7) AS wid, avg(d) AS m FROM exact_avg GROUP BY floor(x / 7)")
    assert got.schema["m"].dataType == theirs.schema["m"].dataType == DecimalType(14, 7)
    assert sorted(got.collect()) == sorted(theirs.collect())


@pytest.mark.parametrize("clause", [
    "RANGE 3 ROWS SLIDE 2 ROWS WATTR row_num",
    "RANGE 5 RATTR x SLIDE 2 ROWS SATTR row_num",
    "sliding, count(3), count(2)",
])
def test_duplicate_row_num_is_refused(spark, clause):
    """Arrival order decides these windows: a repeated row_num is an error naming it."""
    rows = [(i if i != 7 else 5, float(i)) for i in range(12)]
    spark.createDataFrame(rows, "row_num long, x double").repartition(3).createOrReplaceTempView("exact_dup")
    with pytest.raises(PySparkException, match="duplicate row_num=5"):
        wid.query(spark, f"SELECT count(*) AS n FROM exact_dup [{clause}]").collect()


def test_null_attribute_of_a_rank_window_is_a_plain_error(spark):
    """The positions of a rank window are read first: the NULL check fails there, naming the row
    (not inside a broadcast, where Spark would wrap it in a bare Py4JJavaError)."""
    spark.createDataFrame([(0, 1.0), (1, None), (2, 3.0)], "row_num long, x double").createOrReplaceTempView("exact_rk")
    with pytest.raises(PySparkException, match="NULL or NaN window attribute 'x' in the tuple with row_num=1"):
        wid.query(spark, "SELECT count(*) AS n FROM exact_rk [RANGE 5 RATTR x SLIDE 2 ROWS SATTR rank(x)]").collect()


def test_decimal_window_bounds_keep_the_clause_places(spark):
    """decimal(20, 0) x = -2 under ``[RANGE 3.05 SLIDE 0.1]``: window -1 is [(w+1)s - r, (w+1)s)
    = [-3.05, 0), not [-3, 0): the bounds carry the clause's decimal places."""
    _view(spark, "exact_bounds", [Decimal(-2)], DecimalType(20, 0))
    out = wid.query(spark, "SELECT count(*) AS n FROM exact_bounds [RANGE 3.05 SLIDE 0.1 WATTR x]")
    bounds = {r["wid"]: (r["window_start"], r["window_end"]) for r in out.collect()}
    assert bounds[-1] == (Decimal("-3.05"), Decimal("0.00"))
    assert bounds[-20] == (Decimal("-4.95"), Decimal("-1.90"))
    assert out.schema["window_start"].dataType == DecimalType(23, 2)
