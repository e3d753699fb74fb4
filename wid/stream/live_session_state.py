"""Live mode's stateful step for session windows: :class:`SessionProcessor`, the
:class:`wid.stream.live_state.PaneProcessor` whose steps 3 and 4 are
:func:`wid.stream.live_sessions.advance_sessions`, with the sessions' state."""

from __future__ import annotations

import pandas as pd
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from wid.bucket.columns import WID
from wid.stream.live_arrival import COUNT
from wid.stream.live_processor import LIST, Variables
from wid.stream.live_sessions import SessionState, advance_sessions
from wid.stream.live_state import PaneProcessor
from wid.stream.live_windows import Layout
from wid.stream.state_rows import SESSIONS, history, packed, records, state_frame, unpacked


class SessionProcessor(PaneProcessor):
    """:class:`PaneProcessor` for session windows (``layout.gap``): steps 3 and 4 by
    :func:`wid.stream.live_sessions.advance_sessions`; state ``panes``: the open sessions
    (keys, partials), ``counts``: the emitted sessions per key, ``emitted``: their ids, starts
    and lasts, appended as they are emitted (a row per micro-batch:
    :func:`wid.stream.state_rows.packed`) and read only when a tuple may touch one."""

    def __init__(self, layout: Layout) -> None:
        super().__init__(layout)
        keys = layout.pane_schema.fields[:len(layout.keys)]
        self.counts_schema = StructType([*keys, StructField(COUNT, LongType())])
        self.arrow = history(StructType([*keys, StructField(WID, LongType()), *layout.pane_schema.fields[-2:]]))

    def variables(self) -> Variables:
        """:meth:`PaneProcessor.variables` and the sessions' ``counts`` and ``emitted``."""
        return {**super().variables(), "counts": (LIST, self.counts_schema),
                "emitted": (LIST, StructType([StructField(SESSIONS, BinaryType())]))}

    def _advance(self, events: pd.DataFrame, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                 end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        lay = self.layout
        state = SessionState(state_frame(self.panes.get(), lay.pane_schema),
                             state_frame(self.counts.get(), self.counts_schema),
                             lambda: unpacked((cell for cell, in self.emitted.get()), self.arrow),
                             state_frame(self.closed.get(), lay.closed_schema))
        results, late, after, added = advance_sessions(tuples, punctuations, state, lay, end)
        for variable, frame, schema in ((self.panes, after.opened, lay.pane_schema),
                                        (self.counts, after.counts, self.counts_schema),
                                        (self.closed, after.bounds, lay.closed_schema)):
            variable.put(records(frame, schema)) if len(frame) else variable.clear()
        if len(added):
            self.emitted.appendValue((packed(added, self.arrow),))
        return results, late
