"""Replay of Flink's window operator (:class:`wid.windows.flink_operator.WindowOperator`): its firings
under the watermark the punctuations give, each with the arrival that fired it, and its late elements.

The punctuations' bounds are the watermark (a bound ``B`` promises no element with ``x < B``:
Flink's watermark ``B - 1`` on millisecond longs; ``slack(d)`` is Flink's bounded
out-of-orderness ``d``), per key as they match it. Per key, :class:`wid.bucket.flink.keyed.KeyOperator`
runs over the elements and punctuations in arrival order (a punctuation at row ``r`` right
after element ``r``). ``results``: one row per firing, ``emit_row`` the element whose arrival fired
it (a count trigger, or an element within the allowed lateness firing its window at once), or the
punctuation's row (the watermark passed the window's end), NULL at the end of the stream;
``revision`` 0 (``wid`` numbers a window's firings). ``late``: one row per (element, window) the
operator skipped because the window was past ``end + allowed lateness``, with ``wid`` NULL, the
window's ``window_start`` and ``window_end``, and ``side_output``: true when every window of the
element was late, Flink's side output (``sideOutputLateData``); false for a sliding window
Flink skips silently while a later window of the element takes it.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_HI, WID_LO, attribute_type
from wid.bucket.flink.operator_scan import (FIRING, KIND, LATE, MEMBER, SIDE, VALUE, WINDOW_END,
                                      WINDOW_START, bounds, prepared, scan)
from wid.errors import WidError
from wid.compiler.kinds import aggregate
from wid.windows.numbers import Number
from wid.windows.sqlexpr import column, columns
from wid.stream.punctuation import Generator


def replay(compiled, punctuation: Generator | None, allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """``(results with emit_row and revision, late)`` of a query with a ``WindowOperator`` under
    ``punctuation`` (None: the watermark passes everything at the end of the stream only); the
    allowed lateness is the operator's own.

    Tumbling windows of 5 on ``readings`` under ``slack(0)``: the bound 9 after row 3 fires ``[0, 5)``
    (rows 0 to 2) on row 3; the end of the stream fires ``[5, 10)``:

    >>> from wid.compiler.query import compile_query
    >>> from wid.windows.flink_operator import TumblingEventTimeWindows, WindowOperator
    >>> spec = WindowOperator(TumblingEventTimeWindows(5))
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [flink]", spec, arrival="replay")
    >>> results, late = replay(compiled, wid.punctuate.slack(0))
    >>> sorted(tuple(r) for r in results.select(WINDOW_START, WID, "_wid_a0", EMIT_ROW).collect()), late.count()
    ([(0.0, 0, 3, 3), (5.0, 0, 1, None)], 0)
    >>> replay(compiled, None, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: give Flink's allowed lateness to the operator, WindowOperator(..., allowed_lateness=2), ...
    """
    if allowed_lateness:
        raise WidError(f"give Flink's allowed lateness to the operator, WindowOperator(..., allowed_lateness="
                       f"{allowed_lateness}), not to replay")
    spec = compiled.spec
    source = compiled.tagged.sparkSession.table(compiled.query.source)
    stream = source.where(F.expr(compiled.query.where)) if compiled.query.where else source
    tuples = prepared(stream, spec)
    every = tuples.drop(VALUE).withColumns({n: F.expr(e) for n, e in compiled.derived.items()}) \
        if compiled.derived else tuples.drop(VALUE)
    # the generators read every element once (the query's tagged rows are its firings' members)
    punctuations = punctuation.punctuations(replace(compiled, tagged=every)) if punctuation is not None else None
    fates = bounds(scan(tuples, spec, punctuations), attribute_type(stream, spec.wattr))
    members = fates.where(column(KIND) == MEMBER).select("row_num", WID_LO, WID_HI, WINDOW_START, WINDOW_END)
    aggregated = aggregate(spec, every.join(members, "row_num"), compiled.keys, compiled.aggregates)

    keys = list(spec.keys)
    named = [f"_wid_f{i}" for i in range(len(keys))]
    firings = fates.where(column(KIND) == FIRING).join(every.select("row_num", *columns(keys)), "row_num").select(
        *[column(k).alias(n) for k, n in zip(keys, named)], column(WID_LO).alias("_wid_fw"),
        column(WINDOW_START).alias("_wid_fs"), column(WINDOW_END).alias("_wid_fe"), EMIT_ROW)
    match = [column(k).eqNullSafe(column(n)) for k, n in zip(keys, named)] + [
        column(WID) == column("_wid_fw"), column(WINDOW_START).eqNullSafe(column("_wid_fs")),
        column(WINDOW_END).eqNullSafe(column("_wid_fe"))]
    results = aggregated.join(firings, match, "left").drop(*named, "_wid_fw", "_wid_fs", "_wid_fe") \
        .withColumn(REVISION, F.lit(0).cast("long"))
    late = fates.where(column(KIND) == LATE).join(source, "row_num").select(
        *columns(source.columns), F.lit(None).cast("long").alias(WID), WINDOW_START, WINDOW_END, SIDE)
    return results, late
