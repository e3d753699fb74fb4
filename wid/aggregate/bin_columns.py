"""The bins' partials as Arrow columns (:mod:`wid.aggregate.bins` holds the bins): which
partials an aggregate needs (:func:`partials`), the value columns the bins read
(:func:`columns`), and each window's aggregates from its partials, as Spark's finals
(:func:`finals`) or as the partials Spark's merge takes (:func:`spark_partials`), in the rows
of one key partition (:func:`output`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from wid.aggregate.partials import Aggregate
from wid.bucket.columns import WID


def partials(aggregates: list[Aggregate], numeric: dict[str, np.dtype]) -> dict[str, tuple[str, str | None, np.dtype]]:
    """The bins' partials of ``aggregates``: name -> ``(fn, value column or None, numpy type)``:
    the tuples' count ``n``, each value's count ``n:<arg>``, and its ``sum:``, ``min:`` or ``max:``
    (``numeric``: each value column's numpy type; an avg sums as float64).

    >>> sorted(partials([Aggregate("m", "avg", "v")], {"v": np.dtype(np.int64)}))
    ['n', 'n:v', 'sum:v']
    """
    out = {"n": ("n", None, np.dtype(np.int64))}
    for a in aggregates:
        if a.arg is None:
            continue
        out[f"n:{a.arg}"] = ("n", a.arg, np.dtype(np.int64))
        if a.fn in ("sum", "avg"):
            out[f"sum:{a.arg}"] = ("sum", a.arg, numeric[a.arg] if a.fn == "sum" else np.dtype(np.float64))
        elif a.fn in ("min", "max"):
            out[f"{a.fn}:{a.arg}"] = (a.fn, a.arg, numeric[a.arg])
    return out


#: The output columns of a window's bins partials (``partials`` named as :func:`partials` names them).
Finish = Callable[[list[Aggregate], dict[str, np.ndarray]], dict[str, pa.Array]]


def _state(a: Aggregate, partials: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """``(n, state)`` of ``a`` in the bins' partials: the count of its values (of the tuples for
    ``count(*)``) and its sum (avg too), min or max; None for a count."""
    if a.arg is None:
        return partials["n"], None
    n = partials[f"n:{a.arg}"]
    return n, None if a.fn == "count" else partials[f"{'sum' if a.fn == 'avg' else a.fn}:{a.arg}"]


def finals(aggregates: list[Aggregate], partials: dict[str, np.ndarray]) -> dict[str, pa.Array]:
    """Each aggregate (its alias) from the bins' partials, NULL over no value: a :data:`Finish`.

    >>> parts = {"n": np.array([2, 1]), "n:v": np.array([2, 0]), "sum:v": np.array([-1.5, 0.0])}
    >>> aggregates = [Aggregate("n", "count"), Aggregate("mean", "avg", "v")]
    >>> {name: a.to_pylist() for name, a in finals(aggregates, parts).items()}
    {'n': [2, 1], 'mean': [-0.75, None]}
    """
    out = {}
    for a in aggregates:
        n, state = _state(a, partials)
        if state is None:
            out[a.alias] = pa.array(n)
        else:
            out[a.alias] = pa.array(state / np.maximum(n, 1) if a.fn == "avg" else state, mask=n == 0)
    return out


def spark_partials(aggregates: list[Aggregate], partials: dict[str, np.ndarray]) -> dict[str, pa.Array]:
    """Each aggregate's partial states as Spark's (:meth:`Aggregate.partials`: names and values,
    NULL where Spark's sum, min or max over no value is): a :data:`Finish`, for the merge that
    Spark finishes (live mode's output).

    >>> parts = {"n": np.array([3, 1]), "n:v": np.array([2, 0]), "min:v": np.array([-4, 0]),
    ...          "sum:v": np.array([1.5, 0.0])}
    >>> aggregates = [Aggregate("lo", "min", "v"), Aggregate("mean", "avg", "v")]
    >>> {name: a.to_pylist() for name, a in spark_partials(aggregates, parts).items()}
    {'_wid_p0': [-4, None], '_wid_p1s': [1.5, None], '_wid_p1n': [2, 0]}
    """
    out = {}
    for i, a in enumerate(aggregates):
        names = [name for name, _ in a.partials(i)]
        n, state = _state(a, partials)
        out[names[0]] = pa.array(n) if state is None else pa.array(state, mask=n == 0)
        if a.fn == "avg":  # (sum, count), as Spark's avg
            out[names[1]] = pa.array(n)
    return out


def columns(part: pa.Table, partials: dict[str, tuple[str, str | None, np.dtype]],
            numeric: dict[str, np.dtype]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``(values, present)`` of each value column the partials read, in the bins' numpy types.

    >>> part = pa.table({"k": ["a", "a", "b"], "v": pa.array([5, None, -2])})
    >>> kinds = partials([Aggregate("s", "sum", "v")], {"v": np.dtype(np.float64)})
    >>> {name: (v.tolist(), p.tolist()) for name, (v, p) in columns(part, kinds, {"v": np.dtype(np.float64)}).items()}
    {'v': ([5.0, 0.0, -2.0], [True, False, True])}
    """
    out = {}
    for name in {c for _, c, _ in partials.values() if c is not None}:
        column = part.column(name)
        present = column.is_valid().to_numpy(zero_copy_only=False)
        values = column.fill_null(0).cast(pa.from_numpy_dtype(numeric[name])).to_numpy(zero_copy_only=False) \
            if name in numeric else present
        out[name] = (values, present)
    return out


def output(part: pa.Table, keys: list[str], windows: np.ndarray, result: dict[str, np.ndarray],
           aggregates: list[Aggregate], schema: pa.Schema, finish: Finish = finals, **extra: np.ndarray) -> pa.Table:
    """The rows of one key partition (the key of ``part``): ``wid`` and the aggregates (as
    ``finish`` makes them) for each of ``windows`` whose extent holds a tuple (``result`` from
    :meth:`Bins.at`), plus ``extra``.

    Window 5's extent holds no tuple (``n`` 0): no row.

    >>> schema = pa.schema([("k", pa.string()), ("wid", pa.int64()), ("n", pa.int64())])
    >>> part, result = pa.table({"k": ["a", "a"]}), {"n": np.array([2, 0])}
    >>> output(part, ["k"], np.array([3, 5]), result, [Aggregate("n", "count")], schema).to_pylist()
    [{'k': 'a', 'wid': 3, 'n': 2}]
    """
    keep = result["n"] > 0
    count = int(keep.sum())
    data = {k: part.column(k).take(pa.array(np.zeros(count, dtype=np.int64))) for k in keys}
    data[WID] = pa.array(windows[keep])
    data.update(finish(aggregates, {name: v[keep] for name, v in result.items()}))
    data.update({name: pa.array(v[keep]) for name, v in extra.items()})
    return pa.table(data).select(schema.names).cast(schema)
