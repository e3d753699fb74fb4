"""The compiled paths of Flink discretizations: each item's range of emissions without a replay.

Notation per buffer: ``pos`` = 0-based position, ``N`` items, ``x`` = the item's time, ``s`` =
a time TP's ``start + delay``. Item ``i`` is in emission ``k`` iff it was inserted before it
and not yet evicted; the end of the stream emits the buffer once more.

:func:`columns` (window functions): a count TP ``every n, start a`` with count EPs (firing k on
the item at ``n - a + k n``; a count EP ``max m, delete d`` removes the item at the arrival of
``floor(pos/d) d + m``; a tumbling EP at the next firing), or an active time TP (emission k =
tick ``s + (k+1) g``) with a count EP deleting one item (evicted at the arrival of ``pos + m``)
or time EPs (``x + g_e``).

:func:`chain` (numpy per buffer, :mod:`wid.bucket.positions`): TPs that fire on real items at
positions computable in advance (count; passive time, ``c(x_j) > c(x_{j-1})``; delta on a
non-decreasing attribute, the delta chain), any firing emits; EPs give the buffer's head ``h_j``
after the eviction step of real item ``j`` (the buffer then holds positions ``h_j .. j-1``)::

    h_j = max(A_j, min(j, h_{j-1} + R_j))

``R_j`` = the largest deletion of a count EP at ``j`` (own counters: ``max m, delete d`` deletes
``d`` at ``j = m + k d``), ``A_j`` = the first position that no time EP (``next_x(pos)``, width
``g_e``) nor delta EP (``next_a(pos)``, threshold) evicts at ``j``, and ``j`` when a tumbling EP
sees a firing at ``j``. Item ``i`` leaves at ``L_i = min{j : h_j > i}``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wid.bucket.clock import T, T0, TEND, ticks
from wid.bucket.columns import WID_HI, WID_LO, Named, column, position
from wid.bucket.positions import Tags, beyond, delta_chain, per_partition, ranges
from wid.bucket.steps import Add, Step, staged
from wid.windows.flink import (CountEviction, CountTrigger, DeltaEviction, DeltaTrigger, Discretization, TimeEviction,
                            TimeTrigger, TumblingEviction)
from wid.windows.numbers import floor_div, scaled
from wid.windows.sqlexpr import Expr, call, constant, over, when

POS, N = "_wid_pos", "_wid_n"


def _start(trigger: TimeTrigger, scale: int, named: Named) -> Expr:
    """The time TP's origin ``s = start + delay`` (``start`` defaulting to ``T0``)."""
    t0 = named(T0)
    origin = t0 if trigger.start is None else constant(scaled(trigger.start, scale), t0)
    return origin + constant(scaled(trigger.delay, scale), t0)


def column_steps(spec: Discretization, scale: int, named: Named = column) -> list[Step]:
    """The steps tagging the items by the closed forms of the module docstring (window functions
    over each buffer), after the clock (:func:`wid.bucket.clock.clock_steps`) for a time TP:
    Columns, or SQL text with ``named = Sql.column``.

    As SQL: ``CountTrigger(2, start=1)`` per key fires on a key's items 1, 3, ...; ``CountEviction(2)`` drops
    its item 0 as its item 2 arrives; the end emits each buffer once more:

    >>> from wid.windows.sqlexpr import Sql
    >>> spec = Discretization([CountTrigger(2, start=1)], [CountEviction(2)], per_group=("k",))
    >>> text = staged("`readings`", column_steps(spec, 1, Sql.column))
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in spark.sql(f"SELECT * FROM {text}").collect())
    [(0, 0, 0), (1, 1, 1), (2, 0, 0), (3, 1, 1)]
    """
    group = spec.per_group
    steps: list[Step] = [Add([(POS, position(group, ["row_num"], "row_num", named))]),
                         Add([(N, over(call("count", constant(1, named(POS))), group))])]
    pos, n_items = named(POS), named(N)
    yes = constant(True, pos)
    trigger = spec.triggers[0]
    evicted_at = None  # 0-based position of the real item whose eviction step removes the item
    for e in spec.evictions:
        if isinstance(e, CountEviction):
            evicted_at = pos + e.max if e.delete == 1 else floor_div(pos, e.delete) * e.delete + e.max
    if isinstance(trigger, CountTrigger):
        n, start = trigger.every, trigger.start
        last = floor_div(n_items - 1 + start, n) - 1  # last firing on a real item
        lo = call("greatest", floor_div(pos + start, n), constant(0, pos))
        if any(isinstance(e, TumblingEviction) for e in spec.evictions):  # the next firing after pos
            evicted_at = (lo + 1) * n - start
        survives = yes if evicted_at is None else evicted_at >= n_items
        hi = last if evicted_at is None else call("least", floor_div(evicted_at + start, n) - 1, last)
        return [*steps, Add([(WID_LO, lo), (WID_HI, when(survives, last + 1, hi))])]
    survives = yes if evicted_at is None else evicted_at >= n_items
    g = scaled(trigger.granularity, scale)
    t, start = named(T), _start(trigger, scale, named)
    last = ticks(named(TEND) - start, g) - 1  # last tick <= T_end
    lo = call("greatest", ticks(t - start, g), constant(0, pos))
    his = [last]
    for e in spec.evictions:
        if isinstance(e, CountEviction):  # delete == 1: item i leaves at the arrival of item i + max
            his.append(ticks(over(call("lead", t, e.max), group, [POS]) - start, g) - 1)
    for e in spec.evictions:
        if isinstance(e, TimeEviction):
            keep = constant(scaled(e.granularity, scale), t)
            his.append(ticks(t + keep - start, g) - 1)
            survives = survives & (t >= named(TEND) - keep)
    hi = call("least", *his) if len(his) > 1 else his[0]
    return [*steps, Add([(WID_LO, lo), (WID_HI, when(survives, last + 1, hi))])]


