"""Bucket for Flink's window operator (:class:`wid.windows.flink_operator.WindowOperator`): its
firings as ranges of window-ids.

The window-ids of a window are its firings, numbered from 0 (``wid``), so an element's firings
in one window are a range: each element gets one row per window and run of firings with
``wid_lo``/``wid_hi``, ``window_start`` and ``window_end`` (a session's bounds at those firings:
a merge starts a new row), and the range aggregate computes every firing. Two paths (:func:`path`):

- ``columns`` (the query of tumbling, sliding or global windows with an event-time or count
  trigger, purging or not, and no evictor or a count evictor): Spark columns and window
  functions only. A window ``k`` holds ``x`` iff ``k*slide + offset <= x < k*slide + offset + size``,
  i.e. ``floor((X - OFF - R) / S) < k <= floor((X - OFF) / S)`` on ``X = floor(x * 10**p)`` and the
  numbers times ``10**p`` (``p`` their decimal places; epoch microseconds for timestamps), exact as
  every bound is a multiple of ``10**-p``. With no watermark but the end of the stream, an
  event-time trigger fires each window once (``wid`` 0, a count evictor keeping the last
  ``max_count`` by ``row_num``); ``CountTrigger(n)`` fires on the window's elements at positions
  ``n-1, 2n-1, ...`` (``P``, 0-based in arrival order within the key and window; ``C`` of them),
  so the element at ``P`` is in firings ``P div n`` to ``C div n - 1``, or with a count evictor of
  ``m`` to ``(P + m) div n - 1`` (before) or ``(P + m) div n`` (after); purging, in firing
  ``P div n`` alone (before: if ``P mod n >= n - m``).
- ``scan`` (sessions, time evictors, and replay, where the watermark comes from punctuations): a
  firing's contents depend on the whole history of its key (merges, counts, timers, cleanup), so
  the operator runs event by event per key (one grouped Arrow pass, as
  :mod:`wid.stream.session_replay`).
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, IntegralType

from wid.bucket.columns import MICROS_PER_SECOND, WID_HI, WID_LO, time_like
from wid.bucket.flink.operator_scan import (END, KIND, MEMBER, START, VALUE, WINDOW_END, WINDOW_START, bounds,
                                            prepared, scan, units)
from wid.windows.flink_operator import EventTimeTrigger, GlobalWindows, PurgingTrigger, TimeEvictor, WindowOperator
from wid.windows.numbers import exact, floor_div, floor_scaled
from wid.windows.sqlexpr import column, over

#: The index of a window of the assigner (``k``: it starts at ``k*slide + offset``).
K = "_wid_k"


def path(spec: WindowOperator) -> str:
    """``columns`` or ``scan`` for :func:`bucket` (module docstring).

    >>> from wid.windows.flink import CountEvictor, EventTimeSessionWindows, SlidingEventTimeWindows
    >>> from wid.windows.flink_operator import CountTrigger
    >>> path(WindowOperator(SlidingEventTimeWindows(4, 2), CountTrigger(3), CountEvictor(2)))
    'columns'
    >>> [path(WindowOperator(a, CountTrigger(2), e)) for a, e in [(EventTimeSessionWindows(4), None),
    ...                                                          (GlobalWindows(), TimeEvictor(1))]]
    ['scan', 'scan']
    """
    return "scan" if spec.merging or isinstance(spec.evictor, TimeEvictor) else "columns"


def _scale(dtype: DataType, spec: WindowOperator) -> int:
    """Units of ``X`` per unit of the operator's numbers: 10**6 for timestamps, else ``10**p``
    with ``p`` the numbers' decimal places."""
    if time_like(dtype):
        return MICROS_PER_SECOND
    a = spec.assigner
    numbers = [exact(getattr(a, n)) for n in ("size", "slide", "offset") if getattr(a, n, None) is not None]
    p = 0
    while any((n * 10**p).denominator != 1 for n in numbers):
        p += 1
    return 10**p


