"""Live mode's stateful step without Spark, against event-by-event simulations of the paper's
semantics, over any split into micro-batches: steps 3-4 (wid.stream.live.windows.advance) and
step 2 (marks on all keys becoming punctuations, wid.stream.live.arrival.on_all_keys).

The simulation reads one element at a time in arrival order (a tuple before a punctuation of
its ``row_num``): ``C(k)``, the largest window closed for key ``k``, is the running max of the
punctuations binding ``k`` (its value, or NULL: every key); a tuple is late for its ids ``<=
C(k)`` (generous) or for all of them once one is (consistent) and adds its value to the others;
a punctuation emits every window of a key it binds that has a tuple and is now ``<= C(k)``,
``emit_row`` = its row_num; the end emits the rest (NULL). No Spark: the state between batches
goes through the state store's row format (:class:`Frames`) as in the processor.
"""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from wid.aggregate.partials import Aggregate
from wid.stream.live.arrival import on_all_keys
from wid.stream.live.input import KIND, TUPLE
from wid.stream.live.state import PENDING
from wid.stream.live.state_rows import Frames, state_frame
from wid.stream.live.windows import NONE, SHAPE, Bounds, Layout, advance

KEYS = ["a", "b", "c"]
PANES = StructType([StructField("k", StringType()), StructField("wid_lo", LongType()), StructField("wid_hi", LongType()),
                    StructField("_wid_p0", LongType()), StructField("_wid_p1", DoubleType())])
BOUNDS = StructType([StructField(SHAPE, IntegerType()), StructField("k", StringType()),
                     StructField("wid_closed", LongType())])
AGGREGATES = (Aggregate("n", "count"), Aggregate("total", "sum", "v"))

value = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: round(v, 3)))
tuple_ = st.tuples(st.just("t"), st.sampled_from([*KEYS, None]), st.integers(-4, 8), st.integers(0, 3), value)
punctuation = st.tuples(st.just("p"), st.sampled_from([*KEYS, None]), st.integers(-5, 9))  # None: every key
cuts = st.lists(st.floats(0, 1), max_size=4)  # where to split, as fractions of the stream
stream = st.lists(st.one_of(tuple_, tuple_, punctuation), min_size=1, max_size=40)


def layout(consistent: bool) -> Layout:
    """Key ``k`` (NULL a key of its own), punctuations on ``k`` or on every key (NULL), count(*) and sum(v)."""
    return Layout(("k",), Bounds(("k",), (("k",), ())), ("row_num", "k", "v"), AGGREGATES, own=False, on_all=False,
                  shift=0, consistent=consistent, pane_schema=PANES, closed_schema=BOUNDS, output=PANES)


def elements(draws: list[tuple], rows: list[int], ids: int = 0) -> list[dict]:
    """The drawn elements with row_nums (a punctuation may share one with the tuple before it),
    window-ids from ``ids`` on."""
    out = []
    for draw, row in zip(draws, rows):
        if draw[0] == "t":
            _, k, lo, width, v = draw
            out.append({"kind": 0, "row_num": row, "k": k, "wid_lo": ids + lo, "wid_hi": ids + lo + width, "v": v})
        else:
            out.append({"kind": 2, "row_num": row, "k": draw[1], "wid_closed": ids + draw[2]})
    return sorted(out, key=lambda e: (e["row_num"], e["kind"]))


def simulate(events: list[dict], consistent: bool) -> tuple[dict, list]:
    """``({(k, w): (count, sum, emit_row)}, [(row_num, k, wid)])`` one element at a time."""
    closed_key, closed_all = {}, -math.inf
    content, emitted, late = {}, {}, []

    def c(k):
        return max(closed_key.get(k, -math.inf), closed_all)

    for e in events:
        if e["kind"] == 0:
            ids = range(e["wid_lo"], e["wid_hi"] + 1)
            lost = [w for w in ids if w <= c(e["k"])]
            on = [] if lost and consistent else [w for w in ids if w > c(e["k"])]
            late += [(e["row_num"], e["k"], w) for w in (ids if lost and consistent else lost)]
            for w in on:
                n, total = content.get((e["k"], w), (0, None))
                content[(e["k"], w)] = (n + 1, total if e["v"] is None else (total or 0.0) + e["v"])
        else:
            if e["k"] is None:
                closed_all = max(closed_all, e["wid_closed"])
            else:
                closed_key[e["k"]] = max(closed_key.get(e["k"], -math.inf), e["wid_closed"])
            for (k, w), partial in content.items():
                if (k, w) not in emitted and w <= c(k):
                    emitted[(k, w)] = (*partial, e["row_num"])
    for window, partial in content.items():
        emitted.setdefault(window, (*partial, None))
    return emitted, late


