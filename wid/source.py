"""The SOURCE of ``wid query`` and ``wid replay``: a parquet, CSV (with a header line) or JSON
Lines file, a directory or glob of them, or a catalog table.

Its name (the view the query's ``FROM`` reads) and, for CSV and parquet, its columns are read
before Spark starts, so a wrong name or column is reported at once; :meth:`Source.load` reads
it with Spark: CSV columns typed by Spark's inference (ISO timestamps are timestamps, numbers
numbers), the files in path order.
"""

from __future__ import annotations

import csv
import glob
import re
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from wid.errors import WidError
from wid.windows.sqlexpr import name_parts, quote

#: Formats by file extension.
FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json"}
_WILDCARD = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Source:
    """A SOURCE as given (``text``), the view name its query reads (``name``), its files in path
    order (none for a catalog table), their format, and its columns when known before Spark.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "events.csv").write_text("ts,key,value\\n2026-11-01T08:00:00.25,a,18.06\\n")
    >>> Source.find(str(folder / "events.csv")).name, Source.find(str(folder / "events.csv")).columns
    ('events', ('ts', 'key', 'value'))
    >>> Source.find(str(folder / "*.csv"), name="ev").files == (folder / "events.csv",)
    True
    >>> Source.find("sales.orders").name  # not a path: a catalog table, named by its last part
    'orders'
    >>> Source.find(str(folder / "missing.csv"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: SOURCE .../missing.csv: no such file or directory
    """

    text: str
    name: str
    files: tuple[Path, ...] = ()
    format: str | None = None
    columns: tuple[str, ...] | None = None

    @staticmethod
    def find(text: str, name: str | None = None) -> Source:
        """The source ``text`` names, its view named ``name`` (default: the file's stem, the
        directory's name, a glob's directory, a table's last name part)."""
        path = Path(text)
        if _WILDCARD.search(text):
            files = tuple(sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file()))
            if not files:
                raise WidError(f"SOURCE {text}: no file matches")
            stem = Path(text[:_WILDCARD.search(text).start()]).name or (path.parent.name if path.parent.name
                                                                          and not _WILDCARD.search(path.parent.name) else "")
        elif path.is_dir():
            files = tuple(sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(("_", "."))))
            if not files:
                raise WidError(f"SOURCE {text}: the directory holds no data file")
            stem = path.resolve().name
        elif path.is_file():
            files, stem = (path,), path.name.split(".")[0]
        elif path.suffix.lower() in FORMATS or "/" in text:
            raise WidError(f"SOURCE {text}: no such file or directory")
        else:
            try:
                parts = name_parts(text)
            except WidError:
                raise WidError(f"SOURCE {text}: neither a file, a directory nor a table name") from None
            return Source(text, name or parts[-1])
        formats = {FORMATS.get(f.suffix.lower()) for f in files}
        if None in formats or len(formats) > 1:
            known = ", ".join(sorted(FORMATS))
            raise WidError(f"SOURCE {text}: expected files of one format ({known}), got "
                           + ", ".join(sorted({f.name for f in files})[:3]))
        if not (name or stem):
            raise WidError(f"SOURCE {text}: name the view its query reads with --as NAME")
        fmt = formats.pop()
        return Source(text, name or stem, files, fmt, _columns(files, fmt))

    @property
    def view(self) -> str:
        """:attr:`name` as Spark SQL names the temp view (back-quoted)."""
        return quote(self.name)

    def check_name(self, view: str) -> None:
        """A :class:`WidError` unless the query's ``FROM`` (``view``) names this source.

        >>> Source("events.csv", "events").check_name("traffic")
        Traceback (most recent call last):
        wid.errors.WidError: the query reads FROM traffic but SOURCE events.csv is named events: write FROM events or pass --as traffic
        """
        try:
            parts = name_parts(view)
        except WidError:
            parts = [view]
        if len(parts) != 1 or parts[0].lower() != self.name.lower():
            raise WidError(f"the query reads FROM {view} but SOURCE {self.text} is named {self.name}: "
                           f"write FROM {quote(self.name) if not self.name.isidentifier() else self.name} "
                           f"or pass --as {view}")

    def frame(self, spark: SparkSession) -> DataFrame:
        """The source as a DataFrame."""
        if not self.files:
            return spark.table(self.text)
        reader = spark.read.option("header", True).option("inferSchema", True) if self.format == "csv" else spark.read
        return reader.format(self.format).load([str(f.resolve()) for f in self.files])

    def load(self, spark: SparkSession) -> DataFrame:
        """The source as a DataFrame, registered as the temp view :attr:`name`."""
        df = self.frame(spark)
        df.createOrReplaceTempView(self.view)
        return df


def _columns(files: tuple[Path, ...], fmt: str) -> tuple[str, ...] | None:
    """The columns Spark will read from ``files``: the first CSV file's header (every file must
    have the same), the first parquet file's schema; None for JSON (Spark infers them over all rows)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return tuple(pq.read_schema(files[0]).names)
        except Exception as error:  # pyarrow's own error types vary by cause
            raise WidError(f"SOURCE {files[0]}: not a parquet file ({error})") from None
    if fmt != "csv":
        return None
    headers = {f: _header(f) for f in files}
    first = headers[files[0]]
    for f, header in headers.items():
        if header != first:
            raise WidError(f"SOURCE files differ in their header: {files[0].name} has {', '.join(first)}, "
                           f"{f.name} has {', '.join(header)}")
    return first


def _header(path: Path) -> tuple[str, ...]:
    """The column names of a CSV file's header line."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), None)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise WidError(f"SOURCE {path}: cannot read its header line ({error})") from None
    if not header or not all(c.strip() for c in header):
        raise WidError(f"SOURCE {path}: a CSV file needs a header line naming every column")
    return tuple(header)
