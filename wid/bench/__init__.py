"""Benchmarks and experiments: ``wid bench`` (wid against Spark's ``window()`` and a tumbling
group-by in the same run, ``--scale``, ``--live``) and ``wid experiment`` (latency-accuracy
curves of punctuation schemes). Front ends: they may import every stage; nothing imports them
but the command line.
"""
