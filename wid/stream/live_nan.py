"""NaN in live mode's aggregates, as Spark takes it.

The stateful step reads a value column through pandas, where NaN and NULL are one (see
:mod:`wid.bucket.nan`). In Spark's aggregates NaN is a value above +inf: ``count`` counts it;
``sum``, ``avg`` and ``max`` give NaN; ``min`` skips it unless every value is NaN. So each
flagged argument's flag is summed per pane like any value (:func:`nan_counts`: the pane's NaNs,
a hidden ``sum``), the panes' own partials skip NaN as NULL, and :func:`nan_final` folds the
count into each aggregate Spark finishes.

>>> flags = NanFlags({"v": "_wid_nan1"})
>>> [(a.alias, a.fn, a.arg) for a in nan_counts(flags, [Aggregate("hi", "max", "v"), Aggregate("n", "count", None)])]
[('_wid_nans_1', 'sum', '_wid_nan1')]
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DoubleType

from wid.aggregate.range import Aggregate
from wid.bucket.nan import NanFlags


def _count(flags: NanFlags, arg: str) -> str:
    return f"_wid_nans_{flags.flags[arg].removeprefix('_wid_nan')}" if arg in flags.flags else ""


def nan_counts(flags: NanFlags, aggregates: Iterable[Aggregate]) -> list[Aggregate]:
    """One hidden ``sum`` of the flag per flagged argument of ``aggregates`` (its NaNs)."""
    args = dict.fromkeys(a.arg for a in aggregates if a.arg in flags.flags)
    return [Aggregate(_count(flags, arg), "sum", flags.flags[arg]) for arg in args]


def nan_final(flags: NanFlags, aggregate: Aggregate, result: Column, dtype: DataType,
              nans: dict[str, Column]) -> Column:
    """``result`` (``aggregate`` over the values that are not NaN) with the NaNs counted in
    ``nans`` (alias -> the merged count's column) as Spark counts them: one value each for
    ``count``; NaN for ``sum``, ``avg`` and ``max``; NaN for ``min`` only over NaNs alone
    (``dtype``: the argument's, a min's or max's type)."""
    count = nans.get(_count(flags, aggregate.arg)) if aggregate.arg is not None else None
    if count is None:
        return result
    n = F.coalesce(count, F.lit(0))
    if aggregate.fn == "count":
        return result + n
    some = n > 0 if aggregate.fn != "min" else result.isNull() & (n > 0)
    nan = F.lit(float("nan")).cast(dtype if aggregate.fn in ("min", "max") else DoubleType())
    return F.when(some, nan).otherwise(result)
