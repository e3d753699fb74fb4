"""The range aggregate against brute-force expansion in Python: short ranges (spread over
their ids directly), long ones (dyadic blocks), negative ids, NULL values, with and without keys."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wid.aggregate.partials import Aggregate
from wid.aggregate.range import DIRECT, SCANNED, SHORT, range_aggregate, range_aggregate_sql
from wid.windows.context_free import Landmark, Sliding

AGGREGATES = [Aggregate("n", "count"), Aggregate("nv", "count", "v"), Aggregate("total", "sum", "v"),
              Aggregate("mean", "avg", "v"), Aggregate("lo", "min", "v"), Aggregate("hi", "max", "v")]


def _tuples(seed: int, n: int) -> list[tuple[str, int, int, float | None]]:
    """``(k, wid_lo, wid_hi, v)``: lengths 1..3*SHORT around both sides of SHORT, lo from -40,
    integral values (exact sums) and some NULLs; ranges repeat so panes hold several tuples."""
    rng = random.Random(seed)
    ranges = [(lo, lo + rng.choice([1, 2, SHORT, SHORT + 1, 3 * SHORT, rng.randint(1, 3 * SHORT)]) - 1)
              for lo in (rng.randint(-40, 60) for _ in range(n // 3))]
    return [(rng.choice("ab"), *rng.choice(ranges), None if rng.random() < 0.1 else float(rng.randint(-9, 9)))
            for _ in range(n)]


def _expected(tuples, keyed: bool) -> set[tuple]:
    """One row per (key, wid): every tuple counted once per id of its range."""
    values: dict[tuple, list] = defaultdict(list)
    for k, lo, hi, v in tuples:
        for w in range(lo, hi + 1):
            values[(k if keyed else None, w)].append(v)
    rows = set()
    for (k, w), vs in values.items():
        present = [v for v in vs if v is not None]
        rows.add((k, w, len(vs), len(present), sum(present) if present else None,
                  sum(present) / len(present) if present else None,
                  min(present) if present else None, max(present) if present else None))
    return rows


@pytest.mark.parametrize("keyed", [True, False], ids=["keys", "no-keys"])
def test_range_aggregate_equals_expansion(spark, keyed):
    tuples = _tuples(7, 600)
    df = spark.createDataFrame(tuples, "k string, wid_lo long, wid_hi long, v double")
    keys = ["k"] if keyed else []
    out = range_aggregate(df, keys, AGGREGATES).collect()
    got = {(r["k"] if keyed else None, r["wid"], r["n"], r["nv"], r["total"], r["mean"], r["lo"], r["hi"])
           for r in out}
    assert len(out) == len(got)
    assert got == _expected(tuples, keyed)
    assert any(hi - lo >= SHORT for _, lo, hi, _ in tuples) and any(hi - lo < SHORT for _, lo, hi, _ in tuples)


@pytest.mark.parametrize("keyed", [True, False], ids=["keys", "no-keys"])
def test_short_ranges_spread_from_their_panes_as_expansion(spark, keyed):
    """A caller that bounds every range by DIRECT ids (a sliding window's ceil(r/s)): the panes
    spread straight over their ids, in wid.query's plan and in the SQL text of a view."""
    tuples = [t for t in _tuples(8, 900) if t[2] - t[1] < DIRECT]
    df = spark.createDataFrame(tuples, "k string, wid_lo long, wid_hi long, v double")
    df.createOrReplaceTempView("wid_short_ranges")
    keys = ["k"] if keyed else []
    text = range_aggregate_sql("wid_short_ranges", keys, AGGREGATES, {f.name: f.dataType for f in df.schema}, DIRECT)
    for out in (range_aggregate(df, keys, AGGREGATES, DIRECT), spark.sql(text)):
        rows = out.collect()
        got = {(r["k"] if keyed else None, r["wid"], r["n"], r["nv"], r["total"], r["mean"], r["lo"], r["hi"])
               for r in rows}
        assert len(rows) == len(got) and got == _expected(tuples, keyed)
    assert "_wid_level" not in text and "_wid_level" in range_aggregate_sql("t", keys, AGGREGATES, {}, DIRECT + 1)


def _uniform(seed: int, n: int, width: int) -> list[tuple[str, int, int, float | None]]:
    """``(k, wid_lo, wid_lo + width - 1, v)``: ``wid_lo`` from a sparse set around 0 (block starts
    ``j*width`` on both sides of 0, repeats), doubles with two decimals (sums compared with a
    tolerance) and some NULLs; key ``c`` has two panes ``2*width`` apart, ids between them in no range."""
    rng = random.Random(seed)
    starts = sorted({*rng.sample(range(-4 * width, 4 * width), 12), -2 * width, 0, width, 3 * width - 1})
    gap = [("c", lo, lo + width - 1, 1.5) for lo in (-width - 1, width - 1)]
    return gap + [(rng.choice("ab"), lo, lo + width - 1, None if rng.random() < 0.1 else round(rng.uniform(-90, 90), 2))
                  for lo in (rng.choice(starts) for _ in range(n))]


def _close(got: set[tuple], expected: set[tuple]) -> bool:
    """The same rows, but sums and means of decimals within 1e-9 (merged in another order)."""
    def key(row):
        return row[:4] + row[6:]
    apart = {key(r): r for r in expected}
    return len(got) == len(expected) and all(
        key(r) in apart and all(a == b or (a is not None and b is not None and abs(a - b) < 1e-9)
                                for a, b in zip(r, apart[key(r)])) for r in got)


@pytest.mark.parametrize("keyed,width", [(True, SCANNED + 1), (False, 3 * DIRECT + 5)], ids=["keys", "no-keys"])
def test_uniform_ranges_read_each_window_off_block_scans_as_expansion(spark, keyed, width):
    """A caller that knows every range holds exactly ``width`` ids (more than SCANNED): each id's
    panes are a block suffix and a block prefix, in wid.query's plan and in a view's SQL text; ids
    in the gaps between panes get no row. Both plans sort the panes by one long (a radix sort) first."""
    tuples = _uniform(9, 400, width)
    df = spark.createDataFrame(tuples, "k string, wid_lo long, wid_hi long, v double")
    df.createOrReplaceTempView("wid_uniform_ranges")
    keys = ["k"] if keyed else []
    text = range_aggregate_sql("wid_uniform_ranges", keys, AGGREGATES, {f.name: f.dataType for f in df.schema},
                               width, width)
    for out in (range_aggregate(df, keys, AGGREGATES, width, width), spark.sql(text)):
        rows = out.collect()
        got = {(r["k"] if keyed else None, r["wid"], r["n"], r["nv"], r["total"], r["mean"], r["lo"], r["hi"])
               for r in rows}
        assert len(rows) == len(got) and _close(got, _expected(tuples, keyed))
    assert "_wid_level" not in text and "_wid_prev" in text
    plan = range_aggregate(df, keys, AGGREGATES, width, width)._jdf.queryExecution().analyzed().toString()
    assert "_wid_prev" in plan
    for out in (range_aggregate(df, keys, AGGREGATES, width, width), spark.sql(text)):  # pre-sorted by one long
        sorts = [line for line in out._jdf.queryExecution().executedPlan().toString().splitlines() if "Sort [" in line]
        assert "pmod(wid_lo" in sorts[-1] and sorts[-1].count(" ASC ") == 1, sorts


@pytest.mark.parametrize("key", ["_wid_prev", "_wid_level", "_wid_key1", "{tagged}", "a}b{"])
def test_a_key_named_like_a_stage_column_keeps_its_rows(spark, key):
    """GROUP BY a key whose name a stage uses for its own column (the block scans', the dyadic
    blocks'), the name another key travels under, or braces (text a SQL formatter would read as
    a field), beside a second key: the rows of plain names, in every plan (block scans, the
    spread, dyadic blocks) and in a view's SQL text."""
    tuples = _uniform(10, 200, SCANNED + 1)
    expected = _expected(tuples, True)
    df = spark.createDataFrame([(k, "x", *rest) for k, *rest in tuples],
                               "k string, j string, wid_lo long, wid_hi long, v double")
    df = df.withColumnRenamed("k", key)
    df.createOrReplaceTempView("wid_stage_names")
    types = {f.name: f.dataType for f in df.schema}
    for span, width in ((SCANNED + 1, SCANNED + 1), (SCANNED + 1, None), (None, None)):
        text = range_aggregate_sql("wid_stage_names", [key, "j"], AGGREGATES, types, span, width)
        for out in (range_aggregate(df, [key, "j"], AGGREGATES, span, width), spark.sql(text)):
            assert out.columns[:3] == [key, "j", "wid"]
            got = {(r[0], r[2], r["n"], r["nv"], r["total"], r["mean"], r["lo"], r["hi"]) for r in out.collect()}
            assert _close(got, expected), (span, width)


@pytest.mark.parametrize("width,hi", [(2, None), (SCANNED + 1, SCANNED + 3)], ids=["spread", "block-scans"])
def test_a_range_of_another_width_than_the_callers_fails_the_query(spark, width, hi):
    """A caller whose ranges are not all ``width`` ids (or has a range with a NULL end) gets an error
    naming the range, not windows counted wrong nor a tuple dropped: the panes keep only ``wid_lo``,
    in wid.query's plan and in a view's SQL text."""
    df = spark.createDataFrame([("a", 0, width - 1, 1.0), ("a", 2, hi, 2.0)],
                               "k string, wid_lo long, wid_hi long, v double")
    df.createOrReplaceTempView("wid_other_width")
    text = range_aggregate_sql("wid_other_width", ["k"], AGGREGATES, {f.name: f.dataType for f in df.schema},
                               width, width)
    for out in (range_aggregate(df, ["k"], AGGREGATES, width, width), spark.sql(text)):
        with pytest.raises(Exception, match=f"ranges of {width} ids expected, met 2..{hi or 'NULL'}"):
            out.collect()


def _windows_holding(x: Fraction, r: Fraction, s: Fraction) -> int:
    """How many windows' extents ``[(w+1)s - r, (w+1)s)`` hold ``x``, counted one by one."""
    first = math.floor(x / s) - 2
    return sum((w + 1) * s - r <= x < (w + 1) * s for w in range(first, first + math.ceil(r / s) + 4))


clause = st.decimals(Decimal("0.01"), Decimal("50"), places=2)


@given(r=clause, s=clause, x=st.decimals(Decimal("-1000"), Decimal("1000"), places=6))
def test_a_sliding_window_bounds_its_ranges_by_the_most_windows_a_tuple_is_in(r, s, x):
    """``span`` against extents counted in exact Fractions: no tuple is in more windows, and the
    tuple whose ``x + r`` is a window end is in exactly that many."""
    span = Sliding(r, s, "ts").span
    r_, s_ = Fraction(r), Fraction(s)
    assert _windows_holding(Fraction(x), r_, s_) <= span
    assert _windows_holding(s_ * math.ceil(r_ / s_) - r_, r_, s_) == span
    assert Landmark(s, "ts").span is None


@given(r=clause, s=clause, x=st.decimals(Decimal("-1000"), Decimal("1000"), places=6))
def test_a_sliding_window_whose_slide_divides_its_range_puts_every_tuple_in_width_windows(r, s, x):
    """``width`` against extents counted in exact Fractions: r/s windows hold every tuple when s
    divides r; otherwise there is no width."""
    for rng in (r, s * max(1, round(r / s))):  # as drawn, and rounded to a multiple of s
        width = Sliding(rng, s, "ts").width
        if Fraction(rng) % Fraction(s):
            assert width is None
        else:
            assert width == _windows_holding(Fraction(x), Fraction(rng), Fraction(s)) == Fraction(rng) / Fraction(s)
