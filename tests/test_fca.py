"""FCA windows (docs/semantics.md section 3): slide-by-tuple, slide by n tuples over row_num (FCB) and
over rank(a) (FCU) against the brute-force oracle, which materialises every extent
{u : w - r < u.a <= w} of the window-ids of the whole stream.

Streams are seeded and random: the range attribute is out of order with respect to
arrival, with many duplicates and values on extent boundaries; keys and values have NULLs.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

import wid
from tests.oracle import SlideByTuple, evaluate
from wid.datasets.traffic import traffic
from wid import punctuate
from wid.bench import kinds as bench_kinds
from wid.aggregate import fca
from wid.aggregate.bins import Bins, at_windows
from wid.aggregate.fca import chunk_rows_of
from wid.bucket.fca import CHUNK, units
from wid.compiler.query import compile_query

SCHEMA = "row_num long, a long, g string, v long, d double, ts timestamp"
START = dt.datetime(2026, 1, 1)
AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS total, avg(v) AS mean, min(d) AS lo, max(d) AS hi"
ORACLE = {
    "n": ("count", None),
    "nv": ("count", "v"),
    "total": ("sum", "v"),
    "mean": ("avg", "v"),
    "lo": ("min", "d"),
    "hi": ("max", "d"),
}


def stream(seed: int, n: int = 150) -> list[dict]:
    """``n`` tuples: ``row_num`` unique with gaps; ``a`` in [0, 60) (about 2.5 per value, in
    random order); ``g`` in {x, y, z, NULL}; ``v`` integer or NULL; ``d`` a multiple of 0.25;
    ``ts`` within 10 minutes, with fractional seconds."""
    rng = random.Random(seed)
    return [
        {
            "row_num": row_num,
            "a": rng.randrange(60),
            "g": rng.choice(["x", "x", "y", "z", None]),
            "v": None if rng.random() < 0.15 else rng.randint(-20, 20),
            "d": rng.randint(-40, 40) / 4,
            "ts": START + dt.timedelta(microseconds=rng.randrange(600_000_000)),
        }
        for row_num in sorted(rng.sample(range(3 * n), n))
    ]


def register(spark, rows: list[dict], partitions: int = 3, seed: int | None = 0, name: str = "s") -> None:
    """``rows`` as view ``name``, in a shuffled physical order over ``partitions`` partitions
    (``seed`` None: in the order given, one partition)."""
    shuffled = rows if seed is None else random.Random(seed).sample(rows, len(rows))
    df = spark.createDataFrame([tuple(r[c] for c in ("row_num", "a", "g", "v", "d", "ts")) for r in shuffled], SCHEMA)
    (df.coalesce(1) if seed is None else df.repartition(partitions)).createOrReplaceTempView(name)


def assert_rows(spark, actual, expected: list[dict]) -> None:
    schema = StructType([StructField(f.name, f.dataType, True) for f in actual.schema])
    expected_df = spark.createDataFrame([tuple(r[c] for c in actual.columns) for r in expected], schema)
    assert_df_equality(actual, expected_df, ignore_row_order=True, ignore_nullable=True)


VARIANTS = [
    pytest.param("SLIDE 1 ROW SATTR row_num", {}, id="FCA-slide-by-tuple"),
    pytest.param("SLIDE 4 ROWS SATTR row_num", {"every": 4}, id="FCB-every-4th-arrival"),
    pytest.param("SLIDE 4 ROWS SATTR rank(a)", {"every": 4, "rank": True}, id="FCU-every-4th-rank"),
]


@pytest.mark.slow
@pytest.mark.parametrize("slide, variant", VARIANTS)
def test_variants_match_brute_force_with_group_by(spark, slide, variant):
    """GROUP BY splits each extent; a window defined by a tuple of one group holds rows of
    the others; a window with no tuple of a group has no row for it; duplicates of ``a``
    define one window."""
    rows = stream(seed=len(slide))
    register(spark, rows)
    actual = wid.query(spark, f"SELECT g, {AGGREGATES} FROM s [RANGE 7 RATTR a {slide}] GROUP BY g")
    assert actual.columns == ["wid", "g", *ORACLE]
    assert actual.schema["wid"].dataType.simpleString() == "bigint"
    expected = evaluate(rows, SlideByTuple(7, "a", **variant), ORACLE, group_by=["g"])
    assert_rows(spark, actual, expected)
    assert len({r["wid"] for r in expected}) < len({(r["wid"], r["g"]) for r in expected})


def test_timestamps_stay_timestamps_on_a_stream_over_many_partitions(spark):
    """No GROUP BY, 8 Spark partitions scanned as 8 chunks of the time axis; RANGE in
    SECONDS on a timestamp; the open lower bound w - r < u.ts holds to the microsecond."""
    rows = stream(seed=5, n=600)
    rows[1]["ts"] = rows[0]["ts"] + dt.timedelta(seconds=20)  # exactly one range apart
    register(spark, rows, partitions=8)
    compiled = compile_query(spark, f"SELECT {AGGREGATES} FROM s [RANGE 20 SECONDS RATTR ts SLIDE 1 ROW SATTR row_num]")
    actual = compiled.finish(fca.aggregate(compiled.tagged, *units(compiled.tagged, compiled.spec), [],
                                           compiled.aggregates, chunk_rows=50))
    assert actual.schema["wid"].dataType.simpleString() == "timestamp"
    expected = evaluate(rows, SlideByTuple(20, "ts"), ORACLE)
    assert_rows(spark, actual, expected)
    assert len(expected) == len({r["ts"] for r in rows})


@pytest.mark.slow
@pytest.mark.parametrize("slide, variant", VARIANTS[1:])
def test_shuffled_arrival_gives_the_sorted_result(spark, slide, variant):
    """The physical order never matters; for FCU (rank) not even the arrival order
    (row_num) does: a permutation of row_num gives the same windows and results."""
    rows = stream(seed=9)
    text = f"SELECT g, {AGGREGATES} FROM {{}} [RANGE 5 RATTR a {slide}] GROUP BY g"
    arrival = [r["row_num"] for r in rows]
    if variant.get("rank"):  # in order = arriving in order of a; shuffled = any other arrival order
        random.Random(1).shuffle(arrival)
        in_order = sorted(rows, key=lambda r: (r["a"], r["row_num"]))
        in_order = [{**r, "row_num": n} for r, n in zip(in_order, sorted(arrival))]
    else:
        in_order = sorted(rows, key=lambda r: r["row_num"])
    rows = [{**r, "row_num": n} for r, n in zip(rows, arrival)]
    register(spark, rows, partitions=5, seed=2, name="shuffled")
    register(spark, in_order, seed=None, name="in_order")
    shuffled = wid.query(spark, text.format("shuffled"))
    assert_df_equality(shuffled, wid.query(spark, text.format("in_order")), ignore_row_order=True)
    assert_rows(spark, shuffled, evaluate(rows, SlideByTuple(5, "a", **variant), ORACLE, group_by=["g"]))


def test_where_filters_inside_extents_of_the_whole_streams_windows(spark):
    """A tuple failing WHERE still defines its window (window-ids come from the whole stream)."""
    rows = stream(seed=13)
    register(spark, rows)
    actual = wid.query(spark, f"SELECT g, {AGGREGATES} FROM s [RANGE 3 RATTR a SLIDE 2 ROWS SATTR row_num] "
                              "WHERE v > 0 GROUP BY g")
    expected = evaluate(rows, SlideByTuple(3, "a", every=2), ORACLE, group_by=["g"],
                        where=lambda t: t["v"] is not None and t["v"] > 0)
    assert_rows(spark, actual, expected)


@pytest.mark.slow
def test_spark_sql_reference_and_other_aggregates(spark):
    """The range-join formulation gives the bins' results; it also serves aggregates the
    bins do not hold (count(DISTINCT ...)) and non-numeric min/max."""
    rows = stream(seed=17)
    register(spark, rows)
    text = f"SELECT g, {AGGREGATES} FROM s [RANGE 6 RATTR a SLIDE 1 ROW SATTR row_num] GROUP BY g"
    compiled = compile_query(spark, text)
    bins = compiled.result()
    sql = compiled.finish(fca.aggregate(compiled.tagged, *units(compiled.tagged, compiled.spec), compiled.keys,
                                        compiled.aggregates, "sql"))
    assert_df_equality(bins, sql, ignore_row_order=True, ignore_nullable=True)

    actual = wid.query(spark, "SELECT g, count(DISTINCT v) AS kinds, max(ts) AS last "
                              "FROM s [RANGE 6 RATTR a SLIDE 1 ROW SATTR row_num] GROUP BY g")
    expected = evaluate(rows, SlideByTuple(6, "a"), {
        "kinds": (lambda vs: len({v for v in vs if v is not None}), "v"),
        "last": ("max", "ts"),
    }, group_by=["g"])
    assert_rows(spark, actual, expected)


def test_null_range_attribute_is_an_error(spark):
    rows = stream(seed=19, n=20)
    rows[7]["a"] = None
    register(spark, rows)
    message = f"NULL or NaN window attribute 'a' in the tuple with row_num={rows[7]['row_num']}"
    with pytest.raises(Exception, match=message):
        wid.query(spark, "SELECT count(*) AS n FROM s [RANGE 3 RATTR a SLIDE 1 ROW SATTR row_num]").collect()


def test_bins_take_tuples_once_in_any_order():
    """The paper's aggregate: each tuple once, in any order and batching; the bin at or
    before a window holds its extent's aggregate (count, sum, max)."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 200, 500)
    v = rng.integers(-50, 50, 500).astype(np.int64)
    present = rng.random(500) > 0.1
    partials = {"n": ("n", None, np.dtype(np.int64)), "s": ("sum", "v", np.dtype(np.int64)),
                "m": ("max", "v", np.dtype(np.int64)), "c": ("n", "v", np.dtype(np.int64))}
    windows = np.unique(a)
    r = 9
    extents = [(w - r < a) & (a <= w) for w in windows]
    expected = {
        "n": [e.sum() for e in extents],
        "c": [(e & present).sum() for e in extents],
        "s": [v[e & present].sum() for e in extents],
        "m": [v[e & present].max(initial=np.iinfo(np.int64).min) for e in extents],
    }
    for order, batch in [(np.arange(500), 500), (rng.permutation(500), 1), (rng.permutation(500), 37)]:
        bins = Bins(r, partials, a.dtype)
        for start in range(0, 500, batch):
            part = order[start:start + batch]
            bins.add(a[part], {"v": (v[part], present[part])})
        got = bins.at(windows)
        for name, values in expected.items():
            assert got[name].tolist() == [int(x) for x in values], name
        assert len(bins.pos) == 1 + len(np.unique(np.concatenate([a, a + r])))  # init, start and end bins only
        for batch in (7, len(windows)):  # windows read a batch at a time, or all at once
            read = at_windows(partials, r, a[order], {"v": (v[order], present[order])}, windows, batch)
            for name, values in expected.items():
                assert read[name].tolist() == [int(x) for x in values], name


