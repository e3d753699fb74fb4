"""The compiled paths of SPL windows: each tuple's range of triggers without replaying the stream.

Notation: ``pos`` = 0-based arrival position in the partition, ``t`` = arrival time,
``T0``/``T_end`` = first/last arrival, tick ``k`` at ``T0 + (k+1)q``.

:func:`columns` (Column expressions and window functions) where trigger positions are a
closed form and evictions follow arrival order:

=========================  ====================================================================
tumbling count(n)          wid = floor(pos/n)
tumbling time(p)           wid = floor((t - T0)/p)
tumbling punct()           wid = number of punctuations before the tuple
sliding E, count(m)        lo = floor(pos/m), hi = floor((J+1)/m) - 1 with J the last position the
                           tuple is still in: pos+n-1 (count(n)); max pos with t <= t_i + p (time(p))
sliding count(n), time(q)  lo = floor((t - T0)/q), hi = floor((t[pos+n] - T0)/q) - 1
sliding time(p), time(q)   lo = floor((t - T0)/q), hi = floor((t + p - T0)/q) - 1
=========================  ====================================================================

:func:`chain` (numpy per partition, :mod:`wid.bucket.positions`) for delta policies on a
non-decreasing attribute, in the policies' own comparison ``v_j - v_i > d``: the triggers
(flushes) of a delta trigger (tumbling delta) are the delta chain ``p_k``; a tuple is last in
the window triggered at ``L = pos + n`` (count(n) eviction), ``next_a(pos)`` (delta(a, d)
eviction) or ``next_t(pos) - 1`` (time(p) eviction, which precedes the trigger). Delta eviction
with a count(m) trigger: ``lo = floor(pos/m)``, ``hi = floor(next_a(pos)/m) - 1``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND, ticks, time_scale
from wid.bucket.columns import WID_HI, WID_LO, Named, column, position
from wid.bucket.positions import Tags, beyond, delta_chain, per_partition, ranges
from wid.bucket.steps import Add, Step, staged
from wid.windows.numbers import floor_div, scaled
from wid.windows.spl import ARRIVAL_TS, Count, Delta, Punct, SplWindow, Time
from wid.windows.sqlexpr import Expr, call, constant, equal, expression, over, quote, when

POS, _N = "_wid_pos", "_wid_n"


def _uses(spec: SplWindow, kind: type) -> bool:
    return any(isinstance(p, kind) for p in spec.policies)


def _last_within(order: str, offset: float, partition: tuple[str, ...], like: Expr) -> Expr:
    """``max(pos)`` over the tuples of the partition with ``order`` in ``[own, own + offset]``."""
    key = quote(order) if isinstance(offset, int) else f"CAST({quote(order)} AS DOUBLE)"
    bound = str(offset) if isinstance(offset, int) else f"CAST({offset!r} AS DOUBLE)"
    over_ = f"PARTITION BY {', '.join(map(quote, partition))} " if partition else ""
    return expression(f"max({POS}) OVER ({over_}ORDER BY {key} RANGE BETWEEN CURRENT ROW AND {bound} FOLLOWING)",
                      like)


def column_steps(df: DataFrame, spec: SplWindow, named: Named = column) -> list[Step]:
    """The steps tagging ``df`` (with the clock of :func:`wid.bucket.clock.clock_steps` for time
    policies) by the closed forms of the module docstring: Columns, or SQL text with
    ``named = Sql.column``.

    As SQL: tumbling ``count(2)`` per key closes a window at every second tuple of the key; with
    ``incomplete=False`` the rest (row 3 of ``a``, row 2 of ``b``) gets ``wid_hi < wid_lo``, no window:

    >>> from wid.windows.spl import Tumbling
    >>> from wid.windows.sqlexpr import Sql
    >>> spec = Tumbling(eviction=Count(2), partition_by=("k",), incomplete=False)
    >>> text = staged("`readings`", column_steps(spark.table("readings"), spec, Sql.column))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in spark.sql(f"SELECT * FROM {text}").collect())
    [(0, 0, 0), (1, 0, 0), (2, 0, -1), (3, 1, 0)]
    """
    part = spec.partition_by
    scale = time_scale(df, ARRIVAL_TS) if _uses(spec, Time) else 1
    row = named("row_num")
    one = constant(1, row)
    if not spec.sliding and isinstance(spec.eviction, Punct):
        marker = call("coalesce", named(spec.eviction.marker), constant(False, row)).cast("long")
        seen = over(call("sum", marker), order=["row_num"], rows=True)
        total = over(call("sum", marker))  # the window after the last one is incomplete
        wid = named(WID_LO)
        hi = wid if spec.incomplete else when(wid < named(_N), wid, wid - 1)
        return [Add([(WID_LO, seen), (_N, total)]), Add([(WID_HI, hi)])]
    steps: list[Step] = [Add([(POS, position(part, ["row_num"], "row_num", named))])]
    pos, t0 = named(POS), named(T0)
    since_t0 = named(T) - t0
    if not spec.sliding:
        if isinstance(spec.eviction, Count):
            n = spec.eviction.n
            wid = floor_div(pos, n)
            closed = (wid + 1) * n <= over(call("count", one), part)
        else:
            p = scaled(spec.eviction.period, scale)
            wid = ticks(since_t0, p)
            closed = wid < ticks(named(TEND) - t0, p)
        hi = wid if spec.incomplete else when(closed, wid, wid - 1)
        return [*steps, Add([(WID_LO, wid), (WID_HI, hi)])]
    eviction, trigger = spec.eviction, spec.trigger
    if isinstance(trigger, Count):
        m = trigger.n
        if isinstance(eviction, Count):
            last = call("least", pos + (eviction.n - 1), over(call("count", one), part) - 1)
        else:
            last = _last_within(T, scaled(eviction.period, scale), part, row)
        lo = floor_div(pos, m)
        if not spec.partial:
            lo = call("greatest", lo, constant(-(-eviction.n // m) - 1, row))
        return [*steps, Add([(WID_LO, lo), (WID_HI, floor_div(last + 1, m) - 1)])]
    q = scaled(trigger.period, scale)
    last_tick = ticks(named(TEND) - t0, q) - 1
    lo = ticks(since_t0, q)
    if isinstance(eviction, Count):
        evicted_at = over(call("lead", named(T), eviction.n), part, [POS])
        hi = call("coalesce", ticks(evicted_at - t0, q) - 1, last_tick)
        if not spec.partial:
            full_at = over(call("min", when(equal(pos, eviction.n - 1), named(T))), part)
            lo = call("greatest", lo, ticks(full_at - t0, q))
            hi = when(call("isnotnull", full_at), hi, lo - 1)
    else:
        p = scaled(eviction.period, scale)
        hi = call("least", ticks(since_t0 + constant(p, row), q) - 1, last_tick)
    return [*steps, Add([(WID_LO, lo), (WID_HI, hi)])]


def columns(df: DataFrame, spec: SplWindow) -> DataFrame:
    """``df`` tagged by the closed forms of the module docstring (Column expressions and window functions).

    Sliding ``time(4)``, ``time(2)`` on ``arrival_ts`` (``T0`` = 1.5, ticks at 3.5, 5.5, 7.5, 9.5):
    ``lo = floor((t - T0)/2)``, ``hi = floor((t + 4 - T0)/2) - 1``; the tuple at 1.5 is still in at 5.5 (4 s old,
    not more), the one at 9.5 arrives after the last tick:

    >>> from wid.bucket.clock import clocked
    >>> from wid.windows.spl import Sliding
    >>> rows = columns(clocked(spark.table("readings"), ARRIVAL_TS), Sliding(eviction=Time(4.0), trigger=Time(2.0)))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in rows.collect())
    [(0, 0, 1), (1, 1, 2), (2, 1, 2), (3, 4, 3)]
    """
    return staged(df, column_steps(df, spec)).drop(_N)


def chain(df: DataFrame, spec: SplWindow) -> DataFrame:
    """``df`` tagged from the delta chain of each partition (module docstring).

    Tumbling ``delta(arrival_ts, 3)`` (1.5, 4.5, 5.0, 9.5): 4.5 - 1.5 is not more than 3, 5.0 - 1.5 is, so the
    first flush comes before row 2; the end flushes row 3:

    >>> from wid.windows.spl import Tumbling
    >>> rows = chain(spark.table("readings"), Tumbling(eviction=Delta(ARRIVAL_TS, 3.0)))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in rows.collect())
    [(0, 0, 0), (1, 0, 0), (2, 1, 1), (3, 2, 2)]
    """
    scale = time_scale(df, ARRIVAL_TS) if _uses(spec, Time) else 1

    def tag(pdf: pd.DataFrame) -> Tags:
        pos = np.arange(len(pdf))
        if spec.sliding and isinstance(spec.trigger, Count):
            # delta eviction before the insertion of next(pos); trigger k after inserting (k+1)m - 1
            m = spec.trigger.n
            return pos // m, beyond(pdf[spec.eviction.attr].to_numpy(), spec.eviction.delta) // m - 1
        policy = spec.trigger if spec.sliding else spec.eviction
        fires = delta_chain(pdf[policy.attr].to_numpy(), policy.delta)
        if not spec.sliding:
            wid = np.cumsum(fires, dtype=np.int64)
            return wid, wid if spec.incomplete else np.where(wid < wid[-1], wid, wid - 1)
        eviction = spec.eviction
        if isinstance(eviction, Count):
            last = pos + eviction.n
        elif isinstance(eviction, Delta):
            last = beyond(pdf[eviction.attr].to_numpy(), eviction.delta)
        else:
            last = beyond(pdf[T].to_numpy(), scaled(eviction.period, scale)) - 1
        lo, hi = ranges(fires, last)
        if not spec.partial:  # the first full window is the first trigger after position n - 1
            lo = np.maximum(lo, lo[min(eviction.n, len(lo)) - 1])
        return lo, hi

    return per_partition(df, spec.partition_by, tag)
