"""Flink discretization (Traub, seed 001): the thesis's examples and queries, and the compiled
path and sequential scan against the event-by-event simulator."""

from __future__ import annotations

import random

import pytest
from tests.operational_sim import aggregate, simulate_flink

import wid
from wid.bucket.flink.bucket import flink_bucket, path
from wid.errors import WidError
from wid.windows import flink
from wid.windows.flink import (
    CountEviction,
    CountTrigger,
    DeltaEviction,
    DeltaTrigger,
    Discretization,
    PunctuationEviction,
    PunctuationTrigger,
    TimeEviction,
    TimeTrigger,
    TumblingEviction,
)

SCHEMA = "row_num long, v double, k string, arrival_ts double, punct boolean"


def stream(spark, rows):
    full = [{"v": 0.0, "k": "a", "punct": False, "arrival_ts": float(r["row_num"]), **r} for r in rows]
    full = [{**r, "v": float(r["v"]), "arrival_ts": float(r["arrival_ts"])} for r in full]
    spark.createDataFrame([tuple(r[c.split()[0]] for c in SCHEMA.split(", ")) for r in full], SCHEMA) \
        .createOrReplaceTempView("s")
    return full


def windows(spark, d, keyed=False):
    key = "k, " if keyed else ""
    out = wid.query(spark, f"SELECT wid, {key}sort_array(collect_list(row_num)) AS ids FROM s [flink]"
                           + (" GROUP BY k" if keyed else ""), d)
    return {((r.k, r.wid) if keyed else r.wid): list(r.ids) for r in out.collect()}


def test_count_trigger_start_value_gives_full_sliding_windows(spark):
    stream(spark, [{"row_num": i} for i in range(1, 10)])
    d = Discretization([CountTrigger(2, start=-2)], [CountEviction(4)])
    assert d.compiled
    got = windows(spark, d)
    # windows [1..4], [3..6], [5..8], then the end of the stream emits the buffer (6..9)
    assert got == {0: [1, 2, 3, 4], 1: [3, 4, 5, 6], 2: [5, 6, 7, 8], 3: [6, 7, 8, 9]}


def test_count_eviction_deleting_three_gives_windows_of_five_overlapping_by_two(spark):
    stream(spark, [{"row_num": i} for i in range(1, 13)])
    got = windows(spark, Discretization([CountTrigger(3, start=-2)], [CountEviction(5, delete=3)]))
    assert got[0] == [1, 2, 3, 4, 5] and got[1] == [4, 5, 6, 7, 8] and got[2] == [7, 8, 9, 10, 11]


def tagged_windows(spark, d, how):
    """Emission -> sorted row_nums from the tags of path ``how`` (the scan, or a compiled path)."""
    tags = flink_bucket(spark.table("s"), d, how).collect()
    return {w: sorted(r.row_num for r in tags if r.wid_lo <= w <= r.wid_hi)
            for w in sorted({w for r in tags for w in range(r.wid_lo, r.wid_hi + 1)})}


@pytest.mark.slow
def test_several_count_evictions_keep_their_own_counters(spark):
    """Seed 001, C.1 (Listing 16), items 1..10 (v = row_num), count TPs every 2 and every 3, count
    EPs (max 2, delete 2) and (max 3, delete 3). By hand, 0-based arrival j of item j+1:
    TP2 fires at j = 2, 4, 6, 8; TP3 at j = 3, 6, 9. EP(2,2): counter >= 2 at j = 2, 4, 6, 8 ->
    delete 2; EP(3,3): counter >= 3 at j = 3, 6, 9 -> delete 3 (the max wins, at most the buffer).
      j=2: emit {1,2}; delete 2 -> [3]      j=3: emit {3}; EP(3,3) deletes 3 -> [4]
      j=4: emit {4}; delete 2 -> [5]         j=5: -> [5,6]
      j=6: emit {5,6}; delete 3 -> [7]       j=7: -> [7,8]
      j=8: emit {7,8}; delete 2 -> [9]       j=9: emit {9}; delete 3 -> [10];  end: emit {10}
    A size-based EP(3,3) would see one item at j=3 and keep it: {3,4} from the fourth item on."""
    stream(spark, [{"row_num": i, "v": i} for i in range(1, 11)])
    d = Discretization([CountTrigger(2), CountTrigger(3)], [CountEviction(2, delete=2), CountEviction(3, delete=3)])
    sums = {0: 3, 1: 3, 2: 4, 3: 11, 4: 15, 5: 9, 6: 10}
    assert d.path == "chain"
    got = wid.query(spark, "SELECT wid, sum(v) AS total FROM s [flink]", d).collect()
    assert {r.wid: r.total for r in got} == sums
    expected = {0: [1, 2], 1: [3], 2: [4], 3: [5, 6], 4: [7, 8], 5: [9], 6: [10]}
    assert tagged_windows(spark, d, "chain") == tagged_windows(spark, d, "scan") == expected


