"""``wid sql``: run SQL statements, window queries included, on a persistent catalog.

``wid sql -e "STMT; ..."``, ``wid sql -f FILE`` (statements separated by ``;``) or, with
neither, an interactive prompt (a statement ends with ``;``; ``quit;`` or end of input stops).
Every statement goes through :func:`wid.run_sql`: window queries and ``CREATE [TEMP] VIEW v AS
<window query>`` are wid's, anything else is Spark SQL. The embedded session has Hive support
and the catalog of :mod:`wid.sql.catalog` (``--warehouse``, ``--metastore-uri``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from pyspark.sql import SparkSession

from wid.sql import catalog
from wid.errors import WidError
from wid.sql.views import run_sql
from wid.console import SPARK_ERRORS, one_line, table

_DDL = re.compile(r"\s*(CREATE|DROP|ALTER|INSERT|USE|SET|CACHE|UNCACHE|REFRESH|MSCK|TRUNCATE)\b", re.IGNORECASE)


def statements(text: str) -> Iterator[str]:
    """The ``;``-separated statements of ``text``, ``--`` comments removed (a ``;`` in quotes or in a
    comment does not separate); blank ones are skipped.

    >>> list(statements("SELECT ';' AS s; -- one; comment\\nSHOW TABLES;;"))
    ["SELECT ';' AS s", 'SHOW TABLES']
    """
    current, quote, comment = [], "", False
    for i, ch in enumerate(text):
        if comment:
            comment = ch != "\n"
            if comment:
                continue
        elif quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "-" and text[i: i + 2] == "--":
            comment = True
            continue
        elif ch == ";":
            yield from _nonblank("".join(current))
            current = []
            continue
        current.append(ch)
    if quote:
        raise WidError("unterminated quote in SQL text")
    yield from _nonblank("".join(current))


def _nonblank(statement: str) -> Iterator[str]:
    if statement.strip():
        yield statement.strip()


def execute(spark: SparkSession, statement: str, limit: int) -> str:
    """Run one statement; its rows as a text table, or ``OK`` for a statement without rows."""
    out = run_sql(spark, statement)
    if _DDL.match(statement) or not out.columns:
        return "OK"
    return table(out, limit)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid sql`` subcommand's parser (:func:`run` runs it)."""
    parser = subparsers.add_parser("sql", help="run SQL (window queries and views included) on a persistent catalog")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-e", dest="execute", metavar="STMTS", help="statements to run (separated by ;)")
    source.add_argument("-f", dest="file", metavar="FILE", help="file of statements to run (separated by ;)")
    catalog_options(parser)
    parser.add_argument("--limit", type=int, default=50, metavar="N", help="rows to print per result (default 50)")
    parser.set_defaults(command=run, start=start)
    return parser


def catalog_options(parser: argparse.ArgumentParser) -> None:
    """The options naming the catalog (``--warehouse``, ``--metastore-uri``), on ``parser``."""
    parser.add_argument("--warehouse", metavar="DIR",
                        help=f"catalog home: warehouse/ and metastore_db/ (default ${catalog.HOME_ENV} or ~/.wid)")
    parser.add_argument("--metastore-uri", metavar="URI",
                        help=f"an external Hive metastore, e.g. thrift://host:9083 (default ${catalog.METASTORE_ENV})")


def start(args: argparse.Namespace) -> SparkSession:
    """The embedded Hive-enabled session of ``wid sql`` on the catalog the options name."""
    spark = catalog.session(catalog.home(args.warehouse), args.metastore_uri, args.master or "local[2]")
    spark.sparkContext.setLogLevel("OFF")
    return spark


def run(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid sql``: the statements of ``-e`` or ``-f`` one by one, each result printed; else the prompt."""
    if args.limit < 0:
        raise WidError("--limit must be >= 0")
    if args.execute is None and args.file is None:
        return prompt(session())
    text = args.execute if args.execute is not None else _read(args.file)
    todo = list(statements(text))  # a malformed text fails before the session starts
    spark = session()
    for statement in todo:
        print(execute(spark, statement, args.limit))
    return 0


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise WidError(f"cannot read {path}: {error.strerror}") from None


def prompt(spark: SparkSession, lines=sys.stdin) -> int:
    """The interactive loop: errors are printed and the loop goes on."""
    buffer = ""
    print("wid sql: end statements with ';', quit with 'quit;' or end of input", file=sys.stderr)
    while True:
        print("wid> " if not buffer else "  -> ", end="", file=sys.stderr, flush=True)
        line = lines.readline()
        if not line:
            return 0
        buffer += line
        if ";" not in line:
            continue
        try:
            for statement in statements(buffer):
                if statement.lower() in ("quit", "exit"):
                    return 0
                print(execute(spark, statement, 50))
        except (WidError, *SPARK_ERRORS) as error:
            print(f"wid: {one_line(error)}", file=sys.stderr)
        buffer = ""
