"""Numbers of window specifications: parsing them from clause text, checking them, and the
exact window-id arithmetic on them (``floor(x/d)`` on longs, whole products kept whole)."""

from __future__ import annotations

import math
import re
from fractions import Fraction

from pyspark.sql import Column
from pyspark.sql import functions as F

from wid.errors import WidError
from wid.spec.sqlexpr import Expr, call

Number = int | float


def number(text: str, what: str, clause: str) -> Number:
    """``text`` as an int when it is written as a whole number (``[-+]?digits``), else a float;
    a :class:`WidError` naming ``what`` and the clause when it is no number."""
    try:
        value = float(text)
    except ValueError:
        raise WidError(f"{what} needs a number, got {text!r} in [{clause}]") from None
    return int(text) if re.fullmatch(r"[-+]?\d+", text.strip()) else value


def positive(name: str, value: Number, whole: bool = False) -> Number:
    """``value``, or a :class:`WidError` unless it is a finite number > 0 (an int when ``whole``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WidError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise WidError(f"{name} must be positive, got {value!r}")
    if whole and not isinstance(value, int):
        raise WidError(f"{name} must be a whole number, got {value!r}")
    return value


def scaled(value: Number, factor: int) -> Number:
    """``value * factor``, kept an int when the product is whole (exact id arithmetic and
    comparisons on integer clocks)."""
    product = value * factor
    return int(round(product)) if abs(product - round(product)) < 1e-9 else product


def exact(value: Number) -> Fraction:
    """``value`` as an exact fraction; a float as written (its shortest repr: ``0.1`` -> 1/10)."""
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def floor_div(x: Expr, d: Number) -> Expr:
    """``floor(x / d)`` as a long (a Column, or SQL text for a :class:`wid.spec.sqlexpr.Sql`
    ``x``); exact for an integral ``d`` and ``|x| < 2**53``."""
    if isinstance(d, int):
        return ((x - call("pmod", x, F.lit(d) if isinstance(x, Column) else d)) / d).cast("long")
    return call("floor", x / d).cast("long")
