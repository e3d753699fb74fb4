"""``wid bench``: ``wid.query`` against its compiled SQL (a window view's text, :func:`wid.to_sql`),
Spark's ``window()`` group-by and a tumbling group-by.

One generated traffic stream (cached) serves every case. For each ratio ``r/s`` (slide ``s``
fixed, range ``r = ratio * s``) every case in :data:`CASES` builds its DataFrame, which is
evaluated in full through the ``noop`` sink; the median of ``--repeat`` runs (the cases
interleaved; a case over :data:`ONCE` seconds runs once) is reported after one warm-up run per
case (a progress line per run), and ``--chart`` draws time against range/slide. To add a case,
append a :class:`Case` (and, if wanted, a pair to :data:`RATIOS`).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.bench.common import VIEW, cached, progress_lines, timed
from wid.bench.scale import scale
from wid.bench.kinds import REPLAY_QUERY, ROWS_CLAUSE, SPL_CLAUSE, fca, replay_vs_query, rows_parallel, spl, spl_delta
from wid.console import aligned
from wid.errors import WidError
from wid.bench.live import live_bench
from wid.bench.periods import periods
from wid.compiler.query import query
from wid.sql.text import to_sql


@dataclass(frozen=True)
class Case:
    """A named way to compute the windowed aggregates of the stream (temp view ``traffic``,
    also passed as ``data``) for range ``r`` and slide ``s``, in seconds."""

    name: str
    build: Callable[[SparkSession, DataFrame, int, int], DataFrame]


def _aggregates() -> list[Column]:
    return [F.count("*").alias("n"), F.min("speed").alias("lo"), F.max("speed").alias("hi"), F.avg("speed").alias("mean")]


def _query_text(r: int, s: int) -> str:
    return ("SELECT seg_id, count(*) AS n, min(speed) AS lo, max(speed) AS hi, avg(speed) AS mean "
            f"FROM {VIEW} [RANGE {r} SECONDS SLIDE {s} SECONDS WATTR ts] GROUP BY seg_id")


def wid_query(spark: SparkSession, data: DataFrame, r: int, s: int) -> DataFrame:
    """``wid.query`` of the sliding window (range ``r``, slide ``s`` seconds) per segment."""
    return query(spark, _query_text(r, s))


@cache
def _view_text(spark: SparkSession, r: int, s: int) -> str:
    return to_sql(spark, _query_text(r, s))


def wid_view(spark: SparkSession, data: DataFrame, r: int, s: int) -> DataFrame:
    """The query's compiled SQL (:func:`wid.to_sql`, the text of a window view, compiled once as a
    view's is) through ``spark.sql``."""
    return spark.sql(_view_text(spark, r, s))


def spark_window(spark: SparkSession, data: DataFrame, r: int, s: int) -> DataFrame:
    """The same windows by Spark's ``window()`` group-by."""
    return data.groupBy("seg_id", F.window("ts", f"{r} seconds", f"{s} seconds")).agg(*_aggregates())


def tumbling(spark: SparkSession, data: DataFrame, r: int, s: int) -> DataFrame:
    """The floor of the cost: each tuple in exactly one group (range ignored)."""
    return data.groupBy("seg_id", F.floor(F.unix_seconds("ts") / s).alias("wid")).agg(*_aggregates())


#: Seconds past which a case's first run is its only one (its spread is small beside its time).
ONCE = 60.0
CASES = [Case("wid", wid_query), Case("wid view", wid_view), Case("window()", spark_window),
         Case("tumbling", tumbling)]
#: Table columns comparing two cases: (numerator, denominator) of their times.
RATIOS = [("window()", "wid"), ("wid view", "wid"), ("wid", "tumbling")]


def check(spark: SparkSession, data: DataFrame, r: int, s: int) -> None:
    """Fail unless wid's count, min and max per (segment, window) equal Spark ``window()``'s,
    with ``wid = end / s - 1`` for the window ending at ``end``."""
    ours = wid_query(spark, data, r, s).select("seg_id", "wid", "n", "lo", "hi")
    theirs = spark_window(spark, data, r, s).select(
        "seg_id", (F.unix_seconds("window.end") / s - 1).cast("long").alias("wid"), "n", "lo", "hi"
    )
    differ = ours.exceptAll(theirs).count() + theirs.exceptAll(ours).count()
    if differ:
        raise RuntimeError(f"wid and window() differ on {differ} rows at range {r} s, slide {s} s")
    view = wid_view(spark, data, r, s).select(*ours.columns)
    if ours.exceptAll(view).count() + view.exceptAll(ours).count():
        raise RuntimeError(f"wid.query and its compiled SQL differ at range {r} s, slide {s} s")


