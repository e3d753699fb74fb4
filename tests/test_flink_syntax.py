"""Flink SQL's window table-valued functions inside wid (docs/semantics.md, "Flink's window
table-valued functions").

Two references: the rows Flink's own suite expects (``WindowAggregateITCase`` of
flink-table-planner, ``org.apache.flink.table.planner.runtime.stream.sql``, over
``TestData.windowDataWithTimestamp``, transcribed below), and Spark SQL as the oracle of a
Hypothesis property, with the windows written out independently (each tuple's windows exploded
from its microsecond time), on streams like real ones: microsecond timestamps around window
edges and before 1970, two-decimal amounts, duplicates, several keys (one NULL), NULL amounts.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wid
from wid.errors import WidError

# --- Flink's own suite ----------------------------------------------------------------------------

#: TestData.windowDataWithTimestamp, in arrival order: ts, int, double, float, bigdec, string, name.
#: The second 00:00:04 row arrives after the watermark (rowtime - 1 s) passed 00:00:05.
FLINK_ROWS = [
    ("2020-10-10 00:00:01", 1, 1.0, 1.0, "1.11", "Hi", "a"),
    ("2020-10-10 00:00:02", 2, 2.0, 2.0, "2.22", "Comment#1", "a"),
    ("2020-10-10 00:00:03", 2, 2.0, 2.0, "2.22", "Comment#1", "a"),
    ("2020-10-10 00:00:04", 5, 5.0, 5.0, "5.55", None, "a"),
    ("2020-10-10 00:00:07", 3, 3.0, 3.0, None, "Hello", "b"),
    ("2020-10-10 00:00:06", 6, 6.0, 6.0, "6.66", "Hi", "b"),  # out of order
    ("2020-10-10 00:00:08", 3, None, 3.0, "3.33", "Comment#2", "a"),
    ("2020-10-10 00:00:04", 5, 5.0, None, "5.55", "Hi", "a"),  # late
    ("2020-10-10 00:00:16", 4, 4.0, 4.0, "4.44", "Hi", "b"),
    ("2020-10-10 00:00:32", 7, 7.0, 7.0, "7.77", None, None),
    ("2020-10-10 00:00:34", 1, 3.0, 3.0, "3.33", "Comment#3", "b"),
]
#: The suite's select list without its last two columns: ``COUNT(DISTINCT string)`` and the UDAF
#: ``concat_distinct_agg(string)`` (wid's window-agnostic aggregate has no DISTINCT over
#: bucketed windows, and the UDAF is Flink's test function); they are cut from the expected rows.
AGGREGATES = "COUNT(*), SUM(`bigdec`), MAX(`double`), MIN(`float`)"

TUMBLE_SETS = [  # TumbleWindowGroupSetExpectedData (= its Cube and Rollup data)
    "0,a,2020-10-10T00:00,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
    "0,a,2020-10-10T00:00:05,2020-10-10T00:00:10,1,3.33,null,3.0,1,Comment#2",
    "0,b,2020-10-10T00:00:05,2020-10-10T00:00:10,2,6.66,6.0,3.0,2,Hello|Hi",
    "0,b,2020-10-10T00:00:15,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
    "0,b,2020-10-10T00:00:30,2020-10-10T00:00:35,1,3.33,3.0,3.0,1,Comment#3",
    "0,null,2020-10-10T00:00:30,2020-10-10T00:00:35,1,7.77,7.0,7.0,0,null",
    "1,null,2020-10-10T00:00,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
    "1,null,2020-10-10T00:00:05,2020-10-10T00:00:10,3,9.99,6.0,3.0,3,Hello|Hi|Comment#2",
    "1,null,2020-10-10T00:00:15,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
    "1,null,2020-10-10T00:00:30,2020-10-10T00:00:35,2,11.10,7.0,3.0,1,Comment#3",
]
HOP_SETS = [  # HopWindowGroupSetExpectedData
    "0,a,2020-10-09T23:59:55,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
    "0,a,2020-10-10T00:00,2020-10-10T00:00:10,6,19.98,5.0,1.0,3,Comment#2|Hi|Comment#1",
    "0,a,2020-10-10T00:00:05,2020-10-10T00:00:15,1,3.33,null,3.0,1,Comment#2",
    "0,b,2020-10-10T00:00,2020-10-10T00:00:10,2,6.66,6.0,3.0,2,Hello|Hi",
    "0,b,2020-10-10T00:00:05,2020-10-10T00:00:15,2,6.66,6.0,3.0,2,Hello|Hi",
    "0,b,2020-10-10T00:00:10,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
    "0,b,2020-10-10T00:00:15,2020-10-10T00:00:25,1,4.44,4.0,4.0,1,Hi",
    "0,b,2020-10-10T00:00:25,2020-10-10T00:00:35,1,3.33,3.0,3.0,1,Comment#3",
    "0,b,2020-10-10T00:00:30,2020-10-10T00:00:40,1,3.33,3.0,3.0,1,Comment#3",
    "0,null,2020-10-10T00:00:25,2020-10-10T00:00:35,1,7.77,7.0,7.0,0,null",
    "0,null,2020-10-10T00:00:30,2020-10-10T00:00:40,1,7.77,7.0,7.0,0,null",
    "1,null,2020-10-09T23:59:55,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
    "1,null,2020-10-10T00:00,2020-10-10T00:00:10,8,26.64,6.0,1.0,4,Hello|Hi|Comment#2|Comment#1",
    "1,null,2020-10-10T00:00:05,2020-10-10T00:00:15,3,9.99,6.0,3.0,3,Hello|Hi|Comment#2",
    "1,null,2020-10-10T00:00:10,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
    "1,null,2020-10-10T00:00:15,2020-10-10T00:00:25,1,4.44,4.0,4.0,1,Hi",
    "1,null,2020-10-10T00:00:25,2020-10-10T00:00:35,2,11.10,7.0,3.0,1,Comment#3",
    "1,null,2020-10-10T00:00:30,2020-10-10T00:00:40,2,11.10,7.0,3.0,1,Comment#3",
]
CUMULATE_SETS = [  # CumulateWindowGroupSetExpectedData
    "0,a,2020-10-10T00:00,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
    "0,a,2020-10-10T00:00,2020-10-10T00:00:10,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
    "0,a,2020-10-10T00:00,2020-10-10T00:00:15,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
    "0,b,2020-10-10T00:00,2020-10-10T00:00:10,2,6.66,6.0,3.0,2,Hello|Hi",
    "0,b,2020-10-10T00:00,2020-10-10T00:00:15,2,6.66,6.0,3.0,2,Hello|Hi",
    "0,b,2020-10-10T00:00:15,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
    "0,b,2020-10-10T00:00:15,2020-10-10T00:00:25,1,4.44,4.0,4.0,1,Hi",
    "0,b,2020-10-10T00:00:15,2020-10-10T00:00:30,1,4.44,4.0,4.0,1,Hi",
    "0,b,2020-10-10T00:00:30,2020-10-10T00:00:35,1,3.33,3.0,3.0,1,Comment#3",
    "0,b,2020-10-10T00:00:30,2020-10-10T00:00:40,1,3.33,3.0,3.0,1,Comment#3",
    "0,b,2020-10-10T00:00:30,2020-10-10T00:00:45,1,3.33,3.0,3.0,1,Comment#3",
    "0,null,2020-10-10T00:00:30,2020-10-10T00:00:35,1,7.77,7.0,7.0,0,null",
    "0,null,2020-10-10T00:00:30,2020-10-10T00:00:40,1,7.77,7.0,7.0,0,null",
    "0,null,2020-10-10T00:00:30,2020-10-10T00:00:45,1,7.77,7.0,7.0,0,null",
    "1,null,2020-10-10T00:00,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
    "1,null,2020-10-10T00:00,2020-10-10T00:00:10,8,26.64,6.0,1.0,4,Hi|Comment#1|Hello|Comment#2",
    "1,null,2020-10-10T00:00,2020-10-10T00:00:15,8,26.64,6.0,1.0,4,Hi|Comment#1|Hello|Comment#2",
    "1,null,2020-10-10T00:00:15,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
    "1,null,2020-10-10T00:00:15,2020-10-10T00:00:25,1,4.44,4.0,4.0,1,Hi",
    "1,null,2020-10-10T00:00:15,2020-10-10T00:00:30,1,4.44,4.0,4.0,1,Hi",
    "1,null,2020-10-10T00:00:30,2020-10-10T00:00:35,2,11.10,7.0,3.0,1,Comment#3",
    "1,null,2020-10-10T00:00:30,2020-10-10T00:00:40,2,11.10,7.0,3.0,1,Comment#3",
    "1,null,2020-10-10T00:00:30,2020-10-10T00:00:45,2,11.10,7.0,3.0,1,Comment#3",
]
TVFS = {
    "tumble": "TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)",
    "hop": "HOP(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "cumulate": "CUMULATE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND, INTERVAL '15' SECOND)",
}
SETS = {"tumble": TUMBLE_SETS, "hop": HOP_SETS, "cumulate": CUMULATE_SETS}

#: (the suite's test, its TVF, its expected rows: name, window_start, window_end, aggregates).
CASES = [
    ("testEventTimeTumbleWindow", TVFS["tumble"], [r[2:] for r in TUMBLE_SETS if r.startswith("0,")]),
    ("testEventTimeTumbleWindowWithOffset",
     "TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '1' DAY, INTERVAL '8' HOUR)", [
         "a,2020-10-09T08:00,2020-10-10T08:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "b,2020-10-09T08:00,2020-10-10T08:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "null,2020-10-09T08:00,2020-10-10T08:00,1,7.77,7.0,7.0,0,null"]),
    ("testEventTimeTumbleWindowWithNegativeOffset",
     "TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '1' DAY, INTERVAL '-8' HOUR)", [
         "a,2020-10-09T16:00,2020-10-10T16:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "b,2020-10-09T16:00,2020-10-10T16:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "null,2020-10-09T16:00,2020-10-10T16:00,1,7.77,7.0,7.0,0,null"]),
    ("testEventTimeHopWindow", TVFS["hop"], [r[2:] for r in HOP_SETS if r.startswith("0,")]),
    ("testEventTimeHopWindowWithOffset",
     "HOP(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '12' HOUR, INTERVAL '1' DAY, INTERVAL '8' HOUR)", [
         "a,2020-10-09T08:00,2020-10-10T08:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "a,2020-10-09T20:00,2020-10-10T20:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "b,2020-10-09T08:00,2020-10-10T08:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "b,2020-10-09T20:00,2020-10-10T20:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "null,2020-10-09T08:00,2020-10-10T08:00,1,7.77,7.0,7.0,0,null",
         "null,2020-10-09T20:00,2020-10-10T20:00,1,7.77,7.0,7.0,0,null"]),
    ("testEventTimeHopWindowWithNegativeOffset",
     "HOP(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '12' HOUR, INTERVAL '1' DAY, INTERVAL '-8' HOUR)", [
         "a,2020-10-09T04:00,2020-10-10T04:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "a,2020-10-09T16:00,2020-10-10T16:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "b,2020-10-09T04:00,2020-10-10T04:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "b,2020-10-09T16:00,2020-10-10T16:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "null,2020-10-09T04:00,2020-10-10T04:00,1,7.77,7.0,7.0,0,null",
         "null,2020-10-09T16:00,2020-10-10T16:00,1,7.77,7.0,7.0,0,null"]),
    ("testEventTimeCumulateWindow", TVFS["cumulate"], [r[2:] for r in CUMULATE_SETS if r.startswith("0,")]),
    ("testEventTimeCumulateWindowWithOffset",
     "CUMULATE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '12' HOUR, INTERVAL '1' DAY, INTERVAL '8' HOUR)", [
         "a,2020-10-09T08:00,2020-10-10T08:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "b,2020-10-09T08:00,2020-10-10T08:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "null,2020-10-09T08:00,2020-10-10T08:00,1,7.77,7.0,7.0,0,null"]),
    ("testEventTimeCumulateWindowWithNegativeOffset",
     "CUMULATE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '12' HOUR, INTERVAL '1' DAY, INTERVAL '-8' HOUR)", [
         "a,2020-10-09T16:00,2020-10-10T04:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "a,2020-10-09T16:00,2020-10-10T16:00,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
         "b,2020-10-09T16:00,2020-10-10T04:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "b,2020-10-09T16:00,2020-10-10T16:00,4,14.43,6.0,3.0,3,Hello|Hi|Comment#3",
         "null,2020-10-09T16:00,2020-10-10T04:00,1,7.77,7.0,7.0,0,null",
         "null,2020-10-09T16:00,2020-10-10T16:00,1,7.77,7.0,7.0,0,null"]),
    # testEventTimeSessionWindow (the suite's later versions, where Flink's SESSION TVF aggregates)
    ("testEventTimeSessionWindow", "SESSION(TABLE T1 PARTITION BY `name`, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)", [
        "a,2020-10-10T00:00:01,2020-10-10T00:00:13,6,19.98,5.0,1.0,3,Hi|Comment#1|Comment#2",
        "b,2020-10-10T00:00:06,2020-10-10T00:00:12,2,6.66,6.0,3.0,2,Hello|Hi",
        "b,2020-10-10T00:00:16,2020-10-10T00:00:21,1,4.44,4.0,4.0,1,Hi",
        "b,2020-10-10T00:00:34,2020-10-10T00:00:39,1,3.33,3.0,3.0,1,Comment#3",
        "null,2020-10-10T00:00:32,2020-10-10T00:00:37,1,7.77,7.0,7.0,0,null"]),
]
FAST = {"testEventTimeTumbleWindow"}


@pytest.fixture(scope="module")
def flink_t1(spark):
    """The suite's table T1: ``rowtime`` is ``TO_TIMESTAMP(ts)``, a timestamp without time zone."""
    rows = [(i, *r[:4], Decimal(r[4]) if r[4] else None, *r[5:]) for i, r in enumerate(FLINK_ROWS)]
    frame = spark.createDataFrame(rows, "row_num long, ts string, `int` int, `double` double, `float` float, "
                                        "bigdec decimal(10,2), string string, name string")
    frame.selectExpr("*", "to_timestamp_ntz(ts) AS rowtime").createOrReplaceTempView("T1")
    return "T1"


