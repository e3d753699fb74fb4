"""``wid run --master spark://...`` on a real Spark standalone cluster gives the local result.

A master and two one-core workers are started on 127.0.0.1 from the installed pyspark's
``bin/spark-class`` (once for this module) and stopped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from connect_server import LOOPBACK, assert_wid_run_matches_local, free_port, spark_process

pytestmark = pytest.mark.slow
WORKERS = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[tuple[str, list[Path]]]:
    """``(master URL, each worker's work dir)``."""
    tmp = tmp_path_factory.mktemp("cluster")
    port = free_port()
    url = f"spark://{LOOPBACK}:{port}"
    with ExitStack() as stack:
        stack.enter_context(spark_process(
            ["spark-class", "org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(port),
             "--webui-port", str(free_port())], port, tmp / "master.log"))()
        work_dirs, workers = [], []  # the workers start together, once their master listens
        for i in range(WORKERS):
            work_dirs.append(tmp / f"worker{i}")
            worker_port = free_port()
            workers.append(stack.enter_context(spark_process(
                ["spark-class", "org.apache.spark.deploy.worker.Worker", url, "--host", LOOPBACK,
                 "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", "1", "--memory", "1g",
                 "--work-dir", str(work_dirs[-1])], worker_port, tmp / f"worker{i}.log")))
        for ready in workers:
            ready()
        yield url, work_dirs


def test_wid_run_on_a_standalone_cluster_prints_the_local_result(spark, cluster, capsys):
    url, work_dirs = cluster
    assert_wid_run_matches_local(spark, capsys, "--master", url)
    # the work ran in executors on both workers, not in the driver
    for work_dir in work_dirs:
        assert list(work_dir.glob("app-*/*/stderr")), f"no executor ran on the worker in {work_dir}"
