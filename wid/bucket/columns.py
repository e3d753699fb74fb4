"""Column names every stage shares, and helpers on the window attribute used by every tagger.

``wid_lo``/``wid_hi``: the range of window-ids a tuple belongs to; ``wid_x``: the window
attribute in the units of the ids' arithmetic; ``wid_closed``: a punctuation on wid;
``wid``: a window-id in the aggregate's output; ``emit_row``: when a replay emitted a result.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
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

WID_LO = "wid_lo"
WID_HI = "wid_hi"
#: The window-attribute value in the units of the window-ids' arithmetic.
WID_X = "wid_x"
#: A punctuation on wid: every window w <= wid_closed is complete.
WID_CLOSED = "wid_closed"
#: FCA: the tuple defines a window (its ``x`` is a window-id).
WID_WINDOW = "wid_window"
#: FCA: the tuple passes the query's WHERE, so it contributes to extents (it defines windows anyway).
WID_IN = "wid_in"
#: The window-id of an output row of the aggregate.
WID = "wid"
#: Replay: the row_num of the punctuation on whose arrival a result was emitted (NULL: end of stream).
EMIT_ROW = "emit_row"
#: A replayed window's emission number: 0 first, then one per tuple within the allowed lateness.
REVISION = "revision"

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
