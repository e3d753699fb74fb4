"""Arrival order for data that has none: :func:`arrival` adds the ``row_num`` column.

Only what reads arrival order needs ``row_num`` (:attr:`wid.windows.base.WindowSpec.reads_arrival`:
ROWS windows over ``row_num``, ``SLIDE n ROWS`` with n > 1, SPL and Flink windows; replay and
live mode always); a file of events without one gets it here, ordered by its own columns or by
where each tuple lies in the files.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from wid.bucket.columns import attribute_type
from wid.errors import WidError
from wid.windows.sqlexpr import column, columns

ROW_NUM = "row_num"
#: Where a tuple lies in the source: the file it was read from and its id in the scan.
_FILE, _SCANNED = "_wid_file", "_wid_scanned"


def arrival(df: DataFrame, by: str | Sequence[str] | None = None) -> DataFrame:
    """``df`` with a ``row_num`` column first (long, 0-based, unique): the tuples ordered by the
    columns ``by`` (ascending, NULLs first as in Spark's ``ORDER BY``), ties broken by position
    in the source; with ``by`` None, by position in the source alone.

    The position in the source is the file's path, then the tuple's place within the file
    (``input_file_name()`` and ``monotonically_increasing_id()``, taken right over the scan):
    the same files give the same ``row_num`` in every run, whatever the split size or the
    parallelism (Spark reads a file's splits in the order of their offsets, into partitions
    numbered in that order: the ids change with the configuration, their order within a file
    does not). That holds for a scan of files (filters and projections over it are fine; a
    union orders all its sources' files by their paths); data that is not read from files
    (``createDataFrame``) is in its partitions' order, the same for the same data and
    configuration. The numbering is one ``row_number()`` over the whole stream, a sort in a
    single partition: meant for files of a size to query ad hoc, not for billions of rows.

    Events without ``row_num``, two at the same ``ts``: the earlier one in the source comes first.

    >>> events = spark.createDataFrame([(4.0, "a"), (1.0, "b"), (4.0, "c"), (None, "d")], "ts double, k string")
    >>> arrival(events, by="ts").show()
    +-------+----+---+
    |row_num|  ts|  k|
    +-------+----+---+
    |      0|NULL|  d|
    |      1| 1.0|  b|
    |      2| 4.0|  a|
    |      3| 4.0|  c|
    +-------+----+---+
    <BLANKLINE>
    >>> [r.k for r in arrival(events).orderBy("row_num").collect()]  # position in the source alone
    ['a', 'b', 'c', 'd']
    >>> arrival(events, by=["ts", "key"])
    Traceback (most recent call last):
    wid.errors.WidError: unknown column 'key' (columns: ts, k)
    >>> arrival(arrival(events))
    Traceback (most recent call last):
    wid.errors.WidError: the data already has a row_num column: wid.arrival adds one (drop or rename it first)
    """
    names = [by] if isinstance(by, str) else list(by or [])
    if not all(isinstance(name, str) for name in names):
        raise WidError(f"wid.arrival orders by column names (a string or a list of them), got {by!r}")
    if df.isStreaming:
        raise WidError("wid.arrival numbers a batch DataFrame: a stream's rows must come with their row_num")
    if any(c.lower() == ROW_NUM for c in df.columns):
        raise WidError("the data already has a row_num column: wid.arrival adds one (drop or rename it first)")
    for name in names:
        attribute_type(df, name)
    try:
        located = df.select("*", F.input_file_name().alias(_FILE), F.monotonically_increasing_id().alias(_SCANNED))
        located.schema  # noqa: B018 - resolves now (classic and Connect)
    except AnalysisException:  # input_file_name() over a join of several sources
        raise WidError("wid.arrival reads each tuple's position in its source, which a join of several sources "
                       "does not have: add row_num to one source before the join") from None
    order = [column(name).asc_nulls_first() for name in names] + [F.col(_FILE), F.col(_SCANNED)]
    # one partition, named as such: Spark warns on every window without a partition
    number = (F.row_number().over(Window.partitionBy(F.lit(0)).orderBy(*order)) - 1).cast("long").alias(ROW_NUM)
    return located.select(number, *columns(df.columns))
