"""Steps 3 and 4 of live mode's stateful step (:mod:`wid.stream.live_state`) for session
windows, per bucket and micro-batch: each key's sessions
(:class:`wid.stream.sessions.KeySessions`, allowed lateness 0) advanced by the batch's tuples
and punctuations in arrival order.

The state holds, per key, the *open* sessions with their partials (:mod:`wid.stream.panes`;
the last two are the least and largest ``x``: the session's start and last), the count of its
emitted sessions (its next id) and, appended as they are emitted, the *emitted* sessions as
``(wid, start, last)``: a late tuple names the ids of the emitted sessions it touches. Those
are read only in a batch with a tuple below its key's bound (the only tuples that can touch
one). Nothing per tuple is kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pandas as pd

from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED as CLOSED
from wid.stream.live_arrival import COUNT, aligned, matched, stack, tally
from wid.stream.live_windows import SHAPE, Layout
from wid.stream.panes import merge, tuple_partials
from wid.stream.session_runs import Emitted, Peaks, advance_in_order, exact_value, exact_values
from wid.stream.sessions import KeySession, KeySessions, Number

_KEY, _GROUP = "_wid_key", "_wid_group"


@dataclass(frozen=True)
class SessionState:
    """A bucket's sessions between micro-batches: ``opened`` (keys, partials: a row per open
    session), ``counts`` (keys, ``_wid_count``: the key's emitted sessions, its next id),
    ``emitted`` (reads keys, ``wid`` and the partials start and last of every emitted session:
    called only when a tuple may touch one) and the bound table ``bounds``.

    Key ``a`` (gap 2) has emitted session 0 (``x`` from 1.0 to 2.5) and its bound is 5: a tuple at 7.0
    opens a session without reading ``emitted``; one at 3.0, below the bound, reads it, late for session 0:

    >>> from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    >>> from wid.aggregate.range import Aggregate
    >>> from wid.stream.live_windows import Bounds
    >>> names, types = ["k", "_wid_p0", "_wid_p1", "_wid_p2"], [StringType(), LongType(), DoubleType(), DoubleType()]
    >>> panes = StructType([StructField(n, t) for n, t in zip(names, types)])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "x"),
    ...                 (Aggregate("n", "count"), Aggregate("s", "min", "x"), Aggregate("e", "max", "x")),
    ...                 own=False, on_all=False, shift=0, consistent=False, pane_schema=panes,
    ...                 closed_schema=StructType(), output=StructType(), gap=Fraction(2), x="x")
    >>> reads, emitted = [], pd.DataFrame({"k": ["a"], WID: [0], "_wid_p1": [1.0], "_wid_p2": [2.5]})
    >>> state = SessionState(pd.DataFrame(columns=names), pd.DataFrame({"k": ["a"], COUNT: [1]}),
    ...                      lambda: reads.append(1) or emitted, pd.DataFrame({SHAPE: [0], "k": ["a"], CLOSED: [5.0]}))
    >>> tuples = pd.DataFrame({"row_num": [3], "k": ["a"], "x": [7.0]})
    >>> marks = pd.DataFrame(columns=["row_num", "k", CLOSED])  # no punctuation in these batches
    >>> _, late, state, _ = advance_sessions(tuples, marks, state, layout)
    >>> state.opened.values.tolist(), late.values.tolist(), reads
    ([['a', 1, 7.0, 7.0]], [], [])
    >>> _, late, state, _ = advance_sessions(tuples.assign(row_num=4, x=3.0), marks, state, layout)
    >>> late.values.tolist(), reads
    ([[4, 3.0, 0]], [1])
    """

    opened: pd.DataFrame
    counts: pd.DataFrame
    emitted: Callable[[], pd.DataFrame]
    bounds: pd.DataFrame


def _joined(left: pd.DataFrame, right: pd.DataFrame, on: list[str]) -> pd.DataFrame:
    """Rows of ``left`` and ``right`` equal on ``on`` (NULL equals NULL; all pairs when empty)."""
    if not on:
        return left.merge(right, how="cross")
    left, right = aligned(left, right, on)
    return left.merge(right, on=on)


def _keyed(frame: pd.DataFrame, present: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Per row of ``frame``: the index of its keys in ``present`` (-1: absent)."""
    if not keys:
        return np.zeros(len(frame), dtype="int64")
    return matched(frame, present, keys, _KEY).fillna(-1).to_numpy("int64")


