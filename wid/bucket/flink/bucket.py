"""Flink window discretization (Traub 2015, seed 001) on the range-tag pipeline.

The policies and :class:`Discretization` are in :mod:`wid.windows.flink`. :func:`flink_bucket`
tags each item with ``wid_lo``/``wid_hi``, the emissions that hold it, on one of three paths
(:func:`path`): ``columns`` and ``chain`` compute the positions of triggers and evictions
(:mod:`wid.bucket.flink.compiled`), ``scan`` replays the buffer event by event
(:mod:`wid.bucket.flink.scan`). One rule for delta policies: the ``chain`` path needs each delta
attribute non-decreasing within each buffer, checked on the data (one Spark job). The
``columns`` path's steps (:mod:`wid.bucket.steps`) also render as Spark SQL text for
:func:`wid.to_sql` (:func:`flink_bucket_sql`); the other paths run Python and refuse.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql.types import NumericType

from wid.bucket.clock import T, T0, TEND, clock, clock_steps, clocked, time_scale
from wid.bucket.columns import attribute_type, column, unranged
from wid.bucket.checks import checked
from wid.bucket.flink.compiled import N, POS, chain, column_steps, columns
from wid.bucket.flink.scan import Buffers, Scanner, scan
from wid.bucket.positions import Firing, LiveScan, check_inputs, firings, in_a_window, non_decreasing
from wid.bucket.steps import staged
from wid.errors import WidError
from wid.windows.flink import Discretization, Path
from wid.windows.sqlexpr import Sql

_PATHS = {"columns": columns, "chain": chain, "scan": scan}


def _checked(df: DataFrame, spec: Discretization) -> DataFrame:
    """Checked inputs: the columns exist, delta attributes are numbers (NULL and NaN fail the
    query), markers are boolean."""
    policies = spec.triggers + spec.evictions
    check_inputs(df, spec.per_group, [p.marker for p in policies if getattr(p, "marker", None) is not None],
                 "punctuation")
    for attr in (a for policy in policies for a in getattr(policy, "attrs", ())):
        dtype = attribute_type(df, attr)
        if not isinstance(dtype, NumericType):
            raise WidError(f"delta attribute {attr!r} must be numeric, not {dtype.simpleString()}")
        df = df.withColumn(attr, checked(column(attr), dtype, attr))
    return df


def _prepared(df: DataFrame, spec: Discretization, live: bool = False) -> tuple[DataFrame, int]:
    """:func:`_checked` inputs and, for time policies, the arrival clock on ``spec.ts``
    (:func:`wid.bucket.clock.clocked`) with its scale (``live``: the clock only, row by row; the
    scan checks its order and finds its ends)."""
    df = _checked(df, spec)
    if not spec.timed:
        return df, 1
    return (df.withColumn(T, clock(df, spec.ts)) if live else clocked(df, spec.ts)), time_scale(df, spec.ts)


def path(df: DataFrame, spec: Discretization) -> Path:
    """How ``spec`` tags ``df``: :attr:`Discretization.path`, or ``scan`` when a delta attribute of
    the ``chain`` path decreases somewhere within a buffer.

    One buffer for the stream, where ``ts`` decreases (4.0, then 2.5): the scan instead of the chain.

    >>> from wid.windows.flink import DeltaTrigger
    >>> spec = Discretization([DeltaTrigger(2.0, "ts")])
    >>> spec.path, path(spark.table("readings"), spec)
    ('chain', 'scan')
    """
    attrs = {a for p in spec.triggers + spec.evictions for a in getattr(p, "attrs", ())}
    if spec.path == "chain" and not all(non_decreasing(df, a, spec.per_group) for a in attrs):
        return "scan"
    return spec.path


def flink_bucket(df: DataFrame, spec: Discretization, how: Path | None = None) -> DataFrame:
    """``df`` with ``wid_lo``/``wid_hi``: the emissions of ``spec`` that hold each item. ``how``
    forces a path (for benchmarks and tests; exact only where :func:`path` picks it).

    ``CountTrigger(2)`` fires on item 2 (emitting items 0 and 1), ``CountEviction(3)`` drops item 0 as item 3
    arrives, and the end of the stream emits the buffer (items 1 to 3) once more:

    >>> from wid.windows.flink import CountEviction, CountTrigger
    >>> rows = flink_bucket(spark.table("readings"), Discretization([CountTrigger(2)], [CountEviction(3)]))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in rows.collect())
    [(0, 0, 0), (1, 0, 1), (2, 1, 1), (3, 1, 1)]
    """
    prepared, scale = _prepared(df, spec)
    tagged = _PATHS[how or path(prepared, spec)](prepared, spec, scale)
    return staged(tagged, [in_a_window(column)]).drop(POS, N, T0, TEND, T)


def flink_bucket_sql(source: str, df: DataFrame, spec: Discretization) -> str:
    """:func:`flink_bucket` on the ``columns`` path as Spark SQL over ``source`` (SQL text of a
    relation with ``df``'s columns): the same steps as SQL. The other paths run Python (a pandas
    UDF, a scan) and refuse.

    An active ``TimeTrigger(3)`` from the first arrival (1.5) ticks at 4.5 and 7.5; ``CountEviction(1)`` keeps
    the last item only, so row 1 (in at 4.5, after the tick; out at 5.0) is in no emission:

    >>> from wid.windows.flink import CountEviction, TimeTrigger
    >>> spec = Discretization([TimeTrigger(3.0)], [CountEviction(1)])
    >>> text = flink_bucket_sql("`readings`", spark.table("readings"), spec)
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in spark.sql(text).collect())
    [(0, 0, 0), (2, 1, 1), (3, 2, 2)]
    """
    if spec.sql_refusal:
        raise WidError(spec.sql_refusal)
    _checked(df, spec)
    named = Sql.column
    scale = time_scale(df, spec.ts) if spec.timed else 1
    clock = clock_steps(df, spec.ts, None, named) if spec.timed else []
    return f"SELECT * FROM {staged(source, [*clock, *column_steps(spec, scale, named), in_a_window(named)])}"


def fired(df: DataFrame, spec: Discretization) -> DataFrame:
    """Per emission (``spec.per_group``, ``wid``) its ``emit_row``: the row_num of the item whose
    arrival fired it, for a tick of an active time TP the first item (of any buffer: the clones
    share the clock) arriving at or after it; NULL: the end of the stream. Each buffer's
    :class:`Scanner`, in one pass over the whole stream.

    The ticks at 4.5 and 7.5 (``arrival_ts`` from 1.5) fire emissions 0 and 1 at rows 1 and 3, the first items
    arriving at or after them; the end emits 2 (``wid``, ``emit_row``):

    >>> from wid.windows.flink import TimeTrigger
    >>> sorted(tuple(row) for row in fired(spark.table("readings"), Discretization([TimeTrigger(3.0)])).collect())
    [(0, 1), (1, 3), (2, None)]
    """
    prepared, scale = _prepared(df, spec)

    def fire(pdf: pd.DataFrame) -> list[Firing]:
        clock = pdf[T].to_numpy() if T in pdf else None
        out: list[Firing] = []
        buffers = pdf.groupby(list(spec.per_group), sort=False, dropna=False) if spec.per_group else [((), pdf)]
        for key, part in buffers:
            scanner = Scanner(spec, part.reset_index(drop=True), scale)
            scanner.run()
            for number, item, tick in scanner.fired:
                at = part.index[item] if item is not None else None
                if tick is not None:
                    first = int(np.searchsorted(clock, tick, side="left"))
                    at = first if first < len(pdf) else None
                out.append((key if isinstance(key, tuple) else (key,), number, at))
        return out

    return firings(prepared, spec.per_group, fire)


def live_bucket(df: DataFrame, spec: Discretization) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): the scan's inputs only (:func:`_prepared`,
    the clock row by row); the buffers are scanned in live mode's stateful step, a micro-batch at a
    time (:func:`live_scan`); ``wid_lo``/``wid_hi`` NULL until then.

    >>> from wid.windows.flink import TimeTrigger
    >>> rows = live_bucket(spark.table("readings"), Discretization([TimeTrigger(3.0)], per_group=("k",)))
    >>> rows.where("row_num = 2").select("k", "_wid_t", "wid_lo", "wid_hi").first()
    Row(k='b', _wid_t=5.0, wid_lo=None, wid_hi=None)
    """
    return unranged(_prepared(df, spec, live=True)[0])


def live_scan(df: DataFrame, spec: Discretization) -> LiveScan:
    """The scan live mode's stateful step runs over :func:`live_bucket` of ``df``: the
    :class:`Buffers`, the columns they read, and the ``per_group`` columns its buckets may split by
    (none with time policies: the clones share the stream's clock, so one bucket scans it).

    >>> from wid.windows.flink import DeltaEviction, TimeTrigger
    >>> spec = Discretization([TimeTrigger(3.0)], [DeltaEviction(2.0, "ts")], per_group=("k",))
    >>> live = live_scan(spark.table("readings"), spec)
    >>> live.columns, live.partition, live.keys
    (('k', 'ts', '_wid_t'), (), ('k',))
    """
    prepared, scale = _prepared(df, spec, live=True)
    read = [a for p in spec.triggers + spec.evictions for a in (*getattr(p, "attrs", ()), getattr(p, "marker", None))
            if a is not None]
    added = [c for c in prepared.columns if c not in df.columns]
    return LiveScan(partial(Buffers, spec, scale=scale), tuple(dict.fromkeys([*spec.per_group, *read, *added])),
                    () if spec.timed else spec.per_group, spec.per_group)