def test_tumbling_eviction_clears_the_buffer_on_every_trigger(spark):
    """Seed 001, C.5: count TPs every 8 and every 5 over items 1..20 fire at j = 5, 8, 10, 15, 16;
    each firing emits and clears: {1..5}, {6,7,8}, {9,10}, {11..15}, {16}, end {17..20}."""
    stream(spark, [{"row_num": i, "v": i} for i in range(1, 21)])
    d = Discretization([CountTrigger(8), CountTrigger(5)], [TumblingEviction()])
    assert d.path == "chain" and flink.from_dict({"triggers": [{"kind": "count", "every": 8},
                                                               {"kind": "count", "every": 5}],
                                                  "evictions": [{"kind": "tumbling"}]}) == d
    got = wid.query(spark, "SELECT wid, sum(v) AS total FROM s [flink]", d).collect()
    assert {r.wid: r.total for r in got} == {0: 15, 1: 21, 2: 19, 3: 65, 4: 16, 5: 74}
    assert tagged_windows(spark, d, "chain") == tagged_windows(spark, d, "scan")
    one = Discretization([CountTrigger(3, start=-2)], [TumblingEviction()])  # first firing at j = 5
    assert one.path == "columns"
    assert tagged_windows(spark, one, "columns") == {0: [1, 2, 3, 4, 5], 1: [6, 7, 8], 2: [9, 10, 11],
                                                     3: [12, 13, 14], 4: [15, 16, 17], 5: [18, 19, 20]}


def test_active_time_policies_close_windows_without_data(spark):
    stream(spark, [{"row_num": i, "arrival_ts": t} for i, t in enumerate([1, 2, 4, 5, 9, 11])])
    d = Discretization([TimeTrigger(2, delay=2, start=0)], [TimeEviction(4)])
    assert d.compiled
    got = windows(spark, d)
    # [0,4) = {1,2}, [2,6) = {2,4,5}, [4,8) = {4,5}, [6,10) = {9}; the end emits {9, 11}
    assert got == {0: [0, 1], 1: [1, 2, 3], 2: [2, 3], 3: [4], 4: [4, 5]}


def test_passive_time_trigger_borders_follow_the_items(spark):
    """The digest's failure case without active policies: items at 1, 2, 4, 5, 9, 11, time TP
    slide 2 (borders 4, 6, 8, 10), time EP size 4. A passive TP fires only on the first real
    item past a border, so the emissions end at 4, 9, 11 (not 6, 8, 10) and the EP, notified
    at real items only, sets the lower borders at 5 - 4 and 9 - 4: the windows [0,4), [1,9),
    [5,11) (the thesis's [2,9), [6,11) evicts ts <= now - 4; wid pins ts < now - 4)."""
    stream(spark, [{"row_num": i, "arrival_ts": t} for i, t in enumerate([1, 2, 4, 5, 9, 11])])
    d = Discretization([TimeTrigger(2, delay=2, start=0, active=False)], [TimeEviction(4)])
    assert path(spark.table("s"), d) == "chain"
    # {1,2} at 4; {1,2,4,5} at 9 (the border 6 and 8 pass unseen); {5,9} at 11; the end emits {9,11}
    assert windows(spark, d) == {0: [0, 1], 1: [0, 1, 2, 3], 2: [3, 4], 3: [4, 5]}
    active = windows(spark, Discretization([TimeTrigger(2, delay=2, start=0)], [TimeEviction(4)]))
    assert active[1] == [1, 2, 3] and active[3] == [4]  # [2,6) and [6,10) with fake items


