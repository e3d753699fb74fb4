"""Query syntaxes besides the paper's bracket clause, as front ends onto the same window kinds.

Each front end reads a query in another engine's syntax and gives the same query in wid's own
syntax plus the shape of that engine's result (:class:`wid.compiler.syntax.shape.Translation`):
:mod:`wid.compiler.syntax.spark` (``GROUP BY window(...)`` and ``session_window(...)``) and
:mod:`wid.compiler.syntax.flink` (Flink SQL's window table-valued functions, ``FROM
TABLE(TUMBLE(...))``). The
compiler parses the translated text as any other query; below it, nothing knows which syntax
a query used.
"""

from __future__ import annotations

from wid.compiler.syntax import flink, spark
from wid.compiler.syntax.shape import Translation

#: The front ends, tried in order on a query without a bracket clause: ``(uses, translate)``, where
#: ``uses(text)`` says whether the text is written in that syntax (without checking it).
FRONT_ENDS = ((spark.uses, spark.translate), (flink.uses, flink.translate))


def uses(text: str) -> bool:
    """``text`` is written in a syntax a front end reads (its errors are then wid's to report).

    >>> uses("SELECT count(*) FROM t GROUP BY session_window(ts, '5 seconds')"), uses("SELECT 1")
    (True, False)
    """
    return any(claims(text) for claims, _ in FRONT_ENDS)


def translate(text: str) -> Translation | None:
    """``text`` in wid's own syntax, by the first front end that reads it; None: none does.

    >>> translate("SELECT window, count(*) FROM t GROUP BY window(ts, '1 minute')").text
    'SELECT COUNT(*) AS `_wid_agg0` FROM t [RANGE 60 SECONDS SLIDE 60 SECONDS WATTR `ts`]'
    >>> translate("SELECT count(*) FROM t") is None
    True
    """
    for _, front_end in FRONT_ENDS:
        found = front_end(text)
        if found is not None:
            return found
    return None
