"""Steps 3 and 4 of live mode's stateful step (:mod:`wid.stream.live.state`), per bucket and
micro-batch, as pure pandas functions of its :class:`Layout`: the largest window closed for each
tuple's keys when it arrives (``C``), the tuple's late ids and on-time pane, and the windows
the batch's punctuations close, emitted with ``emit_row``. The state they read and write is the
processor's; like the processor they see ranges and punctuation bounds, never the window spec.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd
from pyspark.sql.types import StructType

from wid.aggregate.partials import Aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED as CLOSED, WID_X
from wid.stream.live.arrival import aligned, arrival_order, matched, stack
from wid.stream.live.input import KIND, PUNCTUATION, TUPLE
from wid.stream.live.panes import HI, LO, merge, partial_names, spread, tuple_partials

NONE = np.iinfo(np.int64).min  # no window closed yet
OPEN = np.iinfo(np.int64).max - 1  # wid_hi of an open range (landmark windows)
SHAPE = "_wid_shape"  # the shape (its index in :attr:`Bounds.shapes`) of a stored bound
#: Arrival positions -> ``(wid_lo, wid_hi, wid_closed)`` (:meth:`wid.windows.context_free.TupleSliding.tag_positions`).
Tagger = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
_RUN, _AT = "_wid_run", "_wid_at"


@dataclass(frozen=True)
class Bounds:
    """Punctuations on the ``pattern`` columns, bound together in ``shapes`` (the columns a
    punctuation binds; the others NULL); ``wildcard``: a NULL binds every value, else it is a
    value of its own (one shape). A bound table holds the largest ``wid_closed`` per shape
    (:data:`SHAPE`) and pattern value; ``present``: pattern columns whose NULL another column
    tells (a NaN key, NaN in pandas as a NULL is, bound where its flag is not NULL:
    :mod:`wid.bucket.nan`).

    >>> bounds = Bounds(("k",), ((), ("k",)))  # shape 0: every key (k NULL), shape 1: one key
    >>> table = pd.DataFrame({SHAPE: [0, 1, 1], "k": [None, "a", "b"], "wid_closed": [2, 5, 1]})
    >>> bounds.closed(pd.DataFrame({"k": ["a", "b", "c"]}), table).tolist()
    [5, 2, 2]
    """

    pattern: tuple[str, ...]
    shapes: tuple[tuple[str, ...], ...]
    wildcard: bool = True
    present: tuple[tuple[str, str], ...] = ()

    def of(self, punctuations: pd.DataFrame, shape: tuple[str, ...]) -> pd.DataFrame:
        """The punctuations whose bound pattern columns are exactly ``shape`` (all of them when
        NULL is no wildcard).

        >>> bounds = Bounds(("k", "f"), (("k", "f"), ()), present=(("k", "f"),))  # f: k's NaN flag
        >>> marks = pd.DataFrame({"k": [np.nan, np.nan, 1.5], "f": pd.array([1, None, 0], "Int32")})
        >>> bounds.of(marks, ("k", "f")).index.tolist(), bounds.of(marks, ()).index.tolist()  # NaN key; wildcard
        ([0, 2], [1])
        """
        if not self.wildcard:
            return punctuations
        keep = np.ones(len(punctuations), dtype=bool)
        present = dict(self.present)
        for c in self.pattern:
            bound = punctuations[present.get(c, c)].notna().to_numpy()
            keep &= bound if c in shape else ~bound
        return punctuations[keep]

    def closed(self, frame: pd.DataFrame, table: pd.DataFrame) -> np.ndarray:
        """Per row of ``frame``: the largest window the bound ``table`` closes for the row's
        pattern values, over all shapes (:data:`NONE` if none)."""
        out = np.full(len(frame), NONE)
        for sid, shape in enumerate(self.shapes):
            out = np.maximum(out, _lookup(frame, table[table[SHAPE] == sid], shape))
        return out

    def at_arrival(self, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                   stored: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
        """``(C, table)``: per tuple, the largest window closed for its pattern values when it
        arrives (``stored``, the bound table before the batch, then the batch's punctuations
        before it in ``(row_num, kind)`` order: a punctuation and a tuple of one ``row_num``,
        the tuple first); and the bound table after the batch.

        >>> bounds = Bounds(pattern=("k",), shapes=(("k",),))
        >>> tuples = pd.DataFrame({"row_num": [1, 3, 4], "k": ["a", "a", "b"]})
        >>> marks = pd.DataFrame({"row_num": [2], "k": ["a"], "wid_closed": [5]})
        >>> c, table = bounds.at_arrival(tuples, marks, pd.DataFrame({SHAPE: [0], "k": ["a"], "wid_closed": [1]}))
        >>> c.tolist() == [1, 5, NONE], table["wid_closed"].tolist()
        (True, [5])
        """
        c = np.full(len(tuples), NONE)
        for sid, shape in enumerate(self.shapes):
            mine = self.of(punctuations, shape)
            c = np.maximum(c, _lookup(tuples, stored[stored[SHAPE] == sid], shape))
            if len(mine) and len(tuples):
                both = arrival_order(pd.concat(
                    [tuples[["row_num", *shape]].assign(**{KIND: TUPLE, _RUN: NONE, _AT: tuples.index}),
                     mine[["row_num", *shape]].assign(**{KIND: PUNCTUATION, _RUN: mine[CLOSED], _AT: -1})],
                    ignore_index=True))
                run = both.groupby(list(shape), dropna=False, sort=False)[_RUN].cummax() if shape else both[_RUN].cummax()
                at = both[_AT].to_numpy()
                own = at >= 0
                c[at[own]] = np.maximum(c[at[own]], run.to_numpy()[own])
        return c, self.after(punctuations, stored)

    def after(self, punctuations: pd.DataFrame, stored: pd.DataFrame) -> pd.DataFrame:
        """The bound table ``stored`` after the batch's ``punctuations``: the largest
        ``wid_closed`` per shape and pattern value."""
        tables = []
        for sid, shape in enumerate(self.shapes):
            table = stack([stored[stored[SHAPE] == sid].drop(columns=SHAPE),
                           self.of(punctuations, shape).drop(columns="row_num")])
            if len(table):
                table = (table.groupby(list(self.pattern), dropna=False, sort=False)[CLOSED].max().reset_index()
                         if self.pattern else table[[CLOSED]].max().to_frame().T)
                tables.append(table.assign(**{SHAPE: sid}))
        table = pd.concat(tables, ignore_index=True) if tables else stored
        return table[[SHAPE, *self.pattern, CLOSED]]

    def emit_rows(self, windows: pd.DataFrame, punctuations: pd.DataFrame, keys: list[str]) -> pd.Series:
        """Per window (``keys``, ``wid``): the ``row_num`` of the batch's first punctuation
        (matching its pattern values) whose running max reaches it; NULL when none (closed by
        the end of the stream)."""
        best = pd.Series(pd.array([pd.NA] * len(windows), dtype="Int64"), index=windows.index)  # row_nums exact
        if windows.empty:
            return best
        ordered = windows[[*keys, WID]].assign(_wid_i=windows.index).sort_values(WID, kind="stable")
        for shape in self.shapes:
            mine = self.of(punctuations, shape)
            if mine.empty:
                continue
            run = (mine.groupby(list(shape), dropna=False, sort=False)[CLOSED] if shape else mine[CLOSED]).cummax()
            firsts = mine.assign(**{_RUN: run.astype("int64")}).drop_duplicates([*shape, _RUN], keep="first")
            right = firsts[["row_num", *shape, _RUN]].astype({"row_num": "Int64"}).sort_values(_RUN, kind="stable")
            left, right = aligned(ordered, right, list(shape))  # e.g. keys all NULL: floats
            found = pd.merge_asof(left, right, left_on=WID, right_on=_RUN, by=list(shape) or None,
                                  direction="forward")
            at = pd.Series(found["row_num"].array, index=found["_wid_i"].to_numpy()).reindex(best.index)
            best = best.where(at.isna() | (best.notna() & (best <= at)), at)
        return best


def _lookup(frame: pd.DataFrame, table: pd.DataFrame, shape: tuple[str, ...]) -> np.ndarray:
    """Per row of ``frame``: ``table``'s ``wid_closed`` for the row's ``shape`` values (NONE if absent)."""
    if table.empty:
        return np.full(len(frame), NONE)
    if not shape:
        return np.full(len(frame), int(table[CLOSED].max()))
    exact = table.astype({CLOSED: "Int64"})  # beside a key without a bound: no double (ids past 2**53)
    return matched(frame, exact, list(shape), CLOSED).fillna(NONE).astype("int64").to_numpy()


@dataclass(frozen=True)
class Layout:
    """What the stateful step sees: grouping ``keys``, the punctuations' ``bounds``,
    ``payload`` (the stream's columns, for late rows), ``aggregates`` over value columns,
    ``own`` (tuples punctuate the pattern themselves with their ``wid_closed``), ``on_all``
    (tuples' ``wid_closed`` are marks on all keys, at ``row_num + shift``), ``consistent``, the
    state and output schemas; ``tagger`` (ROWS windows): ids and implied punctuation of arrival
    positions, counted per pattern value (the partition) in ``row_num`` order, the tuples' own
    marks; ``open``: ranges have an open end (landmark windows, ``wid_hi`` NULL), closed at the
    largest ``wid_lo`` seen; ``gap`` (session windows): tuples form sessions per key with this
    gap in the units of their exact ``x`` (column ``x``), and the last two partials are the
    least and largest ``x`` (:mod:`wid.stream.live.sessions.steps`); ``reach`` (sessions with a
    gap per tuple, ``gap`` None): the column of each tuple's own end ``x + g``, and a third
    last partial, the session's end (the largest of its tuples').

    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "k", "v"),
    ...                 (Aggregate("n", "count"), Aggregate("m", "avg", "v")), own=False, on_all=False, shift=0,
    ...                 consistent=False, pane_schema=StructType(), closed_schema=StructType(), output=StructType())
    >>> layout.partials  # a pane's partials: count(*), then avg(v)'s sum and count
    ['_wid_p0', '_wid_p1s', '_wid_p1n']
    """

    keys: tuple[str, ...]
    bounds: Bounds
    payload: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    own: bool
    on_all: bool
    shift: int
    consistent: bool
    pane_schema: StructType
    closed_schema: StructType
    output: StructType
    tagger: Tagger | None = None
    open: bool = False
    gap: Fraction | None = None
    x: str = WID_X
    reach: str | None = None

    @property
    def partials(self) -> list[str]:
        """The pane partials' column names."""
        return [n for n, _ in partial_names(list(self.aggregates))]


