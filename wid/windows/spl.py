"""SPL (IBM Streams) operational windows: the specifications and their semantics.

The clause's grammar and parser: :mod:`wid.windows.spl_clause`.

Semantics (seed 003; the order of events per tuple is its Table 1 / Table 2):

* Time policies run on the wall clock ``arrival_ts`` (seconds or a timestamp,
  non-decreasing in ``row_num`` order). The clock starts at the stream's first
  arrival ``T0``; time tick ``k`` (k = 0, 1, ...) happens at ``T0 + (k+1)p`` and
  is processed before a tuple arriving at the same instant; ticks run up to the
  last arrival ``T_end``.
* ``punct()`` takes punctuations from the boolean in-stream marker column (default
  ``punct``): a row whose marker is true is a punctuation, not a tuple.
* Each trigger (tumbling: each flush) is one window; ``wid`` is its sequence number
  within its partition from 0. Time ticks and punctuations are numbered over the
  whole stream, so an empty window consumes its number but yields no row.
* End of stream: every non-empty open tumbling subwindow is flushed (SPL's final
  punctuation) unless ``aggregateIncompleteWindows(false)``; sliding windows are
  not triggered by the end of the stream.
* ``aggregatePartialWindows(false)`` skips the triggers of a sliding window before it
  first holds ``n`` tuples (``onWindowInitialFull``); the skipped triggers keep their numbers.
* The delta trigger's first reference is the first tuple of the subwindow (it never
  triggers itself); afterwards the last triggering tuple, kept even when evicted.
* Partition eviction deletes a subwindow with its tuples (they reach no further
  window); a partition that comes back starts with fresh policies but continues its
  ``wid`` numbering. Only a tuple insertion updates a partition (LRU order, age).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from wid.errors import WidError
from wid.windows.numbers import flag, non_negative, period, positive_whole
from wid.windows.operational import Operational

ARRIVAL_TS = "arrival_ts"
PUNCT_MARKER = "punct"


# --- policies --------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    """count(n). Tumbling: insert, then flush when |W| = n. Sliding eviction: when |W| = n,
    evict the oldest, then insert. Trigger: after insertion, every n-th arrival.

    >>> Count(2.0)
    Traceback (most recent call last):
    wid.errors.WidError: count(n) must be a positive whole number, got 2.0
    """

    n: int

    def __post_init__(self) -> None:
        positive_whole("count(n)", self.n)


@dataclass(frozen=True)
class Delta:
    """delta(attr, d) on an attribute of the tuple. Tumbling: if t.attr - oldest.attr > d,
    flush, then insert t. Sliding eviction: evict every u with t.attr - u.attr > d, then insert.
    Trigger: before eviction and insertion, fire if t.attr - reference.attr > d (t not in
    the window); t becomes the reference.

    >>> Delta("ts", 0.5), Delta("ts", 0)
    (Delta(attr='ts', delta=0.5), Delta(attr='ts', delta=0))
    >>> Delta("ts", -1.5)
    Traceback (most recent call last):
    wid.errors.WidError: delta(ts, d) must be a finite number >= 0, got -1.5
    """

    attr: str
    delta: float

    def __post_init__(self) -> None:
        non_negative(f"delta({self.attr}, d)", self.delta)


@dataclass(frozen=True)
class Time:
    """time(p) on ``arrival_ts``. Tumbling: flush at every tick. Sliding eviction: a tuple
    that has been in the window more than p seconds is gone. Trigger: fire at every tick.

    >>> Time(float("inf"))
    Traceback (most recent call last):
    wid.errors.WidError: time(p) must be a finite number > 0, got inf
    """

    period: float

    def __post_init__(self) -> None:
        period("time(p)", self.period)


@dataclass(frozen=True)
class Punct:
    """punct() (tumbling only): a punctuation (a true ``marker`` row) flushes every subwindow.

    >>> from wid.windows.spl_clause import parse_spl
    >>> Punct(), parse_spl("tumbling, punct(eos)").eviction
    (Punct(marker='punct'), Punct(marker='eos'))
    """

    marker: str = PUNCT_MARKER


Policy = Count | Delta | Time | Punct


@dataclass(frozen=True)
class PartitionAge:
    """partitionAge(s): before a tuple arriving at x is processed, every partition whose
    last insertion is more than s seconds before x is deleted.

    >>> PartitionAge(-1)
    Traceback (most recent call last):
    wid.errors.WidError: partitionAge(s) must be a finite number >= 0, got -1
    """

    seconds: float

    def __post_init__(self) -> None:
        non_negative("partitionAge(s)", self.seconds)


@dataclass(frozen=True)
class PartitionCount:
    """partitionCount(c): after an insertion, least recently inserted partitions are deleted
    while there are more than c.

    >>> from wid.windows.spl_clause import parse_spl
    >>> parse_spl("tumbling, count(2) partitioned BY k, partitionCount(3)").partition_eviction
    PartitionCount(count=3)
    """

    count: int

    def __post_init__(self) -> None:
        positive_whole("partitionCount(c)", self.count)


@dataclass(frozen=True)
class TupleCount:
    """tupleCount(t): after an insertion, least recently inserted partitions are deleted while
    all subwindows together hold more than t tuples.

    >>> from wid.windows.spl_clause import parse_spl
    >>> parse_spl("sliding, time(2.5) partitioned BY k, tupleCount(100)").partition_eviction
    TupleCount(count=100)
    """

    count: int

    def __post_init__(self) -> None:
        positive_whole("tupleCount(t)", self.count)


PartitionEviction = PartitionAge | PartitionCount | TupleCount


# --- windows -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SplWindow(Operational):
    """An SPL window: per value of ``partition_by`` an independent subwindow.

    >>> from wid.windows.spl_clause import parse_spl
    >>> parse_spl("sliding, count(4), delta(ts, 2.5) partitioned BY k, dev").partition
    ('k', 'dev')
    """

    partition_by: tuple[str, ...] = ()
    partition_eviction: PartitionEviction | None = None
    wattr: ClassVar[str] = "row_num"
    sliding: ClassVar[bool] = False

    @property
    def partition(self) -> tuple[str, ...]:
        return self.partition_by

    @property
    def compiles(self) -> bool:
        """Whether the window takes the ``columns`` path on any data (no delta policy, no partition
        eviction): the SPL windows :func:`wid.to_sql` compiles.

        >>> Sliding(eviction=Count(4), trigger=Time(2.0)).compiles, Tumbling(eviction=Delta("ts", 1.5)).compiles
        (True, False)
        >>> Tumbling(eviction=Count(2), partition_by=("k",), partition_eviction=PartitionCount(1)).compiles
        False
        """
        return self.partition_eviction is None and not any(isinstance(p, Delta) for p in self.policies)

    @property
    def sql_refusal(self) -> str | None:
        """Why :func:`wid.to_sql` refuses the window (off the ``columns`` path), or None.

        >>> Tumbling(eviction=Count(2)).sql_refusal is None
        True
        >>> Tumbling(eviction=Delta("ts", 2.0)).sql_refusal.split(":")[0]
        'SPL windows with a delta policy or partition eviction are not compiled to SQL'
        """
        if self.compiles:
            return None
        return ("SPL windows with a delta policy or partition eviction are not compiled to SQL: their tuples are "
                "tagged in Python (a binary search per partition or an event-by-event scan, chosen on the data); "
                "use a temporary view instead (wid.create_view, or CREATE TEMP VIEW v AS <query> through "
                "wid.run_sql / wid sql)")

    def _check_partitioning(self) -> None:
        """Each field of its kind (given positionally, the policies would land in ``partition_by``
        and ``partition_eviction``, the fields every SPL window has first), and a partition
        eviction only on a partitioned window."""
        given = self.partition_by
        if isinstance(given, str) or (isinstance(given, (list, tuple)) and all(isinstance(c, str) for c in given)):
            object.__setattr__(self, "partition_by", (given,) if isinstance(given, str) else tuple(given))
        else:
            hint = " (given positionally? name the policies: eviction=..., trigger=...)" if isinstance(
                given, Policy) else ""
            raise WidError(f"partition_by must be column names, got {given!r}{hint}")
        if self.partition_eviction is not None and not isinstance(self.partition_eviction, PartitionEviction):
            raise WidError(f"partition_eviction must be partitionAge, partitionCount or tupleCount, got "
                           f"{self.partition_eviction!r}")
        for policy in self.policies:
            if not isinstance(policy, Policy):
                raise WidError(f"a window policy is count, delta, time or punct, got {policy!r}")
        if self.partition_eviction is not None and not self.partition_by:
            raise WidError("a partition eviction policy needs a partitioned window (partitioned BY col)")


@dataclass(frozen=True)
class Tumbling(SplWindow):
    """``[tumbling, <eviction>]``: insert tuples until the eviction policy says full, then
    process (one window) and flush. Order (Table 1): count: insert -> flush when |W| = n;
    delta: flush when t.attr - oldest.attr > d -> insert; time: flush at each tick;
    punct: flush at each punctuation. Window k of a partition = the tuples between its
    k-th and (k+1)-th flush; the end of the stream flushes a non-empty open window
    unless ``incomplete`` is False.

    >>> Tumbling(eviction=Time(0.5), partition_eviction=PartitionAge(30))
    Traceback (most recent call last):
    wid.errors.WidError: a partition eviction policy needs a partitioned window (partitioned BY col)
    """

    eviction: Policy = Count(1)
    incomplete: bool = True

    def __post_init__(self) -> None:
        self._check_partitioning()
        flag("aggregateIncompleteWindows", self.incomplete)

    @property
    def policies(self) -> tuple[Policy, ...]:
        return (self.eviction,)


@dataclass(frozen=True)
class Sliding(SplWindow):
    """``[sliding, <eviction>, <trigger>]``: the eviction policy keeps the window's content,
    each trigger processes it (one window). Order of events on a tuple's arrival (Table 2):

    ======================  =========================  =========================  ======================
    eviction \\ trigger     count                      delta                      time
    ======================  =========================  =========================  ======================
    count, delta            evict -> insert -> trigger trigger -> evict -> insert evict -> insert | trigger
    time                    insert -> trigger | evict  trigger -> insert | evict  insert | evict | trigger
    ======================  =========================  =========================  ======================

    Time eviction is independent of arrivals: at any instant the window holds the tuples
    that arrived at most p seconds ago. ``partial`` False skips the triggers before a
    count(n) window first holds n tuples (SPL Aggregate's aggregatePartialWindows).

    >>> Sliding(eviction=Count(4), trigger=Time(2.5), partial=False).policies
    (Count(n=4), Time(period=2.5))
    >>> Sliding(eviction=Time(2.5), partial=False)
    Traceback (most recent call last):
    wid.errors.WidError: aggregatePartialWindows(false) needs a count(n) eviction policy (full = n tuples)
    >>> Sliding(Count(4), Count(1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    wid.errors.WidError: partition_by must be column names, got Count(n=4) (given positionally? name the policies: ...
    """

    eviction: Policy = Count(1)
    trigger: Policy = Count(1)
    partial: bool = True
    sliding: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self._check_partitioning()
        flag("aggregatePartialWindows", self.partial)
        if isinstance(self.eviction, Punct) or isinstance(self.trigger, Punct):
            raise WidError("punct() is a tumbling policy; a sliding window has no punctuation policy")
        if not self.partial and not isinstance(self.eviction, Count):
            raise WidError("aggregatePartialWindows(false) needs a count(n) eviction policy (full = n tuples)")

    @property
    def policies(self) -> tuple[Policy, ...]:
        return (self.eviction, self.trigger)
