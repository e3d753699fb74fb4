"""The pane step over Spark Connect: the client side of ``wid.jvm.ConnectStep``, the relation
plugin a Connect server loads when started with the jar and the plugin::

    --conf spark.jars=$(python -c 'import wid.jvm; print(wid.jvm.jar_path())')
    --conf spark.connect.extensions.relation.classes=wid.jvm.ConnectStep

The client sends one ``Relation`` whose ``extension`` (a ``google.protobuf.Any`` of type
:data:`TYPE`) holds two protobuf fields: 1 the elements' relation, 2 the layout's JSON; the
server plans the relation and runs ``PaneStep.apply`` on it, as :func:`wid.jvm.pane_step` does
in a classic session.
"""

from __future__ import annotations

import pyspark.sql.connect.proto as proto
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.plan import LogicalPlan

#: The extension's type, as the plugin checks it.
TYPE = "type.googleapis.com/wid.PaneStep"


def field(number: int, value: bytes) -> bytes:
    """Protobuf field ``number`` of wire type 2 (length-delimited) holding ``value``.

    >>> field(2, b"{}")
    b'\\x12\\x02{}'
    """
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


class PaneRelation(LogicalPlan):
    """The pane step over ``elements`` with ``layout`` (the step's JSON), as a Connect relation.

    >>> from pyspark.sql.connect.plan import Range
    >>> relation = PaneRelation(Range(0, 3, 1), "{}").plan(None)
    >>> relation.extension.type_url
    'type.googleapis.com/wid.PaneStep'
    >>> relation.extension.value.startswith(b"\\n") and relation.extension.value.endswith(field(2, b"{}"))
    True
    """

    def __init__(self, elements: LogicalPlan, layout: str) -> None:
        super().__init__(elements)
        self._layout = layout

    def plan(self, session) -> proto.Relation:  # noqa: ANN001 (a SparkConnectClient)
        relation = self._create_proto_relation()
        relation.extension.type_url = TYPE
        relation.extension.value = (field(1, self._child.plan(session).SerializeToString())
                                    + field(2, self._layout.encode()))
        return relation


def pane_relation(elements: DataFrame, layout: str) -> DataFrame:
    """:class:`PaneRelation` over a Connect frame, as a frame of the same session."""
    return DataFrame(PaneRelation(elements._plan, layout), elements.sparkSession)
