"""The steps of a tagger on a relation, one definition for both of its forms: a DataFrame (for
:func:`wid.query`) or SQL text of a relation (for :func:`wid.to_sql`), the expressions of each
step built by the same formulas as Columns or as :class:`wid.windows.sqlexpr.Sql` text::

    >>> from wid.windows.sqlexpr import Sql
    >>> staged("`t`", [Add([("y", Sql.column("x") + 1)]), Keep(Sql.column("y") > 2)])
    '(SELECT * FROM (SELECT *, (`x` + 1) AS `y` FROM `t`) WHERE (`y` > 2))'
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.windows.sqlexpr import Expr

#: Columns added to a relation at once: ``(name, expression)``, each reading the relation's columns only.
Stage = Sequence[tuple[str, Expr]]


class Step(ABC):
    """One step of a tagger on a relation: a DataFrame (:meth:`frame`), or SQL text of a relation,
    a quoted name or a parenthesised query (:meth:`sql`); its expressions are of that kind.

    The same step as SQL text and on a DataFrame:

    >>> from wid.windows.sqlexpr import Sql, column
    >>> Keep(Sql.column("v") >= 5).sql("`readings`")
    '(SELECT * FROM `readings` WHERE (`v` >= 5))'
    >>> sorted(row.row_num for row in Keep(column("v") >= 5).frame(spark.table("readings")).collect())
    [0, 1]
    """

    @abstractmethod
    def frame(self, df: DataFrame) -> DataFrame:
        """The step applied to ``df``."""

    @abstractmethod
    def sql(self, relation: str) -> str:
        """The step applied to ``relation`` (SQL text), as a parenthesised query."""


@dataclass(frozen=True)
class Add(Step):
    """Columns added at once (a window function may read the columns of an earlier step).

    >>> from wid.windows.sqlexpr import Sql
    >>> Add([("lo", Sql.column("ts") - 0.5), ("hi", Sql.column("ts") + 0.5)]).sql("`readings`")
    "(SELECT *, (`ts` - CAST('0.5' AS DOUBLE)) AS `lo`, (`ts` + CAST('0.5' AS DOUBLE)) AS `hi` FROM `readings`)"
    """

    columns: Stage

    def frame(self, df: DataFrame) -> DataFrame:
        return df.withColumns(dict(self.columns))

    def sql(self, relation: str) -> str:
        return f"(SELECT *, {', '.join(e.alias(name) for name, e in self.columns)} FROM {relation})"


@dataclass(frozen=True)
class Keep(Step):
    """The rows where ``condition`` holds.

    >>> from wid.windows.sqlexpr import Sql
    >>> Keep(Sql.column("wid_lo") <= Sql.column("wid_hi")).sql("`tagged`")
    '(SELECT * FROM `tagged` WHERE (`wid_lo` <= `wid_hi`))'
    """

    condition: Expr

    def frame(self, df: DataFrame) -> DataFrame:
        return df.where(self.condition)

    def sql(self, relation: str) -> str:
        return f"(SELECT * FROM {relation} WHERE {self.condition})"


@dataclass(frozen=True)
class Totals(Step):
    """Aggregates over the relation's rows (those where ``where`` holds), added to every row
    (a cross join with their one row).

    >>> from wid.windows.sqlexpr import Sql, call
    >>> Totals([("t0", call("min", Sql.column("arrival_ts")))], Sql.column("v") > 1).sql("`readings`")
    '(SELECT * FROM `readings` CROSS JOIN (SELECT min(`arrival_ts`) AS `t0` FROM `readings` WHERE (`v` > 1)))'
    """

    columns: Stage
    where: Expr | None = None

    def frame(self, df: DataFrame) -> DataFrame:
        rows = df if self.where is None else df.where(self.where)
        return df.crossJoin(F.broadcast(rows.agg(*[e.alias(name) for name, e in self.columns])))

    def sql(self, relation: str) -> str:
        where = "" if self.where is None else f" WHERE {self.where}"
        totals = ", ".join(e.alias(name) for name, e in self.columns)
        return f"(SELECT * FROM {relation} CROSS JOIN (SELECT {totals} FROM {relation}{where}))"


def staged(relation: DataFrame | str, steps: Sequence[Step]) -> DataFrame | str:
    """``relation`` (a DataFrame, or SQL text of a relation) after each step in turn: a
    DataFrame, or SQL text of a parenthesised query.

    On a DataFrame (the module docstring shows SQL text), each step reading the columns of the one before:

    >>> from wid.windows.sqlexpr import column
    >>> rows = staged(spark.table("readings"), [Add([("y", column("v") * 2 - 3)]), Keep(column("y") > 0)])
    >>> sorted((row.row_num, row.y) for row in rows.collect())
    [(0, 7), (1, 11), (3, 1)]
    """
    for step in steps:
        relation = step.sql(relation) if isinstance(relation, str) else step.frame(relation)
    return relation
