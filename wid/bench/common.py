"""What every ``wid bench`` measurement shares: the cached traffic stream as the view
:data:`VIEW`, progress lines on the ``wid`` logger, and the time of one full evaluation."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession

from wid.console import log
from wid.datasets.traffic import traffic

VIEW = "traffic"


@contextmanager
def cached(spark: SparkSession, rows: int, segments: int = 50) -> Iterator[DataFrame]:
    """``traffic(spark, rows, segments)``, cached, counted and registered as the view ``traffic``
    while the block runs.

    >>> with cached(spark, 5, segments=3) as data:
    ...     print(data.is_cached, spark.table("traffic").count())
    True 5
    >>> data.is_cached, spark.catalog.tableExists("traffic")
    (False, False)
    """
    data = traffic(spark, rows, segments).cache()
    data.count()
    data.createOrReplaceTempView(VIEW)
    try:
        yield data
    finally:
        data.unpersist()
        spark.catalog.dropTempView(VIEW)


def progress_lines() -> Callable[[str], None]:
    """A logger of progress lines, each with the seconds since it was made.

    >>> import unittest
    >>> progress = progress_lines()
    >>> with unittest.TestCase().assertLogs("wid", "INFO") as logged:
    ...     progress("built the stream")
    >>> logged.output  # doctest: +ELLIPSIS
    ['INFO:wid:[    ... s] built the stream']
    """
    started = time.perf_counter()

    def progress(message: str) -> None:
        log.info("[%7.1f s] %s", time.perf_counter() - started, message)

    return progress


def timed(build: Callable[[], DataFrame]) -> float:
    """Wall-clock seconds to build a DataFrame and evaluate it in full (the ``noop`` sink).

    >>> built = []
    >>> seconds = timed(lambda: built.append(1) or spark.table("readings").groupBy("k").count())
    >>> built, isinstance(seconds, float) and seconds > 0
    ([1], True)
    """
    start = time.perf_counter()
    build().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start