def columns(df: DataFrame, spec: Discretization, scale: int) -> DataFrame:
    """``df`` tagged by the closed forms of the module docstring (window functions over each buffer).

    ``TimeTrigger(3)`` from ``T0`` = 1.5 (ticks at 4.5, 7.5) with ``TimeEviction(4)``: ``lo = floor((t - 1.5)/3)``,
    ``hi = floor((t + 4 - 1.5)/3) - 1``, and the end's emission 2 for the items within 4 of the last time (9.5):

    >>> from wid.bucket.clock import clocked
    >>> spec = Discretization([TimeTrigger(3.0)], [TimeEviction(4.0)])
    >>> rows = columns(clocked(spark.table("readings"), "arrival_ts"), spec, 1)
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in rows.collect())
    [(0, 0, 0), (1, 1, 1), (2, 1, 1), (3, 2, 2)]
    """
    return staged(df, column_steps(spec, scale))


def _fires(pdf: pd.DataFrame, trigger: CountTrigger | TimeTrigger | DeltaTrigger, scale: int) -> np.ndarray:
    """Which real items of the buffer fire ``trigger`` (a count, passive time or ordered delta TP)."""
    pos = np.arange(len(pdf))
    if isinstance(trigger, CountTrigger):
        first = trigger.every - trigger.start
        return (pos >= first) & ((pos - first) % trigger.every == 0)
    if isinstance(trigger, DeltaTrigger):
        return delta_chain(pdf[trigger.attrs[0]].to_numpy(), trigger.threshold)
    origin = pdf[T0].iat[0] if trigger.start is None else scaled(trigger.start, scale)
    s, g = origin + scaled(trigger.delay, scale), scaled(trigger.granularity, scale)
    borders = np.maximum((pdf[T].to_numpy() - s) // g, 0)  # c(x): borders passed by x
    return np.diff(borders, prepend=0) > 0


def _last(pdf: pd.DataFrame, eviction: TimeEviction | DeltaEviction, scale: int) -> np.ndarray:
    """The real item whose eviction step removes each item (``len(pdf)`` or more: never)."""
    if isinstance(eviction, TimeEviction):  # the scan's comparison: ts < now - g
        g = scaled(eviction.granularity, scale)
        return beyond(pdf[T].to_numpy(), g, lambda now, ts: ts < now - g)
    return beyond(pdf[eviction.attrs[0]].to_numpy(), eviction.threshold)


def _heads(pdf: pd.DataFrame, spec: Discretization, fires: np.ndarray, scale: int) -> np.ndarray:
    """``h_j``, the buffer's head after the eviction step of each real item (module docstring)."""
    pos = np.arange(len(pdf), dtype=np.int64)
    deleted, floor = np.zeros_like(pos), np.zeros_like(pos)  # R_j, A_j
    for e in spec.evictions:
        if isinstance(e, CountEviction):
            deleted = np.maximum(deleted, np.where((pos >= e.max) & ((pos - e.max) % e.delete == 0), e.delete, 0))
        elif isinstance(e, TumblingEviction):
            floor = np.maximum(floor, np.where(fires, pos, 0))
        else:
            floor = np.maximum(floor, np.searchsorted(_last(pdf, e, scale), pos, side="right"))
    if not deleted.any():
        return np.maximum.accumulate(floor)
    heads, h = [], 0
    for j, r, a in zip(pos.tolist(), deleted.tolist(), floor.tolist()):
        h = max(a, min(j, h + r))
        heads.append(h)
    return np.array(heads, dtype=np.int64)


def chain(df: DataFrame, spec: Discretization, scale: int) -> DataFrame:
    """``df`` tagged from the trigger and eviction positions of each buffer (module docstring).

    ``DeltaTrigger(2)`` on ``arrival_ts`` (1.5, 4.5, 5.0, 9.5) fires on the items at 4.5 and 9.5 (more than 2
    past the last firing); ``CountEviction(2)`` keeps two items, so row 2 is in emission 1 and the end's 2:

    >>> spec = Discretization([DeltaTrigger(2.0, "arrival_ts")], [CountEviction(2)])
    >>> sorted((row.row_num, row.wid_lo, row.wid_hi) for row in chain(spark.table("readings"), spec, 1).collect())
    [(0, 0, 0), (1, 1, 1), (2, 1, 2), (3, 2, 2)]
    """

    def tag(pdf: pd.DataFrame) -> Tags:
        fires = np.logical_or.reduce([_fires(pdf, t, scale) for t in spec.triggers])
        last = np.searchsorted(_heads(pdf, spec, fires, scale), np.arange(len(pdf)), side="right")
        return ranges(fires, last, end_emits=True)

    return per_partition(df, spec.per_group, tag)
