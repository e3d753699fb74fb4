"""Bucket: tag each tuple, and each punctuation, with a range of window-ids.

A tuple gets ``wid_lo``/``wid_hi`` (it belongs to every window ``wid_lo <= w <=
wid_hi``) from Column expressions only; arrival positions for ``ROWS`` windows
come from ``row_number()`` over the window attribute. A punctuation with bound
``v`` on the window attribute becomes a punctuation on ``wid``: it closes every
window ``w <= wid_closed``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegralType,
    NumericType,
    TimestampNTZType,
    TimestampType,
)

from wid.errors import WidError
from wid.windows import WindowSpec

WID_LO = "wid_lo"
WID_HI = "wid_hi"
#: The window-attribute value in the units of the window-ids' arithmetic.
WID_X = "wid_x"
#: A punctuation on wid: every window w <= wid_closed is complete.
WID_CLOSED = "wid_closed"

MICROS_PER_SECOND = 10**6


def attribute_type(df: DataFrame, name: str) -> DataType:
    """The type of column ``name``, or a :class:`WidError` naming the unknown column."""
    fields = {f.name.lower(): f.dataType for f in df.schema.fields}
    if name.lower() not in fields:
        raise WidError(f"unknown column {name!r} (columns: {', '.join(df.columns)})")
    return fields[name.lower()]


def numeric_value(column: Column, dtype: DataType, name: str) -> tuple[Column, int]:
    """``(x, factor)``: ``column`` as a number and the factor from clause units to x's units.

    Timestamps and dates become epoch microseconds (factor 10**6, exact on longs),
    integral columns longs, other numbers doubles.
    """
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return F.unix_micros(column.cast("timestamp")), MICROS_PER_SECOND
    if isinstance(dtype, IntegralType):
        return column.cast("long"), 1
    if isinstance(dtype, NumericType):
        return column.cast("double"), 1
    raise WidError(f"window attribute {name!r} must be numeric or a timestamp, not {dtype.simpleString()}")


def checked(x: Column, dtype: DataType, name: str) -> Column:
    """``x``, failing the query with a message naming the tuple when it is NULL or NaN."""
    bad = x.isNull()
    if isinstance(dtype, (FloatType, DoubleType)):
        bad = bad | F.isnan(x)
    message = F.concat(
        F.lit(f"wid: NULL or NaN window attribute {name!r} in the tuple with row_num="),
        F.coalesce(F.col("row_num").cast("string"), F.lit("NULL")),
    )
    return F.when(bad, F.raise_error(message)).otherwise(x)


def _position(spec: WindowSpec) -> Column:
    """0-based arrival position of the tuple within its partition, in ``wattr`` order."""
    order = Window.partitionBy(*spec.partition).orderBy(WID_X)
    return (F.row_number().over(order) - 1).cast("long")


def bucket(df: DataFrame, spec: WindowSpec) -> DataFrame:
    """``df`` plus ``wid_x``, ``wid_lo``, ``wid_hi``; tuples in no window (gaps of hopping
    windows) are gone. An open upper end (landmark) is closed by the final punctuation:
    the window whose extent first holds the stream's largest ``x``."""
    dtype = attribute_type(df, spec.wattr)
    for name in spec.partition:
        attribute_type(df, name)
    x, factor = numeric_value(F.col(spec.wattr), dtype, spec.wattr)
    tagged = df.withColumn(WID_X, checked(x, dtype, spec.wattr))
    if spec.positional:
        tagged, factor = tagged.withColumn(WID_X, _position(spec)), 1
    ids = spec.scaled(factor) if factor != 1 else spec
    lo, hi = ids.wids(F.col(WID_X))
    tagged = tagged.withColumn(WID_LO, lo)
    if hi is None:
        end = tagged.agg(ids.wids(F.max(WID_X))[0].alias(WID_HI))
        return tagged.crossJoin(F.broadcast(end))
    tagged = tagged.withColumn(WID_HI, hi)
    return tagged.where(F.col(WID_LO) <= F.col(WID_HI)) if spec.gaps else tagged


def bucket_punctuations(punctuations: DataFrame, spec: WindowSpec) -> DataFrame:
    """Punctuations on the window attribute as punctuations on wid: adds ``wid_closed``,
    the largest window whose extent end ``(w+1)s <= bound``."""
    if spec.positional:
        raise WidError("punctuations on a ROWS window are implied by arrival order; give them on a value attribute")
    dtype = attribute_type(punctuations, spec.wattr)
    bound, factor = numeric_value(F.col(spec.wattr), dtype, spec.wattr)
    ids = spec.scaled(factor) if factor != 1 else spec
    return punctuations.withColumn(WID_CLOSED, ids.closed(bound))
