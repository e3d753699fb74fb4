"""The scan of FCA replay (:mod:`wid.stream.fca_replay`): one chunk of the x axis at a time,
per key partition, its tuples and punctuations in arrival order through the paper's start/end
bins (:class:`wid.aggregate.bins.Bins`): processtuple, processpunctuation (emit, then purge),
revisions within the allowed lateness, and one row per dropped (tuple, window) contribution.
Arrow, numpy and pandas (the punctuations) only; the module doc of :mod:`wid.stream.fca_replay`
states the semantics. Live mode (:mod:`wid.stream.live.fca`) runs :func:`elements_scanner` over
the stream so far.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from wid.aggregate.bin_columns import Finish, columns, finals, output, partials
from wid.aggregate.bins import Bins, add, ends, lowest
from wid.aggregate.fca import NULLABLE, by_key, contributing_rows, windows_of
from wid.aggregate.partials import Aggregate
from wid.bucket.columns import EMIT_ROW, REVISION, WID, WID_CLOSED, WID_X
from wid.windows.numbers import Number

#: The row_num of a late tuple (NULL on result rows); an element's kind: 0 = tuple, 1 = punctuation.
LATE, KIND = "_wid_late", "_wid_kind"


def scanner(r: Number, keys: list[str], aggregates: list[Aggregate], numeric: dict[str, np.dtype],
             pattern: tuple[str, ...], wildcards: bool, consistent: bool, lag: Number,
             schema: pa.Schema) -> Callable[[pa.Table], pa.Table]:
    """Replay's grouped function: one chunk's elements in (:data:`KIND` 0 tuples, 1 punctuations),
    :func:`elements_scanner`'s rows out.

    ``count(*)`` per ``k`` over ``(w - 3, w]``; after row 1, ``a``'s windows up to 3 are closed: window
    2, defined by row 2 later, is emitted on its arrival without it (row 2 is late for it):

    >>> from wid.aggregate.fca import DEFINES
    >>> schema = pa.schema([("k", pa.string()), *[(c, pa.int64()) for c in (WID, "n", EMIT_ROW, REVISION, LATE)]])
    >>> split = scanner(3, ["k"], [Aggregate("n", "count")], {}, ("k",), True, False, 0, schema)
    >>> chunk = pa.table({KIND: [0, 0, 1, 0, 0], "row_num": [0, 1, 1, 2, 3], "k": ["a", "b", "a", "a", "b"],
    ...                   WID_X: [1, 4, None, 2, 6], DEFINES: [True, True, None, True, True],
    ...                   WID_CLOSED: [None, None, 3, None, None]})
    >>> for row in split(chunk).to_pylist():
    ...     print(*row.values())
    a 1 1 1 0 None
    a 2 1 2 0 None
    a 4 1 None 0 None
    a 2 None None None 2
    b 4 1 None 0 None
    b 6 2 None 0 None
    """
    scan = elements_scanner(r, keys, aggregates, numeric, pattern, wildcards, consistent, lag, schema)

    def split(table: pa.Table) -> pa.Table:
        kind = table.column(KIND).to_numpy(zero_copy_only=False)
        marks = table.filter(pa.array(kind == 1)).select([*pattern, "row_num", WID_CLOSED]).to_pandas(
            types_mapper=NULLABLE.get)  # long keys past 2**53 exact beside the wildcards' NULLs
        return scan(table.filter(pa.array(kind == 0)), marks)

    return split


def elements_scanner(r: Number, keys: list[str], aggregates: list[Aggregate], numeric: dict[str, np.dtype],
                     pattern: tuple[str, ...], wildcards: bool, consistent: bool, lag: Number, schema: pa.Schema,
                     finish: Finish = finals, since: int | None = None) -> Callable[[pa.Table, pd.DataFrame], pa.Table]:
    """The scan of a chunk's tuples (``keys``, values, ``row_num``, ``wid_x``, ``wid_in`` with a
    WHERE, :data:`wid.aggregate.fca.DEFINES`) and punctuations (``pattern``, ``row_num``,
    ``wid_closed``): per key its emitted windows (their aggregates as ``finish`` makes them of
    the bins) and its late (tuple, window) pairs. A punctuation matches a key when each
    ``pattern`` column equals the key's value (NULL-safe) or, with ``wildcards``, is NULL.
    ``since``: leave out the windows emitted before that row (live mode has them already).

    ``count(*)`` over ``(w - 3, w]``; a wildcard punctuation after row 1 closes the windows up to 3:
    window 1 is emitted at row 1, window 2, defined by row 2 after it, is lost (rows 0 and 2 late for it):

    >>> from wid.aggregate.fca import DEFINES
    >>> schema = pa.schema([(c, pa.int64()) for c in (WID, "n", EMIT_ROW, REVISION, LATE)])
    >>> scan = elements_scanner(3, [], [Aggregate("n", "count")], {}, (), True, False, 0, schema)
    >>> tuples = pa.table({"row_num": [0, 1, 2, 3], WID_X: [1, 4, 2, 6], DEFINES: [True] * 4})
    >>> for row in scan(tuples, pd.DataFrame({"row_num": [1], WID_CLOSED: [3]})).to_pylist():
    ...     print(*row.values())
    1 1 1 0 None
    4 2 None 0 None
    6 2 None 0 None
    2 None None None 0
    2 None None None 2
    """
    kinds = partials(aggregates, numeric)
    pattern = list(pattern)

    def scan(tuples: pa.Table, marks: pd.DataFrame) -> pa.Table:
        windows, definers = windows_of(tuples)
        defined = np.full(len(windows), np.iinfo(np.int64).max)  # the first defining tuple's row_num
        np.minimum.at(defined, np.searchsorted(windows, tuples.column(WID_X).to_numpy()[definers]),
                      tuples.column("row_num").to_numpy()[definers])
        contributing = contributing_rows(tuples).sort_by("row_num")
        if contributing.num_rows == 0:
            return schema.empty_table()
        wildcard = marks[pattern].isna().all(axis=1).to_numpy() & wildcards
        pieces = []
        for rows in by_key(contributing, keys):
            part = contributing.take(pa.array(rows))
            match = np.ones(len(marks), dtype=bool)
            for c in pattern:
                value, unbound = part.column(c)[0].as_py(), marks[c].isna()
                equal = unbound if value is None else (marks[c] == value).fillna(False)
                match &= (equal | (unbound & wildcards)).to_numpy(bool)
            scan_key = _KeyScan(part, windows, defined, marks["row_num"].to_numpy()[match],
                                marks[WID_CLOSED].to_numpy()[match], wildcard[match], r, consistent, lag)
            pieces.extend(scan_key.emitted(kinds, numeric, keys, aggregates, schema, finish, since))
            pieces.append(scan_key.late(keys, schema))
        return pa.concat_tables(pieces) if pieces else schema.empty_table()

    return scan


def _running_max(values: np.ndarray) -> np.ndarray:
    return np.maximum.accumulate(values) if len(values) else values


def _before(at: np.ndarray, reach: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``reach`` of the last punctuation before each ``row`` (none: below every value, in
    ``reach``'s own type, so that longs near 2**62 are never compared as doubles)."""
    i, low = np.searchsorted(at, row, side="left"), lowest(reach.dtype)
    return np.where(i > 0, reach[np.maximum(i - 1, 0)] if len(at) else low, low)


