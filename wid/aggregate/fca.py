"""FCA Aggregate: the bins (:mod:`wid.aggregate.bins`) per key partition, on chunks of the x axis.

The stream is cut along ``x`` into chunks (a tuple joins every chunk its id range meets),
so a non-partitioned stream still runs on many Spark tasks; all keys of a chunk share its
windows. Each chunk is scanned by an Arrow grouped function: per key, each window's partial is
what the bins would hold at it once every tuple is in, computed directly
(:func:`wid.aggregate.bins.at_windows`: the tuples with ``x <= w < e(x)``). :mod:`wid.aggregate.joined`
is the plain Spark SQL formulation; it serves the aggregates the bins do not hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    DataType,
    DecimalType,
    DoubleType,
    IntegralType,
    LongType,
    NumericType,
    StructField,
    StructType,
)

from wid.aggregate.bin_columns import columns, output, partials
from wid.aggregate.bins import at_windows
from wid.aggregate.joined import joined_aggregate
from wid.aggregate.partials import Aggregate
from wid.bucket.columns import WID, WID_HI, WID_IN, WID_WINDOW, WID_X, rattr_value
from wid.bucket.fca import CHUNK, HOME, chunked, contributes
from wid.bucket.plain import PlainNames
from wid.errors import WidError
from wid.windows.numbers import LIMIT, Number, as_number
from wid.windows.sqlexpr import column

#: Tuples per chunk the bins formulation aims at.
CHUNK_ROWS = 50_000


def aggregate(tagged: DataFrame, r: Number, dtype: DataType, keys: list[str], aggregates: list[Aggregate],
              method: str = "bins", chunk_rows: int = CHUNK_ROWS) -> DataFrame:
    """One row per ``(keys, wid)`` whose extent holds a contributing tuple of the group (``r``
    the RANGE in ``wid_x`` units, ``dtype`` the rattr's type: :func:`wid.bucket.fca.units`):
    ``keys``, ``wid`` (of the rattr's type) and one column per aggregate, typed as Spark's
    aggregate. ``method``: ``"bins"`` (the default; falls back to ``"sql"`` for aggregates
    the bins cannot hold) or ``"sql"`` (:func:`joined_aggregate`); ``chunk_rows`` sizes the
    bins' chunks (:func:`binned_aggregate`).

    RANGE 2 on ``ts``: a window at every tuple's ``ts``, shared by the keys, holding ``w - 2 < ts <= w``:

    >>> from wid.bucket.fca import bucket
    >>> from wid.windows.aware import SlideByTuple
    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2, "ts"))
    >>> out = aggregate(tagged, 2, DoubleType(), ["k"], [Aggregate("total", "sum", "v")])
    >>> sorted(tuple(row) for row in out.collect())
    [('a', 1.0, 5), ('a', 2.5, 5), ('a', 4.0, 7), ('a', 9.0, 2), ('b', 2.5, 1), ('b', 4.0, 1)]
    """
    if method not in ("bins", "sql"):
        raise WidError(f"unknown FCA method {method!r}: bins or sql")
    numeric = numeric_types(tagged, aggregates)
    if method == "sql" or numeric is None:
        out = joined_aggregate(tagged, r, keys, aggregates)
    else:
        out = binned_aggregate(tagged, r, keys, aggregates, numeric, chunk_rows)
    return typed(out, tagged, dtype, keys, aggregates)


def typed(out: DataFrame, tagged: DataFrame, dtype: DataType, keys: list[str], aggregates: list[Aggregate],
          *extra: str) -> DataFrame:
    """``keys``, ``wid`` as a value of the rattr's type ``dtype``, the aggregates typed as Spark's, ``extra``.

    A sum of longs is a long, as Spark's:

    >>> out = spark.createDataFrame([("a", 4.0, 12.0, 6.0)], "k string, wid double, total double, mean double")
    >>> aggregates = [Aggregate("total", "sum", "v"), Aggregate("mean", "avg", "v")]
    >>> typed(out, spark.table("readings"), DoubleType(), ["k"], aggregates).dtypes
    [('k', 'string'), ('wid', 'double'), ('total', 'bigint'), ('mean', 'double')]
    """
    types = tagged.groupBy().agg(*[a.direct().alias(a.alias) for a in aggregates]).schema
    return out.select(*map(column, keys), rattr_value(column(WID), dtype).alias(WID),
                      *[column(f.name).cast(f.dataType) for f in types.fields], *map(column, extra))


def numeric_types(tagged: DataFrame, aggregates: list[Aggregate]) -> dict[str, np.dtype] | None:
    """The numpy type the bins reduce each sum/avg/min/max column in; None when some
    aggregate is not one the bins hold (``fn="sql"``, decimals, non-numbers).

    >>> aggregates = [Aggregate("n", "count"), Aggregate("s", "sum", "v"), Aggregate("m", "max", "ts")]
    >>> numeric_types(spark.table("readings"), aggregates)
    {'v': dtype('int64'), 'ts': dtype('float64')}
    >>> numeric_types(spark.table("readings"), [Aggregate("x", "sql", "max_by(k, v)")]) is None
    True
    """
    types = {f.name: f.dataType for f in tagged.schema.fields}
    out = {}
    for a in aggregates:
        if a.fn == "sql":
            return None
        if a.arg is None or a.fn == "count":
            continue
        dtype = types[a.arg]
        if isinstance(dtype, IntegralType):
            out[a.arg] = np.dtype(np.int64)
        elif isinstance(dtype, NumericType) and not isinstance(dtype, DecimalType):
            out[a.arg] = np.dtype(np.float64)
        else:
            return None
    return out


#: Whether a chunk's row defines one of its windows (the tuple's home chunk, and ``wid_window``).
DEFINES = "_wid_defines"


@dataclass(frozen=True)
class Chunks:
    """The scan's input ``rows``: each tuple (keys, values, ``row_num``, ``wid_x``, ``wid_in``
    when the query has a WHERE, :data:`DEFINES`) once per chunk its range meets, where it
    contributes or defines a window; chunk ``c`` holds the windows ``c*width <= w < (c+1)*width``,
    for ``first <= c <= last``.

    Chunks 2 wide: the tuple at 4.0 (ids ``[4, 6)``) is in chunk 2, its home, where it defines window 4.0, and in
    chunk 3, that of its end 6.0:

    >>> from wid.bucket.fca import bucket
    >>> from wid.windows.aware import SlideByTuple
    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2, "ts"))
    >>> rows = chunk_rows_of(tagged, 2, [], [Aggregate("n", "count")], chunk_rows=1).rows
    >>> sorted((row[CHUNK], row[DEFINES]) for row in rows.where("wid_x = 4.0").collect())
    [(2, True), (3, False)]
    """

    rows: DataFrame
    width: Number
    first: int
    last: int


def chunk_rows_of(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate],
                  chunk_rows: int = CHUNK_ROWS, arrival: bool = True) -> Chunks:
    """The :class:`Chunks`: equal pieces of the x axis, at least ``r`` wide, about
    ``chunk_rows`` tuples each but at most twice as many as shuffle partitions; cutting them
    runs one Spark job now (min, max and count of x). ``first``/``last`` have a chunk of margin
    (:func:`wid.bucket.fca.chunk_of` may round). ``arrival``: the rows keep ``row_num``.

    ``ts`` spans 1.0 to 9.0: at one tuple per chunk, 4 chunks of ``8 / 4 = 2`` (at least the RANGE, 2); then
    ``first = floor(1.0 / 2) - 1`` and ``last = floor((9.0 + 2) / 2) + 1``:

    >>> from wid.bucket.fca import bucket
    >>> from wid.windows.aware import SlideByTuple
    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2, "ts"))
    >>> chunks = chunk_rows_of(tagged, 2, [], [Aggregate("n", "count")], chunk_rows=1)
    >>> chunks.width, chunks.first, chunks.last
    (2, -1, 6)
    """
    most = 2 * int(tagged.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    low, high, count = tagged.agg(F.min(WID_X), F.max(WID_X), F.count("*")).first()
    pieces = max(1, min(most, count // chunk_rows))
    span = Decimal(high) - Decimal(low) if low is not None else 0
    width = min(max(r, as_number(math.ceil(span / pieces) if isinstance(r, int) else float(span / pieces), "width")),
                LIMIT)  # a long literal
    values = sorted({a.arg for a in aggregates if a.arg is not None})
    order = ["row_num"] if arrival and "row_num" in tagged.columns and "row_num" not in keys + values else []
    where = [contributes(tagged).alias(WID_IN)] if WID_IN in tagged.columns else []  # else all contribute
    rows = chunked(tagged.select(*map(column, [*keys, *values, *order]), WID_X, WID_HI, WID_WINDOW, *where), width)
    rows = rows.select(*map(column, [*keys, *values, *order]), WID_X, *where and [WID_IN],
                       ((column(HOME) == 0) & column(WID_WINDOW)).alias(DEFINES), CHUNK)
    if where:
        rows = rows.where(column(WID_IN) | column(DEFINES))
    if low is None:
        return Chunks(rows, width, 0, -1)
    decimal = isinstance(tagged.schema[WID_X].dataType, DecimalType)
    return Chunks(rows, width, _chunk(low, width, decimal) - 1, _chunk(Decimal(high) + r, width, decimal) + 1)


def _chunk(v: Number, width: Number, decimal: bool) -> int:
    """:func:`wid.bucket.fca.chunk_of` of ``v`` as Spark computes it: exactly for decimals, by a
    division of doubles for longs and doubles (near 2**61 the chunks of longs are those of their
    doubles, so the edges must be too)."""
    return math.floor(Decimal(v) / Decimal(width)) if decimal else math.floor(float(v) / float(width))


def bins_schema(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate],
                numeric: dict[str, np.dtype], *extra: StructField) -> StructType:
    """The scan's output: ``keys``, ``wid`` (x units), the aggregates as the bins hold them, ``extra``.

    >>> tagged = spark.table("readings").withColumn(WID_X, column("ts"))
    >>> aggregates = [Aggregate("n", "count"), Aggregate("s", "sum", "v"), Aggregate("m", "avg", "v")]
    >>> bins_schema(tagged, 2, ["k"], aggregates, {"v": np.dtype(np.int64)}).simpleString()
    'struct<k:string,wid:double,n:bigint,s:bigint,m:double>'
    """
    fields = {f.name: f for f in tagged.schema.fields}
    return StructType([
        *[fields[k] for k in keys],
        StructField(WID, fields[WID_X].dataType),
        *[StructField(a.alias, _bins_type(a, numeric)) for a in aggregates],
        *extra,
    ])


def _bins_type(a: Aggregate, numeric: dict[str, np.dtype]) -> DataType:
    if a.fn == "count" or (a.fn in ("sum", "min", "max") and numeric[a.arg].kind == "i"):
        return LongType()
    return DoubleType()


#: Arrow's integers as pandas' nullable ones: beside a NULL, longs stay exact (not doubles).
NULLABLE = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
            pa.int64(): pd.Int64Dtype()}


def arrow_schema(schema: StructType) -> pa.Schema:
    """``schema`` as Arrow's, timestamps in UTC (as the Arrow batches Spark hands Python).

    >>> from pyspark.sql.types import TimestampType
    >>> schema = StructType([StructField("wid", TimestampType()), StructField("n", LongType())])
    >>> [str(t) for t in arrow_schema(schema).types]
    ['timestamp[us, tz=UTC]', 'int64']
    """
    return to_arrow_schema(schema, timezone="UTC")


def by_key(table: pa.Table, keys: list[str]) -> list[np.ndarray]:
    """The row indices of each key partition of ``table``, as Spark groups: a NULL key and a NaN
    key apart (pandas reads both as NaN, so a floating key is grouped with its NaN mask too).

    >>> k = pa.array([float("nan"), None, 1.5, None], pa.float64())
    >>> [rows.tolist() for rows in by_key(pa.table({"k": k}), ["k"])]
    [[0], [1, 3], [2]]
    >>> [rows.tolist() for rows in by_key(pa.table({"k": [2**53, 2**53 + 1, None]}), ["k"])]
    [[0], [1], [2]]
    """
    if not keys:
        return [np.arange(table.num_rows)]
    frame = table.select(keys).to_pandas(types_mapper=NULLABLE.get)  # long keys past 2**53 apart beside a NULL
    nans = {f"_wid_nan_{i}": pc.is_nan(table.column(k)).to_pandas() for i, k in enumerate(keys)
            if pa.types.is_floating(table.column(k).type)}
    frame = frame.assign(**nans)
    return list(frame.groupby([*keys, *nans], sort=False, dropna=False).indices.values())


def windows_of(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's windows (sorted) and the row indices of their defining tuples.

    >>> table = pa.table({WID_X: [4.0, 1.0, 4.0, 2.5], DEFINES: [True, False, True, True]})
    >>> [a.tolist() for a in windows_of(table)]
    [[2.5, 4.0], [0, 2, 3]]
    """
    defines = table.column(DEFINES).to_numpy(zero_copy_only=False)
    windows = np.sort(table.column(WID_X).to_numpy()[defines])
    return windows[np.r_[True, windows[1:] != windows[:-1]] if len(windows) else []], np.flatnonzero(defines)


