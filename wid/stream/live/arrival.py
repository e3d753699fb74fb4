"""Arrival order in live mode's stateful step (:mod:`wid.stream.live.state`), per bucket and
micro-batch: the order check, marks on all keys becoming punctuations, and arrival positions
of ROWS windows. Pure pandas functions; the state they read and write is the processor's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wid.bucket.columns import WID_CLOSED as CLOSED
from wid.errors import WidError
from wid.stream.live.input import END, KIND, MARK

COUNT = "_wid_count"  # tuples of a partition counted so far (ROWS positions)


def stack(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``frames`` one after the other; empty frames and all-NULL columns decide no dtype (a
    column all NULL in one frame takes the type, if it holds NULL, of a frame with values in it).

    >>> stack([pd.DataFrame({"v": [None]}), pd.DataFrame({"v": [1.5]})])["v"].dtype
    dtype('float64')
    """
    kept = [f for f in frames if len(f)]
    if not kept:
        return frames[0].iloc[0:0]
    typed = {c: f[c].dtype for f in reversed(kept) for c in f.columns if f[c].notna().any()}
    typed = {c: t for c, t in typed.items() if isinstance(t, pd.api.extensions.ExtensionDtype) or t.kind in "fcmMO"}
    kept = [f.assign(**{c: f[c].astype(object).astype(typed[c]) for c in f.columns  # via object: any NULL
                        if c in typed and f[c].isna().all()}) for f in kept]
    return pd.concat(kept, ignore_index=True)


