"""One key's batch of session tuples at once, when they come in order and on time (live mode,
:mod:`wid.stream.live.sessions.steps`): the common case of a stream punctuated with slack, without a
step per tuple.

If the key's tuples arrive in ``x`` order, each at or above the bound ``B`` when it arrives and
the first at or above the last of every session before the batch, then no tuple is late and
none touches an emitted session (``x >= B > last + g``). Sessions are the runs of tuples
between gaps ``x' - x > g`` (the first run joins the last session before the batch when it
touches it: ``x <= last + g``), and each is emitted at the first punctuation whose running max
passes its end ``last + g``: never before its last tuple arrives (the bound then is at most
that tuple's ``x``), and, ends rising with starts, in start order, so its id is the next in
that order.
That is what :meth:`wid.stream.sessions.KeySessions.arrive` and ``punctuate``, called per
tuple and punctuation, would do.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cached_property, reduce

import numpy as np
import pandas as pd

from wid.stream.sessions import KeySession, KeySessions, Number

#: Per member of the sessions emitted: the member (a row of the batch's partials), ``wid``, ``emit_row``.
Emitted = tuple[np.ndarray, np.ndarray, np.ndarray]
_NEVER = np.iinfo(np.int64).max
_SMALL = 2**62  # whole numbers within it add and subtract in int64


def _small(values: np.ndarray) -> bool:
    return not len(values) or (-_SMALL < values.min() and values.max() < _SMALL)


def exact_value(value: float | Decimal | Number) -> Number:
    """A stored value of ``x`` or a bound, exactly: a whole number as it is (fast), else a Fraction
    of the value itself (a double's binary value; a clause's numbers mean what they print as:
    :func:`wid.windows.numbers.exact`).

    >>> exact_value(3), exact_value(0.5), exact_value(0.1) == Fraction(1, 10)
    (3, Fraction(1, 2), False)
    """
    return value if isinstance(value, int) else Fraction(value)


def numbers(values: list[Number]) -> np.ndarray:
    """Exact numbers as an array: int64 when all are whole (and fit), else objects.

    >>> numbers([1, 2]).dtype, numbers([1, Fraction(1, 2)]).dtype
    (dtype('int64'), dtype('O'))
    """
    if all(isinstance(v, int) and -2**63 < v < 2**63 for v in values):
        return np.asarray(values, dtype="int64")
    return np.asarray(values, dtype=object)


def exact_values(column: pd.Series) -> np.ndarray:
    """A column of values of ``x`` (no NULL) as exact numbers (:func:`numbers`): longs at once,
    doubles and decimals one by one as Fractions (a double's binary value, a decimal's own).

    >>> exact_values(pd.Series([3, -5]))
    array([ 3, -5])
    >>> exact_values(pd.Series([2.5, 0.1])).tolist()
    [Fraction(5, 2), Fraction(3602879701896397, 36028797018963968)]
    >>> exact_values(pd.Series([Decimal("0.1"), Decimal("4")])).tolist()
    [Fraction(1, 10), Fraction(4, 1)]
    """
    if pd.api.types.is_integer_dtype(column.dtype):
        return column.to_numpy("int64")
    return numbers([exact_value(v) for v in column.tolist()])


@dataclass(frozen=True)
class Peaks:
    """The batch's punctuations of one shape and pattern value: their ``row_num`` s and the
    running max of their bounds (:func:`numbers`; nondecreasing: found by bisection).

    >>> p = Peaks.running(np.array([2, 5, 7]), np.array([10, 30, 20]))
    >>> p.before(5), p.before(5, strictly=False), p.passing(10), p.passing(29), p.passing(30)
    (10, 30, 5, 5, None)
    >>> p.before_each(np.array([0, 3, 9]), -1).tolist(), p.passing_each(np.array([5, 10, 30])).tolist()
    ([-1, 10, 30], [2, 5, 9223372036854775807])
    """

    rows: np.ndarray
    peaks: np.ndarray

    @staticmethod
    def running(rows: np.ndarray, bounds: np.ndarray) -> Peaks:
        """The peaks of punctuations at ``rows`` (ascending) with ``bounds`` (exact numbers)."""
        return Peaks(rows.astype("int64"), np.maximum.accumulate(bounds) if len(bounds) else bounds)

    @cached_property
    def _lists(self) -> tuple[list[int], list[Number]]:
        return self.rows.tolist(), self.peaks.tolist()

    def before(self, row: int | None, strictly: bool = True) -> Number | None:
        """The bound of the punctuations before ``row`` (``strictly``: a punctuation of the row
        arrives after its tuple; None: all of them), None if none."""
        rows, peaks = self._lists
        i = len(rows) if row is None else (bisect_left if strictly else bisect_right)(rows, row)
        return peaks[i - 1] if i else None

    def passing(self, end: Number) -> int | None:
        """The row of the first punctuation whose running max passes ``end`` (is above it)."""
        rows, peaks = self._lists
        i = bisect_right(peaks, end)
        return rows[i] if i < len(rows) else None

    def before_each(self, rows: np.ndarray, floor: Number) -> np.ndarray:
        """:meth:`before` (strictly) of each of ``rows``, ``floor`` where none; of ``floor``'s
        array type (int64 for an int, else objects)."""
        kind = "int64" if isinstance(floor, int) else object
        i = np.searchsorted(self.rows, rows, "left")
        return np.where(i > 0, self.peaks[i - 1].astype(kind), np.asarray(floor, dtype=kind))

    def passing_each(self, ends: np.ndarray) -> np.ndarray:
        """:meth:`passing` of each of ``ends``, the largest int64 where none."""
        found = np.searchsorted(self.peaks.astype(ends.dtype), ends, "right")
        return np.append(self.rows, _NEVER)[found]

    @property
    def whole(self) -> bool:
        """Every bound a whole number."""
        return self.peaks.dtype.kind == "i"


def _whole(scan: KeySessions, xs: np.ndarray, peaks: list[Peaks], reaches: np.ndarray | None) -> bool:
    """Every number whole and within ``±2**62``: int64 arithmetic is exact (sums and
    differences fit), else the numbers go as exact objects."""
    known = [*(s.last for s in scan.sessions), *([] if scan.bound is None else [scan.bound])]
    known += [scan.gap] if reaches is None else [s.reach for s in scan.sessions]
    return (xs.dtype.kind == "i" and _small(xs) and all(p.whole and _small(p.peaks) for p in peaks)
            and (reaches is None or (reaches.dtype.kind == "i" and _small(reaches)))
            and all(isinstance(v, int) and -_SMALL < v < _SMALL for v in known))


def _on_time(scan: KeySessions, rows: np.ndarray, xs: np.ndarray, peaks: list[Peaks], whole: bool) -> bool:
    """``xs`` (arriving at ``rows``) in order, each at or above the key's bound when it arrives,
    the first at or above the last of every session before the batch."""
    floor = int(np.iinfo(np.int64).min) if whole else -math.inf
    start = np.full(len(xs), floor if scan.bound is None else scan.bound, dtype=xs.dtype)
    bound = reduce(np.maximum, (p.before_each(rows, floor) for p in peaks), start)
    return bool(len(xs)) and bool((xs >= bound).all()) and not (np.diff(xs) < 0).any() and not (
        scan.sessions and xs[0] < max(s.last for s in scan.sessions))


def advance_in_order(scan: KeySessions, rows: np.ndarray, xs: np.ndarray, js: np.ndarray, peaks: list[Peaks],
                     opened: int, reaches: np.ndarray | None = None) -> Emitted | None:
    """The key's batch at once (module doc), or None (nothing done) unless its tuples come in
    order and on time: tuple ``j`` of the batch (``j`` in ``js``, member ``opened + j``) at
    ``xs[i]`` arriving at row ``rows[i]``, and the punctuations ``peaks`` binding the key;
    ``reaches``: each tuple's own end ``x + h`` (a gap per tuple, ``scan.gap`` None). Returns
    what the sessions emitted; ``scan`` keeps the open ones and the next id.

    With a gap per tuple a session's end is the largest ``x + h`` so far: in ``x`` order the
    running max of ``reaches`` (from the tail's end) is, at each tuple, the end of the session
    before it (a later run's ends pass every earlier one's), a run breaks where ``x`` is above
    it, and the runs' ends rise with their starts as with a constant gap.

    Gap 2: 1 and 2 (at rows 1 and 2) form a session ending at 4, emitted at row 4 (bound 5, not
    at row 3: bound 4 does not pass it); 5 opens the next, which 7 (= 5 + 2, row 6) joins:

    >>> scan = KeySessions(2, bound=0)
    >>> [a.tolist() for a in advance_in_order(scan, np.array([1, 2, 4, 6]), np.array([1, 2, 5, 7]),
    ...                                       np.arange(4), [Peaks.running(np.array([3, 4]), np.array([4, 5]))],
    ...                                       opened=0)]
    [[1, 0], [0, 0], [4, 4]]
    >>> [(s.start, s.last, s.members) for s in scan.open], scan.next_id
    ([(5, 7, [3, 2])], 1)

    Gaps per tuple: 1 (gap 5) and 2 (gap 1) end at 6, which 5 joins (its gap 1: ends at 6); 8
    opens the next:

    >>> scan = KeySessions(None, bound=0)
    >>> [a.tolist() for a in advance_in_order(scan, np.array([1, 2, 4, 6]), np.array([1, 2, 5, 8]),
    ...                                       np.arange(4), [Peaks.running(np.array([7]), np.array([7]))],
    ...                                       opened=0, reaches=np.array([6, 3, 6, 9]))]
    [[2, 1, 0], [0, 0, 0], [7, 7, 7]]
    >>> [(s.start, s.last, s.reach) for s in scan.open]
    [(8, 8, 9)]
    """
    whole = _whole(scan, xs, peaks, reaches)
    kind = "int64" if whole else object
    xs, gap = xs.astype(kind), scan.gap
    if not _on_time(scan, rows, xs, peaks, whole):
        return None
    tail = scan.sessions[-1] if scan.sessions and xs[0] <= scan.end(scan.sessions[-1]) else None
    if reaches is None:
        firsts = np.flatnonzero(np.append(True, (xs[1:] > xs[:-1] + gap).astype(bool)))
    else:  # the end of the session before each tuple: the running max of the ends (from the tail's)
        reach = reaches.astype(kind)
        if tail is not None:
            reach = np.append(np.asarray([tail.reach], dtype=kind), reach)
        reach = np.maximum.accumulate(reach)[-len(xs):]
        firsts = np.flatnonzero(np.append(True, (xs[1:] > reach[:-1]).astype(bool)))
    lasts = np.append(firsts[1:], len(xs)) - 1
    # the sessions in start order: the open ones before the batch, then the batch's (the first with the tail)
    old = sorted((s for s in scan.open if s is not tail), key=lambda s: s.start)
    held = [*old, *([tail] if tail else [])]
    run = len(old) + np.repeat(np.arange(len(firsts)), np.diff(np.append(firsts, len(xs))))
    latest = np.lexsort((-np.arange(len(xs)), run))  # per session the latest tuple first, as arrive() merges
    group = np.concatenate([run[latest], np.repeat(np.arange(len(held)), [len(s.members) for s in held])])
    member = np.concatenate([opened + js[latest], np.asarray([m for s in held for m in s.members], dtype="int64")])
    by = np.argsort(group, kind="stable")  # the tail's members after the first run's tuples
    group, member = group[by], member[by]
    ends = np.concatenate([np.asarray([scan.end(s) for s in old], dtype=kind),
                           xs[lasts] + gap if reaches is None else reach[lasts]])
    due = reduce(np.minimum, (p.passing_each(ends) for p in peaks), np.full(len(ends), _NEVER))
    done = due < _NEVER
    wid = scan.next_id + np.cumsum(done) - 1
    emitted = done[group]
    first, last = [s.start for s in old] + xs[firsts].tolist(), [s.last for s in old] + xs[lasts].tolist()
    if tail is not None:
        first[len(old)] = tail.start
    split = np.searchsorted(group, np.arange(len(due) + 1))
    reached = [None] * len(ends) if reaches is None else ends.tolist()
    scan.open = [KeySession(first[g], last[g], member[split[g]:split[g + 1]].tolist(), reach=reached[g])
                 for g in np.flatnonzero(~done).tolist()]
    scan.sessions, scan.starts = list(scan.open), [s.start for s in scan.open]
    scan.next_id += int(done.sum())
    return member[emitted], wid[group[emitted]], due[group[emitted]]
