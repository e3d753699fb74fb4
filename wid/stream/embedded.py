"""Punctuations supplied by the source (:func:`embedded`): ``row_num``, key columns (NULL: any
value) and a bound named like the window attribute, checked against the query's view before any
Spark job, then tagged by Bucket (:func:`wid.bucket.fcf.bucket_punctuations`) into punctuations
on wid. Part of :mod:`wid.stream.punctuate` (``wid.punctuate.embedded``)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, NullType, NumericType

from wid.bucket.checks import in_order
from wid.bucket.columns import WID_CLOSED, attribute_type, on_axis, time_like
from wid.bucket.fcf import bucket_punctuations
from wid.errors import WidError
from wid.stream.punctuation import Generator, Marks, Punctuations, View, checked_mode
from wid.windows.sqlexpr import column


def comparable(a: DataType, b: DataType) -> bool:
    """Values of types ``a`` and ``b`` compare as values of one kind: numbers, times, or one type.

    >>> from pyspark.sql.types import DoubleType, LongType, StringType
    >>> comparable(LongType(), DoubleType()), comparable(StringType(), DoubleType())
    (True, False)
    """
    return (type(a) is type(b) or all(isinstance(t, NumericType) for t in (a, b))
            or (time_like(a) and time_like(b)))


@dataclass(frozen=True)
class Embedded(Generator):
    """Punctuations from the source (:func:`embedded`): ``frame`` holds ``row_num``, key columns
    (NULL: any value) and the bound, a column named like the window attribute.

    On the view ``readings`` of :func:`wid.query`'s example, the bound ``ts = 4`` closes the windows
    ``[2w, 2w + 2)`` up to 1, for every key; ``ts = 6``, those up to 2 for key ``b``:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> bounds = spark.createDataFrame([(1, None, 4.0), (2, "b", 6.0)], "row_num long, k string, ts double")
    >>> punctuations = embedded(bounds).punctuations(compiled)
    >>> [tuple(r) for r in sorted(punctuations.frame.collect())], punctuations.shapes
    ([(1, None, 1), (2, 'b', 2)], ((), ('k',)))
    """

    frame: DataFrame
    mode: str = "generous"

    def _keys(self, compiled) -> dict[str, str]:
        """The frame's key columns -> the query's GROUP BY keys they bind; a :class:`WidError`,
        before any Spark job, naming the column and the view, unless the frame has ``row_num``
        and the bound (named like the window attribute, of a comparable type) and each other
        column is a GROUP BY key of a comparable type (NULL: any value)."""
        view, wattr, given = View.of(compiled), compiled.spec.wattr, ", ".join(self.frame.columns)
        named = {c.lower(): c for c in self.frame.columns}
        if "row_num" not in named:
            raise WidError(f"embedded punctuations have no row_num column (their columns: {given})")
        if wattr.lower() not in named:
            raise WidError(f"embedded punctuations have no bound column {wattr!r}, named like the window attribute "
                           f"of view {view.name!r} (their columns: {given})")
        keys = view.grouped(compiled, [c for c in self.frame.columns if c.lower() not in ("row_num", wattr.lower())],
                            "embedded punctuations")
        for c, k in {named[wattr.lower()]: wattr, **keys}.items():
            dtype, streamed = attribute_type(self.frame, c), attribute_type(compiled.tagged, k)
            if not (comparable(dtype, streamed) or (k != wattr and isinstance(dtype, NullType))):
                raise WidError(f"embedded punctuations: column {c!r} is {dtype.simpleString()}, but {k!r} of view "
                               f"{view.name!r} is {streamed.simpleString()}")
        return keys

    def punctuations(self, compiled) -> Punctuations:
        wattr, named = compiled.spec.wattr, {c.lower(): c for c in self.frame.columns}
        keys = self._keys(compiled)
        bound_type, stream_type = attribute_type(self.frame, wattr), attribute_type(compiled.tagged, wattr)
        types = {f.name: f.dataType for f in compiled.tagged.schema.fields}
        bound, _ = on_axis(column(named[wattr.lower()]), bound_type, stream_type)
        frame = in_order(self.frame, "punctuation")
        frame = frame.withColumn(named[wattr.lower()], F.when(bound.isNull(), F.raise_error(F.concat(
            F.lit("wid: NULL bound in the punctuation with row_num="), column("row_num").cast("string")))).otherwise(bound))
        frame = bucket_punctuations(frame, compiled.spec).select(
            column("row_num").cast("long").alias("row_num"),
            *[column(c).cast(types[k]).alias(k) for c, k in keys.items()], WID_CLOSED)
        names = tuple(keys.values())
        shapes = tuple(s for n in range(len(names) + 1) for s in combinations(names, n))
        return Punctuations(frame, names, shapes)

    def marks(self, compiled) -> Marks:
        return Marks(given=self.punctuations(compiled))


def embedded(punctuations: DataFrame, mode: str = "generous") -> Embedded:
    """Punctuations from the source: ``row_num``, key columns (NULL = wildcard) and a bound
    column named like the window attribute; ``(seg_id=s1, ts=300)`` at ``row_num = r``
    promises that no tuple of ``s1`` with ``ts < 300`` arrives after ``r``.

    On the view ``readings`` of :func:`wid.query`'s example, after row 1 no reading of any key
    (``k`` NULL) has ``ts < 4``: the reading at ``ts = 2.5`` (row 2) is late for window 1.

    >>> bounds = spark.createDataFrame([(1, None, 4.0)], "row_num long, k string, ts double")
    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.embedded(bounds))
    >>> rep.results.orderBy("wid", "k").show()
    +---+------------+----------+---+---+--------+--------+
    |wid|window_start|window_end|  k|  n|emit_row|revision|
    +---+------------+----------+---+---+--------+--------+
    |  0|         0.0|       2.0|  a|  1|       1|       0|
    |  2|         4.0|       6.0|  a|  1|    NULL|       0|
    |  4|         8.0|      10.0|  a|  1|    NULL|       0|
    +---+------------+----------+---+---+--------+--------+
    <BLANKLINE>
    >>> rep.late.count()
    1
    """
    return Embedded(punctuations, checked_mode(mode))
