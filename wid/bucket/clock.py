"""The arrival clock of operational windows (SPL time policies, Flink time policies).

``_wid_t`` is the clock column as a number (seconds, or microseconds for timestamps), checked
non-decreasing in ``row_num`` order when the query runs; ``_wid_t0``/``_wid_tend`` are the
stream's first and last arrival. Periods given in seconds are scaled to the clock's units.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame

from wid.bucket.columns import Named, attribute_type, column, numeric_value
from wid.bucket.checks import checked
from wid.bucket.steps import Add, Step, Totals, staged
from wid.errors import WidError
from wid.windows.sqlexpr import Expr, call, constant, over, when

T, T0, TEND = "_wid_t", "_wid_t0", "_wid_tend"


def time_scale(df: DataFrame, ts: str) -> int:
    """Factor from seconds to the units of the clock on column ``ts`` (10**6 for timestamps).

    >>> days = spark.sql("SELECT DATE'2026-11-25' AS day")
    >>> time_scale(spark.table("readings"), "arrival_ts"), time_scale(days, "day")
    (1, 1000000)
    """
    return numeric_value(column(ts), attribute_type(df, ts), ts)[1]


def ticks(x: Expr, period: float) -> Expr:
    """``floor(x / period)`` as a long, in the clock's own (double) arithmetic, as the operational
    time policies compare: exact on integral clocks below 2**53.

    >>> times = spark.createDataFrame([(-0.5,), (2.5,), (4.99,)], "t double")
    >>> sorted(times.select("t", ticks(column("t"), 2.5).alias("tick")).collect())
    [Row(t=-0.5, tick=-1), Row(t=2.5, tick=1), Row(t=4.99, tick=1)]
    """
    return call("floor", x / constant(period, x)).cast("long")


def clock(df: DataFrame, ts: str, named: Named = column) -> Expr:
    """The clock ``T`` on column ``ts`` as a number (seconds, microseconds for timestamps; NULL
    and NaN refused), row by row: live mode checks its order as the rows come.

    >>> arrivals = spark.sql("SELECT 0L AS row_num, TIMESTAMP'1970-01-01 00:00:01.25' AS t")
    >>> arrivals.select(clock(arrivals, "t").alias("T")).first()
    Row(T=1250000)
    """
    dtype = attribute_type(df, ts)
    return checked(numeric_value(named(ts), dtype, ts)[0], dtype, ts)


def check_clock(t: np.ndarray, previous: float | int, row_num: np.ndarray, ts: str) -> float | int:
    """Live mode's order check of the clock ``t`` of a micro-batch's rows (``row_num`` order),
    ``previous`` the clock of the row before them (NaN: none): a :class:`WidError`
    naming the first row whose clock is below the row before it, as the query checks a whole
    stream (:func:`clock_steps`). Returns the last row's clock. A long clock (microseconds of a
    timestamp) is compared as longs, exact past 2**53.

    >>> check_clock(np.array([1.0, np.nan, 0.5]), 0.5, np.array([4, 5, 6]), "ts")
    0.5
    >>> check_clock(np.array([2**53 + 1, 2**53]), 2**53, np.array([7, 8]), "ts")
    Traceback (most recent call last):
    wid.errors.WidError: wid: ts decreases in row_num order at row_num=8
    """
    if not len(t):
        return previous
    with np.errstate(invalid="ignore"):
        down = [0] if previous > t[0] else np.flatnonzero(t[:-1] > t[1:]) + 1
    if len(down):
        raise WidError(f"wid: {ts} decreases in row_num order at row_num={row_num[down[0]]}")
    last = t[-1]
    return last.item() if isinstance(last, np.generic) else last  # pandas may hand Python ints


def clock_steps(df: DataFrame, ts: str, counted: Expr | None = None, named: Named = column) -> list[Step]:
    """The steps adding the clock ``T`` on column ``ts`` of ``df`` (a run-time error names the first
    row where it decreases) and ``T0``/``TEND`` over the rows where ``counted`` holds (all rows
    by default); Columns, or SQL text with ``named = Sql.column``.

    >>> readings = spark.table("readings")  # ts by row_num: 1.0, 4.0, 2.5, 9.0
    >>> staged(readings, clock_steps(readings, "ts")).collect()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pyspark...: [USER_RAISED_EXCEPTION] wid: ts decreases in row_num order at row_num=2 ...
    """
    t = clock(df, ts, named)
    row = named("row_num")
    message = call("concat", constant(f"wid: {ts} decreases in row_num order at row_num=", row), row.cast("string"))
    previous = over(call("lag", t), order=["row_num"])
    return [Add([(T, when(previous > t, call("raise_error", message), t))]),
            Totals([(T0, call("min", named(T))), (TEND, call("max", named(T)))], counted)]


def clocked(df: DataFrame, ts: str, counted: Expr | None = None) -> DataFrame:
    """``df`` after :func:`clock_steps`.

    >>> arrivals = clocked(spark.table("readings"), "arrival_ts", column("v") > 4)  # T0, TEND over rows 0 and 1
    >>> arrivals.select("row_num", T, T0, TEND).orderBy("row_num").show()
    +-------+------+-------+---------+
    |row_num|_wid_t|_wid_t0|_wid_tend|
    +-------+------+-------+---------+
    |      0|   1.5|    1.5|      4.5|
    |      1|   4.5|    1.5|      4.5|
    |      2|   5.0|    1.5|      4.5|
    |      3|   9.5|    1.5|      4.5|
    +-------+------+-------+---------+
    <BLANKLINE>
    """
    return staged(df, clock_steps(df, ts, counted))