def _windows(tuples: DataFrame, spec: WindowOperator, dtype: DataType, bound_type: DataType) -> DataFrame:
    """``tuples`` (:func:`prepared`) once per window holding each: its index ``_wid_k`` and bounds
    ``_wid_s``/``_wid_e`` (x units; NULL for the global window)."""
    a = spec.assigner
    if isinstance(a, GlobalWindows):  # no window reads x, but a NULL x still fails the query
        none = F.lit(None).cast(bound_type)
        return tuples.where(column(VALUE).isNotNull()).withColumns({K: F.lit(0).cast("long"), START: none, END: none})
    scale = _scale(dtype, spec)
    x = column(VALUE)  # checked: epoch microseconds, a long, or the stored decimal or double
    if time_like(dtype):
        X = x  # the numbers times 10**6 are whole (units)
    elif isinstance(dtype, IntegralType):
        X = x * F.lit(scale) if scale != 1 else x
    elif isinstance(dtype, DecimalType):
        X = F.floor(x * F.lit(Decimal(scale))).cast("long")
    else:
        X = floor_scaled(x.cast("double"), scale)
    size, slide, offset = (int(exact(n) * scale) for n in (a.size, a.slide, a.offset))
    last = floor_div(X - F.lit(offset), slide)
    first = floor_div(X - F.lit(offset + size), slide) + 1
    k = F.explode(F.sequence(first, last)) if size > slide else first
    start = column(K) * F.lit(slide) + F.lit(offset)
    shown = (lambda v: v) if time_like(dtype) else \
        (lambda v: v.cast(bound_type) if scale == 1 else v.cast("double") / F.lit(float(scale)))
    return tuples.withColumn(K, k).where(column(K) <= last) \
        .withColumns({START: shown(start), END: shown(start + F.lit(size))})


def _ranges(windows: DataFrame, spec: WindowOperator) -> DataFrame:
    """``wid_lo``/``wid_hi`` of each element in its window (``spec.keys``, ``_wid_k``): the firings
    of the query's trigger and evictor (module docstring); elements in none are gone."""
    group = [*spec.keys, K]
    position = (over(F.row_number(), group, ["row_num"]) - 1).cast("long")
    size = over(F.count(F.lit(1)), group).cast("long")
    evictor, trigger = spec.evictor, spec.trigger.trigger if isinstance(spec.trigger, PurgingTrigger) else spec.trigger
    m = evictor.max_count if evictor is not None else None
    if isinstance(trigger, EventTimeTrigger):  # one firing at the end of the stream
        zero = F.lit(0).cast("long")
        keep = F.lit(True) if m is None or evictor.evict_after else size - position <= F.lit(m)
        return windows.withColumns({WID_LO: zero, WID_HI: F.when(keep, zero).otherwise(F.lit(-1).cast("long"))})
    n = trigger.count
    fired = F.floor(size / n).cast("long")
    lo = F.floor(position / n).cast("long")
    if isinstance(spec.trigger, PurgingTrigger):
        kept = F.lit(True) if m is None or evictor.evict_after else F.pmod(position, F.lit(n)) >= F.lit(n - m)
        hi = F.when(kept, lo).otherwise(lo - 1)
    elif m is None:
        hi = fired - 1
    else:
        reach = F.floor((position + F.lit(m)) / n).cast("long") - (0 if evictor.evict_after else 1)
        hi = F.least(reach, fired - 1)
    return windows.withColumns({WID_LO: lo, WID_HI: F.least(hi, fired - 1)})


def bucket(df: DataFrame, spec: WindowOperator, how: str | None = None) -> DataFrame:
    """``df``'s elements with ``wid_lo``/``wid_hi`` (their firings, a row per window and run),
    ``window_start`` and ``window_end``: the operator over the whole stream, the watermark
    passing everything at its end (elements in no firing are gone).

    ``how`` forces a path (tests; exact only where :func:`path` picks it).

    ``PurgingTrigger(CountTrigger(1))`` on sliding windows of 4 every 2: each element fires each of its
    two windows alone, on either path:

    >>> from wid.windows.flink_operator import CountTrigger, SlidingEventTimeWindows
    >>> spec = WindowOperator(SlidingEventTimeWindows(4, 2), PurgingTrigger(CountTrigger(1)))
    >>> rows = [bucket(spark.table("readings"), spec, how).where("row_num = 0") for how in ("columns", "scan")]
    >>> [sorted(tuple(r) for r in row.select(WID_LO, WID_HI, WINDOW_START, WINDOW_END).collect()) for row in rows]
    [[(0, 0, -2.0, 2.0), (0, 0, 0.0, 4.0)], [(0, 0, -2.0, 2.0), (0, 0, 0.0, 4.0)]]
    """
    tuples = prepared(df, spec)
    dtype, _, bound_type = units(df, spec)
    if (how or path(spec)) == "columns":
        tagged = _ranges(_windows(tuples, spec, dtype, bound_type), spec).where(column(WID_LO) <= column(WID_HI))
        return bounds(tagged, dtype).drop(VALUE, K)
    members = bounds(scan(tuples, spec).where(column(KIND) == MEMBER), dtype)
    return tuples.drop(VALUE).join(members.select("row_num", WID_LO, WID_HI, WINDOW_START, WINDOW_END), "row_num")
