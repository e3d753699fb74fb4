"""Replay of session windows against a plain-Python streaming simulator that re-sessionizes
the accepted tuples with the brute-force oracle at every event."""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction

from oracle import seconds, sessions

import wid
from wid import punctuate

SCHEMA = "row_num long, k string, x double, v long"


def simulate(rows, puncts, gap: Fraction):
    """``(results, late)``: results ``(k, wid, n, sum v, emit_row)``, late ``(row_num, wid)``."""
    events = sorted([(t["row_num"], 0, t) for t in rows] + [(p["row_num"], 1, p) for p in puncts],
                    key=lambda e: e[:2])
    keys = sorted({t["k"] for t in rows})
    accepted, frozen, bound = defaultdict(list), defaultdict(list), {}
    results, late = set(), set()

    def open_rows(k):
        members = {u["row_num"] for *_, run in frozen[k] for u in run}
        return [u for u in accepted[k] if u["row_num"] not in members]

    def close(k, emit_row):
        runs = [run for _, _, run in sessions(open_rows(k), gap, "x")]
        done = [run for run in runs if emit_row is None or seconds(run[-1]["x"]) + gap <= bound[k]]
        for run in sorted(done, key=lambda r: seconds(r[0]["x"])):
            w = len(frozen[k])
            frozen[k].append((seconds(run[0]["x"]), seconds(run[-1]["x"]) + gap, w, run))
            results.add((k, w, len(run), sum(u["v"] for u in run), emit_row))

    for row_num, kind, e in events:
        if kind == 1:
            for k in keys if e["k"] is None else [e["k"]]:
                bound[k] = max(bound.get(k, e["x"]), e["x"])
                close(k, row_num)
            continue
        k, x = e["k"], seconds(e["x"])
        hit = [w for start, end, w, _ in frozen[k] if start - gap < x < end]
        if hit:
            late.update((row_num, w) for w in hit)
            continue
        run = next(run for _, _, run in sessions(open_rows(k) + [e], gap, "x") if e in run)
        if len(run) == 1 and k in bound and x + gap <= bound[k]:
            late.add((row_num, None))
            continue
        accepted[k].append(e)
    for k in keys:
        close(k, None)
    return results, late


def run(spark, rows, puncts, gap):
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows], SCHEMA).createOrReplaceTempView("s")
    frame = spark.createDataFrame([(p["row_num"], p["k"], p["x"]) for p in puncts], "row_num long, k string, x double")
    rep = wid.replay(spark, f"SELECT k, count(*) AS n, sum(v) AS total FROM s [SESSION {gap} WATTR x] GROUP BY k",
                     punctuation=punctuate.embedded(frame))
    results = {(r.k, r.wid, r.n, r.total, r.emit_row) for r in rep.results.collect()}
    late = {(r.row_num, r.wid) for r in rep.late.collect()}
    return results, late


def test_a_tuple_bridging_two_emitted_sessions_is_late_for_both(spark):
    """g = 3: sessions {1} = [1, 4) and {6} = [6, 9) emitted at the punctuation 20; then 3.5
    touches both (6 - 3 < 3.5 < 4): late with ids 0 and 1. 30 opens session 2."""
    rows = [{"row_num": i, "k": "a", "x": x, "v": 1} for i, x in [(0, 1.0), (1, 6.0), (3, 3.5), (4, 30.0)]]
    puncts = [{"row_num": 2, "k": None, "x": 20.0}]
    results, late = run(spark, rows, puncts, 3)
    assert results == {("a", 0, 1, 1, 2), ("a", 1, 1, 1, 2), ("a", 2, 1, 1, None)}
    assert late == {(3, 0), (3, 1)}
    assert (results, late) == simulate(rows, puncts, Fraction(3))


def test_ordered_by_a_null_key_punctuates_that_key_only(spark):
    """g = 2, each key in x order: NULL's 5 closes NULL's session {0} (ends 2) at row 2 and not
    a's; a's 1 joins {0.5}; a's 3.5 closes [0.5, 3) at row 4; the rest close at the end."""
    rows = [{"row_num": i, "k": k, "x": x, "v": 1}
            for i, k, x in [(0, None, 0.0), (1, "a", 0.5), (2, None, 5.0), (3, "a", 1.0), (4, "a", 3.5)]]
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows], SCHEMA).createOrReplaceTempView("s")
    rep = wid.replay(spark, "SELECT k, count(*) AS n FROM s [SESSION 2 WATTR x] GROUP BY k",
                     punctuation=punctuate.ordered_by("k"))
    got = {(r.k, r.wid, r.n, r.emit_row) for r in rep.results.collect()}
    assert got == {(None, 0, 1, 2), (None, 1, 1, None), ("a", 0, 2, 4), ("a", 1, 1, None)}
    assert rep.late.count() == 0


def test_replay_matches_the_streaming_simulator_and_conserves(spark):
    rng = random.Random(11)
    rows, puncts, clock = [], [], 0.0
    for i in range(240):
        clock += rng.choice([0.5, 1, 2, 6])
        rows.append({"row_num": 2 * i, "k": rng.choice("abc"), "x": clock - rng.choice([0, 0, 0, 3, 9]),
                     "v": rng.randint(1, 9)})
        if rng.random() < 0.3:
            puncts.append({"row_num": 2 * i + 1, "k": rng.choice(["a", "b", "c", None]), "x": clock - 4})
    results, late = run(spark, rows, puncts, 2.5)
    expected = simulate(rows, puncts, Fraction(5, 2))
    assert (results, late) == expected
    assert late and any(w is None for _, w in late) and any(n > 1 for *_, n, _, _ in results)
    for k in "abc":  # conservation: emitted count + late tuples = the key's tuples
        emitted = sum(n for key, _, n, _, _ in results if key == k)
        lost = {r for r, _ in late} & {t["row_num"] for t in rows if t["k"] == k}
        assert emitted + len(lost) == sum(t["k"] == k for t in rows)


def test_without_late_tuples_replay_equals_the_query(spark):
    rng = random.Random(2)
    rows = [{"row_num": i, "k": rng.choice("ab"), "x": float(rng.randint(0, 200)), "v": 1} for i in range(100)]
    results, late = run(spark, rows, [], 4)
    exact = wid.query(spark, "SELECT k, count(*) AS n, sum(v) AS total FROM s [SESSION 4 WATTR x] GROUP BY k")
    assert late == set() and results == {(r.k, r.wid, r.n, r.total, None) for r in exact.collect()}
