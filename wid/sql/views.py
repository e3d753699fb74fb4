"""WID windows in Spark SQL: window-id functions, window-query views, a statement runner.

:func:`register` defines session-scoped SQL functions (``CREATE TEMPORARY FUNCTION ...
RETURN``: SQL, no Python UDF, so they run the same on classic and Spark Connect
sessions), or with ``persistent=True`` functions of the current database. They are the
:class:`wid.windows.context_free.Sliding` formulas for ``[RANGE r SLIDE s]``
(tumbling: r = s), with ``x`` a number or a timestamp as epoch seconds with fraction::

    wid_lo(x, r, s)    = floor(x/s)                  first window holding x
    wid_hi(x, r, s)    = floor((x+r)/s) - 1          last window holding x
    wid_start(w, r, s) = (w+1)s - r                  extent(w) = [wid_start, wid_end)
    wid_end(w, r, s)   = (w+1)s
    wid_closed(v, s)   = floor(v/s) - 1              last window a punctuation at v closes

Arguments are exact decimals (``DECIMAL(30, 9)``): timestamps keep their microseconds,
longs are exact, doubles are rounded to 9 decimal places. A NULL argument gives NULL; a
RANGE or SLIDE that is not positive fails the query, naming it. A tuple belongs to the windows
``wid_lo <= w <= wid_hi`` (none when ``wid_lo > wid_hi``, in a gap of hopping windows).
Spark does not take SQL functions inside a generator (``explode``), so a query that
expands tuples into their windows tags them in a subquery first::

    wid.register(spark)
    spark.sql("SELECT w AS wid, seg_id, count(*) AS n FROM ("
              "  SELECT *, wid_lo(ts, 300, 60) AS lo, wid_hi(ts, 300, 60) AS hi FROM traffic)"
              " LATERAL VIEW explode(sequence(lo, hi)) AS w WHERE lo <= hi GROUP BY w, seg_id")

equals ``wid.query(spark, "SELECT seg_id, count(*) AS n FROM traffic "
"[RANGE 300 SECONDS SLIDE 60 SECONDS WATTR ts] GROUP BY seg_id")`` (which never
expands a tuple into its ids).
"""

from __future__ import annotations

import re

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from wid.errors import WidError
from wid.compiler.query import query
from wid.windows.clause import parse_window
from wid.windows.sqlexpr import NAME_PART, qualified
from wid.sql.text import to_sql
from wid.compiler.syntax import uses
from wid.compiler.text import WindowQuery, window_span

#: Argument type of the SQL functions: 21 integer digits (any long) and nanoseconds.
_NUMBER = "DECIMAL(30, 9)"

#: name -> (parameters, body). ``wid_floor_div`` is floor(x/d) as an exact BIGINT for d > 0:
#: the remainder ``pmod`` is exact on decimals, so the quotient divides exactly.
FUNCTIONS: dict[str, tuple[str, str]] = {
    "wid_positive": (
        f"v {_NUMBER}, what STRING",
        "IF(v > 0, v, raise_error(concat('wid: ', what, ' must be positive, got ', coalesce(string(v), 'NULL'))))",
    ),
    "wid_floor_div": (f"x {_NUMBER}, d {_NUMBER}", "CAST((x - pmod(x, d)) / d AS BIGINT)"),
    "wid_lo": (f"x {_NUMBER}, r {_NUMBER}, s {_NUMBER}", "wid_floor_div(x, wid_positive(s, 'SLIDE'))"),
    "wid_hi": (
        f"x {_NUMBER}, r {_NUMBER}, s {_NUMBER}",
        "wid_floor_div(x + wid_positive(r, 'RANGE'), wid_positive(s, 'SLIDE')) - 1",
    ),
    "wid_end": (f"w BIGINT, r {_NUMBER}, s {_NUMBER}", "(w + 1) * wid_positive(s, 'SLIDE')"),
    "wid_start": (f"w BIGINT, r {_NUMBER}, s {_NUMBER}", "wid_end(w, r, s) - wid_positive(r, 'RANGE')"),
    "wid_closed": (f"v {_NUMBER}, s {_NUMBER}", "wid_floor_div(v, wid_positive(s, 'SLIDE')) - 1"),
}

_CREATE_VIEW = re.compile(
    r"\s*CREATE\s+(OR\s+REPLACE\s+)?(TEMP(?:ORARY)?\s+)?VIEW\s+"
    rf"(IF\s+NOT\s+EXISTS\s+)?({NAME_PART}(?:\s*\.\s*{NAME_PART})*)\s+AS\s+",
    re.IGNORECASE,
)


def register(spark: SparkSession, persistent: bool = False) -> None:
    """Define the window-id SQL functions (see the module docstring) in ``spark``'s session, or
    with ``persistent`` as functions of the current database (kept in its catalog).

    >>> wid.register(spark)
    >>> spark.sql("SELECT wid_lo(5, 4, 2) AS lo, wid_hi(5, 4, 2) AS hi, wid_closed(5, 2) AS closed").show()
    +---+---+------+
    | lo| hi|closed|
    +---+---+------+
    |  2|  3|     1|
    +---+---+------+
    <BLANKLINE>
    """
    kind = "" if persistent else "TEMPORARY "
    if persistent:  # this session's temporary ones would shadow them (and cannot be referenced by them)
        for name in FUNCTIONS:
            spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS {name}")
    for name, (params, body) in FUNCTIONS.items():
        spark.sql(f"CREATE OR REPLACE {kind}FUNCTION {name}({params}) RETURN {body}")


