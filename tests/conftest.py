"""Shared test setup: the checkout is importable; one loopback Spark session and one Spark
Connect server (started early, in the background) serve the run."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
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

from wid.jvm import CONNECT_STEP, PLUGINS, jar_path  # noqa: E402
from wid.session import local_session  # noqa: E402

from connect_server import FULL_JIT, QUICK_JVMS, connect_server  # noqa: E402

for _name, _options in QUICK_JVMS.items():  # the JVMs the tests start (yours, if you set them)
    os.environ.setdefault(_name, _options)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session(conf=FULL_JIT)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_warehouse(tmp_path_factory) -> Path:
    """The warehouse of the run's Spark Connect server: where a table written over it lands (the
    pipeline's of tests/test_pipelines.py), not the working directory's ``spark-warehouse``."""
    return tmp_path_factory.mktemp("connect") / "spark-warehouse"


@pytest.fixture(scope="session", autouse=True)
def connect_server_started(request, connect_warehouse) -> Iterator[Callable[[], str] | None]:
    """The run's one Spark Connect server, started before the run's first test if a collected test
    uses ``connect_url`` (None if none does): a server takes 15-50 s to start, so it starts while
    the tests before its first user run, and no test starts its own where this one would do. On a
    loopback port, with wid's relation plugin where a JDK built the jar; stopped at the end."""
    if not any("connect_url" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    conf = {"spark.sql.warehouse.dir": str(connect_warehouse)}
    jar = jar_path()
    if jar is not None:  # live mode's JVM step on the server, through its relation plugin
        conf.update({"spark.jars": str(jar), PLUGINS: CONNECT_STEP})
    with connect_server(connect_warehouse.parent / "server.log", **conf) as url:
        yield url


@pytest.fixture(scope="session")
def connect_url(connect_server_started) -> str:
    """The run's Spark Connect server's ``sc://127.0.0.1:PORT`` URL, once it listens."""
    return connect_server_started()


# Hypothesis profiles for tests/test_properties.py: ``ci`` (the default) is small and
# derandomized, so a run is reproducible and fits the suite's time budget; ``nightly``
# (HYPOTHESIS_PROFILE=nightly) explores many more random examples and prints a blob to
# reproduce a failure; ``dev`` (below) skips shrinking. One Spark session serves every example (the session fixture).
_HYPOTHESIS = dict(deadline=None, database=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
# CI does not shrink: a failing property reports its (derandomized, reproducible) example at once,
# so the suite stays within its time budget; `nightly` shrinks.
settings.register_profile("ci", max_examples=6, derandomize=True, phases=[Phase.explicit, Phase.generate], **_HYPOTHESIS)
settings.register_profile("nightly", max_examples=200, print_blob=True, **_HYPOTHESIS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