def seconds(case: Case, spark: SparkSession, data: DataFrame, r: int, s: int) -> float:
    """Wall-clock time to build the case and evaluate it in full (``noop`` sink)."""
    return timed(lambda: case.build(spark, data, r, s))


def bench(
    spark: SparkSession,
    rows: int,
    ratios: list[int],
    segments: int = 50,
    slide: int = 60,
    repeat: int = 3,
) -> dict[int, dict[str, float]]:
    """Median time in seconds per ratio and case, on ``traffic(spark, rows, segments)``: ``repeat``
    runs of each case, interleaved, but one of a case whose first run took more than :data:`ONCE`."""
    progress = progress_lines()
    with cached(spark, rows, segments) as data:
        progress(f"generated and cached {data.count()} rows, {segments} segments")
        middle = ratios[len(ratios) // 2]
        check(spark, data, middle * slide, slide)
        progress(f"checked: wid = window() (count, min, max) at range/slide {middle}")
        for case in CASES:
            seconds(case, spark, data, ratios[0] * slide, slide)
        progress("warmed up")
        times: dict[int, dict[str, float]] = {}
        for ratio in ratios:
            runs: dict[str, list[float]] = {case.name: [] for case in CASES}
            for run_ in range(repeat):  # the cases interleaved: a drift of the machine's speed hits them alike
                for case in CASES:
                    if run_ and runs[case.name][0] > ONCE:
                        continue
                    runs[case.name].append(seconds(case, spark, data, ratio * slide, slide))
                    once = f" (over {ONCE:.0f} s: timed once)" if repeat > 1 and runs[case.name][0] > ONCE else ""
                    progress(f"range/slide {ratio}: {case.name} run {run_ + 1}/{repeat} {runs[case.name][-1]:.2f} s{once}")
            times[ratio] = {name: statistics.median(taken) for name, taken in runs.items()}
        return times


def report(times: dict[int, dict[str, float]], slide: int) -> str:
    """The table of times and ratios, and wid's cost at the largest vs the smallest ratio."""
    header = ["range/slide", "range s", *(f"{c.name} s" for c in CASES), *(f"{a}/{b}" for a, b in RATIOS)]
    rows = [
        [str(ratio), str(ratio * slide), *(f"{t[c.name]:.2f}" for c in CASES), *(f"{t[a] / t[b]:.2f}" for a, b in RATIOS)]
        for ratio, t in times.items()
    ]
    lines = aligned(header, rows, [True] * len(header))
    low, high = min(times), max(times)
    lines.append(f"wid cost at range/slide {high} vs {low}: {times[high]['wid'] / times[low]['wid']:.2f}x")
    return "\n".join(lines)


def chart(times: dict[int, dict[str, float]], slide: int, rows: int, path: str) -> None:
    """A PNG at ``path``: seconds against range/slide, one line per case, both axes log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = sorted(times)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for case in CASES:
        ax.plot(ratios, [times[r][case.name] for r in ratios], marker="o", label=case.name)
    ax.set(xscale="log", yscale="log", xlabel=f"range / slide (slide {slide} s)", ylabel="seconds (median)",
           title=f"wid bench: {rows:,} rows")
    ax.set_xticks(ratios, [str(r) for r in ratios])
    ax.tick_params(axis="x", which="minor", labelbottom=False)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ratios(text: str) -> list[int]:
    try:
        ratios = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not ratios or min(ratios) < 1:
        raise argparse.ArgumentTypeError(f"ratios must be >= 1, got {text!r}")
    return ratios


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid bench`` subcommand's parser (:func:`run` runs it)."""
    parser = subparsers.add_parser("bench", help="time wid.query against Spark's window() and a tumbling group-by")
    parser.add_argument("--rows", type=int, default=2_000_000, help="generated rows (default 2000000)")
    parser.add_argument("--ratios", type=_ratios, default=[5, 60, 240], help="range/slide ratios (default 5,60,240)")
    parser.add_argument("--segments", type=int, default=50, help="road segments (default 50)")
    parser.add_argument("--slide", type=int, default=60, help="slide in seconds (default 60)")
    parser.add_argument("--repeat", type=int, default=3,
                        help=f"timed runs per case, interleaved (default 3; the table: median; one if over {ONCE:.0f} s)")
    parser.add_argument("--chart", metavar="PNG", default="bench.png",
                        help="where to write the chart of time against range/slide (default bench.png)")
    parser.add_argument("--spl", action="store_true", help=f"time only the SPL clause [{SPL_CLAUSE}] on --rows")
    parser.add_argument("--spl-delta", action="store_true",
                        help="time only the SPL delta clauses on --rows: compiled delta chain vs sequential scan")
    parser.add_argument("--rows-window", action="store_true",
                        help=f"time only [{ROWS_CLAUSE}] on --rows, unpartitioned vs PATTR seg_id (cores busy)")
    parser.add_argument("--fca", type=int, metavar="SECONDS",
                        help="time only slide-by-tuple [RANGE SECONDS RATTR ts SLIDE 1 ROW SATTR row_num] on --rows")
    parser.add_argument("--replay", action="store_true",
                        help="time only wid.replay (heartbeat every 5 s, skew 5 s) against wid.query on --rows "
                             "bounded-disorder readings")
    parser.add_argument("--live", action="store_true",
                        help="time only wid live mode vs Spark's streaming window() with a watermark on --rows, "
                             "--slide and each of --ratios")
    parser.add_argument("--scale", type=int, metavar="REPLAY_ROWS",
                        help="time only a sliding query on --rows and its replay on REPLAY_ROWS disordered rows, "
                             "with peak RSS (JVM, Python driver) and spill")
    parser.add_argument("--periods", action="store_true",
                        help="time only a cumulating window (a day's running aggregates every hour) and a calendar "
                             "window (7 local days of Berlin every day) on --rows readings over about a year, against "
                             "Spark formulations")
    parser.add_argument("--session", type=int, metavar="GAP",
                        help="with --live: session windows of GAP seconds (Spark's session_window) instead")
    parser.set_defaults(command=run)
    return parser


def run(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid bench``: progress on stderr, the table on stdout."""
    if min(args.rows, args.segments, args.slide, args.repeat) < 1:
        raise WidError("--rows, --segments, --slide and --repeat must be >= 1")
    if args.session is not None and (not args.live or args.session < 1):
        raise WidError("--session GAP needs --live and a gap of at least 1 second")
    if args.live:
        if args.session is not None:
            print("\n".join(live_bench(session(), args.rows, args.segments, gap=args.session)))
            return 0
        for ratio in args.ratios:  # Spark's window() makes range/slide copies of each tuple; wid one pane range
            print("\n".join(live_bench(session(), args.rows, args.segments, range_s=ratio * args.slide,
                                       slide_s=args.slide)))
        return 0
    if args.periods:
        times = periods(session(), args.rows, args.segments, args.repeat)
        for kind in ("cumulate", "calendar"):
            wid_s, spark_s = times[f"{kind}: wid"], times[f"{kind}: Spark"]
            print(f"{kind}: wid {wid_s:.2f} s, Spark formulation {spark_s:.2f} s ({spark_s / wid_s:.2f}x wid)")
        return 0
    if args.scale is not None:
        if args.scale < 1:
            raise WidError("--scale needs a number of replayed rows of at least 1")
        print("\n".join(scale(session(), args.rows, args.scale)))
        return 0
    if args.replay:
        times = replay_vs_query(session(), args.rows, args.repeat)
        for name, seconds_ in times.items():
            print(f"[{REPLAY_QUERY}] {name}: {args.rows} rows in {seconds_:.2f} s ({seconds_ / times['query']:.2f}x query)")
        return 0
    if args.spl:
        for name, best in spl(session(), args.rows, args.repeat).items():
            print(f"[{SPL_CLAUSE}] {name}: {args.rows} rows in {best:.2f} s ({args.rows / best:,.0f} rows/s)")
        return 0
    if args.spl_delta:
        for (clause, how), best in spl_delta(session(), args.rows, args.repeat).items():
            print(f"[{clause}] {how}: {args.rows} rows in {best:.2f} s ({args.rows / best:,.0f} rows/s)")
        return 0
    if args.rows_window:
        for name, (wall, cores) in rows_parallel(session(), args.rows, args.repeat).items():
            busy = "" if cores is None else f", {cores:.2f} cores busy"
            print(f"[{ROWS_CLAUSE}] {name}: {args.rows} rows in {wall:.2f} s{busy}")
        return 0
    if args.fca is not None:
        if args.fca < 1:
            raise WidError("--fca needs a range of at least 1 second")
        best = fca(session(), args.rows, args.fca, args.repeat)
        for name, seconds_ in best.items():
            print(f"slide-by-tuple RANGE {args.fca} s: {name} {seconds_:.2f} s ({seconds_ / best['wid']:.2f}x wid)")
        return 0
    times = bench(session(), args.rows, args.ratios, args.segments, args.slide, args.repeat)
    print(report(times, args.slide))
    chart(times, args.slide, args.rows, args.chart)
    print(f"chart: {args.chart}")
    return 0
