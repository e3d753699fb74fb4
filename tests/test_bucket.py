"""Bucket (docs/semantics.md section 6, step 1): window-id ranges from Column expressions only, checked
against the extents; punctuations on the window attribute become punctuations on wid."""

from __future__ import annotations

import io
import math
import random
from contextlib import redirect_stdout
from functools import reduce
from fractions import Fraction

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from tests.oracle import Sliding
from tests.test_windows import register, stream
from wid.bucket.columns import WID_CLOSED, WID_HI, WID_LO
from wid.bucket.fcf import bucket, bucket_punctuations
from wid.windows.clause import parse_window
from wid.errors import WidError

PYTHON_EVALUATION = ("BatchEvalPython", "ArrowEvalPython")


def physical_plan(df) -> str:
    """The physical plan as text: ``_explain_string`` on Connect, the printed ``explain()`` on classic."""
    if hasattr(df, "_explain_string"):
        return df._explain_string()
    out = io.StringIO()
    with redirect_stdout(out):
        df.explain()
    return out.getvalue()


@pytest.fixture(scope="module")
def view(spark):
    return register(spark, stream(seed=5, n=120))


@pytest.mark.parametrize(
    "clause",
    [
        "[RANGE 5 SLIDE 2 WATTR x]",
        "[RANGE 3 SLIDE 3 WATTR x]",
        "[RANGE 2 MINUTES SLIDE 45 SECONDS WATTR ts]",
        "[RANGE 7 ROWS SLIDE 3 ROWS WATTR row_num]",
        "[RANGE 7 ROWS SLIDE 3 ROWS WATTR row_num PATTR k]",
        "[RANGE UNBOUNDED SLIDE 3 WATTR x]",
    ],
)
def test_context_free_plan_has_no_python_evaluation(spark, view, clause):
    plan = physical_plan(wid.query(spark, f"SELECT k, count(*) AS n, max(v) AS hi FROM s {clause} GROUP BY k"))
    assert "HashAggregate" in plan
    assert not [name for name in PYTHON_EVALUATION if name in plan], plan


def test_plan_check_sees_a_python_udf(spark, view):
    """The check above can fail: a Python UDF shows up in the physical plan."""
    plus_one = F.udf(lambda x: x + 1, "double")
    plan = physical_plan(spark.table("s").select(plus_one("x")))
    assert any(name in plan for name in PYTHON_EVALUATION)


TAGGED = [
    ("[RANGE 5 SLIDE 2 WATTR x]", Sliding(5, 2, "x")),
    ("[RANGE 1.5 SLIDE 4 WATTR x]", Sliding(1.5, 4, "x")),
    ("[RANGE 2 MINUTES SLIDE 45 SECONDS WATTR ts]", Sliding(120, 45, "ts")),
]


@pytest.mark.slow
def test_bucket_tags_each_tuple_with_the_windows_whose_extent_holds_it(spark, view):
    """[wid_lo, wid_hi] is exactly {w : x in extent(w)}; tuples in no window (hopping gaps) are gone."""
    expected = []
    for clause, window in TAGGED:
        for t in view:
            x = Fraction(t[window.attr])
            holding = [w for w in window.candidates([x]) if window.extent(w)[0] <= x < window.extent(w)[1]]
            if holding:
                assert holding == list(range(holding[0], holding[-1] + 1))
                expected.append((clause, t["row_num"], holding[0], holding[-1]))
    assert 0 < sum(case == TAGGED[1][0] for case, *_ in expected) < len(view)
    tagged = reduce(DataFrame.unionByName, [
        bucket(spark.table("s"), parse_window(clause[1:-1]))
        .select(F.lit(clause).alias("clause"), "row_num", WID_LO, WID_HI)
        for clause, _ in TAGGED
    ])
    expected_df = spark.createDataFrame(expected, tagged.schema)
    assert_df_equality(tagged, expected_df, ignore_row_order=True, ignore_nullable=True)


def _closed(bound: Fraction, slide: Fraction) -> int:
    """The largest w with (w+1)s <= bound, by search."""
    w = math.ceil(bound / slide) + 2
    while (w + 1) * slide > bound:
        w -= 1
    return w


PUNCTUATED = [  # (clause, slide in seconds, bound is a timestamp)
    ("RANGE 5 SLIDE 2 WATTR x", 2, False),
    ("RANGE 2.5 SLIDE 0.75 WATTR x", Fraction(3, 4), False),
    ("RANGE UNBOUNDED SLIDE 3 WATTR x", 3, False),
    ("RANGE 2 MINUTES SLIDE 45 SECONDS WATTR x", 45, True),
]


@pytest.mark.slow
def test_punctuation_bound_becomes_the_last_closed_window(spark):
    """A punctuation with bound v closes every window whose extent end (w+1)s <= v."""
    rng = random.Random(3)
    bounds = [rng.randint(-400, 400) / 4 for _ in range(40)] + [0.0, 3.0, -3.0, 0.75, 45.0, -45.0]
    punctuations = spark.createDataFrame([(i, 1, b) for i, b in enumerate(bounds)], "row_num long, k long, x double")
    as_timestamps = punctuations.withColumn("x", F.timestamp_micros((F.col("x") * 10**6).cast("long")))
    closed = reduce(DataFrame.unionByName, [
        bucket_punctuations(as_timestamps if seconds else punctuations, parse_window(clause))
        .select(F.lit(clause).alias("clause"), "row_num", WID_CLOSED)
        for clause, _, seconds in PUNCTUATED
    ])
    expected = spark.createDataFrame(
        [(clause, i, _closed(Fraction(b), Fraction(slide))) for clause, slide, _ in PUNCTUATED
         for i, b in enumerate(bounds)],
        closed.schema,
    )
    assert_df_equality(closed, expected, ignore_row_order=True, ignore_nullable=True)


def test_punctuations_on_a_rows_window_are_refused(spark):
    punctuations = spark.createDataFrame([(0, 5)], "row_num long, k long")
    with pytest.raises(WidError, match="punctuations on a ROWS window"):
        bucket_punctuations(punctuations, parse_window("RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num"))
