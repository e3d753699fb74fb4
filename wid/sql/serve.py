"""``wid serve``: Spark's Thrift JDBC/ODBC server (HiveThriftServer2, shipped in the pyspark
distribution) on the catalog of ``wid sql`` (:mod:`wid.sql.catalog`), wid's SQL functions registered
persistently first. It binds 127.0.0.1 unless ``--bind HOST`` names another interface, and then
anyone who reaches the port can run SQL: the server has no authentication (``hive.server2.
authentication=NONE``). Ctrl-C or SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from wid.sql import catalog
from wid.errors import WidError
from wid.session import find_java
from wid.sql.shell import catalog_options

SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
LOOPBACK = "127.0.0.1"


def spark_home() -> Path:
    """The Spark distribution inside the pyspark package (``bin/``, ``jars/``)."""
    return Path(pyspark.__file__).resolve().parent


def command(path: Path, port: int, host: str, metastore_uri: str | None, master: str) -> list[str]:
    """The ``spark-submit`` command line of the server on the catalog at ``path``."""
    settings = {**catalog.conf(path, metastore_uri), "spark.ui.enabled": "false", "spark.driver.host": LOOPBACK,
                "spark.sql.session.timeZone": "UTC"}
    return [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--name", "wid serve",
            "--class", SERVER_CLASS,
            *[arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")],
            "spark-internal",
            "--hiveconf", f"hive.server2.thrift.port={port}", "--hiveconf", f"hive.server2.thrift.bind.host={host}",
            "--hiveconf", "hive.server2.authentication=NONE"]


def environment() -> dict[str, str]:
    """The Thrift server's environment: this one, with pyspark's ``SPARK_HOME``, Java found and loopback only."""
    find_java()
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK}


def register_functions(path: Path, metastore_uri: str | None) -> None:
    """wid's functions in the catalog, by a short-lived ``wid sql`` (Derby admits one process)."""
    argv = [sys.executable, "-m", "wid.cli.commands", "sql", "--warehouse", str(path), "-e", "SELECT 1 AS ready"]
    if metastore_uri:
        argv += ["--metastore-uri", metastore_uri]
    done = subprocess.run(argv, env=environment(), capture_output=True, text=True)
    if done.returncode:
        raise WidError("cannot register wid's functions in the catalog: "
                       + (done.stderr.strip().splitlines() or ["(no message)"])[-1])


def wait_listening(server: subprocess.Popen, host: str, port: int, timeout: float = 180) -> None:
    """Return once ``host:port`` accepts a connection; a :class:`WidError` if ``server`` exits first
    or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise WidError(f"the Thrift server exited with status {server.returncode} before listening")
        try:
            with socket.create_connection((host if host != "0.0.0.0" else LOOPBACK, port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise WidError(f"the Thrift server did not listen on {host}:{port} within {timeout:.0f} s")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``wid serve`` subcommand's parser (:func:`run` runs it)."""
    parser = subparsers.add_parser("serve", help="Spark's Thrift JDBC/ODBC server on the wid sql catalog")
    parser.add_argument("--port", type=int, default=10000, help="port (default 10000)")
    parser.add_argument("--bind", metavar="HOST", default=LOOPBACK,
                        help="interface to listen on (default 127.0.0.1; any other: no authentication!)")
    catalog_options(parser)
    parser.set_defaults(command=run)
    return parser


def run(args: argparse.Namespace, session: Callable[[], SparkSession]) -> int:
    """Start the server, wait for Ctrl-C or SIGTERM, stop it."""
    if not 0 < args.port < 65536:
        raise WidError(f"--port must be 1..65535, got {args.port}")
    path = catalog.home(args.warehouse)
    register_functions(path, args.metastore_uri)
    log = open(path / "thriftserver.log", "ab")
    server = subprocess.Popen(command(path, args.port, args.bind, args.metastore_uri, args.master or "local[2]"),
                              env=environment(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    stop = lambda *_: server.terminate()  # noqa: E731 - SIGTERM to the server's JVM: it shuts down
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        wait_listening(server, args.bind, args.port)
        print(f"wid serve: jdbc:hive2://{args.bind}:{args.port}/default on {path} "
              f"(log {path / 'thriftserver.log'}; Ctrl-C stops)", flush=True)
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
        log.close()
    print("wid serve: stopped", file=sys.stderr)
    return 0
