"""The docstring examples of every module of ``wid`` run as doctests (as PySpark's ``functions``
do), on the session's Spark with ``spark`` and ``wid`` as globals; the public functions of
:data:`PUBLIC` must carry one."""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import wid
import wid.datasets as datasets

#: Module -> the public functions whose docstrings must carry a runnable example.
PUBLIC = {
    "wid.compiler": ["query"],
    "wid.stream.replay": ["replay"],
    "wid.stream.punctuate": ["embedded", "slack", "heartbeat", "ordered_by"],
    "wid.sql": ["register", "create_view", "run_sql"],
    "wid.aggregate.bins": [],
    "wid.aggregate.fca": [],
    "wid.stream.live_nan": [],
    "wid.bucket.nan": [],
    "wid.bucket.plain": ["PlainNames"],
    "wid.spec.spl": [],
    "wid.spec.base": ["spelled"],
    "wid.stream.scan": ["before"],
    "wid.stream.live_input": ["spark_hash", "bucket_keys"],
    "wid.stream.live_processor": [],
    "wid.stream.live_arrival": ["positions", "arrival_order"],
    "wid.stream.state_rows": ["state_frame", "packed"],
    "wid.stream.live_windows": ["advance"],
    "wid.stream.live_sessions": ["advance_sessions"],
    "wid.stream.sessions": ["KeySessions"],
    "wid.stream.session_runs": ["numbers", "Peaks", "advance_in_order"],
    "wid.bucket.session": ["gap_in_x"],
    "wid.bucket.spl_scan": [],
    "wid.spec.windows": [],
    "wid.spec.numbers": [],
}
#: Every module of the package and of the bundled generators (``wid.datasets``, installed from datasets/).
MODULES = sorted({m.name for path, prefix in ((wid.__path__, "wid."), (datasets.__path__, "wid.datasets."))
                  for m in pkgutil.walk_packages(path, prefix)} | set(PUBLIC))


@pytest.fixture(scope="module")
def readings(spark):
    """The view of :func:`wid.query`'s example, so that each module's examples run on their own."""
    spark.createDataFrame([(0, 1.0, 1.5, "a", 5), (1, 4.0, 4.5, "a", 7), (2, 2.5, 5.0, "b", 1), (3, 9.0, 9.5, "a", 2)],
                          "row_num long, ts double, arrival_ts double, k string, v long"
                          ).createOrReplaceTempView("readings")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(spark, readings, name):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module, extraglobs={"spark": spark, "wid": wid}) if t.examples]
    assert set(PUBLIC.get(name, ())) <= {t.name.rsplit(".", 1)[-1] for t in tests}, "a public function has no example"
    runner, report = doctest.DocTestRunner(), io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()
