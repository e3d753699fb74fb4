"""Operational (SPL) windows on the range-tag pipeline.

Every SPL window is FIFO per subwindow: a tuple enters once and leaves once, so the
windows holding it are the consecutive triggers ``wid_lo <= w <= wid_hi`` between its
insertion and its eviction. Tagging each tuple with that range lets the window-agnostic
:func:`wid.aggregate.range_aggregate` do the rest. Notation: ``pos`` = 0-based arrival
position in the partition, ``t`` = arrival time, ``T0``/``T_end`` = first/last arrival,
tick ``k`` at ``T0 + (k+1)q``.

**Compiled** (Column expressions and window functions) where trigger positions are a
closed form and evictions follow arrival order:

=====================  ========================================================================
tumbling count(n)      wid = floor(pos/n)
tumbling time(p)       wid = floor((t - T0)/p)
tumbling punct()       wid = number of punctuations before the tuple
sliding E, count(m)    lo = floor(pos/m), hi = floor((J+1)/m) - 1 with J the last position the
                       tuple is still in: pos+n-1 (count(n)); max pos with t <= t_i + p
                       (time(p)); max pos with a <= a_i + d (delta(a, d), a non-decreasing)
sliding count(n), time(q)  lo = floor((t - T0)/q), hi = floor((t[pos+n] - T0)/q) - 1
sliding time(p), time(q)   lo = floor((t - T0)/q), hi = floor((t + p - T0)/q) - 1
=====================  ========================================================================

**Sequential scan** (one pass per partition in an Arrow grouped function, the event
order of seed 003) where the windows depend on history: tumbling delta, delta
triggers (each trigger is measured from the previous one), delta eviction on an
attribute that decreases somewhere (checked on the data), delta eviction with a
time trigger, and partition eviction policies (one pass over the whole stream).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

from wid.bucket import WID_HI, WID_LO, attribute_type, checked, numeric_value
from wid.errors import WidError
from wid.spl import ARRIVAL_TS, Count, Delta, PartitionAge, PartitionCount, Punct, Sliding, SplWindow, Time, Tumbling
from wid.windows import floor_div

_T, _T0, _TEND, _POS, _N = "_wid_t", "_wid_t0", "_wid_tend", "_wid_pos", "_wid_n"
_ALL, _DELTA = "_wid_all", "_wid_d_"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _uses(spec: SplWindow, kind: type) -> bool:
    return any(isinstance(p, kind) for p in spec.policies)


def _time_scale(df: DataFrame) -> int:
    """Factor from seconds to the units of ``_wid_t`` (10**6 for timestamps)."""
    return numeric_value(F.col(ARRIVAL_TS), attribute_type(df, ARRIVAL_TS), ARRIVAL_TS)[1]


def _prepared(df: DataFrame, spec: SplWindow) -> tuple[DataFrame, SplWindow]:
    """Checked inputs and the spec on them: each delta attribute as a number ``_wid_d_<attr>``
    (timestamps in microseconds, the delta scaled alike), the punctuation marker a boolean,
    and for time policies ``_wid_t`` (arrival clock, non-decreasing) with ``T0``/``T_end``."""
    attribute_type(df, "row_num")
    for name in spec.partition_by:
        attribute_type(df, name)
    for role in ("eviction", "trigger"):
        policy = getattr(spec, role, None)
        if isinstance(policy, Delta):
            dtype = attribute_type(df, policy.attr)
            value, factor = numeric_value(F.col(policy.attr), dtype, policy.attr)
            hidden = _DELTA + policy.attr
            df = df.withColumn(hidden, checked(value, dtype, policy.attr))
            spec = replace(spec, **{role: Delta(hidden, _scaled_period(policy.delta, factor))})
        if isinstance(policy, Punct) and not isinstance(attribute_type(df, policy.marker), BooleanType):
            raise WidError(f"punct() marker column {policy.marker!r} must be boolean (true = a punctuation)")
    return _clocked(df, spec), spec


def _clocked(df: DataFrame, spec: SplWindow) -> DataFrame:
    """``df`` with the arrival clock ``_wid_t`` and the stream's ``T0``/``T_end`` when a policy needs time."""
    if not (_uses(spec, Time) or isinstance(spec.partition_eviction, PartitionAge)):
        return df
    dtype = attribute_type(df, ARRIVAL_TS)
    t, _ = numeric_value(F.col(ARRIVAL_TS), dtype, ARRIVAL_TS)
    previous = F.lag(_T).over(Window.orderBy("row_num"))
    df = df.withColumn(_T, checked(t, dtype, ARRIVAL_TS)).withColumn(
        _T,
        F.when(previous > F.col(_T), F.raise_error(F.concat(
            F.lit(f"wid: {ARRIVAL_TS} decreases in row_num order at row_num="), F.col("row_num").cast("string"))))
        .otherwise(F.col(_T)),
    )
    clock = _tuples(df, spec).agg(F.min(_T).alias(_T0), F.max(_T).alias(_TEND))
    return df.crossJoin(F.broadcast(clock))


