"""Punctuation generators: where in the arrival order each extent may be closed.

A generator turns a compiled query's stream into punctuations on wid: a DataFrame
``(row_num, <pattern columns>, wid_closed)`` where the pattern columns are GROUP BY
keys of the query (a value, or NULL for the wildcard) and ``wid_closed`` is the largest
window that the punctuation closes for the matching keys. A punctuation with
``row_num = r`` arrives right after the tuple ``r`` (before any tuple ``> r``).

- :func:`embedded`: punctuations supplied by the source, on the window attribute;
- :func:`slack`: bounded disorder, bound = max window-attribute value seen - amount
  (``by="rows"``: the max seen ``amount`` row_nums earlier);
- :func:`heartbeat`: bound = the last tick of an arrival clock - skew;
- :func:`ordered_by`: each key's sub-stream is in order, so a tuple punctuates its keys
  up to its own value.

``mode`` says what replay drops of a tuple that is late for some window: ``generous``
only its contributions to windows already emitted; ``consistent`` all of them.
Everything is Column expressions and window functions; running maxima are parallel
scans (:func:`wid.stream.scan.running`), never one Spark partition holding the whole stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import NumericType

from wid.bucket.columns import WID_CLOSED, WID_X, attribute_type, id_units, numeric_value, on_axis, time_like
from wid.errors import WidError
from wid.windows.numbers import as_number, non_negative, period, places, times
from wid.stream.embedded import embedded
from wid.stream.punctuation import Generator, Marks, Punctuations, View, checked_mode
from wid.stream.scan import ROW_CHUNK, running
from wid.windows.sqlexpr import column, columns


@dataclass(frozen=True)
class Slack(Generator):
    """A bound ``amount`` behind the largest value seen so far (:func:`slack`), ``by`` value or rows.

    On the view ``readings`` of :func:`wid.query`'s example (``ts`` 1, 4, 2.5, 9: bounds 0, 3, 3, 8),
    the largest window ``[2w, 2w + 2)`` closed after each row:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> [tuple(r) for r in sorted(slack(1).punctuations(compiled).frame.collect())]
    [(0, -1), (1, 0), (2, 0), (3, 3)]
    """

    amount: float
    mode: str = "generous"
    by: str = "value"

    def _lowered(self, compiled) -> tuple[Column, Callable[[Column], Column]]:
        """``(x, closed)``: each tuple's ``x`` in id units in which the amount ``a`` is whole too
        (a double: ``floor(x * 10**p)`` with ``p`` also the amount's decimal places,
        :func:`wid.bucket.columns.id_units`), and ``closed(X)`` the largest window closed by
        the bound ``X - a``: window ends are whole in those units, so ``end <= x - a <=>
        end <= floor(x * 10**p) - a * 10**p`` exactly: ``wid_x`` itself (checked by Bucket) when
        those are its units. ``by="rows"``: ``wid_x`` and ``closed(X)``."""
        if self.by == "rows":
            return column(WID_X), lambda seen: self.closed(compiled, seen)
        spec, amount = compiled.spec, as_number(self.amount, "slack amount")
        if amount and spec.unmeasured:
            raise WidError(f"slack({self.amount}) takes an amount of the window attribute off its values, but "
                           f"{spec.unmeasured}: use slack(0), ordered_by(...) or embedded punctuations")
        x, factor = id_units(column(spec.wattr), attribute_type(compiled.tagged, spec.wattr), spec, places(amount))
        if factor == self.factor(compiled) and WID_X in compiled.tagged.columns:
            x = column(WID_X)  # one x per tuple: its expression, checks and all, is not written out again
        return x, lambda seen: spec.scaled(factor).closed(seen - F.lit(times(amount, factor)))

    def punctuations(self, compiled) -> Punctuations:
        x, closed = self._lowered(compiled)
        seen = running(compiled.tagged.select("row_num", x.alias("_wid_x")), "_wid_x", ["row_num"],
                       F.floor(column("row_num") / ROW_CHUNK), "_wid_seen")
        at = column("row_num") + F.lit(int(self.amount) if self.by == "rows" else 0)
        frame = seen.select(at.cast("long").alias("row_num"), closed(column("_wid_seen")).alias(WID_CLOSED))
        return Punctuations(frame, (), ((),))

    def marks(self, compiled) -> Marks:
        x, closed = self._lowered(compiled)  # closed(max x) = max closed(x): closed is monotone
        return Marks(closed(x), shift=int(self.amount) if self.by == "rows" else 0)


@dataclass(frozen=True)
class Heartbeat(Generator):
    """A punctuation every ``every`` units of the ``clock`` column, ``skew`` behind it (:func:`heartbeat`).

    On the view ``readings`` of :func:`wid.query`'s example (``arrival_ts`` 1.5, 4.5, 5.0, 9.5: the
    last ticks 0, 4, 4, 8), the largest window ``[2w, 2w + 2)`` closed after each row:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> [tuple(r) for r in sorted(heartbeat(2, skew=0).punctuations(compiled).frame.collect())]
    [(0, -1), (1, 1), (2, 1), (3, 3)]
    """

    every: float
    skew: float
    clock: str = "arrival_ts"
    mode: str = "generous"

    def _clock(self, compiled) -> str:
        """The clock column as the view spells it; a :class:`WidError`, before any Spark job,
        naming the column and the view, unless the view has it, a number or a timestamp as the
        window attribute is."""
        view, wattr = View.of(compiled), compiled.spec.wattr
        clock = view.column(self.clock, "heartbeat", "clock column", "; name the arrival clock with "
                            "heartbeat(every, skew, clock=COLUMN)")
        dtype, attribute = attribute_type(compiled.tagged, clock), attribute_type(compiled.tagged, wattr)
        if not (time_like(dtype) or isinstance(dtype, NumericType)):
            raise WidError(f"heartbeat: clock column {clock!r} of view {view.name!r} is {dtype.simpleString()}: "
                           "it must be a number or a timestamp")
        if time_like(dtype) != time_like(attribute):
            raise WidError(f"heartbeat: clock column {clock!r} ({dtype.simpleString()}) and window attribute "
                           f"{wattr!r} ({attribute.simpleString()}) of view {view.name!r} must both be timestamps "
                           "or both numbers")
        return clock

    def _closed(self, compiled) -> Column:
        """wid_closed of the heartbeat seen right after the tuple (NULL without a clock value)."""
        name = self._clock(compiled)
        dtype = attribute_type(compiled.tagged, name)
        attribute = attribute_type(compiled.tagged, compiled.spec.wattr)
        clock, factor = numeric_value(*on_axis(column(name), dtype, attribute), name)
        period = F.lit(self.every * factor)
        tick = F.floor(clock / period) * period  # the last heartbeat at or before the tuple's arrival
        return self.closed(compiled, self.on_ids(compiled, tick - F.lit(self.skew * factor), factor))

    def punctuations(self, compiled) -> Punctuations:
        closed = self._closed(compiled)  # checks the clock first
        frame = compiled.tagged.where(column(self.clock).isNotNull()).select(
            column("row_num").cast("long").alias("row_num"), closed.alias(WID_CLOSED))
        return Punctuations(frame, (), ((),))

    def marks(self, compiled) -> Marks:
        return Marks(self._closed(compiled))


@dataclass(frozen=True)
class OrderedBy(Generator):
    """Each tuple punctuates its ``keys``' values at its own window attribute (:func:`ordered_by`).

    On the view ``readings`` of :func:`wid.query`'s example, each reading closes its key's windows
    ``[2w, 2w + 2)`` that end at or before its ``ts``:

    >>> from wid.compiler.query import compile_query
    >>> compiled = compile_query(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k")
    >>> [tuple(r) for r in sorted(ordered_by("k").punctuations(compiled).frame.collect())]
    [(0, 'a', -1), (1, 'a', 1), (2, 'b', 0), (3, 'a', 3)]
    """

    keys: tuple[str, ...]
    mode: str = "generous"

    def punctuations(self, compiled) -> Punctuations:
        names = tuple(dict.fromkeys(View.of(compiled).grouped(compiled, list(self.keys), "ordered_by").values()))
        frame = compiled.tagged.select(column("row_num").cast("long").alias("row_num"), *columns(names),
                                       self.closed(compiled, column(WID_X)).alias(WID_CLOSED))
        return Punctuations(frame, names, (names,), wildcard=False)

    def marks(self, compiled) -> Marks:
        return Marks(self.closed(compiled, column(WID_X)), pattern=self.punctuations(compiled).pattern, wildcard=False)


def slack(amount: float, mode: str = "generous", by: str = "value") -> Slack:
    """Bounded disorder. ``by="value"``: after each tuple, bound = (max window-attribute value
    seen so far) - ``amount`` (in the clause's units, seconds for timestamps). ``by="rows"``:
    a tuple is at most ``amount`` row_nums late, so after row ``r + amount`` the bound is the
    max value seen up to row ``r``.

    On the view ``readings`` of :func:`wid.query`'s example: each window is emitted at the
    first row whose bound passes its end (``emit_row``), the last one at the end of the stream.

    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.slack(1))
    >>> rep.results.select("wid", "emit_row").orderBy("wid").show()
    +---+--------+
    |wid|emit_row|
    +---+--------+
    |  0|       1|
    |  1|       3|
    |  2|       3|
    |  4|    NULL|
    +---+--------+
    <BLANKLINE>
    """
    if by not in ("value", "rows"):
        raise WidError(f"slack by must be 'value' or 'rows', got {by!r}")
    amount = non_negative("slack amount", amount)
    if by == "rows" and amount != int(amount):
        raise WidError(f"slack by rows needs a whole number, got {amount!r}")
    return Slack(amount, checked_mode(mode), by)


def heartbeat(every: float, skew: float, mode: str = "generous", clock: str = "arrival_ts") -> Heartbeat:
    """Periodic punctuations from an arrival clock (after Srivastava and Widom): at every tick
    ``T = k * every`` of ``clock`` the bound is ``T - skew``, ``skew`` bounding how far a tuple's
    window attribute lags its arrival. The heartbeat of tick T is seen right after the first
    tuple that arrives at or after T.

    On the view ``readings`` of :func:`wid.query`'s example (``arrival_ts`` 1.5, 4.5, 5.0, 9.5):
    the heartbeats at 4 and 8 close the windows up to 1 and 3, so the reading at ``ts = 2.5``,
    arriving at 5.0, is late for window 1:

    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.heartbeat(2, skew=0))
    >>> rep.results.orderBy("wid", "k").show()
    +---+------------+----------+---+---+--------+--------+
    |wid|window_start|window_end|  k|  n|emit_row|revision|
    +---+------------+----------+---+---+--------+--------+
    |  0|         0.0|       2.0|  a|  1|       1|       0|
    |  2|         4.0|       6.0|  a|  1|       3|       0|
    |  4|         8.0|      10.0|  a|  1|    NULL|       0|
    +---+------------+----------+---+---+--------+--------+
    <BLANKLINE>
    >>> rep.late.select("row_num", "k", "wid").show()
    +-------+---+---+
    |row_num|  k|wid|
    +-------+---+---+
    |      2|  b|  1|
    +-------+---+---+
    <BLANKLINE>
    """
    return Heartbeat(period("heartbeat every", every), non_negative("heartbeat skew", skew), clock, checked_mode(mode))


def ordered_by(*keys: str, mode: str = "generous") -> OrderedBy:
    """Each sub-stream of ``keys`` (GROUP BY keys of the query) is in window-attribute order:
    a tuple of key k punctuates k up to its own value.

    On the view ``readings`` of :func:`wid.query`'s example, key ``b`` has one reading, so
    its window is emitted at the end of the stream (``emit_row`` NULL):

    >>> rep = wid.replay(spark, "SELECT k, count(*) AS n FROM readings [RANGE 2 SLIDE 2 WATTR ts] GROUP BY k",
    ...                  wid.punctuate.ordered_by("k"))
    >>> rep.results.select("k", "wid", "emit_row").orderBy("k", "wid").show()
    +---+---+--------+
    |  k|wid|emit_row|
    +---+---+--------+
    |  a|  0|       1|
    |  a|  2|       3|
    |  a|  4|    NULL|
    |  b|  1|    NULL|
    +---+---+--------+
    <BLANKLINE>
    """
    if not keys:
        raise WidError("ordered_by needs at least one key column")
    return OrderedBy(tuple(keys), checked_mode(mode))


__all__ = ["Generator", "Marks", "Punctuations", "embedded", "heartbeat", "ordered_by", "slack"]
