"""Property-based differential tests: ``wid.query`` and ``wid.replay`` against the oracle.

Each property draws a stream (:mod:`tests.strategies`: doubles with 1-3 decimals, longs
near 2**53 and 2**63, decimals, timestamps with microseconds, values on extent edges,
arrival order unrelated to the values, NULL and empty keys, NULL values, 1 to 2000 tuples)
and a window clause of one kind of docs/semantics.md section 3, runs every decomposable aggregate
through wid, and compares with :mod:`tests.oracle`, which materialises each extent with
exact fractions. Keys, window-ids, counts, min and max must be equal; sums and averages
of doubles (and Spark's average of longs, which sums in double) may differ from the exact
value by the rounding of a double summation over the extent, and by nothing else.

Replays use exact punctuations derived here from the stream (the bound is the least value
still to come), so nothing is late and every extent holds what the oracle says; each
window is emitted at the first punctuation that closes it.

The Hypothesis profile is ``ci`` unless ``HYPOTHESIS_PROFILE`` names another
(``nightly``: many more examples); see tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
import math
from fractions import Fraction
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

import wid
from tests.oracle import SlideByTuple, evaluate
from tests.strategies import Case, cases, issue_11_reproduction

import pytest

# Each property runs Spark jobs for every example: the slow tier (CI runs it).
pytestmark = pytest.mark.slow

#: 2**-52: twice the unit roundoff of a double.
EPS = Fraction(1, 2**52)


@dataclass(frozen=True)
class Approx:
    """A sum or average computed in double: the exact value and the error a double summation
    of the same values may add (n values: at most n * 2**-52 * the sum of their magnitudes)."""

    exact: Fraction
    error: Fraction

    def __repr__(self) -> str:
        return f"~{float(self.exact)!r}"


def _present(values: list) -> list:
    return [v for v in values if v is not None]


def exact_sum(values: list) -> Fraction | None:
    """Spark's sum of longs and decimals: exact."""
    present = _present(values)
    return sum(map(Fraction, present), Fraction(0)) if present else None


def double_sum(values: list) -> Approx | None:
    present = _present(values)
    if not present:
        return None
    return Approx(sum(map(Fraction, present), Fraction(0)), len(present) * EPS * sum(abs(Fraction(v)) for v in present))


def double_avg(values: list) -> Approx | None:
    """Spark's avg of doubles and of longs: sum in double, then one division."""
    total = double_sum(values)
    if total is None:
        return None
    n = len(_present(values))
    return Approx(total.exact / n, total.error / n + EPS * abs(total.exact / n))


def decimal_avg(values: list) -> Fraction | None:
    """Spark's avg of a decimal(12,2): decimal(16,6), the exact mean rounded half up."""
    present = _present(values)
    if not present:
        return None
    mean = sum(map(Fraction, present), Fraction(0)) / len(present)
    return Fraction((Decimal(mean.numerator) / Decimal(mean.denominator)).quantize(Decimal("1e-6"), ROUND_HALF_UP))


#: Output name: (SQL, oracle aggregate, column). Every decomposable aggregate, over a double
#: with 1-3 decimals (v), a long (i), a decimal(12,2) (d) and the window attribute (x).
AGGREGATES: dict[str, tuple[str, str | Callable[[list], Any], str | None]] = {
    "n": ("count(*)", "count", None),
    "nv": ("count(v)", "count", "v"),
    "sv": ("sum(v)", double_sum, "v"),
    "av": ("avg(v)", double_avg, "v"),
    "lov": ("min(v)", "min", "v"),
    "hiv": ("max(v)", "max", "v"),
    "ni": ("count(i)", "count", "i"),
    "si": ("sum(i)", exact_sum, "i"),
    "ai": ("avg(i)", double_avg, "i"),
    "sd": ("sum(d)", exact_sum, "d"),
    "lod": ("min(d)", "min", "d"),
    "hid": ("max(d)", "max", "d"),
    "lox": ("min(x)", "min", "x"),
    "hix": ("max(x)", "max", "x"),
}
#: avg of a decimal keeps a decimal type in Spark (checked in its own property).
DECIMAL_AVG = {"ad": ("avg(d)", decimal_avg, "d")}


