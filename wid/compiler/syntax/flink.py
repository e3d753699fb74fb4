"""Flink SQL's window table-valued functions as a front end: ``FROM TABLE(TUMBLE(TABLE t,
DESCRIPTOR(ts), size[, offset]))``, ``HOP(..., slide, size[, offset])``, ``CUMULATE(..., step,
max_size[, offset])`` and ``SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)``, positional or
with Flink's named arguments (``DATA =>``, ``TIMECOL =>``, ``SIZE =>``, ``SLIDE =>``, ``STEP =>``,
``MAX_SIZE =>``, ``OFFSET =>``, ``GAP =>``), aggregated by ``GROUP BY window_start, window_end, ...``.

Each TVF is one of wid's bracket clauses (docs/semantics.md, "Flink's window table-valued
functions"): Flink's windows start at ``k*slide + offset`` and last ``size``, so they end at
``(offset + size) mod slide`` on the slide's grid: ``[RANGE size SLIDE slide OFFSET (offset + size)
mod slide]`` (tumbling: slide = size); ``CUMULATE`` is ``[CUMULATE STEP step SIZE max_size OFFSET
offset]``; ``SESSION`` is ``[SESSION gap]`` grouped by the partition keys. The result has Flink's
``window_start`` and ``window_end`` (and ``window_time``, ``window_end`` minus one microsecond, the
smallest unit of Spark's timestamps, where Flink's ``TIMESTAMP(3)`` takes one millisecond), in the
attribute's type; an unaliased aggregate is named as Spark names it (``count(1)``, ``sum(v)``).

``GROUPING SETS``, ``ROLLUP`` and ``CUBE`` over the keys besides the window's: wid computes the
finest grouping (every key) and the shape rolls those rows up by the sets, per window
(:class:`wid.compiler.syntax.shape.Grouping`): counts and sums add up, minima and maxima take
theirs, an average is its sum over its count.
"""

from __future__ import annotations

from itertools import product

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from wid.compiler.syntax.intervals import literal_micros, seconds_text
from wid.compiler.syntax.shape import Grouping, Shape, Translation
from wid.compiler.syntax.statement import Outputs, aggregates, parse, sql, tokens
from wid.errors import WidError

#: Flink's window TVFs and their parameters, in positional order.
FUNCTIONS = {"tumble": ("data", "timecol", "size", "offset"), "hop": ("data", "timecol", "slide", "size", "offset"),
             "cumulate": ("data", "timecol", "step", "size", "offset"), "session": ("data", "timecol", "gap")}
#: The window columns of a TVF's rows.
WINDOW = ("window_start", "window_end", "window_time")
#: The clauses of a SELECT a translated query may have (sqlglot's names).
_TAKEN = {"expressions", "from_", "where", "group", "having", "order", "limit"}
#: Aggregates a roll-up by grouping sets computes from per-key windows: wid's part, the roll-up.
_ROLLED = {exp.Count: "SUM", exp.Sum: "SUM", exp.Min: "MIN", exp.Max: "MAX"}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _call(found: list[Token]) -> tuple[int, int, int] | None:
    """``(table, open, close)``: indexes of the first ``TABLE`` token opening ``TABLE(name(``, of the
    function's ``(`` and of its matching ``)``; None when there is none."""
    for i in range(len(found) - 3):
        if (found[i].token_type is TokenType.TABLE and found[i + 1].token_type is TokenType.L_PAREN
                and found[i + 3].token_type is TokenType.L_PAREN):
            depth = 0
            for j in range(i + 3, len(found)):
                depth += (found[j].token_type is TokenType.L_PAREN) - (found[j].token_type is TokenType.R_PAREN)
                if depth == 0:
                    return i, i + 3, j
            return None
    return None


def uses(text: str) -> bool:
    """``text`` reads a table-valued function: ``TABLE(name(`` outside strings and comments.

    >>> uses("SELECT count(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) "
    ...      "GROUP BY window_start, window_end"), uses("SELECT 'TABLE(TUMBLE(' FROM t")
    (True, False)
    """
    return _call(tokens(text) or []) is not None


