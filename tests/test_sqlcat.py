"""Issue 13: ``wid.to_sql`` (random queries and streams: ``spark.sql(to_sql(q)) == wid.query(q)``),
persistent window views, ``window_start``/``window_end`` against Spark's ``window()``, bad input,
and (slow) the Hive catalog read by a separate plain-pyspark application and by ``beeline`` over
``wid serve``."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import socket
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

import wid
from wid.sql import catalog
from wid.errors import WidError
from wid.sql.serve import spark_home
from wid.windows.flink import (CountEviction, CountTrigger, DeltaEviction, Discretization, TimeEviction, TimeTrigger,
                            TumblingEviction)
from wid.windows.spl_clause import parse_spl

from tests.operational_sim import simulate, simulate_flink
from tests.test_spl import random_rows
from tests.test_spl import stream as spl_stream

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "datasets" / "traffic_sample.parquet"
Q1 = ("SELECT seg_id, max(speed) AS max_speed, min(speed) AS min_speed "
      "FROM traffic [RANGE 300 SECONDS SLIDE 60 SECONDS WATTR ts] GROUP BY seg_id")


def rows(df) -> list[tuple]:
    """Sorted rows, floats rounded to 9 significant digits (sums may add in another order)."""
    def norm(v):
        return float(f"{v:.9g}") if isinstance(v, float) and math.isfinite(v) else v
    return sorted((tuple(norm(v) for v in r) for r in df.collect()), key=repr)


def random_stream(spark, rng: random.Random, name: str) -> None:
    n = rng.randint(0, 60)
    base = dt.datetime(2026, 1, 1)
    data = []
    for i in range(n):
        x = rng.choice([rng.randint(-50, 400), rng.randrange(-50, 400, 10)])  # some on window edges
        data.append((3 * i + rng.randint(0, 2), rng.choice("abc"), rng.choice([None, rng.randint(0, 9)]),
                     base + dt.timedelta(seconds=x, microseconds=rng.choice([0, 250_000, 1])), x, x / 4))
    schema = "row_num long, k string, v int, ts timestamp, x long, d double"
    spark.createDataFrame(data, schema).createOrReplaceTempView(name)


def random_query(rng: random.Random, view: str, kind: int | None = None) -> str:
    """A random query over ``random_stream``'s view, of window kind number ``kind`` (random by default)."""
    attr, unit = rng.choice([("ts", " SECONDS"), ("x", ""), ("d", "")])
    r, s = rng.choice([(60, 20), (30, 30), (20, 50), (7, 3)])
    windows = [
        f"RANGE {r}{unit} SLIDE {s}{unit} WATTR {attr}",
        f"RANGE {r % 9 + 1} ROWS SLIDE {s % 4 + 1} ROWS WATTR row_num",
        f"RANGE {r % 9 + 1} ROWS SLIDE {s % 4 + 1} ROWS WATTR row_num PATTR k",
        f"RANGE UNBOUNDED SLIDE {s}{unit} WATTR {attr}",
        f"RANGE {r}{unit} RATTR {attr} SLIDE 1 ROW SATTR row_num",
        f"RANGE {r}{unit} RATTR {attr} SLIDE 3 ROWS SATTR row_num",
        f"RANGE {r}{unit} RATTR {attr} SLIDE 2 ROWS SATTR rank({attr})",
        f"SESSION {s}{unit} WATTR {attr}",
        f"SESSION {s}{unit} WATTR {attr} PATTR k",
    ]
    window = windows[kind % len(windows)] if kind is not None else rng.choice(windows)
    aggregates = rng.sample(["count(*) AS n", "count(v) AS nv", "sum(v) AS total", "avg(d) AS mean",
                             "min(v) AS lo", "max(d + v) AS hi", "count(DISTINCT v) AS kinds"], 2)
    grouped = rng.random() < 0.5 and "PATTR" not in window
    where = rng.choice(["", "", " WHERE v > 2", " WHERE k <> 'a'"])
    having = " HAVING n > 1" if "count(*) AS n" in aggregates and rng.random() < 0.5 else ""
    keys = "k, " if grouped or "PATTR" in window else ""
    return (f"SELECT {keys}{', '.join(aggregates)} FROM {view} [{window}]{where}"
            f"{' GROUP BY k' if grouped else ''}{having}")


