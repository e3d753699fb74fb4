"""Session windows ``[SESSION g WATTR a]``: against Spark's own ``session_window`` and the
brute-force oracle (exact values), on timestamps, longs, decimals and doubles."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest
from oracle import seconds, sessions
from pyspark.sql import functions as F

import wid
from wid.errors import WidError
from wid.spec.clause import parse_window
from wid.spec.aware import Session

T0 = dt.datetime(2024, 5, 1, 8, 0, 0)


def test_clause():
    assert parse_window("SESSION 30 SECONDS WATTR ts") == Session(30, "ts")
    assert parse_window("session 2 minutes wattr ts pattr seg") == Session(120, "ts", "seg")
    assert parse_window("SESSION 1.5 WATTR x") == Session(1.5, "x")
    for bad, message in [("SESSION 0 WATTR ts", "positive"), ("SESSION 3 ROWS WATTR ts", "ROWS"),
                         ("SESSION 3 WATTR ts SLIDE 2", "not SLIDE"), ("SESSION 3", "missing WATTR"),
                         ("SESSION UNBOUNDED WATTR ts", "UNBOUNDED")]:
        with pytest.raises(WidError, match=message):
            parse_window(bad)


def _spark_vs_ours(spark, rows, gap):
    df = spark.createDataFrame(rows, "row_num long, k string, ts timestamp, v long")
    df.createOrReplaceTempView("clicks")
    ours = wid.query(spark, "SELECT k, count(*) AS n, sum(v) AS total, max(v) AS hi "
                            "FROM clicks [SESSION 30 SECONDS WATTR ts] GROUP BY k").collect()
    theirs = df.groupBy("k", F.session_window("ts", gap).alias("s")).agg(
        F.count("*").alias("n"), F.sum("v").alias("total"), F.max("v").alias("hi")).collect()
    return ({(r.k, r.session_start, r.session_end, r.n, r.total, r.hi) for r in ours},
            {(r.k, r.s.start, r.s.end, r.n, r.total, r.hi) for r in theirs}, ours)


def test_matches_sparks_session_window(spark):
    """Same rows, same sessions and aggregates as ``session_window(ts, '30 seconds')`` when no
    two consecutive tuples of a key are exactly 30 s apart."""
    rng = random.Random(7)
    rows = [(i, rng.choice("abc"), T0 + dt.timedelta(microseconds=rng.randint(0, 8 * 10**9)), rng.randint(0, 9))
            for i in range(300)]
    for k in "abc":
        ts = sorted(r[2] for r in rows if r[1] == k)
        assert all(b - a != dt.timedelta(seconds=30) for a, b in zip(ts, ts[1:]))
    got, expected, ours = _spark_vs_ours(spark, rows, "30 seconds")
    assert got == expected and 20 < len(got) < 280
    ids = {}
    for r in ours:
        ids.setdefault(r.k, []).append((r.session_start, r.wid))
    assert all([w for _, w in sorted(v)] == list(range(len(v))) for v in ids.values())  # per key, in order


def test_a_tuple_exactly_g_after_the_last_opens_a_new_session(spark):
    """docs/semantics.md 3.10: the next tuple joins iff ``a < previous a + g``; Spark's ``session_window`` also merges
    at ``a = previous a + g`` (its sessions touch), so on microsecond timestamps ours equal
    Spark's with the gap 1 us shorter (ends 1 us earlier)."""
    rng = random.Random(8)
    rows = [(i, rng.choice("ab"), T0 + dt.timedelta(microseconds=rng.randint(0, 300) * 10_000_000
                                                     + rng.choice([0, 0, 1, -1])), 1) for i in range(200)]
    got, same_gap, _ = _spark_vs_ours(spark, rows, "30 seconds")
    assert got != same_gap  # the ties at exactly 30 s
    _, shorter, _ = _spark_vs_ours(spark, rows, "29999999 microseconds")
    micro = dt.timedelta(microseconds=1)
    assert got == {(k, start, end + micro, *rest) for k, start, end, *rest in shorter}


