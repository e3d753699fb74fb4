"""SPL (IBM Streams) window clauses: the grammar and its parser (the windows, their semantics:
:mod:`wid.windows.spl`).

Grammar of the text inside ``[...]`` (keywords case-insensitive, items comma-separated)::

    tumbling, <policy> [partitioned BY col[, col]] [, <partition eviction>] [, <option>]
    sliding, <eviction> [, <trigger>] [partitioned BY col[, col]] [, <partition eviction>] [, <option>]

    col, attr, marker := a plain name (letters, digits, _) or a `back-quoted` one (any characters)

    policy     := count(n) | delta(attr, d) | time(p) | punct([marker])   (punct: tumbling only)
    trigger    := count(n) | delta(attr, d) | time(p)                    (default count(1))
    partition eviction := partitionAge(s) | partitionCount(c) | tupleCount(t)
    option     := aggregatePartialWindows(true|false)      (sliding, count eviction)
                | aggregateIncompleteWindows(true|false)   (tumbling)
"""

from __future__ import annotations

import re

from wid.errors import WidError
from wid.windows.numbers import number
from wid.windows.spl import (Count, Delta, PartitionAge, PartitionCount, PartitionEviction, Policy, Punct, Sliding,
                          SplWindow, Time, Tumbling, TupleCount)
from wid.windows.sqlexpr import column_name

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
    """The SPL window written in ``clause`` (see the module docstring for the grammar): a sliding
    window's trigger defaults to ``count(1)``, options default to true.

    >>> parse_spl("sliding, count(4) partitioned BY k")
    Sliding(partition_by=('k',), partition_eviction=None, eviction=Count(n=4), trigger=Count(n=1), partial=True)
    >>> parse_spl("Tumbling, delta(ts, 60), aggregateIncompleteWindows(false)")
    Tumbling(partition_by=(), partition_eviction=None, eviction=Delta(attr='ts', delta=60), incomplete=False)
    >>> parse_spl("tumbling, count(2), count(3)")
    Traceback (most recent call last):
    wid.errors.WidError: a tumbling window takes one eviction policy, got 2 in [tumbling, count(2), count(3)]
    """
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
