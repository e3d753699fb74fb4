"""The plain Spark SQL formulation of FCA windows, the reference for the bins: each window
``w`` joined with the tuples of its extent ``w - r < x <= w`` on chunks of width ``r``."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.aggregate.partials import Aggregate
from wid.bucket.columns import WID, WID_HI, WID_IN, WID_WINDOW, WID_X, rattr_value
from wid.bucket.fca import CHUNK, before_end, chunk_of, chunked, contributes
from wid.windows.numbers import Number
from wid.windows.sqlexpr import Sql, column, columns, quote


def extent(r: Number, dtype: DataType) -> str:
    """A tuple at ``wid_x`` in the extent of window ``wid``, ``wid - r < wid_x <= wid``, decided
    exactly (:func:`wid.bucket.fca.before_end`), as SQL text; ``dtype`` the rattr's type.

    On longs, ``w < x + 2.5`` is ``w < x + 3``:

    >>> from pyspark.sql.types import LongType
    >>> extent(2.5, LongType())
    'wid_x <= wid AND `wid` < (`wid_x` + 3)'
    """
    return f"{WID_X} <= {WID} AND {before_end(Sql.column(WID), Sql.column(WID_X), r, dtype)}"


def joined_aggregate(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """One row per ``(keys, wid)`` (``wid`` in x units) whose extent holds a contributing tuple:
    ``x <= w`` and ``w < x + r`` decided exactly (:func:`wid.bucket.fca.before_end`).

    RANGE 2 on ``ts``: a window at every tuple's ``ts``, shared by the keys, holding ``w - 2 < ts <= w``:

    >>> from wid.bucket.fca import bucket
    >>> from wid.windows.aware import SlideByTuple
    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2, "ts"))
    >>> sorted(tuple(row) for row in joined_aggregate(tagged, 2, ["k"], [Aggregate("total", "sum", "v")]).collect())
    [('a', 1.0, 5), ('a', 2.5, 5), ('a', 4.0, 7), ('a', 9.0, 2), ('b', 2.5, 1), ('b', 4.0, 1)]
    """
    windows = tagged.where(column(WID_WINDOW)).select(column(WID_X).alias(WID)).distinct()
    windows = windows.withColumn(CHUNK, chunk_of(column(WID), r))
    tuples = chunked(tagged.where(contributes(tagged)), r)
    joined = tuples.join(windows, CHUNK).where(F.expr(extent(r, tagged.schema[WID_X].dataType)))
    return joined.groupBy(*columns(keys), WID).agg(*[a.direct().alias(a.alias) for a in aggregates])


def joined_sql(tagged: str, r: Number, dtype: DataType, keys: list[str], aggregates: list[Aggregate],
               where: bool) -> str:
    """:func:`joined_aggregate` as one Spark SQL query over the relation ``tagged`` (SQL text) with
    the bucketed tuples' columns, ``wid`` a value of the rattr's type ``dtype`` (``r``: the RANGE
    in ``wid_x`` units); ``where``: ``tagged`` has ``wid_in`` (the query has a WHERE).

    >>> from pyspark.sql.types import DoubleType
    >>> tagged = "(SELECT *, ts AS wid_x, ts + 2.0 AS wid_hi, true AS wid_window FROM readings)"
    >>> text = joined_sql(tagged, 2, DoubleType(), [], [Aggregate("n", "count"), Aggregate("hi", "max", "v")], False)
    >>> sorted(tuple(row) for row in spark.sql(text).collect())
    [(1.0, 1, 5), (2.5, 2, 5), (4.0, 2, 7), (9.0, 1, 2)]
    """
    key = "".join(f"{quote(k)}, " for k in keys)
    first, last = chunk_of(Sql.column(WID_X), r), chunk_of(Sql.column(WID_HI), r)
    windows = (f"SELECT {WID}, {chunk_of(Sql.column(WID), r)} AS {CHUNK} FROM "
               f"(SELECT DISTINCT {WID_X} AS {WID} FROM {tagged} WHERE {WID_WINDOW})")
    tuples = (f"SELECT *, explode(sequence({first}, {last})) AS {CHUNK} FROM {tagged}"
              + (f" WHERE coalesce({WID_IN}, false)" if where else ""))
    aggregated = ", ".join(f"{a.direct_sql()} AS {quote(a.alias)}" for a in aggregates)
    joined = (f"SELECT {key}{WID}, {aggregated} FROM ({tuples}) JOIN ({windows}) USING ({CHUNK}) "
              f"WHERE {extent(r, dtype)} GROUP BY {key}{WID}")
    wid = rattr_value(Sql.column(WID), dtype)
    rest = ", ".join(quote(c) for c in [*keys, *(a.alias for a in aggregates)])
    return f"SELECT {wid.alias(WID)}, {rest} FROM ({joined})"
