"""Bucket for Flink discretizations (Traub 2015, seed 001): each item's range of emissions, by
compiled paths (:mod:`~wid.bucket.flink.compiled`) or an event-by-event scan over each buffer
(:mod:`~wid.bucket.flink.scan`). It imports the specs and :mod:`wid.bucket`.
"""
