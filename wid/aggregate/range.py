"""The window-agnostic range aggregate.

Input: tuples ``(keys, wid_lo, wid_hi, values)``; each tuple stands for one copy per
window-id ``wid_lo <= w <= wid_hi``. Output: one row per ``(keys, wid)`` that some
tuple covers, with the aggregates. Nothing here knows how the ranges were made.

Decomposable aggregates (count, sum, avg, min, max) never expand a tuple into its ids:

1. **panes**: tuples sharing ``(keys, wid_lo, wid_hi)`` pre-aggregate into one partial
   (a tumbling group-by), then move once to the partition of their keys;
2. **blocks**: a pane covering more than :data:`SHORT` ids splits its range into its
   canonical dyadic blocks ``[j*2^k, (j+1)*2^k - 1]`` (at most two per level k, as in a
   segment tree) and the partials of equal ``(keys, k, j)`` combine; a block spreads over
   its ``2^k`` ids. A short pane spreads over its ids directly (at most ``SHORT`` rows);
3. **ids**: the partials of each ``(keys, wid)`` combine.

The blocks of one level are disjoint and cover only non-empty windows, so the long panes
yield at most (non-empty windows) rows per level: the cost grows with
``log2(range/slide)``, not ``range/slide``. All of it is Column expressions, generators
and group-bys (whole-stage code generation, no lambda functions), on one shuffle of the
tuples and one of the panes. Other aggregates (``fn="sql"``) fall back to expanding every
tuple into its ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import WID

_LEVEL, _BLOCK, _STEP = "_wid_level", "_wid_block", "_wid_step"
#: A pane covering at most this many ids spreads over them without the block stage.
SHORT = 8


def _shift(name: str, value: Column, bits: Column) -> Column:
    """``shiftleft``/``shiftright`` by a column (the Python functions take a constant only)."""
    return F.call_function(name, value, bits)


def _blocks(lo: Column, hi: Column) -> tuple[Column, Column, Column]:
    """``(level k, block j, taken)``: the canonical dyadic blocks of ``[lo, hi]``, one per row
    of step ``i`` (``explode(sequence(0, 2K + 3))``, K = floor(log2(hi - lo + 1))):
    level ``k = i >> 1``; with ``l = ceil(lo / 2^k)`` and ``r = floor((hi + 1) / 2^k)``, step
    ``2k`` takes block ``l`` when l is odd, step ``2k + 1`` block ``r - 1`` when r is odd
    (both only while ``l < r``)."""
    step = F.col(_STEP)
    k = F.shiftright(step, 1).cast("int")
    left, right = -_shift("shiftright", -lo, k), _shift("shiftright", hi + 1, k)
    first = F.pmod(step, F.lit(2)) == 0
    taken = (left < right) & (F.pmod(F.when(first, left).otherwise(right), F.lit(2)) == 1)
    return k, F.when(first, left).otherwise(right - 1), taken


DECOMPOSABLE = ("count", "sum", "avg", "min", "max")


@dataclass(frozen=True)
class Aggregate:
    """Output column ``alias``: ``fn(arg)`` with fn in count/sum/avg/min/max (``arg`` an
    input column, ``None`` for ``count(*)``), or with ``fn="sql"`` any Spark SQL
    aggregate expression ``arg`` over the input columns (evaluated by expansion)."""

    alias: str
    fn: str
    arg: str | None = None

    @property
    def decomposable(self) -> bool:
        return self.fn in DECOMPOSABLE

    def direct(self) -> Column:
        """The aggregate over plain rows."""
        if self.fn == "sql":
            return F.expr(self.arg)
        value = F.col(self.arg) if self.arg is not None else F.lit(1)
        return {"count": F.count, "sum": F.sum, "avg": F.avg, "min": F.min, "max": F.max}[self.fn](value)

    def partials(self, index: int) -> list[tuple[str, Column, Callable[[str], Column]]]:
        """``(name, partial over rows, merge of partials)`` for each partial state."""
        name = f"_wid_p{index}"
        value = F.col(self.arg) if self.arg is not None else F.lit(1)
        if self.fn == "avg":
            return [(name + "s", F.sum(value.cast("double")), F.sum), (name + "n", F.count(value), F.sum)]
        merge = {"count": F.sum, "sum": F.sum, "min": F.min, "max": F.max}[self.fn]
        return [(name, self.direct(), merge)]

    def final(self, index: int) -> Column:
        """The aggregate from its merged partials."""
        name = f"_wid_p{index}"
        if self.fn == "avg":
            total, n = F.col(name + "s"), F.col(name + "n")
            return F.when(n > 0, total / n)
        return F.col(name)


def range_aggregate(tagged: DataFrame, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """One row per ``(keys, wid)`` covered by some tuple's ``[wid_lo, wid_hi]``: columns
    ``keys``, ``wid`` and one per aggregate alias."""
    if not all(a.decomposable for a in aggregates):
        return _expanded(tagged, keys, aggregates)
    partials = [p for i, a in enumerate(aggregates) for p in a.partials(i)]
    names = [name for name, _, _ in partials]

    def merged(df: DataFrame, by: list[str]) -> DataFrame:
        return df.groupBy(*by).agg(*[merge(name).alias(name) for name, _, merge in partials])

    panes = tagged.groupBy(*keys, "wid_lo", "wid_hi").agg(*[p.alias(name) for name, p, _ in partials])
    if keys:  # the later group-bys are by (keys, ...): partitioned by keys, they need no further shuffle
        panes = panes.repartition(*keys)
    lo, hi = F.col("wid_lo"), F.col("wid_hi")
    short = hi - lo < SHORT
    direct = panes.where(short).select(*keys, *names, F.explode(F.sequence(lo, hi)).alias(WID))
    steps = F.sequence(F.lit(0), 2 * F.floor(F.log2(hi - lo + 1)).cast("int") + 3)
    level, block, taken = _blocks(lo, hi)
    long = (panes.where(~short).select(*keys, *names, "wid_lo", "wid_hi", F.explode(steps).alias(_STEP))
            .where(taken).select(*keys, *names, level.alias(_LEVEL), block.alias(_BLOCK)))
    j, k = F.col(_BLOCK), F.col(_LEVEL)
    spread = F.sequence(_shift("shiftleft", j, k), _shift("shiftleft", j + 1, k) - 1)  # block j's 2^k ids
    blocks = merged(long, [*keys, _LEVEL, _BLOCK]).select(*keys, *names, F.explode(spread).alias(WID))
    return merged(direct.unionByName(blocks), [*keys, WID]).select(
        *keys, WID, *[a.final(i).alias(a.alias) for i, a in enumerate(aggregates)]
    )


def _expanded(tagged: DataFrame, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """The fallback: each tuple once per id of its range, then a plain group-by."""
    copies = tagged.withColumn(WID, F.explode(F.sequence("wid_lo", "wid_hi")))
    return copies.groupBy(*keys, WID).agg(*[a.direct().alias(a.alias) for a in aggregates])