def create_view(spark: SparkSession, name: str, query_text: str, replace: bool = True) -> DataFrame:
    """Register temp view ``name`` holding the result of window query ``query_text``
    (as :func:`wid.query`); returns the view. With ``replace=False`` an existing view is an error.

    On the view ``readings`` of :func:`wid.query`'s example:

    >>> _ = wid.create_view(spark, "totals", "SELECT k, sum(v) AS total FROM readings "
    ...                                      "[RANGE 4 SLIDE 2 WATTR ts] GROUP BY k")
    >>> spark.sql("SELECT wid, total FROM totals WHERE k = 'a' AND wid < 3 ORDER BY wid").show()
    +---+-----+
    |wid|total|
    +---+-----+
    |  0|    5|
    |  1|    5|
    |  2|    7|
    +---+-----+
    <BLANKLINE>
    """
    result = query(spark, query_text)
    if not replace and spark.catalog.tableExists(name):
        raise WidError(f"view {name!r} already exists")
    result.createOrReplaceTempView(name)
    return spark.table(name)


def is_window_query(statement: str) -> bool:
    """Whether ``statement`` reads a stream through a window clause: ``FROM view [ ... ]``
    outside quotes, comments and parentheses (text that does not balance is left to Spark SQL),
    or through another engine's window syntax a front end reads (:func:`wid.compiler.syntax.uses`).

    >>> is_window_query("SELECT max(v) FROM readings [RANGE 4 WATTR ts] GROUP BY k")
    True
    >>> is_window_query("SELECT '[x]' FROM t"), is_window_query("SELECT * FROM (SELECT * FROM s [ROWS 2])")
    (False, False)
    """
    try:
        return window_span(statement) is not None or uses(statement)
    except WidError:
        return False


def run_sql(spark: SparkSession, statement: str) -> DataFrame:
    """Run one SQL statement that may be a window query.

    A window query ``SELECT ... FROM v [window] ...`` (at the top level, not in a subquery)
    runs as :func:`wid.query`. ``CREATE [OR REPLACE] VIEW q [IF NOT EXISTS] AS <window query>``
    makes the persistent catalog view ``q`` whose text is :func:`wid.to_sql` of the query (the
    stream must be a table or a persistent view); with ``TEMP`` it makes the temp view ``q``
    (:func:`create_view`, any window kind). Either returns the view. Any other statement goes to
    ``spark.sql`` unchanged.

    On the view ``readings`` of :func:`wid.query`'s example:

    >>> wid.run_sql(spark, "SELECT max(v) AS hi FROM readings [RANGE 4 SLIDE 4 WATTR ts] ORDER BY wid").show()
    +---+------------+----------+---+
    |wid|window_start|window_end| hi|
    +---+------------+----------+---+
    |  0|         0.0|       4.0|  5|
    |  1|         4.0|       8.0|  7|
    |  2|         8.0|      12.0|  2|
    +---+------------+----------+---+
    <BLANKLINE>
    >>> wid.run_sql(spark, "SELECT count(*) AS n FROM readings").show()
    +---+
    |  n|
    +---+
    |  4|
    +---+
    <BLANKLINE>
    """
    if not is_window_query(statement):
        return spark.sql(statement)
    create = _CREATE_VIEW.match(statement)
    if create is None:
        if re.match(r"\s*CREATE\b", statement, re.IGNORECASE):
            raise WidError("a window query can only define a view: CREATE [OR REPLACE] [TEMP] VIEW name AS ...")
        return query(spark, statement)
    replace, temporary, if_not_exists, name = create.groups()
    body = statement[create.end():]
    if temporary:
        if if_not_exists and spark.catalog.tableExists(name):
            return spark.table(name)
        return create_view(spark, name, body, replace=bool(replace))
    return create_persistent_view(spark, name, body, replace=bool(replace), if_not_exists=bool(if_not_exists))


def create_persistent_view(spark: SparkSession, name: str, query_text: str, replace: bool = False,
                           if_not_exists: bool = False) -> DataFrame:
    """Catalog view ``name`` (``view`` or ``db.view``) whose text is :func:`wid.to_sql` of
    ``query_text``; returns it. The query's stream must not be a temporary view (a persistent
    view cannot read one). One ``CREATE VIEW`` statement, issued only once the SQL resolves."""
    target = qualified(name)
    parsed = WindowQuery.parse(query_text)
    parse_window(parsed.window)  # a bad window clause is reported first
    if if_not_exists and spark.catalog.tableExists(name):
        return spark.table(target)
    if not replace and spark.catalog.tableExists(name):
        raise WidError(f"view or table {name!r} already exists (CREATE OR REPLACE VIEW replaces a view)")
    source = parsed.source
    qualified(source)
    if not spark.catalog.tableExists(source):
        raise WidError(f"unknown table {source!r}: a window view reads a table or a persistent view")
    if spark.catalog.getTable(source).isTemporary:
        raise WidError(f"{source!r} is a temporary view, which a persistent view cannot read: save the stream "
                       f"as a table first (e.g. spark.table({source!r}).write.saveAsTable('stream')), "
                       "or make a TEMP view")
    text = to_sql(spark, query_text)
    try:
        spark.sql(f"CREATE {'OR REPLACE ' if replace else ''}VIEW {target} AS {text}")
    except AnalysisException as error:
        raise WidError(f"cannot create view {name!r}: {str(error).splitlines()[0]}") from None
    return spark.table(target)
