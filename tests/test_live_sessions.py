"""Live mode's session step without Spark (wid.stream.live.sessions.steps.advance_sessions), over any
split into micro-batches, against an event-by-event simulation of docs/semantics.md's session
rules (allowed lateness 0), written here from the text with exact Fractions:

per key ``k`` with bound ``B(k)`` (the running max of the punctuations binding ``k``: its value,
or NULL for every key), a tuple at ``x`` touches a session (first ``start``, last ``last``) when
``start - g <= x <= last + g`` (sessions that touch merge); an emitted session is forgotten
(Flink's cleanup at allowed lateness 0); touching no open session with ``x + g < B(k)`` a tuple
is late with ``wid`` NULL; else it merges with the open sessions it touches. A punctuation emits the
open sessions of the keys it binds with ``last + g < B(k)`` (a tuple at ``B(k)`` may still
come), in start order, ids counting the key's emitted sessions; the end of the stream emits the
rest (``emit_row`` NULL). State between batches goes through the state store's row format, as
in the processor. Spark's own streaming session test is transcribed too.

With a gap per tuple (Spark's dynamic gap) a tuple at ``x`` with gap ``h`` spans ``[x, x + h]``
and a session ends at the largest ``x + h`` of its tuples (its ``end``): the same rules with
``start <= x + h`` and ``x <= end`` for touching, ``end < B`` for complete and ``x + h < B``
for late.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from itertools import accumulate

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (DataType, DecimalType, DoubleType, IntegerType, LongType, StringType, StructField,
                               StructType)

from wid.aggregate.partials import Aggregate
from wid.stream.live.arrival import COUNT
from wid.stream.live.sessions.scans import SessionState
from wid.stream.live.sessions.steps import advance_sessions
from wid.stream.live.state_rows import Frames, state_frame
from wid.stream.live.windows import SHAPE, Bounds, Layout
from wid.stream.live.sessions.runs import Peaks, advance_in_order, numbers
from wid.stream.sessions import KeySession, KeySessions

KEYS = ["a", "b", None]
DOUBLE_KEYS = {"a": 1.5, "b": -2.25, None: None}  # a NULL double key reads back from state as None, not NaN


def schemas(key: DataType, x: DataType = DoubleType(),
            dynamic: bool = False) -> tuple[StructType, StructType, StructType]:
    """The processor's state schemas, key ``k`` of type ``key``, ``x`` of type ``x``: open
    sessions (count, sum, least and largest x; ``dynamic``: and the largest end ``x + h``),
    counts of emitted sessions, bound table."""
    k = StructField("k", key)
    partials = [StructField(f"_wid_p{i}", t) for i, t in enumerate([LongType(), DoubleType(), x, x, x][:4 + dynamic])]
    return (StructType([k, *partials]), StructType([k, StructField(COUNT, LongType())]),
            StructType([StructField(SHAPE, IntegerType()), k, StructField("wid_closed", x)]))


AGGREGATES = (Aggregate("n", "count"), Aggregate("total", "sum", "v"), Aggregate("first", "min", "x"),
              Aggregate("last", "max", "x"))

delay = st.one_of(st.just(0), st.integers(0, 60).map(lambda i: i / 8))  # behind arrival: disorder, ties
value = st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: round(v, 2)))
tuple_ = st.tuples(st.just("t"), st.sampled_from(KEYS), delay, value)
punctuation = st.tuples(st.just("p"), st.sampled_from(KEYS), delay)  # None: every key
stream = st.lists(st.one_of(tuple_, tuple_, tuple_, punctuation), min_size=1, max_size=40)
pace = st.sampled_from([0.3, 0.7, 1.1])  # x per element at arrival (x = i * pace - 3.7 - delay)
cuts = st.lists(st.floats(0, 1), min_size=1, max_size=5)  # where to split, as fractions of the stream
gaps = st.sampled_from([0.5, 1.0, 2.3, 7.0])


def layout(gap: float | None, key: DataType, x: DataType = DoubleType()) -> Layout:
    """``gap`` None: a gap per tuple, each tuple's end ``x + h`` in its column ``r``."""
    opened, _, bounds = schemas(key, x, gap is None)
    ends = (Aggregate("end", "max", "r"),) if gap is None else ()
    return Layout(("k",), Bounds(("k",), (("k",), ())), ("row_num", "k", "x", "v"), AGGREGATES + ends, own=False,
                  on_all=False, shift=0, consistent=False, pane_schema=opened, closed_schema=bounds, output=opened,
                  **({"gap": Fraction(gap)} if gap is not None else {"reach": "r"}), x="x")


