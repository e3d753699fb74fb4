"""The stateful steps of live mode (``transformWithStateInPandas``, time mode "None").

Both are window-agnostic: they see ``row_num``, a kind (0 tuple, 1 punctuation, 2 end of
stream), keys, ``wid_lo``/``wid_hi``, values and ``wid_closed``, never the window spec.

- :class:`Sequencer` (one key: the whole stream, narrow rows) checks that ``row_num`` never
  goes backwards across micro-batches and turns the tuples' own marks into punctuations
  on all keys: only the records (a mark above every earlier one) are kept; a mark at
  ``row_num + shift`` beyond the stream seen so far waits in state until the stream passes it.
- :class:`PaneProcessor` (one key per hash bucket of the grouping keys) holds the pane
  partials of its keys and the largest ``wid_closed`` per punctuation pattern. Per
  micro-batch, with ``C`` = the largest window closed for a tuple's keys when it arrives
  (state, then the batch's earlier punctuations): the tuple is late for ``[wid_lo, min(wid_hi, C)]``
  (consistent: for all of it once any part is late) and adds its on-time range to the panes;
  every window a punctuation closes is emitted, ``emit_row`` = the first punctuation of the
  batch closing it (NULL: the end of the stream), and the panes are cut to the open windows.
  Nothing per tuple stays in state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import LongType, StructField, StructType

from wid.aggregate.range import Aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED as CLOSED
from wid.errors import WidError
from wid.stream.panes import HI, LO, finals, merge, partial_names, spread, tuple_partials

TUPLE, PUNCTUATION, END = 0, 1, 2
KIND = "_wid_kind"
NONE = np.iinfo(np.int64).min  # no window closed yet
_RUN, _AT = "_wid_run", "_wid_at"


_INTEGRAL = ("long", "integer", "short", "byte")


def records(frame: pd.DataFrame, schema: StructType) -> list[tuple]:
    """Rows of ``frame`` as tuples of Python values of ``schema``'s types, NULL as None (for a
    state store; whole numbers that pandas holds as floats become ints)."""
    columns = []
    for c, field in zip(frame.columns, schema.fields):
        cast = int if field.dataType.typeName() in _INTEGRAL else (lambda v: v)
        columns.append([None if pd.isna(v) else cast(v) for v in frame[c].tolist()])
    return list(zip(*columns))


def _stack(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``frames`` one after the other, empty ones left out (they would decide no dtype)."""
    kept = [f for f in frames if len(f)]
    return pd.concat(kept, ignore_index=True) if kept else frames[0].iloc[0:0]


def _concat(rows: Iterator[pd.DataFrame], names: list[str]) -> pd.DataFrame:
    """The group's rows in one frame, columns named ``names`` (pandas input renames columns
    whose names start with an underscore)."""
    frame = pd.concat(list(rows), ignore_index=True)
    frame.columns = names
    return frame


class Sequencer(StatefulProcessor):
    """Input ``(row_num, _wid_kind, wid_closed)`` of every stream element; output the
    punctuations on all keys ``(row_num, _wid_kind, wid_closed)`` and the end marker."""

    def __init__(self, shift: int) -> None:
        self.shift = shift

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.last = handle.getValueState("last", "row_num long, kind int, high long")
        self.pending_schema = StructType([StructField("row_num", LongType()), StructField("closed", LongType())])
        self.pending = handle.getListState("pending", self.pending_schema)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        events = _concat(rows, ["row_num", KIND, CLOSED, "one"]).sort_values(["row_num", KIND], kind="stable")
        last = self.last.get() if self.last.exists() else None
        head = (int(events["row_num"].iloc[0]), int(events[KIND].iloc[0]))
        if last is not None and last[1] == END:
            raise WidError(f"wid: row_num {head[0]} arrives after the end-of-stream marker (row_num {last[0]})")
        if last is not None and head <= (last[0], last[1]):
            raise WidError(f"wid: row_num {head[0]} arrives after row_num {last[0]} of an earlier micro-batch "
                           "(row_num must not go backwards)")
        ends = events[KIND] == END
        if ends.any() and (ends.sum() > 1 or not ends.iloc[-1]):
            raise WidError("wid: the end-of-stream marker must be the last element of the stream")
        high = NONE if last is None or last[2] is None else last[2]
        marks = events[events[CLOSED].notna()]
        candidates = _stack([pd.DataFrame(list(self.pending.get()), columns=["row_num", CLOSED]),
                             pd.DataFrame({"row_num": marks["row_num"] + self.shift, CLOSED: marks[CLOSED]})])
        candidates = candidates.astype("int64").sort_values("row_num", kind="stable")
        before = np.maximum.accumulate(np.concatenate([[high], candidates[CLOSED].to_numpy()]))[:-1]
        candidates = candidates[candidates[CLOSED].to_numpy() > before]  # records only
        due = (candidates["row_num"] <= events["row_num"].max()).to_numpy() | bool(ends.any())
        out, waiting = candidates[due], candidates[~due]
        self.pending.put(records(waiting, self.pending_schema)) if len(waiting) else self.pending.clear()
        high = max(high, int(out[CLOSED].max())) if len(out) else high
        self.last.update((int(events["row_num"].iloc[-1]), int(events[KIND].iloc[-1]), None if high == NONE else high))
        punctuations = pd.DataFrame({"row_num": out["row_num"], KIND: PUNCTUATION, CLOSED: out[CLOSED]})
        yield _stack([punctuations, events.loc[ends, ["row_num", KIND, CLOSED]]]).astype(
            {"row_num": "int64", KIND: "int32"})

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Layout:
    """What :class:`PaneProcessor` sees: grouping ``keys``, the punctuation ``pattern`` columns
    and their ``shapes`` (bound together), ``payload`` (the stream's columns, for late rows),
    ``aggregates`` over value columns, ``own`` (tuples punctuate ``pattern`` themselves with
    their ``wid_closed``), ``consistent``, the state and output schemas and the input's ``columns``."""

    keys: tuple[str, ...]
    pattern: tuple[str, ...]
    shapes: tuple[tuple[str, ...], ...]
    payload: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    own: bool
    consistent: bool
    pane_schema: StructType
    closed_schema: StructType
    output: StructType
    columns: tuple[str, ...]


