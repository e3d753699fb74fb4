"""Plain text of the command line: aligned tables, result tables, one-line errors, and progress on the
``wid`` logger (:func:`wid.cli.main` shows it on stderr)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql.types import NumericType

#: A wid check raised inside Spark (``raise_error('wid: ...')``): Spark's tag for a user-raised
#: error, then wid's marker at the start of the message (not ``wid:`` anywhere in a plan dump).
WID_MESSAGE = re.compile(r"\[USER_RAISED_EXCEPTION\] wid: (.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
#: Errors Spark raises into Python: PySpark's, and Py4J's when a check fails in a subquery of the plan.
SPARK_ERRORS = (PySparkException, Py4JJavaError)
#: Progress of long commands (bench, experiment); results go to stdout.
log = logging.getLogger("wid")


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool],
            rule: bool = False) -> list[str]:
    """``header`` and ``rows`` as lines of columns two spaces apart, each as wide as its widest
    cell, right-aligned where ``right``; ``rule``: a line of dashes under the header.

    >>> print("\\n".join(aligned(["k", "n"], [["a", "5"], ["bb", "10"]], [False, True], rule=True)))
    k    n
    --  --
    a    5
    bb  10
    """
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [["-" * w for w in widths]] if rule else []

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return [line(header), *map(line, lines), *map(line, rows)]


def table(df: DataFrame, limit: int) -> str:
    """An aligned text table of the first ``limit`` rows of ``df``, with the total row count.

    >>> print(table(spark.table("readings").orderBy("row_num"), 2))
    row_num  ts  arrival_ts  k  v
    -------  --  ----------  -  -
          0   1         1.5  a  5
          1   4         4.5  a  7
    (showing 2 of 4 rows (--limit N for more))
    """
    total = df.count()
    rows = [[cell(v) for v in row] for row in df.limit(limit).collect()]
    numeric = [isinstance(f.dataType, NumericType) for f in df.schema.fields]
    shown = f"{total} rows" if len(rows) == total else f"showing {len(rows)} of {total} rows (--limit N for more)"
    return "\n".join([*aligned(df.columns, rows, numeric, rule=True), f"({shown})"])


def cell(value: object) -> str:
    """``value`` as a table cell: NULL, a float to 10 significant digits, a datetime with a space.

    >>> cell(None), cell(1 / 3), cell(7)
    ('NULL', '0.3333333333', '7')
    """
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def one_line(error: Exception) -> str:
    """The message of a wid check raised inside Spark (``raise_error``), else Spark's first line.

    >>> one_line(ValueError("[USER_RAISED_EXCEPTION] wid: RANGE must be positive SQLSTATE: P0001"))
    'RANGE must be positive'
    >>> one_line(ValueError("[TABLE_OR_VIEW_NOT_FOUND] The table cannot be found.\\n  at ..."))
    '[TABLE_OR_VIEW_NOT_FOUND] The table cannot be found.'
    """
    text = str(error)
    found = WID_MESSAGE.search(text)
    return found.group(1) if found else text.strip().splitlines()[0]