class _KeyScan:
    """One key partition of a chunk: its tuples (in arrival order) and punctuations."""

    def __init__(self, part: pa.Table, windows: np.ndarray, defined: np.ndarray, at: np.ndarray,
                 bounds: np.ndarray, wildcard: np.ndarray, r: Number, consistent: bool, lag: Number = 0):
        self.part, self.windows, self.r, self.consistent, self.lagged = part, windows, r, consistent, bool(lag)
        self.x, self.row = part.column(WID_X).to_numpy(), part.column("row_num").to_numpy()
        order = np.argsort(at, kind="stable")
        self.at = at[order]
        self.reach = _running_max(bounds[order])  # the key's bound after each punctuation
        lagged = ends(bounds[order], -lag) if lag else bounds[order]  # b - L, rounded up to x's type
        self.kept = _running_max(lagged)  # windows below it are late for good (and purged)
        self.kept_all = _running_max(np.where(wildcard[order], lagged, lowest(lagged.dtype)))  # every key's
        self.bound = _before(self.at, self.reach, self.row)
        self.floor = _before(self.at, self.kept, self.row)
        closing = np.searchsorted(self.reach, windows, side="right")  # the first punctuation with b > w
        self.closes = closing < len(at)
        self.lost = _before(self.at, self.kept_all, defined) > windows
        self.emit = np.maximum(self.at[np.minimum(closing, len(at) - 1)] if len(at) else 0, defined)

    def emitted(self, kinds, numeric: dict[str, np.dtype], keys: list[str], aggregates: list[Aggregate],
                schema: pa.Schema, finish: Finish, since: int | None = None) -> list[pa.Table]:
        """processtuple in arrival order (late tuples for their windows after the key's bound - L);
        each window closed by a punctuation emitted on its arrival (or its defining tuple's, when
        that comes later) and the bins purged below every key's bound - L; each revision on its
        tuple's arrival, before the purge of a punctuation right after it; the rest at the end.
        Emissions before row ``since`` are skipped, tuples then admitted with a later one's (a
        purge changes no window at or above its bound: the bins are the same for those)."""
        bins, values = Bins(self.r, kinds, self.x.dtype), columns(self.part, kinds, numeric)
        late = self.x < self.floor
        done, out = 0, []

        def admit(upto: int) -> None:
            arrived = np.arange(done, upto)
            on_time, behind = arrived[~late[arrived]], arrived[late[arrived]]
            for floor in [None] if self.consistent else [None, *np.unique(self.floor[behind])]:
                mine = on_time if floor is None else behind[self.floor[behind] == floor]
                add(bins, self.x[mine], {name: (v[mine], p[mine]) for name, (v, p) in values.items()}, floor)

        def rows(mine: np.ndarray, emit_rows: np.ndarray | None, revisions: np.ndarray) -> pa.Table:
            n = len(mine)
            emit = np.full(n, None, dtype=object) if emit_rows is None else emit_rows.astype(object)
            return output(self.part, keys, self.windows[mine], bins.at(self.windows[mine]), aggregates, schema,
                          finish, **{EMIT_ROW: emit, REVISION: revisions, LATE: np.full(n, None, dtype=object)})

        # windows emitted with no tuple of the key arriving between them are read together: the
        # purges between them only drop bins below windows already emitted
        closed = np.flatnonzero(self.closes & ~self.lost)
        upto_of = np.searchsorted(self.row, self.emit[closed], side="right")  # tuples admitted by then
        order = np.argsort(upto_of, kind="stable")
        closed, upto_of = closed[order], upto_of[order]
        starts = np.flatnonzero(np.r_[True, upto_of[1:] != upto_of[:-1]]) if len(closed) else closed
        events = [(int(upto), 1, mine, self.emit[mine], np.zeros(len(mine), dtype=np.int64))
                  for mine, upto in zip(np.split(closed, starts[1:]), upto_of[starts])]
        events += self.revisions()
        for upto, emission, mine, emit_rows, revisions in sorted(events, key=lambda e: e[:2]):
            if since is not None and emit_rows.max() < since:  # emitted before: skip its reads and purge
                continue
            admit(upto)
            done = upto
            out.append(rows(mine, emit_rows, revisions))
            seen = int(np.searchsorted(self.at, emit_rows.max(), side="right")) if emission else 0
            if seen:
                bins.purge(min(self.kept[seen - 1], self.kept_all[seen - 1]))
        admit(len(self.x))
        rest = np.flatnonzero(~self.closes & ~self.lost)
        out.append(rows(rest, None, np.zeros(len(rest), dtype=np.int64)))
        return out

    def revisions(self) -> list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
        """``(tuples admitted, 0, windows, emit_rows, revisions)`` per tuple with allowed-late
        windows: those in ``[max(a, B - L), min(a + r, B))`` emitted before it arrived."""
        out, count = [], np.zeros(len(self.windows), dtype=np.int64)
        if not self.lagged:  # every window below B is below B - L: nothing to revise
            return out
        after = np.flatnonzero((self.x < self.bound) & ~(self.consistent & (self.x < self.floor)))
        first = np.searchsorted(self.windows, np.maximum(self.x[after], self.floor[after]), side="left")
        stop = np.minimum(np.searchsorted(self.windows, ends(self.x[after], self.r), side="left"),
                          np.searchsorted(self.windows, self.bound[after], side="left"))
        for i, lo, hi in zip(after, first, stop):
            mine = np.arange(lo, hi)
            mine = mine[self.closes[mine] & ~self.lost[mine] & (self.emit[mine] < self.row[i])]
            if len(mine):
                count[mine] += 1
                out.append((int(i) + 1, 0, mine, np.full(len(mine), self.row[i]), count[mine].copy()))
        return out

    def late(self, keys: list[str], schema: pa.Schema) -> pa.Table:
        """One row per dropped (tuple, window): the tuple arrived after the window's punctuation
        (consistent: after any of its windows'), or the window is lost; the other columns NULL."""
        lo = np.searchsorted(self.windows, self.x, side="left")
        hi = np.searchsorted(self.windows, ends(self.x, self.r), side="left")
        late = self.x < self.floor
        upto = np.where(late, hi, lo) if self.consistent else \
            np.clip(np.searchsorted(self.windows, self.floor, side="left"), lo, hi)
        lost = np.concatenate([[0], np.cumsum(self.lost)])
        some = np.flatnonzero((upto > lo) | (lost[hi] > lost[lo]))
        counts = (hi - lo)[some]
        tuple_of = np.repeat(some, counts)
        window = lo[tuple_of] + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        dropped = (window < upto[tuple_of]) | self.lost[window]
        tuple_of, window = tuple_of[dropped], window[dropped]
        n = len(window)
        data = {k: self.part.column(k).take(pa.array(np.zeros(n, dtype=np.int64))) for k in keys}
        data[WID] = pa.array(self.windows[window])
        data[LATE] = pa.array(self.row[tuple_of])
        data.update({name: pa.nulls(n) for name in schema.names if name not in data})
        return pa.table(data).select(schema.names).cast(schema)
