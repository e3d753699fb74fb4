"""Hypothesis strategies: streams the way real data looks, and the way it breaks code.

A :class:`Case` is a window clause (every kind of docs/semantics.md section 3), a stream and a query
over it. The stream's window attribute ``x`` is a double with 1-3 decimals, a long (small,
near 2**53 or near the ends of the long range), a decimal, or a timestamp with
microseconds; values repeat, go negative and fall exactly on extent boundaries (multiples
of the slide, ``(w+1)s - r``, and ``u.a +- r`` for the slide-by-tuple kinds). ``row_num``
is a permutation with gaps, unrelated to ``x``; keys are NULL, empty or a single value;
the aggregated columns hold NULLs. Every value is built as an exact decimal first and
only then stored in the column's type, as a CSV reader would.

Small streams are drawn value by value (they shrink well); large ones (up to a few
thousand tuples) from a drawn seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, Protocol

from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tests.oracle import Cumulating, Landmark, Rows, SlideByTuple, Sliding
from wid.aggregate.range import SCANNED

ATTRIBUTE_TYPES = ("double", "long", "decimal", "timestamp")
#: Clause numbers as written: decimals that binary doubles cannot hold, and whole numbers.
NUMBERS = ("0.1", "0.3", "0.7", "0.25", "1", "1.5", "2", "2.5", "3", "5", "7", "10", "12.5", "60", "0.05")
WHOLE = tuple(n for n in NUMBERS if "." not in n)
#: At most this many windows hold one tuple (range / slide), so outputs stay small.
OVERLAP = 40
UNITS = {"SECONDS": 1, "MINUTES": 60, "HOURS": 3600, "DAYS": 86400}
#: Offsets of long attributes: small, around 2**53 (doubles stop being exact) and near the ends.
#: Longs near 0, around 2**53 (doubles stop being exact) and at the edges of the exact range
#: |x| <= 2**61 (docs/semantics.md; beyond it window bounds may overflow a long and are refused).
LONG_OFFSETS = (0, -1000, 2**53 - 40, 2**53 + 1, 2**60, -(2**61), 2**61 - 2_000)
#: Epoch seconds of 2026-01-01 and of 1969-12-31 23:55 (negative epoch seconds).
EPOCH_OFFSETS = (1_767_225_600, -300)
KEY_POOLS = (("a",), ("",), (None,), ("a", "b", None), ("a", "b", "c", ""), ("x", "y", "z"))
SCHEMA = "row_num long, k string, x {x}, v double, i long, d decimal(12,2)"


class Source(Protocol):
    """Where the choices come from: Hypothesis draws (small streams) or a seeded Random."""

    def randint(self, a: int, b: int) -> int: ...

    def choice(self, seq: tuple) -> Any: ...

    def chance(self, percent: int) -> bool: ...


@dataclass
class Draws:
    """Hypothesis as a :class:`Source`; every choice shrinks to the first option / no."""

    draw: Any

    def randint(self, a: int, b: int) -> int:
        return self.draw(st.integers(a, b))

    def choice(self, seq: tuple) -> Any:
        return self.draw(st.sampled_from(seq))

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - percent


@dataclass
class Seeded:
    """A seeded :class:`random.Random` as a :class:`Source`, for thousands of tuples."""

    rng: random.Random

    def randint(self, a: int, b: int) -> int:
        return self.rng.randint(a, b)

    def choice(self, seq: tuple) -> Any:
        return self.rng.choice(seq)

    def chance(self, percent: int) -> bool:
        return self.rng.randrange(100) < percent


@dataclass(frozen=True)
class Attribute:
    """The window attribute's column type; ``decimals`` digits after the point in its values."""

    type: str
    decimals: int
    scale: int = 0  # decimal(precision, scale) columns
    precision: int = 0
    offset: Decimal = Decimal(0)

    @property
    def spark_type(self) -> str:
        return {"double": "double", "long": "long", "timestamp": "long",
                "decimal": f"decimal({self.precision},{self.scale})"}[self.type]

    def stored(self, value: Fraction) -> Any:
        """``value`` (on the grid) as the column holds it (timestamps: epoch microseconds)."""
        if self.type == "timestamp":
            return int(value * 10**6)
        if self.type == "long":
            return int(value)
        if self.type == "double":
            return float(_decimal(value))
        with localcontext() as context:
            context.prec = 100
            return _decimal(value).quantize(Decimal(1).scaleb(-self.scale))

    @property
    def grid(self) -> Fraction:
        """The step between values (1-3 decimals for doubles, microseconds for timestamps)."""
        return Fraction(1, 10**self.decimals)

    def exact(self, stored: Any) -> Fraction:
        """The exact number a stored value stands for (timestamps: epoch seconds)."""
        return Fraction(stored, 10**6) if self.type == "timestamp" else Fraction(stored)


