"""FCA Bucket: each tuple's maximal id range ``wid_lo = x <= w < wid_hi = x + r`` and
``wid_window``, whether its ``x`` is a window-id: every tuple (slide-by-tuple); every n-th
in arrival order (FCB); every n-th in ``(x, row_num)`` order (FCU).

Positions are parallel: the order is cut into ``spark.sql.shuffle.partitions`` equal
slices of its leading column, each slice numbers its rows on its own and adds the count of
the slices before it (a prefix sum over one row per slice).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.bucket.columns import WID_HI, WID_IN, WID_LO, WID_WINDOW, WID_X, attribute_type, checked, numeric_value
from wid.spec.numbers import Number, floor_div
from wid.spec.sqlexpr import Expr, Sql
from wid.spec.windows import SlideByTuple

#: A chunk of the x axis (windows ``c*width <= w < (c+1)*width``) and whether it holds ``x``.
CHUNK, HOME = "_wid_chunk", "_wid_home"
_SLICE, _BEFORE = "_wid_slice", "_wid_before"


def ids(df: DataFrame, spec: SlideByTuple) -> tuple[Column, DataType, SlideByTuple]:
    """``(x, rattr type, spec in x's units)``: x is checked (NULL/NaN fail the query)."""
    dtype = attribute_type(df, spec.rattr)
    x, factor = numeric_value(F.col(spec.rattr), dtype, spec.rattr)
    return checked(x, dtype, spec.rattr), dtype, spec.scaled(factor) if factor != 1 else spec


def bucket(df: DataFrame, spec: SlideByTuple) -> DataFrame:
    """``df`` plus ``wid_x``, the id range ``wid_lo = x <= w < wid_hi = x + r`` and ``wid_window``."""
    x, _, scaled = ids(df, spec)
    tagged = df.withColumn(WID_X, x)
    tagged = tagged.withColumn(WID_LO, F.col(WID_X)).withColumn(WID_HI, F.col(WID_X) + F.lit(scaled.range))
    if spec.every == 1:
        return tagged.withColumn(WID_WINDOW, F.lit(True))
    attribute_type(df, "row_num")
    order = [WID_X, "row_num"] if spec.ranked else ["row_num"]
    return positioned(tagged, order, "_wid_pos").withColumn(
        WID_WINDOW, F.col("_wid_pos") % F.lit(spec.every) == spec.every - 1).drop("_wid_pos")


def bucket_sql(source: str, df: DataFrame, spec: SlideByTuple) -> str:
    """:func:`bucket` as a Spark SQL query over ``source`` (SQL text of a relation with ``df``'s
    columns); FCB/FCU positions come from one ``row_number()`` over the whole stream."""
    dtype = attribute_type(df, spec.rattr)
    x, factor = numeric_value(Sql.column(spec.rattr), dtype, spec.rattr)
    scaled = spec.scaled(factor) if factor != 1 else spec
    tagged = (f"(SELECT *, {WID_X} AS {WID_LO}, {Sql.column(WID_X) + scaled.range} AS {WID_HI} "
              f"FROM (SELECT *, {checked(x, dtype, spec.rattr)} AS {WID_X} FROM {source}))")
    if spec.every == 1:
        return f"SELECT *, true AS {WID_WINDOW} FROM {tagged}"
    attribute_type(df, "row_num")
    order = f"{WID_X}, `row_num`" if spec.ranked else "`row_num`"
    return (f"SELECT *, (row_number() OVER (ORDER BY {order}) - 1) % {spec.every} = {spec.every - 1} "
            f"AS {WID_WINDOW} FROM {tagged}")


def positioned(df: DataFrame, order: list[str], out: str) -> DataFrame:
    """``df`` plus ``out``, the 0-based position of each row in ``order`` (unique): slice
    ``k`` of the leading column's range numbers its rows, plus the rows of slices ``< k``."""
    slices = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    lead = F.col(order[0]).cast("double")
    span = df.agg(F.min(lead).alias("_wid_lo"), F.max(lead).alias("_wid_hi"))
    width = (F.col("_wid_hi") - F.col("_wid_lo")) / F.lit(slices)
    piece = F.when(width > 0, F.least(F.floor((lead - F.col("_wid_lo")) / width), F.lit(slices - 1))).otherwise(0)
    cut = df.crossJoin(F.broadcast(span)).withColumn(_SLICE, piece.cast("int")).drop("_wid_lo", "_wid_hi")
    before = cut.groupBy(_SLICE).count().select(_SLICE, F.coalesce(F.sum("count").over(
        Window.orderBy(_SLICE).rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)).alias(_BEFORE))
    within = F.row_number().over(Window.partitionBy(_SLICE).orderBy(*order)) - 1
    return (cut.join(F.broadcast(before), _SLICE).withColumn(out, (F.col(_BEFORE) + within).cast("long"))
            .drop(_SLICE, _BEFORE))


def chunked(tagged: DataFrame, width: Number, r: Number) -> DataFrame:
    """Each tuple once per chunk ``c`` (windows ``c*width <= w < (c+1)*width``) its range
    ``[x, x + r)`` meets; ``_wid_home`` marks the chunk holding ``x`` itself."""
    first, last = chunk_range(F.col(WID_X), width, r)
    return tagged.withColumn(CHUNK, F.explode(F.sequence(first, last))).withColumn(HOME, F.col(CHUNK) == first)


def chunk_range(x: Expr, width: Number, r: Number) -> tuple[Expr, Expr]:
    """The first and last chunk that the id range ``[x, x + r)`` meets."""
    return floor_div(x, width), -floor_div(-(x + r), width) - 1


def contributes(tagged: DataFrame) -> Column:
    """``wid_in`` (NULL: false), or true when the query has no WHERE."""
    return F.coalesce(F.col(WID_IN), F.lit(False)) if WID_IN in tagged.columns else F.lit(True)
