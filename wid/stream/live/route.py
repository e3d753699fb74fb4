"""Live mode's routing: every element of a micro-batch as one row of the stateful step's input,
with its hash bucket and kind (:mod:`wid.stream.live.input`).

- a tuple goes to the bucket of its hashed keys, with its own mark (``wid_closed``) where the
  generator gives one;
- a punctuation from the source goes to the bucket of its keys when it binds every hashed key,
  else (a wildcard on one of them) to every bucket;
- the end-of-stream marker goes to every bucket, with ``row_num`` :data:`LAST` where it has none.

The bucket of keys ``ks`` is ``pmod(hash(ks), buckets)``: Spark's own hash partitioning, so a
bucket is a state partition. No shuffle but the one into the stateful step: the parts are
unioned, each a projection of its own read.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField

from wid.bucket.columns import WID_CLOSED
from wid.stream.live.input import BUCKET, END, KIND, LAST, PUNCTUATION, TUPLE
from wid.stream.punctuation import Punctuations
from wid.windows.sqlexpr import column


def shaped(frame: DataFrame, fields: Sequence[StructField], given: dict[str, Column]) -> DataFrame:
    """``frame`` as exactly ``fields``, in order: the ``given`` expressions, every other field NULL.

    >>> from pyspark.sql.types import LongType, StringType
    >>> fields = [StructField("row_num", LongType()), StructField("k", StringType())]
    >>> shaped(spark.table("readings"), fields, {"row_num": F.col("row_num")}).orderBy("row_num").first()
    Row(row_num=0, k=None)
    """
    return frame.select(*[(given[f.name] if f.name in given else F.lit(None)).cast(f.dataType).alias(f.name)
                          for f in fields])


def routed(tagged: DataFrame, fields: Sequence[StructField], hashed: Sequence[str], buckets: int,
           own_mark: Column, given: Punctuations | None = None, marker: DataFrame | None = None) -> DataFrame:
    """The elements of ``tagged`` (Bucket's tuples), ``given`` (the source's punctuations) and
    ``marker`` (the stream's end-of-stream rows) as rows of ``fields`` with their :data:`BUCKET`
    and :data:`KIND` (see the module doc); ``hashed``: the columns whose hash picks a tuple's
    bucket (none: bucket 0); ``own_mark``: each tuple's ``wid_closed``.

    Three readings of keys ``a`` and ``b`` in 2 buckets, and the end marker in both:

    >>> from pyspark.sql.types import IntegerType, LongType, StringType
    >>> fields = [StructField(BUCKET, IntegerType()), StructField("row_num", LongType()),
    ...           StructField(KIND, IntegerType()), StructField("k", StringType()), StructField("wid_closed", LongType())]
    >>> readings = spark.table("readings").where("row_num < 3")
    >>> marker = spark.range(1).selectExpr("CAST(NULL AS long) AS row_num")
    >>> rows = routed(readings, fields, ["k"], 2, F.lit(None), marker=marker).collect()
    >>> sorted((r.row_num, r.k, r[KIND], r[BUCKET]) for r in rows)  # doctest: +NORMALIZE_WHITESPACE
    [(0, 'a', 0, 0), (1, 'a', 0, 0), (2, 'b', 0, 1),
     (9223372036854775807, None, 3, 0), (9223372036854775807, None, 3, 1)]
    """
    everywhere = F.sequence(F.lit(0), F.lit(buckets - 1))
    bucket_of = F.pmod(F.hash(*[column(k) for k in hashed]), F.lit(buckets)) if hashed else F.lit(0)
    parts = [shaped(tagged, fields, {**{c: column(c) for c in tagged.columns}, BUCKET: bucket_of,
                                     KIND: F.lit(TUPLE), WID_CLOSED: own_mark})]
    if given is not None:
        targets = everywhere  # a punctuation binding every hashed key goes to its bucket only
        if hashed and set(hashed) <= set(given.pattern):
            bound = F.lit(True)
            for k in hashed:
                bound = bound & column(k).isNotNull()
            targets = F.when(bound, F.array(bucket_of)).otherwise(everywhere)
        punctuations = given.frame.withColumn(BUCKET, F.explode(targets))
        parts.append(shaped(punctuations, fields, {**{c: column(c) for c in punctuations.columns},
                                                   KIND: F.lit(PUNCTUATION)}))
    if marker is not None:
        parts.append(shaped(marker.withColumn(BUCKET, F.explode(everywhere)), fields,
                            {"row_num": F.coalesce(column("row_num"), F.lit(LAST)), BUCKET: column(BUCKET),
                             KIND: F.lit(END)}))
    out = parts[0]
    for other in parts[1:]:
        out = out.unionByName(other)
    return out
