"""``wid query SOURCE "QUERY"`` and ``wid replay SOURCE "QUERY" --punctuation TEXT``
(docs/semantics.md, "Your own data from the command line"): the installed ``wid`` on files the test
writes, checked against the exact oracle; every user error is one ``wid:`` line, exit status 2,
before Spark starts, naming only the user's columns."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
import shlex
import shutil
import subprocess
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import wid

import oracle
from wid.cli.commands import BAD_INPUT, EXAMPLES, main, parser
from wid.preflight import preflight

WID = shutil.which("wid")
QUERY = ("SELECT key, max(value) AS hi, min(value) AS lo, count(*) AS n FROM events "
         "[RANGE 2 MINUTES SLIDE 30 SECONDS WATTR ts] GROUP BY key")
START = dt.datetime(2026, 11, 1, 8, 0, tzinfo=dt.timezone.utc)


def events(count: int = 200, seed: int = 7) -> list[dict]:
    """Readings as a user's CSV holds them: ISO timestamps with microseconds (some exactly on a
    30-second boundary), two-decimal values (negative ones, duplicates), arrival order unrelated
    to time. ``row_num`` (the oracle's arrival order) is not written to the file."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        at = START + dt.timedelta(seconds=rng.choice([rng.randrange(0, 600, 30), rng.uniform(0, 600)]))
        at = at.replace(microsecond=at.microsecond if i % 3 else 0)
        rows.append({"row_num": i, "ts": at, "key": rng.choice(["north", "south", "east"]),
                     "value": rng.choice([round(rng.uniform(-20, 120), 2), 42.05])})
    return rows


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["ts", "key", "value"])
        for r in rows:
            writer.writerow([r["ts"].strftime("%Y-%m-%dT%H:%M:%S.%f"), r["key"], f"{r['value']:.2f}"])
    return path