def flink_text(value) -> str:
    """A value as Flink's test sink prints it (Java's ``LocalDateTime``, ``BigDecimal``, ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text[:-3] if text.endswith(":00") and len(text) == 19 else text
    return str(value)


def flink_replay(spark, query: str) -> list[str]:
    """``query`` replayed as Flink's suite runs it: the watermark is ``rowtime - 1 s`` after each
    row, a window fires when it passes the window's end and drops a later row from it only
    (``slack(1, "generous")``); each result row as Flink's sink prints it."""
    results = wid.replay(spark, query, wid.punctuate.slack(1, mode="generous")).results.drop("emit_row", "revision")
    return sorted(",".join(map(flink_text, row)) for row in results.collect())


def cut(rows: list[str]) -> list[str]:
    """Flink's expected rows without the two DISTINCT columns (see :data:`AGGREGATES`)."""
    return sorted(",".join(r.split(",")[:-2]) for r in rows)


@pytest.mark.parametrize("case, tvf, expected", [
    pytest.param(*c, marks=() if c[0] in FAST else pytest.mark.slow, id=c[0]) for c in CASES])
def test_window_aggregate_itcase(spark, flink_t1, case, tvf, expected):
    """WindowAggregateITCase's tumble, hop, cumulate (offsets positive and negative) and session
    cases: the late 00:00:04 row is dropped from the windows already fired only (so HOP's and
    CUMULATE's [00:00, 00:00:10) count it, TUMBLE's [00:00, 00:00:05) does not)."""
    query = (f"SELECT `name`, window_start, window_end, {AGGREGATES} FROM TABLE({tvf}) "
             "GROUP BY `name`, window_start, window_end")
    assert flink_replay(spark, query) == cut(expected)