@dataclass(frozen=True)
class Clause:
    """A window clause, its oracle window, and its range and slide in attribute units
    (None where they do not apply)."""

    kind: str
    text: str
    window: Any
    range: Fraction | None
    slide: Fraction | None
    offset: Fraction = Fraction(0)

    @property
    def fca(self) -> bool:
        return isinstance(self.window, SlideByTuple)

    @property
    def positional(self) -> bool:
        return isinstance(self.window, Rows) or (isinstance(self.window, Landmark) and self.window.rows)


@dataclass
class Case:
    """A clause, a stream (``row_num, k, x, v, i, d``), whether the query groups by ``k``, and
    whether it aggregates only numbers that are not decimals (see ``aggregates_of`` in
    tests/test_properties.py)."""

    clause: Clause
    attribute: Attribute
    rows: list[dict] = field(repr=False)
    group_by: bool
    numbers_only: bool = False

    def __repr__(self) -> str:
        tuples = ", ".join(f"({r['row_num']}, {r['k']!r}, {r['x']!r}, {r['v']!r}, {r['i']!r}, {r['d']!r})"
                           for r in sorted(self.rows, key=lambda r: r["row_num"]))
        return (f"Case({self.clause.text!r}, x {self.attribute.spark_type}"
                f"{' as timestamp_micros' if self.attribute.type == 'timestamp' else ''}, "
                f"group_by={self.group_by}, numbers_only={self.numbers_only}, {len(self.rows)} tuples (row_num, k, x, v, i, d): [{tuples}])")

    def register(self, spark: SparkSession, name: str = "s") -> DataFrame:
        """The stream as temp view ``name``, rows in a shuffled physical order."""
        shuffled = sorted(self.rows, key=lambda r: (r["row_num"] * 7919) % 10007)
        df = spark.createDataFrame([tuple(r[c] for c in ("row_num", "k", "x", "v", "i", "d")) for r in shuffled],
                                   SCHEMA.format(x=self.attribute.spark_type))
        if self.attribute.type == "timestamp":
            df = df.withColumn("x", F.timestamp_micros("x"))
        df.createOrReplaceTempView(name)
        return df

    def oracle_rows(self) -> list[dict]:
        """The stream for :mod:`tests.oracle`: ``x`` exact (timestamps in epoch seconds)."""
        return [{**r, "x": self.attribute.exact(r["x"])} if self.attribute.type == "timestamp" else r
                for r in self.rows]


def _decimal(value: Fraction) -> Decimal:
    """A terminating fraction as an exact Decimal."""
    with localcontext() as context:
        context.prec = 100
        return Decimal(value.numerator) / Decimal(value.denominator)


def _decimal_text(value: Fraction) -> str:
    """An exact decimal as written in a clause."""
    return format(_decimal(value), "f")


def attributes(types: tuple[str, ...] = ATTRIBUTE_TYPES) -> st.SearchStrategy[Attribute]:
    """The window attribute's type, the decimals of its values, and where they lie."""

    @st.composite
    def build(draw) -> Attribute:
        kind = draw(st.sampled_from(types))
        if kind == "double":
            return Attribute("double", draw(st.integers(1, 3)), offset=Decimal(draw(st.sampled_from((0, -500, 10**6)))))
        if kind == "long":
            return Attribute("long", 0, offset=Decimal(draw(st.sampled_from(LONG_OFFSETS))))
        if kind == "timestamp":
            return Attribute("timestamp", draw(st.sampled_from((6, 3, 0))),
                             offset=Decimal(draw(st.sampled_from(EPOCH_OFFSETS))))
        scale = draw(st.sampled_from((2, 18, 0, 6)))
        big = scale == 18 and draw(st.booleans())
        return Attribute("decimal", draw(st.sampled_from((3, 18))) if scale == 18 else min(scale, 3), scale=scale,
                         precision=38 if scale == 18 else 20,
                         offset=Decimal("12345678901234567890") if big else Decimal(draw(st.sampled_from((0, -7)))))

    return build()


