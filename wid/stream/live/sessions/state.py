"""Live mode's stateful step for session windows: :class:`SessionProcessor`, the
:class:`wid.stream.live.state.PaneProcessor` whose steps 3 and 4 are
:func:`wid.stream.live.sessions.steps.advance_sessions`, with the sessions' state."""

from __future__ import annotations

import pandas as pd
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from wid.bucket.columns import WID
from wid.stream.live.arrival import COUNT
from wid.stream.live.processor import LIST, Variables
from wid.stream.live.sessions.scans import SessionState
from wid.stream.live.sessions.steps import advance_sessions
from wid.stream.live.state import PaneProcessor
from wid.stream.live.windows import Layout
from wid.stream.live.state_rows import SESSIONS, history, packed, unpacked


class SessionProcessor(PaneProcessor):
    """:class:`PaneProcessor` for session windows (``layout.gap``): steps 3 and 4 by
    :func:`wid.stream.live.sessions.steps.advance_sessions`; frames ``panes``: the open sessions
    (keys, partials), ``counts``: the emitted sessions per key; state ``emitted``: their ids,
    starts and lasts, appended as they are emitted (a row per micro-batch:
    :func:`wid.stream.live.state_rows.packed`) and read only when a tuple may touch one."""

    def __init__(self, layout: Layout) -> None:
        super().__init__(layout)
        keys = layout.pane_schema.fields[:len(layout.keys)]
        self.counts_schema = StructType([*keys, StructField(COUNT, LongType())])
        self.arrow = history(StructType([*keys, StructField(WID, LongType()), *layout.pane_schema.fields[-2:]]))

    def variables(self) -> Variables:
        """:meth:`PaneProcessor.variables` and the sessions' ``emitted`` history."""
        return {**super().variables(), "emitted": (LIST, StructType([StructField(SESSIONS, BinaryType())]))}

    def _advance(self, events: pd.DataFrame, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                 end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        frames = self.frames
        state = SessionState(frames.get("panes"), frames.get("counts"),
                             lambda: unpacked((cell for cell, in self.emitted.get()), self.arrow), frames.get("closed"))
        results, late, after, added = advance_sessions(tuples, punctuations, state, self.layout, end)
        for name, frame in (("panes", after.opened), ("counts", after.counts), ("closed", after.bounds)):
            frames.put(name, frame)
        if len(added):
            self.emitted.appendValue((packed(added, self.arrow),))
        return results, late
