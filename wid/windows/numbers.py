"""Numbers of window specifications: parsing them from clause text, checking them, and
window-id arithmetic that never rounds.

Clause numbers of attribute windows (RANGE, SLIDE) are ``int`` or :class:`~decimal.Decimal`,
exactly the decimal written (``0.1`` is one tenth, not the nearest double). Window-ids come from

    floor(x / d) = (x div d) - [x % d < 0]            (``div`` truncates, ``%`` is exact)

on longs and decimals, so no double ever stands between ``x`` and its window. A double
attribute is first mapped exactly to the integer ``X = floor(x * T)`` (:func:`floor_scaled`,
``T = 10**k`` the clause numbers' decimal places): every window boundary is a multiple of
``1/T``, so ``x >= b  <=>  X >= b*T`` and the ids follow from ``X`` on longs. Operational
policies (SPL, Flink) keep their own float numbers (:func:`number`, :func:`positive`,
:func:`non_negative`, :func:`period`, :func:`positive_whole`, :func:`scaled`).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction

import numpy as np
from pyspark.sql import Column
from pyspark.sql import functions as F

from wid.errors import WidError
from wid.windows.sqlexpr import Expr, Sql, call

Number = int | float | Decimal

#: Most decimal places a clause number may have (ids stay exact longs for |x| up to 2**62 / 10**18).
MAX_PLACES = 18
#: Largest |x| (in id units; clause numbers are at most half): ids, ends and bounds stay within a long.
LIMIT = 2**62
#: Veltkamp's splitter for doubles, 2**27 + 1.
_SPLIT = 134217729.0


def number(text: str, what: str, clause: str) -> Number:
    """``text`` as an int when it is written as a whole number (``[-+]?digits``), else a float;
    a :class:`WidError` naming ``what`` and the clause when it is no number.

    >>> number("5", "count", "count(5)"), number("-2.5", "delta", "delta(x, -2.5)")
    (5, -2.5)
    >>> number("five", "count", "count(five)")
    Traceback (most recent call last):
    wid.errors.WidError: count needs a number, got 'five' in [count(five)]
    """
    try:
        value = float(text)
    except ValueError:
        raise WidError(f"{what} needs a number, got {text!r} in [{clause}]") from None
    return int(text) if re.fullmatch(r"[-+]?\d+", text.strip()) else value


def positive(name: str, value: Number) -> Number:
    """``value``, or a :class:`WidError` unless it is a finite number > 0.

    >>> positive("time(p)", 2.5)
    2.5
    >>> positive("time(p)", -1)
    Traceback (most recent call last):
    wid.errors.WidError: time(p) must be positive, got -1
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise WidError(f"{name} must be a number, got {value!r}")
    finite = value.is_finite() if isinstance(value, Decimal) else isinstance(value, int) or math.isfinite(value)
    if not finite or value <= 0:  # (math.isfinite of an int past a double's range overflows)
        raise WidError(f"{name} must be positive, got {value!r}")
    return value


def _finite(name: str, value: object, strict: bool) -> int | float:
    """``value`` when it is an int or float (not a bool), a finite double, > 0 (``strict``) or >= 0."""
    try:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    except OverflowError:  # an int beyond a double's range
        ok = False
    if not ok or value < 0 or (strict and value == 0):
        shown = repr(value) if len(repr(value)) <= 24 else f"{repr(value)[:4]}...{repr(value)[-3:]}"
        raise WidError(f"{name} must be a finite number {'>' if strict else '>='} 0, got {shown}")
    return value


def non_negative(name: str, value: object) -> int | float:
    """``value``, or a :class:`WidError` unless it is an int or float, a finite double, >= 0: the
    amounts of operational policies and punctuation generators (a bool is no number).

    >>> non_negative("partitionAge(s)", 0)
    0
    >>> non_negative("partitionAge(s)", float("inf"))
    Traceback (most recent call last):
    wid.errors.WidError: partitionAge(s) must be a finite number >= 0, got inf
    """
    return _finite(name, value, strict=False)


def period(name: str, value: object) -> int | float:
    """``value``, or a :class:`WidError` unless it is an int or float, a finite double, > 0: the
    periods of operational policies and heartbeats.

    >>> period("time(p)", 2.5)
    2.5
    >>> period("time(p)", 10**400)
    Traceback (most recent call last):
    wid.errors.WidError: time(p) must be a finite number > 0, got 1000...000
    """
    return _finite(name, value, strict=True)


