"""Steps 3 and 4 of live mode's stateful step (:mod:`wid.stream.live_state`) for session
windows, per bucket and micro-batch: each key's sessions
(:class:`wid.stream.sessions.KeySessions`, allowed lateness 0) advanced by the batch's tuples
and punctuations in arrival order.

The state holds, per key, the *open* sessions with their partials (:mod:`wid.stream.panes`;
the last two are the least and largest ``x``: the session's start and last) and the *emitted*
ones as ``(wid, start, last)``: a late tuple names the ids of the emitted sessions it touches,
and a key's next id counts them. Nothing per tuple is kept.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED as CLOSED
from wid.stream.live_arrival import matched, stack
from wid.stream.live_input import KIND, PUNCTUATION, TUPLE
from wid.stream.live_windows import SHAPE, Layout
from wid.stream.panes import merge, tuple_partials
from wid.stream.sessions import KeySession, KeySessions

_KEY, _MEMBER, _GROUP = "_wid_key", "_wid_member", "_wid_group"


def _joined(left: pd.DataFrame, right: pd.DataFrame, on: list[str]) -> pd.DataFrame:
    """Rows of ``left`` and ``right`` equal on ``on`` (NULL equals NULL; all pairs when empty)."""
    if not on:
        return left.merge(right, how="cross")
    differ = {c: object for c in on if left[c].dtype != right[c].dtype}
    return left.astype(differ).merge(right.astype(differ), on=on)


def _keyed(frame: pd.DataFrame, present: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Per row of ``frame``: the index of its keys in ``present`` (-1: absent)."""
    if not keys:
        return np.zeros(len(frame), dtype="int64")
    return matched(frame, present, keys, _KEY).fillna(-1).to_numpy("int64")


def _bounds_before(present: pd.DataFrame, stored: pd.DataFrame, layout: Layout) -> list[Fraction | None]:
    """Per key of ``present``: its bound ``B`` before the batch (the largest stored
    ``wid_closed`` of a shape matching it), None when no punctuation has bound it."""
    best: list[Fraction | None] = [None] * len(present)
    for sid, shape in enumerate(layout.bounds.shapes):
        table = stored[stored[SHAPE] == sid]
        if table.empty:
            continue
        pairs = _joined(present[[*shape, _KEY]], table[[*shape, CLOSED]], list(shape))
        for k, bound in zip(pairs[_KEY].tolist(), pairs[CLOSED].tolist()):
            b = Fraction(bound)
            best[k] = b if best[k] is None else max(best[k], b)
    return best


def _scans(present: pd.DataFrame, opened: pd.DataFrame, emitted: pd.DataFrame, bounds: pd.DataFrame,
           layout: Layout) -> list[KeySessions]:
    """Per key of ``present``, its sessions from the state: the emitted ones (closed, for the
    late tuples that touch them; their count is the next id) and the open ones (member ``i``:
    the partials of ``opened``'s row ``i``), and its bound ``B``."""
    keys, (first, last) = list(layout.keys), layout.partials[-2:]
    known = emitted.assign(**{_KEY: _keyed(emitted, present, keys)})
    known = known[known[_KEY].to_numpy() >= 0]
    sessions: list[list[KeySession]] = [[] for _ in range(len(present))]
    for k, w, s, e in zip(known[_KEY].tolist(), known[WID].tolist(), known[first].tolist(), known[last].tolist()):
        sessions[k].append(KeySession(Fraction(s), Fraction(e), wid=int(w), revision=0, closed=True))
    for i, (k, s, e) in enumerate(zip(_keyed(opened, present, keys).tolist(), opened[first].tolist(),
                                      opened[last].tolist())):
        sessions[k].append(KeySession(Fraction(s), Fraction(e), [i]))
    return [KeySessions(layout.gap, bound=b, sessions=s, next_id=sum(x.closed for x in s))
            for b, s in zip(_bounds_before(present, bounds, layout), sessions)]


