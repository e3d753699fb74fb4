"""Flink trigger and eviction policies (Traub 2015, seed 001) and the :class:`Discretization`.

A :class:`Discretization` is a FIFO buffer with trigger policies (TP: when to emit the
buffer) and eviction policies (EP: how many items leave the buffer's head). Several TPs:
emit when ANY fires; several EPs: evict the MAX any returns. Per real item at time ``x``:

1. every active time TP's tick ``tau <= x`` first, as a fake item: evict -> emit;
2. the item: trigger (emit the buffer, without the item) -> evict -> insert.

Each emission is one window; ``wid`` is its sequence number in its buffer from 0 (an
empty emission consumes its number and yields no row). The end of the stream emits the
buffer once more. Items carry a timestamp column ``ts`` (default ``arrival_ts``).
Central policies keep one buffer for the stream (GROUP BY splits each emitted window);
``per_group`` columns give each group its own clone of the policies (distributed). A
central time TP with per-group EPs is the distributed form: all clones share the clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from wid.errors import WidError
from wid.windows.numbers import flag, non_negative, period, positive_whole
from wid.windows.operational import Operational
# Flink's window operator of today (assigner, trigger, evictor; its CountTrigger as
# wid.windows.flink_operator.CountTrigger), re-exported beside the 0.8 discretization:
from wid.windows.flink_operator import (CountEvictor, EventTimeSessionWindows, EventTimeTrigger,  # noqa: F401
                                        GlobalWindows, PurgingTrigger, SlidingEventTimeWindows, TimeEvictor,
                                        TumblingEventTimeWindows, WindowOperator)

Path = Literal["columns", "chain", "scan"]


def euclidean(a: Sequence[float], b: Sequence[float]) -> float:
    """Euclidean distance of two attribute vectors.

    >>> euclidean((0, 0), (3, -4))
    5.0
    """
    return math.dist(a, b)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine distance ``1 - a.b / (|a| |b|)`` (0 when either vector is zero).

    >>> cosine((1, 0), (0, 2)), cosine((1, 0), (-3, 0)), cosine((0, 0), (1, 1))
    (1.0, 2.0, 0.0)
    """
    norm = math.hypot(*a) * math.hypot(*b)
    return 0.0 if norm == 0 else 1.0 - sum(x * y for x, y in zip(a, b)) / norm


# --- policies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Delta:
    """A delta policy: ``fn`` over the ``attrs`` values of two items, against ``threshold``."""

    threshold: float
    attrs: tuple[str, ...]
    fn: Callable[[Sequence[float], Sequence[float]], float] = euclidean

    def __post_init__(self) -> None:
        """``attrs`` as a tuple (one name may be given as a string) and a threshold >= 0."""
        object.__setattr__(self, "attrs", (self.attrs,) if isinstance(self.attrs, str) else tuple(self.attrs))
        non_negative("delta threshold", self.threshold)

    @property
    def ordered(self) -> bool:
        """Euclidean on one attribute: ``|b - a|``, i.e. ``b - a`` when the attribute never decreases."""
        return self.fn is euclidean and len(self.attrs) == 1


@dataclass(frozen=True)
class CountTrigger:
    """Fire on the real item that finds ``every`` items counted since the last firing; the
    counter starts at ``start`` (negative: the first firing comes later). Firing k is on
    the item at 0-based position ``every - start + k*every``.

    >>> CountTrigger(3, start=-2)  # fires on the items at positions 5, 8, 11, ...
    CountTrigger(every=3, start=-2)
    >>> CountTrigger(3, start=3)
    Traceback (most recent call last):
    wid.errors.WidError: CountTrigger start must be a whole number below every=3, got 3
    """

    every: int
    start: int = 0

    def __post_init__(self) -> None:
        positive_whole("CountTrigger every", self.every)
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start >= self.every:
            raise WidError(f"CountTrigger start must be a whole number below every={self.every}, got {self.start!r}")


@dataclass(frozen=True)
class TimeTrigger:
    """Window borders at ``s + (k+1) * granularity`` with ``s = start + delay`` (``start``
    defaults to the first item's timestamp). Active: a fake item (tick) at each border emits
    the buffer. Passive (``active=False``, the thesis's non-active policy): only a real item
    fires, the first one at or past a border it has not fired for, i.e. the item at ``x``
    after the item at ``x'`` fires iff ``c(x) > c(x')`` with ``c(x) = max(0, floor((x - s) / g))``,
    so the emitted borders follow the items, not the clock.

    >>> TimeTrigger(0.5, delay=0.25, active=False)
    TimeTrigger(granularity=0.5, delay=0.25, start=None, active=False)
    >>> TimeTrigger(2.5, delay=-0.5)
    Traceback (most recent call last):
    wid.errors.WidError: TimeTrigger delay must be a finite number >= 0, got -0.5
    """

    granularity: float
    delay: float = 0
    start: float | None = None
    active: bool = True

    def __post_init__(self) -> None:
        period("TimeTrigger granularity", self.granularity)
        non_negative("TimeTrigger delay", self.delay)
        if self.start is not None and (isinstance(self.start, bool) or not isinstance(self.start, (int, float))
                                       or not math.isfinite(self.start)):
            raise WidError(f"TimeTrigger start must be a finite number (or None: the first item's), got {self.start!r}")
        flag("TimeTrigger active", self.active)


