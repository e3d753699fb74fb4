"""The window-agnostic aggregate: ranges of window-ids in, one row per (keys, wid) out. It never
sees a window spec: it imports :mod:`wid.bucket`'s column names and the spec layer's number and
SQL-text helpers, no window kind.
"""
