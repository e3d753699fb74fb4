"""The sequential path of SPL windows: event by event, in the order of seed 003's tables.

Used where the windows depend on history that no closed form gives: delta policies on an
attribute that decreases somewhere, delta eviction with a time trigger, and partition eviction
policies (one pass over the whole stream, since partitions evict each other).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND, time_scale
from wid.bucket.positions import scanned
from wid.spec.numbers import scaled
from wid.spec.spl import ARRIVAL_TS, Count, Delta, PartitionAge, PartitionCount, Punct, SplWindow, Time


class _Subwindow:
    """One partition's window state; ``seq`` (its next trigger number) outlives partition eviction."""

    __slots__ = ("key", "buf", "seq", "since", "ref", "full", "last")

    def __init__(self, key: tuple, seq: int) -> None:
        self.key, self.buf = key, []
        self.seq, self.since, self.ref, self.full, self.last = seq, 0, None, False, 0


class Scanner:
    """Event-by-event SPL semantics over one group of rows sorted by ``row_num``; fills
    ``lo``/``hi`` (a tuple in no window ends with ``hi < lo``) and ``fired``: ``(partition key,
    trigger number, index of the row whose arrival fired it)`` per trigger, in firing order."""

    def __init__(self, spec: SplWindow, pdf: pd.DataFrame, scale: int) -> None:
        self.spec, self.n = spec, len(pdf)
        self.lo = np.zeros(self.n, dtype=np.int64)
        self.hi = np.full(self.n, -1, dtype=np.int64)
        self.keys = list(zip(*[pdf[c] for c in spec.partition_by])) if spec.partition_by else [()] * self.n
        self.t = pdf[T].to_numpy() if T in pdf else None
        self.values = {p.attr: pdf[p.attr].to_numpy() for p in spec.policies if isinstance(p, Delta)}
        marker = next((p.marker for p in spec.policies if isinstance(p, Punct)), None)
        self.punct = pdf[marker].fillna(False).to_numpy(dtype=bool) if marker else np.zeros(self.n, dtype=bool)
        self.subs: dict[tuple, _Subwindow] = {}
        self.seqs: dict[tuple, int] = {}
        self.clock = 0  # next global number: time ticks or punctuations
        self.scale = scale
        self.t0, self.tend = (pdf[T0].iloc[0], pdf[TEND].iloc[0]) if T0 in pdf and self.n else (None, None)
        self.fired: list[tuple[tuple, int, int | None]] = []
        self.now: int | None = None  # the row being processed (a tick's: the first arrival at or after it)

    # numbering: time ticks and punctuations are numbered over the stream, other triggers per partition
    def _global(self) -> bool:
        trigger = self.spec.trigger if self.spec.sliding else self.spec.eviction
        return isinstance(trigger, (Time, Punct))

    def next_number(self, sub: _Subwindow) -> int:
        return self.clock if self._global() else sub.seq

    def remove(self, sub: _Subwindow, i: int) -> None:
        sub.buf.remove(i)
        self.hi[i] = self.next_number(sub) - 1

    def fire(self, sub: _Subwindow) -> None:
        """One trigger (tumbling: flush) of ``sub`` with its current content."""
        number = self.next_number(sub)
        self.fired.append((sub.key, number, self.now))
        if self.spec.sliding and not (self.spec.partial or sub.full):
            for i in sub.buf:
                self.lo[i] = number + 1
        if not self.spec.sliding:
            for i in sub.buf:
                self.hi[i] = number
            sub.buf = []
        if not self._global():
            sub.seq += 1

    def evict(self, sub: _Subwindow, i: int) -> None:
        """Sliding eviction before inserting tuple ``i`` (count and delta policies)."""
        eviction = self.spec.eviction
        if isinstance(eviction, Count) and len(sub.buf) == eviction.n:
            self.remove(sub, sub.buf[0])
        elif isinstance(eviction, Delta):
            v = self.values[eviction.attr]
            for j in [j for j in sub.buf if v[i] - v[j] > eviction.delta]:
                self.remove(sub, j)

    def expire(self, sub: _Subwindow, now: float) -> None:
        """Time eviction: tuples that have been in the window more than p seconds."""
        p = scaled(self.spec.eviction.period, self.scale)
        while sub.buf and now - self.t[sub.buf[0]] > p:
            self.remove(sub, sub.buf[0])

    def tick(self) -> None:
        for sub in self.subs.values():
            if self.spec.sliding:
                if isinstance(self.spec.eviction, Time):
                    self.expire(sub, self.t0 + (self.clock + 1) * self.period)
                if isinstance(self.spec.trigger, Time):
                    self.fire(sub)
            else:
                self.fire(sub)
        self.clock += 1

    @property
    def period(self) -> float:
        return scaled(self.spec.policies[-1].period, self.scale)

    def insert(self, sub: _Subwindow, i: int, order: int) -> None:
        sub.buf.append(i)
        sub.last = order
        self.lo[i] = self.next_number(sub)
        eviction = self.spec.eviction
        if isinstance(eviction, Count) and len(sub.buf) == eviction.n:
            sub.full = True

    def arrive(self, i: int) -> None:
        spec, key = self.spec, self.keys[i]
        sub = self.subs.get(key)
        if sub is None:
            sub = self.subs[key] = _Subwindow(key, self.seqs.get(key, 0))
        if not spec.sliding:
            eviction = spec.eviction
            if isinstance(eviction, Delta):
                v = self.values[eviction.attr]
                if sub.buf and v[i] - v[sub.buf[0]] > eviction.delta:
                    self.fire(sub)
            self.insert(sub, i, i)
            if isinstance(eviction, Count) and len(sub.buf) == eviction.n:
                self.fire(sub)
            return
        if isinstance(spec.eviction, Time):
            self.expire(sub, self.t[i])
        trigger = spec.trigger
        if isinstance(trigger, Delta):
            v = self.values[trigger.attr]
            if sub.ref is None:
                sub.ref = v[i]
            elif v[i] - sub.ref > trigger.delta:
                self.fire(sub)
                sub.ref = v[i]
        self.evict(sub, i)
        self.insert(sub, i, i)
        if isinstance(trigger, Count):
            sub.since += 1
            if sub.since == trigger.n:
                sub.since = 0
                self.fire(sub)

    def drop(self, key: tuple) -> None:
        """Partition eviction: the subwindow and its tuples go; its numbering is kept."""
        sub = self.subs.pop(key)
        for i in list(sub.buf):
            self.remove(sub, i)
        self.seqs[key] = sub.seq

    def run(self) -> None:
        spec, policy = self.spec, self.spec.partition_eviction
        timed = isinstance(spec.trigger if spec.sliding else spec.eviction, Time)
        for i in range(self.n):
            self.now = i
            if self.punct[i]:
                for sub in self.subs.values():
                    self.fire(sub)
                self.clock += 1
                continue
            while timed and self.t0 + (self.clock + 1) * self.period <= self.t[i]:
                self.tick()
            if isinstance(policy, PartitionAge):
                age = scaled(policy.seconds, self.scale)
                for key in [k for k, s in self.subs.items() if self.t[i] - self.t[s.last] > age]:
                    self.drop(key)
            self.arrive(i)
            if policy is not None and not isinstance(policy, PartitionAge):
                limit = policy.count
                while self.subs and (len(self.subs) if isinstance(policy, PartitionCount)
                                     else sum(len(s.buf) for s in self.subs.values())) > limit:
                    self.drop(min(self.subs, key=lambda k: self.subs[k].last))
        self.now = None
        while timed and self.n and self.t0 + (self.clock + 1) * self.period <= self.tend:  # the stream's clock
            self.tick()
        for sub in self.subs.values():
            end = self.next_number(sub) - (0 if not spec.sliding and spec.incomplete and sub.buf else 1)
            for i in sub.buf:
                self.hi[i] = end


def scan(df: DataFrame, spec: SplWindow) -> DataFrame:
    """``df`` tagged by the :class:`Scanner`, one Arrow grouped pass per partition (per stream with
    partition eviction); punctuation rows stay (untagged) for the caller to drop."""
    scale = time_scale(df, ARRIVAL_TS) if T in df.columns else 1
    partition = () if spec.partition_eviction is not None else spec.partition_by
    return scanned(df, partition, lambda pdf: Scanner(spec, pdf, scale))