def positive_whole(name: str, value: object) -> int:
    """``value``, or a :class:`WidError` unless it is an int > 0 (a bool is no count).

    >>> positive_whole("count(n)", 4)
    4
    >>> positive_whole("count(n)", 2.0)
    Traceback (most recent call last):
    wid.errors.WidError: count(n) must be a positive whole number, got 2.0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise WidError(f"{name} must be a positive whole number, got {value!r}")
    return value


def flag(name: str, value: object) -> bool:
    """``value``, or a :class:`WidError` unless it is ``True`` or ``False``.

    >>> flag("evict_after", True)
    True
    >>> flag("evict_after", "no")
    Traceback (most recent call last):
    wid.errors.WidError: evict_after must be true or false, got 'no'
    """
    if not isinstance(value, bool):
        raise WidError(f"{name} must be true or false, got {value!r}")
    return value


def scaled(value: Number, factor: int) -> Number:
    """``value * factor``, an int when ``value`` as written (:func:`exact`) times ``factor`` is
    whole (exact id arithmetic and comparisons on integer clocks); no tolerance: a period a
    billionth off a whole number stays off it.

    >>> 0.57 * 100, scaled(0.57, 100), scaled(0.25, 3), scaled(3.0000000005, 1), scaled(4e-10, 1)
    (56.99999999999999, 57, 0.75, 3.0000000005, 4e-10)
    """
    product = exact(value) * factor
    return int(product) if product.denominator == 1 else value * factor


def exact(value: Number) -> Fraction:
    """``value`` as an exact fraction; a float as written (its shortest repr: ``0.1`` -> 1/10).

    >>> exact(0.1), exact(Decimal("-2.5")), exact(np.float64(0.1))
    (Fraction(1, 10), Fraction(-5, 2), Fraction(1, 10))
    """
    return Fraction(repr(float(value))) if isinstance(value, float) else Fraction(value)  # numpy's too


def as_number(value: object, name: str) -> Number:
    """``value`` as an exact clause number: an ``int``, or a ``Decimal`` when it has a fraction.
    A float stands for the decimal it prints as (``0.1`` -> ``Decimal('0.1')``).

    >>> as_number(0.1, "RANGE"), as_number("2.50", "RANGE"), as_number(Decimal("4.0"), "RANGE")
    (Decimal('0.1'), Decimal('2.5'), 4)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
        raise WidError(f"{name} must be a number, got {value!r}")
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise WidError(f"{name} must be a number, got {value!r}") from None
    if not number.is_finite():
        raise WidError(f"{name} must be a finite number, got {value!r}")
    return int(number) if number == number.to_integral_value() else number.normalize()


def places(value: Number) -> int:
    """Decimal places of ``value``: 0 for an int, 1 for ``Decimal('0.5')``.

    >>> places(60), places(Decimal("0.25"))
    (0, 2)
    """
    return 0 if isinstance(value, int) else max(0, -value.as_tuple().exponent)


def bounded(value: Number, name: str) -> Number:
    """``value`` when ids built from it stay exact: at most :data:`MAX_PLACES` decimal places
    and at most ``LIMIT / 2`` (so ``x + r`` and ``x - r - s`` fit a long for ``|x| <= LIMIT``);
    a :class:`WidError` otherwise.

    >>> bounded(Decimal("0.5"), "RANGE")
    Decimal('0.5')
    >>> bounded(Decimal("1E-19"), "RANGE")
    Traceback (most recent call last):
    wid.errors.WidError: RANGE 1E-19 has more than 18 decimal places: window-ids would not be exact
    """
    if places(value) > MAX_PLACES:
        raise WidError(f"{name} {value} has more than {MAX_PLACES} decimal places: window-ids would not be exact")
    if value > LIMIT // 2:
        raise WidError(f"{name} {value} exceeds 2**61 in the attribute's units: window bounds would overflow a long")
    return value


def times(value: Number, factor: int) -> Number:
    """``value * factor``, exactly (an ``int`` when whole).

    >>> times(Decimal("0.1"), 1000), times(Decimal("0.0001"), 1000)
    (100, Decimal('0.1'))
    """
    if isinstance(value, int):
        return value * factor
    with localcontext() as context:
        context.prec = 80  # any clause number times any unit factor, unrounded
        return as_number(value * factor, "number")


def floor_div(x: Expr, d: Number) -> Expr:
    """``floor(x / d)`` as a long (a Column, or SQL text for a :class:`wid.windows.sqlexpr.Sql`
    ``x``), exact for ``x`` a long or decimal and ``d > 0`` an int or Decimal:
    ``(x div d) - [x % d < 0]`` (``div`` truncates toward zero; ``|x| < d * 2**62``, :data:`LIMIT`).

    >>> floor_div(Sql.column("x"), 60)
    Sql(text='(CAST(div(`x`, 60) AS BIGINT) - CAST((mod(`x`, 60) < 0) AS BIGINT))')
    >>> floor_div(np.array([-1, 0, 59, 60]), 60)  # whole numbers in numpy (arrival positions)
    array([-1,  0,  0,  1])
    """
    if isinstance(x, np.ndarray):
        return x // d
    d_ = F.lit(d) if isinstance(x, Column) else d
    return call("div", x, d_).cast("long") - (call("mod", x, d_) < 0).cast("long")