@pytest.mark.slow
def test_to_sql_equals_query_on_random_queries_and_streams(spark):
    rng = random.Random(13)
    for case in range(9):  # every window kind once
        random_stream(spark, rng, "sqlcat_stream")
        text = random_query(rng, "sqlcat_stream", case)
        compiled = spark.sql(wid.to_sql(spark, text))
        expected = wid.query(spark, text)
        assert compiled.columns == expected.columns, text
        assert rows(compiled) == rows(expected), text


@pytest.mark.slow
def test_sessions_in_sql_equal_sparks_session_window(spark):
    """Sessions of timestamps, compiled to SQL and by ``wid.query``, are Spark's own
    ``session_window`` (a tuple at exactly ``last + g`` joins the session in both)."""
    rng = random.Random(21)
    for gap in (20, 1.5):
        random_stream(spark, rng, "sqlcat_sessions")
        text = (f"SELECT k, count(*) AS n, sum(v) AS total, max(d) AS hi FROM sqlcat_sessions "
                f"[SESSION {gap} SECONDS WATTR ts] GROUP BY k")
        compiled, ours = spark.sql(wid.to_sql(spark, text)), wid.query(spark, text)
        assert compiled.dtypes == ours.dtypes
        assert dict(ours.dtypes)["session_end"] == "timestamp"
        theirs = spark.table("sqlcat_sessions").groupBy("k", F.session_window("ts", f"{gap} seconds")).agg(
            F.count("*"), F.sum("v"), F.max("d")).select("session_window.start", "session_window.end", "k",
                                                         "count(1)", "sum(v)", "max(d)")
        assert rows(compiled.drop("wid")) == rows(ours.drop("wid")) == rows(theirs)


@pytest.mark.slow
def test_quoted_unicode_and_hostile_names_compile_and_inject_nothing(spark):
    """Back-quoted stream and column names (spaces, unicode, a back quote and SQL after it)
    compile to the same rows as ``wid.query``; nothing in a name runs as SQL."""
    spark.sql("CREATE OR REPLACE TEMP VIEW sqlcat_victim AS SELECT 1 AS a")
    hostile = "clé`; DROP VIEW sqlcat_victim; --"
    spark.createDataFrame([(i, i * 7 % 40, "ab"[i % 2], i % 5, "xy"[i % 3 % 2]) for i in range(30)],
                          ["row_num", "horodatage é", hostile, "v a l", "clé"]).createOrReplaceTempView("sqlcat_named")
    stream = "`flux de données``) ; DROP VIEW sqlcat_victim; --`"
    spark.sql(f"CREATE OR REPLACE TEMP VIEW {stream} AS SELECT * FROM sqlcat_named")
    key = "`" + hostile.replace("`", "``") + "`"
    for window in ["RANGE 10 SLIDE 5 WATTR `horodatage é`", "SESSION 3 WATTR `horodatage é`",
                   "RANGE 3 ROWS SLIDE 2 ROWS WATTR `horodatage é` PATTR `clé`",
                   f"RANGE 3 ROWS SLIDE 2 ROWS WATTR `horodatage é` PATTR {key}"]:
        text = f"SELECT {key}, sum(`v a l`) AS `total ☃` FROM {stream} [{window}] GROUP BY {key}"
        compiled, expected = spark.sql(wid.to_sql(spark, text)), wid.query(spark, text)
        assert compiled.columns == expected.columns and compiled.columns[-2:] == [hostile, "total ☃"]
        assert rows(compiled) == rows(expected) and len(rows(expected)) > 4
    assert spark.catalog.tableExists("sqlcat_victim")
    for bad in ["données", "t; DROP VIEW sqlcat_victim", "a.b.c.d", "``"]:
        with pytest.raises(WidError, match="not a valid table or view name"):
            wid.sql.views.create_persistent_view(spark, bad, text)


