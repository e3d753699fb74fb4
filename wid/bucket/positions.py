"""Trigger and eviction positions of FIFO windows, in numpy, one partition at a time.

When every trigger fires on a real tuple (trigger ``k`` at 0-based position ``p_k`` emits the
tuples before it) and tuple ``i`` is last in the window triggered at position ``L_i`` (its
eviction comes after that trigger), then with ``F(j) = #{k : p_k <= j}`` (n tuples)::

    wid_lo(i) = F(i)        wid_hi(i) = F(min(L_i, n - 1)) - 1     (+1 when L_i >= n and the
                                                                    end of the stream emits)

A delta trigger measures from the previous trigger, so its positions are a chain; on a
non-decreasing attribute ``v`` the next link is a binary search,
``next(i) = min{j : v_j > v_i + d}``, and the walk visits the trigger positions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, LongType, StructField, StructType

from wid.bucket.columns import EMIT_ROW, WID, WID_HI, WID_LO, Named, attribute_type
from wid.bucket.nan import NAN_KEY, NanFlags
from wid.bucket.plain import PlainNames
from wid.bucket.steps import Keep
from wid.errors import WidError
from wid.windows.sqlexpr import column, columns

_ALL = "_wid_all"
Tags = tuple[np.ndarray, np.ndarray]
Exceeds = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (v_j, v_i) -> whether v_j is beyond v_i


def check_inputs(df: DataFrame, partition: Sequence[str], markers: Sequence[str], what: str) -> None:
    """A clear error for a missing ``row_num`` or ``partition`` column of ``df``, or a ``markers``
    column that is not boolean (true = a punctuation; ``what``: how the clause calls it).

    >>> check_inputs(spark.table("readings"), ["k"], ["v"], "punct()")
    Traceback (most recent call last):
    wid.errors.WidError: punct() marker column 'v' must be boolean (true = a punctuation)
    >>> check_inputs(spark.table("readings"), ["g"], [], "punct()")
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 'g' (columns: row_num, ts, arrival_ts, k, v)
    """
    attribute_type(df, "row_num")
    for name in partition:
        attribute_type(df, name)
    for marker in markers:
        if not isinstance(attribute_type(df, marker), BooleanType):
            raise WidError(f"{what} marker column {marker!r} must be boolean (true = a punctuation)")


def in_a_window(named: Named) -> Keep:
    """The step that keeps the items some window holds: ``wid_lo <= wid_hi``.

    >>> from wid.windows.sqlexpr import Sql
    >>> in_a_window(Sql.column).sql("`tagged`")
    '(SELECT * FROM `tagged` WHERE (`wid_lo` <= `wid_hi`))'
    """
    return Keep(named(WID_LO) <= named(WID_HI))


def beyond(v: np.ndarray, d: float, exceeds: Exceeds | None = None) -> np.ndarray:
    """For each position i, the first j with ``exceeds(v_j, v_i)`` (default ``v_j - v_i > d``;
    ``len(v)`` if none), ``v`` non-decreasing and ``exceeds`` monotone in ``v_j``: a binary
    search for ``v_i + d``, then moved by whole runs of equal values until the policy's own
    comparison agrees (they differ only by rounding).

    >>> v = np.array([0.6, 0.7, 0.8, 0.8, 1.2])
    >>> beyond(v, 0.2), float(v[2] - v[0])  # 0.8 - 0.6 > 0.2 in doubles, though 0.6 + 0.2 is 0.8
    (array([2, 4, 4, 4, 5]), 0.20000000000000007)
    """
    exceeds = exceeds or (lambda later, earlier: later - earlier > d)
    n = len(v)
    j = np.searchsorted(v, v + d, side="right")
    while True:
        back = (j > 0) & exceeds(v[np.maximum(j - 1, 0)], v)
        j[back] = np.searchsorted(v, v[j[back] - 1], side="left")
        ahead = (j < n) & ~exceeds(v[np.minimum(j, n - 1)], v)
        j[ahead] = np.searchsorted(v, v[j[ahead]], side="right")
        if not (back.any() or ahead.any()):
            return j


def delta_chain(v: np.ndarray, d: float, exceeds: Exceeds | None = None) -> np.ndarray:
    """Fire flags of a delta trigger on non-decreasing ``v``: the first tuple is the first
    reference, each firing tuple the next one (``p_0 = next(0)``, ``p_{k+1} = next(p_k)``
    with ``next`` = :func:`beyond`).

    >>> delta_chain(np.array([0.0, 1.0, 2.0, 3.5, 4.0, 6.0, 7.5]), 2.0)  # 3.5 - 0 > 2, then 6 - 3.5 > 2
    array([False, False, False,  True, False,  True, False])
    """
    fires = np.zeros(len(v), dtype=bool)
    if len(v):
        following = beyond(v, d, exceeds)
        p = following[0]
        while p < len(v):
            fires[p] = True
            p = following[p]
    return fires


def ranges(fires: np.ndarray, last: np.ndarray, end_emits: bool = False) -> Tags:
    """``(wid_lo, wid_hi)`` of each tuple from the trigger flags and the positions ``L_i`` (module docstring).

    >>> fires = np.array([False, False, True, False, True])  # triggers at positions 2 and 4
    >>> last = np.array([2, 2, 4, 5, 5])  # tuples 3 and 4 stay until the end of the stream
    >>> ranges(fires, last)
    (array([0, 0, 1, 1, 2]), array([0, 0, 1, 1, 1]))
    >>> ranges(fires, last, end_emits=True)[1]
    array([0, 0, 1, 2, 2])
    """
    f = np.cumsum(fires, dtype=np.int64)
    hi = f[np.minimum(last, len(f) - 1)] - 1
    if end_emits:
        hi = np.where(last >= len(f), f[-1], hi)
    return f, hi


def non_decreasing(df: DataFrame, attr: str, partition: tuple[str, ...]) -> bool:
    """Whether ``attr`` never decreases in ``row_num`` order within a partition (one Spark job).

    >>> readings = spark.table("readings")  # ts by row_num: 1.0, 4.0, 2.5 (key b), 9.0
    >>> non_decreasing(readings, "ts", ()), non_decreasing(readings, "ts", ("k",))
    (False, True)
    """
    previous = F.lag(column(attr)).over(Window.partitionBy(*columns(partition)).orderBy("row_num"))
    return df.select((column(attr) < previous).alias("_wid_down")).where("_wid_down").limit(1).count() == 0


def per_partition(df: DataFrame, partition: tuple[str, ...], tag: Callable[[pd.DataFrame], Tags]) -> DataFrame:
    """``df`` with ``wid_lo``/``wid_hi`` from ``tag`` on each partition's rows sorted by ``row_num``
    (the whole stream when ``partition`` is empty): one Arrow grouped pass per partition, which
    gives back every NaN (pandas returns it as NULL: :mod:`wid.bucket.nan`).

    >>> def sliding(rows):  # count(2) windows triggered by every tuple: position i is in windows i and i + 1
    ...     return np.arange(len(rows)), np.arange(len(rows)) + 1
    >>> tagged = per_partition(spark.table("readings"), ("k",), sliding)
    >>> tagged.select("k", "row_num", "wid_lo", "wid_hi").orderBy("row_num").show()
    +---+-------+------+------+
    |  k|row_num|wid_lo|wid_hi|
    +---+-------+------+------+
    |  a|      0|     0|     1|
    |  a|      1|     1|     2|
    |  b|      2|     0|     1|
    |  a|      3|     2|     3|
    +---+-------+------+------+
    <BLANKLINE>
    """
    nan = NanFlags.of(df.schema, df.columns)
    df = nan.add(df)
    if not partition:
        df = df.withColumn(_ALL, F.lit(0))
    schema = StructType([*df.schema.fields, StructField(WID_LO, LongType()), StructField(WID_HI, LongType())])

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values("row_num", kind="stable").reset_index(drop=True)
        repeated = pdf["row_num"].to_numpy()[1:][np.diff(pdf["row_num"].to_numpy()) == 0]
        if len(repeated):
            raise WidError(f"duplicate row_num={repeated[0]}: arrival order needs a unique row_num")
        lo, hi = tag(pdf)
        return pdf.assign(**{WID_LO: lo, WID_HI: hi})

    df, names = PlainNames.of(df)
    grouped = df.groupBy(*[names.column(c) for c in partition or (_ALL,)])
    return nan.restore(grouped.applyInPandas(lambda pdf: run(names.pandas(pdf)), schema).drop(_ALL))


class Scanner(Protocol):
    """An event-by-event tagger over one partition's rows: :meth:`run` fills ``lo``/``hi``.

    >>> class Pairs:  # count(2) tumbling: the rows at positions 2w and 2w + 1 are window w
    ...     def __init__(self, rows): self.n = len(rows)
    ...     def run(self): self.lo = self.hi = np.arange(self.n) // 2
    >>> scan = Pairs(pd.DataFrame({"row_num": [3, 5, 8]})); scan.run(); scan.lo, scan.hi
    (array([0, 0, 1]), array([0, 0, 1]))
    """

    lo: np.ndarray
    hi: np.ndarray

    def run(self) -> None:
        """Tag every row: ``lo[i]``, ``hi[i]`` the first and last window of row ``i``."""


def scanned(df: DataFrame, partition: tuple[str, ...], scanner: Callable[[pd.DataFrame], Scanner],
            keys: tuple[str, ...] = ()) -> DataFrame:
    """``df`` tagged by the ``scanner`` made for each partition's rows (:func:`per_partition`);
    ``keys``: the columns it keys buffers by, a NaN apart from NULL (:mod:`wid.bucket.nan`).

    >>> class Same:  # window = how many earlier rows have the same key (NaN apart from NULL, as in Spark)
    ...     def __init__(self, rows): self.g = list(rows["g"])
    ...     def run(self): self.lo = self.hi = np.array([self.g[:i].count(g) for i, g in enumerate(self.g)])
    >>> df = spark.createDataFrame([(0, float("nan")), (1, None), (2, float("nan"))], "row_num long, g double")
    >>> sorted(scanned(df, (), Same, keys=("g",)).select("row_num", "wid_lo").collect())
    [Row(row_num=0, wid_lo=0), Row(row_num=1, wid_lo=0), Row(row_num=2, wid_lo=1)]
    """
    nan = NanFlags.of(df.schema, [k for k in keys if k not in partition])  # flags: per_partition's

    def tag(pdf: pd.DataFrame) -> Tags:
        run = scanner(nan.keyed(pdf))
        run.run()
        return run.lo, run.hi

    return per_partition(df, partition, tag)


#: ``(partition key, window number, index of the row whose arrival fired it | None)``.
Firing = tuple[tuple, int, int | None]


class LiveScanner(Protocol):
    """An event-by-event scan of an operational window over one micro-batch's rows (the rows it
    still held first, then the batch's, in ``row_num`` order), resumable: live mode's stateful
    step. ``fired`` and ``members``: each window it fired and that window's tuples (indices).

    >>> from wid.bucket.spl.scan import Scanner as Spl
    >>> from wid.windows.spl import Count, Tumbling
    >>> first = Spl(Tumbling(eviction=Count(2)), pd.DataFrame({"row_num": [0, 1, 2]}), 1, members=True)
    >>> first.advance(0); values, held = first.state(); first.fired, held  # row 2 waits in the buffer
    ([((), 0, 1)], [2])
    >>> again = Spl(Tumbling(eviction=Count(2)), pd.DataFrame({"row_num": [2, 3]}), 1, members=True)
    >>> again.resume(values); again.advance(len(held)); again.fired, again.members
    ([((), 1, 1)], [[0, 1]])
    """

    fired: list[Firing]
    members: list[list[int]]

    def resume(self, values: dict) -> None:
        """Take up the scan from the state :meth:`state` left (the rows still held come first)."""

    def advance(self, start: int) -> None:
        """Scan the rows from index ``start`` on (the batch's), firing windows as they close."""

    def finish(self) -> None:
        """The end of the stream: fire what the operator fires at its end."""

    def state(self) -> tuple[dict, list[int]]:
        """``(values, held)``: the scan's counters and clocks, and the rows still in a buffer."""


@dataclass(frozen=True)
class LiveScan:
    """How live mode's stateful step scans an operational window: ``scan`` makes the
    :class:`LiveScanner` over a micro-batch's rows; ``columns``: the columns it reads beyond the
    stream's; ``partition``: the columns the stream may be split by into buckets scanned apart
    (none: one bucket scans the stream); ``keys``: the columns whose values key its buffers.

    >>> from functools import partial
    >>> from wid.bucket.spl.scan import Scanner as Spl
    >>> from wid.windows.spl import Count, Tumbling
    >>> live = LiveScan(partial(Spl, Tumbling(("g",), eviction=Count(2)), scale=1, members=True), (), ("g",), ("g",))
    >>> run = live.scanner(pd.DataFrame({"row_num": [0, 1, 2, 3], "g": [2.5, None, 2.5, np.nan]})); run.advance(0)
    >>> run.fired, run.members  # unflagged, NaN and NULL are one key
    ([((2.5,), 0, 2), ((None,), 0, 3)], [[0, 2], [1, 3]])
    """

    scan: Callable[[pd.DataFrame], LiveScanner]
    columns: tuple[str, ...]
    partition: tuple[str, ...]
    keys: tuple[str, ...]
    nan: NanFlags = NanFlags({})

    def scanner(self, rows: pd.DataFrame) -> LiveScanner:
        """The scanner over ``rows``; key values as plain Python values (:func:`key_values`: a
        key survives pickling in the state; a NaN key, flagged by ``nan``, as
        :data:`wid.bucket.nan.NAN_KEY`), pandas' nullable integers as numpy's (floats where NULL)."""
        rows = self.nan.keyed(rows)
        rows = rows.assign(**{c: pd.Series(key_values(rows[c]), index=rows.index, dtype=object) for c in self.keys})
        for c in self.columns:
            if pd.api.types.is_integer_dtype(rows[c].dtype) and pd.api.types.is_extension_array_dtype(rows[c].dtype):
                rows[c] = rows[c].to_numpy("float64" if rows[c].hasnans else "int64", na_value=np.nan)
        return self.scan(rows)


def plain(value: object) -> object:
    """A numpy scalar or pandas timestamp as the Python value it holds: live mode's state is
    pickled into checkpoints, which must not depend on numpy's or pandas' internals.

    >>> type(plain(np.float64(0.5))), plain(pd.Timestamp("2026-11-25 10:00:00.000001")), plain("a")
    (<class 'float'>, datetime.datetime(2026, 11, 25, 10, 0, 0, 1), 'a')
    """
    if isinstance(value, np.generic):
        return value.item()
    return value.to_pydatetime() if isinstance(value, pd.Timestamp) else value


def key_values(column: pd.Series) -> list:
    """A key column's values as plain Python values, every NULL (None, NaN, NA) as None: NULL keys
    are one key, as Spark groups them (NaN is never equal to itself, so each would be a key of
    its own).

    >>> key_values(pd.Series([1.5, None, np.nan]))
    [1.5, None, None]
    """
    return [None if pd.isna(v) else plain(v) for v in column.tolist()]


def firings(df: DataFrame, partition: tuple[str, ...], fired: Callable[[pd.DataFrame], list[Firing]]) -> DataFrame:
    """Per window (``partition`` columns, ``wid``) its ``emit_row``: the row_num of the row whose
    arrival fired it (NULL: the end of the stream), from ``fired`` on the whole stream's rows
    sorted by ``row_num`` (one Arrow grouped pass: ticks and punctuations reach every partition).

    >>> fired = lambda rows: [(("a",), 0, 1), (("b",), 0, None)]  # a's window 0 fired by rows[1], b's at the end
    >>> windows = firings(spark.table("readings").where("row_num > 0"), ("k",), fired)
    >>> sorted(windows.collect())
    [Row(k='a', wid=0, emit_row=2), Row(k='b', wid=0, emit_row=None)]
    """
    nan = NanFlags.of(df.schema, partition)  # a NaN key apart from NULL, its flag beside it
    flags = [nan.flags.get(c) for c in partition]
    schema = StructType([*(df.schema[c] for c in partition), *[StructField(f, IntegerType()) for f in flags if f],
                         StructField(WID, LongType()), StructField(EMIT_ROW, LongType())])

    def plain_key(key: tuple) -> tuple:
        flagged = [int(v is NAN_KEY) if v is not None else None for v, f in zip(key, flags) if f]
        return (*[float("nan") if v is NAN_KEY else v for v in key], *flagged)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = nan.keyed(pdf.sort_values("row_num", kind="stable").reset_index(drop=True))
        rows = pdf["row_num"].to_numpy()
        out = [(*plain_key(key), number, None if at is None else int(rows[at])) for key, number, at in fired(pdf)]
        frame = pd.DataFrame(out, columns=schema.names) if out else pd.DataFrame(columns=schema.names)
        return frame.astype({WID: "int64", EMIT_ROW: "Int64", **{f: "Int32" for f in flags if f}})

    df, names = PlainNames.of(nan.add(df).withColumn(_ALL, F.lit(0)))
    return nan.restore(df.groupBy(_ALL).applyInPandas(lambda pdf: run(names.pandas(pdf)), schema))
