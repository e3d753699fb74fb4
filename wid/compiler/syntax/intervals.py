"""Durations as Spark and Flink write them, in exact microseconds: Spark's interval strings
(``'10 minutes'``, ``'1 hour 30 minutes'``, ``'interval 2.5 seconds'``) and interval literals of
both (``INTERVAL '10' MINUTE``, ``INTERVAL 5 MINUTES``, ``INTERVAL '1 02:03:04.5' DAY TO SECOND``).

A duration here is a fixed length: months and years have none (their length depends on the
date), so a window of ``'1 month'`` is refused with the calendar clause to use instead.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

from wid.errors import WidError

#: Microseconds per unit (singular, lower case), as Spark's ``IntervalUtils`` and Flink's ``TimeUnit``.
MICROS = {"week": 7 * 86_400_000_000, "day": 86_400_000_000, "hour": 3_600_000_000, "minute": 60_000_000,
          "second": 1_000_000, "millisecond": 1_000, "microsecond": 1}
_CALENDAR = ("month", "year", "quarter")
_PAIR = re.compile(r"([-+]?\d+(?:\.\d*)?|[-+]?\.\d+)\s*([a-z]+)", re.IGNORECASE)


def _unit(word: str, text: str) -> str:
    """``word`` as a unit of :data:`MICROS` (``MINUTES`` -> ``minute``; ``SECS``, ``MS`` too)."""
    unit = {"secs": "second", "sec": "second", "mins": "minute", "min": "minute", "ms": "millisecond",
            "us": "microsecond", "hrs": "hour", "hr": "hour"}.get(word.lower(), word.lower().removesuffix("s"))
    if unit in _CALENDAR:
        raise WidError(f"a {unit} has no fixed length, so {text!r} cannot size a time window: "
                       f"use the calendar clause [RANGE 1 {unit.upper()} SLIDE 1 {unit.upper()} WATTR ts TIMEZONE '...']")
    if unit not in MICROS:
        raise WidError(f"unknown unit {word!r} in the duration {text!r} (units: {', '.join(MICROS)})")
    return unit


def micros(text: str) -> int:
    """The duration written in ``text`` (Spark's interval string: amount-unit pairs, an optional
    leading ``interval``), in microseconds; a fraction of a microsecond is refused.

    >>> micros("10 minutes"), micros("1 hour 2 minutes 3.5 seconds"), micros("INTERVAL 250 milliseconds")
    (600000000, 3723500000, 250000)
    >>> micros("1 month")
    Traceback (most recent call last):
    wid.errors.WidError: a month has no fixed length, so '1 month' cannot size a time window: use the calendar clause [RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE '...']
    >>> micros("ten minutes")
    Traceback (most recent call last):
    wid.errors.WidError: cannot read the duration 'ten minutes' (write e.g. '10 minutes' or '1 hour 30 seconds')
    """
    body = re.sub(r"^\s*interval\b", "", text, flags=re.IGNORECASE).strip()
    pairs = list(_PAIR.finditer(body))
    if not pairs or "".join(m.group(0) for m in pairs).replace(" ", "") != body.replace(" ", ""):
        raise WidError(f"cannot read the duration {text!r} (write e.g. '10 minutes' or '1 hour 30 seconds')")
    total = sum(Fraction(Decimal(m.group(1))) * MICROS[_unit(m.group(2), text)] for m in pairs)
    if total.denominator != 1:
        raise WidError(f"the duration {text!r} is not a whole number of microseconds")
    return int(total)


def literal_micros(value: str, unit: str | None, text: str) -> int:
    """An interval literal ``INTERVAL 'value' unit`` (``unit`` None: ``value`` carries its units,
    as Spark's ``INTERVAL '10 minutes'``); ``unit`` may be a range such as ``DAY TO SECOND``, whose
    fields the value gives in order (``'1 02:03:04.5'``).

    >>> literal_micros("10", "MINUTES", ""), literal_micros("1 02:00:00.5", "DAY TO SECOND", ""), literal_micros("-01:30", "HOUR TO MINUTE", "")
    (600000000, 93600500000, -5400000000)
    """
    if unit is None:
        return micros(value)
    words = unit.split()
    if len(words) != 3 or words[1].upper() != "TO":
        return micros(f"{value} {unit}")
    order = ("day", "hour", "minute", "second")
    first, last = (_unit(w, text or value) for w in (words[0], words[2]))
    if first not in order or last not in order or order.index(first) > order.index(last):
        raise WidError(f"cannot read the interval {text or value!r}: {unit.upper()} is no range of fields")
    fields = order[order.index(first): order.index(last) + 1]
    body = value.strip()
    numbers = re.split(r"[\s:]+", body.lstrip("+-"))
    if len(numbers) != len(fields) or not all(re.fullmatch(r"\d+(?:\.\d*)?", n) for n in numbers):
        raise WidError(f"cannot read the interval {text or value!r} as {unit.upper()}")
    total = sum(Fraction(Decimal(n)) * MICROS[f] for n, f in zip(numbers, fields))
    if total.denominator != 1:
        raise WidError(f"the interval {text or value!r} is not a whole number of microseconds")
    return -int(total) if body.startswith("-") else int(total)


def seconds_text(us: int) -> str:
    """Microseconds as an exact decimal number of seconds, as a window clause writes it.

    >>> seconds_text(600000000), seconds_text(-1500), seconds_text(7123456)
    ('600', '-0.0015', '7.123456')
    """
    return format(Decimal(us).scaleb(-6).normalize(), "f")
