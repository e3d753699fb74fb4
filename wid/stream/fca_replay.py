"""FCA replay: the bins emitted and purged on punctuation (the paper's processpunctuation).

A punctuation with bound ``b`` (``wid_closed``, strict for FCA windows: no later tuple has
``x < b``) completes every window ``w < b``. Per chunk and key partition the scan takes the
tuples and the key's punctuations in arrival order (a punctuation at ``row_num = p`` after
tuple ``p``); with ``B`` = the largest bound before a tuple arrives:

- a tuple is **late** when ``x < B``: it is late for its windows ``w < B`` (generous: the
  bins take it for the others, ``[B, x + r)``) or for all of them (consistent: it is not
  added at all);
- each window ``w`` is emitted at the first punctuation with ``b > w``: ``Bins.at(w)`` with
  that punctuation's ``row_num`` as ``emit_row``; windows no punctuation closes are emitted
  at the end of the stream (``emit_row`` NULL);
- the window-ids are those of the whole stream (docs/semantics.md sections 3.8, 3.9: FCB and FCU positions count
  every tuple, late ones too). A window whose defining tuple (the first to arrive, of any key)
  comes after its key's punctuation is emitted on that tuple's arrival (its ``row_num``);
  the bins are purged only below the bound of every key (wildcard punctuations), and a
  window whose defining tuple comes after such a bound passed it is **lost**: never emitted,
  every contribution to it late.

``late`` holds one row per dropped (tuple, window) contribution, so emitted + late = exact
per window and key; with correct punctuations nothing is late and the results are
``wid.query``'s. Punctuations go to the chunks they touch: to chunk ``c`` those whose
bound falls in it or the chunk before and, per pattern, the first one past it.

Allowed lateness ``L`` (x units) moves what is late for good to the windows ``w < B - L``
(``wid.stream.fcf_replay.Lagged``: ``closed(b - L)``, the bins purged below it too): a tuple's
windows in ``[max(a, B - L), B)`` that were emitted before it arrived are each emitted again on
its arrival, the window's next ``revision`` (the bins then hold every tuple admitted so far);
a window whose defining tuple comes after a wildcard bound ``- L`` passed it is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, LongType, StructField

from wid.aggregate.bins import Bins, add, columns, ends, lowest, output, partials
from wid.aggregate.fca import (CHUNK_ROWS, Chunks, arrow_schema, bins_schema, by_key, chunk_rows_of,
                               contributing_rows, numeric_types, typed, windows_of)
from wid.aggregate.range import Aggregate
from wid.bucket.columns import (EMIT_ROW, REVISION, WID, WID_CLOSED, WID_X, attribute_type, id_units,
                                rattr_value)
from wid.bucket.fca import CHUNK, units
from wid.errors import WidError
from wid.spec.numbers import Number, as_number, times
from wid.stream.punctuation import Generator, Punctuations

#: The row_num of a late tuple (NULL on result rows); 0 = tuple, 1 = punctuation.
_LATE, _KIND, _LAST = "_wid_late", "_wid_kind", "_wid_last"


def replay(compiled, punctuation: Generator | None, allowed_lateness: Number = 0,
           chunk_rows: int = CHUNK_ROWS) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (a slide-by-tuple :class:`wid.query.CompiledQuery`)
    under ``punctuation`` (None: only the end of the stream) and ``allowed_lateness`` (``rattr``
    units, seconds for timestamps): the results are the aggregate's columns plus ``emit_row``
    and ``revision``, ``late`` the stream's columns plus ``wid``. ``chunk_rows`` sizes the
    chunks of the x axis (:func:`wid.aggregate.range.fca.chunk_rows_of`)."""
    tagged, spec, keys, aggregates = compiled.tagged, compiled.spec, compiled.keys, compiled.aggregates
    numeric = numeric_types(tagged, aggregates)
    if numeric is None:
        raise WidError("replay of slide-by-tuple windows holds count, sum, avg, min and max of numbers in its bins; "
                       "query the other aggregates with wid.query")
    r, dtype = units(tagged, spec)
    lag = _lag(tagged, spec, allowed_lateness)
    chunks = chunk_rows_of(tagged, r, keys, aggregates, chunk_rows)
    punctuations = punctuation.punctuations(compiled) if punctuation is not None else Punctuations(
        tagged.select("row_num", F.col(WID_X).alias(WID_CLOSED)).limit(0), (), ((),))
    consistent = punctuation is not None and punctuation.mode == "consistent"
    schema = bins_schema(tagged, r, keys, aggregates, numeric, StructField(EMIT_ROW, LongType()),
                         StructField(REVISION, LongType()), StructField(_LATE, LongType()))
    marks = _marks(punctuations, chunks)
    if lag:
        marks = marks.unionByName(_marks(punctuations, chunks, lag)).distinct()
    events = chunks.rows.withColumn(_KIND, F.lit(0)).unionByName(marks, allowMissingColumns=True)
    scan = _scanner(r, keys, aggregates, numeric, punctuations, consistent, lag, arrow_schema(schema))
    out = events.groupBy(CHUNK).applyInArrow(scan, schema)

    results = typed(out.where(F.col(_LATE).isNull()), tagged, dtype, keys, aggregates, EMIT_ROW, REVISION)
    source = tagged.sparkSession.table(compiled.query.source)
    pairs = out.where(F.col(_LATE).isNotNull()).select(
        F.col(_LATE).alias("row_num"), rattr_value(F.col(WID), dtype).alias(WID))
    return results, source.join(pairs, "row_num").select(*source.columns, WID)


