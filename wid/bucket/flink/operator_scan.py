"""Flink's window operator (:class:`wid.windows.flink_operator.WindowOperator`) event by event
per key: the ``scan`` path of :mod:`wid.bucket.flink.operator`, and replay's.

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

:func:`scan` runs a :class:`KeyOperator` per key in one grouped Arrow pass (as
:mod:`wid.stream.session_replay`): each element's firings per window as runs of ids (a merge
of sessions starts a new run), the firings with the arrival that fired them, the late
contributions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (BooleanType, DataType, DateType, DecimalType, DoubleType, FloatType, IntegerType,
                               IntegralType, LongType, StructField, StructType, TimestampType)

from wid.bucket.columns import (WID_CLOSED, WID_HI, WID_LO, WID_X, EMIT_ROW, attribute_type, numeric_value,
                                rattr_value, time_like)
from wid.bucket.checks import checked, naming
from wid.bucket.plain import PlainNames
from wid.errors import WidError
from wid.windows.flink_operator import (CountEvictor, CountTrigger, EventTimeSessionWindows, EventTimeTrigger,
                                        GlobalWindows, PurgingTrigger, SlidingEventTimeWindows, TimeEvictor,
                                        TumblingEventTimeWindows, WindowOperator)
from wid.windows.numbers import exact
from wid.windows.sqlexpr import column, columns

WINDOW_START, WINDOW_END = WindowOperator.extent_columns
#: Scan output: the kind of row (member run, firing, late contribution) and its window's bounds.
KIND, START, END, SIDE, VALUE = "_wid_kind", "_wid_s", "_wid_e", "side_output", "_wid_value"
MEMBER, FIRING, LATE = 0, 1, 2
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


def _exact(value) -> Fraction:
    """A stored value (int, float, Decimal) as an exact fraction (a double's binary value)."""
    return Fraction(value)


def units(df: DataFrame, spec: WindowOperator) -> tuple[DataType, int, DataType]:
    """``(attribute type, factor, bound type)``: the factor from the operator's numbers to ``x``
    units (10**6 for timestamps) and the type of the scan's window bounds: longs where they are
    whole (timestamps, whose numbers must be whole microseconds; integral attributes with whole
    numbers), else doubles.

    >>> units(spark.table("readings"), WindowOperator(TumblingEventTimeWindows(2.5)))
    (DoubleType(), 1, DoubleType())
    """
    dtype = attribute_type(df, spec.wattr)
    _, factor = numeric_value(column(spec.wattr), dtype, spec.wattr)
    a, e = spec.assigner, spec.evictor
    numbers = [getattr(a, n) for n in ("size", "slide", "offset", "gap") if getattr(a, n, None) is not None]
    numbers += [spec.allowed_lateness, *([e.size] if isinstance(e, TimeEvictor) else [])]
    whole = all((exact(n) * factor).denominator == 1 for n in numbers)
    if time_like(dtype) and not whole:
        raise WidError(f"the operator's sizes, gap and lateness on timestamp {spec.wattr!r} must be whole "
                       f"microseconds, got {', '.join(map(str, numbers))} s")
    longs = time_like(dtype) or (isinstance(dtype, IntegralType) and whole)
    return dtype, factor, LongType() if longs else DoubleType()


def prepared(df: DataFrame, spec: WindowOperator) -> DataFrame:
    """``df`` with ``wid_x`` (the attribute as a number, checked: NULL and NaN fail the query) and the
    exact value the scan reads (``_wid_value``: epoch microseconds, or the stored number).

    >>> days = spark.sql("SELECT 0L AS row_num, DATE'1970-01-02' AS day")
    >>> prepared(days, WindowOperator(TumblingEventTimeWindows(60), wattr="day")).select(WID_X, VALUE).first()
    Row(wid_x=86400000000, _wid_value=86400000000)
    """
    dtype = attribute_type(df, spec.wattr)
    for name in spec.keys:
        attribute_type(df, name)
    x, _ = numeric_value(column(spec.wattr), dtype, spec.wattr)
    x = checked(x, dtype, spec.wattr, by=naming(df))
    value = column(WID_X) if time_like(dtype) or not isinstance(dtype, (DecimalType, FloatType, DoubleType)) \
        else checked(column(spec.wattr), dtype, spec.wattr, by=naming(df))
    return df.withColumn(WID_X, x).withColumn(VALUE, value)


def scan(tuples: DataFrame, spec: WindowOperator, punctuations=None) -> DataFrame:
    """The :class:`KeyOperator` of each key over :func:`prepared` ``tuples`` and the
    punctuations on ``spec.wattr`` (a :class:`wid.stream.punctuation.Punctuations`, its
    ``wid_closed`` the bound in ``x`` units; None: only the end of the stream). One row per
    member run (``_wid_kind`` 0: ``row_num``, ``wid_lo``, ``wid_hi``), firing (1: ``row_num`` of
    a member, ``wid_lo`` its number, ``emit_row``) and late contribution (2: ``row_num``,
    ``side_output``), each with its window's bounds (``_wid_s``, ``_wid_e``, in x units).

    >>> spec = WindowOperator(TumblingEventTimeWindows(5), CountTrigger(2))
    >>> sorted(tuple(r)[:5] for r in scan(prepared(spark.table("readings"), spec), spec).collect())
    [(0, 0, 0, 0, 0.0), (0, 1, 0, 0, 0.0), (1, 0, 0, 0, 0.0)]
    """
    _, factor, bound_type = units(tuples, spec)
    keys = list(spec.keys)
    closed = punctuations.frame.schema[WID_CLOSED].dataType if punctuations is not None else DoubleType()
    events = tuples.select("row_num", *columns(keys), F.lit(MEMBER).alias(KIND), column(VALUE),
                           F.lit(None).cast(closed).alias(WID_CLOSED))
    if punctuations is not None:
        present = tuples.select(*columns(keys)).distinct()
        for shape in punctuations.shapes:
            named = [f"_wid_p{i}" for i in range(len(shape))]
            frame = punctuations.shaped(shape).toDF("row_num", *named, WID_CLOSED)
            matched = present.join(frame, [column(c).eqNullSafe(column(n)) for c, n in zip(shape, named)]) \
                if shape else present.crossJoin(frame)
            events = events.unionByName(matched.select(
                "row_num", *columns(keys), F.lit(FIRING).alias(KIND),
                F.lit(None).cast(events.schema[VALUE].dataType).alias(VALUE), WID_CLOSED))
    schema = StructType([StructField(KIND, IntegerType()), StructField("row_num", LongType()),
                         StructField(WID_LO, LongType()), StructField(WID_HI, LongType()),
                         StructField(START, bound_type), StructField(END, bound_type),
                         StructField(EMIT_ROW, LongType()), StructField(SIDE, BooleanType())])
    shown = int if isinstance(bound_type, LongType) else float

    def bound(b: Bound):
        return None if math.isinf(b) else shown(b)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values(["row_num", KIND], kind="stable")
        tuple_rows = pdf[pdf[KIND] == MEMBER]
        rows = tuple_rows["row_num"].to_list()
        op = KeyOperator(spec, factor, [_exact(v) for v in tuple_rows[VALUE]])
        i = 0
        for row, k, b in zip(pdf["row_num"], pdf[KIND], pdf[WID_CLOSED]):
            if k == MEMBER:
                op.arrive(i, int(row))
                i += 1
            elif not pd.isna(b):
                op.watermark(int(row), _exact(b))
        op.finish()
        out = [(MEMBER, rows[i], lo, hi, bound(s), bound(e), None, None) for i, s, e, lo, hi in op.runs()]
        out += [(FIRING, rows[members[0]], seq, seq, bound(s), bound(e), at, None)
                for s, e, seq, at, members in op.firings]
        out += [(LATE, rows[i], None, None, bound(s), bound(e), None, side) for i, s, e, side in op.late]
        frame = pd.DataFrame(out, columns=schema.names)
        return frame.astype({KIND: "int32", "row_num": "int64", WID_LO: "Int64", WID_HI: "Int64", EMIT_ROW: "Int64",
                             SIDE: "boolean", **({START: "Int64", END: "Int64"} if shown is int else {})})

    events, names = PlainNames.of(events if keys else events.withColumn("_wid_all", F.lit(0)))
    return events.groupBy(*[names.column(k) for k in keys or ["_wid_all"]]).applyInPandas(run, schema)


def bounds(fates: DataFrame, dtype: DataType) -> DataFrame:
    """``fates`` (:func:`scan`) with ``window_start`` and ``window_end`` in the attribute's terms
    (timestamps for timestamps and dates; NULL for the global window), for ``_wid_s``/``_wid_e``.

    >>> from pyspark.sql.types import TimestampNTZType
    >>> fates = spark.createDataFrame([(3_000_000, None)], f"{START} long, {END} long")
    >>> bounds(fates, TimestampNTZType()).first()
    Row(window_start=datetime.datetime(1970, 1, 1, 0, 0, 3), window_end=None)
    """
    moment = TimestampType() if isinstance(dtype, DateType) else dtype  # a bound need not be a whole day
    shown = (lambda c: rattr_value(column(c), moment)) if time_like(dtype) else column
    return fates.withColumn(WINDOW_START, shown(START)).withColumn(WINDOW_END, shown(END)).drop(START, END)
