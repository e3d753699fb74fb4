"""Operational (SPL) windows on the range-tag pipeline.

Every SPL window is FIFO per subwindow: a tuple enters once and leaves once, so the
windows holding it are the consecutive triggers ``wid_lo <= w <= wid_hi`` between its
insertion and its eviction. Tagging each tuple with that range lets the window-agnostic
:func:`wid.aggregate.range.range_aggregate` do the rest. Three ways to tag (:func:`path`):

* ``columns`` (:func:`wid.bucket.spl.compiled.columns`): count, time and punct policies, trigger
  positions in closed form and evictions in arrival order;
* ``chain`` (:func:`wid.bucket.spl.compiled.chain`): delta policies on a non-decreasing attribute (the
  delta trigger's triggers form a chain), by binary search per partition;
* ``scan`` (:func:`wid.bucket.spl.scan.scan`): event by event where the windows depend on history:
  a delta attribute that decreases somewhere, delta eviction with a time trigger, and
  partition eviction policies.

One rule for delta policies: the compiled paths need every delta attribute non-decreasing
in arrival order within each partition, checked on the data (one Spark job).

The ``columns`` path is the only one whatever the data (no delta policy, no partition
eviction) and the only one in SQL: its steps (:mod:`wid.bucket.steps`) render as Spark SQL
text for :func:`wid.to_sql` (:func:`operational_bucket_sql`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Literal

from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND, clock, clock_steps, clocked, time_scale
from wid.bucket.columns import Named, attribute_type, column, numeric_value, unranged
from wid.bucket.checks import checked
from wid.bucket.positions import LiveScan, check_inputs, firings, in_a_window, non_decreasing
from wid.bucket.spl.compiled import POS, chain, column_steps, columns
from wid.bucket.spl.scan import Scanner, scan
from wid.bucket.steps import Keep, Step, staged
from wid.errors import WidError
from wid.windows.numbers import scaled
from wid.windows.spl import ARRIVAL_TS, Delta, PartitionAge, Punct, SplWindow, Time
from wid.windows.sqlexpr import Expr, Sql, call, constant

Path = Literal["columns", "chain", "scan"]
_DELTA = "_wid_d_"
_PATHS = {"columns": columns, "chain": chain, "scan": scan}


def _checked(df: DataFrame, spec: SplWindow) -> None:
    """A clear error for a missing ``row_num`` or partition column, or a marker that is not boolean."""
    check_inputs(df, spec.partition_by, [p.marker for p in spec.policies if isinstance(p, Punct)], "punct()")


def _clocked(spec: SplWindow) -> bool:
    return any(isinstance(p, Time) for p in spec.policies) or isinstance(spec.partition_eviction, PartitionAge)


def _prepared(df: DataFrame, spec: SplWindow, live: bool = False) -> tuple[DataFrame, SplWindow]:
    """Checked inputs and the spec on them: each delta attribute as a number ``_wid_d_<attr>``
    (timestamps in microseconds, the delta scaled alike), the punctuation marker a boolean,
    and for time policies the arrival clock (:func:`wid.bucket.clock.clocked`) over the tuples
    (``live``: the clock only, row by row; the scan checks its order and finds its ends)."""
    _checked(df, spec)
    for role, policy in zip(("eviction", "trigger"), spec.policies):
        if isinstance(policy, Delta):
            dtype = attribute_type(df, policy.attr)
            value, factor = numeric_value(column(policy.attr), dtype, policy.attr)
            hidden = _DELTA + policy.attr
            df = df.withColumn(hidden, checked(value, dtype, policy.attr))
            spec = replace(spec, **{role: Delta(hidden, scaled(policy.delta, factor))})
    if _clocked(spec):
        df = df.withColumn(T, clock(df, ARRIVAL_TS)) if live else clocked(df, ARRIVAL_TS, _tuple_rows(spec))
    return df, spec


def _tuple_rows(spec: SplWindow, named: Named = column) -> Expr | None:
    """The condition of a tuple row (not a punctuation), or None when every row is a tuple."""
    marker = next((p.marker for p in spec.policies if isinstance(p, Punct)), None)
    return None if marker is None else ~call("coalesce", named(marker), constant(False, named(marker)))


def _kept(spec: SplWindow, named: Named = column) -> list[Step]:
    """The filters after tagging: tuple rows (not punctuations) in some window."""
    rows = _tuple_rows(spec, named)
    return [*([] if rows is None else [Keep(rows)]), in_a_window(named)]


def path(df: DataFrame, spec: SplWindow) -> Path:
    """How ``spec`` tags ``df`` (see the module docstring).

    On ``readings``, ``ts`` decreases from row 1 to row 2 (keys ``a`` then ``b``), never within a key:

    >>> from wid.windows.spl import Count, Tumbling
    >>> df = spark.table("readings")
    >>> path(df, Tumbling(eviction=Count(2))), path(df, Tumbling(eviction=Delta("ts", 2.0), partition_by=("k",)))
    ('columns', 'chain')
    """
    if spec.compiles:
        return "columns"
    if spec.partition_eviction is not None:
        return "scan"
    deltas = {p.attr for p in spec.policies if isinstance(p, Delta)}
    rows = _tuple_rows(spec)
    tuples = df if rows is None else df.where(rows)
    if not all(non_decreasing(tuples, attr, spec.partition_by) for attr in deltas):
        return "scan"
    if spec.sliding and isinstance(spec.eviction, Delta) and isinstance(spec.trigger, Time):
        return "scan"
    return "chain"


def compiled(df: DataFrame, spec: SplWindow) -> bool:
    """Whether ``spec`` takes a compiled path on ``df`` (not the sequential scan).

    Over the whole stream ``ts`` decreases (4.0, then 2.5): a delta policy on it takes the scan.

    >>> from wid.windows.spl import Tumbling
    >>> compiled(spark.table("readings"), Tumbling(eviction=Delta("ts", 2.0)))
    False
    """
    return path(*_prepared(df, spec)) != "scan"


def operational_bucket(df: DataFrame, spec: SplWindow, how: Path | None = None) -> DataFrame:
    """``df``'s tuples tagged with ``wid_lo``/``wid_hi``: the triggers of ``spec`` that hold
    them; punctuation rows and tuples in no window are gone. ``how`` forces a path (for
    benchmarks and tests; ``columns`` and ``chain`` are exact only where :func:`path` picks them).

    Tumbling ``time(3)`` on ``arrival_ts`` (1.5, 4.5, 5.0, 9.5): ticks at 4.5 and 7.5, the row arriving at 4.5
    after the first; the window still open at the end is dropped with ``incomplete=False``:

    >>> from wid.windows.spl import Tumbling
    >>> rows = operational_bucket(spark.table("readings"), Tumbling(eviction=Time(3.0), incomplete=False))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in rows.collect())
    [(0, 0, 0), (1, 1, 1), (2, 1, 1)]
    """
    prepared, spec = _prepared(df, spec)
    tagged = staged(_PATHS[how or path(prepared, spec)](prepared, spec), _kept(spec))
    hidden = [c for c in tagged.columns if c.startswith(_DELTA)]
    return tagged.drop(POS, T0, TEND, T, *hidden)


def operational_bucket_sql(source: str, df: DataFrame, spec: SplWindow) -> str:
    """:func:`operational_bucket` on the ``columns`` path as Spark SQL over ``source`` (SQL text of a
    relation with ``df``'s columns): the same steps as SQL. The other paths run Python (a pandas
    UDF, a scan) and refuse.

    Sliding ``count(2)`` eviction, ``count(1)`` trigger: a tuple is in the windows of its own and the next
    arrival (the last tuple: no next trigger):

    >>> from wid.windows.spl import Count, Sliding
    >>> spec = Sliding(eviction=Count(2), trigger=Count(1))
    >>> text = operational_bucket_sql("`readings`", spark.table("readings"), spec)
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in spark.sql(text).collect())
    [(0, 0, 1), (1, 1, 2), (2, 2, 3), (3, 3, 3)]
    """
    refusal = spec.sql_refusal
    if refusal:
        raise WidError(refusal)
    _checked(df, spec)
    named = Sql.column
    clock = clock_steps(df, ARRIVAL_TS, _tuple_rows(spec, named), named) if _clocked(spec) else []
    return f"SELECT * FROM {staged(source, [*clock, *column_steps(df, spec, named), *_kept(spec, named)])}"


def fired(df: DataFrame, spec: SplWindow) -> DataFrame:
    """Per window (``spec.partition_by``, ``wid``) its ``emit_row``: the row_num of the tuple or
    punctuation whose arrival fired it, for a time tick the first row arriving at or after it
    (processed just before that row); NULL: the end of the stream. The :class:`Scanner` over the
    whole stream, whatever path tags it (the paths agree on the windows).

    Tumbling ``time(3)`` on ``arrival_ts`` (1.5, 4.5, 5.0, 9.5): the ticks at 4.5 and 7.5 fire windows 0 and 1 at
    rows 1 and 3, the first arriving at or after them; the end of the stream flushes window 2 (``wid``, ``emit_row``):

    >>> from wid.windows.spl import Tumbling
    >>> sorted(tuple(row) for row in fired(spark.table("readings"), Tumbling(eviction=Time(3.0))).collect())
    [(0, 1), (1, 3), (2, None)]
    """
    prepared, spec = _prepared(df, spec)
    scale = time_scale(prepared, ARRIVAL_TS) if T in prepared.columns else 1

    def fire(pdf):
        scanner = Scanner(spec, pdf, scale)
        scanner.run()
        return scanner.fired

    return firings(prepared, spec.partition_by, fire)


def live_bucket(df: DataFrame, spec: SplWindow) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): the scan's inputs only (:func:`_prepared`,
    the clock row by row); the :class:`Scanner` runs in live mode's stateful step, a micro-batch at
    a time (:func:`live_scan`); ``wid_lo``/``wid_hi`` NULL until then.

    >>> from wid.windows.spl import Tumbling
    >>> rows = live_bucket(spark.table("readings"), Tumbling(eviction=Time(3.0)))
    >>> rows.where("row_num = 2").select("_wid_t", "wid_lo", "wid_hi").first()
    Row(_wid_t=5.0, wid_lo=None, wid_hi=None)
    """
    return unranged(_prepared(df, spec, live=True)[0])


