"""``wid experiment PLAN.toml``: latency-accuracy curves of punctuation schemes (paper, Exp. 2-3).

A plan (see :mod:`wid.plan`) with an ``[experiment]`` table::

    [experiment]
    metric = "v"                   # the aggregate compared with the exact result
    accuracy = "avg_rel_error"     # y axis: avg_rel_error or frac_incorrect
    latency = "latency"            # x axis: latency (arrival-clock seconds) or latency_rows
    csv = "../docs/exp2.csv"       # relative to the plan file
    png = "../docs/exp2.png"

    [[experiment.curves]]
    label = "slack, generous"
    punctuation = "slack"          # slack | heartbeat | ordered_by | source | none
    mode = "generous"
    amount = [0, 2, 4, 8]          # one list-valued option is the swept parameter

``source`` is the stream's own punctuations (:func:`wid.datasets.disorder.source_punctuations`
for the plan's disorder ``kind``). Every point is one :func:`wid.stream.replay` and one
:func:`wid.stream.metrics.summary`; only the summary row reaches the driver.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import SparkSession

from wid.console import log
from wid.errors import WidError
from wid.plan import Plan
from wid.compiler.query import query
from wid.stream import punctuate
from wid.stream.metrics import summary
from wid.stream.replay import replay

SCHEMES = ("slack", "heartbeat", "ordered_by", "source", "none")
FIELDS = ["label", "punctuation", "parameter", "value", "extents", "late_rows", "latency", "latency_rows",
          "avg_rel_error", "frac_incorrect", "seconds"]


def _points(curve: dict[str, Any]) -> list[tuple[str, Any, dict[str, Any]]]:
    """``(swept parameter, value, options)`` for each point of ``curve``."""
    options = {k: v for k, v in curve.items() if k not in ("label", "punctuation")}
    swept = [k for k, v in options.items() if isinstance(v, list) and k != "keys"]
    if len(swept) > 1:
        raise WidError(f"curve {curve.get('label')!r} sweeps more than one option: {', '.join(swept)}")
    if not swept:
        return [("", "", options)]
    name = swept[0]
    return [(name, value, {**options, name: value}) for value in options[name]]


def punctuation_of(scheme: str, options: dict[str, Any], plan: Plan, stream):
    """The generator named ``scheme`` with ``options`` from ``plan`` (None for "none"); bad options
    are a :class:`WidError` naming the plan.

    >>> plan = Plan(Path("plans/demo.toml"), "SELECT count(*) AS n FROM r [RANGE 4 SLIDE 2 WATTR ts]", "r",
    ...             {"path": "r.parquet"})
    >>> punctuation_of("slack", {"amount": 2, "mode": "consistent"}, plan, None), punctuation_of("none", {}, plan, None)
    (Slack(amount=2, mode='consistent', by='value'), None)
    >>> punctuation_of("slack", {"amout": 2}, plan, None)
    Traceback (most recent call last):
    wid.errors.WidError: plan plans/demo.toml: bad slack options: slack() got an unexpected keyword argument 'amout'
    >>> punctuation_of("source", {}, plan, None)
    Traceback (most recent call last):
    wid.errors.WidError: plan plans/demo.toml: punctuation 'source' needs the disorder generator
    """
    try:
        if scheme == "slack":
            return punctuate.slack(**options)
        if scheme == "heartbeat":
            return punctuate.heartbeat(**options)
        if scheme == "ordered_by":
            return punctuate.ordered_by(*options.pop("keys", []), **options)
    except TypeError as error:
        raise WidError(f"plan {plan.path}: bad {scheme} options: {error}") from None
    if scheme == "source":
        from wid.datasets.disorder import source_punctuations

        if plan.input.get("generator") != "disorder":
            raise WidError(f"plan {plan.path}: punctuation 'source' needs the disorder generator")
        return punctuate.embedded(source_punctuations(stream, plan.input.get("kind", "bounded")), **options)
    if scheme == "none":
        return None
    raise WidError(f"plan {plan.path}: punctuation must be one of {', '.join(SCHEMES)}, got {scheme!r}")


def run_experiment(spark: SparkSession, plan: Plan, rows: int | None = None) -> list[dict[str, Any]]:
    """One CSV row per point of every curve of ``plan``'s ``[experiment]``."""
    settings = plan.sections.get("experiment")
    if not settings or not settings.get("curves"):
        raise WidError(f"plan {plan.path}: needs an [experiment] table with [[experiment.curves]]")
    metric = settings.get("metric")
    if not metric:
        raise WidError(f"plan {plan.path}: [experiment] needs metric = <aggregate alias>")
    stream = plan.source(spark, rows).cache()
    stream.createOrReplaceTempView(plan.view)
    exact = query(spark, plan.query).cache()  # shared by every point's accuracy (same plan, cached)
    out = []
    for curve in settings["curves"]:
        scheme = curve.get("punctuation", "")
        for parameter, value, options in _points(curve):
            started = time.monotonic()
            rep = replay(spark, plan.query, punctuation_of(scheme, dict(options), plan, stream))
            figures = summary(rep, metric)
            out.append({"label": curve.get("label", scheme), "punctuation": scheme, "parameter": parameter,
                        "value": value, **figures, "seconds": round(time.monotonic() - started, 1)})
            log.info(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in out[-1].items()))
    exact.unpersist()
    stream.unpersist()
    return out


