"""Live mode's session step (:mod:`wid.stream.live.sessions.steps`) reads its state: a bucket's
sessions between micro-batches (:class:`SessionState`) become one
:class:`wid.stream.sessions.KeySessions` per key in play, with the bound each key had before
the batch and the punctuations of the batch binding it (:func:`key_scans`). Allowed lateness 0
(``layout.lateness`` None): only open sessions are kept, an emitted one is forgotten. With allowed
lateness ``L``, every kept session (emitted ones until the bound passes their end + ``L``), each
with its id, last revision and whether that emission is current (:data:`REVISIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql.types import BooleanType, LongType, StructField

from wid.bucket.columns import WID_CLOSED as CLOSED
from wid.stream.live.arrival import COUNT, aligned, matched, stack
from wid.stream.live.windows import SHAPE, Layout
from wid.stream.live.sessions.runs import Peaks, exact_value, exact_values
from wid.stream.sessions import KeySession, KeySessions, Number

_KEY, _GROUP = "_wid_key", "_wid_group"
#: With allowed lateness, a kept session's id (NULL until emitted), last revision (-1 until
#: emitted) and whether its last emission is current: the state's columns after the partials.
REVISIONS = (StructField("_wid_id", LongType()), StructField("_wid_revision", LongType()),
             StructField("_wid_current", BooleanType()))


@dataclass(frozen=True)
class SessionState:
    """A bucket's sessions between micro-batches: ``opened`` (keys, partials: a row per open
    session), ``counts`` (keys, ``_wid_count``: the key's emitted sessions, its next id) and the
    bound table ``bounds``.

    Key ``a`` (gap 2) has emitted session 0 (``x`` from 1.0 to 2.5), forgotten, and its bound is
    5: a tuple at 3.0 touches no kept session and opens one ending at 5 (not below the bound);
    one at 0.5 would open one ending at 2.5 < 5: late, no id:

    >>> from fractions import Fraction
    >>> from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    >>> from wid.aggregate.partials import Aggregate
    >>> from wid.stream.live.sessions.steps import advance_sessions
    >>> from wid.stream.live.windows import Bounds
    >>> names, types = ["k", "_wid_p0", "_wid_p1", "_wid_p2"], [StringType(), LongType(), DoubleType(), DoubleType()]
    >>> panes = StructType([StructField(n, t) for n, t in zip(names, types)])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "x"),
    ...                 (Aggregate("n", "count"), Aggregate("s", "min", "x"), Aggregate("e", "max", "x")),
    ...                 own=False, on_all=False, shift=0, consistent=False, pane_schema=panes,
    ...                 closed_schema=StructType(), output=StructType(), gap=Fraction(2), x="x")
    >>> state = SessionState(pd.DataFrame(columns=names), pd.DataFrame({"k": ["a"], COUNT: [1]}),
    ...                      pd.DataFrame({SHAPE: [0], "k": ["a"], CLOSED: [5.0]}))
    >>> tuples = pd.DataFrame({"row_num": [3, 4], "k": ["a", "a"], "x": [3.0, 0.5]})
    >>> marks = pd.DataFrame(columns=["row_num", "k", CLOSED])  # no punctuation in this batch
    >>> _, late, state = advance_sessions(tuples, marks, state, layout)
    >>> state.opened.values.tolist(), late.values.tolist()
    ([['a', 1, 3.0, 3.0]], [[4, 0.5, <NA>]])
    """

    opened: pd.DataFrame
    counts: pd.DataFrame
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


def _scans(present: pd.DataFrame, state: SessionState, layout: Layout) -> list[KeySessions]:
    """Per key of ``present``: its bound ``B``, next id and open sessions from the state (member
    ``i``: the partials of ``state.opened``'s row ``i``; a gap per tuple: the last partial is the
    session's end, its ``reach``)."""
    keys, gap = list(layout.keys), layout.gap
    first, last, *reach = layout.partials[-3:] if layout.reach else layout.partials[-2:]
    if gap is not None and gap.denominator == 1:
        gap = int(gap)  # whole: ints stay ints (fast)
    opened = state.opened
    ends = opened[reach[0]].tolist() if reach else [None] * len(opened)
    ids, revisions, current = ((opened[f.name].tolist() for f in REVISIONS) if layout.lateness is not None
                               else ([None] * len(opened), [-1] * len(opened), [False] * len(opened)))
    sessions: list[list[KeySession]] = [[] for _ in range(len(present))]
    for i, (k, s, e, r, w, v, c) in enumerate(zip(_keyed(opened, present, keys).tolist(), opened[first].tolist(),
                                                  opened[last].tolist(), ends, ids, revisions, current)):
        sessions[k].append(KeySession(exact_value(s), exact_value(e), [i], None if pd.isna(w) else int(w), int(v),
                                      bool(c), reach=None if r is None else exact_value(r)))
    if keys:
        counts = matched(present, state.counts, keys, COUNT).astype("float64").fillna(0).astype("int64").tolist()
    else:
        counts = [int(state.counts[COUNT].sum())] * len(present)
    before = _bounds_before(present, state.bounds, layout)
    lateness = layout.lateness or 0
    return [KeySessions(gap, lateness, b, s, n) for b, s, n in zip(before, sessions, counts)]


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


def key_scans(tuples: pd.DataFrame, punctuations: pd.DataFrame, state: SessionState,
              layout: Layout) -> tuple[np.ndarray, np.ndarray, list[KeySessions], list[list[Peaks]]]:
    """The keys in play (the open sessions' and the batch's ``tuples``', NULL one key, however
    typed), numbered in order of appearance: ``(owner, xs, scans, peaks)``, tuple ``i`` of key
    ``owner[i]`` at ``xs[i]`` (exact), and per key its :class:`KeySessions` from ``state`` and the
    :class:`Peaks` of the ``punctuations`` binding it. ``tuples`` and ``state.opened`` are
    indexed 0, 1, ...

    >>> from fractions import Fraction
    >>> from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
    >>> from wid.aggregate.partials import Aggregate
    >>> from wid.stream.live.windows import Bounds
    >>> types = [StringType(), LongType(), DoubleType(), DoubleType()]
    >>> panes = StructType([StructField(n, t) for n, t in zip(["k", "_wid_p0", "_wid_p1", "_wid_p2"], types)])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "x"),
    ...                 (Aggregate("n", "count"), Aggregate("s", "min", "x"), Aggregate("e", "max", "x")),
    ...                 own=False, on_all=False, shift=0, consistent=False, pane_schema=panes,
    ...                 closed_schema=StructType(), output=StructType(), gap=Fraction(2), x="x")
    >>> opened = pd.DataFrame({"k": ["b"], "_wid_p0": [1], "_wid_p1": [0.5], "_wid_p2": [0.5]})
    >>> state = SessionState(opened, pd.DataFrame({"k": ["b"], COUNT: [3]}),
    ...                      pd.DataFrame({SHAPE: [0], "k": ["b"], CLOSED: [0.25]}))
    >>> tuples = pd.DataFrame({"row_num": [7, 8], "k": ["a", "b"], "x": [1.5, 2.0]})
    >>> owner, xs, scans, peaks = key_scans(tuples, pd.DataFrame(columns=["row_num", "k", CLOSED]), state, layout)
    >>> owner.tolist(), xs.tolist(), [(s.bound, s.next_id, len(s.open)) for s in scans]
    ([1, 0], [Fraction(3, 2), Fraction(2, 1)], [(Fraction(1, 4), 3, 1), (None, 0, 0)])
    """
    keys = list(layout.keys)
    if keys:
        present = stack([state.opened[keys], tuples[keys]]).groupby(keys, dropna=False, sort=False).head(1)
        present = present.reset_index(drop=True)
    else:
        present = pd.DataFrame(index=range(1 if len(state.opened) or len(tuples) else 0))
    present = present.assign(**{_KEY: np.arange(len(present))})
    owner, xs = _keyed(tuples, present, keys), exact_values(tuples[layout.x])
    return owner, xs, _scans(present, state, layout), _peaks(punctuations, present, layout)
