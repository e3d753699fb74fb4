"""A window query as plain Spark SQL text (:func:`to_sql`), with the plan shape of :func:`wid.query`.

The text is generated from the parsed query and the window kind's own stages as SQL (the
formulas rendered by :mod:`wid.spec.sqlexpr`): :meth:`WindowSpec.bucket_sql` (``wid_x``,
``wid_lo``, ``wid_hi``), :meth:`WindowSpec.where_sql` and the query's derived columns, then
:meth:`WindowSpec.aggregate_sql`: the panes, blocks and ids of the range aggregate for
sliding, tumbling, hopping, ROWS, PATTR and landmark windows; the windows joined with their
extents for slide-by-tuple windows. SPL and Flink windows refuse. Every user expression is
one Spark SQL expression (each was parsed and resolved by :func:`wid.query.compile_query`) and
goes into the text in parentheses, a line end closing any comment.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from wid.errors import WidError
from wid.query import CompiledQuery, compile_query, resolved, sort_item
from wid.spec.sqlexpr import Sql, qualified, quote


def _expr(text: str) -> str:
    """A user expression in the generated text: parenthesised, a line end closing any comment."""
    return f"({text}\n)"


def finish_sql(compiled: CompiledQuery, aggregated: str) -> str:
    """:meth:`CompiledQuery.finish` as SQL over the aggregate's result ``aggregated``."""
    columns = ", ".join(e.alias(name) for e, name in compiled.outputs(Sql.column))
    text = f"SELECT {columns} FROM ({aggregated})"
    q = compiled.query
    if q.having:
        text = f"SELECT * FROM ({text}) WHERE {_expr(q.having)}"
    if q.order_by:
        text += " ORDER BY " + ", ".join(f"{_expr(e)} {d}" for e, d in map(sort_item, q.order_by))
    if q.limit is not None:
        text += f" LIMIT {int(q.limit)}"
    return text


def to_sql(spark: SparkSession, query_text: str) -> str:
    """Plain Spark SQL (no Python UDF, no temporary object) evaluating window query ``query_text``
    as :func:`wid.query` does, over the same source table or view; raises :class:`WidError` on
    bad input and for window kinds that have no SQL form (SPL and Flink clauses)."""
    built: list[CompiledQuery] = []

    def result():
        built.append(compile_query(spark, query_text))
        return built[0].result()

    resolved(result)  # every expression of the query resolves, each as one expression
    compiled = built[0]
    spec, q = compiled.spec, compiled.query
    source = qualified(q.source)
    df = spark.table(source)
    tagged = spec.bucket_sql(source, df)
    if q.where:
        tagged = spec.where_sql(tagged, _expr(q.where))
    derived = "".join(f", {_expr(e)} AS {quote(name)}" for name, e in compiled.derived.items())
    tagged = f"(SELECT *{derived} FROM ({tagged}))"
    aggregated = spec.aggregate_sql(tagged, compiled.tagged, compiled.keys, compiled.aggregates, bool(q.where))
    text = finish_sql(compiled, aggregated)
    try:
        spark.sql(text).schema  # noqa: B018 - the generated text resolves (classic and Connect)
    except AnalysisException as error:
        raise WidError(f"cannot compile the query to SQL: {str(error).splitlines()[0]}") from None
    return text