@pytest.mark.parametrize("tvf", [pytest.param("tumble"), pytest.param("hop", marks=pytest.mark.slow),
                                 pytest.param("cumulate", marks=pytest.mark.slow)])
@pytest.mark.parametrize("grouping", [pytest.param("GROUPING SETS((`name`),())", id="grouping-sets"),
                                      pytest.param("CUBE(`name`)", id="cube", marks=pytest.mark.slow),
                                      pytest.param("ROLLUP(`name`)", id="rollup", marks=pytest.mark.slow)])
def test_window_aggregate_itcase_grouping_sets(spark, flink_t1, tvf, grouping):
    """testEventTime{Tumble,Hop,Cumulate}Window_{GroupingSets,Cube,Rollup}: one expected set of
    rows for the three forms, ``GROUPING_ID(name)`` first."""
    query = (f"SELECT GROUPING_ID(`name`), `name`, window_start, window_end, {AGGREGATES} FROM TABLE({TVFS[tvf]}) "
             f"GROUP BY {grouping}, window_start, window_end")
    assert flink_replay(spark, query) == cut(SETS[tvf])


@pytest.mark.slow
def test_window_aggregate_itcase_window_columns(spark, flink_t1):
    """testTumbleWindowGroupOnWindowOnly, testTumbleWindowWithoutOutputWindowColumns,
    testTumbleWindowOutputWindowTime (window_time is window_end minus one microsecond here where
    Flink's TIMESTAMP(3) takes a millisecond: 00:00:04.999999 for its 00:00:04.999) and
    testFieldNameConflict."""
    only = [
        "2020-10-10T00:00,2020-10-10T00:00:05,4,11.10,5.0,1.0,2,Hi|Comment#1",
        "2020-10-10T00:00:05,2020-10-10T00:00:10,3,9.99,6.0,3.0,3,Hello|Hi|Comment#2",
        "2020-10-10T00:00:15,2020-10-10T00:00:20,1,4.44,4.0,4.0,1,Hi",
        "2020-10-10T00:00:30,2020-10-10T00:00:35,2,11.10,7.0,3.0,1,Comment#3"]
    tumble = f"FROM TABLE({TVFS['tumble']})"
    assert flink_replay(spark, f"SELECT window_start, window_end, {AGGREGATES} {tumble} "
                               "GROUP BY window_start, window_end") == cut(only)
    assert flink_replay(spark, f"SELECT {AGGREGATES} {tumble} GROUP BY window_start, window_end") == \
        cut([",".join(r.split(",")[2:]) for r in only])
    timed = [
        "a,2020-10-10T00:00,2020-10-10T00:00:05,2020-10-10T00:00:04.999,4",
        "a,2020-10-10T00:00:05,2020-10-10T00:00:10,2020-10-10T00:00:09.999,1",
        "b,2020-10-10T00:00:05,2020-10-10T00:00:10,2020-10-10T00:00:09.999,2",
        "b,2020-10-10T00:00:15,2020-10-10T00:00:20,2020-10-10T00:00:19.999,1",
        "b,2020-10-10T00:00:30,2020-10-10T00:00:35,2020-10-10T00:00:34.999,1",
        "null,2020-10-10T00:00:30,2020-10-10T00:00:35,2020-10-10T00:00:34.999,1"]
    assert flink_replay(spark, f"SELECT `name`, window_start, window_end, window_time, COUNT(*) {tumble} "
                               "GROUP BY `name`, window_start, window_end, window_time") == \
        sorted(r.replace(".999,", ".999999,") for r in timed)
    conflict = [
        "2020-10-10T00:00:04.999,2020-10-10T00:00:01,2020-10-10T00:00:04",
        "2020-10-10T00:00:09.999,2020-10-10T00:00:06,2020-10-10T00:00:08",
        "2020-10-10T00:00:19.999,2020-10-10T00:00:16,2020-10-10T00:00:16",
        "2020-10-10T00:00:34.999,2020-10-10T00:00:32,2020-10-10T00:00:34"]
    assert flink_replay(spark, f"SELECT window_time, MIN(rowtime) as start_time, MAX(rowtime) as end_time {tumble} "
                               "GROUP BY window_start, window_end, window_time") == \
        sorted(r.replace(".999,", ".999999,") for r in conflict)
    # Not transcribed: testCascadeEventTimeTumbleWindowWithOffset (an aggregate over the window
    # aggregate, and COUNT(DISTINCT)), testRelaxFormProctimeCascadeWindowAgg (processing time).


