"""Live mode's stateful step for session windows: :class:`SessionProcessor`, the
:class:`wid.stream.live.state.PaneProcessor` whose steps 3 and 4 are
:func:`wid.stream.live.sessions.steps.advance_sessions`, with the sessions' state."""

from __future__ import annotations

import pandas as pd
from pyspark.sql.types import LongType, StructField, StructType

from wid.stream.live.arrival import COUNT
from wid.stream.live.sessions.scans import SessionState
from wid.stream.live.sessions.steps import advance_sessions
from wid.stream.live.state import PaneProcessor
from wid.stream.live.windows import Layout


class SessionProcessor(PaneProcessor):
    """:class:`PaneProcessor` for session windows (``layout.gap``): steps 3 and 4 by
    :func:`wid.stream.live.sessions.steps.advance_sessions`; frames ``panes``: the open sessions
    (keys, partials; with allowed lateness every kept session, its id and revision), ``counts``:
    the emitted sessions per key (its next id)."""

    def __init__(self, layout: Layout) -> None:
        super().__init__(layout)
        keys = layout.pane_schema.fields[:len(layout.keys)]
        self.counts_schema = StructType([*keys, StructField(COUNT, LongType())])

    def _advance(self, events: pd.DataFrame, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                 end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        frames = self.frames
        state = SessionState(frames.get("panes"), frames.get("counts"), frames.get("closed"))
        results, late, after = advance_sessions(tuples, punctuations, state, self.layout, end)
        for name, frame in (("panes", after.opened), ("counts", after.counts), ("closed", after.bounds)):
            frames.put(name, frame)
        return results, late
