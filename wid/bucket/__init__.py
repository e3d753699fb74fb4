"""Bucket: tag each tuple, and each punctuation, with a range of window-ids (wid_lo, wid_hi)."""
