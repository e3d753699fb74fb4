"""The query front end: the text of a window query (:mod:`~wid.compiler.text`), compiled into
Bucket, WHERE and the aggregate (:mod:`~wid.compiler.query`, :func:`wid.query`), with Spark's
analysis errors told in the user's columns (:mod:`~wid.compiler.analysis`). It composes the
stages below it (specs, Bucket, aggregate) and finds each kind's aggregate itself
(:mod:`~wid.compiler.kinds`); replay, live mode and the front ends build on it.
"""
