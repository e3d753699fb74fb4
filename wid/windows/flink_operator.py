"""Flink's window operator as Flink users write it today (``WindowOperator``, ``EvictingWindowOperator``):
a window assigner, a trigger, an optional evictor and an allowed lateness, on event time.

- **Assigners**: :class:`TumblingEventTimeWindows` and :class:`SlidingEventTimeWindows` (windows
  ``[k*slide + offset, k*slide + offset + size)``, aligned on the offset, as Flink's
  ``TimeWindow.getWindowStartWithOffset``), :class:`EventTimeSessionWindows` (merging windows
  ``[x, x + gap)``; windows that intersect or touch merge, as ``TimeWindow.intersects``),
  :class:`GlobalWindows` (one window per key, never cleaned up).
- **Triggers**: :class:`EventTimeTrigger` (fires once the watermark passes the window's end,
  and at once for an element that arrives within the allowed lateness after that),
  :class:`CountTrigger` (fires on the element that brings the window's count to ``count``, then
  counts from 0; in sessions the counts of merged windows add up), :class:`PurgingTrigger`
  (the wrapped trigger, and each firing clears the window's contents).
- **Evictors**: :class:`CountEvictor` (keep the last ``max_count`` elements in the window's
  order, the arrival order) and :class:`TimeEvictor` (keep the elements with timestamp
  ``> max timestamp - size``; not FIFO), before the window function or after it
  (``evict_after``); evicted elements leave the window for good.

Numbers are in the attribute's units (seconds for timestamps, as the window clauses'). The
stages register their code for :class:`WindowOperator` in their own registries: Bucket in
:mod:`wid.bucket.flink.operator`, replay in :mod:`wid.stream.flink_operator_replay`;
docs/semantics.md, section 5.3, states the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import ClassVar

from pyspark.sql import Column

from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.windows.numbers import Number, exact, flag, non_negative, positive, positive_whole
from wid.windows.sqlexpr import column_name


def _number(name: str, value: object) -> Number:
    """``value`` when it is a positive number (an int, float or Decimal)."""
    return positive(name, value)  # type: ignore[arg-type]


def _offset(name: str, offset: object, period: Number) -> Number:
    """A window offset: a number with ``|offset| < period`` (Flink's rule)."""
    if isinstance(offset, bool) or not isinstance(offset, (int, float, Decimal)):
        raise WidError(f"{name} offset must be a number, got {offset!r}")
    if abs(exact(offset)) >= exact(period):
        raise WidError(f"{name} offset must lie strictly between -{period} and {period}, got {offset!r}")
    return offset


# --- assigners --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TumblingEventTimeWindows:
    """Windows ``[k*size + offset, (k+1)*size + offset)``: each element in one.

    >>> TumblingEventTimeWindows(3, offset=1)
    TumblingEventTimeWindows(size=3, offset=1)
    >>> TumblingEventTimeWindows(0)
    Traceback (most recent call last):
    wid.errors.WidError: TumblingEventTimeWindows size must be positive, got 0
    """

    size: Number
    offset: Number = 0

    def __post_init__(self) -> None:
        _number("TumblingEventTimeWindows size", self.size)
        _offset("TumblingEventTimeWindows", self.offset, self.size)

    @property
    def slide(self) -> Number:
        return self.size


@dataclass(frozen=True)
class SlidingEventTimeWindows:
    """Windows ``[k*slide + offset, k*slide + offset + size)``: each element in every one that holds it.

    >>> SlidingEventTimeWindows(3, 1)
    SlidingEventTimeWindows(size=3, slide=1, offset=0)
    >>> SlidingEventTimeWindows(3, 1, offset=-2)
    Traceback (most recent call last):
    wid.errors.WidError: SlidingEventTimeWindows offset must lie strictly between -1 and 1, got -2
    """

    size: Number
    slide: Number
    offset: Number = 0

    def __post_init__(self) -> None:
        _number("SlidingEventTimeWindows size", self.size)
        _number("SlidingEventTimeWindows slide", self.slide)
        _offset("SlidingEventTimeWindows", self.offset, self.slide)


@dataclass(frozen=True)
class EventTimeSessionWindows:
    """Each element's window ``[x, x + gap)``; windows that intersect or touch merge into their cover.
    Sessions do not slide: a ``slide`` is refused.

    >>> EventTimeSessionWindows(3)
    EventTimeSessionWindows(gap=3)
    >>> EventTimeSessionWindows(3, slide=1)
    Traceback (most recent call last):
    wid.errors.WidError: EventTimeSessionWindows takes a gap, not a slide: sessions merge, they do not slide
    """

    gap: Number
    slide: None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _number("EventTimeSessionWindows gap", self.gap)
        if self.slide is not None:
            raise WidError("EventTimeSessionWindows takes a gap, not a slide: sessions merge, they do not slide")


@dataclass(frozen=True)
class GlobalWindows:
    """One window per key holding all its elements (no bounds, never late nor cleaned up).

    >>> GlobalWindows()
    GlobalWindows()
    """


# --- triggers and evictors ----------------------------------------------------------------------


@dataclass(frozen=True)
class EventTimeTrigger:
    """Fire when the watermark passes the window's end (an element arriving after that, within
    the allowed lateness, fires the window at once).

    >>> EventTimeTrigger()
    EventTimeTrigger()
    """


@dataclass(frozen=True)
class CountTrigger:
    """Fire on the element that brings the window's count to ``count`` (then count from 0).

    >>> CountTrigger(0)
    Traceback (most recent call last):
    wid.errors.WidError: CountTrigger count must be a positive whole number, got 0
    """

    count: int

    def __post_init__(self) -> None:
        positive_whole("CountTrigger count", self.count)


@dataclass(frozen=True)
class PurgingTrigger:
    """``trigger``, each firing clearing the window's contents (``FIRE_AND_PURGE``).

    >>> PurgingTrigger(CountTrigger(4))
    PurgingTrigger(trigger=CountTrigger(count=4))
    >>> PurgingTrigger(PurgingTrigger(CountTrigger(4)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: PurgingTrigger wraps an EventTimeTrigger or a CountTrigger, got PurgingTrigger(...)
    """

    trigger: EventTimeTrigger | CountTrigger

    def __post_init__(self) -> None:
        if not isinstance(self.trigger, (EventTimeTrigger, CountTrigger)):
            raise WidError(f"PurgingTrigger wraps an EventTimeTrigger or a CountTrigger, got {self.trigger!r}")


@dataclass(frozen=True)
class CountEvictor:
    """Keep the last ``max_count`` elements of the window (in arrival order), before the window
    function or, with ``evict_after``, after it.

    >>> CountEvictor(0)
    Traceback (most recent call last):
    wid.errors.WidError: CountEvictor max_count must be a positive whole number, got 0
    """

    max_count: int
    evict_after: bool = False

    def __post_init__(self) -> None:
        positive_whole("CountEvictor max_count", self.max_count)
        flag("CountEvictor evict_after", self.evict_after)


@dataclass(frozen=True)
class TimeEvictor:
    """Keep the elements whose timestamp is above the window's largest one minus ``size``
    (evict ``x <= max x - size``), before the window function or, with ``evict_after``, after it.

    >>> TimeEvictor(2, evict_after=True)
    TimeEvictor(size=2, evict_after=True)
    >>> TimeEvictor(-1)
    Traceback (most recent call last):
    wid.errors.WidError: TimeEvictor size must be positive, got -1
    """

    size: Number
    evict_after: bool = False

    def __post_init__(self) -> None:
        _number("TimeEvictor size", self.size)
        flag("TimeEvictor evict_after", self.evict_after)


Assigner = TumblingEventTimeWindows | SlidingEventTimeWindows | EventTimeSessionWindows | GlobalWindows
Trigger = EventTimeTrigger | CountTrigger | PurgingTrigger
Evictor = CountEvictor | TimeEvictor


# --- the operator -----------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowOperator(WindowSpec):
    """Flink's window operator on the event time ``wattr``, keyed by the query's ``GROUP BY``
    columns (``keyBy``): ``assigner``, ``trigger`` (default: :class:`EventTimeTrigger`; the
    global window needs one), ``evictor`` (None: ``WindowOperator``; else ``EvictingWindowOperator``)
    and ``allowed_lateness`` (the attribute's units).

    Each firing is one row: ``wid`` numbers the firings of its window from 0, ``window_start``
    and ``window_end`` are the window's bounds at the firing (NULL for the global window). The
    query is the operator over the whole stream, the watermark passing everything at its end;
    :func:`wid.replay` takes the watermark from its punctuations (and gives ``emit_row``, late
    elements as Flink's side output).

    On ``readings``, ``CountTrigger(2)`` on tumbling windows of 5: window ``[0, 5)`` fires on the
    second of its elements (rows 0 and 1), then window ``[0, 5)`` holds row 2 too but never
    counts to 2 again; window ``[5, 10)`` holds only row 3:

    >>> op = WindowOperator(TumblingEventTimeWindows(5), CountTrigger(2))
    >>> wid.query(spark, "SELECT count(*) AS n, sum(v) AS total FROM readings [flink]", op).collect()
    [Row(wid=0, window_start=0.0, window_end=5.0, n=2, total=12)]
    >>> WindowOperator(GlobalWindows())
    Traceback (most recent call last):
    wid.errors.WidError: GlobalWindows needs a trigger (Flink's default for it never fires): e.g. CountTrigger(n)
    >>> WindowOperator(EventTimeSessionWindows(3), CountTrigger(2), CountEvictor(3), allowed_lateness=-1)
    Traceback (most recent call last):
    wid.errors.WidError: allowed_lateness must be a finite number >= 0, got -1
    """

    assigner: Assigner
    trigger: Trigger | None = None
    evictor: Evictor | None = None
    allowed_lateness: Number = 0
    wattr: str = "ts"
    keys: tuple[str, ...] = ()
    extent_columns: ClassVar[tuple[str, ...]] = ("window_start", "window_end")
    #: Windows end on the attribute's values, not on a grid: punctuation bounds stay the stored values.
    floors: ClassVar[bool] = False
    #: Count triggers and evictors, and what is late, follow the arrival order.
    reads_arrival: ClassVar[bool] = True
    #: WHERE filters the operator's input (as a ``filter`` before ``keyBy``).
    where_first: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not isinstance(self.assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows,
                                          GlobalWindows)):
            raise WidError("the assigner is TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows "
                           f"or GlobalWindows, got {self.assigner!r}")
        if self.trigger is None:
            if isinstance(self.assigner, GlobalWindows):
                raise WidError("GlobalWindows needs a trigger (Flink's default for it never fires): "
                               "e.g. CountTrigger(n)")
            object.__setattr__(self, "trigger", EventTimeTrigger())
        if not isinstance(self.trigger, (EventTimeTrigger, CountTrigger, PurgingTrigger)):
            raise WidError(f"the trigger is EventTimeTrigger, CountTrigger or PurgingTrigger, got {self.trigger!r}")
        if self.evictor is not None and not isinstance(self.evictor, (CountEvictor, TimeEvictor)):
            raise WidError(f"the evictor is CountEvictor, TimeEvictor or None, got {self.evictor!r}")
        non_negative("allowed_lateness", self.allowed_lateness)
        object.__setattr__(self, "keys", (self.keys,) if isinstance(self.keys, str) else tuple(self.keys))

    @property
    def merging(self) -> bool:
        """Windows merge (sessions)."""
        return isinstance(self.assigner, EventTimeSessionWindows)

    def grouped(self, keys: tuple[str, ...]) -> WindowOperator:
        """The operator keyed by the query's ``GROUP BY`` columns ``keys``."""
        return type(self)(self.assigner, self.trigger, self.evictor, self.allowed_lateness, self.wattr,
                          tuple(dict.fromkeys((*self.keys, *map(column_name, keys)))))

    def closed(self, bound: Column) -> Column:
        """The bound itself (in ``x`` units): the watermark; a window ``[s, e)`` fires once ``e <= bound``."""
        return bound

    @property
    def sql_refusal(self) -> str:
        """Not compiled to SQL text (sessions, time evictors and replay run event by event in Python)."""
        return ("Flink's window operator is not compiled to SQL (sessions, time evictors and replay run event by event "
                "per key in Python); use a temporary view instead (wid.query(spark, text, window)"
                ".createOrReplaceTempView(name))")
