"""Errors raised for bad input (docs/semantics.md section 11): each names the problem."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.logger import PySparkLogger

#: PySpark's loggers of the query context of each error it captures from Spark (pyspark.logger):
#: JSON lines with Spark's full message, plan and stack trace on stderr.
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class WidError(ValueError):
    """A malformed window clause or query, a bad parameter, or bad window-attribute data.

    >>> from wid.windows.clause import parse_window
    >>> issubclass(WidError, ValueError)
    True
    >>> parse_window("RANGE -5 SLIDE 1 WATTR ts")
    Traceback (most recent call last):
    wid.errors.WidError: RANGE must be positive, got -5 in [RANGE -5 SLIDE 1 WATTR ts]
    """


@contextmanager
def quiet_analysis() -> Iterator[None]:
    """While open, PySpark logs no query context of the errors it captures (:data:`QUERY_CONTEXT_LOGGERS`):
    wid reports those it turns into a :class:`WidError` in one line instead. Nested uses restore
    what they found.

    >>> context = PySparkLogger.getLogger("SQLQueryContextLogger")
    >>> with quiet_analysis():
    ...     context.disabled
    True
    >>> context.disabled
    False
    """
    # PySpark's own logger class: a plain Logger made here first would break PySpark's later logging calls
    loggers = [PySparkLogger.getLogger(name) for name in QUERY_CONTEXT_LOGGERS]
    saved = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, saved):
            logger.disabled = disabled
