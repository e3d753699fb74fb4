"""Spark SQL text with the arithmetic of the window formulas, so that one formula renders both
as a Spark ``Column`` and as SQL text.

A formula written with ``+ - * /``, :meth:`Sql.cast` and :func:`call` over a :class:`Sql`
operand yields SQL text; over a ``Column`` it yields the ``Column``; so do the comparisons
``>= > <= <``, ``& | ~``, :func:`when` and :func:`over` (a window function). Numbers become SQL
literals of the types ``F.lit`` gives them (int: INT or BIGINT, float: DOUBLE, Decimal: DECIMAL)::

    >>> (Sql.column("ts") + 1) * 60
    Sql(text='((`ts` + 1) * 60)')
    >>> call("pmod", Sql.column("x"), 0.25).cast("long")
    Sql(text="CAST(pmod(`x`, CAST('0.25' AS DOUBLE)) AS BIGINT)")
    >>> over(call("lag", Sql.column("a")), ["k"], ["t"])
    Sql(text='lag(`a`) OVER (PARTITION BY `k` ORDER BY `t`)')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partialmethod
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.errors import WidError

#: One part of a table or view name as SQL writes it: plain (ASCII letters, digits, _) or back-quoted.
NAME_PART = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_]+)"
_PART = re.compile(rf"\s*({NAME_PART})\s*")
_TYPES = {"long": "BIGINT", "int": "INT", "double": "DOUBLE", "string": "STRING", "timestamp": "TIMESTAMP",
          "date": "DATE", "boolean": "BOOLEAN"}


def quote(name: str) -> str:
    """``name`` as a back-quoted Spark SQL identifier (a back quote inside is doubled).

    >>> quote("my `key`")
    '`my ``key```'
    """
    return "`" + name.replace("`", "``") + "`"


def name_parts(name: str) -> list[str]:
    """The parts of a dotted table or view name as SQL writes it (``t``, ``db.t``,
    ``db.`my table```, a back quote inside a quoted part doubled), unquoted; anything else is a
    :class:`WidError`.

    >>> name_parts("db.`my table`"), name_parts("`a``b`")
    (['db', 'my table'], ['a`b'])
    """
    parts, pos = [], 0
    while (match := _PART.match(name, pos)) is not None:
        part = match.group(1)
        parts.append(part[1:-1].replace("``", "`") if part.startswith("`") else part)
        pos = match.end()
        if pos == len(name) and len(parts) <= 3:
            return parts
        if not name.startswith(".", pos):
            break
        pos += 1
    raise WidError(f"not a valid table or view name: {name!r} (up to 3 dotted parts, each letters, digits "
                   "and _ or `back-quoted`)")


def column_name(text: str) -> str:
    """The column that ``text`` names when it is one plain or back-quoted identifier (``k``,
    ```my key```), unquoted; otherwise ``text`` itself (an expression).

    >>> column_name("`my key`"), column_name("k"), column_name("k + 1"), column_name("db.t")
    ('my key', 'k', 'k + 1', 'db.t')
    """
    try:
        parts = name_parts(text)
    except WidError:
        return text
    return parts[0] if len(parts) == 1 else text


def qualified(name: str) -> str:
    """A dotted table or view name (:func:`name_parts`) with each part back-quoted.

    >>> qualified("db.`my ``t```")
    '`db`.`my ``t```'
    """
    return ".".join(quote(p) for p in name_parts(name))


def literal(value: Any) -> str:
    """A Python number or string as a Spark SQL literal of ``F.lit``'s type.

    >>> [literal(v) for v in (7, 0.1, Decimal("-12.50"), None)]
    ['7', "CAST('0.1' AS DOUBLE)", "CAST('-12.50' AS DECIMAL(4, 2))", 'NULL']
    >>> print(literal("it's"))
    'it\\'s'
    """
    if isinstance(value, Sql):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, Decimal):
        digits = value.as_tuple()
        scale = max(0, -digits.exponent)
        precision = max(len(digits.digits) + max(0, digits.exponent), scale)
        return f"CAST('{value}' AS DECIMAL({min(38, precision)}, {scale}))"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if value is None:
        return "NULL"
    raise WidError(f"no SQL literal for {value!r}")


def type_name(dtype: DataType | str) -> str:
    """The SQL name of a Spark type (or of a type named in Python: ``"int"`` -> ``INT``).

    >>> from pyspark.sql.types import DecimalType
    >>> type_name(DecimalType(10, 2))
    'DECIMAL(10,2)'
    """
    return _TYPES.get(dtype, dtype) if isinstance(dtype, str) else dtype.simpleString().upper()


@dataclass(frozen=True)
class Sql:
    """A Spark SQL expression as text.

    >>> (Sql.column("x") - 0.5).cast("long"), -Sql.column("v")
    (Sql(text="CAST((`x` - CAST('0.5' AS DOUBLE)) AS BIGINT)"), Sql(text='(- `v`)'))
    >>> Sql.column("w id").alias("wid")
    '`w id` AS `wid`'
    """

    text: str

    @staticmethod
    def column(name: str) -> Sql:
        """The column ``name``, back-quoted (:func:`quote`)."""
        return Sql(quote(name))

    def _op(self, op: str, other: Any, reverse: bool = False) -> Sql:
        left, right = (literal(other), self.text) if reverse else (self.text, literal(other))
        return Sql(f"({left} {op} {right})")

    __add__ = partialmethod(_op, "+")
    __radd__ = partialmethod(_op, "+", reverse=True)
    __sub__ = partialmethod(_op, "-")
    __rsub__ = partialmethod(_op, "-", reverse=True)
    __mul__ = partialmethod(_op, "*")
    __rmul__ = partialmethod(_op, "*", reverse=True)
    __truediv__ = partialmethod(_op, "/")
    __ge__ = partialmethod(_op, ">=")
    __gt__ = partialmethod(_op, ">")
    __le__ = partialmethod(_op, "<=")
    __lt__ = partialmethod(_op, "<")
    __and__ = partialmethod(_op, "AND")
    __or__ = partialmethod(_op, "OR")

    def __neg__(self) -> Sql:
        return Sql(f"(- {self.text})")

    def __invert__(self) -> Sql:
        return Sql(f"(NOT {self.text})")

    def cast(self, dtype: DataType | str) -> Sql:
        """``CAST(text AS type)``, the type a Spark type or a name such as ``"long"`` (:func:`type_name`)."""
        return Sql(f"CAST({self.text} AS {type_name(dtype)})")

    def alias(self, name: str) -> str:
        """A select-list item ``text AS `name```."""
        return f"{self.text} AS {quote(name)}"

    def __str__(self) -> str:
        return self.text


#: An expression of a window formula: a Spark Column, or SQL text.
Expr = Column | Sql


def column(name: str) -> Column:
    """The column ``name`` (any characters: spaces, back quotes, dots; ``F.col`` would read
    ``a.b`` as field ``b`` of ``a``).

    >>> df = spark.createDataFrame([(1, (2,))], "`a.b` long, a struct<b: long>")
    >>> df.select(column("a.b"), F.col("a.b")).first()
    Row(a.b=1, b=2)
    """
    return F.col(quote(name))


def columns(names: Sequence[str]) -> list[Column]:
    """:func:`column` of each name, for ``select``, ``groupBy`` and ``partitionBy``.

    >>> columns(["k", "a.b"])
    [Column<'k'>, Column<'`a.b`'>]
    """
    return [column(n) for n in names]


def call(name: str, *args: Any, like: Expr | None = None) -> Any:
    """Spark SQL function ``name`` applied to ``args``: SQL text when an argument (or ``like``, for
    a function of constants such as ``row_number()``) is :class:`Sql`, else the
    ``pyspark.sql.functions`` Column function of that name (or the SQL function of that name,
    when pyspark has none, such as ``div``).

    >>> call("div", Sql.column("x"), 60), call("row_number", like=Sql.column("x"))
    (Sql(text='div(`x`, 60)'), Sql(text='row_number()'))
    >>> tuple(spark.range(-7, -6).select(call("div", F.col("id"), 2), call("pmod", F.col("id"), 2)).first())
    (-3, 1)
    """
    if any(isinstance(a, Sql) for a in (*args, like)):
        return Sql(f"{name}({', '.join(literal(a) for a in args)})")
    if hasattr(F, name):
        return getattr(F, name)(*args)
    return F.call_function(name, *[a if isinstance(a, Column) else F.lit(a) for a in args])  # e.g. div


def null_like(value: Any) -> Any:
    """A NULL of ``value``'s type.

    >>> null_like(Sql.column("x"))
    Sql(text='IF(false, `x`, NULL)')
    """
    if isinstance(value, Sql):
        return Sql(f"IF(false, {value.text}, NULL)")
    return F.when(F.lit(False), value)


def constant(value: Any, like: Expr) -> Expr:
    """``value`` as a literal of ``like``'s kind: SQL text, or ``F.lit``.

    >>> constant(Decimal("-0.25"), Sql.column("x"))
    Sql(text="CAST('-0.25' AS DECIMAL(2, 2))")
    """
    return Sql(literal(value)) if isinstance(like, Sql) else F.lit(value)


def when(condition: Expr, then: Any, otherwise: Any = None) -> Expr:
    """``CASE WHEN condition THEN then ELSE otherwise END`` (NULL when ``otherwise`` is None).

    >>> when(Sql.column("x") < 0, -1, 1)
    Sql(text='CASE WHEN (`x` < 0) THEN -1 ELSE 1 END')
    >>> when(Sql.column("x") >= Decimal("2.5"), "late")
    Sql(text="CASE WHEN (`x` >= CAST('2.5' AS DECIMAL(2, 1))) THEN 'late' END")
    """
    if isinstance(condition, Sql):
        rest = "" if otherwise is None else f" ELSE {literal(otherwise)}"
        return Sql(f"CASE WHEN {condition.text} THEN {literal(then)}{rest} END")
    case = F.when(condition, then)
    return case if otherwise is None else case.otherwise(otherwise)


def equal(a: Expr, b: Any) -> Expr:
    """``a = b`` (NULL when either is NULL).

    >>> equal(Sql.column("k"), "a"), equal(Sql.column("k"), None)
    (Sql(text="(`k` = 'a')"), Sql(text='(`k` = NULL)'))
    """
    return a._op("=", b) if isinstance(a, Sql) else a == b


def expression(text: str, like: Expr) -> Expr:
    """Spark SQL expression ``text`` as ``like``'s kind: SQL text, or ``F.expr``.

    >>> expression("pmod(x, 7)", Sql.column("x")), expression("pmod(x, 7)", F.col("x"))
    (Sql(text='pmod(x, 7)'), Column<'pmod(x, 7)'>)
    """
    return Sql(text) if isinstance(like, Sql) else F.expr(text)


def over(expr: Expr, partition: Sequence[str] = (), order: Sequence[str] = (), rows: bool = False,
         before: bool = False) -> Expr:
    """Window function ``expr`` over the columns ``partition``, ordered by the columns ``order``
    (ascending); the frame is Spark's default (with an order: up to the current row and its
    peers), or with ``rows`` the rows up to the current one, with ``before`` the rows before it.

    >>> over(call("sum", Sql.column("v")), order=["ts"], rows=True)
    Sql(text='sum(`v`) OVER (ORDER BY `ts` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)')
    >>> sorted(spark.table("readings").select("k", "ts", over(F.sum("v"), ["k"], ["ts"]).alias("run")).collect())
    [Row(k='a', ts=1.0, run=5), Row(k='a', ts=4.0, run=12), Row(k='a', ts=9.0, run=14), Row(k='b', ts=2.5, run=1)]
    """
    if isinstance(expr, Sql):
        parts = [f"PARTITION BY {', '.join(map(quote, partition))}"] if partition else []
        parts += [f"ORDER BY {', '.join(map(quote, order))}"] if order else []
        parts += [f"ROWS BETWEEN UNBOUNDED PRECEDING AND {'1 PRECEDING' if before else 'CURRENT ROW'}"] \
            if rows or before else []
        return Sql(f"{expr.text} OVER ({' '.join(parts)})")
    window = Window.partitionBy(*map(column, partition))
    window = window.orderBy(*map(column, order)) if order else window
    last = -1 if before else Window.currentRow
    return expr.over(window.rowsBetween(Window.unboundedPreceding, last) if rows or before else window)
