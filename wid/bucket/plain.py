"""Column names through pyspark's pandas and Arrow operators (``applyInPandas``,
``applyInArrow``, ``mapInArrow``): :class:`PlainNames`.

Those operators pass each column on as ``df[name]``, which reads ``a.b`` as field ``b`` of a
column ``a`` and refuses a lone back quote, so a view with such a column name fails in them
however the query quotes it. :class:`PlainNames` renames such columns (``_wid_n0``, ``_wid_n1``, ...:
names no column has) on the way in and gives the function its data under the view's own names, by
position; the operator's output schema keeps the view's names (a schema is taken as written).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame


def _plain(name: str) -> bool:
    return "." not in name and "`" not in name


def _fresh(names: tuple[str, ...]) -> Iterator[str]:
    """``_wid_n0``, ``_wid_n1``, ...: the ones no column of ``names`` has (in any case)."""
    taken, i = {n.lower() for n in names}, 0
    while True:
        if f"_wid_n{i}" not in taken:
            yield f"_wid_n{i}"
        i += 1


@dataclass(frozen=True)
class PlainNames:
    """``names``: a DataFrame's columns; ``plain``: the same, each one a pyspark operator
    cannot pass renamed ``_wid_n{i}`` (the first names no column has).

    >>> names = PlainNames(("row_num", "seg.id", "_wid_n0"), ("row_num", "_wid_n1", "_wid_n0"))
    >>> names.column("seg.id"), names.column("ROW_NUM")
    ('_wid_n1', 'row_num')
    >>> import pyarrow as pa
    >>> names.arrow(pa.table({"row_num": [1], "_wid_n1": [2], "_wid_n0": [3]})).column_names
    ['row_num', 'seg.id', '_wid_n0']
    """

    names: tuple[str, ...]
    plain: tuple[str, ...]

    @classmethod
    def of(cls, df: DataFrame) -> tuple[DataFrame, PlainNames]:
        """``df`` with plain names (itself when all are), and the renaming."""
        names, fresh = tuple(df.columns), _fresh(tuple(df.columns))
        plain = tuple(c if _plain(c) else next(fresh) for c in names)
        return (df if plain == names else df.toDF(*plain)), cls(names, plain)

    def column(self, name: str) -> str:
        """The plain name of column ``name`` (in any case, as Spark resolves names)."""
        return self.plain[[n.lower() for n in self.names].index(name.lower())]

    def pandas(self, frame: Any) -> Any:
        """A pandas frame of the plain columns under the view's names."""
        return frame.set_axis(list(self.names), axis=1)

    def arrow(self, data: Any) -> Any:
        """An Arrow table or record batch of the plain columns under the view's names."""
        return data.rename_columns(list(self.names))

    def batches(self, fn: Callable[[Iterator[Any]], Iterator[Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
        """``fn`` over record batches (``mapInArrow``), given them under the view's names."""
        return lambda batches: fn(self.arrow(b) for b in batches)
