"""Bucket for IBM SPL windows (seeds 000, 003, 004): each tuple's range of triggers, from its
insertion to its eviction, by compiled Column paths (:mod:`~wid.bucket.spl.compiled`) or an
event-by-event scan (:mod:`~wid.bucket.spl.scan`). It imports the specs and :mod:`wid.bucket`.
"""