def live_scan(df: DataFrame, spec: SplWindow) -> LiveScan:
    """The scan live mode's stateful step runs over :func:`live_bucket` of ``df``: the
    :class:`Scanner` keeping each window's tuples, the columns it reads, and the partition columns
    its buckets may split by (none when the subwindows share a clock, punctuations or partition
    eviction: one bucket scans the stream).

    A time policy: the subwindows share the clock, so one bucket scans the stream; count policies split by key:

    >>> from wid.windows.spl import Count, Sliding, Tumbling
    >>> live = live_scan(spark.table("readings"), Tumbling(eviction=Time(3.0), partition_by=("k",)))
    >>> live.columns, live.partition, live.keys
    (('k', '_wid_t'), (), ('k',))
    >>> live_scan(spark.table("readings"), Sliding(eviction=Count(2), trigger=Count(1), partition_by=("k",))).partition
    ('k',)
    """
    prepared, checked_spec = _prepared(df, spec, live=True)
    scale = time_scale(prepared, ARRIVAL_TS) if T in prepared.columns else 1
    added = [c for c in prepared.columns if c not in df.columns]
    marker = [p.marker for p in spec.policies if isinstance(p, Punct)]
    shared = _clocked(spec) or bool(marker) or spec.partition_eviction is not None
    return LiveScan(partial(Scanner, checked_spec, scale=scale, members=True),
                    tuple(dict.fromkeys([*spec.partition_by, *marker, *added])),
                    () if shared else spec.partition_by, spec.partition_by)
