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
``g`` fails the query naming the tuple (:mod:`wid.bucket.gaps`). In ``x`` order per key a
tuple opens a session when it is the first or ``a >`` the largest end of the tuples before it
(ROWS frame: of equal values only the first can open one); the session ends at its largest
``a + g``.

Each tuple also carries its session's ``session_start`` (first ``a``) and ``session_end``
(last ``a + g``), in the attribute's type (``session_end`` a timestamp for dates). The steps are one
definition, built as Columns for :func:`wid.query` or as SQL text for :func:`wid.to_sql`
(:func:`session_bucket_sql`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import Column, DataFrame
from pyspark.sql.types import DataType, DateType, DecimalType, IntegralType, TimestampNTZType, TimestampType

from wid.bucket.columns import (MICROS_PER_SECOND, WID_HI, WID_LO, WID_X, Named, attribute_type, epoch_micros,
                                numeric_value, rattr_value, time_like, unranged)
from wid.bucket.checks import checked, naming
from wid.bucket.gaps import end_x, exact_x, gap_type
from wid.bucket.steps import Add, Stage, Step, staged
from wid.errors import WidError
from wid.windows.aware import Session
from wid.windows.numbers import exact
from wid.windows.sqlexpr import Expr, Sql, call, column, constant, over

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


def live_bucket(df: DataFrame, spec: Session) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): ``wid_x`` only (checked: a NULL or
    NaN attribute fails the query), ``wid_lo``/``wid_hi`` NULL; sessions form in live mode's
    stateful step as tuples arrive (:mod:`wid.stream.live.sessions.steps`; a gap expression is
    checked here, before the stream runs, and evaluated there on the tuples WHERE keeps:
    :func:`wid.bucket.gaps.end_x`).

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
    :func:`wid.bucket.gaps.exact_x` (``first``, ``last``), in the types :func:`session_bucket` gives them; with a
    gap expression, the end is ``reach``, the largest :func:`wid.bucket.gaps.end_x` of its tuples.

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
