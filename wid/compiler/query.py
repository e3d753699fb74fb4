"""The query front end: ``SELECT ... FROM view [window] [WHERE] [GROUP BY] [HAVING] [ORDER BY] [LIMIT]``.

The text is split by :mod:`wid.compiler.text`, the window clause in brackets parsed by
:mod:`wid.windows.clause`; every expression outside it is handed to Spark SQL as written.
``WHERE`` filters tuples inside their extents: before Bucket where the window kind allows
(:attr:`WindowSpec.where_first`: a tuple it drops is never checked), after it where Bucket
reads every tuple (a ``ROWS`` window counts positions before it); ``HAVING`` and ``ORDER BY``
refer to the output columns.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, LongType

from wid.aggregate.partials import Aggregate, numeric_arguments
from wid.bucket.columns import WID, attribute_type, bound_value, decimal_bound, numeric_value
from wid.bucket.kinds import bucket
from wid.compiler import kinds
from wid.compiler.analysis import analysis_errors, unresolved
from wid.errors import WidError
from wid.windows.clause import parse_window
from wid.windows.sqlexpr import Expr, Sql, column, null_like, quote
from wid.windows.base import WindowSpec
from wid.compiler.syntax.shape import Shape
from wid.compiler.text import WindowQuery, normal_name, sort_item

#: Output columns with the bounds of a window's extent, in the window attribute's type.
WINDOW_START, WINDOW_END = "window_start", "window_end"


@dataclass
class CompiledQuery:
    """A window query as Bucket output and the window-agnostic aggregation over it.

    >>> compiled = compile_query(spark, "SELECT k, max(v) AS hi FROM readings [RANGE 4 SLIDE 2 WATTR ts] "
    ...                                 "GROUP BY k HAVING hi > 1")
    >>> [name for _, name in compiled.outputs(F.col)]
    ['wid', 'window_start', 'window_end', 'k', 'hi']
    >>> compiled.result().where("wid = 1").collect()  # window [0, 4): HAVING drops b (hi = 1)
    [Row(wid=1, window_start=0.0, window_end=4.0, k='a', hi=5)]
    """

    query: WindowQuery
    spec: WindowSpec
    tagged: DataFrame  # bucketed tuples with key and value columns
    keys: list[str]  # grouping columns of ``tagged`` (including the partition attributes)
    aggregates: list[Aggregate]
    output: list[tuple[str, str]]  # (column of the aggregate's result, output name), in SELECT order
    #: Columns the query's own expressions add to ``tagged`` (GROUP BY expressions, aggregate
    #: arguments): name -> Spark SQL expression text, in order.
    derived: dict[str, str] = field(default_factory=dict)
    #: The window attribute's type and the factor from clause units to x units, for the
    #: extent bounds (None: the window kind has no extent on its attribute).
    units: tuple[DataType, int] | None = None
    #: The stream the query reads: the view ``FROM`` names, or the DataFrame given for it.
    source: DataFrame | None = None

    def outputs(self, column: Callable[[str], Expr]) -> list[tuple[Expr, str]]:
        """``(expression, output name)`` of each output column, in order: the SELECT items, with
        ``window_start`` and ``window_end`` (the extent's bounds in the attribute's type) right
        after ``wid``; ``column(name)`` refers to a column of the aggregate's result."""
        out = []
        for c, name in self.output:
            out.append((column(c), name))
            if c == WID:
                out += self.bounds(column(WID))
        return out

    def bounds(self, w: Expr) -> list[tuple[Expr, str]]:
        """``(expression, name)`` of ``window_start`` and ``window_end``, the bounds of the extent of
        window ``w`` (an id: a Column or SQL text) in the attribute's type (a landmark's start NULL);
        none when the window kind has no extent on its attribute. Results carry them after ``wid``,
        and so do late rows.

        >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 4 SLIDE 2 WATTR ts]")
        >>> spark.range(1, 3).select(*[e.alias(name) for e, name in compiled.bounds(F.col("id"))]).collect()
        [Row(window_start=0.0, window_end=4.0), Row(window_start=2.0, window_end=6.0)]
        """
        if self.units is None:
            return []
        dtype, factor = self.units
        places = self.spec.places
        if isinstance(dtype, DecimalType):  # (w+1)s may pass a long where s * w does not: whole decimals
            factor *= 10**places             # of 10**-places units, their digits then placed exactly
        start, end = (self.spec.scaled(factor) if factor != 1 else self.spec).extent(
            w.cast(DecimalType(38, 0)) if isinstance(dtype, DecimalType) else w)

        def value(v: Expr) -> Expr:  # the kind's own (WindowSpec.own_bound: calendar periods), else x units
            own = self.spec.own_bound(v, dtype)
            if own is not None:
                return own
            return decimal_bound(v, places, dtype) if isinstance(dtype, DecimalType) else bound_value(v, dtype, places)
        end = value(end)
        return [(null_like(end) if start is None else value(start), WINDOW_START), (end, WINDOW_END)]

    def finish(self, aggregated: DataFrame, *extra: str) -> DataFrame:
        """The user's columns from the aggregate's result (plus ``extra`` columns), with HAVING,
        ORDER BY and LIMIT applied; a query in another engine's syntax in that engine's shape
        (:class:`wid.compiler.syntax.shape.Shape`)."""
        out = aggregated.select(*[F.expr(e.alias(name)) for e, name in self.outputs(Sql.column)], *extra)
        if self.query.shape is not None:
            return self.query.shape.apply(out, extra)
        if self.query.having:
            out = out.where(F.expr(self.query.having))
        if self.query.order_by:
            out = out.orderBy(*[_sort_key(item) for item in self.query.order_by])
        if self.query.limit is not None:
            out = out.limit(self.query.limit)
        return out

    def result(self) -> DataFrame:
        """Exact results: every extent closed, nothing dropped."""
        return self.finish(kinds.aggregate(self.spec, self.tagged, self.keys, self.aggregates))


