"""The plain Spark SQL formulation of FCA windows, the reference for the bins: each window
``w`` joined with the tuples of its extent ``w - r < x <= w`` on chunks of width ``r``."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.aggregate.range import Aggregate
from wid.bucket.columns import WID, WID_WINDOW, WID_X
from wid.bucket.fca import CHUNK, chunked, contributes
from wid.spec.numbers import Number, floor_div


def joined_aggregate(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """One row per ``(keys, wid)`` (``wid`` in x units) whose extent holds a contributing tuple."""
    windows = tagged.where(F.col(WID_WINDOW)).select(F.col(WID_X).alias(WID)).distinct()
    windows = windows.withColumn(CHUNK, floor_div(F.col(WID), r))
    tuples = chunked(tagged.where(contributes(tagged)), r, r)
    extent = (F.col(WID) - F.lit(r) < F.col(WID_X)) & (F.col(WID_X) <= F.col(WID))
    joined = tuples.join(windows, CHUNK).where(extent)
    return joined.groupBy(*keys, WID).agg(*[a.direct().alias(a.alias) for a in aggregates])
