"""Replay of session windows: sessions close on punctuation, late tuples name what they touch.

Per key, in arrival order (a punctuation at row r right after tuple r), with ``B`` the running
max of the key's punctuation bounds (in ``wid_x`` units) and exact arithmetic:

- a tuple at ``x`` *touches* a session ``[s, last + g)`` when ``s - g < x < last + g``;
- touching an emitted session: late, with the ids of every emitted session it touches;
- else it merges with the open sessions it touches; when it touches none and ``x + g <= B``
  (its own session would be closed already) it is late with no id (``wid`` NULL);
- a punctuation closes (emits) the open sessions with ``last + g <= B``, in start order; the
  end of the stream emits the rest (``emit_row`` NULL). Ids count a key's emitted sessions
  from 0, so with nothing late they are the exact query's ids.

Conservation, per key: the emitted sessions' ``count(*)`` + the late tuples = the exact count.
The scan is sequential per key (a grouped Arrow pass), as sessions merge in arrival order.
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DoubleType, FloatType, LongType, StructField, StructType

from wid.aggregate.range import range_aggregate
from wid.bucket.columns import EMIT_ROW, WID, WID_CLOSED, WID_HI, WID_LO, WID_X, attribute_type, numeric_value
from wid.bucket.session import with_extents
from wid.spec.numbers import exact
from wid.stream.punctuate import Generator, Punctuations

_KIND, _VALUE, _TOUCHED = "_wid_kind", "_wid_value", "_wid_touched"


class _Key:
    """One key's open and emitted sessions."""

    def __init__(self, gap: Fraction) -> None:
        self.gap, self.bound, self.next_id = gap, None, 0
        self.open: list[list] = []  # [start, last, rows]
        self.emitted: list[tuple[Fraction, Fraction, int]] = []  # (start, last + g, id)
        self.wid: dict[int, int] = {}
        self.emit_row: dict[int, int | None] = {}
        self.touched: dict[int, list[int]] = {}

    def arrive(self, row: int, x: Fraction) -> None:
        hit = [w for s, e, w in self.emitted if s - self.gap < x < e]
        if hit:
            self.touched[row] = hit
            return
        near = [o for o in self.open if o[0] - self.gap < x < o[1] + self.gap]
        if not near and self.bound is not None and x + self.gap <= self.bound:
            self.touched[row] = []
            return
        self.open = [o for o in self.open if all(o is not n for n in near)]
        self.open.append([min([x, *(o[0] for o in near)]), max([x, *(o[1] for o in near)]),
                          [row, *(r for o in near for r in o[2])]])

    def punctuate(self, row: int | None, bound: Fraction | None) -> None:
        if bound is not None:
            self.bound = bound if self.bound is None else max(self.bound, bound)
        done = [o for o in self.open if row is None or o[1] + self.gap <= self.bound]
        self.open = [o for o in self.open if all(o is not d for d in done)]
        for start, last, rows in sorted(done, key=lambda o: o[0]):
            self.emitted.append((start, last + self.gap, self.next_id))
            for r in rows:
                self.wid[r], self.emit_row[r] = self.next_id, row
            self.next_id += 1


def replay(compiled, punctuation: Generator | None) -> tuple[DataFrame, DataFrame]:
    """``(results with emit_row, late)`` of a session query under ``punctuation`` (None: only the
    end of the stream); ``late`` holds the stream's columns and ``wid``."""
    spec, tagged = compiled.spec, compiled.tagged
    source = tagged.sparkSession.table(compiled.query.source).columns
    punctuations = punctuation.punctuations(compiled) if punctuation is not None else Punctuations(
        tagged.select("row_num", F.col(WID_X).alias(WID_CLOSED)).limit(0), (), ((),))
    dtype = attribute_type(tagged, spec.wattr)
    factor = numeric_value(F.col(spec.wattr), dtype, spec.wattr)[1]
    gap = Fraction(float(spec.gap)) if isinstance(dtype, (DoubleType, FloatType)) else exact(spec.gap) * factor
    keys = list(spec.keys)
    value = F.col(WID_X) if factor != 1 else F.col(spec.wattr)  # exact: micros, longs, decimals, doubles
    tuples = tagged.select("row_num", *keys, F.lit(0).alias(_KIND), value.alias(_VALUE),
                           F.lit(None).cast(punctuations.frame.schema[WID_CLOSED].dataType).alias(WID_CLOSED))
    present = tagged.select(*keys).distinct()
    events = tuples
    for shape in punctuations.shapes:
        named = [f"_wid_p{i}" for i in range(len(shape))]  # no column of the join on both sides
        frame = punctuations.shaped(shape).toDF("row_num", *named, WID_CLOSED)
        matched = present.join(frame, [F.col(c).eqNullSafe(F.col(n)) for c, n in zip(shape, named)]) \
            if shape else present.crossJoin(frame)
        events = events.unionByName(matched.select("row_num", *keys, F.lit(1).alias(_KIND),
                                                   F.lit(None).cast(tuples.schema[_VALUE].dataType).alias(_VALUE),
                                                   WID_CLOSED))
    schema = StructType([StructField("row_num", LongType()), StructField(WID, LongType()),
                         StructField(EMIT_ROW, LongType()), StructField(_TOUCHED, ArrayType(LongType()))])

    def scan(pdf: pd.DataFrame) -> pd.DataFrame:
        state = _Key(gap)
        pdf = pdf.sort_values(["row_num", _KIND], kind="stable")
        for row, kind, x, bound in zip(pdf["row_num"], pdf[_KIND], pdf[_VALUE], pdf[WID_CLOSED]):
            if kind == 0:
                state.arrive(int(row), Fraction(x))
            elif not pd.isna(bound):
                state.punctuate(int(row), Fraction(bound))
        state.punctuate(None, None)
        rows = list(state.wid) + list(state.touched)
        return pd.DataFrame({"row_num": pd.array(rows, dtype="Int64"),
                             WID: pd.array([state.wid.get(r) for r in rows], dtype="Int64"),
                             EMIT_ROW: pd.array([state.emit_row.get(r) for r in rows], dtype="Int64"),
                             _TOUCHED: [state.touched.get(r) for r in rows]})

    fates = events.groupBy(*keys).applyInPandas(scan, schema) if keys else \
        events.withColumn("_wid_all", F.lit(0)).groupBy("_wid_all").applyInPandas(scan, schema)
    placed = tagged.drop(WID_LO, WID_HI, *spec.extent_columns).join(fates, "row_num")
    on_time = with_extents(placed.where(F.col(WID).isNotNull()).withColumn(WID_LO, F.col(WID))
                           .withColumn(WID_HI, F.col(WID)).drop(WID), spec)
    results = range_aggregate(on_time, [*compiled.keys, EMIT_ROW], compiled.aggregates)
    late = placed.where(F.col(_TOUCHED).isNotNull()).select(
        *source, F.explode_outer(_TOUCHED).alias(WID))
    return results, late
