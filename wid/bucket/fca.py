"""FCA Bucket: each tuple's maximal id range ``wid_lo = x <= w < x + r`` and
``wid_window``, whether its ``x`` is a window-id: every tuple (slide-by-tuple); every n-th
in arrival order (FCB); every n-th in ``(x, row_num)`` order (FCU).

Membership ``w - r < x <= w`` is decided exactly on the stored values (never through a
rounded ``x + r - r``): the upper side ``w < x + r`` (:func:`before_end`) is exact for longs
(``w < x + ceil(r)``), decimals (an exact decimal sum) and doubles with ``r`` a double
(Knuth's TwoSum: ``x + r = s + e`` exactly, and ``w < x + r <=> w < s or (w = s and e > 0)``).

Positions are parallel: the order is cut into ``spark.sql.shuffle.partitions`` equal
slices of its leading column, each slice numbers its rows on its own and adds the count of
the slices before it (a prefix sum over one row per slice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, DoubleType, FloatType

from wid.bucket.columns import WID_HI, WID_IN, WID_LO, WID_WINDOW, WID_X, attribute_type, id_units, position, unranged
from wid.bucket.checks import naming
from wid.errors import WidError
from wid.windows.numbers import Number
from wid.windows.sqlexpr import Expr, Sql, call, column
from wid.windows.aware import SlideByTuple

#: A chunk of the x axis (windows ``c*width <= w < (c+1)*width``) and its index among the
#: tuple's chunks (0: the chunk holding ``x``).
CHUNK, HOME = "_wid_chunk", "_wid_home"
_SLICE, _BEFORE = "_wid_slice", "_wid_before"


def ids(df: DataFrame, spec: SlideByTuple) -> tuple[Column, DataType, SlideByTuple]:
    """``(x, rattr type, spec in x's units)`` (:func:`rattr_units`).

    >>> t = spark.sql("SELECT 0L AS row_num, TIMESTAMP'2026-11-25 10:00:00.25' AS t")
    >>> x, dtype, scaled = ids(t, SlideByTuple(0.5, "t"))
    >>> dtype, scaled.range, t.select(x).first()[0]  # epoch microseconds; RANGE 0.5 s is 500000 of them
    (TimestampType(), 500000, 1795600800250000)
    """
    dtype = attribute_type(df, spec.rattr)
    x, scaled = rattr_units(column(spec.rattr), dtype, spec, naming(df))
    return x, dtype, scaled


def units(df: DataFrame, spec: SlideByTuple) -> tuple[Number, DataType]:
    """``(r, rattr type)``: the RANGE in the units of the tagged ``wid_x`` (:func:`ids`), and the
    type the window-ids are read back in (no Column built: SQL text is free of JVM calls).

    >>> units(spark.table("readings"), SlideByTuple(2.5, "v"))
    (Decimal('2.5'), LongType())
    >>> units(spark.sql("SELECT DATE'2026-11-25' AS day"), SlideByTuple(1.5, "day"))
    (1500000, DateType())
    """
    dtype = attribute_type(df, spec.rattr)
    return rattr_units(Sql.column(spec.rattr), dtype, spec)[1].range, dtype


def rattr_units(column: Expr, dtype: DataType, spec: SlideByTuple,
                by: Sequence[str] = ("row_num",)) -> tuple[Expr, SlideByTuple]:
    """``(x, spec in x's units)``: x checked (NULL/NaN/too large fail the query, naming the tuple
    by its columns ``by``); a double ``x`` needs a RANGE that is a double exactly (a binary fraction).

    >>> rattr_units(Sql.column("x"), DoubleType(), SlideByTuple(0.375, "x"))[1].range
    Decimal('0.375')
    >>> rattr_units(Sql.column("x"), DoubleType(), SlideByTuple(0.1, "x"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: RANGE 0.1 is not a binary fraction, so membership w - r < x <= w on the double 'x' cannot ...
    """
    x, factor = id_units(column, dtype, spec, by=by)
    scaled = spec.scaled(factor)
    if isinstance(dtype, (FloatType, DoubleType)) and Decimal(float(scaled.range)) != scaled.range:
        raise WidError(f"RANGE {spec.range} is not a binary fraction, so membership w - r < {spec.rattr} <= w "
                       f"on the double {spec.rattr!r} cannot be decided exactly: CAST {spec.rattr} to a decimal "
                       "or give a RANGE such as 0.125")
    if isinstance(dtype, DecimalType) and dtype.precision == 38:  # room for the carry of x + r
        x = x.cast(DecimalType(37, dtype.scale))
    return x, scaled


def end(x: Expr, r: Number, dtype: DataType) -> Expr:
    """The end of a tuple's ids: exactly ``x + ceil(r)`` (longs) or ``x + r`` (decimals), the
    rounded ``fl(x + r)`` for doubles (:func:`before_end` decides at it).

    >>> from pyspark.sql.types import LongType
    >>> end(Sql.column("x"), Decimal("2.5"), LongType()), end(Sql.column("x"), Decimal("2.5"), DecimalType(10, 2))
    (Sql(text='(`x` + 3)'), Sql(text="(`x` + CAST('2.5' AS DECIMAL(2, 1)))"))
    >>> end(Sql.column("x"), Decimal("2.5"), DoubleType())
    Sql(text="(`x` + CAST('2.5' AS DOUBLE))")
    """
    if isinstance(dtype, (FloatType, DoubleType)):
        return x + float(r)
    return x + (math.ceil(r) if _integral(dtype) else r)


def before_end(w: Sql, x: Sql, r: Number, dtype: DataType) -> str:
    """``w < x + r`` exactly (module docstring), as SQL text.

    >>> inside = before_end(Sql.column("w"), Sql.column("x"), Decimal("0.5"), DoubleType())
    >>> rows = spark.createDataFrame([(2.0**53, 2.0**53), (2.0**53 + 2, 2.0**53)], "w double, x double")
    >>> sorted(rows.select("w", F.expr(str(inside)).alias("inside")).collect())  # fl(x + 0.5) = x, yet w = x < x + 0.5
    [Row(w=9007199254740992.0, inside=True), Row(w=9007199254740994.0, inside=False)]
    """
    if not isinstance(dtype, (FloatType, DoubleType)):
        return f"{w} < {end(x, r, dtype)}"
    s = x + float(r)
    back = s - x
    error = (x - (s - back)) + (float(r) - back)  # TwoSum: x + r = s + error exactly
    return f"({w} < {s} OR ({w} = {s} AND {error} > 0))"


def _integral(dtype: DataType) -> bool:
    return not isinstance(dtype, (FloatType, DoubleType, DecimalType))


def bucket(df: DataFrame, spec: SlideByTuple) -> DataFrame:
    """``df`` plus ``wid_x``, the id range ``wid_lo = x``, ``wid_hi`` = :func:`end` and ``wid_window``.

    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2.5, "ts"))
    >>> tagged.select("row_num", WID_LO, WID_HI, WID_WINDOW).orderBy("row_num").show()
    +-------+------+------+----------+
    |row_num|wid_lo|wid_hi|wid_window|
    +-------+------+------+----------+
    |      0|   1.0|   3.5|      true|
    |      1|   4.0|   6.5|      true|
    |      2|   2.5|   5.0|      true|
    |      3|   9.0|  11.5|      true|
    +-------+------+------+----------+
    <BLANKLINE>
    """
    x, dtype, scaled = ids(df, spec)
    tagged = df.withColumn(WID_X, x)
    tagged = tagged.withColumn(WID_LO, column(WID_X)).withColumn(WID_HI, end(column(WID_X), scaled.range, dtype))
    if spec.every == 1:
        return tagged.withColumn(WID_WINDOW, F.lit(True))
    attribute_type(df, "row_num")
    order = [WID_X, "row_num"] if spec.ranked else ["row_num"]
    return positioned(tagged, order, "_wid_pos").withColumn(
        WID_WINDOW, column("_wid_pos") % F.lit(spec.every) == spec.every - 1).drop("_wid_pos")


def live_bucket(df: DataFrame, spec: SlideByTuple) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): ``wid_x`` only (checked: a NULL or NaN
    attribute fails the query); which tuples define windows, and each window's members, come in
    the stateful step (:mod:`wid.stream.live.fca`) as tuples arrive.

    >>> t = spark.sql("SELECT 7L AS row_num, TIMESTAMP'1970-01-01 00:00:02.5' AS t")
    >>> live_bucket(t, SlideByTuple(1, "t")).select("wid_x", "wid_lo", "wid_hi").first()
    Row(wid_x=2500000, wid_lo=None, wid_hi=None)
    """
    return unranged(df, {WID_X: ids(df, spec)[0]})


def bucket_sql(source: str, df: DataFrame, spec: SlideByTuple) -> str:
    """:func:`bucket` as a Spark SQL query over ``source`` (SQL text of a relation with ``df``'s
    columns); FCB/FCU positions come from one ``row_number()`` over the whole stream.

    >>> from wid.windows.aware import SlideByRank
    >>> sql = bucket_sql("readings", spark.table("readings"), SlideByRank(2.5, "ts", every=2))  # ts order: 0, 2, 1, 3
    >>> spark.sql(sql).select("row_num", WID_LO, WID_HI, WID_WINDOW).orderBy("row_num").show()
    +-------+------+------+----------+
    |row_num|wid_lo|wid_hi|wid_window|
    +-------+------+------+----------+
    |      0|   1.0|   3.5|     false|
    |      1|   4.0|   6.5|     false|
    |      2|   2.5|   5.0|      true|
    |      3|   9.0|  11.5|      true|
    +-------+------+------+----------+
    <BLANKLINE>
    """
    dtype = attribute_type(df, spec.rattr)
    x, scaled = rattr_units(Sql.column(spec.rattr), dtype, spec, naming(df))
    tagged = (f"(SELECT *, {WID_X} AS {WID_LO}, {end(Sql.column(WID_X), scaled.range, dtype)} AS {WID_HI} "
              f"FROM (SELECT *, {x} AS {WID_X} FROM {source}))")
    if spec.every == 1:
        return f"SELECT *, true AS {WID_WINDOW} FROM {tagged}"
    attribute_type(df, "row_num")
    order = f"{WID_X}, `row_num`" if spec.ranked else "`row_num`"
    return (f"SELECT *, (row_number() OVER (ORDER BY {order}) - 1) % {spec.every} = {spec.every - 1} "
            f"AS {WID_WINDOW} FROM {tagged}")


def positioned(df: DataFrame, order: list[str], out: str, name: str | None = None) -> DataFrame:
    """``df`` plus ``out``, the 0-based position of each row in ``order``: slice ``k`` of the
    leading column's range numbers its rows, plus the rows of slices ``< k``. A tie in
    ``order`` fails the query naming the last column (as ``name``, by default its own). The
    range is read now (one job), so a failing check on the column is a plain Spark error.

    >>> pos = positioned(spark.table("readings"), ["ts", "row_num"], "pos")  # 4 slices of ts in [1, 9]
    >>> sorted(pos.select("row_num", "pos").collect())
    [Row(row_num=0, pos=0), Row(row_num=1, pos=2), Row(row_num=2, pos=1), Row(row_num=3, pos=3)]
    """
    slices = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    lead = column(order[0]).cast("double")
    low, high = df.agg(F.min(lead), F.max(lead)).first()  # a job of its own: checks on x fail here, plainly
    width = (high - low) / slices if low is not None else 0
    piece = F.least(F.floor((lead - F.lit(low)) / F.lit(width)), F.lit(slices - 1)) if width > 0 else F.lit(0)
    cut = df.withColumn(_SLICE, piece.cast("int"))
    before = cut.groupBy(_SLICE).count().select(_SLICE, F.coalesce(F.sum("count").over(
        Window.orderBy(_SLICE).rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)).alias(_BEFORE))
    within = position([_SLICE], order, name or order[-1])
    return (cut.join(F.broadcast(before), _SLICE).withColumn(out, (column(_BEFORE) + within).cast("long"))
            .drop(_SLICE, _BEFORE))


def chunk_of(x: Expr, width: Number) -> Expr:
    """The chunk ``floor(x / width)`` of a value, as a long: monotone in ``x`` (rounding or not),
    the same expression for windows and tuples, so a tuple's chunks hold all its windows.

    >>> chunk_of(Sql.column("x"), 4)
    Sql(text='CAST(floor((`x` / 4)) AS BIGINT)')
    >>> xs = spark.createDataFrame([(-0.5,), (7.99,), (8.0,)], "x double")
    >>> sorted(xs.select("x", chunk_of(column("x"), 4).alias("chunk")).collect())
    [Row(x=-0.5, chunk=-1), Row(x=7.99, chunk=1), Row(x=8.0, chunk=2)]
    """
    return call("floor", x / width).cast("long")


def chunked(tagged: DataFrame, width: Number) -> DataFrame:
    """Each tuple once per chunk ``c`` (windows ``c*width <= w < (c+1)*width``) its range
    ``[x, wid_hi)`` meets (and the chunk of ``wid_hi``: a superset); ``_wid_home`` numbers
    them from 0, the chunk holding ``x`` itself.

    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2.5, "ts"))
    >>> chunked(tagged, 4).select("row_num", WID_X, WID_HI, HOME, CHUNK).orderBy("row_num", HOME).show()
    +-------+-----+------+---------+----------+
    |row_num|wid_x|wid_hi|_wid_home|_wid_chunk|
    +-------+-----+------+---------+----------+
    |      0|  1.0|   3.5|        0|         0|
    |      1|  4.0|   6.5|        0|         1|
    |      2|  2.5|   5.0|        0|         0|
    |      2|  2.5|   5.0|        1|         1|
    |      3|  9.0|  11.5|        0|         2|
    +-------+-----+------+---------+----------+
    <BLANKLINE>
    """
    first = chunk_of(column(WID_X), width)
    last = chunk_of(column(WID_HI), width)
    return tagged.select("*", F.posexplode(F.sequence(first, last)).alias(HOME, CHUNK))


def contributes(tagged: DataFrame) -> Column:
    """``wid_in`` (NULL: false), or true when the query has no WHERE.

    >>> marked = spark.createDataFrame([(0, True), (1, None), (2, False)], "row_num long, wid_in boolean")
    >>> sorted(marked.select("row_num", contributes(marked).alias("counts")).collect())
    [Row(row_num=0, counts=True), Row(row_num=1, counts=False), Row(row_num=2, counts=False)]
    >>> contributes(spark.table("readings"))
    Column<'true'>
    """
    return F.coalesce(column(WID_IN), F.lit(False)) if WID_IN in tagged.columns else F.lit(True)
