"""SPL (IBM Streams) operational window clauses: parser and specifications.

Grammar of the text inside ``[...]`` (keywords case-insensitive, items comma-separated)::

    tumbling, <policy> [partitioned BY col[, col]] [, <partition eviction>] [, <option>]
    sliding, <eviction> [, <trigger>] [partitioned BY col[, col]] [, <partition eviction>] [, <option>]

    col, attr, marker := a plain name (letters, digits, _) or a `back-quoted` one (any characters)

    policy     := count(n) | delta(attr, d) | time(p) | punct([marker])   (punct: tumbling only)
    trigger    := count(n) | delta(attr, d) | time(p)                    (default count(1))
    partition eviction := partitionAge(s) | partitionCount(c) | tupleCount(t)
    option     := aggregatePartialWindows(true|false)      (sliding, count eviction)
                | aggregateIncompleteWindows(true|false)   (tumbling)

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

import math
import re
from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame

from wid.errors import WidError
from wid.spec.numbers import number
from wid.spec.operational import Operational
from wid.spec.sqlexpr import column_name

ARRIVAL_TS = "arrival_ts"
PUNCT_MARKER = "punct"


# --- policies --------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    """count(n). Tumbling: insert, then flush when |W| = n. Sliding eviction: when |W| = n,
    evict the oldest, then insert. Trigger: after insertion, every n-th arrival."""

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n <= 0:
            raise WidError(f"count(n) needs a positive whole number, got {self.n!r}")


@dataclass(frozen=True)
class Delta:
    """delta(attr, d) on an attribute of the tuple. Tumbling: if t.attr - oldest.attr > d,
    flush, then insert t. Sliding eviction: evict every u with t.attr - u.attr > d, then insert.
    Trigger: before eviction and insertion, fire if t.attr - reference.attr > d (t not in
    the window); t becomes the reference."""

    attr: str
    delta: float

    def __post_init__(self) -> None:
        if isinstance(self.delta, bool) or not isinstance(self.delta, (int, float)):
            raise WidError(f"delta({self.attr}, d) needs a number d, got {self.delta!r}")
        if not math.isfinite(self.delta) or self.delta < 0:
            raise WidError(f"delta({self.attr}, d) needs d >= 0, got {self.delta!r}")


@dataclass(frozen=True)
class Time:
    """time(p) on ``arrival_ts``. Tumbling: flush at every tick. Sliding eviction: a tuple
    that has been in the window more than p seconds is gone. Trigger: fire at every tick."""

    period: float

    def __post_init__(self) -> None:
        if isinstance(self.period, bool) or not isinstance(self.period, (int, float)):
            raise WidError(f"time(p) needs a number, got {self.period!r}")
        if not math.isfinite(self.period) or self.period <= 0:
            raise WidError(f"time(p) needs p > 0, got {self.period!r}")


@dataclass(frozen=True)
class Punct:
    """punct() (tumbling only): a punctuation (a true ``marker`` row) flushes every subwindow."""

    marker: str = PUNCT_MARKER


Policy = Count | Delta | Time | Punct


@dataclass(frozen=True)
class PartitionAge:
    """partitionAge(s): before a tuple arriving at x is processed, every partition whose
    last insertion is more than s seconds before x is deleted."""

    seconds: float

    def __post_init__(self) -> None:
        if not isinstance(self.seconds, (int, float)) or self.seconds < 0:
            raise WidError(f"partitionAge(s) needs s >= 0, got {self.seconds!r}")


@dataclass(frozen=True)
class PartitionCount:
    """partitionCount(c): after an insertion, least recently inserted partitions are deleted
    while there are more than c."""

    count: int

    def __post_init__(self) -> None:
        Count(self.count)


@dataclass(frozen=True)
class TupleCount:
    """tupleCount(t): after an insertion, least recently inserted partitions are deleted while
    all subwindows together hold more than t tuples."""

    count: int

    def __post_init__(self) -> None:
        Count(self.count)


PartitionEviction = PartitionAge | PartitionCount | TupleCount


# --- windows -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SplWindow(Operational):
    """An SPL window: per value of ``partition_by`` an independent subwindow."""

    partition_by: tuple[str, ...] = ()
    partition_eviction: PartitionEviction | None = None
    wattr: ClassVar[str] = "row_num"
    sliding: ClassVar[bool] = False
    bucket_module: ClassVar[str] = "wid.bucket.spl"

    @property
    def partition(self) -> tuple[str, ...]:
        return self.partition_by

    def bucket(self, df: DataFrame) -> DataFrame:
        """Bucket (:mod:`wid.bucket.spl`): each tuple's range of triggers, from its insertion to its eviction."""
        from wid.bucket.spl import operational_bucket

        return operational_bucket(df, self)

    @property
    def sql_refusal(self) -> str | None:
        """Delta policies and partition eviction (:func:`wid.bucket.spl.sql_refusal`)."""
        from wid.bucket.spl import sql_refusal

        return sql_refusal(self)

    def bucket_sql(self, source: str, df: DataFrame) -> str:
        """The ``columns`` path as SQL; delta policies and partition eviction refuse
        (:func:`wid.bucket.spl.operational_bucket_sql`)."""
        from wid.bucket.spl import operational_bucket_sql

        return operational_bucket_sql(source, df, self)

    def _check_partitioning(self) -> None:
        if self.partition_eviction is not None and not self.partition_by:
            raise WidError("a partition eviction policy needs a partitioned window (partitioned BY col)")


