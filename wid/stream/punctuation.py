"""Punctuations on wid and the interface of their generators (:mod:`wid.stream.punctuate`).

:class:`Punctuations` is what replay consumes: ``(row_num, <pattern columns>, wid_closed)``, a
punctuation with ``row_num = r`` arriving right after tuple ``r``; :class:`Marks` the same,
tuple by tuple, for a live stream; :class:`Generator` what every generator provides, with the
conversion of a bound on the window attribute to the window-ids it closes; :data:`MODES` and
:func:`checked_mode` the modes a generator takes, :class:`View` the query's view as generators'
errors name it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.bucket.columns import WID_CLOSED, attribute_type, id_units
from wid.bucket.nan import NanFlags
from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.windows.numbers import floor_scaled
from wid.windows.sqlexpr import column, columns

#: What replay drops of a tuple late for some window: only its contributions to windows already
#: emitted (``generous``), or all of them (``consistent``).
MODES = ("generous", "consistent")


@dataclass(frozen=True)
class Punctuations:
    """Punctuations on wid. ``frame``: ``row_num``, the ``pattern`` columns, ``wid_closed``;
    ``shapes``: the sets of pattern columns that may be bound (non-NULL) together.
    ``wildcard``: NULL in a pattern column is the wildcard ``*`` (punctuations from the
    source); False: it is a key value like any other, as in GROUP BY (a tuple punctuating
    its own key: ROWS arrival, :func:`ordered_by`), and the one shape is the whole pattern.

    >>> frame = spark.createDataFrame([(1, None, 0), (2, "b", 3), (3, "a", 1)],
    ...                               "row_num long, k string, wid_closed long")
    >>> punctuations = Punctuations(frame, ("k",), ((), ("k",)))
    >>> [tuple(r) for r in sorted(punctuations.shaped(("k",)).collect())]  # the wildcard (row 1) is shape ()
    [(2, 'b', 3), (3, 'a', 1)]
    """

    frame: DataFrame
    pattern: tuple[str, ...]
    shapes: tuple[tuple[str, ...], ...]
    wildcard: bool = True

    def shaped(self, shape: tuple[str, ...]) -> DataFrame:
        """``row_num``, ``shape``, ``wid_closed`` of the punctuations whose bound pattern columns
        are exactly ``shape``; match them to keys with NULL-safe equality."""
        frame = self.frame
        for c in self.pattern if self.wildcard else ():
            frame = frame.where(column(c).isNotNull() if c in shape else column(c).isNull())
        return frame.select("row_num", *columns(shape), WID_CLOSED)

    def flagged(self, nan: NanFlags) -> Punctuations:
        """These punctuations with each flagged pattern column's NaN flag beside it (pattern and
        shapes), so that a bound on a NaN key and one on a NULL key (the wildcard) stay apart."""
        return Punctuations(nan.add(self.frame), tuple(nan.keys(self.pattern)),
                            tuple(tuple(nan.keys(shape)) for shape in self.shapes), self.wildcard)


@dataclass(frozen=True)
class Marks:
    """How a generator punctuates a live stream (:mod:`wid.stream.live.job`), tuple by tuple.

    ``closed`` (a Column of the tagged tuple, NULL: none): the tuple's arrival brings a
    punctuation closing every window ``w <= closed`` for the tuple's ``pattern`` keys (all
    keys when ``pattern`` is empty), at ``row_num + shift``. ``given``: punctuations supplied
    by the source, a streaming frame. ``wildcard``: as :class:`Punctuations`' (False: a NULL
    key is a key of its own). Replay's running maxima are the live state's.

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> [(m.shift, m.pattern, m.wildcard) for m in (wid.punctuate.slack(2, by="rows").marks(compiled),
    ...                                             wid.punctuate.ordered_by("k").marks(compiled))]
    [(2, (), True), (0, ('k',), False)]
    """

    closed: Column | None = None
    shift: int = 0
    pattern: tuple[str, ...] = ()
    given: Punctuations | None = None
    wildcard: bool = True

    def flagged(self, nan: NanFlags) -> Marks:
        """These marks with each flagged pattern column's NaN flag beside it (:meth:`Punctuations.flagged`)."""
        return replace(self, pattern=tuple(nan.keys(self.pattern)),
                       given=self.given.flagged(nan) if self.given is not None else None)


