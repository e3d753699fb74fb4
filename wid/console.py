"""Plain text of the command line: result rows as an aligned table, CSV or JSON Lines, one-line
errors, and progress on the ``wid`` logger (:func:`wid.cli.commands.main` shows it on stderr).

Every command that prints rows (``run``, ``query``, ``replay``, ``live``, ``sql``) renders them
here, in one style: a column's values in one format (:func:`cells`), the row count with its
plural. A caller collects once (:func:`first_rows`) and may write the same rows elsewhere.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime
from decimal import Decimal

import numpy as np
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Row
from pyspark.sql.types import (ArrayType, DataType, DecimalType, DoubleType, FloatType, MapType, NumericType,
                               StructType, TimestampNTZType, TimestampType)

#: A wid check raised inside Spark (``raise_error('wid: ...')``): Spark's tag for a user-raised
#: error, then wid's marker at the start of the message (not ``wid:`` anywhere in a plan dump).
WID_MESSAGE = re.compile(r"\[USER_RAISED_EXCEPTION\] wid: (.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
#: Errors Spark raises into Python: PySpark's, and Py4J's when a check fails in a subquery of the plan.
SPARK_ERRORS = (PySparkException, Py4JJavaError)
#: Progress of long commands (bench, experiment); results go to stdout.
log = logging.getLogger("wid")
#: How :func:`render` prints rows: an aligned table, CSV with a header line, JSON Lines.
FORMATS = ("table", "csv", "json")
#: Significant digits a double column shows at most (fewer when every value needs fewer).
SIGNIFICANT = 10
#: Spark's names of the non-finite doubles in a table and in JSON; in CSV, its CSV reader's.
_NON_FINITE = {"table": ("NaN", "Infinity", "-Infinity"), "csv": ("NaN", "Inf", "-Inf")}
#: Control characters of a string as a table shows them.
_ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool],
            rule: bool = False) -> list[str]:
    """``header`` and ``rows`` as lines of columns two spaces apart, each as wide as its widest
    cell, right-aligned where ``right``; ``rule``: a line of dashes under the header.

    >>> print("\\n".join(aligned(["k", "n"], [["a", "5"], ["bb", "10"]], [False, True], rule=True)))
    k    n
    --  --
    a    5
    bb  10
    """
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [["-" * w for w in widths]] if rule else []

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return [line(header), *map(line, lines), *map(line, rows)]


def plural(n: int, noun: str) -> str:
    """``n noun``, the noun with an ``s`` unless ``n`` is 1.

    >>> plural(1, "row"), plural(0, "row"), plural(3, "late row")
    ('1 row', '0 rows', '3 late rows')
    """
    return f"{n} {noun}" + ("" if n == 1 else "s")


def first_rows(df: DataFrame, limit: int) -> tuple[list[Row], int]:
    """The first ``limit`` (>= 0) rows of ``df`` and its row count: one Spark job when ``df`` has at
    most ``limit`` rows, a count besides otherwise.

    >>> rows, total = first_rows(spark.table("readings").orderBy("row_num"), 2)
    >>> [r.row_num for r in rows], total
    ([0, 1], 4)
    """
    rows = df.limit(limit + 1).collect()
    return (rows, len(rows)) if len(rows) <= limit else (rows[:limit], df.count())


def table(df: DataFrame, limit: int) -> str:
    """An aligned text table of the first ``limit`` rows of ``df``, with the total row count.

    >>> print(table(spark.table("readings").orderBy("row_num"), 2))
    row_num   ts  arrival_ts  k  v
    -------  ---  ----------  -  -
          0  1.0         1.5  a  5
          1  4.0         4.5  a  7
    (showing 2 of 4 rows; --limit N for more)
    """
    rows, total = first_rows(df, limit)
    return "\n".join(render(rows, df.schema, "table", total))


def render(rows: Iterable[Sequence], schema: StructType, fmt: str = "table", total: int | None = None) -> Iterator[str]:
    """``rows`` (of ``schema``, e.g. collected from a DataFrame) as lines of text in ``fmt``, one of
    :data:`FORMATS`. ``table``: the aligned columns of :func:`cells` (numbers right-aligned), then
    the row count, ``total`` rows in all (default: those given). ``csv``: a header line, then one
    record per row, quoted as RFC 4180 by the :mod:`csv` module; NULL (as the empty string) an
    empty field, a double in its shortest exact form, timestamps ``YYYY-MM-DD HH:MM:SS.ffffff``.
    ``json``: one object per row, numbers as JSON numbers (a decimal's exact digits), NULL
    ``null``, timestamps ISO 8601 strings (``T`` before the time, microseconds).
    ``csv`` and ``json`` read ``rows`` one at a time (e.g. ``df.toLocalIterator()``).

    >>> df = spark.sql("SELECT * FROM VALUES ('a', 58.0D, 1.50BD, TIMESTAMP_NTZ'2024-05-01 10:00:00.25'), "
    ...                "('b,c', 62.4D, NULL, TIMESTAMP_NTZ'2024-05-01 10:00:30') AS t(k, v, d, ts)")
    >>> print(*render(df.collect(), df.schema), sep="\\n")
    k       v     d  ts
    ---  ----  ----  --------------------------
    a    58.0  1.50  2024-05-01 10:00:00.250000
    b,c  62.4  NULL  2024-05-01 10:00:30.000000
    (2 rows)
    >>> print(*render(df.collect(), df.schema, "csv"), sep="\\n")
    k,v,d,ts
    a,58.0,1.50,2024-05-01 10:00:00.250000
    "b,c",62.4,,2024-05-01 10:00:30.000000
    >>> print(*render(df.toLocalIterator(), df.schema, "json"), sep="\\n")
    {"k":"a","v":58.0,"d":1.50,"ts":"2024-05-01T10:00:00.250000"}
    {"k":"b,c","v":62.4,"d":null,"ts":"2024-05-01T10:00:30.000000"}
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    return _table(list(rows), schema, total) if fmt == "table" else _csv(rows, schema) if fmt == "csv" else \
        _json(rows, schema)


def _table(rows: list[Sequence], schema: StructType, total: int | None) -> Iterator[str]:
    total = len(rows) if total is None else total
    columns = [cells([row[i] for row in rows], f.dataType) for i, f in enumerate(schema.fields)]
    right = [isinstance(f.dataType, NumericType) for f in schema.fields]
    yield from aligned(schema.fieldNames(), list(zip(*columns)) if columns else [], right, rule=True)
    yield f"({plural(total, 'row')})" if len(rows) == total else \
        f"(showing {len(rows)} of {plural(total, 'row')}; --limit N for more)"


def _csv(rows: Iterable[Sequence], schema: StructType) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")

    def record(fields: Sequence[str | None]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(fields)
        return buffer.getvalue()[:-1]

    yield record(schema.fieldNames())
    for row in rows:
        yield record([_text(v, f.dataType, "csv") for v, f in zip(row, schema.fields)])


def _json(rows: Iterable[Sequence], schema: StructType) -> Iterator[str]:
    for row in rows:
        yield _json_value(row, schema)


def _json_value(value: object, dtype: DataType) -> str:
    """``value`` as JSON text: numbers (a decimal's exact digits), ``true``/``false``, arrays,
    objects (maps, structs), strings (the rest, NaN and the infinities by Spark's names)."""
    if value is None:
        return "null"
    if isinstance(dtype, ArrayType):
        return "[" + ",".join(_json_value(v, dtype.elementType) for v in value) + "]"
    if isinstance(dtype, MapType):
        return _json_object((_text(k, dtype.keyType, "json"), v, dtype.valueType) for k, v in value.items())
    if isinstance(dtype, StructType):
        return _json_object((f.name, v, f.dataType) for f, v in zip(dtype.fields, value))
    text = _text(value, dtype, "json")
    number = isinstance(value, (bool, int, Decimal)) or (isinstance(value, float) and math.isfinite(value))
    return text if number else json.dumps(text, ensure_ascii=False)


def _json_object(members: Iterable[tuple[str, object, DataType]]) -> str:
    return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_json_value(v, t)}" for k, v, t in members) + "}"