def _bounds_before(present: pd.DataFrame, stored: pd.DataFrame, layout: Layout) -> list[Number | None]:
    """Per key of ``present``: its bound ``B`` before the batch (the largest stored
    ``wid_closed`` of a shape matching it), None when no punctuation has bound it."""
    best: list[Number | None] = [None] * len(present)
    for sid, shape in enumerate(layout.bounds.shapes):
        table = stored[stored[SHAPE] == sid]
        if table.empty:
            continue
        pairs = _joined(present[[*shape, _KEY]], table[[*shape, CLOSED]], list(shape))
        for k, bound in zip(pairs[_KEY].tolist(), pairs[CLOSED].tolist()):
            b = exact_value(bound)
            best[k] = b if best[k] is None else max(best[k], b)
    return best


def _scans(present: pd.DataFrame, owner: np.ndarray, xs: np.ndarray, state: SessionState,
           layout: Layout) -> list[KeySessions]:
    """Per key of ``present``: its bound ``B``, next id and sessions from the state: the open
    ones (member ``i``: the partials of ``state.opened``'s row ``i``) and, read only for keys
    with a tuple below ``B`` (the only ones that can touch a session emitted before), the
    emitted ones such a tuple may touch (``last + g > x``). The batch's tuples: of key
    ``owner[i]`` at ``xs[i]`` (exact)."""
    keys, (first, last) = list(layout.keys), layout.partials[-2:]
    gap = int(layout.gap) if layout.gap.denominator == 1 else layout.gap  # whole: ints stay ints (fast)
    before = _bounds_before(present, state.bounds, layout)
    floor = np.asarray([-math.inf if b is None else b for b in before], dtype=object)
    below = np.flatnonzero(xs < floor[owner]) if len(owner) else owner  # exact: compared as Python numbers
    lowest: dict[int, Number] = {}
    for k, x in zip(owner[below].tolist(), xs[below].tolist()):
        lowest[k] = min(lowest.get(k, x), x)
    sessions: list[list[KeySession]] = [[] for _ in range(len(present))]
    if lowest:
        emitted = state.emitted()
        for k, w, s, e in zip(_keyed(emitted, present, keys).tolist(), emitted[WID].tolist(),
                              emitted[first].tolist(), emitted[last].tolist()):
            if k in lowest and exact_value(e) + gap > lowest[k]:
                sessions[k].append(KeySession(exact_value(s), exact_value(e), wid=int(w), revision=0, closed=True))
    for i, (k, s, e) in enumerate(zip(_keyed(state.opened, present, keys).tolist(), state.opened[first].tolist(),
                                      state.opened[last].tolist())):
        sessions[k].append(KeySession(exact_value(s), exact_value(e), [i]))
    if keys:
        counts = matched(present, state.counts, keys, COUNT).astype("float64").fillna(0).astype("int64").tolist()
    else:
        counts = [int(state.counts[COUNT].sum())] * len(present)
    return [KeySessions(gap, bound=b, sessions=s, next_id=n) for b, s, n in zip(before, sessions, counts)]


def _peaks(punctuations: pd.DataFrame, present: pd.DataFrame, layout: Layout) -> list[list[Peaks]]:
    """Per key of ``present``: the :class:`Peaks` of each shape and pattern value binding it."""
    out: list[list[Peaks]] = [[] for _ in range(len(present))]
    for shape in layout.bounds.shapes:
        mine = layout.bounds.of(punctuations, shape)
        if mine.empty:
            continue
        group = mine.groupby(list(shape), dropna=False, sort=False).ngroup() if shape else pd.Series(0, mine.index)
        peaks = [Peaks.running(frame["row_num"].to_numpy("int64"), exact_values(frame[CLOSED]))
                 for _, frame in mine.groupby(group.to_numpy(), sort=True)]
        labels = mine[list(shape)].assign(**{_GROUP: group.to_numpy()}).drop_duplicates(_GROUP)
        for k, g in _joined(present[[*shape, _KEY]], labels, list(shape))[[_KEY, _GROUP]].itertuples(index=False):
            out[k].append(peaks[g])
    return out