class Generator(ABC):
    """A punctuation scheme for :func:`wid.stream.replay`.

    With ``SLIDE 0.5`` on the double ``ts``, ``wid_x`` counts tenths: the bound 2.57 is 25 of them,
    and it closes the windows ``[0.5w - 1, 0.5w + 0.5)`` up to 4:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT count(*) AS n FROM readings [RANGE 1.5 SLIDE 0.5 WATTR ts]")
    >>> bound = Generator.on_ids(compiled, F.lit(2.57), 1)
    >>> Generator.factor(compiled), tuple(spark.range(1).select(bound, Generator.closed(compiled, bound)).first())
    (10, (25, 4))
    """

    mode: str

    @abstractmethod
    def punctuations(self, compiled) -> Punctuations:
        """Punctuations on wid for the stream of ``compiled`` (a :class:`wid.compiler.query.CompiledQuery`)."""

    @abstractmethod
    def marks(self, compiled) -> Marks:
        """The same punctuations, tuple by tuple, for a live stream (no scan over the stream)."""

    @classmethod
    def closed(cls, compiled, x: Column) -> Column:
        """The largest window closed by a bound ``x`` given in ``wid_x`` units."""
        return compiled.spec.scaled(cls.factor(compiled)).closed(x)

    @staticmethod
    def factor(compiled) -> int:
        """``wid_x`` units per unit of the window clause (10**6 for timestamps, ``10**places``
        for a double mapped to ``floor(x * 10**places)``: :func:`wid.bucket.columns.id_units`)."""
        dtype = attribute_type(compiled.tagged, compiled.spec.wattr)
        return id_units(column(compiled.spec.wattr), dtype, compiled.spec)[1]

    @classmethod
    def on_ids(cls, compiled, value: Column, value_factor: int) -> Column:
        """A bound ``value`` (a number, ``value_factor`` units per clause unit) in ``wid_x``
        units, rounded down where those are whole (closing no window too early)."""
        if compiled.spec.unmeasured:
            raise WidError(f"this punctuation generator places bounds in the window attribute's units, but "
                           f"{compiled.spec.unmeasured}: use embedded punctuations, ordered_by(...) or slack(0)")
        factor = cls.factor(compiled)
        if not compiled.spec.floors:
            return value * F.lit(factor // value_factor) if factor != value_factor else value
        return floor_scaled(value.cast("double") * F.lit(factor / value_factor), 1)


def checked(punctuation: object, spec: WindowSpec) -> Generator | None:
    """``punctuation`` for a query with window ``spec`` (replay and live mode alike): a
    :mod:`wid.stream.punctuate` generator, or None; a :class:`WidError` for anything else, or for
    a generator given to a kind whose punctuations are implied (:attr:`WindowSpec.refuses_punctuation`).

    >>> from wid.windows.context_free import TupleSliding
    >>> checked(None, TupleSliding(range=4, slide=2)) is None
    True
    >>> checked("slack", TupleSliding(range=4, slide=2))
    Traceback (most recent call last):
    wid.errors.WidError: punctuation must come from wid.punctuate (embedded, slack, heartbeat, ordered_by), got 'slack'
    """
    punctuation = generator(punctuation)
    if punctuation is not None and spec.refuses_punctuation is not None:
        raise WidError(spec.refuses_punctuation)
    return punctuation


def generator(punctuation: object) -> Generator | None:
    """``punctuation`` if it is a :mod:`wid.stream.punctuate` generator or None, else a
    :class:`WidError` (checked before anything else runs; the window kind's say: :func:`checked`).

    >>> generator(wid.punctuate.slack(2))
    Slack(amount=2, mode='generous', by='value')
    >>> generator(2)
    Traceback (most recent call last):
    wid.errors.WidError: punctuation must come from wid.punctuate (embedded, slack, heartbeat, ordered_by), got 2
    """
    if punctuation is not None and not isinstance(punctuation, Generator):
        raise WidError(f"punctuation must come from wid.punctuate (embedded, slack, heartbeat, ordered_by), "
                       f"got {punctuation!r}")
    return punctuation


def checked_mode(mode: str) -> str:
    """``mode``, one of :data:`MODES`, or a :class:`WidError`.

    >>> checked_mode("generous")
    'generous'
    >>> checked_mode("strict")
    Traceback (most recent call last):
    wid.errors.WidError: punctuation mode must be one of generous, consistent, got 'strict'
    """
    if mode not in MODES:
        raise WidError(f"punctuation mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


@dataclass(frozen=True)
class View:
    """The query's view (the stream as the user named it, without the columns wid adds) and its
    columns, lower case -> as it spells them: what a generator's errors name, read from the
    schema before any Spark job.

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> View.of(compiled).grouped(compiled, ["K"], "ordered_by")
    {'K': 'k'}
    >>> View.of(compiled).column("speed", "slack")
    Traceback (most recent call last):
    wid.errors.WidError: slack: view 'readings' has no column 'speed' (its columns: row_num, ts, arrival_ts, k, v)
    """

    name: str
    columns: dict[str, str]

    @classmethod
    def of(cls, compiled) -> View:
        view = compiled.query.source
        return cls(view, {c.lower(): c for c in compiled.source.columns})

    def column(self, name: str, what: str, role: str = "column", fix: str = "") -> str:
        """``name`` as the view spells it; a :class:`WidError` naming ``what`` (the generator), the
        column's ``role`` and the view when the view has none, ending with the ``fix``."""
        if name.lower() not in self.columns:
            raise WidError(f"{what}: view {self.name!r} has no {role} {name!r} "
                           f"(its columns: {', '.join(self.columns.values())}){fix}")
        return self.columns[name.lower()]

    def grouped(self, compiled, names: list[str], what: str) -> dict[str, str]:
        """Each of ``names`` -> the query's GROUP BY key it names, in any case; a :class:`WidError`
        naming ``what`` (the generator), the column and the view for one that is no key."""
        keys = {k.lower(): k for k in compiled.keys if k.lower() in self.columns}  # not wid's own
        for name in names:
            if self.column(name, what).lower() not in keys:
                raise WidError(f"{what}: column {name!r} of view {self.name!r} is not a GROUP BY key of the query "
                               f"(keys: {', '.join(keys.values()) or 'none'})")
        return {n: keys[n.lower()] for n in names}
