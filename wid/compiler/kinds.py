"""WHERE and the aggregate for each window kind, found by the spec's class
(:func:`functools.singledispatch`): the window-agnostic range aggregate
(:mod:`wid.aggregate.range`) for every kind whose ids are numbered windows, the FCA bins
(:mod:`wid.aggregate.fca`) for slide-by-tuple windows, whose ids are attribute values. The
compiler composes Bucket, WHERE and the aggregate, so the aggregate stage itself never sees a
window kind.
"""

from __future__ import annotations

from functools import singledispatch

from pyspark.sql import Column, DataFrame

from wid.aggregate import fca
from wid.aggregate.joined import joined_sql
from wid.aggregate.partials import Aggregate
from wid.aggregate.range import range_aggregate, range_aggregate_sql
from wid.bucket.columns import WID_IN
from wid.bucket.fca import units
from wid.windows.aware import SlideByTuple
from wid.windows.base import WindowSpec


@singledispatch
def where(spec: WindowSpec, tagged: DataFrame, condition: Column) -> DataFrame:
    """The query's WHERE on bucketed tuples, for a kind not :attr:`WindowSpec.where_first`: only
    tuples where ``condition`` holds contribute (after Bucket, so a ``ROWS`` window counts the
    positions of every tuple); slide-by-tuple windows mark the tuples instead (``wid_in``).

    >>> from pyspark.sql import functions as F
    >>> from wid.bucket.kinds import bucket
    >>> fca = SlideByTuple(2, "ts")
    >>> tagged = where(fca, bucket(fca, spark.table("readings")), F.expr("v > 1"))
    >>> sorted((r.ts, r.wid_in) for r in tagged.collect())
    [(1.0, True), (2.5, False), (4.0, True), (9.0, True)]
    """
    return tagged.where(condition)


@singledispatch
def where_sql(spec: WindowSpec, tagged: str, condition: str) -> str:
    """:func:`where` as SQL over the query ``tagged``.

    >>> where_sql(SlideByTuple(2, "ts"), "SELECT * FROM readings", "v > 1")
    'SELECT *, v > 1 AS wid_in FROM (SELECT * FROM readings)'
    """
    return f"SELECT * FROM ({tagged}) WHERE {condition}"


@singledispatch
def aggregate(spec: WindowSpec, tagged: DataFrame, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """One row per ``(keys, wid)``: the window-agnostic range aggregate of ``aggregates``,
    planned by the kind's :attr:`WindowSpec.span` and :attr:`WindowSpec.width`.

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts]")
    >>> sorted(tuple(r) for r in aggregate(compiled.spec, compiled.tagged, [], compiled.aggregates).collect())
    [(0, 1), (1, 1), (2, 1), (4, 1)]
    """
    return range_aggregate(tagged, keys, aggregates, spec.span, spec.width)


@singledispatch
def aggregate_sql(spec: WindowSpec, tagged: str, df: DataFrame, keys: list[str], aggregates: list[Aggregate],
                  where: bool) -> str:
    """:func:`aggregate` as one Spark SQL query over the relation ``tagged`` (SQL text) with
    ``df``'s columns (the bucketed tuples, with the query's derived columns); ``where``: the
    query's WHERE ran after Bucket (:func:`where_sql`).

    >>> from wid.bucket.kinds import bucket_sql
    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts]")
    >>> tagged = f"(SELECT * FROM ({bucket_sql(compiled.spec, 'readings', compiled.tagged)}))"
    >>> text = aggregate_sql(compiled.spec, tagged, compiled.tagged, [], compiled.aggregates, False)
    >>> sorted(tuple(r) for r in spark.sql(text).collect())
    [(0, 1), (1, 1), (2, 1), (4, 1)]
    """
    return range_aggregate_sql(tagged, keys, aggregates, {f.name: f.dataType for f in df.schema.fields},
                               spec.span, spec.width)


@where.register
def _(spec: SlideByTuple, tagged: DataFrame, condition: Column) -> DataFrame:
    """A tuple failing WHERE still defines its window: it is marked (``wid_in``), not dropped."""
    return tagged.withColumn(WID_IN, condition)


@where_sql.register
def _(spec: SlideByTuple, tagged: str, condition: str) -> str:
    return f"SELECT *, {condition} AS {WID_IN} FROM ({tagged})"


@aggregate.register
def _(spec: SlideByTuple, tagged: DataFrame, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """The FCA bins: each window's partial is read once every tuple is in."""
    return fca.aggregate(tagged, *units(tagged, spec), keys, aggregates)


@aggregate_sql.register
def _(spec: SlideByTuple, tagged: str, df: DataFrame, keys: list[str], aggregates: list[Aggregate],
      where: bool) -> str:
    """The plain SQL formulation (:func:`wid.aggregate.joined.joined_sql`), ``wid`` a value of the rattr's type."""
    return joined_sql(tagged, *units(df, spec), keys, aggregates, where)
