"""Window specifications: one class per context-free window kind (docs/semantics.md section 3); the
context-aware kinds (slide-by-tuple, sessions) are in :mod:`wid.spec.aware`, the operational base in
:mod:`wid.spec.operational`.

Each class states its extent in its docstring, validates its parameters in the
constructor and, for the context-free kinds, produces the window-id range
``wid_lo <= w <= wid_hi`` of a tuple as Spark Column expressions of the
tuple's window-attribute value ``x``. Window-ids start at origin 0 and may be
negative; extents are half-open.

``x`` is a number in the units of the clause (seconds for time units, raw
numbers otherwise, a 0-based arrival position for ``ROWS``). Clause numbers are exact
(``int`` or ``Decimal``) and the id arithmetic on ``x`` is exact
(:mod:`wid.spec.numbers`): ``limit`` is the largest ``|x|`` whose ids fit a long.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from pyspark.sql import Column, DataFrame

from wid.errors import WidError
from wid.spec.numbers import LIMIT, Number, clause_number, exact, floor_div, floor_div_sum, places, times, whole
from wid.spec.sqlexpr import Expr


def _slides(range_: Number, slide: Number) -> None:
    """Ids ``w`` of a tuple span ``r/s`` windows; the ratio must leave room in a long."""
    if range_ / slide > LIMIT // 2:
        raise WidError(f"RANGE {range_} / SLIDE {slide} exceeds 2**61 windows per tuple")


class WindowSpec(ABC):
    """A window kind. ``wattr`` is the attribute whose value ``x`` places a tuple.

    The kind knows its own stages (as Beam's ``WindowFn.assign``): :meth:`bucket` tags the
    tuples with ranges of window-ids, :meth:`aggregate` turns them into one row per window,
    :meth:`replay` replays a query under punctuations. Each family's code lives in
    :mod:`wid.bucket`, :mod:`wid.aggregate` and :mod:`wid.stream`, imported when called:
    those stages depend on the specs, never the other way round at import time.
    """

    wattr: str
    #: ``x`` is the 0-based arrival position (in ``wattr`` order), not a value.
    positional: ClassVar[bool] = False
    #: A tuple's last window-id is open until the stream ends (landmark: ``wids`` gives no ``wid_hi``).
    open_end: ClassVar[bool] = False
    #: The ids depend on ``x`` only through the window boundaries it passes (``floor(x/s)``),
    #: so a double ``x`` may be replaced by ``floor(x * 10**places)``; not so for FCA ids (values).
    floors: ClassVar[bool] = True
    #: Columns the tagger adds that describe each window (one value per window), output after ``wid``.
    extent_columns: ClassVar[tuple[str, ...]] = ()
    #: The clause numbers, as ``(field, keyword)``: exact decimals, checked by the constructor.
    number_fields: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __post_init__(self) -> None:
        for field, keyword in self.number_fields:
            object.__setattr__(self, field, clause_number(keyword, getattr(self, field)))

    @property
    def partition(self) -> tuple[str, ...]:
        """Attributes that split the stream before windowing (part of the window-id)."""
        return ()

    @property
    def gaps(self) -> bool:
        """Some values of ``x`` lie in no window (``wid_lo > wid_hi``)."""
        return False

    def grouped(self, keys: tuple[str, ...]) -> WindowSpec:
        """The windows of a query grouped by the columns ``keys`` (the same, unless windows are per key)."""
        return self

    def extent(self, w):
        """Half-open ``[start, end)`` of window ``w`` on ``x`` (``w`` an id, a Column or SQL text
        :class:`wid.spec.sqlexpr.Sql`), or None: the kind has no extent on its attribute."""
        return None

    def scaled(self, factor: int) -> WindowSpec:
        """The same windows when ``x`` is measured in units ``factor`` times finer."""
        if not self.number_fields:
            return self
        return replace(self, **{field: times(getattr(self, field), factor) for field, _ in self.number_fields})

    @property
    def places(self) -> int:
        """Decimal places of the clause numbers: ``scaled(10**places)`` has whole numbers only."""
        return max((places(getattr(self, field)) for field, _ in self.number_fields), default=0)

    @property
    def limit(self) -> Number:
        """Largest ``|x|`` (in ``x`` units) whose ids and ends stay exact longs."""
        return LIMIT

    @abstractmethod
    def bucket(self, df: DataFrame) -> DataFrame:
        """Bucket: ``df``'s tuples with ``wid_lo``/``wid_hi``, the windows ``wid_lo <= w <= wid_hi``
        holding each (tuples in no window are gone)."""

    def bucket_sql(self, source: str, df: DataFrame) -> str:
        """:meth:`bucket` as a Spark SQL query over ``source`` (SQL text of a relation with ``df``'s
        columns), for :func:`wid.to_sql`; kinds without a SQL form refuse, naming the alternative."""
        raise WidError(f"{type(self).__name__} windows are not compiled to SQL: use a temporary view instead "
                       "(wid.create_view, or CREATE TEMP VIEW v AS <query> through wid.run_sql / wid sql)")

    @property
    def sql_refusal(self) -> str | None:
        """Why :func:`wid.to_sql` refuses this kind (its tagging runs Python), or None: it compiles."""
        return None

    def where_sql(self, tagged: str, condition: str) -> str:
        """:meth:`where` as SQL over the query ``tagged``."""
        return f"SELECT * FROM ({tagged}) WHERE {condition}"

    def aggregate_sql(self, tagged: str, df: DataFrame, keys: list[str], aggregates: list, where: bool) -> str:
        """:meth:`aggregate` as one Spark SQL query over the relation ``tagged`` (SQL text) with
        ``df``'s columns (the bucketed tuples of :meth:`bucket`, with the query's derived columns);
        ``where``: the query has a WHERE (:meth:`where_sql`)."""
        from wid.aggregate.range import range_aggregate_sql

        return range_aggregate_sql(tagged, keys, aggregates, {f.name: f.dataType for f in df.schema.fields},
                                   self.span)

    @property
    def span(self) -> int | None:
        """The most window-ids one tuple's range holds (``wid_hi - wid_lo + 1``), when bounded: the
        aggregate plans by it (short ranges skip the dyadic blocks); None: unbounded or unknown."""
        return None

    def closed(self, bound: Column) -> Column:
        """The window-ids a punctuation at ``bound`` on ``wattr`` closes (see the subclasses)."""
        raise WidError(f"punctuations on wid need a window over a value attribute, not {type(self).__name__}")

    def bucket_punctuations(self, punctuations: DataFrame) -> DataFrame:
        """Punctuations on ``wattr`` as punctuations on wid: adds ``wid_closed`` (:meth:`closed`)."""
        from wid.bucket.fcf import bucket_punctuations

        return bucket_punctuations(punctuations, self)

    def where(self, tagged: DataFrame, condition: Column) -> DataFrame:
        """The query's WHERE on bucketed tuples: only tuples where ``condition`` holds contribute
        (after Bucket, so a ``ROWS`` window counts the positions of every tuple)."""
        return tagged.where(condition)

    def aggregate(self, tagged: DataFrame, keys: list[str], aggregates: list) -> DataFrame:
        """One row per ``(keys, wid)``: the window-agnostic range aggregate (:mod:`wid.aggregate.range`)
        of ``aggregates`` (:class:`wid.aggregate.range.Aggregate`)."""
        from wid.aggregate.range import range_aggregate

        return range_aggregate(tagged, keys, aggregates, self.span)

    def replay(self, compiled, punctuation, allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
        """``(results, late)`` of ``compiled`` (a :class:`wid.compiler.CompiledQuery` of this kind)
        under ``punctuation`` (see :func:`wid.stream.replay.replay`)."""
        raise WidError("replay supports sliding, tumbling, landmark, session and slide-by-tuple windows, "
                       f"not {type(self).__name__}")


    @property
    def live(self) -> bool:
        """Live mode (:mod:`wid.stream.live`) can hold this kind's panes: a tuple's ids are a
        formula of its own value (or, for ROWS windows, of its arrival position, counted as
        tuples come), an open upper end closed at the end of the stream; or sessions, formed
        per key as tuples come; or SPL and Flink windows, whose buffers it scans as tuples come."""
        return False

    @property
    def unfinished(self) -> bool:
        """Live mode's Bucket leaves some ids to its stateful step (:meth:`live_bucket`)."""
        return self.positional or self.open_end

    def live_bucket(self, df: DataFrame) -> DataFrame:
        """Bucket on a stream that has not ended, for an :attr:`unfinished` kind: what the tuple
        alone gives (see the subclasses)."""
        raise WidError(f"live mode does not support {type(self).__name__} windows")

    def live_scan(self, df: DataFrame):
        """Live mode: the event-by-event scan (a :class:`wid.bucket.positions.LiveScan`) its
        stateful step runs over :meth:`live_bucket` of ``df`` (operational windows: they fire as
        the operator's buffers do); None: the step keeps panes of the tuples' ranges."""
        return None

    def live_step(self, compiled):
        """Live mode: a stateful step of this kind's own, run over :meth:`live_bucket`'s tuples in
        one bucket (slide-by-tuple windows: :class:`wid.stream.live_fca.SlideStep`); None: the
        pane step, or :meth:`live_scan`'s or :meth:`sessions`'."""
        return None

    def sessions(self, tagged: DataFrame) -> tuple[Fraction, str] | None:
        """Live mode: ``(gap, column of exact x)`` of ``tagged`` (:meth:`live_bucket`'s output)
        when its stateful step forms this kind's windows as sessions per key; None: ranges."""
        return None


