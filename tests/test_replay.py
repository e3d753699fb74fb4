"""wid.replay against a brute-force streaming simulation in plain Python (docs/semantics.md sections 7, 8).

The simulation walks the stream in arrival order: a window ``(key, w)`` is emitted at the
first punctuation matching ``key`` whose bound reaches the extent's end ``(w+1)s``; a tuple
is late for the windows already emitted for its key when it arrives (generous drops those
contributions, consistent the whole tuple). Extents are materialised from
``extent(w) = {t : (w+1)s - r <= x < (w+1)s}``, never from the engine's wid ranges.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter, defaultdict
from fractions import Fraction

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

import wid
from wid import punctuate
from wid.errors import WidError

import oracle

RANGE, SLIDE = 6, 2
QUERY = f"SELECT k, count(*) AS n, sum(v) AS total FROM s [RANGE {RANGE} SLIDE {SLIDE} WATTR x] GROUP BY k"


def stream(seed: int, n: int = 120, disorder: float = 5.0) -> list[dict]:
    """Tuples in arrival order: ``x`` near the arrival index, up to ``disorder`` behind it."""
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        late = rnd.random() < 0.3
        rows.append({"row_num": 2 * i, "k": rnd.choice("abc"), "x": i - (rnd.uniform(0, disorder) if late else 0.0),
                     "v": rnd.randint(0, 9), "arrival": float(i)})
    return rows


def windows(x: float) -> list[int]:
    return [w for w in range(math.floor(x / SLIDE) - 1, math.ceil((x + RANGE) / SLIDE) + 1)
            if (w + 1) * SLIDE - RANGE <= x < (w + 1) * SLIDE]


def simulate(rows: list[dict], puncts: list[tuple[int, str | None, float]], consistent: bool):
    """``(results {(k, w): (n, total, emit_row)}, late Counter {(row_num, w)})``; ``puncts`` are
    ``(row_num, key or None, bound)``."""
    events = sorted([(r["row_num"], 0, r) for r in rows] + [(p[0], 1, p) for p in puncts], key=lambda e: e[:2])
    keys = {r["k"] for r in rows}
    closed: dict[str, float] = defaultdict(lambda: -math.inf)  # per key: largest bound seen
    emit: dict[tuple[str, int], int] = {}
    kept: dict[tuple[str, int], list[int]] = defaultdict(list)
    late: Counter = Counter()
    for _, kind, item in events:
        if kind == 1:
            row_num, key, bound = item
            for k in keys if key is None else [key]:
                closed[k] = max(closed[k], bound)
            for (k, w) in kept:
                if (k, w) not in emit and (key is None or key == k) and (w + 1) * SLIDE <= bound:
                    emit[(k, w)] = row_num
            continue
        ws = windows(item["x"])
        is_late = [(w + 1) * SLIDE <= closed[item["k"]] for w in ws]
        for w, lt in zip(ws, is_late):
            if lt or (consistent and any(is_late)):
                late[(item["row_num"], w)] += 1
            else:
                kept[(item["k"], w)].append(item["v"])
    results = {kw: (len(vs), sum(vs), emit.get(kw)) for kw, vs in kept.items()}
    return results, late


def exact(rows: list[dict]) -> Counter:
    return Counter((r["k"], w) for r in rows for w in windows(r["x"]))


def suffix_min_punctuations(rows: list[dict], key: str | None = None) -> list[tuple[int, str | None, float]]:
    """The tightest correct punctuations: after each tuple, the least x still to come (of ``key``)."""
    out, low = [], math.inf
    for r in reversed(rows):
        if key is None or r["k"] == key:
            out.append((r["row_num"] - 1, key, low := min(low, r["x"])))
    return out


@pytest.fixture(scope="module")
def rows(spark):
    data = stream(seed=7)
    spark.createDataFrame(data, "row_num long, k string, x double, v long, arrival double").createOrReplaceTempView("s")
    return data


def run(spark, punctuation):
    rep = wid.replay(spark, QUERY, punctuation=punctuation)
    results = {(r.k, r.wid): (r.n, r.total, r.emit_row) for r in rep.results.collect()}
    late = Counter((r.row_num, r.wid) for r in rep.late.collect())
    return results, late


def conserved(rows, results, late) -> None:
    """emitted count + late rows = exact count, per window and key."""
    by_key = {r["row_num"]: r["k"] for r in rows}
    total = Counter({kw: n for kw, (n, _, _) in results.items()})
    for (row_num, w), c in late.items():
        total[(by_key[row_num], w)] += c
    assert total == exact(rows)


@pytest.mark.slow
def test_exact_source_punctuations_give_the_query_result_and_nothing_late(spark, rows):
    puncts = [(r, b) for r, _, b in suffix_min_punctuations(rows)]
    frame = spark.createDataFrame(puncts, "row_num long, x double")
    rep = wid.replay(spark, QUERY, punctuation=punctuate.embedded(frame))
    assert rep.late.count() == 0
    last_bound = puncts[0][1]  # the punctuation before the last tuple: its own x
    assert rep.results.where(F.col("emit_row").isNull() & ((F.col("wid") + 1) * SLIDE <= last_bound)).count() == 0
    assert_df_equality(rep.results.drop("emit_row", "revision"), wid.query(spark, QUERY), ignore_row_order=True,
                       ignore_column_order=True, ignore_nullable=True)


@pytest.mark.slow
def test_per_key_embedded_punctuations_match_the_simulation(spark, rows):
    rnd = random.Random(3)
    puncts = [p for key in "ab" for p in suffix_min_punctuations(rows, key)]
    puncts = [(r, k, b + (rnd.choice([0, 0, 3]))) for r, k, b in puncts if rnd.random() < 0.3]  # some too eager
    puncts += [(r["row_num"], None, r["x"] - 2) for r in rows[::17]]  # wildcard
    frame = spark.createDataFrame(puncts, "row_num long, k string, x double")
    results, late = run(spark, punctuate.embedded(frame))
    assert (results, late) == simulate(rows, puncts, consistent=False)
    assert late  # the eager punctuations made some tuples late
    conserved(rows, results, late)


SLACK = 2.5


@pytest.fixture(scope="module")
def slack_runs(spark, rows):
    """Replays with value slack SLACK, by mode (computed once)."""
    return {mode: run(spark, punctuate.slack(SLACK, mode=mode)) for mode in ("generous", "consistent")}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["generous", "consistent"])
def test_value_slack_matches_the_simulation(rows, slack_runs, mode):
    seen, puncts = -math.inf, []
    for r in rows:
        seen = max(seen, r["x"])
        puncts.append((r["row_num"], None, seen - SLACK))
    results, late = slack_runs[mode]
    assert (results, late) == simulate(rows, puncts, consistent=mode == "consistent")
    conserved(rows, results, late)


def test_consistent_slack_drops_at_least_as_much_as_generous(slack_runs):
    generous, consistent = slack_runs["generous"][1], slack_runs["consistent"][1]
    assert set(generous) <= set(consistent) and sum(consistent.values()) > sum(generous.values())


@pytest.mark.slow
def test_more_slack_never_emits_an_extent_earlier(spark, slack_runs):
    less, more = slack_runs["generous"][0], run(spark, punctuate.slack(2 * SLACK))[0]
    compared = 0
    for kw, (_, _, row) in less.items():
        if kw in more and row is not None:
            assert more[kw][2] is None or more[kw][2] >= row
            compared += more[kw][2] is not None and more[kw][2] > row
    assert compared  # some extents are emitted strictly later


@pytest.mark.slow
def test_tuple_count_slack_matches_the_simulation(spark, rows):
    n, seen, puncts = 6, -math.inf, []
    for r in rows:
        seen = max(seen, r["x"])
        puncts.append((r["row_num"] + n, None, seen))
    results, late = run(spark, punctuate.slack(n, by="rows"))
    assert (results, late) == simulate(rows, puncts, consistent=False)
    conserved(rows, results, late)


def test_heartbeat_matches_the_simulation(spark, rows):
    every, skew = 4, 3
    puncts = [(r["row_num"], None, math.floor(r["arrival"] / every) * every - skew) for r in rows]
    results, late = run(spark, punctuate.heartbeat(every, skew, clock="arrival", mode="consistent"))
    assert (results, late) == simulate(rows, puncts, consistent=True)
    conserved(rows, results, late)


def test_ordered_by_matches_the_simulation(spark, rows):
    puncts = [(r["row_num"], r["k"], r["x"]) for r in rows]
    results, late = run(spark, punctuate.ordered_by("k"))
    assert (results, late) == simulate(rows, puncts, consistent=False)
    assert late  # each key's sub-stream is not in order here
    conserved(rows, results, late)


@pytest.mark.slow
def test_timestamp_windows_with_heartbeats_conserve_counts(spark):
    from wid.datasets.traffic import traffic

    traffic(spark, 400, segments=3, seed=5).createOrReplaceTempView("tr")
    text = "SELECT seg_id, count(*) AS n FROM tr [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts] GROUP BY seg_id"
    rep = wid.replay(spark, text, punctuation=punctuate.heartbeat(0.1, 0))
    late = rep.late.groupBy("seg_id", "wid").agg(F.count("*").alias("late"))
    total = (rep.results.join(late, ["seg_id", "wid"], "full")
             .select("seg_id", "wid", (F.coalesce("n", F.lit(0)) + F.coalesce("late", F.lit(0))).alias("n")))
    exact = wid.query(spark, text)
    assert_df_equality(total, exact.select("seg_id", "wid", "n"), ignore_row_order=True, ignore_nullable=True,
                       ignore_column_order=True)
    # the emitted windows carry their readable extents (docs/semantics.md section 8): [(w+1)s - r, (w+1)s) as timestamps
    extents = rep.results.select("wid", F.unix_micros("window_start").alias("start"),
                                 F.unix_micros("window_end").alias("end")).distinct().collect()
    assert extents and all((e.start, e.end) == ((e.wid + 1) * 5_000_000 - 10_000_000, (e.wid + 1) * 5_000_000)
                           for e in extents)
    assert rep.late.count() > 0  # arrival lags ts by 0.05-0.25 s, more than the zero skew


@pytest.mark.slow
def test_rows_windows_close_on_arrival_and_nothing_is_late(spark, rows):
    text = "SELECT count(*) AS n FROM s [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num]"
    rep = wid.replay(spark, text)
    got = {r.wid: (r.n, r.emit_row) for r in rep.results.collect()}
    # window w holds positions 2w-2 .. 2w+1 and closes on the arrival of position 2w+1 (row_num 2x)
    want = {w: (len([p for p in range(2 * w - 2, 2 * w + 2) if 0 <= p < len(rows)]),
                2 * (2 * w + 1) if 2 * w + 1 < len(rows) else None) for w in range(0, len(rows) // 2 + 1)}
    assert got == want and rep.late.count() == 0


@pytest.mark.slow
def test_landmark_rows_windows_close_on_arrival_and_nothing_is_late(spark, rows):
    """``[RANGE UNBOUNDED SLIDE 3 ROWS]``: window w holds positions 0 .. 3w+2 and closes on the
    arrival of position 3w+2 (row_num 2x); the last, open one at the end of the stream."""
    rep = wid.replay(spark, "SELECT count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 3 ROWS WATTR row_num]")
    got = {r.wid: (r.n, r.emit_row) for r in rep.results.collect()}
    want = {w: (min(3 * w + 3, len(rows)), 2 * (3 * w + 2) if 3 * w + 2 < len(rows) else None)
            for w in range((len(rows) + 2) // 3)}
    assert got == want and rep.late.count() == 0


def test_a_null_partition_closes_on_arrival_like_any_other(spark):
    """PATTR k with k NULL: the NULL partition is a partition (as GROUP BY's NULL group), its ROWS
    windows close on the arrival of its own positions, never at the end of the stream."""
    keys = [None, "a", None, None, "a", None, "a", "a", None]
    spark.createDataFrame([(3 * i, k) for i, k in enumerate(keys)], "row_num long, k string") \
        .createOrReplaceTempView("null_parts")
    rep = wid.replay(spark, "SELECT k, count(*) AS n FROM null_parts [RANGE 2 ROWS SLIDE 2 ROWS WATTR row_num PATTR k]")
    got = {(r.k, r.wid): (r.n, r.emit_row) for r in rep.results.collect()}
    want = {}
    for key in (None, "a"):  # window w holds the partition's positions 2w, 2w+1; closes on 2w+1's arrival
        rows = [3 * i for i, k in enumerate(keys) if k == key]
        for w in range((len(rows) + 1) // 2):
            want[(key, w)] = (len(rows[2 * w:2 * w + 2]), rows[2 * w + 1] if 2 * w + 1 < len(rows) else None)
    assert got == want and rep.late.count() == 0


#: (row_num, k, x): each key's sub-stream in x order, the NULL key's running ahead of a's.
NULL_KEYED = [(0, None, 0.0), (1, "a", 0.5), (2, None, 5.0), (3, "a", 1.0), (4, "a", 3.0)]


def test_ordered_by_a_null_key_punctuates_that_key_only(spark):
    """A tuple with k NULL punctuates the NULL group, not every key as a wildcard: a's tuple at
    x = 1 arriving after NULL's x = 5 is on time. Tumbling windows of 2: NULL's window 0 closes
    at row 2 (x = 5), a's window 0 at row 4 (x = 3), the others at the end."""
    spark.createDataFrame(NULL_KEYED, "row_num long, k string, x double").createOrReplaceTempView("null_keyed")
    rep = wid.replay(spark, "SELECT k, count(*) AS n FROM null_keyed [RANGE 2 SLIDE 2 WATTR x] GROUP BY k",
                     punctuate.ordered_by("k"))
    got = {(r.k, r.wid): (r.n, r.emit_row) for r in rep.results.collect()}
    assert got == {(None, 0): (1, 2), (None, 2): (1, None), ("a", 0): (2, 4), ("a", 1): (1, None)}
    assert rep.late.count() == 0


@pytest.mark.slow
def test_ordered_by_a_null_key_on_slide_by_tuple_windows(spark):
    """The same stream, windows at every tuple's x with extent (w - 2, w]: a window closes at its
    key's first punctuation past it, or at its defining tuple when that arrives later; NULL's
    bound 5 does not make a's x = 1 late."""
    spark.createDataFrame(NULL_KEYED, "row_num long, k string, x double").createOrReplaceTempView("null_keyed")
    rep = wid.replay(spark, "SELECT k, count(*) AS n FROM null_keyed [RANGE 2 RATTR x SLIDE 1 ROW SATTR row_num] "
                            "GROUP BY k", punctuate.ordered_by("k"))
    got = {(r.k, r.wid): (r.n, r.emit_row) for r in rep.results.collect()}
    assert got == {(None, 0.0): (1, 2), (None, 0.5): (1, 2), (None, 1.0): (1, 3), (None, 5.0): (1, None),
                   ("a", 0.5): (1, 3), ("a", 1.0): (2, 4), ("a", 3.0): (1, None)}
    assert rep.late.count() == 0


def test_bad_punctuations_are_named(spark, rows):
    with pytest.raises(WidError, match="is not a GROUP BY key"):
        wid.replay(spark, QUERY, punctuation=punctuate.ordered_by("v"))
    with pytest.raises(WidError, match="mode"):
        punctuate.slack(1, mode="lenient")
    with pytest.raises(WidError, match="have no bound column 'x'"):
        wid.replay(spark, QUERY, punctuation=punctuate.embedded(spark.createDataFrame([(1, 2.0)], "row_num long, y double")))


def test_replay_of_an_operational_window_emits_what_the_operator_emits(spark, rows):
    """SPL windows replay (tests/test_operational_replay.py): the query's rows, each with the
    arrival that fired it, nothing late."""
    q = "SELECT k, count(*) AS n FROM s [sliding, count(4), count(2) partitioned BY k] GROUP BY k"
    rep = wid.replay(spark, q)
    assert rep.late.count() == 0
    assert sorted(rep.results.drop("emit_row", "revision").collect()) == sorted(wid.query(spark, q).collect())


#: Late rows carry their window's bounds as results do: (clause, the oracle's window, late rows have bounds).
LATE_BOUNDS = {
    "sliding on doubles": ("[RANGE 3 SLIDE 1.5 WATTR x]", oracle.Sliding(3, Fraction(3, 2), "x"), True),
    "tumbling on microsecond timestamps": ("[RANGE 2 SECONDS SLIDE 2 SECONDS WATTR ts]", oracle.Sliding(2, 2, "ts"),
                                           True),
    "landmark (no start)": ("[RANGE UNBOUNDED SLIDE 1.5 WATTR x]", oracle.Landmark(Fraction(3, 2), "x"), True),
    "slide-by-tuple (no extent on the attribute)": ("[RANGE 2.5 RATTR x SLIDE 1 ROW SATTR row_num]", None, False),
}


@pytest.fixture(scope="module")
def readings(spark):
    """Readings 0.4 s apart, 30 % up to 3 s behind their arrival: ``x`` a double with two decimals,
    ``ts`` the same instant as a timestamp with microseconds, ``v`` two decimals, a NULL key."""
    rnd = random.Random(29)
    start = dt.datetime(2024, 5, 1, 8, 0, 0, 123457)
    data = []
    for i in range(150):
        x = round(i * 0.4 - (rnd.uniform(0, 3) if rnd.random() < 0.3 else 0.0), 2)
        data.append((2 * i, rnd.choice(["a", "b", None]), x, start + dt.timedelta(seconds=x),
                     round(rnd.uniform(-20, 80), 2)))
    spark.createDataFrame(data, "row_num long, k string, x double, ts timestamp, v double") \
        .createOrReplaceTempView("late_bounds")
    return data


@pytest.mark.parametrize("case", list(LATE_BOUNDS))
@pytest.mark.slow
def test_late_rows_carry_their_windows_bounds_as_results_do(spark, readings, case):
    """``window_start``/``window_end`` after ``wid`` on every late row: the oracle's extent of its
    wid, in the attribute's type (a landmark's start NULL), the late tuple inside it; none for a
    kind whose results have none."""
    clause, window, bounded = LATE_BOUNDS[case]
    rep = wid.replay(spark, f"SELECT k, count(*) AS n, max(v) AS hi FROM late_bounds {clause} GROUP BY k",
                     punctuate.slack(1))
    extent = ["wid", "window_start", "window_end"] if bounded else ["wid"]
    assert rep.late.columns == ["row_num", "k", "x", "ts", "v", *extent]
    assert [c for c in rep.results.columns if c in extent] == extent
    if not bounded:
        return
    late = rep.late.collect()
    assert late
    assert rep.late.schema["window_end"].dataType == rep.results.schema["window_end"].dataType
    attr = window.attr
    for row in late:
        start, end = window.extent(row.wid)
        assert oracle.seconds(row.window_end) == end
        if isinstance(window, oracle.Landmark):
            assert row.window_start is None
        else:
            assert oracle.seconds(row.window_start) == start <= oracle.seconds(row[attr])
        assert oracle.seconds(row[attr]) < end
