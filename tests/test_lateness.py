"""Allowed lateness in replay, against plain-Python event simulators of sliding and slide-by-tuple
windows (sessions: tests/test_session_replay.py)."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import pytest

import wid
from wid import punctuate
from wid.errors import WidError
from wid.compiler.query import compile_query
from wid.stream import fca_replay

R, S = 10, 5
QUERY = f"SELECT k, count(*) AS n, sum(v) AS total FROM s [RANGE {R} SLIDE {S} WATTR x] GROUP BY k"


def simulate(rows, puncts, lateness):
    """``(results, late)``: results ``(k, wid, revision, n, total, emit_row)``; late ``(row_num, wid)``.
    Window w of key k: closed once the key's bound >= end = (w+1)S (revision 0 emitted), purged
    once the bound >= end + lateness; a tuple for a closed, unpurged window emits a new revision."""
    events = sorted([(t["row_num"], 0, t) for t in rows] + [(p["row_num"], 1, p) for p in puncts], key=lambda e: e[:2])
    keys = sorted({t["k"] for t in rows})
    bound, content, revision = {}, defaultdict(list), defaultdict(int)
    closed, results, late = set(), set(), set()

    def end(w):
        return (w + 1) * S

    def emit(k, w, emit_row, rev):
        members = content[(k, w)]
        results.add((k, w, rev, len(members), sum(m["v"] for m in members), emit_row))

    for row_num, kind, e in events:
        if kind == 1:
            for k in keys if e["k"] is None else [e["k"]]:
                bound[k] = max(bound.get(k, -math.inf), e["x"])
                for (key, w) in sorted(content):
                    if key == k and (k, w) not in closed and end(w) <= bound[k]:
                        closed.add((k, w))
                        emit(k, w, row_num, 0)
            continue
        k, x = e["k"], e["x"]
        for w in range(math.floor(x / S), math.floor((x + R) / S)):
            b = bound.get(k, -math.inf)
            if end(w) > b:
                content[(k, w)].append(e)
            elif end(w) + lateness > b:
                content[(k, w)].append(e)
                closed.add((k, w))
                revision[(k, w)] += 1
                emit(k, w, row_num, revision[(k, w)])
            else:
                late.add((row_num, w))
    for (k, w) in sorted(content):
        if (k, w) not in closed:
            emit(k, w, None, 0)
    return results, late


def stream(spark, seed):
    rng = random.Random(seed)
    rows, puncts, clock = [], [], 0
    for i in range(200):
        clock += rng.choice([0, 1, 2])
        rows.append({"row_num": 2 * i, "k": rng.choice("ab"), "x": clock - rng.choice([0, 0, 0, 4, 8, 13]),
                     "v": rng.randint(1, 9)})
        if rng.random() < 0.3:
            puncts.append({"row_num": 2 * i + 1, "k": rng.choice(["a", "b", None]), "x": clock - 2})
    spark.createDataFrame([(t["row_num"], t["k"], t["x"], t["v"]) for t in rows],
                          "row_num long, k string, x long, v long").createOrReplaceTempView("s")
    frame = spark.createDataFrame([(p["row_num"], p["k"], p["x"]) for p in puncts], "row_num long, k string, x long")
    return rows, puncts, punctuate.embedded(frame)


def collect(rep):
    results = {(r.k, r.wid, r.revision, r.n, r.total, r.emit_row) for r in rep.results.collect()}
    return results, {(r.row_num, r.wid) for r in rep.late.collect()}


@pytest.mark.slow
@pytest.mark.parametrize("lateness", [0, 4, 7])
def test_revisions_match_the_simulator_and_conserve(spark, lateness):
    rows, puncts, punctuation = stream(spark, 5)
    results, late = collect(wid.replay(spark, QUERY, punctuation=punctuation, allowed_lateness=lateness))
    assert (results, late) == simulate(rows, puncts, lateness)
    if lateness:
        assert any(rev > 0 for _, _, rev, *_ in results)
    else:
        assert all(rev == 0 for _, _, rev, *_ in results)
    exact = {(r.k, r.wid): r.n for r in wid.query(spark, QUERY).collect()}
    last = {}
    for k, w, rev, n, *_ in sorted(results, key=lambda r: r[2]):
        last[(k, w)] = n
    lost = defaultdict(int)
    for row_num, w in late:
        lost[(next(t["k"] for t in rows if t["row_num"] == row_num), w)] += 1
    assert {key: last.get(key, 0) + lost[key] for key in exact} == exact


@pytest.mark.slow
def test_default_is_todays_output(spark):
    _, _, punctuation = stream(spark, 6)
    today = wid.replay(spark, QUERY, punctuation=punctuation)
    zero = wid.replay(spark, QUERY, punctuation=punctuation, allowed_lateness=0)
    assert sorted(zero.results.collect()) == sorted(today.results.collect())
    assert sorted(zero.late.collect()) == sorted(today.late.collect())
    assert {r.revision for r in today.results.collect()} == {0}


def test_bad_lateness(spark):
    stream(spark, 7)
    with pytest.raises(WidError, match="allowed_lateness must be a finite number >= 0, got -1"):
        wid.replay(spark, QUERY, allowed_lateness=-1)
    with pytest.raises(WidError, match="allowed_lateness applies"):
        wid.replay(spark, "SELECT count(*) AS n FROM s [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num]", allowed_lateness=2)


FCA = ("SELECT g, count(*) AS n, sum(v) AS total FROM f [RANGE {r} RATTR a SLIDE {n} ROWS SATTR row_num] "
       "GROUP BY g")


def simulate_fca(rows, puncts, r, every, lateness, consistent):
    """Slide-by-tuple windows by their content: the ids are ``a`` of every ``every``-th tuple in
    arrival order (the first to arrive defines the window); window w of key k holds the accepted
    tuples with ``a <= w < a + r`` and ``w >= floor``, ``floor`` = the key's bound - L when the tuple
    arrived (consistent: a tuple with ``a < floor`` is not accepted). Emitted (revision 0) at the
    first punctuation with bound > w after it is defined, or on its definition when the key's bound
    passed it already; each accepted tuple for an emitted window emits its next revision; a window
    defined once a wildcard bound - L passed it is lost. Results ``(g, wid, revision, n, total,
    emit_row)``, late ``(row_num, wid)``."""
    events = sorted([(t["row_num"], 0, t) for t in rows] + [(p[0], 1, p) for p in puncts], key=lambda e: e[:2])
    order = sorted(rows, key=lambda t: t["row_num"])
    definer = {}
    for position, t in enumerate(order):
        if position % every == every - 1:
            definer.setdefault(t["a"], t["row_num"])
    keys = sorted({t["g"] for t in rows})
    bound, wildcard = dict.fromkeys(keys, -math.inf), -math.inf
    defined, lost, revision, floor = set(), set(), {}, {}
    results = set()

    def emit(k, w, emit_row):
        members = [t for t in order if t["row_num"] in floor and t["g"] == k and t["a"] <= w < t["a"] + r
                   and w >= floor[t["row_num"]]]
        if members:
            results.add((k, w, revision[(k, w)], len(members), sum(t["v"] for t in members), emit_row))

    for row_num, kind, e in events:
        if kind == 1:
            _, pattern, b = e
            wildcard = max(wildcard, b) if pattern is None else wildcard
            for k in keys if pattern is None else [pattern]:
                for w in sorted(w for w in defined if bound[k] <= w < b):
                    revision[(k, w)] = 0
                    emit(k, w, row_num)
                bound[k] = max(bound[k], b)
            continue
        k, a = e["g"], e["a"]
        if not (consistent and a < bound[k] - lateness):
            floor[row_num] = bound[k] - lateness
            for w in sorted(w for w in defined if a <= w < a + r and w >= floor[row_num] and (k, w) in revision):
                revision[(k, w)] += 1
                emit(k, w, row_num)
        if definer.get(a) == row_num:
            if a < wildcard - lateness:
                lost.add(a)
                continue
            defined.add(a)
            for j in keys:
                if a < bound[j]:
                    revision[(j, a)] = 0
                    emit(j, a, row_num)
    for k in keys:
        for w in sorted(defined):
            if (k, w) not in revision:
                revision[(k, w)] = 0
                emit(k, w, None)
    late = {(t["row_num"], w) for t in rows for w in definer if t["a"] <= w < t["a"] + r
            and (w in lost or t["row_num"] not in floor or w < floor[t["row_num"]])}
    return results, late


def fca_stream(spark, seed):
    """``a`` near 2/3 of the arrival index, a third of the tuples up to 8 behind; punctuations
    after a fifth of the tuples, per key or wildcard, some 2 too eager."""
    rng = random.Random(seed)
    rows, puncts, seen = [], [], -math.inf
    for i in range(150):
        t = {"row_num": 2 * i, "a": 2 * i // 3 - (rng.randint(0, 8) if rng.random() < 0.3 else 0),
             "g": rng.choice("xy"), "v": rng.randint(1, 9)}
        rows.append(t)
        seen = max(seen, t["a"])
        if rng.random() < 0.2:
            puncts.append((2 * i + 1, rng.choice(["x", "y", None]), seen - rng.choice([0, 2, 4])))
    spark.createDataFrame([(t["row_num"], t["a"], t["g"], t["v"]) for t in rows],
                          "row_num long, a long, g string, v long").createOrReplaceTempView("f")
    frame = spark.createDataFrame(puncts, "row_num long, g string, a long")
    return rows, puncts, frame


@pytest.mark.slow
@pytest.mark.parametrize("every, mode", [(1, "generous"), (3, "consistent")])
def test_slide_by_tuple_revisions_match_the_simulator_and_conserve(spark, every, mode):
    lateness = 3
    rows, puncts, frame = fca_stream(spark, 12)
    q = FCA.format(r=6, n=every)
    compiled = compile_query(spark, q)
    gen = punctuate.embedded(frame, mode=mode)
    results, late = fca_replay.replay(compiled, gen, lateness, chunk_rows=40)  # several chunks of the a axis
    got = {(r.g, r.wid, r.revision, r.n, r.total, r.emit_row) for r in compiled.finish(results, "emit_row", "revision")
           .collect()}
    dropped = {(r.row_num, r.wid) for r in late.collect()}
    expected = simulate_fca(rows, puncts, 6, every, lateness, mode == "consistent")
    assert (got, dropped) == expected
    assert dropped and any(rev > 0 for _, _, rev, *_ in got)
    last = {}
    for g, w, rev, n, *_ in sorted(got, key=lambda r: r[2]):
        last[(g, w)] = n
    group = {t["row_num"]: t["g"] for t in rows}
    missed = Counter((group[row], w) for row, w in dropped)
    exact = {(r.g, r.wid): r.n for r in wid.query(spark, q).collect()}
    assert {key: last.get(key, 0) + missed[key] for key in exact} == exact