def test_several_triggers_fire_on_any_and_several_evictions_evict_the_max(spark):
    rows = stream(spark, [{"row_num": i, "arrival_ts": 0.4 * i} for i in range(20)])
    d = Discretization([CountTrigger(5), TimeTrigger(1.5)], [CountEviction(6), TimeEviction(1.0)])
    assert not d.compiled
    expected = {w: [r["row_num"] for r in c] for _, w, c in simulate_flink(rows, d)}
    assert windows(spark, d) == expected
    # a count TP alone would fire 3 times; with the time TP there are more emissions
    assert len(expected) > 4


@pytest.mark.parametrize("name, d, compiled", [
    ("Q1 last 5 s every 1 s", Discretization([TimeTrigger(1)], [TimeEviction(5)]), True),
    ("Q2 last 100 items every minute", Discretization([TimeTrigger(60)], [CountEviction(100)]), True),
    ("Q4 per-group count 100", Discretization([CountTrigger(100)], [CountEviction(100)], per_group=("k",)), True),
    # the count EP's own counter deletes one item per arrival past 1M even after the time EP's
    # evictions, and the ticks evict too: no closed positions, the scan
    ("Q5 every 5 min the last 1M items not older than 10 min",
     Discretization([TimeTrigger(300)], [CountEviction(1_000_000), TimeEviction(600)]), False),
    ("Q3 central count 100 + groupBy", Discretization([CountTrigger(100)], [CountEviction(100)]), True),
    ("Q10 central time TP + distributed count EP",
     Discretization([TimeTrigger(60)], [CountEviction(50)], per_group=("k",)), True),
])
def test_thesis_queries_match_the_simulator(spark, name, d, compiled):
    rng = random.Random(name)
    t, rows = 0.0, []
    for i in range(600):
        t += rng.choice([0.5, 1, 2, 4])
        rows.append({"row_num": i, "v": float(rng.randint(0, 9)), "k": rng.choice("ab"), "arrival_ts": t})
    rows = stream(spark, rows)
    assert d.compiled == compiled, name
    if name.startswith("Q5"):  # scale 1M / 10 min down to this stream: 40 items, 60 s
        d = Discretization([TimeTrigger(30)], [CountEviction(40), TimeEviction(60)])
    out = wid.query(spark, "SELECT wid, k, count(*) AS n, max(v) AS hi, min(row_num) AS first, "
                           "max(row_num) AS last FROM s [flink] GROUP BY k", d)
    got = {(r.k, r.wid, r.n, r.hi, r.first, r.last) for r in out.collect()}
    expected = set()
    for key, w, content in simulate_flink(rows, d):
        for k in sorted({r["k"] for r in content}):
            part = [r for r in content if r["k"] == k]
            expected.add((k, w, len(part), max(r["v"] for r in part), part[0]["row_num"], part[-1]["row_num"]))
    assert got == expected


def test_central_and_distributed_policies_differ(spark):
    stream(spark, [{"row_num": i, "k": "ab"[i % 3 == 0]} for i in range(12)])
    central = windows(spark, Discretization([CountTrigger(3)], [CountEviction(3)]), keyed=True)
    distributed = windows(spark, Discretization([CountTrigger(3)], [CountEviction(3)], per_group=("k",)), keyed=True)
    assert central[("a", 0)] == [1, 2] and central[("b", 0)] == [0]  # one buffer, split by GROUP BY
    assert distributed[("a", 0)] == [1, 2, 4] and distributed[("b", 0)] == [0, 3, 6]  # a buffer per group


