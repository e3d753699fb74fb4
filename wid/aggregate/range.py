"""The window-agnostic range aggregate.

Input: tuples ``(keys, wid_lo, wid_hi, values)``; each tuple stands for one copy per
window-id ``wid_lo <= w <= wid_hi``. Output: one row per ``(keys, wid)`` that some
tuple covers, with the aggregates. Nothing here knows how the ranges were made.

Decomposable aggregates (count, sum, avg, min, max) never expand a tuple into its ids:

1. **panes**: tuples sharing ``(keys, wid_lo, wid_hi)`` pre-aggregate into one partial
   (a tumbling group-by; by ``(keys, wid_lo)`` alone when the caller knows every range's
   width, :func:`pane_range`), then move once to the partition of their keys (when the caller
   bounds every range by :data:`DIRECT` ids, and knows no common width above :data:`SCANNED`,
   the panes go straight to step 3, each over its ids);
2. **blocks**: a pane covering more than :data:`SHORT` ids splits its range into its
   canonical dyadic blocks ``[j*2^k, (j+1)*2^k - 1]`` (at most two per level k, as in a
   segment tree), a short pane into its ids (level-0 blocks, at most ``SHORT``), and the
   partials of equal ``(keys, k, j)`` combine (when the caller knows that every range holds
   exactly ``width`` ids, more than :data:`SCANNED`: each id's panes are instead a block suffix
   and a block prefix of its key's panes, :mod:`wid.aggregate.block_scans`, one or two rows per id);
3. **ids**: a block spreads over its ``2^k`` ids and the partials of each ``(keys, wid)``
   combine.

The blocks of one level are disjoint and cover only non-empty windows, so the long panes
yield at most (non-empty windows) rows per level: the cost grows with
``log2(range/slide)``, not ``range/slide``. All of it is Column expressions, generators
and group-bys (whole-stage code generation, no lambda functions), on one shuffle of the
tuples and, with keys, one of the panes (without keys, the blocks and the ids shuffle too).
The expressions are SQL text, one ``expr`` each: building the plan costs a handful of calls
into the JVM, not one per operator. Other aggregates (``fn="sql"``) fall back to expanding
every tuple into its ids.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.aggregate.block_scans import block_windows, block_windows_sql
from wid.aggregate.partials import Aggregate
from wid.bucket.columns import WID
from wid.windows.sqlexpr import column, columns, quote

_LEVEL, _BLOCK, _STEP = "_wid_level", "_wid_block", "_wid_step"
#: A pane covering at most this many ids spreads over them without the block stage.
SHORT = 8
#: A caller's bound on every range up to this many ids: each pane spreads straight over its ids,
#: no block stage (on ``wid bench``'s 20M rows, 50 keys: faster than the blocks up to 24 ids, as
#: fast at 32, slower from 48 on; 2026-11-26).
DIRECT = 24
#: A caller's width (every range exactly this many ids) above this: the windows come off block scans
#: of the panes, not the spread or the blocks (``wid bench``'s 20M rows, 50 keys, idle, medians of 3,
#: the spread against the scans: 4.83 s / 5.20 s at 12 ids, 5.67 / 4.89 at 16, 5.44 / 4.57 at 24; 2026-11-27).
SCANNED = 12

#: Steps of a pane ``[wid_lo, wid_hi]``: a short one steps through its ids (level-0 blocks
#: ``j = wid_lo + i``); a long one through the canonical dyadic blocks, ``i < 2K + 4`` with
#: K = floor(log2(wid_hi - wid_lo + 1)): level ``k = i >> 1``; with ``l = ceil(lo / 2^k)`` and
#: ``r = floor((hi + 1) / 2^k)``, step ``2k`` takes block ``l`` when l is odd, step ``2k + 1``
#: block ``r - 1`` when r is odd (both only while ``l < r``).
_SHORT = f"wid_hi - wid_lo < {SHORT}"
_STEPS = f"explode(sequence(0L, IF({_SHORT}, wid_hi - wid_lo, 2 * FLOOR(LOG2(wid_hi - wid_lo + 1)) + 3)))"
_K = f"CAST(shiftright({_STEP}, 1) AS INT)"
_L, _R = f"-shiftright(-wid_lo, {_K})", f"shiftright(wid_hi + 1, {_K})"
_TAKEN = f"{_SHORT} OR ({_L} < {_R} AND pmod(IF({_STEP} % 2 = 0, {_L}, {_R}), 2) = 1)"
_LEVEL_OF = f"IF({_SHORT}, 0, {_K})"
_BLOCK_OF = f"IF({_SHORT}, wid_lo + {_STEP}, IF({_STEP} % 2 = 0, {_L}, {_R} - 1))"
#: Block j of level k spreads over its 2^k ids.
_SPREAD = f"explode(sequence(shiftleft({_BLOCK}, {_LEVEL}), shiftleft({_BLOCK} + 1, {_LEVEL}) - 1))"


def _ids(last: str = "wid_hi") -> str:
    """A range (a tuple's, or a short pane's ending at ``last``) spread over its ids."""
    return f"explode(sequence(wid_lo, {last}))"


def _as(sql: str, name: str) -> Column:
    return F.expr(f"{sql} AS {quote(name)}")


def short(span: int | None) -> bool:
    """Every range holds at most :data:`DIRECT` ids (``span``: a bound on ``wid_hi - wid_lo + 1``
    that the caller knows, None when it knows none): the panes spread over their ids at once.

    >>> short(DIRECT), short(DIRECT + 1), short(None)
    (True, False, False)
    """
    return span is not None and span <= DIRECT


def scanned(width: int | None) -> bool:
    """Every range holds exactly ``width`` ids, more than :data:`SCANNED` (None: ranges differ or
    the caller does not know): the windows come off block scans of the panes.

    >>> scanned(SCANNED), scanned(SCANNED + 1), scanned(None)
    (False, True, False)
    >>> short(SCANNED)  # a known width is scanned or short, never split into dyadic blocks
    True
    """
    return width is not None and width > SCANNED


def pane_range(width: int | None) -> tuple[list[tuple[str, str]], str]:
    """How a pane holds its range, as SQL text: its grouping items ``(name, expression)`` and its
    last id. Without a ``width``, ``wid_lo`` and ``wid_hi``; with one (every range ``width`` ids),
    ``wid_lo`` alone, the last id ``wid_lo + width - 1`` (narrower panes, a shorter hash key), and
    a range of another length fails the query instead of being counted wrong.

    >>> pane_range(None)
    ([('wid_lo', 'wid_lo'), ('wid_hi', 'wid_hi')], 'wid_hi')
    >>> ranged, last = pane_range(3)
    >>> print(ranged[0][1]); print(last)
    IF(wid_hi - wid_lo = 2, wid_lo, raise_error(concat('wid: ranges of 3 ids expected, met ', coalesce(CAST(wid_lo AS STRING), 'NULL'), '..', coalesce(CAST(wid_hi AS STRING), 'NULL'))))
    wid_lo + 2
    """
    if width is None:
        return [("wid_lo", "wid_lo"), ("wid_hi", "wid_hi")], "wid_hi"
    shown = [f"coalesce(CAST({end} AS STRING), 'NULL')" for end in ("wid_lo", "wid_hi")]
    wrong = f"raise_error(concat('wid: ranges of {width} ids expected, met ', {shown[0]}, '..', {shown[1]}))"
    return [("wid_lo", f"IF(wid_hi - wid_lo = {width - 1}, wid_lo, {wrong})")], f"wid_lo + {width - 1}"


def range_aggregate(tagged: DataFrame, keys: list[str], aggregates: list[Aggregate],
                    span: int | None = None, width: int | None = None) -> DataFrame:
    """One row per ``(keys, wid)`` covered by some tuple's ``[wid_lo, wid_hi]``: columns
    ``keys``, ``wid`` and one per aggregate alias. ``span``: a bound on every range's number of
    ids, if known; with :func:`short` ranges the panes spread straight over their ids and one
    group-by combines them (no block stage: two aggregations in all, as a tumbling group-by
    followed by another). ``width``: every range's number of ids, if the caller knows they are
    all equal (a sliding window whose slide divides its range): the panes group by ``(keys,
    wid_lo)`` alone and a range of another length fails the query (:func:`pane_range`); longer
    than :data:`SCANNED`, the windows come from block scans of the panes
    (:mod:`wid.aggregate.block_scans`). With keys, the panes move once to their keys' partition:
    the later group-bys shuffle nothing (a key's panes then share a core: few keys, few cores busy
    after the pane stage). The keys travel as :func:`inner` names, so no stage's own column can
    take a key's name.

    Each tuple counts once in every id of its range:

    >>> tagged = spark.createDataFrame([(0, 2, 5), (1, 3, -2), (3, 3, 4)], "wid_lo long, wid_hi long, v long")
    >>> out = range_aggregate(tagged, [], [Aggregate("n", "count"), Aggregate("total", "sum", "v")])
    >>> sorted(tuple(row) for row in out.collect())
    [(0, 1, 5), (1, 2, 3), (2, 2, 3), (3, 2, 2)]
    """
    if not all(a.decomposable for a in aggregates):
        return _expanded(tagged, keys, aggregates)
    types = {f.name: f.dataType for f in tagged.schema.fields}
    partials = [p for i, a in enumerate(aggregates) for p in a.partials(i, types.get(a.arg))]
    merges = [m for i, a in enumerate(aggregates) for m in a.merge(i)]
    names, named, outer = [name for name, _ in partials], inner(keys), keys
    keys = columns(named)
    ranged, last = pane_range(width)
    panes = tagged.groupBy(*[column(k).alias(n) for k, n in zip(outer, named)],
                           *[_as(sql, name) for name, sql in ranged]).agg(*[_as(sql, name) for name, sql in partials])
    finals = [_as(a.final(i, types.get(a.arg)), a.alias) for i, a in enumerate(aggregates)]
    if keys:  # the later group-bys are by (keys, ...): partitioned by keys, they need no further shuffle
        panes = panes.repartition(*keys)
    if scanned(width):
        ids = block_windows(panes, named, merges, width, WID)
    elif short(width if width is not None else span):  # a width up to SCANNED spreads: the blocks see none
        ids = panes.select(*keys, *names, _as(_ids(last), WID))
    else:
        steps = panes.select(*keys, *names, "wid_lo", "wid_hi", _as(_STEPS, _STEP)).where(F.expr(_TAKEN))
        blocks = steps.groupBy(*keys, _as(_LEVEL_OF, _LEVEL), _as(_BLOCK_OF, _BLOCK)).agg(
            *[_as(sql, name) for name, sql in merges])
        ids = blocks.select(*keys, *names, _as(_SPREAD, WID))
    out = ids.groupBy(*keys, WID).agg(*finals)
    return out.select(*[column(n).alias(k) for n, k in zip(named, outer)], WID, *columns([a.alias for a in aggregates]))


def inner(keys: list[str]) -> list[str]:
    """The names the keys take through the range aggregate's stages (none of the stages' own).

    >>> inner(["seg.id", "_wid_prev"])
    ['_wid_key0', '_wid_key1']
    """
    return [f"_wid_key{i}" for i in range(len(keys))]


def _expanded(tagged: DataFrame, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """The fallback: each tuple once per id of its range, then a plain group-by."""
    copies = tagged.withColumn(WID, F.expr(_ids()))
    return copies.groupBy(*columns(keys), WID).agg(*[a.direct().alias(a.alias) for a in aggregates])


def range_aggregate_sql(tagged: str, keys: list[str], aggregates: list[Aggregate],
                        types: dict[str, DataType], span: int | None = None, width: int | None = None) -> str:
    """:func:`range_aggregate` as one Spark SQL query over the relation ``tagged`` (SQL text: a
    quoted name or a parenthesised query; ``types``: its columns' types): the same panes, steps,
    blocks and ids, and the same result types.

    >>> from pyspark.sql.types import LongType
    >>> tagged = ("(SELECT * FROM VALUES ('a', 0L, 2L, 5L), ('a', 1L, 3L, -2L), ('b', 3L, 3L, 4L) "
    ...           "AS t(k, wid_lo, wid_hi, v))")
    >>> text = range_aggregate_sql(tagged, ["k"], [Aggregate("mean", "avg", "v")], {"v": LongType()}, span=3)
    >>> sorted(tuple(row) for row in spark.sql(text).collect())
    [('a', 0, 5.0), ('a', 1, 1.5), ('a', 2, 1.5), ('a', 3, -2.0), ('b', 3, 4.0)]
    """
    key = "".join(f"{quote(k)}, " for k in keys)
    if not all(a.decomposable for a in aggregates):
        return (f"SELECT {key}{WID}, {', '.join(f'{a.direct_sql()} AS {quote(a.alias)}' for a in aggregates)} "
                f"FROM (SELECT *, {_ids()} AS {WID} FROM {tagged}) GROUP BY {key}{WID}")
    partials = [p for i, a in enumerate(aggregates) for p in a.partials(i, types.get(a.arg))]
    merged = [m for i, a in enumerate(aggregates) for m in a.merge(i)]
    merges = ", ".join(f"{sql} AS {name}" for name, sql in merged)
    names = "".join(f"{name}, " for name, _ in partials)
    named = inner(keys)
    renamed = "".join(f"{quote(k)} AS {n}, " for k, n in zip(keys, named))
    ranged, last = pane_range(width)
    panes = (f"SELECT {renamed}{''.join(f'{sql} AS {name}, ' for name, sql in ranged)}"
             f"{', '.join(f'{sql} AS {name}' for name, sql in partials)} "
             f"FROM {tagged} GROUP BY {key}{', '.join(sql for _, sql in ranged)}"
             ) + (f" DISTRIBUTE BY {', '.join(named)}" if keys else "")
    outer = "".join(f"{n} AS {quote(k)}, " for k, n in zip(keys, named))
    key = "".join(f"{n}, " for n in named)
    if scanned(width):
        ids = block_windows_sql(f"({panes})", named, merged, width, WID)
    elif short(width if width is not None else span):
        ids = f"SELECT {key}{names}{_ids(last)} AS {WID} FROM ({panes})"
    else:
        steps = f"SELECT {key}{names}wid_lo, wid_hi, {_STEPS} AS {_STEP} FROM ({panes})"
        blocks = (f"SELECT {key}{_LEVEL_OF} AS {_LEVEL}, {_BLOCK_OF} AS {_BLOCK}, {merges} FROM ({steps}) "
                  f"WHERE {_TAKEN} GROUP BY {key}{_LEVEL_OF}, {_BLOCK_OF}")
        ids = f"SELECT {key}{names}{_SPREAD} AS {WID} FROM ({blocks})"
    finals = ", ".join(f"{a.final(i, types.get(a.arg))} AS {quote(a.alias)}" for i, a in enumerate(aggregates))
    return f"SELECT {outer}{WID}, {finals} FROM ({ids}) GROUP BY {key}{WID}"
