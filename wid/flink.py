"""Flink window discretization (Traub 2015, seed 001): trigger and eviction policies.

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

Compiled to ``wid_lo``/``wid_hi`` (window functions, as :mod:`wid.operational`) when there
is one count or time TP and only count/time EPs (a count EP deleting d > 1 items only
alone): item ``i`` at ``x_i`` is in emission ``k`` iff it was inserted before it and not
yet evicted. Otherwise a sequential pass per buffer (Arrow grouped function).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, NumericType, StructField, StructType

from wid.bucket import WID_HI, WID_LO, attribute_type, checked, numeric_value
from wid.errors import WidError
from wid.windows import WindowSpec, floor_div

_T, _T0, _TEND, _POS, _N, _ALL = "_wid_t", "_wid_t0", "_wid_tend", "_wid_pos", "_wid_n", "_wid_all"


def _positive(name: str, value: Any, whole: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise WidError(f"{name} must be a positive number, got {value!r}")
    if whole and not isinstance(value, int):
        raise WidError(f"{name} must be a whole number, got {value!r}")


def euclidean(a: Sequence[float], b: Sequence[float]) -> float:
    """Euclidean distance of two attribute vectors."""
    return math.dist(a, b)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine distance ``1 - a.b / (|a| |b|)`` (0 when either vector is zero)."""
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
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) or self.threshold < 0:
            raise WidError(f"delta threshold must be >= 0, got {self.threshold!r}")


@dataclass(frozen=True)
class CountTrigger:
    """Fire on the real item that finds ``every`` items counted since the last firing; the
    counter starts at ``start`` (negative: the first firing comes later). Firing k is on
    the item at 0-based position ``every - start + k*every``."""

    every: int
    start: int = 0

    def __post_init__(self) -> None:
        _positive("CountTrigger every", self.every, whole=True)
        if not isinstance(self.start, int) or self.start >= self.every:
            raise WidError(f"CountTrigger start must be a whole number below every={self.every}, got {self.start!r}")


@dataclass(frozen=True)
class TimeTrigger:
    """Active: a fake item (tick) at ``start + delay + (k+1) * granularity`` emits the buffer;
    ``start`` defaults to the first item's timestamp."""

    granularity: float
    delay: float = 0
    start: float | None = None

    def __post_init__(self) -> None:
        _positive("TimeTrigger granularity", self.granularity)
        if not isinstance(self.delay, (int, float)) or self.delay < 0:
            raise WidError(f"TimeTrigger delay must be >= 0, got {self.delay!r}")


@dataclass(frozen=True)
class DeltaTrigger(_Delta):
    """Fire when ``fn(reference, item) > threshold`` over the ``attrs`` values; the first
    item is the first reference, then each firing item (it is not in the window it fires)."""


@dataclass(frozen=True)
class PunctuationTrigger:
    """Fire on an item whose boolean ``marker`` column is true (the item goes to the next window)."""

    marker: str = "punct"


@dataclass(frozen=True)
class CountEviction:
    """When a real item finds ``max`` items in the buffer, delete ``delete`` from the head."""

    max: int
    delete: int = 1

    def __post_init__(self) -> None:
        _positive("CountEviction max", self.max, whole=True)
        _positive("CountEviction delete", self.delete, whole=True)
        if self.delete > self.max:
            raise WidError(f"CountEviction deletes at most max={self.max} items at a time, got {self.delete}")


@dataclass(frozen=True)
class TimeEviction:
    """At every item (real or fake) at time ``now``, delete head items with ``ts < now - granularity``."""

    granularity: float

    def __post_init__(self) -> None:
        _positive("TimeEviction granularity", self.granularity)


@dataclass(frozen=True)
class DeltaEviction(_Delta):
    """At a real item, delete head items while ``fn(head, item) > threshold``."""


@dataclass(frozen=True)
class PunctuationEviction:
    """At a real item whose ``marker`` is true, clear the buffer."""

    marker: str = "punct"


Trigger = CountTrigger | TimeTrigger | DeltaTrigger | PunctuationTrigger
Eviction = CountEviction | TimeEviction | DeltaEviction | PunctuationEviction


