"""The docstring examples of every module of ``wid`` run as doctests (as PySpark's ``functions``
do), on the session's Spark with ``spark`` and ``wid`` as globals; every public function and
class carries one, but those of :data:`EXEMPT`."""

from __future__ import annotations

import doctest
import importlib
import inspect
import io
import pkgutil

import pytest

import wid
import wid.datasets as datasets

_ALL = "*"
#: Module -> its public functions and classes with no example (:data:`_ALL`: any one), each
#: group for the reason given: an example would start a server, run a benchmark or a CLI for
#: minutes, need a Hive metastore, or run only inside Spark's stateful operator.
EXEMPT = {
    # benchmarks: minutes over millions of generated rows (``wid bench``)
    "wid.bench.main": _ALL, "wid.bench.kinds": _ALL, "wid.bench.scale": _ALL, "wid.bench.live": _ALL,
    # command lines: argument parsers and the commands they run (tests/test_cli.py runs them)
    "wid.cli.commands": ("add_run_parser", "run", "parser", "main"), "wid.cli.live": _ALL,
    "wid.cli.query": ("add_query_parser", "add_replay_parser", "run_query", "run_replay"),
    "wid.sql.pipeline": ("add_parser", "write"),  # tests/test_pipelines.py runs them
    "wid.bench.experiment": ("run_experiment", "experiment", "add_parser", "plot"), "wid.datasets.traffic": ("main",),
    # servers: Spark Connect, the Thrift JDBC server and its shell (tests/test_sqlcat.py, tests/test_connect.py)
    "wid.sql.serve": _ALL, "wid.sql.shell": _ALL, "wid.session": ("remote_session",),
    "wid.jvm.connect": ("pane_relation",),  # over a Connect server with wid's plugin (tests/test_live.py)
    # a Hive metastore (tests/test_sqlcat.py)
    "wid.sql.catalog": ("session",), "wid.sql.views": ("create_persistent_view",),
    # run by transformWithStateInPandas inside a streaming query (wid.live's example runs them)
    "wid.stream.live.state": ("PaneProcessor",), "wid.stream.live.sessions.state": ("SessionProcessor",),
    "wid.stream.live.operational": ("OperationalProcessor",), "wid.stream.live.fca": ("SlideProcessor",),
    "wid.stream.live.processor": ("Stateful",), "wid.stream.live.output": ("views_of",),
    "wid.stream.live.jvm": ("jvm_panes",), "wid.jvm": ("pane_step",),
}
#: Every module of the package and of the bundled generators (``wid.datasets``, installed from datasets/).
MODULES = sorted({m.name for path, prefix in ((wid.__path__, "wid."), (datasets.__path__, "wid.datasets."))
                  for m in pkgutil.walk_packages(path, prefix)})


@pytest.fixture(scope="module")
def readings(spark):
    """The view of :func:`wid.query`'s example, so that each module's examples run on their own."""
    spark.createDataFrame([(0, 1.0, 1.5, "a", 5), (1, 4.0, 4.5, "a", 7), (2, 2.5, 5.0, "b", 1), (3, 9.0, 9.5, "a", 2)],
                          "row_num long, ts double, arrival_ts double, k string, v long"
                          ).createOrReplaceTempView("readings")


def _public(module) -> set[str]:
    """The functions and classes ``module`` defines (not imports) whose names have no ``_``."""
    return {name for name, value in vars(module).items() if not name.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__}


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(spark, readings, name):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module, extraglobs={"spark": spark, "wid": wid}) if t.examples]
    shown, public = {t.name.removeprefix(f"{name}.") for t in tests}, _public(module)
    exempt = public - shown if EXEMPT.get(name) == _ALL else set(EXEMPT.get(name, ()))
    assert public - shown - exempt == set(), "a public function or class has no example"
    assert exempt & shown == set() and exempt <= public, "EXEMPT names one that has an example, or none"
    runner, report = doctest.DocTestRunner(), io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()