def _sort_key(item: str):
    expr, direction = sort_item(item)
    return F.expr(expr).desc() if direction == "DESC" else F.expr(expr).asc()


def _spark_shape(spark: SparkSession, parsed: WindowQuery, source: DataFrame | None) -> Shape:
    """The shape of ``parsed`` (a query in Spark's syntax) with the names and types Spark's own
    analysis of it gives (no job runs); a ``source`` DataFrame is read through a temp view of its
    own for that analysis, dropped after it."""
    shape = parsed.shape
    if source is None:
        schema = resolved(lambda: spark.sql(shape.analysed(parsed.source)), spark=spark, view=parsed.source).schema
    else:
        view = f"_wid_shape_{uuid.uuid4().hex}"
        source.createOrReplaceTempView(view)
        try:
            schema = resolved(lambda: spark.sql(shape.analysed(view))).schema
        finally:
            spark.catalog.dropTempView(view)
    return shape.typed(schema.names, [f.dataType.simpleString() for f in schema.fields])


def compile_query(spark: SparkSession, text: str, spec: WindowSpec | None = None,
                  arrival: str | None = None, source: DataFrame | None = None) -> CompiledQuery:
    """Parse ``text`` and build its Bucket stage; raises :class:`WidError` on bad input.
    ``spec`` (e.g. a :class:`wid.windows.flink.Discretization`) replaces the window clause's own.
    ``arrival`` names what else reads the arrival order (e.g. ``"replay"``): it, or a window kind
    that reads it (:attr:`WindowSpec.reads_arrival`), needs a ``row_num`` column, checked before
    any Spark job. ``source`` (a DataFrame) is read in place of the view ``FROM`` names, which
    then only names it in messages (no temp view: a pipeline's definitions may not register one).

    >>> compiled = compile_query(spark, "SELECT k AS key, sum(v * 2) AS total FROM readings [RANGE 4 SLIDE 2 WATTR ts] "
    ...                                 "GROUP BY k")
    >>> compiled.keys, compiled.aggregates, compiled.derived
    (['k'], [Aggregate(alias='_wid_a1', fn='sum', arg='_wid_v1')], {'_wid_v1': 'v * 2'})
    >>> compiled.output
    [('wid', 'wid'), ('k', 'key'), ('_wid_a1', 'total')]
    >>> compile_query(spark, "SELECT count(*) AS n FROM speeds [RANGE 4 SLIDE 2 WATTR ts]")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: unknown view 'speeds': register the stream as a temp view first, or pass the DataFrame as ...
    >>> spark.table("readings").drop("row_num").createOrReplaceTempView("events")
    >>> compile_query(spark, "SELECT count(*) AS n FROM events [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num]")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num] reads arrival order but view 'events' has no ...
    """
    parsed = WindowQuery.parse(text)
    spec = (parse_window(parsed.window) if spec is None else spec).grouped(tuple(parsed.group_by))
    given = source is not None
    try:
        source = source if given else spark.table(parsed.source)
        source.schema  # noqa: B018 - resolves the view now, on classic and Connect sessions
    except AnalysisException as error:
        raise WidError(unresolved(parsed.source, error, given)) from None
    if parsed.shape is not None and parsed.shape.analysis is not None:
        parsed = replace(parsed, shape=_spark_shape(spark, parsed, source if given else None))
    columns = {c.lower(): c for c in source.columns}
    spec = spec.named(lambda c: columns.get(c.lower(), c))  # the view's spelling
    bounds = (WINDOW_START, WINDOW_END) if spec.extent(0) is not None else ()
    for name in (WID, *bounds, *spec.extent_columns):
        if name in columns:
            raise WidError(f"view {parsed.source!r} already has a column named {name!r}")
    reader = arrival or (f"[{parsed.window.strip()}]" if spec.reads_arrival else None)
    if reader is not None and "row_num" not in columns:
        raise WidError(f"{reader} reads arrival order but view {parsed.source!r} has no row_num column: add one "
                       "with wid.arrival(df, by=...) (or --arrival on the command line)")
    where = F.expr(parsed.where) if parsed.where else None
    first = where is not None and spec.where_first  # a tuple WHERE drops never reaches Bucket (nor its checks)
    tagged = bucket(spec, source.where(where) if first else source)
    if where is not None and not first:
        tagged = kinds.where(spec, tagged, where)

    derived: dict[str, str] = {}
    keys: dict[str, str] = {}  # normalised expression -> key column
    aliases = {normal_name(quote(item.alias)): item for item in parsed.select}
    for i, expr in enumerate([*map(quote, spec.partition), *parsed.group_by]):  # PATTR: a column name
        normal = normal_name(expr)
        if normal in aliases and normal not in columns:  # a GROUP BY naming a SELECT alias: its expression
            expr = aliases[normal].expr
            normal = normal_name(expr)
        if normal in keys:
            continue
        name = columns.get(normal, f"_wid_k{i}")
        if name not in source.columns:
            derived[name] = expr
        keys[normal] = name
    keys.update({name: name for name in spec.extent_columns})  # one value per window: grouping adds nothing

    aggregates: list[Aggregate] = []
    output: list[tuple[str, str]] = []
    for i, item in enumerate(parsed.select):
        if normal_name(item.expr) == WID:
            output.append((WID, item.alias if item.alias.lower() != WID else WID))
        elif normal_name(item.expr) in keys:
            output.append((keys[normal_name(item.expr)], item.alias))
        elif (call := item.call) is not None:
            fn, argument = call
            value = None
            if argument is not None:
                value = f"_wid_v{i}"
                derived[value] = argument
            aggregates.append(Aggregate(f"_wid_a{i}", fn, value))
            output.append((f"_wid_a{i}", item.alias))
        elif "(" in item.expr:
            aggregates.append(Aggregate(f"_wid_a{i}", "sql", item.expr))
            output.append((f"_wid_a{i}", item.alias))
        else:
            raise WidError(f"select item {item.expr!r} is neither grouped (GROUP BY) nor an aggregate")
    if WID not in [c for c, _ in output]:
        output.insert(0, (WID, WID))
    at = [c for c, _ in output].index(WID) + 1
    output[at:at] = [(name, name) for name in spec.extent_columns if name not in [c for c, _ in output]]
    if not aggregates:
        raise WidError("a window query needs at least one aggregate in SELECT")
    if derived:  # one analysis for all (Connect refuses an empty withColumns)
        tagged = tagged.withColumns({name: F.expr(e) for name, e in derived.items()})
    numeric_arguments(tagged, aggregates, {f"_wid_a{i}": item.expr for i, item in enumerate(parsed.select)})
    units = None
    if spec.extent(0) is not None:
        dtype = LongType() if spec.positional else attribute_type(source, spec.wattr)
        units = (dtype, 1 if spec.positional else numeric_value(column(spec.wattr), dtype, spec.wattr)[1])
    return CompiledQuery(parsed, spec, tagged, list(keys.values()), aggregates, output, derived, units, source)


