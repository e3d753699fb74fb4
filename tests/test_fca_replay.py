"""wid.replay of FCA windows (slide-by-tuple, FCB, FCU) against a plain-Python streaming
simulation of the paper's algorithm (section 6, start and end bins with processpunctuation).

The simulation walks the stream in arrival order, one dict of bins per key: a tuple adds its
start bin ``x`` and end bin ``x + r`` (each from the bin before it) and updates every bin in
``[x, x + r)``; a punctuation with bound ``b`` (strict: no later ``x < b``) emits the windows
defined so far in ``[B, b)`` (B = the key's previous bound) and purges the bins below ``b``.
A tuple with ``x < B`` is late for the windows ``w < B`` (consistent: for all of them). A
window defined after its key's bound passed it is emitted when its defining tuple arrives,
unless a wildcard bound passed it (then it is lost: its contributions are late); bins are
purged below the least of the key's and the wildcard bound. Window-ids are those of the
whole stream (docs/semantics.md section 3).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import pytest
from chispa import assert_df_equality

import wid
from tests.oracle import SlideByTuple, evaluate
from wid import punctuate
from wid.errors import WidError
from wid.stream import fca_replay
from wid.compiler.query import compile_query
from wid.stream.replay import Replay

R = 6
SCHEMA = "row_num long, a long, g string, v long, arrival_ts double"
VARIANTS = {
    "FCA": ("SLIDE 1 ROW SATTR row_num", {}),
    "FCB": ("SLIDE 3 ROWS SATTR row_num", {"every": 3}),
    "FCU": ("SLIDE 3 ROWS SATTR rank(a)", {"every": 3, "rank": True}),
}


def query(variant: str) -> str:
    return (f"SELECT g, count(*) AS n, sum(v) AS total, max(v) AS hi "
            f"FROM s [RANGE {R} RATTR a {VARIANTS[variant][0]}] GROUP BY g")


def stream(seed: int, n: int = 160) -> list[dict]:
    """Arrival order: ``a`` near twice the arrival index, a third of the tuples up to 8 behind
    (duplicates of ``a`` common); ``arrival_ts`` = 2/3 of the index (a clock on ``a``'s scale)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        behind = rng.randint(0, 8) if rng.random() < 0.3 else 0
        rows.append({"row_num": 3 * i + rng.randint(0, 1), "a": 2 * i // 3 - behind, "g": rng.choice("xyz"),
                     "v": rng.randint(-9, 9), "arrival_ts": 2 * i / 3})
    return rows


def register(spark, rows: list[dict]) -> None:
    shuffled = random.Random(0).sample(rows, len(rows))
    spark.createDataFrame([tuple(r[c] for c in ("row_num", "a", "g", "v", "arrival_ts")) for r in shuffled],
                          SCHEMA).repartition(4).createOrReplaceTempView("s")


def definers(rows: list[dict], variant: str) -> dict[int, int]:
    """Each window-id and the row_num of its first-arriving defining tuple (docs/semantics.md section 3)."""
    every = VARIANTS[variant][1].get("every", 1)
    order = sorted(rows, key=lambda t: (t["a"], t["row_num"]) if variant == "FCU" else t["row_num"])
    out: dict[int, int] = {}
    for position, t in enumerate(order):
        if position % every == every - 1:
            out[t["a"]] = min(out.get(t["a"], t["row_num"]), t["row_num"])
    return out


class KeyBins:
    """The paper's bins of one key: ``pos -> [count, sum, max]`` after the init bin."""

    def __init__(self):
        self.bins = {-math.inf: [0, 0, -math.inf]}

    def at(self, w) -> list:
        return list(self.bins[max(b for b in self.bins if b <= w)])

    def process_tuple(self, x: int, v: int, floor: float = -math.inf) -> None:
        """The tuple's contribution to the windows ``max(x, floor) <= w < x + R``."""
        start = x if floor == -math.inf else max(x, math.ceil(floor))
        if start >= x + R:
            return
        for b in (start, x + R):
            if b not in self.bins:
                self.bins[b] = self.at(b)
        for b, partial in self.bins.items():
            if start <= b < x + R:
                partial[0], partial[1], partial[2] = partial[0] + 1, partial[1] + v, max(partial[2], v)

    def purge(self, bound) -> None:
        if bound == -math.inf:
            return
        bound = math.ceil(bound)
        cover = self.at(bound)
        self.bins = {b: p for b, p in self.bins.items() if b == -math.inf or b > bound}
        self.bins[bound] = cover


def simulate(rows: list[dict], variant: str, puncts: list[tuple[int, str | None, float]], consistent: bool):
    """``(results {(g, w): (n, total, hi, emit_row)}, late Counter {(row_num, w)})``: a
    contribution is late unless its tuple went into the bins for its window before the
    window was emitted."""
    defining = definers(rows, variant)
    by_row = {row: w for w, row in defining.items()}
    events = sorted([(t["row_num"], 0, t) for t in rows] + [(p[0], 1, p) for p in puncts], key=lambda e: e[:2])
    keys = sorted({t["g"] for t in rows})
    bins = {k: KeyBins() for k in keys}
    bound = {k: -math.inf for k in keys}
    everyone = -math.inf  # the bound of wildcard punctuations
    defined: set[int] = set()
    results, added, emitted = {}, {}, {}

    def emit(k: str, windows: list[int], row_num: int | None, when: int) -> None:
        for w in windows:
            emitted[(k, w)] = when
            n, total, hi = bins[k].at(w)
            if n:
                results[(k, w)] = (n, total, hi, row_num)

    for when, (row_num, kind, item) in enumerate(events):
        if kind == 0:
            k, x = item["g"], item["a"]
            if item["row_num"] in by_row and by_row[item["row_num"]] >= everyone:  # else lost
                w = by_row[item["row_num"]]
                defined.add(w)
                for j in keys:
                    if w < bound[j]:  # closed for j before it existed: emitted now
                        emit(j, [w], row_num, when)
            if not (consistent and x < bound[k]):
                bins[k].process_tuple(x, item["v"], floor=bound[k] if x < bound[k] else -math.inf)
                added[item["row_num"]] = (when, bound[k])
            continue
        _, pattern, b = item
        everyone = max(everyone, b) if pattern is None else everyone
        for k in keys if pattern is None else [pattern]:
            if b > bound[k]:
                emit(k, sorted(w for w in defined if bound[k] <= w < b), row_num, when)
                bound[k] = b
            bins[k].purge(min(bound[k], everyone))
    for k in keys:
        emit(k, sorted(w for w in defined if w >= bound[k]), None, len(events))
    late = Counter()
    for t in rows:
        when, floor = added.get(t["row_num"], (math.inf, math.inf))
        for w in defining:
            if t["a"] <= w < t["a"] + R and not (when < emitted.get((t["g"], w), -1) and w >= floor):
                late[(t["row_num"], w)] += 1
    return results, late


def slack_punctuations(rows: list[dict], amount: int) -> list[tuple]:
    """``slack(amount)`` by its definition (docs/semantics.md section 7), not by wid.punctuate: after each
    tuple, a wildcard bound (max ``a`` so far) - amount; an FCA window ``w`` closes when ``w < bound``."""
    out, seen = [], -math.inf
    for t in sorted(rows, key=lambda t: t["row_num"]):
        seen = max(seen, t["a"])
        out.append((t["row_num"], None, seen - amount))
    return out


def heartbeat_punctuations(rows: list[dict], every: float, skew: float) -> list[tuple]:
    """``heartbeat(every, skew)`` by its definition: with each tuple, the tick ``T = k * every``
    at or before its ``arrival_ts`` and the wildcard bound ``T - skew``."""
    return [(t["row_num"], None, math.floor(t["arrival_ts"] / every) * every - skew) for t in rows]


def tightest(rows: list[dict], keyed: bool) -> list[tuple]:
    """Correct source punctuations: after each tuple, the least ``a`` still to come (of its
    key when ``keyed``; else of the stream, as a wildcard)."""
    out, low = [], defaultdict(lambda: math.inf)
    for t in reversed(rows):
        k = t["g"] if keyed else None
        if low[k] < math.inf:
            out.append((t["row_num"], k, low[k]))
        low[k] = min(low[k], t["a"])
    return out


def check(spark, rows, variant, replay, expected, late) -> None:
    """The replay equals the simulation, and conservation: emitted + late = exact, per window and key."""
    actual = {(r["g"], r["wid"]): (r["n"], r["total"], r["hi"], r["emit_row"]) for r in replay.results.collect()}
    assert actual == expected
    assert Counter((r["row_num"], r["wid"]) for r in replay.late.collect()) == late
    exact = {(r["g"], r["wid"]): r["n"] for r in wid.query(spark, query(variant)).collect()}
    group = {t["row_num"]: t["g"] for t in rows}
    missed = Counter((group[row], w) for (row, w), c in late.items() for _ in range(c))
    assert {kw: actual.get(kw, (0,))[0] + missed[kw] for kw in exact} == exact
    assert set(actual) | set(missed) == set(exact)


#: case -> (variant, generator of the source punctuations, the same punctuations derived here).
CASES = {
    "FCA-embedded-keyed-consistent": ("FCA", lambda source: punctuate.embedded(source, mode="consistent"),
                                      lambda rows, keyed: keyed),
    "FCB-heartbeat": ("FCB", lambda source: punctuate.heartbeat(4.0, 1.0),
                      lambda rows, keyed: heartbeat_punctuations(rows, 4.0, 1.0)),
    "FCU-embedded-keyed": ("FCU", lambda source: punctuate.embedded(source), lambda rows, keyed: keyed),
    "FCA-slack-generous": ("FCA", lambda source: punctuate.slack(3), lambda rows, keyed: slack_punctuations(rows, 3)),
    "FCB-slack-consistent": ("FCB", lambda source: punctuate.slack(2, mode="consistent"),
                             lambda rows, keyed: slack_punctuations(rows, 2)),
    "FCU-slack-generous": ("FCU", lambda source: punctuate.slack(4), lambda rows, keyed: slack_punctuations(rows, 4)),
}
SLOW = {"FCA-slack-generous", "FCB-slack-consistent", "FCU-slack-generous"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in CASES])
def test_replay_follows_the_streaming_bins(spark, case):
    """Disordered stream, punctuations that some tuples violate: emitted rows (with emit_row),
    late rows and conservation as the streaming simulation has them."""
    variant, generator, derived = CASES[case]
    rows = stream(seed=list(CASES).index(case))
    register(spark, rows)
    keyed = [(row, g, b + 2) for row, g, b in tightest(rows, keyed=True)[::3]]  # 2 too eager: some late
    spark.createDataFrame(keyed, "row_num long, g string, a long").createOrReplaceTempView("p")
    gen = generator(spark.table("p"))
    puncts = derived(rows, keyed)
    expected, late = simulate(rows, variant, puncts, gen.mode == "consistent")
    assert late and expected
    compiled = compile_query(spark, query(variant))
    results, late_rows = fca_replay.replay(compiled, gen, chunk_rows=30)  # 5 chunks of the a axis
    check(spark, rows, variant, Replay(compiled.finish(results, "emit_row"), late_rows, compiled, gen), expected, late)


