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
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar

import numpy as np
from pyspark.sql import Column
from pyspark.sql import functions as F

from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.windows.numbers import LIMIT, Number, as_number, bounded, exact, floor_div_shift, places, times, whole
from wid.windows.sqlexpr import Expr, call


def _slides(range_: Number, slide: Number) -> None:
    """Ids ``w`` of a tuple span ``r/s`` windows; the ratio must leave room in a long."""
    if range_ / slide > LIMIT // 2:
        raise WidError(f"RANGE {range_} / SLIDE {slide} exceeds 2**61 windows per tuple")


def aligned(offset: object) -> Number:
    """``OFFSET o``: an exact number (negative allowed), bounded as clause numbers are.

    >>> aligned(0.25), aligned(-900)
    (Decimal('0.25'), -900)
    >>> aligned("soon")
    Traceback (most recent call last):
    wid.errors.WidError: OFFSET must be a number, got 'soon'
    """
    value = as_number(offset, "OFFSET")
    bounded(abs(value), "OFFSET")
    return value


class ContextFree(WindowSpec):
    """FCF windows (sliding, tumbling, landmark, cumulating): a tuple's ids are a formula of its
    own ``x`` (:meth:`wids`, tagged by :mod:`wid.bucket.fcf`) and extent(w) ends at ``(w+1)s + o``,
    ``o`` the grid's ``OFFSET`` (0 unless given).

    >>> from wid.windows.clause import parse_window
    >>> w = parse_window("RANGE 1 MINUTE SLIDE 30 SECONDS WATTR ts")
    >>> isinstance(w, ContextFree), w.wids(np.array([-1, 29, 30, 95]))
    (True, (array([-1,  0,  1,  3]), array([0, 1, 2, 4])))
    """

    slide: Number
    offset: Number

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "offset", aligned(self.offset))

    def __repr__(self) -> str:
        """The fields as dataclasses show them, ``offset`` only when the grid is shifted."""
        shown = [f for f in fields(self) if f.repr and (f.name != "offset" or self.offset)]
        return f"{type(self).__name__}({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in shown)})"

    @abstractmethod
    def wids(self, x: Expr) -> tuple[Expr, Expr | None]:
        """``(wid_lo, wid_hi)`` of a tuple at ``x``; ``wid_hi`` None when the end is open."""

    def closed(self, bound: Column) -> Column:
        """Largest w whose extent end (w+1)s + o <= bound: a punctuation at ``bound`` closes all w up
        to ``floor((bound - o)/s) - 1``."""
        return floor_div_shift(bound, -self.offset, self.slide) - 1

    @property
    def places(self) -> int:
        """Decimal places of the clause numbers, the offset's included."""
        return max(super().places, places(self.offset))

    def scaled(self, factor: int) -> ContextFree:
        """The same windows when ``x`` is measured in units ``factor`` times finer (the offset too)."""
        return replace(super().scaled(factor), offset=times(self.offset, factor))

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
        return self.slide * (LIMIT // 2) - abs(self.offset)

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

@dataclass(frozen=True, repr=False)
class Sliding(ContextFree):
    """``[RANGE r SLIDE s [OFFSET o] WATTR a]``.

    extent(w) = {t : (w+1)s - r + o <= x < (w+1)s + o};
    wids(t)   = floor((x-o)/s) <= w <= floor((x-o+r)/s) - 1 (empty when s > r leaves a gap).

    >>> hop = Sliding(2, 5, "ts")  # x = 1 and 7 lie in no window: wid_lo > wid_hi
    >>> hop.gaps, hop.extent(0), hop.wids(np.array([1, 3, 7]))
    (True, (3, 5), (array([0, 0, 1]), array([-1,  0,  0])))
    >>> w = Sliding(0.5, 0.25, "ts")
    >>> w.extent(-3), w.span, w.places, w.scaled(100)
    ((Decimal('-1.00'), Decimal('-0.50')), 2, 2, Sliding(range=50, slide=25, wattr='ts'))
    >>> hourly_from_15 = Sliding(3600, 3600, "ts", offset=900)  # [w*3600 + 900, (w+1)*3600 + 900)
    >>> hourly_from_15.extent(0), hourly_from_15.wids(np.array([899, 900, 4499, 4500]))
    ((900, 4500), (array([-1,  0,  0,  1]), array([-1,  0,  0,  1])))
    """

    range: Number
    slide: Number
    wattr: str
    offset: Number = field(default=0, kw_only=True)

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
        o = self.offset
        return floor_div_shift(x, -o, self.slide), floor_div_shift(x, self.range - o, self.slide) - 1

    def extent(self, w):
        end = (w + 1) * self.slide + self.offset if self.offset else (w + 1) * self.slide
        return end - self.range, end



@dataclass(frozen=True, repr=False)
class Tumbling(Sliding):
    """``[RANGE s SLIDE s [OFFSET o] WATTR a]``: extent(w) = {t : w*s + o <= x < (w+1)s + o};
    wids(t) = {floor((x-o)/s)}.

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
        w = floor_div_shift(x, -self.offset, self.slide)
        return w, w


@dataclass(frozen=True, repr=False)
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
        whole("OFFSET", self.offset)

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


@dataclass(frozen=True, repr=False)
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


@dataclass(frozen=True, repr=False)
class Landmark(ContextFree):
    """``[RANGE UNBOUNDED SLIDE s [OFFSET o] WATTR a]``: extent(w) = {t : x < (w+1)s + o};
    wids(t) = w >= floor((x-o)/s), an open upper end that the end of the stream closes at
    floor((max x - o) / s). With ``rows`` the attribute is the arrival position.

    >>> Landmark(10, "ts").wids(np.array([-5, 25])), Landmark(0.5, "ts").extent(3)
    ((array([-1,  2]), None), (-inf, Decimal('2.0')))
    >>> Landmark(2.5, "row_num", rows=True)
    Traceback (most recent call last):
    wid.errors.WidError: SLIDE in ROWS must be a whole number, got 2.5
    """

    slide: Number
    wattr: str
    rows: bool = False
    offset: Number = field(default=0, kw_only=True)

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
            whole("OFFSET", self.offset)

    @property
    def positional(self) -> bool:  # type: ignore[override]
        return self.rows

    def wids(self, x: Expr) -> tuple[Expr, None]:
        """``(floor((x-o)/s), None)``: ``None`` marks the open upper end."""
        return floor_div_shift(x, -self.offset, self.slide), None

    def extent(self, w):
        """``(-inf, end)``; no start (None) for a Column or SQL ``w``."""
        end = (w + 1) * self.slide + self.offset if self.offset else (w + 1) * self.slide
        return (-math.inf if isinstance(w, (int, float)) else None), end


@dataclass(frozen=True, repr=False)
class Cumulating(ContextFree):
    """``[CUMULATE STEP st SIZE sz [OFFSET o] WATTR a]``, Flink SQL's ``CUMULATE``: each period
    ``p`` = ``[p*sz + o, (p+1)*sz + o)`` holds ``n = sz/st`` windows that share its start and end
    one step apart. Window ``w = p*n + j - 1`` (``j = 1..n``):

    extent(w) = {t : floor(w/n)*sz + o <= x < (w+1)st + o};
    wids(t)   = floor((x-o)/st) <= w <= (floor((x-o)/sz) + 1)n - 1.

    A window ends at ``(w+1)st + o``, as a sliding window with slide ``st`` does: punctuations
    close the same ids (:meth:`ContextFree.closed`).

    >>> day = Cumulating(3600, 86400, "ts")  # a day's running totals, every hour
    >>> day.extent(0), day.extent(23), day.extent(24), day.span
    ((0, 3600), (0, 86400), (86400, 90000), 24)
    >>> Cumulating(2, 6, "ts", offset=1).wids(np.array([0, 1, 4, 6, 7]))
    (array([-1,  0,  1,  2,  3]), array([-1,  2,  2,  2,  5]))
    >>> Cumulating(4, 6, "ts")
    Traceback (most recent call last):
    wid.errors.WidError: CUMULATE SIZE must be a whole multiple of STEP, got SIZE 6 and STEP 4
    """

    step: Number
    size: Number
    wattr: str
    offset: Number = field(default=0, kw_only=True)

    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("step", "STEP"), ("size", "SIZE"))

    def __post_init__(self) -> None:
        super().__post_init__()
        if (exact(self.size) / exact(self.step)).denominator != 1:
            raise WidError(f"CUMULATE SIZE must be a whole multiple of STEP, got SIZE {self.size} and STEP {self.step}")
        _slides(self.size, self.step)

    @property
    def slide(self) -> Number:  # type: ignore[override]
        """Window ends lie ``st`` apart: the grid punctuations close on."""
        return self.step

    @property
    def live(self) -> bool:
        return True

    @property
    def span(self) -> int:
        """At most ``n = sz/st`` ids per tuple (the first step of a period is in all ``n``)."""
        return int(exact(self.size) / exact(self.step))

    def wids(self, x: Expr) -> tuple[Expr, Expr]:
        n, o = self.span, self.offset
        return floor_div_shift(x, -o, self.step), (floor_div_shift(x, -o, self.size) + 1) * n - 1

    def extent(self, w):
        """``[(w - (w mod n)) st + o, (w+1)st + o)``: ``w mod n`` steps past the period's start
        (in ``w``'s own type: a decimal id keeps its room)."""
        n = self.span
        first = w - (w % n if isinstance(w, (int, np.integer)) else call("pmod", w, F.lit(n) if isinstance(w, Column) else n))
        start, end = first * self.step, (w + 1) * self.step
        return (start + self.offset, end + self.offset) if self.offset else (start, end)