def _arguments(text: str, found: list[Token], first: int, last: int) -> list[tuple[str | None, list[Token]]]:
    """The arguments between tokens ``first`` and ``last``: ``(name or None, tokens)`` each; names
    after ``PARTITION BY`` (without parentheses) stay with their ``TABLE t`` argument."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in found[first: last + 1]:
        depth += (token.token_type is TokenType.L_PAREN) - (token.token_type is TokenType.R_PAREN)
        if token.token_type is TokenType.COMMA and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    merged: list[list[Token]] = []
    for part in parts:
        partitioned = merged and any(t.token_type is TokenType.PARTITION_BY for t in merged[-1])
        if partitioned and len(part) == 1 and part[0].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            merged[-1] += part  # PARTITION BY a, b
        else:
            merged.append(part)
    out = []
    for part in merged:
        if not part:
            raise WidError(f"an empty argument in the window TVF: {_one_line(text)}")
        if len(part) > 2 and part[1].token_type is TokenType.FARROW:
            out.append((part[0].text.lower(), part[2:]))
        else:
            out.append((None, part))
    return out


def _span(text: str, part: list[Token]) -> str:
    return text[part[0].start: part[-1].end + 1]


def _names(text: str, part: list[Token]) -> list[str]:
    """Column names separated by commas, maybe in parentheses, as back-quoted Spark SQL."""
    inner = [t for t in part if t.token_type not in (TokenType.L_PAREN, TokenType.R_PAREN)]
    names = [t for t in inner if t.token_type is not TokenType.COMMA]
    if not names or any(t.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) for t in names):
        raise WidError(f"PARTITION BY takes column names, got {_span(text, part)}")
    return ["`" + t.text.replace("`", "``") + "`" for t in names]


def _data(text: str, part: list[Token], name: str) -> tuple[str, list[str]]:
    """``TABLE t [PARTITION BY k, ...]``: the table's name and the partition keys."""
    if part[0].token_type is not TokenType.TABLE or len(part) < 2:
        raise WidError(f"{name.upper()}'s first argument is TABLE <view>, got {_span(text, part)}")
    cut = next((i for i, t in enumerate(part) if t.token_type is TokenType.PARTITION_BY), len(part))
    keys = _names(text, part[cut + 1:]) if cut < len(part) else []
    return _span(text, part[1:cut]), keys


def _descriptor(text: str, part: list[Token], name: str) -> str:
    """``DESCRIPTOR(ts)``: the time attribute, back-quoted."""
    if (len(part) != 4 or part[0].text.upper() != "DESCRIPTOR" or part[1].token_type is not TokenType.L_PAREN
            or part[2].token_type not in (TokenType.VAR, TokenType.IDENTIFIER)):
        raise WidError(f"{name.upper()} takes its time attribute as DESCRIPTOR(column), got {_span(text, part)}")
    return "`" + part[2].text.replace("`", "``") + "`"


def _duration(text: str, part: list[Token], what: str) -> int:
    """An interval literal (``INTERVAL '10' MINUTES``, ``INTERVAL '0 00:05:00' DAY TO SECOND``) in
    microseconds."""
    if len(part) < 3 or part[0].token_type is not TokenType.INTERVAL or part[1].token_type is not TokenType.STRING:
        raise WidError(f"{what} must be an interval literal such as INTERVAL '10' MINUTE, got {_span(text, part)}")
    return literal_micros(part[1].text, " ".join(t.text for t in part[2:]), _span(text, part))


