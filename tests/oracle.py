"""Brute-force window aggregates in plain Python: the independent reference for the tests.

Every window's extent is materialised with the ``extent(w)`` formula of docs/semantics.md section 3
(never the ``wids(t)`` formula the engine uses) and the aggregates are computed over
the tuples it holds, per group. Arithmetic is exact (:class:`fractions.Fraction`):
numbers as given, timestamps as epoch seconds with their fractional part.

A window is one of :class:`Sliding` (also tumbling), :class:`Rows` (tuple-based,
optionally partitioned by ``pattr``), :class:`Landmark` (on a value or on arrival
positions), each with an optional grid ``offset``, :class:`Cumulating` and the FCA kinds :class:`SlideByTuple` (with ``every`` and ``rank``).
Positions (ROWS windows) and the FCA window-ids are taken over the whole stream;
``where`` then filters the tuples inside each extent.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

Row = dict[str, Any]
#: A column name, or a function of the row.
Expr = str | Callable[[Row], Any]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Sliding:
    """``[RANGE r SLIDE s OFFSET o WATTR attr]``: extent(w) = {t : (w+1)s - r + o <= x < (w+1)s + o}
    (tumbling: r = s)."""

    range: Any
    slide: Any
    attr: str
    offset: Any = 0

    def extent(self, w: int) -> tuple[Fraction, Fraction]:
        r, s, o = Fraction(self.range), Fraction(self.slide), Fraction(self.offset)
        return (w + 1) * s - r + o, (w + 1) * s + o

    def candidates(self, xs: Sequence[Fraction]) -> range:
        """A superset of the windows that may hold one of ``xs``: (w+1)s + o > min x and (w+1)s - r + o <= max x."""
        r, s, o = Fraction(self.range), Fraction(self.slide), Fraction(self.offset)
        return range(math.floor((min(xs) - o) / s) - 1, math.ceil((max(xs) - o + r) / s) + 1)


@dataclass(frozen=True)
class Cumulating:
    """``[CUMULATE STEP st SIZE sz OFFSET o WATTR attr]`` as Flink SQL defines it: per period p, the
    windows [p*sz + o, p*sz + o + j*st) for j = 1 .. sz/st, numbered w = p*(sz/st) + j - 1."""

    step: Any
    size: Any
    attr: str
    offset: Any = 0

    def extent(self, w: int) -> tuple[Fraction, Fraction]:
        st, sz, o = Fraction(self.step), Fraction(self.size), Fraction(self.offset)
        n = int(sz / st)
        p, j = divmod(w, n)
        return p * sz + o, p * sz + o + (j + 1) * st

    def candidates(self, xs: Sequence[Fraction]) -> range:
        st, sz, o = Fraction(self.step), Fraction(self.size), Fraction(self.offset)
        n = int(sz / st)
        return range((math.floor((min(xs) - o) / sz) - 1) * n, (math.floor((max(xs) - o) / sz) + 2) * n)


@dataclass(frozen=True)
class Rows(Sliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num [PATTR p]]``: :class:`Sliding` on x = the
    0-based arrival position (within the partition of ``pattr``); the window-id is (w, p)."""

    attr: str = "row_num"
    pattr: str | None = None


@dataclass(frozen=True)
class Landmark:
    """``[RANGE UNBOUNDED SLIDE s OFFSET o WATTR attr]``: extent(w) = {t : x < (w+1)s + o}, for w up
    to floor((max x - o) / s) over the whole stream. ``rows``: x is the arrival position."""

    slide: Any
    attr: str
    rows: bool = False
    offset: Any = 0

    def extent(self, w: int) -> tuple[float, Fraction]:
        return -math.inf, (w + 1) * Fraction(self.slide) + Fraction(self.offset)

    def candidates(self, xs: Sequence[Fraction]) -> range:
        s, o = Fraction(self.slide), Fraction(self.offset)
        return range(math.floor((min(xs) - o) / s) - 1, math.floor((max(xs) - o) / s) + 1)


@dataclass(frozen=True)
class SlideByTuple:
    """``[RANGE r RATTR a SLIDE n ROWS SATTR row_num | rank(a)]`` (FCA): the window-ids are
    ``t.a`` of every n-th tuple (positions n-1, 2n-1, ...) in arrival order, or in ``a``
    order (ties by row_num) when ``rank``; extent(w) = {u : w - r < u.a <= w}."""

    range: Any
    attr: str
    every: int = 1
    rank: bool = False


Window = Sliding | Cumulating | Landmark | SlideByTuple