def simulate(events: list[dict], gap: Fraction | None) -> tuple[dict, list]:
    """``({(k, wid): (count, sum, first, last, emit_row)}, [(row_num, k, wid)])``; ``gap`` None:
    each tuple's own gap ``h`` (its ``g``), the session's end the largest ``x + h``."""
    keyed: dict = {}  # k -> {"bound", "open": [[start, last, [tuples]]], "emitted": the next id}
    wildcard, results, late = None, {}, []

    def key(k):
        return keyed.setdefault(k, {"bound": None, "open": [], "emitted": 0})

    def bound(k):
        found = [b for b in (key(k)["bound"], wildcard) if b is not None]
        return max(found) if found else None

    def end(session):  # the largest x + h of its tuples
        return max(Fraction(m["x"]) + (gap if gap is not None else Fraction(m["g"])) for m in session[2])

    def emit(k, session, row):
        state = key(k)
        wid = state["emitted"]
        members = session[2]
        total = [m["v"] for m in members if m["v"] is not None]
        results[(k, wid)] = (len(members), sum(total) if total else None, min(m["x"] for m in members),
                             max(m["x"] for m in members), row, *([end(session)] if gap is None else []))
        state["emitted"] += 1

    def close(k, row):
        state, b = key(k), bound(k)
        done = sorted((s for s in state["open"] if row is None or (b is not None and end(s) < b)),
                      key=lambda s: s[0])
        state["open"] = [s for s in state["open"] if all(s is not d for d in done)]
        for session in done:
            emit(k, session, row)

    for e in events:
        if e["kind"] == 0:
            state, x, b = key(e["k"]), Fraction(e["x"]), bound(e["k"])
            h = gap if gap is not None else Fraction(e["g"])
            near = [s for s in state["open"] if s[0] <= x + h and x <= end(s)]
            if not near and b is not None and x + h < b:
                late.append((e["row_num"], e["k"], None))
            else:
                state["open"] = [s for s in state["open"] if all(s is not n for n in near)]
                state["open"].append([min([x, *(s[0] for s in near)]), max([x, *(s[1] for s in near)]),
                                      [e, *(m for s in near for m in s[2])]])
        else:
            b = Fraction(e["x"])
            if e["k"] is None:
                wildcard = b if wildcard is None else max(wildcard, b)
            else:
                key(e["k"])["bound"] = b if key(e["k"])["bound"] is None else max(key(e["k"])["bound"], b)
            for k in list(keyed) if e["k"] is None else [e["k"]]:
                close(k, e["row_num"])
    for k in list(keyed):
        close(k, None)
    return results, late


