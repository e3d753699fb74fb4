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
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField

from wid.aggregate.bins import Bins, add, columns, ends, output, partials
from wid.aggregate.fca import (CHUNK_ROWS, Chunks, arrow_schema, bins_schema, by_key, chunk_rows_of, numeric_types,
                               typed, windows_of)
from wid.aggregate.range import Aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED, WID_IN, WID_X, rattr_value
from wid.bucket.fca import CHUNK, units
from wid.errors import WidError
from wid.spec.numbers import Number
from wid.stream.punctuate import Generator, Punctuations

#: The row_num of a late tuple (NULL on result rows); 0 = tuple, 1 = punctuation.
_LATE, _KIND, _LAST = "_wid_late", "_wid_kind", "_wid_last"


def replay(compiled, punctuation: Generator | None, chunk_rows: int = CHUNK_ROWS) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (a slide-by-tuple :class:`wid.query.CompiledQuery`)
    under ``punctuation`` (None: only the end of the stream): the results are the aggregate's
    columns plus ``emit_row``, ``late`` the stream's columns plus ``wid``. ``chunk_rows``
    sizes the chunks of the x axis (:func:`wid.aggregate.range.fca.chunk_rows_of`)."""
    tagged, spec, keys, aggregates = compiled.tagged, compiled.spec, compiled.keys, compiled.aggregates
    numeric = numeric_types(tagged, aggregates)
    if numeric is None:
        raise WidError("replay of slide-by-tuple windows holds count, sum, avg, min and max of numbers in its bins; "
                       "query the other aggregates with wid.query")
    r, dtype = units(tagged, spec)
    chunks = chunk_rows_of(tagged, r, keys, aggregates, chunk_rows)
    punctuations = punctuation.punctuations(compiled) if punctuation is not None else Punctuations(
        tagged.select("row_num", F.col(WID_X).alias(WID_CLOSED)).limit(0), (), ((),))
    consistent = punctuation is not None and punctuation.mode == "consistent"
    schema = bins_schema(tagged, r, keys, aggregates, numeric, StructField(EMIT_ROW, LongType()),
                         StructField(_LATE, LongType()))
    events = chunks.rows.withColumn(_KIND, F.lit(0)).unionByName(_marks(punctuations, chunks),
                                                                 allowMissingColumns=True)
    scan = _scanner(r, keys, aggregates, numeric, punctuations, consistent, arrow_schema(schema))
    out = events.groupBy(CHUNK).applyInArrow(scan, schema)

    results = typed(out.where(F.col(_LATE).isNull()), tagged, dtype, keys, aggregates, EMIT_ROW)
    source = tagged.sparkSession.table(compiled.query.source)
    pairs = out.where(F.col(_LATE).isNotNull()).select(
        F.col(_LATE).alias("row_num"), rattr_value(F.col(WID), dtype).alias(WID))
    return results, source.join(pairs, "row_num").select(*source.columns, WID)


def _marks(punctuations: Punctuations, chunks: Chunks) -> DataFrame:
    """The punctuations each chunk needs: those whose largest closed window lies in it or in the
    chunk before (its tuples' ``x`` may lie there, at most ``r`` below it) and, per pattern,
    the first one whose bound passes it (it closes all its windows)."""
    frame = punctuations.frame.select("row_num", *punctuations.pattern, WID_CLOSED)  # bounds of x's type
    last = (F.ceil(F.col(WID_CLOSED) / F.lit(chunks.width)) - 1).cast("long")  # the chunk of w just below b
    own = frame.withColumn(CHUNK, F.explode(F.array(last - 1, last, last + 1))).where(  # (a chunk of margin:
        # chunk_of may round) tuples reach r < width below
        F.col(CHUNK).between(chunks.first, chunks.last))
    firsts = frame.withColumn(_LAST, last).groupBy(*punctuations.pattern, _LAST).agg(
        F.min_by(WID_CLOSED, "row_num").alias(WID_CLOSED), F.min("row_num").alias("row_num"))
    passing = firsts.where(F.col(_LAST) > chunks.first).withColumn(
        CHUNK, F.explode(F.sequence(F.lit(chunks.first).cast("long"), F.least(F.col(_LAST) - 1, F.lit(chunks.last)))))
    return own.unionByName(passing.drop(_LAST)).withColumn(_KIND, F.lit(1))


def _scanner(r: Number, keys: list[str], aggregates: list[Aggregate], numeric: dict[str, np.dtype],
             punctuations: Punctuations, consistent: bool, schema: pa.Schema) -> Callable[[pa.Table], pa.Table]:
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
        contributing = tuples.filter(tuples.column(WID_IN)).sort_by("row_num")
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
                                marks[WID_CLOSED].to_numpy()[match], wildcard[match], r, consistent)
            pieces.extend(scan_key.emitted(kinds, numeric, keys, aggregates, schema))
            pieces.append(scan_key.late(keys, aggregates, schema))
        return pa.concat_tables(pieces) if pieces else schema.empty_table()

    return scan


def _running_max(values: np.ndarray) -> np.ndarray:
    return np.maximum.accumulate(values) if len(values) else values


def _before(at: np.ndarray, reach: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``reach`` of the last punctuation before each ``row`` (-inf: none)."""
    i = np.searchsorted(at, row, side="left")
    return np.where(i > 0, reach[np.maximum(i - 1, 0)] if len(at) else 0, -np.inf)


class _KeyScan:
    """One key partition of a chunk: its tuples (in arrival order) and punctuations."""

    def __init__(self, part: pa.Table, windows: np.ndarray, defined: np.ndarray, at: np.ndarray,
                 bounds: np.ndarray, wildcard: np.ndarray, r: Number, consistent: bool):
        self.part, self.windows, self.r, self.consistent = part, windows, r, consistent
        self.x, self.row = part.column(WID_X).to_numpy(), part.column("row_num").to_numpy()
        order = np.argsort(at, kind="stable")
        self.at = at[order]
        self.reach = _running_max(bounds[order])  # the key's bound after each punctuation
        self.everyone = _running_max(np.where(wildcard[order], bounds[order], -np.inf))  # every key's
        self.bound = _before(self.at, self.reach, self.row)
        closing = np.searchsorted(self.reach, windows, side="right")  # the first punctuation with b > w
        self.closes = closing < len(at)
        self.lost = _before(self.at, self.everyone, defined) > windows
        self.emit = np.maximum(self.at[np.minimum(closing, len(at) - 1)] if len(at) else 0, defined)

    def emitted(self, kinds, numeric: dict[str, np.dtype], keys: list[str], aggregates: list[Aggregate],
                schema: pa.Schema) -> list[pa.Table]:
        """processtuple in arrival order (late tuples for their windows after the key's bound);
        each window closed by a punctuation emitted on its arrival (or its defining tuple's, when
        that comes later) and the bins purged below every key's bound; the rest at the end."""
        bins, values = Bins(self.r, kinds, self.x.dtype), columns(self.part, kinds, numeric)
        late = self.x < self.bound
        done, out = 0, []

        def admit(upto: int) -> None:
            arrived = np.arange(done, upto)
            on_time, behind = arrived[~late[arrived]], arrived[late[arrived]]
            for floor in [None] if self.consistent else [None, *np.unique(self.bound[behind])]:
                mine = on_time if floor is None else behind[self.bound[behind] == floor]
                add(bins, self.x[mine], {name: (v[mine], p[mine]) for name, (v, p) in values.items()}, floor)

        def rows(mine: np.ndarray, emit_rows: np.ndarray | None) -> pa.Table:
            n = len(mine)
            emit = np.full(n, None, dtype=object) if emit_rows is None else emit_rows.astype(object)
            return output(self.part, keys, self.windows[mine], bins.at(self.windows[mine]), aggregates, schema,
                          **{EMIT_ROW: emit, _LATE: np.full(n, None, dtype=object)})

        # windows emitted with no tuple of the key arriving between them are read together: the
        # purges between them only drop bins below windows already emitted
        closed = np.flatnonzero(self.closes & ~self.lost)
        upto_of = np.searchsorted(self.row, self.emit[closed], side="right")  # tuples admitted by then
        order = np.argsort(upto_of, kind="stable")
        closed, upto_of = closed[order], upto_of[order]
        starts = np.flatnonzero(np.r_[True, upto_of[1:] != upto_of[:-1]]) if len(closed) else closed
        for mine, upto in zip(np.split(closed, starts[1:]), upto_of[starts]):
            admit(int(upto))
            done = int(upto)
            out.append(rows(mine, self.emit[mine]))
            seen = int(np.searchsorted(self.at, self.emit[mine].max(), side="right"))
            if seen:
                bins.purge(min(self.reach[seen - 1], self.everyone[seen - 1]))
        admit(len(self.x))
        out.append(rows(np.flatnonzero(~self.closes & ~self.lost), None))
        return out

    def late(self, keys: list[str], aggregates: list[Aggregate], schema: pa.Schema) -> pa.Table:
        """One row per dropped (tuple, window): the tuple arrived after the window's punctuation
        (consistent: after any of its windows'), or the window is lost."""
        lo = np.searchsorted(self.windows, self.x, side="left")
        hi = np.searchsorted(self.windows, ends(self.x, self.r), side="left")
        late = self.x < self.bound
        upto = np.where(late, hi, lo) if self.consistent else \
            np.clip(np.searchsorted(self.windows, self.bound, side="left"), lo, hi)
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
        data[_LATE] = pa.array(self.row[tuple_of])
        return pa.table(data).select(schema.names).cast(schema)


__all__ = ["replay"]