def floor_div_sum(x: Expr, a: Number, d: Number) -> Expr:
    """``floor((x + a) / d)`` for ``a >= 0`` without forming ``x + a`` (no overflow, no rounding
    of decimals): ``floor(x/d) + ((pmod(x, d) + a) div d)``, with ``0 <= pmod(x, d) < d``
    (numpy: ``(x + a) // d`` on whole numbers).

    >>> floor_div_sum(np.array([-6, -1, 0, 4]), 1, 5)
    array([-1,  0,  0,  1])
    """
    if isinstance(x, np.ndarray):
        return (x + a) // d
    d_ = F.lit(d) if isinstance(x, Column) else d
    return floor_div(x, d) + call("div", _pmod(x, d) + a, d_).cast("long")


def floor_div_shift(x: Expr, a: Number, d: Number) -> Expr:
    """``floor((x + a) / d)`` for any exact ``a`` (negative too): with ``a = q*d + a'``,
    ``q = floor(a/d)`` and ``0 <= a' < d``, it is ``floor((x + a')/d) + q`` (:func:`floor_div_sum`).

    >>> floor_div_shift(np.array([-6, -1, 0, 4, 5]), -7, 5), floor_div_shift(np.array([0, 3]), 7, 5)
    (array([-3, -2, -2, -1, -1]), array([1, 2]))
    """
    q = math.floor(exact(a) / exact(d))
    with localcontext() as context:
        context.prec = 80  # unrounded, as in :func:`times`
        rest = as_number(a - q * d, "offset")
    shifted = floor_div(x, d) if rest == 0 else floor_div_sum(x, rest, d)
    return shifted + q if q else shifted


def _pmod(x: Expr, d: Number) -> Expr:
    """``pmod(x, d)``, in ``[0, d)``, exact on longs and decimals."""
    return call("pmod", x, F.lit(d) if isinstance(x, Column) else d)


def floor_scaled(x: Expr, scale: int) -> Expr:
    """``floor(x * scale)`` as a long, exact for a double ``x`` with ``|x * scale| < 2**62``.

    With ``p = fl(x*scale)`` and ``e = x*scale - p`` (Dekker's exact product, ``|e| <= ulp(p)/2``),
    ``floor(p + e)`` is ``floor(p)``, plus ``floor(e)`` (-1 or 0) when ``p`` is whole:
    ``floor(p) + floor(e) * (1 - signum(p - floor(p)))``.

    The double ``0.7`` is 0.6999999999999999556, so ``floor(0.7 * 10)`` is 6, though the product rounds to 7.0:

    >>> x = F.col("x")
    >>> df = spark.createDataFrame([(0.7,), (-0.7,), (2.5,)], "x double")
    >>> sorted(df.select(x, floor_scaled(x, 10).alias("exact"), F.floor(x * 10).alias("rounded")).collect())
    [Row(x=-0.7, exact=-7, rounded=-7), Row(x=0.7, exact=6, rounded=7), Row(x=2.5, exact=25, rounded=25)]
    """
    if scale == 1:
        return call("floor", x).cast("long")
    p = x * float(scale)
    hi, lo = _split(x)
    s_hi, s_lo = _split(float(scale))
    e = ((hi * s_hi - p) + hi * s_lo + lo * s_hi) + lo * s_lo
    whole = 1 - call("signum", p - call("floor", p))
    return call("floor", p).cast("long") + (call("floor", e) * whole).cast("long")  # longs: no rounding


def _split(a: Expr | float) -> tuple[Expr | float, Expr | float]:
    """Veltkamp's split of a double: ``a = hi + lo`` with 26-bit halves (exact products)."""
    t = a * _SPLIT
    hi = t - (t - a)
    return hi, a - hi


def clause_number(name: str, value: object) -> Number:
    """``value`` as an exact positive clause number (:func:`wid.windows.numbers.as_number`), bounded.

    >>> clause_number("SLIDE", 0.1)
    Decimal('0.1')
    >>> clause_number("RANGE", -1)
    Traceback (most recent call last):
    wid.errors.WidError: RANGE must be positive, got -1
    """
    number = as_number(value, name)
    if number <= 0:
        raise WidError(f"{name} must be positive, got {value!r}")
    return bounded(number, name)


def whole(name: str, value: Number) -> int:
    """``value``, or a :class:`WidError` unless it is a whole number (a ROWS amount).

    >>> whole("RANGE", 4)
    4
    >>> whole("SLIDE", Decimal("2.5"))
    Traceback (most recent call last):
    wid.errors.WidError: SLIDE in ROWS must be a whole number, got 2.5
    """
    if not isinstance(value, int):
        raise WidError(f"{name} in ROWS must be a whole number, got {value}")
    return value
