"""Plans: a window query, its input stream and the temp view it reads, in one TOML file.

::

    query = "SELECT seg_id, max(speed) AS hi FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id"
    view = "traffic"

    [input]
    path = "../datasets/traffic_sample.parquet"   # parquet or csv, relative to the plan file
    # or: generator = "traffic" with the generator's options, e.g. rows = 10000, segments = 50, seed = 1
    arrival = "source"   # optional, for input without row_num: wid.arrival by position in the
                         # file, or arrival = ["ts", "seg_id"] by those columns, ties by position

A query needs ``row_num`` only where it reads arrival order (ROWS windows, replay, live mode,
SPL and Flink windows: docs/semantics.md section 1.1).

Other tables (e.g. ``[punctuation]``, ``[output]``) are kept in :attr:`Plan.sections` for the
parts of wid that use them; any other top-level key, or an unknown key in ``[input]``, is an error.
"""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from wid.errors import WidError
from wid.preflight import preflight
from wid.source import Source
from wid.windows.flink import Discretization, from_dict
from wid.stream.arrival import arrival

_TOP_KEYS = {"query", "view", "title", "input"}
_FORMATS = ("parquet", "csv")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Plan:
    """A parsed plan file; ``input`` holds either ``path`` (+ ``format``) or ``generator`` + its options.

    >>> import tempfile
    >>> toml = ['query = "SELECT k, max(v) AS hi FROM r [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k"', 'view = "r"',
    ...         '[input]', 'path = "data/r.csv"', '[output]', 'limit = 5']
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "p.toml").write_text("\\n".join(toml))
    ...     plan = Plan.load(Path(d, "p.toml"))
    >>> plan.data_path.relative_to(plan.path.parent), plan.sections  # the input file, from the plan's directory
    (PosixPath('data/r.csv'), {'output': {'limit': 5}})
    """

    path: Path
    query: str
    view: str
    input: dict[str, Any]
    title: str = ""
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    @staticmethod
    def load(path: str | Path) -> Plan:
        """Read and check ``path``; raises :class:`WidError` naming the problem."""
        path = Path(path)
        try:
            doc = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise WidError(f"plan not found: {path}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise WidError(f"cannot read plan {path}: {error}") from None
        unknown = sorted(k for k, v in doc.items() if k not in _TOP_KEYS and not isinstance(v, dict))
        if unknown:
            raise WidError(f"plan {path}: unknown key(s) {', '.join(unknown)} (expected {', '.join(sorted(_TOP_KEYS))})")
        for key in ("query", "view"):
            if not isinstance(doc.get(key), str) or not doc[key].strip():
                raise WidError(f"plan {path}: {key!r} must be a non-empty string")
        if not isinstance(doc.get("input"), dict):
            raise WidError(f"plan {path}: missing [input] section (a path or a generator)")
        plan = Plan(
            path=path,
            query=doc["query"],
            view=doc["view"],
            input=doc["input"],
            title=str(doc.get("title", "")),
            sections={k: v for k, v in doc.items() if k not in _TOP_KEYS},
        )
        plan._check_input()
        return plan

    def _check_input(self) -> None:
        given = set(self.input)
        if ("path" in given) == ("generator" in given):
            raise WidError(f"plan {self.path}: [input] needs exactly one of 'path' or 'generator'")
        self.arrival  # noqa: B018 - checks the value
        given.discard("arrival")
        if "path" in given:
            if not isinstance(self.input["path"], str) or not self.input["path"].strip():
                raise WidError(f"plan {self.path}: [input] path must be a non-empty string, got {self.input['path']!r}")
            unknown = given - {"path", "format"}
            if self.input.get("format", self.data_path.suffix.lstrip(".")) not in _FORMATS:
                raise WidError(f"plan {self.path}: [input] format must be one of {', '.join(_FORMATS)}")
        else:
            unknown = given - {"generator"} - set(_options(self.generator))
        if unknown:
            raise WidError(f"plan {self.path}: unknown key(s) in [input]: {', '.join(sorted(unknown))}")

    @property
    def arrival(self) -> list[str] | None:
        """The columns ``[input] arrival`` orders by (``[]``: ``"source"``, position in the file
        alone); None: no ``arrival`` key.

        >>> Plan(Path("p.toml"), "q", "v", {"path": "r.csv", "arrival": ["ts", "k"]}).arrival
        ['ts', 'k']
        >>> Plan(Path("p.toml"), "q", "v", {"path": "r.csv", "arrival": "ts"}).arrival
        Traceback (most recent call last):
        wid.errors.WidError: plan p.toml: [input] arrival must be "source" or a list of column names, got 'ts'
        """
        value = self.input.get("arrival")
        if value is None or value == "source":
            return None if value is None else []
        if not isinstance(value, list) or not value or not all(isinstance(c, str) and c.strip() for c in value):
            raise WidError(f'plan {self.path}: [input] arrival must be "source" or a list of column names, '
                           f"got {value!r}")
        return value

    @property
    def data_path(self) -> Path:
        """The input file, relative paths taken from the plan's directory."""
        return self.path.parent / self.input["path"]

    @property
    def window(self) -> Discretization | None:
        """The ``[flink]`` table's discretization, replacing a query's ``[flink]`` window clause."""
        return from_dict(self.sections["flink"]) if "flink" in self.sections else None

    @property
    def generator(self):
        """The generator function ``wid.datasets.<name>.<name>(spark, rows, ...)`` named in ``[input]``."""
        name = self.input["generator"]
        try:
            return getattr(importlib.import_module(f"wid.datasets.{name}"), name)
        except (ImportError, AttributeError):
            raise WidError(f"plan {self.path}: unknown generator {name!r} (no wid.datasets.{name}.{name})") from None

    def source(self, spark: SparkSession, rows: int | None = None) -> DataFrame:
        """The input stream, with ``row_num`` added as ``[input] arrival`` says (:func:`wid.arrival`);
        ``rows`` overrides a generator's row count, or keeps the first ``rows`` tuples of a file in
        arrival order (``row_num``)."""
        if "generator" in self.input:
            options = {k: v for k, v in self.input.items() if k not in ("generator", "arrival")}
            if rows is not None:
                options["rows"] = rows
            if "rows" not in options:
                raise WidError(f"plan {self.path}: the generator needs 'rows' in [input] (or --rows)")
            try:
                df = self.generator(spark, **options)
            except (TypeError, ValueError) as error:
                raise WidError(f"plan {self.path}: bad generator options: {error}") from None
            return self._arrived(df)
        if not self.data_path.exists():
            raise WidError(f"plan {self.path}: input file not found: {self.data_path}")
        fmt = self.input.get("format", self.data_path.suffix.lstrip("."))
        reader = spark.read.option("header", True).option("inferSchema", True) if fmt == "csv" else spark.read
        df = reader.format(fmt).load(str(self.data_path.resolve()))
        if not all(_IDENTIFIER.fullmatch(c) for c in df.columns):  # never echo a foreign file's content
            raise WidError(f"plan {self.path}: input file {self.data_path} has columns that are not names "
                           f"(is it a {fmt} file with a header line?)")
        df = self._arrived(df)
        if rows is not None:
            if "row_num" not in df.columns:
                raise WidError(f"plan {self.path}: --rows keeps the first tuples in arrival order, but "
                               f'{self.data_path} has no row_num column: add arrival = "source" (or a list of '
                               "columns) to [input]")
            df = df.orderBy("row_num").limit(rows)
        return df

    def _arrived(self, df: DataFrame) -> DataFrame:
        """``df`` with ``row_num`` by ``[input] arrival``, or as it is without the key."""
        if self.arrival is None:
            return df
        try:
            return arrival(df, self.arrival or None)
        except WidError as error:
            raise WidError(f"plan {self.path}: [input] arrival: {error}") from None

    def check(self, replaying: bool = False) -> None:
        """The query checked before Spark starts (:func:`wid.preflight.preflight`): its text, its
        window, and, for an input file whose columns are known without Spark, the columns it
        names and ``row_num`` where the window (or a replay, ``replaying``) reads arrival order.

        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "r.csv").write_text("ts,k,v\\n1.5,a,2\\n")
        >>> Plan(folder / "p.toml", "SELECT k, max(v) AS hi FROM r [RANGE 4 SLIDE 2 WATTR ts] GROUP BY k", "r",
        ...      {"path": "r.csv"}).check(replaying=True)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        wid.errors.WidError: replay reads arrival order but r has no row_num column: add arrival = "source" (or a list of columns) to the [input] table of ...p.toml
        """
        known = None
        if "path" in self.input and self.data_path.is_file():
            known = Source.find(str(self.data_path), self.view).columns
            if known is not None and "arrival" in self.input:
                known = (*known, "row_num")
        preflight(self.query, known, self.view, self.window, replaying=replaying,
                  fix=f"add arrival = \"source\" (or a list of columns) to the [input] table of {self.path}")

    def register(self, spark: SparkSession, rows: int | None = None) -> DataFrame:
        """The input stream, registered as the temp view the query reads."""
        df = self.source(spark, rows)
        df.createOrReplaceTempView(self.view)
        return df


def _options(generator) -> list[str]:
    """Keyword options of a generator (everything after its ``spark`` argument)."""
    return list(inspect.signature(generator).parameters)[1:]
