"""The sequential path of Flink discretizations: event by event over each buffer (Traub's order).

Used for active time TPs with other TPs, punctuation policies, delta policies on several attributes, another
delta function or a decreasing attribute, and EP combinations without closed positions.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND
from wid.bucket.positions import scanned
from wid.spec.flink import (CountEviction, CountTrigger, DeltaEviction, DeltaTrigger, Discretization,
                            PunctuationEviction, PunctuationTrigger, TimeEviction, TimeTrigger, TumblingEviction)
from wid.spec.numbers import scaled


class _Buffer:
    __slots__ = ("items", "seq", "since", "ref", "arrived")

    def __init__(self, start: dict[int, int]) -> None:
        self.items: list[int] = []
        self.seq = 0
        self.since = dict(start)  # count TP index -> counter; passive time TP index -> borders passed
        self.ref: dict[int, tuple | None] = {}
        self.arrived: dict[int, int] = {}  # count EP index -> its own counter of arrivals


class Scanner:
    """Event-by-event discretization over one buffer's items sorted by ``row_num``; fills
    ``lo``/``hi`` and ``fired``: ``(emission number, index of the item that fired it | None,
    tick time | None)`` per emission (both None: the end of the stream)."""

    def __init__(self, spec: Discretization, pdf: pd.DataFrame, scale: int) -> None:
        self.spec, self.n, self.scale = spec, len(pdf), scale
        self.lo = np.zeros(self.n, dtype=np.int64)
        self.hi = np.full(self.n, -1, dtype=np.int64)
        self.t = pdf[T].to_numpy() if T in pdf else None
        self.t0, self.tend = (pdf[T0].iat[0], pdf[TEND].iat[0]) if T in pdf and self.n else (None, None)
        self.pdf = pdf
        self.buffer = _Buffer({i: p.start for i, p in enumerate(spec.triggers) if isinstance(p, CountTrigger)})
        self.fired: list[tuple[int, int | None, float | None]] = []

    def values(self, attrs: tuple[str, ...], i: int) -> tuple:
        return tuple(float(self.pdf[a].iat[i]) for a in attrs)

    def marked(self, marker: str, i: int) -> bool:
        value = self.pdf[marker].iat[i]
        return bool(value) if value is not None and not pd.isna(value) else False

    def emit(self, item: int | None = None, tick: float | None = None) -> None:
        """One emission (window), fired by real item ``item``, the tick at ``tick`` or the end."""
        self.fired.append((self.buffer.seq, item, tick))
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
                limit, k = now - scaled(e.granularity, self.scale), 0
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
            elif isinstance(p, TimeTrigger) and not p.active:
                passed = max((self.t[i] - self.origin(p)) // scaled(p.granularity, self.scale), 0)
                if passed > buf.since.get(index, 0):
                    fire, buf.since[index] = True, passed
        if fire:
            self.emit(item=i)
        counts = [self.time_evictions(self.t[i]) if self.t is not None else 0]
        for index, e in enumerate(self.spec.evictions):
            if isinstance(e, CountEviction):
                arrived = buf.arrived.get(index, 0)
                if arrived >= e.max:
                    counts.append(e.delete)
                    arrived = max(arrived - e.delete, 0)
                buf.arrived[index] = arrived + 1
            elif isinstance(e, TumblingEviction) and fire:
                counts.append(len(buf.items))
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

    def origin(self, p: TimeTrigger) -> float:
        """The time TP's ``start + delay``, ``start`` defaulting to the stream's first time."""
        return (scaled(p.start, self.scale) if p.start is not None else self.t0) + scaled(p.delay, self.scale)

    def run(self) -> None:
        ticks = [p for p in self.spec.triggers if isinstance(p, TimeTrigger) and p.active]
        base = [self.origin(p) for p in ticks]
        fired = [0] * len(ticks)

        def next_tick() -> float:
            return min((b + (k + 1) * scaled(p.granularity, self.scale) for b, k, p in zip(base, fired, ticks)),
                       default=math.inf)

        def tick(tau: float) -> None:  # a fake item: evict -> emit
            nonlocal fired
            self.evict_head(self.time_evictions(tau))
            self.emit(tick=tau)
            fired = [k + 1 if b + (k + 1) * scaled(p.granularity, self.scale) == tau else k
                     for b, k, p in zip(base, fired, ticks)]

        for i in range(self.n):
            while ticks and (tau := next_tick()) <= self.t[i]:
                tick(tau)
            self.real(i)
        while ticks and (tau := next_tick()) <= self.tend:  # the stream's clock runs past this buffer's last item
            tick(tau)
        self.emit()  # end of stream: the buffer once more


def scan(df: DataFrame, spec: Discretization, scale: int) -> DataFrame:
    """``df`` tagged by the :class:`Scanner`, one Arrow grouped pass per buffer (per group, or the stream)."""
    return scanned(df, spec.per_group, lambda pdf: Scanner(spec, pdf, scale))
