"""Bucket: tag each tuple, and each punctuation, with a range of window-ids.

A tuple gets ``wid_lo``/``wid_hi`` (it belongs to every window ``wid_lo <= w <=
wid_hi``) from Column expressions only; arrival positions for ``ROWS`` windows
come from ``row_number()`` over the window attribute, per partition attribute value, or,
over an unpartitioned stream, from slices of the attribute numbered in parallel
(:func:`wid.bucket.fca.positioned`). A punctuation with bound
``v`` on the window attribute becomes a punctuation on ``wid``: it closes every
window ``w <= wid_closed``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import WID_CLOSED, WID_HI, WID_LO, WID_X, attribute_type, id_units, position, unranged
from wid.bucket.checks import naming
from wid.bucket.fca import positioned
from wid.errors import WidError
from wid.windows.sqlexpr import Sql, column
from wid.windows.base import WindowSpec


def _positioned(tagged: DataFrame, spec: WindowSpec) -> DataFrame:
    """``wid_x`` replaced by the tuple's 0-based arrival position within its partition, in
    ``wattr`` order (a repeated ``wattr`` fails the query); an unpartitioned stream is never
    held in one Spark partition."""
    if not spec.partition:
        return positioned(tagged, [WID_X], WID_X, spec.wattr)
    return tagged.withColumn(WID_X, position(spec.partition, [WID_X], spec.wattr))


def bucket(df: DataFrame, spec: WindowSpec, close_open: bool = True) -> DataFrame:
    """``df`` plus ``wid_x``, ``wid_lo``, ``wid_hi``; tuples in no window (gaps of hopping
    windows) are gone. An open upper end (landmark) is closed by the final punctuation:
    the window whose extent first holds the stream's largest ``x`` (read in a job of its own;
    with ``close_open`` False, left NULL for live mode, where the stream has no end yet).

    >>> from wid.windows.context_free import Sliding
    >>> hopping = bucket(spark.table("readings"), Sliding(1, 2, "ts"))  # windows [2w + 1, 2w + 2): 2.5 and 4.0 in none
    >>> hopping.select("row_num", "ts", WID_X, WID_LO, WID_HI).orderBy("row_num").show()
    +-------+---+-----+------+------+
    |row_num| ts|wid_x|wid_lo|wid_hi|
    +-------+---+-----+------+------+
    |      0|1.0|    1|     0|     0|
    |      3|9.0|    9|     4|     4|
    +-------+---+-----+------+------+
    <BLANKLINE>
    """
    dtype = attribute_type(df, spec.wattr)
    for name in spec.partition:
        attribute_type(df, name)
    x, factor = id_units(Sql.column(spec.wattr), dtype, spec, by=naming(df))  # SQL text: one call into the JVM each
    tagged, ids = df.withColumn(WID_X, F.expr(str(x))), spec.scaled(factor)
    if spec.positional:
        tagged, ids = _positioned(tagged, spec), spec
    lo, hi = ids.wids(Sql.column(WID_X))
    if hi is None and not close_open:
        return tagged.withColumns({WID_LO: F.expr(str(lo)), WID_HI: F.lit(None).cast("long")})
    if hi is None:  # read now, in a job of its own: a failing check on x is a plain Spark error
        end = tagged.agg(F.expr(str(ids.wids(Sql(f"max({WID_X})"))[0]))).first()[0]
        return tagged.withColumn(WID_LO, F.expr(str(lo))).withColumn(WID_HI, F.lit(end).cast("long"))
    tagged = tagged.withColumns({WID_LO: F.expr(str(lo)), WID_HI: F.expr(str(hi))})
    return tagged.where(column(WID_LO) <= column(WID_HI)) if spec.gaps else tagged


def bucket_punctuations(punctuations: DataFrame, spec: WindowSpec) -> DataFrame:
    """Punctuations on the window attribute as punctuations on wid: adds ``wid_closed``,
    the largest window whose extent end ``(w+1)s <= bound``.

    >>> from wid.windows.context_free import Sliding
    >>> bounds = spark.createDataFrame([(4, -0.5), (7, 4.0), (9, 5.5)], "row_num long, ts double")
    >>> sorted(bucket_punctuations(bounds, Sliding(4, 2, "ts")).select("ts", WID_CLOSED).collect())
    [Row(ts=-0.5, wid_closed=-2), Row(ts=4.0, wid_closed=1), Row(ts=5.5, wid_closed=1)]
    """
    if spec.positional:
        raise WidError("punctuations on a ROWS window are implied by arrival order; give them on a value attribute")
    bound, factor = id_units(column(spec.wattr), attribute_type(punctuations, spec.wattr), spec)
    return punctuations.withColumn(WID_CLOSED, spec.scaled(factor).closed(bound))


def bucket_sql(source: str, df: DataFrame, spec: WindowSpec) -> str:
    """:func:`bucket` as a Spark SQL query over ``source`` (SQL text of a relation with ``df``'s
    columns): the same ``wid_x``, ``wid_lo``, ``wid_hi`` from the spec's formulas; positions come
    from one ``row_number()`` per partition (the whole stream when unpartitioned), a repeated
    ``wattr`` failing the query (:func:`wid.bucket.columns.position`).

    >>> from wid.windows.context_free import PartitionedTupleSliding
    >>> sql = bucket_sql("readings", spark.table("readings"), PartitionedTupleSliding(3, 2, "ts", "k"))
    >>> spark.sql(sql).select("k", "ts", WID_X, WID_LO, WID_HI).orderBy("k", "ts").show()
    +---+---+-----+------+------+
    |  k| ts|wid_x|wid_lo|wid_hi|
    +---+---+-----+------+------+
    |  a|1.0|    0|     0|     0|
    |  a|4.0|    1|     0|     1|
    |  a|9.0|    2|     1|     1|
    |  b|2.5|    0|     0|     0|
    +---+---+-----+------+------+
    <BLANKLINE>
    """
    dtype = attribute_type(df, spec.wattr)
    for name in spec.partition:
        attribute_type(df, name)
    x, factor = id_units(Sql.column(spec.wattr), dtype, spec, by=naming(df))
    ids = spec.scaled(factor)
    if spec.positional:
        source = f"(SELECT *, {x} AS _wid_raw FROM {source})"
        x, ids = position(spec.partition, ["_wid_raw"], spec.wattr, Sql.column), spec
    tagged = f"(SELECT *, {x} AS {WID_X} FROM {source})"
    lo, hi = ids.wids(Sql.column(WID_X))
    if hi is None:
        end = ids.wids(Sql(f"max({WID_X})"))[0]
        return (f"SELECT t.*, {lo} AS {WID_LO}, e.{WID_HI} FROM {tagged} t "
                f"CROSS JOIN (SELECT {end} AS {WID_HI} FROM {tagged}) e")
    gaps = f" WHERE {lo} <= {hi}" if spec.gaps else ""
    return f"SELECT *, {lo} AS {WID_LO}, {hi} AS {WID_HI} FROM {tagged}{gaps}"


def unpositioned(df: DataFrame, spec: WindowSpec) -> DataFrame:
    """A ROWS window's Bucket before positions are known (live mode counts them in arrival
    order as tuples come): ``wid_x``, ``wid_lo``, ``wid_hi`` NULL; the attributes checked.

    >>> from wid.windows.context_free import PartitionedTupleSliding, TupleSliding
    >>> unpositioned(spark.table("readings"), TupleSliding(3, 2)).select(WID_X, WID_LO, WID_HI).first()
    Row(wid_x=None, wid_lo=None, wid_hi=None)
    >>> unpositioned(spark.table("readings"), PartitionedTupleSliding(3, 2, pattr="g"))
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 'g' (columns: row_num, ts, arrival_ts, k, v)
    """
    for name in (spec.wattr, *spec.partition):
        attribute_type(df, name)
    return unranged(df, {WID_X: F.lit(None).cast("long")})


def live_bucket(df: DataFrame, spec: WindowSpec) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): a ROWS window's ids NULL
    (:func:`unpositioned`: positions come as tuples arrive); an open end left open (NULL
    ``wid_hi``: the end of the stream closes it).

    >>> from wid.windows.context_free import Landmark
    >>> tagged = live_bucket(spark.table("readings"), Landmark(2, "ts"))
    >>> sorted((r.ts, r.wid_lo, r.wid_hi) for r in tagged.collect())[:2]
    [(1.0, 0, None), (2.5, 1, None)]
    """
    return unpositioned(df, spec) if spec.positional else bucket(df, spec, close_open=False)
