"""Column names as Spark allows them: a dot, a back quote or a space in a name changes nothing.

Spark reads ``F.col("seg.id")`` as field ``id`` of a column ``seg``, and pyspark's pandas and
Arrow operators pass every column as ``df[name]``, which does the same and refuses a lone back
quote. A view whose columns are named ``seg.id``, ``t.s`` and ``sp ee`d.1`` (each written
back-quoted in the query, a back quote inside doubled, as Spark SQL writes them) must give the
rows the same query gives over the same data under plain names: the reference is wid on plain
names, which the oracle and simulator tests check; here only the names differ. Every kind,
through ``wid.query``, ``wid.replay`` (with late rows) and live mode.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid import punctuate
from wid.windows.spl import Sliding, Tumbling
from wid.windows.spl_clause import parse_spl
from wid.windows.sqlexpr import quote
from wid.stream.live import run as live_run
from wid.stream.live.job import live
from wid.stream.replay import replay
from wid.compiler.query import query
from wid.errors import WidError

from live_jobs import run_in_waves

#: Plain name -> the name it has in the hostile view.
HOSTILE = {"k": "seg.id", "x": "t.s", "v": "sp ee`d.1"}
#: Kinds whose Bucket, aggregate or replay differ in how they reach Spark (a compiled column
#: expression, a window function, pandas or Arrow per partition or chunk): ``(clause, generator)``.
KINDS = {
    "sliding": ("RANGE 4 SLIDE 2 WATTR x", punctuate.slack(3)),
    "rows_pattr": ("RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR k", None),
    "slide_by_tuple": ("RANGE 4 RATTR x SLIDE 1 ROW SATTR row_num", punctuate.slack(3)),
    "session": ("SESSION 2 WATTR x", punctuate.slack(3)),
    "spl_count": ("sliding, count(4), count(2) partitioned BY k", None),
    "spl_delta": ("tumbling, delta(x, 4) partitioned BY k", None),
    "spl_delta_scan": ("sliding, delta(x, 5), delta(x, 3)", None),
}


def _rows(seed: int = 7, n: int = 60) -> list[tuple]:
    """``(row_num, k, x, v)``: NULL keys, ``x`` with decimals out of arrival order, ``v`` with
    NULL and NaN."""
    rnd = random.Random(seed)
    return [(2 * i, rnd.choice([0, 1, 2, None]), float(round(i - (rnd.uniform(0, 5) if rnd.random() < 0.3 else 0), 2)),
             rnd.choice([1.5, -2.25, None, 7.0, float("nan")])) for i in range(n)]


@pytest.fixture(scope="module")
def views(spark: SparkSession) -> None:
    plain = spark.createDataFrame(_rows(), "row_num long, k long, x double, v double")
    plain.createOrReplaceTempView("names_plain")
    plain.toDF("row_num", *HOSTILE.values()).createOrReplaceTempView("names_hostile")


def _text(clause: str, view: str, hostile: bool) -> str:
    def name(c: str) -> str:
        return quote(HOSTILE[c]) if hostile else c

    clause = re.sub(r"\b(k|x)\b", lambda m: name(m.group(1)), clause)
    return (f"SELECT {name('k')}, count(*) AS n, sum({name('v')}) AS s, max({name('v')}) AS m, "
            f"min({name('x')}) AS lo FROM {view} [{clause}] GROUP BY {name('k')}")


def _plain(frame: DataFrame) -> DataFrame:
    back = {h: p for p, h in HOSTILE.items()}
    return frame.toDF(*[back.get(c, c) for c in frame.columns])


def _differing(left: DataFrame, right: DataFrame) -> int:
    """Rows in one and not the other, counted with multiplicity (NaN equal to NaN), in one job."""
    both = left.withColumn("_side", F.lit(1)).unionByName(right.withColumn("_side", F.lit(-1)))
    return both.groupBy(*[F.col(quote(c)) for c in left.columns]).agg(F.sum("_side").alias("d")) \
        .where("d <> 0").count()


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_hostile_names_give_the_plain_names_rows(spark, views, kind):
    clause, generator = KINDS[kind]
    plain, hostile = _text(clause, "names_plain", False), _text(clause, "names_hostile", True)
    assert _differing(query(spark, plain), _plain(query(spark, hostile))) == 0
    expected, got = replay(spark, plain, punctuation=generator), replay(spark, hostile, punctuation=generator)
    assert expected.results.count() > 0
    assert _differing(expected.results, _plain(got.results)) == 0
    assert _differing(expected.late, _plain(got.late)) == 0


@pytest.mark.slow
def test_hostile_names_with_source_punctuations_and_lateness(spark, views):
    """Source punctuations on the dotted key, with allowed lateness (revisions, late rows)."""
    punctuations = spark.table("names_plain").where("row_num % 12 = 6").selectExpr(  # a key, or all keys
        "row_num", "IF(row_num % 24 = 6, NULL, k) AS k", "x + 1 AS x")
    clause = KINDS["sliding"][0]
    expected = replay(spark, _text(clause, "names_plain", False), punctuation=punctuate.embedded(punctuations),
                      allowed_lateness=1)
    got = replay(spark, _text(clause, "names_hostile", True), allowed_lateness=1,
                 punctuation=punctuate.embedded(punctuations.toDF("row_num", HOSTILE["k"], HOSTILE["x"])))
    assert _differing(expected.results, _plain(got.results)) == 0
    assert _differing(expected.late, _plain(got.late)) == 0
    assert expected.results.where("revision > 0").count() > 0 and expected.late.count() > 0


@pytest.mark.slow
def test_live_mode_with_hostile_names_equals_replay(spark, views, tmp_path: Path):
    """A sliding window under slack (late rows), an SPL delta window partitioned by the dotted
    key and sessions, live over 2 files' micro-batches, equal replay's results and late rows."""
    source = live_run.source(spark, live_run.split_into_files(spark.table("names_hostile"), tmp_path / "in", 2))
    cases = [(KINDS["sliding"][0], punctuate.slack(1)), (KINDS["spl_delta"][0], None),
             (KINDS["session"][0], punctuate.slack(3))]
    texts = [_text(clause, "names_hostile", True) for clause, _ in cases]
    jobs = {str(i): live(spark, text, source, generator) for i, (text, (_, generator)) in enumerate(zip(texts, cases))}
    run_in_waves(jobs, tmp_path)
    late = 0
    for i, (text, (_, generator)) in enumerate(zip(texts, cases)):
        results, late_rows = live_run.read_output(spark, jobs[str(i)], tmp_path / str(i) / "out")
        expected = replay(spark, text, punctuation=generator)
        assert _differing(results, expected.results.select(*[F.col(quote(c)) for c in results.columns])) == 0
        assert _differing(late_rows, expected.late.select(*[F.col(quote(c)) for c in late_rows.columns])) == 0
        late += late_rows.count()
    assert late > 0


@pytest.mark.parametrize(
    "clause, kind, attributes, partition",
    [
        ("tumbling, delta(`t.s`, 4) partitioned BY `seg.id`", Tumbling, ["t.s"], ("seg.id",)),
        ("sliding, delta(`a,b``c`, 5), delta(`t.s`, 3) partitioned BY `seg.id`, k", Sliding, ["a,b`c", "t.s"],
         ("seg.id", "k")),
        ("tumbling, punct(`p.x`)", Tumbling, ["p.x"], ()),
        ("tumbling, punct(`partitioned`) partitioned BY k", Tumbling, ["partitioned"], ("k",)),
    ],
)
def test_spl_clauses_take_back_quoted_names(clause, kind, attributes, partition):
    """A back-quoted name may hold a dot, a comma or a doubled back quote."""
    spec = parse_spl(clause)
    assert isinstance(spec, kind) and spec.partition_by == partition
    assert [getattr(p, "attr", None) or p.marker for p in spec.policies] == attributes


@pytest.mark.parametrize("clause", ["tumbling, delta(`t.s, 4)", "tumbling, count(4) partitioned BY `a`b`"])
def test_an_unclosed_back_quote_is_named(clause):
    with pytest.raises(WidError, match="a back-quoted name is not closed"):
        parse_spl(clause)


@pytest.mark.slow
def test_renamed_columns_keep_clear_of_the_views_own_and_of_case(spark, views):
    """A view that has a column named ``_wid_n0`` (the first name a renamed column would take), and SPL
    columns written in another case than the view's (Spark finds them; the Python scans of SPL
    delta windows read the view's spelling): the rows of the plain query, in query and replay."""
    spark.table("names_plain").toDF("row_num", "seg.id", "x", "_wid_n0").createOrReplaceTempView("names_taken")
    for clause in ("tumbling, delta(row_num, 8) partitioned BY k", "tumbling, delta(x, 4) partitioned BY k"):
        plain = _text(clause, "names_plain", False)
        taken = re.sub(r"\bk\b", quote("seg.id"), re.sub(r"\bv\b", "_wid_n0", plain.replace("names_plain", "names_taken")))
        cased = plain.replace("BY k]", "BY K]").replace("(x, 4)", "(X, 4)")
        for run in (lambda t: query(spark, t), lambda t: replay(spark, t).results):
            for text in (taken, cased):
                got = run(text)
                assert _differing(run(plain), got.toDF(*[{"seg.id": "k"}.get(c, c) for c in got.columns])) == 0, text


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sliding", "rows_pattr", "spl_count"])
def test_a_space_in_a_key_is_part_of_its_name(spark, views, kind):
    """GROUP BY (or PATTR, or ``partitioned BY``) ```k k``` over a view that also has ``kk``
    (other values): the groups of ``k k``, the plain query's rows, in query and replay."""
    spark.table("names_plain").selectExpr("row_num", "k AS `k k`", "-k - 1 AS kk", "x", "v") \
        .createOrReplaceTempView("names_spaced")
    clause, generator = KINDS[kind]
    plain = _text(clause, "names_plain", False)
    spaced = re.sub(r"\bk\b", quote("k k"), plain.replace("names_plain", "names_spaced"))
    for run in (lambda t: query(spark, t), lambda t: replay(spark, t, punctuation=generator).results):
        got = run(spaced)
        assert _differing(run(plain), got.toDF(*[{"k k": "k"}.get(c, c) for c in got.columns])) == 0, spaced


