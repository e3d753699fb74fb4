"""The command line's one output style (wid.console): a result table whose columns each have one
format, row counts with correct plurals, and CSV / JSON Lines that Spark's own readers read back
as the same rows."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

import pytest
from chispa import assert_df_equality

from wid.console import render, table

COLUMNS = "k string, speed double, n long, d decimal(20, 6), ts timestamp"
#: Readings as results look: doubles with two decimals (and 58.0, whole), a long, an exact decimal
#: of 14 digits, timestamps with microseconds on one row only; NULLs, negatives, a key with a comma,
#: quotes and a line break.
ROWS = [
    ("seg 1", 58.0, 3, Decimal("12345678.123456"), dt.datetime(2024, 5, 1, 8, 0, 0)),
    ('seg "2", east', 62.4, -12, Decimal("-0.000001"), dt.datetime(2024, 5, 1, 8, 0, 30, 250)),
    ("seg\n3", -7.25, None, None, None),
    (None, None, 2**60, Decimal("99999999999999.999999"), dt.datetime(2024, 5, 1, 8, 1, 0)),
]


@pytest.fixture(scope="module")
def results(spark):
    return spark.createDataFrame(ROWS, COLUMNS)


def columns(text: str) -> tuple[list[str], list[list[str]], str]:
    """Header, cells and the closing note of a printed table (columns as under the dashes)."""
    lines = text.splitlines()
    spans = [m.span() for m in re.finditer(r"-+", lines[1])]
    cells = [[line[start:end].strip() for start, end in spans] for line in lines]
    return cells[0], cells[2:-1], lines[-1]


def test_each_column_of_a_table_has_one_format(spark, results):
    """Doubles: as many decimals on every row as the value that needs most (58.0 -> 58.00 next to
    -7.25), each cell reading back as the value, decimal points one above the other; longs as
    integers, decimals with their type's scale, timestamps with microseconds when one has them."""
    text = table(results.where("k IS NOT NULL"), 10)
    header, rows, note = columns(text)
    assert header == ["k", "speed", "n", "d", "ts"] and note == "(3 rows)"
    assert [row[0] for row in rows] == ["seg 1", 'seg "2", east', "seg\\n3"]  # one line per row
    speeds = [row[1] for row in rows]
    assert speeds == ["58.00", "62.40", "-7.25"] and [float(s) for s in speeds] == [58.0, 62.4, -7.25]
    assert len({line.index(".") for line in text.splitlines()[2:5]}) == 1  # points aligned (keys before hold none)
    assert [row[2] for row in rows] == ["3", "-12", "NULL"]
    assert [row[3] for row in rows] == ["12345678.123456", "-0.000001", "NULL"]
    assert [row[4] for row in rows] == ["2024-05-01 08:00:00.000000", "2024-05-01 08:00:30.000250", "NULL"]
    whole = table(results.where("ts IS NOT NULL AND ts <> TIMESTAMP'2024-05-01 08:00:30.00025'"), 10)
    assert [row[4] for row in columns(whole)[1]] == ["2024-05-01 08:00:00", "2024-05-01 08:01:00"]


@pytest.mark.parametrize("limit, rows, note", [
    (10, 1, "(1 row)"), (10, 4, "(4 rows)"), (10, 0, "(0 rows)"),
    (2, 4, "(showing 2 of 4 rows; --limit N for more)"), (0, 1, "(showing 0 of 1 row; --limit N for more)")])
def test_the_row_count_has_its_plural(results, limit, rows, note):
    assert table(results.orderBy("n").limit(rows), limit).splitlines()[-1] == note


def test_csv_reads_back_as_the_rows(spark, results, tmp_path):
    """A header line and RFC 4180 quoting: Spark's CSV reader, given the schema (and RFC 4180's
    doubled quote), reads the same rows: a double's shortest form, the decimal's digits,
    microseconds kept, NULL an empty field."""
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(render(results.toLocalIterator(), results.schema, "csv")) + "\n")
    assert path.read_text().splitlines()[:2] == ["k,speed,n,d,ts",
                                                 "seg 1,58.0,3,12345678.123456,2024-05-01 08:00:00.000000"]
    back = spark.read.schema(results.schema).options(header=True, multiLine=True, escape='"').csv(str(path))
    assert_df_equality(back, results, ignore_row_order=True, ignore_nullable=True)


def test_json_lines_read_back_as_the_rows(spark, results, tmp_path):
    """One object per line, numbers as JSON numbers (the decimal's digits exact), timestamps ISO:
    Python's json reads the numbers as numbers, Spark's JSON reader the same rows."""
    lines = list(render(results.collect(), results.schema, "json"))
    first = json.loads(lines[1], parse_float=Decimal)
    assert first == {"k": 'seg "2", east', "speed": Decimal("62.4"), "n": -12, "d": Decimal("-0.000001"),
                     "ts": "2024-05-01T08:00:30.000250"}
    assert json.loads(lines[3])["n"] == 2**60
    path = tmp_path / "rows.json"
    path.write_text("\n".join(lines) + "\n")
    back = spark.read.schema(results.schema).json(str(path))
    assert_df_equality(back, results, ignore_row_order=True, ignore_nullable=True)