def test_to_sql_keeps_order_by_and_limit(spark):
    random_stream(spark, random.Random(5), "sqlcat_ordered")
    text = ("SELECT k, count(*) AS n FROM sqlcat_ordered [RANGE 60 SECONDS SLIDE 20 SECONDS WATTR ts] "
            "GROUP BY k ORDER BY n DESC, k, wid LIMIT 4")
    assert spark.sql(wid.to_sql(spark, text)).collect() == wid.query(spark, text).collect()


@pytest.mark.parametrize("window", ["RANGE 4 SLIDE 2 WATTR x", "RANGE 4 RATTR x SLIDE 1 ROW SATTR row_num"])
def test_to_sql_and_query_keep_sparks_result_types(spark, window):
    """sum and avg of decimals, ints and doubles, min of a decimal: ``wid.query`` and its SQL text
    give the types of Spark's own aggregates (sum of decimal(12, 2) a decimal(22, 2), avg a
    decimal(16, 6)), and the same rows."""
    rng = random.Random(3)
    data = [(i, rng.choice("ab"), rng.randint(-9, 30), Decimal(rng.randint(-10**5, 10**5)) / 100,
             rng.choice([None, rng.randint(-5, 5)]), rng.random()) for i in range(40)]
    spark.createDataFrame(data, "row_num long, k string, x long, d decimal(12,2), v int, f double") \
        .createOrReplaceTempView("sqlcat_types")
    items = ["sum(d) AS sd", "avg(d) AS ad", "min(d) AS lod", "sum(v) AS sv", "avg(v) AS av", "sum(f) AS sf"]
    text = f"SELECT k, {', '.join(items)} FROM sqlcat_types [{window}] GROUP BY k"
    compiled, expected = spark.sql(wid.to_sql(spark, text)), wid.query(spark, text)
    names = [item.split(" AS ")[1] for item in items]
    own = spark.table("sqlcat_types").groupBy("k").agg(*[F.expr(item) for item in items]).schema
    types = [own[n].dataType for n in names]
    assert [expected.schema[n].dataType for n in names] == [compiled.schema[n].dataType for n in names] == types
    assert types[:2] == [DecimalType(22, 2), DecimalType(16, 6)]
    assert rows(compiled) == rows(expected)


def random_spl_clause(rng: random.Random) -> str:
    """An SPL clause of count, time and punct policies (the ``columns`` path, on any data)."""
    partitioned = " partitioned BY k" if rng.random() < 0.5 else ""
    if rng.random() < 0.4:
        eviction = rng.choice([f"count({rng.randint(1, 5)})", f"time({rng.choice([1, 1.5, 3])})", "punct()"])
        complete = ", aggregateIncompleteWindows(false)" if rng.random() < 0.4 else ""
        return f"tumbling, {eviction}{partitioned}{complete}"
    eviction = rng.choice([f"count({rng.randint(1, 6)})", f"time({rng.choice([1, 2.5, 4])})"])
    trigger = rng.choice([f"count({rng.randint(1, 3)})", f"time({rng.choice([0.5, 1, 2])})"])
    full = ", aggregatePartialWindows(false)" if eviction.startswith("count") and rng.random() < 0.4 else ""
    return f"sliding, {eviction}, {trigger}{partitioned}{full}"


def random_discretization(rng: random.Random) -> Discretization:
    """A Flink discretization on the ``columns`` path."""
    per_group = ("k",) if rng.random() < 0.5 else ()
    if rng.random() < 0.5:
        evictions = rng.choice([[], [CountEviction(rng.randint(2, 6), rng.randint(1, 3))], [TumblingEviction()]])
        return Discretization([CountTrigger(rng.randint(1, 4), rng.randint(0, 2))], evictions, per_group)
    trigger = TimeTrigger(rng.choice([1, 2.5]), rng.choice([0, 1]), rng.choice([None, 0.5]))
    evictions = rng.choice([[CountEviction(rng.randint(2, 6))], [TimeEviction(rng.choice([2, 3.5]))],
                            [TimeEviction(4), TimeEviction(2)]])
    return Discretization([trigger], evictions, per_group)


