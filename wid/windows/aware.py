"""Context-aware window kinds: slide-by-tuple (FCA: every tuple, every n-th, every n-th by
rank) and sessions. Their window-ids are not a function of one tuple's value alone: the ids
are attribute values of chosen tuples (``w - r < u.a <= w``), or session starts found from a
key's neighbouring tuples (``[first a, last a + g)``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import ClassVar

from pyspark.sql import Column

from wid.errors import WidError
from wid.windows.numbers import LIMIT, Number, exact, positive, whole
from wid.windows.sqlexpr import column_name
from wid.windows.base import WindowSpec


@dataclass(frozen=True)
class SlideByTuple(WindowSpec):
    """``[RANGE r RATTR a SLIDE 1 ROW SATTR row_num]`` (FCA): the window-ids are the values
    ``t.a``; extent(w) = {u : w - r < u.a <= w}; wids(t) = {w in windows : t.a <= w < t.a + r}.

    >>> from wid.windows.clause import parse_window
    >>> parse_window("RANGE 2 MINUTES RATTR ts SLIDE 1 ROW SATTR row_num"), SlideByTuple(0.5, "ts").scaled(10)
    (SlideByTuple(range=120, rattr='ts'), SlideByTuple(range=5, rattr='ts'))
    """

    range: Number
    rattr: str
    #: Every ``every``-th tuple defines a window (in ``(a, row_num)`` order when ``ranked``, else arrival order).
    every: ClassVar[int] = 1
    ranked: ClassVar[bool] = False
    floors: ClassVar[bool] = False
    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("range", "RANGE"),)

    @property
    def wattr(self) -> str:  # type: ignore[override]
        return self.rattr

    @property
    def reads_arrival(self) -> bool:  # type: ignore[override]
        """Every n-th tuple (n > 1) in arrival order, or in ``a`` order with ties broken by
        ``row_num``, defines a window; when every tuple does (``SLIDE 1 ROW``), no order is read.

        >>> SlideByTuple(2, "ts").reads_arrival, SlideByRows(2, "ts", 3).reads_arrival
        (False, True)
        """
        return self.every > 1

    def closed(self, bound: Column) -> Column:
        """The bound itself: the ids are attribute values, with no largest one below ``bound``,
        so for FCA windows ``wid_closed`` is strict: a punctuation closes every ``w < wid_closed``."""
        return bound

    @property
    def live(self) -> bool:
        """Live mode rescans the stream so far (:mod:`wid.stream.live.fca`); not by rank: which
        values are every n-th in ``a`` order changes with each tuple until the stream ends."""
        return not self.ranked

    @property
    def unfinished(self) -> bool:
        """Which tuples define windows (FCB: arrival positions) is decided in live mode's step."""
        return True

@dataclass(frozen=True)
class SlideByRows(SlideByTuple):
    """``[RANGE r RATTR a SLIDE n ROWS SATTR row_num]`` (FCB): the window-ids are ``t.a`` of
    every n-th tuple in arrival order (positions n-1, 2n-1, ...); extent as :class:`SlideByTuple`.

    >>> from wid.windows.clause import parse_window
    >>> parse_window("RANGE 3 RATTR ts SLIDE 2 ROWS SATTR row_num")
    SlideByRows(range=3, rattr='ts', every=2)
    >>> SlideByRows(3, "ts", 1.5)
    Traceback (most recent call last):
    wid.errors.WidError: SLIDE in ROWS must be a whole number, got 1.5
    """

    every: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "every", whole("SLIDE", positive("SLIDE", self.every)))


@dataclass(frozen=True)
class SlideByRank(SlideByRows):
    """``[RANGE r RATTR a SLIDE n ROWS SATTR rank(a)]`` (FCU): the window-ids are ``t.a`` of
    every n-th tuple in ``a`` order (ties broken by ``row_num``); extent as :class:`SlideByTuple`.

    >>> from wid.windows.clause import parse_window
    >>> w = parse_window("RANGE 2.5 RATTR ts SLIDE 2 ROWS SATTR rank(ts)")
    >>> w, w.live  # which values are every n-th in ts order is known only at the end of the stream
    (SlideByRank(range=Decimal('2.5'), rattr='ts', every=2), False)
    """

    ranked: ClassVar[bool] = True


