"""Plans: a window query, its input stream and the temp view it reads, in one TOML file.

::

    query = "SELECT seg_id, max(speed) AS hi FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id"
    view = "traffic"

    [input]
    path = "../datasets/traffic_sample.parquet"   # parquet or csv, relative to the plan file
    # or: generator = "traffic" with the generator's options, e.g. rows = 10000, segments = 50, seed = 1

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
from wid.spec.flink import Discretization, from_dict

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
        """The input stream; ``rows`` overrides a generator's row count, or keeps the first
        ``rows`` tuples of a file in arrival order (``row_num``)."""
        if "generator" in self.input:
            options = {k: v for k, v in self.input.items() if k != "generator"}
            if rows is not None:
                options["rows"] = rows
            if "rows" not in options:
                raise WidError(f"plan {self.path}: the generator needs 'rows' in [input] (or --rows)")
            try:
                return self.generator(spark, **options)
            except (TypeError, ValueError) as error:
                raise WidError(f"plan {self.path}: bad generator options: {error}") from None
        if not self.data_path.exists():
            raise WidError(f"plan {self.path}: input file not found: {self.data_path}")
        fmt = self.input.get("format", self.data_path.suffix.lstrip("."))
        reader = spark.read.option("header", True).option("inferSchema", True) if fmt == "csv" else spark.read
        df = reader.format(fmt).load(str(self.data_path.resolve()))
        if not all(_IDENTIFIER.fullmatch(c) for c in df.columns):  # never echo a foreign file's content
            raise WidError(f"plan {self.path}: input file {self.data_path} has columns that are not names "
                           f"(is it a {fmt} file with a header line?)")
        if rows is not None:
            if "row_num" not in df.columns:
                raise WidError(f"plan {self.path}: --rows needs a row_num column in {self.data_path}")
            df = df.orderBy("row_num").limit(rows)
        return df

    def register(self, spark: SparkSession, rows: int | None = None) -> DataFrame:
        """The input stream, registered as the temp view the query reads."""
        df = self.source(spark, rows)
        df.createOrReplaceTempView(self.view)
        return df


def _options(generator) -> list[str]:
    """Keyword options of a generator (everything after its ``spark`` argument)."""
    return list(inspect.signature(generator).parameters)[1:]