class ContextFree(WindowSpec):
    """FCF windows (sliding, tumbling, landmark): a tuple's ids are a formula of its own ``x``
    (:meth:`wids`, tagged by :mod:`wid.bucket.fcf`) and extent(w) ends at ``(w+1)s``."""

    slide: Number

    @abstractmethod
    def wids(self, x: Expr) -> tuple[Expr, Expr | None]:
        """``(wid_lo, wid_hi)`` of a tuple at ``x``; ``wid_hi`` None when the end is open."""

    def closed(self, bound: Column) -> Column:
        """Largest w whose extent end (w+1)s <= bound: a punctuation at ``bound`` closes all w up to it."""
        return floor_div(bound, self.slide) - 1

    @property
    def limit(self) -> Number:
        """Largest ``|x|``: ``|floor(x/s)| <= 2**61``, so ``wid_hi < 2**62``."""
        return self.slide * (LIMIT // 2)

    @property
    def period(self) -> Number | None:
        return None if self.positional else self.slide

    def bucket(self, df: DataFrame) -> DataFrame:
        from wid.bucket.fcf import bucket

        return bucket(df, self)

    def live_bucket(self, df: DataFrame) -> DataFrame:
        """A ROWS window's ids NULL (positions come in live mode's stateful step, as tuples
        arrive); an open end left open (NULL ``wid_hi``: the end of the stream closes it)."""
        from wid.bucket.fcf import bucket, unpositioned

        return unpositioned(df, self) if self.positional else bucket(df, self, close_open=False)

    def bucket_sql(self, source: str, df: DataFrame) -> str:
        from wid.bucket.fcf import bucket_sql

        return bucket_sql(source, df, self)

    def replay(self, compiled, punctuation, allowed_lateness: Number = 0) -> tuple[DataFrame, DataFrame]:
        from wid.stream.fcf_replay import replay

        return replay(compiled, punctuation, allowed_lateness)


@dataclass(frozen=True)
class Sliding(ContextFree):
    """``[RANGE r SLIDE s WATTR a]``.

    extent(w) = {t : (w+1)s - r <= x < (w+1)s};
    wids(t)   = floor(x/s) <= w <= floor((x+r)/s) - 1 (empty when s > r leaves a gap).
    """

    range: Number
    slide: Number
    wattr: str

    @property
    def live(self) -> bool:
        return True

    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("range", "RANGE"), ("slide", "SLIDE"))

    def __post_init__(self) -> None:
        super().__post_init__()
        _slides(self.range, self.slide)

    @property
    def span(self) -> int:
        """``floor((x+r)/s) - floor(x/s) <= ceil(r/s)`` ids per tuple."""
        return math.ceil(exact(self.range) / exact(self.slide))

    @property
    def gaps(self) -> bool:
        """Hopping windows (s > r) leave gaps between extents."""
        return self.slide > self.range

    def wids(self, x: Expr) -> tuple[Expr, Expr]:
        return floor_div(x, self.slide), floor_div_sum(x, self.range, self.slide) - 1

    def extent(self, w):
        return (w + 1) * self.slide - self.range, (w + 1) * self.slide



