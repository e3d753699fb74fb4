"""Bucket for each window kind: the tagger that serves it, found by the spec's class
(:func:`functools.singledispatch`, the most specific registered class wins). A new kind
registers its tagger here; a kind none serves gets one error naming it.
"""

from __future__ import annotations

from functools import singledispatch

from pyspark.sql import DataFrame

from wid.bucket import fca, fcf, session
from wid.bucket.flink import bucket as flink
from wid.bucket.flink import operator as flink_operator
from wid.bucket.spl import bucket as spl
from wid.errors import WidError
from wid.windows.aware import Session, SlideByTuple
from wid.windows.base import WindowSpec
from wid.windows.flink import Discretization
from wid.windows.flink_operator import WindowOperator
from wid.windows.spl import SplWindow
from wid.windows.context_free import ContextFree


@singledispatch
def bucket(spec: WindowSpec, df: DataFrame) -> DataFrame:
    """Bucket: ``df``'s tuples with ``wid_lo``/``wid_hi``, the windows ``wid_lo <= w <= wid_hi``
    holding each (tuples in no window are gone).

    >>> from wid.windows.clause import parse_window
    >>> tagged = bucket(parse_window("RANGE 2 SLIDE 2 WATTR ts"), spark.table("readings"))  # windows [2w, 2w + 2)
    >>> sorted((r.ts, r.wid_lo, r.wid_hi) for r in tagged.collect())[:2]
    [(1.0, 0, 0), (2.5, 1, 1)]
    """
    raise WidError(f"no Bucket serves {type(spec).__name__} windows")


@singledispatch
def bucket_sql(spec: WindowSpec, source: str, df: DataFrame) -> str:
    """:func:`bucket` as a Spark SQL query over ``source`` (SQL text of a relation with ``df``'s
    columns), for :func:`wid.to_sql`; kinds without a SQL form refuse, naming the alternative.

    >>> from wid.windows.clause import parse_window
    >>> text = bucket_sql(parse_window("RANGE 2 SLIDE 2 WATTR ts"), "readings", spark.table("readings"))
    >>> sorted((r.ts, r.wid_lo, r.wid_hi) for r in spark.sql(text).collect())[:2]
    [(1.0, 0, 0), (2.5, 1, 1)]
    """
    raise WidError(f"{type(spec).__name__} windows are not compiled to SQL: use a temporary view instead "
                   "(wid.create_view, or CREATE TEMP VIEW v AS <query> through wid.run_sql / wid sql)")


@singledispatch
def live_bucket(spec: WindowSpec, df: DataFrame) -> DataFrame:
    """Bucket on a stream that has not ended (live mode): what the tuple alone gives; the ids that
    depend on the stream so far (:attr:`WindowSpec.unfinished`) come in live mode's stateful step.

    >>> from wid.windows.clause import parse_window
    >>> landmark = parse_window("RANGE UNBOUNDED SLIDE 2 WATTR ts")
    >>> tagged = live_bucket(landmark, spark.table("readings"))  # the open end stays open
    >>> sorted((r.ts, r.wid_lo, r.wid_hi) for r in tagged.collect())[:2]
    [(1.0, 0, None), (2.5, 1, None)]
    """
    raise WidError(f"live mode does not support {type(spec).__name__} windows")


@bucket.register
def _(spec: ContextFree, df: DataFrame) -> DataFrame:
    return fcf.bucket(df, spec)


@bucket_sql.register
def _(spec: ContextFree, source: str, df: DataFrame) -> str:
    return fcf.bucket_sql(source, df, spec)


@live_bucket.register
def _(spec: ContextFree, df: DataFrame) -> DataFrame:
    """A ROWS window's ids NULL (positions come as tuples arrive); an open end left open (NULL
    ``wid_hi``: the end of the stream closes it)."""
    return fcf.unpositioned(df, spec) if spec.positional else fcf.bucket(df, spec, close_open=False)


@bucket.register
def _(spec: SlideByTuple, df: DataFrame) -> DataFrame:
    return fca.bucket(df, spec)


@bucket_sql.register
def _(spec: SlideByTuple, source: str, df: DataFrame) -> str:
    return fca.bucket_sql(source, df, spec)


@live_bucket.register
def _(spec: SlideByTuple, df: DataFrame) -> DataFrame:
    return fca.live_bucket(df, spec)


@bucket.register
def _(spec: Session, df: DataFrame) -> DataFrame:
    return session.session_bucket(df, spec)


@bucket_sql.register
def _(spec: Session, source: str, df: DataFrame) -> str:
    return session.session_bucket_sql(source, df, spec)


@live_bucket.register
def _(spec: Session, df: DataFrame) -> DataFrame:
    return session.live_bucket(df, spec)


@bucket.register
def _(spec: SplWindow, df: DataFrame) -> DataFrame:
    return spl.operational_bucket(df, spec)


@bucket_sql.register
def _(spec: SplWindow, source: str, df: DataFrame) -> str:
    return spl.operational_bucket_sql(source, df, spec)


@live_bucket.register
def _(spec: SplWindow, df: DataFrame) -> DataFrame:
    return spl.live_bucket(df, spec)


@bucket.register
def _(spec: Discretization, df: DataFrame) -> DataFrame:
    return flink.flink_bucket(df, spec)


@bucket_sql.register
def _(spec: Discretization, source: str, df: DataFrame) -> str:
    return flink.flink_bucket_sql(source, df, spec)


@live_bucket.register
def _(spec: Discretization, df: DataFrame) -> DataFrame:
    return flink.live_bucket(df, spec)


@bucket.register
def _(spec: WindowOperator, df: DataFrame) -> DataFrame:
    return flink_operator.bucket(df, spec)
