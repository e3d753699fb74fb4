"""A session window's gap in the units of exact ``x`` (:mod:`wid.bucket.session` states the
arithmetic): the gap expression's type, checked before any Spark job; each tuple's gap and own
end ``a + g``, checked on the tuple (a NULL, non-positive or too large gap fails the query naming
it); the column of exact ``x``; the gap and an allowed lateness as exact fractions of those units."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql.types import DataType, DecimalType, DoubleType, FloatType, IntegralType
from pyspark.sql.types import TimestampType  # noqa: F401 (the examples')

from wid.bucket.checks import described, naming
from wid.bucket.columns import MICROS_PER_SECOND, WID_X, Named, attribute_type, numeric_value, time_like
from wid.errors import WidError, quiet_analysis
from wid.windows.aware import Session
from wid.windows.numbers import LIMIT, Number, exact
from wid.windows.sqlexpr import Expr, call, column, constant, expression, when


def gap_type(df: DataFrame, spec: Session) -> DataType:
    """The type of the gap expression over ``df``, an integer or a decimal, or a :class:`WidError`
    (it does not parse or resolve, it is a double, the attribute is a double, it is not
    deterministic: Spark's analysis marks ``rand()``, ``uuid()``, ... so, and a session's tuples
    read the gap more than once, e.g. replay's state machine after Bucket).

    >>> timed = spark.table("readings").selectExpr("*", "CAST(ts AS TIMESTAMP) AS t")
    >>> gap_type(timed, Session("IF(k = 'a', 2, 0.5)", "t")), gap_type(timed, Session("v + 1", "t"))
    (DecimalType(11,1), LongType())
    >>> gap_type(timed.selectExpr("CAST(ts AS DECIMAL(38, 10)) AS d"), Session("2", "d"))
    Traceback (most recent call last):
    wid.errors.WidError: d + SESSION gap 2 is a decimal(38,9): Spark rounds it (38 digits at most), narrow the decimals for exact session ends
    >>> gap_type(spark.table("readings"), Session("v", "ts"))
    Traceback (most recent call last):
    wid.errors.WidError: a SESSION gap expression needs an integer, decimal, date or timestamp WATTR, not the double 'ts' (exact session ends: cast it in a view)
    >>> gap_type(timed, Session("CAST(rand() * 10 AS INT) + 1", "t"))
    Traceback (most recent call last):
    wid.errors.WidError: SESSION gap CAST(rand() * 10 AS INT) + 1 is not deterministic: each tuple needs one gap, the same each time it is read
    """
    dtype = attribute_type(df, spec.wattr)
    if isinstance(dtype, (DoubleType, FloatType)):
        raise WidError(f"a SESSION gap expression needs an integer, decimal, date or timestamp WATTR, not the "
                       f"double {spec.wattr!r} (exact session ends: cast it in a view)")
    g = expression(f"({spec.gap})", column(spec.wattr))
    try:
        with quiet_analysis():
            gtype = df.select(g).schema[0].dataType
            # Spark's analysis refuses a join condition that is not deterministic (also over Spark Connect)
            df.join(df.sparkSession.range(1).select(), g.isNotNull()).schema
    except AnalysisException as e:
        if e.getCondition() == "INVALID_NON_DETERMINISTIC_EXPRESSIONS":
            raise WidError(f"SESSION gap {spec.gap} is not deterministic: each tuple needs one gap, the same each "
                           f"time it is read") from None
        raise WidError(f"SESSION gap {spec.gap}: {str(e).splitlines()[0]}") from None
    if not isinstance(gtype, (IntegralType, DecimalType)):
        raise WidError(f"SESSION gap {spec.gap} is a {gtype.simpleString()}, not an integer or decimal "
                       f"(CAST it AS DECIMAL(p, s) for exact session ends)")
    if not time_like(dtype):  # Spark's decimal sum drops places beyond 38 digits: no exact a + g then
        a = column(spec.wattr).cast("long") if isinstance(dtype, IntegralType) else column(spec.wattr)
        end = df.select(a + expression(f"({spec.gap})", a)).schema[0].dataType
        if isinstance(end, DecimalType) and end.scale < max(getattr(t, "scale", 0) for t in (dtype, gtype)):
            raise WidError(f"{spec.wattr} + SESSION gap {spec.gap} is a {end.simpleString()}: Spark rounds it "
                           f"(38 digits at most), narrow the decimals for exact session ends")
    return gtype


def _gap_x(g: Expr, gtype: DataType, dtype: DataType, spec: Session, by: tuple[str, ...]) -> Expr:
    """The gap ``g`` (an expression of type ``gtype``) in ``x`` units (:mod:`wid.bucket.session`), failing
    the query on a NULL, non-positive or too large gap, or one of no whole microseconds."""
    scale = MICROS_PER_SECOND if time_like(dtype) else 1
    most = Decimal(LIMIT // 2) / scale  # exact: a power of ten divides
    units = f"microseconds of {spec.wattr!r}" if scale > 1 else f"the units of {spec.wattr!r}"

    def fail(problem: str) -> Expr:
        return call("raise_error", call("concat", constant(f"wid: SESSION gap {spec.gap} = ", g),
                                        call("coalesce", g.cast("string"), constant("NULL", g)),
                                        constant(f" {problem} in the tuple with ", g), *described(by, g)))

    scaled = (g.cast("long") if isinstance(gtype, IntegralType) else g) * scale if scale > 1 else g  # no int overflow
    value = scaled.cast("long") if scale > 1 or isinstance(gtype, IntegralType) else g
    if scale > 1 and isinstance(gtype, DecimalType):
        value = when(scaled > call("floor", scaled), fail(f"is no whole number of {units}"), value)
    value = when(g > constant(most, g), fail(f"exceeds 2**61 {units}: session ends would overflow a long"), value)
    return when(call("isnull", g) | (g <= constant(0, g)),
                fail(f"is not positive (Spark drops such tuples; WHERE {spec.gap} > 0 drops them explicitly)"), value)


def gap_x(df: DataFrame, spec: Session, named: Named = column) -> Expr:
    """A tuple's gap expression in ``x`` units, checked (:mod:`wid.bucket.session`): a Column, or SQL text.

    >>> tuples = spark.table("readings").where("k = 'a'").selectExpr("*", "CAST(ts AS TIMESTAMP) AS t")
    >>> tuples.select("ts", gap_x(tuples, Session("v * 0.5", "t")).alias("g")).orderBy("ts").first()
    Row(ts=1.0, g=2500000)
    >>> tuples.select(gap_x(tuples, Session("v - 2", "t"))).collect()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pyspark...: ... SESSION gap v - 2 = 0 is not positive (... WHERE v - 2 > 0 drops them explicitly) in the tuple with row_num=3 ...
    """
    g = expression(f"({spec.gap})", named(spec.wattr))
    return _gap_x(g, gap_type(df, spec), attribute_type(df, spec.wattr), spec, naming(df))


def end_x(df: DataFrame, spec: Session, named: Named = column) -> Expr:
    """A tuple's own end ``a + g`` in ``x`` units (:func:`exact_x`, present in ``df`` for
    timestamps), its gap checked (:func:`gap_x`): a Column, or SQL text.

    >>> tuples = spark.table("readings").selectExpr("*", "CAST(ts AS TIMESTAMP) AS t",
    ...                                             "CAST(ts * 1e6 AS BIGINT) AS wid_x")
    >>> tuples.select("row_num", end_x(tuples, Session("v", "t")).alias("end")).orderBy("row_num").first()
    Row(row_num=0, end=6000000)
    """
    return named(exact_x(spec, attribute_type(df, spec.wattr))) + gap_x(df, spec, named)


def exact_x(spec: Session, dtype: DataType) -> str:
    """The column of a tuple's exact ``x`` once bucketed: ``wid_x`` (epoch microseconds) for
    timestamps and dates, else the attribute itself (a long, decimal or double as stored).

    >>> exact_x(Session(60, "t"), TimestampType()), exact_x(Session(60, "t"), DecimalType(12, 3))
    ('wid_x', 't')
    """
    return WID_X if time_like(dtype) else spec.wattr


def gap_in_x(spec: Session, dtype: DataType) -> Fraction:
    """The gap ``g`` in the units of :func:`exact_x`, exactly: microseconds for timestamps, the
    nearest double for doubles (as the Bucket's comparison), else as written.

    >>> gap_in_x(Session(0.1, "x"), DoubleType()) == Fraction(0.1)
    True
    """
    if isinstance(dtype, (DoubleType, FloatType)):
        return Fraction(float(spec.gap))
    return exact(spec.gap) * (MICROS_PER_SECOND if time_like(dtype) else 1)


def lateness_in_x(spec: Session, dtype: DataType, lateness: Number) -> Fraction:
    """Allowed lateness ``L`` (``wattr`` units, seconds for dates and timestamps) in the units of
    :func:`exact_x`, exactly.

    >>> from pyspark.sql.types import LongType
    >>> lateness_in_x(Session(5, "ts"), TimestampType(), 1.5), lateness_in_x(Session(5, "v"), LongType(), 2)
    (Fraction(1500000, 1), Fraction(2, 1))
    """
    return exact(lateness) * numeric_value(column(spec.wattr), dtype, spec.wattr)[1]
