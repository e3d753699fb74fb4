"""Replay of operational windows (SPL clauses, Flink discretizations): what the operator emits,
and on which arrival.

Both operators are FIFO buffers fed in ``row_num`` order that fire on their own policies, so
every window is emitted complete and nothing is ever late: the results are the query's rows
(:func:`wid.compiler.kinds.aggregate`) with ``revision`` 0 and ``emit_row``, the
row_num of the arrival that fired the window (:func:`wid.bucket.spl.bucket.fired`,
:func:`wid.bucket.flink.bucket.fired`): the tuple (count, delta, passive time policies) or the
punctuation row (``punct()``, punctuation TPs) whose arrival fired it; for a time tick the
first row arriving at or after the tick, which the operator processes the tick just before;
NULL for the end of the stream's flush. ``late`` is empty, with its usual columns.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import EMIT_ROW, REVISION, WID
from wid.bucket.checks import in_order
from wid.compiler.kinds import aggregate
from wid.errors import WidError
from wid.windows.numbers import Number
from wid.stream.punctuation import Generator
from wid.windows.sqlexpr import column, columns


def replay(compiled, punctuation: Generator | None, allowed_lateness: Number,
           fired: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (an SPL or Flink :class:`wid.compiler.query.CompiledQuery`), the
    windows fired as ``fired(stream)`` says (per ``spec.partition`` and ``wid``: ``emit_row``).

    ``[tumbling, time(3)]`` over ``readings`` (``arrival_ts`` 1.5, 4.5, 5.0, 9.5): the ticks at 4.5 and
    7.5 fire windows 0 and 1 on the first rows arriving at or after them (1 and 3), the end of the stream
    flushes window 2; nothing is late, and allowed lateness is refused:

    >>> from wid.bucket.spl.bucket import fired
    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [tumbling, time(3)]")
    >>> results, late = replay(compiled, None, 0, lambda stream: fired(stream, compiled.spec))
    >>> sorted(tuple(r) for r in results.select("wid", "emit_row", "revision").collect()), late.count()
    ([(0, 1, 0), (1, 3, 0), (2, None, 0)], 0)
    >>> replay(compiled, None, 1, lambda stream: fired(stream, compiled.spec))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: allowed_lateness does not apply to SPL and Flink windows: ... so nothing is late
    """
    if allowed_lateness:
        raise WidError("allowed_lateness does not apply to SPL and Flink windows: their buffers take every tuple "
                       "in arrival order, so nothing is late")
    spec, tagged = compiled.spec, compiled.tagged
    source = in_order(compiled.source)
    partition = list(spec.partition)
    emitted = fired(source).select(*[column(c).alias(f"_wid_f{i}") for i, c in enumerate(partition)],
                                   column(WID).alias("_wid_fw"), EMIT_ROW)
    aggregated = aggregate(spec, tagged, compiled.keys, compiled.aggregates)
    match = [column(c).eqNullSafe(column(f"_wid_f{i}")) for i, c in enumerate(partition)]
    results = (aggregated.join(emitted, [*match, column(WID) == column("_wid_fw")], "left")
               .drop(*[f"_wid_f{i}" for i in range(len(partition))], "_wid_fw")
               .withColumn(REVISION, F.lit(0).cast("long")))
    late = source.limit(0).select(*columns(source.columns), F.lit(None).cast("long").alias(WID))
    return results, late
