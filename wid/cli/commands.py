"""The ``wid`` command line: ``wid query``, ``wid replay``, ``wid run PLAN.toml``, ``wid sql``, ...

Each subcommand module exposes ``add_parser(subparsers) -> ArgumentParser`` whose parser sets
``command=fn`` with ``fn(args, session) -> int``, ``session()`` giving the Spark session (started
on first call, so bad arguments fail before a JVM starts); list it in :data:`SUBCOMMANDS` and
its examples in :data:`EXAMPLES`. Bad input (a :class:`WidError`, a Spark error raised by wid's
checks, an unresolvable query) ends with one line on stderr and exit status 2. The JVM's own
output (log4j, its warnings) goes to a log file unless ``--verbose``; a spinner on the terminal
shows while Spark starts.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import warnings
from importlib.metadata import PackageNotFoundError, version
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from wid.bench import main as bench
from wid.bench import experiment
from wid.cli import live as live_cli
from wid.cli import query as query_cli
from wid.sql import pipeline, serve
from wid.sql import shell as sqlshell
from wid.console import SPARK_ERRORS, WID_MESSAGE, log, one_line, plural, table
from wid.errors import WidError, quiet_analysis
from wid.plan import Plan
from wid.compiler.query import query
from wid.cli.progress import Progress
from wid.session import jvm_output, local_session, remote_session
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
    plan.check(replaying="replay" in plan.sections)
    spark = session()
    source = plan.register(spark, args.rows)
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
    out = query_cli.in_shown_order(out, plan.query, source.columns)
    if args.out:
        rows = query_cli.write_folder(out, args.out if "://" in args.out else str(Path(args.out).resolve()), args.format)
        print(f"wrote {plural(rows, 'row')} to {args.out} ({args.format})")
        return 0
    print(table(out, args.limit))
    if late is not None:
        print(f"late: {plural(late.count(), '(tuple, window) row')}")
    return 0


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


SUBCOMMANDS = [query_cli.add_query_parser, query_cli.add_replay_parser, add_run_parser, sqlshell.add_parser,
               serve.add_parser, live_cli.add_parser, bench.add_parser, experiment.add_parser, pipeline.add_parser]

#: One or two examples per subcommand, shown at the end of its ``--help``.
EXAMPLES = {
    "query": ['wid query events.csv "SELECT key, max(value) AS hi, count(*) AS n '
              'FROM events [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY key"',
              'wid query data/ --as readings --format csv "SELECT count(*) AS n FROM readings '
              '[SESSION 30 SECONDS WATTR ts]" > sessions.csv'],
    "replay": ['wid replay events.csv --arrival source --punctuation "slack(30)" '
               '"SELECT key, count(*) AS n FROM events [RANGE 1 MINUTE SLIDE 1 MINUTE WATTR ts] GROUP BY key"',
               'wid replay events.csv --arrival received --punctuation "heartbeat(every=10, skew=5, clock=received)" '
               '--allowed-lateness 60 --out replayed/ "SELECT count(*) AS n FROM events [RANGE 60 SECONDS SLIDE 60 '
               'SECONDS WATTR ts]"'],
    "run": ["wid run plans/q1_traffic.toml", "wid run plans/replay_lateness.toml --out result/ --format csv"],
    "sql": ["wid sql -e \"CREATE VIEW q1 AS SELECT seg_id, max(speed) AS hi FROM traffic "
            "[RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id\"", "wid sql -f views.sql"],
    "serve": ["wid serve --port 10000   # then: beeline -u jdbc:hive2://127.0.0.1:10000"],
    "live": ["wid live plans/live_traffic.toml", "wid live plans/live_sessions.toml --dir work/ --limit 5"],
    "bench": ["wid bench --rows 2000000", "wid bench --rows 20000000 --chart docs/bench_20m.png"],
    "experiment": ["wid experiment plans/exp2_bounded_disorder.toml"],
    "sql-pipeline": ['wid sql-pipeline transformations/ --source readings=data/readings.csv --view speed_windows '
                     '"SELECT seg_id, max(speed) AS hi FROM readings [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] '
                     'GROUP BY seg_id"'],
}


def _session_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", metavar="URL", help="Spark master for the embedded session (default local[2])")
    where.add_argument("--remote", metavar="sc://HOST:PORT", help="use a Spark Connect server instead")
    parser.add_argument("--verbose", action="store_true", help="show Spark's own log lines and warnings")


def parser() -> argparse.ArgumentParser:
    """The ``wid`` argument parser, one subparser per entry of :data:`SUBCOMMANDS`, each ending
    its help with its :data:`EXAMPLES`."""
    top = argparse.ArgumentParser(prog="wid", description="Window-ID (WID) window aggregates on Spark.",
                                  epilog="Run `wid COMMAND --help` for a command's options and examples.")
    top.add_argument("--version", action="version", version=f"wid {_version()}")
    subparsers = top.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")
    for add_parser in SUBCOMMANDS:
        sub = add_parser(subparsers)
        _session_options(sub)
        examples = EXAMPLES[sub.prog.split()[-1]]
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        sub.epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    return top


def _version() -> str:
    try:
        return version("wid")
    except PackageNotFoundError:  # a checkout on sys.path, not installed
        return "unknown (not installed)"


@contextmanager
def _logging():
    """Progress (the ``wid`` logger) on stderr. PySpark logs each analysis error it captures with
    its query context; here it is reported in one line instead (:func:`quiet_analysis`)."""
    progress, level = logging.StreamHandler(sys.stderr), log.level
    log.addHandler(progress)
    log.setLevel(logging.INFO)
    try:
        with quiet_analysis():
            yield
    finally:
        log.removeHandler(progress)
        log.setLevel(level)


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point of the ``wid`` console script; ``spark`` (default: the active session, if any)
    is used unless ``--master`` or ``--remote`` asks for another."""
    args = parser().parse_args(argv)
    started: list[SparkSession] = []
    progress = Progress()
    jvm_log = None if args.verbose else Path(tempfile.gettempdir(), f"wid-spark-{os.getpid()}.log")

    @cache
    def session() -> SparkSession:
        with progress.step("starting Spark"), jvm_output(jvm_log):
            if args.remote:
                started.append(remote_session(args.remote))
            elif args.master or not (spark or SparkSession.getActiveSession()):
                start = getattr(args, "start", None)  # a subcommand's own embedded session
                started.append(start(args) if start else local_session(args.master or "local[2]"))
                # failed tasks would log stack traces; errors are reported here
                started[0].sparkContext.setLogLevel("OFF")
            else:
                return spark or SparkSession.getActiveSession()
        return started[0]

    try:
        with _logging(), warnings.catch_warnings(), progress.step("running", after=2.0):
            if not args.verbose:
                warnings.simplefilter("ignore")  # PySpark's Python warnings (e.g. on Arrow fallbacks)
            return args.command(args, session)
    except WidError as error:
        print(f"wid: {error}", file=sys.stderr)
    except SPARK_ERRORS as error:
        if not (WID_MESSAGE.search(str(error)) or isinstance(error, AnalysisException)):
            raise
        print(f"wid: {one_line(error)}", file=sys.stderr)
    except BaseException:  # a bug, not bad input: keep Spark's log for the report
        if jvm_log is not None and jvm_log.exists():
            print(f"wid: Spark's log of this run: {jvm_log}", file=sys.stderr)
            jvm_log = None
        raise
    finally:
        for owned in started:
            owned.stop()
        if jvm_log is not None:
            jvm_log.unlink(missing_ok=True)
    return BAD_INPUT

if __name__ == "__main__":
    sys.exit(main())