def _tuples(df: DataFrame, spec: SplWindow) -> DataFrame:
    """The stream without its punctuation rows."""
    marker = next((p.marker for p in spec.policies if isinstance(p, Punct)), None)
    return df if marker is None else df.where(~F.coalesce(F.col(marker), F.lit(False)))


def _scaled_period(period: float, scale: int) -> float:
    value = period * scale
    return int(round(value)) if abs(value - round(value)) < 1e-9 else value


def _last_within(order: str, offset: float, partition: tuple[str, ...]) -> Column:
    """``max(pos)`` over the tuples of the partition with ``order`` in ``[own, own + offset]``."""
    key = _quoted(order) if isinstance(offset, int) else f"CAST({_quoted(order)} AS DOUBLE)"
    bound = str(offset) if isinstance(offset, int) else f"CAST({offset!r} AS DOUBLE)"
    over = f"PARTITION BY {', '.join(map(_quoted, partition))} " if partition else ""
    return F.expr(f"max({_POS}) OVER ({over}ORDER BY {key} RANGE BETWEEN CURRENT ROW AND {bound} FOLLOWING)")


def _monotone(df: DataFrame, attr: str, partition: tuple[str, ...]) -> bool:
    """Whether ``attr`` never decreases in arrival order within a partition (one Spark job)."""
    previous = F.lag(attr).over(Window.partitionBy(*partition).orderBy("row_num"))
    return df.select((F.col(attr) < previous).alias("_wid_down")).where("_wid_down").limit(1).count() == 0


def compiled(df: DataFrame, spec: SplWindow) -> bool:
    """Whether ``spec`` takes the compiled range-tag path on ``df`` (else the sequential scan)."""
    if spec.partition_eviction is not None:
        return False
    if isinstance(spec, Tumbling):
        return not isinstance(spec.eviction, Delta)
    if isinstance(spec.trigger, Delta):
        return False
    if isinstance(spec.eviction, Delta):
        return isinstance(spec.trigger, Count) and _monotone(_tuples(df, spec), spec.eviction.attr, spec.partition_by)
    return True


def operational_bucket(df: DataFrame, spec: SplWindow) -> DataFrame:
    """``df``'s tuples tagged with ``wid_lo``/``wid_hi``: the triggers of ``spec`` that hold
    them; punctuation rows and tuples in no window are gone."""
    prepared, spec = _prepared(df, spec)
    tagged = _compiled(prepared, spec) if compiled(prepared, spec) else _scan(prepared, spec)
    hidden = [c for c in tagged.columns if c.startswith(_DELTA)]
    return tagged.where(F.col(WID_LO) <= F.col(WID_HI)).drop(_POS, _T0, _TEND, _T, *hidden)


