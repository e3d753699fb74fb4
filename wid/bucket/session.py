"""Bucket for session windows: one id per key and session, from window functions only.

Per key, in ``a`` order (no arrival order: equal values share a session), a tuple opens a
new session when it is the key's first or ``a > previous a + g`` (a tuple at exactly
``previous a + g`` joins: sessions that touch merge, as Spark's ``session_window`` and Flink's
merging windows); the running sum of those flags - 1 is its session id, so ``wid_lo = wid_hi =
id``. The comparison is exact on the stored values:

- timestamps and dates: epoch microseconds (longs), ``g`` a whole number of microseconds;
- integral columns: ``a - prev > floor(g)`` on longs; decimals: decimal arithmetic with ``g``
  as written;
- doubles: ``g`` as the nearest double ``g_d``; ``a - prev = s + e`` exactly (TwoSum), and
  ``s + e > g_d`` iff ``s > g_d`` or (``s = g_d`` and ``e > 0``).

With a gap expression (:attr:`Session.dynamic`, Spark's dynamic gap) each tuple has its own
end ``a + g`` (``g`` evaluated on it, in ``x`` units: whole microseconds for timestamps, exact
integers and decimals; a double gap or attribute is refused), checked: a NULL or non-positive
``g`` fails the query naming the tuple. In ``x`` order per key a tuple opens a session when it
is the first or ``a >`` the largest end of the tuples before it (ROWS frame: of equal values
only the first can open one); the session ends at its largest ``a + g``.

Each tuple also carries its session's ``session_start`` (first ``a``) and ``session_end``
(last ``a + g``), in the attribute's type (``session_end`` a timestamp for dates). The steps are one
definition, built as Columns for :func:`wid.query` or as SQL text for :func:`wid.to_sql`
(:func:`session_bucket_sql`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import (DataType, DateType, DecimalType, DoubleType, FloatType, IntegralType, TimestampNTZType,
                               TimestampType)

from wid.bucket.columns import (MICROS_PER_SECOND, WID_HI, WID_LO, WID_X, Named, attribute_type, epoch_micros,
    numeric_value, rattr_value, time_like, unranged)
from wid.bucket.checks import checked, described, naming
from wid.bucket.steps import Add, Stage, Step, staged
from wid.errors import WidError, quiet_analysis
from wid.windows.aware import Session
from wid.windows.numbers import LIMIT, Number, exact
from wid.windows.sqlexpr import Expr, Sql, call, column, constant, expression, over, when

SESSION_START, SESSION_END = Session.extent_columns
_NEW, _END = "_wid_new", "_wid_end"

Compare = Callable[[Expr, Expr], Expr]


def _instants(dtype: DataType) -> DataType:
    """The type of session ends on a date or timestamp attribute of type ``dtype`` (a date's: a timestamp)."""
    return TimestampNTZType() if isinstance(dtype, TimestampNTZType) else TimestampType()


def _arithmetic(dtype: DataType, spec: Session) -> tuple[Compare, Callable[[Expr], Expr]]:
    """``(a > prev + g, last -> last + g)`` for the attribute's type, exactly (module docstring),
    as Columns or SQL text (the kind of the arguments)."""
    gap = exact(spec.gap)
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        micros = gap * MICROS_PER_SECOND
        if micros.denominator != 1:
            raise WidError(f"SESSION gap on timestamp {spec.wattr!r} must be a whole number of microseconds, "
                           f"got {spec.gap!r} s")
        spec.fits(micros=int(micros))
        kind = _instants(dtype)

        def x(c: Expr) -> Expr:
            return epoch_micros(c, dtype)

        return ((lambda a, prev: x(a) - x(prev) > constant(int(micros), a)),
                lambda last: rattr_value(x(last) + constant(int(micros), last), kind))
    if isinstance(dtype, IntegralType):
        steps = math.floor(gap)
        return ((lambda a, prev: a.cast("long") - prev.cast("long") > constant(steps, a)),
                lambda last: last + constant(spec.gap, last))
    if isinstance(dtype, DecimalType):
        d = Decimal(repr(spec.gap)) if isinstance(spec.gap, float) else Decimal(spec.gap)
        return (lambda a, prev: a - prev > constant(d, a)), lambda last: last + constant(d, last)
    g = float(gap)

    def opens(a: Expr, prev: Expr) -> Expr:
        a, prev = a.cast("double"), prev.cast("double")
        s = a - prev
        bb = s - a
        e = (a - (s - bb)) + (-prev - bb)  # TwoSum: a - prev = s + e exactly
        return (s > constant(g, s)) | ((s >= constant(g, s)) & (e > constant(0, e)))

    return opens, lambda last: last.cast("double") + constant(g, last)


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
    """The gap ``g`` (an expression of type ``gtype``) in ``x`` units (module docstring), failing
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
    """A tuple's gap expression in ``x`` units, checked (module docstring): a Column, or SQL text.

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

    >>> tuples = live_bucket(spark.table("readings").selectExpr("*", "CAST(ts AS TIMESTAMP) AS t"), Session("v", "t"))
    >>> tuples.select("row_num", end_x(tuples, Session("v", "t")).alias("end")).orderBy("row_num").first()
    Row(row_num=0, end=6000000)
    """
    return named(exact_x(spec, attribute_type(df, spec.wattr))) + gap_x(df, spec, named)


def _ends(df: DataFrame, spec: Session, named: Named) -> list[Step]:
    """The steps of :func:`session_bucket` for a gap expression (module docstring)."""
    dtype = attribute_type(df, spec.wattr)
    x, _ = numeric_value(named(spec.wattr), dtype, spec.wattr)
    value = exact_x(spec, dtype)
    end = end_x(df, spec, named)
    reach = over(call("max", named(_END)), spec.keys, [value], before=True)
    new = (call("isnull", reach) | (named(value) > reach)).cast("int")
    sid = (over(call("sum", named(_NEW)), spec.keys, [value]) - 1).cast("long")
    return [Add([(WID_X, checked(x, dtype, spec.wattr, by=naming(df)))]), Add([(_END, end)]), Add([(_NEW, new)]),
            Add([(WID_LO, sid)]), Add([(WID_HI, named(WID_LO)), *_extents(dtype, spec, named)])]


def _steps(df: DataFrame, spec: Session, named: Named) -> list[Step]:
    """The steps of :func:`session_bucket`, as Columns or SQL text (``named``)."""
    dtype = attribute_type(df, spec.wattr)
    for name in spec.keys:
        attribute_type(df, name)
    if spec.dynamic:
        return _ends(df, spec, named)
    a = named(spec.wattr)
    x, _ = numeric_value(a, dtype, spec.wattr)
    opens, _ = _arithmetic(dtype, spec)
    previous = over(call("lag", a), spec.keys, [WID_X])
    new = (call("isnull", previous) | opens(a, previous)).cast("int")
    # the default frame takes a tuple's peers (equal x, one session) whichever order they sort in
    sid = (over(call("sum", named(_NEW)), spec.keys, [WID_X]) - 1).cast("long")
    return [Add([(WID_X, checked(x, dtype, spec.wattr, by=naming(df)))]), Add([(_NEW, new)]),
            Add([(WID_LO, sid)]), Add([(WID_HI, named(WID_LO)), *_extents(dtype, spec, named)])]


def _extents(dtype: DataType, spec: Session, named: Named, ends: Expr | None = None) -> Stage:
    """``session_start`` and ``session_end`` over each session; with a gap expression, the end is
    the largest of the tuples' ends (``ends``, in ``x`` units; default: the column ``_wid_end``)."""
    a = named(spec.wattr)
    session = (*spec.keys, WID_LO)
    if spec.dynamic:
        last = over(call("max", named(_END) if ends is None else ends), session)
        kind = _instants(dtype)
        return [(SESSION_START, over(call("min", a), session)),
                (SESSION_END, rattr_value(last, kind) if time_like(dtype) else last)]
    _, end = _arithmetic(dtype, spec)
    return [(SESSION_START, over(call("min", a), session)), (SESSION_END, end(over(call("max", a), session)))]


def session_bucket(df: DataFrame, spec: Session) -> DataFrame:
    """``df`` plus ``wid_x``, ``wid_lo = wid_hi`` = the tuple's session id within its key (``spec.keys``),
    ``session_start`` and ``session_end``.

    >>> tagged = session_bucket(spark.table("readings"), Session(3, "ts"))
    >>> tagged.select("row_num", "ts", WID_LO, SESSION_START, SESSION_END).orderBy("ts").show()
    +-------+---+------+-------------+-----------+
    |row_num| ts|wid_lo|session_start|session_end|
    +-------+---+------+-------------+-----------+
    |      0|1.0|     0|          1.0|        7.0|
    |      2|2.5|     0|          1.0|        7.0|
    |      1|4.0|     0|          1.0|        7.0|
    |      3|9.0|     1|          9.0|       12.0|
    +-------+---+------+-------------+-----------+
    <BLANKLINE>
    """
    return staged(df, _steps(df, spec, column)).drop(_NEW, _END)


def session_bucket_sql(source: str, df: DataFrame, spec: Session) -> str:
    """:func:`session_bucket` as a Spark SQL query over ``source`` (SQL text of a relation with
    ``df``'s columns): the same steps, rendered as SQL (``_wid_new`` stays).

    >>> sql = session_bucket_sql("readings", spark.table("readings"), Session(3, "ts", keys=("k",)))  # 4.0 = 1.0 + 3
    >>> spark.sql(sql).select("k", "ts", WID_LO, SESSION_START, SESSION_END).orderBy("k", "ts").show()
    +---+---+------+-------------+-----------+
    |  k| ts|wid_lo|session_start|session_end|
    +---+---+------+-------------+-----------+
    |  a|1.0|     0|          1.0|        7.0|
    |  a|4.0|     0|          1.0|        7.0|
    |  a|9.0|     1|          9.0|       12.0|
    |  b|2.5|     0|          2.5|        5.5|
    +---+---+------+-------------+-----------+
    <BLANKLINE>
    """
    return f"SELECT * FROM {staged(source, _steps(df, spec, Sql.column))}"


def with_extents(tagged: DataFrame, spec: Session) -> DataFrame:
    """``tagged`` (session ids in ``wid_lo``) plus each session's ``session_start`` (first ``a``)
    and ``session_end`` (last ``a + g``).

    >>> rows = [("a", 0, Decimal("1.00")), ("a", 0, Decimal("2.50")), ("b", 0, Decimal("-0.75"))]
    >>> tagged = spark.createDataFrame(rows, "k string, wid_lo long, ts decimal(5, 2)")
    >>> with_extents(tagged, Session(0.05, "ts", keys=("k",))).orderBy("k", "ts").show()
    +---+------+-----+-------------+-----------+
    |  k|wid_lo|   ts|session_start|session_end|
    +---+------+-----+-------------+-----------+
    |  a|     0| 1.00|         1.00|       2.55|
    |  a|     0| 2.50|         1.00|       2.55|
    |  b|     0|-0.75|        -0.75|      -0.70|
    +---+------+-----+-------------+-----------+
    <BLANKLINE>
    """
    ends = end_x(tagged, spec) if spec.dynamic else None
    return staged(tagged, [Add(_extents(attribute_type(tagged, spec.wattr), spec, column, ends))])


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


def live_bucket(df: DataFrame, spec: Session) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): ``wid_x`` only (checked: a NULL or
    NaN attribute fails the query), ``wid_lo``/``wid_hi`` NULL; sessions form in live mode's
    stateful step as tuples arrive (:mod:`wid.stream.live.sessions.steps`; a gap expression is
    checked here, before the stream runs, and evaluated there on the tuples WHERE keeps:
    :func:`end_x`).

    >>> days = spark.sql("SELECT 0L AS row_num, DATE'1970-01-02' AS day")
    >>> live_bucket(days, Session(3600, "day")).select(WID_X, WID_LO, WID_HI).first()
    Row(wid_x=86400000000, wid_lo=None, wid_hi=None)
    >>> live_bucket(days, Session("row_num * 0.5e0", "day")).columns
    Traceback (most recent call last):
    wid.errors.WidError: SESSION gap row_num * 0.5e0 is a double, not an integer or decimal (CAST it AS DECIMAL(p, s) for exact session ends)
    """
    if spec.dynamic:
        gap_type(df, spec)
    dtype = attribute_type(df, spec.wattr)
    for name in spec.keys:
        attribute_type(df, name)
    x, _ = numeric_value(column(spec.wattr), dtype, spec.wattr)
    return unranged(df, {WID_X: checked(x, dtype, spec.wattr, by=naming(df))})


def extents_of(first: Column, last: Column, dtype: DataType, spec: Session,
               reach: Column | None = None) -> dict[str, Column]:
    """``session_start`` and ``session_end`` of a session from its least and largest
    :func:`exact_x` (``first``, ``last``), in the types :func:`session_bucket` gives them; with a
    gap expression, the end is ``reach``, the largest :func:`end_x` of its tuples.

    >>> from pyspark.sql import functions as F
    >>> extents = extents_of(F.lit(1_000_000), F.lit(2_500_000), TimestampNTZType(), Session(1.5, "t"))
    >>> spark.range(1).select(*[c.alias(name) for name, c in extents.items()]).first()
    Row(session_start=datetime.datetime(1970, 1, 1, 0, 0, 1), session_end=datetime.datetime(1970, 1, 1, 0, 0, 4))
    >>> extents = extents_of(F.lit(1_000_000), F.lit(2_500_000), TimestampNTZType(), Session("v", "t"), F.lit(9_000_000))
    >>> spark.range(1).select(extents[SESSION_END]).first()[0]
    datetime.datetime(1970, 1, 1, 0, 0, 9)
    """
    start = rattr_value(first, dtype) if time_like(dtype) else first
    if spec.dynamic:
        kind = _instants(dtype)
        return {SESSION_START: start, SESSION_END: rattr_value(reach, kind) if time_like(dtype) else reach}
    _, end = _arithmetic(dtype, spec)
    return {SESSION_START: start, SESSION_END: end(rattr_value(last, dtype) if time_like(dtype) else last)}
