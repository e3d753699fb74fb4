"""Spark's window syntax as a front end: ``GROUP BY window(ts, duration[, slide[, startTime]])``
or ``GROUP BY session_window(ts, gap)`` becomes the bracket clause on the same window kinds, and
the result takes Spark's shape (:mod:`wid.compiler.syntax.shape`): the ``window`` or
``session_window`` struct column, ``window.start``/``window.end``, Spark's names and types.

Spark's windows start at ``startTime + k*slide`` and last ``duration``, so they end at
``k*slide + startTime + duration``: the sliding window with ``OFFSET (startTime + duration) mod
slide`` (docs/semantics.md, "Alignment"). A session's gap is a literal, or an expression Spark
casts to an interval and adds to the time column; wid evaluates that same sum per tuple.
"""

from __future__ import annotations

from sqlglot import exp

from wid.compiler.syntax.intervals import literal_micros, micros, seconds_text
from wid.compiler.syntax.shape import Shape, Translation
from wid.compiler.syntax.statement import Outputs, aggregates, parse, source_span, sql, tokens
from wid.errors import WidError

#: Spark's window functions -> the columns of wid's result holding the struct's start and end.
FUNCTIONS = {"window": ("window_start", "window_end"), "session_window": ("session_start", "session_end")}
#: The clauses of a SELECT a translated query may have (sqlglot's names).
_TAKEN = {"expressions", "from_", "where", "group", "having", "order", "limit"}


def uses(text: str) -> bool:
    """``text`` calls Spark's ``window(`` or ``session_window(`` (outside strings and comments).

    >>> uses("SELECT count(*) FROM t GROUP BY window(ts, '1 minute')"), uses("SELECT 'window(' FROM t")
    (True, False)
    """
    found = tokens(text) or []
    return any(a.text.lower() in FUNCTIONS and b.token_type.name == "L_PAREN" for a, b in zip(found, found[1:]))


def _duration(node: exp.Expression, what: str) -> int:
    """A duration argument (an interval string or literal) in microseconds."""
    if isinstance(node, exp.Literal) and node.is_string:
        return micros(node.this)
    if isinstance(node, exp.Interval):
        unit = node.unit.sql(dialect="spark") if node.unit is not None else None
        return literal_micros(node.this.name, unit, sql(node))
    raise WidError(f"{what} must be a literal duration such as '10 minutes' (wid's windows are fixed when the "
                   f"query is compiled), got {sql(node)}")


def _function(node: exp.Expression) -> str | None:
    name = node.name.lower() if isinstance(node, exp.Anonymous) else None
    return name if name in FUNCTIONS else None


def _clause(call: exp.Anonymous) -> str:
    """The bracket clause of a ``window(...)`` or ``session_window(...)`` call.

    >>> _clause(parse("SELECT window(ts, '10 minutes', '5 minutes', '2 minutes') FROM t", "x").expressions[0])
    'RANGE 600 SECONDS SLIDE 300 SECONDS OFFSET 120 SECONDS WATTR `ts`'
    """
    name, args = call.name.lower(), call.expressions
    if not args or not isinstance(args[0], exp.Column):
        raise WidError(f"{name}() needs a column of the view as its time column in wid (compute other "
                       f"expressions in a view first), got {sql(args[0]) if args else 'nothing'}")
    wattr = sql(args[0])
    if name == "session_window":
        if len(args) != 2:
            raise WidError(f"session_window takes a time column and a gap, got {len(args)} arguments")
        gap = args[1]
        if isinstance(gap, (exp.Literal, exp.Interval)):
            return f"SESSION {seconds_text(_duration(gap, 'the session gap'))} SECONDS WATTR {wattr}"
        per_tuple = (f"CAST(unix_micros({wattr} + CAST(({sql(gap)}) AS INTERVAL)) - unix_micros({wattr}) "
                     f"AS DECIMAL(20, 0)) * 0.000001")
        return f"SESSION {per_tuple} WATTR {wattr}"
    if not 2 <= len(args) <= 4:
        raise WidError(f"window takes a time column and 1 to 3 durations, got {len(args) - 1}")
    r = _duration(args[1], "the window duration")
    s = _duration(args[2], "the slide duration") if len(args) > 2 else r
    start = _duration(args[3], "the start time") if len(args) > 3 else 0
    if r <= 0 or s <= 0:  # Spark's own checks, in its words
        raise WidError(f"the window duration ({seconds_text(r)} s) and slide duration ({seconds_text(s)} s) must be "
                       "greater than 0")
    if s > r:
        raise WidError(f"the slide duration ({seconds_text(s)} s) must be less than or equal to the window duration "
                       f"({seconds_text(r)} s), as Spark requires")
    if abs(start) >= s:
        raise WidError(f"the absolute value of the start time ({seconds_text(start)} s) must be less than the slide "
                       f"duration ({seconds_text(s)} s), as Spark requires")
    offset = (start + r) % s
    shifted = f" OFFSET {seconds_text(offset)} SECONDS" if offset else ""
    return f"RANGE {seconds_text(r)} SECONDS SLIDE {seconds_text(s)} SECONDS{shifted} WATTR {wattr}"


