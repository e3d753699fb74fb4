"""``wid query SOURCE "QUERY"`` and ``wid replay SOURCE "QUERY" --punctuation TEXT``: a window
query on your own file, directory, glob or catalog table, without a plan.

Everything the text shows is checked before Spark starts (:mod:`wid.preflight`): the query, the
window clause, the source's name and columns, ``--arrival``, ``--punctuation`` and ``--out``.
Results are printed sorted by their keys, then ``wid`` (unless the query has ORDER BY), as a
table, CSV or JSON Lines; ``--out`` writes the same rows, in the same order, to one file.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from wid.compiler.query import query
from wid.console import FORMATS, plural, render, table
from wid.errors import WidError
from wid.preflight import preflight
from wid.source import Source
from wid.windows.base import WindowSpec
from wid.windows.numbers import non_negative
from wid.windows.sqlexpr import columns as column_list
from wid.stream import punctuate
from wid.stream.arrival import arrival
from wid.stream.replay import replay
from wid.compiler.text import WindowQuery

#: ``--punctuation`` generators by name (:mod:`wid.stream.punctuate`); ``embedded`` takes a SOURCE.
GENERATORS = {"slack": punctuate.slack, "heartbeat": punctuate.heartbeat, "ordered_by": punctuate.ordered_by,
              "embedded": punctuate.embedded}
_OUT_FORMATS = {".parquet": "parquet", ".csv": "csv"}


def add_query_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid query`` subcommand's parser."""
    parser = subparsers.add_parser("query", help="run a window query on a file, directory, glob or table")
    _source_options(parser)
    parser.add_argument("--out", metavar="PATH", help="write the rows to one file, parquet or CSV by extension")
    parser.set_defaults(command=run_query)
    return parser


def add_replay_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid replay`` subcommand's parser."""
    parser = subparsers.add_parser("replay", help="replay a window query in arrival order under punctuations")
    _source_options(parser)
    parser.add_argument("--punctuation", required=True, metavar="TEXT",
                        help="slack(AMOUNT), heartbeat(every=.., skew=..), ordered_by(KEY, ..), "
                             "embedded(SOURCE) or none, with the options of wid.punctuate's generators")
    parser.add_argument("--allowed-lateness", type=float, default=0, metavar="L",
                        help="window-attribute units (seconds for timestamps) a window stays open for revisions")
    parser.add_argument("--out", metavar="DIR", help="write results.parquet and late.parquet to DIR")
    parser.set_defaults(command=run_replay)
    return parser


def _source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", help="parquet/CSV/JSON file, directory or glob of them, or a table")
    parser.add_argument("query", metavar="QUERY", help="the window query; FROM names SOURCE (see --as)")
    parser.add_argument("--as", dest="name", metavar="NAME", help="the name FROM uses (default: the file's stem)")
    parser.add_argument("--arrival", metavar="COLUMNS|source",
                        help="add row_num (arrival order): by these columns, ties by position in the source; "
                             "or by position in the source")
    parser.add_argument("--format", choices=FORMATS, default="table", help="how to print rows")
    parser.add_argument("--limit", type=int, metavar="N", help="rows to print (default: 50 in a table, all otherwise)")