@pytest.mark.parametrize("variant", ["FCA", *[pytest.param(v, marks=pytest.mark.slow) for v in ("FCB", "FCU")]])
def test_exact_source_punctuations_give_the_query_with_nothing_late(spark, variant):
    """Correct punctuations (wildcard and per key): every window emitted with wid.query's
    aggregates, at the first punctuation past it, and nothing late."""
    rows = stream(seed=40 + len(variant))
    register(spark, rows)
    correct = tightest(rows, keyed=False)[::2] + tightest(rows, keyed=True)[1::2]
    spark.createDataFrame(correct, "row_num long, g string, a long").createOrReplaceTempView("p")
    gen = punctuate.embedded(spark.table("p"))
    replay = wid.replay(spark, query(variant), gen)
    assert replay.late.count() == 0
    assert_df_equality(replay.results.drop("emit_row", "revision"), wid.query(spark, query(variant)),
                       ignore_row_order=True, ignore_nullable=True)
    expected, late = simulate(rows, variant, correct, False)
    assert not late and sum(row is not None for *_, row in expected.values()) > len(expected) / 2
    check(spark, rows, variant, replay, expected, late)


@pytest.mark.slow
def test_without_punctuations_everything_closes_at_the_end(spark):
    rows = stream(seed=7)
    register(spark, rows)
    replay = wid.replay(spark, query("FCB"))
    assert replay.late.count() == 0
    assert {r["emit_row"] for r in replay.results.collect()} == {None}
    expected = evaluate(rows, SlideByTuple(R, "a", every=3), {"n": ("count", None), "total": ("sum", "v"),
                                                               "hi": ("max", "v")}, group_by=["g"])
    assert {(r["g"], r["wid"]): (r["n"], r["total"], r["hi"]) for r in replay.results.collect()} == \
        {(e["g"], e["wid"]): (e["n"], e["total"], e["hi"]) for e in expected}