def _exact(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, Approx)) else Fraction(value)


def _matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Approx):
        return actual is not None and abs(Fraction(actual) - expected.exact) <= expected.error
    return _exact(expected) == _exact(actual)


def aggregates_of(case: Case, replay: bool = False) -> dict:
    """Every aggregate, or only those over numbers that are not decimals when the case says so
    (slide-by-tuple windows then run in their start and end bins; other aggregates take the
    SQL formulation) and always in a slide-by-tuple replay (whose bins refuse the others
    with a clear WidError)."""
    if not (case.numbers_only or (replay and case.clause.fca)):
        return AGGREGATES
    numbers = ("v", "i", *(("x",) if case.attribute.type in ("double", "long") else ()))
    return {name: a for name, a in AGGREGATES.items() if a[2] is None or a[2] in numbers}


def _keys(case: Case) -> list[str]:
    """Key columns of the output: the GROUP BY key, or the partition attribute of PATTR."""
    return ["k"] if case.group_by or case.clause.kind == "pattr" else []


def query_text(case: Case, aggregates: dict) -> str:
    select = ", ".join([*_keys(case), *(f"{sql} AS {name}" for name, (sql, _, _) in aggregates.items())])
    return f"SELECT {select} FROM s [{case.clause.text}]" + (" GROUP BY k" if case.group_by else "")


def bounds(case: Case) -> list[str]:
    """``window_start``, ``window_end`` for the kinds whose extent is a range of the attribute."""
    return ["window_start", "window_end"] if hasattr(case.clause.window, "extent") else []


def _bound(case: Case, value: Fraction | float) -> Fraction | None:
    """An extent bound as wid reports it: NULL for a landmark's start, the nearest double for a
    double attribute (``(w+1)s`` rounded once), exact otherwise."""
    if value == -math.inf:
        return None
    return Fraction(float(value)) if case.attribute.type == "double" and case.clause.kind != "rows" else value


def expected_rows(case: Case, aggregates: dict) -> list[dict]:
    """The oracle's rows for ``case``: ``wid``, its extent's bounds (:func:`bounds`), ``k``
    (when a key) and the aggregates, exact."""
    oracle = {name: (fn, col) for name, (_, fn, col) in aggregates.items()}
    rows = evaluate(case.oracle_rows(), case.clause.window, oracle, group_by=["k"] if case.group_by else [])
    if bounds(case):
        for row in rows:
            row["window_start"], row["window_end"] = (_bound(case, b) for b in case.clause.window.extent(row["wid"]))
    return rows


def collected(df: DataFrame) -> list[dict]:
    """The rows of ``df``, timestamps as exact epoch seconds."""
    timestamps = {f.name for f in df.schema.fields if isinstance(f.dataType, TimestampType)}
    plain = df.select(*[F.unix_micros(c).alias(c) if c in timestamps else F.col(c) for c in df.columns])
    return [{c: Fraction(v, 10**6) if c in timestamps and v is not None else v for c, v in row.asDict().items()}
            for row in plain.collect()]


def assert_same(case: Case, actual: list[dict], expected: list[dict], columns: list[str]) -> None:
    """The same (window, key) rows, each with matching ``columns``; a readable diff otherwise."""
    keys = ["wid", *_keys(case)]

    def index(rows: list[dict], side: str) -> dict[tuple, dict]:
        out = {tuple(_exact(r[c]) for c in keys): r for r in rows}
        assert len(out) == len(rows), f"{side} has several rows for one (window, key)"
        return out

    got, want = index(actual, "wid"), index(expected, "the oracle")
    missing, extra = sorted(set(want) - set(got), key=str), sorted(set(got) - set(want), key=str)
    wrong = sorted(((k, c, want[k][c], got[k][c]) for k in sorted(set(want) & set(got), key=str)
                    for c in columns if not _matches(want[k][c], got[k][c])),
                   key=lambda w: isinstance(w[2], Approx))  # exact columns (counts, ids, min, max) first
    assert not (missing or extra or wrong), (
        f"{case.clause.text}: {len(missing)} (window, key) missing {[(float(k[0]), *k[1:]) for k in missing[:4]]}, "
        f"{len(extra)} extra {[(float(k[0]), *k[1:]) for k in extra[:4]]}, {len(wrong)} wrong values "
        f"(window, key), column, right, wid: {[(tuple(map(str, k)), c, w, g) for k, c, w, g in wrong[:6]]}")