@pytest.mark.slow
def test_live_keys_written_in_another_case_equal_replay(spark, views, tmp_path: Path):
    """``PATTR K`` and ``GROUP BY K`` over the column ``k`` (Spark finds it in any case, live
    mode's state reads the view's spelling): live over 2 micro-batches equals replay."""
    text = ("SELECT K, count(*) AS n, sum(v) AS s FROM names_plain "
            "[RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR K] GROUP BY K")
    source = live_run.source(spark, live_run.split_into_files(spark.table("names_plain"), tmp_path / "in", 2))
    job = live(spark, text, source)
    live_run.run(live_run.start(job, tmp_path / "out", tmp_path / "checkpoint"))
    results, _ = live_run.read_output(spark, job, tmp_path / "out")
    expected = replay(spark, text).results
    assert results.count() > 0
    assert _differing(results, expected.select(*[F.col(quote(c)) for c in results.columns])) == 0


@pytest.mark.parametrize("item, group", [("pmod(k, 2) AS `k mod`", "`k mod`"), ("k + 1 AS k1", "`k` + 1"),
                                         ("lower(CAST(k AS STRING)) AS kl", "LOWER(CAST(`K` AS STRING))")])
def test_a_key_is_found_however_the_query_quotes_it(spark, views, item, group):
    """GROUP BY an alias with a space, or the select item's expression with its names
    back-quoted or in another case: the rows of the query grouped by the plain alias."""
    plain = f"SELECT {item.rsplit(' AS ', 1)[0]} AS g, count(*) AS n, sum(v) AS s FROM names_plain " \
            f"[RANGE 4 SLIDE 2 WATTR x] GROUP BY g"
    quoted = f"SELECT {item}, count(*) AS n, sum(v) AS s FROM names_plain [RANGE 4 SLIDE 2 WATTR x] GROUP BY {group}"
    got = query(spark, quoted)
    assert _differing(query(spark, plain), got.toDF(*["g" if i == 3 else c for i, c in enumerate(got.columns)])) == 0