def test_aggregates_the_bins_cannot_hold_are_refused(spark):
    register(spark, stream(seed=3, n=20))
    with pytest.raises(WidError, match="replay of slide-by-tuple windows holds count, sum, avg, min and max"):
        wid.replay(spark, "SELECT count(DISTINCT v) AS kinds FROM s [RANGE 6 RATTR a SLIDE 1 ROW SATTR row_num]",
                   punctuate.slack(2))
    with pytest.raises(WidError, match="punctuation must come from wid.punctuate"):
        wid.replay(spark, query("FCA"), punctuation=3)


@pytest.mark.parametrize("key, late", [(float("nan"), {4}), (None, {0, 2, 4, 6}), (2.0, set())],
                         ids=["nan-key", "wildcard", "other-key"])
def test_a_bound_on_the_nan_key_binds_that_key_alone(spark, key, late):
    """A source punctuation far ahead on the NaN key makes that key's tuples late and no other's; on
    NULL (the wildcard) every key's; on a key without tuples none (pandas reads NaN as NULL: the
    key's NaN flag tells them apart, docs/semantics.md section 4)."""
    spark.createDataFrame([(0, 1.5, 0.0, 1), (2, 1.5, 1.0, 2), (4, float("nan"), 2.0, 3), (6, 1.5, 3.0, 4)],
                          "row_num long, k double, x double, v long").createOrReplaceTempView("nan_keys")
    bound = spark.createDataFrame([(0, key, 100.0)], "row_num long, k double, x double")
    out = wid.replay(spark, "SELECT k, count(*) AS n FROM nan_keys [RANGE 4 RATTR x SLIDE 1 ROW SATTR row_num] GROUP BY k",
                     punctuate.embedded(bound))
    assert {r.row_num for r in out.late.collect()} == late


