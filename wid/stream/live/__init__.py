"""Live mode (:func:`wid.live`): the streaming job that :func:`wid.replay` describes, on Spark
Structured Streaming: the query compiled for a stream, Bucket on each micro-batch, a stateful
step (pane partials per key, or sessions, or an operator's buffers) and the output. It imports
:mod:`wid.stream` and the stages below. Its stateful step's modules run in Spark's Python
workers: they import only what the step needs, never the engine (:mod:`wid.stream.live.job`).
"""
