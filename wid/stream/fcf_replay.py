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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.aggregate.range import range_aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED, WID_HI, WID_LO, WID_X
from wid.errors import WidError
from wid.query import CompiledQuery
from wid.stream.punctuate import Generator, Punctuations
from wid.stream.scan import ROW_CHUNK, WID_CHUNK, running

_KIND, _C, _AT = "_wid_kind", "_wid_c", "_wid_at"  # kind: tuple 0 before punctuation 1 at one row_num


def _implied(compiled: CompiledQuery) -> Punctuations:
    """ROWS windows: the tuple at position x closes window floor((x+1)/s) - 1 of its partition."""
    slide, names = compiled.spec.slide, tuple(compiled.spec.partition)
    frame = compiled.tagged.select(
        "row_num", *names, (F.floor((F.col(WID_X) + 1) / F.lit(slide)) - 1).cast("long").alias(WID_CLOSED))
    return Punctuations(frame, names, (names,))


def _shape(punctuations: Punctuations, shape: tuple[str, ...]) -> DataFrame:
    """The punctuations whose bound (non-NULL) pattern columns are exactly ``shape``."""
    frame = punctuations.frame
    for c in punctuations.pattern:
        frame = frame.where(F.col(c).isNotNull() if c in shape else F.col(c).isNull())
    return frame.select("row_num", *shape, WID_CLOSED)


def _first(punctuations: Punctuations, shape: tuple[str, ...]) -> DataFrame:
    """Per (``shape`` keys, ``wid_closed`` = c): ``row_num`` = the first punctuation closing c.
    Small (one row per window and key), and all a replay needs of the punctuations: the
    running max of ``wid_closed`` at row r is max{c : first(c) <= r}."""
    return _shape(punctuations, shape).groupBy(*shape, WID_CLOSED).agg(F.min("row_num").alias("row_num"))


def _closed_at_arrival(tagged: DataFrame, punctuations: Punctuations) -> DataFrame:
    """``tagged`` plus ``_wid_c``: the largest window closed for the tuple's keys before it arrived."""
    out = tagged.withColumn(_C, F.lit(None).cast("long"))
    chunk = F.floor(F.col("row_num") / ROW_CHUNK)
    for i, shape in enumerate(punctuations.shapes):
        closing = _first(punctuations, shape).withColumn(_KIND, F.lit(1))
        out = (running(out.withColumn(_KIND, F.lit(0)), WID_CLOSED, ["row_num", _KIND], chunk, f"_wid_c{i}",
                       values=closing, partition=shape)
               .withColumn(_C, F.greatest(_C, f"_wid_c{i}")).drop(_KIND, f"_wid_c{i}"))
    return out


def _emit_rows(results: DataFrame, punctuations: Punctuations) -> DataFrame:
    """``results`` plus ``emit_row``: the least row_num of a matching punctuation closing the
    row's wid or a later one (a suffix min in wid order)."""
    out = results.withColumn(EMIT_ROW, F.lit(None).cast("long"))
    for i, shape in enumerate(punctuations.shapes):
        closing = _first(punctuations, shape).select(*shape, F.col(WID_CLOSED).alias(WID), F.lit(1).alias(_KIND),
                                                     F.col("row_num").alias(_AT))
        out = (running(out.withColumn(_KIND, F.lit(0)), _AT, [WID, _KIND], F.floor(F.col(WID) / WID_CHUNK),
                       f"_wid_e{i}", values=closing, partition=shape, agg="min", reverse=True)
               .withColumn(EMIT_ROW, F.least(EMIT_ROW, f"_wid_e{i}")).drop(_KIND, f"_wid_e{i}"))
    return out


def replay(compiled, punctuation: Generator | None) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (a sliding, tumbling or landmark
    :class:`wid.query.CompiledQuery`) under ``punctuation`` (None: only the end of the stream;
    ROWS windows: implied by arrival order): the results are the aggregate's columns plus
    ``emit_row``, ``late`` the stream's columns plus ``wid``."""
    spec, tagged = compiled.spec, compiled.tagged
    if spec.positional:
        if punctuation is not None:
            raise WidError("punctuations on a ROWS window are implied by arrival order; pass punctuation=None")
        punctuations = _implied(compiled)
    elif punctuation is None:
        punctuations = Punctuations(tagged.select("row_num", F.lit(None).cast("long").alias(WID_CLOSED)).limit(0),
                                    (), ((),))
    else:
        punctuations = punctuation.punctuations(compiled)
    consistent = punctuation is not None and punctuation.mode == "consistent"

    arrived = _closed_at_arrival(tagged, punctuations)
    late_any = F.col(_C).isNotNull() & (F.col(_C) >= F.col(WID_LO))
    on_time_lo = F.when(late_any & F.lit(consistent), F.col(WID_HI) + 1).otherwise(
        F.greatest(WID_LO, F.col(_C) + 1))
    late_hi = F.when(F.lit(consistent), F.col(WID_HI)).otherwise(F.least(WID_HI, _C))
    on_time = arrived.withColumn(WID_LO, on_time_lo).where(F.col(WID_LO) <= F.col(WID_HI))
    aggregated = range_aggregate(on_time, compiled.keys, compiled.aggregates)
    emitted = _emit_rows(aggregated, punctuations)

    source = tagged.sparkSession.table(compiled.query.source).columns
    late = arrived.where(late_any).select(*source, F.explode(F.sequence(WID_LO, late_hi)).alias(WID))
    return emitted, late
