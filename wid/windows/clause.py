"""Parser for the paper's window clause (the text inside ``[...]``).

Grammar (keywords case-insensitive, parameters in any order)::

    RANGE (n | UNBOUNDED) [unit] SLIDE n [unit] [OFFSET o [unit]] WATTR a [PATTR p]
    RANGE n [unit] RATTR a SLIDE n ROW[S] SATTR (row_num | rank(a))
    CUMULATE STEP n [unit] SIZE n [unit] [OFFSET o [unit]] WATTR a
    SESSION (n | expr) [unit] WATTR a [PATTR p]
    RANGE n cal SLIDE m cal WATTR a [TIMEZONE 'Region/City'] [WEEKSTART 'SUNDAY']

``OFFSET o`` (``o`` may be negative) shifts the grid: extents end at ``(w+1)s + o``.

    unit := SECOND[S] | MINUTE[S] | HOUR[S] | DAY[S] | ROW[S]
    cal  := DAY[S] | WEEK[S] | MONTH[S] | QUARTER[S] | YEAR[S]

Calendar windows (:class:`wid.windows.calendar.Calendar`): a ``WEEK``, ``MONTH``, ``QUARTER`` or
``YEAR`` unit, or ``TIMEZONE``, makes local calendar periods (both amounts in the same unit); ``DAY``
without ``TIMEZONE`` stays 86400 seconds.
"""

from __future__ import annotations

import difflib
import re

from wid.errors import WidError
from wid.windows.numbers import Number, as_number, times
from wid.windows.sqlexpr import column_name
from wid.windows.spl_clause import is_spl, parse_spl
from wid.windows.aware import Session, SlideByRank, SlideByRows, SlideByTuple
from wid.windows.base import WindowSpec
from wid.windows.calendar import UNITS as CALENDAR, Calendar
from wid.windows.context_free import (Cumulating, Landmark, PartitionedTupleSliding, Sliding, Tumbling,
                                      TupleSliding)

SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}
ROWS = "ROW"
_TOKEN = re.compile(r"\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|`(?:[^`]|``)+`|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|"
                    r"[^\W\d][\w.]*|\(|\)|\S)")
_KEYWORDS = ("RANGE", "SLIDE", "OFFSET", "WATTR", "PATTR", "RATTR", "SATTR", "SESSION", "CUMULATE", "STEP", "SIZE",
             "TIMEZONE", "WEEKSTART")


def _spans(text: str) -> list[re.Match[str]]:
    """The tokens of ``text`` (group 1 of each match: a number, a quoted name or string, a word, a sign)."""
    matches, pos = [], 0
    while pos < len(text.rstrip()):
        matches.append(_TOKEN.match(text, pos))
        pos = matches[-1].end()
    return matches


def _tokens(text: str) -> list[str]:
    return [match.group(1) for match in _spans(text)]


def _unit(word: str | None) -> str | None:
    if word is None:
        return None
    singular = word.upper().removesuffix("S")
    return singular if singular in SECONDS or singular in CALENDAR or singular == ROWS else None