@dataclass(frozen=True)
class Session(WindowSpec):
    """``[SESSION g WATTR a [PATTR p]]``: per key (the query's GROUP BY keys and ``p``), a session
    is a maximal run of the key's tuples in ``a`` order where each next tuple has
    ``a <= previous a + g`` (sessions that touch merge, as Spark's ``session_window`` and Flink's
    merging windows); extent(w) = that run, from ``first a`` to the end ``last a + g``; wids(t) =
    {the 0-based index of t's session among its key's sessions in ``a`` order}. Sessions form
    from the tuples WHERE keeps (:attr:`where_first`).

    ``gap`` is a number, or (:attr:`dynamic`) the text of a Spark SQL expression evaluated per
    tuple, as Spark's ``session_window(a, gap)``: a session then ends at the largest ``a + g``
    of its tuples, and a next tuple joins when ``a <= end``; a tuple whose gap is NULL or not
    positive fails the query (``WHERE gap > 0`` drops such tuples explicitly).

    >>> Session(1.5, "ts", "k").grouped(("`k`", "dev")).keys, Session(0.25, "ts").scaled(10).gap
    (('k', 'dev'), 2.5)
    >>> Session("IF(k = 'a', 10, 5)", "ts").dynamic, Session("v * 2", "ts").scaled(10).gap
    (True, '(v * 2) * 10')
    >>> Session(0, "ts")
    Traceback (most recent call last):
    wid.errors.WidError: SESSION gap must be positive, got 0
    """

    gap: Number | str
    wattr: str
    pattr: str | None = None
    keys: tuple[str, ...] = ()
    extent_columns: ClassVar[tuple[str, ...]] = ("session_start", "session_end")
    #: A session ends at ``last a + g``, not on a grid: punctuation bounds stay the stored values.
    floors: ClassVar[bool] = False
    #: Live mode forms sessions per key in its stateful step (:mod:`wid.stream.live.sessions.steps`).
    live: ClassVar[bool] = True
    unfinished: ClassVar[bool] = True
    #: A tuple WHERE drops takes no part (as ``df.where(...).groupBy(session_window(...))``):
    #: sessions form from the tuples it keeps, in the query, its SQL text, replay and live mode.
    where_first: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if isinstance(self.gap, str):
            text = self.gap.strip()
            if not text:
                raise WidError("SESSION gap needs a number or an expression, got nothing")
            object.__setattr__(self, "gap", text)
            return
        positive("SESSION gap", self.gap)
        self.fits()

    @property
    def dynamic(self) -> bool:
        """The gap is an expression, evaluated per tuple (in the clause's unit)."""
        return isinstance(self.gap, str)

    def fits(self, micros: int | None = None) -> None:
        """A :class:`WidError` unless the gap is at most ``2**61`` in the units of the attribute's
        long clock (``micros``: the gap in microseconds, on a timestamp attribute): as for RANGE and
        SLIDE, ``last + g`` then fits a long for ``|last| <= 2**62``.

        >>> Session(10**15, "ts").fits(micros=10**21)
        Traceback (most recent call last):
        wid.errors.WidError: SESSION gap 1000000000000000 exceeds 2**61 microseconds of 'ts': session ends would overflow a long
        """
        units = "in the attribute's units" if micros is None else f"microseconds of {self.wattr!r}"
        if (self.gap if micros is None else micros) > LIMIT // 2:
            shown = str(self.gap) if len(str(self.gap)) <= 24 else f"{Decimal(self.gap).normalize():E}"  # exact
            raise WidError(f"SESSION gap {shown} exceeds 2**61 {units}: session ends would overflow a long")

    @property
    def partition(self) -> tuple[str, ...]:
        return (self.pattr,) if self.pattr else ()

    def grouped(self, keys: tuple[str, ...]) -> Session:
        """The sessions of a query grouped by the columns ``keys`` (sessions are per key)."""
        return replace(self, keys=tuple(dict.fromkeys((*self.partition, *map(column_name, keys)))))

    def named(self, name: Callable[[str], str]) -> Session:
        """:meth:`WindowSpec.named`, each key once (``PATTR K`` and ``GROUP BY k`` name one column)."""
        spelled = super().named(name)
        return replace(spelled, keys=tuple(dict.fromkeys(spelled.keys)))

    def closed(self, bound: Column) -> Column:
        """The bound itself (in ``x`` units): it closes the sessions with ``last + g < bound``
        (a tuple at ``last + g`` would still join one)."""
        return bound

    def scaled(self, factor: int) -> Session:
        if self.dynamic:
            return replace(self, gap=f"({self.gap}) * {factor}")
        product = exact(self.gap) * factor
        return replace(self, gap=int(product) if product.denominator == 1 else float(product))