def _text(value: object, dtype: DataType, fmt: str) -> str | None:
    """``value`` alone (no column format) as text in ``fmt``: a number in its shortest exact form, a
    timestamp ISO with microseconds (``T`` before the time in JSON, else a space), arrays, maps and
    structs as Spark shows them (``[1, 2]``, ``{a -> 1}``, ``{1, a}``), in a table a string's line
    breaks and tabs escaped (``\\n``); None for NULL."""
    if value is None:
        return None
    if isinstance(dtype, (ArrayType, MapType, StructType)):
        if isinstance(dtype, ArrayType):
            return "[" + ", ".join(_element(v, dtype.elementType, fmt) for v in value) + "]"
        if isinstance(dtype, MapType):
            return "{" + ", ".join(f"{_element(k, dtype.keyType, fmt)} -> {_element(v, dtype.valueType, fmt)}"
                                   for k, v in value.items()) + "}"
        return "{" + ", ".join(_element(v, f.dataType, fmt) for v, f in zip(value, dtype.fields)) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _non_finite(value, "csv" if fmt == "csv" else "table") or _shortest(value, dtype)
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, datetime):
        return value.isoformat(sep="T" if fmt == "json" else " ", timespec="microseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str) and fmt == "table":
        return value.translate(_ESCAPES)  # one line per row
    return str(value)


def _element(value: object, dtype: DataType, fmt: str) -> str:
    text = _text(value, dtype, fmt)
    return "NULL" if text is None else text


def cells(values: Sequence[object], dtype: DataType) -> list[str]:
    """A column's ``values`` (of Spark type ``dtype``) as table cells, all in one format: a double
    with the same decimals on every row (the fewest that show each value as Python's ``repr`` does,
    to at most :data:`SIGNIFICANT` significant digits; in scientific notation when one value needs
    it), a decimal with its type's scale, a timestamp ISO with a space (microseconds when one value
    has them), a boolean ``true``/``false``, a string's line breaks and tabs escaped, NULL ``NULL``.

    >>> cells([58.0, 62.4, -0.25, None], DoubleType())
    ['58.00', '62.40', '-0.25', 'NULL']
    >>> cells([58.0, 1 / 3], DoubleType()), cells([2.5e-7, 1200.0, float("nan")], DoubleType())
    (['58.0000000000', '0.3333333333'], ['2.5e-07', '1.2e+03', 'NaN'])
    >>> cells([datetime(2024, 5, 1, 10), datetime(2024, 5, 1, 10, 0, 30)], TimestampType())
    ['2024-05-01 10:00:00', '2024-05-01 10:00:30']
    >>> cells([Decimal("1.5"), Decimal("-20.25")], DecimalType(10, 2))
    ['1.50', '-20.25']
    """
    shown = _column_format([v for v in values if v is not None], dtype)
    return ["NULL" if v is None else shown(v) for v in values]


def _column_format(values: list, dtype: DataType) -> Callable[[object], str]:
    if isinstance(dtype, (DoubleType, FloatType)):
        return _float_format(values, dtype)
    if isinstance(dtype, DecimalType):
        return lambda v: f"{v:.{dtype.scale}f}"
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        spec = "microseconds" if any(v.microsecond for v in values) else "seconds"
        return lambda v: v.isoformat(sep=" ", timespec=spec)
    return lambda v: _text(v, dtype, "table")


def _shortest(value: float, dtype: DataType) -> str:
    """The shortest text that reads back as ``value`` (a float's as float32: ``0.1``, not the double's digits)."""
    return str(np.float32(value)) if isinstance(dtype, FloatType) else repr(value)


def _non_finite(value: object, fmt: str = "table") -> str | None:
    """Spark's name of a NaN or infinite float (in ``fmt``), else None."""
    if not isinstance(value, float) or math.isfinite(value):
        return None
    nan, inf, minus_inf = _NON_FINITE[fmt]
    return nan if math.isnan(value) else inf if value > 0 else minus_inf


def _float_format(values: list[float], dtype: DataType) -> Callable[[float], str]:
    """The one format of a column of floats: fixed decimals, or scientific when a value's shortest
    text is (``|x| >= 1e16`` or ``< 1e-4``); as many digits as the value that needs most."""
    texts = [_shortest(v, dtype) for v in values if math.isfinite(v)]
    shown = [_significant(Decimal(t)).as_tuple() for t in texts]
    if any("e" in t for t in texts):
        places = max([1, *(len(d.digits) - 1 for d in shown)])
        return lambda v: _non_finite(v) or f"{float(_shortest(v, dtype)):.{places}e}"
    places = max([1, *(-d.exponent for d in shown)])
    return lambda v: _non_finite(v) or f"{Decimal(_shortest(v, dtype)):.{places}f}"


def _significant(value: Decimal) -> Decimal:
    """``value`` to at most :data:`SIGNIFICANT` significant digits, without trailing zeros.

    >>> _significant(Decimal("59.72000000000001")), _significant(Decimal("0.3333333333333333"))
    (Decimal('59.72'), Decimal('0.3333333333'))
    """
    unit = Decimal(1).scaleb(value.adjusted() - SIGNIFICANT + 1)
    return (value.quantize(unit) if value.as_tuple().exponent < unit.as_tuple().exponent else value).normalize()


def one_line(error: Exception) -> str:
    """The message of a wid check raised inside Spark (``raise_error``), else Spark's first line.

    >>> one_line(ValueError("[USER_RAISED_EXCEPTION] wid: RANGE must be positive SQLSTATE: P0001"))
    'RANGE must be positive'
    >>> one_line(ValueError("[TABLE_OR_VIEW_NOT_FOUND] The table cannot be found.\\n  at ..."))
    '[TABLE_OR_VIEW_NOT_FOUND] The table cannot be found.'
    """
    text = str(error)
    found = WID_MESSAGE.search(text)
    return found.group(1) if found else text.strip().splitlines()[0]
