"""One key's session windows in arrival order: the state machine that session replay
(:mod:`wid.stream.session_replay`) and live mode (:mod:`wid.stream.live.sessions.steps`) run per key,
with Flink's rule for merging windows under allowed lateness.

With ``B`` the running max of the key's punctuation bounds, ``g`` the gap and ``L`` the allowed
lateness (exact numbers in ``x`` units: whole numbers, or :class:`~fractions.Fraction` s):

- a tuple at ``x`` *touches* a session (first ``s``, last ``last``) when ``s - g <= x <= last + g``
  (sessions that touch merge, as Spark's ``session_window`` and Flink's merging windows);
- a session is *complete* once ``last + g < B``: a tuple still to come (``x >= B``) is past
  its reach; it is *closed* once emitted (until a tuple changes it) and *forgotten* when closed
  with ``last + g + L < B`` (its cleanup time ``end + L`` passed, as Flink's cleanup timer):
  kept no more, no later tuple touches or merges with it;
- a tuple merges with every *kept* session it touches (the least id among them stays, the
  others retire); a merged session with ``last + g < B`` is emitted at once, the tuple its
  ``emit_row``. Touching none, it starts a session of its own, unless that one is past cleanup
  already (``x + g + L < B``): then the tuple is late (Flink's side output), with no id;
- a punctuation emits the open sessions with ``last + g < B``, in start order, then forgets
  those past cleanup; the end of the stream (``punctuate(None, None)``) emits the rest. New ids
  count the key's emitted sessions.

With a gap per tuple (Spark's dynamic gap: ``arrive(row, x, gap=h)``) a tuple spans
``[x, x + h]`` and a session ends at the largest ``x + h`` of its tuples (its ``reach``)
instead of ``last + g``: the tuple touches a session when ``start <= x + h`` and ``x <= end``,
and every rule above reads that end.
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

    With gap 2 and allowed lateness 1, tuples at 1 and 2 (rows 0 and 1) form one open session
    ending at 4; a bound of 4 leaves it open (a tuple at 4 would still touch it), one of 4.5
    emits it as id 0, revision 0, kept until a bound passes 4 + 1:

    >>> key = KeySessions(2, 1)
    >>> key.arrive(0, 1); key.arrive(1, 2); key.punctuate(2, 4); key.open
    [KeySession(start=1, last=2, members=[1, 0], wid=None, revision=-1, closed=False)]
    >>> key.punctuate(3, Fraction(9, 2)); key.sessions, key.open
    ([KeySession(start=1, last=2, members=[1, 0], wid=0, revision=0, closed=True)], [])
    >>> key.punctuate(4, Fraction(11, 2)); key.sessions
    []
    """

    start: Number
    last: Number
    members: list[Hashable] = field(default_factory=list)
    wid: int | None = None
    revision: int = -1
    closed: bool = False
    #: The end with a gap per tuple (the largest ``x + h`` of its tuples); None: ``last + g``.
    reach: Number | None = field(default=None, repr=False)