@pytest.mark.slow
def test_spl_and_flink_columns_paths_in_sql_equal_the_simulators(spark):
    """SPL windows of count, time and punct policies and Flink discretizations on the ``columns``
    path: ``spark.sql(to_sql(q))`` has ``wid.query``'s columns and types and the windows of the
    event-by-event simulators (tests/operational_sim.py)."""
    rng = random.Random(77)
    text = ("SELECT k, count(*) AS n, sum(v) AS total, min(row_num) AS lo, max(row_num) AS hi "
            "FROM s [{}] GROUP BY k")
    for case in range(4):
        clause, d = random_spl_clause(rng), random_discretization(rng)
        for window, simulated in ((None, lambda rows: simulate(rows, parse_spl(clause))),
                                  (d, lambda rows: simulate_flink(rows, d))):
            rows = spl_stream(spark, random_rows(rng, 40, False, punctuated=window is None and "punct" in clause))
            q = text.format(clause if window is None else "flink")
            compiled = spark.sql(wid.to_sql(spark, q, window))
            assert compiled.dtypes == wid.query(spark, q, window).dtypes, q
            expected = set()
            for _, w, content in simulated(rows):
                for k in {r["k"] for r in content}:
                    part = [r["row_num"] for r in content if r["k"] == k]
                    expected.add((k, w, len(part), sum(r["v"] for r in content if r["k"] == k), min(part), max(part)))
            assert {(r.k, r.wid, r.n, r.total, r.lo, r.hi) for r in compiled.collect()} == expected, (q, window)


def test_to_sql_refuses_python_kinds_naming_the_alternative(spark):
    random_stream(spark, random.Random(1), "sqlcat_spl")
    spark.table("sqlcat_spl").withColumn("arrival_ts", F.col("d")).createOrReplaceTempView("sqlcat_spl")
    for clause in ["sliding, count(4), delta(x, 2)", "tumbling, delta(x, 5)",
                   "sliding, count(3), count(1) partitioned BY k, partitionAge(2)"]:
        with pytest.raises(WidError, match="not compiled to SQL.*in Python.*use a temporary view"):
            wid.to_sql(spark, f"SELECT count(*) AS n FROM sqlcat_spl [{clause}]")
    chain = Discretization([CountTrigger(3)], [DeltaEviction(2.0, attrs=("x",))])
    with pytest.raises(WidError, match="chain path, not compiled to SQL.*in Python.*temporary view"):
        wid.to_sql(spark, "SELECT count(*) AS n FROM sqlcat_spl [flink]", chain)
    with pytest.raises(WidError, match="expected SELECT"):
        wid.to_sql(spark, "SELECT 1")


def test_window_bounds_equal_spark_window(spark):
    """``window_start``/``window_end`` of a timestamp window are Spark ``window()``'s bounds."""
    traffic = spark.read.parquet(str(SAMPLE))
    traffic.createOrReplaceTempView("traffic")
    ours = wid.query(spark, Q1)
    assert ours.columns[:3] == ["wid", "window_start", "window_end"]
    assert dict(ours.dtypes)["window_start"] == "timestamp"
    theirs = traffic.groupBy("seg_id", F.window("ts", "300 seconds", "60 seconds")).agg(
        F.max("speed"), F.min("speed")).select("window.start", "window.end", "seg_id", "max(speed)", "min(speed)")
    assert rows(ours.drop("wid")) == rows(theirs)
    assert rows(spark.sql(wid.to_sql(spark, Q1))) == rows(ours)


