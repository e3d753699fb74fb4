"""Calendar windows ([RANGE n unit SLIDE m unit WATTR ts TIMEZONE 'z' WEEKSTART 'd'], docs/semantics.md
"Calendar windows") against an independent oracle built on Python's ``zoneinfo``.

The oracle never uses wid's formulas: a tuple's local date is ``astimezone(ZoneInfo(z)).date()``
(the wall clock of a TIMESTAMP_NTZ, the date of a DATE); its period is that date's day, week (the
date minus its days since the week's first day), month, quarter or year, numbered from the period
holding 1970-01-01; window ``w`` holds the periods ``(w+1)m - n .. (w+1)m - 1``, and a period begins
at the first instant whose local date is its first day (a binary search over instants).
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections import defaultdict
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wid
from wid import WidError, punctuate

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_DATE = dt.date(1970, 1, 1)
WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")

# --- the oracle -------------------------------------------------------------------------------


def utc(micros: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=micros)


def micros(instant: dt.datetime) -> int:
    return (instant - EPOCH) // dt.timedelta(microseconds=1)


def local_date(value, dtype: str, zone: str) -> dt.date:
    """The local calendar date of a value: an instant (epoch micros) in ``zone``; a TIMESTAMP_NTZ's
    own wall clock; a DATE itself."""
    if dtype == "timestamp":
        return utc(value).astimezone(ZoneInfo(zone)).date()
    return value.date() if isinstance(value, dt.datetime) else value


def week_start(date: dt.date, first: str) -> dt.date:
    return date - dt.timedelta(days=(date.weekday() - WEEKDAYS.index(first)) % 7)


def period(date: dt.date, unit: str, first: str = "MONDAY") -> int:
    """The period holding ``date``, numbered from the period holding 1970-01-01 (0)."""
    if unit == "DAY":
        return (date - EPOCH_DATE).days
    if unit == "WEEK":
        return (week_start(date, first) - week_start(EPOCH_DATE, first)).days // 7
    months = (date.year - 1970) * 12 + date.month - 1
    return {"MONTH": months, "QUARTER": months // 3, "YEAR": date.year - 1970}[unit]


def first_day(k: int, unit: str, first: str = "MONDAY") -> dt.date:
    """The first local date of period ``k``."""
    if unit == "DAY":
        return EPOCH_DATE + dt.timedelta(days=k)
    if unit == "WEEK":
        return week_start(EPOCH_DATE, first) + dt.timedelta(weeks=k)
    months = k * {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
    return dt.date(1970 + months // 12, months % 12 + 1, 1)


@functools.lru_cache(maxsize=None)
def day_begins(date: dt.date, zone: str) -> int:
    """Epoch micros of the first instant whose local date in ``zone`` is ``date`` or later (local
    midnight; where a daylight-saving change skips it, the change itself): a binary search over
    whole seconds (zone changes fall on whole seconds)."""
    z = ZoneInfo(zone)
    lo = int((dt.datetime.combine(date, dt.time(), UTC) - EPOCH).total_seconds()) - 2 * 86400
    hi = lo + 4 * 86400
    assert (EPOCH + dt.timedelta(seconds=lo)).astimezone(z).date() < date <= (EPOCH + dt.timedelta(seconds=hi)).astimezone(z).date()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if (EPOCH + dt.timedelta(seconds=mid)).astimezone(z).date() < date else (lo, mid)
    return hi * 10**6


def bound(k: int, unit: str, first: str, dtype: str, zone: str):
    """Where period ``k`` begins, in the bound's type: an instant (epoch micros) for TIMESTAMP and
    DATE attributes, the wall-clock midnight (a naive datetime) for TIMESTAMP_NTZ."""
    date = first_day(k, unit, first)
    return dt.datetime.combine(date, dt.time()) if dtype == "timestamp_ntz" else day_begins(date, zone)


def oracle(rows, n: int, m: int, unit: str, zone: str, dtype: str, first: str = "MONDAY") -> list[tuple]:
    """``(wid, start, end, k, count, sum c, min v, max v)`` per window and key, brute force."""
    held = defaultdict(list)
    for r in rows:
        p = period(local_date(r["ts"], dtype, zone), unit, first)
        for w in range(p // m - n - 1, p // m + n + 2):  # every window near p, membership by its periods
            if p in range((w + 1) * m - n, (w + 1) * m):
                held[(w, r["k"])].append(r)
    return sorted((w, bound((w + 1) * m - n, unit, first, dtype, zone), bound((w + 1) * m, unit, first, dtype, zone), k,
                   len(rs), sum(r["c"] for r in rs), min(r["v"] for r in rs), max(r["v"] for r in rs))
                  for (w, k), rs in held.items())


# --- the data ---------------------------------------------------------------------------------

#: Daylight-saving changes (UTC): Berlin and New York both ways in 2024, Lord Howe's half hour,
#: Sao Paulo's 2018 change at local midnight (00:00 -> 01:00), New York in 1965 (before the epoch).
CHANGES = {"Europe/Berlin": ["2024-03-31T01:00", "2024-10-27T01:00"],
           "America/New_York": ["2024-03-10T07:00", "2024-11-03T06:00", "1965-04-25T07:00", "1965-10-31T06:00"],
           "Australia/Lord_Howe": ["2024-04-06T15:00", "2024-10-05T15:30"],
           "America/Sao_Paulo": ["2018-11-04T03:00", "2019-02-17T02:00"]}
#: Local dates whose midnights are boundaries: month ends, a leap day, year and quarter ends, days
#: next to the changes, before 1970.
DATES = ["2024-01-31", "2024-02-01", "2024-02-28", "2024-02-29", "2024-03-01", "2023-02-28", "2023-03-01",
         "2023-12-31", "2024-01-01", "2024-03-30", "2024-03-31", "2024-04-01", "2024-06-30", "2024-07-01",
         "2024-10-27", "2024-10-28", "2024-11-03", "2024-11-04", "2024-03-10", "2024-03-11", "2018-11-04",
         "2018-11-05", "1965-02-28", "1965-03-01", "1964-12-31", "1965-01-01", "1969-12-31", "1970-01-01"]
KEYS = ("a", "b", "c")


def instants(zones=tuple(CHANGES) + ("Asia/Kolkata",)) -> list[int]:
    """Epoch micros within an hour of every change, and at, just before and just after the local
    midnights of :data:`DATES` in each zone."""
    out = set()
    for zone in zones:
        for change in CHANGES.get(zone, []):
            at = micros(dt.datetime.fromisoformat(change).replace(tzinfo=UTC))
            out.update(at + d for d in (-3_600_000_000, -1_800_000_001, -1, 0, 1, 1_799_999_999, 3_599_999_999))
        for date in DATES:
            at = day_begins(dt.date.fromisoformat(date), zone)
            out.update((at - 1, at, at + 1, at + 43_200_123_456))
    return sorted(out)


def rows_of(values) -> list[dict]:
    """Rows over ``values`` (instants, wall clocks or dates) in a shuffled arrival order: keys,
    cents ``c``, doubles ``v`` with two decimals, and every fifth value twice (duplicates)."""
    rnd = random.Random(53)
    rows = []
    for i, x in enumerate(values):
        for _ in range(2 if i % 5 == 0 else 1):
            rows.append({"ts": x, "k": KEYS[rnd.randrange(3)], "c": rnd.randrange(-500, 5000),
                         "v": rnd.randrange(-9999, 99999) / 100})
    rnd.shuffle(rows)
    for i, r in enumerate(rows):
        r["row_num"] = i
    return rows


def register(spark, rows, dtype: str, name: str = "cal") -> str:
    """View ``name`` of ``rows`` with ``ts`` of ``dtype``, built without the session's time zone
    (instants from epoch micros, wall clocks and dates from their text)."""
    text = {"timestamp": lambda x: x, "timestamp_ntz": lambda x: x.isoformat(sep=" "), "date": lambda x: x.isoformat()}
    raw = "long" if dtype == "timestamp" else "string"
    frame = spark.createDataFrame([(r["row_num"], text[dtype](r["ts"]), r["k"], r["c"], r["v"]) for r in rows],
                                  f"row_num long, raw {raw}, k string, c long, v double")
    ts = "timestamp_micros(raw)" if dtype == "timestamp" else f"CAST(raw AS {dtype.upper()})"
    frame.selectExpr("row_num", f"{ts} AS ts", "k", "c", "v").createOrReplaceTempView(name)
    return name


def frame(spark, clause: str, dtype: str, view: str = "cal"):
    """The query's rows as ``(wid, start, end, k, n, total, lo, hi)``: instants as epoch micros,
    wall clocks as text (:func:`run` reads them back)."""
    out = wid.query(spark, f"SELECT k, count(*) AS n, sum(c) AS total, min(v) AS lo, max(v) AS hi FROM {view} "
                           f"[{clause}] GROUP BY k")
    bounds = ["CAST(window_start AS STRING) AS s", "CAST(window_end AS STRING) AS e"] if dtype == "timestamp_ntz" \
        else ["CAST(unix_micros(window_start) AS STRING) AS s", "CAST(unix_micros(window_end) AS STRING) AS e"]
    return out.selectExpr("wid", *bounds, "k", "n", "total", "lo", "hi")


def read(row) -> tuple:
    """A row of :func:`frame` with its bounds back as epoch micros or naive datetimes."""
    w, s, e, *rest = row
    value = int if s.lstrip("-").isdigit() else dt.datetime.fromisoformat
    return (w, value(s), value(e), *rest)


def run(spark, clause: str, dtype: str, view: str = "cal") -> list[tuple]:
    return sorted(read(r) for r in frame(spark, clause, dtype, view).collect())


def runs(spark, queries: list[tuple[str, str, str]]) -> list[list[tuple]]:
    """:func:`run` of each ``(clause, dtype, view)``, all in one Spark job (a union, each labelled)."""
    frames = [frame(spark, *q).selectExpr(f"{i} AS q", "*") for i, q in enumerate(queries)]
    rows = functools.reduce(lambda a, b: a.unionByName(b), frames).collect()
    return [sorted(read(tuple(r)[1:]) for r in rows if r.q == i) for i in range(len(queries))]


# --- the tests --------------------------------------------------------------------------------

TIMESTAMPS = rows_of(instants())

CASES = [  # (clause, n, m, unit, zone, first day of the week)
    ("RANGE 1 DAY SLIDE 1 DAY WATTR ts TIMEZONE 'Europe/Berlin'", 1, 1, "DAY", "Europe/Berlin", "MONDAY"),
    ("RANGE 7 DAYS SLIDE 1 DAY WATTR ts TIMEZONE 'America/New_York'", 7, 1, "DAY", "America/New_York", "MONDAY"),
    ("RANGE 1 DAY SLIDE 1 DAY WATTR ts TIMEZONE 'America/Sao_Paulo'", 1, 1, "DAY", "America/Sao_Paulo", "MONDAY"),
    ("RANGE 1 DAY SLIDE 2 DAYS WATTR ts TIMEZONE 'Asia/Kolkata'", 1, 2, "DAY", "Asia/Kolkata", "MONDAY"),
    ("RANGE 1 WEEK SLIDE 1 WEEK WATTR ts TIMEZONE 'Europe/Berlin'", 1, 1, "WEEK", "Europe/Berlin", "MONDAY"),
    ("RANGE 2 WEEKS SLIDE 1 WEEK WATTR ts TIMEZONE 'America/New_York' WEEKSTART 'SUNDAY'", 2, 1, "WEEK",
     "America/New_York", "SUNDAY"),
    ("RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin'", 1, 1, "MONTH", "Europe/Berlin", "MONDAY"),
    ("RANGE 3 MONTHS SLIDE 1 MONTH WATTR ts TIMEZONE 'America/New_York'", 3, 1, "MONTH", "America/New_York", "MONDAY"),
    ("RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Australia/Lord_Howe'", 1, 1, "MONTH", "Australia/Lord_Howe",
     "MONDAY"),
    ("RANGE 1 QUARTER SLIDE 1 QUARTER WATTR ts TIMEZONE 'Europe/Berlin'", 1, 1, "QUARTER", "Europe/Berlin", "MONDAY"),
    ("RANGE 1 YEAR SLIDE 1 YEAR WATTR ts TIMEZONE 'America/New_York'", 1, 1, "YEAR", "America/New_York", "MONDAY"),
]


@pytest.fixture(scope="module")
def timestamps(spark):
    return register(spark, TIMESTAMPS, "timestamp")


@pytest.fixture(scope="module")
def timestamp_runs(spark, timestamps):
    """Every case of :data:`CASES`, in one Spark job."""
    return dict(zip([c[0] for c in CASES], runs(spark, [(c[0], "timestamp", timestamps) for c in CASES])))


@pytest.mark.parametrize("clause, n, m, unit, zone, first", CASES, ids=[c[0].split(" WATTR")[0] + " " + c[4]
                                                                        for c in CASES])
def test_timestamps_fall_in_the_local_periods_of_the_zone(timestamp_runs, clause, n, m, unit, zone, first):
    got = timestamp_runs[clause]
    assert got == oracle(TIMESTAMPS, n, m, unit, zone, "timestamp", first)
    lengths = {end - start for _, start, end, *_ in got}
    assert len(got) > 20 and (len(lengths) > 1 or zone == "Asia/Kolkata")  # 23- and 25-hour days, months of 28..31


def test_without_timezone_months_are_the_session_time_zones(spark, timestamps):
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        got = run(spark, "RANGE 1 MONTH SLIDE 1 MONTH WATTR ts", "timestamp")
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert got == oracle(TIMESTAMPS, 1, 1, "MONTH", "America/New_York", "timestamp")


def test_a_day_without_timezone_is_still_86400_seconds(spark, timestamps):
    got = run(spark, "RANGE 1 DAY SLIDE 1 DAY WATTR ts", "timestamp")
    assert got == oracle(TIMESTAMPS, 1, 1, "DAY", "UTC", "timestamp")  # the same as UTC days (no DST)
    assert {w for w, *_ in got} == {micros // 86_400_000_000 for micros in (r["ts"] for r in TIMESTAMPS)}


WALL = rows_of(sorted({utc(x).astimezone(ZoneInfo("Europe/Berlin")).replace(tzinfo=None) for x in instants(("Europe/Berlin",))}))
DAYS = rows_of(sorted({dt.date.fromisoformat(d) + dt.timedelta(days=k) for d in DATES for k in (-1, 0, 3)}))


LOCAL = [  # (dtype, clause, n, m, unit, first day of the week)
    ("timestamp_ntz", "RANGE 1 DAY SLIDE 1 DAY WATTR ts TIMEZONE 'Europe/Berlin'", 1, 1, "DAY", "MONDAY"),
    ("timestamp_ntz", "RANGE 3 MONTHS SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin'", 3, 1, "MONTH", "MONDAY"),
    ("date", "RANGE 1 WEEK SLIDE 1 WEEK WATTR ts TIMEZONE 'Europe/Berlin' WEEKSTART 'SUNDAY'", 1, 1, "WEEK", "SUNDAY"),
    ("date", "RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin'", 1, 1, "MONTH", "MONDAY"),
]


@pytest.fixture(scope="module")
def local_runs(spark):
    """Every case of :data:`LOCAL`, in one Spark job."""
    views = {"timestamp_ntz": register(spark, WALL, "timestamp_ntz", "cal_ntz"),
             "date": register(spark, DAYS, "date", "cal_date")}
    return dict(zip([c[1] for c in LOCAL], runs(spark, [(c[1], c[0], views[c[0]]) for c in LOCAL])))


@pytest.mark.parametrize("dtype, clause, n, m, unit, first", LOCAL)
def test_wall_clocks_and_dates_are_local_already(local_runs, dtype, clause, n, m, unit, first):
    """A TIMESTAMP_NTZ's wall clock and a DATE are local already: their own day decides (the zone
    only places a DATE's bounds, instants)."""
    rows = WALL if dtype == "timestamp_ntz" else DAYS
    got = local_runs[clause]
    assert got and got == oracle(rows, n, m, unit, "Europe/Berlin", dtype, first)


