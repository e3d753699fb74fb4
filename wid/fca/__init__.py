"""FCA windows: slide-by-tuple ``[RANGE r RATTR a SLIDE n ROWS SATTR row_num | rank(a)]``.

The window-ids are rattr values ``x``; extent(w) = {u : w - r < u.x <= w} (SPEC section 2).

- :mod:`wid.fca.bucket`: each tuple's maximal id range ``x <= w < x + r`` and whether it
  defines a window (``wid_window``); binding ids to tuples is left to the aggregate.
- :mod:`wid.fca.bins`: the paper's start and end bins (section 6), processtuple and the purge
  of processpunctuation.
- :mod:`wid.fca.aggregate`: the bins scanned per chunk of the x axis (Arrow grouped
  functions), and :mod:`wid.fca.joined`, the plain Spark SQL range join (the reference).
- :mod:`wid.fca.replay`: bins emitted and purged on punctuation (``wid.replay``).
"""

from wid.fca.aggregate import aggregate, binned_aggregate
from wid.fca.bins import Bins
from wid.fca.bucket import WID_IN, WID_WINDOW, bucket, ids
from wid.fca.joined import joined_aggregate

__all__ = ["WID_IN", "WID_WINDOW", "Bins", "aggregate", "binned_aggregate", "bucket", "ids", "joined_aggregate"]