@pytest.mark.slow
def test_window_bounds_of_rows_and_landmark_windows(spark):
    spark.range(10).select(F.col("id").alias("row_num"), (F.col("id") * 3).alias("x")).createOrReplaceTempView("sqlcat_pos")
    out = wid.query(spark, "SELECT count(*) AS n FROM sqlcat_pos [RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num]")
    assert {(r.wid, r.window_start, r.window_end) for r in out.collect()} == {
        (w, 2 * (w + 1) - 4, 2 * (w + 1)) for w in range(0, 6)}
    landmark = wid.query(spark, "SELECT count(*) AS n FROM sqlcat_pos [RANGE UNBOUNDED SLIDE 10 WATTR x]")
    assert sorted((r.window_start, r.window_end, r.n) for r in landmark.collect()) == [
        (None, 10, 4), (None, 20, 7), (None, 30, 10)]


@pytest.mark.slow
def test_persistent_view_text_is_the_compiled_sql_and_bad_input_leaves_nothing(spark, tmp_path):
    spark.read.parquet(str(SAMPLE)).write.saveAsTable("sqlcat_traffic")
    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")
    try:
        q = Q1.replace("FROM traffic", "FROM sqlcat_traffic").replace("max(speed)", "max(speed) -- a comment\n")
        view = wid.run_sql(spark, f"CREATE VIEW sqlcat_q1 AS {q}")
        assert rows(view) == rows(wid.query(spark, q))
        stored = spark.sql("SHOW CREATE TABLE sqlcat_q1").first()[0]
        assert "div(" in stored and "[RANGE" not in stored  # the window-id formula, not the clause
        with pytest.raises(WidError, match="already exists"):
            wid.run_sql(spark, f"CREATE VIEW sqlcat_q1 AS {q}")
        wid.run_sql(spark, f"CREATE OR REPLACE VIEW sqlcat_q1 AS {q.replace('min(speed)', 'avg(speed)')}")
        assert "min_speed" in spark.table("sqlcat_q1").columns  # the alias, over avg now
        bad = [
            ("CREATE VIEW sqlcat_v1 AS " + Q1, "temporary view"),  # traffic is a temp view
            ("CREATE VIEW sqlcat_v2 AS " + Q1.replace("traffic", "sqlcat_missing"), "unknown table"),
            ("CREATE VIEW sqlcat_v3 AS " + q.replace("max(speed)", "max(nope)"), "unknown column 'nope' in view"),
            ("CREATE VIEW sqlcat_v4 AS SELECT count(*) AS n FROM sqlcat_traffic [tumbling, delta(speed, 4)]",
             "not compiled to SQL"),
            ("CREATE TABLE sqlcat_v5 AS " + q, "can only define a view"),
        ]
        for statement, message in bad:
            with pytest.raises(WidError, match=message):
                wid.run_sql(spark, statement)
        assert not any(spark.catalog.tableExists(f"sqlcat_v{i}") for i in range(1, 6))
        with pytest.raises(WidError, match="not a valid table or view name"):
            wid.sql.views.create_persistent_view(spark, "v; DROP TABLE sqlcat_traffic", q)
        temp = wid.run_sql(spark, "CREATE TEMP VIEW sqlcat_t AS " + Q1)
        assert spark.catalog.getTable("sqlcat_t").isTemporary and temp.count() == 398
    finally:
        spark.sql("DROP VIEW IF EXISTS sqlcat_q1")
        spark.sql("DROP TABLE IF EXISTS sqlcat_traffic")


def test_register_persistent_functions(spark):
    wid.register(spark, persistent=True)
    try:
        assert spark.sql("SELECT wid_lo(CAST(125 AS DOUBLE), 300, 60) AS lo").first().lo == 2
        assert not spark.catalog.getFunction("wid_lo").isTemporary
    finally:
        for name in wid.sql.views.FUNCTIONS:
            spark.sql(f"DROP FUNCTION IF EXISTS {name}")


def test_wid_sql_statements_file(spark, tmp_path, capsys):
    from wid.cli.commands import main

    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")
    script = tmp_path / "q.sql"
    script.write_text(f"-- Q1; as a temp view\nCREATE TEMP VIEW sqlcat_cli AS {Q1};\n"
                      "SELECT count(*) AS n FROM sqlcat_cli;\nSELECT ';' AS semicolon")
    assert main(["sql", "-f", str(script)], spark=spark) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[0] == "OK" and "398" in out and "(1 row)" in out
    assert main(["sql", "-e", "SELECT count(*) AS n FROM nowhere [RANGE 1 SLIDE 1 WATTR x]"], spark=spark) == 2
    assert "unknown view 'nowhere'" in capsys.readouterr().err