@dataclass(frozen=True)
class Tumbling(SplWindow):
    """``[tumbling, <eviction>]``: insert tuples until the eviction policy says full, then
    process (one window) and flush. Order (Table 1): count: insert -> flush when |W| = n;
    delta: flush when t.attr - oldest.attr > d -> insert; time: flush at each tick;
    punct: flush at each punctuation. Window k of a partition = the tuples between its
    k-th and (k+1)-th flush; the end of the stream flushes a non-empty open window
    unless ``incomplete`` is False."""

    eviction: Policy = Count(1)
    incomplete: bool = True

    def __post_init__(self) -> None:
        self._check_partitioning()

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
    count(n) window first holds n tuples (SPL Aggregate's aggregatePartialWindows)."""

    eviction: Policy = Count(1)
    trigger: Policy = Count(1)
    partial: bool = True
    sliding: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self._check_partitioning()
        if isinstance(self.eviction, Punct) or isinstance(self.trigger, Punct):
            raise WidError("punct() is a tumbling policy; a sliding window has no punctuation policy")
        if not self.partial and not isinstance(self.eviction, Count):
            raise WidError("aggregatePartialWindows(false) needs a count(n) eviction policy (full = n tuples)")

    @property
    def policies(self) -> tuple[Policy, ...]:
        return (self.eviction, self.trigger)


# --- parser -------------------------------------------------------------------------------

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME = rf"(?:`(?:[^`]|``)+`|{_IDENT}\b)"
_PARTITIONED = re.compile(
    rf"\bpartitioned\b(?:\s+by\s+({_NAME}(?!\s*\()(?:\s*,\s*{_NAME}(?!\s*\())*))?", re.IGNORECASE
)
_CALL = re.compile(rf"({_IDENT})\s*\(\s*(.*?)\s*\)", re.DOTALL)


def _items(text: str) -> list[str]:
    """``text`` split at its commas outside parentheses and back quotes, each item stripped.

    >>> _items("delta(`a,b`, 5), count(2)")
    ['delta(`a,b`, 5)', 'count(2)']
    """
    items, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted  # a doubled back quote inside a name toggles twice
        elif not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        elif not quoted and depth == 0 and ch == ",":
            items.append(text[start:i].strip())
            start = i + 1
    return [*items, text[start:].strip()]


def _name(text: str) -> str | None:
    """The column ``text`` names (plain, or back-quoted: unquoted, a doubled back quote single), else None."""
    return column_name(text) if re.fullmatch(_NAME, text) else None


def is_spl(clause: str) -> bool:
    """Whether ``clause`` is an SPL window clause (starts with ``tumbling`` or ``sliding``).

    >>> is_spl("Sliding, count(4), count(1)"), is_spl("RANGE 4 SLIDE 2 WATTR ts")
    (True, False)
    """
    return re.match(r"\s*(tumbling|sliding)\b", clause, re.IGNORECASE) is not None


def _flag(text: str, what: str, clause: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise WidError(f"{what} takes true or false, got {text!r} in [{clause}]")
    return text.lower() == "true"


def _policy(item: str, clause: str) -> Policy | PartitionEviction | tuple[str, bool]:
    match = _CALL.fullmatch(item.strip())
    if match is None:
        raise WidError(f"expected a policy like count(4), got {item.strip()!r} in [{clause}]")
    name, args = match.group(1).lower(), _items(match.group(2)) if match.group(2) else []
    arity = {"count": 1, "time": 1, "delta": 2, "partitionage": 1, "partitioncount": 1, "tuplecount": 1,
             "aggregatepartialwindows": 1, "aggregateincompletewindows": 1}
    if name == "punct":
        if len(args) > 1 or (args and _name(args[0]) is None):
            raise WidError(f"punct() takes no argument or a marker column, got {item.strip()!r} in [{clause}]")
        return Punct(*map(_name, args))
    if name not in arity:
        raise WidError(f"unknown policy {match.group(1)!r} in [{clause}]")
    if len(args) != arity[name]:
        raise WidError(f"{match.group(1)} takes {arity[name]} argument(s), got {item.strip()!r} in [{clause}]")
    if name == "delta":
        if (attr := _name(args[0])) is None:
            raise WidError(f"delta(attr, d) needs a column name, got {args[0]!r} in [{clause}]")
        return Delta(attr, number(args[1], "delta", clause))
    if name.startswith("aggregate"):
        return name, _flag(args[0], match.group(1), clause)
    value = number(args[0], match.group(1), clause)
    if name in ("count", "partitioncount", "tuplecount") and not isinstance(value, int):
        raise WidError(f"{match.group(1)} needs a whole number, got {args[0]!r} in [{clause}]")
    kind = {"count": Count, "time": Time, "partitionage": PartitionAge, "partitioncount": PartitionCount,
            "tuplecount": TupleCount}[name]
    return kind(value)


def parse_spl(clause: str) -> SplWindow:
    """The SPL window written in ``clause`` (see the module docstring for the grammar)."""
    if not is_spl(clause):
        raise WidError(f"an SPL window clause starts with tumbling or sliding: [{clause}]")
    if clause.count("`") % 2:
        raise WidError(f"a back-quoted name is not closed (a back quote inside one is doubled) in [{clause}]")
    partition_by: tuple[str, ...] = ()
    found = [m for m in _PARTITIONED.finditer(clause) if clause.count("`", 0, m.start()) % 2 == 0]  # not in a name
    if len(found) > 1:
        raise WidError(f"partitioned given twice in [{clause}]")
    body = clause
    if found:
        if found[0].group(1) is None:
            raise WidError(f"name the partition attribute: partitioned BY col in [{clause}]")
        partition_by = tuple(_name(c) for c in _items(found[0].group(1)))
        body = clause[: found[0].start()] + "," + clause[found[0].end():]
    items = [i for i in _items(body) if i]
    kind = items.pop(0).lower()
    policies: list[Policy] = []
    eviction: PartitionEviction | None = None
    options: dict[str, bool] = {}
    for item in items:
        parsed = _policy(item, clause)
        if isinstance(parsed, tuple):
            if parsed[0] in options:
                raise WidError(f"{item.strip()} given twice in [{clause}]")
            options[parsed[0]] = parsed[1]
        elif isinstance(parsed, (PartitionAge, PartitionCount, TupleCount)):
            if eviction is not None:
                raise WidError(f"more than one partition eviction policy in [{clause}]")
            eviction = parsed
        elif options or eviction is not None:
            raise WidError(f"window policies come before partitioning and options in [{clause}]")
        else:
            policies.append(parsed)
    if kind == "tumbling":
        if len(policies) != 1:
            raise WidError(f"a tumbling window takes one eviction policy, got {len(policies)} in [{clause}]")
        if "aggregatepartialwindows" in options:
            raise WidError(f"aggregatePartialWindows is for sliding windows; use aggregateIncompleteWindows in [{clause}]")
        return Tumbling(partition_by, eviction, policies[0], options.get("aggregateincompletewindows", True))
    if len(policies) not in (1, 2):
        raise WidError(f"a sliding window takes an eviction and an optional trigger policy in [{clause}]")
    if "aggregateincompletewindows" in options:
        raise WidError(f"aggregateIncompleteWindows is for tumbling windows in [{clause}]")
    trigger = policies[1] if len(policies) == 2 else Count(1)
    return Sliding(partition_by, eviction, policies[0], trigger, options.get("aggregatepartialwindows", True))
