"""Bucket for session windows: one id per key and session, from window functions only.

Per key, in ``(a, row_num)`` order, a tuple opens a new session when it is the key's first
or ``a >= previous a + g``; the running sum of those flags - 1 is its session id, so
``wid_lo = wid_hi = id``. The comparison is exact on the stored values:

- timestamps and dates: epoch microseconds (longs), ``g`` a whole number of microseconds;
- integral columns: ``a - prev >= ceil(g)`` on longs; decimals: decimal arithmetic with ``g``
  as written;
- doubles: ``g`` as the nearest double ``g_d``; ``a - prev = s + e`` exactly (TwoSum), and
  ``s + e >= g_d`` iff ``s > g_d`` or (``s = g_d`` and ``e >= 0``).

Each tuple also carries its session's ``session_start`` (first ``a``) and ``session_end``
(last ``a + g``), in the attribute's type (timestamps for dates).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (DataType, DateType, DecimalType, IntegralType, TimestampNTZType, TimestampType)

from wid.bucket.columns import MICROS_PER_SECOND, WID_HI, WID_LO, WID_X, attribute_type, checked, numeric_value
from wid.errors import WidError
from wid.spec.numbers import exact
from wid.spec.aware import Session

SESSION_START, SESSION_END = Session.extent_columns
_NEW = "_wid_new"


Compare = Callable[[Column, Column], Column]


def _arithmetic(dtype: DataType, spec: Session) -> tuple[Compare, Callable[[Column], Column]]:
    """``(a >= prev + g, last -> last + g)`` for the attribute's type, exactly (module docstring)."""
    gap = exact(spec.gap)
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        micros = gap * MICROS_PER_SECOND
        if micros.denominator != 1:
            raise WidError(f"SESSION gap on timestamp {spec.wattr!r} must be a whole number of microseconds, "
                           f"got {spec.gap!r} s")
        g, kind = F.lit(int(micros)), "timestamp_ntz" if isinstance(dtype, TimestampNTZType) else "timestamp"

        def x(c: Column) -> Column:
            return F.unix_micros(c.cast("timestamp"))

        return (lambda a, prev: x(a) - x(prev) >= g), lambda last: F.timestamp_micros(x(last) + g).cast(kind)
    if isinstance(dtype, IntegralType):
        steps = F.lit(math.ceil(gap))
        return (lambda a, prev: a.cast("long") - prev.cast("long") >= steps), lambda last: last + F.lit(spec.gap)
    if isinstance(dtype, DecimalType):
        d = F.lit(Decimal(repr(spec.gap)) if isinstance(spec.gap, float) else Decimal(spec.gap))
        return (lambda a, prev: a - prev >= d), lambda last: last + d
    g = F.lit(float(gap))

    def opens(a: Column, prev: Column) -> Column:
        a, prev = a.cast("double"), prev.cast("double")
        s = a - prev
        bb = s - a
        e = (a - (s - bb)) + (-prev - bb)  # TwoSum: a - prev = s + e exactly
        return (s > g) | ((s == g) & (e >= 0))

    return opens, lambda last: last.cast("double") + g


def session_bucket(df: DataFrame, spec: Session) -> DataFrame:
    """``df`` plus ``wid_x``, ``wid_lo = wid_hi`` = the tuple's session id within its key (``spec.keys``),
    ``session_start`` and ``session_end``."""
    dtype = attribute_type(df, spec.wattr)
    for name in spec.keys:
        attribute_type(df, name)
    x, _ = numeric_value(F.col(spec.wattr), dtype, spec.wattr)
    tagged = df.withColumn(WID_X, checked(x, dtype, spec.wattr))
    a = F.col(spec.wattr)
    opens, _ = _arithmetic(dtype, spec)
    order = Window.partitionBy(*spec.keys).orderBy(WID_X)  # ties: the same session (g > 0)
    previous = F.lag(a).over(order)
    tagged = tagged.withColumn(_NEW, F.when(previous.isNull() | opens(a, previous), 1).otherwise(0))
    sid = (F.sum(_NEW).over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow)) - 1).cast("long")
    return with_extents(tagged.withColumn(WID_LO, sid).withColumn(WID_HI, F.col(WID_LO)).drop(_NEW), spec)


def with_extents(tagged: DataFrame, spec: Session) -> DataFrame:
    """``tagged`` (session ids in ``wid_lo``) plus each session's ``session_start`` (first ``a``)
    and ``session_end`` (last ``a + g``)."""
    a = F.col(spec.wattr)
    _, end = _arithmetic(attribute_type(tagged, spec.wattr), spec)
    session = Window.partitionBy(*spec.keys, WID_LO)
    return tagged.withColumn(SESSION_START, F.min(a).over(session)).withColumn(SESSION_END, end(F.max(a).over(session)))
