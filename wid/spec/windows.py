"""Window specifications: one class per window kind (SPEC section 2).

Each class states its extent in its docstring, validates its parameters in the
constructor and, for the context-free kinds, produces the window-id range
``wid_lo <= w <= wid_hi`` of a tuple as Spark Column expressions of the
tuple's window-attribute value ``x``. Window-ids start at origin 0 and may be
negative; extents are half-open.

``x`` is a number in the units of the clause (seconds for time units, raw
numbers otherwise, a 0-based arrival position for ``ROWS``). When range and
slide are Python ``int`` the id arithmetic is exact on longs.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from wid.errors import WidError

Number = int | float


def floor_div(x: Column, d: Number) -> Column:
    """``floor(x / d)`` as a long; exact for an integral ``d`` and ``|x| < 2**53``."""
    if isinstance(d, int):
        return ((x - F.pmod(x, F.lit(d))) / F.lit(d)).cast("long")
    return F.floor(x / F.lit(d)).cast("long")


def _positive(name: str, value: Number) -> Number:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WidError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise WidError(f"{name} must be positive, got {value!r}")
    return value


def _whole(name: str, value: Number) -> int:
    if value != int(value):
        raise WidError(f"{name} in ROWS must be a whole number, got {value!r}")
    return int(value)


def _scaled(value: Number, factor: int) -> Number:
    """``value * factor``, kept an int when the product is whole (exact id arithmetic)."""
    product = value * factor
    return int(round(product)) if abs(product - round(product)) < 1e-9 else product


class WindowSpec(ABC):
    """A window kind. ``wattr`` is the attribute whose value ``x`` places a tuple."""

    wattr: str
    #: ``x`` is the 0-based arrival position (in ``wattr`` order), not a value.
    positional: ClassVar[bool] = False

    @property
    def partition(self) -> tuple[str, ...]:
        """Attributes that split the stream before windowing (part of the window-id)."""
        return ()

    @property
    def gaps(self) -> bool:
        """Some values of ``x`` lie in no window (``wid_lo > wid_hi``)."""
        return False

    @abstractmethod
    def scaled(self, factor: int) -> WindowSpec:
        """The same windows when ``x`` is measured in units ``factor`` times finer."""


@dataclass(frozen=True)
class Sliding(WindowSpec):
    """``[RANGE r SLIDE s WATTR a]``.

    extent(w) = {t : (w+1)s - r <= x < (w+1)s};
    wids(t)   = floor(x/s) <= w <= floor((x+r)/s) - 1 (empty when s > r leaves a gap).
    """

    range: Number
    slide: Number
    wattr: str

    def __post_init__(self) -> None:
        _positive("RANGE", self.range)
        _positive("SLIDE", self.slide)

    @property
    def gaps(self) -> bool:
        """Hopping windows (s > r) leave gaps between extents."""
        return self.slide > self.range

    def wids(self, x: Column) -> tuple[Column, Column]:
        return floor_div(x, self.slide), floor_div(x + F.lit(self.range), self.slide) - 1

    def closed(self, bound: Column) -> Column:
        """Largest w whose extent end (w+1)s <= bound: a punctuation at ``bound`` closes all w up to it."""
        return floor_div(bound, self.slide) - 1

    def extent(self, w: int) -> tuple[Number, Number]:
        """Half-open ``[start, end)`` of window ``w`` on ``x``."""
        return (w + 1) * self.slide - self.range, (w + 1) * self.slide

    def scaled(self, factor: int) -> Sliding:
        return replace(self, range=_scaled(self.range, factor), slide=_scaled(self.slide, factor))


@dataclass(frozen=True)
class Tumbling(Sliding):
    """``[RANGE s SLIDE s WATTR a]``: extent(w) = {t : w*s <= x < (w+1)s}; wids(t) = {floor(x/s)}."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.range != self.slide:
            raise WidError(f"a tumbling window has RANGE = SLIDE, got {self.range} and {self.slide}")

    def wids(self, x: Column) -> tuple[Column, Column]:
        w = floor_div(x, self.slide)
        return w, w


@dataclass(frozen=True)
class TupleSliding(Sliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num]``: :class:`Sliding` where ``x`` is the
    0-based position of the tuple among all tuples in ``wattr`` (arrival) order."""

    wattr: str = "row_num"
    positional: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "range", _whole("RANGE", self.range))
        object.__setattr__(self, "slide", _whole("SLIDE", self.slide))


@dataclass(frozen=True)
class PartitionedTupleSliding(TupleSliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num PATTR p]``: per value of ``p``, a
    :class:`TupleSliding` window over ``x`` = 0-based position within the partition;
    the window-id is ``(w, p)``."""

    pattr: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.pattr:
            raise WidError("PATTR needs an attribute name")

    @property
    def partition(self) -> tuple[str, ...]:
        return (self.pattr,)


@dataclass(frozen=True)
class Landmark(WindowSpec):
    """``[RANGE UNBOUNDED SLIDE s WATTR a]``: extent(w) = {t : x < (w+1)s};
    wids(t) = w >= floor(x/s), an open upper end that the end of the stream closes at
    floor(max x / s). With ``rows`` the attribute is the arrival position."""

    slide: Number
    wattr: str
    rows: bool = False

    def __post_init__(self) -> None:
        _positive("SLIDE", self.slide)
        if self.rows:
            object.__setattr__(self, "slide", _whole("SLIDE", self.slide))

    @property
    def positional(self) -> bool:  # type: ignore[override]
        return self.rows

    def wids(self, x: Column) -> tuple[Column, None]:
        """``(floor(x/s), None)``: ``None`` marks the open upper end."""
        return floor_div(x, self.slide), None

    def closed(self, bound: Column) -> Column:
        return floor_div(bound, self.slide) - 1

    def extent(self, w: int) -> tuple[float, Number]:
        return -math.inf, (w + 1) * self.slide

    def scaled(self, factor: int) -> Landmark:
        return replace(self, slide=_scaled(self.slide, factor))


@dataclass(frozen=True)
class SlideByTuple(WindowSpec):
    """``[RANGE r RATTR a SLIDE 1 ROW SATTR row_num]`` (FCA): the window-ids are the values
    ``t.a``; extent(w) = {u : w - r < u.a <= w}; wids(t) = {w in windows : t.a <= w < t.a + r}."""

    range: Number
    rattr: str

    def __post_init__(self) -> None:
        _positive("RANGE", self.range)

    @property
    def wattr(self) -> str:  # type: ignore[override]
        return self.rattr

    def closed(self, bound: Column) -> Column:
        """The bound itself: the ids are attribute values, with no largest one below ``bound``,
        so for FCA windows ``wid_closed`` is strict: a punctuation closes every ``w < wid_closed``."""
        return bound

    def scaled(self, factor: int) -> SlideByTuple:
        return replace(self, range=_scaled(self.range, factor))


@dataclass(frozen=True)
class SlideByRows(SlideByTuple):
    """``[RANGE r RATTR a SLIDE n ROWS SATTR row_num]`` (FCB): the window-ids are ``t.a`` of
    every n-th tuple in arrival order (positions n-1, 2n-1, ...); extent as :class:`SlideByTuple`."""

    every: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "every", _whole("SLIDE", _positive("SLIDE", self.every)))


@dataclass(frozen=True)
class SlideByRank(SlideByRows):
    """``[RANGE r RATTR a SLIDE n ROWS SATTR rank(a)]`` (FCU): the window-ids are ``t.a`` of
    every n-th tuple in ``a`` order (ties broken by ``row_num``); extent as :class:`SlideByTuple`."""