#: Instants (UTC) of daylight-saving changes the property draws near.
NEAR = [micros(dt.datetime.fromisoformat(c).replace(tzinfo=UTC)) for cs in CHANGES.values() for c in cs]
UNITS = {"DAY": (1, 7), "WEEK": (1, 3), "MONTH": (1, 4), "QUARTER": (1, 2), "YEAR": (1, 2)}


@st.composite
def calendars(draw):
    """A random calendar clause and random instants within two days of daylight-saving changes."""
    unit = draw(st.sampled_from(sorted(UNITS)))
    m = draw(st.integers(*UNITS[unit]))
    n = draw(st.integers(1, 3)) * m if draw(st.booleans()) else draw(st.integers(1, 2 * UNITS[unit][1]))
    zone = draw(st.sampled_from(sorted(CHANGES) + ["Asia/Kolkata"]))
    first = draw(st.sampled_from(WEEKDAYS)) if unit == "WEEK" else "MONDAY"
    xs = draw(st.lists(st.builds(lambda c, d: c + d, st.sampled_from(NEAR),
                                 st.integers(-2 * 86_400_000_000, 2 * 86_400_000_000)), min_size=1, max_size=25))
    weekstart = f" WEEKSTART '{first}'" if first != "MONDAY" else ""
    clause = f"RANGE {n} {unit}S SLIDE {m} {unit}S WATTR ts TIMEZONE '{zone}'{weekstart}"
    return clause, n, m, unit, zone, first, rows_of(xs)


