"""Calendar windows: ``[RANGE n unit SLIDE m unit WATTR a [TIMEZONE 'Region/City'] [WEEKSTART 'DAY']]``
with ``unit`` one of ``DAY``, ``WEEK``, ``MONTH``, ``QUARTER``, ``YEAR``: local calendar periods in
a time zone (a day of 23 or 25 hours across a daylight-saving change, months of 28 to 31 days).

A calendar window is a sliding window over the tuple's *period index* ``p``, a whole number
computed from its attribute in the zone: the local day (days since 1970-01-01, local date) for
``DAY`` and ``WEEK``, the local month (``12 (year - 1970) + month - 1``) for ``MONTH``, ``QUARTER``
and ``YEAR``. A week is 7 days, a quarter 3 months, a year 12 months, so every unit is a whole
number of days or of months, and :class:`Calendar` is a :class:`wid.windows.context_free.Sliding`
grid on ``p`` (:attr:`Calendar.grid`). ``x`` (the ids' arithmetic) is ``p`` itself
(:meth:`Calendar.own_x`) and an extent bound in ``p`` is turned back into the instant where that
local period begins (:meth:`Calendar.own_bound`).
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from typing import ClassVar

from pyspark.sql.types import DataType, DateType, TimestampNTZType, TimestampType

from wid.errors import WidError
from wid.windows.context_free import ContextFree, Sliding
from wid.windows.numbers import Number, floor_div
from wid.windows.sqlexpr import Expr, call, constant

#: Each unit as a whole number of base periods: ``(base, periods)``.
UNITS = {"DAY": ("DAY", 1), "WEEK": ("DAY", 7), "MONTH": ("MONTH", 1), "QUARTER": ("MONTH", 3),
         "YEAR": ("MONTH", 12)}
WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
MICROS_PER_DAY = 86_400 * 10**6


def checked_zone(zone: str) -> str:
    """``zone``, a time zone name of the IANA database (``'Europe/Berlin'``), or a one-line error
    naming it.

    >>> checked_zone("Asia/Kolkata")
    'Asia/Kolkata'
    >>> checked_zone("Europe/Berln")
    Traceback (most recent call last):
    wid.errors.WidError: unknown time zone 'Europe/Berln' in TIMEZONE (a name such as 'Europe/Berlin')
    """
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        raise WidError(f"unknown time zone {zone!r} in TIMEZONE (a name such as 'Europe/Berlin')") from None
    return zone


@dataclass(frozen=True, repr=False)
class Calendar(ContextFree):
    """``[RANGE n unit SLIDE m unit WATTR a [TIMEZONE z] [WEEKSTART d]]``: ``n`` and ``m`` whole
    periods of ``unit`` (``DAY``, ``WEEK``, ``MONTH``, ``QUARTER``, ``YEAR``), local to zone ``z``
    (None: the Spark session's time zone, ``current_timezone()``).

    With ``p`` the tuple's period index in base periods (local days for DAY and WEEK, local
    months for MONTH, QUARTER and YEAR), ``k`` base periods per unit and ``o`` the week's alignment
    (``o = -((3 - d) mod 7)``, ``d`` the week's first day, Monday = 0: 1970-01-01 was a Thursday;
    ``o = 0`` for the other units):

    extent(w) = {t : (w+1)km - kn + o <= p(t) < (w+1)km + o};
    wids(t)   = floor((p-o)/km) <= w <= floor((p-o+kn)/km) - 1.

    ``window_start``/``window_end`` are the instants where the local periods ``(w+1)km - kn + o``
    and ``(w+1)km + o`` begin: local midnight of their first day in ``z`` (where a daylight-saving
    change skips local midnight, the first instant of that local day). A TIMESTAMP_NTZ attribute is
    wall-clock time already (the zone changes nothing: its bounds are local midnights); a DATE is a
    local day (its bounds are instants, TIMESTAMPs).

    >>> month = Calendar(1, 1, "MONTH", "ts", zone="Europe/Berlin")
    >>> month, month.grid, month.extent(650)  # window 650: the 650th month after January 1970
    (Calendar(range=1, slide=1, unit='MONTH', wattr='ts', zone='Europe/Berlin'), Sliding(range=1, slide=1, wattr='ts'), (650, 651))
    >>> week = Calendar(1, 1, "WEEK", "ts", weekstart="SUNDAY")
    >>> week.grid, week.extent(0)  # week 0: Sunday 1969-12-28 (day -4) to Sunday 1970-01-04
    (Sliding(range=7, slide=7, wattr='ts', offset=-4), (-4, 3))
    >>> days = spark.createDataFrame([("2024-03-30 22:59:59.999999",), ("2024-03-30 23:00:00",)], "t string")
    >>> days = days.selectExpr("CAST(t || 'Z' AS TIMESTAMP) AS ts")  # 23:00 UTC is midnight in Berlin
    >>> day = Calendar(1, 1, "DAY", "ts", zone="Europe/Berlin")
    >>> from pyspark.sql import functions as F
    >>> [r[0] for r in days.select(day.own_x(F.col("ts"), TimestampType())).collect()]  # local days since 1970
    [19812, 19813]
    >>> start, end = day.extent(19813)  # Sunday 2024-03-31: 23 hours (clocks forward at 02:00)
    >>> spark.range(1).select(F.unix_seconds(day.own_bound(F.lit(end), TimestampType()))
    ...                       - F.unix_seconds(day.own_bound(F.lit(start), TimestampType()))).first()[0]
    82800
    >>> Calendar(1.5, 1, "MONTH", "ts")
    Traceback (most recent call last):
    wid.errors.WidError: RANGE in MONTHS must be a whole number of months, got 1.5
    """

    range: Number
    slide: Number
    unit: str
    wattr: str
    zone: str | None = None
    weekstart: str = "MONDAY"
    offset: Number = field(default=0, init=False, repr=False)

    number_fields: ClassVar[tuple[tuple[str, str], ...]] = (("range", "RANGE"), ("slide", "SLIDE"))
    unmeasured: ClassVar[str | None] = "a calendar window's ids count local periods, not amounts of its attribute"

    def __post_init__(self) -> None:
        super().__post_init__()
        unit = self.unit.upper().removesuffix("S")
        if unit not in UNITS:
            raise WidError(f"a calendar window counts DAYS, WEEKS, MONTHS, QUARTERS or YEARS, not {self.unit}")
        object.__setattr__(self, "unit", unit)
        for name, value in (("RANGE", self.range), ("SLIDE", self.slide)):
            if not isinstance(value, int):
                raise WidError(f"{name} in {unit}S must be a whole number of {unit.lower()}s, got {value}")
        if self.zone is not None:
            checked_zone(self.zone)
        start = str(self.weekstart).upper()
        if start not in WEEKDAYS:
            raise WidError(f"WEEKSTART must be a day of the week (MONDAY .. SUNDAY), got {self.weekstart!r}")
        if start != "MONDAY" and unit != "WEEK":
            raise WidError(f"WEEKSTART belongs to a window counted in WEEKS, not {unit}S")
        object.__setattr__(self, "weekstart", start)
        self.grid  # noqa: B018 - the ratio RANGE/SLIDE checked as Sliding checks it

    def __repr__(self) -> str:
        """The clause's fields; ``zone`` when given, ``weekstart`` when not Monday."""
        shown = [("range", self.range), ("slide", self.slide), ("unit", self.unit), ("wattr", self.wattr)]
        shown += [("zone", self.zone)] if self.zone is not None else []
        shown += [("weekstart", self.weekstart)] if self.weekstart != "MONDAY" else []
        return f"Calendar({', '.join(f'{k}={v!r}' for k, v in shown)})"

    @property
    def base(self) -> str:
        """``"DAY"`` or ``"MONTH"``: the periods ``p`` counts."""
        return UNITS[self.unit][0]

    @property
    def grid(self) -> Sliding:
        """The windows as a sliding window on ``p`` (base periods): ``RANGE kn SLIDE km OFFSET o``."""
        k = UNITS[self.unit][1]
        offset = -((3 - WEEKDAYS.index(self.weekstart)) % 7) if self.unit == "WEEK" else 0
        return Sliding(self.range * k, self.slide * k, self.wattr, offset=offset)

    # the grid's numbers, on p
    def wids(self, x: Expr) -> tuple[Expr, Expr]:
        return self.grid.wids(x)

    def closed(self, bound):
        """A punctuation at instant ``b`` (given as ``p(b)``, the period holding it) closes every
        window ending at or before the start of that period: ``floor((p(b) - o)/km) - 1``."""
        return self.grid.closed(bound)

    def extent(self, w):
        """``(first period, end period)`` of window ``w`` in base periods (:meth:`own_bound`: instants)."""
        return self.grid.extent(w)

    def scaled(self, factor: int) -> Calendar:
        """The same windows: ``x`` counts periods whatever the attribute's units."""
        return self

    @property
    def limit(self) -> Number:
        return self.grid.limit

    @property
    def span(self) -> int:
        return self.grid.span

    @property
    def width(self) -> int | None:
        return self.grid.width

    @property
    def gaps(self) -> bool:
        return self.grid.gaps

    @property
    def period(self) -> None:
        """No fixed length in the attribute's units (a day may have 23 hours)."""
        return None

    @property
    def live(self) -> bool:
        return False

    def _zone(self, like: Expr) -> Expr:
        return call("current_timezone", like=like) if self.zone is None else constant(self.zone, like)

    def own_x(self, column: Expr, dtype: DataType) -> Expr:
        """``p``: the base period holding the attribute value ``column`` of type ``dtype``. A
        TIMESTAMP's local wall clock in the zone, ``unix_micros(from_utc_timestamp(t, z))``
        (microseconds as if that wall clock were UTC: no session time zone on the way), floored to
        its day; a TIMESTAMP_NTZ's and a DATE's own day; months from the day's year and month."""
        if isinstance(dtype, TimestampType):
            local = call("unix_micros", call("from_utc_timestamp", column, self._zone(column)))
            day = floor_div(local, MICROS_PER_DAY)
        elif isinstance(dtype, TimestampNTZType):
            day = call("unix_date", column.cast("date")).cast("long")
        elif isinstance(dtype, DateType):
            day = call("unix_date", column).cast("long")
        else:
            raise WidError(f"a calendar window ({self.unit}S) needs a TIMESTAMP, TIMESTAMP_NTZ or DATE attribute; "
                           f"{self.wattr!r} is {dtype.simpleString()}")
        if self.base == "DAY":
            return day
        date = call("date_from_unix_date", day.cast("int"))
        return (call("year", date) - 1970).cast("long") * 12 + call("month", date) - 1

    def own_bound(self, v: Expr, dtype: DataType) -> Expr:
        """The value of the attribute's type where base period ``v`` begins: its first day's local
        midnight in the zone as an instant (a TIMESTAMP, for DATE attributes too),
        ``to_utc_timestamp`` of that midnight (a midnight a daylight-saving change skips becomes
        the first instant of the day, as ``java.time`` resolves a gap: the clock moved forward by
        the gap); for TIMESTAMP_NTZ the wall-clock midnight itself."""
        day = v if self.base == "DAY" else call(
            "unix_date", call("add_months", call("date_from_unix_date", constant(0, v)), v.cast("int"))).cast("long")
        if isinstance(dtype, TimestampNTZType):
            return call("date_from_unix_date", day.cast("int")).cast(TimestampNTZType())
        return call("to_utc_timestamp", call("timestamp_micros", day * MICROS_PER_DAY), self._zone(v))
