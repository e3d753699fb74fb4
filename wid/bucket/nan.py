"""NaN beside NULL in the Python scans, as Spark keeps them apart.

Arrow to pandas reads a NULL double as NaN, so a scan in pandas cannot tell the two apart.
Spark can: NaN is a grouping key of its own. So each floating column a scan reads travels with
a flag column (:class:`NanFlags`), ``1`` where it is NaN, ``0`` where it is another number,
NULL where it is NULL. A key's flag goes next to it among the keys (:meth:`NanFlags.keys`); a
scan that keys buffers by Python values reads a NaN key as :data:`NAN_KEY` (:meth:`NanFlags.keyed`);
the output takes NaN back wherever a flag is 1 (:meth:`NanFlags.restore`).

>>> flags = NanFlags.of(StructType.fromJson({"fields": [{"name": "g", "type": "string", "nullable": True, "metadata": {}},
...     {"name": "k", "type": "double", "nullable": True, "metadata": {}}]}), ["g", "k"])
>>> flags.flags
{'k': '_wid_nan1'}
>>> flags.keys(["g", "k"])
['g', 'k', '_wid_nan1']
>>> rows = pd.DataFrame({"k": [float("nan"), float("nan"), 2.5], "_wid_nan1": pd.array([1, None, 0], "Int32")})
>>> [v is NAN_KEY for v in flags.keyed(rows)["k"]]
[True, False, False]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, StructType

from wid.windows.sqlexpr import column


class _NanKey:
    """A NaN key value in a Python scan: equal to itself only (a float NaN is not)."""

    def __repr__(self) -> str:
        return "NAN_KEY"

    def __reduce__(self) -> str:  # one object across pickling (live state)
        return "NAN_KEY"


NAN_KEY = _NanKey()


@dataclass(frozen=True)
class NanFlags:
    """``flags``: each floating column -> its flag column.

    >>> df = spark.createDataFrame([(0, float("nan")), (1, None), (2, -2.5)], "row_num long, x double")
    >>> flags = NanFlags.of(df.schema, ["row_num", "x"])  # the double column only
    >>> flags
    NanFlags(flags={'x': '_wid_nan1'})
    >>> flags.add(df).orderBy("row_num").show()
    +-------+----+---------+
    |row_num|   x|_wid_nan1|
    +-------+----+---------+
    |      0| NaN|        1|
    |      1|NULL|     NULL|
    |      2|-2.5|        0|
    +-------+----+---------+
    <BLANKLINE>
    """

    flags: dict[str, str]

    @classmethod
    def of(cls, schema: StructType, columns: Iterable[str]) -> NanFlags:
        """The flags of the float and double ``columns`` of ``schema``, named by the column's
        position (the same flag whichever columns are asked for)."""
        return cls({c: f"_wid_nan{schema.names.index(c)}" for c in columns
                    if isinstance(schema[c].dataType, (FloatType, DoubleType))})

    def add(self, frame: DataFrame) -> DataFrame:
        """``frame`` with the flag of each of its flagged columns: 1 NaN, 0 a number, NULL NULL."""
        flags = {flag: F.when(column(c).isNotNull(), F.isnan(column(c)).cast("int"))
                 for c, flag in self.flags.items() if c in frame.columns}
        return frame.withColumns(flags) if flags else frame  # Spark Connect refuses an empty withColumns

    def keys(self, keys: Iterable[str]) -> list[str]:
        """``keys`` with each flagged key's flag after it: groups that keep NULL and NaN apart."""
        return [name for k in keys for name in (k, self.flags.get(k)) if name is not None]

    def keyed(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` with each flagged column that has its flag as Python values, a NaN as
        :data:`NAN_KEY` and a NULL as None (a scan's keys)."""
        out = {}
        for c, flag in self.flags.items():
            if c in rows.columns and flag in rows.columns:
                nan = rows[flag].eq(1).fillna(False).to_numpy(bool)
                values = [None if pd.isna(v) else v for v in rows[c].tolist()]
                out[c] = pd.Series([NAN_KEY if n else v for n, v in zip(nan, values)], index=rows.index, dtype=object)
        return rows.assign(**out)

    def restore(self, frame: DataFrame) -> DataFrame:
        """``frame`` with NaN back in each flagged column where its flag is 1, without the flags."""
        present = {c: flag for c, flag in self.flags.items() if flag in frame.columns}
        if not present:  # nor an empty drop
            return frame
        return frame.withColumns({c: F.when(column(flag) == 1, F.lit(float("nan")).cast(frame.schema[c].dataType))
                                  .otherwise(column(c)) for c, flag in present.items()}).drop(*present.values())