def _clause(text: str, name: str, args: list[tuple[str | None, list[Token]]]) -> tuple[str, str, list[str]]:
    """The bracket clause of TVF ``name`` over ``args`` (of ``text``), the table it reads and its
    partition keys."""
    parameters = FUNCTIONS[name]
    given: dict[str, list[Token]] = {}
    for i, (key, part) in enumerate(args):
        key = "size" if key == "max_size" and name == "cumulate" else key
        if key is None:
            if given.keys() - set(parameters[:i]):
                raise WidError(f"{name.upper()}: a positional argument after a named one")
            if i >= len(parameters):
                raise WidError(f"{name.upper()} takes at most {len(parameters)} arguments "
                               f"({', '.join(p.upper() for p in parameters)}), got {len(args)}")
            key = parameters[i]
        if key not in parameters:
            raise WidError(f"{name.upper()} has no argument {key.upper()} (its arguments: "
                           f"{', '.join(p.upper() for p in parameters)})")
        if key in given:
            raise WidError(f"{name.upper()}: argument {key.upper()} given twice")
        given[key] = part
    if "timecol" in given:
        _descriptor(text, given["timecol"], name)
    missing = [p for p in parameters if p != "offset" and p not in given]
    if missing:
        what = "DESCRIPTOR(column)" if missing[0] == "timecol" else missing[0].upper()
        raise WidError(f"{name.upper()} misses its {what} argument: "
                       f"{name.upper()}({', '.join(p.upper() for p in parameters)})")
    source, keys = _data(text, given["data"], name)
    if keys and name != "session":
        raise WidError(f"{name.upper()} takes no PARTITION BY (only SESSION does)")
    wattr = _descriptor(text, given["timecol"], name)
    sizes = {p: _duration(text, given[p], f"{name.upper()}'s {p.upper()}") for p in parameters[2:] if p in given}
    for p, us in sizes.items():
        if us <= 0 and p != "offset":
            raise WidError(f"{name.upper()}'s {p.upper()} must be positive, got {seconds_text(us)} s")
    offset = sizes.get("offset", 0)
    if name == "session":
        return f"SESSION {seconds_text(sizes['gap'])} SECONDS WATTR {wattr}", source, keys
    size = sizes["size"]
    grid = {"tumble": size, "hop": sizes.get("slide"), "cumulate": sizes.get("step")}[name]
    if size % grid:
        what = "the slide" if name == "hop" else "the step"
        raise WidError(f"{name.upper()}'s size ({seconds_text(size)} s) must be a whole multiple of {what} "
                       f"({seconds_text(grid)} s), as Flink requires")
    if name == "cumulate":
        shift = offset % size
        shifted = f" OFFSET {seconds_text(shift)} SECONDS" if shift else ""
        return f"CUMULATE STEP {seconds_text(grid)} SECONDS SIZE {seconds_text(size)} SECONDS{shifted} WATTR {wattr}", \
            source, keys
    shift = (offset + size) % grid
    shifted = f" OFFSET {seconds_text(shift)} SECONDS" if shift else ""
    return f"RANGE {seconds_text(size)} SECONDS SLIDE {seconds_text(grid)} SECONDS{shifted} WATTR {wattr}", source, keys


def _window(node: exp.Expression) -> str | None:
    """``window_start``, ``window_end`` or ``window_time`` when ``node`` is that column."""
    if isinstance(node, exp.Column) and node.name.lower() in WINDOW:
        return node.name.lower()
    return None


def _sets(text: str, group: exp.Group) -> tuple[list[exp.Expression], list[list[exp.Expression]] | None]:
    """The keys of ``group`` besides the window's, and its grouping sets over them (None: no
    GROUPING SETS, ROLLUP or CUBE)."""
    extra = [k for k, v in group.args.items() if v and k != "expressions"]
    if extra:
        raise WidError(f"wid reads no GROUP BY {extra[0].upper()} here: {_one_line(text)}")
    plain, choices = [], []
    for g in group.expressions:
        if isinstance(g, exp.Rollup):
            items = list(g.expressions)
            choices.append([items[:n] for n in range(len(items), -1, -1)])
        elif isinstance(g, exp.Cube):
            items = list(g.expressions)
            choices.append([[x for x, bit in zip(items, bits) if bit] for bits in product((1, 0), repeat=len(items))])
        elif isinstance(g, exp.GroupingSets):
            options = []
            for s in g.expressions:
                s = s.this if isinstance(s, exp.Paren) else s
                options.append(list(s.expressions) if isinstance(s, exp.Tuple) else [s])
            choices.append(options)
        elif _window(g) is None:
            plain.append(g)
    for options in choices:
        for s in options:
            for x in s:
                if _window(x) is not None:
                    raise WidError(f"{x.name} is grouped always: GROUPING SETS, ROLLUP and CUBE take the other keys")
    keys: list[exp.Expression] = []
    for x in [*plain, *[x for options in choices for s in options for x in s]]:
        if sql(x) not in map(sql, keys):
            keys.append(x)
    if not choices:
        return keys, None
    sets = [plain + [x for s in combination for x in s] for combination in product(*choices)]
    return keys, sets


