"""docs/semantics.md section 9: ``wid.register`` (window-id SQL functions), ``wid.create_view`` and the
statement form ``wid.run_sql``, checked on seeded random streams against brute-force
extents (exact fractions) and against ``wid.query``."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest
from chispa import assert_df_equality
from pyspark.errors import PySparkException
from pyspark.sql import functions as F

import wid
from wid.windows.context_free import Sliding

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: (range, slide) pairs: sliding, tumbling, hopping with gaps (s > r), fractional.
WINDOWS = [(300, 60), (7, 7), (10, 25), (Fraction(3, 2), Fraction(1, 4)), (Fraction(5, 8), Fraction(5, 2))]


def brute_wids(x: Fraction, r: Fraction, s: Fraction) -> list[int]:
    """Every w whose extent [(w+1)s - r, (w+1)s) holds x, found by scanning a superset of ids."""
    near = math.floor(x / s)
    return [w for w in range(near - 2, near + math.ceil(r / s) + 3) if (w + 1) * s - r <= x < (w + 1) * s]


def exact(value) -> Fraction:
    if isinstance(value, dt.datetime):
        delta = value - EPOCH
        return Fraction(delta.days * 86400 + delta.seconds) + Fraction(delta.microseconds, 10**6)
    return Fraction(value)


def random_values(rng: random.Random, n: int) -> list[tuple]:
    """``(x_ts, x_long, x_double)``; some sit exactly on window boundaries."""
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(n):
        on_edge = i % 5 == 0
        micros = rng.randrange(0, 10**9, 250_000 if on_edge else 1)
        rows.append((
            base + dt.timedelta(microseconds=micros) - dt.timedelta(seconds=500),
            rng.randrange(-1000, 1000, 5 if on_edge else 1),
            rng.randrange(-10**6, 10**6, 250 if on_edge else 1) / 1000,
        ))
    return rows


@pytest.fixture(scope="module")
def registered(spark):
    wid.register(spark)
    return spark


def test_window_id_functions_match_brute_force_extents(registered):
    spark = registered
    rng = random.Random(6)
    values = random_values(rng, 60)
    cases = [(v, Fraction(r), Fraction(s)) for v in values for r, s in WINDOWS]
    rows = [(i, *v, float(r), float(s)) for i, (v, r, s) in enumerate(cases)]
    df = spark.createDataFrame(rows, "i int, x_ts timestamp, x_long long, x_double double, r double, s double")
    df.createOrReplaceTempView("wid_sql_points")
    out = spark.sql("""
        SELECT i,
               wid_lo(x_ts, r, s) AS ts_lo, wid_hi(x_ts, r, s) AS ts_hi,
               wid_lo(x_long, r, s) AS long_lo, wid_hi(x_long, r, s) AS long_hi,
               wid_lo(x_double, r, s) AS double_lo, wid_hi(x_double, r, s) AS double_hi,
               wid_start(wid_lo(x_long, r, s), r, s) AS start, wid_end(wid_lo(x_long, r, s), r, s) AS end,
               wid_closed(x_double, s) AS closed
        FROM wid_sql_points""").collect()
    assert len(out) == len(rows)
    for row in out:
        values, r, s = cases[row.i]
        for attr, x in zip(("ts", "long", "double"), values):
            ids = brute_wids(exact(x), r, s)
            lo, hi = row[f"{attr}_lo"], row[f"{attr}_hi"]
            if ids:
                assert (lo, hi) == (ids[0], ids[-1]), (attr, row)
            else:
                assert lo > hi, (attr, row)  # the value falls in a gap between hopping windows
        start, end = Sliding(float(r), float(s), "x").extent(row.long_lo)  # dyadic: exact as floats
        assert (Fraction(row.start), Fraction(row.end)) == (Fraction(start), Fraction(end))
        v = exact(values[2])
        assert row.closed == max(w for w in range(math.floor(v / s) - 2, math.floor(v / s) + 2) if (w + 1) * s <= v)


def test_window_id_functions_reject_a_non_positive_range_or_slide(registered):
    with pytest.raises(PySparkException, match="SLIDE must be positive"):
        registered.sql("SELECT wid_lo(5, 10, 0)").collect()
    with pytest.raises(PySparkException, match="RANGE must be positive"):
        registered.sql("SELECT wid_hi(5, -1, 2)").collect()


@pytest.fixture(scope="module")
def stream(spark):
    """A seeded random stream: three keys, integer values, timestamps with microseconds, and a
    signed long attribute."""
    rng = random.Random(2005)
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = [
        (i, rng.choice("abc"), rng.randrange(0, 100), base + dt.timedelta(microseconds=rng.randrange(0, 120 * 10**6)),
         rng.randrange(-200, 200))
        for i in range(300)
    ]
    df = spark.createDataFrame(rows, "row_num long, k string, v long, ts timestamp, n long")
    df.createOrReplaceTempView("wid_sql_stream")
    return df


AGGREGATES = "count(*) AS cnt, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean"
CASES = [
    ("RANGE 1.5 SECONDS SLIDE 0.25 SECONDS WATTR ts", "ts", "1.5", "0.25"),
    ("RANGE 10 SLIDE 25 WATTR n", "n", "10", "25"),
]


@pytest.mark.parametrize("window, attr, r, s", CASES, ids=[c[0] for c in CASES])
@pytest.mark.slow
def test_sql_functions_aggregate_like_wid_query(registered, stream, window, attr, r, s):
    expected = wid.query(registered, f"SELECT k, {AGGREGATES} FROM wid_sql_stream [{window}] GROUP BY k").drop(
        "window_start", "window_end")
    actual = registered.sql(f"""
        SELECT w AS wid, k, {AGGREGATES}
        FROM (SELECT *, wid_lo({attr}, {r}, {s}) AS lo, wid_hi({attr}, {r}, {s}) AS hi FROM wid_sql_stream)
        LATERAL VIEW explode(sequence(lo, hi)) AS w
        WHERE lo <= hi
        GROUP BY w, k""")
    assert expected.count() > 10
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


QUERY = f"SELECT k, {AGGREGATES} FROM wid_sql_stream [RANGE 20 SECONDS SLIDE 5 SECONDS WATTR ts] GROUP BY k"


def test_create_view_holds_the_query_result(registered, stream):
    view = wid.create_view(registered, "wid_sql_q1", QUERY)
    expected = wid.query(registered, QUERY)
    assert_df_equality(registered.table("wid_sql_q1"), expected, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(view, expected, ignore_row_order=True, ignore_nullable=True)


def test_run_sql_creates_views_from_window_statements_and_passes_others_to_spark(registered, stream):
    spark = registered
    expected = wid.query(spark, QUERY)
    wid.run_sql(spark, f"CREATE OR REPLACE TEMP VIEW wid_sql_q2 AS {QUERY}")
    assert_df_equality(spark.table("wid_sql_q2"), expected, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(wid.run_sql(spark, QUERY), expected, ignore_row_order=True, ignore_nullable=True)
    # plain SQL (no window clause) goes to spark.sql, and reads the view like any other
    per_key = wid.run_sql(spark, "SELECT k, sum(cnt) AS cnt FROM wid_sql_q2 GROUP BY k")
    assert_df_equality(per_key, expected.groupBy("k").agg(F.sum("cnt").alias("cnt")),
                       ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    # IF NOT EXISTS keeps the existing view; without OR REPLACE an existing view is an error
    kept = wid.run_sql(spark, "CREATE VIEW IF NOT EXISTS wid_sql_q2 AS SELECT k, count(*) AS c "
                              "FROM wid_sql_stream [RANGE 7 SLIDE 7 WATTR n] GROUP BY k")
    assert kept.columns == expected.columns
    with pytest.raises(wid.WidError, match="already exists"):
        wid.run_sql(spark, f"CREATE VIEW wid_sql_q2 AS {QUERY}")
    with pytest.raises(wid.WidError, match="can only define a view"):
        wid.run_sql(spark, f"CREATE GLOBAL TEMPORARY VIEW wid_sql_q3 AS {QUERY}")


def test_run_sql_reports_bad_window_clauses(registered, stream):
    with pytest.raises(wid.WidError, match="SLIDE"):
        wid.run_sql(registered, "CREATE VIEW wid_sql_bad AS SELECT k, count(*) AS c FROM wid_sql_stream "
                                "[RANGE 10 SLIDE 0 WATTR n] GROUP BY k")
    assert not registered.catalog.tableExists("wid_sql_bad")


def test_decimal_arguments_keep_microseconds(registered):
    row = registered.sql("SELECT wid_lo(TIMESTAMP'2026-01-01 00:00:59.999999', 60, 60) AS before, "
                         "wid_lo(TIMESTAMP'2026-01-01 00:01:00', 60, 60) AS at, "
                         "wid_end(0, 300, 60) AS end").first()
    assert row.at - row.before == 1
    assert row.end == Decimal(60)