class KeySessions:
    """One key's sessions (module doc) and what they emit: ``members`` (member, wid, revision,
    emit_row) per member of each emission, ``retired`` (row of the merging tuple, wid, revision,
    emit_row) and ``late`` (the rows of late tuples). ``sessions``: the kept ones in start order
    (each ends before the next starts, so a tuple touches a run of neighbours, found by bisection);
    ``open``: those not emitted.

    Gap 2, lateness 0: session ``{1, 2}`` ends at 4, emitted and forgotten at the bound 5. 3
    touches only it, forgotten: 3 starts a session of its own, ending at 5 (not below the bound:
    on time); 0 would start one ending at 2 < 5: late. 4 joins ``{3}``:

    >>> key = KeySessions(Fraction(2))
    >>> key.arrive(0, Fraction(1)); key.arrive(1, Fraction(2)); key.punctuate(2, Fraction(5))
    >>> key.arrive(3, Fraction(3)); key.arrive(4, Fraction(0)); key.arrive(5, Fraction(4))
    >>> key.members, key.late
    ([(1, 0, 0, 2), (0, 0, 0, 2)], [4])
    >>> key.open
    [KeySession(start=Fraction(3, 1), last=Fraction(4, 1), members=[5, 3], wid=None, revision=-1, closed=False)]
    """

    def __init__(self, gap: Number | None, lateness: Number = 0, bound: Number | None = None,
                 sessions: list[KeySession] | None = None, next_id: int = 0) -> None:
        self.gap, self.lateness, self.bound, self.next_id = gap, lateness, bound, next_id
        self.sessions: list[KeySession] = sorted(sessions or [], key=lambda s: s.start)
        self.starts = [s.start for s in self.sessions]
        self.open = [s for s in self.sessions if not s.closed]
        self.members: list[tuple[Hashable, int, int, int | None]] = []
        self.retired: list[tuple[int, int, int, int | None]] = []
        self.late: list[int] = []

    def _passed(self, end: Number) -> bool:
        """The bound is past ``end``: no tuple still to come (``x >= B``) reaches it."""
        return self.bound is not None and end < self.bound

    def end(self, session: KeySession) -> Number:
        """The session's end: ``last + g``, or its ``reach`` with a gap per tuple.

        >>> KeySessions(2).end(KeySession(1, 3)), KeySessions(None).end(KeySession(1, 3, reach=9))
        (5, 9)
        """
        return session.last + self.gap if session.reach is None else session.reach

    def _near(self, x: Number, gap: Number) -> tuple[int, int]:
        """``[lo, hi)``: the kept sessions ``[x, x + gap]`` touches (``start <= x + gap``, ``x <= end``)."""
        hi = bisect_right(self.starts, x + gap)
        lo = hi
        while lo and self.end(self.sessions[lo - 1]) >= x:
            lo -= 1
        return lo, hi

    def arrive(self, row: int, x: Number, member: Hashable | None = None, gap: Number | None = None) -> None:
        """The tuple of ``row_num`` ``row`` at ``x`` arrives (``member``: what it adds to a
        session, the row itself by default; ``gap``: its own gap, else the constant one).

        >>> key = KeySessions(None)  # gaps per tuple: [0, 10] and [12, 14] apart, [9, 12] joins them
        >>> key.arrive(0, 0, gap=10); key.arrive(1, 12, gap=2); len(key.sessions)
        2
        >>> key.arrive(2, 9, gap=3); [(s.start, s.last, s.reach) for s in key.sessions]
        [(0, 12, 14)]
        """
        g = self.gap if gap is None else gap
        lo, hi = self._near(x, g)
        near = self.sessions[lo:hi]
        if not near and self._passed(x + g + self.lateness):
            self.late.append(row)
            return
        named = sorted((s for s in near if s.wid is not None), key=lambda s: s.wid)
        for s in named[1:]:
            self.retired.append((row, s.wid, s.revision + 1, row))
        merged = KeySession(min([x, *(s.start for s in near)]), max([x, *(s.last for s in near)]),
                            [row if member is None else member, *(m for s in near for m in s.members)],
                            named[0].wid if named else None, named[0].revision if named else -1,
                            reach=None if gap is None else max([x + gap, *map(self.end, near)]))
        self.sessions[lo:hi], self.starts[lo:hi] = [merged], [merged.start]
        self.open = [s for s in self.open if all(s is not n for n in near)] + [merged]
        if self._passed(self.end(merged)):  # kept: its end + L is not below B (nor were the kept ones')
            self._emit(merged, row)

    def _emit(self, session: KeySession, row: int | None) -> None:
        if session.wid is None:
            session.wid, self.next_id = self.next_id, self.next_id + 1
        session.revision += 1
        session.closed = True
        self.open = [s for s in self.open if s is not session]
        self.members.extend((m, session.wid, session.revision, row) for m in session.members)

    def punctuate(self, row: int | None, bound: Number | None) -> None:
        """A punctuation at ``row`` raises the bound to ``bound`` (no tuple below it comes after it), emits
        the open sessions it passes and forgets the closed ones past cleanup; ``(None, None)``: the end of the
        stream."""
        if bound is not None:
            self.bound = bound if self.bound is None else max(self.bound, bound)
        done = [s for s in self.open if row is None or self._passed(self.end(s))]
        for session in sorted(done, key=lambda s: s.start):
            self._emit(session, row)
        kept = [s for s in self.sessions if not (s.closed and self._passed(self.end(s) + self.lateness))]
        if len(kept) < len(self.sessions):
            self.sessions, self.starts = kept, [s.start for s in kept]
