"""The former home of the window kinds, kept so that code written against it still runs:
``wid.spec.X`` is :mod:`wid.windows.X` (``wid.spec.windows`` is
:mod:`wid.windows.context_free`), the same module objects. New code imports :mod:`wid.windows`.

>>> from wid.spec.flink import Discretization
>>> import wid.windows.flink
>>> Discretization is wid.windows.flink.Discretization
True
"""

from __future__ import annotations

import importlib
import sys

#: Each former module's name -> its module in :mod:`wid.windows`.
MOVED = {"aware": "aware", "base": "base", "clause": "clause", "flink": "flink", "numbers": "numbers",
         "operational": "operational", "spl": "spl", "spl_clause": "spl_clause", "sqlexpr": "sqlexpr",
         "windows": "context_free"}

for _old, _new in MOVED.items():
    sys.modules[f"{__name__}.{_old}"] = globals()[_old] = importlib.import_module(f"wid.windows.{_new}")