def _advance_key(scan: KeySessions, rows: np.ndarray, xs: np.ndarray, js: np.ndarray, peaks: list[Peaks],
                 opened: int) -> Emitted | None:
    """One key's batch: its tuples (``row_num`` s ``rows`` at ``xs``, tuple ``j`` of the batch
    for ``j`` in ``js``, member ``opened + j``: its partials follow the ``opened`` open
    sessions') in arrival order, and between them the punctuations binding it, each open
    session emitted at the first that reaches its end (in ``row_num`` order, as
    :meth:`KeySessions.punctuate` one at a time would). Tuples in order and on time go at once
    (:func:`wid.stream.session_runs.advance_in_order`): it returns their emissions, the others are in
    ``scan.members``."""

    def bound(row: int | None, strictly: bool = True) -> Number | None:  # row None: all the batch's
        return max((b for p in peaks if (b := p.before(row, strictly)) is not None), default=None)

    def emit(reached: Number | None) -> None:  # the sessions whose end the bound ``reached`` reaches
        while reached is not None:
            ends = [s.last + scan.gap for s in scan.open if s.last + scan.gap <= reached]
            if not ends:
                return
            first = min(row for end in ends for p in peaks if (row := p.reaching(end)) is not None)
            scan.punctuate(first, bound(first, strictly=False))

    fast = advance_in_order(scan, rows, xs, js, peaks, opened)
    if fast is None:
        for row, x, j in zip(rows.tolist(), xs.tolist(), js.tolist()):
            reached = bound(row)
            emit(reached)
            if reached is not None:
                scan.punctuate(row, reached)  # nothing is due now: the bound for the tuple's own check
            scan.arrive(j, x, opened + j)  # late: keyed by j
        emit(bound(None))
    return fast


def advance_sessions(tuples: pd.DataFrame, punctuations: pd.DataFrame, state: SessionState, layout: Layout,
                     end: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, SessionState, pd.DataFrame]:
    """Steps 3 and 4 for sessions: ``(results, late, state, added)``. In: the batch's ``tuples``
    (keys, ``layout.x``, values, payload) and ``punctuations`` (``row_num``, pattern columns,
    ``wid_closed`` in ``x`` units), each in arrival order, and the state before it. Per key, in
    arrival order, each tuple arrives and each punctuation binding the key raises its bound
    ``B`` (:class:`KeySessions`, gap ``layout.gap``); the end of the stream emits the open
    sessions. Out: the emitted sessions (keys, ``wid``, partials, ``emit_row``), the late rows
    (payload, ``wid``: one per emitted session the tuple touches, NULL if none), the state
    after (its ``emitted`` not read) and the sessions to add to ``emitted``.

    >>> from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    >>> from wid.aggregate.range import Aggregate
    >>> from wid.stream.live_windows import Bounds
    >>> types = [StringType(), LongType(), DoubleType(), DoubleType()]
    >>> panes = StructType([StructField(n, t) for n, t in zip(["k", "_wid_p0", "_wid_p1", "_wid_p2"], types)])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "x"),
    ...                 (Aggregate("n", "count"), Aggregate("s", "min", "x"), Aggregate("e", "max", "x")),
    ...                 own=False, on_all=False, shift=0, consistent=False, pane_schema=panes,
    ...                 closed_schema=StructType(), output=StructType(), gap=Fraction(2), x="x")
    >>> tuples = pd.DataFrame({"row_num": [0, 1, 3], "k": ["a", "a", "a"], "x": [1.0, 2.5, 3.0]})
    >>> marks = pd.DataFrame({"row_num": [2], "k": ["a"], "wid_closed": [5.0]})
    >>> empty = SessionState(pd.DataFrame(columns=panes.fieldNames()), pd.DataFrame(columns=["k", COUNT]),
    ...                      lambda: None, pd.DataFrame(columns=[SHAPE, "k", "wid_closed"]))
    >>> results, late, after, added = advance_sessions(tuples, marks, empty, layout)
    >>> results[["k", "wid", "_wid_p0", "_wid_p1", "_wid_p2", "emit_row"]].values.tolist(), late.values.tolist()
    ([['a', 0, 2, 1.0, 2.5, 2]], [[3, 3.0, 0]])
    >>> added.values.tolist(), after.counts.values.tolist(), len(after.opened)
    ([['a', 0, 1.0, 2.5]], [['a', 1]], 0)
    """
    keys, names = list(layout.keys), layout.partials
    tuples, opened = tuples.reset_index(drop=True), state.opened.reset_index(drop=True)
    if keys:  # the keys in play: open sessions', the batch's tuples' (NULL one key, however typed: as merges match)
        present = stack([opened[keys], tuples[keys]]).groupby(keys, dropna=False, sort=False).head(1)
        present = present.reset_index(drop=True)
    else:
        present = pd.DataFrame(index=range(1 if len(opened) or len(tuples) else 0))
    present = present.assign(**{_KEY: np.arange(len(present))})
    owner, xs = _keyed(tuples, present, keys), exact_values(tuples[layout.x])
    scans = _scans(present, owner, xs, replace(state, opened=opened), layout)
    order = np.argsort(owner, kind="stable")  # by key, in arrival order
    rows, xs = tuples["row_num"].to_numpy("int64")[order], xs[order]
    cuts = np.searchsorted(owner[order], np.arange(len(present) + 1))
    fast: list[Emitted] = []
    for k, (scan, peaks) in enumerate(zip(scans, _peaks(punctuations, present, layout))):
        mine = slice(cuts[k], cuts[k + 1])
        if (emitted := _advance_key(scan, rows[mine], xs[mine], order[mine], peaks, len(opened))) is not None:
            fast.append(emitted)
        if end:
            scan.punctuate(None, None)
    parts = stack([opened[[*keys, *names]], pd.concat(
        [tuples[keys], tuple_partials(tuples, list(layout.aggregates), layout.pane_schema)], axis=1)])
    results = _emitted(scans, fast, parts, layout)
    after = SessionState(_open(scans, parts, layout), tally(state.counts, results, keys), state.emitted,
                         layout.bounds.after(punctuations, state.bounds))
    return results, _late(scans, tuples, layout), after, results[[*keys, WID, *names[-2:]]]


