"""Live mode: the streaming job that :func:`wid.replay` describes, on Spark Structured Streaming.

``wid.live(spark, query_text, stream, punctuation=...)``: ``stream`` is a streaming DataFrame
with the replayed view's columns (plus, optionally, a boolean ``wid_end`` column: a row with
``wid_end`` true is the end-of-stream marker, after every other element; it closes every open
window, ``emit_row`` NULL, as replay's end of stream). The pipeline:

1. **Bucket**, as in replay (Column expressions on the stream): ``wid_lo``, ``wid_hi``, keys, values;
   a ROWS window's ids come in step 4, as positions are counted (:mod:`wid.stream.live.compile`).
2. The generator's :class:`wid.stream.punctuate.Marks`: punctuations supplied by the source
   (``embedded(punct_stream)``: a streaming frame that must reach the query in ``row_num``
   order with the tuples, e.g. both read from one file source), or each tuple's own mark.
3. Routing (:mod:`wid.stream.live.route`; no shuffle but the one into the stateful step): a
   tuple goes to the hash bucket of its keys; when tuples' marks are on all keys (slack,
   heartbeat), those that can raise the bound also go to every other bucket as narrow mark rows;
   a punctuation goes to the buckets of the keys it binds; the end marker goes everywhere. The
   elements reach the stateful step packed into Arrow cells (:mod:`wid.stream.live.input`), a
   few rows per bucket and batch.
4. :class:`wid.stream.live.state.PaneProcessor` per bucket (one stateful operator, run by
   :class:`wid.stream.live.processor.Stateful`; the same step on the JVM, with no Python in the
   query, where the session has it: :mod:`wid.stream.live.jvm`): ``row_num``
   order, marks as punctuations, panes, emission at punctuations, late rows. Sessions:
   :class:`wid.stream.live.sessions.state.SessionProcessor`; SPL and Flink windows, whose Bucket
   is the operator's scan (``spec.live_scan``): :class:`wid.stream.live.operational.OperationalProcessor`.
5. Each window's aggregates from its merged partials, by Spark (:meth:`Aggregate.final`):
   of Spark's own types, a decimal's avg exact as in :func:`wid.query`
   (:mod:`wid.stream.live.output`). The stateful step's view of the query, its schemas:
   :mod:`wid.stream.live.layout`.

Run to completion over the same rows, ``results`` equals ``wid.replay(...).results`` and
``late`` equals its ``late``: each window is emitted at the first punctuation that closes it,
with the on-time tuples that arrived before it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, BooleanType, IntegerType, LongType, StructField, StructType

from wid.aggregate.partials import Aggregate
from wid.bucket.columns import WID, WID_CLOSED, WID_HI, WID_LO, WID_X, attribute_type
from wid.bucket.gaps import lateness_in_x
from wid.bucket.nan import NanFlags
from wid.bucket.plain import PlainNames
from wid.compiler.analysis import unresolved
from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.stream.live.compile import compiled_live
from wid.stream.live.kinds import live_extents, live_scan, live_step, sessions
from wid.stream.live.input import BUCKET, KIND, ROWS, pack
from wid.stream.live.jvm import jvm_panes
from wid.stream.live.layout import bound_type, layout_of, typed
from wid.stream.live.nan import nan_counts, nan_final
from wid.stream.live.operational import OperationalProcessor
from wid.stream.live.output import Live, views_of
from wid.stream.live.processor import Stateful
from wid.stream.live.route import routed
from wid.stream.live.sessions.state import SessionProcessor
from wid.stream.live.state import KEPT, PaneProcessor
from wid.stream.live.panes import partial_names
from wid.stream.punctuation import Generator, Marks, checked, generator
from wid.windows.numbers import Number, non_negative, positive_whole
from wid.windows.sqlexpr import column, column_name
from wid.compiler.text import WindowQuery

END_COLUMN = "wid_end"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: A tuple's own session end ``x + g`` (a gap per tuple), computed on the tuples WHERE keeps.
REACH = "_wid_reach"
STATE_STORE = "spark.sql.streaming.stateStore.providerClass"
def live(spark: SparkSession, query_text: str, stream: DataFrame, punctuation: Generator | None = None,
         *, buckets: int = 2, window: WindowSpec | None = None, allowed_lateness: Number = 0) -> Live:
    """The live evaluation of ``query_text`` over ``stream`` (see the module doc); ``buckets``:
    hash buckets of the grouping keys (keys of the pane state), each on a state partition and a
    core of its own when the query first starts with ``spark.sql.shuffle.partitions = buckets``
    (:func:`wid.stream.live.run.start` sees to it; slide-by-tuple windows: one bucket); ``window``
    replaces the query's window clause, as in :func:`wid.replay` (a
    :class:`wid.windows.flink.Discretization` for ``[flink]``); ``allowed_lateness`` (session
    windows; window-attribute units, seconds for timestamps): replay's, an emitted session kept
    until the bound passes its end + ``allowed_lateness`` and revised by the tuples that touch it
    (:mod:`wid.stream.live.sessions.steps`). A session whose
    ``spark.sql.streaming.stateStore.providerClass`` is unset gets the RocksDB state store.

    The view ``readings`` of :func:`wid.query`'s example in two files (one micro-batch each) and the end
    marker, under ``slack(0)``: replay's rows, the reading at ``ts = 2.5`` late for window 1:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from wid.stream.live import run as live_run
    >>> text = "SELECT k, sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     files = live_run.split_into_files(spark.table("readings"), Path(d, "in"), 2)
    ...     job = live(spark, text, live_run.source(spark, files), wid.punctuate.slack(0))
    ...     _ = live_run.run(live_run.start(job, Path(d, "out"), Path(d, "checkpoint")))
    ...     results, late = live_run.read_output(spark, job, Path(d, "out"))
    ...     print(sorted(tuple(r) for r in results.select("k", "wid", "total", "emit_row").collect()))
    ...     print(sorted(tuple(r) for r in late.select("row_num", "k", "wid").collect()))
    [('a', 0, 5, 1), ('a', 2, 7, 3), ('a', 4, 2, None)]
    [(2, 'b', 1)]
    """
    try:
        streaming = stream.isStreaming
    except AnalysisException as error:  # e.g. inside a pipeline's query function
        raise WidError(unresolved(WindowQuery.parse(query_text).source, error, given=True)) from None
    if not streaming:
        raise WidError("wid.live needs a streaming DataFrame (spark.readStream...); use wid.replay for a table")
    if "row_num" not in {c.lower() for c in stream.columns}:
        raise WidError("live mode reads arrival order but the stream has no row_num column: give its rows one before "
                       "they are streamed, e.g. with wid.arrival(df, by=...) (in a plan: arrival in [input])")
    generator(punctuation)
    positive_whole("buckets", buckets)
    non_negative("allowed_lateness", allowed_lateness)
    ending = END_COLUMN in stream.columns
    tuples = stream.where(~F.coalesce(column(END_COLUMN), F.lit(False))).drop(END_COLUMN) if ending else stream
    compiled = compiled_live(spark, query_text, tuples, window)
    punctuation = checked(punctuation, compiled.spec)
    positional = compiled.spec.positional
    scan = live_scan(compiled.spec, tuples)
    if compiled.spec.open_end and punctuation is not None and punctuation.mode == "consistent":
        raise WidError("consistent punctuation drops a late tuple from all its landmark windows, up to the "
                       "stream's last one: unknown while the stream runs (replay it, or use generous mode)")
    if positional:  # each tuple punctuates its partition (wid_closed from its position, in the stateful step)
        marks = Marks(pattern=tuple(compiled.spec.partition), wildcard=False)
    else:
        marks = punctuation.marks(compiled) if punctuation is not None else Marks()
    if spark.conf.get(STATE_STORE, None) in (None, ""):
        try:
            spark.conf.set(STATE_STORE, ROCKSDB)
        except PySparkException as error:  # a pipeline's definitions may not set the session's conf
            if not (error.getCondition() or "").startswith("SESSION_MUTATION_IN_DECLARATIVE_PIPELINE"):
                raise
            raise WidError(f"live mode keeps its panes in the RocksDB state store, which a pipeline's definitions "
                           f"may not choose: add {STATE_STORE}: {ROCKSDB} to the configuration of the "
                           "pipeline's spec (spark-pipeline.yml)") from None

    tagged = compiled.tagged
    keys = [k for k in compiled.keys if k not in compiled.spec.extent_columns]  # extents: from the step's partials
    formed = sessions(compiled.spec, tagged)  # (gap, x, each tuple's end: a gap per tuple)
    lateness = None
    if allowed_lateness:
        if formed is None:
            raise WidError(f"allowed lateness in live mode is for session windows, not "
                           f"{type(compiled.spec).__name__} windows: wid.replay takes it (allowed_lateness=...)")
        lateness = lateness_in_x(compiled.spec, attribute_type(tagged, compiled.spec.wattr), allowed_lateness)
    own = live_step(compiled.spec, compiled)  # slide-by-tuple windows: replay's scan, in one bucket
    if own is not None:
        buckets = 1
    aggregates = list(compiled.aggregates)
    if formed is not None:  # each session's least and largest x: its start and last; only WHERE's tuples
        aggregates += [Aggregate("_wid_start", "min", formed[1]), Aggregate("_wid_last", "max", formed[1])]
        tagged = tagged.where(column(KEPT)).drop(KEPT)
        if formed[2] is not None:  # and its end, the largest of its tuples' (their gaps checked after WHERE)
            compiled = replace(compiled, tagged=compiled.tagged.withColumn(REACH, formed[2]))  # the state's types
            tagged = tagged.withColumn(REACH, formed[2])
            aggregates.append(Aggregate("_wid_reach", "max", REACH))
            formed = (None, formed[1], REACH)
    payload = list(tuples.columns)
    values = [a.arg for a in aggregates if a.arg is not None]
    scanned = list(scan.columns) if scan is not None else list(own.columns) if own is not None else []
    carried = [c for c in dict.fromkeys([*keys, *payload, *values, *scanned]) if c != "row_num"]
    copies = {a: column_name(e) for a, e in compiled.derived.items() if column_name(e) in carried}  # a copied column
    nan = NanFlags.of(tagged.schema, [c for c in carried if c not in copies])  # NULL and NaN apart in Python
    flag_of = {**nan.flags, **{a: nan.flags[c] for a, c in copies.items() if c in nan.flags}}
    compiled, tagged = replace(compiled, tagged=nan.add(compiled.tagged)), nan.add(tagged)
    keys, carried = nan.keys(keys), [*carried, *nan.flags.values()]
    counts, at = nan_counts(flag_of, compiled.aggregates), len(compiled.aggregates)
    aggregates[at:at] = counts  # each value's NaNs, counted apart (pandas holds them as NULLs)
    nans = {a.alias: column(a.partials(at + j)[0][0]) for j, a in enumerate(counts)}
    if own is not None:  # its bins hold the counts too
        own = live_step(compiled.spec, replace(compiled, aggregates=list(aggregates)))
    carried_payload = [*payload, *[nan.flags[c] for c in payload if c in nan.flags]]
    marks = marks.flagged(nan)
    if scan is not None:
        scan = replace(scan, nan=NanFlags({c: flag for c, flag in nan.flags.items() if c in scan.keys}))
    kept = KEPT in tagged.columns  # ROWS, landmark and slide-by-tuple windows: tuples WHERE drops still count
    x = formed[1] if formed is not None else WID_X if own is not None else None  # bounds on x, else on ids
    closed_type = LongType() if x is None else bound_type(tagged, marks, x)
    columns = [StructField(BUCKET, IntegerType()), StructField("row_num", LongType()),
               StructField(KIND, IntegerType()), *typed(tagged.schema, carried),
               StructField(WID_LO, LongType()), StructField(WID_HI, LongType()), StructField(WID_CLOSED, closed_type),
               *([StructField(KEPT, BooleanType())] if kept else [])]
    hashed = list(marks.pattern) or ([] if positional else keys)  # unpartitioned ROWS: one bucket counts all
    if scan is not None:  # subwindows scanned apart, or one bucket scans the stream
        hashed = list(scan.partition)
    on_all = marks.closed is not None and not marks.pattern
    # a tuple punctuates when replay's Bucket keeps it: not one WHERE drops, but for slide-by-tuple windows
    kept_only = kept and own is None
    own_mark = F.lit(None) if marks.closed is None else F.when(column(KEPT), marks.closed) if kept_only else marks.closed
    marker = stream.where(column(END_COLUMN)) if ending else None
    elements = routed(tagged, columns, hashed, buckets, own_mark, marks.given, marker)
    layout = layout_of(compiled, keys, aggregates, marks, carried_payload,
                     punctuation is not None and punctuation.mode == "consistent", on_all,
                     compiled.spec.tag_positions if positional else None, formed, closed_type,
                     tagged.schema[WID_X].dataType if own is not None else LongType(), nan.flags, lateness)
    spread = (WID_CLOSED,) * on_all + (WID_LO,) * layout.open  # columns every bucket needs the records of
    plain, names = PlainNames.of(elements)
    packed = plain.mapInArrow(names.batches(partial(pack, buckets=buckets, spread=spread)),
                                      StructType([StructField(BUCKET, IntegerType()), StructField(ROWS, BinaryType())]))
    if scan is not None:
        step = OperationalProcessor(layout, StructType(columns), scan)
    elif own is not None:
        step = own.processor(layout, StructType(columns))
    else:
        step = PaneProcessor(layout) if formed is None else SessionProcessor(layout)
    processor = Stateful(step)
    out = None
    if scan is None and own is None and formed is None:  # the pane step, on the JVM where the session has it
        period = compiled.spec.slide if positional else None
        out = jvm_panes(spark, layout, elements, buckets, spread, period)
    if out is None:
        out = packed.groupBy(BUCKET).transformWithStateInPandas(processor, layout.output, "Append", "None")
    extents = {}
    if formed is not None:
        ends = [column(name) for name, _ in partial_names(aggregates)[-3 if formed[2] else -2:]]
        extents = live_extents(compiled.spec, *ends[:2], tagged, *ends[2:])
    if own is not None:
        out = out.withColumn(WID, own.wid(column(WID)))
    keys = [k for k in keys if k not in nan.flags.values()]
    return views_of(compiled, nan.restore(out), payload, buckets, keys, extents, partial(nan_final, flag_of, nans=nans))