def run_live(events: list[dict], cuts: list[float], gap: float | None, key: DataType = StringType(),
             x: DataType = DoubleType()) -> tuple[dict, list]:
    """:func:`advance_sessions` over ``events`` split at ``cuts``, typed as the processor's
    input; the state through the state store's row format between batches. ``gap`` None: each
    tuple's own (its ``g``; its end ``x + g`` in column ``r``)."""
    lay = layout(gap, key, x)
    OPEN, COUNTS, BOUNDS = schemas(key, x, gap is None)
    opened, counts, bounds = (state_frame([], schema) for schema in (OPEN, COUNTS, BOUNDS))
    got, late = {}, []
    edges = [0, *sorted({int(c * len(events)) for c in cuts}), len(events)]
    for i, (start, stop) in enumerate(zip(edges, edges[1:])):
        batch = events[start:stop]
        tuples = pd.DataFrame([{**e, "r": e["x"] + e["g"] if gap is None else None} for e in batch if e["kind"] == 0],
                              columns=["row_num", "k", "x", "v", *(["r"] if gap is None else [])])
        marks = pd.DataFrame([{"row_num": e["row_num"], "k": e["k"], "wid_closed": e["x"]}
                              for e in batch if e["kind"] == 2], columns=["row_num", "k", "wid_closed"])
        exact = "int64" if x == LongType() else "object" if isinstance(x, DecimalType) else "float64"
        tuples = tuples.astype({"row_num": "Int64", "x": exact, "v": "float64", **({"r": exact} if gap is None else {}),
                                **({"k": "float64"} if isinstance(key, DoubleType) else {})})  # as from Arrow
        state = SessionState(opened, counts, bounds)
        results, gone, after = advance_sessions(tuples, marks.astype({"row_num": "Int64"}), state, lay,
                                                end=i == len(edges) - 2)
        kept = Frames(None, {"panes": OPEN, "counts": COUNTS, "closed": BOUNDS})  # the bucket's state row
        for name, frame in (("panes", after.opened), ("counts", after.counts), ("closed", after.bounds)):
            kept.put(name, frame)
        kept = Frames(kept.cell(), kept.schemas)
        opened, counts, bounds = (kept.get(name) for name in ("panes", "counts", "closed"))
        for r in results.to_dict("records"):
            window = (None if pd.isna(r["k"]) else r["k"], int(r["wid"]))
            assert window not in got, f"session {window} emitted twice"
            got[window] = (int(r["_wid_p0"]), None if pd.isna(r["_wid_p1"]) else r["_wid_p1"], r["_wid_p2"],
                           r["_wid_p3"], None if pd.isna(r["emit_row"]) else int(r["emit_row"]),
                           *([Fraction(r["_wid_p4"])] if gap is None else []))
        late += [(int(r["row_num"]), None if pd.isna(r["k"]) else r["k"], None if pd.isna(r["wid"]) else int(r["wid"]))
                 for r in gone.to_dict("records")]
    return got, late


def assert_simulated(got: tuple[dict, list], expected: tuple[dict, list]) -> None:
    """The live step's sessions and late rows (:func:`run_live`) are the simulation's, double sums
    to rounding (added in another order)."""
    (sessions, late), (simulated, simulated_late) = got, expected
    assert sessions.keys() == simulated.keys()
    for session, (n, total, *rest) in simulated.items():  # rest: first, last, emit_row (and the end)
        assert sessions[session][0] == n and list(sessions[session][2:]) == rest, session
        assert sessions[session][1] == (None if total is None else pytest.approx(total, rel=1e-9, abs=1e-6)), session
    assert sorted(late, key=repr) == sorted(simulated_late, key=repr)


@settings(max_examples=max(150, settings.default.max_examples))  # pandas only: fast, so more than the CI profile
@given(stream, cuts, gaps, pace, st.booleans(), st.randoms(use_true_random=False),
       st.sampled_from([0, 2**62 + 1]))  # row_nums far from 0 too (a nanosecond clock: past 2**53)
@pytest.mark.slow
def test_any_split_into_batches_emits_the_sessions_the_simulation_emits(draws, cuts, gap, step, doubles, rnd, base):
    if doubles:  # double keys: a NULL one is NaN in a batch's frame, None once read back from state
        draws = [(d[0], DOUBLE_KEYS[d[1]], *d[2:]) for d in draws]
    rows = sorted(base + r for r in rnd.sample(range(0, 400), len(draws)))  # gaps; a punctuation may share
    # its tuple's row_num
    rows = [rows[i - 1] if d[0] == "p" and i and rnd.random() < 0.3 else r for i, (d, r) in enumerate(zip(draws, rows))]
    xs = [round(i * step - 3.7 - d[2], 6) for i, d in enumerate(draws)]  # negative values too
    events = sorted(({"kind": 0, "row_num": r, "k": d[1], "x": x, "v": d[3]} if d[0] == "t" else
                     {"kind": 2, "row_num": r, "k": d[1], "x": x} for d, r, x in zip(draws, rows, xs)),
                    key=lambda e: (e["row_num"], e["kind"]))
    assert_simulated(run_live(events, cuts, gap, key=DoubleType() if doubles else StringType()),
                     simulate(events, Fraction(gap)))


