"""Column names every stage shares, and helpers on the window attribute used by every tagger.

``wid_lo``/``wid_hi``: the range of window-ids a tuple belongs to; ``wid_x``: the window
attribute in the units of the ids' arithmetic; ``wid_closed``: a punctuation on wid;
``wid``: a window-id in the aggregate's output; ``emit_row``: when a replay emitted a result.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
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
from wid.spec.sqlexpr import Expr, Sql, call, literal

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


def numeric_value(column: Expr, dtype: DataType, name: str) -> tuple[Expr, int]:
    """``(x, factor)``: ``column`` as a number and the factor from clause units to x's units.

    Timestamps and dates become epoch microseconds (factor 10**6, exact on longs),
    integral columns longs, other numbers doubles.
    """
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return call("unix_micros", column.cast("timestamp")), MICROS_PER_SECOND
    if isinstance(dtype, IntegralType):
        return column.cast("long"), 1
    if isinstance(dtype, NumericType):
        return column.cast("double"), 1
    raise WidError(f"window attribute {name!r} must be numeric or a timestamp, not {dtype.simpleString()}")


def checked(x: Expr, dtype: DataType, name: str) -> Expr:
    """``x``, failing the query with a message naming the tuple when it is NULL or NaN."""
    nan = isinstance(dtype, (FloatType, DoubleType))
    prefix = f"wid: NULL or NaN window attribute {name!r} in the tuple with row_num="
    if isinstance(x, Sql):
        bad = f"{x} IS NULL" + (f" OR isnan({x})" if nan else "")
        row = "coalesce(CAST(`row_num` AS STRING), 'NULL')"
        return Sql(f"CASE WHEN {bad} THEN raise_error(concat({literal(prefix)}, {row})) ELSE {x} END")
    bad = x.isNull()
    if nan:
        bad = bad | F.isnan(x)
    message = F.concat(F.lit(prefix), F.coalesce(F.col("row_num").cast("string"), F.lit("NULL")))
    return F.when(bad, F.raise_error(message)).otherwise(x)


def rattr_value(v: Expr, dtype: DataType) -> Expr:
    """A value in x units (:func:`numeric_value`) as a value of the attribute's type ``dtype``."""
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return call("timestamp_micros", v).cast(dtype)
    if isinstance(dtype, DateType):
        return call("timestamp_micros", v).cast("date")
    return v.cast(dtype)


def bound_value(v: Expr, dtype: DataType) -> Expr:
    """An extent bound in x units in the attribute's terms: a timestamp for timestamps and dates
    (a bound need not be a whole day), a number of the attribute's type for fractional ones,
    the number itself (long, or double for a fractional range or slide) for integral ones."""
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return rattr_value(v, TimestampType() if isinstance(dtype, DateType) else dtype)
    return v if isinstance(dtype, IntegralType) else v.cast(dtype)
