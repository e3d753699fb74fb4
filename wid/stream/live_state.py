"""The stateful step of live mode (``transformWithStateInPandas``, time mode "None").

:class:`PaneProcessor` is window-agnostic: per hash bucket of the grouping keys it sees the
bucket's stream elements, ``row_num`` and a kind each (0 tuple, 1 mark: another bucket's
tuple, 2 punctuation, 3 end of stream), keys, ``wid_lo``/``wid_hi``, values and
``wid_closed``, never the window spec. Its state, per bucket: the panes (partials) of its
keys, the largest ``wid_closed`` per punctuation pattern, the last element seen, the marks
on all keys not due yet, for ROWS windows the tuples counted per partition, for landmark
windows the largest ``wid_lo``; nothing per tuple. Arrival order: :mod:`wid.stream.live_arrival`.

Per micro-batch:

1. Order: the batch's first ``(row_num, kind)`` must come after the last one of earlier
   batches (every element a bucket's windows depend on reaches that bucket, so this is the
   order replay sees for them); the end marker comes last.
2. ROWS windows: each tuple's position in its partition gives its ids and the window it
   closes (its own punctuation). Marks on all keys (slack, heartbeat: each tuple that can raise
   the bound reaches every bucket, as itself or as a mark): the records (a mark above every
   earlier one) become punctuations on all keys at ``row_num + shift``; one beyond the stream
   seen so far waits in state until it passes.
3. With ``C`` = the largest window closed for a tuple's keys when it arrives (state, then the
   batch's earlier punctuations): the tuple is late for ``[wid_lo, min(wid_hi, C)]``
   (consistent: for all of it once any part is late) and adds its on-time range to the panes.
4. Every window a punctuation closes is emitted with its partials, ``emit_row`` = the first
   punctuation of the batch closing it (NULL: the end of the stream); the panes are cut to
   the open windows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle, TimerValues
from pyspark.sql.types import LongType, NumericType, StructField, StructType

from wid.aggregate.range import Aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED as CLOSED
from wid.errors import WidError
from wid.stream.live_arrival import COUNT, check_order, matched, on_all_keys, positions, stack
from wid.stream.live_input import END, KIND, MARK, PUNCTUATION, TUPLE, unpack
from wid.stream.panes import HI, LO, merge, partial_names, spread, tuple_partials

NONE = np.iinfo(np.int64).min  # no window closed yet
OPEN = np.iinfo(np.int64).max - 1  # wid_hi of an open range (landmark windows)
#: ROWS and landmark windows: the tuple passes WHERE (every tuple takes a position, and the
#: stream's largest ``wid_lo`` is over every tuple, as replay's Bucket reads it before WHERE).
KEPT = "_wid_kept"
#: Arrival positions -> ``(wid_lo, wid_hi, wid_closed)`` (:meth:`wid.spec.windows.TupleSliding.tag_positions`).
Tagger = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
_RUN, _AT = "_wid_run", "_wid_at"
_INTEGRAL = ("long", "integer", "short", "byte")
#: Arrow's integers as pandas' nullable ones: a NULL (a mark's payload) keeps longs exact.
_NULLABLE = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
             pa.int64(): pd.Int64Dtype()}
_PENDING = StructType([StructField("row_num", LongType()), StructField(CLOSED, LongType())])


def records(frame: pd.DataFrame, schema: StructType) -> list[tuple]:
    """Rows of ``frame`` as tuples of Python values of ``schema``'s types, NULL as None (for a
    state store; whole numbers that pandas holds as floats become ints)."""
    columns = []
    for c, field in zip(frame.columns, schema.fields):
        cast = int if field.dataType.typeName() in _INTEGRAL else (lambda v: v)
        columns.append([None if pd.isna(v) else cast(v) for v in frame[c].tolist()])
    return list(zip(*columns))


def state_frame(rows: Iterable[tuple], schema: StructType) -> pd.DataFrame:
    """State rows (tuples of ``schema``'s fields) as a frame; whole numbers as pandas' nullable
    integers, so that a NULL among longs does not turn them into doubles (inexact past 2**53).

    >>> state_frame([(2**53 + 1,), (None,)], StructType([StructField("n", LongType())]))["n"].tolist()
    [9007199254740993, <NA>]
    """
    rows = list(rows)
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    return pd.DataFrame({f.name: pd.array(list(v), dtype="Int64") if f.dataType.typeName() in _INTEGRAL
                         else pd.Series(list(v), dtype=None if rows else object)
                         for f, v in zip(schema.fields, columns)})


def _kept(tuples: pd.DataFrame) -> pd.DataFrame:
    """The tuples the query's WHERE keeps (:data:`KEPT`), renumbered from 0."""
    return tuples[tuples[KEPT].fillna(False).to_numpy(bool)].reset_index(drop=True)


def _events(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """The bucket's elements in one frame, from the Arrow cells :func:`wid.stream.live_input.pack`
    made of them (the cell column is the last: pandas input renames underscore names)."""
    return unpack(cell for frame in rows for cell in frame.iloc[:, -1]).to_pandas(types_mapper=_NULLABLE.get)


@dataclass(frozen=True)
class Layout:
    """What :class:`PaneProcessor` sees: grouping ``keys``, the punctuation ``pattern`` columns
    and their ``shapes`` (bound together), ``payload`` (the stream's columns, for late rows),
    ``aggregates`` over value columns, ``own`` (tuples punctuate ``pattern`` themselves with
    their ``wid_closed``), ``on_all`` (tuples' ``wid_closed`` are marks on all keys, at
    ``row_num + shift``), ``consistent``, the state and output schemas; ``tagger`` (ROWS
    windows): ids and implied punctuation of arrival positions, counted here per ``pattern``
    value (the partition) in ``row_num`` order, the tuples' own marks; ``open``: ranges have an
    open end (landmark windows, ``wid_hi`` NULL), closed at the largest ``wid_lo`` seen;
    ``wildcard``: a NULL in a pattern column binds every value (else it is a value of its own)."""

    keys: tuple[str, ...]
    pattern: tuple[str, ...]
    shapes: tuple[tuple[str, ...], ...]
    payload: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    own: bool
    on_all: bool
    shift: int
    consistent: bool
    pane_schema: StructType
    closed_schema: StructType
    output: StructType
    tagger: Tagger | None = None
    open: bool = False
    wildcard: bool = True


class PaneProcessor(StatefulProcessor):
    """Per hash bucket: the panes and closed windows of its keys; output rows of kind
    ``result`` (keys, ``wid``, the window's merged partials, ``emit_row``) and ``late``
    (payload, ``wid``)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def init(self, handle: StatefulProcessorHandle) -> None:
        """The bucket's state variables (see the module doc); the counts of ROWS partitions and
        the largest ``wid_lo`` of open ranges only for those kinds."""
        self.panes = handle.getListState("panes", self.layout.pane_schema)
        if self.layout.tagger is not None:
            part = [f for f in self.layout.closed_schema.fields if f.name in self.layout.pattern]
            self.counts_schema = StructType([*part, StructField(COUNT, LongType())])
            self.counts = handle.getListState("counts", self.counts_schema)
        self.closed = handle.getListState("closed", self.layout.closed_schema)
        self.last = handle.getValueState("last", "row_num long, kind int, high long")
        self.pending = handle.getListState("pending", _PENDING)
        if self.layout.open:
            self.top = handle.getValueState("top", "top long")  # the largest wid_lo so far

    def _shape(self, punctuations: pd.DataFrame, shape: tuple[str, ...]) -> pd.DataFrame:
        """The punctuations whose bound pattern columns are exactly ``shape`` (all of them when
        NULL is no wildcard: one shape, a NULL key a key of its own)."""
        if not self.layout.wildcard:
            return punctuations
        keep = np.ones(len(punctuations), dtype=bool)
        for c in self.layout.pattern:
            keep &= punctuations[c].notna().to_numpy() if c in shape else punctuations[c].isna().to_numpy()
        return punctuations[keep]

    def _lookup(self, frame: pd.DataFrame, table: pd.DataFrame, shape: tuple[str, ...]) -> np.ndarray:
        """Per row of ``frame``: ``table``'s ``wid_closed`` for the row's ``shape`` values (NONE if absent)."""
        if table.empty:
            return np.full(len(frame), NONE)
        if not shape:
            return np.full(len(frame), int(table[CLOSED].max()))
        return matched(frame, table, list(shape), CLOSED).fillna(NONE).astype("int64").to_numpy()

    def _sequence(self, events: pd.DataFrame, end: bool) -> pd.DataFrame:
        """Steps 1 and 2 (state: the last element, the pending marks): the batch's punctuations
        on all keys, ``row_num`` and ``wid_closed``."""
        last = self.last.get() if self.last.exists() else None
        check_order(events, last)
        high = NONE if last is None or last[2] is None else last[2]
        due = events.iloc[0:0][["row_num", CLOSED]]
        if self.layout.on_all:
            pending = state_frame(self.pending.get(), _PENDING)
            due, waiting = on_all_keys(events, pending, high, self.layout.shift, end)
            self.pending.put(records(waiting, _PENDING)) if len(waiting) else self.pending.clear()
            high = max(high, int(due[CLOSED].max())) if len(due) else high
        self.last.update((int(events["row_num"].iloc[-1]), int(events[KIND].iloc[-1]), None if high == NONE else high))
        return due

    def handleInputRows(self, key: tuple, rows: Iterator[pd.DataFrame],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        """One micro-batch of bucket ``key``: steps 1-4 of the module doc, one output frame."""
        lay = self.layout
        events = _events(rows).sort_values(["row_num", KIND], kind="stable")
        end = bool((events[KIND] == END).any())
        on_all = self._sequence(events, end)
        tuples = events[events[KIND] == TUPLE].reset_index(drop=True)
        if lay.tagger is not None:
            tuples = self._positioned(tuples)
        if lay.open:
            tuples = _kept(tuples).assign(**{HI: OPEN})
        punctuations = stack([events[events[KIND] == PUNCTUATION], on_all.assign(**{KIND: PUNCTUATION})])
        if lay.own:
            punctuations = stack([punctuations, tuples[tuples[CLOSED].notna()]])
        punctuations = punctuations.sort_values(["row_num", KIND], kind="stable")[
            ["row_num", *lay.pattern, CLOSED]].astype({CLOSED: "int64"})
        top = self._top(events, punctuations) if lay.open else None
        names = [n for n, _ in partial_names(list(lay.aggregates))]
        state_closed = state_frame(self.closed.get(), lay.closed_schema)
        state_panes = state_frame(self.panes.get(), lay.pane_schema)

        # C: the largest window closed for each tuple's keys when it arrives
        c = np.full(len(tuples), NONE)
        closed_tables = []
        for sid, shape in enumerate(lay.shapes):
            mine = self._shape(punctuations, shape)
            stored = state_closed[state_closed["_wid_shape"] == sid]
            c = np.maximum(c, self._lookup(tuples, stored, shape))
            if len(mine) and len(tuples):
                both = pd.concat([tuples[["row_num", *shape]].assign(**{KIND: TUPLE, _RUN: NONE, _AT: tuples.index}),
                                  mine[["row_num", *shape]].assign(**{KIND: PUNCTUATION, _RUN: mine[CLOSED], _AT: -1})],
                                 ignore_index=True).sort_values(["row_num", KIND], kind="stable")
                run = (both.groupby(list(shape), dropna=False, sort=False)[_RUN].cummax() if shape
                       else both[_RUN].cummax())
                at = both[_AT].to_numpy() >= 0
                c[both[_AT].to_numpy()[at]] = np.maximum(c[both[_AT].to_numpy()[at]], run.to_numpy()[at])
            table = stack([stored.drop(columns="_wid_shape"), mine.drop(columns="row_num")])
            if len(table):
                table = (table.groupby(list(lay.pattern), dropna=False, sort=False)[CLOSED].max().reset_index()
                         if lay.pattern else table[[CLOSED]].max().to_frame().T)
                closed_tables.append(table.assign(_wid_shape=sid))
        closed_now = pd.concat(closed_tables, ignore_index=True) if closed_tables else state_closed

        # late contributions and on-time panes
        lo, hi = tuples[LO].to_numpy("int64"), tuples[HI].to_numpy("int64")
        late_any = c >= lo
        if lay.consistent:
            on_lo, late_hi = np.where(late_any, hi + 1, lo), hi
        else:
            on_lo, late_hi = np.maximum(lo, c + 1), np.minimum(hi, c)
        late_at = np.flatnonzero(late_any)
        row, w = spread(lo[late_at], late_hi[late_at])
        late = tuples.iloc[late_at[row]][list(lay.payload)].reset_index(drop=True).assign(**{WID: w})
        on = on_lo <= hi
        fresh = pd.concat([tuples.loc[on, list(lay.keys)],
                           tuple_partials(tuples[on], list(lay.aggregates), lay.pane_schema)], axis=1)
        fresh[LO], fresh[HI] = on_lo[on], hi[on]
        panes = merge(stack([state_panes, fresh[[*lay.keys, LO, HI, *names]]]),
                      [*lay.keys, LO, HI], list(lay.aggregates))

        # emit every window a punctuation closed, cut the panes to the open ones
        closed = np.full(len(panes), np.iinfo(np.int64).max if end else NONE)
        for sid, shape in enumerate(lay.shapes):
            closed = np.maximum(closed, self._lookup(panes, closed_now[closed_now["_wid_shape"] == sid], shape))
        p_lo, p_hi = panes[LO].to_numpy("int64"), panes[HI].to_numpy("int64")
        if top is not None:  # an open range ends, for now (and at the end of the stream), at the largest wid_lo
            closed = np.where(p_hi == OPEN, np.minimum(closed, top), closed)
        row, w = spread(p_lo, np.minimum(p_hi, closed))
        windows = merge(panes.iloc[row][[*lay.keys, *names]].assign(**{WID: w}), [*lay.keys, WID],
                        list(lay.aggregates))
        results = windows.assign(**{EMIT_ROW: self._emit_rows(windows, punctuations)})
        left = np.zeros(len(panes), dtype=bool) if end else p_hi > closed
        panes = panes[left].assign(**{LO: np.maximum(p_lo, np.minimum(closed, p_hi) + 1)[left]})
        panes = merge(panes, [*lay.keys, LO, HI], list(lay.aggregates))
        self.panes.put(records(panes, lay.pane_schema)) if len(panes) else self.panes.clear()
        stored = closed_now[["_wid_shape", *lay.pattern, CLOSED]]
        self.closed.put(records(stored, lay.closed_schema)) if len(stored) else self.closed.clear()
        yield self._output(results, late)

    def _top(self, events: pd.DataFrame, punctuations: pd.DataFrame) -> int:
        """Open ranges (landmark windows): the largest ``wid_lo`` of the stream so far, over the
        bucket's tuples and the other buckets' marks (state: the value before this batch). A
        punctuation closing a window beyond the largest one at its arrival is an error (which of
        them the rest of the stream opens is unknown while it runs), whatever the batches."""
        seen = events.loc[events[KIND].to_numpy() <= MARK, ["row_num", LO]].dropna()  # in (row_num, kind) order
        before = self.top.get()[0] if self.top.exists() else NONE
        running = np.maximum.accumulate(np.concatenate([[before], seen[LO].to_numpy("int64")]))
        at = np.searchsorted(seen["row_num"].to_numpy("int64"), punctuations["row_num"].to_numpy("int64"), "right")
        beyond = np.flatnonzero(punctuations[CLOSED].to_numpy("int64") > running[at])
        if len(beyond):
            i = beyond[0]
            raise WidError(f"wid: a punctuation at row_num {int(punctuations['row_num'].iloc[i])} closes window "
                           f"{int(punctuations[CLOSED].iloc[i])} of a landmark window, beyond the stream's largest "
                           f"window so far ({int(running[at[i]])}): live mode cannot tell which of them the rest "
                           "of the stream opens (replay it, or punctuate from the data: slack, ordered_by, "
                           "heartbeat on the data clock)")
        top = int(running[-1])
        if top != NONE:
            self.top.update((top,))
        return top

    def _positioned(self, tuples: pd.DataFrame) -> pd.DataFrame:
        """ROWS windows: positions (:func:`positions`, counts in state), the ids and implied
        punctuation from the tagger; then only the tuples kept by WHERE and in a window (hopping
        gaps) go on, as replay's Bucket keeps them."""
        part = list(self.layout.pattern)
        x, counts = positions(tuples, state_frame(self.counts.get(), self.counts_schema), part)
        self.counts.put(records(counts, self.counts_schema)) if len(counts) else self.counts.clear()
        lo, hi, closed = self.layout.tagger(x)
        return _kept(tuples.assign(**{LO: lo, HI: hi, CLOSED: closed})[lo <= hi])

    def _emit_rows(self, windows: pd.DataFrame, punctuations: pd.DataFrame) -> pd.Series:
        """The first punctuation of the batch (matching the keys) whose running max reaches each
        window; NULL when none (closed by the end of the stream)."""
        best = pd.Series(np.nan, index=windows.index)
        if windows.empty:
            return best
        ordered = windows[[*self.layout.keys, WID]].assign(_wid_i=windows.index).sort_values(WID, kind="stable")
        for shape in self.layout.shapes:
            mine = self._shape(punctuations, shape)
            if mine.empty:
                continue
            closed = mine.groupby(list(shape), dropna=False, sort=False)[CLOSED] if shape else mine[CLOSED]
            run = closed.cummax()
            firsts = mine.assign(**{_RUN: run.astype("int64")}).drop_duplicates([*shape, _RUN], keep="first")
            found = pd.merge_asof(ordered, firsts[["row_num", *shape, _RUN]].sort_values(_RUN, kind="stable"),
                                  left_on=WID, right_on=_RUN, by=list(shape) or None, direction="forward")
            at = pd.Series(found["row_num"].to_numpy(), index=found["_wid_i"].to_numpy())
            best = np.fmin(best, at.reindex(best.index))
        return best

    def _output(self, results: pd.DataFrame, late: pd.DataFrame) -> pd.DataFrame:
        """Both kinds in the output schema (missing columns NULL)."""
        out = stack([results.assign(kind="result"), late.assign(kind="late")])
        columns = {}
        for field in self.layout.output.fields:
            value = out[field.name] if field.name in out.columns else pd.Series(None, index=out.index, dtype="object")
            if field.dataType.typeName() in _INTEGRAL:
                value = value.astype("Int64")
            elif value.dtype.kind == "f" and not isinstance(field.dataType, NumericType):  # NULLs read back as NaN
                value = value.astype(object).where(value.notna(), None)
            columns[field.name] = value
        return pd.DataFrame(columns, index=out.index)

    def close(self) -> None:
        """Nothing to release: the state lives in the state store."""