def contributing_rows(table: pa.Table) -> pa.Table:
    """The rows of a chunk that contribute to its windows' extents (:class:`Chunks`).

    A NULL ``wid_in`` does not contribute; without ``wid_in`` every row does:

    >>> table = pa.table({WID_X: [4.0, 1.0, 2.5], WID_IN: pa.array([True, None, False])})
    >>> contributing_rows(table).to_pylist(), contributing_rows(table.drop_columns([WID_IN])).num_rows
    ([{'wid_x': 4.0, 'wid_in': True}], 3)
    """
    return table.filter(table.column(WID_IN)) if WID_IN in table.column_names else table


def binned_aggregate(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate],
                     numeric: dict[str, np.dtype], chunk_rows: int = CHUNK_ROWS) -> DataFrame:
    """The bins formulation (``wid`` in x units) on the chunks of :func:`chunk_rows_of`.

    RANGE 2 on ``ts``: window 2.5 holds the values 5 and 1 (``ts`` 1.0 and 2.5), window 4.0 the values 1 and 7:

    >>> from wid.bucket.fca import bucket
    >>> from wid.windows.aware import SlideByTuple
    >>> tagged = bucket(spark.table("readings"), SlideByTuple(2, "ts"))
    >>> out = binned_aggregate(tagged, 2, [], [Aggregate("m", "avg", "v")], {"v": np.dtype(np.int64)})
    >>> sorted(tuple(row) for row in out.collect())
    [(1.0, 5.0), (2.5, 3.0), (4.0, 4.0), (9.0, 2.0)]
    """
    schema = bins_schema(tagged, r, keys, aggregates, numeric)
    kinds = partials(aggregates, numeric)
    arrival = any(kind == "sum" and dtype.kind == "f" for kind, _, dtype in kinds.values())  # ties: arrival order
    rows, names = PlainNames.of(chunk_rows_of(tagged, r, keys, aggregates, chunk_rows, arrival).rows)
    scan = _scanner(r, keys, aggregates, numeric, arrow_schema(schema))
    return rows.groupBy(CHUNK).applyInArrow(lambda table: scan(names.arrow(table)), schema)


def _scanner(r: Number, keys: list[str], aggregates: list[Aggregate], numeric: dict[str, np.dtype],
             schema: pa.Schema) -> Callable[[pa.Table], pa.Table]:
    """The grouped function: one chunk in, one row per (window of the chunk, key) out, read
    from the bins once every tuple is in (:func:`wid.aggregate.bins.at_windows`)."""
    kinds = partials(aggregates, numeric)

    def scan(table: pa.Table) -> pa.Table:
        windows = windows_of(table)[0]
        contributing = contributing_rows(table)
        if "row_num" in table.column_names:
            contributing = contributing.take(np.argsort(contributing.column("row_num").to_numpy(), kind="stable"))
        pieces = []
        for rows in by_key(contributing, keys):
            part = contributing.take(pa.array(rows)) if keys else contributing
            result = at_windows(kinds, r, part.column(WID_X).to_numpy(), columns(part, kinds, numeric), windows)
            pieces.append(output(part, keys, windows, result, aggregates, schema))
        return pa.concat_tables(pieces) if pieces else schema.empty_table()

    return scan