def _lag(tagged: DataFrame, spec, allowed_lateness: Number) -> Number:
    """``allowed_lateness`` in x units; on a double ``x`` a binary fraction (``b - L`` is then
    rounded up exactly, as the ends of :func:`wid.aggregate.bins.ends`)."""
    if not allowed_lateness:
        return 0
    dtype = attribute_type(tagged, spec.rattr)
    lag = times(as_number(allowed_lateness, "allowed_lateness"), id_units(F.col(spec.rattr), dtype, spec)[1])
    if isinstance(dtype, (FloatType, DoubleType)) and Decimal(float(lag)) != lag:
        raise WidError(f"allowed_lateness {allowed_lateness} is not a binary fraction, so w < bound - L on the "
                       f"double {spec.rattr!r} cannot be decided exactly: give one such as 0.5, or CAST "
                       f"{spec.rattr} to a decimal")
    return lag


def _marks(punctuations: Punctuations, chunks: Chunks, lag: Number = 0) -> DataFrame:
    """The punctuations each chunk needs: those whose largest closed window lies in it or in the
    chunk before (its tuples' ``x`` may lie there, at most ``r`` below it) and, per pattern,
    the first one whose bound passes it (it closes all its windows). With ``lag``: the same
    for the bounds ``b - lag`` (the keys' bounds before a tuple, from a superset of either
    selection, compare alike with the chunk's values)."""
    frame = punctuations.frame.select("row_num", *punctuations.pattern, WID_CLOSED)  # bounds of x's type
    bound = F.col(WID_CLOSED) - F.lit(lag) if lag else F.col(WID_CLOSED)
    last = (F.ceil(bound / F.lit(chunks.width)) - 1).cast("long")  # the chunk of w just below b
    own = frame.withColumn(CHUNK, F.explode(F.array(last - 1, last, last + 1))).where(  # (a chunk of margin:
        # chunk_of may round) tuples reach r < width below
        F.col(CHUNK).between(chunks.first, chunks.last))
    firsts = frame.withColumn(_LAST, last).groupBy(*punctuations.pattern, _LAST).agg(
        F.min_by(WID_CLOSED, "row_num").alias(WID_CLOSED), F.min("row_num").alias("row_num"))
    passing = firsts.where(F.col(_LAST) > chunks.first).withColumn(
        CHUNK, F.explode(F.sequence(F.lit(chunks.first).cast("long"), F.least(F.col(_LAST) - 1, F.lit(chunks.last)))))
    return own.unionByName(passing.drop(_LAST)).withColumn(_KIND, F.lit(1))


def _scanner(r: Number, keys: list[str], aggregates: list[Aggregate], numeric: dict[str, np.dtype],
             punctuations: Punctuations, consistent: bool, lag: Number,
             schema: pa.Schema) -> Callable[[pa.Table], pa.Table]:
    """The grouped function: one chunk's tuples and punctuations in, per key its emitted
    windows and its late (tuple, window) pairs out. A punctuation matches a key when each
    pattern column equals the key's value (NULL-safe) or, with ``punctuations.wildcard``, is NULL."""
    kinds = partials(aggregates, numeric)
    pattern, wildcards = list(punctuations.pattern), punctuations.wildcard

    def scan(table: pa.Table) -> pa.Table:
        kind = table.column(_KIND).to_numpy(zero_copy_only=False)
        tuples, marks = table.filter(pa.array(kind == 0)), table.filter(pa.array(kind == 1))
        windows, definers = windows_of(tuples)
        defined = np.full(len(windows), np.iinfo(np.int64).max)  # the first defining tuple's row_num
        np.minimum.at(defined, np.searchsorted(windows, tuples.column(WID_X).to_numpy()[definers]),
                      tuples.column("row_num").to_numpy()[definers])
        contributing = contributing_rows(tuples).sort_by("row_num")
        if contributing.num_rows == 0:
            return schema.empty_table()
        marks = marks.select([*pattern, "row_num", WID_CLOSED]).to_pandas()
        wildcard = marks[pattern].isna().all(axis=1).to_numpy() & wildcards
        pieces = []
        for rows in by_key(contributing, keys):
            part = contributing.take(pa.array(rows))
            match = np.ones(len(marks), dtype=bool)
            for c in pattern:
                value, unbound = part.column(c)[0].as_py(), marks[c].isna()
                match &= ((unbound if value is None else marks[c] == value) | (unbound & wildcards)).to_numpy()
            scan_key = _KeyScan(part, windows, defined, marks["row_num"].to_numpy()[match],
                                marks[WID_CLOSED].to_numpy()[match], wildcard[match], r, consistent, lag)
            pieces.extend(scan_key.emitted(kinds, numeric, keys, aggregates, schema))
            pieces.append(scan_key.late(keys, aggregates, schema))
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
                schema: pa.Schema) -> list[pa.Table]:
        """processtuple in arrival order (late tuples for their windows after the key's bound - L);
        each window closed by a punctuation emitted on its arrival (or its defining tuple's, when
        that comes later) and the bins purged below every key's bound - L; each revision on its
        tuple's arrival, before the purge of a punctuation right after it; the rest at the end."""
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
                          **{EMIT_ROW: emit, REVISION: revisions, _LATE: np.full(n, None, dtype=object)})

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

    def late(self, keys: list[str], aggregates: list[Aggregate], schema: pa.Schema) -> pa.Table:
        """One row per dropped (tuple, window): the tuple arrived after the window's punctuation
        (consistent: after any of its windows'), or the window is lost."""
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
        data.update({a.alias: pa.nulls(n) for a in aggregates})
        data[EMIT_ROW] = pa.nulls(n)
        data[REVISION] = pa.nulls(n)
        data[_LATE] = pa.array(self.row[tuple_of])
        return pa.table(data).select(schema.names).cast(schema)


__all__ = ["replay"]
