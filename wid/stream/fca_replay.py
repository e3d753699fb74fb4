"""FCA replay: the bins emitted and purged on punctuation (the paper's processpunctuation).

A punctuation with bound ``b`` (``wid_closed``, strict for FCA windows: no later tuple has
``x < b``) completes every window ``w < b``. Per chunk and key partition the scan takes the
tuples and the key's punctuations in arrival order (a punctuation at ``row_num = p`` after
tuple ``p``); with ``B`` = the largest bound before a tuple arrives:

- a tuple is **late** when ``x < B``: it is late for its windows ``w < B`` (generous: the
  bins take it for the others, ``[B, x + r)``) or for all of them (consistent: it is not
  added at all);
- each window ``w`` is emitted at the first punctuation with ``b > w``: ``Bins.at(w)`` with
  that punctuation's ``row_num`` as ``emit_row``; windows no punctuation closes are emitted
  at the end of the stream (``emit_row`` NULL);
- the window-ids are those of the whole stream (docs/semantics.md sections 3.8, 3.9: FCB and FCU positions count
  every tuple, late ones too). A window whose defining tuple (the first to arrive, of any key)
  comes after its key's punctuation is emitted on that tuple's arrival (its ``row_num``);
  the bins are purged only below the bound of every key (wildcard punctuations), and a
  window whose defining tuple comes after such a bound passed it is **lost**: never emitted,
  every contribution to it late.

``late`` holds one row per dropped (tuple, window) contribution, so emitted + late = exact
per window and key; with correct punctuations nothing is late and the results are
``wid.query``'s. Punctuations go to the chunks they touch: to chunk ``c`` those whose
bound falls in it or the chunk before and, per pattern, the first one past it.

Allowed lateness ``L`` (x units) moves what is late for good to the windows ``w < B - L``
(``wid.stream.fcf_replay.Lagged``: ``closed(b - L)``, the bins purged below it too): a tuple's
windows in ``[max(a, B - L), B)`` that were emitted before it arrived are each emitted again on
its arrival, the window's next ``revision`` (the bins then hold every tuple admitted so far);
a window whose defining tuple comes after a wildcard bound ``- L`` passed it is lost.

This module builds the Spark plan (chunks, the punctuations each chunk needs, the grouped scan,
late rows joined back to the stream); the scan of one chunk is :mod:`wid.stream.fca_scan`.
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, LongType, StructField

from wid.aggregate.fca import CHUNK_ROWS, Chunks, arrow_schema, bins_schema, chunk_rows_of, numeric_types, typed
from wid.bucket.columns import (EMIT_ROW, REVISION, WID, WID_CLOSED, WID_X, attribute_type, id_units,
                                rattr_value)
from wid.bucket.fca import CHUNK, units
from wid.bucket.nan import NanFlags
from wid.bucket.plain import PlainNames
from wid.errors import WidError
from wid.windows.numbers import Number, as_number, times
from wid.stream.fca_scan import KIND, LATE, scanner
from wid.stream.punctuation import Generator, Punctuations
from wid.windows.sqlexpr import column, columns

_LAST = "_wid_last"


def replay(compiled, punctuation: Generator | None, allowed_lateness: Number = 0,
           chunk_rows: int = CHUNK_ROWS) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (a slide-by-tuple :class:`wid.compiler.query.CompiledQuery`)
    under ``punctuation`` (None: only the end of the stream) and ``allowed_lateness`` (``rattr``
    units, seconds for timestamps): the results are the aggregate's columns plus ``emit_row``
    and ``revision``, ``late`` the stream's columns plus ``wid``. ``chunk_rows`` sizes the
    chunks of the x axis (:func:`wid.aggregate.range.fca.chunk_rows_of`).

    The windows ``(w - 2, w]`` of ``readings`` (``ts`` 1, 4, 2.5, 9) under ``slack(0)``: the tuple at 2.5
    comes once the bound is 4, so window 2.5, defined by it after a wildcard bound passed it, is lost
    (both its contributions late); generous mode counts the tuple in window 4, consistent mode drops it there too:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 2 RATTR ts SLIDE 1 ROW "
    ...                                 "SATTR row_num]")
    >>> results, late = replay(compiled, wid.punctuate.slack(0))
    >>> sorted(tuple(r) for r in results.select("wid", "emit_row").collect())
    [(1.0, 1), (4.0, 3), (9.0, None)]
    >>> sorted(tuple(r) for r in late.select("row_num", "wid").collect())
    [(0, 2.5), (2, 2.5)]
    >>> _, late = replay(compiled, wid.punctuate.slack(0, mode="consistent"))
    >>> sorted(tuple(r) for r in late.select("row_num", "wid").collect())
    [(0, 2.5), (2, 2.5), (2, 4.0)]
    """
    tagged, spec, keys, aggregates = compiled.tagged, compiled.spec, compiled.keys, compiled.aggregates
    numeric = numeric_types(tagged, aggregates)
    if numeric is None:
        raise WidError("replay of slide-by-tuple windows holds count, sum, avg, min and max of numbers in its bins; "
                       "query the other aggregates with wid.query")
    r, dtype = units(tagged, spec)
    lag = _lag(tagged, spec, allowed_lateness)
    punctuations = punctuation.punctuations(compiled) if punctuation is not None else Punctuations(
        tagged.select("row_num", column(WID_X).alias(WID_CLOSED)).limit(0), (), ((),))
    nan = NanFlags.of(tagged.schema, punctuations.pattern)  # a bound on a NaN key binds that key, not all
    tagged, keys, punctuations = nan.add(tagged), nan.keys(keys), punctuations.flagged(nan)
    chunks = chunk_rows_of(tagged, r, keys, aggregates, chunk_rows)
    consistent = punctuation is not None and punctuation.mode == "consistent"
    schema = bins_schema(tagged, r, keys, aggregates, numeric, StructField(EMIT_ROW, LongType()),
                         StructField(REVISION, LongType()), StructField(LATE, LongType()))
    marks = _marks(punctuations, chunks)
    if lag:
        marks = marks.unionByName(_marks(punctuations, chunks, lag)).distinct()
    events = chunks.rows.withColumn(KIND, F.lit(0)).unionByName(marks, allowMissingColumns=True)
    scan = scanner(r, keys, aggregates, numeric, punctuations.pattern, punctuations.wildcard, consistent, lag,
                   arrow_schema(schema))
    events, names = PlainNames.of(events)
    out = events.groupBy(CHUNK).applyInArrow(lambda table: scan(names.arrow(table)), schema)

    results = nan.restore(typed(out.where(column(LATE).isNull()), tagged, dtype, keys, aggregates, EMIT_ROW, REVISION))
    source = compiled.source
    pairs = out.where(column(LATE).isNotNull()).select(
        column(LATE).alias("row_num"), rattr_value(column(WID), dtype).alias(WID))
    return results, source.join(pairs, "row_num").select(*columns(source.columns), WID)