@settings(max_examples=max(150, settings.default.max_examples))
@given(st.lists(st.tuples(st.sampled_from("ttp"), st.sampled_from(KEYS), st.integers(-24, 24), value), min_size=1,
                max_size=40), cuts, st.booleans(), st.sampled_from([2, 4, 5]))
@pytest.mark.slow
def test_touching_sessions_and_bounds_at_their_ends_as_the_simulation(draws, cuts, whole, gap):
    """On a grid (longs, or doubles in quarters: exact), so that a tuple often lies exactly ``g``
    after another (it joins its session, also when it bridges two) and a bound exactly at a
    session's end (the session stays open: a tuple there may still come), in any order and over
    any split into batches."""
    unit, g = (1, gap) if whole else (0.25, gap / 4)
    events = [{"kind": 0, "row_num": r, "k": k, "x": i * unit, "v": v} if kind == "t" else
              {"kind": 2, "row_num": r, "k": k, "x": i * unit} for r, (kind, k, i, v) in enumerate(draws)]
    assert_simulated(run_live(events, cuts, g, x=LongType() if whole else DoubleType()), simulate(events, Fraction(g)))


slack = st.sampled_from([0, 1, 2, 5, 9])  # a punctuation's bound behind the latest x: never above a later tuple


@settings(max_examples=max(150, settings.default.max_examples))
@given(st.lists(st.one_of(tuple_, tuple_, st.tuples(st.just("p"), st.sampled_from(KEYS), slack)), min_size=1,
                max_size=60), cuts, st.sampled_from([1, 3, 7]), st.sampled_from([1, 2, 4]), st.booleans(),
       st.randoms(use_true_random=False))