def aligned(left: pd.DataFrame, right: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``left`` and ``right`` with their ``keys`` columns of different dtypes as objects (state
    read back as floats where a batch's NULLs are objects), ready to be merged on ``keys``.

    >>> state = pd.DataFrame({"k": [2.0, None]})  # read back from the state store
    >>> batch = pd.DataFrame({"k": pd.Series([2, None], dtype=object), "n": [3, 9]})
    >>> [f.dtypes.tolist() for f in aligned(state, batch, ["k"])]
    [[dtype('O')], [dtype('O'), dtype('int64')]]
    """
    differ = {k: object for k in keys if left[k].dtype != right[k].dtype}
    return left.astype(differ), right.astype(differ)


def matched(frame: pd.DataFrame, table: pd.DataFrame, keys: list[str], column: str) -> pd.Series:
    """Per row of ``frame``: ``table``'s ``column`` at the row's ``keys`` values (NaN if absent;
    NULL matches NULL; dtypes :func:`aligned`).

    >>> table = pd.DataFrame({"k": [2.0, np.nan], "n": [3, 9]})  # state read back: keys as floats
    >>> matched(pd.DataFrame({"k": [7, None, 2]}, dtype=object), table, ["k"], "n").tolist()
    [nan, 9.0, 3.0]
    """
    left, right = aligned(frame[keys], table[[*keys, column]], keys)
    return left.merge(right, on=keys, how="left")[column]


def arrival_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows in ``(row_num, kind)`` order (stable; a tuple before a punctuation of
    its ``row_num``); a NULL ``row_num`` is a :class:`WidError` (it has no place in the order).

    >>> frame = pd.DataFrame({"row_num": [7, 3, 7], KIND: [2, 0, 0]})
    >>> arrival_order(frame).index.tolist()
    [1, 2, 0]
    """
    row_num = frame["row_num"]
    if row_num.isna().any():
        raise WidError("wid: a tuple or punctuation with a NULL row_num: arrival order needs one")
    return frame.iloc[np.lexsort((frame[KIND].to_numpy("int64"), row_num.to_numpy("int64")))]


def check_order(events: pd.DataFrame, last: tuple | None) -> None:
    """A :class:`WidError` if ``events`` (sorted) do not all come after ``last`` (``(row_num,
    kind)`` of the previous batches' last element) or the end marker is not the last element.

    >>> check_order(pd.DataFrame({"row_num": [3, 5], KIND: [0, 0]}), (4, 0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: wid: row_num 3 arrives after row_num 4 of an earlier micro-batch (row_num must not go ...
    """
    head = (int(events["row_num"].iloc[0]), int(events[KIND].iloc[0]))
    if last is not None and last[1] == END:
        raise WidError(f"wid: row_num {head[0]} arrives after the end-of-stream marker")
    if last is not None and head <= (last[0], last[1]):
        raise WidError(f"wid: row_num {head[0]} arrives after row_num {last[0]} of an earlier micro-batch "
                       "(row_num must not go backwards)")
    ends = (events[KIND] == END).to_numpy()
    if ends.any() and (ends.sum() > 1 or not ends[-1]):
        raise WidError("wid: the end-of-stream marker must be the last element of the stream")


def on_all_keys(events: pd.DataFrame, pending: pd.DataFrame, high, shift: int,
                end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(due, waiting)``: the records among the ``pending`` marks and the batch's tuple marks
    (at ``row_num + shift``) above ``high`` (the largest emitted), due when the stream has
    passed them (or ended); columns ``row_num``, ``wid_closed``.

    The marks closing 2 (row 4) and 3 (row 7) raise the bound, 1 does not; 2 rows later, the first
    is due (row 6), the second waits (row 9):

    >>> events = pd.DataFrame({"row_num": [4, 5, 6, 7], KIND: [MARK] * 4, CLOSED: [2, 1, None, 3]})
    >>> due, waiting = on_all_keys(events, pd.DataFrame({"row_num": [], CLOSED: []}), 0, 2, False)
    >>> due["row_num"].tolist(), due[CLOSED].tolist(), waiting["row_num"].tolist()
    ([6], [2.0], [9])
    """
    marks = events[(events[KIND].to_numpy() <= MARK) & events[CLOSED].notna().to_numpy()]
    candidates = stack([pending, pd.DataFrame({"row_num": marks["row_num"] + shift, CLOSED: marks[CLOSED]})])
    whole = pd.api.types.is_integer_dtype(candidates[CLOSED])  # else doubles or decimals (session bounds on x)
    candidates = candidates.astype({"row_num": "int64", **({CLOSED: "int64"} if whole else {})})
    candidates = candidates.iloc[np.argsort(candidates["row_num"].to_numpy(), kind="stable")]
    before = np.maximum.accumulate(np.concatenate([[high], candidates[CLOSED].to_numpy()]))[:-1]
    candidates = candidates[candidates[CLOSED].to_numpy() > before]
    due = (candidates["row_num"] <= events["row_num"].max()).to_numpy() | end
    return candidates[due], candidates[~due]


def positions(tuples: pd.DataFrame, counted: pd.DataFrame, pattern: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """``(x, counts)``: each tuple's 0-based arrival position in its partition (the ``pattern``
    columns, NULL a value of its own; the whole stream when empty), in the order of ``tuples``,
    after the partition's ``_wid_count`` in ``counted``; and the counts with these tuples. A
    repeated ``row_num`` within a partition is a :class:`WidError` (replay's Bucket refuses it).

    >>> t = pd.DataFrame({"row_num": [5, 6, 7], "p": ["a", None, "a"]})
    >>> x, counts = positions(t, pd.DataFrame({"p": ["a"], COUNT: [2]}), ["p"])
    >>> x.tolist(), counts[COUNT].tolist()
    ([2, 0, 3], [4, 1])
    """
    repeated = tuples.duplicated([*pattern, "row_num"], keep=False)
    if repeated.any():
        raise WidError(f"wid: duplicate row_num={int(tuples.loc[repeated, 'row_num'].iloc[0])}: "
                       "arrival order needs a unique row_num")
    if not pattern:
        return int(counted[COUNT].sum()) + np.arange(len(tuples), dtype="int64"), tally(counted, tuples, pattern)
    base = matched(tuples, counted, pattern, COUNT).astype("float64").fillna(0).to_numpy("int64")
    rank = tuples.groupby(pattern, dropna=False, sort=False).cumcount().to_numpy("int64")
    return base + rank, tally(counted, tuples, pattern)


def tally(counted: pd.DataFrame, rows: pd.DataFrame, pattern: list[str]) -> pd.DataFrame:
    """``counted`` (``pattern`` columns, ``_wid_count``) plus one per row of ``rows`` for its
    ``pattern`` values (NULL a value of its own; one count when ``pattern`` is empty).

    >>> tally(pd.DataFrame({"p": ["a"], COUNT: [2]}), pd.DataFrame({"p": ["a", None, "a", "b"]}), ["p"]).values.tolist()
    [['a', 4], [nan, 1], ['b', 1]]
    """
    if not pattern:
        return pd.DataFrame({COUNT: [int(counted[COUNT].sum()) + len(rows)]})
    grown = stack([counted, rows[pattern].assign(**{COUNT: 1})])
    return grown.groupby(pattern, dropna=False, sort=False)[COUNT].sum().reset_index()