def test_windows_read_at_once_are_exact_on_doubles():
    """:func:`at_windows` on doubles with decimals, negative and repeated, NULL values and
    windows off the tuples, against extents decided in exact fractions ``w - r < x <= w``:
    count, count of values, min and max equal; the sum is within ``n * 2**-52 * sum(|v|)``."""
    rng = np.random.default_rng(5)
    x = rng.integers(-300, 300, 700) / 10  # -30.0 .. 29.9, about 1.2 per value
    v = rng.integers(-999, 999, 700) / 100
    present = rng.random(700) > 0.15
    r = 2.5
    windows = np.unique(np.concatenate([x[::3], rng.integers(-320, 320, 50) / 10 + 0.05]))
    kinds = {"n": ("n", None, np.dtype(np.int64)), "c": ("n", "v", np.dtype(np.int64)),
             "s": ("sum", "v", np.dtype(np.float64)), "lo": ("min", "v", np.dtype(np.float64)),
             "hi": ("max", "v", np.dtype(np.float64))}
    got = at_windows(kinds, r, x, {"v": (v, present)}, windows, batch=16)
    for i, w in enumerate(windows):
        inside = np.array([Fraction(w) - Fraction(r) < Fraction(t) <= Fraction(w) for t in x])
        values = v[inside & present]
        assert got["n"][i] == inside.sum() and got["c"][i] == len(values)
        if len(values):
            assert (got["lo"][i], got["hi"][i]) == (values.min(), values.max())
            exact = sum(Fraction(t) for t in values)
            assert abs(Fraction(got["s"][i]) - exact) <= Fraction(len(values) * float(np.abs(values).sum())) / 2**52
        else:
            assert got["s"][i] == 0