def test_delta_and_punctuation_policies(spark):
    xs = [0, 1, 1.5, 4, 4.2, 9, 9.5, 10, 16]
    marks = [False, False, True, False, False, True, False, False, False]
    rows = stream(spark, [{"row_num": i, "v": x, "punct": m} for i, (x, m) in enumerate(zip(xs, marks))])
    # delta TP > 2 from the last firing item (the first item is the first reference)
    d = Discretization([DeltaTrigger(2, "v")], [DeltaEviction(5, "v")])
    # delta EP > 5 from the arriving item: 9 evicts 0, 1, 1.5 (|4 - 9| = 5 stays); 16 evicts 9, 9.5, 10
    assert windows(spark, d) == {0: [0, 1, 2], 1: [0, 1, 2, 3, 4], 2: [5, 6, 7], 3: [8]}
    # punctuation TP: a marked item fires (and opens the next window); punctuation EP clears the buffer
    d = Discretization([PunctuationTrigger()], [PunctuationEviction()])
    assert windows(spark, d) == {0: [0, 1], 1: [2, 3, 4], 2: [5, 6, 7, 8]}
    d = Discretization([DeltaTrigger(0.3, ("v",), flink.cosine), CountTrigger(4)], [CountEviction(3)])
    assert windows(spark, d) == {w: [r["row_num"] for r in c] for _, w, c in simulate_flink(rows, d)}


def test_plan_section(spark):
    d = flink.from_dict({"triggers": [{"kind": "time", "granularity": 1}],
                         "evictions": [{"kind": "time", "granularity": 5}, {"kind": "count", "max": 10}],
                         "per_group": ["k"]})
    assert d == Discretization([TimeTrigger(1)], [TimeEviction(5), CountEviction(10)], per_group=("k",))
    passive = flink.from_dict({"triggers": [{"kind": "time", "granularity": 2, "active": False}]})
    assert passive == Discretization([TimeTrigger(2, active=False)]) and passive.path == "chain"
    with pytest.raises(WidError, match="policy kind"):
        flink.from_dict({"triggers": [{"kind": "sometimes"}]})
    with pytest.raises(WidError, match="unknown key"):
        flink.from_dict({"trigger": []})
    with pytest.raises(WidError, match="a policy is a table"):
        flink.from_dict({"triggers": ["count"]})
    assert flink.from_dict({"triggers": [{"kind": "count", "every": 2}], "per_group": "seg"}).per_group == ("seg",)


@pytest.mark.parametrize("make, message", [
    (lambda: Discretization([]), "at least one trigger"),
    (lambda: CountTrigger(0), "CountTrigger every must be a positive whole number, got 0"),
    (lambda: CountTrigger(3, start=3), "below every"),
    (lambda: CountEviction(3, delete=4), "at most max"),
    (lambda: TimeTrigger(-1), "TimeTrigger granularity must be a finite number > 0, got -1"),
    (lambda: TimeEviction(10**400), "TimeEviction granularity must be a finite number > 0, got 1000...000"),
    (lambda: Discretization([DeltaTrigger(-1, "v")]), ">= 0"),
    (lambda: TimeTrigger(1, active="no"), "true or false"),
    (lambda: TimeTrigger(1, delay=float("nan")), "delay must be a finite number"),
    (lambda: DeltaTrigger(float("nan"), "v"), "threshold must be a finite number"),
    (lambda: DeltaEviction(float("inf"), "v"), "threshold must be a finite number"),
    (lambda: TimeTrigger(1, start=float("nan")), "start must be a finite number"),
    (lambda: CountTrigger(2, start=True), "start must be a whole number"),
    (lambda: Discretization([CountTrigger(2)], "k"), "eviction policies are CountEviction"),
    (lambda: Discretization([CountEviction(2)]), "trigger policies are CountTrigger"),
])
def test_bad_policies(make, message):
    with pytest.raises(WidError, match=message):
        make()


