"""The ``wid`` command line (:func:`main`, in :mod:`wid.cli.commands`): ``wid query`` and
``wid replay`` on a user's file, ``wid run`` and ``wid live`` on TOML plans (:mod:`wid.plan`),
``wid sql``, ``wid serve``, ``wid bench``, with one output style. It may import every other part
of wid; nothing imports it. ``main`` loads on first use, so importing a module of the package
loads no other.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    """``main``, the ``wid`` script's entry point, imported from :mod:`wid.cli.commands` when asked for."""
    if name != "main":
        raise AttributeError(f"module 'wid.cli' has no attribute {name!r}")
    return importlib.import_module("wid.cli.commands").main
