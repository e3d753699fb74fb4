"""Spark SQL text with the arithmetic of the window formulas, so that one formula renders both
as a Spark ``Column`` and as SQL text.

A formula written with ``+ - * /``, :meth:`Sql.cast` and :func:`call` over a :class:`Sql`
operand yields SQL text; over a ``Column`` it yields the ``Column``. Numbers become SQL literals
of the types ``F.lit`` gives them (int: INT or BIGINT, float: DOUBLE, Decimal: DECIMAL)::

    >>> (Sql.column("ts") + 1) * 60
    Sql(text='((`ts` + 1) * 60)')
    >>> call("pmod", Sql.column("x"), 0.25).cast("long")
    Sql(text="CAST(pmod(`x`, CAST('0.25' AS DOUBLE)) AS BIGINT)")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partialmethod
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from wid.errors import WidError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPES = {"long": "BIGINT", "int": "INT", "double": "DOUBLE", "string": "STRING", "timestamp": "TIMESTAMP",
          "date": "DATE", "boolean": "BOOLEAN"}


def quote(name: str) -> str:
    """``name`` as a back-quoted Spark SQL identifier (a back quote inside is doubled)."""
    return "`" + name.replace("`", "``") + "`"


def qualified(name: str) -> str:
    """A dotted table or view name (``db.t``, ``t``), each part a plain identifier, back-quoted;
    anything else is a :class:`WidError`."""
    parts = name.split(".")
    if not 1 <= len(parts) <= 3 or not all(_NAME.fullmatch(p) for p in parts):
        raise WidError(f"not a valid table or view name: {name!r} (letters, digits and _, dotted parts)")
    return ".".join(quote(p) for p in parts)


def literal(value: Any) -> str:
    """A Python number or string as a Spark SQL literal of ``F.lit``'s type."""
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
    return _TYPES.get(dtype, dtype) if isinstance(dtype, str) else dtype.simpleString().upper()


@dataclass(frozen=True)
class Sql:
    """A Spark SQL expression as text."""

    text: str

    @staticmethod
    def column(name: str) -> Sql:
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

    def __neg__(self) -> Sql:
        return Sql(f"(- {self.text})")

    def cast(self, dtype: DataType | str) -> Sql:
        return Sql(f"CAST({self.text} AS {type_name(dtype)})")

    def alias(self, name: str) -> str:
        """A select-list item ``text AS `name```."""
        return f"{self.text} AS {quote(name)}"

    def __str__(self) -> str:
        return self.text


#: An expression of a window formula: a Spark Column, or SQL text.
Expr = Column | Sql


def call(name: str, *args: Any) -> Any:
    """Spark SQL function ``name`` applied to ``args``: SQL text when an argument is :class:`Sql`,
    else the ``pyspark.sql.functions`` Column function of that name (or the SQL function of that
    name, when pyspark has none, such as ``div``)."""
    if any(isinstance(a, Sql) for a in args):
        return Sql(f"{name}({', '.join(literal(a) for a in args)})")
    if hasattr(F, name):
        return getattr(F, name)(*args)
    return F.call_function(name, *[a if isinstance(a, Column) else F.lit(a) for a in args])  # e.g. div


def null_like(value: Any) -> Any:
    """A NULL of ``value``'s type."""
    if isinstance(value, Sql):
        return Sql(f"IF(false, {value.text}, NULL)")
    return F.when(F.lit(False), value)