def _lag(tagged: DataFrame, spec, allowed_lateness: Number) -> Number:
    """``allowed_lateness`` in x units; on a double ``x`` a binary fraction (``b - L`` is then
    rounded up exactly, as the ends of :func:`wid.aggregate.bins.ends`)."""
    if not allowed_lateness:
        return 0
    dtype = attribute_type(tagged, spec.rattr)
    lag = times(as_number(allowed_lateness, "allowed_lateness"), id_units(column(spec.rattr), dtype, spec)[1])
    if isinstance(dtype, (FloatType, DoubleType)) and Decimal(float(lag)) != lag:
        raise WidError(f"allowed_lateness {allowed_lateness} is not a binary fraction, so w < bound - L on the "
                       f"double {spec.rattr!r} cannot be decided exactly: give one such as 0.5, or CAST "
                       f"{spec.rattr} to a decimal")
    return lag


def _marks(punctuations: Punctuations, chunks: Chunks, lag: Number = 0) -> DataFrame:
    """The punctuations each chunk needs: those whose largest closed window lies in it or in the
    chunk before (its tuples' ``x`` may lie there, at most ``r`` below it) and, per pattern,
    the first one whose bound passes it (it closes all its windows). With ``lag``: the same
    for the bounds ``b - lag`` (the keys' bounds before a tuple, from a superset of either
    selection, compare alike with the chunk's values)."""
    frame = punctuations.frame.select("row_num", *columns(punctuations.pattern), WID_CLOSED)  # bounds of x's type
    bound = column(WID_CLOSED) - F.lit(lag) if lag else column(WID_CLOSED)
    last = (F.ceil(bound / F.lit(chunks.width)) - 1).cast("long")  # the chunk of w just below b
    own = frame.withColumn(CHUNK, F.explode(F.array(last - 1, last, last + 1))).where(  # (a chunk of margin:
        # chunk_of may round) tuples reach r < width below
        column(CHUNK).between(chunks.first, chunks.last))
    firsts = frame.withColumn(_LAST, last).groupBy(*columns(punctuations.pattern), _LAST).agg(
        F.min_by(WID_CLOSED, "row_num").alias(WID_CLOSED), F.min("row_num").alias("row_num"))
    passing = firsts.where(column(_LAST) > chunks.first).withColumn(
        CHUNK, F.explode(F.sequence(F.lit(chunks.first).cast("long"), F.least(column(_LAST) - 1, F.lit(chunks.last)))))
    return own.unionByName(passing.drop(_LAST)).withColumn(KIND, F.lit(1))


__all__ = ["replay"]
