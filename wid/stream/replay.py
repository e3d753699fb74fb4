"""Batch replay: what a streaming WID query would have emitted, when, and what it missed.

Each window kind has its replay (:func:`wid.stream.kinds.replay`): FCF
windows by running maxima of the punctuations (:mod:`wid.stream.fcf_replay`), slide-by-tuple
windows by the bins emitted and purged on punctuation (:mod:`wid.stream.fca_replay`), sessions
by a scan per key (:mod:`wid.stream.session_replay`), SPL and Flink windows by their operator's
firings (:mod:`wid.stream.operational_replay`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession

from wid.bucket.columns import EMIT_ROW, REVISION, WID
from wid.bucket.checks import in_order
from wid.compiler.analysis import analysis_errors
from wid.compiler.query import CompiledQuery, compile_query, resolved
from wid.windows.numbers import Number, non_negative
from wid.windows.base import WindowSpec
from wid.windows.sqlexpr import column
from wid.stream import kinds
from wid.stream.punctuation import Generator, checked
from wid.compiler.text import WindowQuery


@dataclass
class Replay:
    """``results``: the query's columns + ``emit_row`` and ``revision``; ``late``: the stream's
    columns + ``wid`` (with ``window_start`` and ``window_end`` after it, as in ``results``) for each
    dropped (tuple, window) contribution; ``compiled``: the query it replays.

    With the view ``readings`` of :func:`wid.query`'s example under ``slack(0)``, the reading of key ``b``
    at ``ts = 2.5`` comes after window 1 closed: emitted ``count(*)`` + late rows = the exact count, 4:

    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.slack(0))
    >>> rep.results.columns
    ['wid', 'window_start', 'window_end', 'k', 'n', 'emit_row', 'revision']
    >>> rep.late.columns
    ['row_num', 'ts', 'arrival_ts', 'k', 'v', 'wid', 'window_start', 'window_end']
    >>> rep.results.groupBy().sum("n").first()[0], rep.late.count(), rep.punctuation
    (3, 1, Slack(amount=0, mode='generous', by='value'))
    """

    results: DataFrame
    late: DataFrame
    compiled: CompiledQuery
    punctuation: Generator | None


def replay(spark: SparkSession, query_text: str, punctuation: Generator | None = None,
           allowed_lateness: Number = 0, window: WindowSpec | None = None, *,
           source: DataFrame | None = None) -> Replay:
    """Replay ``query_text`` over its view in ``row_num`` (arrival) order, closing extents by
    ``punctuation`` (a :mod:`wid.stream.punctuate` generator; None: only the end of the stream; ROWS,
    SPL and Flink windows: implied by arrival order). ``allowed_lateness`` (window-attribute units,
    seconds for timestamps; value windows, sessions, slide-by-tuple windows): a tuple late for an
    emitted window whose end + L the punctuations have not passed yields the window's next
    ``revision`` (a results row, ``emit_row`` = the tuple) instead of late rows. ``window`` replaces
    the query's window clause (a :class:`wid.windows.flink.Discretization` for ``[flink]``).
    ``source``: a DataFrame replayed in place of the view ``FROM`` names, as in :func:`wid.query`
    (replay has no SQL text: a pipeline's own dataset, whose schema is known only when the
    pipeline runs, cannot be replayed in its definitions; a table or files can).

    With the view ``readings`` of :func:`wid.query`'s example, a slack of 0 closes window 1
    (``[2, 4)``) once ``ts = 4.0`` arrives, before the reading at ``ts = 2.5``:

    >>> rep = wid.replay(spark, "SELECT sum(v) AS total FROM readings [RANGE 2 SLIDE 2 WATTR ts]",
    ...                  wid.punctuate.slack(0))
    >>> rep.results.orderBy("wid").show()
    +---+------------+----------+-----+--------+--------+
    |wid|window_start|window_end|total|emit_row|revision|
    +---+------------+----------+-----+--------+--------+
    |  0|         0.0|       2.0|    5|       1|       0|
    |  2|         4.0|       6.0|    7|       3|       0|
    |  4|         8.0|      10.0|    2|    NULL|       0|
    +---+------------+----------+-----+--------+--------+
    <BLANKLINE>
    >>> rep.late.select("row_num", "ts", "wid", "window_start", "window_end").show()
    +-------+---+---+------------+----------+
    |row_num| ts|wid|window_start|window_end|
    +-------+---+---+------------+----------+
    |      2|2.5|  1|         2.0|       4.0|
    +-------+---+---+------------+----------+
    <BLANKLINE>

    Replay reads the arrival order, whatever the window: a view without ``row_num`` is refused
    before any Spark job, naming the fix (:func:`wid.arrival`):

    >>> spark.table("readings").drop("row_num").createOrReplaceTempView("events")
    >>> wid.replay(spark, "SELECT sum(v) AS total FROM events [RANGE 2 SLIDE 2 WATTR ts]")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: replay reads arrival order but view 'events' has no row_num column: add one with wid.arrival...
    """
    non_negative("allowed_lateness", allowed_lateness)
    view = None if source is not None else WindowQuery.parse(query_text).source
    with analysis_errors(spark, view):  # a classic session analyses each step as it is built
        compiled = compile_query(spark, query_text, window, arrival="replay", source=source)
        compiled = replace(compiled, tagged=in_order(compiled.tagged))
        punctuation = checked(punctuation, compiled.spec)
        results, late = kinds.replay(compiled.spec, compiled, punctuation, allowed_lateness)
        extra = [c for c in (EMIT_ROW, REVISION) if c in results.columns]
        late = late.select("*", *[e.alias(name) for e, name in compiled.bounds(column(WID))])  # as results: after wid
    return Replay(resolved(compiled.finish, results, *extra, spark=spark, view=view), late, compiled, punctuation)
