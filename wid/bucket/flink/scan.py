"""The sequential path of Flink discretizations: event by event over each buffer (Traub's order).

Used for active time TPs with other TPs, punctuation policies, delta policies on several attributes, another
delta function or a decreasing attribute, and EP combinations without closed positions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND, check_clock
from wid.bucket.positions import plain, scanned
from wid.windows.flink import (CountEviction, CountTrigger, DeltaEviction, DeltaTrigger, Discretization,
                            PunctuationEviction, PunctuationTrigger, TimeEviction, TimeTrigger, TumblingEviction)
from wid.windows.numbers import scaled


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
    tick time | None)`` per emission (both None: the end of the stream); with ``members``, also
    each emission's items. ``tags``: the ``lo``/``hi`` arrays to fill (shared by the buffers of
    one pass over rows of several buffers, :class:`Buffers`).

    An active ``TimeTrigger(3)`` from 1.5 ticks at 4.5 (before the item at 4.5) and 7.5; ``TimeEviction(4)``
    drops the items at 4.5 and 5.0 as the item at 9.5 arrives; the end emits the buffer once more:

    >>> rows = pd.DataFrame({"row_num": [0, 1, 2, 3], T: [1.5, 4.5, 5.0, 9.5], T0: 1.5, TEND: 9.5})
    >>> run = Scanner(Discretization([TimeTrigger(3.0)], [TimeEviction(4.0)]), rows, 1); run.run()
    >>> [(number, item, None if tick is None else float(tick)) for number, item, tick in run.fired]
    [(0, None, 4.5), (1, None, 7.5), (2, None, None)]
    >>> run.lo.tolist(), run.hi.tolist()
    ([0, 1, 1, 2], [0, 1, 1, 2])
    """

    def __init__(self, spec: Discretization, pdf: pd.DataFrame, scale: int, members: bool = False,
                 tags: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.spec, self.n, self.scale = spec, len(pdf), scale
        self.lo, self.hi = tags or (np.zeros(self.n, dtype=np.int64), np.full(self.n, -1, dtype=np.int64))
        self.t = pdf[T].to_numpy() if T in pdf else None
        self.t0, self.tend = (pdf[T0].iat[0], pdf[TEND].iat[0]) if T0 in pdf and self.n else (None, None)
        self.pdf = pdf
        self.buffer = _Buffer({i: p.start for i, p in enumerate(spec.triggers) if isinstance(p, CountTrigger)})
        self.fired: list[tuple[int, int | None, float | None]] = []
        self.members: list[list[int]] | None = [] if members else None
        self.ticks = [p for p in spec.triggers if isinstance(p, TimeTrigger) and p.active]
        self.passed = [0] * len(self.ticks)  # ticks fired per active time TP

    def values(self, attrs: tuple[str, ...], i: int) -> tuple:
        """Item ``i``'s values of the delta attributes ``attrs``, as floats."""
        return tuple(float(self.pdf[a].iat[i]) for a in attrs)

    def marked(self, marker: str, i: int) -> bool:
        """Item ``i`` is a punctuation (its ``marker`` true; NULL is not)."""
        value = self.pdf[marker].iat[i]
        return bool(value) if value is not None and not pd.isna(value) else False

    def emit(self, item: int | None = None, tick: float | None = None) -> None:
        """One emission (window), fired by real item ``item``, the tick at ``tick`` or the end."""
        self.fired.append((self.buffer.seq, item, tick))
        if self.members is not None:
            self.members.append(list(self.buffer.items))
        for i in self.buffer.items:
            self.hi[i] = self.buffer.seq
        self.buffer.seq += 1

    def evict_head(self, count: int) -> None:
        """The buffer's first ``count`` items leave it, their last window the one before the next."""
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
        """Real item ``i`` arrives: the triggers fire (on the buffer before it), the evictors evict, it joins."""
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

    def next_tick(self) -> float:
        """The time of the next tick of the active time TPs (inf: none)."""
        return min((self.origin(p) + (k + 1) * scaled(p.granularity, self.scale) for k, p in zip(self.passed, self.ticks)),
                   default=math.inf)

    def tick_until(self, now: float) -> None:
        """The ticks at or before ``now``, each a fake item: evict, then emit."""
        while self.ticks and (tau := self.next_tick()) <= now:
            self.evict_head(self.time_evictions(tau))
            self.emit(tick=tau)
            self.passed = [k + 1 if self.origin(p) + (k + 1) * scaled(p.granularity, self.scale) == tau else k
                           for k, p in zip(self.passed, self.ticks)]

    def run(self) -> None:
        """Every item in arrival order, the active time triggers' ticks up to each item's time first."""
        for i in range(self.n):
            if self.ticks:
                self.tick_until(self.t[i])
            self.real(i)
        if self.ticks:
            self.tick_until(self.tend)  # the stream's clock runs past this buffer's last item
        self.emit()  # end of stream: the buffer once more


class Buffers:
    """Live mode's scan of a discretization (a :class:`wid.bucket.positions.LiveScanner`): a
    :class:`Scanner` per buffer (``per_group`` value) over one micro-batch's rows in order,
    resumable. Before each row, every buffer's active time TPs tick up to its clock (the clones
    share it), so a tick fires on the first row of any buffer at or after it, as replay's
    ``emit_row`` says; ``fired``: ``(buffer key, emission number, row index | None)``.

    >>> from wid.windows.flink import CountTrigger, Discretization
    >>> rows = pd.DataFrame({"row_num": [1, 2, 3, 4], "k": ["a", "b", "a", "a"]})
    >>> scan = Buffers(Discretization([CountTrigger(2)], per_group=("k",)), rows, 1)
    >>> scan.advance(0); scan.finish()
    >>> sorted(zip(scan.fired, scan.members))
    [((('a',), 0, 3), [0, 2]), ((('a',), 1, None), [0, 2, 3]), ((('b',), 0, None), [1])]
    """

    def __init__(self, spec: Discretization, rows: pd.DataFrame, scale: int) -> None:
        self.spec, self.rows, self.scale, self.n = spec, rows, scale, len(rows)
        self.t = rows[T].to_numpy() if T in rows else None
        self.keys = list(zip(*[rows[c] for c in spec.per_group])) if spec.per_group else [()] * self.n
        self.row_num = rows["row_num"].to_numpy()
        self.tags = (np.zeros(self.n, dtype=np.int64), np.full(self.n, -1, dtype=np.int64))
        self.buffers: dict[tuple, Scanner] = {}
        self.fired: list[tuple[tuple, int, int | None]] = []
        self.members: list[list[int]] = []
        self.t0 = None
        self.previous_t = math.nan  # the clock of the row before (NaN: none)
        self.due = math.inf  # the next tick, the same in every buffer

    def _open(self, key: tuple) -> Scanner:
        scanner = self.buffers[key] = Scanner(self.spec, self.rows, self.scale, members=True, tags=self.tags)
        scanner.t0 = self.t0
        return scanner

    def _run(self, key: tuple, step: Callable[[], None], at: int | None) -> None:
        """``step`` of buffer ``key``'s scanner; its emissions, fired by ``at`` unless by an item."""
        scanner = self.buffers[key]
        before = len(scanner.fired)
        step()
        for (number, item, _), members in zip(scanner.fired[before:], scanner.members[before:]):
            self.fired.append((key, number, at if item is None else item))
            self.members.append(members)

    def _tick(self, key: tuple, now: float, at: int | None) -> None:
        scanner = self.buffers[key]
        self._run(key, lambda: scanner.tick_until(now), at)
        self.due = scanner.next_tick()

    def advance(self, start: int) -> None:
        """The rows from index ``start`` on, in order: the ticks due, then the row in its buffer."""
        if self.t is not None and start < self.n:
            self.previous_t = check_clock(self.t[start:], self.previous_t, self.row_num[start:], self.spec.ts)
        for i in range(start, self.n):
            if self.t is not None:
                self.t0 = self.t[i] if self.t0 is None else self.t0
            key = self.keys[i]
            if self.t is not None and self.t[i] >= self.due:
                for other in self.buffers:
                    self._tick(other, self.t[i], i)
            if key not in self.buffers:
                self._open(key)
                if self.t is not None:  # a new clone catches up with the clock (empty emissions)
                    self._tick(key, self.t[i], i)
            self._run(key, lambda: self.buffers[key].real(i), i)

    def finish(self) -> None:
        """The end of the stream: each buffer emitted once more (replay's ticks up to the
        stream's last clock have all fired at its rows)."""
        for key, scanner in self.buffers.items():
            self._run(key, scanner.emit, None)

    def state(self) -> tuple[dict, list[int]]:
        """``(values, held)`` for the next micro-batch's :meth:`resume`: plain Python values, and
        the indices of the items still in a buffer, which come first in its rows, in this order."""
        held = sorted({i for scanner in self.buffers.values() for i in scanner.buffer.items})
        at = {i: k for k, i in enumerate(held)}
        buffers = [(key, [at[i] for i in b.items], b.seq, {i: plain(v) for i, v in b.since.items()}, dict(b.ref),
                    dict(b.arrived), s.passed) for key, s in self.buffers.items() for b in [s.buffer]]
        return {"buffers": buffers, "t0": plain(self.t0), "previous_t": plain(self.previous_t)}, held

    def resume(self, values: dict) -> None:
        """The state of :meth:`state`, over rows whose first ones are the held items, in order."""
        self.t0, self.previous_t = values["t0"], values["previous_t"]
        for key, items, seq, since, ref, arrived, passed in values["buffers"]:
            buffer = self._open(key).buffer
            buffer.items, buffer.seq, buffer.since, buffer.ref, buffer.arrived = items, seq, since, ref, arrived
            self.buffers[key].passed = passed
            self.due = self.buffers[key].next_tick()


def scan(df: DataFrame, spec: Discretization, scale: int) -> DataFrame:
    """``df`` tagged by the :class:`Scanner`, one Arrow grouped pass per buffer (per group, or the stream).

    ``DeltaEviction(2)`` on a decreasing ``ts`` (1.0, 4.0, 2.5, 9.0), ``|head - item|``: 2.5 keeps 4.0 (1.5 apart),
    9.0 drops both; ``CountTrigger(1)`` emits the buffer before each item from the second on:

    >>> spec = Discretization([CountTrigger(1)], [DeltaEviction(2.0, "ts")])
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in scan(spark.table("readings"), spec, 1).collect())
    [(0, 0, 0), (1, 1, 2), (2, 2, 2), (3, 3, 3)]
    """
    return scanned(df, spec.per_group, lambda pdf: Scanner(spec, pdf, scale))
