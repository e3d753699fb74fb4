"""Pane partials in pandas, for the live state: window-agnostic like :mod:`wid.aggregate.range`.

A pane is ``(keys, wid_lo, wid_hi)`` with the decomposable partials of the tuples whose
(on-time) range it is, typed as :meth:`Aggregate.partials`: ``count -> sum``, ``sum -> sum``,
``min -> min``, ``max -> max``, ``avg -> (sum, count)`` (the sum of a decimal as exact
decimals, of other numbers as doubles). Panes of equal range merge; a window's partials are
the merge of the panes whose range holds it (its aggregate: :meth:`Aggregate.final` of them).
"""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
from pyspark.sql.types import DecimalType, StructType

from wid.aggregate.partials import Aggregate

LO, HI = "wid_lo", "wid_hi"
DIGITS = 80  # decimal sums in Python: exact far beyond Spark's 38 digits


def partial_names(aggregates: list[Aggregate]) -> list[tuple[str, str]]:
    """``(partial column, merge: sum|min|max)`` per partial, named as :meth:`Aggregate.partials`.

    >>> partial_names([Aggregate("n", "count"), Aggregate("lo", "min", "v"), Aggregate("m", "avg", "v")])
    [('_wid_p0', 'sum'), ('_wid_p1', 'min'), ('_wid_p2s', 'sum'), ('_wid_p2n', 'sum')]
    """
    return [(name, a.fn if a.fn in ("min", "max") else "sum")
            for i, a in enumerate(aggregates) for name, _ in a.partials(i)]


def tuple_partials(tuples: pd.DataFrame, aggregates: list[Aggregate], panes: StructType) -> pd.DataFrame:
    """One partial row per tuple (the partials of a one-tuple pane); ``panes``: the pane schema.

    >>> from pyspark.sql.types import DoubleType, LongType, StructField
    >>> panes = StructType([StructField("_wid_p0", LongType()), StructField("_wid_p1s", DoubleType()),
    ...                     StructField("_wid_p1n", LongType())])
    >>> tuples = pd.DataFrame({"v": pd.array([5, None, 7], "Int64")})
    >>> tuple_partials(tuples, [Aggregate("n", "count", "v"), Aggregate("m", "avg", "v")], panes).to_dict("list")
    {'_wid_p0': [1, 0, 1], '_wid_p1s': [5.0, nan, 7.0], '_wid_p1n': [1, 0, 1]}
    """
    out = {}
    for i, a in enumerate(aggregates):
        name = f"_wid_p{i}"
        value = tuples[a.arg] if a.arg is not None else pd.Series(1, index=tuples.index, dtype="int64")
        if a.fn == "count":
            out[name] = value.notna().astype("int64")
        elif a.fn == "avg":
            exact = isinstance(panes[name + "s"].dataType, DecimalType)
            out[name + "s"] = value if exact else value.astype("float64")
            out[name + "n"] = value.notna().astype("int64")
        else:
            out[name] = value
    return pd.DataFrame(out, index=tuples.index)


def merge(frame: pd.DataFrame, by: list[str], aggregates: list[Aggregate]) -> pd.DataFrame:
    """Partials of equal ``by`` combined (NULL keys are a group; a sum of NULLs stays NULL).

    >>> panes = pd.DataFrame({"k": ["a", None, "a", None], "_wid_p0": [1, 1, 2, 1], "_wid_p1": [5.0, None, 3.0, None]})
    >>> merge(panes, ["k"], [Aggregate("n", "count"), Aggregate("total", "sum", "v")]).values.tolist()
    [['a', 3, 8.0], [nan, 2, nan]]
    """
    if frame.empty:
        return frame[[*by, *[n for n, _ in partial_names(aggregates)]]].reset_index(drop=True)
    groups = frame.groupby(by, dropna=False, sort=False)
    with decimal.localcontext(prec=DIGITS):  # Python's default context rounds sums at 28 digits
        parts = [groups[name].sum(min_count=1) if how == "sum" else getattr(groups[name], how)()
                 for name, how in partial_names(aggregates)]
    return pd.concat(parts, axis=1).reset_index()


def spread(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, w)`` for every id ``lo[row] <= w <= hi[row]`` (empty ranges give none).

    >>> spread(np.array([3, 7, 0]), np.array([5, 6, 1]))
    (array([0, 0, 0, 2, 2]), array([3, 4, 5, 0, 1]))
    """
    with np.errstate(over="ignore"):  # hi may be the int64 minimum (nothing closed): no ids
        n = np.where(hi >= lo, hi - lo + 1, 0)
    rows = np.repeat(np.arange(len(lo)), n)
    start = np.repeat(np.cumsum(n) - n, n)
    return rows, lo[rows] + (np.arange(int(n.sum())) - start)