def _amounts(attribute: Attribute) -> list[tuple[str, str, Fraction]]:
    """The clause amounts for ``attribute``: ``(number, unit, value in attribute units)``. Units
    only on timestamps; whole numbers on longs far from 0 (a decimal slide there would overflow
    the long window-ids)."""
    numbers = NUMBERS if attribute.type != "long" or abs(attribute.offset) < 2**50 else WHOLE
    units = tuple(UNITS) if attribute.type == "timestamp" else ("",)
    return [(number, unit, Fraction(number) * UNITS.get(unit, 1)) for number in numbers for unit in units]


def _measure(draw, attribute: Attribute, above: Fraction = Fraction(0), below: Fraction | None = None,
             binary: bool = False) -> tuple[str, Fraction]:
    """A clause amount in ``(above, below)``: ``(text, value in attribute units)``; with
    ``binary`` only binary fractions (0.125, not 0.1)."""
    number, unit, value = draw(st.sampled_from([a for a in _amounts(attribute)
                                                if above < a[2] and (below is None or a[2] < below)
                                                and not (binary and a[2].denominator & (a[2].denominator - 1))]))
    if "." in number and draw(st.booleans()):
        number += "0"  # 0.30 is 0.3
    return f"{number} {unit}".strip(), value


@st.composite
def clauses(draw, kind: str, attribute: Attribute) -> Clause:
    """A window clause of ``kind`` on attribute ``x`` (``row_num`` for the ROWS kinds); a
    tuple is in at most :data:`OVERLAP` windows."""
    if kind in ("rows", "pattr", "landmark-rows"):
        r, s = draw(st.integers(1, 12)), draw(st.integers(1, 6))
        if kind == "landmark-rows":
            return Clause(kind, f"RANGE UNBOUNDED SLIDE {s} ROWS WATTR row_num", Landmark(s, "row_num", rows=True),
                          None, Fraction(s))
        pattr = " PATTR k" if kind == "pattr" else ""
        return Clause(kind, f"RANGE {r} ROWS SLIDE {s} ROWS WATTR row_num{pattr}",
                      Rows(r, s, pattr="k" if pattr else None), Fraction(r), Fraction(s))
    if kind in ("slide-by-tuple", "every-n", "rank"):
        r_text, r = _measure(draw, attribute, binary=attribute.type == "double")  # others are refused
        n = 1 if kind == "slide-by-tuple" else draw(st.integers(2, 5))
        slide = "1 ROW" if n == 1 and draw(st.booleans()) else f"{n} ROWS"
        return Clause(kind, f"RANGE {r_text} RATTR x SLIDE {slide} SATTR {'rank(x)' if kind == 'rank' else 'row_num'}",
                      SlideByTuple(r, "x", every=n, rank=kind == "rank"), r, None)
    least = _least_slide(attribute)
    if kind == "landmark":
        s_text, s = _measure(draw, attribute, above=least)
        return Clause(kind, f"RANGE UNBOUNDED SLIDE {s_text} WATTR x", Landmark(s, "x"), None, s)
    smallest = min(a[2] for a in _amounts(attribute))
    if kind == "cumulate":  # Flink's CUMULATE: n = size/step windows per period, offset on the grid
        s_text, s = _measure(draw, attribute, above=least)
        size = s * draw(st.integers(1, OVERLAP))
        o_text, o = _offset(draw, attribute, size)
        size_text = _decimal_text(size) + (" SECONDS" if attribute.type == "timestamp" else "")
        return Clause(kind, f"CUMULATE STEP {s_text} SIZE {size_text}{o_text} WATTR x", Cumulating(s, size, "x", o),
                      size, s, o)
    if kind == "offset":  # a sliding, tumbling or landmark grid shifted by OFFSET o
        shape = draw(st.sampled_from(("sliding", "tumbling", "landmark")))
        plain = draw(clauses(shape, attribute))
        o_text, o = _offset(draw, attribute, plain.slide)
        text = plain.text.replace(" WATTR", f"{o_text} WATTR")
        window = replace(plain.window, offset=o)
        return Clause(kind, text, window, plain.range, plain.slide, o)
    if kind == "tumbling":
        s_text, s = _measure(draw, attribute, above=least)
        r_text, r = s_text, s
    elif kind == "hopping":  # slide > range: gaps between the extents
        s_text, s = _measure(draw, attribute, above=max(smallest, least))
        r_text, r = _measure(draw, attribute, below=s)
    elif kind == "aligned":  # a range of k slides: every tuple in exactly k windows (block scans above SCANNED)
        s_text, s = _measure(draw, attribute, above=least)
        r = s * draw(st.one_of(st.integers(2, SCANNED), st.integers(SCANNED + 1, OVERLAP)))
        r_text = _decimal_text(r) + (" SECONDS" if attribute.type == "timestamp" else "")
    else:  # sliding, with a range that is not a multiple of the slide
        r_text, r = _measure(draw, attribute, above=max(smallest, least * 3 / 2))
        s_text, s = _measure(draw, attribute, above=max(r / OVERLAP, least), below=r)
        if r % s == 0:
            r = r + s / 2
            r_text = _decimal_text(r) + (" SECONDS" if attribute.type == "timestamp" else "")
    return Clause(kind, f"RANGE {r_text} SLIDE {s_text} WATTR x", Sliding(r, s, "x"), r, s)


