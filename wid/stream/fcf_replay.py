"""FCF replay (sliding, tumbling, landmark windows): what a streaming WID query would have
emitted, when, and what it missed.

With ``C`` = the largest window closed for a tuple's keys when it arrives (the running max
of ``wid_closed`` over the earlier punctuations whose pattern matches the tuple, NULL when
none), a tuple with ids ``[wid_lo, wid_hi]`` is

- late for ``[wid_lo, min(wid_hi, C)]`` (those extents were already emitted), and
- on time for ``[max(wid_lo, C + 1), wid_hi]``.

Generous punctuation drops only the late part; consistent drops the whole tuple once any of
it is late. ``results`` is the range aggregate of the on-time ranges, each extent with its
``emit_row``: the row_num of the first punctuation whose running max reaches it (NULL: end
of stream). ``late`` holds every dropped contribution, one row per (tuple, window), so for
``count(*)``: emitted + late = exact, per window and key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from wid.aggregate.partials import Aggregate
from wid.aggregate.range import range_aggregate
from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_CLOSED, WID_HI, WID_LO, WID_X
from wid.bucket.fcf import bucket_punctuations
from wid.errors import WidError
from wid.compiler.query import CompiledQuery
from wid.windows.numbers import Number, as_number, times
from wid.windows.context_free import ContextFree
from wid.stream.punctuation import Generator, Punctuations
from wid.stream.scan import before
from wid.windows.sqlexpr import column, columns

_C, _AT = "_wid_c", "_wid_at"
_CL, _W, _R, _LATE_ROW = "_wid_cl", "_wid_w", "_wid_r", "_wid_late_row"


def _implied(compiled: CompiledQuery) -> Punctuations:
    """ROWS windows: the tuple at position x closes window floor((x+1)/s) - 1 of its partition."""
    names = tuple(compiled.spec.partition)
    frame = compiled.tagged.select("row_num", *columns(names), compiled.spec.implied(column(WID_X)).alias(WID_CLOSED))
    return Punctuations(frame, names, (names,), wildcard=False)  # a NULL partition is a partition


def _first(punctuations: Punctuations, shape: tuple[str, ...]) -> DataFrame:
    """Per (``shape`` keys, ``wid_closed`` = c): ``row_num`` = the first punctuation closing c.
    Small (one row per window and key), and all a replay needs of the punctuations: the
    running max of ``wid_closed`` at row r is max{c : first(c) <= r}."""
    return punctuations.shaped(shape).groupBy(*columns(shape), WID_CLOSED).agg(F.min("row_num").alias("row_num"))


def _closed_at_arrival(tagged: DataFrame, punctuations: Punctuations, into: str = _C) -> DataFrame:
    """``tagged`` plus ``into``: the largest window closed for the tuple's keys before it arrived."""
    out = tagged.withColumn(into, F.lit(None).cast("long"))
    for i, shape in enumerate(punctuations.shapes):
        out = (before(out, _first(punctuations, shape), WID_CLOSED, f"_wid_c{i}", shape)
               .withColumn(into, F.greatest(into, f"_wid_c{i}")).drop(f"_wid_c{i}"))
    return out


def _emit_rows(results: DataFrame, punctuations: Punctuations) -> DataFrame:
    """``results`` plus ``emit_row``: the least row_num of a matching punctuation closing the
    row's wid or a later one (a suffix min in wid order: a min over ``-c < 1 - wid``)."""
    out = results.withColumn(EMIT_ROW, F.lit(None).cast("long"))
    for i, shape in enumerate(punctuations.shapes):
        closing = _first(punctuations, shape).select(*columns(shape), (-column(WID_CLOSED)).alias(_AT), "row_num")
        out = (before(out, closing, "row_num", f"_wid_e{i}", shape, order=_AT, at=1 - column(WID), agg="min")
               .withColumn(EMIT_ROW, F.least(EMIT_ROW, f"_wid_e{i}")).drop(f"_wid_e{i}"))
    return out