def advance(tuples: pd.DataFrame, punctuations: pd.DataFrame, panes: pd.DataFrame, bounds: pd.DataFrame,
            layout: Layout, end: bool = False,
            top: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Steps 3 and 4 on one micro-batch: ``(results, late, panes, bounds)``. In: the batch's
    ``tuples`` (keys, ``wid_lo``, ``wid_hi``, values, payload) and ``punctuations``
    (``row_num``, pattern columns, ``wid_closed``), each in arrival order; the state before it:
    ``panes`` (keys, ``wid_lo``, ``wid_hi``, partials) and the bound table ``bounds``; ``end``:
    the stream ends with the batch; ``top``: open ranges end, for now, at this id (landmark
    windows). With ``C`` the largest window closed for a tuple's keys at its arrival, the tuple
    is late for ``[wid_lo, min(wid_hi, C)]`` (consistent: for all its range once any id is) and
    adds its partials to the pane ``[max(wid_lo, C + 1), wid_hi]``; every window a punctuation
    closes is emitted with ``emit_row`` = the first punctuation closing it. Out: those windows
    (keys, ``wid``, partials, ``emit_row``), the late rows (payload, ``wid``) and the state after.

    >>> from pyspark.sql.types import LongType, StringType, StructField, StructType
    >>> panes = StructType([StructField(c, t) for c, t in [("k", StringType()), ("wid_lo", LongType()),
    ...                                                      ("wid_hi", LongType()), ("_wid_p0", LongType())]])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num",), (Aggregate("n", "count"),), own=False,
    ...                 on_all=False, shift=0, consistent=False, pane_schema=panes, closed_schema=StructType(),
    ...                 output=StructType())  # the processor's schemas: not read here
    >>> tuples = pd.DataFrame({"row_num": [0, 2], "k": ["a", "a"], "wid_lo": [0, 0], "wid_hi": [2, 2]})
    >>> marks = pd.DataFrame({"row_num": [1], "k": ["a"], "wid_closed": [0]})
    >>> state = pd.DataFrame(columns=panes.fieldNames()), pd.DataFrame(columns=[SHAPE, "k", "wid_closed"])
    >>> results, late, left, bounds = advance(tuples, marks, *state, layout)
    >>> results[["k", "wid", "_wid_p0", "emit_row"]].values.tolist(), late.values.tolist()
    ([['a', 0, 1, 1]], [[2, 0]])
    >>> left[["wid_lo", "wid_hi", "_wid_p0"]].values.tolist()
    [[1, 2, 2]]
    """
    tuples = tuples.reset_index(drop=True)  # C is positional
    c, bounds = layout.bounds.at_arrival(tuples, punctuations, bounds)
    late, fresh = _contributions(tuples, c, layout)
    panes = merge(stack([panes, fresh]), [*layout.keys, LO, HI], list(layout.aggregates))
    closed = np.maximum(layout.bounds.closed(panes, bounds), np.iinfo(np.int64).max if end else NONE)
    if top is not None:
        closed = np.where(panes[HI].to_numpy("int64") == OPEN, np.minimum(closed, top), closed)
    results, panes = _emitted(panes, closed, punctuations, end, layout)
    return results, late, panes, bounds


def _contributions(tuples: pd.DataFrame, c: np.ndarray, layout: Layout) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(late, fresh)``: with ``C`` the largest window closed at each tuple's arrival, a tuple
    is late for ``[wid_lo, min(wid_hi, C)]`` (consistent: for all its range once any part is
    late): one late row (payload, ``wid``) per late id; its on-time rest ``[max(wid_lo, C + 1),
    wid_hi]`` is a one-tuple pane (keys, ``wid_lo``, ``wid_hi``, partials)."""
    lo, hi = tuples[LO].to_numpy("int64"), tuples[HI].to_numpy("int64")
    late_any = c >= lo
    if layout.consistent:
        on_lo, late_hi = np.where(late_any, hi + 1, lo), hi
    else:
        on_lo, late_hi = np.maximum(lo, c + 1), np.minimum(hi, c)
    late_at = np.flatnonzero(late_any)
    row, w = spread(lo[late_at], late_hi[late_at])
    late = tuples.iloc[late_at[row]][list(layout.payload)].reset_index(drop=True).assign(**{WID: w})
    on = on_lo <= hi
    fresh = pd.concat([tuples.loc[on, list(layout.keys)],
                       tuple_partials(tuples[on], list(layout.aggregates), layout.pane_schema)], axis=1)
    fresh[LO], fresh[HI] = on_lo[on], hi[on]
    return late, fresh[[*layout.keys, LO, HI, *layout.partials]]


def _emitted(panes: pd.DataFrame, closed: np.ndarray, punctuations: pd.DataFrame, end: bool,
            layout: Layout) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(results, left)``: every window of ``panes`` up to ``closed`` (per pane: the largest
    window closed for its keys; every one at the ``end`` of the stream) with its merged partials
    and ``emit_row``; the panes cut to the windows still open."""
    keys, aggregates = list(layout.keys), list(layout.aggregates)
    p_lo, p_hi = panes[LO].to_numpy("int64"), panes[HI].to_numpy("int64")
    row, w = spread(p_lo, np.minimum(p_hi, closed))
    windows = merge(panes.iloc[row][[*keys, *layout.partials]].assign(**{WID: w}), [*keys, WID], aggregates)
    results = windows.assign(**{EMIT_ROW: layout.bounds.emit_rows(windows, punctuations, keys)})
    left = np.zeros(len(panes), dtype=bool) if end else p_hi > closed
    cut = panes[left].assign(**{LO: np.maximum(p_lo, np.minimum(closed, p_hi) + 1)[left]})
    return results, merge(cut, [*keys, LO, HI], aggregates)