@pytest.mark.slow
@given(case=calendars())
def test_random_instants_near_daylight_saving_changes(spark, case):
    clause, n, m, unit, zone, first, rows = case
    view = register(spark, rows, "timestamp", "cal_drawn")
    assert run(spark, clause, "timestamp", view) == oracle(rows, n, m, unit, zone, "timestamp", first)


@pytest.mark.slow
def test_replay_emits_each_month_at_the_first_punctuation_past_its_end(spark):
    """Tuples in time order, a wildcard punctuation at each tuple's instant every third tuple: a
    month is emitted at the first punctuation whose bound >= the instant its local month ends."""
    xs = sorted(x for x in instants(("Europe/Berlin",)) if x > micros(dt.datetime(2023, 12, 1, tzinfo=UTC)))
    rows, puncts = [], []
    for i, x in enumerate(xs):
        rows.append({"row_num": 2 * i, "ts": x, "k": KEYS[i % 3], "c": i, "v": i / 4})
        if i % 3 == 2:
            puncts.append((2 * i + 1, x))
    frame = spark.createDataFrame(puncts, "row_num long, b long").selectExpr("row_num", "timestamp_micros(b) AS ts")
    view = register(spark, rows, "timestamp", "cal_replay")
    text = (f"SELECT k, count(*) AS n, sum(c) AS total, min(v) AS lo, max(v) AS hi FROM {view} "
            "[RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin'] GROUP BY k")
    rep = wid.replay(spark, text, punctuation=punctuate.embedded(frame))
    got = sorted(tuple(r) for r in rep.results.selectExpr(
        "wid", "unix_micros(window_start)", "unix_micros(window_end)", "k", "n", "total", "lo", "hi", "emit_row").collect())
    assert rep.late.count() == 0
    expected = [(*row, next((r for r, b in puncts if b >= row[2]), None))
                for row in oracle(rows, 1, 1, "MONTH", "Europe/Berlin", "timestamp")]
    assert got == expected
    assert {e for *_, e in got} - {None}  # some months closed before the end of the stream
    exact = sorted(tuple(r)[:-1] for r in got)
    assert exact == run(spark, "RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin'", "timestamp", view)