def replay(compiled, punctuation: Generator | None, allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (a sliding, tumbling or landmark
    :class:`wid.compiler.query.CompiledQuery`) under ``punctuation`` (None: only the end of the stream;
    ROWS windows: implied by arrival order): the results are the aggregate's columns plus
    ``emit_row`` and ``revision``, ``late`` the stream's columns plus ``wid``. With
    ``allowed_lateness`` L, ``C_L`` = the largest window closed by the bounds minus L: a tuple's
    windows in ``(C_L, C]`` each yield a revision (:func:`_revisions`), only those ``<= C_L`` are late.

    On the view ``readings`` of :func:`wid.query`'s example, the heartbeat at 4 closes window 1
    (``[2, 4)``) before the reading at ``ts = 2.5`` arrives:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> results, late = replay(compiled, wid.punctuate.heartbeat(2, skew=0))
    >>> late.collect()
    [Row(row_num=2, ts=2.5, arrival_ts=5.0, k='b', v=1, wid=1)]
    >>> [tuple(r) for r in sorted(results.collect())]  # k, wid, n, emit_row, revision
    [('a', 0, 1, 1, 0), ('a', 2, 1, 3, 0), ('a', 4, 1, None, 0)]
    """
    spec, tagged = compiled.spec, compiled.tagged
    if allowed_lateness and spec.positional:
        raise WidError("allowed_lateness applies to sliding, tumbling and landmark windows on a value attribute")
    if allowed_lateness and spec.unmeasured:
        raise WidError(f"allowed_lateness is an amount of the window attribute, but {spec.unmeasured}")
    if spec.positional:  # punctuation is None (wid.stream.punctuation.checked)
        punctuations = _implied(compiled)
    elif punctuation is None:
        punctuations = Punctuations(tagged.select("row_num", F.lit(None).cast("long").alias(WID_CLOSED)).limit(0),
                                    (), ((),))
    else:
        punctuations = punctuation.punctuations(compiled)
    consistent = punctuation is not None and punctuation.mode == "consistent"

    arrived = _closed_at_arrival(tagged, punctuations)
    purged = _C  # the largest window past end + L: late for good
    if allowed_lateness and punctuation is not None:
        lagged = replace(compiled, spec=Lagged(spec, allowed_lateness))
        arrived, purged = _closed_at_arrival(arrived, punctuation.punctuations(lagged), _CL), _CL
    late_any = column(purged).isNotNull() & (column(purged) >= column(WID_LO))
    kept = arrived.where(~late_any) if consistent else arrived
    on_time = kept.withColumn(WID_LO, F.greatest(WID_LO, column(_C) + 1)).where(column(WID_LO) <= column(WID_HI))
    aggregated = range_aggregate(on_time, compiled.keys, compiled.aggregates, spec.span)  # cut: no longer, no width
    emitted = _emit_rows(aggregated, punctuations).withColumn(REVISION, F.lit(0).cast("long"))
    if purged != _C:
        allowed = kept.withColumn(WID_LO, F.greatest(WID_LO, column(purged) + 1)).withColumn(
            WID_HI, F.least(WID_HI, _C)).where(column(_C).isNotNull() & (column(WID_LO) <= column(WID_HI)))
        emitted = emitted.unionByName(_revisions(on_time, allowed, compiled))

    late_hi = F.when(F.lit(consistent), column(WID_HI)).otherwise(F.least(WID_HI, purged))
    source = compiled.source.columns
    late = arrived.where(late_any).select(*columns(source), F.explode(F.sequence(WID_LO, late_hi)).alias(WID))
    return emitted, late


@dataclass(frozen=True)
class Lagged:
    """``spec`` seen by punctuations ``lateness`` later: ``closed(bound) = spec.closed(bound - lateness)``,
    the windows whose ``end + lateness <= bound``.

    >>> from wid.compiler.query import compile_query
    >>> spec = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts]").spec
    >>> tuple(spark.range(1).select(spec.closed(F.lit(6)), Lagged(spec, 1).closed(F.lit(6))).first())  # [2w, 2w + 2)
    (2, 1)
    """

    spec: ContextFree
    lateness: Number

    def __getattr__(self, name: str):
        return getattr(self.spec, name)

    def scaled(self, factor: int) -> Lagged:
        """The lagged spec in units ``factor`` times finer (the lateness scaled alike)."""
        return Lagged(self.spec.scaled(factor), times(as_number(self.lateness, "allowed_lateness"), factor))

    def closed(self, bound: Column) -> Column:
        """The largest window with ``end + lateness <= bound``."""
        return self.spec.closed(bound - F.lit(self.lateness))

    def bucket_punctuations(self, punctuations: DataFrame) -> DataFrame:
        """Punctuations on ``wattr`` closing the windows with ``end + lateness <= bound`` (not the
        inner spec's own, as attribute forwarding would give)."""
        return bucket_punctuations(punctuations, self)


def _revisions(on_time: DataFrame, allowed: DataFrame, compiled: CompiledQuery) -> DataFrame:
    """Revision k >= 1 of a window: its on-time tuples and its first k allowed-late ones (in arrival
    order), emitted on the k-th's arrival. A range aggregate per ``(keys, window)`` over revision
    ids: on-time contributions cover ``[0, R]``, the k-th late one ``[k, R]`` (R late ones), and
    ``emit_row`` = the largest row_num of the late ones in revision k."""
    keys = compiled.keys
    window = Window.partitionBy(*columns(keys), _W)
    late = (allowed.select("*", F.explode(F.sequence(WID_LO, WID_HI)).alias(_W))
            .withColumn(WID_LO, F.row_number().over(window.orderBy("row_num")).cast("long"))
            .withColumn(WID_HI, F.count(F.lit(1)).over(window).cast("long"))
            .withColumn(_LATE_ROW, column("row_num")))
    named = [f"_wid_rk{i}" for i in range(len(keys))]
    revised = late.select(*[column(k).alias(n) for k, n in zip(keys, named)], _W, column(WID_HI).alias(_R)).distinct()
    match = [column(k).eqNullSafe(column(n)) for k, n in zip(keys, named)]
    base = (on_time.join(F.broadcast(revised), [*match, column(_W).between(column(WID_LO), column(WID_HI))])
            .drop(*named).withColumn(WID_LO, F.lit(0).cast("long")).withColumn(WID_HI, column(_R)).drop(_R)
            .withColumn(_LATE_ROW, F.lit(None).cast("long")))
    rows = range_aggregate(base.unionByName(late), [*keys, _W],
                           [*compiled.aggregates, Aggregate(EMIT_ROW, "max", _LATE_ROW)])
    return rows.where(column(WID) >= 1).withColumnRenamed(WID, REVISION).withColumnRenamed(_W, WID)
