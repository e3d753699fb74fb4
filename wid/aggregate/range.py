"""The window-agnostic range aggregate.

Input: tuples ``(keys, wid_lo, wid_hi, values)``; each tuple stands for one copy per
window-id ``wid_lo <= w <= wid_hi``. Output: one row per ``(keys, wid)`` that some
tuple covers, with the aggregates. Nothing here knows how the ranges were made.

Decomposable aggregates (count, sum, avg, min, max) never expand a tuple into its ids:

1. **panes**: tuples sharing ``(keys, wid_lo, wid_hi)`` pre-aggregate into one partial;
2. **blocks**: a pane's range splits into its canonical dyadic blocks
   ``[j*2^k, (j+1)*2^k - 1]`` (at most two per level k, as in a segment tree) and the
   partials of equal ``(keys, k, j)`` combine;
3. **ids**: a block spreads over its ``2^k`` ids and the partials of each id combine.

The blocks of one level are disjoint and cover only non-empty windows, so stage 3
yields at most (non-empty windows) rows per level: the cost grows with
``log2(range/slide)``, not ``range/slide``. Other aggregates (``fn="sql"``) fall back
to expanding every tuple into its ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import WID, WID_HI, WID_LO

_LEVEL, _BLOCK = "_wid_level", "_wid_block"

#: A tuple's range as its canonical dyadic blocks: at level k, with l = ceil(lo / 2^k)
#: and r = floor((hi + 1) / 2^k), block l is taken when l is odd and block r - 1 when
#: r is odd (both only while l < r).
_BLOCKS = f"""
filter(flatten(transform(
    sequence(0, CAST(FLOOR(LOG2(wid_hi - wid_lo + 1)) AS INT) + 1),
    k -> transform(
        array(named_struct('l', -shiftright(-wid_lo, k), 'r', shiftright(wid_hi + 1, k))),
        e -> array(
            IF(e.l < e.r AND e.l % 2 != 0, named_struct('{_LEVEL}', k, '{_BLOCK}', e.l), NULL),
            IF(e.l < e.r AND e.r % 2 != 0, named_struct('{_LEVEL}', k, '{_BLOCK}', e.r - 1), NULL)
        ))[0])),
  b -> b IS NOT NULL)
"""
_BLOCK_IDS = f"sequence(shiftleft({_BLOCK}, {_LEVEL}), shiftleft({_BLOCK} + 1, {_LEVEL}) - 1)"

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

    def merged(df: DataFrame, by: list[str]) -> DataFrame:
        return df.groupBy(*by).agg(*[merge(name).alias(name) for name, _, merge in partials])

    panes = tagged.groupBy(*keys, WID_LO, WID_HI).agg(*[p.alias(name) for name, p, _ in partials])
    if keys:  # stages 2 and 3 group by (keys, ...): partitioned by keys, they need no further shuffle
        panes = panes.repartition(*keys)
    names = [name for name, _, _ in partials]
    blocks = panes.select(*keys, *names, F.inline(F.expr(_BLOCKS)))
    ids = merged(blocks, [*keys, _LEVEL, _BLOCK]).select(*keys, *names, F.explode(F.expr(_BLOCK_IDS)).alias(WID))
    return merged(ids, [*keys, WID]).select(
        *keys, WID, *[a.final(i).alias(a.alias) for i, a in enumerate(aggregates)]
    )


def _expanded(tagged: DataFrame, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """The fallback: each tuple once per id of its range, then a plain group-by."""
    copies = tagged.withColumn(WID, F.explode(F.sequence(WID_LO, WID_HI)))
    return copies.groupBy(*keys, WID).agg(*[a.direct().alias(a.alias) for a in aggregates])
