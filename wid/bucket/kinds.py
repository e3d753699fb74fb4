"""Bucket for each window kind: the tagger that serves it, found by the spec's class
(:func:`functools.singledispatch`, the most specific registered class wins). A new kind
registers its tagger here; a kind none serves gets one error naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import singledispatch
from typing import Any

from pyspark.sql import DataFrame

from wid.bucket import fca, fcf, session
from wid.bucket.flink import bucket as flink
from wid.bucket.spl import bucket as spl
from wid.errors import WidError
from wid.windows.aware import Session, SlideByTuple
from wid.windows.base import WindowSpec
from wid.windows.flink import Discretization
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


def spec_last(tagger: Callable[..., Any]) -> Callable[..., Any]:
    """``tagger`` (a Bucket function taking the spec last, as the taggers do) called spec first, as
    the registries dispatch.

    >>> spec_last(lambda source, spec: f"{spec} over {source}")("Sliding", "readings")
    'Sliding over readings'
    """
    return lambda spec, *args: tagger(*args, spec)


#: The taggers of each kind: Bucket, its SQL text, and Bucket on a stream that has not ended.
TAGGERS = (
    (ContextFree, fcf.bucket, fcf.bucket_sql, fcf.live_bucket),
    (SlideByTuple, fca.bucket, fca.bucket_sql, fca.live_bucket),
    (Session, session.session_bucket, session.session_bucket_sql, session.live_bucket),
    (SplWindow, spl.operational_bucket, spl.operational_bucket_sql, spl.live_bucket),
    (Discretization, flink.flink_bucket, flink.flink_bucket_sql, flink.live_bucket),
)
for kind, tagger, sql, live in TAGGERS:
    bucket.register(kind, spec_last(tagger))
    bucket_sql.register(kind, spec_last(sql))
    live_bucket.register(kind, spec_last(live))
del kind, tagger, sql, live
