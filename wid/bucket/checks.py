"""Bucket's checks on the tuples and punctuations it reads: a query fails, naming the element by
its columns (:func:`naming`, :func:`described`), where it has no place in the arrival order (a
NULL ``row_num``) or no exact window-ids (a NULL, NaN, infinite or too large window attribute);
nothing is dropped without a trace."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from decimal import Decimal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DoubleType, FloatType

from wid.windows.numbers import Number
from wid.windows.sqlexpr import Expr, Sql, column, literal


def in_order(frame: DataFrame, element: str = "tuple") -> DataFrame:
    """``frame`` (tuples or punctuations) whose ``row_num`` fails the query where it is NULL:
    an element without one has no place in the arrival order a replay reads.

    >>> punctuations = spark.createDataFrame([(4, 3.0), (None, 5.0)], "row_num long, ts double")
    >>> in_order(punctuations, "punctuation").collect()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pyspark...: [USER_RAISED_EXCEPTION] wid: a punctuation with a NULL row_num: arrival order needs one ...
    """
    row_num = column("row_num")
    message = F.lit(f"wid: a {element} with a NULL row_num: arrival order needs one")
    return frame.withColumn("row_num", F.when(row_num.isNull(), F.raise_error(message)).otherwise(row_num))


def naming(df: DataFrame) -> tuple[str, ...]:
    """The columns that name one of ``df``'s tuples in an error: its ``row_num``, or, in a stream
    without one (a window that reads no arrival order), all of its columns.

    >>> naming(spark.table("readings")), naming(spark.table("readings").drop("row_num"))
    (('row_num',), ('ts', 'arrival_ts', 'k', 'v'))
    """
    row_num = next((c for c in df.columns if c.lower() == "row_num"), None)
    return (row_num,) if row_num is not None else tuple(df.columns)


def described(by: Sequence[str], like: Expr) -> list[Expr]:
    """The parts of ``c=v, d=w`` naming a tuple by its columns ``by`` (NULL as ``NULL``), to
    ``concat`` into an error message: SQL text or Columns, as ``like``.

    >>> spark.table("readings").select(F.concat(*described(["k", "v"], F.col("ts")))).first()[0]
    'k=a, v=5'
    """
    labels = [f"{c}=" if i == 0 else f", {c}=" for i, c in enumerate(by)]
    if isinstance(like, Sql):
        return [part for label, c in zip(labels, by)
                for part in (Sql(literal(label)), Sql(f"coalesce(CAST({Sql.column(c)} AS STRING), 'NULL')"))]
    return [part for label, c in zip(labels, by)
            for part in (F.lit(label), F.coalesce(column(c).cast("string"), F.lit("NULL")))]


def checked(x: Expr, dtype: DataType, name: str, limit: Number | None = None,
            by: Sequence[str] = ("row_num",)) -> Expr:
    """``x``, failing the query with a message naming the tuple by its columns ``by``
    (:func:`naming`) when it is NULL, NaN or infinite, or (with ``limit``) beyond ``±limit``,
    where window-ids stop being exact longs.

    >>> spark.table("readings").select(checked(column("ts"), DoubleType(), "ts", 8)).collect()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pyspark...: ... 'ts' = 9.0 is infinite or beyond ±8 (window-ids would not be exact) in the tuple with row_num=3 ...
    >>> spark.table("readings").select(checked(column("ts"), DoubleType(), "ts", 8, by=["k", "v"])).collect()
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pyspark...: ... 'ts' = 9.0 is infinite or beyond ±8 (window-ids would not be exact) in the tuple with k=a, v=2 ...
    """
    nan = isinstance(dtype, (FloatType, DoubleType))
    null = f"wid: NULL or NaN window attribute {name!r} in the tuple with "
    beyond = f" or beyond ±{limit} (window-ids would not be exact)" if limit is not None else ""
    far = (f"wid: window attribute {name!r} = ", f" is infinite{beyond} in the tuple with ")
    # a finite double is at most the largest one: beyond it only the infinities
    threshold = Decimal(limit) if limit is not None else sys.float_info.max if nan else None
    if isinstance(x, Sql):
        row = ", ".join(part.text for part in described(by, x))
        bad = f"{x} IS NULL" + (f" OR isnan({x})" if nan else "")
        cases = f"WHEN {bad} THEN raise_error(concat({literal(null)}, {row})) "
        if threshold is not None:
            cases += (f"WHEN abs({x}) > {literal(threshold)} THEN raise_error(concat({literal(far[0])}, "
                      f"CAST({x} AS STRING), {literal(far[1])}, {row})) ")
        return Sql(f"CASE {cases}ELSE {x} END")
    bad = x.isNull()
    if nan:
        bad = bad | F.isnan(x)
    row = described(by, x)
    out = F.when(bad, F.raise_error(F.concat(F.lit(null), *row)))
    if threshold is not None:
        message = F.concat(F.lit(far[0]), x.cast("string"), F.lit(far[1]), *row)
        out = out.when(F.abs(x) > F.lit(threshold), F.raise_error(message))
    return out.otherwise(x)