def test_to_sql_gives_the_same_months(spark, timestamps):
    text = wid.to_sql(spark, "SELECT k, count(*) AS n FROM cal [RANGE 1 MONTH SLIDE 1 MONTH WATTR ts "
                             "TIMEZONE 'America/New_York'] GROUP BY k")
    got = sorted(tuple(r) for r in spark.sql(text).selectExpr(
        "wid", "unix_micros(window_start)", "unix_micros(window_end)", "k", "n").collect())
    assert got == [r[:5] for r in oracle(TIMESTAMPS, 1, 1, "MONTH", "America/New_York", "timestamp")]


@pytest.mark.parametrize("window, message", [
    ("RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berln'", r"unknown time zone 'Europe/Berln' in TIMEZONE"),
    ("RANGE 1 MONTH SLIDE 1 DAY WATTR ts", r"RANGE and SLIDE in the same unit, got MONTH and DAY"),
    ("RANGE 1.5 MONTHS SLIDE 1 MONTH WATTR ts", r"RANGE in MONTHS must be a whole number of months, got 1.5"),
    ("RANGE 1 MONTH SLIDE 1 MONTH WATTR x", r"needs a TIMESTAMP, TIMESTAMP_NTZ or DATE attribute; 'x' is double"),
    ("RANGE 1 HOUR SLIDE 1 HOUR WATTR ts TIMEZONE 'Europe/Berlin'", r"HOURS are fixed-length"),
    ("RANGE 1 DAY SLIDE 1 DAY WATTR ts WEEKSTART 'SUNDAY'", r"WEEKSTART belongs to a window counted in WEEKS"),
    ("RANGE 1 WEEK SLIDE 1 WEEK WATTR ts WEEKSTART 'SONDAY'", r"WEEKSTART must be a day of the week"),
    ("RANGE 1 MONTH SLIDE 1 MONTH OFFSET 2 DAYS WATTR ts", r"not OFFSET"),
    ("CUMULATE STEP 1 DAY SIZE 1 MONTH WATTR ts", r"SIZE cannot be in MONTHS"),
])
def test_bad_calendar_clauses_fail_in_one_line(spark, window, message):
    spark.createDataFrame([(0, 1.5, 0)], "row_num long, x double, us long") \
        .selectExpr("row_num", "x", "timestamp_micros(us) AS ts").createOrReplaceTempView("cal_bad")
    with pytest.raises(WidError, match=message) as error:
        wid.query(spark, f"SELECT count(*) AS n FROM cal_bad [{window}]")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("punctuation, lateness, message", [
    (punctuate.slack(3600), 0, r"slack\(3600\) takes an amount of the window attribute"),
    (punctuate.heartbeat(60, 0, clock="ts"), 0, r"this punctuation generator places bounds in the window attribute's units"),
    (punctuate.slack(0), 1, r"allowed_lateness is an amount of the window attribute"),
])
def test_amounts_of_the_attribute_are_refused_on_calendar_periods(spark, timestamps, punctuation, lateness, message):
    text = "SELECT count(*) AS n FROM cal [RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin']"
    with pytest.raises(WidError, match=message + r".*count local periods") as error:
        wid.replay(spark, text, punctuation=punctuation, allowed_lateness=lateness)
    assert "\n" not in str(error.value)


def test_live_mode_refuses_calendar_windows_in_one_line(spark, timestamps):
    stream = spark.readStream.format("rate").load().selectExpr("value AS row_num", "timestamp AS ts", "'a' AS k")
    with pytest.raises(WidError, match="Calendar") as error:
        wid.live(spark, "SELECT count(*) AS n FROM cal [RANGE 1 MONTH SLIDE 1 MONTH WATTR ts TIMEZONE 'UTC']", stream)
    assert "\n" not in str(error.value)
