"""Flink's window operator (:class:`wid.windows.flink_operator.WindowOperator`) event by event
for one key, in plain Python: the state machine that :func:`wid.bucket.flink.operator_scan.scan`
runs per key (the ``scan`` path of :mod:`wid.bucket.flink.operator`, and replay's).

Per key (the ``GROUP BY`` columns, Flink's ``keyBy``), in arrival order, :class:`KeyOperator`
follows ``WindowOperator.processElement`` / ``onEventTime`` and ``EvictingWindowOperator``
with exact arithmetic (``x`` and the bound ``B`` as fractions: epoch microseconds for
timestamps, the stored long, decimal or double otherwise):

- an element at ``x`` is assigned its windows; a window is *late* once ``end + L <= B``
  (Flink's ``isWindowLate``, ``maxTimestamp + L <= watermark`` with ``B`` = watermark + 1 ms);
  a late window skips the element (a late row; when every window of the element is late,
  Flink's side output). A session window ``[x, x + gap)`` first merges with every kept window it
  intersects or touches: the cover, the contents in arrival order, the count triggers' counts added;
- the element joins each window and the trigger decides: ``EventTimeTrigger`` fires at once
  when ``end <= B`` (a late firing within the allowed lateness), else when the watermark gets
  there; ``CountTrigger(n)`` fires on the n-th element counted, then counts from 0;
- a firing emits the window's contents unless it is empty, evicting before or after the window
  function (``CountEvictor``: all but the last ``max_count``; ``TimeEvictor``: ``x <= max x - size``),
  evicted elements gone for good; ``PurgingTrigger`` then clears the contents;
- a punctuation raises ``B`` (the watermark): windows with ``end <= B`` fire on their timers,
  windows with ``end + L <= B`` are forgotten (cleanup); the end of the stream is ``B = inf``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from wid.windows.flink_operator import (CountEvictor, CountTrigger, EventTimeSessionWindows, EventTimeTrigger,
                                        GlobalWindows, PurgingTrigger, SlidingEventTimeWindows, TimeEvictor,
                                        TumblingEventTimeWindows, WindowOperator)
from wid.windows.numbers import exact

Bound = Fraction | float  # a window bound: a fraction, or -inf/inf (the global window)


@dataclass
class Pane:
    """One window of a key: bounds, elements (indices, in arrival order), the count trigger's
    count, the next firing's number and whether an event-time timer waits for the watermark.

    >>> Pane(Fraction(0), Fraction(3), [0, 2], count=2)
    Pane(start=Fraction(0, 1), end=Fraction(3, 1), items=[0, 2], count=2, seq=0, timer=False)
    """

    start: Bound
    end: Bound
    items: list[int] = field(default_factory=list)
    count: int = 0
    seq: int = 0
    timer: bool = False


class KeyOperator:
    """Flink's window operator over one key's elements ``x`` (module docstring); ``factor``: x
    units per unit of the operator's numbers. Call :meth:`arrive` and :meth:`watermark` in
    arrival order, then :meth:`finish`; ``firings`` holds ``(start, end, number, emit_row,
    members)`` and ``late`` ``(index, start, end, side_output)``.

    Tumbling windows of 3 (``EventTimeTrigger``): the watermark 3 fires ``[0, 3)`` on row 10; the
    element at 1 arriving then is late (its window's end + 0 <= 3), Flink's side output:

    >>> op = KeyOperator(WindowOperator(TumblingEventTimeWindows(3)), 1, [Fraction(1), Fraction(2), Fraction(1)])
    >>> op.arrive(0, 0); op.arrive(1, 1); op.watermark(10, Fraction(3)); op.arrive(2, 11); op.finish()
    >>> op.firings, op.late
    ([(Fraction(0, 1), Fraction(3, 1), 0, 10, [0, 1])], [(2, Fraction(0, 1), Fraction(3, 1), True)])
    """

    def __init__(self, spec: WindowOperator, factor: int, xs: Sequence[Fraction]) -> None:
        def scaled(value) -> Fraction:
            return exact(value) * factor

        a = spec.assigner
        self.global_ = isinstance(a, GlobalWindows)
        self.gap = scaled(a.gap) if isinstance(a, EventTimeSessionWindows) else None
        if isinstance(a, (TumblingEventTimeWindows, SlidingEventTimeWindows)):
            self.size, self.slide, self.offset = scaled(a.size), scaled(a.slide), scaled(a.offset)
        self.lateness = scaled(spec.allowed_lateness)
        self.purging = isinstance(spec.trigger, PurgingTrigger)
        self.trigger = spec.trigger.trigger if self.purging else spec.trigger
        self.evictor = spec.evictor
        self.evict_size = scaled(self.evictor.size) if isinstance(self.evictor, TimeEvictor) else None
        self.x = xs
        self.bound: Bound = -math.inf
        self.panes: dict[int, Pane] = {}
        self.by_bounds: dict[tuple, int] = {}  # non-merging windows: (start, end) -> pane id
        self.next_id = 0
        self.firings: list[tuple[Bound, Bound, int, int | None, list[int]]] = []
        self.late: list[tuple[int, Bound, Bound, bool]] = []

    def assign(self, x: Fraction) -> list[tuple[Bound, Bound]]:
        """The windows of an element at ``x`` (before merging), latest first as Flink's assigners list them."""
        if self.global_:
            return [(-math.inf, math.inf)]
        if self.gap is not None:
            return [(x, x + self.gap)]
        last = math.floor((x - self.offset) / self.slide)
        first = math.floor((x - self.offset - self.size) / self.slide) + 1
        starts = (k * self.slide + self.offset for k in range(last, first - 1, -1))
        return [(start, start + self.size) for start in starts]

    def pane(self, start: Bound, end: Bound) -> tuple[int | None, Pane]:
        """The kept pane of the window ``[start, end)`` (id None: a new one, not kept yet); a
        session window merges with the kept ones it intersects or touches first."""
        if self.gap is None:
            pid = self.by_bounds.get((start, end))
            return (pid, self.panes[pid]) if pid is not None else (None, Pane(start, end))
        touched = [pid for pid, p in self.panes.items() if p.start <= end and p.end >= start]
        if not touched:
            return None, Pane(start, end)
        parts = [self.panes[pid] for pid in touched]
        lo, hi = min(start, *(p.start for p in parts)), max(end, *(p.end for p in parts))
        if len(parts) == 1 and (lo, hi) == (parts[0].start, parts[0].end):
            return touched[0], parts[0]  # the window lies within a kept one: no merge
        for pid in touched:
            del self.panes[pid]
        merged = Pane(lo, hi, sorted(i for p in parts for i in p.items), sum(p.count for p in parts),
                      max(p.seq for p in parts), isinstance(self.trigger, EventTimeTrigger) and hi > self.bound)
        return None, merged

    def keep(self, pid: int | None, pane: Pane) -> None:
        if pid is None:
            pid, self.next_id = self.next_id, self.next_id + 1
            self.panes[pid] = pane
            if self.gap is None:
                self.by_bounds[(pane.start, pane.end)] = pid

    def arrive(self, i: int, row: int) -> None:
        """Element ``i`` (arrival ``row``) enters its windows; late ones skip it."""
        panes = [self.pane(s, e) for s, e in self.assign(self.x[i])]
        late = [p for _, p in panes if p.end + self.lateness <= self.bound]
        for pid, pane in panes:
            if pane in late:
                continue
            self.keep(pid, pane)
            pane.items.append(i)
            if self.on_element(pane):
                self.fire(pane, row)
        self.late += [(i, p.start, p.end, len(late) == len(panes)) for p in late]

    def on_element(self, pane: Pane) -> bool:
        """The trigger's ``onElement``: whether it fires."""
        if isinstance(self.trigger, CountTrigger):
            pane.count += 1
            if pane.count >= self.trigger.count:
                pane.count = 0
                return True
            return False
        if pane.end <= self.bound:
            return True
        pane.timer = True
        return False

    def evict(self, pane: Pane, after: bool) -> None:
        if self.evictor is None or self.evictor.evict_after != after:
            return
        if isinstance(self.evictor, CountEvictor):
            pane.items = pane.items[-self.evictor.max_count:]
        else:
            cutoff = max(self.x[i] for i in pane.items) - self.evict_size
            pane.items = [i for i in pane.items if self.x[i] > cutoff]

    def fire(self, pane: Pane, row: int | None) -> None:
        """A firing: the contents (if any) evicted before, emitted, evicted after; purged."""
        if pane.items:
            self.evict(pane, after=False)
            self.firings.append((pane.start, pane.end, pane.seq, row, list(pane.items)))
            pane.seq += 1
            self.evict(pane, after=True)
        if self.purging:
            pane.items = []

    def watermark(self, row: int | None, bound: Bound) -> None:
        """The watermark rises to ``bound`` (arrival ``row``): timers fire, late windows are forgotten."""
        if bound <= self.bound:
            return
        self.bound = bound
        for pid, pane in sorted(self.panes.items(), key=lambda item: item[1].end):
            if pane.end > bound:
                break
            if pane.timer:
                pane.timer = False
                self.fire(pane, row)
            if pane.end + self.lateness <= bound:
                del self.panes[pid]
                self.by_bounds.pop((pane.start, pane.end), None)

    def finish(self) -> None:
        """The end of the stream: the watermark passes everything."""
        self.watermark(None, math.inf)

    def runs(self) -> list[tuple[int, Bound, Bound, int, int]]:
        """``(index, start, end, wid_lo, wid_hi)``: each element's firings per window bounds, in
        runs of consecutive numbers."""
        numbers: dict[tuple, list[int]] = defaultdict(list)
        for start, end, seq, _, members in self.firings:
            for i in members:
                numbers[(i, start, end)].append(seq)
        out = []
        for (i, start, end), seqs in numbers.items():
            seqs.sort()
            lo = seqs[0]
            for a, b in zip(seqs, [*seqs[1:], None]):
                if b != a + 1:
                    out.append((i, start, end, lo, a))
                    lo = b
        return out
