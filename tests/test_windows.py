"""Every FCF window kind against the brute-force oracle (docs/semantics.md section 3) on seeded random streams.

Streams have gaps in ``row_num``, a shuffled physical order, negative and fractional
(dyadic: exact in floats) attribute values with duplicates and values on extent
boundaries, NULL keys and NULL values, a rare key and a key whose values are all NULL.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

import wid
from tests.oracle import Landmark, Rows, SlideByTuple, Sliding, evaluate

SCHEMA = "row_num long, k long, x double, i long, v double, ts_us long"
#: Microseconds of 2026-01-01 00:00:00 UTC.
START_US = 1_767_225_600_000_000

ALL = "count(*) AS n, count(v) AS nv, sum(v) AS total, avg(v) AS mean, min(v) AS lo, max(v) AS hi, sum(i) AS isum"
ALL_ORACLE = {
    "n": ("count", None),
    "nv": ("count", "v"),
    "total": ("sum", "v"),
    "mean": ("avg", "v"),
    "lo": ("min", "v"),
    "hi": ("max", "v"),
    "isum": ("sum", "i"),
}
ALL_COLUMNS = ["wid", "k", *ALL_ORACLE]


def stream(seed: int, n: int = 160, ts_origin_us: int = START_US) -> list[dict]:
    """``n`` tuples in a shuffled physical order: ``row_num`` unique with gaps; key ``k`` in
    {0, 1, 2, None} plus a rare 3 and a 4 whose ``v`` is always NULL; ``x`` a multiple of 0.25
    in [-20, 20] (many duplicates); ``i`` an integer; ``v`` a multiple of 0.25 or NULL; ``ts_us``
    epoch microseconds over ~10 minutes from ``ts_origin_us``, with fractional seconds."""
    rng = random.Random(seed)
    rows = []
    for row_num in rng.sample(range(3 * n), n):
        k = rng.choice([0, 0, 1, 1, 2, None, 4] + [3] * (rng.random() < 0.2))
        rows.append({
            "row_num": row_num,
            "k": k,
            "x": rng.randint(-80, 80) / 4,
            "i": rng.randint(-300, 300),
            "v": None if k == 4 or rng.random() < 0.1 else rng.randint(-40, 40) / 4,
            "ts_us": ts_origin_us + rng.randint(0, 600_000_000),
        })
    return rows


def register(spark, rows: list[dict], name: str = "s") -> list[dict]:
    """Registers ``rows`` as view ``name`` (with ``ts`` a timestamp); returns the oracle's rows
    (``ts`` in exact epoch seconds)."""
    df = spark.createDataFrame([tuple(r[c] for c in ("row_num", "k", "x", "i", "v", "ts_us")) for r in rows], SCHEMA)
    df.withColumn("ts", F.timestamp_micros("ts_us")).createOrReplaceTempView(name)
    return [{**r, "ts": Fraction(r["ts_us"], 10**6)} for r in rows]


def assert_query(spark, text: str, expected: list[dict], columns: list[str], ordered: bool = False) -> None:
    """``wid.query(text)`` has exactly ``columns``, a long ``wid``, and the rows ``expected``."""
    actual = wid.query(spark, text).drop("window_start", "window_end")  # checked in test_sqlcat
    assert actual.columns == columns
    assert actual.schema["wid"].dataType == LongType()
    schema = StructType([StructField(f.name, f.dataType, True) for f in actual.schema])
    expected_df = spark.createDataFrame([tuple(r[c] for c in columns) for r in expected], schema)
    assert_df_equality(actual, expected_df, ignore_row_order=not ordered, ignore_nullable=True)


def test_oracle_materialises_the_extents_of_the_spec():
    """Hand-worked examples of docs/semantics.md section 3 for the oracle itself (no Spark)."""
    n = {"n": ("count", None)}

    def counts(rows, window, keys=()):
        return sorted((r["wid"], *[r[c] for c in keys], r["n"]) for r in evaluate(rows, window, n))

    x3 = [{"row_num": 0, "x": 3}]
    assert counts(x3, Sliding(5, 2, "x")) == [(1, 1), (2, 1), (3, 1)]  # [2w - 3, 2w + 2) holds 3
    assert counts(x3, Sliding(1, 4, "x")) == [(0, 1)]  # [4w + 3, 4w + 4)
    assert counts([{"row_num": 0, "x": 2}], Sliding(1, 4, "x")) == []  # in the gap
    assert counts([{"row_num": 0, "x": 1}, {"row_num": 1, "x": 7}], Landmark(3, "x")) == [(0, 1), (1, 1), (2, 2)]
    gaps = [{"row_num": 10}, {"row_num": 5}, {"row_num": 30}]  # positions 1, 0, 2
    assert counts(gaps, Rows(2, 1)) == [(0, 1), (1, 2), (2, 2), (3, 1)]
    parts = [{"row_num": i, "p": p} for i, p in enumerate("abaa")]
    assert counts(parts, Rows(2, 2, pattr="p"), keys=["p"]) == [(0, "a", 2), (0, "b", 1), (1, "a", 1)]
    ordered = [{"row_num": i, "a": a} for i, a in enumerate([1, 2, 4])]
    assert counts(ordered, SlideByTuple(2, "a")) == [(1, 1), (2, 2), (4, 1)]  # {u : w - 2 < u.a <= w}
    shuffled = [{"row_num": i, "a": a} for i, a in enumerate([4, 1, 2])]
    assert counts(shuffled, SlideByTuple(2, "a", every=2)) == [(1, 1)]  # the 2nd tuple to arrive
    assert counts(shuffled, SlideByTuple(2, "a", every=2, rank=True)) == [(2, 2)]  # the 2nd smallest


VALUE_WINDOWS = [
    pytest.param("[RANGE 5 SLIDE 2 WATTR x]", Sliding(5, 2, "x"), id="sliding-range-not-multiple-of-slide"),
    pytest.param("[RANGE 2.5 SLIDE 0.75 WATTR x]", Sliding(2.5, 0.75, "x"), id="fractional-range-and-slide"),
    pytest.param("[RANGE 3 SLIDE 3 WATTR x]", Sliding(3, 3, "x"), id="tumbling"),
    pytest.param("[RANGE 2.5 MINUTES SLIDE 45 SECONDS WATTR i]", Sliding(150, 45, "i"), id="integral-in-seconds"),
]


@pytest.mark.parametrize("clause, window", VALUE_WINDOWS)
def test_value_windows_match_brute_force(spark, clause, window):
    rows = register(spark, stream(seed=len(clause)))
    expected = evaluate(rows, window, ALL_ORACLE, group_by=["k"])
    assert_query(spark, f"SELECT k, {ALL} FROM s {clause} GROUP BY k", expected, ALL_COLUMNS)


def test_hopping_gaps_and_empty_groups_yield_no_row(spark):
    """Tuples between hopping windows belong to none; a (window, group) without a tuple has no
    row; a group whose values are all NULL still counts its tuples (sum, min, avg NULL)."""
    rows = register(spark, stream(seed=11))
    expected = evaluate(rows, Sliding(1, 3, "x"), ALL_ORACLE, group_by=["k"])
    assert_query(spark, f"SELECT k, {ALL} FROM s [RANGE 1 SLIDE 3 WATTR x] GROUP BY k", expected, ALL_COLUMNS)
    assert all(r["n"] > 0 for r in expected)
    assert sum(r["n"] for r in expected) < len(rows)  # tuples in the gaps are in no window
    windows = {r["wid"] for r in expected}
    assert {r["wid"] for r in expected if r["k"] == 3} < windows  # the rare key is absent from some windows
    assert any(r["k"] == 4 and r["nv"] == 0 and r["total"] is None and r["mean"] is None for r in expected)
    assert any(r["k"] is None for r in expected)


def test_empty_stream_yields_no_row(spark):
    register(spark, [])
    assert_query(spark, "SELECT k, count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 3 WATTR x] GROUP BY k", [],
                 ["wid", "k", "n"])


def test_timestamp_windows_match_brute_force(spark):
    """Timestamps count in epoch seconds, fractional part kept, before 1970 too (minutes are
    checked against Spark's window() in test_spark_window); without GROUP BY, one row per window."""
    origin_us = -300_000_000
    rows = stream(seed=21, ts_origin_us=origin_us)
    rows = register(spark, [{**r, "ts_us": origin_us + (r["ts_us"] - origin_us) // 30} for r in rows])  # ~20 s
    expected = evaluate(rows, Sliding(1.5, 0.25, "ts"), ALL_ORACLE)
    assert_query(spark, f"SELECT {ALL} FROM s [RANGE 1.5 SECONDS SLIDE 0.25 SECONDS WATTR ts]", expected,
                 ["wid", *ALL_ORACLE])


@pytest.mark.parametrize(
    "clause, window",
    [
        pytest.param("[RANGE 7 ROWS SLIDE 3 ROWS WATTR row_num]", Rows(7, 3), id="sliding"),
        pytest.param("[RANGE 2 ROWS SLIDE 5 ROWS WATTR row_num]", Rows(2, 5), id="hopping"),
    ],
)
@pytest.mark.slow
def test_tuple_based_windows_use_arrival_positions(spark, clause, window):
    """x = 0-based position in row_num order, whatever the gaps and the physical order."""
    rows = register(spark, stream(seed=31))
    expected = evaluate(rows, window, ALL_ORACLE, group_by=["k"])
    assert_query(spark, f"SELECT k, {ALL} FROM s {clause} GROUP BY k", expected, ALL_COLUMNS)


def test_partitioned_rows_split_the_stream_first_q2_vs_q4(spark):
    """Q2: the last 10 rows of the stream, then per segment; Q4 (PATTR): the last 10 rows of each segment."""
    rows = register(spark, stream(seed=41))
    count = {"n": ("count", None), "hi": ("max", "v")}
    q2 = evaluate(rows, Rows(10, 4), count, group_by=["k"])
    q4 = evaluate(rows, Rows(10, 4, pattr="k"), count)
    assert_query(spark, "SELECT k, count(*) AS n, max(v) AS hi FROM s [RANGE 10 ROWS SLIDE 4 ROWS WATTR row_num] "
                        "GROUP BY k", q2, ["wid", "k", "n", "hi"])
    assert_query(spark, "SELECT k, count(*) AS n, max(v) AS hi FROM s "
                        "[RANGE 10 ROWS SLIDE 4 ROWS WATTR row_num PATTR k]", q4, ["wid", "k", "n", "hi"])
    assert sorted(map(str, q2)) != sorted(map(str, q4))
    assert all(r["n"] <= 10 for r in q4) and any(r["n"] == 10 for r in q4)


def test_partition_column_only_when_selected(spark):
    rows = register(spark, stream(seed=42))
    expected = evaluate(rows, Rows(6, 6, pattr="k"), {"n": ("count", None)})  # tumbling
    assert_query(spark, "SELECT count(*) AS n FROM s [RANGE 6 ROWS SLIDE 6 ROWS WATTR row_num PATTR k]",
                 expected, ["wid", "n"])


@pytest.mark.parametrize(
    "clause, window",
    [
        pytest.param("[RANGE UNBOUNDED SLIDE 3 WATTR x]", Landmark(3, "x"), id="value"),
        pytest.param("[RANGE UNBOUNDED SLIDE 25 ROWS WATTR row_num]", Landmark(25, "row_num", rows=True), id="rows"),
    ],
)
@pytest.mark.slow
def test_landmark_windows_run_to_the_largest_value(spark, clause, window):
    rows = register(spark, stream(seed=51))
    expected = evaluate(rows, window, ALL_ORACLE, group_by=["k"])
    assert_query(spark, f"SELECT k, {ALL} FROM s {clause} GROUP BY k", expected, ALL_COLUMNS)
    last = max(r["wid"] for r in expected)
    assert {r["k"] for r in expected if r["wid"] == last} == {r["k"] for r in rows}  # every group reaches the end


def test_where_filters_inside_the_extents_after_positions(spark):
    """A ROWS window numbers all tuples; WHERE then keeps some of each extent."""
    rows = register(spark, stream(seed=61))
    expected = evaluate(rows, Rows(8, 3), ALL_ORACLE, group_by=["k"], where=lambda t: t["v"] is not None and t["v"] > 0)
    assert_query(spark, f"SELECT k, {ALL} FROM s [RANGE 8 ROWS SLIDE 3 ROWS WATTR row_num] WHERE v > 0 GROUP BY k",
                 expected, ALL_COLUMNS)


def test_expressions_in_aggregates_and_where(spark):
    rows = register(spark, stream(seed=71))
    expected = evaluate(rows, Sliding(5, 2, "x"), {
        "hi2": ("max", lambda t: None if t["v"] is None else t["v"] * 2),
        "xv": ("sum", lambda t: None if t["v"] is None else t["x"] + t["v"]),
        "neg": ("count", lambda t: 1 if t["i"] < 0 else None),
    }, group_by=["k"], where=lambda t: t["i"] % 3 != 0)
    assert_query(spark, "SELECT k, max(v * 2) AS hi2, sum(x + v) AS xv, count(CASE WHEN i < 0 THEN 1 END) AS neg "
                        "FROM s [RANGE 5 SLIDE 2 WATTR x] WHERE i % 3 != 0 GROUP BY k",
                 expected, ["wid", "k", "hi2", "xv", "neg"])


def _median(values: list) -> float | None:
    """Spark's ``percentile(c, 0.5)``: linear interpolation between the closest ranks."""
    present = sorted(v for v in values if v is not None)
    if not present:
        return None
    pos = Fraction(len(present) - 1, 2)
    lo, hi = present[math.floor(pos)], present[math.ceil(pos)]
    return float(Fraction(lo) + (pos - math.floor(pos)) * (Fraction(hi) - Fraction(lo)))


def test_non_decomposable_aggregates_fall_back_to_expansion(spark):
    rows = register(spark, stream(seed=81))
    expected = evaluate(rows, Sliding(5, 2, "x"), {
        "d": (lambda vs: len(set(vs)), "x"),
        "med": (_median, "v"),
        "n": ("count", None),
        "hi": ("max", "v"),
    }, group_by=["k"])
    assert_query(spark, "SELECT k, count(DISTINCT x) AS d, percentile(v, 0.5) AS med, count(*) AS n, max(v) AS hi "
                        "FROM s [RANGE 5 SLIDE 2 WATTR x] GROUP BY k", expected, ["wid", "k", "d", "med", "n", "hi"])


def test_output_follows_select_then_having_order_by_limit(spark):
    """Output columns follow SELECT, named by the aliases (``AS`` optional), keywords in any case;
    GROUP BY may name an alias; HAVING, ORDER BY and LIMIT apply to the output rows."""
    rows = register(spark, stream(seed=91))
    result = evaluate(rows, Sliding(6, 4, "x"), {"hi": ("max", "v"), "n": ("count", None)},
                      group_by=[lambda t: None if t["k"] is None else t["k"] % 2])
    kept = sorted(({**r, "seg": r["key0"]} for r in result if r["n"] >= 3),
                  key=lambda r: (-r["wid"], r["seg"] is not None, r["seg"] or 0))  # NULLs first, as Spark's ASC
    assert len(kept) > 7
    assert_query(spark, "select max(v) hi, k % 2 AS seg, wid, count(*) n from s [range 6 slide 4 wattr x] "
                        "group by seg having n >= 3 order by wid desc, seg limit 7",
                 kept[:7], ["hi", "seg", "wid", "n"], ordered=True)
