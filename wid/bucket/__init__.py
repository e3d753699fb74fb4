"""Bucket: tag each tuple, and each punctuation, with a range of window-ids (``wid_lo``,
``wid_hi``), as Spark Column expressions where the kind allows, else a scan in Python
(:mod:`wid.bucket.spl`, :mod:`wid.bucket.flink`). :mod:`wid.bucket.kinds` finds each kind's
tagger. It imports the specs and :mod:`wid.errors`.
"""
