"""Live mode's pane step on the JVM (:mod:`wid.jvm`): the seam :func:`jvm_panes` that
:func:`wid.stream.live.job.live` takes for the pane step when the session can run it.

The step is the same as :class:`wid.stream.live.state.PaneProcessor` (its module doc states it)
and sees the same elements, as Spark rows instead of Arrow cells: Spark's ``transformWithState``
hands the JVM a bucket's rows with no Python in between. Timestamps (``TIMESTAMP``;
``TIMESTAMP_NTZ`` stays a ``LocalDateTime``) travel as epoch microseconds (longs), the step's
output timestamps (keys, payload, min and max partials) too: the JVM's row encoder would make a
``java.sql.Timestamp`` of each. The records of the ``spread`` columns that every bucket needs
reach the other buckets as mark rows, as :func:`wid.stream.live.input.pack` sends them
(``wid.jvm.Route``, a ``mapPartitions`` that passes the elements through and adds the marks,
in the same read of the stream). The layout travels as JSON (:func:`layout_json`); over Spark
Connect the server runs the step through wid's relation plugin (:func:`wid.jvm.pane_step`).
Sessions, slide-by-tuple, SPL and Flink windows keep their Python steps.
"""

from __future__ import annotations

import json
import logging

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, DecimalType, DoubleType, LongType, StructType, TimestampType

from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED, WID_HI, WID_LO
from wid.bucket.checks import in_order
from wid.jvm import pane_step, unavailable
from wid.windows.sqlexpr import column
from wid.stream.live.input import BUCKET, KIND, bucket_keys
from wid.stream.live.panes import partial_names
from wid.stream.live.state import KEPT
from wid.stream.live.windows import Layout, Tagger

log = logging.getLogger("wid.live")
_TYPES = {LongType: "long", DoubleType: "double", DecimalType: "decimal"}


def periodic(tagger: Tagger, period: int) -> dict[str, list[int]] | None:
    """A ROWS window's ids of positions ``0 .. period - 1`` when the ids of ``x + period`` are
    those of ``x`` plus one (checked over three periods), else None: the table the JVM step
    extends to every position.

    >>> from wid.windows.context_free import TupleSliding
    >>> periodic(TupleSliding(3, 2).tag_positions, 2)
    {'lo': [0, 0], 'hi': [0, 1], 'closed': [-1, 0]}
    >>> periodic(TupleSliding(3, 2).tag_positions, 3) is None
    True
    """
    ids = tagger(np.arange(3 * period, dtype="int64"))
    if any(not np.array_equal(v[period:], v[:-period] + 1) for v in ids):
        return None
    return {name: [int(i) for i in v[:period]] for name, v in zip(("lo", "hi", "closed"), ids)}