def _number(token: str, keyword: str, clause: str) -> Number:
    """The exact number written (``0.1`` is one tenth: :func:`wid.windows.numbers.as_number`),
    positive except for ``OFFSET``."""
    if not re.fullmatch(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", token):
        raise WidError(f"{keyword} needs a number, got {token!r} in [{clause}]")
    value = as_number(token, keyword)
    if value <= 0 and keyword != "OFFSET":
        raise WidError(f"{keyword} must be positive, got {token} in [{clause}]")
    return value


def _parameters(clause: str) -> dict[str, list[str]]:
    """Keyword -> the tokens after it, up to the next keyword."""
    tokens = _tokens(clause)
    if not tokens or tokens[0].upper() not in _KEYWORDS:
        raise WidError(f"a window clause starts with RANGE, SLIDE, CUMULATE or SESSION: [{clause}]")
    params: dict[str, list[str]] = {}
    current = ""
    for token in tokens:
        if token.upper() in _KEYWORDS:
            current = token.upper()
            if current in params:
                raise WidError(f"{current} given twice in [{clause}]")
            params[current] = []
        else:
            params[current].append(token)
    return params


def _misspelt(keyword: str, clause: str) -> str:
    """`` (is X a misspelt KEYWORD?)`` for a word of ``clause`` close to ``keyword``, else ``""``.

    >>> _misspelt("SLIDE", "RANGE 60 SLDE 30 WATTR ts")
    " (is 'SLDE' a misspelt SLIDE?)"
    """
    words = {t.upper(): t for t in _tokens(clause) if t.isalpha() and t.upper() not in _KEYWORDS}
    close = difflib.get_close_matches(keyword, list(words), n=1, cutoff=0.7)
    return f" (is {words[close[0]]!r} a misspelt {keyword}?)" if close else ""


def _measure(words: list[str], keyword: str, clause: str) -> tuple[Number | None, str | None]:
    """``(amount in seconds or raw units, unit)`` of ``RANGE``/``SLIDE``; amount None for UNBOUNDED."""
    if not words or len(words) > 2:
        raise WidError(f"{keyword} needs an amount and an optional unit in [{clause}]")
    unit = _unit(words[1]) if len(words) == 2 else None
    if len(words) == 2 and unit is None:
        raise WidError(f"unknown unit {words[1]!r} after {keyword} in [{clause}]")
    if unit in CALENDAR and unit not in SECONDS and keyword not in ("RANGE", "SLIDE"):
        raise WidError(f"{keyword} cannot be in {unit}S (calendar periods: RANGE and SLIDE only) in [{clause}]")
    if words[0].upper() == "UNBOUNDED":
        if keyword != "RANGE":
            raise WidError(f"only RANGE may be UNBOUNDED in [{clause}]")
        return None, unit
    amount = _number(words[0], keyword, clause)
    return (times(amount, SECONDS[unit]) if unit in SECONDS else amount), unit


def _attribute(params: dict[str, list[str]], keyword: str, clause: str) -> str | None:
    words = params.get(keyword)
    if words is None:
        return None
    if len(words) == 1 and re.fullmatch(r"[^\W\d]\w*|`(?:[^`]|``)+`", words[0]):
        return column_name(words[0])
    if keyword == "SATTR" and len(words) == 4 and words[0].lower() == "rank" and words[1] == "(" and words[3] == ")":
        return f"rank({column_name(words[2])})"
    raise WidError(f"{keyword} needs a column name, got {' '.join(words) or 'nothing'} in [{clause}]")


def parse_window(clause: str) -> WindowSpec:
    """The window specification written in ``clause``.

    >>> parse_window("RANGE 1.5 MINUTES SLIDE 30 SECONDS WATTR ts"), parse_window("RANGE 0.1 SLIDE 0.1 WATTR ts")
    (Sliding(range=90, slide=30, wattr='ts'), Tumbling(range=Decimal('0.1'), slide=Decimal('0.1'), wattr='ts'))
    >>> parse_window("SESSION 2.5 WATTR ts PATTR `dev id`")
    Session(gap=Decimal('2.5'), wattr='ts', pattr='dev id', keys=())
    >>> parse_window("RANGE 10 ROWS SLIDE 10 WATTR row_num")
    Traceback (most recent call last):
    wid.errors.WidError: RANGE and SLIDE must both be in ROWS or neither in [RANGE 10 ROWS SLIDE 10 WATTR row_num]
    """
    if is_spl(clause):
        return parse_spl(clause)
    params = _parameters(clause)
    if ({"TIMEZONE", "WEEKSTART"} & set(params) or any(_unit(words[-1]) in CALENDAR and _unit(words[-1]) not in SECONDS
                                                        for k in ("RANGE", "SLIDE") for words in [params.get(k)] if words)):
        return _calendar(params, clause)
    if "SESSION" in params:
        return _session(params, clause)
    if "CUMULATE" in params:
        return _cumulate(params, clause)
    for extra in ("STEP", "SIZE"):
        if extra in params:
            raise WidError(f"{extra} belongs to a CUMULATE window in [{clause}]")
    for required in ("RANGE", "SLIDE"):
        if required not in params:
            raise WidError(f"missing {required} in [{clause}]{_misspelt(required, clause)}")
    range_, range_unit = _measure(params["RANGE"], "RANGE", clause)
    slide, slide_unit = _measure(params["SLIDE"], "SLIDE", clause)
    wattr, pattr = _attribute(params, "WATTR", clause), _attribute(params, "PATTR", clause)
    rattr, sattr = _attribute(params, "RATTR", clause), _attribute(params, "SATTR", clause)
    offset, offset_unit = _measure(params["OFFSET"], "OFFSET", clause) if "OFFSET" in params else (0, None)
    if rattr or sattr:
        if "OFFSET" in params:
            raise WidError(f"OFFSET shifts a grid of windows; a slide-by-tuple window has none in [{clause}]")
        if wattr or pattr or not (rattr and sattr):
            raise WidError(f"a slide-by-tuple window takes RATTR and SATTR (no WATTR/PATTR) in [{clause}]")
        return _slide_by_tuple(range_, range_unit, rattr, slide, slide_unit, sattr, clause)
    if wattr is None:
        raise WidError(f"missing WATTR in [{clause}]")
    rows = {range_unit == ROWS, slide_unit == ROWS}
    if len(rows) == 2 and not (range_ is None and range_unit is None):
        raise WidError(f"RANGE and SLIDE must both be in ROWS or neither in [{clause}]")
    in_rows = slide_unit == ROWS
    if "OFFSET" in params and (offset_unit == ROWS) != in_rows:
        raise WidError(f"OFFSET must be in ROWS exactly when SLIDE is in [{clause}]")
    if pattr and not in_rows:
        raise WidError(f"PATTR partitions tuple-based (ROWS) windows; use GROUP BY {pattr} for [{clause}]")
    if range_ is None:
        if pattr:
            raise WidError(f"PATTR is not supported with RANGE UNBOUNDED in [{clause}]")
        return Landmark(slide, wattr, rows=in_rows, offset=offset)
    if pattr:
        return PartitionedTupleSliding(range_, slide, wattr, pattr, offset=offset)
    if in_rows:
        return TupleSliding(range_, slide, wattr, offset=offset)
    kind = Tumbling if range_ == slide else Sliding
    return kind(range_, slide, wattr, offset=offset)


def _cumulate(params: dict[str, list[str]], clause: str) -> Cumulating:
    """``CUMULATE STEP st [unit] SIZE sz [unit] [OFFSET o [unit]] WATTR a``.

    >>> parse_window("CUMULATE STEP 1 HOUR SIZE 1 DAY OFFSET -2 HOURS WATTR ts")
    Cumulating(step=3600, size=86400, wattr='ts', offset=-7200)
    >>> parse_window("CUMULATE STEP 1 HOUR WATTR ts")
    Traceback (most recent call last):
    wid.errors.WidError: missing SIZE in [CUMULATE STEP 1 HOUR WATTR ts]
    """
    extra = sorted(set(params) - {"CUMULATE", "STEP", "SIZE", "OFFSET", "WATTR"})
    if extra or params["CUMULATE"]:
        what = ", ".join(extra) or " ".join(params["CUMULATE"])
        raise WidError(f"a cumulating window takes STEP, SIZE, OFFSET and WATTR, not {what} in [{clause}]")
    for required in ("STEP", "SIZE", "WATTR"):
        if required not in params:
            raise WidError(f"missing {required} in [{clause}]{_misspelt(required, clause)}")
    (step, step_unit), (size, size_unit) = (_measure(params[k], k, clause) for k in ("STEP", "SIZE"))
    offset, offset_unit = _measure(params["OFFSET"], "OFFSET", clause) if "OFFSET" in params else (0, None)
    if ROWS in (step_unit, size_unit, offset_unit) or step is None or size is None:
        raise WidError(f"a cumulating window needs STEP and SIZE on a value attribute (not ROWS or UNBOUNDED) "
                       f"in [{clause}]")
    return Cumulating(step, size, _attribute(params, "WATTR", clause), offset=offset)


def _calendar(params: dict[str, list[str]], clause: str) -> Calendar:
    """``RANGE n cal SLIDE m cal WATTR a [TIMEZONE 'z'] [WEEKSTART 'd']``: whole periods, one unit.

    >>> parse_window("RANGE 3 MONTHS SLIDE 1 MONTH WATTR ts TIMEZONE 'Europe/Berlin'")
    Calendar(range=3, slide=1, unit='MONTH', wattr='ts', zone='Europe/Berlin')
    >>> parse_window("RANGE 1 MONTH SLIDE 1 DAY WATTR ts")
    Traceback (most recent call last):
    wid.errors.WidError: a calendar window has RANGE and SLIDE in the same unit, got MONTH and DAY in [RANGE 1 MONTH SLIDE 1 DAY WATTR ts]
    """
    extra = sorted(set(params) - {"RANGE", "SLIDE", "WATTR", "TIMEZONE", "WEEKSTART"})
    if extra:
        raise WidError(f"a calendar window takes RANGE, SLIDE, WATTR, TIMEZONE and WEEKSTART, not {', '.join(extra)} "
                       f"in [{clause}]")
    for required in ("RANGE", "SLIDE", "WATTR"):
        if required not in params:
            raise WidError(f"missing {required} in [{clause}]{_misspelt(required, clause)}")
    units = []
    for keyword in ("RANGE", "SLIDE"):
        words = params[keyword]
        if len(words) != 2 or _unit(words[1]) is None:
            raise WidError(f"{keyword} of a calendar window needs a whole number and a unit (DAYS, WEEKS, MONTHS, "
                           f"QUARTERS, YEARS) in [{clause}]")
        units.append(_unit(words[1]))
    if units[0] != units[1]:
        raise WidError(f"a calendar window has RANGE and SLIDE in the same unit, got {units[0]} and {units[1]} "
                       f"in [{clause}]")
    if units[0] not in CALENDAR:
        raise WidError(f"TIMEZONE applies to DAYS, WEEKS, MONTHS, QUARTERS and YEARS; {units[0]}S are fixed-length "
                       f"(align them with OFFSET) in [{clause}]")
    texts = {}
    for keyword in ("TIMEZONE", "WEEKSTART"):
        words = params.get(keyword)
        if words is not None and (len(words) != 1 or words[0][:1] not in "'\"" or not words[0]):
            raise WidError(f"{keyword} needs a quoted name, e.g. {keyword} 'Europe/Berlin', in [{clause}]"
                           if keyword == "TIMEZONE" else f"{keyword} needs a quoted day, e.g. WEEKSTART 'SUNDAY', "
                           f"in [{clause}]")
        texts[keyword] = words[0][1:-1] if words else None
    amounts = [_number(params[k][0], k, clause) for k in ("RANGE", "SLIDE")]
    return Calendar(*amounts, units[0], _attribute(params, "WATTR", clause), zone=texts["TIMEZONE"],
                    weekstart=texts["WEEKSTART"] or "MONDAY")


def _slide_by_tuple(
    range_: Number | None, range_unit: str | None, rattr: str, slide: Number, slide_unit: str | None,
    sattr: str, clause: str,
) -> WindowSpec:
    if range_ is None or range_unit == ROWS:
        raise WidError(f"a slide-by-tuple window needs a RANGE on RATTR {rattr} in [{clause}]")
    if slide_unit != ROWS:
        raise WidError(f"a slide-by-tuple window slides by n ROWS in [{clause}]")
    if sattr.lower() == f"rank({rattr.lower()})":
        return SlideByRank(range_, rattr, slide)
    if sattr.startswith("rank("):
        raise WidError(f"SATTR rank(...) must rank RATTR {rattr} in [{clause}]")
    if sattr.lower() != "row_num":
        raise WidError(f"SATTR is row_num (arrival order) or rank({rattr}), got {sattr} in [{clause}]")
    if slide == 1:
        return SlideByTuple(range_, rattr)
    return SlideByRows(range_, rattr, slide)


def _gap_text(clause: str) -> str:
    """The text of ``clause`` after ``SESSION`` up to the next keyword, as written.

    >>> _gap_text("SESSION IF(k = 'a', 10, 5) SECONDS WATTR ts")
    "IF(k = 'a', 10, 5) SECONDS"
    """
    spans = _spans(clause)
    first = next(i for i, m in enumerate(spans) if m.group(1).upper() == "SESSION") + 1
    last = next((i for i in range(first, len(spans)) if spans[i].group(1).upper() in _KEYWORDS), len(spans))
    return clause[spans[first].start(1):spans[last - 1].end(1)] if last > first else ""


def _session(params: dict[str, list[str]], clause: str) -> Session:
    """``SESSION g [unit] WATTR a [PATTR p]``: ``g`` in seconds for time units, else raw; a lone
    number is the constant gap, anything else a Spark SQL expression evaluated per tuple (scaled
    to seconds for time units).

    >>> parse_window("SESSION CASE WHEN k = 'a' THEN 10 ELSE 5 END MINUTES WATTR ts").gap
    "(CASE WHEN k = 'a' THEN 10 ELSE 5 END) * 60"
    >>> parse_window("SESSION gap_s WATTR ts").gap, parse_window("SESSION 2 SECONDS WATTR ts").gap
    ('gap_s', 2)
    """
    extra = sorted(set(params) - {"SESSION", "WATTR", "PATTR"})
    if extra:
        raise WidError(f"a session window takes SESSION, WATTR and PATTR, not {', '.join(extra)} in [{clause}]")
    words = params["SESSION"]
    unit = _unit(words[-1]) if len(words) > 1 else None
    amount = words[:-1] if unit else words
    if len(amount) == 1 and re.fullmatch(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|(?i:UNBOUNDED)", amount[0]) or not amount:
        gap, unit = _measure(words, "SESSION", clause)
    else:
        text = _gap_text(clause)
        text = text[:len(text) - len(words[-1])].rstrip() if unit else text
        gap = f"({text}) * {SECONDS[unit]}" if unit in SECONDS and SECONDS[unit] != 1 else text
    if gap is None or unit == ROWS:
        raise WidError(f"SESSION needs a gap on the window attribute (not UNBOUNDED or ROWS) in [{clause}]")
    wattr = _attribute(params, "WATTR", clause)
    if wattr is None:
        raise WidError(f"missing WATTR in [{clause}]")
    return Session(gap, wattr, _attribute(params, "PATTR", clause))
