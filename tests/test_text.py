"""The window query's text (:mod:`wid.compiler.text`): the window clause found on SQL tokens, every part
handed on as the user wrote it, decomposable aggregates recognised on sqlglot's parse."""

from __future__ import annotations

import pytest

from wid.compiler.text import SelectItem, WindowQuery, window_span


def test_parts_are_the_users_text():
    text = ("SELECT k,  sum( x  +  1 ) AS t, percentile(v, 0.5) med, k % 2, count(DISTINCT x), `seg id` "
            "FROM db.s [RANGE 5 SLIDE 2 WATTR x] WHERE name = 'a]b' AND x IN (1, 2) GROUP BY k, k % 2 "
            "HAVING t > 1 ORDER BY k DESC, t LIMIT 3")
    assert WindowQuery.parse(text) == WindowQuery(
        select=[SelectItem("k", "k"), SelectItem("sum( x  +  1 )", "t", ("sum", "x  +  1")),
                SelectItem("percentile(v, 0.5)", "med"), SelectItem("k % 2", "k % 2"),
                SelectItem("count(DISTINCT x)", "count(DISTINCT x)"), SelectItem("`seg id`", "seg id")],
        source="db.s", window="RANGE 5 SLIDE 2 WATTR x", where="name = 'a]b' AND x IN (1, 2)",
        group_by=["k", "k % 2"], having="t > 1", order_by=["k DESC", "t"], limit=3,
    )


@pytest.mark.parametrize(
    "item, call",
    [
        ("count(*)", ("count", None)),
        ("COUNT ( * )", ("count", None)),
        ("max(v * 2)", ("max", "v * 2")),
        ("avg(CASE WHEN x > 0 THEN x END)", ("avg", "CASE WHEN x > 0 THEN x END")),
        ("min(/* low */ x)", ("min", "x")),
        ("sum(DISTINCT x)", None),
        ("count(x, y)", None),
        ("sum(*)", None),
        ("max(x) + 1", None),
        ("sum(x) FILTER (WHERE x > 0)", None),
        ("percentile(x, 0.5)", None),
        ("sum(x) OVER (PARTITION BY k)", None),
    ],
)
def test_decomposable_calls(item, call):
    (parsed,) = WindowQuery.parse(f"SELECT {item} AS a FROM s [RANGE 1 SLIDE 1 WATTR x]").select
    assert parsed.call == call


@pytest.mark.parametrize(
    "text, span",
    [
        ("SELECT a FROM s [RANGE 1 SLIDE 1 WATTR x]", (16, 40)),
        ("CREATE VIEW q AS SELECT '[' FROM `my view`[x] WHERE b = ']'", (42, 44)),
        ("SELECT a /* FROM s [x] */ FROM s -- [x]\n", None),
        ("SELECT 'FROM s [x]' FROM s", None),
        ("SELECT a FROM (SELECT b FROM s [x])", None),
        ("SELECT arr[0] FROM s", None),
    ],
)
def test_window_span_skips_strings_comments_and_subqueries(text, span):
    assert window_span(text) == span
    if span:
        assert text[span[0]] == "[" and text[span[1]] == "]"
