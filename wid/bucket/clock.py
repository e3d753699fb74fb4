"""The arrival clock of operational windows (SPL time policies, Flink time policies).

``_wid_t`` is the clock column as a number (seconds, or microseconds for timestamps), checked
non-decreasing in ``row_num`` order when the query runs; ``_wid_t0``/``_wid_tend`` are the
stream's first and last arrival. Periods given in seconds are scaled to the clock's units.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from wid.bucket.columns import attribute_type, checked, numeric_value

T, T0, TEND = "_wid_t", "_wid_t0", "_wid_tend"


def time_scale(df: DataFrame, ts: str) -> int:
    """Factor from seconds to the units of the clock on column ``ts`` (10**6 for timestamps)."""
    return numeric_value(F.col(ts), attribute_type(df, ts), ts)[1]


def ticks(x: Column, period: float) -> Column:
    """``floor(x / period)`` as a long, in the clock's own (double) arithmetic, as the operational
    time policies compare: exact on integral clocks below 2**53."""
    return F.floor(x / F.lit(period)).cast("long")


def clocked(df: DataFrame, ts: str, counted: Column | None = None) -> DataFrame:
    """``df`` with the clock ``T`` on column ``ts`` (a run-time error names the first row where it
    decreases) and ``T0``/``TEND`` over the rows where ``counted`` holds (all rows by default)."""
    dtype = attribute_type(df, ts)
    t, _ = numeric_value(F.col(ts), dtype, ts)
    previous = F.lag(T).over(Window.orderBy("row_num"))
    df = df.withColumn(T, checked(t, dtype, ts)).withColumn(
        T,
        F.when(previous > F.col(T), F.raise_error(F.concat(
            F.lit(f"wid: {ts} decreases in row_num order at row_num="), F.col("row_num").cast("string"))))
        .otherwise(F.col(T)),
    )
    stream = df if counted is None else df.where(counted)
    return df.crossJoin(F.broadcast(stream.agg(F.min(T).alias(T0), F.max(T).alias(TEND))))