def _emitted(scans: list[KeySessions], fast: list[Emitted], parts: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """Every session emitted (by the scans, and at once: ``fast``): keys, ``wid``, ``emit_row``,
    the merged partials of its members."""
    keys = list(layout.keys)
    slow = [(m, w, row) for scan in scans for m, w, _, row in scan.members]
    members, wids, rows = (list(c) for c in zip(*slow)) if slow else ([], [], [])
    member, wid, row = (np.concatenate([np.asarray(c, dtype="int64"), *(f[i] for f in fast)]) for i, c in
                        enumerate([members, wids, [0 if r is None else r for r in rows]]))
    null = np.concatenate([np.array([r is None for r in rows], dtype=bool), np.zeros(len(row) - len(rows), dtype=bool)])
    frame = parts.iloc[member][[*keys, *layout.partials]].reset_index(drop=True)
    frame = frame.assign(**{WID: pd.array(wid, dtype="Int64"), EMIT_ROW: pd.arrays.IntegerArray(row, null)})
    return merge(frame, [*keys, WID, EMIT_ROW], list(layout.aggregates))


def _open(scans: list[KeySessions], parts: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """The sessions still open: keys and the merged partials of their members."""
    keys = list(layout.keys)
    members = [(m, g) for g, s in enumerate(s for scan in scans for s in scan.open) for m in s.members]
    frame = parts.iloc[[m for m, _ in members]][[*keys, *layout.partials]].reset_index(drop=True)
    frame[_GROUP] = [g for _, g in members]
    return merge(frame, [_GROUP, *keys], list(layout.aggregates)).drop(columns=_GROUP)


def _late(scans: list[KeySessions], tuples: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """A late row (payload, ``wid``) per emitted session a late tuple touches; one, ``wid``
    NULL, when it touches none."""
    late = [(j, w) for scan in scans for j, ids in scan.touched.items() for w in ids or [None]]
    rows, wids = (list(c) for c in zip(*late)) if late else ([], [])
    return tuples.iloc[rows][list(layout.payload)].reset_index(drop=True).assign(**{WID: pd.array(wids, dtype="Int64")})
