"""Event-by-event simulator of SPL windows (seed 003): the tests' oracle.

It keeps each subwindow's content as a Python list, applies the events of every
arrival in the order of seed 003's tables, and materialises the content of every
window at its trigger (tumbling: flush). The engine never materialises windows, it
tags tuples with ranges of trigger numbers; the two meet only in the tests.

Decisions (as documented in wid.spl): time ticks at ``T0 + (k+1)p`` before same-time
arrivals; ticks and punctuations numbered over the stream; end of stream flushes
non-empty tumbling windows (``incomplete``); the first tuple is the delta trigger's
first reference; partitionAge checked before an arrival, partitionCount/tupleCount
after it, LRU by last insertion; partition numbering survives partition eviction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wid.windows.spl import Count, Delta, PartitionAge, PartitionCount, Punct, Sliding, SplWindow, Time, Tumbling

Row = dict[str, Any]


@dataclass
class Sub:
    content: list[Row] = field(default_factory=list)
    seq: int = 0
    arrived: int = 0
    reference: Any = None
    full: bool = False
    last_insert: int = 0
    last_time: float = 0.0


def simulate(rows: list[Row], spec: SplWindow, fired: dict | None = None) -> list[tuple[tuple, int, list[Row]]]:
    """``(partition key, wid, content)`` of every non-empty window, in emission order; ``fired``
    (when given) gets ``(partition key, wid) -> row_num`` of the row being processed when the
    window fired (a tick fires while processing the first row at or after it; None: the end)."""
    rows = sorted(rows, key=lambda r: r["row_num"])
    marker = next((p.marker for p in spec.policies if isinstance(p, Punct)), None)
    tuples = [r for r in rows if not (marker and r.get(marker))]
    windows: list[tuple[tuple, int, list[Row]]] = []
    subs: dict[tuple, Sub] = {}
    numbering: dict[tuple, int] = {}
    clock_policy = spec.trigger if isinstance(spec, Sliding) else spec.eviction
    timed = isinstance(clock_policy, Time)
    t0 = min(r["arrival_ts"] for r in tuples) if tuples and "arrival_ts" in tuples[0] else None
    ticks = 0
    puncts = 0
    current = None  # the row_num being processed

    def emit(key: tuple, sub: Sub, wid: int) -> None:
        if isinstance(spec, Sliding) and not spec.partial and not sub.full:
            return
        if sub.content:
            windows.append((key, wid, list(sub.content)))
            if fired is not None:
                fired[(key, wid)] = current

    def expire(sub: Sub, now: float) -> None:
        sub.content = [u for u in sub.content if now - u["arrival_ts"] <= spec.eviction.period]

    def tick() -> None:
        nonlocal ticks
        now = t0 + (ticks + 1) * clock_policy.period
        for key, sub in subs.items():
            if isinstance(spec, Tumbling):
                emit(key, sub, ticks)
                sub.content = []
            else:
                if isinstance(spec.eviction, Time):
                    expire(sub, now)
                emit(key, sub, ticks)
        ticks += 1

    def evict_partition(key: tuple) -> None:
        numbering[key] = subs.pop(key).seq

    for order, row in enumerate(rows):
        current = row["row_num"]
        if marker and row.get(marker):
            for key, sub in subs.items():
                emit(key, sub, puncts)
                sub.content = []
            puncts += 1
            continue
        while timed and t0 + (ticks + 1) * clock_policy.period <= row["arrival_ts"]:
            tick()
        if isinstance(spec.partition_eviction, PartitionAge):
            for key in [k for k, s in subs.items() if row["arrival_ts"] - s.last_time > spec.partition_eviction.seconds]:
                evict_partition(key)
        key = tuple(row[c] for c in spec.partition_by)
        if key not in subs:
            subs[key] = Sub(seq=numbering.get(key, 0))
        sub = subs[key]
        if isinstance(spec, Tumbling):
            policy = spec.eviction
            if isinstance(policy, Delta) and sub.content and row[policy.attr] - sub.content[0][policy.attr] > policy.delta:
                emit(key, sub, sub.seq)
                sub.seq += 1
                sub.content = []
            sub.content.append(row)
            if isinstance(policy, Count) and len(sub.content) == policy.n:
                emit(key, sub, sub.seq)
                sub.seq += 1
                sub.content = []
        else:
            eviction, trigger = spec.eviction, spec.trigger
            if isinstance(eviction, Time):
                expire(sub, row["arrival_ts"])
            if isinstance(trigger, Delta):
                value = row[trigger.attr]
                if sub.reference is None:
                    sub.reference = value
                elif value - sub.reference > trigger.delta:
                    emit(key, sub, sub.seq)
                    sub.seq += 1
                    sub.reference = value
            if isinstance(eviction, Count) and len(sub.content) == eviction.n:
                sub.content.pop(0)
            if isinstance(eviction, Delta):
                sub.content = [u for u in sub.content if not row[eviction.attr] - u[eviction.attr] > eviction.delta]
            sub.content.append(row)
            if isinstance(eviction, Count) and len(sub.content) == eviction.n:
                sub.full = True
            if isinstance(trigger, Count):
                sub.arrived += 1
                if sub.arrived == trigger.n:
                    sub.arrived = 0
                    emit(key, sub, sub.seq)
                    sub.seq += 1
        sub.last_insert, sub.last_time = order, row.get("arrival_ts", 0.0)
        policy = spec.partition_eviction
        while isinstance(policy, PartitionCount) and len(subs) > policy.count or (
            policy is not None and not isinstance(policy, (PartitionAge, PartitionCount))
            and sum(len(s.content) for s in subs.values()) > policy.count
        ):
            evict_partition(min(subs, key=lambda k: subs[k].last_insert))
    current = None
    if isinstance(spec, Tumbling) and spec.incomplete:
        for key, sub in subs.items():
            wid = ticks if timed else puncts if marker else sub.seq
            emit(key, sub, wid)
    return windows


def aggregate(windows: list[tuple[tuple, int, list[Row]]], value: str = "v") -> set[tuple]:
    """``(*key, wid, count, sum(value), sorted row_nums)`` of each window."""
    return {
        (*key, wid, len(content), sum(r[value] for r in content), tuple(sorted(r["row_num"] for r in content)))
        for key, wid, content in windows
    }


def simulate_flink(rows: list[Row], d: Any, fired: dict | None = None) -> list[tuple[tuple, int, list[Row]]]:
    """``(group key, wid, content)`` of every non-empty emission of a ``wid.windows.flink.Discretization``
    (Traub's order: fake items evict -> emit; real items trigger -> evict -> insert; a last
    emission at the end). Each EP returns how many head items to delete and the buffer loses the
    largest (at most all): a count EP by its own counter (seed 001, C.1, Listing 16), a tumbling EP
    its own count of arrivals since the last trigger (C.5). Every group's buffer exists from the start and sees every tick of the
    active time TPs; a passive time TP keeps the thesis's ``startTime``: a real item at
    ``x >= startTime + g`` fires and moves it to ``x - (x - startTime) mod g``. ``fired`` as in
    :func:`simulate`: the row whose arrival fired each emission (a tick: the first row at or after it)."""
    from wid.windows.flink import (CountEviction, CountTrigger, DeltaEviction, DeltaTrigger, PunctuationEviction,
                                PunctuationTrigger, TimeEviction, TimeTrigger, TumblingEviction)

    rows = sorted(rows, key=lambda r: r["row_num"])
    keys = sorted({tuple(r[c] for c in d.per_group) for r in rows}, key=repr)  # NULL keys too
    buffers = {k: {"items": [], "seq": 0, "count": {}, "ref": {}, "border": {}, "evict": {}} for k in keys}
    windows: list[tuple[tuple, int, list[Row]]] = []
    t0 = rows[0][d.ts] if rows and d.timed else None
    ticks = sorted({
        (p.start if p.start is not None else t0) + p.delay + (k + 1) * p.granularity
        for p in d.triggers if isinstance(p, TimeTrigger) and p.active
        for k in range(int((rows[-1][d.ts] - ((p.start if p.start is not None else t0) + p.delay)) // p.granularity) + 1)
    })
    ticks = [tau for tau in ticks if tau <= rows[-1][d.ts]] if rows and d.timed else []

    current = None  # the row_num being processed

    def emit(key: tuple) -> None:
        b = buffers[key]
        if b["items"]:
            windows.append((key, b["seq"], list(b["items"])))
            if fired is not None:
                fired[(key, b["seq"])] = current
        b["seq"] += 1

    def expire(b: dict, now: float) -> None:
        for e in d.evictions:
            if isinstance(e, TimeEviction):
                while b["items"] and b["items"][0][d.ts] < now - e.granularity:
                    b["items"].pop(0)

    def vector(row: Row, attrs: tuple[str, ...]) -> tuple:
        return tuple(float(row[a]) for a in attrs)

    pending = list(ticks)
    for row in rows:
        current = row["row_num"]
        while pending and pending[0] <= row[d.ts]:
            tau = pending.pop(0)
            for key in keys:
                expire(buffers[key], tau)
                emit(key)
        key = tuple(row[c] for c in d.per_group)
        b = buffers[key]
        fire = False
        for i, p in enumerate(d.triggers):
            if isinstance(p, CountTrigger):
                seen = b["count"].setdefault(i, p.start)
                if seen == p.every:
                    fire, seen = True, 0
                b["count"][i] = seen + 1
            elif isinstance(p, DeltaTrigger):
                if i not in b["ref"]:
                    b["ref"][i] = vector(row, p.attrs)
                elif p.fn(b["ref"][i], vector(row, p.attrs)) > p.threshold:
                    fire, b["ref"][i] = True, vector(row, p.attrs)
            elif isinstance(p, PunctuationTrigger) and row.get(p.marker):
                fire = True
            elif isinstance(p, TimeTrigger) and not p.active:
                start = b["border"].setdefault(i, (p.start if p.start is not None else t0) + p.delay)
                if row[d.ts] >= start + p.granularity:
                    fire, b["border"][i] = True, row[d.ts] - (row[d.ts] - start) % p.granularity
        if fire:
            emit(key)
        deletions = [0]
        for i, e in enumerate(d.evictions):
            items = b["items"]
            if isinstance(e, CountEviction):
                counter = b["evict"].get(i, 0)
                if counter >= e.max:
                    deletions.append(e.delete)
                    counter = 0 if counter - e.delete < 0 else counter - e.delete
                b["evict"][i] = counter + 1
            elif isinstance(e, TumblingEviction):
                counter = b["evict"].get(i, 0)
                if fire:
                    deletions.append(counter)
                    counter = 0
                b["evict"][i] = counter + 1
            elif isinstance(e, TimeEviction):
                k = 0
                while k < len(items) and items[k][d.ts] < row[d.ts] - e.granularity:
                    k += 1
                deletions.append(k)
            elif isinstance(e, DeltaEviction):
                k = 0
                while k < len(items) and e.fn(vector(items[k], e.attrs), vector(row, e.attrs)) > e.threshold:
                    k += 1
                deletions.append(k)
            elif isinstance(e, PunctuationEviction) and row.get(e.marker):
                deletions.append(len(items))
        b["items"] = b["items"][max(deletions):] + [row]
    current = None
    for key in keys:
        emit(key)
    return windows
