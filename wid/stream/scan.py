"""Parallel prefix scans: running max/min along an order, never in one Spark partition.

``chunk`` (non-decreasing in the order) cuts every partition into pieces; each piece is
scanned by a window function on its own and combined with a carry, the total of the
earlier pieces (the later ones, when ``reverse``). The carry is computed from the values
only, so the points that are looked up (the big side, e.g. every tuple of a replay) are
read once: the plan of a chain of scans grows linearly, not exponentially.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from wid.windows.sqlexpr import column, columns, quote

#: Arrival positions per scan chunk (row_num // ROW_CHUNK) and window-ids per chunk.
ROW_CHUNK = 1 << 16
WID_CHUNK = 1 << 10
_CHUNK, _CARRY, _POINT, _EDGE, _SCANNED, _SPAN = (
    "_wid_chunk", "_wid_carry", "_wid_point", "_wid_edge", "_wid_scanned", "_wid_span")
_FROM, _TO, _RUN, _BITS = "_wid_from", "_wid_to", "_wid_run", "_wid_bits"


def _carry(values: DataFrame, value: str, chunk: Column, partition: tuple[str, ...], fn,
           reverse: bool) -> tuple[DataFrame, DataFrame]:
    """``(spans, edges)``: ``spans`` maps (partition, chunk k) to the total of the values' chunks
    before k (after k, when reversed), for every k between the values' first and last chunks;
    ``edges`` gives per partition the chunk past the last (before the first) that still has one."""
    totals = values.withColumn(_CHUNK, chunk).groupBy(*columns(partition), _CHUNK).agg(fn(column(value)).alias(_CARRY))
    step = -1 if reverse else 1  # reversed: walk the chunks downwards
    order = Window.partitionBy(*columns(partition)).orderBy(column(_CHUNK).desc() if reverse else _CHUNK)
    through = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # the total through chunk c serves the chunks after c up to the next chunk with values
    ks = F.sequence(column(_CHUNK) + step, F.coalesce(F.lead(_CHUNK).over(order), column(_CHUNK) + step))
    edge = F.min(_CHUNK) - 1 if reverse else F.max(_CHUNK) + 1
    spans = (totals.select(*columns(partition), ks.alias(_SPAN), fn(_CARRY).over(through).alias(_CARRY))
             .select(*columns(partition), F.explode(_SPAN).alias(_CHUNK), _CARRY))
    return spans, totals.groupBy(*columns(partition)).agg(edge.alias(_EDGE))


def _join(left: DataFrame, right: DataFrame, on: list[str]) -> DataFrame:
    """Left join on null-safe equality of ``on`` (NULL is a valid key)."""
    renamed = right.select(*[column(c).alias(f"_wid_r{i}") for i, c in enumerate(on)],
                           *[c for c in right.columns if c not in on])
    if not on:
        return left.crossJoin(renamed)
    same = [left[quote(c)].eqNullSafe(renamed[f"_wid_r{i}"]) for i, c in enumerate(on)]
    return left.join(renamed, same, "left").drop(*[f"_wid_r{i}" for i in range(len(on))])


def running(points: DataFrame, value: str, order: list[str], chunk: Column, out: str, *,
            values: DataFrame | None = None, partition: tuple[str, ...] = (), agg: str = "max",
            reverse: bool = False) -> DataFrame:
    """``points`` plus ``out`` = ``agg`` (max|min) of ``value`` over the rows of ``values``
    of the same ``partition`` at or before each point in ``order`` (at or after, when
    ``reverse``). ``values`` (columns: ``partition``, ``order``, ``value``) defaults to the
    points themselves; otherwise ``points`` must not have a ``value`` column and ties in
    ``order`` are for the caller to break (e.g. with a kind column). The values' chunks
    should span a modest number of ids: the carry has one row per id in that span.

    On the view ``readings`` of :func:`wid.query`'s example (``ts`` 1, 4, 2.5, 9 in arrival order,
    chunks of two arrivals): the largest ``ts`` up to each row, and the least from each row on:

    >>> from pyspark.sql import functions as F
    >>> points, chunk = spark.table("readings").select("row_num", "ts"), F.floor(F.col("row_num") / 2)
    >>> [r.hi for r in running(points, "ts", ["row_num"], chunk, "hi").orderBy("row_num").collect()]
    [1.0, 4.0, 4.0, 9.0]
    >>> lo = running(points, "ts", ["row_num"], chunk, "lo", agg="min", reverse=True)
    >>> [r.lo for r in lo.orderBy("row_num").collect()]
    [1.0, 2.5, 2.5, 9.0]
    """
    fn, combine = (F.max, F.greatest) if agg == "max" else (F.min, F.least)
    if values is None:
        events, values = points, points
    else:
        events = points.withColumn(_POINT, F.lit(True)).unionByName(
            values.select(*columns([*partition, *order, value])).withColumn(_POINT, F.lit(False)), allowMissingColumns=True)
    spans, edges = _carry(values, value, chunk, partition, fn, reverse)
    # a growing frame (O(1) per row); Spark re-evaluates a frame ending at unboundedFollowing per row
    ordered = [column(c).desc() for c in order] if reverse else columns(order)
    scanned = fn(column(value)).over(Window.partitionBy(*columns(partition), _CHUNK).orderBy(*ordered)
                             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    past = column(_CHUNK) < column(_EDGE) if reverse else column(_CHUNK) > column(_EDGE)
    clamp = F.when(past, column(_EDGE)).otherwise(column(_CHUNK))  # past the edge: the edge's carry; NULL: none
    events = _join(events.withColumn(_CHUNK, chunk), edges, list(partition))
    keyed = events.withColumn(_SCANNED, scanned).withColumn(_CHUNK, clamp).drop(_EDGE)
    joined = _join(keyed, spans, [*partition, _CHUNK]).withColumn(out, combine(_SCANNED, _CARRY))
    if _POINT in events.columns:
        joined = joined.where(column(_POINT)).drop(_POINT, value)
    return joined.drop(_CHUNK, _CARRY, _SCANNED)


def _bits(last: Column, first: Column, n: Column) -> Column:
    """Chunk width ``2^b`` of :func:`before` for ``n`` steps from ``first`` to ``last``:
    ``b = floor(log2((last - first) / n))``, at least 0."""
    return F.greatest(F.coalesce(F.floor(F.log2((last - first) / n)), F.lit(0)), F.lit(0)).cast("int")


def before(points: DataFrame, values: DataFrame, value: str, out: str, partition: tuple[str, ...] = (), *,
           order: str = "row_num", at: Column | None = None, agg: str = "max") -> DataFrame:
    """``points`` plus ``out`` = ``agg`` (max|min) of ``value`` over the rows of ``values`` (columns:
    ``partition``, ``order``, ``value``) of the same ``partition`` (NULL equal to NULL) whose whole
    number ``order`` is below the point's ``at`` (default: its own ``order`` column); NULL when there
    is none. For small ``values`` (e.g. one row per window and key): their running ``agg`` is a step
    function of ``order``, held as steps ``(from, to]`` and joined to the points on ``(partition,
    at >> b)``. The chunk width ``2^b`` is the partition's own, ``b = floor(log2(span / steps))``
    (span: its last ``from`` - its first), so a chunk holds about two steps on average whatever
    the spacing of the values (a fixed 4096 held ~80 heartbeat steps, or every window for
    replay's ``emit_row``), and the ``n`` steps cover at most ``3n`` chunks. Small steps are
    broadcast (Spark's adaptive execution decides, on their size at run time), so the points are
    neither shuffled nor sorted; large ones (many keys) are a shuffle join, never held in one task.

    >>> p = spark.createDataFrame([(r,) for r in range(6)], "row_num long")
    >>> v = spark.createDataFrame([(1, 4), (3, 2), (4, 7)], "row_num long, c long")
    >>> [r.seen for r in before(p, v, "c", "seen").orderBy("row_num").collect()]
    [None, None, 4, 4, 4, 7]
    """
    fn = F.max if agg == "max" else F.min
    at = column(order) if at is None else at
    keys = Window.partitionBy(*columns(partition))
    window = keys.orderBy(_FROM)
    first = F.expr(f"shiftright({_FROM} + 1, {_BITS})")
    # rows of equal ``from`` need no merging: all but the last of them are empty steps (from, from]
    steps = (values.select(*columns(partition), column(order).alias(_FROM), column(value))
             .select(*columns(partition), _FROM, F.lead(_FROM).over(window).alias(_TO),
                     fn(column(value)).over(window.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias(_RUN),
                     _bits(*[f(_FROM).over(keys) for f in (F.max, F.min, F.count)]).alias(_BITS))
             .withColumn(_CHUNK, F.explode(F.sequence(first, F.coalesce(F.expr(f"shiftright({_TO}, {_BITS})"), first)))))
    # the last step holds every later point: points past its first chunk look it up there
    edges = (values.groupBy(*columns(partition)).agg(_bits(*[f(column(order)) for f in (F.max, F.min, F.count)]).alias(_BITS),
                                            F.max(column(order)).alias(_EDGE))
             .withColumn(_EDGE, F.expr(f"shiftright({_EDGE} + 1, {_BITS})")))
    edges = edges if partition else F.broadcast(edges)  # unpartitioned: one row
    keyed = _join(points.withColumn(_POINT, at), edges, list(partition))
    keyed = keyed.withColumn(_CHUNK, F.least(F.expr(f"shiftright({_POINT}, {_BITS})"), column(_EDGE))).drop(_EDGE, _BITS)
    right = steps.select(*[column(c).alias(f"_wid_s{i}") for i, c in enumerate(partition)],
                         column(_CHUNK).alias("_wid_sc"), _FROM, _TO, _RUN)
    on = [keyed[quote(c)].eqNullSafe(right[f"_wid_s{i}"]) for i, c in enumerate(partition)]
    point = keyed[_POINT]
    on += [keyed[_CHUNK] == right["_wid_sc"], right[_FROM] < point, right[_TO].isNull() | (point <= right[_TO])]
    return keyed.join(right, on, "left").select(*columns(points.columns), column(_RUN).alias(out))
