"""Steps 3 and 4 of live mode's stateful step (:mod:`wid.stream.live.state`) for session
windows, per bucket and micro-batch: each key's sessions
(:class:`wid.stream.sessions.KeySessions`) advanced by the batch's tuples and punctuations in
arrival order.

The state holds, per key, the *open* sessions with their partials (:mod:`wid.stream.live.panes`;
the last two are the least and largest ``x``: the session's start and last; with a gap per
tuple a third follows, the session's end: the largest ``x + g`` of its tuples) and the count of
its emitted sessions (its next id). An emitted session is forgotten at once (allowed lateness
0: its cleanup time is its end, which the bound has passed), as Flink's merging windows: a
later tuple touching it opens a session of its own, or is late (no id) when that one would be
complete already. Nothing per tuple or per emitted session is kept.

With allowed lateness ``L`` (``layout.lateness``) an emitted session is kept, with its id and
last revision, until the bound passes its end + ``L`` (Flink's cleanup time), as replay keeps
it: a tuple that touches it revises it (its next ``revision``, ``emit_row`` the tuple, as soon
as it is complete), a session it merges into another emits an empty last revision, and a tuple
is late only when the session it would open is past cleanup. The tuples go one at a time.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from wid.bucket.columns import EMIT_ROW, REVISION, WID
from wid.stream.live.arrival import stack, tally
from wid.stream.live.sessions.scans import REVISIONS, SessionState, key_scans
from wid.stream.live.windows import Layout
from wid.stream.live.panes import merge, tuple_partials
from wid.stream.live.sessions.runs import Emitted, Peaks, advance_in_order, exact_values
from wid.stream.sessions import KeySessions, Number

_SESSION = "_wid_session"


def _advance_key(scan: KeySessions, rows: np.ndarray, xs: np.ndarray, js: np.ndarray, peaks: list[Peaks],
                 opened: int, reaches: np.ndarray | None) -> Emitted | None:
    """One key's batch: its tuples (``row_num`` s ``rows`` at ``xs``, tuple ``j`` of the batch
    for ``j`` in ``js``, member ``opened + j``: its partials follow the ``opened`` open
    sessions'; ``reaches``: each one's own end ``x + h``, None: a constant gap) in arrival order, and between them the punctuations binding it, each open
    session emitted at the first that passes its end (in ``row_num`` order, as
    :meth:`KeySessions.punctuate` one at a time would). Tuples in order and on time go at once
    (:func:`wid.stream.live.sessions.runs.advance_in_order`): it returns their emissions, the others are in
    ``scan.members``."""

    def bound(row: int | None, strictly: bool = True) -> Number | None:  # row None: all the batch's
        return max((b for p in peaks if (b := p.before(row, strictly)) is not None), default=None)

    def emit(reached: Number | None) -> None:  # the sessions whose end the bound ``reached`` passes
        while reached is not None:
            ends = [end for s in scan.open if (end := scan.end(s)) < reached]
            if not ends:
                return
            first = min(row for end in ends for p in peaks if (row := p.passing(end)) is not None)
            scan.punctuate(first, bound(first, strictly=False))

    fast = None if scan.lateness else advance_in_order(scan, rows, xs, js, peaks, opened, reaches)
    if fast is None:
        ends = [None] * len(xs) if reaches is None else reaches.tolist()
        for row, x, j, end in zip(rows.tolist(), xs.tolist(), js.tolist(), ends):
            reached = bound(row)
            emit(reached)
            if reached is not None:
                scan.punctuate(row, reached)  # nothing is due now: the bound for the tuple's own check
            scan.arrive(row, x, opened + j, None if end is None else end - x)
        emit(bound(None))
    return fast


def advance_sessions(tuples: pd.DataFrame, punctuations: pd.DataFrame, state: SessionState, layout: Layout,
                     end: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, SessionState]:
    """Steps 3 and 4 for sessions: ``(results, late, state)``. In: the batch's ``tuples``
    (keys, ``layout.x``, values, payload) and ``punctuations`` (``row_num``, pattern columns,
    ``wid_closed`` in ``x`` units), each in arrival order, and the state before it. Per key, in
    arrival order, each tuple arrives and each punctuation binding the key raises its bound
    ``B`` (:class:`KeySessions`, gap ``layout.gap``, or each tuple's own: its end in column
    ``layout.reach`` less its ``x``); the end of the stream emits the open
    sessions. Out: the emitted sessions (keys, ``wid``, partials, ``emit_row``; with allowed
    lateness ``revision`` too, and each retired id's empty last revision), the late rows
    (payload, ``wid`` NULL) and the state after.

    >>> from fractions import Fraction
    >>> from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    >>> from wid.aggregate.partials import Aggregate
    >>> from wid.stream.live.arrival import COUNT
    >>> from wid.stream.live.windows import SHAPE, Bounds
    >>> types = [StringType(), LongType(), DoubleType(), DoubleType()]
    >>> panes = StructType([StructField(n, t) for n, t in zip(["k", "_wid_p0", "_wid_p1", "_wid_p2"], types)])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "x"),
    ...                 (Aggregate("n", "count"), Aggregate("s", "min", "x"), Aggregate("e", "max", "x")),
    ...                 own=False, on_all=False, shift=0, consistent=False, pane_schema=panes,
    ...                 closed_schema=StructType(), output=StructType(), gap=Fraction(2), x="x")
    >>> tuples = pd.DataFrame({"row_num": [0, 1, 3, 4], "k": ["a"] * 4, "x": [1.0, 2.5, 3.0, 0.5]})
    >>> marks = pd.DataFrame({"row_num": [2], "k": ["a"], "wid_closed": [5.0]})
    >>> empty = SessionState(pd.DataFrame(columns=panes.fieldNames()), pd.DataFrame(columns=["k", COUNT]),
    ...                      pd.DataFrame(columns=[SHAPE, "k", "wid_closed"]))
    >>> results, late, after = advance_sessions(tuples, marks, empty, layout)
    >>> results[["k", "wid", "_wid_p0", "_wid_p1", "_wid_p2", "emit_row"]].values.tolist(), late.values.tolist()
    ([['a', 0, 2, 1.0, 2.5, 2]], [[4, 0.5, <NA>]])
    >>> after.opened.values.tolist(), after.counts.values.tolist()
    ([['a', 1, 3.0, 3.0]], [['a', 1]])

    With allowed lateness 1, session 0 is kept after its emission (4.5 + 1 is not below 5): 3.0
    and 0.5 reopen it (ending at 5, not below the bound) instead of one of them being late:

    >>> kept = replace(empty, opened=pd.DataFrame(columns=[*panes.fieldNames(), *(f.name for f in REVISIONS)]))
    >>> results, late, after = advance_sessions(tuples, marks, kept, replace(layout, lateness=Fraction(1)))
    >>> results[["wid", "revision", "_wid_p0", "emit_row"]].values.tolist(), len(late)
    ([[0, 0, 2, 2]], 0)
    >>> after.opened.values.tolist()
    [['a', 4, 0.5, 3.0, 0, 0, False]]
    """
    keys, names = list(layout.keys), layout.partials
    tuples, opened = tuples.reset_index(drop=True), state.opened.reset_index(drop=True)
    owner, xs, scans, key_peaks = key_scans(tuples, punctuations, replace(state, opened=opened), layout)
    order = np.argsort(owner, kind="stable")  # by key, in arrival order
    reaches = None if layout.reach is None else exact_values(tuples[layout.reach])[order]
    rows, xs = tuples["row_num"].to_numpy("int64")[order], xs[order]
    cuts = np.searchsorted(owner[order], np.arange(len(scans) + 1))
    fast: list[Emitted] = []
    for k, (scan, peaks) in enumerate(zip(scans, key_peaks)):
        mine = slice(cuts[k], cuts[k + 1])
        if (emitted := _advance_key(scan, rows[mine], xs[mine], order[mine], peaks, len(opened),
                                    None if reaches is None else reaches[mine])) is not None:
            fast.append(emitted)
        if end:
            scan.punctuate(None, None)
        scan.forget()  # the state keeps no session past cleanup
    parts = stack([opened[[*keys, *names]], pd.concat(
        [tuples[keys], tuple_partials(tuples, list(layout.aggregates), layout.pane_schema)], axis=1)])
    results = _emitted(scans, fast, parts, layout)
    if layout.lateness is not None:  # a revision, or a retired id's empty one, is no new id
        results = stack([results, _retired(scans, tuples, layout)])
        firsts = results[results[REVISION] == 0]
    else:
        firsts = results
    after = SessionState(_open(scans, parts, layout), tally(state.counts, firsts, keys),
                         layout.bounds.after(punctuations, state.bounds))
    return results, _late(scans, tuples, layout), after


def _emitted(scans: list[KeySessions], fast: list[Emitted], parts: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """Every session emitted (by the scans, and at once: ``fast``): keys, ``wid``, ``emit_row``,
    the merged partials of its members; with allowed lateness, ``revision`` after ``wid``."""
    keys = list(layout.keys)
    slow = [(m, w, v, row) for scan in scans for m, w, v, row in scan.members]
    members, wids, revisions, rows = (list(c) for c in zip(*slow)) if slow else ([], [], [], [])
    member, wid, row = (np.concatenate([np.asarray(c, dtype="int64"), *(f[i] for f in fast)]) for i, c in
                        enumerate([members, wids, [0 if r is None else r for r in rows]]))
    null = np.concatenate([np.array([r is None for r in rows], dtype=bool), np.zeros(len(row) - len(rows), dtype=bool)])
    frame = parts.iloc[member][[*keys, *layout.partials]].reset_index(drop=True)
    frame = frame.assign(**{WID: pd.array(wid, dtype="Int64"), EMIT_ROW: pd.arrays.IntegerArray(row, null)})
    revised = [REVISION] if layout.lateness is not None else []  # the fast path (no lateness) emits revision 0
    if revised:
        frame.insert(len(keys) + 1, REVISION, pd.array(revisions, dtype="Int64"))
    return merge(frame, [*keys, WID, *revised, EMIT_ROW], list(layout.aggregates))


def _retired(scans: list[KeySessions], tuples: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """The last revision of each id a tuple's merge retired: its keys (the tuple's), ``wid``,
    ``revision``, ``emit_row`` (the tuple) and the partials of no tuple (counts 0, the rest NULL:
    ``count(*)`` 0 and a NULL extent, as replay's)."""
    keys = list(layout.keys)
    retired = [(w, v, row) for scan in scans for _, w, v, row in scan.retired]
    at = pd.Series(np.arange(len(tuples)), index=tuples["row_num"].to_numpy("int64"))
    frame = tuples.iloc[at.loc[[row for _, _, row in retired]].to_numpy("int64")][keys].reset_index(drop=True)
    wid, revision, row = (pd.array(list(c), dtype="Int64") for c in (zip(*retired) if retired else [(), (), ()]))
    frame = frame.assign(**{WID: wid, REVISION: revision, EMIT_ROW: row})
    empty = {name: 0 if sql.startswith("count(") else None
             for i, a in enumerate(layout.aggregates) for name, sql in a.partials(i)}
    return frame.assign(**{name: pd.Series([value] * len(frame), dtype="Int64" if value == 0 else object)
                           for name, value in empty.items()})


def _open(scans: list[KeySessions], parts: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """The sessions still open (with allowed lateness, all kept ones, and :data:`REVISIONS`): keys and
    the merged partials of their members."""
    keys = list(layout.keys)
    kept = [s for scan in scans for s in (scan.open if layout.lateness is None else scan.sessions)]
    members = [(m, g) for g, s in enumerate(kept) for m in s.members]
    frame = parts.iloc[[m for m, _ in members]][[*keys, *layout.partials]].reset_index(drop=True)
    frame[_SESSION] = [g for _, g in members]
    frame = merge(frame, [_SESSION, *keys], list(layout.aggregates))
    if layout.lateness is not None:
        held = [kept[g] for g in frame[_SESSION].tolist()]
        columns = ([s.wid for s in held], [s.revision for s in held], [s.closed for s in held])
        for field, values in zip(REVISIONS, columns):
            frame[field.name] = pd.array(values, dtype="boolean" if field is REVISIONS[2] else "Int64")
    return frame.drop(columns=_SESSION)


def _late(scans: list[KeySessions], tuples: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """A late row (payload, ``wid`` NULL) per late tuple (``scan.late``: their ``row_num`` s)."""
    rows = {row for scan in scans for row in scan.late}
    late = tuples[tuples["row_num"].isin(rows).to_numpy(bool)]
    return late[list(layout.payload)].reset_index(drop=True).assign(**{WID: pd.array([None] * len(rows), dtype="Int64")})