@pytest.mark.slow
def test_bench_case_checks_against_spark_range_frame(spark):
    """``wid bench --fca``: wid's rows equal Spark's RANGE frame (else it raises), then timings."""
    times = bench_kinds.fca(spark, rows=400, range_seconds=3, repeat=1)
    assert bench_kinds.has_conf(spark, bench_kinds.SEGMENT_TREE)
    assert not bench_kinds.has_conf(spark, "spark.sql.no.such.conf")
    assert set(times) == {"wid", "wid sql", "range frame", "range frame, segment tree"} and min(times.values()) > 0
    assert spark.conf.get(bench_kinds.SEGMENT_TREE) == "false"  # restored
@pytest.mark.parametrize("method", ["bins", "sql"])
def test_equals_spark_range_frame(spark, method):
    """Slide-by-tuple count and max over generated traffic equal Spark's own frame
    ``ORDER BY ts RANGE BETWEEN r - 1 micros PRECEDING AND CURRENT ROW`` (``w - r < ts <= w``
    on integer micros), one row per distinct ts: compared here, not inside ``wid bench``."""
    traffic(spark, 400).createOrReplaceTempView("fca_frame")
    compiled = compile_query(spark, "SELECT count(*) AS n, max(speed) AS hi FROM fca_frame "
                                    "[RANGE 3 SECONDS RATTR ts SLIDE 1 ROW SATTR row_num]")
    out = compiled.finish(fca.aggregate(compiled.tagged, *units(compiled.tagged, compiled.spec), [],
                                        compiled.aggregates, method))
    frame = Window.orderBy(F.unix_micros("ts")).rangeBetween(-(3 * 10**6 - 1), 0)
    expected = spark.table("fca_frame").select(
        F.col("ts").alias("wid"), F.count("*").over(frame).alias("n"), F.max("speed").over(frame).alias("hi"),
    ).dropDuplicates(["wid"])
    assert sorted(out.select("wid", "n", "hi").collect()) == sorted(expected.collect())


