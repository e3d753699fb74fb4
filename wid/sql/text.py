"""A window query as plain Spark SQL text (:func:`to_sql`), with the plan shape of :func:`wid.query`.

The text is generated from the parsed query and the window kind's own stages as SQL (the
formulas rendered by :mod:`wid.windows.sqlexpr`, the same definitions that build the Columns of
:func:`wid.query`): :meth:`WindowSpec.bucket_sql` (``wid_lo``, ``wid_hi``, and a session's
``session_start``/``session_end``) over the rows ``WHERE`` keeps (or, for the kinds whose
Bucket reads every tuple, :meth:`WindowSpec.where_sql` after it), the query's derived
columns, then :meth:`WindowSpec.aggregate_sql`: the panes, blocks and ids of the range
aggregate for sliding, tumbling, hopping, ROWS, PATTR, landmark and session windows, SPL
windows of count, time and punct policies and Flink discretizations on the ``columns`` path;
the windows joined with their extents for slide-by-tuple windows. The kinds tagged in Python
(SPL delta policies and partition eviction, Flink discretizations on the ``chain`` or
``scan`` path) refuse, naming the alternative (a temporary view). Every user expression is
one Spark SQL expression (each was parsed and resolved by :func:`wid.compiler.query.compile_query`) and
goes into the text in parentheses, a line end closing any comment.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from wid.bucket.kinds import bucket_sql
from wid.compiler.kinds import aggregate_sql, where_sql
from wid.errors import WidError
from wid.compiler.query import CompiledQuery, compile_query, resolved
from wid.compiler.text import WindowQuery, sort_item
from wid.windows.clause import parse_window
from wid.windows.sqlexpr import Sql, qualified, quote
from wid.windows.base import WindowSpec


def _expr(text: str) -> str:
    """A user expression in the generated text: parenthesised, a line end closing any comment."""
    return f"({text}\n)"


def finish_sql(compiled: CompiledQuery, aggregated: str) -> str:
    """:meth:`CompiledQuery.finish` as SQL over the aggregate's result ``aggregated``.

    >>> compiled = compile_query(spark, "SELECT k, max(v) AS hi FROM readings [RANGE 2 RATTR ts SLIDE 1 ROW "
    ...                                 "SATTR row_num] GROUP BY k HAVING hi > 1 ORDER BY hi DESC LIMIT 2")
    >>> print(finish_sql(compiled, "aggregated"))
    SELECT * FROM (SELECT `wid` AS `wid`, `k` AS `k`, `_wid_a1` AS `hi` FROM (aggregated)) WHERE (hi > 1
    ) ORDER BY (hi
    ) DESC LIMIT 2
    """
    columns = ", ".join(e.alias(name) for e, name in compiled.outputs(Sql.column))
    text = f"SELECT {columns} FROM ({aggregated})"
    q = compiled.query
    if q.shape is not None:  # another engine's syntax: its result's shape
        return q.shape.sql(text)
    if q.having:
        text = f"SELECT * FROM ({text}) WHERE {_expr(q.having)}"
    if q.order_by:
        text += " ORDER BY " + ", ".join(f"{_expr(e)} {d}" for e, d in map(sort_item, q.order_by))
    if q.limit is not None:
        text += f" LIMIT {int(q.limit)}"
    return text


def to_sql(spark: SparkSession, query_text: str, window: WindowSpec | None = None, *,
           source: DataFrame | None = None, schema: StructType | str | None = None) -> str:
    """Plain Spark SQL (no Python UDF, no temporary object) evaluating window query ``query_text``
    as :func:`wid.query` does, over the same source table or view (``window`` replaces the
    query's window clause, e.g. a :class:`wid.windows.flink.Discretization`); raises
    :class:`WidError` on bad input and for the window kinds whose tagging runs Python (SPL
    windows with delta policies or partition eviction, Flink discretizations off the
    ``columns`` path).

    The text reads the relation ``FROM`` names. Where that relation does not resolve yet (a
    dataset of a Declarative Pipeline, before the pipeline runs), the query is compiled against
    a stand-in with its columns: ``source`` (a DataFrame with them) or ``schema`` (a DDL string or
    a ``StructType``); the text then resolves once the relation exists, with those columns.

    The text runs on Spark alone, with :func:`wid.query`'s result:

    >>> text = to_sql(spark, "SELECT k, sum(v) AS total FROM readings [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k "
    ...                      "HAVING total > 4")
    >>> spark.sql(text).orderBy("wid", "k").show()
    +---+------------+----------+---+-----+
    |wid|window_start|window_end|  k|total|
    +---+------------+----------+---+-----+
    |  0|        -2.0|       2.0|  a|    5|
    |  1|         0.0|       4.0|  a|    5|
    |  2|         2.0|       6.0|  a|    7|
    |  3|         4.0|       8.0|  a|    7|
    +---+------------+----------+---+-----+
    <BLANKLINE>

    Compiled for a relation that does not exist yet, from its declared columns (in a pipeline's
    Python definitions: ``spark.sql(text)`` in a ``@dp.materialized_view`` function):

    >>> text = to_sql(spark, "SELECT k, max(v) AS hi FROM later [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k",
    ...               schema="ts double, k string, v long")
    >>> spark.table("readings").createOrReplaceTempView("later")
    >>> spark.sql(text).where("k = 'b'").collect()
    [Row(wid=1, window_start=0.0, window_end=4.0, k='b', hi=1), Row(wid=2, window_start=2.0, window_end=6.0, k='b', hi=1)]
    """
    refusal = (window or parse_window(WindowQuery.parse(query_text).window)).sql_refusal
    if refusal:  # before any Spark job of the query's own path (a check on the data)
        raise WidError(refusal)
    stand_in = _stand_in(spark, source, schema)
    built: list[CompiledQuery] = []

    def result():
        built.append(compile_query(spark, query_text, window, source=stand_in))
        return built[0].result()

    # every expression of the query resolves, each as one expression
    resolved(result, spark=spark, view=None if stand_in is not None else WindowQuery.parse(query_text).source)
    compiled = built[0]
    df = stand_in if stand_in is not None else spark.table(qualified(compiled.query.source))
    text = _text(compiled, qualified(compiled.query.source), df)
    # the generated text resolves (classic and Connect), over the stand-in's columns when given
    check = text if stand_in is None else _text(compiled, _empty(df.schema), df)
    try:
        spark.sql(check).schema  # noqa: B018
    except AnalysisException as error:
        raise WidError(f"cannot compile the query to SQL: {str(error).splitlines()[0]}") from None
    return text


def _stand_in(spark: SparkSession, source: DataFrame | None, schema: StructType | str | None) -> DataFrame | None:
    """The DataFrame the query is compiled against instead of its ``FROM`` relation (None: that relation)."""
    if source is not None and schema is not None:
        raise WidError("give the source's columns once: source= (a DataFrame) or schema=, not both")
    if schema is None:
        return source
    try:
        return spark.createDataFrame([], schema)
    except (PySparkException, TypeError, ValueError) as error:
        raise WidError(f"schema= {schema!r} is not a schema: {str(error).splitlines()[0]}") from None


def _empty(schema: StructType) -> str:
    """A relation with ``schema``'s columns and no row, as SQL text.

    >>> _empty(StructType.fromDDL("ts timestamp, `seg id` string"))
    '(SELECT CAST(NULL AS TIMESTAMP) AS `ts`, CAST(NULL AS STRING) AS `seg id` LIMIT 0)'
    """
    columns = ", ".join(f"CAST(NULL AS {f.dataType.simpleString().upper()}) AS {quote(f.name)}" for f in schema.fields)
    return f"(SELECT {columns} LIMIT 0)"


def _text(compiled: CompiledQuery, relation: str, df: DataFrame) -> str:
    """The SQL text of ``compiled`` over ``relation`` (SQL text of a relation with ``df``'s columns)."""
    spec, q = compiled.spec, compiled.query
    first = bool(q.where) and spec.where_first  # as wid.query: WHERE before Bucket where the kind allows
    tagged = bucket_sql(spec, f"(SELECT * FROM {relation} WHERE {_expr(q.where)})" if first else relation, df)
    if q.where and not first:
        tagged = where_sql(spec, tagged, _expr(q.where))
    derived = "".join(f", {_expr(e)} AS {quote(name)}" for name, e in compiled.derived.items())
    tagged = f"(SELECT *{derived} FROM ({tagged}))"
    aggregated = aggregate_sql(spec, tagged, compiled.tagged, compiled.keys, compiled.aggregates,
                               bool(q.where) and not first)
    return finish_sql(compiled, aggregated)
