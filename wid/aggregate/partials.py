"""Aggregates and their partial states: what a pane keeps of its tuples and how panes merge.

An aggregate of a window query (count, sum, avg, min or max of a column) is computed from
partials: each group of tuples (a pane, a block, a batch of live rows) keeps the partial states
as SQL text gives them, and the merges of the partials give the window's value, of Spark's own
result type. Any other Spark SQL aggregate (``fn="sql"``) is evaluated over plain rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, NumericType

from wid.errors import WidError
from wid.windows.sqlexpr import quote

DECOMPOSABLE = ("count", "sum", "avg", "min", "max")



@dataclass(frozen=True)
class Aggregate:
    """Output column ``alias``: ``fn(arg)`` with fn in count/sum/avg/min/max (``arg`` an
    input column, ``None`` for ``count(*)``), or with ``fn="sql"`` any Spark SQL
    aggregate expression ``arg`` over the input columns (evaluated by expansion).

    An avg is a sum and a count per pane, merged by sums:

    >>> mean = Aggregate("mean", "avg", "v")
    >>> mean.partials(0)
    [('_wid_p0s', 'sum(CAST(`v` AS DOUBLE))'), ('_wid_p0n', 'count(`v`)')]
    >>> mean.final(0)
    'CASE WHEN sum(`_wid_p0n`) > 0 THEN sum(`_wid_p0s`) / sum(`_wid_p0n`) END'
    """

    alias: str
    fn: str
    arg: str | None = None

    @property
    def decomposable(self) -> bool:
        """count, sum, avg, min or max: merged from partials (panes), never expanded."""
        return self.fn in DECOMPOSABLE

    @property
    def _value(self) -> str:
        return quote(self.arg) if self.arg is not None else "1"

    def direct_sql(self) -> str:
        """The aggregate over plain rows, as SQL text (a user's expression parenthesised, a line
        end closing any comment in it)."""
        return f"({self.arg}\n)" if self.fn == "sql" else f"{self.fn}({self._value})"

    def direct(self) -> Column:
        """The aggregate over plain rows."""
        return F.expr(self.direct_sql())

    def partials(self, index: int, dtype: DataType | None = None) -> list[tuple[str, str]]:
        """``(name, partial over rows)`` for each partial state, as SQL text; ``dtype`` is the
        argument's type (an avg sums a decimal as a decimal, other numbers as doubles, as Spark)."""
        name = f"_wid_p{index}"
        if self.fn == "avg":
            total = self._value if isinstance(dtype, DecimalType) else f"CAST({self._value} AS DOUBLE)"
            return [(name + "s", f"sum({total})"), (name + "n", f"count({self._value})")]
        return [(name, f"{self.fn}({self._value})")]

    def merge(self, index: int) -> list[tuple[str, str]]:
        """``(name, merge of the partials)`` for each partial state, as SQL text."""
        combine = {"min": "min", "max": "max"}.get(self.fn, "sum")
        return [(name, f"{combine}({quote(name)})") for name, _ in self.partials(index)]

    def final(self, index: int, dtype: DataType | None = None) -> str:
        """The aggregate from the merge of its partials, as SQL text, of Spark's own result type:
        a sum of a decimal(p, s) is a decimal(p+10, s) (each merge of sums would add 10 digits);
        avg of a decimal(p, s) that sum over the count as decimal(20, 0), cast to decimal(p+4, s+4)
        (each precision and scale bounded by 38)."""
        merged = [sql for _, sql in self.merge(index)]
        if self.fn not in ("sum", "avg"):
            return merged[0]
        total = _decimal_sum(merged[0], dtype) if isinstance(dtype, DecimalType) else merged[0]
        if self.fn == "sum":
            return total
        n = merged[1]
        if isinstance(dtype, DecimalType):
            p, s = dtype.precision, dtype.scale
            total = (f"CAST({total} / CAST({n} AS DECIMAL(20, 0)) "
                     f"AS DECIMAL({min(p + 4, 38)}, {min(s + 4, 38)}))")
            return f"CASE WHEN {n} > 0 THEN {total} END"
        return f"CASE WHEN {n} > 0 THEN {total} / {n} END"


def _decimal_sum(total: str, dtype: DecimalType) -> str:
    """``total`` (SQL text) as the type of Spark's sum of a decimal(p, s): decimal(p+10, s)."""
    return f"CAST({total} AS DECIMAL({min(dtype.precision + 10, 38)}, {dtype.scale}))"


def numeric_arguments(df: DataFrame, aggregates: list[Aggregate], texts: dict[str, str]) -> None:
    """A :class:`WidError` naming the select item (``texts``: alias -> text) whose sum or avg
    is given something other than a number (Spark would fail at run time casting it).

    A max takes a string, a sum does not:

    >>> numeric_arguments(spark.table("readings"), [Aggregate("hi", "max", "k")], {"hi": "max(k)"})
    >>> numeric_arguments(spark.table("readings"), [Aggregate("s", "sum", "k")], {"s": "sum(k)"})
    Traceback (most recent call last):
        ...
    wid.errors.WidError: sum(k): sum needs a number, not string
    """
    types = {f.name: f.dataType for f in df.schema.fields}
    for a in aggregates:
        if a.fn in ("sum", "avg") and not isinstance(types[a.arg], NumericType):
            raise WidError(f"{texts[a.alias]}: {a.fn} needs a number, not {types[a.arg].simpleString()}")
