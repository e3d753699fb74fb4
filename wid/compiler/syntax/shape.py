"""The result shape of a query written in another engine's syntax: the columns, names and types
that engine returns, computed from wid's own result (``wid``, the extent's bounds, the grouping
keys ``_wid_g<i>`` and aggregates ``_wid_a<j>`` the translated query selects).

The shape adds the window's struct column where the syntax has one (Spark's ``window`` and
``session_window``: ``struct<start, end>``), rolls the per-window results up by grouping sets
where the query has them (:class:`Grouping`: a second, window-agnostic aggregation of wid's
finest grouping), evaluates the user's select items over it as Spark SQL (each item's
aggregates and grouping expressions already replaced by those columns), then HAVING, ORDER BY,
the output names and types, and LIMIT. The same steps come as a DataFrame
(:meth:`Shape.apply`) and as SQL text (:meth:`Shape.sql`); nothing below the compiler sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sorted(item: str) -> Column:
    """An ORDER BY item ``expr ASC|DESC [NULLS FIRST|LAST]`` as a sort Column (Spark's defaults:
    ascending, NULLs first when ascending and last when descending)."""
    words = item.rsplit(None, 3)
    tail = " ".join(words[1:]).upper()
    nulls = "FIRST" if tail.endswith("NULLS FIRST") else "LAST" if tail.endswith("NULLS LAST") else None
    body = item
    if nulls:
        body = body[: body.upper().rindex("NULLS")].rstrip()
    descending = body.upper().endswith(" DESC")
    body = body[:-5] if descending else body[:-4] if body.upper().endswith(" ASC") else body
    column = F.expr(body)
    if descending:
        return column.desc_nulls_first() if nulls == "FIRST" else column.desc_nulls_last()
    return column.asc_nulls_last() if nulls == "LAST" else column.asc_nulls_first()


@dataclass(frozen=True)
class Grouping:
    """A second aggregation of wid's result by grouping sets: ``columns`` (the grouping columns, wid's
    result's names), ``sets`` (each a tuple of those columns), ``aggregates`` (Spark SQL
    ``expression AS name`` over wid's result; ``_wid_type<i>_`` in them stands for the type
    :meth:`Shape.typed` finds in the analysis's ``i``-th column past the outputs).

    >>> Grouping(("window_end", "_wid_key0"), (("window_end", "_wid_key0"), ("window_end",)),
    ...          ("SUM(`_wid_agg0`) AS `_wid_agg0`",)).sql("r")
    'SELECT `window_end`, `_wid_key0`, SUM(`_wid_agg0`) AS `_wid_agg0` FROM (r) GROUP BY GROUPING SETS ((`window_end`, `_wid_key0`), (`window_end`))'
    """

    columns: tuple[str, ...]
    sets: tuple[tuple[str, ...], ...]
    aggregates: tuple[str, ...]

    def apply(self, df: DataFrame, extra: Sequence[str] = ()) -> DataFrame:
        """The rolled-up ``df``; ``extra`` columns (replay's ``emit_row``) join every set."""
        sets = [[F.col(c) for c in (*s, *extra)] for s in self.sets]
        return df.groupingSets(sets, *[F.col(c) for c in (*self.columns, *extra)]).agg(
            *[F.expr(a) for a in self.aggregates])

    def sql(self, inner: str) -> str:
        """:meth:`apply` as SQL over the relation ``inner``."""
        sets = ", ".join("(" + ", ".join(map(_quote, s)) + ")" for s in self.sets)
        return (f"SELECT {', '.join(map(_quote, self.columns))}, {', '.join(self.aggregates)} FROM ({inner}) "
                f"GROUP BY GROUPING SETS ({sets})")

    def typed(self, types: Sequence[str]) -> Grouping:
        """These aggregates with ``types[i]`` in place of ``_wid_type<i>_``."""
        out = []
        for text in self.aggregates:
            for i, kind in enumerate(types):
                text = text.replace(f"_wid_type{i}_", kind)
            out.append(text)
        return replace(self, aggregates=tuple(out))


@dataclass(frozen=True)
class Shape:
    """How a translated query's rows become the other engine's result.

    ``struct``: ``(name, start column, end column)`` of the window's struct column, or None;
    ``items``: one Spark SQL expression per output column, over wid's result and the struct;
    ``names`` and ``types`` (DDL type strings, or None: the item's own type) of the output columns;
    ``having``, ``order_by`` (``expr [ASC|DESC] [NULLS FIRST|LAST]``), ``limit`` as in SQL;
    ``analysis``: the statement whose analysis by Spark gives the names and types (:meth:`typed`),
    with the offsets of the source's name in it (:meth:`analysed` puts another name there);
    ``grouping``: a roll-up by grouping sets before the items (:class:`Grouping`), or None.

    >>> shape = Shape(("window", "window_start", "window_end"), ("`window`", "`_wid_a0`"), ("window", "n"),
    ...               having="`_wid_a0` > 1", order_by=("`window`.`start` DESC",))
    >>> print(shape.sql("aggregated"))  # doctest: +NORMALIZE_WHITESPACE
    SELECT `_wid_o0` AS `window`, `_wid_o1` AS `n` FROM (SELECT *, (`window`) AS `_wid_o0`, (`_wid_a0`) AS `_wid_o1`
    FROM (SELECT *, named_struct('start', `window_start`, 'end', `window_end`) AS `window` FROM (aggregated))
    WHERE (`_wid_a0` > 1)) ORDER BY `window`.`start` DESC
    """

    struct: tuple[str, str, str] | None
    items: tuple[str, ...]
    names: tuple[str, ...]
    types: tuple[str | None, ...] | None = None
    having: str | None = None
    order_by: tuple[str, ...] = ()
    limit: int | None = None
    analysis: tuple[str, int, int] | None = None
    grouping: Grouping | None = None

    def analysed(self, source: str) -> str:
        """:attr:`analysis` reading ``source`` (SQL text of a relation) in place of the view it names.

        >>> Shape(None, (), (), analysis=("SELECT count(*) FROM t GROUP BY k", 21, 22)).analysed("`other`")
        'SELECT count(*) FROM `other` GROUP BY k'
        """
        text, first, end = self.analysis
        return text[:first] + source + text[end:]

    def typed(self, names: Sequence[str], types: Sequence[str]) -> Shape:
        """This shape with the output names and types Spark's analysis of :attr:`analysis` gave (the
        columns past the outputs type the :attr:`grouping`'s aggregates).

        >>> Shape(None, ("`a`",), ("a",)).typed(["n"], ["bigint"]).types
        ('bigint',)
        """
        n = len(self.items)
        grouping = self.grouping.typed(types[n:]) if self.grouping is not None else None
        return replace(self, names=tuple(names[:n]), types=tuple(types[:n]), grouping=grouping)

    def _final(self, i: int) -> str:
        value = f"`_wid_o{i}`"
        kind = self.types[i] if self.types else None
        return f"{f'CAST({value} AS {kind})' if kind else value} AS {_quote(self.names[i])}"

    def apply(self, df: DataFrame, extra: Sequence[str] = ()) -> DataFrame:
        """``df`` (wid's result, plus ``extra`` columns such as replay's ``emit_row``) in this shape,
        ``extra`` kept last."""
        if self.struct is not None:
            name, start, end = self.struct
            df = df.withColumn(name, F.struct(F.col(start).alias("start"), F.col(end).alias("end")))
        if self.grouping is not None:
            df = self.grouping.apply(df, extra)
        df = df.select("*", *[F.expr(item).alias(f"_wid_o{i}") for i, item in enumerate(self.items)])
        if self.having:
            df = df.where(F.expr(self.having))
        if self.order_by:
            df = df.orderBy(*map(_sorted, self.order_by))
        df = df.select(*[F.expr(self._final(i)) for i in range(len(self.items))], *map(F.col, extra))
        return df if self.limit is None else df.limit(self.limit)

    def sql(self, inner: str) -> str:
        """:meth:`apply` as SQL over the relation ``inner`` (SQL text of wid's result)."""
        if self.struct is not None:
            name, start, end = self.struct
            inner = (f"SELECT *, named_struct('start', {_quote(start)}, 'end', {_quote(end)}) AS {_quote(name)} "
                     f"FROM ({inner})")
        if self.grouping is not None:
            inner = self.grouping.sql(inner)
        items = ", ".join(f"({item}) AS `_wid_o{i}`" for i, item in enumerate(self.items))
        text = f"SELECT *, {items} FROM ({inner})"
        if self.having:
            text += f" WHERE ({self.having})"
        text = f"SELECT {', '.join(self._final(i) for i in range(len(self.items)))} FROM ({text})"
        if self.order_by:
            text += " ORDER BY " + ", ".join(self.order_by)
        return text if self.limit is None else f"{text} LIMIT {self.limit}"


@dataclass(frozen=True)
class Translation:
    """A query in another syntax as wid's own (``text``, with the bracket clause) and the shape
    of the other engine's result.

    >>> Translation("SELECT count(*) AS n FROM t [RANGE 60 SLIDE 60 WATTR ts]", Shape(None, ("`n`",), ("n",))).shape.names
    ('n',)
    """

    text: str
    shape: Shape
