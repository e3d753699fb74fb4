"""The plain Spark SQL formulation of FCA windows, the reference for the bins: each window
``w`` joined with the tuples of its extent ``w - r < x <= w`` on chunks of width ``r``."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.aggregate.range import Aggregate
from wid.bucket.columns import WID, WID_HI, WID_IN, WID_WINDOW, WID_X, rattr_value
from wid.bucket.fca import CHUNK, before_end, chunk_of, chunked, contributes
from wid.spec.numbers import Number
from wid.spec.sqlexpr import Sql, column, columns, quote


def extent(r: Number, dtype: DataType) -> str:
    """A tuple at ``wid_x`` in the extent of window ``wid``, ``wid - r < wid_x <= wid``, decided
    exactly (:func:`wid.bucket.fca.before_end`), as SQL text; ``dtype`` the rattr's type."""
    return f"{WID_X} <= {WID} AND {before_end(Sql.column(WID), Sql.column(WID_X), r, dtype)}"


def joined_aggregate(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """One row per ``(keys, wid)`` (``wid`` in x units) whose extent holds a contributing tuple:
    ``x <= w`` and ``w < x + r`` decided exactly (:func:`wid.bucket.fca.before_end`)."""
    windows = tagged.where(column(WID_WINDOW)).select(column(WID_X).alias(WID)).distinct()
    windows = windows.withColumn(CHUNK, chunk_of(column(WID), r))
    tuples = chunked(tagged.where(contributes(tagged)), r)
    joined = tuples.join(windows, CHUNK).where(F.expr(extent(r, tagged.schema[WID_X].dataType)))
    return joined.groupBy(*columns(keys), WID).agg(*[a.direct().alias(a.alias) for a in aggregates])


def joined_sql(tagged: str, r: Number, dtype: DataType, keys: list[str], aggregates: list[Aggregate],
               where: bool) -> str:
    """:func:`joined_aggregate` as one Spark SQL query over the relation ``tagged`` (SQL text) with
    the bucketed tuples' columns, ``wid`` a value of the rattr's type ``dtype`` (``r``: the RANGE
    in ``wid_x`` units); ``where``: ``tagged`` has ``wid_in`` (the query has a WHERE)."""
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
