"""Replay of session windows: sessions close on punctuation and are forgotten past cleanup.

Per key, in arrival order (a punctuation at row r right after tuple r), the state machine of
:class:`wid.stream.sessions.KeySessions` (Flink's merging windows with allowed lateness), with
``B`` the running max of the key's punctuation bounds (in ``wid_x`` units), ``L`` the allowed
lateness (same units, default 0) and exact arithmetic:

- a tuple at ``x`` *touches* a session (first ``s``, last ``last``) when
  ``s - g <= x <= last + g`` (sessions that touch merge, as in :func:`wid.query`); with a gap
  expression, each tuple's own gap ``h`` in ``x`` units (:func:`wid.bucket.gaps.gap_x`):
  ``s <= x + h`` and ``x <=`` the session's end, the largest ``x + h`` of its tuples, which
  every rule below reads for ``last + g``;
- a session is *complete* once the bound passes its end, ``last + g < B`` (a tuple still to
  come has ``x >= B``: past its reach); *closed* once emitted (until a tuple changes it) and
  *forgotten* when closed with ``last + g + L < B`` (the bound passes ``end + L``, Flink's
  cleanup time): its last emission stands, and no later tuple touches it;
- a tuple merges with every kept session it touches. The merged session keeps the least id
  among them (a retired id's last revision is empty: ``count(*)`` 0, NULL extent, emitted on
  this tuple's arrival); when ``last + g < B`` it is emitted at once (``emit_row`` = the
  tuple), as the id's next ``revision`` (or revision 0 under a new id), else it stays open.
  Touching no kept session, it opens its own (a new id once emitted: a forgotten session's
  successor, which may overlap it), unless that is past cleanup already, ``x + g + L < B``:
  then it is late (``wid`` NULL: it belongs to no session);
- a punctuation closes (emits) the open sessions with ``last + g < B``, in start order; the
  end of the stream emits the rest (``emit_row`` NULL). New ids count a key's emitted
  sessions from 0, so with nothing late they are the exact query's ids.

With ``L = 0`` a session is forgotten as it is emitted, so nothing is re-emitted and every row
has revision 0. Conservation, per key: each tuple is in exactly one id's last revision or in
``late``: the last revisions' ``count(*)`` + the late tuples = the exact count. The scan is
sequential per key (a grouped Arrow pass), as sessions merge in arrival order.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

from wid.aggregate.range import range_aggregate
from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_CLOSED, WID_HI, WID_LO, WID_X, attribute_type
from wid.bucket.plain import PlainNames
from wid.bucket.gaps import exact_x, gap_in_x, gap_x, lateness_in_x
from wid.bucket.session import with_extents
from wid.windows.numbers import Number
from wid.stream.punctuation import Generator, Punctuations
from wid.stream.sessions import KeySessions
from wid.windows.sqlexpr import column, columns

_KIND, _VALUE, _GAP, _LATE, _RETIRED = "_wid_kind", "_wid_value", "_wid_gap", "_wid_late", "_wid_retired"


def replay(compiled, punctuation: Generator | None, allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """``(results with emit_row and revision, late)`` of a session query under ``punctuation``
    (None: only the end of the stream) and ``allowed_lateness`` (``wattr`` units, seconds for
    timestamps); ``late`` holds the stream's columns and ``wid``.

    ``[SESSION 1 WATTR ts] GROUP BY k`` over ``readings`` under ``slack(0)``: the reading of key ``b`` at
    ``ts = 2.5`` comes when the bound is 4, past the end 3.5 of its own session: late (no id). An
    allowed lateness of 1 takes it (3.5 + 1 is not below 4): its session, complete already, is
    emitted on its arrival:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [SESSION 1 WATTR ts] GROUP BY k")
    >>> results, late = replay(compiled, wid.punctuate.slack(0))
    >>> sorted(tuple(r) for r in results.select("k", "wid", "session_start", "session_end", "emit_row").collect())
    [('a', 0, 1.0, 2.0, 1), ('a', 1, 4.0, 5.0, 3), ('a', 2, 9.0, 10.0, None)]
    >>> late.select("row_num", "k", "wid").collect()
    [Row(row_num=2, k='b', wid=None)]
    >>> results, late = replay(compiled, wid.punctuate.slack(0), allowed_lateness=1)
    >>> results.where("k = 'b'").select("wid", "session_start", "session_end", "emit_row").collect(), late.count()
    ([Row(wid=0, session_start=2.5, session_end=3.5, emit_row=2)], 0)
    """
    spec, tagged = compiled.spec, compiled.tagged
    source = compiled.source.columns
    punctuations = punctuation.punctuations(compiled) if punctuation is not None else Punctuations(
        tagged.select("row_num", column(WID_X).alias(WID_CLOSED)).limit(0), (), ((),))
    dtype = attribute_type(tagged, spec.wattr)
    gap, lateness = None if spec.dynamic else gap_in_x(spec, dtype), lateness_in_x(spec, dtype, allowed_lateness)
    keys = list(spec.keys)
    value = column(exact_x(spec, dtype))  # exact: micros, longs, decimals, doubles
    own = gap_x(tagged, spec) if spec.dynamic else F.lit(None).cast(LongType())  # each tuple's gap, or the constant
    tuples = tagged.select("row_num", *columns(keys), F.lit(0).alias(_KIND), value.alias(_VALUE), own.alias(_GAP),
                           F.lit(None).cast(punctuations.frame.schema[WID_CLOSED].dataType).alias(WID_CLOSED))
    present = tagged.select(*columns(keys)).distinct()
    events = tuples
    for shape in punctuations.shapes:
        named = [f"_wid_p{i}" for i in range(len(shape))]  # no column of the join on both sides
        frame = punctuations.shaped(shape).toDF("row_num", *named, WID_CLOSED)
        matched = present.join(frame, [column(c).eqNullSafe(column(n)) for c, n in zip(shape, named)]) \
            if shape else present.crossJoin(frame)
        events = events.unionByName(matched.select("row_num", *columns(keys), F.lit(1).alias(_KIND),
                                                   F.lit(None).cast(tuples.schema[_VALUE].dataType).alias(_VALUE),
                                                   F.lit(None).cast(tuples.schema[_GAP].dataType).alias(_GAP),
                                                   WID_CLOSED))
    schema = StructType([StructField("row_num", LongType()), StructField(WID, LongType()),
                         StructField(REVISION, LongType()), StructField(EMIT_ROW, LongType()),
                         StructField(_RETIRED, BooleanType()), StructField(_LATE, BooleanType())])

    def scan(pdf: pd.DataFrame) -> pd.DataFrame:
        state = KeySessions(gap, lateness)
        pdf = pdf.sort_values(["row_num", _KIND], kind="stable")
        for row, kind, x, h, bound in zip(pdf["row_num"], pdf[_KIND], pdf[_VALUE], pdf[_GAP], pdf[WID_CLOSED]):
            if kind == 0:
                state.arrive(int(row), Fraction(x), gap=None if gap is not None else Fraction(h))
            elif not pd.isna(bound):
                state.punctuate(int(row), Fraction(bound))
        state.punctuate(None, None)
        placed = [(*m, False, False) for m in state.members] + [(*r, True, False) for r in state.retired] + \
            [(row, None, None, None, False, True) for row in state.late]
        fields = list(zip(*placed)) or [[]] * 6
        return pd.DataFrame({name: pd.array(values, dtype="Int64") for name, values in
                             zip(["row_num", WID, REVISION, EMIT_ROW], fields)} |
                            {name: pd.array(values, dtype="boolean") for name, values in
                             zip([_RETIRED, _LATE], fields[4:])})

    events, names = PlainNames.of(events if keys else events.withColumn("_wid_all", F.lit(0)))
    fates = events.groupBy(*[names.column(k) for k in keys or ["_wid_all"]]).applyInPandas(scan, schema)
    placed = tagged.drop(WID_LO, WID_HI, *spec.extent_columns).join(fates, "row_num")
    members = placed.where(column(WID).isNotNull() & ~column(_RETIRED)).withColumn(WID_LO, column(WID)) \
        .withColumn(WID_HI, column(WID)).drop(WID)
    on_time = with_extents(members, replace(spec, keys=(*spec.keys, REVISION)))  # an extent per revision
    groups = [*compiled.keys, EMIT_ROW, REVISION]
    results = range_aggregate(on_time, groups, compiled.aggregates)
    retired = placed.where(column(_RETIRED))
    if allowed_lateness:
        empty = tagged.limit(0).groupBy().agg(*[a.direct().alias(a.alias) for a in compiled.aggregates])
        retired = retired.select(*[F.lit(None).cast(on_time.schema[c].dataType).alias(c) if c in spec.extent_columns
                                   else column(c) for c in groups], WID).crossJoin(empty)
        results = results.unionByName(retired)
    late = placed.where(column(_LATE)).select(*columns(source), F.lit(None).cast(LongType()).alias(WID))
    return results, late
