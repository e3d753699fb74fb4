"""Query syntaxes besides the paper's bracket clause, as front ends onto the same window kinds.

Each front end reads a query in another engine's syntax and gives the same query in wid's own
syntax plus the shape of that engine's result (:class:`wid.compiler.syntax.shape.Translation`):
:mod:`wid.compiler.syntax.spark` (``GROUP BY window(...)`` and ``session_window(...)``). The
compiler parses the translated text as any other query; below it, nothing knows which syntax
a query used.
"""

from __future__ import annotations

from wid.compiler.syntax import spark
from wid.compiler.syntax.shape import Translation

#: The front ends, tried in order on a query without a bracket clause.
FRONT_ENDS = (spark.translate,)


def translate(text: str) -> Translation | None:
    """``text`` in wid's own syntax, by the first front end that reads it; None: none does.

    >>> translate("SELECT window, count(*) FROM t GROUP BY window(ts, '1 minute')").text
    'SELECT COUNT(*) AS `_wid_agg0` FROM t [RANGE 60 SECONDS SLIDE 60 SECONDS WATTR `ts`]'
    >>> translate("SELECT count(*) FROM t") is None
    True
    """
    for front_end in FRONT_ENDS:
        found = front_end(text)
        if found is not None:
            return found
    return None
