"""The text of a window query: ``SELECT items FROM view [window clause] [WHERE] [GROUP BY]
[HAVING] [ORDER BY] [LIMIT]``.

The bracketed window clause is the only part that is not SQL. It is found on sqlglot's Spark
tokens (the first ``[ ... ]`` after a top-level ``FROM name``, so brackets in strings,
comments and backquotes do not count) and lifted out; sqlglot (``read="spark"``) parses the
rest for its structure. Every expression reaches Spark as the user's own text, a slice
between token positions (comments dropped): nothing is rewritten. :func:`normal_name` compares
names as Spark does; :func:`sort_item` splits an ORDER BY item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from wid.bucket.columns import WID
from wid.compiler.syntax import translate
from wid.compiler.syntax.shape import Shape
from wid.errors import WidError
from wid.windows.sqlexpr import column_name

_SPARK = Spark()
_CLOSE = {TokenType.L_PAREN: TokenType.R_PAREN, TokenType.L_BRACKET: TokenType.R_BRACKET,
          TokenType.L_BRACE: TokenType.R_BRACE}
_CLAUSES = {TokenType.WHERE: "WHERE", TokenType.GROUP_BY: "GROUP BY", TokenType.HAVING: "HAVING",
            TokenType.ORDER_BY: "ORDER BY", TokenType.LIMIT: "LIMIT"}
#: Select arguments a window query takes (sqlglot's names); any other is refused.
_TAKEN = {"expressions", "from_", "where", "group", "having", "order", "limit"}
_DECOMPOSABLE = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
#: Columns wid adds to a result (replay's ``emit_row``, the extent's bounds): no alias may take them.
RESERVED = (WID, "window_start", "window_end", "emit_row")
#: Spark's LIMIT is an int.
_MAX_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class SelectItem:
    """``expr [AS alias]``; the output name is the alias, else the column's name or the
    expression's text. ``call`` is ``(fn, argument)`` when ``expr`` is one decomposable aggregate
    (count, sum, avg, min or max of one argument, no DISTINCT; argument None for ``count(*)``).

    >>> q = WindowQuery.parse("SELECT avg(v) AS mean, count(*), count(DISTINCT v), max(v) - min(v) span "
    ...                       "FROM readings [RANGE 4 SLIDE 2 WATTR ts]")
    >>> [(item.alias, item.call) for item in q.select]
    [('mean', ('avg', 'v')), ('count(*)', ('count', None)), ('count(DISTINCT v)', None), ('span', None)]
    """

    expr: str
    alias: str
    call: tuple[str, str | None] | None = None


@dataclass(frozen=True)
class WindowQuery:
    """The parts of a window query, as the user's text.

    >>> q = WindowQuery.parse("SELECT k, sum(v) AS s FROM readings [RANGE 4 SLIDE 2 WATTR ts] WHERE v > 1 "
    ...                       "GROUP BY k ORDER BY wid LIMIT 10")
    >>> q.source, q.window, q.where, q.group_by, q.order_by, q.limit
    ('readings', 'RANGE 4 SLIDE 2 WATTR ts', 'v > 1', ['k'], ['wid'], 10)
    >>> WindowQuery.parse("SELECT k, sum(v) AS s FROM readings [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k LIMIT 2.5")
    Traceback (most recent call last):
    wid.errors.WidError: LIMIT needs a whole number, got '2.5'
    """

    select: list[SelectItem]
    source: str
    window: str
    where: str | None = None
    group_by: list[str] = field(default_factory=list)
    having: str | None = None
    order_by: list[str] = field(default_factory=list)
    limit: int | None = None
    #: A query written in another engine's syntax (:mod:`wid.compiler.syntax`): these parts are its
    #: translation, and the result takes that engine's shape; None for wid's own syntax.
    shape: Shape | None = None

    @staticmethod
    def parse(text: str) -> WindowQuery:
        """The parts of ``text`` (in wid's syntax, or another a front end of :mod:`wid.compiler.syntax`
        reads); raises :class:`WidError` naming what is malformed.

        >>> q = WindowQuery.parse("SELECT k, count(*) AS n FROM readings GROUP BY window(ts, '4 seconds'), k")
        >>> q.window, q.group_by, q.shape.names
        ('RANGE 4 SECONDS SLIDE 4 SECONDS WATTR `ts`', ['`k`'], ('k', 'n'))
        """
        parts = _Text(text)
        if parts.window() is None and parts.at and parts.at[0].token_type is TokenType.SELECT:
            translation = translate(text)
            if translation is not None:
                return replace(_Text(translation.text).query(), shape=translation.shape)
        return parts.query()


def window_span(text: str) -> tuple[int, int] | None:
    """Offsets of the ``[`` and ``]`` around the window clause of ``text`` (None: no top-level
    ``FROM name [``); raises :class:`WidError` when quotes or parentheses do not balance.

    >>> window_span("SELECT max(v) FROM s [RANGE 4 WATTR ts]"), window_span("SELECT * FROM s -- [ROWS 2]")
    ((21, 38), None)
    """
    tokens = _Text(text)
    found = tokens.window()
    return None if found is None else (tokens.at[found[1]].start, tokens.at[found[2]].start)


class _Text:
    """``text`` as Spark SQL tokens, each with its depth in parentheses and brackets."""

    def __init__(self, text: str):
        self.text = text
        try:
            self.at: list[Token] = _SPARK.tokenize(text)
        except TokenError:
            raise WidError(f"unbalanced quote or comment in query: {text}") from None
        self.depth: list[int] = []
        opened: list[TokenType] = []
        for token in self.at:
            if token.token_type in _CLOSE.values():
                if not opened or _CLOSE[opened.pop()] != token.token_type:
                    raise WidError(f"unbalanced {token.text!r} in query: {text}")
            self.depth.append(len(opened))
            if token.token_type in _CLOSE:
                opened.append(token.token_type)
        if opened:
            raise WidError(f"unbalanced parenthesis or bracket in query: {text}")

    def slice(self, first: int, last: int) -> str:
        """The text of tokens ``first..last``, a comment between them read as one space."""
        if first > last:
            return ""
        parts = [self.text[self.at[first].start: self.at[first].end + 1]]
        for before, token in zip(self.at[first:last], self.at[first + 1: last + 1]):
            gap = self.text[before.end + 1: token.start]
            parts += [gap if gap.isspace() or not gap else " ", self.text[token.start: token.end + 1]]
        return "".join(parts)

    def split(self, first: int, last: int, what: str) -> list[tuple[int, int]]:
        """Token ranges of the comma-separated items in ``first..last`` (commas at the top level)."""
        commas = [i for i in range(first, last + 1)
                  if not self.depth[i] and self.at[i].token_type is TokenType.COMMA]
        ranges = list(zip([first, *[c + 1 for c in commas]], [*[c - 1 for c in commas], last]))
        if any(a > b for a, b in ranges):
            raise WidError(f"empty item in {what}: {self.slice(first, last)!r}")
        return ranges

    def window(self) -> tuple[int, int, int] | None:
        """Token indices of the top-level ``FROM`` followed by a (dotted) name and ``[``, that ``[``
        and its ``]``."""
        for i, token in enumerate(self.at):
            if token.token_type is not TokenType.FROM or self.depth[i]:
                continue
            j = i + 1
            while j < len(self.at) and self._name(j):
                j += 1
            if i + 1 < j < len(self.at) and self.at[j].token_type is TokenType.L_BRACKET:
                close = next(k for k in range(j + 1, len(self.at)) if not self.depth[k])
                return i, j, close
        return None

    def _name(self, i: int) -> bool:
        """Token ``i`` is part of a (dotted, maybe backquoted) name: a word, a keyword, ``.``."""
        kind = self.at[i].token_type
        word = kind is not TokenType.STRING and self.at[i].text.isidentifier()
        return word or kind in (TokenType.IDENTIFIER, TokenType.DOT)

    def query(self) -> WindowQuery:
        found = self.window()
        if found is None or self.at[0].token_type is not TokenType.SELECT:
            raise WidError("expected SELECT <items> FROM <view> [<window clause>] ...; got: "
                           + " ".join(self.text.split()))
        from_, open_, close = found
        end = len(self.at) - 1
        while end > close and self.at[end].token_type is TokenType.SEMICOLON:
            end -= 1  # trailing semicolons end the statement
        marks = [i for i in range(close + 1, end + 1) if not self.depth[i] and self.at[i].token_type in _CLAUSES]
        clauses = self._clauses(close, end, marks)
        select = self._parse(self.at[:open_] + self.at[close + 1: end + 1])
        if isinstance(select.expressions[0], exp.Star):
            raise WidError("SELECT * is not a window aggregate: name the keys and aggregates")
        extra = sorted(k for k, v in select.args.items() if v and k not in _TAKEN)
        if extra:
            raise WidError(f"a window query takes no {extra[0].rstrip('_').upper()}: {self.text}")
        ranges = self.split(1, from_ - 1, "SELECT")
        if len(ranges) != len(select.expressions):
            raise WidError(f"cannot split the select list: {self.slice(1, from_ - 1)}")
        items = [self._item(node, *span) for node, span in zip(select.expressions, ranges)]
        _check_names(items, select.expressions)
        pieces = {name: self.split(*clauses[name], name) for name in ("GROUP BY", "ORDER BY") if name in clauses}
        return WindowQuery(
            select=items,
            source=self.slice(from_ + 1, open_ - 1),
            window=self.slice(open_ + 1, close - 1),
            where=self.slice(*clauses["WHERE"]) if "WHERE" in clauses else None,
            group_by=[self.slice(a, b) for a, b in pieces.get("GROUP BY", [])],
            having=self.slice(*clauses["HAVING"]) if "HAVING" in clauses else None,
            order_by=[self.slice(a, b) for a, b in pieces.get("ORDER BY", [])],
            limit=_limit(select.args["limit"], self.slice(*clauses["LIMIT"])) if "LIMIT" in clauses else None,
        )

    def _clauses(self, close: int, end: int, marks: list[int]) -> dict[str, tuple[int, int]]:
        """Clause name -> the token range of its body, in the order SQL writes them."""
        if close < end and (not marks or marks[0] != close + 1):
            raise WidError("unexpected text after the window clause: " + self.slice(close + 1, end))
        names = [_CLAUSES[self.at[i].token_type] for i in marks]
        for name in names:
            if names.count(name) > 1:
                raise WidError(f"{name} given twice in query")
        if names != [n for n in _CLAUSES.values() if n in names]:
            raise WidError("clauses must come in the order " + ", ".join(_CLAUSES.values()))
        return {name: (i + 1, j - 1) for name, i, j in zip(names, marks, [*marks[1:], end + 1])}

    def _parse(self, tokens: list[Token]) -> exp.Select:
        """The statement of ``tokens`` (this text without the window clause), parsed by sqlglot."""
        try:
            statements = _SPARK.parser().parse(tokens, self.text)
        except ParseError as error:
            where = error.errors[0] if error.errors else {}
            near = f" at line {where['line']}, column {where['col']} near {where['highlight']!r}" if where else ""
            reason = where.get("description") or str(error).splitlines()[0]
            raise WidError(f"cannot parse the query ({reason}){near}: {' '.join(self.text.split())}") from None
        if len(statements) != 1:
            raise WidError(f"a window query is one statement, text follows its ';': {self.text}")
        if not isinstance(statements[0], exp.Select):
            raise WidError(f"a window query is one SELECT: {self.text}")
        return statements[0]

    def _item(self, node: exp.Expression, first: int, last: int) -> SelectItem:
        """The select item of tokens ``first..last``, which sqlglot parsed as ``node``."""
        if isinstance(node, exp.Alias):
            end = last - 1 - (self.at[last - 1].token_type is TokenType.ALIAS)
            node, name = node.this, node.alias
        else:
            end = last
            name = node.name if isinstance(node, exp.Column) else " ".join(self.slice(first, last).split())
        text = self.slice(first, end)
        for inner in node.find_all(exp.AggFunc):
            outer = inner.find_ancestor(exp.AggFunc, exp.Window)
            if isinstance(outer, exp.AggFunc):
                raise WidError(f"nested aggregate in select item {text!r}: a window query computes each "
                               f"aggregate over the tuples of an extent, not over another aggregate")
        return SelectItem(text, name, self._call(node, first, end))

    def _call(self, node: exp.Expression, first: int, last: int) -> tuple[str, str | None] | None:
        """``(fn, argument)`` when ``node`` (tokens ``first..last``) is one decomposable aggregate."""
        fn = _DECOMPOSABLE.get(type(node))
        if fn is None or node.this is None or node.expressions or isinstance(node.this, exp.Distinct):
            return None
        if self.at[first + 1].token_type is not TokenType.L_PAREN or self.at[last].token_type is not TokenType.R_PAREN:
            return None
        if isinstance(node.this, exp.Star):
            return (fn, None) if fn == "count" else None
        return fn, self.slice(first + 2, last - 1)


def _check_names(items: list[SelectItem], nodes: list[exp.Expression]) -> None:
    """Output names are distinct (as Spark compares them, ignoring case), and none is a column wid
    adds, except ``wid`` itself selected under its own name."""
    seen: set[str] = set()
    for item, node in zip(items, nodes):
        name = item.alias.lower()
        if name in seen:
            raise WidError(f"output name {item.alias!r} given twice in SELECT: give each item its own alias")
        seen.add(name)
        column = node.unalias()
        selects_wid = isinstance(column, exp.Column) and not column.table and column.name.lower() == WID
        if name in RESERVED and not (name == WID and selects_wid):
            raise WidError(f"output name {item.alias!r} is a column wid adds ({', '.join(RESERVED)}): "
                           "choose another alias")


def _limit(node: exp.Limit, text: str) -> int:
    """The row count of ``LIMIT n``: a whole number Spark takes (0 <= n < 2^31)."""
    value = node.expression
    if not (isinstance(value, exp.Literal) and value.is_int and text.isdigit()):
        raise WidError(f"LIMIT needs a whole number, got {text!r}")
    if int(text) > _MAX_LIMIT:
        raise WidError(f"LIMIT must be at most {_MAX_LIMIT} (Spark's limit is an int), got {text}")
    return int(text)


def normal_name(expr: str) -> str:
    """``expr`` compared as Spark compares names: a single (back-quoted) identifier unquoted, any other
    expression without the blanks outside its back quotes and without the back quotes around
    plain identifiers; in lower case.

    >>> [normal_name(e) for e in ["Seg_Id", "`seg id`", "`a``b`", "a + `b c`", "`K` + 1", "`s`.`f`"]]
    ['seg_id', 'seg id', 'a`b', 'a+`b c`', 'k+1', 's.f']
    """
    name = column_name(expr.strip())
    if name != expr.strip():
        return name.lower()

    def part(text: str) -> str:
        if not text.startswith("`"):
            return re.sub(r"\s+", "", text)
        return text[1:-1] if re.fullmatch(r"`[A-Za-z_]\w*`", text) else text

    return "".join(map(part, re.split(r"(`(?:[^`]|``)*`)", expr))).lower()


def sort_item(item: str) -> tuple[str, str]:
    """An ORDER BY item as ``(expression, "ASC" | "DESC")``.

    >>> sort_item("max(v) desc"), sort_item("k")
    (('max(v)', 'DESC'), ('k', 'ASC'))
    """
    match = re.fullmatch(r"(.*?)\s+(ASC|DESC)", item.strip(), re.IGNORECASE | re.DOTALL)
    return (match.group(1), match.group(2).upper()) if match else (item, "ASC")
