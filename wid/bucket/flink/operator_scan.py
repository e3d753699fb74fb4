"""Flink's window operator (:class:`wid.windows.flink_operator.WindowOperator`) per key in one
grouped Arrow pass: the ``scan`` path of :mod:`wid.bucket.flink.operator`, and replay's.

:func:`scan` runs a :class:`wid.bucket.flink.keyed.KeyOperator` per key (as
:mod:`wid.stream.session_replay`): each element's firings per window as runs of ids (a merge
of sessions starts a new run), the firings with the arrival that fired them, the late
contributions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (BooleanType, DataType, DateType, DecimalType, DoubleType, FloatType, IntegerType,
                               IntegralType, LongType, StructField, StructType, TimestampType)

from wid.bucket.columns import (WID_CLOSED, WID_HI, WID_LO, WID_X, EMIT_ROW, attribute_type, numeric_value,
                                rattr_value, time_like)
from wid.bucket.checks import checked, naming
from wid.bucket.flink.keyed import Bound, KeyOperator
from wid.bucket.plain import PlainNames
from wid.errors import WidError
from wid.windows.flink_operator import TimeEvictor, WindowOperator
from wid.windows.numbers import exact
from wid.windows.sqlexpr import column, columns

WINDOW_START, WINDOW_END = WindowOperator.extent_columns
#: Scan output: the kind of row (member run, firing, late contribution) and its window's bounds.
KIND, START, END, SIDE, VALUE = "_wid_kind", "_wid_s", "_wid_e", "side_output", "_wid_value"
MEMBER, FIRING, LATE = 0, 1, 2


def _exact(value) -> Fraction:
    """A stored value (int, float, Decimal) as an exact fraction (a double's binary value)."""
    return Fraction(value)


def units(df: DataFrame, spec: WindowOperator) -> tuple[DataType, int, DataType]:
    """``(attribute type, factor, bound type)``: the factor from the operator's numbers to ``x``
    units (10**6 for timestamps) and the type of the scan's window bounds: longs where they are
    whole (timestamps, whose numbers must be whole microseconds; integral attributes with whole
    numbers), else doubles.

    >>> from wid.windows.flink_operator import TumblingEventTimeWindows
    >>> units(spark.table("readings"), WindowOperator(TumblingEventTimeWindows(2.5)))
    (DoubleType(), 1, DoubleType())
    """
    dtype = attribute_type(df, spec.wattr)
    _, factor = numeric_value(column(spec.wattr), dtype, spec.wattr)
    a, e = spec.assigner, spec.evictor
    numbers = [getattr(a, n) for n in ("size", "slide", "offset", "gap") if getattr(a, n, None) is not None]
    numbers += [spec.allowed_lateness, *([e.size] if isinstance(e, TimeEvictor) else [])]
    whole = all((exact(n) * factor).denominator == 1 for n in numbers)
    if time_like(dtype) and not whole:
        raise WidError(f"the operator's sizes, gap and lateness on timestamp {spec.wattr!r} must be whole "
                       f"microseconds, got {', '.join(map(str, numbers))} s")
    longs = time_like(dtype) or (isinstance(dtype, IntegralType) and whole)
    return dtype, factor, LongType() if longs else DoubleType()


def prepared(df: DataFrame, spec: WindowOperator) -> DataFrame:
    """``df`` with ``wid_x`` (the attribute as a number, checked: NULL and NaN fail the query) and the
    exact value the scan reads (``_wid_value``: epoch microseconds, or the stored number).

    >>> days = spark.sql("SELECT 0L AS row_num, DATE'1970-01-02' AS day")
    >>> from wid.windows.flink_operator import TumblingEventTimeWindows
    >>> prepared(days, WindowOperator(TumblingEventTimeWindows(60), wattr="day")).select(WID_X, VALUE).first()
    Row(wid_x=86400000000, _wid_value=86400000000)
    """
    dtype = attribute_type(df, spec.wattr)
    for name in spec.keys:
        attribute_type(df, name)
    x, _ = numeric_value(column(spec.wattr), dtype, spec.wattr)
    x = checked(x, dtype, spec.wattr, by=naming(df))
    value = column(WID_X) if time_like(dtype) or not isinstance(dtype, (DecimalType, FloatType, DoubleType)) \
        else checked(column(spec.wattr), dtype, spec.wattr, by=naming(df))
    return df.withColumn(WID_X, x).withColumn(VALUE, value)


def scan(tuples: DataFrame, spec: WindowOperator, punctuations=None) -> DataFrame:
    """The :class:`wid.bucket.flink.keyed.KeyOperator` of each key over :func:`prepared` ``tuples`` and the
    punctuations on ``spec.wattr`` (a :class:`wid.stream.punctuation.Punctuations`, its
    ``wid_closed`` the bound in ``x`` units; None: only the end of the stream). One row per
    member run (``_wid_kind`` 0: ``row_num``, ``wid_lo``, ``wid_hi``), firing (1: ``row_num`` of
    a member, ``wid_lo`` its number, ``emit_row``) and late contribution (2: ``row_num``,
    ``side_output``), each with its window's bounds (``_wid_s``, ``_wid_e``, in x units).

    >>> from wid.windows.flink_operator import CountTrigger, TumblingEventTimeWindows
    >>> spec = WindowOperator(TumblingEventTimeWindows(5), CountTrigger(2))
    >>> sorted(tuple(r)[:5] for r in scan(prepared(spark.table("readings"), spec), spec).collect())
    [(0, 0, 0, 0, 0.0), (0, 1, 0, 0, 0.0), (1, 0, 0, 0, 0.0)]
    """
    _, factor, bound_type = units(tuples, spec)
    keys = list(spec.keys)
    closed = punctuations.frame.schema[WID_CLOSED].dataType if punctuations is not None else DoubleType()
    events = tuples.select("row_num", *columns(keys), F.lit(MEMBER).alias(KIND), column(VALUE),
                           F.lit(None).cast(closed).alias(WID_CLOSED))
    if punctuations is not None:
        present = tuples.select(*columns(keys)).distinct()
        for shape in punctuations.shapes:
            named = [f"_wid_p{i}" for i in range(len(shape))]
            frame = punctuations.shaped(shape).toDF("row_num", *named, WID_CLOSED)
            matched = present.join(frame, [column(c).eqNullSafe(column(n)) for c, n in zip(shape, named)]) \
                if shape else present.crossJoin(frame)
            events = events.unionByName(matched.select(
                "row_num", *columns(keys), F.lit(FIRING).alias(KIND),
                F.lit(None).cast(events.schema[VALUE].dataType).alias(VALUE), WID_CLOSED))
    schema = StructType([StructField(KIND, IntegerType()), StructField("row_num", LongType()),
                         StructField(WID_LO, LongType()), StructField(WID_HI, LongType()),
                         StructField(START, bound_type), StructField(END, bound_type),
                         StructField(EMIT_ROW, LongType()), StructField(SIDE, BooleanType())])
    shown = int if isinstance(bound_type, LongType) else float

    def bound(b: Bound):
        return None if math.isinf(b) else shown(b)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values(["row_num", KIND], kind="stable")
        tuple_rows = pdf[pdf[KIND] == MEMBER]
        rows = tuple_rows["row_num"].to_list()
        op = KeyOperator(spec, factor, [_exact(v) for v in tuple_rows[VALUE]])
        i = 0
        for row, k, b in zip(pdf["row_num"], pdf[KIND], pdf[WID_CLOSED]):
            if k == MEMBER:
                op.arrive(i, int(row))
                i += 1
            elif not pd.isna(b):
                op.watermark(int(row), _exact(b))
        op.finish()
        out = [(MEMBER, rows[i], lo, hi, bound(s), bound(e), None, None) for i, s, e, lo, hi in op.runs()]
        out += [(FIRING, rows[members[0]], seq, seq, bound(s), bound(e), at, None)
                for s, e, seq, at, members in op.firings]
        out += [(LATE, rows[i], None, None, bound(s), bound(e), None, side) for i, s, e, side in op.late]
        frame = pd.DataFrame(out, columns=schema.names)
        return frame.astype({KIND: "int32", "row_num": "int64", WID_LO: "Int64", WID_HI: "Int64", EMIT_ROW: "Int64",
                             SIDE: "boolean", **({START: "Int64", END: "Int64"} if shown is int else {})})

    events, names = PlainNames.of(events if keys else events.withColumn("_wid_all", F.lit(0)))
    return events.groupBy(*[names.column(k) for k in keys or ["_wid_all"]]).applyInPandas(run, schema)


def bounds(fates: DataFrame, dtype: DataType) -> DataFrame:
    """``fates`` (:func:`scan`) with ``window_start`` and ``window_end`` in the attribute's terms
    (timestamps for timestamps and dates; NULL for the global window), for ``_wid_s``/``_wid_e``.

    >>> from pyspark.sql.types import TimestampNTZType
    >>> fates = spark.createDataFrame([(3_000_000, None)], f"{START} long, {END} long")
    >>> bounds(fates, TimestampNTZType()).first()
    Row(window_start=datetime.datetime(1970, 1, 1, 0, 0, 3), window_end=None)
    """
    moment = TimestampType() if isinstance(dtype, DateType) else dtype  # a bound need not be a whole day
    shown = (lambda c: rattr_value(column(c), moment)) if time_like(dtype) else column
    return fates.withColumn(WINDOW_START, shown(START)).withColumn(WINDOW_END, shown(END)).drop(START, END)