@pytest.mark.slow
def test_names_types_and_to_sql(spark, flink_t1):
    """Unaliased aggregates take Spark's names, window columns the attribute's type; wid.to_sql's
    text returns the same; Flink's named arguments are the positional ones."""
    query = ("SELECT `name` AS who, window_start, window_end, window_time, COUNT(*), AVG(bigdec) AS mean "
             "FROM TABLE(HOP(DATA => TABLE T1, TIMECOL => DESCRIPTOR(rowtime), SLIDE => INTERVAL '5' SECOND, "
             "SIZE => INTERVAL '0 00:00:10' DAY TO SECOND)) WHERE `int` < 7 "
             "GROUP BY `name`, window_start, window_end HAVING COUNT(*) > 1 ORDER BY window_start, who LIMIT 3")
    ours = wid.query(spark, query)
    assert ours.schema.simpleString() == ("struct<who:string,window_start:timestamp_ntz,window_end:timestamp_ntz,"
                                          "window_time:timestamp_ntz,count(1):bigint,mean:decimal(14,6)>")
    rows = [",".join(map(flink_text, r)) for r in ours.collect()]
    assert rows == ["a,2020-10-09T23:59:55,2020-10-10T00:00:05,2020-10-10T00:00:04.999999,5,3.330000",
                    "a,2020-10-10T00:00,2020-10-10T00:00:10,2020-10-10T00:00:09.999999,6,3.330000",
                    "b,2020-10-10T00:00,2020-10-10T00:00:10,2020-10-10T00:00:09.999999,2,6.660000"]
    assert [tuple(r) for r in spark.sql(wid.to_sql(spark, query)).collect()] == [tuple(r) for r in ours.collect()]
    rolled = ("SELECT GROUPING_ID(`name`) AS gid, `name`, window_end, AVG(bigdec), MIN(`float`) AS lo FROM TABLE("
              "CUMULATE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND, INTERVAL '15' SECOND)) "
              "GROUP BY window_start, window_end, ROLLUP(`name`) HAVING COUNT(*) > 3 ORDER BY 1, 2 NULLS LAST, 3")
    ours = wid.query(spark, rolled)
    assert ours.schema.simpleString() == ("struct<gid:bigint,name:string,window_end:timestamp_ntz,"
                                          "avg(bigdec):decimal(14,6),lo:float>")
    assert [",".join(map(flink_text, r)) for r in ours.collect()] == [  # the late row counted
        "0,a,2020-10-10T00:00:05,3.330000,1.0", "0,a,2020-10-10T00:00:10,3.330000,1.0",
        "0,a,2020-10-10T00:00:15,3.330000,1.0", "1,null,2020-10-10T00:00:05,3.330000,1.0",
        "1,null,2020-10-10T00:00:10,3.805714,1.0", "1,null,2020-10-10T00:00:15,3.805714,1.0"]
    assert [tuple(r) for r in spark.sql(wid.to_sql(spark, rolled)).collect()] == [tuple(r) for r in ours.collect()]