def _check_against_oracle(spark, rows, schema, gap, clause, keys=("k",)):
    spark.createDataFrame(rows, schema).createOrReplaceTempView("s")
    names = schema.split(", ")
    dicts = [dict(zip([n.split()[0] for n in names], r)) for r in rows]
    group = f" GROUP BY {', '.join(keys)}" if keys and "PATTR" not in clause else ""
    out = wid.query(spark, f"SELECT {', '.join(keys)}, count(*) AS n, sum(v) AS total, min(row_num) AS first "
                           f"FROM s [{clause}]{group}").collect()
    got = {(tuple(r[k] for k in keys), r.wid, r.n, r.total, r.first, seconds(r.session_start)) for r in out}
    expected = {(key, w, len(run), sum(t["v"] for t in run), min(t["row_num"] for t in run), seconds(run[0]["x"]))
                for key, w, run in sessions(dicts, gap, "x", keys)}
    assert got == expected
    return out


def test_doubles_decide_each_gap_exactly(spark):
    """Pairs whose difference rounds to the gap in double arithmetic but is below it (or above)."""
    g = 0.3
    pairs = []
    for base in (0.01, 0.02, 0.05, 0.001, 1e-05, 0.013, 0.1, 0.7, 1e6 + 0.1):
        b = base + g
        for _ in range(3):
            b = math.nextafter(b, -math.inf)
        for _ in range(7):
            pairs.append((base, b))
            b = math.nextafter(b, math.inf)
    close = [(a, b) for a, b in pairs if b - a == g]
    assert any(Fraction(b) - Fraction(a) < Fraction(g) for a, b in close)  # (0.05, 0.35): one session
    assert any(Fraction(b) - Fraction(a) > Fraction(g) for a, b in close)
    rows = [(2 * i + j, f"k{i}", x, 1) for i, pair in enumerate(pairs) for j, x in enumerate(pair)]
    _check_against_oracle(spark, rows, "row_num long, k string, x double, v long", Fraction(g), "SESSION 0.3 WATTR x")


def test_longs_decimals_and_pattr(spark):
    rng = random.Random(3)
    longs = [(i, rng.choice("ab"), rng.randint(0, 60), rng.randint(1, 5)) for i in range(120)]
    _check_against_oracle(spark, longs, "row_num long, k string, x long, v long", Fraction(5), "SESSION 5 WATTR x")
    _check_against_oracle(spark, longs, "row_num long, k string, x long, v long", Fraction(5, 2),
                          "SESSION 2.5 WATTR x PATTR k")
    decimals = [(i, rng.choice("ab"), Decimal(rng.randint(0, 300)) / 10, rng.randint(1, 5)) for i in range(120)]
    out = _check_against_oracle(spark, decimals, "row_num long, k string, x decimal(10,1), v long", Fraction(1, 10),
                                "SESSION 0.1 WATTR x")
    assert all(r.session_end - r.session_start >= Decimal("0.1") for r in out)


def test_timestamps_to_the_microsecond(spark):
    rng = random.Random(5)
    rows = [(i, "a", T0 + dt.timedelta(microseconds=rng.randint(0, 30) * 500_000 + rng.choice([0, 1, -1])), 1)
            for i in range(80)]
    _check_against_oracle(spark, rows, "row_num long, k string, x timestamp, v long", Fraction(1, 2),
                          "SESSION 0.5 SECONDS WATTR x")


def test_bad_input(spark):
    spark.createDataFrame([(0, T0, 1)], "row_num long, ts timestamp, v long").createOrReplaceTempView("s")
    with pytest.raises(WidError, match="whole number of microseconds"):
        wid.query(spark, "SELECT count(*) FROM s [SESSION 0.0000001 SECONDS WATTR ts]")
    with pytest.raises(WidError, match="unknown column"):
        wid.query(spark, "SELECT count(*) FROM s [SESSION 1 WATTR ts] GROUP BY nope")