def _events(tuples: pd.DataFrame, punctuations: pd.DataFrame, present: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """The batch's elements per key of ``present`` in ``(key, row_num, kind)`` order: each tuple
    (``_wid_member`` its index) and, per key, each punctuation of a shape binding it."""
    parts = [pd.DataFrame({_KEY: _keyed(tuples, present, list(layout.keys)), "row_num": tuples["row_num"].to_numpy(),
                           KIND: TUPLE, _MEMBER: np.arange(len(tuples)), CLOSED: None})]
    for shape in layout.bounds.shapes:
        mine = layout.bounds.of(punctuations, shape)
        if len(mine):
            pairs = _joined(present[[*shape, _KEY]], mine[["row_num", *shape, CLOSED]], list(shape))
            parts.append(pd.DataFrame({_KEY: pairs[_KEY].to_numpy(), "row_num": pairs["row_num"].to_numpy(),
                                       KIND: PUNCTUATION, _MEMBER: -1, CLOSED: pairs[CLOSED].to_numpy(object)}))
    events = pd.concat(parts, ignore_index=True)
    order = np.lexsort((events[KIND].to_numpy(), events["row_num"].to_numpy("int64"), events[_KEY].to_numpy()))
    return events.iloc[order]


def advance_sessions(tuples: pd.DataFrame, punctuations: pd.DataFrame, state: pd.DataFrame, bounds: pd.DataFrame,
                     layout: Layout, end: bool = False,
                     top: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Steps 3 and 4 for sessions, as :func:`wid.stream.live_windows.advance` (``top`` unused):
    ``(results, late, state, bounds)``. In: the batch's ``tuples`` (keys, ``layout.x``, values,
    payload) and ``punctuations`` (``row_num``, pattern columns, ``wid_closed`` in ``x`` units),
    each in arrival order; the state before it (keys, ``wid``: NULL for an open session,
    partials) and the bound table. Per key, in arrival order, each tuple arrives and each
    punctuation binding the key raises its bound ``B`` (:class:`KeySessions`, gap
    ``layout.gap``); the end of the stream emits the open sessions. Out: the emitted sessions
    (keys, ``wid``, partials, ``emit_row``), the late rows (payload, ``wid``: one per emitted
    session the tuple touches, NULL if none) and the state after.

    >>> from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    >>> from wid.aggregate.range import Aggregate
    >>> from wid.stream.live_windows import Bounds
    >>> panes = StructType([StructField("k", StringType()), StructField("wid", LongType()),
    ...                     *[StructField(f"_wid_p{i}", t) for i, t in enumerate([LongType(), DoubleType(), DoubleType()])]])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "x"),
    ...                 (Aggregate("n", "count"), Aggregate("s", "min", "x"), Aggregate("e", "max", "x")),
    ...                 own=False, on_all=False, shift=0, consistent=False, pane_schema=panes,
    ...                 closed_schema=StructType(), output=StructType(), gap=Fraction(2), x="x")
    >>> tuples = pd.DataFrame({"row_num": [0, 1, 3], "k": ["a", "a", "a"], "x": [1.0, 2.5, 3.0]})
    >>> marks = pd.DataFrame({"row_num": [2], "k": ["a"], "wid_closed": [5.0]})
    >>> state = pd.DataFrame(columns=panes.fieldNames()), pd.DataFrame(columns=[SHAPE, "k", "wid_closed"])
    >>> results, late, after, _ = advance_sessions(tuples, marks, *state, layout)
    >>> results[["k", "wid", "_wid_p0", "_wid_p1", "_wid_p2", "emit_row"]].values.tolist(), late.values.tolist()
    ([['a', 0, 2, 1.0, 2.5, 2]], [[3, 3.0, 0]])
    """
    keys, names = list(layout.keys), layout.partials
    tuples = tuples.reset_index(drop=True)
    emitted = state[state[WID].notna()]
    opened = state[state[WID].isna()].reset_index(drop=True)
    present = stack([opened[keys], tuples[keys]]).drop_duplicates(ignore_index=True) if keys else pd.DataFrame(
        index=range(1 if len(opened) or len(tuples) else 0))  # the keys in play: open sessions, the batch's tuples
    present = present.assign(**{_KEY: np.arange(len(present))})
    scans = _scans(present, opened, emitted, bounds, layout)
    xs, events = tuples[layout.x].tolist(), _events(tuples, punctuations, present, layout)
    for k, row, kind, j, bound in zip(events[_KEY].tolist(), events["row_num"].tolist(), events[KIND].tolist(),
                                      events[_MEMBER].tolist(), events[CLOSED].tolist()):
        if kind == TUPLE:
            scans[k].arrive(j, Fraction(xs[j]), len(opened) + j)  # member: the tuple's partials
        else:
            scans[k].punctuate(int(row), Fraction(bound))
    if end:
        for scan in scans:
            scan.punctuate(None, None)
    parts = stack([opened[[*keys, *names]], pd.concat(
        [tuples[keys], tuple_partials(tuples, list(layout.aggregates), layout.pane_schema)], axis=1)])
    results = _emitted(scans, parts, layout)
    still = _open(scans, parts, layout)
    still[WID] = pd.array([None] * len(still), dtype="Int64")
    state = stack([emitted, results[[*keys, WID, *names[-2:]]], still])  # emitted: id, start and last
    state = state.reindex(columns=[*keys, WID, *names])
    return results, _late(scans, tuples, layout), state, layout.bounds.after(punctuations, bounds)


def _emitted(scans: list[KeySessions], parts: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """Every session the scans emitted: keys, ``wid``, ``emit_row``, the merged partials of its members."""
    keys = list(layout.keys)
    emitted = [(m, w, row) for scan in scans for m, w, _, row in scan.members]
    members, wids, rows = (list(c) for c in zip(*emitted)) if emitted else ([], [], [])
    frame = parts.iloc[members][[*keys, *layout.partials]].reset_index(drop=True)
    frame = frame.assign(**{WID: pd.array(wids, dtype="Int64"), EMIT_ROW: pd.array(rows, dtype="Int64")})
    return merge(frame, [*keys, WID, EMIT_ROW], list(layout.aggregates))


def _open(scans: list[KeySessions], parts: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """The sessions still open: keys and the merged partials of their members."""
    keys = list(layout.keys)
    members = [(m, g) for g, s in enumerate(s for scan in scans for s in scan.sessions if not s.closed)
               for m in s.members]
    frame = parts.iloc[[m for m, _ in members]][[*keys, *layout.partials]].reset_index(drop=True)
    frame[_GROUP] = [g for _, g in members]
    return merge(frame, [_GROUP, *keys], list(layout.aggregates)).drop(columns=_GROUP)


def _late(scans: list[KeySessions], tuples: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """A late row (payload, ``wid``) per emitted session a late tuple touches; one, ``wid``
    NULL, when it touches none."""
    late = [(j, w) for scan in scans for j, ids in scan.touched.items() for w in ids or [None]]
    rows, wids = (list(c) for c in zip(*late)) if late else ([], [])
    return tuples.iloc[rows][list(layout.payload)].reset_index(drop=True).assign(**{WID: pd.array(wids, dtype="Int64")})