# (discretization, path on a non-decreasing v); with delta policies it also runs on an unordered v (scan)
FAMILIES = [
    (Discretization([CountTrigger(4)], [CountEviction(6)]), "columns"),
    (Discretization([CountTrigger(3, start=-3)], [CountEviction(7, delete=2)], per_group=("k",)), "columns"),
    (Discretization([CountTrigger(5)]), "columns"),
    (Discretization([TimeTrigger(1.5)], [TimeEviction(3)]), "columns"),
    (Discretization([TimeTrigger(2, delay=1)], [CountEviction(5)], per_group=("k",)), "columns"),
    (Discretization([TimeTrigger(1)], [CountEviction(4), TimeEviction(2.5)]), "scan"),
    (Discretization([TimeTrigger(1, start=-1.5)], [TimeEviction(2)], per_group=("k",)), "columns"),
    (Discretization([CountTrigger(3)], [TimeEviction(2)]), "chain"),
    (Discretization([CountTrigger(3, start=-1)], [TimeEviction(2), DeltaEviction(4, "v")]), "chain"),
    (Discretization([TimeTrigger(1.5, active=False)], [TimeEviction(3)]), "chain"),
    (Discretization([TimeTrigger(2, delay=1, active=False)], [CountEviction(5)], per_group=("k",)), "chain"),
    (Discretization([TimeTrigger(1, start=-1.5, active=False)], [CountEviction(4), TimeEviction(2.5)]), "chain"),
    (Discretization([DeltaTrigger(3, "v")], [DeltaEviction(5, "v")]), "chain"),
    (Discretization([DeltaTrigger(3, "v")], [CountEviction(6), DeltaEviction(6, "v")]), "chain"),
    (Discretization([DeltaTrigger(2, "v")], [TimeEviction(3), CountEviction(4)], per_group=("k",)), "chain"),
    (Discretization([DeltaTrigger(0, "v")], [CountEviction(5, delete=2)]), "chain"),
    (Discretization([TimeTrigger(1.5), CountTrigger(4)], [CountEviction(5)], per_group=("k",)), "scan"),
    (Discretization([TimeTrigger(1, active=False), CountTrigger(4)], [CountEviction(4)]), "chain"),
    (Discretization([CountTrigger(4)], [CountEviction(6, delete=2), TimeEviction(3)]), "chain"),
    (Discretization([CountTrigger(2), CountTrigger(3)], [CountEviction(2, delete=2), CountEviction(3, delete=3)]),
     "chain"),
    (Discretization([CountTrigger(4)], [CountEviction(7, delete=2), CountEviction(5, delete=3)], per_group=("k",)),
     "chain"),
    (Discretization([TimeTrigger(2, active=False)], [CountEviction(4, delete=2), TimeEviction(3)]), "chain"),
    (Discretization([CountTrigger(8), CountTrigger(5)], [TumblingEviction()]), "chain"),
    (Discretization([CountTrigger(3, start=-2)], [TumblingEviction()], per_group=("k",)), "columns"),
    (Discretization([DeltaTrigger(3, "v"), CountTrigger(5)], [TumblingEviction(), CountEviction(3)]), "chain"),
    (Discretization([TimeTrigger(1.5)], [TumblingEviction()]), "scan"),
    (Discretization([PunctuationTrigger(), CountTrigger(6)], [PunctuationEviction(), TimeEviction(3)],
                    per_group=("k",)), "scan"),
]
CASES = [(d, expected, ordered) for d, expected in FAMILIES
         for ordered in ([True, False] if any(getattr(p, "attrs", ()) for p in d.triggers + d.evictions) else [True])]


@pytest.mark.parametrize("d, expected, ordered", CASES,
                         ids=[f"family{i}-{'ordered' if o else 'unordered'}" for i, (_, _, o) in enumerate(CASES)])
def test_engine_matches_the_simulator(spark, d, expected, ordered):
    rng = random.Random(f"{d!r}/{ordered}")
    t, v, rows = 0.0, 0.0, []
    for i in range(150):
        t += rng.choice([0, 0.5, 0.5, 1, 2.5])
        v = v + rng.choice([0, 1, 2]) if ordered else float(rng.randint(0, 20))
        rows.append({"row_num": 2 * i + rng.randint(0, 1), "v": v, "k": rng.choice("abc"), "arrival_ts": t,
                     "punct": rng.random() < 0.1})
    rows = stream(spark, rows)
    assert path(spark.table("s"), d) == (expected if ordered else "scan")
    keyed = bool(d.per_group)
    key = "k, " if keyed else ""
    out = wid.query(spark, f"SELECT wid, {key}count(*) AS n, sum(v) AS total, min(row_num) AS lo, "
                           f"max(row_num) AS hi FROM s [flink]" + (" GROUP BY k" if keyed else ""), d)
    got = {(*([r.k] if keyed else []), r.wid, r.n, r.total, r.lo, r.hi) for r in out.collect()}
    expected_windows = {(*w, ids[0], ids[-1]) for *w, ids in aggregate(simulate_flink(rows, d))}
    assert got == expected_windows
