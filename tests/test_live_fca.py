"""Live mode's stateful step for slide-by-tuple windows (wid.stream.live.fca) without Spark,
against the plain-Python streaming simulation of the paper's bins in tests/test_fca_replay.py,
over any split into micro-batches (a punctuation may come a batch after the tuple whose
``row_num`` it shares): every window emitted once, with replay's ``emit_row``, and every late
(tuple, window) pair once, lost windows included. The state goes through the state store's row
format (:class:`Frames`) between batches, as in the processor.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, StringType, StructField, StructType

from tests.test_fca_replay import R, VARIANTS, simulate
from wid.aggregate.partials import Aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED, WID_X
from wid.stream.live.fca import SlideStep
from wid.stream.live.input import KIND
from wid.stream.live.state import KEPT
from wid.stream.live.windows import SHAPE, Bounds, Layout
from wid.stream.live.state_rows import Frames

AGGREGATES = (Aggregate("_wid_a0", "count"), Aggregate("_wid_a1", "sum", "v"), Aggregate("_wid_a2", "max", "v"))
PARTIALS = [StructField("_wid_p0", LongType()), StructField("_wid_p1", LongType()), StructField("_wid_p2", LongType())]


def schemas(key: DataType) -> tuple[StructType, StructType, StructType]:
    """The step's input, bounds and output schemas, with the key ``g`` of type ``key``."""
    events = StructType([StructField("row_num", LongType()), StructField(KIND, IntegerType()), StructField("g", key),
                         StructField("a", LongType()), StructField("v", LongType()), StructField(WID_X, LongType()),
                         StructField(KEPT, BooleanType())])
    bounds = StructType([StructField(SHAPE, IntegerType()), StructField("g", key), StructField(WID_CLOSED, LongType())])
    output = StructType([StructField("kind", StringType()), StructField("row_num", LongType()), StructField("g", key),
                         StructField("a", LongType()), StructField("v", LongType()), StructField(WID, LongType()),
                         StructField(EMIT_ROW, LongType()), *PARTIALS])
    return events, bounds, output


tuple_ = st.tuples(st.integers(-3, 14), st.sampled_from("xyz"), st.integers(-9, 9))  # a (many repeats), g, v
punctuation = st.tuples(st.integers(0, 60), st.sampled_from(["x", "y", "z", None]), st.integers(-2, 16))
cuts = st.lists(st.floats(0, 1), max_size=4)


def processor(every: int, consistent: bool, key: DataType) -> SlideStep:
    """The step of ``SELECT g, count(*), sum(v), max(v) ... [RANGE R RATTR a SLIDE every ROWS]
    GROUP BY g`` with punctuations on ``g`` or on every key (NULL)."""
    events, bounds, output = schemas(key)
    layout = Layout(("g",), Bounds(("g",), (("g",), ())), ("row_num", "g", "a", "v"), AGGREGATES, own=False,
                    on_all=False, shift=0, consistent=consistent, pane_schema=StructType(PARTIALS),
                    closed_schema=bounds, output=output)
    step = SlideStep(R, LongType(), every, {"v": np.dtype(np.int64)})
    return step.processor(layout, events)


def run_live(rows: list[dict], puncts: list[tuple], cuts: list[float], every: int, consistent: bool,
             key: DataType = StringType()):
    """The step over the elements in arrival order, split at ``cuts``: ``(results, late)`` as
    :func:`tests.test_fca_replay.simulate` has them."""
    elements = sorted([(t["row_num"], 0, t) for t in rows] + [(p[0], 2, p) for p in puncts], key=lambda e: e[:2])
    step = processor(every, consistent, key)
    cell, results, late = None, {}, Counter()
    order = [e[:2] for e in elements]  # a cut never splits equal (row_num, kind): that order is an error
    edges = sorted({0, *(_after_ties(order, int(c * len(elements))) for c in cuts), len(elements)})
    for i, (start, stop) in enumerate(zip(edges, edges[1:])):
        batch = elements[start:stop]
        step.frames = Frames(cell, step.schemas())
        arrived = [t for _, kind, t in batch if kind == 0]
        columns = {"row_num": [t["row_num"] for t in arrived], KIND: [0] * len(arrived),
                   "g": [t["g"] for t in arrived], "a": [t["a"] for t in arrived], "v": [t["v"] for t in arrived],
                   WID_X: [t["a"] for t in arrived], KEPT: [True] * len(arrived)}
        types = {"g": "Int64" if key == LongType() else object, KEPT: "boolean", KIND: "int32"}
        tuples = pd.DataFrame({c: pd.Series(v, dtype=object).astype(types.get(c, "Int64"))  # via objects: exact
                               for c, v in columns.items()})
        marks = pd.DataFrame([{"row_num": p[0], "g": p[1], WID_CLOSED: p[2]} for _, kind, p in batch if kind == 2],
                             columns=["row_num", "g", WID_CLOSED]).astype({"row_num": "int64", WID_CLOSED: "int64"})
        events = pd.DataFrame({"row_num": [e[0] for e in batch], KIND: [e[1] for e in batch], WID_CLOSED: None})
        end = i == len(edges) - 2
        step._sequence(events, end)  # the order check, and the last row_num of the batches before
        emitted, gone = step._advance(events, tuples, marks, end)
        cell = step.frames.cell()
        for r in emitted.to_dict("records"):
            window = (None if pd.isna(r["g"]) else r["g"], int(r[WID]))
            assert window not in results, f"window {window} emitted twice"
            emit = None if pd.isna(r[EMIT_ROW]) else int(r[EMIT_ROW])
            results[window] = (int(r["_wid_p0"]), int(r["_wid_p1"]), int(r["_wid_p2"]), emit)
        late.update((int(r["row_num"]), int(r[WID])) for r in gone.to_dict("records"))
    return results, late


