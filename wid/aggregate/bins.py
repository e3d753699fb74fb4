"""The paper's start and end bins (section 6) for one key partition.

The state is a sorted set of bins after the init bin (id -inf, the identity); the partial
of bin ``b`` is the aggregate, over the tuples added so far, of extent(w) for every ``w``
from ``b`` up to the next bin. processtuple (:meth:`Bins.add`) adds a tuple's start bin ``x``
and end bin ``e(x)``, each initialised from the bin before it, then updates every bin in
``[x, e(x))``. The end is the least value of x's type that is ``>= x + r`` exactly
(:func:`ends`), so ``w < e(x) <=> w - r < x`` for every window ``w``: a bin ``b`` holds the
tuples with ``x <= b < e(x)``, found by comparing stored values only (never ``b - r``);
tuples come in batches, in any order, and none is kept. A window's result is the partial of the bin at or before it (:meth:`Bins.at`); processpunctuation emits those
and purges the bins below the bound (:meth:`Bins.purge`). A query, with no punctuation, reads
every window once all tuples are in: :func:`at_windows` computes those partials directly.
Which partials the bins hold, and how windows' aggregates come out of them:
:mod:`wid.aggregate.bin_columns`.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np

from wid.windows.numbers import Number

#: Tuples per batch of :meth:`Bins.add`.
BATCH = 1 << 16

_COMBINE = {"n": np.add, "sum": np.add, "min": np.minimum, "max": np.maximum}


def _combine(kind: str, dtype: np.dtype) -> np.ufunc:
    """How two partials of ``kind`` combine, as Spark orders doubles (NaN above every number):
    a max or sum with a NaN is NaN; a min skips NaNs (``fmin``), NaN only when all are.

    >>> _combine("min", np.dtype(np.float64))(np.array([np.nan, 2.0]), np.array([1.5, np.nan])).tolist()
    [1.5, 2.0]
    """
    return np.fmin if kind == "min" and dtype.kind == "f" else _COMBINE[kind]


def _identity(kind: str, dtype: np.dtype):
    """The partial of no value: 0, the type's largest (min) or least (max); a double min's is
    NaN, which ``fmin`` skips (+inf would hide a min over NaNs only)."""
    if kind in ("n", "sum"):
        return dtype.type(0)
    if kind == "min" and dtype.kind == "f":
        return dtype.type(np.nan)
    big = np.iinfo(dtype).max if dtype.kind == "i" else np.inf
    return dtype.type(big if kind == "min" else -big)


def ends(x: np.ndarray, r: Number) -> np.ndarray:
    """``e(x)``, the least value of x's type with ``e >= x + r`` exactly: ``x + ceil(r)`` for
    integers; for doubles (``r`` a double) ``s = fl(x + r)``, or the next double when the
    rounding error ``x + r - s`` (Knuth's TwoSum) is positive; for decimals ``x + r``.

    ``fl(1.0 + 2**-60)`` rounds down to 1.0, so the end is the next double:

    >>> ends(np.array([7, -3]), 2.5).tolist()
    [10, 0]
    >>> ends(np.array([1.0, -0.5]), 2.0 ** -60).tolist()
    [1.0000000000000002, -0.49999999999999994]
    >>> ends(np.array([Decimal("-0.15")], dtype=object), Decimal("0.25")).tolist()
    [Decimal('0.10')]
    """
    if x.dtype.kind in "iu":
        return x + np.int64(math.ceil(r))
    if x.dtype.kind == "f":
        rd = float(r)
        s = x + rd
        back = s - x
        error = (x - (s - back)) + (rd - back)
        return np.where(error > 0, np.nextafter(s, np.inf), s)
    with localcontext() as context:
        context.prec = 100
        return np.array([v + Decimal(r) for v in x], dtype=object)


def lowest(dtype: np.dtype):
    """Below every value of ``dtype`` (the init bin's id): its least integer, or -inf.

    >>> lowest(np.dtype(np.int64)), lowest(np.dtype(np.float64))
    (-9223372036854775808, -inf)
    """
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


class Bins:
    """Start and end bins of one key partition, after the init bin (id -inf, the identity).
    ``partials`` maps a name to ``(kind, column, dtype)``: kind ``n`` counts the present
    values of ``column`` (``None``: every tuple), ``sum``/``min``/``max`` reduce them.

    RANGE 2, a count and a double sum (the value of the tuple at 7 is NULL); window ``w`` holds ``w - 2 < x <= w``:

    >>> kinds = {"n": ("n", None, np.dtype(np.int64)), "sum:v": ("sum", "v", np.dtype(np.float64))}
    >>> bins = Bins(2, kinds, np.int64)
    >>> bins.add(np.array([4, 3, 7]), {"v": (np.array([0.5, -1.25, 2.0]), np.array([True, True, False]))})
    >>> {name: partial.tolist() for name, partial in bins.at(np.array([3, 4, 5, 6, 7])).items()}
    {'n': [1, 2, 1, 0, 1], 'sum:v': [-1.25, -0.75, 0.5, 0.0, 0.0]}
    """

    def __init__(self, r: Number, partials: dict[str, tuple[str, str | None, np.dtype]], x_dtype: np.dtype):
        self.r, self.partials = r, partials
        self.pos = np.array([lowest(np.dtype(x_dtype))], dtype=x_dtype)
        self.state = {name: np.array([_identity(kind, dtype)], dtype=dtype)
                      for name, (kind, _, dtype) in partials.items()}

    def at(self, windows: np.ndarray) -> dict[str, np.ndarray]:
        """The partials of extent(w) for each ``w`` in ``windows``: those of the bin at or before it."""
        before = np.searchsorted(self.pos, windows, side="right") - 1
        return {name: state[before] for name, state in self.state.items()}

    def add(self, x: np.ndarray, columns: dict[str, tuple[np.ndarray, np.ndarray]],
            floor: Number | None = None) -> None:
        """processtuple for a batch: ``x`` and, per value column, ``(values, present)``. With
        ``floor`` (late tuples, generous) only their windows ``w >= floor``: start bin
        ``max(x, floor)``."""
        if floor is not None:
            keep = ends(x, self.r) > self._id(floor)
            x, columns = x[keep], {name: (v[keep], p[keep]) for name, (v, p) in columns.items()}
        if not len(x):
            return
        order = np.argsort(x, kind="stable")
        xs = x[order]
        es = ends(xs, self.r)  # non-decreasing, as xs
        starts = xs if floor is None else np.maximum(xs, self._id(floor))
        new = np.setdiff1d(np.concatenate([starts, es]), self.pos)  # start and end bins
        init = self.at(new)  # from the bin before each
        where = np.searchsorted(self.pos, new)
        self.pos = np.insert(self.pos, where, new)
        for name in self.state:
            self.state[name] = np.insert(self.state[name], where, init[name])
        first, stop = np.searchsorted(self.pos, [starts[0], es[-1]])
        values = {name: (v[order], p[order]) for name, (v, p) in columns.items()}
        parts = reduce_at(self.partials, xs, es, values, self.pos[first:stop])
        for name, (kind, _, _) in self.partials.items():
            state = self.state[name]
            state[first:stop] = _combine(kind, state.dtype)(state[first:stop], parts[name])

    def purge(self, bound: Number) -> None:
        """processpunctuation's purge once no window ``w < bound`` is read again: the bins below
        ``bound`` (but init) go, the one covering ``bound`` moving to it, so that bins made
        later are initialised right."""
        if bound == -np.inf:
            return
        bound = self._id(bound)
        cut = int(np.searchsorted(self.pos, bound, side="right"))
        if cut <= 1:
            return
        self.pos = np.concatenate([self.pos[:1], np.array([bound], dtype=self.pos.dtype), self.pos[cut:]])
        self.state = {name: np.concatenate([state[:1], state[cut - 1: cut], state[cut:]])
                      for name, state in self.state.items()}

    def _id(self, bound: Number) -> Number:
        """The least window-id ``>= bound`` when ids are integers (an integer bound as it is:
        ``math.ceil`` of a numpy integer goes through a double, which rounds longs past 2**53)."""
        if self.pos.dtype.kind not in "iu":
            return bound
        return int(bound) if isinstance(bound, (int, np.integer)) else math.ceil(bound)


def reduce_at(partials: dict[str, tuple[str, str | None, np.dtype]], xs: np.ndarray, es: np.ndarray,
              values: dict[str, tuple[np.ndarray, np.ndarray]], points: np.ndarray) -> dict[str, np.ndarray]:
    """Each partial, at each of the sorted ``points`` ``b``, of the tuples with ``x <= b < e(x)``:
    ``xs`` sorted, ``es = ends(xs)`` (non-decreasing too), ``values`` aligned with ``xs``; those
    tuples are ``[lo, hi)`` with ``lo`` the first with ``e(x) > b``, ``hi`` the first with ``x > b``.

    RANGE 2: at ``b = 3.0`` the tuple at 1.0 is out (its end 3.0 is not above 3.0):

    >>> kinds = {"n": ("n", None, np.dtype(np.int64)), "max:v": ("max", "v", np.dtype(np.int64))}
    >>> xs, values = np.array([1.0, 2.5, 4.0]), {"v": (np.array([5, 1, 7]), np.ones(3, dtype=bool))}
    >>> {name: p.tolist() for name, p in reduce_at(kinds, xs, ends(xs, 2), values, np.array([2.5, 3.0, 4.0])).items()}
    {'n': [2, 1, 2], 'max:v': [5, 1, 7]}
    """
    lo = np.searchsorted(es, points, side="right")
    hi = np.searchsorted(xs, points, side="right")
    return {name: (hi - lo).astype(np.int64) if column is None else _range_reduce(kind, *values[column], lo, hi)
            for name, (kind, column, _) in partials.items()}


def at_windows(partials: dict[str, tuple[str, str | None, np.dtype]], r: Number, x: np.ndarray,
               values: dict[str, tuple[np.ndarray, np.ndarray]], windows: np.ndarray,
               batch: int = BATCH) -> dict[str, np.ndarray]:
    """What :meth:`Bins.at` reads at the sorted ``windows`` once every tuple is added, computed
    directly: a window ``w`` lies in the bin of the last start or end ``<= w``, so both hold the
    tuples with ``x <= w < e(x)`` (:func:`reduce_at`). ``x`` and ``values`` in any order (ties
    of ``x`` kept in it); windows go ``batch`` at a time, each batch reducing only the
    tuples its extents span.

    The readings' ``ts`` and ``v`` (in arrival order), RANGE 2, a window at every ``ts``:

    >>> from wid.aggregate.bin_columns import partials
    >>> from wid.aggregate.partials import Aggregate
    >>> kinds = partials([Aggregate("n", "count"), Aggregate("total", "sum", "v")], {"v": np.dtype(np.int64)})
    >>> values = {"v": (np.array([5, 7, 1, 2]), np.ones(4, dtype=bool))}
    >>> parts = at_windows(kinds, 2, np.array([1.0, 4.0, 2.5, 9.0]), values, np.array([1.0, 2.5, 4.0, 9.0]))
    >>> {name: p.tolist() for name, p in parts.items()}
    {'n': [1, 2, 2, 1], 'n:v': [1, 2, 2, 1], 'sum:v': [5, 6, 8, 2]}
    """
    order = np.argsort(x, kind="stable")
    xs = x[order]
    es = ends(xs, r)
    values = {name: (v[order], p[order]) for name, (v, p) in values.items()}
    pieces = []
    for start in range(0, len(windows), batch):
        points = windows[start:start + batch]
        first, stop = np.searchsorted(es, points[0], side="right"), np.searchsorted(xs, points[-1], side="right")
        span = slice(first, stop)  # e(x) <= w implies x <= w: first <= stop
        pieces.append(reduce_at(partials, xs[span], es[span], {name: (v[span], p[span]) for name, (v, p)
                                                                in values.items()}, points))
    return {name: np.concatenate([piece[name] for piece in pieces]) if pieces else
            np.zeros(0, dtype=dtype) for name, (_, _, dtype) in partials.items()}


def _range_reduce(kind: str, values: np.ndarray, present: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``kind`` over the present ``values[lo:hi]`` for each range: prefix sums for counts and
    exact sums (longs, decimals), aligned blocks for double sums (:func:`_block_sums`), a
    sparse table (overlapping power-of-two blocks) for min/max."""
    if kind == "sum" and values.dtype.kind == "f":
        return _block_sums(np.where(present, values, 0.0), lo, hi)
    if kind in ("n", "sum"):
        v = present.astype(np.int64) if kind == "n" else np.where(present, values, 0)
        prefix = np.concatenate([np.zeros(1, dtype=v.dtype), np.cumsum(v)])
        return prefix[hi] - prefix[lo]
    identity = _identity(kind, values.dtype)
    op = _combine(kind, values.dtype)
    table = [np.where(present, values, identity)]
    longest = int((hi - lo).max(initial=0))
    while (1 << len(table)) <= longest:  # levels up to the longest range only
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(op(prev[:-half], prev[half:]))
    length = hi - lo
    out = np.full(len(lo), identity, dtype=values.dtype)
    some = length > 0
    level = np.zeros(len(lo), dtype=np.int64)
    level[some] = np.floor(np.log2(length[some])).astype(np.int64)
    for k in np.unique(level[some]):
        rows = some & (level == k)
        out[rows] = op(table[k][lo[rows]], table[k][hi[rows] - (1 << k)])
    return out


def _block_sums(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``sum(values[lo:hi])`` for each range, in double, adding only values of the range:
    ``[lo, hi)`` is cut into aligned blocks ``[j*2**k, (j+1)*2**k)`` (at most two per level,
    as a segment tree's query), each summed pairwise. A difference of prefix sums would cancel
    (error ~ 2**-53 times the whole prefix); this errs at most ``n * 2**-52 * sum(|v|)`` over
    the range's own ``n`` values, as Spark's ``sum`` (a one-value range is that value).

    >>> _block_sums(np.array([1e16, 79.9, 1e16]), np.array([1, 0]), np.array([2, 3]))
    array([7.99e+01, 2.00e+16])
    """
    out = np.zeros(len(lo), dtype=np.float64)
    lo, hi, level = lo.astype(np.int64), hi.astype(np.int64), values
    while len(level) and np.any(lo < hi):
        take = (lo < hi) & (lo % 2 == 1)
        out[take] += level[lo[take]]
        lo = lo + take
        take = (lo < hi) & (hi % 2 == 1)
        hi = hi - take
        out[take] += level[hi[take]]
        lo, hi = lo // 2, hi // 2
        level = level[0:len(level) - 1:2] + level[1::2] if len(level) > 1 else level[:0]
    return out


def add(bins: Bins, x: np.ndarray, values: dict[str, tuple[np.ndarray, np.ndarray]],
        floor: Number | None = None) -> None:
    """processtuple for every tuple of ``x`` (and ``values``), :data:`BATCH` at a time.

    RANGE 3 and ``floor`` 3: the tuple at 1 counts in window 3 only, not in windows 1 and 2:

    >>> bins = Bins(3, {"n": ("n", None, np.dtype(np.int64))}, np.int64)
    >>> add(bins, np.array([1, 4]), {}, floor=3)
    >>> bins.at(np.array([1, 2, 3, 4]))["n"].tolist()
    [0, 0, 1, 1]
    """
    for start in range(0, len(x), BATCH):
        batch = slice(start, start + BATCH)
        bins.add(x[batch], {name: (v[batch], p[batch]) for name, (v, p) in values.items()}, floor)
