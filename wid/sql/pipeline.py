"""``wid sql-pipeline``: window queries as the SQL definitions of a Spark Declarative Pipeline.

Each ``--view NAME QUERY`` becomes ``OUT_DIR/NAME.sql``, one statement ``CREATE MATERIALIZED VIEW
NAME AS <text>``, the text :func:`wid.to_sql` compiles from the window query (plain Spark SQL:
the pipeline runs it with no wid installed). The relation a query reads (``FROM name``) is a
dataset of the pipeline or a catalog table, resolved when the pipeline runs; here it is
compiled against its columns, given by ``--source name=PATH_OR_TABLE`` (a file, directory, glob
or table with the same columns and types, as ``wid query`` reads a SOURCE) or ``--schema
name=DDL``. Bad arguments, queries and window kinds without a SQL form are reported before
Spark starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from wid.errors import WidError
from wid.source import Source
from wid.windows.clause import parse_window
from wid.windows.sqlexpr import name_parts, qualified
from wid.sql.text import to_sql
from wid.compiler.text import WindowQuery


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid sql-pipeline`` subcommand's parser."""
    parser = subparsers.add_parser("sql-pipeline", help="write window queries as a Declarative Pipeline's SQL "
                                   "files (CREATE MATERIALIZED VIEW)")
    parser.add_argument("out", metavar="OUT_DIR", help="folder of the pipeline's SQL definitions (made if missing)")
    parser.add_argument("--view", nargs=2, action="append", required=True, metavar=("NAME", "QUERY"),
                        help="a materialized view NAME holding window query QUERY's result (repeatable)")
    parser.add_argument("--source", action="append", default=[], metavar="NAME=PATH_OR_TABLE",
                        help="the columns of the dataset NAME that queries read, from a file, directory, glob "
                             "or table like it (repeatable)")
    parser.add_argument("--schema", action="append", default=[], metavar="NAME=DDL",
                        help="the columns of the dataset NAME as a DDL string, e.g. 'ts timestamp, k string' "
                             "(repeatable)")
    parser.add_argument("--replace", action="store_true", help="overwrite a view's file that exists")
    parser.set_defaults(command=write)
    return parser


def definition(name: str, query_text: str, text: str) -> str:
    """The SQL file of materialized view ``name``: the window query it holds (as comments), then
    ``CREATE MATERIALIZED VIEW`` with its SQL ``text``.

    >>> print(definition("hi", "SELECT max(v) AS hi\\nFROM s [RANGE 4 SLIDE 2 WATTR ts]", "SELECT 1 AS hi"))
    -- Written by `wid sql-pipeline` from the window query:
    --   SELECT max(v) AS hi
    --   FROM s [RANGE 4 SLIDE 2 WATTR ts]
    CREATE MATERIALIZED VIEW `hi` AS
    SELECT 1 AS hi;
    <BLANKLINE>
    """
    query = "\n".join(f"--   {line}".rstrip() for line in query_text.strip().splitlines())
    return (f"-- Written by `wid sql-pipeline` from the window query:\n{query}\n"
            f"CREATE MATERIALIZED VIEW {qualified(name)} AS\n{text};\n")


def _declared(args: argparse.Namespace) -> dict[str, Source | str]:
    """Each ``--source`` (a :class:`Source`) and ``--schema`` (its DDL) by its lower-case name."""
    declared: dict[str, Source | str] = {}
    for option, given in (("--source", args.source), ("--schema", args.schema)):
        for item in given:
            name, sep, value = item.partition("=")
            if not (sep and name.strip() and value.strip()):
                raise WidError(f"{option} {item}: expected NAME={'PATH_OR_TABLE' if option == '--source' else 'DDL'}")
            name = name.strip()
            if name.lower() in declared:
                raise WidError(f"the columns of {name} are given twice")
            declared[name.lower()] = Source.find(value.strip(), name) if option == "--source" else value.strip()
    return declared


def _checked(args: argparse.Namespace) -> list[tuple[str, str, Source | str]]:
    """``(view name, query, its source)`` of each ``--view``, checked before Spark starts."""
    declared = _declared(args)
    views = []
    for name, query_text in args.view:
        name_parts(name)  # a table name Spark reads
        parsed = WindowQuery.parse(query_text)
        refusal = parse_window(parsed.window).sql_refusal
        if refusal:
            raise WidError(f"view {name}: {refusal}")
        source = declared.get(parsed.source.strip("`").lower())
        if source is None:
            raise WidError(f"view {name} reads FROM {parsed.source}: give its columns with --source "
                           f"{parsed.source}=PATH_OR_TABLE or --schema {parsed.source}=DDL")
        views.append((name, query_text, source))
    files = [Path(args.out, f"{name_parts(name)[-1]}.sql") for name, _, _ in views]
    if len(set(files)) < len(files):
        raise WidError("two views share a name: each is written to its own NAME.sql")
    for path in files:
        if path.exists() and not args.replace:
            raise WidError(f"{path} exists: pass --replace to overwrite it")
    return views


def write(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid sql-pipeline``: compile each view's query (:func:`wid.to_sql` against its source's
    columns) and write its file; prints one line per file."""
    views = _checked(args)
    spark = session()
    texts = []
    for name, query_text, source in views:
        try:
            if isinstance(source, Source):
                text = to_sql(spark, query_text, source=source.frame(spark))
            else:
                text = to_sql(spark, query_text, schema=source)
        except WidError as error:
            raise WidError(f"view {name}: {error}") from None
        texts.append((name, definition(name, query_text, text)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, content in texts:
        path = out / f"{name_parts(name)[-1]}.sql"
        path.write_text(content, encoding="utf-8")
        print(f"wrote {path} (CREATE MATERIALIZED VIEW {name})")
    return 0