def _bits(columns: list[str], single: bool) -> str:
    """Flink's ``GROUPING(c)`` (``single``) or ``GROUPING_ID(c1, ..., cn)`` (a bit per column named,
    the first the highest) in Spark SQL, whose ``grouping_id`` takes every grouping column."""
    if single:
        return f"grouping({columns[0]})"
    n = len(columns)
    return " + ".join(f"CAST(grouping({c}) AS BIGINT) * {2 ** (n - 1 - i)}" for i, c in enumerate(columns))


def translate(text: str) -> Translation | None:
    """``text`` in wid's own syntax and the shape of Flink's result; None when it reads no
    table-valued function.

    >>> t = translate("SELECT window_start, k, COUNT(*) AS n, SUM(v) FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), "
    ...               "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES, INTERVAL '1' MINUTE)) WHERE v > 0 "
    ...               "GROUP BY window_start, window_end, k HAVING n > 1 ORDER BY window_start LIMIT 5")
    >>> print(t.text)
    SELECT `k` AS `_wid_key0`, COUNT(*) AS `_wid_agg0`, SUM(`v`) AS `_wid_agg1` FROM t [RANGE 600 SECONDS SLIDE 300 SECONDS OFFSET 60 SECONDS WATTR `ts`] WHERE `v` > 0 GROUP BY `k`
    >>> t.shape.items, t.shape.having, t.shape.order_by, t.shape.limit
    (('`window_start`', '`_wid_key0`', '`_wid_agg0`', '`_wid_agg1`'), '`_wid_o2` > 1', ('`_wid_o0` ASC NULLS FIRST',), 5)
    >>> translate("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))")
    Traceback (most recent call last):
    wid.errors.WidError: wid runs Flink's window TVFs as window aggregates (GROUP BY window_start, window_end, ...); this query has no GROUP BY (a plain select of the TVF, a window TopN or deduplication is not served)
    """
    found = tokens(text) or []
    call = _call(found)
    if call is None:
        return None
    table, opened, closed = call
    name = found[opened - 1].text.lower()
    if name not in FUNCTIONS:
        raise WidError(f"unknown window table-valued function {found[opened - 1].text.upper()}: Flink's are "
                       "TUMBLE, HOP, CUMULATE and SESSION")
    depth = sum((t.token_type is TokenType.L_PAREN) - (t.token_type is TokenType.R_PAREN) for t in found[:table])
    before = found[table - 1] if table else None
    end = closed + 1
    if end >= len(found) or found[end].token_type is not TokenType.R_PAREN:
        raise WidError(f"TABLE({name.upper()}(...)) holds one call: {_one_line(text)}")
    if depth or before is None or before.token_type is not TokenType.FROM:
        raise WidError(f"wid runs a window TVF as the FROM of the window aggregate itself (a window TopN, join, "
                       f"deduplication or cascade over it is not served): {_one_line(text)}")
    clause, source, partition = _clause(text, name, _arguments(text, found, opened + 1, closed - 1))
    rest = text[: found[table].start] + source + text[found[end].end + 1:]
    select = parse(rest, "Flink's window TVF")
    extra = sorted(k.rstrip("_").upper() for k, v in select.args.items() if v and k not in _TAKEN)
    if extra:
        raise WidError(f"a window query takes no {extra[0]}: {_one_line(text)}")
    if select.args.get("joins"):
        raise WidError(f"wid serves no window join: a window TVF's aggregate reads one table: {_one_line(text)}")
    alias = select.args["from_"].this.alias
    if alias:  # TABLE(...) AS w: w.window_start is window_start
        for column in list(select.find_all(exp.Column)):
            if column.table.lower() == alias.lower():
                column.set("table", None)
    group = select.args.get("group")
    if group is None:
        raise WidError("wid runs Flink's window TVFs as window aggregates (GROUP BY window_start, window_end, ...); "
                       "this query has no GROUP BY (a plain select of the TVF, a window TopN or deduplication "
                       "is not served)")
    windows = {_window(g) for g in group.expressions}
    for needed in ("window_start", "window_end"):
        if needed not in windows:
            raise WidError(f"GROUP BY must hold window_start and window_end, as Flink requires; {needed} is "
                           f"missing: {_one_line(text)}")
    keys, sets = _sets(text, group)
    key_texts = [sql(k) for k in keys]
    if name == "session":
        if sets is not None:
            raise WidError("wid rolls up no SESSION windows by GROUPING SETS, ROLLUP or CUBE: sessions are per "
                           "partition key")
        if sorted(k.lower() for k in key_texts) != sorted(k.lower() for k in partition):
            raise WidError(f"SESSION's GROUP BY keys ({', '.join(key_texts) or 'none'}) must be its PARTITION BY "
                           f"keys ({', '.join(partition) or 'none'}): wid's sessions are per group")
    found_aggs: list[exp.AggFunc] = []
    for node in [*select.expressions, *[select.args[k] for k in ("having", "order") if select.args.get(k)]]:
        found_aggs += [a for a in aggregates(node) if sql(a) not in map(sql, found_aggs)
                       and not isinstance(a, (exp.Grouping, exp.GroupingId))]
    if not found_aggs:
        raise WidError("a window TVF here needs at least one aggregate in SELECT (wid runs Flink's window TVFs "
                       f"as window aggregates): {_one_line(text)}")
    agg_texts = [sql(a) for a in found_aggs]
    columns = [f"{k} AS `_wid_key{i}`" for i, k in enumerate(key_texts)]
    rolled: list[str] = []
    typing: list[str] = []  # Spark SQL expressions whose analysed types the roll-up casts to
    for j, a in enumerate(found_aggs):
        if sets is None:
            columns.append(f"{agg_texts[j]} AS `_wid_agg{j}`")
            continue
        distinct = isinstance(a.this, exp.Distinct)
        if isinstance(a, exp.Avg) and not distinct:
            columns += [f"SUM({sql(a.this)}) AS `_wid_agg{j}`", f"COUNT({sql(a.this)}) AS `_wid_n{j}`"]
            rolled.append(f"CAST(SUM(`_wid_agg{j}`) AS _wid_type{len(typing)}_) / SUM(`_wid_n{j}`) AS `_wid_agg{j}`")
            typing.append(f"SUM({sql(a.this)})")
        elif type(a) in _ROLLED and not distinct:
            columns.append(f"{agg_texts[j]} AS `_wid_agg{j}`")
            if isinstance(a, exp.Sum):
                rolled.append(f"CAST(SUM(`_wid_agg{j}`) AS _wid_type{len(typing)}_) AS `_wid_agg{j}`")
                typing.append(agg_texts[j])
            else:
                rolled.append(f"{_ROLLED[type(a)]}(`_wid_agg{j}`) AS `_wid_agg{j}`")
        else:
            raise WidError(f"with GROUPING SETS, ROLLUP or CUBE wid rolls up COUNT, SUM, MIN, MAX and AVG from "
                           f"each key's windows; {agg_texts[j]} cannot be rolled up so")
    wid_text = f"SELECT {', '.join(columns)} FROM {source} [{clause}]"
    if select.args.get("where"):
        wid_text += f" WHERE {sql(select.args['where'].this)}"
    if key_texts:
        wid_text += f" GROUP BY {', '.join(key_texts)}"

    start, end_column = ("session_start", "session_end") if name == "session" else ("window_start", "window_end")
    markers: list[str] = []  # GROUPING(...) and GROUPING_ID(...) calls, rolled up as _wid_g<i>

    def replaced(node: exp.Expression) -> exp.Expression:
        text_ = sql(node)
        if isinstance(node, exp.AggFunc) and text_ in agg_texts:
            return exp.column(f"_wid_agg{agg_texts.index(text_)}", quoted=True)
        if isinstance(node, (exp.Grouping, exp.GroupingId)):
            if sets is None:
                raise WidError(f"{text_} needs GROUPING SETS, ROLLUP or CUBE in GROUP BY")
            if text_ not in markers:
                markers.append(text_)
            return exp.column(f"_wid_g{markers.index(text_)}", quoted=True)
        if text_ in key_texts:
            return exp.column(f"_wid_key{key_texts.index(text_)}", quoted=True)
        window = _window(node)
        if window == "window_start":
            return exp.column(start, quoted=True)
        if window == "window_end":
            return exp.column(end_column, quoted=True)
        if window == "window_time":
            return exp.Paren(this=exp.Sub(this=exp.column(end_column, quoted=True),
                                          expression=exp.Interval(this=exp.Literal.string("1"),
                                                                  unit=exp.var("MICROSECOND"))))
        return node

    outputs = Outputs.of(select, replaced)
    grouping = None
    if sets is not None:
        group_columns = (start, end_column, *[f"_wid_key{i}" for i in range(len(key_texts))])

        def column_of(x: exp.Expression) -> str:
            return f"_wid_key{key_texts.index(sql(x))}"
        marks = []
        for i, m in enumerate(markers):
            call_ = parse(f"SELECT {m}", "x").expressions[0]
            args = list(call_.expressions) or [call_.this]
            marks.append(f"{_bits([f'`{column_of(x)}`' for x in args], isinstance(call_, exp.Grouping))} AS `_wid_g{i}`")
        grouping = Grouping(group_columns, tuple((start, end_column, *map(column_of, s)) for s in sets),
                            (*rolled, *marks))
    # Spark's analysis of the same aggregate over the table, the window's columns being the attribute
    # (and window_time that minus a microsecond), gives the names and types of the output columns.
    wattr = clause.split(" WATTR ")[1]
    def timed(node: exp.Expression) -> exp.Expression:  # window_time: a function of the grouped window_end
        if _window(node) == "window_time":
            return exp.Paren(this=exp.Sub(this=exp.column("window_end", quoted=True), expression=exp.Interval(
                this=exp.Literal.string("1"), unit=exp.var("MICROSECOND"))))
        if isinstance(node, exp.GroupingId):  # Flink's bits of the columns named; Spark's of every column
            return exp.Paren(this=parse(f"SELECT {_bits([sql(x) for x in node.expressions], False)}", "x")
                             .expressions[0])
        return node

    def spark_name(e: exp.Expression) -> str:  # as Spark names the item
        if isinstance(e, exp.GroupingId):
            inner = ", ".join(x.name if isinstance(x, exp.Column) else x.sql(dialect="spark") for x in e.expressions)
            return f"grouping_id({inner})"
        return e.name if isinstance(e, exp.Column) else e.sql(dialect="spark")
    analysed = [e.transform(timed) if isinstance(e, exp.Alias) or not (_window(e) or e.find(exp.GroupingId))
                else exp.alias_(e.transform(timed), spark_name(e), quoted=True) for e in select.expressions]
    head = (f"SELECT {', '.join(sql(e) for e in analysed)}"
            f"{''.join(f', {t}' for t in typing)} FROM (SELECT *, {wattr} AS `window_start`, {wattr} AS `window_end` "
            "FROM ")
    analysis = f"{head}{source}) GROUP BY {', '.join(sql(g) for g in group.expressions if _window(g) != 'window_time')}"
    shape = Shape(None, outputs.items, outputs.names, having=outputs.having, order_by=outputs.order_by,
                  limit=outputs.limit, analysis=(analysis, len(head), len(head) + len(source)), grouping=grouping)
    return Translation(wid_text, shape)