def check_query(spark: SparkSession, case: Case) -> None:
    """``wid.query`` over ``case`` equals the oracle: columns, (window, key) rows, aggregates."""
    aggregates = aggregates_of(case)
    case.register(spark)
    out = wid.query(spark, query_text(case, aggregates))
    assert out.columns == ["wid", *bounds(case), *_keys(case), *aggregates]
    assert_same(case, collected(out), expected_rows(case, aggregates), [*bounds(case), *aggregates])


# --- wid.query, one property per window kind ---------------------------------------------

@given(case=cases(("sliding",)))
def test_sliding_windows(spark, case):
    """``[RANGE r SLIDE s WATTR x]``, r not a multiple of s: extent(w) = {t : (w+1)s - r <= x < (w+1)s}."""
    check_query(spark, case)


@given(case=cases(("aligned",)))
def test_sliding_windows_whose_slide_divides_the_range(spark, case):
    """``[RANGE k*s SLIDE s WATTR x]``, k >= 2: every tuple in exactly k windows (the panes keep
    their first id alone; above SCANNED the aggregate reads the windows off block scans)."""
    check_query(spark, case)


@given(case=cases(("tumbling",)))
def test_tumbling_windows(spark, case):
    """``[RANGE s SLIDE s WATTR x]``: extent(w) = {t : ws <= x < (w+1)s}, one window per tuple."""
    check_query(spark, case)


@given(case=cases(("hopping",)))
def test_hopping_windows(spark, case):
    """``[RANGE r SLIDE s WATTR x]`` with s > r: extent(w) = {t : (w+1)s - r <= x < (w+1)s};
    a tuple in the gap [ws, (w+1)s - r) is in no window."""
    check_query(spark, case)


@given(case=cases(("offset",)))
def test_windows_shifted_by_an_offset(spark, case):
    """``[RANGE r SLIDE s OFFSET o WATTR x]`` (sliding, tumbling or landmark): extent(w) =
    {t : (w+1)s - r + o <= x < (w+1)s + o}, o negative, fractional, or past a slide."""
    check_query(spark, case)


@given(case=cases(("cumulate",)))
def test_cumulating_windows(spark, case):
    """``[CUMULATE STEP st SIZE sz OFFSET o WATTR x]``: per period p, the windows
    [p*sz + o, p*sz + o + j*st), j = 1..sz/st, as Flink SQL's CUMULATE."""
    check_query(spark, case)


