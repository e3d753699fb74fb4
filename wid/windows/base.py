"""The window kind's base, :class:`WindowSpec`: what every kind states (its attribute, its
extent, the facts the stages plan by); the stages find their own code for it. The kinds:
:mod:`wid.windows.context_free` (context-free), :mod:`wid.windows.aware` (slide-by-tuple,
sessions), :mod:`wid.windows.operational` (SPL, Flink).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from collections.abc import Callable
from typing import Any, ClassVar

from pyspark.sql import Column

from wid.errors import WidError
from wid.windows.numbers import LIMIT, Number, clause_number, places, times


#: Fields of a window or policy that name columns (a name, or a tuple of names).
COLUMN_FIELDS = frozenset({"wattr", "pattr", "rattr", "keys", "attr", "attrs", "marker", "partition_by",
                           "per_group", "ts"})


def spelled(item: Any, name: Callable[[str], str]) -> Any:
    """``item`` (a window or policy dataclass) with each column it names (:data:`COLUMN_FIELDS`)
    spelled by ``name``, its policies (fields holding one, or a tuple of them) alike.

    >>> from wid.windows.spl_clause import parse_spl
    >>> spelled(parse_spl("tumbling, delta(X, 4) partitioned BY K"), str.lower)
    Tumbling(partition_by=('k',), partition_eviction=None, eviction=Delta(attr='x', delta=4), incomplete=True)
    >>> from wid.windows.clause import parse_window
    >>> spelled(parse_window("RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num PATTR K"), str.lower).pattr
    'k'
    """
    def one(field: str, value: Any) -> Any:
        if is_dataclass(value):
            return spelled(value, name)
        if isinstance(value, tuple):
            return tuple(one(field, v) for v in value)
        return name(value) if field in COLUMN_FIELDS and isinstance(value, str) else value

    return replace(item, **{f.name: one(f.name, getattr(item, f.name)) for f in fields(item) if f.init})


class WindowSpec:
    """A window kind. ``wattr`` is the attribute whose value ``x`` places a tuple.

    The kind states what it is (its attribute, extent, numbers, and the facts the stages plan
    by: :attr:`where_first`, :attr:`span`, :attr:`live`, ...); it knows no stage. Each stage finds
    its own code for the kind (:mod:`wid.bucket.kinds`, :mod:`wid.compiler.kinds`,
    :mod:`wid.stream.kinds`, :mod:`wid.stream.live.kinds`): the stages depend on the specs, never
    the other way round, not even inside a function.

    >>> from wid.windows.clause import parse_window
    >>> w = parse_window("RANGE 0.5 SLIDE 0.25 WATTR ts")
    >>> w.places, w.scaled(10 ** w.places)
    (2, Sliding(range=50, slide=25, wattr='ts'))
    >>> parse_window("RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num").refuses_punctuation
    'punctuations on a ROWS window are implied by arrival order; pass punctuation=None'
    >>> [parse_window(c).reads_arrival for c in ("RANGE 4 ROWS SLIDE 2 ROWS WATTR row_num", "SESSION 2 WATTR ts")]
    [True, False]
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
    #: The windows depend on the arrival order (``row_num``), so a stream without one is refused
    #: (:func:`wid.arrival` adds it); False: they depend on the tuples' values alone.
    reads_arrival: ClassVar[bool] = False
    #: WHERE runs before Bucket: a kept tuple's window-ids do not depend on the tuples WHERE
    #: drops, so Bucket never reads (nor checks) those. False: Bucket reads every tuple (arrival
    #: positions, window-ids that are tuples' values, the stream's largest window, an operator's
    #: buffers) and WHERE runs after it (:func:`wid.compiler.kinds.where`).
    where_first: ClassVar[bool] = False
    #: Why an amount of the window attribute's units (a slack, a heartbeat's skew, an allowed
    #: lateness) cannot be taken off this kind's ``x`` (:meth:`own_x`: calendar periods), as the
    #: text of the error that refuses it; None: ``x`` is the attribute's value, such amounts apply.
    unmeasured: ClassVar[str | None] = None

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

    def named(self, name: Callable[[str], str]) -> WindowSpec:
        """This window with each column it names spelled as ``name`` spells it (the view's own
        spelling: Spark finds a column in any case, the Python scans and live mode's state do
        not): :func:`spelled`."""
        return spelled(self, name)

    def extent(self, w):
        """Half-open ``[start, end)`` of window ``w`` on ``x`` (``w`` an id, a Column or SQL text
        :class:`wid.windows.sqlexpr.Sql`), or None: the kind has no extent on its attribute."""
        return None

    def own_x(self, column: Any, dtype: Any) -> Any:
        """The kind's own ``x`` for a window attribute ``column`` (a Column, or SQL text) of Spark
        type ``dtype``, in the units of its ids' arithmetic (no factor), or None: ``x`` is the
        attribute's value (numbers as given, timestamps in epoch microseconds:
        :func:`wid.bucket.columns.id_units`). A kind with its own ``x`` (calendar periods,
        :class:`wid.windows.calendar.Calendar`) gives the same for a punctuation's bound, and
        :meth:`own_bound` turns its extent bounds back into values of the attribute's type.

        >>> from wid.windows.clause import parse_window
        >>> from wid.windows.sqlexpr import Sql
        >>> parse_window("RANGE 4 SLIDE 2 WATTR ts").own_x(Sql.column("ts"), None) is None
        True
        """
        return None

    def own_bound(self, v: Any, dtype: Any) -> Any:
        """An extent bound ``v`` (from :meth:`extent`, in :meth:`own_x` units) as a value of the
        attribute's Spark type ``dtype``; None: the kind has no own ``x`` (the stages turn ``x``
        units into the attribute's type themselves: :func:`wid.bucket.columns.bound_value`)."""
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

    @property
    def sql_refusal(self) -> str | None:
        """Why :func:`wid.to_sql` refuses this kind (its tagging runs Python), or None: it compiles."""
        return None

    @property
    def span(self) -> int | None:
        """The most window-ids one tuple's range holds (``wid_hi - wid_lo + 1``), when bounded: the
        aggregate plans by it (short ranges skip the dyadic blocks); None: unbounded or unknown."""
        return None

    @property
    def width(self) -> int | None:
        """The number of window-ids every tuple's range holds, when it is the same for all: the
        aggregate then reads long windows off block scans of the panes; None: ranges differ."""
        return None

    def closed(self, bound: Column) -> Column:
        """The window-ids a punctuation at ``bound`` on ``wattr`` closes (see the subclasses)."""
        raise WidError(f"punctuations on wid need a window over a value attribute, not {type(self).__name__}")

    @property
    def refuses_punctuation(self) -> str | None:
        """Why this kind takes no punctuation generator, as the error to raise (a ROWS window's
        punctuations are implied by arrival order); None: it takes one."""
        return "punctuations on a ROWS window are implied by arrival order; pass punctuation=None" \
            if self.positional else None

    @property
    def live(self) -> bool:
        """Live mode (:mod:`wid.stream.live.job`) can hold this kind's panes: a tuple's ids are a
        formula of its own value (or, for ROWS windows, of its arrival position, counted as
        tuples come), an open upper end closed at the end of the stream; or sessions, formed
        per key as tuples come; or SPL and Flink windows, whose buffers it scans as tuples come."""
        return False

    @property
    def unfinished(self) -> bool:
        """Live mode's Bucket leaves some ids to its stateful step (:func:`wid.bucket.kinds.live_bucket`)."""
        return self.positional or self.open_end