def _compiled(df: DataFrame, spec: SplWindow) -> DataFrame:
    part = spec.partition_by
    scale = _time_scale(df) if _uses(spec, Time) else 1
    if isinstance(spec, Tumbling) and isinstance(spec.eviction, Punct):
        marker = F.coalesce(F.col(spec.eviction.marker), F.lit(False)).cast("long")
        seen = F.sum(marker).over(Window.orderBy("row_num").rowsBetween(Window.unboundedPreceding, 0))
        total = F.sum(marker).over(Window.partitionBy())  # the window after the last one is incomplete
        wid = F.col(WID_LO)
        tagged = _tuples(df.withColumn(WID_LO, seen).withColumn(_N, total), spec)
        hi = wid if spec.incomplete else F.when(wid < F.col(_N), wid).otherwise(wid - 1)
        return tagged.withColumn(WID_HI, hi).drop(_N)
    df = df.withColumn(_POS, (F.row_number().over(Window.partitionBy(*part).orderBy("row_num")) - 1).cast("long"))
    since_t0 = F.col(_T) - F.col(_T0)
    if isinstance(spec, Tumbling):
        if isinstance(spec.eviction, Count):
            n = spec.eviction.n
            wid = floor_div(F.col(_POS), n)
            closed = (wid + 1) * n <= F.count(F.lit(1)).over(Window.partitionBy(*part))
        else:
            p = _scaled_period(spec.eviction.period, scale)
            wid = floor_div(since_t0, p)
            closed = wid < floor_div(F.col(_TEND) - F.col(_T0), p)
        hi = wid if spec.incomplete else F.when(closed, wid).otherwise(wid - 1)
        return df.withColumn(WID_LO, wid).withColumn(WID_HI, hi)
    eviction, trigger = spec.eviction, spec.trigger
    if isinstance(trigger, Count):
        m = trigger.n
        if isinstance(eviction, Count):
            size = F.count(F.lit(1)).over(Window.partitionBy(*part))
            last = F.least(F.col(_POS) + (eviction.n - 1), size - 1)
        elif isinstance(eviction, Time):
            last = _last_within(_T, _scaled_period(eviction.period, scale), part)
        else:
            last = _last_within(eviction.attr, eviction.delta, part)
        lo = floor_div(F.col(_POS), m)
        if not spec.partial:
            lo = F.greatest(lo, F.lit(-(-eviction.n // m) - 1))
        return df.withColumn(WID_LO, lo).withColumn(WID_HI, floor_div(last + 1, m) - 1)
    q = _scaled_period(trigger.period, scale)
    last_tick = floor_div(F.col(_TEND) - F.col(_T0), q) - 1
    lo = floor_div(since_t0, q)
    if isinstance(eviction, Count):
        evicted_at = F.lead(_T, eviction.n).over(Window.partitionBy(*part).orderBy(_POS))
        hi = F.coalesce(floor_div(evicted_at - F.col(_T0), q) - 1, last_tick)
        if not spec.partial:
            full_at = F.min(F.when(F.col(_POS) == eviction.n - 1, F.col(_T))).over(Window.partitionBy(*part))
            lo = F.greatest(lo, floor_div(full_at - F.col(_T0), q))
            hi = F.when(full_at.isNotNull(), hi).otherwise(lo - 1)
    else:
        p = _scaled_period(eviction.period, scale)
        hi = F.least(floor_div(since_t0 + F.lit(p), q) - 1, last_tick)
    return df.withColumn(WID_LO, lo).withColumn(WID_HI, hi)


# --- sequential scan ------------------------------------------------------------------------


class _Subwindow:
    """One partition's window state; ``seq`` (its next trigger number) outlives partition eviction."""

    __slots__ = ("buf", "seq", "since", "ref", "full", "last")

    def __init__(self, seq: int) -> None:
        self.buf: list[int] = []
        self.seq, self.since, self.ref, self.full, self.last = seq, 0, None, False, 0


class _Scanner:
    """Event-by-event SPL semantics over one group of rows sorted by ``row_num``; fills
    ``lo``/``hi`` (a tuple in no window ends with ``hi < lo``)."""

    def __init__(self, spec: SplWindow, pdf: pd.DataFrame, scale: int) -> None:
        self.spec, self.n = spec, len(pdf)
        self.lo = np.zeros(self.n, dtype=np.int64)
        self.hi = np.full(self.n, -1, dtype=np.int64)
        self.keys = list(zip(*[pdf[c] for c in spec.partition_by])) if spec.partition_by else [()] * self.n
        self.t = pdf[_T].to_numpy() if _T in pdf else None
        self.values = {p.attr: pdf[p.attr].to_numpy() for p in spec.policies if isinstance(p, Delta)}
        marker = next((p.marker for p in spec.policies if isinstance(p, Punct)), None)
        self.punct = pdf[marker].fillna(False).to_numpy(dtype=bool) if marker else np.zeros(self.n, dtype=bool)
        self.subs: dict[tuple, _Subwindow] = {}
        self.seqs: dict[tuple, int] = {}
        self.clock = 0  # next global number: time ticks or punctuations
        self.scale = scale
        self.t0, self.tend = (pdf[_T0].iloc[0], pdf[_TEND].iloc[0]) if _T0 in pdf and self.n else (None, None)

    # numbering: time ticks and punctuations are numbered over the stream, other triggers per partition
    def _global(self) -> bool:
        trigger = self.spec.trigger if isinstance(self.spec, Sliding) else self.spec.eviction
        return isinstance(trigger, (Time, Punct))

    def next_number(self, sub: _Subwindow) -> int:
        return self.clock if self._global() else sub.seq

    def remove(self, sub: _Subwindow, i: int) -> None:
        sub.buf.remove(i)
        self.hi[i] = self.next_number(sub) - 1

    def fire(self, sub: _Subwindow) -> None:
        """One trigger (tumbling: flush) of ``sub`` with its current content."""
        number = self.next_number(sub)
        if isinstance(self.spec, Sliding) and not (self.spec.partial or sub.full):
            for i in sub.buf:
                self.lo[i] = number + 1
        if isinstance(self.spec, Tumbling):
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
        p = _scaled_period(self.spec.eviction.period, self.scale)
        while sub.buf and now - self.t[sub.buf[0]] > p:
            self.remove(sub, sub.buf[0])

    def tick(self) -> None:
        for sub in self.subs.values():
            if isinstance(self.spec, Sliding):
                if isinstance(self.spec.eviction, Time):
                    self.expire(sub, self.t0 + (self.clock + 1) * self.period)
                if isinstance(self.spec.trigger, Time):
                    self.fire(sub)
            else:
                self.fire(sub)
        self.clock += 1

    @property
    def period(self) -> float:
        return _scaled_period(self.spec.policies[-1].period, self.scale)

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
            sub = self.subs[key] = _Subwindow(self.seqs.get(key, 0))
        if isinstance(spec, Tumbling):
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
        timed = isinstance(spec.trigger if isinstance(spec, Sliding) else spec.eviction, Time)
        for i in range(self.n):
            if self.punct[i]:
                for sub in self.subs.values():
                    self.fire(sub)
                self.clock += 1
                continue
            while timed and self.t0 + (self.clock + 1) * self.period <= self.t[i]:
                self.tick()
            if isinstance(policy, PartitionAge):
                age = _scaled_period(policy.seconds, self.scale)
                for key in [k for k, s in self.subs.items() if self.t[i] - self.t[s.last] > age]:
                    self.drop(key)
            self.arrive(i)
            if policy is not None and not isinstance(policy, PartitionAge):
                limit = policy.count
                while self.subs and (len(self.subs) if isinstance(policy, PartitionCount)
                                     else sum(len(s.buf) for s in self.subs.values())) > limit:
                    self.drop(min(self.subs, key=lambda k: self.subs[k].last))
        while timed and self.n and self.t0 + (self.clock + 1) * self.period <= self.tend:  # the stream's clock
            self.tick()
        for sub in self.subs.values():
            end = self.next_number(sub) - (0 if isinstance(spec, Tumbling) and spec.incomplete and sub.buf else 1)
            for i in sub.buf:
                self.hi[i] = end


def _scan(df: DataFrame, spec: SplWindow) -> DataFrame:
    """The sequential path: one Arrow grouped pass per partition (per stream with partition eviction)."""
    scale = _time_scale(df) if _T in df.columns else 1
    by_partition = spec.partition_eviction is None and spec.partition_by
    if not by_partition:
        df = df.withColumn(_ALL, F.lit(0))
    schema = StructType([*df.schema.fields, StructField(WID_LO, LongType()), StructField(WID_HI, LongType())])

    def scan(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values("row_num", kind="stable").reset_index(drop=True)
        scanner = _Scanner(spec, pdf, scale)
        scanner.run()
        return pdf.assign(**{WID_LO: scanner.lo, WID_HI: scanner.hi})

    grouped = df.groupBy(*(spec.partition_by if by_partition else (_ALL,)))
    return _tuples(grouped.applyInPandas(scan, schema), spec).drop(_ALL)
