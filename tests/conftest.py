"""Shared test setup: the checkout is importable, and one loopback Spark session serves the run."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# An uninstalled checkout has no wid.datasets (it is the top-level datasets/ directory,
# mapped by pyproject.toml at install time); mount it the same way here.
if importlib.util.find_spec("wid.datasets") is None:
    _spec = importlib.util.spec_from_file_location(
        "wid.datasets", ROOT / "datasets" / "__init__.py", submodule_search_locations=[str(ROOT / "datasets")]
    )
    sys.modules["wid.datasets"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["wid.datasets"])

from wid.session import local_session  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session()
    yield session
    session.stop()