@dataclass(frozen=True)
class Discretization(WindowSpec):
    """Trigger and eviction policies of a window operator; ``per_group`` = distributed policies."""

    triggers: tuple[Trigger, ...]
    evictions: tuple[Eviction, ...] = ()
    per_group: tuple[str, ...] = ()
    ts: str = "arrival_ts"
    wattr: str = field(default="row_num", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "triggers", tuple(self.triggers))
        object.__setattr__(self, "evictions", tuple(self.evictions))
        object.__setattr__(self, "per_group", tuple(self.per_group))
        if not self.triggers:
            raise WidError("a discretization needs at least one trigger policy")

    @property
    def partition(self) -> tuple[str, ...]:
        return self.per_group

    def scaled(self, factor: int) -> Discretization:
        return self

    @property
    def timed(self) -> bool:
        return any(isinstance(p, (TimeTrigger, TimeEviction)) for p in self.triggers + self.evictions)

    @property
    def compiled(self) -> bool:
        """One TP and at most one EP of each kind: count TP with a count EP, or a time TP with
        count (deleting one item at a time) and time EPs."""
        kinds = [type(e) for e in self.evictions]
        if len(self.triggers) != 1 or len(set(kinds)) != len(kinds):
            return False
        if isinstance(self.triggers[0], CountTrigger):
            return set(kinds) <= {CountEviction}
        return isinstance(self.triggers[0], TimeTrigger) and set(kinds) <= {CountEviction, TimeEviction} and all(
            e.delete == 1 for e in self.evictions if isinstance(e, CountEviction))


# --- the pipeline ------------------------------------------------------------------------------


def _prepared(df: DataFrame, spec: Discretization) -> tuple[DataFrame, int]:
    attribute_type(df, "row_num")
    for name in spec.per_group:
        attribute_type(df, name)
    for policy in spec.triggers + spec.evictions:
        for attr in getattr(policy, "attrs", ()):
            dtype = attribute_type(df, attr)
            if not isinstance(dtype, NumericType):
                raise WidError(f"delta attribute {attr!r} must be numeric, not {dtype.simpleString()}")
            df = df.withColumn(attr, checked(F.col(attr), dtype, attr))
        marker = getattr(policy, "marker", None)
        if marker is not None and not isinstance(attribute_type(df, marker), BooleanType):
            raise WidError(f"punctuation marker column {marker!r} must be boolean")
    if not spec.timed:
        return df, 1
    dtype = attribute_type(df, spec.ts)
    t, scale = numeric_value(F.col(spec.ts), dtype, spec.ts)
    previous = F.lag(_T).over(Window.orderBy("row_num"))
    df = df.withColumn(_T, checked(t, dtype, spec.ts))
    df = df.withColumn(_T, F.when(previous > F.col(_T), F.raise_error(F.concat(
        F.lit(f"wid: {spec.ts} decreases in row_num order at row_num="), F.col("row_num").cast("string"))))
        .otherwise(F.col(_T)))
    clock = df.agg(F.min(_T).alias(_T0), F.max(_T).alias(_TEND))
    return df.crossJoin(F.broadcast(clock)), scale


def _scaled(value: float, scale: int) -> float:
    product = value * scale
    return int(round(product)) if abs(product - round(product)) < 1e-9 else product


def flink_bucket(df: DataFrame, spec: Discretization) -> DataFrame:
    """``df`` with ``wid_lo``/``wid_hi``: the emissions of ``spec`` that hold each item."""
    prepared, scale = _prepared(df, spec)
    tagged = _compiled(prepared, spec, scale) if spec.compiled else _scan(prepared, spec, scale)
    return tagged.where(F.col(WID_LO) <= F.col(WID_HI)).drop(_POS, _N, _T0, _TEND, _T)


def _start(trigger: TimeTrigger, scale: int) -> Column:
    origin = F.col(_T0) if trigger.start is None else F.lit(_scaled(trigger.start, scale))
    return origin + F.lit(_scaled(trigger.delay, scale))


