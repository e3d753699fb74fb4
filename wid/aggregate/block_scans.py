"""Uniform ranges: each window from a block suffix and a block prefix of its key's panes.

When every range holds exactly ``n`` ids, the panes of window ``w`` are those with
``w - n + 1 <= wid_lo <= w``. Cut the ids into blocks of ``n``, ``[b*n, b*n + n - 1]``: the
window's panes are a suffix of block ``B1 = floor((w - n + 1) / n)`` (from ``wid_lo = w - n + 1``)
and a prefix of the next block ``B2`` (up to ``wid_lo = w``), or, when ``w - n + 1`` starts a
block, that block's prefix alone (van Herk 1992; Gil and Werman 1993). So:

    window(w) = suffix(B1, w - n + 1) + prefix(B2, w)

with the running merges of each block's panes in ``wid_lo`` order (two window-function scans of
a sort, ``ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW``, one per direction). A pane at
``lo`` hands its prefix to the ids ``lo .. next - 1`` (``next``: the block's next pane, or the
block's end + 1) and its suffix to ``w`` with ``w - n + 1`` in ``prev + 1 .. lo`` (``prev``: the
block's previous pane, or the block's start; the start itself is the prefix's), so each id
gets one or two rows whatever ``n``: the cost does not grow with ``range/slide``. Ids no pane
covers get none. Only the panes' first ids and partials are seen, never the window spec; the
caller vouches that every range holds ``n`` ids (:func:`wid.aggregate.range.pane_range` checks
each tuple's).

Before the scans' sorts, the panes of a partition are sorted by one long (:func:`presort`: a
hash of the keys, then ``wid_lo``), which Spark sorts by radix: the scans' own sorts by
``(keys, block, wid_lo)`` then read rows already in nearly that order (the query of ``wid bench``
on its cached 20M rows, 50 keys, idle, medians of 5 runs interleaved with the plan without it:
4.81 to 4.26 s at range/slide 240, 4.38 to 4.06 s at 60, 4.42 to 4.01 s at 16; 2026-11-27).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.windows.sqlexpr import quote

_FROM, _TO = "_wid_from", "_wid_to"


def _start(n: int) -> str:
    """The start of the block of ``n`` ids holding ``wid_lo``."""
    return f"(wid_lo - pmod(wid_lo, {n}))"


def presort(keys: list[str]) -> str:
    """The sort key, SQL text, that puts a partition's panes in nearly their scans' order at a
    radix sort's cost: ``(hash(keys) mod 2^15) * 2^48 + (wid_lo mod 2^48)``, one long (a
    collision or a wrap only leaves more work to the scans' own sort, never a wrong result).

    >>> print(presort(["k"]))
    shiftleft(pmod(hash(`k`), 32768), 48) + pmod(wid_lo, 281474976710656)
    >>> print(presort([]))
    pmod(wid_lo, 281474976710656)
    """
    within = f"pmod(wid_lo, {1 << 48})"
    return f"shiftleft(pmod(hash({', '.join(map(quote, keys))}), 32768), 48) + {within}" if keys else within


def block_scans(keys: list[str], merges: list[tuple[str, str]], n: int) -> list[str]:
    """Select items over panes ``(keys, wid_lo, partials)``: the keys, the first id, each
    partial's running merge within its block in both directions (``<name>_p``, ``<name>_s``)
    and the block's previous and next ``wid_lo``.

    >>> items = block_scans(["k"], [("_wid_p0", "max(_wid_p0)")], 4)
    >>> [item.split(" AS ")[-1] for item in items]
    ['`k`', 'wid_lo', '_wid_p0_p', '_wid_p0_s', '_wid_prev', '_wid_next']
    >>> print(items[2])  # doctest: +NORMALIZE_WHITESPACE
    max(_wid_p0) OVER (PARTITION BY `k`, (wid_lo - pmod(wid_lo, 4)) ORDER BY wid_lo
                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _wid_p0_p
    """
    block = f"PARTITION BY {''.join(f'{quote(k)}, ' for k in keys)}{_start(n)} ORDER BY wid_lo"
    frame = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    return [*map(quote, keys), "wid_lo",
            *[f"{sql} OVER ({block} {frame}) AS {name}_p" for name, sql in merges],
            *[f"{sql} OVER ({block} DESC {frame}) AS {name}_s" for name, sql in merges],
            f"lag(wid_lo) OVER ({block}) AS _wid_prev", f"lead(wid_lo) OVER ({block}) AS _wid_next"]


def block_parts(names: list[str], n: int) -> str:
    """The generator over :func:`block_scans`' rows: each pane's prefix row (ids ``_wid_from ..
    _wid_to``) and suffix row, with the partials ``names``.

    >>> print(block_parts(["_wid_p0"], 4).split(" AS ")[-1])
    (_wid_from, _wid_to, _wid_p0)
    """
    prefix = ", ".join(["wid_lo", f"coalesce(_wid_next, {_start(n)} + {n}) - 1", *[f"{x}_p" for x in names]])
    suffix = ", ".join([f"coalesce(_wid_prev, {_start(n)}) + {n}", f"wid_lo + {n - 1}", *[f"{x}_s" for x in names]])
    return f"stack(2, {prefix}, {suffix}) AS ({', '.join([_FROM, _TO, *names])})"


#: Each part over its ids.
IDS = f"explode(sequence({_FROM}, {_TO}))"
#: A part covering no id (a pane at its block's start hands the start to its prefix).
NONEMPTY = f"{_FROM} <= {_TO}"


def block_windows(panes: DataFrame, keys: list[str], merges: list[tuple[str, str]], n: int,
                  wid: str) -> DataFrame:
    """Rows ``(keys, partials, wid)`` over ``panes`` (``keys``, ``wid_lo`` and the partials that
    ``merges`` name, each pane's range ``n`` ids from ``wid_lo``): one or two per id some pane
    covers; their merge by ``(keys, wid)`` is the window's.

    Three panes of ranges of 3 ids (``wid_lo`` 0, 2, 4) with maxima 5, 7, 2: window 2 holds the
    first two, window 4 the last two:

    >>> panes = spark.createDataFrame([(0, 5), (2, 7), (4, 2)], "wid_lo long, _wid_p0 long")
    >>> rows = block_windows(panes, [], [("_wid_p0", "max(_wid_p0)")], 3, "wid")
    >>> sorted(tuple(r) for r in rows.groupBy("wid").max("_wid_p0").collect())
    [(0, 5), (1, 5), (2, 7), (3, 7), (4, 7), (5, 2), (6, 2)]
    """
    names, quoted = [name for name, _ in merges], [quote(k) for k in keys]
    if not keys:  # partitioned by block here, so that the pre-sort is the scans' partition's
        panes = panes.repartition(F.expr(_start(n)))
    scanned = panes.sortWithinPartitions(F.expr(presort(keys))).selectExpr(*block_scans(keys, merges, n))
    parts = scanned.selectExpr(*quoted, block_parts(names, n)).where(NONEMPTY)
    return parts.selectExpr(*quoted, *names, f"{IDS} AS {quote(wid)}")


def block_windows_sql(panes: str, keys: list[str], merges: list[tuple[str, str]], n: int, wid: str) -> str:
    """:func:`block_windows` as SQL text over the relation ``panes`` (a quoted name or a
    parenthesised query).

    >>> panes = "(SELECT * FROM VALUES (0L, 5L), (2L, 7L), (4L, 2L) AS t(wid_lo, _wid_p0))"
    >>> text = block_windows_sql(panes, [], [("_wid_p0", "max(_wid_p0)")], 3, "wid")
    >>> sorted(tuple(r) for r in spark.sql(f"SELECT wid, max(_wid_p0) FROM ({text}) GROUP BY wid").collect())
    [(0, 5), (1, 5), (2, 7), (3, 7), (4, 7), (5, 2), (6, 2)]
    """
    names, key = [name for name, _ in merges], "".join(f"{quote(k)}, " for k in keys)
    placed = f"DISTRIBUTE BY {_start(n)} " if not keys else ""
    ordered = f"(SELECT * FROM {panes} {placed}SORT BY {presort(keys)})"
    scanned = f"SELECT {', '.join(block_scans(keys, merges, n))} FROM {ordered}"
    parts = f"SELECT {key}{block_parts(names, n)} FROM ({scanned})"
    return f"SELECT {key}{', '.join(names)}, {IDS} AS {quote(wid)} FROM ({parts}) WHERE {NONEMPTY}"