@dataclass(frozen=True)
class PunctuationText:
    """``--punctuation TEXT``: a generator of :mod:`wid.stream.punctuate` written as its Python
    call, bare words taken as text (``make`` None for ``none``). :meth:`parse` checks the options
    before Spark starts by building the generator, but for ``embedded``, whose punctuations are
    a SOURCE read once Spark runs (:meth:`generator`).

    >>> PunctuationText.parse("slack(2.5, mode=consistent)").generator(spark)
    Slack(amount=2.5, mode='consistent', by='value')
    >>> PunctuationText.parse("ordered_by(k)").generator(spark), PunctuationText.parse("none").generator(spark)
    (OrderedBy(keys=('k',), mode='generous'), None)
    >>> PunctuationText.parse("slak(5)")
    Traceback (most recent call last):
    wid.errors.WidError: --punctuation slak(5): unknown generator 'slak' (embedded, heartbeat, none, ordered_by, slack)
    """

    text: str
    make: Callable | None = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    @staticmethod
    def parse(text: str) -> PunctuationText:
        """The generator ``text`` names, its options checked (a :class:`WidError` naming ``text``)."""
        known = ", ".join(sorted([*GENERATORS, "none"]))
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            raise WidError(f"--punctuation {text}: expected NAME(OPTIONS), e.g. slack(5) ({known})") from None
        call = node if isinstance(node, ast.Call) else ast.Call(node, [], [])
        name = call.func.id if isinstance(call.func, ast.Name) else ast.unparse(call.func)
        if name == "none" and not (call.args or call.keywords):
            return PunctuationText(text)
        if name not in GENERATORS:
            raise WidError(f"--punctuation {text}: unknown generator {name!r} ({known})")
        if any(k.arg is None for k in call.keywords):
            raise WidError(f"--punctuation {text}: name each option")

        def value(arg: ast.expr):
            if isinstance(arg, ast.Name):
                return arg.id
            try:
                return ast.literal_eval(arg)  # as the Python call would read it
            except ValueError:
                raise WidError(f"--punctuation {text}: {ast.unparse(arg)!r} is not a number, word or 'text'") from None

        parsed = PunctuationText(text, GENERATORS[name], tuple(map(value, call.args)),
                                 {k.arg: value(k.value) for k in call.keywords})
        if parsed.make is punctuate.embedded:
            if not parsed.args:
                raise WidError(f"--punctuation {text}: embedded(SOURCE) needs the file of punctuations")
            Source.find(str(parsed.args[0]))  # the file is there
        else:
            parsed.generator(None)
        return parsed

    def generator(self, spark: SparkSession | None):
        """The generator (``embedded``: over its SOURCE, read by ``spark``)."""
        if self.make is None:
            return None
        args = self.args
        if self.make is punctuate.embedded:
            args = (Source.find(str(args[0])).frame(spark), *args[1:])
        try:
            return self.make(*args, **self.kwargs)
        except TypeError as error:
            raise WidError(f"--punctuation {self.text}: {error}") from None