@dataclass(frozen=True)
class DeltaTrigger(_Delta):
    """Fire when ``fn(reference, item) > threshold`` over the ``attrs`` values; the first
    item is the first reference, then each firing item (it is not in the window it fires).

    >>> DeltaTrigger(1.5, "ts").attrs, DeltaTrigger(1.5, "ts").ordered, DeltaTrigger(0.2, ("x", "y"), cosine).ordered
    (('ts',), True, False)
    """


@dataclass(frozen=True)
class PunctuationTrigger:
    """Fire on an item whose boolean ``marker`` column is true (the item goes to the next window).

    >>> PunctuationTrigger().marker, Discretization((PunctuationTrigger("eos"),)).path  # an event-by-event scan
    ('punct', 'scan')
    """

    marker: str = "punct"


@dataclass(frozen=True)
class CountEviction:
    """Its own counter ``c`` of real arrivals (from 0; seed 001, C.1, Listing 16): an item that
    finds ``c >= max`` deletes ``delete`` items from the head and sets ``c = max(c - delete, 0)``;
    then ``c += 1``. Evictions by other EPs do not touch ``c``, so the deletions fall on the items
    at positions ``max + k * delete`` of the buffer's arrivals, whatever the buffer holds.

    >>> CountEviction(3, delete=4)
    Traceback (most recent call last):
    wid.errors.WidError: CountEviction deletes at most max=3 items at a time, got 4
    """

    max: int
    delete: int = 1

    def __post_init__(self) -> None:
        positive_whole("CountEviction max", self.max)
        positive_whole("CountEviction delete", self.delete)
        if self.delete > self.max:
            raise WidError(f"CountEviction deletes at most max={self.max} items at a time, got {self.delete}")


@dataclass(frozen=True)
class TimeEviction:
    """At every item (real or fake) at time ``now``, delete head items with ``ts < now - granularity``.

    >>> TimeEviction(-2.5)
    Traceback (most recent call last):
    wid.errors.WidError: TimeEviction granularity must be a finite number > 0, got -2.5
    """

    granularity: float

    def __post_init__(self) -> None:
        period("TimeEviction granularity", self.granularity)


@dataclass(frozen=True)
class DeltaEviction(_Delta):
    """At a real item, delete head items while ``fn(head, item) > threshold``.

    >>> DeltaEviction(-0.5, "ts")
    Traceback (most recent call last):
    wid.errors.WidError: delta threshold must be a finite number >= 0, got -0.5
    """


@dataclass(frozen=True)
class PunctuationEviction:
    """At a real item whose ``marker`` is true, clear the buffer.

    >>> Discretization((CountTrigger(2),), (PunctuationEviction(),)).path  # scanned, not compiled
    'scan'
    """

    marker: str = "punct"


@dataclass(frozen=True)
class TumblingEviction:
    """At a real item that fires a trigger (any TP), clear the buffer (seed 001, C.5: its counter
    of arrivals since the last trigger). Not active: fake items (time ticks) do not clear it.

    >>> Discretization((CountTrigger(2),), (TumblingEviction(),)).path  # tumbling count windows, as columns
    'columns'
    """


Trigger = CountTrigger | TimeTrigger | DeltaTrigger | PunctuationTrigger
Eviction = CountEviction | TimeEviction | DeltaEviction | PunctuationEviction | TumblingEviction


