"""The range aggregate against brute-force expansion in Python: short ranges (spread over
their ids directly), long ones (dyadic blocks), negative ids, NULL values, with and without keys."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from wid.aggregate.range import SHORT, Aggregate, range_aggregate

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