#: The nightly Hypothesis profile's counterexample of 2026-11-26 (test_properties'
#: test_replay_slide_by_tuple_windows_with_exact_punctuations): LONG values just above 2**53.
_NEAR_2_53 = [(-2, 927, None), (-1, 927, None), (1, 928, None), (3, 929, None), (4, 932, None), (7, 937, None),
              (9, 941, None), (11, 942, -6344.0), (13, 943, None), (16, 947, -6885.3), (17, 950, None),
              (18, 954, -4195.0), (19, 957, None), (20, 958, None), (23, 959, None), (26, 961, 5482.4),
              (28, 968, None), (30, 984, None), (32, 990, None), (34, 993, None), (35, 994, None),
              (38, 1002, None), (40, 1013, None), (43, 1017, 381.73), (45, 1017, None), (46, 1018, 3776.3),
              (48, 1018, None), (49, 1033, 9509.0), (50, 1036, None), (53, 1037, None), (55, 1038, -860.97),
              (57, 1038, None), (58, 1039, -9772.0), (60, 1040, -334.82), (61, 1043, 7782.4), (64, 1043, None),
              (65, 1044, None), (66, 1045, None), (67, 1045, None), (69, 1046, -4941.0), (70, 1047, 1003.7),
              (72, 1048, 134.69), (73, 1049, None)]


@pytest.mark.slow
def test_exact_punctuations_on_longs_beyond_2_53_give_the_query(spark):
    """Row 61 (x = ...043, odd: a double rounds it to ...044) arrives just before the punctuation
    whose bound is its own x: the purge below that bound keeps its window."""
    rows = [(r, 9_007_199_254_740_000 + x, v) for r, x, v in _NEAR_2_53]
    spark.createDataFrame(rows, "row_num long, x long, v double").createOrReplaceTempView("near_2_53")
    arrival = sorted(r for r, _, _ in rows)
    after = [arrival[i] for i in (6, 13, 20, 27, 34, 41)]  # each punctuation's bound: the least x still to come
    bounds = [(a, min(x for r, x, _ in rows if r > a)) for a in after]
    punctuations = spark.createDataFrame(bounds, "row_num long, x long")
    query = "SELECT count(*) AS n, count(v) AS nv, max(v) AS hiv FROM near_2_53 [RANGE 1 RATTR x SLIDE 1 ROW SATTR row_num]"
    rep = wid.replay(spark, query, punctuate.embedded(punctuations))
    assert rep.late.count() == 0
    got = {r["wid"]: (r["n"], r["nv"], r["hiv"]) for r in rep.results.collect()}
    want = {r["wid"]: (r["n"], r["nv"], r["hiv"]) for r in wid.query(spark, query).collect()}
    assert got == want
    assert got[9_007_199_254_741_043] == (2, 1, 7782.4)
