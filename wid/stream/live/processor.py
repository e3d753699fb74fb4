"""The processor ``transformWithStateInPandas`` runs for live mode: :class:`Stateful`.

Spark runs a query's processor in two places: once per query start on the driver, in a fresh
Python process that only calls ``init`` to learn the state schemas, and per micro-batch and
partition in the executors' Python workers. :class:`Stateful` declares the state variables from
data (:data:`Variables`) and keeps the step (:class:`wid.stream.live.state.PaneProcessor` or a
subclass) pickled until a micro-batch comes, so the driver's process imports neither pandas nor
the engine: this module needs only pyspark.

>>> from pyspark.sql.types import LongType, StructField, StructType
>>> class Step:
...     def variables(self):
...         return {"seen": (VALUE, StructType([StructField("n", LongType())]))}
>>> sorted(Stateful(Step()).variables)
['seen']
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle, TimerValues
from pyspark.sql.types import StructType

LIST, VALUE = "list", "value"
#: A step's state variables: name -> (:data:`LIST` or :data:`VALUE`, schema).
Variables = dict[str, tuple[str, StructType]]


class Stateful(StatefulProcessor):
    """``step`` (an object with ``variables() -> Variables`` and ``handleInputRows(key, rows,
    timerValues)``) as a stateful processor: ``init`` declares its variables; the first micro-batch
    of a task loads the step and sets each variable as its attribute of the same name."""

    def __init__(self, step: Any) -> None:
        self.variables: Variables = step.variables()
        taken = [name for name in self.variables if hasattr(step, name)]
        if taken:
            raise ValueError(f"state variables {taken} would replace attributes of {type(step).__name__}")
        self.step = cloudpickle.dumps(step)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.states = {name: (handle.getListState if kind == LIST else handle.getValueState)(name, schema)
                       for name, (kind, schema) in self.variables.items()}
        self.loaded = None

    def handleInputRows(self, key: tuple, rows: Iterator[Any], timerValues: TimerValues) -> Iterator[Any]:
        if self.loaded is None:
            self.loaded = pickle.loads(self.step)
            for name, variable in self.states.items():
                setattr(self.loaded, name, variable)
        return self.loaded.handleInputRows(key, rows, timerValues)

    def close(self) -> None:
        """Nothing to release: the state lives in the state store."""
