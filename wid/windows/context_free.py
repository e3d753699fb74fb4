"""Window specifications: one class per context-free window kind (docs/semantics.md section 3),
on the base :class:`wid.windows.base.WindowSpec`; the context-aware kinds (slide-by-tuple, sessions)
are in :mod:`wid.windows.aware`, the operational base in :mod:`wid.windows.operational`.

Each class states its extent in its docstring, validates its parameters in the
constructor and, for the context-free kinds, produces the window-id range
``wid_lo <= w <= wid_hi`` of a tuple as Spark Column expressions of the
tuple's window-attribute value ``x``. Window-ids start at origin 0 and may be
negative; extents are half-open.

``x`` is a number in the units of the clause (seconds for time units, raw
numbers otherwise, a 0-based arrival position for ``ROWS``). Clause numbers are exact
(``int`` or ``Decimal``) and the id arithmetic on ``x`` is exact
(:mod:`wid.windows.numbers`): ``limit`` is the largest ``|x|`` whose ids fit a long.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pyspark.sql import Column

from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.windows.numbers import LIMIT, Number, exact, floor_div, floor_div_sum, whole
from wid.windows.sqlexpr import Expr


def _slides(range_: Number, slide: Number) -> None:
    """Ids ``w`` of a tuple span ``r/s`` windows; the ratio must leave room in a long."""
    if range_ / slide > LIMIT // 2:
        raise WidError(f"RANGE {range_} / SLIDE {slide} exceeds 2**61 windows per tuple")


class ContextFree(WindowSpec):
    """FCF windows (sliding, tumbling, landmark): a tuple's ids are a formula of its own ``x``
    (:meth:`wids`, tagged by :mod:`wid.bucket.fcf`) and extent(w) ends at ``(w+1)s``.

    >>> from wid.windows.clause import parse_window
    >>> w = parse_window("RANGE 1 MINUTE SLIDE 30 SECONDS WATTR ts")
    >>> isinstance(w, ContextFree), w.wids(np.array([-1, 29, 30, 95]))
    (True, (array([-1,  0,  1,  3]), array([0, 1, 2, 4])))
    """

    slide: Number

    @abstractmethod
    def wids(self, x: Expr) -> tuple[Expr, Expr | None]:
        """``(wid_lo, wid_hi)`` of a tuple at ``x``; ``wid_hi`` None when the end is open."""

    def closed(self, bound: Column) -> Column:
        """Largest w whose extent end (w+1)s <= bound: a punctuation at ``bound`` closes all w up to it."""
        return floor_div(bound, self.slide) - 1

    def implied(self, x: Expr) -> Expr:
        """ROWS windows (sliding or landmark): the window the tuple at position ``x`` closes by
        arriving (the next tuple of its partition is past it), as a punctuation at ``x + 1``:
        ``floor((x+1)/s) - 1``.

        >>> from wid.windows.clause import parse_window
        >>> parse_window("RANGE UNBOUNDED SLIDE 3 ROWS WATTR row_num").implied(np.arange(7))
        array([-1, -1,  0,  0,  0,  1,  1])
        """
        return self.closed(x + 1)

    @property
    def limit(self) -> Number:
        """Largest ``|x|``: ``|floor(x/s)| <= 2**61``, so ``wid_hi < 2**62``."""
        return self.slide * (LIMIT // 2)

    @property
    def reads_arrival(self) -> bool:  # type: ignore[override]
        """A ROWS window over ``row_num`` counts positions in arrival order (over another
        attribute, in that attribute's order); a window on a value reads no order.

        >>> from wid.windows.clause import parse_window
        >>> [parse_window(c).reads_arrival for c in ("RANGE UNBOUNDED SLIDE 2 ROWS WATTR row_num",
        ...                                          "RANGE 4 ROWS SLIDE 2 ROWS WATTR ts", "RANGE 4 SLIDE 2 WATTR ts")]
        [True, False, False]
        """
        return self.positional and self.wattr.lower() == "row_num"

    @property
    def where_first(self) -> bool:  # type: ignore[override]
        """On a value attribute a tuple's ids are a formula of its own ``x``, so WHERE runs
        before Bucket; a ROWS window counts the positions of every tuple, and a landmark's last
        window is the one holding the stream's largest ``x``: there WHERE runs after Bucket.

        >>> from wid.windows.clause import parse_window
        >>> rows, landmark = "RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num", "RANGE UNBOUNDED SLIDE 2 WATTR ts"
        >>> [parse_window(c).where_first for c in ("RANGE 4 SLIDE 2 WATTR ts", rows, landmark)]
        [True, False, False]
        """
        return not self.positional and not self.open_end

    @property
    def period(self) -> Number | None:
        return None if self.positional else self.slide

@dataclass(frozen=True)
class Sliding(ContextFree):
    """``[RANGE r SLIDE s WATTR a]``.

    extent(w) = {t : (w+1)s - r <= x < (w+1)s};
    wids(t)   = floor(x/s) <= w <= floor((x+r)/s) - 1 (empty when s > r leaves a gap).

    >>> hop = Sliding(2, 5, "ts")  # x = 1 and 7 lie in no window: wid_lo > wid_hi
    >>> hop.gaps, hop.extent(0), hop.wids(np.array([1, 3, 7]))
    (True, (3, 5), (array([0, 0, 1]), array([-1,  0,  0])))
    >>> w = Sliding(0.5, 0.25, "ts")
    >>> w.extent(-3), w.span, w.places, w.scaled(100)
    ((Decimal('-1.00'), Decimal('-0.50')), 2, 2, Sliding(range=50, slide=25, wattr='ts'))
    """

    range: Number
    slide: Number
    wattr: str

    @property
    def live(self) -> bool:
        return True

    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("range", "RANGE"), ("slide", "SLIDE"))

    def __post_init__(self) -> None:
        super().__post_init__()
        _slides(self.range, self.slide)

    @property
    def span(self) -> int:
        """``floor((x+r)/s) - floor(x/s) <= ceil(r/s)`` ids per tuple."""
        return math.ceil(exact(self.range) / exact(self.slide))

    @property
    def width(self) -> int | None:
        """``r/s`` ids for every tuple when s divides r (then ``floor((x+r)/s) - floor(x/s) = r/s``),
        else None: ``floor(r/s)`` or ``ceil(r/s)`` by the tuple.

        >>> Sliding(60, 20, "ts").width, Sliding(0.5, 0.25, "ts").width, Sliding(150, 60, "ts").width
        (3, 2, None)
        """
        ratio = exact(self.range) / exact(self.slide)
        return int(ratio) if ratio.denominator == 1 else None

    @property
    def gaps(self) -> bool:
        """Hopping windows (s > r) leave gaps between extents."""
        return self.slide > self.range

    def wids(self, x: Expr) -> tuple[Expr, Expr]:
        return floor_div(x, self.slide), floor_div_sum(x, self.range, self.slide) - 1

    def extent(self, w):
        return (w + 1) * self.slide - self.range, (w + 1) * self.slide



@dataclass(frozen=True)
class Tumbling(Sliding):
    """``[RANGE s SLIDE s WATTR a]``: extent(w) = {t : w*s <= x < (w+1)s}; wids(t) = {floor(x/s)}.

    >>> Tumbling(60, 60, "ts").wids(np.array([-1, 0, 59, 60]))
    (array([-1,  0,  0,  1]), array([-1,  0,  0,  1]))
    >>> Tumbling(60, 30, "ts")
    Traceback (most recent call last):
    wid.errors.WidError: a tumbling window has RANGE = SLIDE, got 60 and 30
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.range != self.slide:
            raise WidError(f"a tumbling window has RANGE = SLIDE, got {self.range} and {self.slide}")

    def wids(self, x: Expr) -> tuple[Expr, Expr]:
        w = floor_div(x, self.slide)
        return w, w


@dataclass(frozen=True)
class TupleSliding(Sliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num]``: :class:`Sliding` where ``x`` is the
    0-based position of the tuple among all tuples in ``wattr`` (arrival) order.

    >>> TupleSliding(3, 2.0)
    TupleSliding(range=3, slide=2, wattr='row_num')
    >>> TupleSliding(3, 1.5)
    Traceback (most recent call last):
    wid.errors.WidError: SLIDE in ROWS must be a whole number, got 1.5
    """

    wattr: str = "row_num"
    positional: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "range", whole("RANGE", self.range))
        object.__setattr__(self, "slide", whole("SLIDE", self.slide))

    @property
    def live(self) -> bool:
        """Live mode counts positions in arrival (``row_num``) order as tuples come."""
        return self.wattr == "row_num"

    def tag_positions(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(wid_lo, wid_hi, wid_closed)`` of tuples at 0-based positions ``x``: :meth:`wids`
        and :meth:`implied` on whole numbers (live mode's Bucket, where positions come as
        tuples arrive).

        >>> TupleSliding(3, 2).tag_positions(np.arange(5))
        (array([0, 0, 1, 1, 2]), array([0, 1, 1, 2, 2]), array([-1,  0,  0,  1,  1]))
        """
        lo, hi = self.wids(x)
        return lo, hi, self.implied(x)


@dataclass(frozen=True)
class PartitionedTupleSliding(TupleSliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num PATTR p]``: per value of ``p``, a
    :class:`TupleSliding` window over ``x`` = 0-based position within the partition;
    the window-id is ``(w, p)``.

    >>> PartitionedTupleSliding(4, 2, pattr="k").partition
    ('k',)
    >>> PartitionedTupleSliding(4, 2)
    Traceback (most recent call last):
    wid.errors.WidError: PATTR needs an attribute name
    """

    pattr: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.pattr:
            raise WidError("PATTR needs an attribute name")

    @property
    def partition(self) -> tuple[str, ...]:
        return (self.pattr,)


@dataclass(frozen=True)
class Landmark(ContextFree):
    """``[RANGE UNBOUNDED SLIDE s WATTR a]``: extent(w) = {t : x < (w+1)s};
    wids(t) = w >= floor(x/s), an open upper end that the end of the stream closes at
    floor(max x / s). With ``rows`` the attribute is the arrival position.

    >>> Landmark(10, "ts").wids(np.array([-5, 25])), Landmark(0.5, "ts").extent(3)
    ((array([-1,  2]), None), (-inf, Decimal('2.0')))
    >>> Landmark(2.5, "row_num", rows=True)
    Traceback (most recent call last):
    wid.errors.WidError: SLIDE in ROWS must be a whole number, got 2.5
    """

    slide: Number
    wattr: str
    rows: bool = False

    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("slide", "SLIDE"),)
    open_end: ClassVar[bool] = True

    @property
    def live(self) -> bool:
        """Live mode keeps the open end open until the end of the stream (value attributes only)."""
        return not self.rows

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rows:
            whole("SLIDE", self.slide)

    @property
    def positional(self) -> bool:  # type: ignore[override]
        return self.rows

    def wids(self, x: Expr) -> tuple[Expr, None]:
        """``(floor(x/s), None)``: ``None`` marks the open upper end."""
        return floor_div(x, self.slide), None

    def extent(self, w):
        """``(-inf, end)``; no start (None) for a Column or SQL ``w``."""
        return (-math.inf if isinstance(w, (int, float)) else None), (w + 1) * self.slide
