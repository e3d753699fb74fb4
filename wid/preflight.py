"""Checks of a window query against its source's columns, before Spark starts: the text, the
window clause, and every column the query names (outside HAVING and ORDER BY, which name
output columns) must be the source's own. A :class:`WidError` names the column, a close
match, and the source's columns.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from sqlglot import exp, parse_one
from sqlglot.errors import ParseError

from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.windows.clause import parse_window
from wid.compiler.text import RESERVED, WindowQuery


def preflight(text: str, columns: Sequence[str] | None, view: str, window: WindowSpec | None = None,
              replaying: bool = False, fix: str = "add one with wid.arrival(df, by=...)"
              ) -> tuple[WindowQuery, WindowSpec]:
    """The parsed query and its window (``window`` replaces the clause's, as for ``[flink]``),
    each column it names checked against ``columns`` (None: unknown before Spark, not checked),
    and ``row_num`` among them when a replay (``replaying``) or the window reads arrival order;
    ``fix`` says how to add it.

    >>> q, spec = preflight("SELECT key, max(value) AS hi FROM events [RANGE 60 SECONDS SLIDE 30 SECONDS WATTR ts] "
    ...                     "GROUP BY key", ["ts", "key", "value"], "events")
    >>> spec
    Sliding(range=60, slide=30, wattr='ts')
    >>> preflight("SELECT key, max(valeu) AS hi FROM events [RANGE 60 SLIDE 30 WATTR ts] GROUP BY key",
    ...           ["ts", "key", "value"], "events")
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 'valeu' (did you mean 'value'?): events has ts, key, value
    >>> preflight("SELECT count(*) AS n FROM events [RANGE 10 ROWS SLIDE 5 ROWS WATTR row_num]",
    ...           ["ts", "key", "value"], "events", fix="pass --arrival")
    Traceback (most recent call last):
    wid.errors.WidError: the window [RANGE 10 ROWS SLIDE 5 ROWS WATTR row_num] reads arrival order but events has no row_num column: pass --arrival
    >>> preflight("SELECT key, max(value) AS hi FROM events [RANGE 60 SLDE 30 WATTR ts] GROUP BY key", None, "e")
    Traceback (most recent call last):
    wid.errors.WidError: missing SLIDE in [RANGE 60 SLDE 30 WATTR ts] (is 'SLDE' a misspelt SLIDE?)
    """
    query = WindowQuery.parse(text)
    spec = parse_window(query.window) if window is None else window
    if columns is None:
        return query, spec
    known = {c.lower() for c in columns}
    if (replaying or spec.reads_arrival) and "row_num" not in known:
        what = "replay" if replaying else f"the window [{query.window.strip()}]"
        raise WidError(f"{what} reads arrival order but {view} has no row_num column: {fix}")
    named: list[str] = []
    spec.named(lambda c: named.append(c) or c)  # the columns the window names
    allowed = {*RESERVED, *spec.extent_columns, *(item.alias.lower() for item in query.select)}
    found = [(name, f" in [{query.window.strip()}]") for name in named]
    for expr in [*(item.expr for item in query.select), *([query.where] if query.where else []), *query.group_by]:
        found += [(name, "") for name in sorted(referenced(expr) - allowed)]
    for name, where in found:
        if name.lower() not in known:
            close = difflib.get_close_matches(name, list(columns), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise WidError(f"unknown column {name!r}{where}{hint}: {view} has {', '.join(columns)}")
    return query, spec


def referenced(expr: str) -> set[str]:
    """The plain column names ``expr`` (Spark SQL) reads: not a struct field, not a lambda's
    variable.

    >>> sorted(referenced("sum(CASE WHEN k = 'a' THEN v * 2 ELSE 0 END) + size(filter(xs, x -> x > lim))"))
    ['k', 'lim', 'v', 'xs']
    >>> referenced("s.f + `my col`")
    {'my col'}
    """
    try:
        tree = parse_one(expr, read="spark")
    except ParseError:
        return set()  # not ours to judge: Spark reports it in its own words
    variables = {v.name for lam in tree.find_all(exp.Lambda) for v in lam.expressions}
    return {c.name for c in tree.find_all(exp.Column) if not c.table and c.name not in variables}