def test_a_numeric_attribute_is_read_in_seconds(spark):
    """Flink refuses a numeric time attribute; wid reads it in seconds, as the bracket clause does,
    its window bounds numbers; window_time, a timestamp's last microsecond, is then refused."""
    spark.createDataFrame([(1.5, "a", 2), (7.25, "a", 3), (-0.5, "b", 1)], "ts double, k string, v long"
                          ).createOrReplaceTempView("numbers")
    tvf = "TABLE(TUMBLE(TABLE numbers, DESCRIPTOR(ts), INTERVAL '5' SECOND))"
    ours = wid.query(spark, f"SELECT k, window_start, window_end, SUM(v) AS s FROM {tvf} "
                            "GROUP BY k, window_start, window_end")
    assert sorted(map(tuple, ours.collect())) == [("a", 0.0, 5.0, 2), ("a", 5.0, 10.0, 3), ("b", -5.0, 0.0, 1)]
    with pytest.raises(WidError, match="window_end") as error:
        wid.query(spark, f"SELECT window_time, SUM(v) FROM {tvf} GROUP BY window_start, window_end")
    assert "\n" not in str(error.value)

# --- Spark SQL as the oracle ----------------------------------------------------------------------

COLUMNS = "ts timestamp, k string, g string, v decimal(12,2)"
ORIGINS = (dt.datetime(2024, 3, 31, 0, 59, 58, 999_999), dt.datetime(1969, 12, 31, 23, 58, 1, 250_000))
SPARK_AGGREGATES = ("count(*) AS n, count(v) AS nv, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean")