@dataclass(frozen=True)
class Tumbling(Sliding):
    """``[RANGE s SLIDE s WATTR a]``: extent(w) = {t : w*s <= x < (w+1)s}; wids(t) = {floor(x/s)}."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.range != self.slide:
            raise WidError(f"a tumbling window has RANGE = SLIDE, got {self.range} and {self.slide}")

    def wids(self, x: Expr) -> tuple[Expr, Expr]:
        w = floor_div(x, self.slide)
        return w, w


@dataclass(frozen=True)
class TupleSliding(Sliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num]``: :class:`Sliding` where ``x`` is the
    0-based position of the tuple among all tuples in ``wattr`` (arrival) order."""

    wattr: str = "row_num"
    positional: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "range", whole("RANGE", self.range))
        object.__setattr__(self, "slide", whole("SLIDE", self.slide))

    @property
    def live(self) -> bool:
        """Live mode counts positions in arrival (``row_num``) order as tuples come."""
        return self.wattr == "row_num"

    def implied(self, x: Expr) -> Expr:
        """The window the tuple at position ``x`` closes by arriving (the next tuple of its
        partition is past it): ``floor((x+1)/s) - 1``."""
        return floor_div(x + 1, self.slide) - 1

    def tag_positions(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(wid_lo, wid_hi, wid_closed)`` of tuples at 0-based positions ``x``: :meth:`wids`
        and :meth:`implied` on whole numbers (live mode's Bucket, where positions come as
        tuples arrive).

        >>> TupleSliding(3, 2).tag_positions(np.arange(5))
        (array([0, 0, 1, 1, 2]), array([0, 1, 1, 2, 2]), array([-1,  0,  0,  1,  1]))
        """
        lo, hi = self.wids(x)
        return lo, hi, self.implied(x)


@dataclass(frozen=True)
class PartitionedTupleSliding(TupleSliding):
    """``[RANGE r ROWS SLIDE s ROWS WATTR row_num PATTR p]``: per value of ``p``, a
    :class:`TupleSliding` window over ``x`` = 0-based position within the partition;
    the window-id is ``(w, p)``."""

    pattr: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.pattr:
            raise WidError("PATTR needs an attribute name")

    @property
    def partition(self) -> tuple[str, ...]:
        return (self.pattr,)


@dataclass(frozen=True)
class Landmark(ContextFree):
    """``[RANGE UNBOUNDED SLIDE s WATTR a]``: extent(w) = {t : x < (w+1)s};
    wids(t) = w >= floor(x/s), an open upper end that the end of the stream closes at
    floor(max x / s). With ``rows`` the attribute is the arrival position."""

    slide: Number
    wattr: str
    rows: bool = False

    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("slide", "SLIDE"),)
    open_end: ClassVar[bool] = True

    @property
    def live(self) -> bool:
        """Live mode keeps the open end open until the end of the stream (value attributes only)."""
        return not self.rows

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rows:
            whole("SLIDE", self.slide)

    @property
    def positional(self) -> bool:  # type: ignore[override]
        return self.rows

    def wids(self, x: Expr) -> tuple[Expr, None]:
        """``(floor(x/s), None)``: ``None`` marks the open upper end."""
        return floor_div(x, self.slide), None

    def extent(self, w):
        """``(-inf, end)``; no start (None) for a Column or SQL ``w``."""
        return (-math.inf if isinstance(w, (int, float)) else None), (w + 1) * self.slide
