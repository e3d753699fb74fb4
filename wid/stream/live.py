"""Live mode: the streaming job that :func:`wid.replay` describes, on Spark Structured Streaming.

``wid.live(spark, query_text, stream, punctuation=...)``: ``stream`` is a streaming DataFrame
with the replayed view's columns (plus, optionally, a boolean ``wid_end`` column: a row with
``wid_end`` true is the end-of-stream marker, after every other element; it closes every open
window, ``emit_row`` NULL, as replay's end of stream). The pipeline:

1. **Bucket**, as in replay (Column expressions on the stream): ``wid_lo``, ``wid_hi``, keys, values.
2. The generator's :class:`wid.stream.punctuate.Marks`: punctuations supplied by the source
   (``embedded(punct_stream)``: a streaming frame that must reach the query in ``row_num``
   order with the tuples, e.g. both read from one file source), or each tuple's own mark.
3. :class:`wid.stream.live_state.Sequencer` (the whole stream, narrow rows): ``row_num`` order
   across micro-batches, and marks on all keys as punctuations, sent to every bucket.
4. :class:`wid.stream.live_state.PaneProcessor` per hash bucket of the grouping keys: panes,
   emission at punctuations, late rows.

Run to completion over the same rows, ``results`` equals ``wid.replay(...).results`` and
``late`` equals its ``late``: each window is emitted at the first punctuation that closes it,
with the on-time tuples that arrived before it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from wid.aggregate.range import range_aggregate
from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_CLOSED, WID_HI, WID_LO
from wid.errors import WidError
from wid.query import CompiledQuery, compile_query, resolved
from wid.spec.clause import parse_window
from wid.text import WindowQuery
from wid.stream.live_state import END, KIND, PUNCTUATION, TUPLE, Layout, PaneProcessor, Sequencer
from wid.stream.punctuate import Generator, Marks

END_COLUMN = "wid_end"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_BUCKET, _ONE = "_wid_bucket", "_wid_one"
_views = itertools.count()


@dataclass
class Live:
    """``frame``: ``kind`` ('result' | 'late') with the columns of replay's ``results`` and
    ``late``; ``results`` and ``late``: the two kinds with exactly replay's columns (``revision``
    always 0: live mode has no allowed lateness). All three
    are views of one streaming plan: start ``frame`` (see :func:`start`) to run it once."""

    frame: DataFrame
    results: DataFrame
    late: DataFrame
    compiled: CompiledQuery


def _compiled(spark: SparkSession, query_text: str, tuples: DataFrame) -> CompiledQuery:
    """The query compiled over ``tuples`` (registered under a fresh temp view name); the window
    kind and the clauses are checked first, before Bucket runs anything on the stream (the
    Bucket of a kind live mode refuses may need a batch job, e.g. ROWS positions)."""
    parsed = WindowQuery.parse(query_text)
    spec = parse_window(parsed.window)
    if not spec.live:
        raise WidError(f"live mode supports sliding, tumbling and hopping windows on a value attribute, "
                       f"not {type(spec).__name__}")
    if parsed.order_by or parsed.limit is not None:
        raise WidError("live mode emits windows as they close: ORDER BY and LIMIT are for the sink's reader")
    view = f"wid_live_{next(_views)}"
    tuples.createOrReplaceTempView(view)
    text = re.sub(rf"(\bFROM\s+){re.escape(parsed.source)}(\s*\[)", rf"\g<1>{view}\g<2>", query_text, count=1,
                  flags=re.IGNORECASE)
    compiled = compile_query(spark, text, spec)
    if not all(a.decomposable for a in compiled.aggregates):
        raise WidError("live mode keeps panes of count, sum, avg, min and max only")
    return compiled


def _typed(schema: StructType, names: list[str]) -> list[StructField]:
    fields = {f.name: f for f in schema.fields}
    return [StructField(n, fields[n].dataType) for n in names]


def _select(frame: DataFrame, fields: list[StructField], given: dict[str, Column]) -> DataFrame:
    """``frame`` as exactly ``fields`` (in order): ``given`` expressions, other columns NULL."""
    return frame.select(*[(given[f.name] if f.name in given else F.lit(None)).cast(f.dataType).alias(f.name)
                          for f in fields])


def live(spark: SparkSession, query_text: str, stream: DataFrame, punctuation: Generator | None = None,
         *, buckets: int = 4) -> Live:
    """The live evaluation of ``query_text`` over ``stream`` (see the module doc); ``buckets``:
    hash buckets of the grouping keys (keys of the pane state)."""
    if not stream.isStreaming:
        raise WidError("wid.live needs a streaming DataFrame (spark.readStream...); use wid.replay for a table")
    if punctuation is not None and not isinstance(punctuation, Generator):
        raise WidError(f"punctuation must come from wid.punctuate (embedded, slack, heartbeat, ordered_by), "
                       f"got {punctuation!r}")
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise WidError(f"buckets must be a positive whole number, got {buckets!r}")
    ending = END_COLUMN in stream.columns
    tuples = stream.where(~F.coalesce(F.col(END_COLUMN), F.lit(False))).drop(END_COLUMN) if ending else stream
    compiled = _compiled(spark, query_text, tuples)
    marks = punctuation.marks(compiled) if punctuation is not None else Marks()
    given = marks.given
    if spark.conf.get("spark.sql.streaming.stateStore.providerClass", None) in (None, ""):
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)

    tagged, keys = compiled.tagged, list(compiled.keys)
    payload = list(tuples.columns)
    values = [a.arg for a in compiled.aggregates if a.arg is not None]
    carried = [c for c in dict.fromkeys([*keys, *payload, *values]) if c != "row_num"]
    columns = [StructField(_BUCKET, IntegerType()), StructField("row_num", LongType()),
               StructField(KIND, IntegerType()), *_typed(tagged.schema, carried),
               StructField(WID_LO, LongType()), StructField(WID_HI, LongType()), StructField(WID_CLOSED, LongType())]
    hashed = list(marks.pattern) or keys
    spread_all = F.sequence(F.lit(0), F.lit(buckets - 1))
    bucket_of = F.pmod(F.hash(*[F.col(k) for k in hashed]), F.lit(buckets)) if hashed else F.lit(0)
    own = marks.closed if marks.pattern else None
    parts = [_select(tagged, columns, {**{c: F.col(c) for c in tagged.columns}, _BUCKET: bucket_of,
                                       KIND: F.lit(TUPLE), WID_CLOSED: own if own is not None else F.lit(None)})]
    if given is not None:
        targets = spread_all  # a punctuation binding every hashed key goes to its bucket only
        if hashed and set(hashed) <= set(given.pattern):
            bound = F.lit(True)
            for k in hashed:
                bound = bound & F.col(k).isNotNull()
            targets = F.when(bound, F.array(bucket_of)).otherwise(spread_all)
        routed = given.frame.withColumn(_BUCKET, F.explode(targets))
        parts.append(_select(routed, columns, {**{c: F.col(c) for c in routed.columns}, KIND: F.lit(PUNCTUATION)}))
    on_all = _sequenced(stream, tagged, marks).withColumn(_BUCKET, F.explode(spread_all))
    parts.append(_select(on_all, columns, {c: F.col(c) for c in on_all.columns}))
    layout = _layout(compiled, marks, payload, punctuation is not None and punctuation.mode == "consistent",
                     tuple(f.name for f in columns))
    out = _union(parts).groupBy(_BUCKET).transformWithStateInPandas(PaneProcessor(layout), layout.output,
                                                                    "Append", "None")
    return _views_of(compiled, out, payload)


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for other in frames[1:]:
        out = out.unionByName(other)
    return out


def _sequenced(stream: DataFrame, tagged: DataFrame, marks: Marks) -> DataFrame:
    """The :class:`Sequencer` over every element's ``(row_num, kind, own mark on all keys)``:
    the punctuations on all keys and the end marker."""
    on_all = marks.closed if marks.closed is not None and not marks.pattern else F.lit(None)
    elements = [tagged.select("row_num", F.lit(TUPLE).alias(KIND), on_all.cast("long").alias(WID_CLOSED))]
    if marks.given is not None:
        elements.append(marks.given.frame.select("row_num", F.lit(PUNCTUATION).alias(KIND),
                                                 F.lit(None).cast("long").alias(WID_CLOSED)))
    if END_COLUMN in stream.columns:
        elements.append(stream.where(F.col(END_COLUMN)).select(
            "row_num", F.lit(END).alias(KIND), F.lit(None).cast("long").alias(WID_CLOSED)))
    return (_union(elements).withColumn(_ONE, F.lit(0)).groupBy(_ONE).transformWithStateInPandas(
        Sequencer(marks.shift), "row_num long, _wid_kind int, wid_closed long", "Append", "None"))


def _layout(compiled: CompiledQuery, marks: Marks, payload: list[str], consistent: bool,
            columns: tuple[str, ...]) -> Layout:
    """The :class:`PaneProcessor`'s view of the query; state and output types as Spark's own."""
    tagged, keys, aggregates = compiled.tagged, list(compiled.keys), list(compiled.aggregates)
    given = marks.given
    pattern = given.pattern if given is not None else marks.pattern
    shapes = given.shapes if given is not None else (marks.pattern,)
    partials = tagged.groupBy(*keys, WID_LO, WID_HI).agg(
        *[F.expr(sql).alias(name) for i, a in enumerate(aggregates) for name, sql in a.partials(i)]).schema
    finals = range_aggregate(tagged, keys, aggregates).schema
    output = StructType([StructField("kind", StringType()), *_typed(tagged.schema, payload),
                         *_typed(tagged.schema, [k for k in keys if k not in payload]), StructField(WID, LongType()),
                         StructField(EMIT_ROW, LongType()), *_typed(finals, [a.alias for a in aggregates])])
    closed = StructType([StructField("_wid_shape", IntegerType()), *_typed(tagged.schema, list(pattern)),
                         StructField(WID_CLOSED, LongType())])
    return Layout(tuple(keys), tuple(pattern), tuple(shapes), tuple(payload), tuple(aggregates),
                  own=bool(marks.pattern), consistent=consistent, pane_schema=partials, closed_schema=closed,
                  output=output, columns=columns)


def _views_of(compiled: CompiledQuery, out: DataFrame, payload: list[str]) -> Live:
    """``frame``, ``results`` and ``late`` over the processor's output ``out``; an output name
    that is also a stream column reads the result's column on result rows."""
    is_result = F.col("kind") == "result"
    named = {name: e for e, name in compiled.outputs(F.col)}  # SELECT items, window_start/_end after wid
    same = {name for c, name in compiled.output if c == name}
    columns = {name: e if name in same or name not in payload else F.when(is_result, e).otherwise(F.col(name))
               for name, e in named.items()}
    columns[EMIT_ROW] = F.col(EMIT_ROW)
    columns[REVISION] = F.when(is_result, F.lit(0)).cast("long")  # no allowed lateness: first emissions only
    for c in [*payload, WID]:
        columns.setdefault(c, F.col(c))
    frame = out.select("kind", *[e.alias(n) for n, e in columns.items()])
    if compiled.query.having:
        frame = frame.where(~is_result | F.expr(compiled.query.having))
    results = frame.where(is_result).select(*named, EMIT_ROW, REVISION)
    late = frame.where(~is_result).select(*payload, WID)
    return Live(resolved(lambda: frame), resolved(lambda: results), resolved(lambda: late), compiled)