def _after_ties(order: list[tuple], cut: int) -> int:
    while 0 < cut < len(order) and order[cut] == order[cut - 1]:
        cut += 1
    return cut


@settings(max_examples=max(120, settings.default.max_examples))  # pandas only: fast, so more than the CI profile
@given(st.lists(tuple_, min_size=1, max_size=30), st.lists(punctuation, max_size=10), cuts,
       st.sampled_from(["FCA", "FCB"]), st.booleans(), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_any_split_into_batches_emits_what_the_streaming_bins_emit(draws, punctuations, cuts, variant, consistent,
                                                                     rnd):
    """Tuples in any order of ``a`` (repeats, negatives), punctuations that tuples violate, on a
    key or every key (lost windows), some sharing a row_num with a tuple: the live step's
    windows and late pairs, over the batches, are the simulation's."""
    rows = [{"row_num": 3 * i + rnd.randint(0, 1), "a": a, "g": g, "v": v} for i, (a, g, v) in enumerate(draws)]
    keys = {t["g"] for t in rows}  # the simulation punctuates keys of the stream
    puncts = [(rows[min(at, len(rows) - 1)]["row_num"], g, b) for at, g, b in punctuations if g is None or g in keys]
    every = VARIANTS[variant][1].get("every", 1)
    expected, expected_late = simulate(rows, variant, puncts, consistent)
    assert run_live(rows, puncts, cuts, every, consistent) == (expected, expected_late)


def test_a_punctuation_in_the_batch_after_its_tuple_emits_once():
    """The batch boundary between a tuple and the punctuation at its row_num: the windows that
    punctuation closes are emitted in the second batch, the one its tuple emitted (a window
    defined after its key was closed) in the first, each once, also when the punctuation is the
    whole second batch (the windows emitted at that row_num then span two batches)."""
    rows = [{"row_num": 0, "a": 1, "g": "x", "v": 2}, {"row_num": 3, "a": 5, "g": "x", "v": 4},
            {"row_num": 6, "a": 2, "g": "y", "v": 1}, {"row_num": 9, "a": 20, "g": "y", "v": 3}]
    puncts = [(3, "x", 4), (6, "x", 9)]  # x closed below 4; a = 2 of y defines window 2 late, for x too
    for cuts in ([0.5], [0.7], [0.8], [0.67, 0.84]):
        assert run_live(rows, puncts, cuts, 1, False) == simulate(rows, "FCA", puncts, False)


def test_long_keys_and_sums_stay_exact_with_nulls():
    """A long key past 2**53 beside a NULL key, a sum past 2**53, a late tuple of the NULL key
    (so the late rows' partials are NULL): keys and sums are whole numbers, in any batches."""
    big = 2 ** 60 + 1
    rows = [{"row_num": 0, "a": 5, "g": big, "v": big}, {"row_num": 3, "a": 5, "g": None, "v": 7},
            {"row_num": 6, "a": 6, "g": big, "v": 2}]
    puncts = [(0, None, 6)]  # every key closed below 6: the NULL key's a = 5 is late for window 5
    expected = ({(big, 5): (1, big, big, 0), (big, 6): (2, big + 2, big, None), (None, 6): (1, 7, 7, None)},
                Counter({(3, 5): 1}))
    for cuts in ([], [0.5], [0.3, 0.7]):
        assert run_live(rows, puncts, cuts, 1, False, LongType()) == expected