def run_wid(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    assert WID, "the wid console script is installed (pip install -e .)"
    return subprocess.run([WID, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def expected(rows: list[dict]) -> dict[tuple, tuple]:
    """(key, window_start, window_end) -> (hi, lo, n) by the oracle's extents."""
    window = oracle.Sliding(120, 30, "ts")
    out = oracle.evaluate(rows, window, {"hi": ("max", "value"), "lo": ("min", "value"), "n": ("count", None)},
                          group_by=["key"])
    return {(r["key"], *window.extent(r["wid"])): (r["hi"], r["lo"], r["n"]) for r in out}


def seconds(text: str) -> Fraction:
    return oracle.seconds(dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc))


@pytest.mark.slow  # starts its own Spark, as a user's command does
def test_query_on_your_own_csv_equals_the_oracle_and_prints_nothing_else(tmp_path):
    rows = events()
    write_csv(tmp_path / "events.csv", rows)
    done = run_wid("query", "events.csv", QUERY, "--format", "csv", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")  # no Spark log line, no warning
    printed = list(csv.DictReader(io.StringIO(done.stdout)))
    assert list(printed[0]) == ["wid", "window_start", "window_end", "key", "hi", "lo", "n"]
    got = {(r["key"], seconds(r["window_start"]), seconds(r["window_end"])):
           (float(r["hi"]), float(r["lo"]), int(r["n"])) for r in printed}
    assert got == expected(rows)
    order = [(r["key"], int(r["wid"])) for r in printed]
    assert order == sorted(order)  # sorted by the keys, then wid


@pytest.mark.slow  # starts its own Spark, as a user's command does
def test_replay_accounts_for_every_tuple(tmp_path):
    rows = events(seed=11)
    write_csv(tmp_path / "events.csv", rows)
    done = run_wid("replay", "events.csv", "--arrival", "source", "--punctuation", "slack(45)", "--out", "replayed",
               "SELECT key, count(*) AS n FROM events [RANGE 2 MINUTES SLIDE 30 SECONDS WATTR ts] GROUP BY key",
               cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    results = pq.read_table(tmp_path / "replayed" / "results.parquet").to_pylist()
    late = pq.read_table(tmp_path / "replayed" / "late.parquet").to_pylist()
    assert done.stdout.strip() == (f"wrote {len(results)} rows to replayed/results.parquet and "
                                   f"{len(late)} rows to replayed/late.parquet")
    assert late and {"window_start", "window_end", "row_num"} <= set(late[0])
    counted = Counter()
    for r in results:
        counted[(r["key"], r["wid"])] += r["n"]
    for r in late:
        counted[(r["key"], r["wid"])] += 1
    window = oracle.Sliding(120, 30, "ts")
    exact = oracle.evaluate(rows, window, {"n": ("count", None)}, group_by=["key"])
    assert counted == Counter({(r["key"], r["wid"]): r["n"] for r in exact})  # conservation


ERRORS = {
    "clause typo": (["events.csv", QUERY.replace("SLIDE", "SLDE")], "SLIDE"),
    "misspelt column": (["events.csv", QUERY.replace("max(value)", "max(valeu)")],
                        "unknown column 'valeu' (did you mean 'value'?): events has ts, key, value"),
    "FROM names another view": (["events.csv", QUERY.replace("FROM events", "FROM traffic")], "--as traffic"),
    "no such file": (["evnts.csv", QUERY], "no such file"),
    "ROWS window without row_num": (["events.csv", "SELECT count(*) AS n FROM events "
                                     "[RANGE 10 ROWS SLIDE 5 ROWS WATTR row_num]"], "--arrival"),
    "unknown --arrival column": (["events.csv", QUERY, "--arrival", "tss"], "unknown column 'tss' in --arrival"),
    "negative --limit": (["events.csv", QUERY, "--limit", "-1"], "--limit must be >= 0"),
    "--out exists": (["events.csv", QUERY, "--out", "events.csv"], "--out events.csv already exists"),
    "--out of an unknown format": (["events.csv", QUERY, "--out", "result.txt"], "expected a .parquet or .csv"),
}
REPLAY_ERRORS = {
    "replay without arrival order": (["events.csv", QUERY, "--punctuation", "slack(5)"], "--arrival source"),
    "unknown generator": (["events.csv", QUERY, "--arrival", "source", "--punctuation", "slak(5)"],
                          "unknown generator 'slak'"),
    "bad generator option": (["events.csv", QUERY, "--arrival", "source", "--punctuation", "slack(5, mod=x)"],
                             "unexpected keyword argument 'mod'"),
    "negative lateness": (["events.csv", QUERY, "--arrival", "source", "--punctuation", "slack(5)",
                           "--allowed-lateness", "-1"], "--allowed-lateness"),
}


@pytest.mark.parametrize("command, args, message", [
    *[("query", *case) for case in ERRORS.values()], *[("replay", *case) for case in REPLAY_ERRORS.values()]],
    ids=[*ERRORS, *REPLAY_ERRORS])
def test_a_user_error_is_one_line_before_spark_starts(tmp_path, command, args, message):
    write_csv(tmp_path / "events.csv", events(5))
    done = run_wid(command, *args, cwd=tmp_path)
    assert done.returncode == BAD_INPUT and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("wid: ") and message in done.stderr
    assert "wid_" not in done.stderr and "Spark" not in done.stderr
    assert not list(tmp_path.glob("result*")) and not list(tmp_path.glob(".*wid-*"))


def test_version_and_examples_in_every_help():
    done = subprocess.run([WID, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("wid 0.")
    commands = parser()._subparsers._group_actions[0].choices
    assert set(commands) == set(EXAMPLES)
    for name, sub in commands.items():
        assert sub.format_help().rstrip().endswith(EXAMPLES[name][-1]), name
    for example in [*EXAMPLES["query"], *EXAMPLES["replay"]]:  # each example's query is well formed
        args = parser().parse_args(shlex.split(example.split(">")[0])[1:])
        preflight(args.query, None, args.name or Path(args.source).name.split(".")[0])


@pytest.mark.slow
def test_out_writes_the_rows_shown_in_their_order(spark, tmp_path, capsys):
    write_csv(tmp_path / "events.csv", events())
    source = str(tmp_path / "events.csv")
    assert main(["query", source, QUERY, "--format", "json"], spark=spark) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for name in ("result.csv", "result.parquet"):
        assert main(["query", source, QUERY, "--out", str(tmp_path / name)], spark=spark) == 0
        assert capsys.readouterr().out == f"wrote {len(shown)} rows to {tmp_path / name}\n"
    with (tmp_path / "result.csv").open(newline="") as f:
        written = list(csv.DictReader(f))
    assert [(r["key"], int(r["wid"]), int(r["n"])) for r in written] == [(r["key"], r["wid"], r["n"]) for r in shown]
    parquet = pq.read_table(tmp_path / "result.parquet").to_pylist()
    assert [(r["key"], r["wid"], r["hi"]) for r in parquet] == [(r["key"], r["wid"], r["hi"]) for r in shown]
    assert not list(tmp_path.glob(".*wid-*"))  # the folder Spark wrote through is gone


def test_a_directory_a_glob_parquet_and_a_table_are_sources_too(spark, tmp_path, capsys):
    rows = events()
    folder = tmp_path / "readings"
    folder.mkdir()
    write_csv(folder / "part1.csv", rows[:120])
    write_csv(folder / "part2.csv", rows[120:])
    query = QUERY.replace("FROM events", "FROM readings")
    assert main(["query", str(folder), query, "--format", "csv"], spark=spark) == 0
    from_folder = capsys.readouterr().out
    assert main(["query", str(folder / "*.csv"), query, "--format", "csv"], spark=spark) == 0
    assert capsys.readouterr().out == from_folder
    spark.read.option("header", True).option("inferSchema", True).csv(str(folder)).write.parquet(
        str(tmp_path / "events.parquet"))
    assert main(["query", str(tmp_path / "events.parquet"), query, "--as", "readings", "--format", "csv"],
                spark=spark) == 0
    assert capsys.readouterr().out == from_folder
    spark.read.parquet(str(tmp_path / "events.parquet")).createOrReplaceTempView("cli_readings")  # a table's name
    assert main(["query", "cli_readings", query, "--as", "readings", "--format", "csv"], spark=spark) == 0
    assert capsys.readouterr().out == from_folder
    got = {(r["key"], seconds(r["window_start"]), seconds(r["window_end"])): (float(r["hi"]), float(r["lo"]),
                                                                                int(r["n"]))
           for r in csv.DictReader(io.StringIO(from_folder))}
    assert got == expected(rows)


def test_a_null_window_attribute_is_one_line(spark, tmp_path, capsys):
    write_csv(tmp_path / "events.csv", events(20))
    with (tmp_path / "events.csv").open("a") as f:
        f.write(",north,3.25\n")
    assert main(["query", str(tmp_path / "events.csv"), QUERY], spark=spark) == BAD_INPUT
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("wid: ") and "'ts'" in err and "wid_" not in err


@pytest.mark.slow
def test_replay_with_embedded_punctuations_from_a_file_equals_the_api(spark, tmp_path, capsys):
    rows = events(40, seed=5)
    with (tmp_path / "events.csv").open("w", newline="") as f:  # a source that has its own arrival order
        writer = csv.writer(f)
        writer.writerow(["row_num", "ts", "key", "value"])
        for r in rows:
            writer.writerow([r["row_num"] * 2, r["ts"].strftime("%Y-%m-%d %H:%M:%S.%f"), r["key"], f"{r['value']:.2f}"])
    (tmp_path / "bounds.csv").write_text("row_num,ts\n21,2026-11-01 08:04:00\n51,2026-11-01 08:07:30.5\n")
    query = "SELECT key, count(*) AS n FROM events [RANGE 2 MINUTES SLIDE 30 SECONDS WATTR ts] GROUP BY key"
    assert main(["replay", str(tmp_path / "events.csv"), query, "--punctuation",
                 f"embedded('{tmp_path / 'bounds.csv'}')", "--format", "json"], spark=spark) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    reader = spark.read.option("header", True).option("inferSchema", True)
    reader.csv(str(tmp_path / "events.csv")).createOrReplaceTempView("events")
    rep = wid.replay(spark, query, wid.punctuate.embedded(reader.csv(str(tmp_path / "bounds.csv"))))
    expected = sorted((r.key, r.wid, r.n, r.emit_row, r.revision) for r in rep.results.collect())
    assert [(r["key"], r["wid"], r["n"], r["emit_row"], r["revision"]) for r in printed] == expected
    assert any(r["emit_row"] is not None for r in printed)  # the file's punctuations emitted windows early
