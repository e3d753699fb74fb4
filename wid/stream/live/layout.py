"""The stateful step's view of a live query (:mod:`wid.stream.live.job`): its
:class:`~wid.stream.live.windows.Layout`, with state and output schemas of Spark's own types.
"""

from __future__ import annotations

from fractions import Fraction

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegerType, LongType, StringType, StructField, StructType

from wid.aggregate.partials import Aggregate
from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_CLOSED, WID_HI, WID_LO
from wid.compiler.query import CompiledQuery
from wid.stream.live.sessions.scans import REVISIONS
from wid.stream.live.windows import SHAPE, Bounds, Layout, Tagger
from wid.stream.punctuation import Marks
from wid.windows.sqlexpr import column, columns


def typed(schema: StructType, names: list[str]) -> list[StructField]:
    """The fields of ``schema`` named ``names``, in that order, as nullable fields.

    >>> typed(StructType([StructField("k", StringType(), False), StructField("v", LongType(), False)]), ["v", "k"])
    [StructField('v', LongType(), True), StructField('k', StringType(), True)]
    """
    fields = {f.name: f for f in schema.fields}
    return [StructField(n, fields[n].dataType) for n in names]



def bound_type(tagged: DataFrame, marks: Marks, x: str) -> DataType:
    """A bound on ``x`` (sessions, slide-by-tuple windows) is a value of ``x``: the type (Spark's
    common type) that holds ``x`` and every bound the punctuations give.

    >>> from decimal import Decimal
    >>> readings = spark.table("readings")
    >>> bound_type(readings, Marks(F.lit(3)), "ts"), bound_type(readings, Marks(F.lit(Decimal("2.50"))), "row_num")
    (DoubleType(), DecimalType(22,2))
    """
    bounds = [column(x), *([marks.closed] if marks.closed is not None else [])]
    if marks.given is not None:
        bounds.append(F.lit(None).cast(marks.given.frame.schema[WID_CLOSED].dataType))
    return tagged.select(F.coalesce(*bounds)).schema[0].dataType


def layout_of(compiled: CompiledQuery, keys: list[str], aggregates: list[Aggregate], marks: Marks,
              payload: list[str], consistent: bool, on_all: bool, tagger: Tagger | None,
              sessions: tuple[Fraction | None, str, str | None] | None, closed_type: DataType, wid_type: DataType = LongType(),
              present: dict[str, str] | None = None, lateness: Fraction | None = None) -> Layout:
    """The stateful step's view of the query (:class:`wid.stream.live.state.PaneProcessor`);
    state and output types as Spark's own (sessions: a pane is a key's open session; ``wid_type``:
    the output window-id's, ``wid_x``'s for slide-by-tuple windows; ``present``: as
    :attr:`Bounds.present`; ``sessions``: :attr:`Layout.gap`, :attr:`~Layout.x`, :attr:`~Layout.reach`;
    ``lateness``: :attr:`Layout.lateness`, a session's state then keeps its id and revision and
    results their ``revision``).

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, avg(v) AS m FROM readings [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k")
    >>> marks = wid.punctuate.ordered_by("k").marks(compiled)  # each tuple punctuates its own key
    >>> layout = layout_of(compiled, ["k"], compiled.aggregates, marks, ["row_num", "k", "v"], False, False, None,
    ...                    None, LongType())
    >>> layout.bounds
    Bounds(pattern=('k',), shapes=(('k',),), wildcard=False, present=())
    >>> layout.own, layout.pane_schema.simpleString()
    (True, 'struct<k:string,wid_lo:bigint,wid_hi:bigint,_wid_p0s:double,_wid_p0n:bigint>')
    """
    tagged = compiled.tagged
    given = marks.given
    pattern = given.pattern if given is not None else marks.pattern
    shapes = given.shapes if given is not None else (marks.pattern,)
    types = {f.name: f.dataType for f in tagged.schema.fields}
    partials = tagged.groupBy(*columns(keys), WID_LO, WID_HI).agg(
        *[F.expr(sql).alias(name) for i, a in enumerate(aggregates) for name, sql in a.partials(i, types.get(a.arg))])
    parts = partials.schema.fields[len(keys) + 2:]
    revised = lateness is not None
    panes = partials.schema if sessions is None else StructType([*typed(tagged.schema, keys), *parts,
                                                                 *(REVISIONS if revised else ())])
    output = StructType([StructField("kind", StringType()), *typed(tagged.schema, payload),
                         *typed(tagged.schema, [k for k in keys if k not in payload]), StructField(WID, wid_type),
                         StructField(EMIT_ROW, LongType()), *([StructField(REVISION, LongType())] if revised else []),
                         *parts])
    closed = StructType([StructField(SHAPE, IntegerType()), *typed(tagged.schema, list(pattern)),
                         StructField(WID_CLOSED, closed_type)])
    bounds = Bounds(tuple(pattern), tuple(shapes), given.wildcard if given is not None else marks.wildcard,
                    tuple((c, flag) for c, flag in (present or {}).items() if c in pattern))
    return Layout(tuple(keys), bounds, tuple(payload), tuple(aggregates),
                  own=bool(marks.pattern) or tagger is not None, on_all=on_all, shift=marks.shift,
                  consistent=consistent, pane_schema=panes, closed_schema=closed, output=output,
                  tagger=tagger, open=compiled.spec.open_end, lateness=lateness,
                  **({} if sessions is None else dict(zip(("gap", "x", "reach"), sessions))))
