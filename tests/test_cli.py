"""The ``wid`` command line: ``wid run`` prints or writes a plan's exact result, bad input ends
with one line on stderr and exit status 2, ``wid bench`` prints its table (README, Command line; docs/semantics.md section 11)."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from chispa import assert_df_equality

import wid
from wid.bench import main as bench
from wid.cli.commands import BAD_INPUT, main
from wid.console import cells
from wid.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
# Plans that `wid run` evaluates alone (no [experiment], [flink], ... table for other commands).
PLANS = [p for p in sorted((ROOT / "plans").glob("*.toml")) if not Plan.load(p).sections]
ROWS = 2000


def expected_source(spark, plan: Plan, rows: int):
    """The plan's input cut to its first ``rows`` tuples, built without the CLI."""
    if "generator" in plan.input:
        name = plan.input["generator"]
        generate = getattr(importlib.import_module(f"wid.datasets.{name}"), name)
        return generate(spark, **{**{k: v for k, v in plan.input.items() if k != "generator"}, "rows": rows})
    return spark.read.parquet(str(plan.path.parent / plan.input["path"])).where(f"row_num < {rows}")


def printed(text: str) -> tuple[list[str], list[list[str]], str]:
    """Header, cells and the closing note of a printed table (columns as under the dashes)."""
    lines = text.splitlines()
    spans = [m.span() for m in re.finditer(r"-+", lines[1])]
    assert lines[1].replace(" ", "") == "-" * sum(end - start for start, end in spans)

    def cells(line: str) -> list[str]:
        return [line[start:end].strip() for start, end in spans]

    return cells(lines[0]), [cells(line) for line in lines[2:-1]], lines[-1]