@st.composite
def streams(draw, unit_us: int) -> list[tuple]:
    """1 to 50 rows over a few windows of ``unit_us``: microsecond times, often on a window edge or
    repeated; two-decimal amounts, negative too; NULL amounts; keys with a NULL."""
    origin = draw(st.sampled_from(ORIGINS))
    rows, times = [], []
    for _ in range(draw(st.integers(1, 50))):
        how = draw(st.integers(0, 4))
        if how == 0 and times:
            at = draw(st.sampled_from(times))
        elif how == 1:
            at = origin + dt.timedelta(microseconds=draw(st.integers(-2, 6)) * unit_us + draw(st.sampled_from((-1, 0, 1))))
        else:
            at = origin + dt.timedelta(microseconds=draw(st.integers(-unit_us, 6 * unit_us)))
        times.append(at)
        v = None if draw(st.integers(0, 9)) == 0 else Decimal(draw(st.integers(-99_999, 99_999))).scaleb(-2)
        rows.append((at, draw(st.sampled_from(("a", "b", "c", None))), draw(st.sampled_from(("x", "y"))), v))
    return rows


def _interval(us: int) -> str:
    return f"INTERVAL '{Decimal(us).scaleb(-6).normalize():f}' SECOND"


def oracle(kind: str, grid: int, size: int, offset: int, select: str, group: str) -> str:
    """The same windows in plain Spark SQL: each tuple exploded into its windows by integer
    arithmetic on its microsecond time (``x``), then grouped by them."""
    x = "unix_micros(ts)"
    if kind == "cumulate":
        start = f"({x} - pmod({x} - {offset}, {size}))"
        js = f"sequence(CAST(({x} - {start}) div {grid} AS INT) + 1, {size // grid})"
        windows = (f"SELECT *, timestamp_micros({start}) AS window_start, timestamp_micros({start} + j * {grid}) "
                   f"AS window_end FROM (SELECT *, explode({js}) AS j FROM events)")
    else:
        last = f"(({x} - {offset} - pmod({x} - {offset}, {grid})) div {grid})"
        first = f"(({x} - {offset} - {size} - pmod({x} - {offset} - {size}, {grid})) div {grid} + 1)"
        windows = (f"SELECT *, timestamp_micros(w * {grid} + {offset}) AS window_start, "
                   f"timestamp_micros(w * {grid} + {offset} + {size}) AS window_end "
                   f"FROM (SELECT *, explode(sequence({first}, {last})) AS w FROM events)")
    return f"SELECT {select} FROM ({windows}) GROUP BY {group}"


