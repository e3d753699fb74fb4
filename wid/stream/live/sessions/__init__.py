"""Live mode's stateful step for session windows: sessions formed per key as tuples come
(:mod:`~wid.stream.live.sessions.steps`), their state (:mod:`~wid.stream.live.sessions.state`)
and the scans over it. It imports :mod:`wid.stream.sessions` (replay's state machine).
"""
