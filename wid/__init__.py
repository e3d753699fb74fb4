"""wid: Window-ID (WID) window aggregates on Spark SQL (Li et al., SIGMOD 2005).

Bucket tags tuples with ranges of window-ids, a window-agnostic aggregate groups
by them, punctuations decide when an extent is complete.
"""

from wid.errors import WidError
from wid.query import query
from wid.sql import create_view, register, run_sql
from wid.stream import punctuate
from wid.stream.live import Live, live
from wid.stream.replay import Replay, replay
from wid.sqltext import to_sql

__all__ = ["WidError", "query", "register", "create_view", "run_sql", "to_sql", "punctuate", "replay", "Replay",
           "live", "Live"]