def write_csv(points: list[dict[str, Any]], path: Path) -> None:
    """``points`` as a CSV file at ``path`` (its directory made): a header of :data:`FIELDS`, a row per
    point, empty where a point has no value.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_csv([{"label": "slack", "punctuation": "slack", "parameter": "amount", "value": 2, "late_rows": 3}],
    ...               Path(d, "docs", "exp.csv"))
    ...     print(Path(d, "docs", "exp.csv").read_text(), end="")
    label,punctuation,parameter,value,extents,late_rows,latency,latency_rows,avg_rel_error,frac_incorrect,seconds
    slack,slack,amount,2,,3,,,,,
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(points)


def plot(points: list[dict[str, Any]], path: Path, title: str, latency: str, accuracy: str) -> None:
    """Latency (x) against error (y, percent), one line per curve, points labelled by the swept value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for label in dict.fromkeys(p["label"] for p in points):
        curve = [p for p in points if p["label"] == label and p[latency] is not None]
        xs, ys = [p[latency] for p in curve], [100 * p[accuracy] for p in curve]
        ax.plot(xs, ys, marker="o" if len(curve) > 1 else "*", markersize=6 if len(curve) > 1 else 14, label=label)
        for p, x, y in zip(curve, xs, ys):
            if p["parameter"]:
                ax.annotate(f"{p['value']:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel({"latency": "mean latency after extent end (arrival-clock seconds)",
                   "latency_rows": "mean latency after extent end (rows)"}[latency])
    ax.set_ylabel({"avg_rel_error": "average relative error (%)",
                   "frac_incorrect": "incorrect answers (%)"}[accuracy])
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def experiment(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid experiment``: run the plan's curves, write the CSV and the PNG plot."""
    plan = Plan.load(args.plan)
    settings = plan.sections.get("experiment", {})
    latency, accuracy = settings.get("latency", "latency"), settings.get("accuracy", "avg_rel_error")
    if latency not in ("latency", "latency_rows") or accuracy not in ("avg_rel_error", "frac_incorrect"):
        raise WidError(f"plan {plan.path}: latency must be latency|latency_rows, "
                       "accuracy avg_rel_error|frac_incorrect")
    points = run_experiment(session(), plan, args.rows)
    base = plan.path.parent
    csv_path = Path(args.csv) if args.csv else base / settings.get("csv", plan.path.with_suffix(".csv").name)
    write_csv(points, csv_path)
    print(f"wrote {csv_path}")
    png = args.png or (base / settings["png"] if "png" in settings else None)
    if png:
        plot(points, Path(png), plan.title or plan.path.stem, latency, accuracy)
        print(f"wrote {png}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid experiment`` subcommand's parser (:func:`run` runs it)."""
    parser = subparsers.add_parser("experiment", help="latency-accuracy curves of punctuation schemes (replay)")
    parser.add_argument("plan", help="plan file (TOML) with an [experiment] table")
    parser.add_argument("--rows", type=int, metavar="N", help="override the generator's row count")
    parser.add_argument("--csv", metavar="PATH", help="CSV output (default: the plan's experiment.csv)")
    parser.add_argument("--png", metavar="PATH", help="plot output (default: the plan's experiment.png)")
    parser.set_defaults(command=experiment)
    return parser