#: (GROUP BY, Flink's select list, Spark's: its grouping_id takes every grouping column, so
#: Flink's GROUPING_ID(k, g), one bit per key named, is written out with grouping()).
GROUPINGS = (
    ("window_start, window_end, k", "k, window_start, window_end, {aggregates}", None),
    ("window_start, window_end, k, g", "window_end, g, k, {aggregates}", None),
    ("ROLLUP(k, g), window_start, window_end",
     "GROUPING_ID(k, g) AS gid, k, g, window_start, window_end, {aggregates}",
     "CAST(grouping(k) AS BIGINT) * 2 + grouping(g) AS gid, k, g, window_start, window_end, {aggregates}"),
    ("window_start, window_end, GROUPING SETS ((k), (g), ())",
     "GROUPING(k) AS gk, k, g, window_start, window_end, {aggregates}", None),
)


@pytest.mark.parametrize("kind", ["tumble", pytest.param("hop", marks=pytest.mark.slow),
                                  pytest.param("cumulate", marks=pytest.mark.slow)])
@given(data=st.data())
def test_tvf_equals_spark_sql(spark, kind, data):
    """``TABLE(TUMBLE|HOP|CUMULATE(...))`` with and without an offset (negative, beyond the grid
    too) returns what Spark returns for the windows written out, names, types and rows."""
    grid = data.draw(st.sampled_from((1_000_000, 2_500_000, 60_000_000, 1_500)))
    size = grid if kind == "tumble" else grid * data.draw(st.integers(2, 4))
    offset = data.draw(st.sampled_from((0, 0, grid // 3, -grid // 2, 1, size + 7)))
    args = {"tumble": [size], "hop": [grid, size], "cumulate": [grid, size]}[kind]
    if offset or data.draw(st.booleans()):
        args.append(offset)
    tvf = f"{kind.upper()}(TABLE events, DESCRIPTOR(ts), {', '.join(map(_interval, args))})"
    group, select, spark_select = data.draw(st.sampled_from(GROUPINGS))
    select, spark_select = (t.format(aggregates=SPARK_AGGREGATES) for t in (select, spark_select or select))
    spark.createDataFrame(data.draw(streams(grid)), COLUMNS).createOrReplaceTempView("events")
    ours = wid.query(spark, f"SELECT {select} FROM TABLE({tvf}) GROUP BY {group}")
    theirs = spark.sql(oracle(kind, grid, size, offset % (size if kind == "cumulate" else grid), spark_select, group))
    assert ours.schema.simpleString() == theirs.schema.simpleString()
    assert sorted(map(repr, ours.collect())) == sorted(map(repr, theirs.collect())), tvf


# --- Bad input, in one line -----------------------------------------------------------------------

@pytest.mark.parametrize("query, message", [
    ("SELECT COUNT(*) FROM TABLE(SLIDE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) "
     "GROUP BY window_start, window_end", "unknown window table-valued function SLIDE"),
    ("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE T1, rowtime, INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
     "TUMBLE takes its time attribute as DESCRIPTOR(column), got rowtime"),
    ("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE T1, INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
     "TUMBLE takes its time attribute as DESCRIPTOR(column), got INTERVAL '5' SECOND"),
    ("SELECT COUNT(*) FROM TABLE(CUMULATE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '4' SECOND, INTERVAL '10' SECOND)) "
     "GROUP BY window_start, window_end", "CUMULATE's size (10 s) must be a whole multiple of the step (4 s)"),
    ("SELECT COUNT(*) FROM TABLE(HOP(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '4' SECOND, INTERVAL '10' SECOND)) "
     "GROUP BY window_start, window_end", "HOP's size (10 s) must be a whole multiple of the slide (4 s)"),
    ("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) GROUP BY window_end",
     "GROUP BY must hold window_start and window_end, as Flink requires; window_start is missing"),
    ("SELECT `name`, window_start, window_end FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) "
     "GROUP BY `name`, window_start, window_end", "a window TVF here needs at least one aggregate in SELECT"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND))",
     "this query has no GROUP BY (a plain select of the TVF, a window TopN or deduplication is not served)"),
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start ORDER BY `double`) AS r "
     "FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND))) WHERE r <= 3",
     "wid runs a window TVF as the FROM of the window aggregate itself (a window TopN, join"),
    ("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '1' MONTH)) "
     "GROUP BY window_start, window_end", "a month has no fixed length"),
    ("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), '5 seconds')) GROUP BY window_start, window_end",
     "TUMBLE's SIZE must be an interval literal such as INTERVAL '10' MINUTE"),
    ("SELECT `name`, COUNT(*) FROM TABLE(SESSION(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) "
     "GROUP BY `name`, window_start, window_end", "SESSION's GROUP BY keys (`name`) must be its PARTITION BY keys"),
    ("SELECT COUNT(DISTINCT string) FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) "
     "GROUP BY ROLLUP(`name`), window_start, window_end", "COUNT(DISTINCT `string`) cannot be rolled up"),
    ("SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), SIZE => INTERVAL '5' SECOND, "
     "GAP => INTERVAL '1' SECOND)) GROUP BY window_start, window_end", "TUMBLE has no argument GAP"),
])
def test_bad_input_is_one_line(spark, query, message):
    """Each refusal before any Spark job, in one line."""
    with pytest.raises(WidError, match=re.escape(message)) as error:
        wid.query(spark, query)
    assert "\n" not in str(error.value)
