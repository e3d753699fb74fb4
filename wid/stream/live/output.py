"""Step 5 of live mode (:mod:`wid.stream.live.job`): each window's aggregates from its merged
partials, by Spark (:meth:`Aggregate.final`), and the streaming views a live query returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.aggregate.partials import Aggregate
from wid.bucket.columns import EMIT_ROW, REVISION, WID
from wid.compiler.query import CompiledQuery, compile_query, resolved  # compile_query: the examples'
from wid.windows.sqlexpr import column


@dataclass
class Live:
    """``frame``: ``kind`` ('result' | 'late') with the columns of replay's ``results`` and
    ``late``; ``results`` and ``late``: the two kinds with exactly replay's columns (``revision``
    0 but for sessions under allowed lateness). All three are views of one streaming plan:
    start ``frame`` (:func:`wid.stream.live.run.start`: its stateful step gets one partition
    per bucket of ``buckets``) to run it once.

    A live query over the view ``readings`` of :func:`wid.query`'s example in one file, not started:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from wid.stream.live import run as live_run
    >>> text = "SELECT k, sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     stream = live_run.source(spark, live_run.split_into_files(spark.table("readings"), d, 1))
    ...     job = wid.live(spark, text, stream)
    ...     print(job.frame.isStreaming, job.buckets, job.results.columns)
    ...     print(job.late.columns)
    True 2 ['wid', 'window_start', 'window_end', 'k', 'total', 'emit_row', 'revision']
    ['row_num', 'ts', 'arrival_ts', 'k', 'v', 'wid', 'window_start', 'window_end']
    """

    frame: DataFrame
    results: DataFrame
    late: DataFrame
    compiled: CompiledQuery
    buckets: int


def _final(aggregate: Aggregate, index: int, dtype: DataType | None) -> Column:
    """:meth:`Aggregate.final` over one window's merged partials (each merge over one row is
    the partial itself): the aggregate of :func:`wid.query`, of the same type."""
    text = aggregate.final(index, dtype)
    for name, sql in aggregate.merge(index):
        text = text.replace(sql, f"`{name}`")
    return F.expr(text)


#: An aggregate's result with what the partials left out (:func:`wid.stream.live.nan.nan_final`):
#: ``(aggregate, result, argument's type) -> result``.
Fold = Callable[[Aggregate, Column, DataType], Column]


def results_of(compiled: CompiledQuery, frame: DataFrame) -> DataFrame:
    """The result rows of live mode's output ``frame`` (``kind``, the query's columns, ``emit_row``,
    ``revision``, the late rows' columns) in the query's columns, or in the shape of the engine
    whose syntax it was written in (:class:`wid.compiler.syntax.shape.Shape`).

    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> frame = spark.createDataFrame([("result", 0, 0.0, 2.0, "a", 1, 3, 0), ("late", 0, None, None, "a", None, None, None)],
    ...     "kind string, wid long, window_start double, window_end double, k string, n long, emit_row long, revision long")
    >>> results_of(compiled, frame).collect()
    [Row(wid=0, window_start=0.0, window_end=2.0, k='a', n=1, emit_row=3, revision=0)]
    """
    named = [name for _, name in compiled.outputs(column)]
    results = frame.where(column("kind") == "result").select(*map(column, named), EMIT_ROW, REVISION)
    shape = compiled.query.shape
    return results if shape is None else shape.apply(results, (EMIT_ROW, REVISION))


def views_of(compiled: CompiledQuery, out: DataFrame, payload: list[str], buckets: int, keys: list[str],
             extents: dict[str, Column], fold: Fold) -> Live:
    """``frame``, ``results`` and ``late`` over the processor's output ``out`` (grouped by
    ``keys``; ``extents``: the window's extent columns, sessions' from their partials; ``fold``
    finishes each aggregate); an output name that is also a stream column reads the result's
    column on result rows."""
    is_result = column("kind") == "result"
    named = {name: e for e, name in compiled.outputs(column)}  # SELECT items, window_start/_end after wid
    same = {name for c, name in compiled.output if c == name}
    streamed = {c.lower(): c for c in payload}  # Spark names a column in any case
    columns = {name: e if name in same or name.lower() not in streamed
               else F.when(is_result, e).otherwise(column(streamed[name.lower()])) for name, e in named.items()}
    columns[EMIT_ROW] = column(EMIT_ROW)
    revised = REVISION in out.columns  # sessions under allowed lateness; else first emissions only
    columns[REVISION] = F.when(is_result, column(REVISION) if revised else F.lit(0)).cast("long")
    for c in [*payload, WID]:
        if c.lower() not in {name.lower() for name in columns}:
            columns[c] = column(c)
    types = {f.name: f.dataType for f in compiled.tagged.schema.fields}
    out = out.select("kind", *map(column, [*payload, *[k for k in keys if k not in payload]]), WID, EMIT_ROW,
                     *[REVISION] * revised,
                     *[e.alias(name) for name, e in extents.items()],
                     *[fold(a, _final(a, i, types.get(a.arg)), types.get(a.arg)).alias(a.alias)
                       for i, a in enumerate(compiled.aggregates)])
    frame = out.select("kind", *[e.alias(n) for n, e in columns.items()])
    if compiled.query.having:
        frame = frame.where(~is_result | F.expr(compiled.query.having))
    results = results_of(compiled, frame)
    late = frame.where(~is_result).select(*[column(c).alias(c) for c in payload], WID,
                                          *[e.alias(name) for e, name in compiled.bounds(column(WID))])
    return Live(resolved(lambda: frame), resolved(lambda: results), resolved(lambda: late), compiled, buckets)