@given(case=cases(("rows",)))
def test_tuple_based_windows(spark, case):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num]``: the sliding extent on x = the tuple's
    0-based position in row_num order (gaps in row_num do not count)."""
    check_query(spark, case)


@given(case=cases(("pattr",)))
def test_partitioned_tuple_based_windows(spark, case):
    """``[... WATTR row_num PATTR k]``: per value p of k, x = the 0-based position within p;
    the window-id is (w, p)."""
    check_query(spark, case)


@given(case=cases(("landmark", "landmark-rows")))
def test_landmark_windows(spark, case):
    """``[RANGE UNBOUNDED SLIDE s WATTR x]``: extent(w) = {t : x < (w+1)s}, up to
    w = floor(max x / s) (on arrival positions with ``SLIDE n ROWS WATTR row_num``)."""
    check_query(spark, case)


@given(case=cases(("slide-by-tuple",)))
@example(case=issue_11_reproduction())
def test_slide_by_tuple_windows(spark, case):
    """``[RANGE r RATTR x SLIDE 1 ROW SATTR row_num]`` (FCA): the window-ids are the values
    t.x; extent(w) = {u : w - r < u.x <= w}."""
    check_query(spark, case)


@given(case=cases(("every-n",)))
def test_every_n_tuples_windows(spark, case):
    """``[RANGE r RATTR x SLIDE n ROWS SATTR row_num]`` (FCB): the window-ids are t.x of every
    n-th tuple in arrival order (positions n-1, 2n-1, ...); extent(w) = {u : w - r < u.x <= w}."""
    check_query(spark, case)


@given(case=cases(("rank",)))
def test_rank_windows(spark, case):
    """``[RANGE r RATTR x SLIDE n ROWS SATTR rank(x)]`` (FCU): the window-ids are t.x of every
    n-th tuple in x order (ties by row_num); extent(w) = {u : w - r < u.x <= w}."""
    check_query(spark, case)


@given(case=cases(("tumbling", "slide-by-tuple")))
def test_aggregates_keep_sparks_result_types(spark, case):
    """Every aggregate has the type Spark's own aggregate gives (avg of a decimal is a decimal,
    the mean rounded half up to its scale), and ``wid`` is a long, or for slide-by-tuple
    windows the window attribute's type."""
    aggregates = {**AGGREGATES, **DECIMAL_AVG}
    case.register(spark)
    out = wid.query(spark, query_text(case, aggregates))
    spark_own = spark.table("s").groupBy("k").agg(*[F.expr(sql).alias(name) for name, (sql, _, _) in
                                                    aggregates.items()])
    types = {f.name: f.dataType for f in out.schema.fields}
    assert {name: types[name] for name in aggregates} == {f.name: f.dataType for f in spark_own.schema.fields[1:]}
    assert types["wid"].simpleString() == (spark.table("s").schema["x"].dataType.simpleString() if case.clause.fca
                                           else "bigint")
    assert_same(case, collected(out), expected_rows(case, aggregates), list(aggregates))


# --- wid.replay with exact punctuations ----------------------------------------------------

@dataclass(frozen=True)
class Punctuation:
    """``(row_num, k, bound)``: after tuple ``row_num``, no tuple of key ``k`` (None: any) with
    x < ``bound`` arrives. Exact: ``bound`` is the least x still to come."""

    row_num: int
    k: str | None
    bound: Any


def exact_punctuations(case: Case, after: list[int], keyed: bool) -> list[Punctuation]:
    """A wildcard punctuation after each tuple in ``after`` (indexes into arrival order), and
    with ``keyed`` one per non-NULL key too; none where no tuple (of the key) is still to come."""
    arrival = sorted(case.rows, key=lambda r: r["row_num"])
    out = []
    for i in sorted(set(after)):
        rest = arrival[i + 1:]
        for key in [None, *sorted({r["k"] for r in rest if r["k"] is not None})] if keyed else [None]:
            values = [r["x"] for r in rest if key is None or r["k"] == key]
            if values:
                out.append(Punctuation(arrival[i]["row_num"], key, min(values, key=case.attribute.exact)))
    return out


def punctuation_frame(spark: SparkSession, case: Case, punctuations: list[Punctuation], keyed: bool) -> DataFrame:
    columns = "row_num long, " + ("k string, " if keyed else "") + f"x {case.attribute.spark_type}"
    frame = spark.createDataFrame([(p.row_num, p.k, p.bound) if keyed else (p.row_num, p.bound) for p in punctuations],
                                  columns)
    return frame.withColumn("x", F.timestamp_micros("x")) if case.attribute.type == "timestamp" else frame


def emitted_at(case: Case, punctuations: list[Punctuation], row: dict) -> int | None:
    """The row_num of the first punctuation matching the row's key that closes its window:
    bound >= the extent's end (w+1)s, or for slide-by-tuple windows bound > w; None: the
    end of the stream."""
    window = case.clause.window
    if isinstance(window, SlideByTuple):
        closes = lambda bound: case.attribute.exact(bound) > _exact(row["wid"])  # noqa: E731
    else:
        end = window.extent(row["wid"])[1]
        closes = lambda bound: case.attribute.exact(bound) >= end  # noqa: E731
    at = [p.row_num for p in punctuations if (p.k is None or p.k == row.get("k")) and closes(p.bound)]
    return min(at) if at else None


