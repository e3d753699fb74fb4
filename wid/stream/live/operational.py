"""Live mode's stateful step for operational (SPL, Flink) windows: :class:`OperationalProcessor`,
the :class:`wid.stream.live.state.PaneProcessor` whose steps 3 and 4 scan the operator's buffers.

An operational window is a FIFO buffer fed in arrival order that fires on its own policies;
nothing is ever late. Per bucket and micro-batch the step runs replay's event-by-event scan
(:class:`wid.bucket.positions.LiveScanner`: SPL's :class:`wid.bucket.spl.scan.Scanner`, Flink's
:class:`wid.bucket.flink.scan.Buffers`) over the batch's rows, resumed from the state the last
batch left, and emits each window as it fires: its tuples then (those the query's WHERE keeps)
merged into partials per grouping keys, with ``emit_row`` the row whose arrival fired it (NULL:
the end of the stream). State (in the bucket's frames): the scan's plain values (buffers,
numbering, clock, counters) and the rows it still holds: the tuples in a buffer (and, for SPL
partition eviction, each subwindow's last insertion); not the tuples that left.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql.types import StructType

from wid.bucket.columns import EMIT_ROW, WID
from wid.bucket.positions import LiveScan, LiveScanner
from wid.stream.live.arrival import stack
from wid.stream.live.state import KEPT, PaneProcessor
from wid.stream.live.windows import Layout
from wid.stream.live.panes import merge, tuple_partials


class OperationalProcessor(PaneProcessor):
    """:class:`PaneProcessor` for operational windows (``scan``); frame ``held``: the rows of
    ``events`` (the step's input schema) the scan still holds, first in the next batch's rows;
    row ``scan``: the scan's values (:meth:`LiveScanner.state`)."""

    def __init__(self, layout: Layout, events: StructType, scan: LiveScan) -> None:
        super().__init__(layout)
        self.events, self.scan = events, scan

    def schemas(self) -> dict[str, StructType]:
        """:meth:`PaneProcessor.schemas` and ``held``."""
        return {**super().schemas(), "held": self.events}

    def _advance(self, events: pd.DataFrame, tuples: pd.DataFrame, punctuations: pd.DataFrame,
                 end: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The scan over the held rows and the batch's, from where the last batch left it:
        ``(results, late)``, ``late`` empty."""
        held = self.frames.get("held")
        rows = stack([held, tuples[held.columns]]).reset_index(drop=True)
        scan = self.scan.scanner(rows)
        values = self.frames.row("scan")
        if values is not None:
            scan.resume(values[0])
        scan.advance(len(held))
        if end:
            scan.finish()
        values, kept = scan.state()
        self.frames.put("held", rows.iloc[kept])
        self.frames.set_row("scan", (values,))
        return self._windows(rows, scan), tuples.iloc[0:0]

    def _windows(self, rows: pd.DataFrame, scan: LiveScanner) -> pd.DataFrame:
        """The windows ``scan`` fired: keys, ``wid``, ``emit_row`` and the merged partials of
        their tuples that the query's WHERE keeps."""
        lay = self.layout
        index, wids, emitted = [], [], []
        for (_, number, at), members in zip(scan.fired, scan.members):
            index += members
            wids += [number] * len(members)
            emitted += [None if at is None else int(rows["row_num"].iat[at])] * len(members)
        members = rows.iloc[index].assign(**{WID: wids, EMIT_ROW: pd.array(emitted, dtype="Int64")})
        if KEPT in members.columns:
            members = members[members[KEPT].fillna(False).to_numpy(bool)]
        by = [*lay.keys, WID, EMIT_ROW]
        partials = tuple_partials(members, list(lay.aggregates), lay.pane_schema)
        return merge(pd.concat([members[by], partials], axis=1), by, list(lay.aggregates))