def _compiled(df: DataFrame, spec: Discretization, scale: int) -> DataFrame:
    group = Window.partitionBy(*spec.per_group)
    df = df.withColumn(_POS, (F.row_number().over(group.orderBy("row_num")) - 1).cast("long"))
    df = df.withColumn(_N, F.count(F.lit(1)).over(group))
    trigger = spec.triggers[0]
    evicted_at = None  # 0-based position of the real item whose eviction step removes the item
    for e in spec.evictions:
        if isinstance(e, CountEviction):
            evicted_at = F.col(_POS) + e.max if e.delete == 1 else floor_div(F.col(_POS), e.delete) * e.delete + e.max
    survives = F.lit(True) if evicted_at is None else evicted_at >= F.col(_N)
    if isinstance(trigger, CountTrigger):
        n, start = trigger.every, trigger.start
        last = floor_div(F.col(_N) - 1 + start, n) - 1  # last firing on a real item
        lo = F.greatest(floor_div(F.col(_POS) + start, n), F.lit(0))
        hi = last if evicted_at is None else F.least(floor_div(evicted_at + start, n) - 1, last)
        return df.withColumn(WID_LO, lo).withColumn(WID_HI, F.when(survives, last + 1).otherwise(hi))
    g = _scaled(trigger.granularity, scale)
    since = F.col(_T) - _start(trigger, scale)
    last = floor_div(F.col(_TEND) - _start(trigger, scale), g) - 1  # last tick <= T_end
    lo = F.greatest(floor_div(since, g), F.lit(0))
    his = [last]
    for e in spec.evictions:
        if isinstance(e, CountEviction):  # delete == 1: item i leaves at the arrival of item i + max
            his.append(floor_div(F.lead(_T, e.max).over(group.orderBy(_POS)) - _start(trigger, scale), g) - 1)
    for e in spec.evictions:
        if isinstance(e, TimeEviction):
            keep = _scaled(e.granularity, scale)
            his.append(floor_div(F.col(_T) + F.lit(keep) - _start(trigger, scale), g) - 1)
            survives = survives & (F.col(_T) >= F.col(_TEND) - F.lit(keep))
    hi = F.least(*his) if len(his) > 1 else his[0]
    return df.withColumn(WID_LO, lo).withColumn(WID_HI, F.when(survives, last + 1).otherwise(hi))


class _Buffer:
    __slots__ = ("items", "seq", "since", "ref")

    def __init__(self, start: dict[int, int]) -> None:
        self.items: list[int] = []
        self.seq = 0
        self.since = dict(start)  # count TP index -> counter
        self.ref: dict[int, tuple | None] = {}


class _Scanner:
    """Event-by-event discretization over one buffer's items sorted by ``row_num``."""

    def __init__(self, spec: Discretization, pdf: pd.DataFrame, scale: int) -> None:
        self.spec, self.n, self.scale = spec, len(pdf), scale
        self.lo = np.zeros(self.n, dtype=np.int64)
        self.hi = np.full(self.n, -1, dtype=np.int64)
        self.t = pdf[_T].to_numpy() if _T in pdf else None
        self.pdf = pdf
        self.buffer = _Buffer({i: p.start for i, p in enumerate(spec.triggers) if isinstance(p, CountTrigger)})

    def values(self, attrs: tuple[str, ...], i: int) -> tuple:
        return tuple(float(self.pdf[a].iat[i]) for a in attrs)

    def marked(self, marker: str, i: int) -> bool:
        value = self.pdf[marker].iat[i]
        return bool(value) if value is not None and not pd.isna(value) else False

    def emit(self) -> None:
        for i in self.buffer.items:
            self.hi[i] = self.buffer.seq
        self.buffer.seq += 1

    def evict_head(self, count: int) -> None:
        buf = self.buffer
        for i in buf.items[:count]:
            self.hi[i] = buf.seq - 1
        buf.items = buf.items[count:]

    def time_evictions(self, now: float) -> int:
        """How many head items the time EPs delete at ``now``."""
        counts, items = [0], self.buffer.items
        for e in self.spec.evictions:
            if isinstance(e, TimeEviction):
                limit, k = now - _scaled(e.granularity, self.scale), 0
                while k < len(items) and self.t[items[k]] < limit:
                    k += 1
                counts.append(k)
        return max(counts)

    def real(self, i: int) -> None:
        buf, fire = self.buffer, False
        for index, p in enumerate(self.spec.triggers):
            if isinstance(p, CountTrigger):
                if buf.since[index] == p.every:
                    fire, buf.since[index] = True, 0
                buf.since[index] += 1
            elif isinstance(p, DeltaTrigger):
                value = self.values(p.attrs, i)
                if buf.ref.get(index) is None:
                    buf.ref[index] = value
                elif p.fn(buf.ref[index], value) > p.threshold:
                    fire, buf.ref[index] = True, value
            elif isinstance(p, PunctuationTrigger):
                fire = fire or self.marked(p.marker, i)
        if fire:
            self.emit()
        counts = [self.time_evictions(self.t[i]) if self.t is not None else 0]
        for e in self.spec.evictions:
            if isinstance(e, CountEviction) and len(buf.items) >= e.max:
                counts.append(e.delete)
            elif isinstance(e, DeltaEviction):
                value, k = self.values(e.attrs, i), 0
                while k < len(buf.items) and e.fn(self.values(e.attrs, buf.items[k]), value) > e.threshold:
                    k += 1
                counts.append(k)
            elif isinstance(e, PunctuationEviction) and self.marked(e.marker, i):
                counts.append(len(buf.items))
        self.evict_head(max(counts))
        buf.items.append(i)
        self.lo[i] = buf.seq

    def run(self, t0: float | None, tend: float | None) -> None:
        ticks = [p for p in self.spec.triggers if isinstance(p, TimeTrigger)]
        base = [(_scaled(p.start, self.scale) if p.start is not None else t0) + _scaled(p.delay, self.scale)
                for p in ticks]
        fired = [0] * len(ticks)

        def next_tick() -> float:
            return min((b + (k + 1) * _scaled(p.granularity, self.scale) for b, k, p in zip(base, fired, ticks)),
                       default=math.inf)

        def tick(tau: float) -> None:  # a fake item: evict -> emit
            nonlocal fired
            self.evict_head(self.time_evictions(tau))
            self.emit()
            fired = [k + 1 if b + (k + 1) * _scaled(p.granularity, self.scale) == tau else k
                     for b, k, p in zip(base, fired, ticks)]

        for i in range(self.n):
            while ticks and (tau := next_tick()) <= self.t[i]:
                tick(tau)
            self.real(i)
        while ticks and (tau := next_tick()) <= tend:  # the stream's clock runs past this buffer's last item
            tick(tau)
        self.emit()  # end of stream: the buffer once more


