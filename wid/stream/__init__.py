"""Streams: punctuation generators, replay, running scans, metrics."""
