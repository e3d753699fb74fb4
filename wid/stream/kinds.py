"""Replay for each window kind, found by the spec's class (:func:`functools.singledispatch`):
FCF windows replay their panes (:mod:`wid.stream.fcf_replay`), slide-by-tuple windows their bins
(:mod:`wid.stream.fca_replay`), sessions their state machine per key
(:mod:`wid.stream.session_replay`), SPL and Flink windows their operator's firings
(:mod:`wid.stream.operational_replay`). A kind none serves gets one error naming it.
"""

from __future__ import annotations

from functools import singledispatch

from pyspark.sql import DataFrame

from wid.bucket.flink import bucket as flink
from wid.bucket.spl import bucket as spl
from wid.compiler.query import CompiledQuery
from wid.errors import WidError
from wid.windows.aware import Session, SlideByTuple
from wid.windows.base import WindowSpec
from wid.windows.flink import Discretization
from wid.windows.numbers import Number
from wid.windows.spl import SplWindow
from wid.windows.context_free import ContextFree
from wid.stream import fca_replay, fcf_replay, operational_replay, session_replay
from wid.stream.punctuation import Generator


@singledispatch
def replay(spec: WindowSpec, compiled: CompiledQuery, punctuation: Generator | None,
           allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """``(results, late)`` of ``compiled`` (a query over ``spec``'s windows) under ``punctuation``
    (see :func:`wid.stream.replay.replay`, which checks its inputs first).

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts]")
    >>> results, late = replay(compiled.spec, compiled, wid.punctuate.slack(0))
    >>> sorted(tuple(r) for r in results.select("wid", "_wid_a0", "emit_row").collect()), late.count()  # 2.5: late
    ([(0, 1, 1), (2, 1, 3), (4, 1, None)], 1)
    """
    raise WidError("replay supports sliding, tumbling, landmark, session and slide-by-tuple windows, "
                   f"not {type(spec).__name__}")


@replay.register
def _(spec: ContextFree, compiled: CompiledQuery, punctuation: Generator | None,
      allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    return fcf_replay.replay(compiled, punctuation, allowed_lateness)


@replay.register
def _(spec: SlideByTuple, compiled: CompiledQuery, punctuation: Generator | None,
      allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """The bins emitted and purged on punctuation, revised by tuples within ``allowed_lateness``."""
    return fca_replay.replay(compiled, punctuation, allowed_lateness)


@replay.register
def _(spec: Session, compiled: CompiledQuery, punctuation: Generator | None,
      allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """Sessions closed on punctuation, late tuples with the ids they touch, sessions a tuple
    within ``allowed_lateness`` changes re-emitted."""
    return session_replay.replay(compiled, punctuation, allowed_lateness)


@replay.register
def _(spec: SplWindow, compiled: CompiledQuery, punctuation: Generator | None,
      allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    """The operator's emissions, each with the arrival that fired it."""
    return operational_replay.replay(compiled, punctuation, allowed_lateness, lambda stream: spl.fired(stream, spec))


@replay.register
def _(spec: Discretization, compiled: CompiledQuery, punctuation: Generator | None,
      allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
    return operational_replay.replay(compiled, punctuation, allowed_lateness,
                                     lambda stream: flink.fired(stream, spec))