def implied_emit(case: Case, row: dict) -> int | None:
    """ROWS windows: window w (of partition p) is complete when the tuple at position
    (w+1)s - 1 (within p) arrives; None when the stream ends before it."""
    arrival = sorted(case.rows, key=lambda r: r["row_num"])
    if case.clause.kind == "pattr":
        arrival = [r for r in arrival if r["k"] == row["k"]]
    last = (row["wid"] + 1) * case.clause.slide - 1
    return arrival[int(last)]["row_num"] if last < len(arrival) else None


def check_replay(spark: SparkSession, case: Case, punctuation, emit: Callable[[dict], int | None]) -> None:
    """Nothing late; the results are the oracle's, each emitted where ``emit`` says."""
    case.register(spark)
    aggregates = aggregates_of(case, replay=True)
    rep = wid.replay(spark, query_text(case, aggregates), punctuation=punctuation)
    late = rep.late.collect()
    assert late == [], f"{len(late)} late contributions under exact punctuations, e.g. {late[:3]}"
    expected = [{**r, "emit_row": emit(r)} for r in expected_rows(case, aggregates)]
    assert_same(case, collected(rep.results), expected, [*aggregates, "emit_row"])


@st.composite
def punctuated(draw, kinds: tuple[str, ...]) -> tuple[Case, list[int], bool]:
    """A case, the arrival indexes after which a punctuation comes, and whether keyed ones too."""
    case = draw(cases(kinds, most=600))
    every = draw(st.sampled_from((1, 2, 7, 50)))
    after = [i for i in range(len(case.rows)) if i % every == every - 1]
    return case, after, case.group_by and draw(st.booleans())


@given(args=punctuated(("sliding", "tumbling", "hopping", "landmark")))
def test_replay_value_windows_with_exact_punctuations(spark, args):
    """Source punctuations (bound = least value to come, wildcard and per key): nothing late,
    every extent exact, window w emitted at the first punctuation with bound >= (w+1)s."""
    case, after, keyed = args
    punctuations = exact_punctuations(case, after, keyed)
    frame = punctuation_frame(spark, case, punctuations, keyed)
    check_replay(spark, case, wid.punctuate.embedded(frame), lambda row: emitted_at(case, punctuations, row))


@given(args=punctuated(("offset", "cumulate")))
def test_replay_offset_and_cumulating_windows_with_exact_punctuations(spark, args):
    """The same for shifted grids and cumulating windows: window w is emitted at the first
    punctuation with bound >= its end, (w+1)s + o (cumulating: (w+1)st + o)."""
    case, after, keyed = args
    punctuations = exact_punctuations(case, after, keyed)
    frame = punctuation_frame(spark, case, punctuations, keyed)
    check_replay(spark, case, wid.punctuate.embedded(frame), lambda row: emitted_at(case, punctuations, row))


@given(args=punctuated(("slide-by-tuple", "every-n", "rank")))
def test_replay_slide_by_tuple_windows_with_exact_punctuations(spark, args):
    """Source punctuations (bound b = least value to come): nothing late, every extent exact,
    window w emitted at the first punctuation with b > w (FCA bounds are strict)."""
    case, after, _ = args
    punctuations = exact_punctuations(case, after, keyed=False)
    frame = punctuation_frame(spark, case, punctuations, keyed=False)
    check_replay(spark, case, wid.punctuate.embedded(frame), lambda row: emitted_at(case, punctuations, row))


@given(case=cases(("rows", "pattr", "landmark-rows"), most=600))
def test_replay_tuple_based_windows_close_on_arrival(spark, case):
    """ROWS windows need no punctuation: window w closes when the tuple at position (w+1)s - 1
    arrives; nothing is late."""
    check_replay(spark, case, None, lambda row: implied_emit(case, row))