def write_plan(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


Q1 = """
view = "traffic"
query = "SELECT seg_id, max(speed) AS hi FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id"
[input]
path = "{sample}"
"""
SAMPLE = ROOT / "datasets" / "traffic_sample.parquet"


@pytest.mark.parametrize(
    "plan_path", [p if p.stem == "q1_traffic" else pytest.param(p, marks=pytest.mark.slow) for p in PLANS],
    ids=[p.stem for p in PLANS],
)
def test_run_prints_the_first_rows_sorted_by_keys_then_wid(spark, capsys, plan_path):
    plan = Plan.load(plan_path)
    assert main(["run", str(plan_path), "--rows", str(ROWS), "--limit", "7"], spark=spark) == 0
    header, rows, note = printed(capsys.readouterr().out)

    expected_source(spark, plan, ROWS).createOrReplaceTempView(plan.view)
    result = wid.query(spark, plan.query)
    keys = [c for c in result.columns if c != "wid" and c in spark.table(plan.view).columns]
    everything = sorted(result.collect(), key=lambda r: [r[k] for k in keys] + [r["wid"]])
    assert header == result.columns
    shown = [cells([row[i] for row in everything[:7]], f.dataType) for i, f in enumerate(result.schema.fields)]
    assert rows == [list(row) for row in zip(*shown)]  # each column in one format
    assert note == (f"(showing 7 of {len(everything)} rows; --limit N for more)" if len(everything) > 7
                    else f"({len(everything)} rows)")


def test_run_prints_every_row_when_under_the_limit(spark, capsys, tmp_path):
    plan = write_plan(tmp_path / "q.toml", Q1.format(sample=SAMPLE))
    assert main(["run", str(plan), "--rows", "30", "--limit", "1000"], spark=spark) == 0
    _, rows, note = printed(capsys.readouterr().out)
    assert note == f"({len(rows)} rows)" and rows


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_out_writes_the_query_result(spark, capsys, tmp_path, fmt):
    plan = Plan.load(ROOT / "plans" / "q1_traffic.toml")
    out = tmp_path / "out"
    assert main(["run", str(plan.path), "--out", str(out), "--format", fmt], spark=spark) == 0
    written_line = capsys.readouterr().out.strip()

    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView(plan.view)
    expected = wid.query(spark, plan.query)
    assert written_line == f"wrote {expected.count()} rows to {out} ({fmt})"
    reader = spark.read.schema(expected.schema).option("header", True) if fmt == "csv" else spark.read
    written = reader.format(fmt).load(str(out))
    assert_df_equality(written, expected, ignore_row_order=True, ignore_nullable=True)
    shown = [(r.seg_id, r.wid) for r in written.collect()]  # one file, in the order `wid run` prints
    assert shown == sorted(shown)


def test_out_never_overwrites(spark, capsys, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    code = main(["run", str(ROOT / "plans" / "q1_traffic.toml"), "--out", str(tmp_path / "out")], spark=spark)
    err = capsys.readouterr().err
    assert code == BAD_INPUT and len(err.splitlines()) == 1 and "already exists" in err
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


BAD_PLANS = {
    "missing file": (None, "plan not found"),
    "not toml": ("query = [", "cannot read plan"),
    "unknown key": ("colour = 'red'\n" + Q1, "unknown key(s) colour"),
    "unknown input key": (Q1 + "rows = 5\n", "unknown key(s) in [input]: rows"),
    "unknown generator option": (
        'view = "t"\nquery = "x"\n[input]\ngenerator = "traffic"\nrows = 5\nspeed = 3\n',
        "unknown key(s) in [input]: speed",
    ),
    "unknown generator": ('view = "t"\nquery = "x"\n[input]\ngenerator = "weather"\n', "unknown generator 'weather'"),
    "path and generator": (Q1 + 'generator = "traffic"\n', "exactly one of 'path' or 'generator'"),
    "no query": ('view = "t"\n[input]\npath = "x.parquet"\n', "'query' must be a non-empty string"),
    "missing input file": (Q1.replace("{sample}", "nowhere.parquet"), "input file not found"),
    "non-positive range": (Q1.replace("RANGE 5 MINUTES", "RANGE -5 MINUTES"), "RANGE must be positive"),
    "malformed clause": (Q1.replace("WATTR ts", "WATTR"), "WATTR needs a column name"),
    "unknown column": (Q1.replace("max(speed)", "max(velocity)"), "unknown column 'velocity'"),
    "input path not a string": ('view = "t"\nquery = "x"\n[input]\npath = 5\n',
                                "[input] path must be a non-empty string, got 5"),
    "sum of a string": (Q1.replace("max(speed)", "sum(seg_id)"), "sum(seg_id): sum needs a number, not string"),
    "range beyond a long of micros": (Q1.replace("RANGE 5 MINUTES", "RANGE 1000000000000000000 SECONDS"),
                                      "exceeds 2**61"),
    "range too fine": (Q1.replace("RANGE 5 MINUTES SLIDE 1 MINUTE", "RANGE 1e-300 SLIDE 1e-300"),
                       "more than 18 decimal places"),
}


@pytest.mark.parametrize("body,message", BAD_PLANS.values(), ids=BAD_PLANS.keys())
def test_bad_plan_is_one_line_and_status_2(spark, capsys, tmp_path, body, message):
    plan = tmp_path / "plan.toml"
    if body is not None:
        write_plan(plan, body.replace("{sample}", str(SAMPLE)))
    code = main(["run", str(plan)], spark=spark)
    out, err = capsys.readouterr()
    assert code == BAD_INPUT and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("wid: ") and message in err


@pytest.mark.parametrize("row, replay, message", [
    ("1,a,60.0,", "", "NULL or NaN window attribute 'x' in the tuple with row_num=1"),
    # raised inside a subquery of the replay's plan: Py4J's error, not PySpark's
    (",a,60.0,2.5", '[replay]\npunctuation = "slack"\namount = 1.0\n',
     "a tuple with a NULL row_num: arrival order needs one"),
], ids=["null window attribute", "null row_num in a replay"])
@pytest.mark.slow
def test_a_check_raised_inside_spark_is_one_line(spark, capsys, tmp_path, row, replay, message):
    (tmp_path / "s.csv").write_text(f"row_num,seg_id,speed,x\n0,a,50.0,1.5\n{row}\n2,b,70.0,3.0\n")
    plan = write_plan(
        tmp_path / "plan.toml",
        'view = "s"\nquery = "SELECT seg_id, count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR x] GROUP BY seg_id"\n'
        '[input]\npath = "s.csv"\n' + replay,
    )
    code = main(["run", str(plan)], spark=spark)
    err = capsys.readouterr().err
    assert code == BAD_INPUT
    assert err == f"wid: {message}\n"


@pytest.mark.parametrize("x, shown", [("1e300", "1.0E300"), ("Inf", "Infinity")])
def test_huge_window_attribute_is_one_line_naming_the_row(spark, capsys, tmp_path, x, shown):
    (tmp_path / "s.csv").write_text(f"row_num,seg_id,x\n0,a,1.5\n1,a,{x}\n")
    plan = write_plan(tmp_path / "plan.toml", 'view = "s"\nquery = "SELECT seg_id, count(*) AS n FROM s '
                      '[RANGE 10 SLIDE 5 WATTR x] GROUP BY seg_id"\n[input]\npath = "s.csv"\n')
    code = main(["run", str(plan)], spark=spark)
    err = capsys.readouterr().err
    assert code == BAD_INPUT and len(err.splitlines()) == 1
    assert err.startswith(f"wid: window attribute 'x' = {shown} is infinite or beyond") and "row_num=1" in err


def test_a_foreign_file_is_named_not_echoed(spark, capsys, tmp_path):
    secret = "s3cr3t:x:0:0:root:/root:/bin/bash"
    (tmp_path / "passwd").write_text(secret + "\ndaemon:x:1:1::/:/bin/false\n")
    plan = write_plan(tmp_path / "plan.toml", 'view = "t"\nquery = "SELECT count(*) AS n FROM t '
                      '[RANGE 10 SLIDE 10 WATTR ts]"\n[input]\npath = "passwd"\nformat = "csv"\n')
    code = main(["run", str(plan)], spark=spark)
    err = capsys.readouterr().err
    assert code == BAD_INPUT and len(err.splitlines()) == 1
    assert str(tmp_path / "passwd") in err and "s3cr3t" not in err and "bash" not in err


def test_a_file_without_the_window_attribute_names_it(spark, capsys, tmp_path):
    (tmp_path / "s.csv").write_text("row_num,seg_id,speed\n0,a,1.5\n")
    plan = write_plan(tmp_path / "plan.toml", Q1.replace("{sample}", "s.csv").replace('"traffic"', '"s"')
                      .replace("FROM traffic", "FROM s"))
    code = main(["run", str(plan)], spark=spark)
    err = capsys.readouterr().err
    assert code == BAD_INPUT
    assert err == "wid: unknown column 'ts' in [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]: s has row_num, seg_id, speed\n"


@pytest.mark.parametrize("flags, message", [
    (["--limit", "-1"], "wid: --limit must be >= 0\n"),
    (["--out", "/proc/wid_out"], "wid: --out /proc/wid_out: cannot create the directory"),
])
def test_bad_flags_exit_2_before_spark_starts(flags, message):
    """The console entry point in a fresh interpreter: one line, status 2 (no JVM is started)."""
    done = subprocess.run([sys.executable, "-m", "wid.cli.commands", "run", "plans/q1_traffic.toml", *flags],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == BAD_INPUT and done.stdout == ""
    assert done.stderr.startswith(message) and len(done.stderr.splitlines()) == 1


def test_unknown_sections_are_passed_through(tmp_path):
    plan = Plan.load(write_plan(tmp_path / "p.toml", Q1.format(sample=SAMPLE) + "[output]\nsort = true\n"))
    assert plan.sections == {"output": {"sort": True}}


def _console_script() -> str:
    script = Path(sys.executable).parent / "wid"
    if not script.exists() and shutil.which("wid") is None:
        pytest.skip("the wid console script is not installed (pip install -e .)")
    return str(script if script.exists() else shutil.which("wid"))


@pytest.mark.slow
def test_console_script_runs_q1(spark):
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [_console_script(), "run", "plans/q1_traffic.toml", "--limit", "3"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    header, rows, note = printed(done.stdout)
    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")
    total = wid.query(spark, Plan.load(ROOT / "plans" / "q1_traffic.toml").query).count()
    assert header == ["wid", "window_start", "window_end", "seg_id", "max_speed", "min_speed"] and len(rows) == 3
    assert note == f"(showing 3 of {total} rows; --limit N for more)"

    bad = subprocess.run([_console_script(), "run", "plans/none.toml"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert bad.returncode == BAD_INPUT and bad.stderr == "wid: plan not found: plans/none.toml\n"


@pytest.mark.slow
def test_bench_prints_a_table_per_ratio_after_checking_against_window(spark, capsys, tmp_path, monkeypatch):
    chart = tmp_path / "bench.png"
    monkeypatch.setattr(bench, "ONCE", 0.0)  # every case "slow": its first run is its only one
    args = ["bench", "--rows", "3000", "--ratios", "2,5", "--slide", "10", "--segments", "5", "--repeat", "2",
            "--chart", str(chart)]
    assert main(args, spark=spark) == 0
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    assert lines[0].split() == [
        "range/slide", "range", "s", "wid", "s", "wid", "view", "s", "window()", "s", "tumbling", "s", "window()/wid",
        "wid", "view/wid", "wid/tumbling"
    ]
    assert [line.split()[:2] for line in lines[1:3]] == [["2", "20"], ["5", "50"]]
    assert lines[3].startswith("wid cost at range/slide 5 vs 2: ")
    # wid is checked against window() before anything is timed, then one progress line per
    # measurement: each ratio, each case of the table, in order
    runs = list(re.finditer(r"range/slide (\d+): (.+?) run 1/2 \d+\.\d+ s \(over 0 s: timed once\)$", err,
                            re.MULTILINE))
    cases = ("wid", "wid view", "window()", "tumbling")
    assert [m.groups() for m in runs] == [(ratio, case) for ratio in ("2", "5") for case in cases]
    assert " run 2/2 " not in err
    assert -1 < err.find("checked: wid = window() (count, min, max) at range/slide 5") < runs[0].start()
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and lines[4] == f"chart: {chart}"
