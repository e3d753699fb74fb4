"""Operational window kinds' common base (SPL clauses: :mod:`wid.windows.spl`; Flink
discretizations: :mod:`wid.windows.flink`): the window-ids number the emissions of FIFO buffers."""

from __future__ import annotations

from typing import ClassVar

from wid.windows.base import WindowSpec


class Operational(WindowSpec):
    """Operational windows (SPL, Flink): the window-ids number the triggers (emissions) of FIFO
    buffers in arrival order (``row_num``), the same in any unit of the attributes. Each kind's
    Bucket module (:mod:`wid.bucket.spl`, :mod:`wid.bucket.flink`) also gives its replay's firings
    and live mode's scan.

    On the view ``readings`` of :func:`wid.query`'s example, ``[tumbling, count(2) partitioned BY k]``
    numbers each key's flushes from 0: key ``a``'s buffer is full at row 1 (window 0), the end of the
    stream flushes the rest (``emit_row`` NULL); the policies close the windows, so no generator is taken:

    >>> rep = wid.replay(spark, "SELECT k, sum(v) AS total FROM readings [tumbling, count(2) partitioned BY k]")
    >>> isinstance(rep.compiled.spec, Operational), rep.compiled.spec.live
    (True, True)
    >>> sorted(tuple(r) for r in rep.results.select("k", "wid", "total", "emit_row").collect())
    [('a', 0, 12, 1), ('a', 1, 2, None), ('b', 0, 1, None)]
    >>> text = "SELECT sum(v) AS total FROM readings [tumbling, count(2)]"
    >>> wid.replay(spark, text, wid.punctuate.slack(0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: SPL and Flink windows fire on their own policies in arrival order ... pass punctuation=None
    """

    reads_arrival: ClassVar[bool] = True

    @property
    def refuses_punctuation(self) -> str:
        """Operational windows fire on their own policies: they take no punctuation generator."""
        return ("SPL and Flink windows fire on their own policies in arrival order (punct() and punctuation "
                "policies read the stream's marker rows); pass punctuation=None")

    @property
    def live(self) -> bool:
        """Live mode scans the buffers as tuples come (:func:`wid.stream.live.kinds.live_scan`)."""
        return True

    @property
    def unfinished(self) -> bool:
        """Live mode's stateful step tags the tuples (the scan): Bucket only prepares its inputs."""
        return True
