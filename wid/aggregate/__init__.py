"""The window-agnostic aggregate: ranges of window-ids in, one row per (keys, wid) out."""
