"""Live mode's compile stage: the query over a stream, checked for live mode, and the Bucket of a
stream that has not ended (:class:`Unfinished`): :func:`compiled_live`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.bucket.kinds import bucket, live_bucket
from wid.compiler.kinds import where
from wid.compiler.query import CompiledQuery, compile_query
from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.windows.clause import parse_window
from wid.windows.sqlexpr import column
from wid.stream.live.state import KEPT
from wid.compiler.text import WindowQuery

@dataclass(frozen=True)
class Unfinished:
    """Bucket on a stream that has not ended: a ROWS window's positions come in the stateful
    step as tuples arrive (``wid_x``, ``wid_lo``, ``wid_hi`` NULL until then); a landmark
    window's open end stays open (``wid_hi`` NULL: the end of the stream closes it at the largest
    ``wid_lo``). Both count tuples that WHERE drops (positions; the stream's largest ``wid_lo``,
    as replay's Bucket, before WHERE), so WHERE marks the kept ones (:data:`KEPT`) instead of
    filtering: only those contribute and punctuate, as in replay (slide-by-tuple windows: every
    tuple defines its window and punctuates, only the marked ones contribute). Sessions form in
    the stateful step too (``wid_x`` only here); :func:`wid.stream.live.job.live` keeps only the marked tuples for
    them, as replay's sessions form from the tuples WHERE keeps.

    >>> landmark = Unfinished(parse_window("RANGE UNBOUNDED SLIDE 2 WATTR ts"))
    >>> tagged = where(landmark, bucket(landmark, spark.table("readings")), F.expr("v > 1"))
    >>> [tuple(r) for r in sorted(tagged.select("row_num", "wid_lo", "wid_hi", KEPT).collect())]
    [(0, 0, None, True), (1, 2, None, True), (2, 1, None, False), (3, 4, None, True)]
    """

    spec: WindowSpec

    def __getattr__(self, name: str):
        if name == "spec" or name.startswith("__"):  # not set yet (copy, unpickling)
            raise AttributeError(name)
        return getattr(self.spec, name)

    def grouped(self, keys: tuple[str, ...]) -> Unfinished:
        return Unfinished(self.spec.grouped(keys))

    def named(self, name: Callable[[str], str]) -> Unfinished:
        return Unfinished(self.spec.named(name))



@bucket.register
def _(spec: Unfinished, df: DataFrame) -> DataFrame:
    return live_bucket(spec.spec, df).withColumn(KEPT, F.lit(True))


@where.register
def _(spec: Unfinished, tagged: DataFrame, condition: Column) -> DataFrame:
    return tagged.withColumn(KEPT, F.coalesce(condition, F.lit(False)))


def compiled_live(spark: SparkSession, query_text: str, tuples: DataFrame, window: WindowSpec | None) -> CompiledQuery:
    """The query compiled over ``tuples`` (no temp view: ``FROM`` names it), ``window``
    replacing its window clause; the window kind and the clauses are checked first, before Bucket
    runs anything on the stream (the Bucket of a kind live mode refuses may need a batch job).

    >>> text = "SELECT k, count(*) AS n FROM readings [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k"
    >>> compiled_live(spark, text, spark.table("readings").where("k = 'a'"), None).source.count()
    3
    >>> compiled_live(spark, text + " ORDER BY k", spark.table("readings"), None)
    Traceback (most recent call last):
    wid.errors.WidError: live mode emits windows as they close: ORDER BY and LIMIT are for the sink's reader
    """
    parsed = WindowQuery.parse(query_text)
    spec = window if window is not None else parse_window(parsed.window)
    if not spec.live:
        raise WidError(f"live mode supports sliding, tumbling, hopping and landmark windows on a value attribute, "
                       f"ROWS windows in arrival order (WATTR row_num), sessions, slide-by-tuple windows in arrival "
                       f"order, SPL and Flink windows, not {type(spec).__name__} on {spec.wattr!r}")
    shape = parsed.shape
    if parsed.order_by or parsed.limit is not None or shape is not None and (shape.order_by or shape.limit is not None):
        raise WidError("live mode emits windows as they close: ORDER BY and LIMIT are for the sink's reader")
    if shape is not None and shape.grouping is not None:
        raise WidError("live mode emits each window and key as it closes: GROUPING SETS, ROLLUP and CUBE roll "
                       "finished windows up, in a query over the sink (or wid.replay)")
    compiled = compile_query(spark, query_text, Unfinished(spec) if spec.unfinished else spec, source=tuples)
    if not all(a.decomposable for a in compiled.aggregates):
        raise WidError("live mode keeps panes of count, sum, avg, min and max only")
    if spec.unfinished and compiled.derived:  # as replay, whose WHERE runs first: no expression on a dropped tuple
        guarded = {name: F.when(column(KEPT), F.expr(e)) for name, e in compiled.derived.items()}
        compiled = replace(compiled, tagged=compiled.tagged.withColumns(guarded))
    return compiled