def run_live(events: list[dict], cuts: list[float], consistent: bool) -> tuple[dict, list]:
    """:func:`advance` over ``events`` split at ``cuts`` (fractions), typed as the processor's
    input (nullable longs), the state read back from its row format between batches."""
    lay = layout(consistent)
    panes, bounds = state_frame([], PANES), state_frame([], BOUNDS)
    got, late = {}, []
    edges = [0, *sorted({int(c * len(events)) for c in cuts}), len(events)]
    for i, (start, stop) in enumerate(zip(edges, edges[1:])):
        batch = events[start:stop]
        tuples = pd.DataFrame([e for e in batch if e["kind"] == 0], columns=["row_num", "k", "wid_lo", "wid_hi", "v"])
        marks = pd.DataFrame([e for e in batch if e["kind"] == 2], columns=["row_num", "k", "wid_closed"])
        tuples = tuples.astype({"row_num": "Int64", "wid_lo": "Int64", "wid_hi": "Int64", "v": "float64"})
        results, gone, panes, bounds = advance(tuples, marks.astype({"row_num": "Int64", "wid_closed": "int64"}),
                                               panes, bounds, lay, end=i == len(edges) - 2)
        kept = Frames(None, {"panes": PANES, "closed": BOUNDS})  # the bucket's state row, written and read back
        kept.put("panes", panes)
        kept.put("closed", bounds)
        kept = Frames(kept.cell(), kept.schemas)
        panes, bounds = kept.get("panes"), kept.get("closed")
        for r in results.to_dict("records"):
            window = (None if pd.isna(r["k"]) else r["k"], int(r["wid"]))
            assert window not in got, f"window {window} emitted twice"
            got[window] = (int(r["_wid_p0"]), None if pd.isna(r["_wid_p1"]) else r["_wid_p1"],
                           None if pd.isna(r["emit_row"]) else int(r["emit_row"]))
        late += [(int(r["row_num"]), None if pd.isna(r["k"]) else r["k"], int(r["wid"]))
                 for r in gone.to_dict("records")]
    return got, late


@settings(max_examples=max(150, settings.default.max_examples))  # pandas only: fast, so more than the CI profile
@given(stream, cuts, st.booleans(), st.randoms(use_true_random=False), st.sampled_from([0, -2**40, 2**62 + 1]),
       st.sampled_from([0, 2**53 + 1, 2**61]))
@pytest.mark.slow
def test_any_split_into_batches_emits_what_the_simulation_emits(draws, cuts, consistent, rnd, base, ids):
    """``base``: row_nums far from 0, as a nanosecond arrival clock gives; ``ids``: window-ids far
    from 0 (slide 1 on longs); past 2**53 no double holds them."""
    rows = sorted(base + r for r in rnd.sample(range(0, 400), len(draws)))  # gaps; a punctuation may share
    # its tuple's row_num
    rows = [rows[i - 1] if d[0] == "p" and i and rnd.random() < 0.3 else r for i, (d, r) in enumerate(zip(draws, rows))]
    events = elements(draws, rows, ids)
    expected, expected_late = simulate(events, consistent)
    got, late = run_live(events, cuts, consistent)
    assert got.keys() == expected.keys()
    for window, (n, total, emit_row) in expected.items():
        assert got[window][0] == n and got[window][2] == emit_row, window
        assert got[window][1] == (None if total is None else pytest.approx(total, rel=1e-9, abs=1e-6)), window
    assert sorted(late) == sorted(expected_late)


def test_a_bound_past_2_53_closes_its_window_and_not_the_next():
    """Key ``a`` bound at ``2**53 + 3`` (a double rounds it up to ``2**53 + 4``) beside key ``b``
    without a bound: window ``2**53 + 4`` stays open for the tuple of the next batch."""
    draws = [("t", "a", 2, 3, 1.0), ("t", "b", 2, 3, 1.0), ("p", "a", 2), ("t", "a", 3, 0, 2.0)]
    events = elements(draws, [0, 1, 2, 3], ids=2**53 + 1)
    assert run_live(events, [0.75], consistent=False) == simulate(events, consistent=False)


# --- step 2: marks on all keys (slack, heartbeat) become punctuations --------------------------

mark = st.tuples(st.integers(1, 5), st.one_of(st.none(), st.integers(-3, 12)))  # row_num gap, wid_closed


@settings(max_examples=max(150, settings.default.max_examples))
@given(st.lists(mark, min_size=1, max_size=30), cuts, st.sampled_from([0, 3]))
def test_marks_on_all_keys_become_punctuations_when_the_stream_passes_them(draws, cuts, shift):
    """Each mark is a bound on all keys at ``row_num + shift``; only a record (above every
    earlier bound) closes anything, and it is due in the first batch that reaches its row (at
    the end of the stream, every one left)."""
    rows = list(itertools.accumulate(gap for gap, _ in draws))
    events = pd.DataFrame({"row_num": rows, KIND: [TUPLE] * len(rows),
                           "wid_closed": pd.array([c for _, c in draws], dtype="Int64")})
    edges = [0, *sorted({int(c * len(rows)) for c in cuts} - {0, len(rows)}), len(rows)]
    expected, best = [], -math.inf
    for row, closed in zip(rows, events["wid_closed"]):
        if not pd.isna(closed) and closed > best:
            best = closed
            at = next((i for i, (a, b) in enumerate(zip(edges, edges[1:])) if rows[b - 1] >= row + shift),
                      len(edges) - 2)  # the end of the stream passes every row
            expected.append((at, row + shift, int(closed)))
    got, pending, high = [], state_frame([], PENDING), NONE
    for i, (a, b) in enumerate(zip(edges, edges[1:])):
        due, waiting = on_all_keys(events.iloc[a:b], pending, high, shift, end=i == len(edges) - 2)
        got += [(i, int(r), int(c)) for r, c in zip(due["row_num"], due["wid_closed"])]
        kept = Frames(None, {"pending": PENDING})
        kept.put("pending", waiting)
        pending = Frames(kept.cell(), kept.schemas).get("pending")
        high = max([high, *due["wid_closed"].astype("int64")])
    assert got == expected
