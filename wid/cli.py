"""The ``wid`` command line: ``wid run PLAN.toml`` and ``wid bench``.

Each subcommand module exposes ``add_parser(subparsers) -> ArgumentParser`` whose parser sets
``command=fn`` with ``fn(args, session) -> int``, ``session()`` giving the Spark session (started
on first call, so bad arguments fail before a JVM starts); list it in :data:`SUBCOMMANDS`.
Bad input (a :class:`WidError`, a Spark error raised by wid's checks, an unresolvable query)
ends with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.logger import PySparkLogger
from pyspark.sql import DataFrame, SparkSession

from wid import bench, experiment, live_cli, serve, sqlshell
from wid.console import SPARK_ERRORS, WID_MESSAGE, log, one_line, table
from wid.errors import WidError
from wid.plan import Plan
from wid.compiler import WindowQuery, query
from wid.session import local_session, remote_session
from wid.spec.clause import parse_window
from wid.spec.sqlexpr import columns
from wid.stream.replay import replay

BAD_INPUT = 2


def add_run_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid run`` subcommand's parser."""
    parser = subparsers.add_parser("run", help="run a plan (query + input) and print or write the result")
    parser.add_argument("plan", help="plan file (TOML)")
    parser.add_argument("--out", metavar="DIR", help="write the result to DIR instead of printing it")
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet", help="format for --out")
    parser.add_argument("--rows", type=int, metavar="N", help="generate N rows, or read the first N of a file")
    parser.add_argument("--limit", type=int, default=50, metavar="N", help="rows to print (default 50)")
    parser.set_defaults(command=run)
    return parser


def run(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid run``: the plan's exact result, printed sorted by keys then wid, or written to ``--out``."""
    if args.rows is not None and args.rows < 0:
        raise WidError("--rows must be >= 0")
    if args.limit < 0:
        raise WidError("--limit must be >= 0")
    if args.out:
        writable(args.out)
    plan = Plan.load(args.plan)
    spark = session()
    source = plan.register(spark, args.rows)
    if "path" in plan.input:
        _has_window_attribute(plan, source)
    # a [flink] table holds the trigger/eviction policies of a query whose window clause is [flink];
    # a [replay] table replays the query: punctuation = scheme (as in [experiment] curves) + options,
    # allowed_lateness
    late = None
    window = plan.window
    if "replay" in plan.sections:
        options = dict(plan.sections["replay"])
        scheme, lateness = options.pop("punctuation", "none"), options.pop("allowed_lateness", 0)
        rep = replay(spark, plan.query, experiment.punctuation_of(scheme, options, plan, source),
                     allowed_lateness=lateness, window=window)
        out, late = rep.results, rep.late
    else:
        out = query(spark, plan.query, window)
    if args.out:
        writer = out.write.mode("errorifexists")
        (writer.option("header", True).csv if args.format == "csv" else writer.parquet)(args.out)
        print(f"wrote {args.out} ({args.format})")
        return 0
    if not WindowQuery.parse(plan.query).order_by:
        keys = [c for c in out.columns if c != "wid" and c in source.columns]
        out = out.orderBy(*columns(keys), "wid", *columns([c for c in out.columns if c not in keys and c != "wid"]))
    print(table(out, args.limit))
    if late is not None:
        print(f"late: {late.count()} (tuple, window) rows")
    return 0


def _has_window_attribute(plan: Plan, source: DataFrame) -> None:
    """A :class:`WidError` naming the column and the file when the input lacks the window attribute."""
    window = WindowQuery.parse(plan.query).window
    wattr = parse_window(window).wattr if "flink" not in plan.sections else None
    if wattr and wattr.lower() not in {c.lower() for c in source.columns}:
        raise WidError(f"input file {plan.data_path} has no column {wattr!r} (the window attribute)")


def writable(out: str) -> None:
    """A :class:`WidError` unless ``out`` (a local directory path) is new and can be created; a URL
    (``scheme://...``) is not checked. The check leaves nothing behind.

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> writable(str(Path(tmp.name, "out"))), Path(tmp.name, "out").exists(), writable("s3a://bucket/out")
    (None, False, None)
    >>> writable(tmp.name)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: --out /... already exists
    >>> writable(str(Path(tmp.name, "no", "out")))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: --out /.../no/out: cannot create the directory (No such file or directory)
    >>> tmp.cleanup()
    """
    path = Path(out)
    if "://" in out:
        return
    if path.exists():
        raise WidError(f"--out {out} already exists")
    try:
        path.mkdir()
        path.rmdir()
    except OSError as error:
        raise WidError(f"--out {out}: cannot create the directory ({error.strerror})") from None


SUBCOMMANDS = [add_run_parser, bench.add_parser, experiment.add_parser, live_cli.add_parser, sqlshell.add_parser,
               serve.add_parser]


def _session_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", metavar="URL", help="Spark master for the embedded session (default local[2])")
    where.add_argument("--remote", metavar="sc://HOST:PORT", help="use a Spark Connect server instead")


def parser() -> argparse.ArgumentParser:
    """The ``wid`` argument parser, one subparser per entry of :data:`SUBCOMMANDS`."""
    top = argparse.ArgumentParser(prog="wid", description="Window-ID (WID) window aggregates on Spark.")
    subparsers = top.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")
    for add_parser in SUBCOMMANDS:
        _session_options(add_parser(subparsers))
    return top


@contextmanager
def _logging():
    """Progress (the ``wid`` logger) on stderr. PySpark logs each analysis error it captures with
    its query context; here it is reported in one line instead."""
    # PySpark's own logger class: a plain Logger made here first would break PySpark's later logging calls
    loggers = [PySparkLogger.getLogger(name) for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    saved = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    progress, level = logging.StreamHandler(sys.stderr), log.level
    log.addHandler(progress)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(progress)
        log.setLevel(level)
        for logger, disabled in zip(loggers, saved):
            logger.disabled = disabled


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point of the ``wid`` console script; ``spark`` (default: the active session, if any)
    is used unless ``--master`` or ``--remote`` asks for another."""
    args = parser().parse_args(argv)
    started: list[SparkSession] = []

    @cache
    def session() -> SparkSession:
        if args.remote:
            started.append(remote_session(args.remote))
        elif args.master or not (spark or SparkSession.getActiveSession()):
            start = getattr(args, "start", None)  # a subcommand's own embedded session
            started.append(start(args) if start else local_session(args.master or "local[2]"))
            started[0].sparkContext.setLogLevel("OFF")  # failed tasks would log stack traces; errors are reported here
        else:
            return spark or SparkSession.getActiveSession()
        return started[0]

    try:
        with _logging():
            return args.command(args, session)
    except WidError as error:
        print(f"wid: {error}", file=sys.stderr)
    except SPARK_ERRORS as error:
        if not (WID_MESSAGE.search(str(error)) or isinstance(error, AnalysisException)):
            raise
        print(f"wid: {one_line(error)}", file=sys.stderr)
    finally:
        for owned in started:
            owned.stop()
    return BAD_INPUT

if __name__ == "__main__":
    sys.exit(main())
