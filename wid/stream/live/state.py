"""The stateful step of live mode (``transformWithStateInPandas``, time mode "None", run by
:class:`wid.stream.live.processor.Stateful`).

:class:`PaneProcessor` is window-agnostic: per hash bucket of the grouping keys it sees the
bucket's stream elements, ``row_num`` and a kind each (0 tuple, 1 mark: another bucket's
tuple, 2 punctuation, 3 end of stream), keys, ``wid_lo``/``wid_hi``, values and
``wid_closed``, never the window spec. Its state, per bucket: the panes (partials) of its
keys, the largest ``wid_closed`` per punctuation pattern, the last element seen, the marks
on all keys not due yet, for ROWS windows the tuples counted per partition, for landmark
windows the largest ``wid_lo``; for sessions :class:`wid.stream.live.sessions.state.SessionProcessor`'s;
nothing per tuple; all of it in one value-state row per bucket, read and written once per
micro-batch (:class:`wid.stream.live.state_rows.Frames`).
Arrival order: :mod:`wid.stream.live.arrival`.

Per micro-batch:

1. Order: the batch's first ``(row_num, kind)`` must come after the last one of earlier
   batches (every element a bucket's windows depend on reaches that bucket, so this is the
   order replay sees for them); the end marker comes last.
2. ROWS windows: each tuple's position in its partition gives its ids and the window it
   closes (its own punctuation). Marks on all keys (slack, heartbeat: each tuple that can raise
   the bound reaches every bucket, as itself or as a mark): the records (a mark above every
   earlier one) become punctuations on all keys at ``row_num + shift``; one beyond the stream
   seen so far waits in state until it passes.
3. and 4. (:mod:`wid.stream.live.windows`): with ``C`` the largest window closed for a tuple's
   keys when it arrives, its late ids and on-time pane; every window a punctuation closes
   emitted with its partials and ``emit_row``, the panes cut to the open windows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql.streaming.stateful_processor import TimerValues
from pyspark.sql.types import LongType, NumericType, StructField, StructType

from wid.aggregate.fca import NULLABLE
from wid.bucket.columns import WID_CLOSED as CLOSED
from wid.errors import WidError
from wid.stream.live.arrival import COUNT, arrival_order, check_order, on_all_keys, positions, stack
from wid.stream.live.input import END, KIND, MARK, PUNCTUATION, TUPLE, unpack
from wid.stream.live.processor import VALUE, Variables
from wid.stream.live.windows import NONE, OPEN, Layout, advance
from wid.stream.live.panes import HI, LO
from wid.stream.live.state_rows import INTEGRAL, Frames

#: ROWS and landmark windows: the tuple passes WHERE (every tuple takes a position, and the
#: stream's largest ``wid_lo`` is over every tuple, as replay's Bucket reads it before WHERE).
KEPT = "_wid_kept"
PENDING = StructType([StructField("row_num", LongType()), StructField(CLOSED, LongType())])


def _kept(tuples: pd.DataFrame) -> pd.DataFrame:
    """The tuples the query's WHERE keeps (:data:`KEPT`), renumbered from 0."""
    return tuples[tuples[KEPT].fillna(False).to_numpy(bool)].reset_index(drop=True)


