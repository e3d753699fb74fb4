"""NaN in live mode's aggregates, as Spark takes it.

The stateful step reads a value column through pandas, where NaN and NULL are one (so each
carries a flag: :mod:`wid.bucket.nan`). In Spark's aggregates NaN is a value above +inf: ``count`` counts it;
``sum``, ``avg`` and ``max`` give NaN; ``min`` skips it unless every value is NaN. So each
flagged argument's flag is summed per pane like any value (:func:`nan_counts`: the pane's NaNs,
a hidden ``sum``, one per flag: arguments that copy one column share its flag), the panes' own
partials skip NaN as NULL, and :func:`nan_final` folds the count into each aggregate Spark
finishes.

>>> flags = {"v": "_wid_nan1", "_wid_v2": "_wid_nan1"}  # an argument -> its flag column
>>> aggregates = [Aggregate("hi", "max", "v"), Aggregate("lo", "min", "_wid_v2"), Aggregate("n", "count", None)]
>>> [(a.alias, a.fn, a.arg) for a in nan_counts(flags, aggregates)]
[('_wid_nans_1', 'sum', '_wid_nan1')]
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DoubleType

from wid.aggregate.partials import Aggregate


def _count(flag: str) -> str:
    return f"_wid_nans_{flag.removeprefix('_wid_nan')}"


def nan_counts(flags: dict[str, str], aggregates: Iterable[Aggregate]) -> list[Aggregate]:
    """One hidden ``sum`` per flag (argument -> flag column: ``flags``) of ``aggregates``' arguments: their NaNs.

    >>> aggregates = [Aggregate("s", "sum", "w"), Aggregate("hi", "max", "v"), Aggregate("lo", "min", "v"),
    ...               Aggregate("n", "count", None)]
    >>> [(a.alias, a.fn, a.arg) for a in nan_counts({"v": "_wid_nan1", "w": "_wid_nan2"}, aggregates)]
    [('_wid_nans_2', 'sum', '_wid_nan2'), ('_wid_nans_1', 'sum', '_wid_nan1')]
    """
    used = dict.fromkeys(flags[a.arg] for a in aggregates if a.arg in flags)
    return [Aggregate(_count(flag), "sum", flag) for flag in used]


def nan_final(flags: dict[str, str], aggregate: Aggregate, result: Column, dtype: DataType,
              nans: dict[str, Column]) -> Column:
    """``result`` (``aggregate`` over the values that are not NaN) with the NaNs counted in
    ``nans`` (alias -> the merged count's column) as Spark counts them: one value each for
    ``count``; NaN for ``sum``, ``avg`` and ``max``; NaN for ``min`` only over NaNs alone
    (``dtype``: the argument's, a min's or max's type). A :data:`wid.stream.live.output.Fold`.

    A window whose values of ``v`` are 1.5 and 6.0 (the partials' results) and two NaNs:

    >>> nans = {"_wid_nans_1": F.lit(2)}
    >>> finals = [nan_final({"v": "_wid_nan1"}, Aggregate(fn, fn, "v"), F.lit(r), DoubleType(), nans).alias(fn)
    ...           for fn, r in [("count", 2), ("sum", 7.5), ("max", 6.0), ("min", 1.5)]]
    >>> spark.range(1).select(*finals).first()
    Row(count=4, sum=nan, max=nan, min=1.5)
    """
    count = nans.get(_count(flags[aggregate.arg])) if aggregate.arg in flags else None
    if count is None:
        return result
    n = F.coalesce(count, F.lit(0))
    if aggregate.fn == "count":
        return result + n
    some = n > 0 if aggregate.fn != "min" else result.isNull() & (n > 0)
    nan = F.lit(float("nan")).cast(dtype if aggregate.fn in ("min", "max") else DoubleType())
    return F.when(some, nan).otherwise(result)
