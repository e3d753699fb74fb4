"""Allowed lateness in replay, against a plain-Python event simulator of sliding windows."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import pytest

import wid
from wid import punctuate
from wid.errors import WidError

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


def test_default_is_todays_output(spark):
    _, _, punctuation = stream(spark, 6)
    today = wid.replay(spark, QUERY, punctuation=punctuation)
    zero = wid.replay(spark, QUERY, punctuation=punctuation, allowed_lateness=0)
    assert sorted(zero.results.collect()) == sorted(today.results.collect())
    assert sorted(zero.late.collect()) == sorted(today.late.collect())
    assert {r.revision for r in today.results.collect()} == {0}


def test_bad_lateness(spark):
    stream(spark, 7)
    with pytest.raises(WidError, match="non-negative"):
        wid.replay(spark, QUERY, allowed_lateness=-1)
    with pytest.raises(WidError, match="allowed_lateness applies"):
        wid.replay(spark, "SELECT count(*) AS n FROM s [SESSION 3 WATTR x]", allowed_lateness=2)
