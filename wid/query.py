"""The query front end: ``SELECT ... FROM view [window] [WHERE] [GROUP BY] [HAVING] [ORDER BY] [LIMIT]``.

The window clause in brackets is parsed here (:mod:`wid.spec.clause`); every expression
outside it is handed to Spark SQL. ``WHERE`` filters tuples inside their extents (a
``ROWS`` window counts positions before it); ``HAVING`` and ``ORDER BY`` refer to the
output columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.aggregate.fca import aggregate as bins_aggregate
from wid.bucket import fca
from wid.aggregate.range import WID, Aggregate, range_aggregate
from wid.bucket.fcf import bucket
from wid.spec.clause import parse_window
from wid.errors import WidError
from wid.flink import Discretization, flink_bucket
from wid.bucket.spl import operational_bucket
from wid.spec.spl import SplWindow
from wid.spec.windows import SlideByTuple, WindowSpec

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CLAUSES = ("WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT")
_DECOMPOSABLE_CALL = re.compile(r"(count|sum|avg|min|max)\s*\((.*)\)", re.IGNORECASE | re.DOTALL)


def _mask(text: str) -> str:
    """``text`` with quoted strings and parenthesised parts blanked, for finding top-level syntax."""
    out, depth, quote = [], 0, ""
    for ch in text:
        if quote:
            out.append(" ")
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
            out.append(" ")
        elif ch == "(":
            depth += 1
            out.append("(" if depth == 1 else " ")
        elif ch == ")":
            depth -= 1
            out.append(")" if depth == 0 else " ")
            if depth < 0:
                raise WidError(f"unbalanced ')' in query: {text}")
        else:
            out.append(" " if depth else ch)
    if depth or quote:
        raise WidError(f"unbalanced parenthesis or quote in query: {text}")
    return "".join(out)


def _split_top(text: str, sep: str = ",") -> list[str]:
    masked, parts, start = _mask(text), [], 0
    for i, ch in enumerate(masked):
        if ch == sep:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _normal(expr: str) -> str:
    return re.sub(r"\s+", "", expr.replace("`", "")).lower()


@dataclass(frozen=True)
class SelectItem:
    """``expr [AS alias]``; the output name is the alias, else the expression text."""

    expr: str
    alias: str

    @staticmethod
    def parse(text: str) -> SelectItem:
        masked = _mask(text)
        match = re.fullmatch(r"(.*?\S)\s+(?:AS\s+)?([A-Za-z_][A-Za-z0-9_]*)", masked, re.IGNORECASE | re.DOTALL)
        if match and (re.search(r"\bAS\s+\w+$", masked, re.IGNORECASE) or match.group(1).endswith(")")
                      or _IDENT.fullmatch(match.group(1))):
            return SelectItem(text[: match.end(1)].strip(), match.group(2))
        return SelectItem(text.strip(), re.sub(r"\s+", " ", text.strip()))


@dataclass(frozen=True)
class WindowQuery:
    """The parts of a window query, as text."""

    select: list[SelectItem]
    source: str
    window: str
    where: str | None = None
    group_by: list[str] = field(default_factory=list)
    having: str | None = None
    order_by: list[str] = field(default_factory=list)
    limit: int | None = None

    @staticmethod
    def parse(text: str) -> WindowQuery:
        masked = _mask(text)
        head = re.match(r"\s*SELECT\s+(.*?)\s+FROM\s+([A-Za-z_][\w.]*)\s*\[([^\]]*)\]", masked, re.IGNORECASE | re.DOTALL)
        if head is None:
            raise WidError("expected SELECT <items> FROM <view> [<window clause>] ...; got: " + " ".join(text.split()))
        rest_start, found = head.end(), {}
        marks = [(m.start(), m.end(), name) for name in _CLAUSES
                 for m in re.finditer(r"\b" + name.replace(" ", r"\s+") + r"\b", masked[rest_start:], re.IGNORECASE)]
        marks.sort()
        if masked[rest_start: rest_start + (marks[0][0] if marks else len(masked))].strip():
            raise WidError("unexpected text after the window clause: " + text[rest_start:].strip())
        for i, (start, end, name) in enumerate(marks):
            if name in found:
                raise WidError(f"{name} given twice in query")
            stop = marks[i + 1][0] if i + 1 < len(marks) else len(masked) - rest_start
            found[name] = text[rest_start + end: rest_start + stop].strip()
        if [n for n in _CLAUSES if n in found] != [n for _, _, n in marks]:
            raise WidError("clauses must come in the order " + ", ".join(_CLAUSES))
        limit = found.get("LIMIT")
        if limit is not None and not limit.isdigit():
            raise WidError(f"LIMIT needs a whole number, got {limit!r}")
        select_text = text[head.start(1): head.end(1)]
        if select_text.strip() == "*":
            raise WidError("SELECT * is not a window aggregate: name the keys and aggregates")
        return WindowQuery(
            select=[SelectItem.parse(s) for s in _split_top(select_text)],
            source=head.group(2),
            window=text[head.start(3): head.end(3)].strip(),
            where=found.get("WHERE"),
            group_by=_split_top(found["GROUP BY"]) if "GROUP BY" in found else [],
            having=found.get("HAVING"),
            order_by=_split_top(found["ORDER BY"]) if "ORDER BY" in found else [],
            limit=int(limit) if limit is not None else None,
        )


@dataclass
class CompiledQuery:
    """A window query as Bucket output and the window-agnostic aggregation over it."""

    query: WindowQuery
    spec: WindowSpec
    tagged: DataFrame  # bucketed tuples with key and value columns
    keys: list[str]  # grouping columns of ``tagged`` (including the partition attributes)
    aggregates: list[Aggregate]
    output: list[tuple[str, str]]  # (column of the aggregate's result, output name), in SELECT order

    def finish(self, aggregated: DataFrame, *extra: str) -> DataFrame:
        """The user's columns from the aggregate's result (plus ``extra`` columns), with HAVING,
        ORDER BY and LIMIT applied."""
        out = aggregated.select(*[F.col(c).alias(name) for c, name in self.output], *extra)
        if self.query.having:
            out = out.where(F.expr(self.query.having))
        if self.query.order_by:
            out = out.orderBy(*[_sort_key(item) for item in self.query.order_by])
        if self.query.limit is not None:
            out = out.limit(self.query.limit)
        return out

    def result(self) -> DataFrame:
        """Exact results: every extent closed, nothing dropped."""
        if isinstance(self.spec, SlideByTuple):
            return self.finish(bins_aggregate(self.tagged, self.spec, self.keys, self.aggregates))
        return self.finish(range_aggregate(self.tagged, self.keys, self.aggregates))


def _sort_key(item: str):
    match = re.fullmatch(r"(.*?)\s+(ASC|DESC)", item.strip(), re.IGNORECASE | re.DOTALL)
    expr, direction = (match.group(1), match.group(2).upper()) if match else (item, "ASC")
    return F.expr(expr).desc() if direction == "DESC" else F.expr(expr).asc()


def _aggregate_call(expr: str) -> tuple[str, str | None] | None:
    """``(fn, argument)`` when ``expr`` is one decomposable aggregate call, else None."""
    match = _DECOMPOSABLE_CALL.fullmatch(expr.strip())
    if match is None or _mask(expr).count("(") != 1:
        return None
    argument = match.group(2).strip()
    if re.match(r"DISTINCT\b", argument, re.IGNORECASE) or "," in _mask(argument):
        return None
    if argument == "*":
        return (match.group(1).lower(), None) if match.group(1).lower() == "count" else None
    return match.group(1).lower(), argument


def compile_query(spark: SparkSession, text: str, spec: WindowSpec | None = None) -> CompiledQuery:
    """Parse ``text`` and build its Bucket stage; raises :class:`WidError` on bad input.
    ``spec`` (e.g. a :class:`wid.flink.Discretization`) replaces the window clause's own."""
    parsed = WindowQuery.parse(text)
    spec = parse_window(parsed.window) if spec is None else spec
    try:
        source = spark.table(parsed.source)
        source.schema  # noqa: B018 - resolves the view now, on classic and Connect sessions
    except AnalysisException:
        raise WidError(f"unknown view {parsed.source!r}: register the stream as a temp view first") from None
    if WID in [c.lower() for c in source.columns]:
        raise WidError(f"view {parsed.source!r} already has a column named {WID!r}")
    forward = isinstance(spec, SlideByTuple)  # FCA: window-ids come from the whole stream
    if isinstance(spec, SplWindow):  # operational windows: ranges of trigger numbers
        tagged = operational_bucket(source, spec)
    elif isinstance(spec, Discretization):
        tagged = flink_bucket(source, spec)
    else:
        tagged = fca.bucket(source, spec) if forward else bucket(source, spec)
    if parsed.where:
        where = F.expr(parsed.where)
        tagged = tagged.withColumn(fca.WID_IN, where) if forward else tagged.where(where)

    keys: dict[str, str] = {}  # normalised expression -> key column
    columns = {c.lower(): c for c in source.columns}
    aliases = {_normal(item.alias): item for item in parsed.select}
    for i, expr in enumerate([*spec.partition, *parsed.group_by]):
        expr = aliases[_normal(expr)].expr if _normal(expr) in aliases and _normal(expr) not in columns else expr
        if _normal(expr) in keys:
            continue
        name = columns.get(_normal(expr), f"_wid_k{i}")
        if name not in source.columns:
            tagged = tagged.withColumn(name, F.expr(expr))
        keys[_normal(expr)] = name

    aggregates: list[Aggregate] = []
    output: list[tuple[str, str]] = []
    for i, item in enumerate(parsed.select):
        if _normal(item.expr) == WID:
            output.append((WID, item.alias if item.alias.lower() != WID else WID))
        elif _normal(item.expr) in keys:
            output.append((keys[_normal(item.expr)], item.alias))
        elif (call := _aggregate_call(item.expr)) is not None:
            fn, argument = call
            value = None
            if argument is not None:
                value = f"_wid_v{i}"
                tagged = tagged.withColumn(value, F.expr(argument))
            aggregates.append(Aggregate(f"_wid_a{i}", fn, value))
            output.append((f"_wid_a{i}", item.alias))
        elif "(" in item.expr:
            aggregates.append(Aggregate(f"_wid_a{i}", "sql", item.expr))
            output.append((f"_wid_a{i}", item.alias))
        else:
            raise WidError(f"select item {item.expr!r} is neither grouped (GROUP BY) nor an aggregate")
    if WID not in [c for c, _ in output]:
        output.insert(0, (WID, WID))
    if not aggregates:
        raise WidError("a window query needs at least one aggregate in SELECT")
    return CompiledQuery(parsed, spec, tagged, list(keys.values()), aggregates, output)


def resolved(build, *args) -> DataFrame:
    """``build(*args)`` with its plan analysed now, Spark's analysis errors as :class:`WidError`."""
    try:
        out = build(*args)
        out.schema  # noqa: B018 - forces analysis on classic and Connect sessions alike
    except AnalysisException as error:
        raise WidError(f"cannot resolve the query: {str(error).splitlines()[0]}") from None
    return out


def query(spark: SparkSession, text: str) -> DataFrame:
    """The exact result of a window query: a ``wid`` column, the selected keys and aggregates."""
    return resolved(lambda: compile_query(spark, text).result())
