"""Streams: punctuation generators (:mod:`~wid.stream.punctuate`), arrival order, and replay
(:func:`wid.replay`: what a streaming WID query would have emitted, when, and what it missed,
per kind), with the running scans and metrics they use; live mode (:mod:`wid.stream.live`) runs
the same on Structured Streaming. It imports the compiler and the stages below it.
"""