# --- the Hive catalog, read by other Spark applications (slow) ------------------------------------

PLAIN_READER = """
import json, sys
from pyspark.sql import SparkSession
conf = json.loads(sys.argv[1])
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
print(json.dumps([list(map(str, r)) for r in spark.sql("SELECT * FROM q1").collect()]))
spark.stop()
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}


def _strings(df) -> list[list[str]]:
    return sorted([str(v) for v in r] for r in df.collect())


def _walkthrough() -> list[str]:
    """The shell blocks of docs/sql.md marked ``walkthrough``, in order."""
    text = (ROOT / "docs" / "sql.md").read_text()
    return [block.split("```sh\n", 1)[1].split("\n```", 1)[0]
            for block in text.split("<!-- walkthrough:")[1:]]


def _run_walkthrough(block: str, home: Path) -> subprocess.CompletedProcess:
    """A walkthrough block of docs/sql.md run as written from the checkout's root, ``wid`` this checkout's CLI and
    HOME ``home`` (loopback only: a Spark defaults file for the ``spark-sql`` process)."""
    conf = home / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text("spark.driver.host 127.0.0.1\nspark.ui.enabled false\n")
    env = {**_env(), "HOME": str(home), "SPARK_CONF_DIR": str(conf), "TZ": "UTC",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    script = f'set -e\nwid() {{ "{sys.executable}" -m wid.cli.commands "$@"; }}\n{block}\n'
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def hive_catalog(tmp_path_factory) -> Path:
    """The catalog home ``~/.wid`` that the first walkthrough block of docs/sql.md makes, run as written
    (HOME a temporary directory): ``wid sql``, in its own process, saves the sample as the table
    ``traffic`` and creates the window view ``q1`` = Q1."""
    blocks = _walkthrough()
    assert len(blocks) == 2 and "CREATE VIEW q1" in blocks[0] and "spark-sql" in blocks[1]
    home = tmp_path_factory.mktemp("home")
    done = _run_walkthrough(blocks[0], home)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "(3 rows)"  # its SELECT ... LIMIT 3
    return home / ".wid"


@pytest.mark.slow
def test_plain_pyspark_application_reads_the_window_view(spark, hive_catalog):
    conf = {k: v for k, v in catalog.conf(hive_catalog).items() if k != "spark.driver.extraJavaOptions"}
    done = subprocess.run([sys.executable, "-c", PLAIN_READER, json.dumps(conf)], env={
        **os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": ""}, capture_output=True, text=True,
        timeout=900, cwd=hive_catalog)
    assert done.returncode == 0, done.stderr[-2000:]
    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")
    assert sorted(json.loads(done.stdout.strip().splitlines()[-1])) == _strings(wid.query(spark, Q1))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_beeline_reads_the_window_view_over_wid_serve(spark, hive_catalog):
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "wid.cli.commands", "serve", "--port", str(port),
                               "--warehouse", str(hive_catalog)], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")  # the expected rows, while it starts
        expected = _strings(wid.query(spark, Q1).select(
            "wid", *[F.date_format(c, "yyyy-MM-dd HH:mm:ss.S").alias(c) for c in ("window_start", "window_end")],
            "seg_id", "max_speed", "min_speed"))
        ready = server.stdout.readline()
        assert f"jdbc:hive2://127.0.0.1:{port}" in ready, server.stderr.read()[-2000:]
        beeline = subprocess.run(
            [str(spark_home() / "bin" / "beeline"), "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", "wid",
             "--outputformat=csv2", "--silent=true", "-e", "SHOW VIEWS; SELECT * FROM q1;"],
            env={**_env(), "SPARK_HOME": str(spark_home())}, capture_output=True, text=True, timeout=600)
        assert beeline.returncode == 0, beeline.stderr[-2000:]
        lines = [line for line in beeline.stdout.splitlines() if line.strip()]
        assert lines[:2] == ["namespace,viewName,isTemporary", "default,q1,false"]
        assert lines[2] == "wid,window_start,window_end,seg_id,max_speed,min_speed"
        assert sorted(line.split(",") for line in lines[3:]) == expected
        (hive_catalog / "beeline.txt").write_text(beeline.stdout)
    finally:
        server.terminate()
        assert server.wait(120) == 0
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_serve_refuses_a_bad_port(spark, capsys):
    from wid.cli.commands import main

    assert main(["serve", "--port", "0"], spark=spark) == 2
    assert "--port must be 1..65535" in capsys.readouterr().err


@pytest.mark.slow
def test_readme_walkthrough_through_the_spark_sql_binary(spark, hive_catalog):
    """The commands of docs/sql.md as written: after its first block (``hive_catalog``: ``wid sql`` made
    the table and the view ``q1``), the distribution's ``spark-sql``, a separate process on the same
    warehouse and metastore, reads ``q1``: the rows of ``wid.query``."""
    done = _run_walkthrough(_walkthrough()[1], hive_catalog.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")
    expected = wid.query(spark, Q1).orderBy("seg_id", "wid")
    assert lines[-4] == str(expected.count()) == "398"
    first = expected.limit(3).selectExpr(*[f"CAST(`{c}` AS STRING)" for c in expected.columns]).collect()
    assert [line.split("\t") for line in lines[-3:]] == [list(r) for r in first]


#: Window views of the newer window kinds and syntaxes, over the walkthrough's table ``traffic``.
NEW_KINDS = {
    "q_offset": "SELECT seg_id, max(speed) AS hi, count(*) AS n FROM traffic "
                "[RANGE 300 SECONDS SLIDE 60 SECONDS OFFSET 15 SECONDS WATTR ts] GROUP BY seg_id",
    "q_cumulate": "SELECT seg_id, max(speed) AS hi, count(*) AS n FROM traffic "
                  "[CUMULATE STEP 2 MINUTES SIZE 10 MINUTES OFFSET -1 MINUTE WATTR ts] GROUP BY seg_id",
    "q_calendar": "SELECT count(*) AS n, min(speed) AS lo FROM traffic "
                  "[RANGE 1 DAY SLIDE 1 DAY WATTR ts TIMEZONE 'America/New_York']",
    "q_spark": "SELECT window.start AS s, window.end AS e, seg_id, round(avg(speed), 6) AS mean FROM traffic "
               "GROUP BY window(ts, '5 minutes', '1 minute', '30 seconds'), seg_id",
}


@pytest.mark.slow
def test_views_of_the_new_window_kinds_are_read_by_spark_sql(spark, hive_catalog):
    """A view of an OFFSET grid, a cumulating window, a calendar day in New York and Spark's own
    ``window()`` syntax, each made by ``wid sql`` on the walkthrough's catalog, read by the
    distribution's ``spark-sql`` (a JVM process without wid): the rows of ``wid.query``."""
    made = _run_walkthrough('wid sql -e "' + "; ".join(f"CREATE OR REPLACE VIEW {name} AS {text}"
                                                       for name, text in NEW_KINDS.items()) + '"',
                            hive_catalog.parent)
    assert made.returncode == 0, made.stderr[-3000:]
    read = _walkthrough()[1].rsplit("-e ", 1)[0] + '-e "' + "; ".join(f"SELECT * FROM {name}" for name in NEW_KINDS) + '"'
    done = _run_walkthrough(read, hive_catalog.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    spark.read.parquet(str(SAMPLE)).createOrReplaceTempView("traffic")
    expected = []
    for text in NEW_KINDS.values():
        out = wid.query(spark, text)
        expected += [[str(v) for v in r] for r in out.selectExpr(*[f"CAST(`{c}` AS STRING)" for c in out.columns]).collect()]
    lines = [line.split("\t") for line in done.stdout.splitlines() if line.strip()]
    assert len(expected) > 1000 and sorted(lines) == sorted(expected)
