"""Spark's analysis errors as one-line :class:`WidError` s that name only the user's columns.

Spark names the unresolved column and the nearest names in scope in the error's message
parameters (``objectName``, ``proposal``), on classic and Connect sessions alike. A query's
expressions run over the tagged stream, where those names are the view's own and the columns
wid adds (``wid_x``, ``wid_lo``, ``_wid_v1``, ...), or over the query's output (HAVING and ORDER
BY), where some are output names (``wid``, an alias); the message lists the view's columns for
the first, the nearest output columns for the second. :func:`unresolved` words a source that
does not resolve (an unknown view, a DataFrame passed for it, or a pipeline's query function).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from wid.errors import WidError, quiet_analysis
from wid.windows.sqlexpr import name_parts

#: A back-quoted, possibly dotted name in a list of Spark's message parameters.
_NAME = re.compile(r"`(?:[^`]|``)*`(?:\.`(?:[^`]|``)*`)*")


def internal(name: str) -> bool:
    """A column wid adds to a stream or a result on the way (Bucket's ``wid_x``, ``wid_lo``,
    ``wid_hi``, a query's own ``_wid_*``, ...), never shown to the user.

    >>> [internal(c) for c in ("wid_lo", "_wid_v1", "wid", "window_start", "speed")]
    [True, True, False, False, False]
    """
    return name.lower().startswith(("wid_", "_wid_"))


def message(error: AnalysisException, spark: SparkSession | None = None, view: str | None = None) -> str:
    """One line for an analysis ``error`` of a query over ``view``: an unknown column with the
    view's columns (or, where the query's output was read, the nearest output columns), an
    unknown function by its name, anything else as Spark's message without its plan.

    >>> try:
    ...     spark.table("readings").selectExpr("*", "ts AS wid_x").select("speed").schema
    ... except AnalysisException as error:
    ...     message(error, spark, "readings")
    "unknown column 'speed' in view 'readings' (its columns: row_num, ts, arrival_ts, k, v)"
    >>> try:
    ...     spark.table("readings").selectExpr("k AS key").select("kee").schema
    ... except AnalysisException as error:
    ...     message(error, spark, "readings")
    "unknown column 'kee' in HAVING or ORDER BY, which name the output columns (nearest: key)"
    >>> try:
    ...     spark.table("readings").selectExpr("speed_of(v)").schema
    ... except AnalysisException as error:
    ...     message(error)
    "unknown function 'speed_of'"
    """
    condition, parameters = error.getCondition() or "", error.getMessageParameters() or {}
    if condition.startswith("UNRESOLVED_COLUMN"):
        named = _unquoted(parameters.get("objectName", ""))
        nearest = [_last_part(p) for p in _NAME.findall(parameters.get("proposal", ""))]
        columns = _columns(spark, view)
        if columns is None:
            shown = [p for p in nearest if not internal(p)]
            return f"unknown column {named!r}" + (f" (nearest: {', '.join(shown)})" if shown else "")
        if _on_the_stream(nearest, columns):
            return f"unknown column {named!r} in view {view!r} (its columns: {', '.join(columns)})"
        return (f"unknown column {named!r} in HAVING or ORDER BY, which name the output columns "
                f"(nearest: {', '.join(nearest)})")
    if condition == "UNRESOLVED_ROUTINE":
        return f"unknown function {_unquoted(parameters.get('routineName', ''))!r}"
    text = error.getMessage() if condition else str(error)
    first = next((line for line in text.splitlines() if line.strip()), type(error).__name__)
    return "cannot resolve the query: " + re.sub(r"\s*(?:SQLSTATE: \w+)?(?:; line \d+ pos \d+)?;?$", "", first.strip())


def _unquoted(name: str) -> str:
    """A name as Spark quotes it in a message parameter (```t`.`my col```), as SQL writes it unquoted."""
    try:
        return ".".join(name_parts(name))
    except WidError:
        return name


def _last_part(name: str) -> str:
    """The column of a back-quoted dotted name (```spark_catalog`.`default`.`t`.`my col```: ``my col``)."""
    return re.findall(r"`((?:[^`]|``)*)`", name)[-1].replace("``", "`")


def _on_the_stream(proposed: list[str], columns: list[str]) -> bool:
    """The candidates Spark proposed (the nearest names in scope) come from the view's stream, not
    from the query's output: one that wid adds to the stream, or all of the view's own (or none)."""
    own = {c.lower() for c in columns}
    return any(map(internal, proposed)) or all(p.lower() in own for p in proposed)


def _columns(spark: SparkSession | None, view: str | None) -> list[str] | None:
    """The view's columns (None: no view, or it no longer resolves)."""
    if spark is None or view is None:
        return None
    try:
        with quiet_analysis():
            return spark.table(view).columns
    except AnalysisException:
        return None


@contextmanager
def analysis_errors(spark: SparkSession | None = None, view: str | None = None) -> Iterator[None]:
    """Inside, Spark's analysis errors become one-line :class:`WidError` s (:func:`message`, of a
    query over ``view``), with no log of PySpark's on stderr (:func:`wid.errors.quiet_analysis`).

    >>> with analysis_errors(spark, "readings"):
    ...     spark.table("readings").select("speed").schema
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 'speed' in view 'readings' (its columns: row_num, ts, arrival_ts, k, v)
    """
    try:
        with quiet_analysis():
            yield
    except AnalysisException as error:
        raise WidError(message(error, spark, view)) from None


#: Spark's condition for any analysis inside a query function of a Declarative Pipeline.
IN_QUERY_FUNCTION = "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION"


def unresolved(view: str, error: AnalysisException, given: bool) -> str:
    """One line for a source that does not resolve: the view ``FROM`` names (``given``: a DataFrame
    passed for it), or any analysis inside a pipeline query function, which refuses all of it.

    >>> print(unresolved("traffic", AnalysisException("[TABLE_OR_VIEW_NOT_FOUND] The table or view "
    ...                  "`traffic` cannot be found. SQLSTATE: 42P01"), given=True))  # doctest: +ELLIPSIS
    the source given for 'traffic' does not resolve here ([TABLE_OR_VIEW_NOT_FOUND] ...); a dataset of ...
    """
    if error.getCondition() == IN_QUERY_FUNCTION:
        return ("wid compiles a query with Spark's analysis, which a pipeline query function refuses: call it at "
                "the top level of the definitions file and return its DataFrame from the function (over a dataset "
                "of the pipeline: text = wid.to_sql(spark, query, schema=...) at the top level, spark.sql(text) "
                "in the function)")
    if given:
        first = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
        first = re.split(r"(?<=\.)\s", first)[0].rstrip(".")  # Spark's first sentence
        return (f"the source given for {view!r} does not resolve here ({first}); a dataset of a pipeline has no "
                "schema before the pipeline runs: only wid.to_sql(spark, query, schema=...) compiles for it "
                "(return spark.sql(text) from the query function)")
    return (f"unknown view {view!r}: register the stream as a temp view first, or pass the DataFrame as "
            "source= (a dataset of a pipeline: wid.to_sql(spark, query, schema=...))")
