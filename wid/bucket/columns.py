"""Column names every stage shares, and helpers on the window attribute used by every tagger.

``wid_lo``/``wid_hi``: the range of window-ids a tuple belongs to; ``wid_x``: the window
attribute in the units of the ids' arithmetic; ``wid_closed``: a punctuation on wid;
``wid``: a window-id in the aggregate's output; ``emit_row``: when a replay emitted a result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    NumericType,
    TimestampNTZType,
    TimestampType,
)

from wid.bucket.checks import checked
from wid.errors import WidError
from wid.windows.numbers import LIMIT, floor_scaled
from wid.windows.sqlexpr import Expr, Sql, call, column, constant, equal, over, when  # noqa: F401 (Sql: the examples')
from wid.windows.base import WindowSpec

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
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND

#: A column by name: :func:`wid.windows.sqlexpr.column` (a Column), or :meth:`Sql.column` (SQL text).
Named = Callable[[str], Expr]


def time_like(dtype: DataType) -> bool:
    """Timestamps and dates: ``x`` in epoch microseconds.

    >>> [time_like(t) for t in (TimestampType(), TimestampNTZType(), DateType(), DecimalType(18, 6))]
    [True, True, True, False]
    """
    return isinstance(dtype, (TimestampType, TimestampNTZType, DateType))


def unranged(df: DataFrame, columns: dict[str, Column] | None = None) -> DataFrame:
    """``df`` plus ``columns``, with ``wid_lo`` and ``wid_hi`` NULL: live mode's Bucket of a kind
    whose ids its stateful step decides as tuples arrive.

    >>> live = unranged(spark.table("readings"), {WID_X: column("ts")})
    >>> live.select("row_num", WID_X, WID_LO, WID_HI).orderBy("row_num").first()
    Row(row_num=0, wid_x=1.0, wid_lo=None, wid_hi=None)
    """
    unknown = F.lit(None).cast("long")
    return df.withColumns({**(columns or {}), WID_LO: unknown, WID_HI: unknown})


def attribute_type(df: DataFrame, name: str) -> DataType:
    """The type of column ``name``, or a :class:`WidError` naming the unknown column.

    >>> attribute_type(spark.table("readings"), "TS")  # in any case, as Spark resolves names
    DoubleType()
    >>> attribute_type(spark.table("readings"), "t")
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 't' (columns: row_num, ts, arrival_ts, k, v)
    """
    fields = {f.name.lower(): f.dataType for f in df.schema.fields}
    if name.lower() not in fields:
        raise WidError(f"unknown column {name!r} (columns: {', '.join(df.columns)})")
    return fields[name.lower()]


def epoch_micros(column: Expr, dtype: DataType) -> Expr:
    """Epoch microseconds of a timestamp or date: a TIMESTAMP's instant; a TIMESTAMP_NTZ's wall
    clock as if in UTC, ``unix_date(t) * D + (hour * 3600 + minute * 60 + second) * 10**6`` (``D``
    the microseconds of a day, ``second`` with its fraction; no time zone: an hour is an hour
    across a DST change, as Spark's ``window()`` reads it, where a cast to TIMESTAMP would apply
    the session's); a date's midnight in the session time zone (as a cast to TIMESTAMP, and
    ``window()``, give it). A Column, or SQL text for :class:`Sql`.

    >>> epoch_micros(Sql.column("t"), TimestampType())
    Sql(text='unix_micros(CAST(`t` AS TIMESTAMP))')

    """
    if isinstance(dtype, TimestampNTZType):
        seconds = call("date_part", constant("SECOND", column), column)  # with the fraction: decimal(8, 6)
        return (call("unix_date", column.cast("date")).cast("long") * MICROS_PER_DAY
                + (call("hour", column) * 3600 + call("minute", column) * 60).cast("long") * MICROS_PER_SECOND
                + (seconds * MICROS_PER_SECOND).cast("long"))
    return call("unix_micros", column.cast("timestamp"))


def rattr_value(v: Expr, dtype: DataType) -> Expr:
    """A value in x units (:func:`numeric_value`) as a value of the attribute's type ``dtype``
    (for timestamps and dates the inverse of :func:`epoch_micros`; a TIMESTAMP_NTZ is
    ``date_from_unix_date((v - v mod D) / D)`` plus ``v mod D`` microseconds).

    >>> rattr_value(Sql.column("v"), TimestampType())
    Sql(text='CAST(timestamp_micros(`v`) AS TIMESTAMP)')
    """
    if isinstance(dtype, TimestampNTZType):  # the day's midnight plus the rest, both without a time zone
        rest = call("pmod", v, MICROS_PER_DAY)
        day = call("date_from_unix_date", call("div", v - rest, MICROS_PER_DAY).cast("int"))
        zero = constant(0, v)
        seconds = rest.cast(DecimalType(18, 0)) / MICROS_PER_SECOND
        return day.cast(TimestampNTZType()) + call("make_dt_interval", zero, zero, zero, seconds)
    if isinstance(dtype, TimestampType):
        return call("timestamp_micros", v).cast(dtype)
    if isinstance(dtype, DateType):
        return call("timestamp_micros", v).cast("date")
    return v.cast(dtype)


def on_axis(column: Column, dtype: DataType, attribute: DataType) -> tuple[Column, DataType]:
    """A time value (a bound, a clock) of type ``dtype`` on the window attribute's axis, and its
    type there: for a TIMESTAMP_NTZ attribute a TIMESTAMP or date is its wall-clock time in the
    session time zone; for a TIMESTAMP or date attribute a TIMESTAMP_NTZ is the instant it names
    there (Spark's cast either way); anything else as it is.

    >>> on_axis(F.col("bound"), TimestampType(), TimestampNTZType())
    (Column<'CAST(bound AS TIMESTAMP_NTZ)'>, TimestampNTZType())
    >>> on_axis(F.col("bound"), TimestampNTZType(), DateType())
    (Column<'CAST(bound AS TIMESTAMP)'>, TimestampType())
    >>> on_axis(F.col("bound"), DoubleType(), TimestampType())
    (Column<'bound'>, DoubleType())
    """
    ntz = TimestampNTZType()
    if isinstance(attribute, TimestampNTZType) and time_like(dtype) and not isinstance(dtype, TimestampNTZType):
        return column.cast(ntz), ntz
    if isinstance(dtype, TimestampNTZType) and time_like(attribute) and not isinstance(attribute, TimestampNTZType):
        return column.cast(TimestampType()), TimestampType()
    return column, dtype


def numeric_value(column: Expr, dtype: DataType, name: str) -> tuple[Expr, int]:
    """``(x, factor)``: ``column`` as a number and the factor from clause units to x's units.

    Timestamps and dates become epoch microseconds (:func:`epoch_micros`; factor 10**6, exact
    on longs), integral columns longs, other numbers doubles.

    >>> numeric_value(Sql.column("d"), DateType(), "d")
    (Sql(text='unix_micros(CAST(`d` AS TIMESTAMP))'), 1000000)
    >>> from pyspark.sql.types import ShortType, StringType
    >>> numeric_value(Sql.column("n"), ShortType(), "n"), numeric_value(Sql.column("p"), DecimalType(10, 2), "p")
    ((Sql(text='CAST(`n` AS BIGINT)'), 1), (Sql(text='CAST(`p` AS DOUBLE)'), 1))
    >>> numeric_value(Sql.column("s"), StringType(), "s")
    Traceback (most recent call last):
    wid.errors.WidError: window attribute 's' must be numeric or a timestamp, not string
    """
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return epoch_micros(column, dtype), MICROS_PER_SECOND
    if isinstance(dtype, IntegralType):
        return column.cast("long"), 1
    if isinstance(dtype, NumericType):
        return column.cast("double"), 1
    raise WidError(f"window attribute {name!r} must be numeric or a timestamp, not {dtype.simpleString()}")


def exact_value(column: Expr, dtype: DataType, name: str) -> tuple[Expr, int]:
    """:func:`numeric_value`, but a decimal stays a decimal (no double between it and its ids).

    >>> exact_value(Sql.column("p"), DecimalType(10, 2), "p"), exact_value(Sql.column("q"), FloatType(), "q")
    ((Sql(text='`p`'), 1), (Sql(text='CAST(`q` AS DOUBLE)'), 1))
    """
    return (column, 1) if isinstance(dtype, DecimalType) else numeric_value(column, dtype, name)


def bound_value(v: Expr, dtype: DataType, places: int = 0) -> Expr:
    """An extent bound in x units in the attribute's terms: a timestamp for timestamps and dates
    (a bound need not be a whole day), a double for doubles, for a decimal(p, s) a decimal with
    room for the clause numbers' ``places`` (``RANGE 3.05`` over a decimal(20, 0) has bounds
    like -3.05: decimal(23, 2)), the number itself (long, or double for a fractional range or
    slide) for integral ones.

    >>> bound_value(Sql.column("b"), DecimalType(20, 0), places=2)
    Sql(text='CAST(`b` AS DECIMAL(23,2))')
    >>> bound_value(Sql.column("b"), DateType())
    Sql(text='CAST(timestamp_micros(`b`) AS TIMESTAMP)')
    """
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return rattr_value(v, TimestampType() if isinstance(dtype, DateType) else dtype)
    if isinstance(dtype, DecimalType):
        scale = min(max(dtype.scale, places), 38)
        return v.cast(DecimalType(min(dtype.precision - dtype.scale + scale + 1, 38), scale))
    return v if isinstance(dtype, IntegralType) else v.cast(dtype)


def decimal_bound(n: Expr, places: int, dtype: DecimalType) -> Expr:
    """An extent bound ``n`` counted in units of ``10**-places`` (an integral Column or SQL text)
    as the decimal :func:`bound_value` gives, exactly: through its digits, since Spark's decimal
    arithmetic keeps as few as 6 places once a product or sum needs more than 38 digits.

    >>> bound = decimal_bound(F.col("id"), 18, DecimalType(38, 18))
    >>> ids = spark.createDataFrame([(-66666666666666667,), (10**18 + 5,)], "id long")
    >>> ids.select(bound.alias("b")).collect()
    [Row(b=Decimal('-0.066666666666666667')), Row(b=Decimal('1.000000000000000005'))]
    >>> ids.select(decimal_bound(F.col("id"), 2, DecimalType(20, 2)).alias("b")).first()
    Row(b=Decimal('-666666666666666.67'))
    """
    if not places:
        return bound_value(n, dtype)
    plain = call("abs", n).cast("string")  # lpad cuts a longer string: pad only to the places + 1 digits
    digits = call("lpad", plain, call("greatest", call("length", plain), constant(places + 1, n)), constant("0", n))
    whole = call("substr", digits, constant(1, n), call("length", digits) - places)
    fraction = call("substr", digits, call("length", digits) - (places - 1))
    sign = when(n < 0, constant("-", n), constant("", n))
    return bound_value(call("concat", sign, whole, constant(".", n), fraction), dtype, places)


def position(partition: Sequence[str], order: Sequence[str], name: str, named: Named = column) -> Expr:
    """The 0-based ``row_number()`` over ``partition`` ordered by the columns ``order`` (the key
    ``named(order[-1])`` last), failing the query when the key equals its predecessor's (``lag``,
    on the sort already made): an order with ties (a duplicate ``row_num``) would give positions
    that differ from run to run. A Column, or SQL text with ``named = Sql.column``.

    >>> readings = spark.table("readings")
    >>> sorted(readings.select("k", "ts", position(["k"], ["ts"], "ts").alias("pos")).collect())
    [Row(k='a', ts=1.0, pos=0), Row(k='a', ts=4.0, pos=1), Row(k='a', ts=9.0, pos=2), Row(k='b', ts=2.5, pos=0)]
    >>> readings.select(position([], ["k"], "k")).collect()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pyspark...: [USER_RAISED_EXCEPTION] wid: duplicate k=a: arrival order needs a unique k ...
    """
    key = named(order[-1])
    message = call("concat", constant(f"wid: duplicate {name}=", key), key.cast("string"),
                   constant(f": arrival order needs a unique {name}", key))
    number = over(call("row_number", like=key), partition, order)
    return when(equal(over(call("lag", key), partition, order), key), call("raise_error", message),
                (number - 1).cast("long"))


def id_units(column: Expr, dtype: DataType, spec: WindowSpec, places: int = 0,
             by: Sequence[str] = ("row_num",)) -> tuple[Expr, int]:
    """``(x, factor)``: ``x`` in the units of exact id arithmetic, checked (:func:`wid.bucket.checks.checked`
    against ``spec.scaled(factor).limit``, and ``2**62`` for numbers held in longs; a failing
    tuple named by its columns ``by``), and ``factor`` = id units per clause unit; a kind's own
    ``x`` (:meth:`WindowSpec.own_x`, e.g. calendar periods) with factor 1.

    Timestamps are epoch microseconds, longs and decimals as they are; a double, when the
    spec's ids depend only on window boundaries (``spec.floors``), is the long
    ``floor(x * 10**p)``, ``p`` the clause numbers' decimal places (at least ``places``, for a
    number such as a slack amount that must be whole in those units too): every boundary ``b``
    is a multiple of ``10**-p``, so ``x >= b <=> floor(x * 10**p) >= b * 10**p``.

    >>> from wid.windows.context_free import Sliding
    >>> x, factor = id_units(Sql.column("ts"), DoubleType(), Sliding(Decimal("0.5"), Decimal("0.25"), "ts"))
    >>> factor  # boundaries are multiples of 0.01: x becomes floor(x * 100), exactly (0.35 is 0.34999... as a double)
    100
    >>> xs = spark.createDataFrame([(0, 0.35), (1, -1.0)], "row_num long, ts double")
    >>> sorted(xs.select("ts", F.expr(str(x)).alias("x")).collect())
    [Row(ts=-1.0, x=-100), Row(ts=0.35, x=34)]
    """
    name = spec.wattr
    own = spec.own_x(column, dtype)  # the kind's own x (calendar periods): no factor, no limit to check
    if own is not None:
        return checked(own, dtype, name, None, by), 1
    x, factor = exact_value(column, dtype, name)
    if isinstance(dtype, (FloatType, DoubleType)):
        floors = spec.floors and not spec.positional
        factor = 10**max(spec.places, places) if floors else 1
        limit = min(spec.limit, Decimal(LIMIT) / factor)
        x = checked(x.cast("double"), dtype, name, limit, by)
        return (floor_scaled(x, factor) if floors else x), factor
    limit = spec.scaled(factor).limit  # long x: also its extent bounds within a long (|x| <= 2**62)
    return checked(x, dtype, name, limit if isinstance(dtype, DecimalType) else min(limit, LIMIT), by), factor
