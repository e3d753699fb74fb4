"""Local Spark processes for the tests, started from the installed pyspark and bound to 127.0.0.1.

``spark_process(...)`` runs one JVM class through pyspark's ``bin/spark-class`` or
``bin/spark-submit`` (which ``exec`` java, so the child is the JVM itself), hands back a
``ready()`` that waits until it listens on its port (so several start at once, or one starts
early and is waited for when first used), and stops it (and anything it forked) on exit.
``connect_server()`` is a Spark Connect server; ``free_port()`` a loopback port nobody listens on;
``assert_wid_run_matches_local`` checks ``wid run`` against such a server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

from wid.session import find_java

SPARK_HOME = Path(pyspark.__file__).resolve().parent
ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: JVM options of the run's short-lived JVMs, by the variable Spark's scripts read them from: the
#: ``wid``, ``spark-sql``, ``spark-submit`` and pyspark processes the tests start, beeline, a
#: standalone cluster's daemons, and Spark's launcher before each. C1 alone: such a JVM compiles
#: much and runs little, and is done sooner without C2's compilations (``wid run`` of Q1 in its own
#: process, interleaved, LOADED: 32-58 s against 46-67 s). Only the JIT changes, no result.
QUICK_JVMS = {name: "-XX:TieredStopAtLevel=1" for name in
              ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS", "SPARK_BEELINE_OPTS", "SPARK_LAUNCHER_OPTS")}
#: The run's two long-lived JVMs, its session and its Connect server, keep tiered compilation (they
#: run the suite's queries for minutes): their driver option comes after ``SPARK_SUBMIT_OPTS``.
FULL_JIT = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def spark_env() -> dict[str, str]:
    """The environment for Spark daemons and drivers: loopback only, and Python workers that
    run this interpreter with this checkout importable (``wid`` for Arrow functions)."""
    find_java()
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": LOOPBACK,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), path) if p),
    }


def assert_wid_run_matches_local(spark, capsys, *target: str) -> None:
    """``wid run plans/q1_traffic.toml`` with ``target`` (``--master URL`` or ``--remote URL``)
    in a fresh process prints exactly what it prints on the local session ``spark``."""
    from wid.cli.commands import main as wid_main

    plan = str(ROOT / "plans" / "q1_traffic.toml")
    assert wid_main(["run", plan, "--limit", "1000"], spark) == 0
    local = capsys.readouterr().out
    run = subprocess.run([sys.executable, "-m", "wid.cli.commands", "run", plan, "--limit", "1000", *target],
                         env=spark_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == local
    assert "rows)" in local


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((LOOPBACK, port)) == 0


@contextmanager
def spark_process(
    args: list[str], port: int, log: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> Iterator[Callable[[], None]]:
    """Start ``bin/<args...>`` from pyspark and stop it when the ``with`` block ends; yields ``ready()``,
    which returns once ``port`` accepts connections and fails with the tail of ``log`` if the process
    exits or ``timeout`` (from the start) passes first."""
    with open(log, "wb") as out:
        process = subprocess.Popen([str(SPARK_HOME / "bin" / args[0]), *args[1:]], env={**spark_env(), **(env or {})},
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    deadline = time.monotonic() + timeout

    def ready() -> None:
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{' '.join(args[:3])} did not listen on {LOOPBACK}:{port}:\n{tail}")
            time.sleep(0.25)

    try:
        yield ready
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM the process group this test started (SIGKILL after 30 s)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def loopback_conf(**extra: str) -> list[str]:
    """``--conf`` arguments that bind the driver to 127.0.0.1, as :func:`wid.session.local_session`."""
    conf = {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        **extra,
    }
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


@contextmanager
def connect_server(log: Path, master: str = "local[2]", **conf: str) -> Iterator[Callable[[], str]]:
    """A Spark Connect server on a free loopback port (``conf``: more settings), started on entry;
    yields ``url()``, which waits until it listens and returns its ``sc://127.0.0.1:PORT`` URL."""
    port = free_port()
    args = ["spark-submit", "--class", CONNECT_SERVER, "--name", "wid tests", "--master", master,
            "--driver-memory", "1g", *loopback_conf(**{"spark.connect.grpc.binding.address": LOOPBACK,
                                                      "spark.connect.grpc.binding.port": str(port),
                                                      **FULL_JIT, **conf})]
    with spark_process(args, port, log, env={"SPARK_CONNECT_MODE": "0"}) as ready:
        def url() -> str:
            ready()
            return f"sc://{LOOPBACK}:{port}"

        yield url
