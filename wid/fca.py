"""FCA windows: slide-by-tuple ``[RANGE r RATTR a SLIDE n ROWS SATTR row_num | rank(a)]``.

The window-ids are rattr values ``x``; extent(w) = {u : w - r < u.x <= w} (SPEC section 2).

**Bucket** tags each tuple with its maximal id range ``wid_lo = x <= w < wid_hi = x + r``
and whether it defines a window (``wid_window``: every tuple; every n-th in arrival order;
every n-th in ``(x, row_num)`` order). Binding ids to tuples is left to the aggregate.

**Aggregate** (paper section 6, start and end bins): per key partition the state is a
sorted set of bins; the partial of bin ``b`` is the aggregate, over the tuples seen so far,
of extent(w) for every ``w`` from ``b`` up to the next bin. A tuple adds its start bin
``x`` and end bin ``x + r``, each initialised from the bin before it, then updates every
bin in ``[x, x + r)``. Tuples are consumed once, in arrival order, in batches; order does
not matter and no tuple is kept. A window's result is the partial of the bin at or before
it. The stream is cut along ``x`` into chunks (a tuple joins every chunk its id range
meets), so a non-partitioned stream still runs on many Spark tasks; all keys of a chunk
share its windows.

A punctuation with bound ``v`` (no later tuple with ``x < v``) completes every window
``w < v``: a scan that receives punctuations emits ``Bins.at`` for those windows and may
then drop the bins before the one covering ``v``.

:func:`joined_aggregate` is the plain Spark SQL formulation (each window joined with its
extent on chunks of width ``r``); it is the reference and serves the aggregates the bins
do not (``fn="sql"``, non-numeric or decimal values).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegralType,
    LongType,
    NumericType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from wid.aggregate import WID, Aggregate
from wid.bucket import WID_HI, WID_LO, WID_X, attribute_type, checked, numeric_value
from wid.errors import WidError
from wid.windows import Number, SlideByRank, SlideByRows, SlideByTuple, floor_div

#: The tuple defines a window: its ``x`` is a window-id.
WID_WINDOW = "wid_window"
#: The tuple passes the query's WHERE: it contributes to extents (it defines windows anyway).
WID_IN = "wid_in"
_CHUNK, _HOME = "_wid_chunk", "_wid_home"
#: Tuples per batch of the bin scan.
BATCH = 1 << 16
#: Tuples per chunk the bins formulation aims at.
CHUNK_ROWS = 50_000


def ids(df: DataFrame, spec: SlideByTuple) -> tuple[Column, DataType, SlideByTuple]:
    """``(x, rattr type, spec in x's units)``: x is checked (NULL/NaN fail the query)."""
    dtype = attribute_type(df, spec.rattr)
    x, factor = numeric_value(F.col(spec.rattr), dtype, spec.rattr)
    return checked(x, dtype, spec.rattr), dtype, spec.scaled(factor) if factor != 1 else spec


def bucket(df: DataFrame, spec: SlideByTuple) -> DataFrame:
    """``df`` plus ``wid_x``, the id range ``wid_lo = x <= w < wid_hi = x + r`` and ``wid_window``."""
    x, _, scaled = ids(df, spec)
    tagged = df.withColumn(WID_X, x)
    tagged = tagged.withColumn(WID_LO, F.col(WID_X)).withColumn(WID_HI, F.col(WID_X) + F.lit(scaled.range))
    if not isinstance(spec, SlideByRows) or spec.every == 1:
        return tagged.withColumn(WID_WINDOW, F.lit(True))
    attribute_type(df, "row_num")
    order = [WID_X, "row_num"] if isinstance(spec, SlideByRank) else ["row_num"]
    position = F.row_number().over(Window.orderBy(*order))
    return tagged.withColumn(WID_WINDOW, position % F.lit(spec.every) == 0)


def _chunked(tagged: DataFrame, width: Number, r: Number) -> DataFrame:
    """Each tuple once per chunk ``c`` (windows ``c*width <= w < (c+1)*width``) its range
    ``[x, x + r)`` meets; ``_wid_home`` marks the chunk holding ``x`` itself."""
    first = floor_div(F.col(WID_X), width)
    last = -floor_div(-(F.col(WID_X) + F.lit(r)), width) - 1
    return tagged.withColumn(_CHUNK, F.explode(F.sequence(first, last))).withColumn(_HOME, F.col(_CHUNK) == first)


def _contributes(tagged: DataFrame) -> Column:
    """``wid_in`` (NULL: false), or true when the query has no WHERE."""
    return F.coalesce(F.col(WID_IN), F.lit(False)) if WID_IN in tagged.columns else F.lit(True)


# --- the bins ---------------------------------------------------------------------------

_COMBINE = {"n": np.add, "sum": np.add, "min": np.minimum, "max": np.maximum}


def _identity(kind: str, dtype: np.dtype):
    if kind in ("n", "sum"):
        return dtype.type(0)
    big = np.iinfo(dtype).max if dtype.kind == "i" else np.inf
    return dtype.type(big if kind == "min" else -big)


class Bins:
    """Start and end bins of one key partition, after the init bin (id -inf, the identity).
    ``partials`` maps a name to ``(kind, column, dtype)``: kind ``n`` counts the present
    values of ``column`` (``None``: every tuple), ``sum``/``min``/``max`` reduce them."""

    def __init__(self, r: Number, partials: dict[str, tuple[str, str | None, np.dtype]], x_dtype: np.dtype):
        self.r, self.partials = r, partials
        ids = np.result_type(x_dtype, np.asarray(r).dtype)
        self.pos = np.array([np.iinfo(ids).min if ids.kind == "i" else -np.inf], dtype=ids)
        self.state = {name: np.array([_identity(kind, dtype)], dtype=dtype)
                      for name, (kind, _, dtype) in partials.items()}

    def at(self, windows: np.ndarray) -> dict[str, np.ndarray]:
        """The partials of extent(w) for each ``w`` in ``windows``: those of the bin at or before it."""
        before = np.searchsorted(self.pos, windows, side="right") - 1
        return {name: state[before] for name, state in self.state.items()}

    def add(self, x: np.ndarray, columns: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """processtuple for a batch: ``x`` and, per value column, ``(values, present)``."""
        order = np.argsort(x, kind="stable")
        xs = x[order]
        new = np.setdiff1d(np.concatenate([xs, xs + self.r]), self.pos)  # start and end bins
        init = self.at(new)  # from the bin before each
        where = np.searchsorted(self.pos, new)
        self.pos = np.insert(self.pos, where, new)
        for name in self.state:
            self.state[name] = np.insert(self.state[name], where, init[name])
        first, stop = np.searchsorted(self.pos, [xs[0], xs[-1] + self.r])
        bins = self.pos[first:stop]
        lo = np.searchsorted(xs, bins - self.r, side="right")
        hi = np.searchsorted(xs, bins, side="right")
        for name, (kind, column, _) in self.partials.items():
            if column is None:
                part = (hi - lo).astype(np.int64)
            else:
                values, present = (a[order] for a in columns[column])
                part = _range_reduce(kind, values, present, lo, hi)
            self.state[name][first:stop] = _COMBINE[kind](self.state[name][first:stop], part)


def _range_reduce(kind: str, values: np.ndarray, present: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``kind`` over the present ``values[lo:hi]`` for each range: prefix sums for n/sum,
    a sparse table (power-of-two blocks) for min/max."""
    if kind in ("n", "sum"):
        v = present.astype(np.int64) if kind == "n" else np.where(present, values, 0)
        prefix = np.concatenate([np.zeros(1, dtype=v.dtype), np.cumsum(v)])
        return prefix[hi] - prefix[lo]
    identity = _identity(kind, values.dtype)
    op = _COMBINE[kind]
    table = [np.where(present, values, identity)]
    while (1 << len(table)) <= len(values):
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(op(prev[:-half], prev[half:]))
    length = hi - lo
    out = np.full(len(lo), identity, dtype=values.dtype)
    some = length > 0
    level = np.zeros(len(lo), dtype=np.int64)
    level[some] = np.floor(np.log2(length[some])).astype(np.int64)
    for k in np.unique(level[some]):
        rows = some & (level == k)
        out[rows] = op(table[k][lo[rows]], table[k][hi[rows] - (1 << k)])
    return out


def _partials(aggregates: list[Aggregate], numeric: dict[str, np.dtype]) -> dict[str, tuple[str, str | None, np.dtype]]:
    out = {"n": ("n", None, np.dtype(np.int64))}
    for a in aggregates:
        if a.arg is None:
            continue
        out[f"n:{a.arg}"] = ("n", a.arg, np.dtype(np.int64))
        if a.fn in ("sum", "avg"):
            out[f"sum:{a.arg}"] = ("sum", a.arg, numeric[a.arg] if a.fn == "sum" else np.dtype(np.float64))
        elif a.fn in ("min", "max"):
            out[f"{a.fn}:{a.arg}"] = (a.fn, a.arg, numeric[a.arg])
    return out


def _finals(aggregates: list[Aggregate], partials: dict[str, np.ndarray]) -> dict[str, pa.Array]:
    out = {}
    for a in aggregates:
        if a.arg is None:
            out[a.alias] = pa.array(partials["n"])
            continue
        n = partials[f"n:{a.arg}"]
        if a.fn == "count":
            out[a.alias] = pa.array(n)
        elif a.fn == "avg":
            out[a.alias] = pa.array(partials[f"sum:{a.arg}"] / np.maximum(n, 1), mask=n == 0)
        else:
            out[a.alias] = pa.array(partials[f"{a.fn}:{a.arg}"], mask=n == 0)
    return out


def _scanner(r: Number, keys: list[str], aggregates: list[Aggregate], numeric: dict[str, np.dtype],
             schema: pa.Schema):
    """The grouped function: one chunk in, one row per (window of the chunk, key) out."""
    partials = _partials(aggregates, numeric)

    def scan(table: pa.Table) -> pa.Table:
        x = table.column(WID_X).to_numpy()
        defines = (table.column(_HOME).to_numpy(zero_copy_only=False)
                   & table.column(WID_WINDOW).to_numpy(zero_copy_only=False))
        windows = np.unique(x[defines])
        contributing = table.filter(table.column(WID_IN))
        if "row_num" in table.column_names:
            contributing = contributing.sort_by("row_num")
        groups = contributing.select(keys).to_pandas().groupby(keys, sort=False, dropna=False).indices if keys \
            else {(): np.arange(contributing.num_rows)}
        pieces = []
        for rows in groups.values():
            part = contributing.take(pa.array(rows))
            pieces.append(_scan_key(part, windows, r, keys, partials, aggregates, numeric, schema))
        return pa.concat_tables(pieces) if pieces else schema.empty_table()

    return scan


def _scan_key(part: pa.Table, windows: np.ndarray, r: Number, keys: list[str], partials, aggregates,
              numeric: dict[str, np.dtype], schema: pa.Schema) -> pa.Table:
    """The bins of one key partition over its tuples in arrival order, read at ``windows``."""
    x = part.column(WID_X).to_numpy()
    bins = Bins(r, partials, x.dtype)
    columns = {}
    for name in {c for _, c, _ in partials.values() if c is not None}:
        column = part.column(name)
        present = column.is_valid().to_numpy(zero_copy_only=False)
        values = column.fill_null(0).cast(pa.from_numpy_dtype(numeric[name])).to_numpy(zero_copy_only=False) \
            if name in numeric else present
        columns[name] = (values, present)
    for start in range(0, len(x), BATCH):
        batch = slice(start, start + BATCH)
        bins.add(x[batch], {name: (v[batch], p[batch]) for name, (v, p) in columns.items()})
    result = bins.at(windows)
    keep = result["n"] > 0
    count = int(keep.sum())
    data = {k: part.column(k).take(pa.array(np.zeros(count, dtype=np.int64))) for k in keys}
    data[WID] = pa.array(windows[keep])
    data.update(_finals(aggregates, {name: v[keep] for name, v in result.items()}))
    return pa.table(data).select(schema.names).cast(schema)


# --- the two formulations ---------------------------------------------------------------


def aggregate(tagged: DataFrame, spec: SlideByTuple, keys: list[str], aggregates: list[Aggregate],
              method: str = "bins", chunk_rows: int = CHUNK_ROWS) -> DataFrame:
    """One row per ``(keys, wid)`` whose extent holds a contributing tuple of the group:
    ``keys``, ``wid`` (of the rattr's type) and one column per aggregate, typed as Spark's
    aggregate. ``method``: ``"bins"`` (the default; falls back to ``"sql"`` for aggregates
    the bins cannot hold) or ``"sql"`` (:func:`joined_aggregate`); ``chunk_rows`` sizes the
    bins' chunks (:func:`binned_aggregate`)."""
    if method not in ("bins", "sql"):
        raise WidError(f"unknown FCA method {method!r}: bins or sql")
    _, dtype, scaled = ids(tagged, spec)
    numeric = _numeric(tagged, aggregates)
    if method == "sql" or numeric is None:
        out = joined_aggregate(tagged, scaled.range, keys, aggregates)
    else:
        out = binned_aggregate(tagged, scaled.range, keys, aggregates, numeric, chunk_rows)
    types = tagged.groupBy().agg(*[a.direct().alias(a.alias) for a in aggregates]).schema
    return out.select(*keys, _rattr_value(F.col(WID), dtype).alias(WID),
                      *[F.col(f.name).cast(f.dataType) for f in types.fields])


def _rattr_value(wid: Column, dtype: DataType) -> Column:
    """A window-id (x units) as a value of the rattr's type."""
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return F.timestamp_micros(wid).cast(dtype)
    if isinstance(dtype, DateType):
        return F.timestamp_micros(wid).cast("date")
    return wid.cast(dtype)


def _numeric(tagged: DataFrame, aggregates: list[Aggregate]) -> dict[str, np.dtype] | None:
    """The numpy type the bins reduce each sum/avg/min/max column in; None when some
    aggregate is not one the bins hold (``fn="sql"``, decimals, non-numbers)."""
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


def binned_aggregate(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate],
                     numeric: dict[str, np.dtype], chunk_rows: int = CHUNK_ROWS) -> DataFrame:
    """The bins formulation (``wid`` in x units): equal chunks of the x axis, at least ``r``
    wide, about ``chunk_rows`` tuples each but at most twice as many as shuffle partitions,
    each scanned by an Arrow grouped function. Cutting the chunks runs one Spark job now
    (min, max and count of x)."""
    most = 2 * int(tagged.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    low, high, count = tagged.agg(F.min(WID_X), F.max(WID_X), F.count("*")).first()
    chunks = max(1, min(most, count // chunk_rows))
    span = high - low if low is not None else 0
    width = max(r, -(-span // chunks) if isinstance(span, int) and isinstance(r, int) else span / chunks)
    values = sorted({a.arg for a in aggregates if a.arg is not None})
    order = ["row_num"] if "row_num" in tagged.columns and "row_num" not in keys + values else []
    rows = _chunked(tagged.select(*keys, *values, *order, WID_X, WID_WINDOW, _contributes(tagged).alias(WID_IN)),
                    width, r)
    rows = rows.where(F.col(WID_IN) | (F.col(_HOME) & F.col(WID_WINDOW)))
    fields = {f.name: f for f in tagged.schema.fields}
    x_type = fields[WID_X].dataType
    schema = StructType([
        *[fields[k] for k in keys],
        StructField(WID, LongType() if isinstance(x_type, IntegralType) and isinstance(r, int) else DoubleType()),
        *[StructField(a.alias, _bins_type(a, numeric)) for a in aggregates],
    ])
    scan = _scanner(r, keys, aggregates, numeric, _arrow_schema(schema))
    return rows.groupBy(_CHUNK).applyInArrow(scan, schema)


def _bins_type(a: Aggregate, numeric: dict[str, np.dtype]) -> DataType:
    if a.fn == "count" or (a.fn in ("sum", "min", "max") and numeric[a.arg].kind == "i"):
        return LongType()
    return DoubleType()


def _arrow_schema(schema: StructType) -> pa.Schema:
    return to_arrow_schema(schema, timezone="UTC")


def joined_aggregate(tagged: DataFrame, r: Number, keys: list[str], aggregates: list[Aggregate]) -> DataFrame:
    """The plain Spark SQL formulation (``wid`` in x units): each window ``w`` joined with
    the tuples of its extent ``w - r < x <= w`` on chunks of width ``r``, then grouped."""
    windows = tagged.where(F.col(WID_WINDOW)).select(F.col(WID_X).alias(WID)).distinct()
    windows = windows.withColumn(_CHUNK, floor_div(F.col(WID), r))
    tuples = _chunked(tagged.where(_contributes(tagged)), r, r)
    extent = (F.col(WID) - F.lit(r) < F.col(WID_X)) & (F.col(WID_X) <= F.col(WID))
    joined = tuples.join(windows, _CHUNK).where(extent)
    return joined.groupBy(*keys, WID).agg(*[a.direct().alias(a.alias) for a in aggregates])