@pytest.mark.slow
def test_in_order_streams_emit_the_sessions_the_simulation_emits(draws, cuts, gap, step, whole, rnd):
    """Tuples in ``x`` order per key, on time (every bound at most the ``x`` of the tuples after
    it): sessions form at gaps of more than ``g`` (a gap of exactly ``g`` joins: ``step = g``)
    and each is emitted at the first punctuation passing its end, over any split into batches
    (so sessions open across batches), for long ``x`` (microseconds, ints) and double ``x``
    alike; keyed and wildcard punctuations."""
    rows = sorted(rnd.sample(range(0, 400), len(draws)))
    xs = [i * step - 37 + (0 if whole else 0.25) for i in range(len(draws))]  # ties none; gaps of step
    xs = [x + step * 2 * (i // 9) for i, x in enumerate(xs)]  # a wider gap now and then
    events = [{"kind": 0, "row_num": r, "k": d[1], "x": x, "v": d[3]} if d[0] == "t" else
              {"kind": 2, "row_num": r, "k": d[1], "x": x - d[2]} for d, r, x in zip(draws, rows, xs)]
    got = run_live(events, cuts, gap, x=LongType() if whole else DoubleType())
    assert got[1] == []
    assert_simulated(got, simulate(events, Fraction(gap)))


@settings(max_examples=max(300, settings.default.max_examples))
@given(st.data())
def test_a_batch_in_order_goes_at_once_as_tuple_by_tuple(data):
    """:func:`advance_in_order` against :class:`KeySessions` fed one tuple and punctuation at a
    time (a punctuation sharing a tuple's row_num after it), for in-order, on-time batches:
    the same members emitted in the same order (double sums depend on it), ids, ``emit_row``,
    open sessions and next id; with ties, an open session before the batch that its first
    tuples join, an older one left open, one or two punctuation lists (keyed and wildcard),
    long ``x`` near both ends of int64 and Fraction ``x``; a constant gap or one per tuple (the
    sessions' ends, ``reach``, the same too)."""
    whole, dynamic = data.draw(st.booleans()), data.draw(st.booleans())
    choices = [1, 3, 7] if whole else [Fraction(1, 2), Fraction(3), Fraction(7, 4)]
    gap = data.draw(st.sampled_from(choices))

    def own() -> int | Fraction:  # a tuple's or a session's gap
        return data.draw(st.sampled_from(choices)) if dynamic else gap

    unit = 1 if whole else Fraction(1, 4)
    xs = list(accumulate((d * unit for d in data.draw(st.lists(st.integers(0, 9), min_size=1, max_size=25))),
                         initial=data.draw(st.integers(-20, 20)) * unit))[1:]  # in order, ties
    if whole:  # near an end of int64: x + g or a difference would not fit
        end = data.draw(st.sampled_from([None, "top", "bottom"]))
        shift = {None: 0, "top": 2**63 - 1 - data.draw(st.integers(0, 8)) - xs[-1],
                 "bottom": -(2**63) + data.draw(st.integers(0, 8)) - xs[0]}[end]
        xs = [x + shift for x in xs]
    x0, gaps = xs[0], [own() for _ in xs]
    rows = [2 * i for i in range(len(xs))]
    sessions = []  # open before the batch: a tail the first tuples may join, an older one left open
    if data.draw(st.booleans()):
        last = x0 - data.draw(st.integers(0, 12)) * unit
        sessions.append((last - data.draw(st.integers(0, 5)) * unit, last, [100], last + own()))
        if data.draw(st.booleans()):
            g = own()
            older = sessions[0][0] - g - data.draw(st.integers(1, 6)) * unit  # kept sessions never touch
            sessions.insert(0, (older - unit, older, [101], older + g))
    before = sessions[0][1] if sessions and data.draw(st.booleans()) else None
    peaks, events = [], []
    for _ in range(data.draw(st.integers(1, 2))):
        marks = sorted(set(data.draw(st.lists(st.integers(-1, 2 * len(xs) + 1), max_size=12))))
        bounds = [min([x for r, x in zip(rows, xs) if r > row] or [xs[-1] + 3 * max(choices)])
                  - data.draw(st.integers(0, 12)) * unit for row in marks]  # at most the next tuple's x
        if marks:
            peaks.append(Peaks.running(np.array(marks), numbers(bounds)))
            events += [(row, 1, b) for row, b in zip(marks, bounds)]

    def scan() -> KeySessions:
        return KeySessions(None if dynamic else gap, bound=before, next_id=5, sessions=[
            KeySession(a, b, list(m), reach=r if dynamic else None) for a, b, m, r in sessions])

    fast, slow = scan(), scan()
    reaches = numbers([x + g for x, g in zip(xs, gaps)]) if dynamic else None
    emitted = advance_in_order(fast, np.array(rows), numbers(xs), np.arange(len(xs)), peaks, opened=3,
                               reaches=reaches)
    assert emitted is not None
    for row, kind, value in sorted(events + [(r, 0, j) for j, r in enumerate(rows)]):
        slow.punctuate(row, value) if kind else slow.arrive(value, xs[value], 3 + value,
                                                             gaps[value] if dynamic else None)
    assert list(zip(*(a.tolist() for a in emitted))) == [(m, w, row) for m, w, _, row in slow.members]
    assert {(s.start, s.last, s.reach, tuple(s.members)) for s in fast.open} == {
        (s.start, s.last, s.reach, tuple(s.members)) for s in slow.open}
    assert fast.next_id == slow.next_id


own_gap = st.one_of(st.sampled_from(["case"]), st.integers(1, 40))  # CASE on the key, or a gap column's value


@settings(max_examples=max(150, settings.default.max_examples))
@given(st.lists(st.tuples(st.sampled_from("ttp"), st.sampled_from(KEYS), st.integers(-30, 30), value, own_gap),
                min_size=1, max_size=40), cuts, st.sampled_from(["long", "decimal"]), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_a_gap_per_tuple_over_any_split_emits_the_sessions_the_simulation_emits(draws, cuts, kind, rnd):
    """A gap per tuple (``CASE WHEN k = 'a' THEN 12 WHEN k = 'b' THEN 5 ELSE 1 END``, or a gap
    column), on longs (epoch microseconds) or two-decimal decimals: out of order, duplicates,
    a tuple exactly at a session's end, several keys and NULL, keyed and wildcard punctuations,
    row_nums with gaps, over any split into batches: the sessions (their end the largest ``x +
    h``), ids, ``emit_row`` and late rows of the simulation."""
    unit = 1 if kind == "long" else Decimal("0.25")
    rows = sorted(rnd.sample(range(0, 400), len(draws)))
    events = []
    for r, (what, k, i, v, h) in zip(rows, draws):
        g = {"a": 12, "b": 5, None: 1}[k] if h == "case" else h
        events.append({"kind": 0, "row_num": r, "k": k, "x": i * unit, "v": v, "g": g * unit} if what == "t" else
                      {"kind": 2, "row_num": r, "k": k, "x": i * unit})
    expected = simulate(events, None)
    assert_simulated(run_live(events, cuts, None, x=LongType() if kind == "long" else DecimalType(12, 2)), expected)


def test_a_gap_per_tuple_ends_a_session_at_its_largest_end():
    """Gaps per tuple: ``(0, 10)`` and ``(4, 1)`` form one session ending at 10 (not 5), which
    10 joins (touching: it ends at 12); the bounds 11 and 12 leave it open (a tuple at 12 may
    still join), 13 emits it; 13 (gap 1) arrives under the bound 13 with its end 14 above it: on
    time, a session of its own; 3 (gap 2) touches nothing kept and ends at 5 < 13: late. The first two
    batches split the session (its end kept in the state); every split gives the same."""
    def tuple_(row, x, g):
        return {"kind": 0, "row_num": row, "k": "a", "x": x, "v": 1.0, "g": g}

    events = [tuple_(0, 0, 10), tuple_(1, 4, 1), element(2, "a", 3), tuple_(3, 10, 2), element(4, None, 11),
              element(5, "a", 12), element(6, "a", 13), tuple_(7, 13, 1), tuple_(8, 3, 2)]
    expected = ({("a", 0): (3, 3.0, 0, 10, 6, 12), ("a", 1): (1, 1.0, 13, 13, None, 14)}, [(8, "a", None)])
    assert simulate(events, None) == expected
    for cuts in ([0.3], [0.2, 0.5, 0.8], [0.99]):
        assert run_live(events, cuts, None, x=LongType()) == expected


def element(row, k, x, v=None):
    """A tuple (with a value ``v``) or, without one, a punctuation binding ``k`` (None: every key) at ``x``."""
    return {"kind": 0 if v is not None else 2, "row_num": row, "k": k, "x": x, "v": v}


def test_a_tuple_touching_a_session_emitted_in_an_earlier_batch_opens_its_successor():
    """Gap 1, the bound 2.75 passes the end 2.5 of ``{1.25, 1.5}``: emitted and forgotten. 2.25
    touches it from above but 2.25 + g is not below the bound: it opens a session of its own (id
    1, Flink's new window); 0.25 = 1.25 - g touches the forgotten one from below, exactly, and
    its own would end at 1.25 < 2.75: late, no id; key b has no bound; 9.0 is on time."""
    events = [element(0, "a", 1.25, 1.0), element(1, "a", 1.5, 2.0), element(2, "a", 2.75), element(3, "a", 2.25, 4.0),
              element(4, "a", 0.25, 8.0), element(5, "b", 1.9, 16.0), element(6, "a", 9.0, 32.0)]
    got, late = run_live(events, [0.43, 0.58, 0.86], 1.0)  # batches: rows 0-2, row 3, rows 4-5, row 6
    assert late == [(4, "a", None)]
    assert got == {("a", 0): (2, 3.0, 1.25, 1.5, 2), ("a", 1): (1, 4.0, 2.25, 2.25, None),
                   ("a", 2): (1, 32.0, 9.0, 9.0, None), ("b", 0): (1, 16.0, 1.9, 1.9, None)}
    assert (got, late) == simulate(events, Fraction(1))


def test_a_bound_at_the_end_of_a_session_leaves_it_open_for_a_tuple_there():
    """Gap 1: ``{1.25, 1.5}`` ends at 2.5. The bound 2.5 promises no tuple below 2.5, so one at
    2.5 may still come and join (sessions that touch merge): the session stays open, 2.5 joins
    it (on time, not late), and 3.5 = 2.5 + g joins too. The bound 4.75 passes the end 4.5 and
    emits it; over every split into batches."""
    events = [element(0, "a", 1.25, 1.0), element(1, "a", 1.5, 2.0), element(2, "a", 2.5), element(3, "a", 2.5, 4.0),
              element(4, None, 3.0), element(5, "a", 3.5, 8.0), element(6, None, 4.75), element(7, "a", 4.75, 16.0)]
    expected = ({("a", 0): (4, 15.0, 1.25, 3.5, 6), ("a", 1): (1, 16.0, 4.75, 4.75, None)}, [])
    assert simulate(events, Fraction(1)) == expected
    for cuts in ([0.5], [0.3, 0.45, 0.7], [0.99]):
        assert run_live(events, cuts, 1.0) == expected


def test_sparks_streaming_session_window_in_append_mode():
    """Spark's ``StreamingSessionWindowSuite``, "append mode - session window" (gap 10 s, watermark
    30 s behind the largest event time, each line's words a key): the micro-batches as Spark
    gets them, each followed by its watermark (a punctuation on every key). The line at 0 comes
    when the watermark is 11: its sessions would end at 10, so Spark drops its 2 rows (late,
    ``wid`` NULL here); the line at 30 bridges ``spark``'s sessions at 25 and 40 (40 = 30 + 10:
    touching) and ``streaming``'s at 25 and 40-41; the watermark 60 emits the five sessions
    Spark's last ``CheckNewAnswer`` expects; the end of the stream emits the rest (the suite's
    "current sessions" comment)."""
    batches = [[("hello world spark streaming", 40), ("world hello structured streaming", 41)],
               [("spark streaming", 25)], [("spark streaming", 0)], [("spark streaming", 30)],
               [("hello apache spark", 60)], [("structured streaming", 90)]]
    events, edges, seen = [], [], []
    for b, batch in enumerate(batches):
        row = 100 * b
        for line, t in batch:
            seen.append(t)
            for word in line.split():
                events.append(element(row, word, float(t), 1.0))
                row += 1
        events.append(element(100 * b + 99, None, float(max(seen) - 30)))
        edges.append(len(events))
    cuts = [(e + 0.5) / len(events) for e in edges[:-1]]  # each batch with its watermark
    got, late = run_live(events, cuts, 10)
    emitted = {(k, first, last + 10, n, row) for (k, _), (n, _, first, last, row) in got.items()}
    assert emitted == {("spark", 25, 50, 3, 599), ("streaming", 25, 51, 4, 599), ("hello", 40, 51, 2, 599),
                       ("world", 40, 51, 2, 599), ("structured", 41, 51, 1, 599),
                       ("hello", 60, 70, 1, None), ("apache", 60, 70, 1, None), ("spark", 60, 70, 1, None),
                       ("structured", 90, 100, 1, None), ("streaming", 90, 100, 1, None)}
    assert sorted(late) == [(200, "spark", None), (201, "streaming", None)]
    assert (got, late) == simulate(events, Fraction(10))
