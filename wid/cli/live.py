"""``wid live PLAN.toml``: run a plan's query in live mode over its input split into files.

The ``[live]`` table of the plan::

    files = 4                 # parts (one micro-batch each) plus the end-of-stream marker
    punctuation = "slack"     # slack | heartbeat | ordered_by | none, options as in [experiment]
    amount = 5
    allowed_lateness = 7      # session windows only, as [replay]'s (default 0)

The work directory (``--dir``, default a new temporary one) holds ``in/`` (the files),
``checkpoint/`` and ``out/`` (the parquet sink: results and late rows with a ``kind``
column). Run again with the same ``--dir`` to resume from the checkpoint. A line per
micro-batch goes to stderr.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from wid.console import plural, table
from wid.errors import WidError
from wid.bench.experiment import punctuation_of
from wid.plan import Plan
from wid.windows.numbers import positive_whole
from wid.windows.sqlexpr import columns
from wid.stream.live import run as live_run
from wid.stream.live.job import live

def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid live`` subcommand's parser (:func:`run` runs it)."""
    parser = subparsers.add_parser("live", help="run a plan's query as a streaming job (live mode)")
    parser.add_argument("plan", help="plan file (TOML) with a [live] table")
    parser.add_argument("--dir", metavar="DIR", help="work directory: in/, checkpoint/, out/ (resumed if present)")
    parser.add_argument("--rows", type=int, metavar="N", help="only the first N rows of the input")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="result rows to print (default 20)")
    parser.set_defaults(command=run)
    return parser


def run(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid live``: the live query to completion, then a summary and the first results."""
    if args.limit < 0:
        raise WidError("--limit must be >= 0")
    plan = Plan.load(args.plan)
    plan.check(replaying=True)  # live mode reads arrival order as a replay does
    settings = dict(plan.sections.get("live", {}))
    files, buckets = settings.pop("files", 4), settings.pop("buckets", 2)
    scheme, lateness = settings.pop("punctuation", "none"), settings.pop("allowed_lateness", 0)
    for name, value in (("files", files), ("buckets", buckets)):
        positive_whole(f"plan {plan.path}: [live] {name}", value)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="wid-live-"))
    spark = session()
    data = plan.register(spark, args.rows)
    if not (work / "in").exists():
        live_run.split_into_files(data, work / "in", files)
    generator = punctuation_of(scheme, settings, plan, data)
    stream = live_run.source(spark, work / "in")
    job = live(spark, plan.query, stream, generator, buckets=buckets, window=plan.window, allowed_lateness=lateness)
    live_run.run(live_run.start(job, work / "out", work / "checkpoint"))
    results, late = live_run.read_output(spark, job, work / "out")
    print(f"{plural(results.count(), 'result')} and {plural(late.count(), 'late row')} in {work / 'out'} (column kind)")
    print(table(results.orderBy(results.emit_row.asc_nulls_last(), *columns(results.columns[:-1])), args.limit))
    return 0