def run_query(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid query``: the exact result, printed or written to ``--out``."""
    source, order, _ = _checked(args, replaying=False)
    if args.out:
        _new_file(args.out)
        _out_format(Path(args.out))  # before Spark starts
    spark = session()
    _load(spark, source, order)
    out = in_shown_order(query(spark, args.query), args.query, spark.table(source.view).columns)
    if args.out:
        print(f"wrote {_write(out, Path(args.out))} to {args.out}")
    else:
        _print(out, args)
    return 0


def run_replay(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """``wid replay``: results (with ``emit_row`` and ``revision``) and late rows."""
    source, order, spec = _checked(args, replaying=True)
    lateness = non_negative("--allowed-lateness", args.allowed_lateness)
    punctuation = PunctuationText.parse(args.punctuation)
    if spec.refuses_punctuation and punctuation.make is not None:
        raise WidError(f"--punctuation {args.punctuation}: this window's punctuations are implied by arrival order; "
                       "use none")
    if args.out:
        _new_file(args.out)
    spark = session()
    _load(spark, source, order)
    rep = replay(spark, args.query, punctuation.generator(spark), allowed_lateness=lateness)
    results = in_shown_order(rep.results, args.query, spark.table(source.view).columns)
    late = rep.late.orderBy(*column_list(rep.late.columns))
    if args.out:
        folder = Path(args.out)
        folder.mkdir()
        try:
            counts = [_write(frame, folder / f"{name}.parquet") for name, frame in (("results", results), ("late", late))]
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        print(f"wrote {counts[0]} to {folder / 'results.parquet'} and {counts[1]} to {folder / 'late.parquet'}")
        return 0
    _print(results, args)
    if args.format == "table":
        print("\nlate (tuple, window) contributions:")
        _print(late, args)
    else:
        print(f"wid: {plural(late.count(), 'late (tuple, window) row')} not printed: --out DIR keeps them",
              file=sys.stderr)
    return 0


def _checked(args: argparse.Namespace, replaying: bool) -> tuple[Source, list[str] | None, WindowSpec]:
    """The source, the ``--arrival`` order (None: none asked; [] by position) and the query's
    window, every option checked against the source's columns before Spark starts."""
    if args.limit is not None and args.limit < 0:
        raise WidError("--limit must be >= 0")
    source = Source.find(args.source, args.name)
    order = None
    if args.arrival is not None:
        order = [] if args.arrival.strip().lower() == "source" else [c.strip() for c in args.arrival.split(",")]
        if not all(order) and order != []:
            raise WidError(f"--arrival {args.arrival}: expected COLUMN[,COLUMN...] or source")
    source.check_name(WindowQuery.parse(args.query).source)
    columns = source.columns
    if columns is not None:
        if order is not None:
            if "row_num" in columns:
                raise WidError(f"--arrival: {source.name} already has a row_num column (its arrival order)")
            _known(order, columns, source.name)
            columns = (*columns, "row_num")
    _, spec = preflight(args.query, columns, source.name, replaying=replaying,
                             fix="pass --arrival COLUMNS (by those columns, ties by position in the source) "
                                 "or --arrival source")
    return source, order, spec


def _known(names: Sequence[str], columns: Sequence[str], view: str) -> None:
    """A :class:`WidError` for the first of ``names`` that is not one of ``columns``."""
    known = {c.lower() for c in columns}
    for name in names:
        if name.lower() not in known:
            raise WidError(f"unknown column {name!r} in --arrival: {view} has {', '.join(columns)}")


def _load(spark: SparkSession, source: Source, order: list[str] | None) -> None:
    """The source as its temp view, with ``row_num`` when ``--arrival`` asks for it."""
    df = source.load(spark)
    if order is not None:
        arrival(df, by=order or None).createOrReplaceTempView(source.view)


def in_shown_order(out: DataFrame, text: str, columns: Sequence[str]) -> DataFrame:
    """``out``, the result of the query ``text`` over a source of ``columns``, sorted as the
    command line shows it: by the source's columns among its keys, then ``wid``, then the rest;
    as it is when the query has its own ORDER BY.

    >>> text = "SELECT k, count(*) AS n FROM readings [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k"
    >>> [(r.k, r.wid) for r in in_shown_order(wid.query(spark, text), text, ["k", "ts"]).collect()][:3]
    [('a', 0), ('a', 1), ('a', 2)]
    """
    if WindowQuery.parse(text).order_by:
        return out
    names = {c.lower() for c in columns}
    keys = [c for c in out.columns if c != "wid" and c.lower() in names]
    rest = [c for c in out.columns if c not in keys and c != "wid"]
    return out.orderBy(*column_list(keys), "wid", *column_list(rest))


def _print(out: DataFrame, args: argparse.Namespace) -> None:
    """``out`` on stdout as ``--format`` says: a table of its first ``--limit`` rows (default 50),
    CSV or JSON Lines of all rows (or the first ``--limit``), read one at a time."""
    if args.format == "table":
        print(table(out, 50 if args.limit is None else args.limit))
        return
    for line in render((out if args.limit is None else out.limit(args.limit)).toLocalIterator(), out.schema,
                       args.format):
        print(line)


def _new_file(out: str) -> None:
    """A :class:`WidError` unless ``out`` is a new path whose directory exists."""
    path = Path(out)
    if path.exists():
        raise WidError(f"--out {out} already exists")
    if not path.resolve().parent.is_dir():
        raise WidError(f"--out {out}: no directory {path.parent}")


def _out_format(path: Path) -> str:
    """Spark's format for the file ``path`` by its extension (parquet or CSV), else a :class:`WidError`."""
    fmt = _OUT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise WidError(f"--out {path}: expected a .parquet or .csv file")
    return fmt


def _write(out: DataFrame, path: Path) -> str:
    """``out`` written to the single file ``path`` (parquet or CSV by extension) in its order,
    through a hidden folder beside it that is removed, so an error leaves nothing behind; the
    row count, as ``"N row(s)"``."""
    fmt = _out_format(path)
    folder = path.resolve().with_name(f".{path.name}.wid-{os.getpid()}")  # Spark's working directory may differ
    try:
        rows = write_folder(out, str(folder), fmt)
        next(folder.glob("part-*")).rename(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return plural(rows, "row")


def write_folder(out: DataFrame, folder: str, fmt: str) -> int:
    """``out`` written by Spark to the new directory ``folder`` (a path or a URL) as one part file,
    in its order (timestamps with microseconds in CSV); the number of rows written, read back.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp(), "out")
    >>> write_folder(spark.table("readings").orderBy("ts"), str(folder), "csv")
    4
    >>> print(next(folder.glob("part-*")).read_text().splitlines()[1])
    0,1.0,1.5,a,5
    """
    writer = out.coalesce(1).write.mode("errorifexists")
    if fmt == "csv":
        writer.option("header", True).option("timestampFormat", "yyyy-MM-dd HH:mm:ss.SSSSSS").csv(folder)
        written = out.sparkSession.read.option("header", True).option("multiLine", True).csv(folder)
    else:
        writer.parquet(folder)
        written = out.sparkSession.read.parquet(folder)
    return written.count()