def seconds(value: Any) -> Fraction:
    """A window-attribute value as an exact number (timestamps: epoch seconds)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        delta = value - EPOCH
        return Fraction(delta.days * 86400 + delta.seconds) + Fraction(delta.microseconds, 10**6)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError(f"NULL or NaN window attribute: {value!r}")
    return Fraction(value)


def _value(expr: Expr, row: Row) -> Any:
    return expr(row) if callable(expr) else row[expr]


def _between(members: list[tuple[Fraction, Row]], low: Any, high: Any, closed_low: bool) -> list[Row]:
    """The tuples of ``members`` (sorted by x) with ``low <= x < high`` (``closed_low``) or
    ``low < x <= high``: a binary search for the extent's two ends."""
    xs = [x for x, _ in members]
    if closed_low:
        return [t for _, t in members[bisect.bisect_left(xs, low): bisect.bisect_left(xs, high)]]
    return [t for _, t in members[bisect.bisect_right(xs, low): bisect.bisect_right(xs, high)]]


def _extents(rows: list[Row], window: Window) -> Iterable[tuple[Any, tuple, list[Row]]]:
    """``(wid, partition, tuples of the extent)`` for every window, empty or not."""
    in_order = sorted(rows, key=lambda t: t["row_num"])
    if isinstance(window, SlideByTuple):
        r = Fraction(window.range)
        by_value = sorted(((seconds(t[window.attr]), t) for t in in_order), key=lambda p: p[0])
        order = [t for _, t in by_value] if window.rank else in_order  # sorted() is stable: ties by row_num
        wids = {t[window.attr] for t in order[window.every - 1:: window.every]}
        for w in sorted(wids, key=seconds):
            yield w, (), _between(by_value, seconds(w) - r, seconds(w), closed_low=False)
        return
    pattr = getattr(window, "pattr", None)
    positional = isinstance(window, Rows) or (isinstance(window, Landmark) and window.rows)
    partitions: dict[tuple, list[Row]] = defaultdict(list)
    for t in in_order:
        partitions[(t[pattr],) if pattr else ()].append(t)
    for partition, members in partitions.items():
        if positional:
            xs = [Fraction(i) for i in range(len(members))]
        else:
            xs = [seconds(t[window.attr]) for t in members]
        by_value = sorted(zip(xs, members), key=lambda p: p[0])
        for w in window.candidates(xs):
            start, end = window.extent(w)
            yield w, partition, _between(by_value, start, end, closed_low=True)


def _aggregate(fn: str | Callable[[list], Any], values: list) -> Any:
    if callable(fn):
        return fn(values)
    present = [v for v in values if v is not None]
    if fn == "count":
        return len(present)
    if not present:
        return None
    if fn in ("min", "max"):
        return (min if fn == "min" else max)(present)
    total = sum(Fraction(v) for v in present)
    if fn == "avg":
        return float(total) / len(present)  # one correctly rounded division, as Spark's sum/count
    return int(total) if all(isinstance(v, int) for v in present) else float(total)


def evaluate(
    rows: list[Row],
    window: Window,
    aggregates: dict[str, tuple[str | Callable[[list], Any], Expr | None]],
    group_by: Sequence[Expr] = (),
    where: Callable[[Row], bool] | None = None,
) -> list[Row]:
    """One row per (window, partition, group) with a tuple in the extent: ``wid``, the
    partition attribute (as ``pattr``), each group-by column (``key0``... for functions)
    and each aggregate ``name: (fn, arg)``; fn is count/sum/avg/min/max or a function of
    the list of values, arg a column, a function of the row, or None (``count(*)``)."""
    pattr = getattr(window, "pattr", None)
    out = []
    for w, partition, extent in _extents(rows, window):
        groups: dict[tuple, list[Row]] = defaultdict(list)
        for t in extent:
            if where is None or where(t):
                groups[tuple(_value(g, t) for g in group_by)].append(t)
        for key, members in groups.items():
            result: Row = {"wid": w}
            if pattr:
                result[pattr] = partition[0]
            for i, g in enumerate(group_by):
                result[g if isinstance(g, str) else f"key{i}"] = key[i]
            for name, (fn, arg) in aggregates.items():
                values = [1 if arg is None else _value(arg, t) for t in members]
                result[name] = _aggregate(fn, values)
            out.append(result)
    return out


def sessions(rows: list[Row], gap: Fraction, attr: str, keys: Sequence[str] = ()) -> list[tuple[tuple, int, list[Row]]]:
    """``(key, wid, tuples)`` of every session: per key, the tuples sorted by the exact value of
    ``attr`` and cut wherever ``x_next - x_prev > gap`` (``gap`` exact: a tuple exactly ``gap``
    after the previous one joins its session); ``wid`` numbers a key's sessions from 0 in that
    order."""
    out = []
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for t in rows:
        groups[tuple(t[k] for k in keys)].append(t)
    for key, members in groups.items():
        members = sorted(members, key=lambda t: seconds(t[attr]))
        runs = [[members[0]]]
        for prev, t in zip(members, members[1:]):
            if seconds(t[attr]) - seconds(prev[attr]) > gap:
                runs.append([])
            runs[-1].append(t)
        out.extend((key, w, run) for w, run in enumerate(runs))
    return out
