"""Latency and accuracy of a replay against the exact result, per extent and overall.

Per extent ``(keys, w)`` of the exact result, with ``end = (w+1)s`` its end on the window
attribute and the arrival ``clock`` (``arrival_ts``, in the window attribute's units):

- ``latency``      = clock at emission - end, the clock at emission being the latest
  arrival at or before ``emit_row`` (end of stream: the last arrival, or ``end`` when the
  stream stops before the extent ends);
- ``latency_rows`` = emit_row - (the last row_num that arrived before ``end``), in row_num
  units (end of stream: the last row_num + 1);
- ``rel_error``    = |emitted - exact| / |exact| of the compared aggregate (1 when the extent
  emitted nothing: all its tuples were late; 0 / 0 = 0), ``incorrect`` = rel_error > 1e-9.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import EMIT_ROW, WID, attribute_type, epoch_micros, on_axis, time_like
from wid.errors import WidError
from wid.stream.replay import Replay
from wid.stream.scan import ROW_CHUNK, WID_CHUNK, running
from wid.windows.sqlexpr import column

TOLERANCE = 1e-9
_ORD, _KIND, _VAL = "_wid_ord", "_wid_kind", "_wid_val"


def _seconds(df: DataFrame, name: str, wattr: str) -> Column:
    """Column ``name`` in seconds on the window attribute ``wattr``'s axis."""
    clock, dtype = on_axis(column(name), attribute_type(df, name), attribute_type(df, wattr))
    if time_like(dtype):
        return epoch_micros(clock, dtype) / F.lit(1e6)
    return clock.cast("double")


def _prefix(points: DataFrame, tuples: DataFrame, order: Column, value: Column, chunk: float, out: str) -> DataFrame:
    """``points`` (with ``_wid_ord`` and ``_wid_kind``) plus ``out``: the max of ``value`` over
    the ``tuples`` up to ``_wid_ord`` in ``order`` (kind -1: before equal tuples; 1: after)."""
    values = tuples.select(order.cast("double").alias(_ORD), F.lit(0).alias(_KIND), value.cast("double").alias(_VAL))
    return running(points, _VAL, [_ORD, _KIND], F.floor(column(_ORD) / F.lit(chunk)), out, values=values)


def extent_metrics(rep: Replay, metric: str, clock: str = "arrival_ts") -> DataFrame:
    """One row per exact extent: keys, ``wid``, ``exact``, ``emitted``, ``emit_row``,
    ``latency``, ``latency_rows``, ``rel_error``, ``incorrect``.

    On the view ``readings`` of :func:`wid.query`'s example, the heartbeat at 4 closes window 1
    before its only reading (key ``b``) arrives: the extent emits nothing.

    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.heartbeat(2, skew=0))
    >>> extent_metrics(rep, "n").orderBy("wid", "k").show()
    +---+---+-----+-------+--------+-------+------------+---------+---------+
    |wid|  k|exact|emitted|emit_row|latency|latency_rows|rel_error|incorrect|
    +---+---+-----+-------+--------+-------+------------+---------+---------+
    |  0|  a|    1|      1|       1|    2.5|         1.0|      0.0|    false|
    |  1|  b|    1|   NULL|    NULL|    5.5|         4.0|      1.0|     true|
    |  2|  a|    1|      1|       3|    3.5|         1.0|      0.0|    false|
    |  4|  a|    1|      1|    NULL|    0.0|         1.0|      0.0|    false|
    +---+---+-----+-------+--------+-------+------------+---------+---------+
    <BLANKLINE>
    """
    compiled = rep.compiled
    names = {name: c for c, name in compiled.output}
    if metric not in names or names[metric] in compiled.keys or names[metric] == WID:
        raise WidError(f"metric {metric!r} is not an aggregate of the query (columns: {', '.join(names)})")
    keys = [name for c, name in compiled.output if c in compiled.keys or c == WID]
    stream = compiled.tagged
    if clock not in stream.columns:
        raise WidError(f"latency needs an arrival clock: the stream has no {clock!r} column")
    if compiled.spec.period is None:
        raise WidError("latency is measured on windows over a value or time attribute")
    exact = compiled.result().select(*map(column, keys), column(metric).alias("exact"))
    emitted = rep.results.select(*map(column, keys), column(metric).alias("emitted"), EMIT_ROW)
    extents = exact.join(emitted, keys, "left")
    slide = float(compiled.spec.period)
    tuples = stream.select("row_num", _seconds(stream, clock, compiled.spec.wattr).alias("_wid_clock"))
    last = tuples.agg(F.max("row_num").alias("_wid_last_row"), F.max("_wid_clock").alias("_wid_last_clock"))

    at_emit = _prefix(extents.withColumn(_ORD, column(EMIT_ROW).cast("double")).withColumn(_KIND, F.lit(1)),
                      tuples, column("row_num"), column("_wid_clock"), float(ROW_CHUNK), "_wid_emit_clock")
    end = (column(WID) + 1) * F.lit(slide)
    at_end = _prefix(at_emit.withColumn(_ORD, end.cast("double")).withColumn(_KIND, F.lit(-1)),
                     tuples, column("_wid_clock"), column("row_num"), slide * WID_CHUNK, "_wid_end_row")
    out = at_end.crossJoin(F.broadcast(last))
    emit_row = F.coalesce(column(EMIT_ROW), column("_wid_last_row") + 1)
    emit_clock = F.when(column(EMIT_ROW).isNull(), F.greatest("_wid_last_clock", end)).otherwise(column("_wid_emit_clock"))
    error = F.when(column("emitted").isNull(), F.lit(1.0)).when(column("exact") == 0, F.when(
        column("emitted") == 0, 0.0).otherwise(1.0)).otherwise(F.abs(column("emitted") - column("exact")) / F.abs("exact"))
    return out.select(
        *map(column, keys), "exact", "emitted", EMIT_ROW,
        (emit_clock - end).alias("latency"),
        (emit_row - F.coalesce(column("_wid_end_row"), F.lit(-1.0))).alias("latency_rows"),
        error.cast("double").alias("rel_error"),
        (error > TOLERANCE).alias("incorrect"),
    )


def summary(rep: Replay, metric: str, clock: str = "arrival_ts") -> dict[str, float]:
    """Overall figures (one small row to the driver): ``extents``, ``late_rows``, mean
    ``latency`` and ``latency_rows``, ``avg_rel_error`` and ``frac_incorrect``.

    On the view ``readings`` of :func:`wid.query`'s example, one of the four extents loses its only reading:

    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.heartbeat(2, skew=0))
    >>> print(", ".join(f"{name}={value}" for name, value in summary(rep, "n").items()))
    extents=4, latency=2.875, latency_rows=1.75, avg_rel_error=0.25, frac_incorrect=0.25, late_rows=1
    """
    row = extent_metrics(rep, metric, clock).agg(
        F.count("*").alias("extents"),
        F.avg("latency").alias("latency"),
        F.avg("latency_rows").alias("latency_rows"),
        F.avg("rel_error").alias("avg_rel_error"),
        F.avg(column("incorrect").cast("double")).alias("frac_incorrect"),
    ).first()
    return {**row.asDict(), "late_rows": rep.late.count()}