def _scan(df: DataFrame, spec: Discretization, scale: int) -> DataFrame:
    """The sequential path: one Arrow grouped pass per buffer (per group, or the whole stream)."""
    if not spec.per_group:
        df = df.withColumn(_ALL, F.lit(0))
    schema = StructType([*df.schema.fields, StructField(WID_LO, LongType()), StructField(WID_HI, LongType())])

    def scan(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values("row_num", kind="stable").reset_index(drop=True)
        scanner = _Scanner(spec, pdf, scale)
        timed = _T in pdf and len(pdf)
        scanner.run(*((pdf[_T0].iat[0], pdf[_TEND].iat[0]) if timed else (None, None)))
        return pdf.assign(**{WID_LO: scanner.lo, WID_HI: scanner.hi})

    return df.groupBy(*(spec.per_group or (_ALL,))).applyInPandas(scan, schema).drop(_ALL)


# --- entry points -------------------------------------------------------------------------------

_TRIGGERS = {"count": CountTrigger, "time": TimeTrigger, "delta": DeltaTrigger, "punctuation": PunctuationTrigger}
_EVICTIONS = {"count": CountEviction, "time": TimeEviction, "delta": DeltaEviction, "punctuation": PunctuationEviction}
_FUNCTIONS = {"euclidean": euclidean, "cosine": cosine}


def _policy(kinds: dict[str, type], entry: dict[str, Any]) -> Any:
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
    ``{kind = "count"|"time"|"delta"|"punctuation", ...constructor options}``, ``per_group``, ``ts``."""
    unknown = set(section) - {"triggers", "evictions", "per_group", "ts"}
    if unknown:
        raise WidError(f"[flink]: unknown key(s) {', '.join(sorted(unknown))}")
    return Discretization(
        tuple(_policy(_TRIGGERS, p) for p in section.get("triggers", [])),
        tuple(_policy(_EVICTIONS, p) for p in section.get("evictions", [])),
        tuple(section.get("per_group", ())),
        section.get("ts", "arrival_ts"),
    )


def query(spark: SparkSession, text: str, discretization: Discretization | dict[str, Any]) -> DataFrame:
    """A window query whose window clause is ``[flink]``, windowed by ``discretization``."""
    from wid.query import compile_query, resolved

    spec = discretization if isinstance(discretization, Discretization) else from_dict(discretization)
    return resolved(lambda: compile_query(spark, text, spec).result())