def _grouping(select: exp.Select) -> list[exp.Expression]:
    """The GROUP BY items, an ordinal or a select alias read as the select item it names."""
    items = [e.unalias() for e in select.expressions]
    aliases = {e.alias.lower(): e.unalias() for e in select.expressions if isinstance(e, exp.Alias)}
    out = []
    for g in select.args["group"].expressions:
        if isinstance(g, exp.Literal) and g.is_int and 1 <= int(g.this) <= len(items):
            g = items[int(g.this) - 1]
        elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases and _function(aliases[g.name.lower()]):
            g = aliases[g.name.lower()]
        out.append(g)
    return out


def translate(text: str) -> Translation | None:
    """``text`` in wid's own syntax and Spark's result shape; None when it calls neither
    ``window`` nor ``session_window``.

    >>> t = translate("SELECT window.start AS s, k, count(*) AS n FROM t WHERE v > 0 "
    ...               "GROUP BY window(ts, '10 minutes', '5 minutes'), k HAVING n > 1 ORDER BY s LIMIT 5")
    >>> print(t.text)
    SELECT `k` AS `_wid_key0`, COUNT(*) AS `_wid_agg0` FROM t [RANGE 600 SECONDS SLIDE 300 SECONDS WATTR `ts`] WHERE `v` > 0 GROUP BY `k`
    >>> t.shape.items, t.shape.having, t.shape.order_by, t.shape.limit
    (('`window`.`start`', '`_wid_key0`', '`_wid_agg0`'), '`_wid_o2` > 1', ('`_wid_o0` ASC NULLS FIRST',), 5)
    """
    if not uses(text):
        return None
    select = parse(text, "Spark's window()")
    extra = sorted(k.rstrip("_").upper() for k, v in select.args.items() if v and k not in _TAKEN)
    if extra:
        raise WidError(f"a window query takes no {extra[0]}: " + " ".join(text.split()))
    source = select.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table) or select.args.get("joins"):
        raise WidError("a query with Spark's window() reads one view or table in FROM (no join or subquery): "
                       + " ".join(text.split()))
    if select.args.get("group") is None:
        raise WidError("wid runs window() and session_window() as the GROUP BY of an aggregate: "
                       "a window over a select without GROUP BY is not a window aggregate")
    grouping = _grouping(select)
    calls = [g for g in grouping if _function(g)]
    if len(calls) != 1:
        raise WidError(f"GROUP BY holds {len(calls)} window() or session_window() calls; wid needs exactly one")
    call = calls[0]
    for node in select.find_all(exp.Anonymous):
        if _function(node) and node != call:
            raise WidError(f"{node.name}() appears outside GROUP BY ({sql(node)}): wid serves it there only")
    name = next((e.alias for e in select.expressions if isinstance(e, exp.Alias) and e.unalias() == call),
                call.name.lower())
    keys = [sql(g) for g in grouping if g is not call]
    found: list[str] = []
    for node in [*select.expressions, *[select.args[k] for k in ("having", "order") if select.args.get(k)]]:
        found += [sql(a) for a in aggregates(node) if sql(a) not in found]
    columns = [f"{k} AS `_wid_key{i}`" for i, k in enumerate(keys)]
    columns += [f"{a} AS `_wid_agg{j}`" for j, a in enumerate(found or ["COUNT(*)"])]
    wid_text = f"SELECT {', '.join(columns)} FROM {source.this.sql(dialect='spark')} [{_clause(call)}]"
    if select.args.get("where"):
        wid_text += f" WHERE {sql(select.args['where'].this)}"
    if keys:
        wid_text += f" GROUP BY {', '.join(keys)}"

    def replaced(node: exp.Expression) -> exp.Expression:
        text_ = sql(node)
        if isinstance(node, exp.AggFunc) and text_ in found:
            return exp.column(f"_wid_agg{found.index(text_)}", quoted=True)
        if text_ in keys:
            return exp.column(f"_wid_key{keys.index(text_)}", quoted=True)
        if node == call:
            return exp.column(name, quoted=True)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "window_time" and len(node.expressions) == 1:
            inner = node.expressions[0].transform(replaced)
            return exp.Sub(this=exp.Dot(this=inner, expression=exp.to_identifier("end", quoted=True)),
                           expression=exp.Interval(this=exp.Literal.string("1"), unit=exp.var("MICROSECOND")))
        return node

    outputs = Outputs.of(select, replaced)
    timed = any(n.name.lower() == "window_time" for n in select.find_all(exp.Anonymous))  # Spark refuses it here
    analysed = None if timed else (text, *source_span(text))
    shape = Shape((name, *FUNCTIONS[call.name.lower()]), outputs.items, outputs.names, having=outputs.having,
                  order_by=outputs.order_by, limit=outputs.limit, analysis=analysed)
    return Translation(wid_text, shape)