def test_bins_purge_and_late_floor_keep_the_windows_above_the_bound():
    """processpunctuation's purge drops the bins below a bound and keeps every window at or
    above it; a late tuple added with ``floor`` counts only in the windows ``w >= floor``."""
    rng = np.random.default_rng(11)
    r, partials = 7, {"n": ("n", None, np.dtype(np.int64)), "m": ("max", "v", np.dtype(np.int64))}
    a, v = rng.integers(0, 120, 400), rng.integers(-50, 50, 400).astype(np.int64)
    floors = np.where(rng.random(400) < 0.2, a + rng.integers(1, 2 * r, 400), a)  # a fifth late
    bins = Bins(r, partials, a.dtype)
    bound = 0
    for start in range(0, 400, 40):
        part = slice(start, start + 40)
        on_time = part.start + np.flatnonzero(floors[part] == a[part])
        bins.add(a[on_time], {"v": (v[on_time], np.ones(len(on_time), dtype=bool))})
        for floor in np.unique(floors[part][floors[part] != a[part]]):
            late = part.start + np.flatnonzero((floors[part] == floor) & (floors[part] != a[part]))
            bins.add(a[late], {"v": (v[late], np.ones(len(late), dtype=bool))}, floor=floor)
        bound = max(bound, int(a[: part.stop].min()) + start // 8)
        bins.purge(bound)
    assert bins.pos[1] >= bound and len(bins.pos) < len(np.unique(np.concatenate([a, a + r])))
    windows = np.arange(bound, 130)
    inside = [(w - r < a) & (a <= w) & (floors <= w) for w in windows]
    got = bins.at(windows)
    assert got["n"].tolist() == [int(e.sum()) for e in inside]
    some = got["n"] > 0
    assert got["m"][some].tolist() == [int(v[e].max()) for e, s in zip(inside, some) if s]


def test_bins_purge_at_a_long_bound_beyond_2_53_keeps_the_window_at_the_bound():
    """A bound that is a numpy long is used as it is: ``2**53 + 3`` is no double (one rounds it
    up to ``2**53 + 4``), and the window ``w = bound`` keeps the tuple with ``a = bound``."""
    a = np.array([2**53 + 1, 2**53 + 3], dtype=np.int64)
    bins = Bins(1, {"n": ("n", None, np.dtype(np.int64))}, a.dtype)
    bins.add(a, {})
    bins.purge(a[1])
    assert bins.at(a[1:])["n"].tolist() == [1]


@pytest.mark.slow
def test_long_keys_past_2_53_stay_apart_beside_a_null_key(spark):
    """GROUP BY keys ``2**53`` and ``2**53 + 1`` (one double) with a NULL key in the chunk: two
    keys in the query, and in replay a punctuation on ``2**53`` (beside a NULL wildcard) closes
    that key's windows only. Window w (a value of the stream) holds a key's tuples with ``w - 2 < a <= w``."""
    big = 2**53
    spark.createDataFrame([(0, big, 0, 1.0), (1, big + 1, 0, 2.0), (2, None, 0, 4.0), (3, big + 1, 1, 8.0)],
                          "row_num long, k long, a long, v double").createOrReplaceTempView("fca_long_keys")
    text = ("SELECT k, count(*) AS n, sum(v) AS t FROM fca_long_keys [RANGE 2 RATTR a SLIDE 1 ROW SATTR row_num] "
            "GROUP BY k")
    want = {(big, 0): (1, 1.0), (big, 1): (1, 1.0), (big + 1, 0): (1, 2.0), (big + 1, 1): (2, 10.0),
            (None, 0): (1, 4.0), (None, 1): (1, 4.0)}
    assert {(r.k, r.wid): (r.n, r.t) for r in wid.query(spark, text).collect()} == want
    bounds = spark.createDataFrame([(1, big, 5), (1, None, -10)], "row_num long, k long, a long")
    rep = wid.replay(spark, text, punctuate.embedded(bounds))
    emitted = {(r.k, r.wid): (r.n, r.t, r.emit_row) for r in rep.results.collect()}
    closed = {(big, 0): 1, (big, 1): 3}  # window 1's defining tuple (row 3) comes after the punctuation
    assert emitted == {w: (*v, closed.get(w)) for w, v in want.items()} and rep.late.count() == 0


def test_chunks_hold_every_tuple_near_the_long_limit(spark):
    """Longs near 2**61 with a tiny span: Spark places each tuple in the chunk of its double
    (``floor(x / width)`` divides doubles), so the chunk range the punctuations are sent to must be
    computed the same way, or they miss the tuples' chunk (windows then emitted only at the end)."""
    base = 2**61 - 2000
    spark.createDataFrame([(i, base + i % 7, 1.0) for i in range(40)], "row_num long, x long, v double") \
        .createOrReplaceTempView("fca_big")
    compiled = compile_query(spark, "SELECT count(*) AS n FROM fca_big [RANGE 1 RATTR x SLIDE 1 ROW SATTR row_num]")
    chunks = chunk_rows_of(compiled.tagged, units(compiled.tagged, compiled.spec)[0], [], compiled.aggregates)
    found = chunks.rows.agg(F.min(CHUNK), F.max(CHUNK)).first()
    assert chunks.first <= found[0] <= found[1] <= chunks.last


#: Doubles Spark orders NaN above +inf in (min skips a NaN unless all are; max, sum, avg take it).
ODD_DOUBLES = [float("nan"), None, float("inf"), float("-inf"), -0.0, 0.0, 2.5, -1.25, 1e16, 0.1]


@pytest.mark.parametrize("method", ["bins", "sql"])
@pytest.mark.parametrize("seed", [1])
def test_nan_and_infinities_aggregate_as_spark_range_frame(spark, method, seed):
    """A double with NaN, NULL, infinities and -0.0 beside decimals: count, sum, avg, min and max of
    each slide-by-tuple window equal Spark's own frame ``ORDER BY a RANGE BETWEEN r - 1 PRECEDING
    AND CURRENT ROW`` (``w - r < a <= w``), one row per distinct ``a``."""
    rng = random.Random(seed)
    def d() -> float | None:
        draw = rng.random()
        return float("nan") if draw < 0.3 else rng.choice(ODD_DOUBLES) if draw < 0.6 else round(rng.uniform(-9, 9), 3)

    rows = [(i, rng.randrange(60), d()) for i in range(120)]
    rows += [(120, 100, float("nan")), (121, 101, float("nan")), (122, 200, float("inf")), (123, 201, float("-inf"))]
    spark.createDataFrame(rows, "row_num long, a long, d double").repartition(3).createOrReplaceTempView("fca_nan")
    compiled = compile_query(spark, "SELECT count(d) AS n, sum(d) AS total, avg(d) AS mean, min(d) AS lo, "
                                    "max(d) AS hi FROM fca_nan [RANGE 4 RATTR a SLIDE 1 ROW SATTR row_num]")
    out = compiled.finish(fca.aggregate(compiled.tagged, *units(compiled.tagged, compiled.spec), [],
                                        compiled.aggregates, method))
    frame = Window.orderBy("a").rangeBetween(-3, 0)
    d = F.col("d")
    expected = spark.table("fca_nan").select(
        F.col("a").alias("wid"), F.count(d).over(frame).alias("n"), F.sum(d).over(frame).alias("total"),
        F.avg(d).over(frame).alias("mean"), F.min(d).over(frame).alias("lo"), F.max(d).over(frame).alias("hi"),
    ).dropDuplicates(["wid"])
    got, want = (sorted(df.collect()) for df in (out.select(*expected.columns), expected))
    assert [r["wid"] for r in got] == [r["wid"] for r in want]
    for mine, spark_row in zip(got, want):
        assert all(_same_double(a, b) for a, b in zip(mine, spark_row)), (mine, spark_row)
    assert math.isnan(out.where("wid = 100").first()["lo"])  # a min over NaNs only


def _same_double(a: float | None, b: float | None) -> bool:
    """Equal as Spark compares doubles in a result (NaN equals NaN), sums to 1e-12 relative (added
    in another order)."""
    if a is None or b is None or math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return (a is None and b is None) or (a is not None and b is not None and
                                             (math.isnan(a) and math.isnan(b) or a == b))
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
