"""Live mode's stateful step for each window kind, found by the spec's class
(:func:`functools.singledispatch`): the pane step by default; an operator's buffers scanned as
tuples come (SPL, Flink: :func:`live_scan`); sessions formed per key (:func:`sessions`,
:func:`live_extents`); replay's scan in one bucket (slide-by-tuple windows: :func:`live_step`).
A kind wrapped for a stream that has not ended (:class:`wid.stream.live.compile.Unfinished`)
takes its own kind's step.
"""

from __future__ import annotations

from fractions import Fraction
from functools import singledispatch

from pyspark.sql import Column, DataFrame

from wid.bucket import gaps, session
from wid.bucket.columns import attribute_type
from wid.bucket.flink import bucket as flink
from wid.bucket.positions import LiveScan
from wid.bucket.spl import bucket as spl
from wid.compiler.query import CompiledQuery
from wid.errors import WidError
from wid.windows.aware import Session, SlideByTuple
from wid.windows.base import WindowSpec
from wid.windows.flink import Discretization
from wid.windows.spl import SplWindow
from wid.stream.live.compile import Unfinished
from wid.stream.live.fca import SlideStep


@singledispatch
def live_scan(spec: WindowSpec, df: DataFrame) -> LiveScan | None:
    """The event-by-event scan the stateful step runs over live Bucket's tuples of ``df``
    (operational windows: they fire as the operator's buffers do); None: the step keeps panes
    of the tuples' ranges.

    >>> from wid.windows.clause import parse_window
    >>> live_scan(parse_window("RANGE 4 SLIDE 2 WATTR ts"), spark.table("readings")) is None  # the pane step
    True
    >>> type(live_scan(parse_window("tumbling, count(2)"), spark.table("readings"))).__name__
    'LiveScan'
    """
    return None


@singledispatch
def live_step(spec: WindowSpec, compiled: CompiledQuery) -> SlideStep | None:
    """A stateful step of the kind's own, run over live Bucket's tuples in one bucket; None: the
    pane step, or :func:`live_scan`'s, or :func:`sessions`'.

    >>> from wid.compiler.query import compile_query
    >>> text = "SELECT count(*) AS n FROM readings [RANGE 2 RATTR ts SLIDE 1 ROW SATTR row_num]"
    >>> compiled = compile_query(spark, text)
    >>> live_step(compiled.spec, compiled).every
    1
    """
    return None


#: How the stateful step forms sessions: the constant gap (None: a gap per tuple), the column of
#: exact ``x``, and each tuple's own end ``x + g`` (with a gap per tuple; else None).
Formed = tuple[Fraction | None, str, Column | None]


@singledispatch
def sessions(spec: WindowSpec, tagged: DataFrame) -> Formed | None:
    """``(gap, column of exact x, end)`` of ``tagged`` (live Bucket's output) when the stateful
    step forms the kind's windows as sessions per key; None: ranges.

    >>> sessions(Session(1.5, "ts"), spark.table("readings"))
    (Fraction(3, 2), 'ts', None)
    >>> gap, x, end = sessions(Session("v", "row_num"), spark.table("readings"))  # a gap per tuple
    >>> gap, x, spark.table("readings").select("row_num", "v", end.alias("end")).first()
    (None, 'row_num', Row(row_num=0, v=5, end=5))
    """
    return None


@singledispatch
def live_extents(spec: WindowSpec, first: Column, last: Column, tagged: DataFrame,
                 reach: Column | None = None) -> dict[str, Column]:
    """The extent columns of a session from its least and largest exact ``x`` and, with a gap per
    tuple, ``reach``: its end, the largest end of its tuples (kinds with :func:`sessions` only).

    >>> from pyspark.sql import functions as F
    >>> sorted(live_extents(Session(1.5, "ts"), F.col("ts"), F.col("ts"), spark.table("readings")))
    ['session_end', 'session_start']
    """
    raise WidError(f"{type(spec).__name__} windows are not formed as sessions in live mode")


@live_scan.register
def _(spec: SplWindow, df: DataFrame) -> LiveScan:
    return spl.live_scan(df, spec)


@live_scan.register
def _(spec: Discretization, df: DataFrame) -> LiveScan:
    return flink.live_scan(df, spec)


@live_step.register
def _(spec: SlideByTuple, compiled: CompiledQuery) -> SlideStep:
    """Replay's scan over the stream so far (:class:`wid.stream.live.fca.SlideStep`)."""
    return SlideStep.of(compiled)


@sessions.register
def _(spec: Session, tagged: DataFrame) -> Formed:
    """The gap, the column of exact ``x`` and a tuple's end (:func:`wid.bucket.gaps.gap_in_x`,
    :func:`~wid.bucket.gaps.exact_x`, :func:`~wid.bucket.gaps.end_x`)."""
    dtype = attribute_type(tagged, spec.wattr)
    if spec.dynamic:
        return None, gaps.exact_x(spec, dtype), gaps.end_x(tagged, spec)
    return gaps.gap_in_x(spec, dtype), gaps.exact_x(spec, dtype), None


@live_extents.register
def _(spec: Session, first: Column, last: Column, tagged: DataFrame, reach: Column | None = None) -> dict[str, Column]:
    """``session_start`` and ``session_end`` (:func:`wid.bucket.session.extents_of`)."""
    return session.extents_of(first, last, attribute_type(tagged, spec.wattr), spec, reach)


for generic in (live_scan, live_step, sessions, live_extents):  # an Unfinished kind: its own kind's step
    generic.register(Unfinished, lambda spec, *args, generic=generic: generic(spec.spec, *args))
del generic
