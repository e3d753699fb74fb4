"""The sequential path of SPL windows: event by event, in the order of seed 003's tables.

Used where the windows depend on history that no closed form gives: delta policies on an
attribute that decreases somewhere, delta eviction with a time trigger, and partition eviction
policies (one pass over the whole stream, since partitions evict each other).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND, check_clock, time_scale
from wid.bucket.positions import key_values, plain, scanned
from wid.windows.numbers import scaled
from wid.windows.spl import ARRIVAL_TS, Count, Delta, PartitionAge, PartitionCount, Punct, SplWindow, Time


class _Subwindow:
    """One partition's window state; ``seq`` (its next trigger number) outlives partition eviction."""

    __slots__ = ("key", "buf", "seq", "since", "ref", "full", "last")

    def __init__(self, key: tuple, seq: int) -> None:
        self.key, self.buf = key, []
        self.seq, self.since, self.ref, self.full, self.last = seq, 0, None, False, 0


class Scanner:
    """Event-by-event SPL semantics over one group of rows sorted by ``row_num``; fills
    ``lo``/``hi`` (a tuple in no window ends with ``hi < lo``) and ``fired``: ``(partition key,
    trigger number, index of the row whose arrival fired it)`` per trigger, in firing order
    (None: the end of the stream). With ``members``, also each fired window's tuples (their
    indices; none for a sliding window not full yet that only full windows are emitted of).

    A live stream's scan goes a micro-batch at a time: :meth:`advance` over the batch's rows,
    :meth:`state` (plain values and the rows still held) for the next batch's :meth:`resume`,
    :meth:`finish` at the end of the stream.

    >>> from wid.windows.spl import Sliding
    >>> rows = pd.DataFrame({"row_num": [1, 2, 3, 4]})
    >>> run = Scanner(Sliding(eviction=Count(2), trigger=Count(1)), rows, 1, members=True); run.run()
    >>> [(number, at, held) for (_, number, at), held in zip(run.fired, run.members)]
    [(0, 0, [0]), (1, 1, [0, 1]), (2, 2, [1, 2]), (3, 3, [2, 3])]
    """

    def __init__(self, spec: SplWindow, pdf: pd.DataFrame, scale: int, members: bool = False) -> None:
        self.spec, self.n = spec, len(pdf)
        self.lo = np.zeros(self.n, dtype=np.int64)
        self.hi = np.full(self.n, -1, dtype=np.int64)
        self.keys = list(zip(*[key_values(pdf[c]) for c in spec.partition_by])) if spec.partition_by else [()] * self.n
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
        self.members: list[list[int]] | None = [] if members else None
        self.now: int | None = None  # the row being processed (a tick's: the first arrival at or after it)
        self.last_t = None  # the clock of the last tuple scanned (the stream's end, when no TEND is given)
        self.previous_t = np.nan  # the clock of the last row scanned (NaN: none)
        self.row_num = pdf["row_num"].to_numpy() if "row_num" in pdf else None

    # numbering: time ticks and punctuations are numbered over the stream, other triggers per partition
    def _global(self) -> bool:
        trigger = self.spec.trigger if self.spec.sliding else self.spec.eviction
        return isinstance(trigger, (Time, Punct))

    def next_number(self, sub: _Subwindow) -> int:
        """The number the next window of ``sub`` takes: the clock's for global (time, punct())
        triggers, else ``sub``'s own."""
        return self.clock if self._global() else sub.seq

    def remove(self, sub: _Subwindow, i: int) -> None:
        """Tuple ``i`` leaves ``sub``'s buffer: its last window is the one before the next."""
        sub.buf.remove(i)
        self.hi[i] = self.next_number(sub) - 1

    def fire(self, sub: _Subwindow) -> None:
        """One trigger (tumbling: flush) of ``sub`` with its current content."""
        number = self.next_number(sub)
        self.fired.append((sub.key, number, self.now))
        if self.members is not None:
            self.members.append(list(sub.buf) if not self.spec.sliding or self.spec.partial or sub.full else [])
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
        """One period of the clock passes: time evictions expire, time triggers fire (tumbling:
        every buffer flushes)."""
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
        """The time policy's period, in the scan's clock units."""
        return scaled(self.spec.policies[-1].period, self.scale)

    def insert(self, sub: _Subwindow, i: int, order: int) -> None:
        """Tuple ``i`` (the ``order``-th of ``sub``) joins ``sub``'s buffer: its first window is the next."""
        sub.buf.append(i)
        sub.last = order
        self.lo[i] = self.next_number(sub)
        eviction = self.spec.eviction
        if isinstance(eviction, Count) and len(sub.buf) == eviction.n:
            sub.full = True

    def arrive(self, i: int) -> None:
        """Tuple ``i`` arrives in its subwindow (made on its key's first tuple): the policies fire
        and evict around its insertion."""
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
        """The whole stream: :meth:`advance` over every row, then :meth:`finish`."""
        self.advance(0)
        self.finish()

    @property
    def timed(self) -> bool:
        """The policy that emits (sliding: the trigger; tumbling: the eviction) is a time policy."""
        return isinstance(self.spec.trigger if self.spec.sliding else self.spec.eviction, Time)

    def advance(self, start: int) -> None:
        """The rows from index ``start`` on, in order: ticks due before each, then its arrival."""
        policy = self.spec.partition_eviction
        if self.t is not None and start < self.n:
            self.previous_t = check_clock(self.t[start:], self.previous_t, self.row_num[start:], ARRIVAL_TS)
        for i in range(start, self.n):
            self.now = i
            if self.punct[i]:
                for sub in self.subs.values():
                    self.fire(sub)
                self.clock += 1
                continue
            if self.t is not None:
                self.t0 = self.t[i] if self.t0 is None else self.t0  # live: the stream's first tuple
                self.last_t = self.t[i]
            while self.timed and self.t0 + (self.clock + 1) * self.period <= self.t[i]:
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

    def finish(self) -> None:
        """The end of the stream: the stream's clock ticks up to its last tuple's (``TEND``), and
        every tuple still held leaves its window; a tumbling window with ``incomplete`` emits what
        it holds (``fired`` with no row)."""
        tend = self.last_t if self.tend is None else self.tend
        while self.timed and self.t0 is not None and self.t0 + (self.clock + 1) * self.period <= tend:
            self.tick()
        for sub in self.subs.values():
            if not self.spec.sliding and self.spec.incomplete and sub.buf:
                self.fired.append((sub.key, self.next_number(sub), None))
                if self.members is not None:
                    self.members.append(list(sub.buf))
                end = self.next_number(sub)
            else:
                end = self.next_number(sub) - 1
            for i in sub.buf:
                self.hi[i] = end

    def state(self) -> tuple[dict, list[int]]:
        """``(values, held)``: what the next micro-batch's :meth:`resume` needs, as plain Python
        values, and the indices of the rows it must get again, first and in this order: the
        tuples in a subwindow and, with partition eviction (which reads it), each subwindow's
        last insertion."""
        evicting = self.spec.partition_eviction is not None
        held = sorted({i for sub in self.subs.values() for i in (*sub.buf, *[sub.last] * evicting)})
        at = {i: k for k, i in enumerate(held)}
        subs = [(sub.key, [at[i] for i in sub.buf], sub.seq, sub.since, plain(sub.ref), sub.full,
                 at[sub.last] if evicting else None) for sub in self.subs.values()]
        return {"subs": subs, "seqs": list(self.seqs.items()), "clock": self.clock,
                "t0": plain(self.t0), "last_t": plain(self.last_t), "previous_t": plain(self.previous_t)}, held

    def resume(self, values: dict) -> None:
        """The state of :meth:`state`, over rows whose first ones are the held rows, in order."""
        for key, buf, seq, since, ref, full, last in values["subs"]:
            sub = self.subs[key] = _Subwindow(key, seq)
            sub.buf, sub.since, sub.ref, sub.full, sub.last = buf, since, ref, full, last
        self.seqs = dict(values["seqs"])
        self.clock, self.t0, self.last_t = values["clock"], values["t0"], values["last_t"]
        self.previous_t = values["previous_t"]


def scan(df: DataFrame, spec: SplWindow) -> DataFrame:
    """``df`` tagged by the :class:`Scanner`, one Arrow grouped pass per partition (per stream with
    partition eviction); punctuation rows stay (untagged) for the caller to drop.

    Tumbling ``delta(ts, 2)`` on a decreasing ``ts`` (1.0, 4.0, 2.5, 9.0): 4.0 flushes window 0, 2.5 joins the
    window of 4.0, and 9.0 (more than 2 above the oldest, 4.0) flushes window 1:

    >>> from wid.windows.spl import Tumbling
    >>> rows = scan(spark.table("readings"), Tumbling(eviction=Delta("ts", 2.0)))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in rows.collect())
    [(0, 0, 0), (1, 1, 1), (2, 1, 1), (3, 2, 2)]
    """
    scale = time_scale(df, ARRIVAL_TS) if T in df.columns else 1
    partition = () if spec.partition_eviction is not None else spec.partition_by
    return scanned(df, partition, lambda pdf: Scanner(spec, pdf, scale), spec.partition_by)
