"""One key's session windows in arrival order: the state machine that session replay
(:mod:`wid.stream.session_replay`) and live mode (:mod:`wid.stream.live.sessions.steps`) run per key.

With ``B`` the running max of the key's punctuation bounds, ``g`` the gap and ``L`` the allowed
lateness (exact numbers in ``x`` units: whole numbers, or :class:`~fractions.Fraction` s):

- a tuple at ``x`` *touches* a session (first ``s``, last ``last``) when ``s - g <= x <= last + g``
  (sessions that touch merge, as Spark's ``session_window`` and Flink's merging windows);
- a session is *complete* once ``last + g < B``: a tuple still to come (``x >= B``) is past
  its reach; it is *closed* once emitted (until a late tuple changes it) and *purged* when closed
  with ``last + g + L < B``;
- touching a purged session: late, with the ids of every session it touches that has one;
  touching nothing with ``x + g + L < B``: late with no id;
- else it merges with every session it touches (the least id among them stays, the others
  retire); a merged session with ``last + g < B`` is emitted at once, the tuple its ``emit_row``;
- a punctuation emits the open sessions with ``last + g < B``, in start order; the end of the
  stream (``punctuate(None, None)``) emits the rest. New ids count the key's emitted sessions.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from dataclasses import dataclass, field
from fractions import Fraction

#: An exact value of ``x`` (or a bound, the gap): a whole number, or a Fraction.
Number = int | Fraction


@dataclass
class KeySession:
    """A session: its tuples span ``[start, last]``, it ends at ``last + g``; its ``members``
    (tuples, or a live state's partials), its id and last revision once emitted, ``closed``
    while its last emission is current.

    With gap 2, tuples at 1 and 2 (rows 0 and 1) form one open session ending at 4; a bound of 4
    leaves it open (a tuple at 4 would still touch it), one of 4.5 emits it as id 0, revision 0:

    >>> key = KeySessions(2)
    >>> key.arrive(0, 1); key.arrive(1, 2); key.punctuate(2, 4); key.open
    [KeySession(start=1, last=2, members=[1, 0], wid=None, revision=-1, closed=False)]
    >>> key.punctuate(3, Fraction(9, 2)); key.sessions, key.open
    ([KeySession(start=1, last=2, members=[1, 0], wid=0, revision=0, closed=True)], [])
    """

    start: Number
    last: Number
    members: list[Hashable] = field(default_factory=list)
    wid: int | None = None
    revision: int = -1
    closed: bool = False


class KeySessions:
    """One key's sessions (module doc) and what they emit: ``members`` (member, wid, revision,
    emit_row) per member of each emission, ``retired`` (row of the merging tuple, wid, revision,
    emit_row) and ``touched`` (late row -> ids). ``sessions``: all of them in start order
    (more than ``g`` apart, so a tuple touches a run of neighbours, found by bisection);
    ``open``: those not emitted.

    Gap 2: session ``{1, 2}`` ends at 4 and is emitted at the bound 5; 3 touches it: late, id 0.
    At the bound 6, 8 touches nothing (8 + 2 > 6) and opens a session; 10 = 8 + 2 touches it:

    >>> key = KeySessions(Fraction(2))
    >>> key.arrive(0, Fraction(1)); key.arrive(1, Fraction(2)); key.punctuate(2, Fraction(5))
    >>> key.arrive(3, Fraction(3)); key.members, key.touched
    ([(1, 0, 0, 2), (0, 0, 0, 2)], {3: [0]})
    >>> key.punctuate(4, Fraction(6)); key.arrive(5, Fraction(8)); key.arrive(6, Fraction(10)); key.open
    [KeySession(start=Fraction(8, 1), last=Fraction(10, 1), members=[6, 5], wid=None, revision=-1, closed=False)]
    """

    def __init__(self, gap: Number, lateness: Number = 0, bound: Number | None = None,
                 sessions: list[KeySession] | None = None, next_id: int = 0) -> None:
        self.gap, self.lateness, self.bound, self.next_id = gap, lateness, bound, next_id
        self.sessions: list[KeySession] = sorted(sessions or [], key=lambda s: s.start)
        self.starts = [s.start for s in self.sessions]
        self.open = [s for s in self.sessions if not s.closed]
        self.members: list[tuple[Hashable, int, int, int | None]] = []
        self.retired: list[tuple[int, int, int, int | None]] = []
        self.touched: dict[int, list[int]] = {}

    def _passed(self, end: Number) -> bool:
        """The bound is past ``end``: no tuple still to come (``x >= B``) reaches it."""
        return self.bound is not None and end < self.bound

    def _near(self, x: Number) -> tuple[int, int]:
        """``[lo, hi)``: the sessions ``x`` touches (``start - g <= x <= last + g``)."""
        hi = bisect_right(self.starts, x + self.gap)
        lo = hi
        while lo and self.sessions[lo - 1].last + self.gap >= x:
            lo -= 1
        return lo, hi

    def arrive(self, row: int, x: Number, member: Hashable | None = None) -> None:
        """The tuple of ``row_num`` ``row`` at ``x`` arrives (``member``: what it adds to a
        session, the row itself by default)."""
        g, late = self.gap, self.lateness
        lo, hi = self._near(x)
        near = self.sessions[lo:hi]
        if any(s.closed and self._passed(s.last + g + late) for s in near):
            self.touched[row] = sorted(s.wid for s in near if s.wid is not None)
            return
        if not near and self._passed(x + g + late):
            self.touched[row] = []
            return
        named = sorted((s for s in near if s.wid is not None), key=lambda s: s.wid)
        for s in named[1:]:
            self.retired.append((row, s.wid, s.revision + 1, row))
        merged = KeySession(min([x, *(s.start for s in near)]), max([x, *(s.last for s in near)]),
                            [row if member is None else member, *(m for s in near for m in s.members)],
                            named[0].wid if named else None, named[0].revision if named else -1)
        self.sessions[lo:hi], self.starts[lo:hi] = [merged], [merged.start]
        self.open = [s for s in self.open if all(s is not n for n in near)] + [merged]
        if self._passed(merged.last + g):
            self._emit(merged, row)

    def _emit(self, session: KeySession, row: int | None) -> None:
        if session.wid is None:
            session.wid, self.next_id = self.next_id, self.next_id + 1
        session.revision += 1
        session.closed = True
        self.open = [s for s in self.open if s is not session]
        self.members.extend((m, session.wid, session.revision, row) for m in session.members)

    def punctuate(self, row: int | None, bound: Number | None) -> None:
        """A punctuation at ``row`` raises the bound to ``bound`` (no tuple below it comes after it) and emits
        the open sessions it passes; ``(None, None)``: the end of the stream."""
        if bound is not None:
            self.bound = bound if self.bound is None else max(self.bound, bound)
        done = [s for s in self.open if row is None or self._passed(s.last + self.gap)]
        for session in sorted(done, key=lambda s: s.start):
            self._emit(session, row)
