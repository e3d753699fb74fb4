"""A query in another engine's syntax as a sqlglot tree (Spark's dialect), and the pieces every
front end builds from it: names quoted for the generated text, the aggregates of an item.

Spark SQL's ``window`` is a function and a column name (``GROUP BY window(ts, '5 minutes')``,
``SELECT window.start``); sqlglot reads it as the keyword of a named-window clause, so the
``WINDOW`` tokens are read as names here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from wid.errors import WidError

_SPARK = Spark()


def tokens(text: str) -> list[Token] | None:
    """The Spark SQL tokens of ``text``, a ``WINDOW`` keyword read as a name; None when ``text``
    does not tokenize (the caller's own parser names the problem).

    >>> [t.text for t in tokens("SELECT window.start FROM t")]
    ['SELECT', 'window', '.', 'start', 'FROM', 't']
    """
    try:
        found = _SPARK.tokenize(text)
    except TokenError:
        return None
    return [Token(TokenType.VAR, t.text, t.line, t.col, t.start, t.end, t.comments)
            if t.token_type is TokenType.WINDOW else t for t in found]


def parse(text: str, what: str) -> exp.Select:
    """``text`` as one SELECT (a :class:`WidError` naming ``what`` and the problem otherwise).

    >>> parse("SELECT k, count(*) FROM t GROUP BY window(ts, '1 minute'), k", "Spark's window()").args["group"].sql()
    "GROUP BY WINDOW(ts, '1 minute'), k"
    """
    found = tokens(text) or []
    try:
        statements = [s for s in _SPARK.parser().parse(found, text) if s is not None]
    except ParseError as error:
        where = error.errors[0] if error.errors else {}
        near = f" at line {where['line']}, column {where['col']}" if where else ""
        raise WidError(f"cannot parse the query with {what} ({where.get('description', 'syntax error')}){near}: "
                       + " ".join(text.split())) from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        raise WidError(f"a window query with {what} is one SELECT: " + " ".join(text.split()))
    return statements[0]


def sql(node: exp.Expression) -> str:
    """``node`` as Spark SQL text, every name back-quoted (``window`` included).

    >>> sql(parse("SELECT window.start FROM t", "x").expressions[0])
    '`window`.`start`'
    """
    return node.sql(dialect="spark", identify=True)


def aggregates(node: exp.Expression) -> list[exp.AggFunc]:
    """The outermost aggregate calls inside ``node`` (not those in a window function's OVER).

    >>> [sql(a) for a in aggregates(parse("SELECT sum(v) / count(*) + 1 FROM t", "x").expressions[0])]
    ['SUM(`v`)', 'COUNT(*)']
    """
    found = []
    for inner in node.find_all(exp.AggFunc):
        if inner.find_ancestor(exp.AggFunc, exp.Window) is None:
            found.append(inner)
    return found


def source_span(text: str) -> tuple[int, int]:
    """Offsets ``(first, end)`` of the (dotted, maybe back-quoted) name after the top-level ``FROM``
    of ``text``: ``text[first:end]`` names the source.

    >>> text = "SELECT (SELECT 1 FROM x), count(*) FROM db.`my view` GROUP BY window(ts, '1 minute')"
    >>> first, end = source_span(text); text[first:end]
    'db.`my view`'
    """
    found, depth = tokens(text) or [], 0
    for i, token in enumerate(found):
        depth += (token.token_type is TokenType.L_PAREN) - (token.token_type is TokenType.R_PAREN)
        if token.token_type is TokenType.FROM and depth == 0:
            j = i + 1
            while j < len(found) and (found[j].token_type in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.DOT)
                                      or found[j].text.isidentifier() and found[j].token_type is not TokenType.STRING):
                if j > i + 1 and found[j].token_type is not TokenType.DOT and found[j - 1].token_type is not TokenType.DOT:
                    break
                j += 1
            if j > i + 1:
                return found[i + 1].start, found[j - 1].end + 1
    raise WidError("expected FROM <view>: " + " ".join(text.split()))


@dataclass(frozen=True)
class Outputs:
    """A SELECT's output columns over the columns of wid's result: each select item with
    ``replaced`` applied (an aggregate, a grouping key, the window: the column wid computes them
    in), its output name, HAVING and ORDER BY (whose names of the select list read those outputs,
    ``_wid_o<i>``, as :class:`wid.compiler.syntax.shape.Shape` names them) and LIMIT.

    >>> select = parse("SELECT k, count(*) AS n FROM t GROUP BY k HAVING n > 1 ORDER BY 2 DESC LIMIT 3", "x")
    >>> as_agg = lambda node: exp.column("_wid_agg0", quoted=True) if isinstance(node, exp.Count) else node
    >>> o = Outputs.of(select, as_agg)
    >>> o.items, o.names, o.having, o.order_by, o.limit
    (('`k`', '`_wid_agg0`'), ('k', 'n'), '`_wid_o1` > 1', ('`_wid_o1` DESC NULLS LAST',), 3)
    """

    items: tuple[str, ...]
    names: tuple[str, ...]
    having: str | None
    order_by: tuple[str, ...]
    limit: int | None

    @staticmethod
    def of(select: exp.Select, replaced: Callable[[exp.Expression], exp.Expression]) -> Outputs:
        """The outputs of ``select``, ``replaced`` mapping a node to the column of wid's result
        holding it (or the node itself); Spark's defaults for the NULLs' order."""
        names = [e.alias if isinstance(e, exp.Alias) else (e.name if isinstance(e, exp.Column) else sql(e))
                 for e in select.expressions]
        outputs = {n.lower(): i for i, n in reversed(list(enumerate(names)))}

        def output(node: exp.Expression) -> exp.Expression:  # a name of the select list: that column
            if isinstance(node, exp.Column) and not node.table and node.name.lower() in outputs:
                return exp.column(f"_wid_o{outputs[node.name.lower()]}", quoted=True)
            return node

        having = select.args.get("having")
        order = []
        for item in select.args["order"].expressions if select.args.get("order") else []:
            key = item.this
            if isinstance(key, exp.Literal) and key.is_int:
                key = exp.column(f"_wid_o{int(key.this) - 1}", quoted=True)
            key = key.transform(output).transform(replaced)
            descending = bool(item.args.get("desc"))
            first = item.args.get("nulls_first")
            first = (not descending) if first is None else first
            order.append(f"{sql(key)} {'DESC' if descending else 'ASC'} NULLS {'FIRST' if first else 'LAST'}")
        limit = select.args.get("limit")
        return Outputs(tuple(sql(e.unalias().transform(replaced)) for e in select.expressions), tuple(names),
                       sql(having.this.transform(replaced).transform(output)) if having else None, tuple(order),
                       int(limit.expression.this) if limit is not None else None)