def _offset(draw, attribute: Attribute, slide: Fraction) -> tuple[str, Fraction]:
    """`` OFFSET o`` (the text, and ``o`` in attribute units): within a slide either way or beyond
    it, on the data's grid or between its points, negative too; sometimes none."""
    if not draw(st.integers(0, 4)):
        return "", Fraction(0)
    grid = attribute.grid
    while slide * OVERLAP * 4 / grid > 2**59:  # clause numbers in the offset's places stay within 2**61 (else refused)
        grid *= 10
    o = draw(st.sampled_from((slide / 2, slide / 3, slide - grid, grid, slide * 3 + grid, slide / 7)))
    o = round(o / grid) * grid * draw(st.sampled_from((1, -1)))
    return f" OFFSET {_decimal_text(o)}{' SECONDS' if attribute.type == 'timestamp' else ''}", o


def _least_slide(attribute: Attribute) -> Fraction:
    """The slide below which a decimal's window-ids ``floor(x/s)`` pass ``2**61`` (refused,
    docs/semantics.md): 0 but for decimals beyond ``2**61``."""
    return Fraction(abs(int(attribute.offset)), 2**61) if attribute.type == "decimal" else Fraction(0)


def _value(source: Source, attribute: Attribute, clause: Clause, span: Fraction, earlier: list[Fraction]) -> Fraction:
    """One window-attribute value on the data's decimal grid, often on an edge: a repeat,
    another tuple's value +- the range (slide-by-tuple extents), a multiple of the slide, a
    window start (w+1)s - r, or one grid step before a multiple of the slide."""
    grid, base, r = attribute.grid, Fraction(attribute.offset), clause.range or Fraction(0)
    edge = source.randint(0, 7) if source.chance(50) else -1
    if earlier and edge in (0, 1, 2):
        other = earlier[source.randint(0, len(earlier) - 1)]
        value = (other, other - r, other + r)[edge]
    elif clause.slide and edge in (3, 4, 5, 6, 7):
        j = source.randint(-1, max(1, int(span / clause.slide)))
        value = base + clause.offset + j * clause.slide - {5: r, 6: grid, 7: r - grid}.get(edge, 0)
    else:
        value = base + source.randint(-int(span / grid) // 4, int(span / grid)) * grid
    value = round(value / grid) * grid
    if attribute.type == "long":  # into the exact range |x| <= 2**61 - |o| (ids floor((x-o)/s) within 2**61)
        most = 2**61 - abs(clause.offset)
        value = min(max(value, -most), most)
    return value


def _stream(source: Source, attribute: Attribute, clause: Clause, n: int) -> list[dict]:
    """``n`` tuples over about 3, 20 or 100 extents; keys from one pool; a NULL rate for the
    aggregated columns; row_num gaps of 1, up to 3 or up to 100; arrival in a random order,
    in x order or in reverse x order."""
    key_pool = source.choice(KEY_POOLS)
    unit = clause.range or clause.slide or Fraction(1)
    windows = source.choice((3, 20, 100)) if n > 1 else 1
    span = unit * windows if not clause.positional else Fraction(n)
    span = max(span, attribute.grid * 4)
    nulls = source.choice((0, 10, 60, 100))
    gap = source.choice((1, 3, 100))
    order = source.choice(("random", "random", "sorted", "reversed"))
    values: list[Fraction] = []
    for _ in range(n):
        values.append(_value(source, attribute, clause, span, values))
    positions = list(range(n))
    if order == "random":
        for i in range(n - 1, 0, -1):  # Fisher-Yates, from the source so small cases shrink
            j = source.randint(0, i)
            positions[i], positions[j] = positions[j], positions[i]
    elif order == "sorted":
        positions = sorted(range(n), key=lambda i: values[i])
    else:
        positions = sorted(range(n), key=lambda i: -values[i])
    row_nums, at = [0] * n, source.randint(-5, 5)
    for i in positions:
        at += source.randint(1, gap)
        row_nums[i] = at
    rows = []
    for i, value in enumerate(values):
        present = lambda: not source.chance(nulls)  # noqa: E731
        rows.append({
            "row_num": row_nums[i],
            "k": source.choice(key_pool),
            "x": attribute.stored(value),
            "v": float(Decimal(source.randint(-10**5, 10**5)).scaleb(-source.randint(1, 3))) if present() else None,
            "i": source.randint(-10**12, 10**12) if present() else None,
            "d": Decimal(source.randint(-10**9, 10**9)).scaleb(-2) if present() else None,
        })
    return rows


@st.composite
def cases(draw, kinds: tuple[str, ...], types: tuple[str, ...] = ATTRIBUTE_TYPES, most: int = 2000) -> Case:
    """A :class:`Case` of one of ``kinds``: one tuple up to ``most`` tuples."""
    kind = draw(st.sampled_from(kinds))
    attribute = draw(attributes(types))
    if kind in ("slide-by-tuple", "every-n", "rank") and _least_slide(attribute):
        attribute = replace(attribute, offset=Decimal(0))  # FCA ids beyond 2**62 are refused
    clause = draw(clauses(kind, attribute))
    if draw(st.integers(0, 9)) < 7:
        n, source = draw(st.integers(1, 40)), Draws(draw)
    else:
        n, source = draw(st.integers(41, most)), Seeded(random.Random(draw(st.integers(0, 2**32))))
    rows = _stream(source, attribute, clause, n)
    return Case(clause, attribute, rows, group_by=clause.kind != "pattr" and draw(st.booleans()),
                numbers_only=draw(st.booleans()))


def issue_11_reproduction() -> Case:
    """The stream of issue 11's reproduction: 400 tuples, ``x`` a double with two decimals in
    [0, 2000], arrival order unrelated to it, keys x/y/z; window 267.68 of key z holds 2 tuples."""
    rng = random.Random(99)
    rows = [{"row_num": i, "k": rng.choice("xyz"), "x": round(rng.uniform(0, 2000), 2),
             "v": round(rng.uniform(0, 100), 1), "i": None, "d": None} for i in range(400)]
    clause = Clause("slide-by-tuple", "RANGE 60 RATTR x SLIDE 1 ROW SATTR row_num", SlideByTuple(60, "x"),
                    Fraction(60), None)
    return Case(clause, Attribute("double", 2), rows, group_by=True, numbers_only=True)
