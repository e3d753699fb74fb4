"""Operational (SPL) windows on the range-tag pipeline.

Every SPL window is FIFO per subwindow: a tuple enters once and leaves once, so the
windows holding it are the consecutive triggers ``wid_lo <= w <= wid_hi`` between its
insertion and its eviction. Tagging each tuple with that range lets the window-agnostic
:func:`wid.aggregate.range.range_aggregate` do the rest. Three ways to tag (:func:`path`):

* ``columns`` (:func:`wid.bucket.spl_compile.columns`): count, time and punct policies, trigger
  positions in closed form and evictions in arrival order;
* ``chain`` (:func:`wid.bucket.spl_compile.chain`): delta policies on a non-decreasing attribute (the
  delta trigger's triggers form a chain), by binary search per partition;
* ``scan`` (:func:`wid.bucket.spl_scan.scan`): event by event where the windows depend on history:
  a delta attribute that decreases somewhere, delta eviction with a time trigger, and
  partition eviction policies.

One rule for delta policies: the compiled paths need every delta attribute non-decreasing
in arrival order within each partition, checked on the data (one Spark job).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from wid.bucket.clock import T, T0, TEND, clocked, time_scale
from wid.bucket.columns import WID_HI, WID_LO, attribute_type, checked, numeric_value
from wid.bucket.positions import firings, non_decreasing
from wid.bucket.spl_compile import POS, chain, columns
from wid.bucket.spl_scan import Scanner, scan
from wid.errors import WidError
from wid.spec.numbers import scaled
from wid.spec.spl import ARRIVAL_TS, Delta, PartitionAge, Punct, SplWindow, Time

Path = Literal["columns", "chain", "scan"]
_DELTA = "_wid_d_"
_PATHS = {"columns": columns, "chain": chain, "scan": scan}


def _prepared(df: DataFrame, spec: SplWindow) -> tuple[DataFrame, SplWindow]:
    """Checked inputs and the spec on them: each delta attribute as a number ``_wid_d_<attr>``
    (timestamps in microseconds, the delta scaled alike), the punctuation marker a boolean,
    and for time policies the arrival clock (:func:`wid.bucket.clock.clocked`) over the tuples."""
    attribute_type(df, "row_num")
    for name in spec.partition_by:
        attribute_type(df, name)
    for role, policy in zip(("eviction", "trigger"), spec.policies):
        if isinstance(policy, Delta):
            dtype = attribute_type(df, policy.attr)
            value, factor = numeric_value(F.col(policy.attr), dtype, policy.attr)
            hidden = _DELTA + policy.attr
            df = df.withColumn(hidden, checked(value, dtype, policy.attr))
            spec = replace(spec, **{role: Delta(hidden, scaled(policy.delta, factor))})
        if isinstance(policy, Punct) and not isinstance(attribute_type(df, policy.marker), BooleanType):
            raise WidError(f"punct() marker column {policy.marker!r} must be boolean (true = a punctuation)")
    if any(isinstance(p, Time) for p in spec.policies) or isinstance(spec.partition_eviction, PartitionAge):
        df = clocked(df, ARRIVAL_TS, _tuple_rows(spec))
    return df, spec


def _tuple_rows(spec: SplWindow):
    """The condition of a tuple row (not a punctuation), or None when every row is a tuple."""
    marker = next((p.marker for p in spec.policies if isinstance(p, Punct)), None)
    return None if marker is None else ~F.coalesce(F.col(marker), F.lit(False))


def path(df: DataFrame, spec: SplWindow) -> Path:
    """How ``spec`` tags ``df`` (see the module docstring)."""
    if spec.partition_eviction is not None:
        return "scan"
    deltas = {p.attr for p in spec.policies if isinstance(p, Delta)}
    rows = _tuple_rows(spec)
    tuples = df if rows is None else df.where(rows)
    if deltas and not all(non_decreasing(tuples, attr, spec.partition_by) for attr in deltas):
        return "scan"
    if spec.sliding and isinstance(spec.eviction, Delta) and isinstance(spec.trigger, Time):
        return "scan"
    return "chain" if deltas else "columns"


def compiled(df: DataFrame, spec: SplWindow) -> bool:
    """Whether ``spec`` takes a compiled path on ``df`` (not the sequential scan)."""
    return path(*_prepared(df, spec)) != "scan"


def operational_bucket(df: DataFrame, spec: SplWindow, how: Path | None = None) -> DataFrame:
    """``df``'s tuples tagged with ``wid_lo``/``wid_hi``: the triggers of ``spec`` that hold
    them; punctuation rows and tuples in no window are gone. ``how`` forces a path (for
    benchmarks and tests; ``columns`` and ``chain`` are exact only where :func:`path` picks them)."""
    prepared, spec = _prepared(df, spec)
    tagged = _PATHS[how or path(prepared, spec)](prepared, spec)
    rows = _tuple_rows(spec)
    tagged = tagged if rows is None else tagged.where(rows)
    hidden = [c for c in tagged.columns if c.startswith(_DELTA)]
    return tagged.where(F.col(WID_LO) <= F.col(WID_HI)).drop(POS, T0, TEND, T, *hidden)


def fired(df: DataFrame, spec: SplWindow) -> DataFrame:
    """Per window (``spec.partition_by``, ``wid``) its ``emit_row``: the row_num of the tuple or
    punctuation whose arrival fired it, for a time tick the first row arriving at or after it
    (processed just before that row); NULL: the end of the stream. The :class:`Scanner` over the
    whole stream, whatever path tags it (the paths agree on the windows)."""
    prepared, spec = _prepared(df, spec)
    scale = time_scale(prepared, ARRIVAL_TS) if T in prepared.columns else 1

    def fire(pdf):
        scanner = Scanner(spec, pdf, scale)
        scanner.run()
        return scanner.fired

    return firings(prepared, spec.partition_by, fire)
