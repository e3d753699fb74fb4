"""wid: Window-ID (WID) window aggregates on Spark SQL (Li et al., SIGMOD 2005).

Bucket tags tuples with ranges of window-ids, a window-agnostic aggregate groups
by them, punctuations decide when an extent is complete.

The public names load on first use: a Python worker that runs one stage (a live query's
stateful step, its packing) imports only that stage's modules, and Spark's driver-side process
that reads a live query's state schemas imports no engine at all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from wid.compiler.query import query
    from wid.errors import WidError
    from wid.sql.views import create_view, register, run_sql
    from wid.sql.text import to_sql
    from wid.stream import punctuate
    from wid.stream.arrival import arrival
    from wid.stream.live.job import Live, live
    from wid.stream.replay import Replay, replay

_HOMES = {"WidError": "wid.errors", "query": "wid.compiler.query", "register": "wid.sql.views",
          "create_view": "wid.sql.views", "run_sql": "wid.sql.views", "to_sql": "wid.sql.text",
          "replay": "wid.stream.replay", "Replay": "wid.stream.replay", "live": "wid.stream.live.job",
          "Live": "wid.stream.live.job", "arrival": "wid.stream.arrival"}

__all__ = [*_HOMES, "punctuate"]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then a plain attribute)."""
    if name == "punctuate":  # the module of generators
        value = importlib.import_module("wid.stream.punctuate")
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'wid' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