def resolved(build, *args, spark: SparkSession | None = None, view: str | None = None) -> DataFrame:
    """``build(*args)`` with its plan analysed now, Spark's analysis errors as one-line
    :class:`WidError` s naming only the user's columns (those of ``view`` in ``spark``, when given:
    :func:`wid.compiler.analysis.message`), with no log of PySpark's on stderr.

    >>> resolved(lambda: spark.table("readings").select("k")).columns
    ['k']
    >>> resolved(lambda: spark.table("readings").select("speed"), spark=spark, view="readings")
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 'speed' in view 'readings' (its columns: row_num, ts, arrival_ts, k, v)
    """
    with analysis_errors(spark, view):
        out = build(*args)
        out.schema  # noqa: B018 - forces analysis on classic and Connect sessions alike
    return out


def query(spark: SparkSession, text: str, window: WindowSpec | None = None, *,
          source: DataFrame | None = None) -> DataFrame:
    """The exact result of a window query: a ``wid`` column, the selected keys and aggregates.
    ``window`` replaces the query's window clause, e.g. a :class:`wid.windows.flink.Discretization`
    for the clause ``[flink]``. ``source``: a DataFrame read in place of the view ``FROM`` names
    (no temp view, e.g. in a pipeline's definitions; a dataset of the pipeline itself has no
    schema before the pipeline runs: :func:`wid.to_sql` with ``schema=``).

    A stream of readings (``ts`` places them in windows, ``row_num`` is the arrival order and
    ``arrival_ts`` the arrival clock, both used by :func:`wid.replay`):

    >>> spark.createDataFrame([(0, 1.0, 1.5, "a", 5), (1, 4.0, 4.5, "a", 7), (2, 2.5, 5.0, "b", 1),
    ...                        (3, 9.0, 9.5, "a", 2)], "row_num long, ts double, arrival_ts double, k string, v long"
    ...                       ).createOrReplaceTempView("readings")
    >>> wid.query(spark, "SELECT k, sum(v) AS total FROM readings [RANGE 4 SLIDE 2 WATTR ts] "
    ...                  "GROUP BY k ORDER BY wid, k").show()
    +---+------------+----------+---+-----+
    |wid|window_start|window_end|  k|total|
    +---+------------+----------+---+-----+
    |  0|        -2.0|       2.0|  a|    5|
    |  1|         0.0|       4.0|  a|    5|
    |  1|         0.0|       4.0|  b|    1|
    |  2|         2.0|       6.0|  a|    7|
    |  2|         2.0|       6.0|  b|    1|
    |  3|         4.0|       8.0|  a|    7|
    |  4|         6.0|      10.0|  a|    2|
    |  5|         8.0|      12.0|  a|    2|
    +---+------------+----------+---+-----+
    <BLANKLINE>

    The same query over a DataFrame, no view registered (``FROM`` then only names it):

    >>> frame = spark.table("readings").where("k = 'b'")
    >>> wid.query(spark, "SELECT sum(v) AS total FROM b_only [RANGE 4 SLIDE 2 WATTR ts] ORDER BY wid", source=frame).collect()
    [Row(wid=1, window_start=0.0, window_end=4.0, total=1), Row(wid=2, window_start=2.0, window_end=6.0, total=1)]
    """
    return resolved(lambda: compile_query(spark, text, window, source=source).result(), spark=spark,
                    view=None if source is not None else WindowQuery.parse(text).source)
