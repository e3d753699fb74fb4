"""``wid run --master spark://...`` on a real Spark standalone cluster gives the local result.

A master and two one-core workers are started on 127.0.0.1 from the installed pyspark's
``bin/spark-class`` (once for this module) and stopped afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from connect_server import LOOPBACK, ROOT, free_port, spark_env, spark_process
from wid.cli import main as wid_main

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
             "--webui-port", str(free_port())], port, tmp / "master.log"))
        work_dirs = []
        for i in range(WORKERS):
            work_dirs.append(tmp / f"worker{i}")
            worker_port = free_port()
            stack.enter_context(spark_process(
                ["spark-class", "org.apache.spark.deploy.worker.Worker", url, "--host", LOOPBACK,
                 "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", "1", "--memory", "1g",
                 "--work-dir", str(work_dirs[-1])], worker_port, tmp / f"worker{i}.log"))
        yield url, work_dirs


def test_wid_run_on_a_standalone_cluster_prints_the_local_result(spark, cluster, capsys):
    url, work_dirs = cluster
    plan = str(ROOT / "plans" / "q1_traffic.toml")
    assert wid_main(["run", plan, "--limit", "1000"], spark) == 0
    local = capsys.readouterr().out
    run = subprocess.run([sys.executable, "-m", "wid.cli", "run", plan, "--limit", "1000", "--master", url],
                         env=spark_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == local
    assert "rows)" in local
    # the work ran in executors on both workers, not in the driver
    for work_dir in work_dirs:
        assert list(work_dir.glob("app-*/*/stderr")), f"no executor ran on the worker in {work_dir}"