def _events(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """The bucket's elements in one frame, from the Arrow cells :func:`wid.stream.live.input.pack`
    made of them (the cell column is the last: pandas input renames underscore names)."""
    return unpack(cell for frame in rows for cell in frame.iloc[:, -1]).to_pandas(types_mapper=NULLABLE.get)


class PaneProcessor:
    """Per hash bucket: the panes and closed windows of its keys; output rows of kind
    ``result`` (keys, ``wid``, the window's merged partials, ``emit_row``) and ``late``
    (payload, ``wid``). The step :class:`wid.stream.live.processor.Stateful` runs."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        bound = layout.closed_schema[CLOSED].dataType  # a window-id, or a session bound on x
        self.pending_schema = StructType([PENDING["row_num"], StructField(CLOSED, bound)])
        part = [f for f in layout.closed_schema.fields if f.name in layout.bounds.pattern]
        self.counts_schema = StructType([*part, StructField(COUNT, LongType())])

    def variables(self) -> Variables:
        """The bucket's state (see the module doc): one value-state row of frames
        (:class:`wid.stream.live.state_rows.Frames`), set as the attribute ``bucket`` by
        :class:`wid.stream.live.processor.Stateful`."""
        return {"bucket": (VALUE, Frames.SCHEMA)}

    def schemas(self) -> dict[str, StructType]:
        """The bucket's frames: panes, the bound table, the pending marks, and the counts (per
        partition for ROWS windows, of emitted sessions per key for sessions); the last element
        and, for landmark windows, the largest ``wid_lo`` are single rows."""
        lay = self.layout
        return {"panes": lay.pane_schema, "closed": lay.closed_schema, "pending": self.pending_schema,
                "counts": self.counts_schema}

    def _sequence(self, events: pd.DataFrame, end: bool) -> pd.DataFrame:
        """Steps 1 and 2 (state: the last element, the pending marks): the batch's punctuations
        on all keys, ``row_num`` and ``wid_closed``."""
        last = self.frames.row("last")
        check_order(events, last)
        high = NONE if last is None or last[2] is None else last[2]
        due = events.iloc[0:0][["row_num", CLOSED]]
        if self.layout.on_all:
            due, waiting = on_all_keys(events, self.frames.get("pending"), high, self.layout.shift, end)
            self.frames.put("pending", waiting)
            if len(due):
                record = due[CLOSED].max()
                high = max(high, record.item() if isinstance(record, np.generic) else record)  # as a Python value
        self.frames.set_row("last", (int(events["row_num"].iloc[-1]), int(events[KIND].iloc[-1]),
                                     None if high == NONE else high))
        return due

    def handleInputRows(self, key: tuple, rows: Iterator[pd.DataFrame],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        """One micro-batch of bucket ``key``: steps 1-4 of the module doc, one output frame."""
        lay = self.layout
        self.frames = Frames(self.bucket.get(), self.schemas())
        events = arrival_order(_events(rows))
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
        punctuations = arrival_order(punctuations)[["row_num", *lay.bounds.pattern, CLOSED]]
        out = self._output(*self._advance(events, tuples, punctuations, end))
        self.bucket.update(self.frames.cell())
        yield out

    def _advance(self, events: pd.DataFrame, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                 end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Steps 3 and 4 (:func:`wid.stream.live.windows.advance`; state: the panes, the bound
        table): ``(results, late)``."""
        lay = self.layout
        punctuations = punctuations.astype({CLOSED: "int64"})
        top = self._top(events, punctuations) if lay.open else None
        results, late, panes, bounds = advance(tuples, punctuations, self.frames.get("panes"),
                                               self.frames.get("closed"), lay, end, top)
        self.frames.put("panes", panes)
        self.frames.put("closed", bounds)
        return results, late

    def _top(self, events: pd.DataFrame, punctuations: pd.DataFrame) -> int:
        """Open ranges (landmark windows): the largest ``wid_lo`` of the stream so far, over the
        bucket's tuples and the other buckets' marks (state: the value before this batch). A
        punctuation closing a window beyond the largest one at its arrival is an error (which of
        them the rest of the stream opens is unknown while it runs), whatever the batches."""
        seen = events.loc[events[KIND].to_numpy() <= MARK, ["row_num", LO]].dropna()  # in (row_num, kind) order
        before = (self.frames.row("top") or (NONE,))[0]
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
            self.frames.set_row("top", (top,))
        return top

    def _positioned(self, tuples: pd.DataFrame) -> pd.DataFrame:
        """ROWS windows: positions (:func:`positions`, counts in state), the ids and implied
        punctuation from the tagger; then only the tuples kept by WHERE and in a window (hopping
        gaps) go on, as replay's Bucket keeps them."""
        part = list(self.layout.bounds.pattern)
        x, counts = positions(tuples, self.frames.get("counts"), part)
        self.frames.put("counts", counts)
        lo, hi, closed = self.layout.tagger(x)
        return _kept(tuples.assign(**{LO: lo, HI: hi, CLOSED: closed})[lo <= hi])

    def _output(self, results: pd.DataFrame, late: pd.DataFrame) -> pd.DataFrame:
        """Both kinds in the output schema (missing columns NULL)."""
        out = stack([results.assign(kind="result"), late.assign(kind="late")])
        columns = {}
        for field in self.layout.output.fields:
            value = out[field.name] if field.name in out.columns else pd.Series(None, index=out.index, dtype="object")
            if field.dataType.typeName() in INTEGRAL:
                value = value.astype("Int64")
            elif value.dtype.kind == "f" and not isinstance(field.dataType, NumericType):  # NULLs read back as NaN
                value = value.astype(object).where(value.notna(), None)
            columns[field.name] = value
        return pd.DataFrame(columns, index=out.index)