class PaneProcessor(StatefulProcessor):
    """Per hash bucket: the panes and closed windows of its keys; output rows of kind
    ``result`` (keys, ``wid``, aggregates, ``emit_row``) and ``late`` (payload, ``wid``)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.panes = handle.getListState("panes", self.layout.pane_schema)
        self.closed = handle.getListState("closed", self.layout.closed_schema)

    def _shape(self, punctuations: pd.DataFrame, shape: tuple[str, ...]) -> pd.DataFrame:
        """The punctuations whose bound pattern columns are exactly ``shape``."""
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
        found = frame[list(shape)].merge(table[[*shape, CLOSED]], on=list(shape), how="left")[CLOSED]
        return found.fillna(NONE).astype("int64").to_numpy()

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        lay = self.layout
        events = _concat(rows, list(lay.columns))
        end = bool((events[KIND] == END).any())
        events = events[events[KIND] != END].sort_values(["row_num", KIND], kind="stable")
        tuples = events[events[KIND] == TUPLE].reset_index(drop=True)
        punctuations = events[events[KIND] == PUNCTUATION]
        if lay.own:
            punctuations = _stack([punctuations, tuples[tuples[CLOSED].notna()]]).sort_values(
                ["row_num", KIND], kind="stable")
        punctuations = punctuations[["row_num", *lay.pattern, CLOSED]].astype({CLOSED: "int64"})
        names = [n for n, _ in partial_names(list(lay.aggregates))]
        state_closed = pd.DataFrame(list(self.closed.get()), columns=["_wid_shape", *lay.pattern, CLOSED])
        state_panes = pd.DataFrame(list(self.panes.get()), columns=[*lay.keys, LO, HI, *names])

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
            table = _stack([stored.drop(columns="_wid_shape"), mine.drop(columns="row_num")])
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
        fresh = pd.concat([tuples.loc[on, list(lay.keys)], tuple_partials(tuples[on], list(lay.aggregates))], axis=1)
        fresh[LO], fresh[HI] = on_lo[on], hi[on]
        panes = merge(_stack([state_panes, fresh[[*lay.keys, LO, HI, *names]]]),
                      [*lay.keys, LO, HI], list(lay.aggregates))

        # emit every window a punctuation closed, cut the panes to the open ones
        closed = np.full(len(panes), np.iinfo(np.int64).max if end else NONE)
        for sid, shape in enumerate(lay.shapes):
            closed = np.maximum(closed, self._lookup(panes, closed_now[closed_now["_wid_shape"] == sid], shape))
        p_lo, p_hi = panes[LO].to_numpy("int64"), panes[HI].to_numpy("int64")
        row, w = spread(p_lo, np.minimum(p_hi, closed))
        windows = merge(panes.iloc[row][[*lay.keys, *names]].assign(**{WID: w}), [*lay.keys, WID],
                        list(lay.aggregates))
        results = pd.DataFrame({**{k: windows[k] for k in lay.keys}, WID: windows[WID],
                                EMIT_ROW: self._emit_rows(windows, punctuations),
                                **finals(windows, list(lay.aggregates))})
        left = np.zeros(len(panes), dtype=bool) if end else p_hi > closed
        panes = panes[left].assign(**{LO: np.maximum(p_lo, np.minimum(closed, p_hi) + 1)[left]})
        panes = merge(panes, [*lay.keys, LO, HI], list(lay.aggregates))
        self.panes.put(records(panes, lay.pane_schema)) if len(panes) else self.panes.clear()
        stored = closed_now[["_wid_shape", *lay.pattern, CLOSED]]
        self.closed.put(records(stored, lay.closed_schema)) if len(stored) else self.closed.clear()
        yield self._output(results, late)

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
            run = mine.groupby(list(shape), sort=False)[CLOSED].cummax() if shape else mine[CLOSED].cummax()
            firsts = mine.assign(**{_RUN: run}).drop_duplicates([*shape, _RUN], keep="first")
            found = pd.merge_asof(ordered, firsts[["row_num", *shape, _RUN]].sort_values(_RUN, kind="stable"),
                                  left_on=WID, right_on=_RUN, by=list(shape) or None, direction="forward")
            at = pd.Series(found["row_num"].to_numpy(), index=found["_wid_i"].to_numpy())
            best = np.fmin(best, at.reindex(best.index))
        return best

    def _output(self, results: pd.DataFrame, late: pd.DataFrame) -> pd.DataFrame:
        """Both kinds in the output schema (missing columns NULL)."""
        out = _stack([results.assign(kind="result"), late.assign(kind="late")])
        columns = {}
        for field in self.layout.output.fields:
            value = out[field.name] if field.name in out.columns else pd.Series(None, index=out.index, dtype="object")
            if field.dataType.typeName() in ("long", "integer", "short", "byte"):
                value = pd.array(value.astype("object").where(value.notna(), None).tolist(), dtype="Int64")
            columns[field.name] = value
        return pd.DataFrame(columns, index=out.index)

    def close(self) -> None:
        pass