def layout_json(layout: Layout, schema: StructType, tagger: dict[str, list[int]] | None = None) -> dict | None:
    """The step's view of ``layout`` over elements of ``schema`` (column positions), as the JSON
    ``wid.jvm.PaneStep`` reads (as a dict); None when a punctuation pattern column is no grouping key.

    >>> from pyspark.sql.types import IntegerType, StringType, StructField
    >>> from wid.aggregate.partials import Aggregate
    >>> from wid.stream.live.windows import Bounds
    >>> schema = StructType([StructField(c, t) for c, t in [(BUCKET, IntegerType()), ("row_num", LongType()),
    ...     (KIND, IntegerType()), ("k", StringType()), ("v", LongType()), (WID_LO, LongType()), (WID_HI, LongType()),
    ...     (WID_CLOSED, LongType())]])
    >>> layout = Layout(("k",), Bounds(("k",), (("k",),)), ("row_num", "k", "v"), (Aggregate("n", "count"),),
    ...                 own=True, on_all=False, shift=0, consistent=False,
    ...                 pane_schema=StructType([StructField("_wid_p0", LongType())]), closed_schema=StructType(),
    ...                 output=StructType([StructField("kind", StringType()), StructField("k", StringType()),
    ...                                    StructField(WID, LongType()), StructField("_wid_p0", LongType())]))
    >>> step = layout_json(layout, schema)
    >>> step["keys"], step["pattern_key"], step["partials"], step["result"], step["late"]
    ([3], [0], [{'how': 'count', 'arg': -1, 'type': 'long'}], ['kind', 'k0', 'w', 'a0'], ['kind', 'p1', 'w', None])
    """
    at = {name: i for i, name in enumerate(schema.names)}
    keys, bounds = list(layout.keys), layout.bounds
    if not set(bounds.pattern) <= set(keys):
        return None
    present = dict(bounds.present)
    parts = []
    owners = [a for i, a in enumerate(layout.aggregates) for _ in a.partials(i)]
    for a, (name, how) in zip(owners, partial_names(list(layout.aggregates))):
        counted = a.fn == "count" or (a.fn == "avg" and name.endswith("n"))
        parts.append({"how": "count" if counted else how, "arg": at[a.arg] if a.arg is not None else -1,
                      "type": _TYPES.get(type(layout.pane_schema[name].dataType), "any")})
    names = layout.partials
    result, late = [], []
    for field in layout.output.fields:
        n = field.name
        result.append("kind" if n == "kind" else f"k{keys.index(n)}" if n in keys else "w" if n == WID
                      else "e" if n == EMIT_ROW else f"a{names.index(n)}" if n in names else None)
        late.append("kind" if n == "kind" else f"p{layout.payload.index(n)}" if n in layout.payload
                    else "w" if n == WID else None)
    step = {"output": json.loads(layout.output.json()), "bucket": at[BUCKET], "row_num": at["row_num"],
            "kind": at[KIND], "lo": at[WID_LO], "hi": at[WID_HI], "closed": at[WID_CLOSED], "kept": at.get(KEPT, -1),
            "keys": [at[k] for k in keys], "payload": [at[c] for c in layout.payload],
            "pattern": [at[c] for c in bounds.pattern], "present": [at[present.get(c, c)] for c in bounds.pattern],
            "pattern_key": [keys.index(c) for c in bounds.pattern],
            "shapes": [[bounds.pattern.index(c) for c in shape] for shape in bounds.shapes],
            "wildcard": bounds.wildcard, "own": layout.own, "on_all": layout.on_all, "shift": layout.shift,
            "consistent": layout.consistent, "open": layout.open, "partials": parts, "tagger": tagger,
            "result": result, "late": late}
    return step


def jvm_panes(spark: SparkSession, layout: Layout, elements: DataFrame, buckets: int, spread: tuple[str, ...],
              period: int | None = None) -> DataFrame | None:
    """The pane step's output (``layout.output``) over ``elements`` (the bucketed stream of
    :func:`wid.stream.live.job.live`, bucket numbers ``0 .. buckets - 1``) on the JVM;
    ``spread``: the columns every bucket needs the records of (of its tuples); ``period``: a
    ROWS window's slide (its ids repeat, one higher, every ``period`` positions). None, with one logged line saying why,
    when the JVM step cannot serve: the session cannot run it, or the layout is beyond it.
    """
    why = unavailable(spark)
    tagger = None
    if why is None and layout.tagger is not None:
        tagger = periodic(layout.tagger, int(period)) if period is not None else None
        why = None if tagger is not None else "a ROWS window whose ids do not repeat with its slide"
    if why is None and any(isinstance(elements.schema[c].dataType, BinaryType) for c in layout.keys):
        why = "a binary grouping key"
    step = layout_json(layout, elements.schema, tagger) if why is None else None
    if why is None and step is None:
        why = "a punctuation pattern column that is no grouping key"
    if why is not None:
        log.warning(f"wid: live mode uses the Python step: {why}")
        return None
    step.update(bucket_keys=list(bucket_keys(buckets)), spread=[elements.columns.index(c) for c in spread])
    elements = in_order(elements, "tuple or punctuation")  # before the JVM's row encoder meets a NULL
    timestamps = {f.name for f in elements.schema.fields if isinstance(f.dataType, TimestampType)}
    step["output"]["fields"] = [{**f, "type": "long"} if f["type"] == "timestamp" else f
                                for f in step["output"]["fields"]]
    elements = elements.select(*[F.unix_micros(column(c)).alias(c) if c in timestamps else column(c)
                                 for c in elements.columns])
    out = pane_step(elements, json.dumps(step))
    return out.select(*[F.timestamp_micros(column(f.name)).alias(f.name) if isinstance(f.dataType, TimestampType)
                        else column(f.name) for f in layout.output.fields])
