"""wid: Window-ID (WID) window aggregates on Spark SQL (Li et al., SIGMOD 2005).

Bucket tags tuples with ranges of window-ids, a window-agnostic aggregate groups
by them, punctuations decide when an extent is complete.

The public names load on first use: a Python worker that runs one stage (a live query's
stateful step, its packing) imports only that stage's modules, and Spark's driver-side process
that reads a live query's state schemas imports no engine at all.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"WidError": "wid.errors", "query": "wid.compiler", "register": "wid.sql", "create_view": "wid.sql",
          "run_sql": "wid.sql", "to_sql": "wid.sqltext", "replay": "wid.stream.replay",
          "Replay": "wid.stream.replay", "live": "wid.stream.live", "Live": "wid.stream.live"}

__all__ = ["WidError", "query", "register", "create_view", "run_sql", "to_sql", "punctuate", "replay", "Replay",
           "live", "Live"]


def __getattr__(name: str) -> Any:
    if name == "punctuate":  # the module of generators
        value = importlib.import_module("wid.stream.punctuate")
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'wid' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