@dataclass(frozen=True)
class Discretization(Operational):
    """Trigger and eviction policies of a window operator; ``per_group`` = distributed policies.

    >>> [Discretization(t, e).path for t, e in [((CountTrigger(4),), (CountEviction(6, delete=2),)),
    ...     ((TimeTrigger(2.5),), (CountEviction(6, delete=2),)),
    ...     ((TimeTrigger(2.5, active=False), DeltaTrigger(1.5, "ts")), (TumblingEviction(),))]]
    ['columns', 'scan', 'chain']
    >>> Discretization(())
    Traceback (most recent call last):
    wid.errors.WidError: a discretization needs at least one trigger policy
    """

    triggers: tuple[Trigger, ...]
    evictions: tuple[Eviction, ...] = ()
    per_group: tuple[str, ...] = ()
    ts: str = "arrival_ts"
    wattr: str = field(default="row_num", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "triggers", tuple(self.triggers))
        object.__setattr__(self, "evictions", tuple(self.evictions))
        object.__setattr__(self, "per_group", (self.per_group,) if isinstance(self.per_group, str)
                           else tuple(self.per_group))  # one column may be given as a string
        if not self.triggers:
            raise WidError("a discretization needs at least one trigger policy")
        for role, policies, kinds in (("trigger", self.triggers, _TRIGGERS), ("eviction", self.evictions, _EVICTIONS)):
            for policy in policies:
                if not isinstance(policy, tuple(kinds.values())):
                    raise WidError(f"{role} policies are {', '.join(c.__name__ for c in kinds.values())}, "
                                   f"got {policy!r}")

    @property
    def sql_refusal(self) -> str | None:
        """Off the ``columns`` path the items are tagged in Python."""
        if self.path == "columns":
            return None
        return (f"this Flink discretization takes the {self.path} path, not compiled to SQL: its items are tagged "
                "in Python (trigger and eviction positions per buffer, or an event-by-event scan); use a temporary "
                "view instead (wid.query(spark, text, window).createOrReplaceTempView(name))")

    @property
    def partition(self) -> tuple[str, ...]:
        return self.per_group

    @property
    def timed(self) -> bool:
        return any(isinstance(p, (TimeTrigger, TimeEviction)) for p in self.triggers + self.evictions)

    @property
    def path(self) -> Path:
        """How the policies tag items: ``columns`` for one count TP with one count EP or a tumbling
        EP, or one active time TP with count EPs (one, deleting one item at a time) or time EPs;
        ``chain`` for count, passive time and delta TPs (one attribute, euclidean) with count,
        time, delta and tumbling EPs, exact when every delta attribute never decreases; else ``scan``."""
        kinds = [type(e) for e in self.evictions]
        trigger = self.triggers[0]
        if len(self.triggers) == 1 and isinstance(trigger, CountTrigger) and (
                kinds in ([], [CountEviction]) or kinds == [TumblingEviction]):
            return "columns"
        if len(self.triggers) == 1 and isinstance(trigger, TimeTrigger) and trigger.active:
            one = kinds == [CountEviction] and self.evictions[0].delete == 1
            return "columns" if one or set(kinds) <= {TimeEviction} else "scan"
        real = all(isinstance(t, (CountTrigger, DeltaTrigger)) or isinstance(t, TimeTrigger) and not t.active
                   for t in self.triggers)
        ordered = all(p.ordered for p in self.triggers + self.evictions if isinstance(p, _Delta))
        chained = set(kinds) <= {CountEviction, TimeEviction, DeltaEviction, TumblingEviction}
        return "chain" if real and ordered and chained else "scan"

    @property
    def compiled(self) -> bool:
        """Whether the policies admit a compiled path (:attr:`path` is not ``scan``)."""
        return self.path != "scan"


# --- plan tables ----------------------------------------------------------------------------

_TRIGGERS = {"count": CountTrigger, "time": TimeTrigger, "delta": DeltaTrigger, "punctuation": PunctuationTrigger}
_EVICTIONS = {"count": CountEviction, "time": TimeEviction, "delta": DeltaEviction, "punctuation": PunctuationEviction,
              "tumbling": TumblingEviction}
_FUNCTIONS = {"euclidean": euclidean, "cosine": cosine}


def _policy(kinds: dict[str, type], entry: dict[str, Any]) -> Any:
    if not isinstance(entry, dict):
        raise WidError(f"a policy is a table {{kind = ..., options}}, got {entry!r}")
    options = dict(entry)
    kind = options.pop("kind", None)
    if kind not in kinds:
        raise WidError(f"policy kind must be one of {', '.join(kinds)}, got {kind!r}")
    if "fn" in options:
        if options["fn"] not in _FUNCTIONS:
            raise WidError(f"delta function must be one of {', '.join(_FUNCTIONS)}, got {options['fn']!r}")
        options["fn"] = _FUNCTIONS[options["fn"]]
    try:
        return kinds[kind](**options)
    except TypeError as error:
        raise WidError(f"bad options for a {kind} policy: {error}") from None


def from_dict(section: dict[str, Any]) -> Discretization:
    """A discretization from a plan's ``[flink]`` table: ``triggers`` and ``evictions`` as lists of
    ``{kind = "count"|"time"|"delta"|"punctuation", ...constructor options}`` (evictions also
    ``{kind = "tumbling"}``), ``per_group``, ``ts``.

    >>> d = from_dict({"triggers": [{"kind": "time", "granularity": 2.5, "active": False}],
    ...                "evictions": [{"kind": "count", "max": 6, "delete": 2}], "per_group": ["k"]})
    >>> d.triggers, d.path
    ((TimeTrigger(granularity=2.5, delay=0, start=None, active=False),), 'chain')
    >>> d.evictions, d.per_group
    ((CountEviction(max=6, delete=2),), ('k',))
    >>> from_dict({"triggers": [{"kind": "session", "gap": 5}]})
    Traceback (most recent call last):
    wid.errors.WidError: policy kind must be one of count, time, delta, punctuation, got 'session'
    """
    unknown = set(section) - {"triggers", "evictions", "per_group", "ts"}
    if unknown:
        raise WidError(f"[flink]: unknown key(s) {', '.join(sorted(unknown))}")
    return Discretization(
        tuple(_policy(_TRIGGERS, p) for p in section.get("triggers", [])),
        tuple(_policy(_EVICTIONS, p) for p in section.get("evictions", [])),
        section.get("per_group", ()),
        section.get("ts", "arrival_ts"),
    )
