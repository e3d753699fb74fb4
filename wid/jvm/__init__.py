"""Live mode's pane step on the JVM: its Java source (``src/``), built on first use.

The step (``wid.jvm.PaneStep``, a ``StatefulProcessor`` run by Spark's ``transformWithState``)
must match the running Spark, so no binary ships: :func:`jar_path` compiles the source once
with ``javac --release 17`` against pyspark's own jars into a per-user cache keyed by the wid
and Spark versions and the source's digest (``$XDG_CACHE_HOME/wid/jvm/<wid>-<spark>-<digest>/
wid-live.jar``, default ``~/.cache``). A session must have the jar on ``spark.jars`` before it
starts: :func:`wid.session.local_session` puts it there; a session of your own takes it as

    SparkSession.builder.config("spark.jars", str(wid.jvm.jar_path()))...

A Spark Connect server runs the step through wid's relation plugin (``wid.jvm.ConnectStep``,
:mod:`wid.jvm.connect`) when it starts with the jar on its ``spark.jars`` and
``spark.connect.extensions.relation.classes=wid.jvm.ConnectStep``. Without a JDK (``javac``
under ``$WID_JDK``, ``$JAVA_HOME`` or on ``PATH``), with ``WID_JVM=off``, in a session without
the jar, or over a Connect server without the plugin, live mode runs the Python step and says
so in one line (:func:`unavailable`). The jar also holds ``wid.jvm.CountStep``, the floor
``wid bench --live`` measures (:func:`counted`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark
from py4j.protocol import Py4JError
from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("wid.live")
SOURCES = Path(__file__).resolve().parent / "src"
STEP = "wid.jvm.PaneStep"
#: The relation plugin that runs the step on a Spark Connect server (:mod:`wid.jvm.connect`).
CONNECT_STEP = "wid.jvm.ConnectStep"
PLUGINS = "spark.connect.extensions.relation.classes"
#: ``WID_JVM=off``: no JVM step (as without a JDK): live mode runs the Python step.
SWITCH = "WID_JVM"


def _version() -> str:
    try:
        return importlib.metadata.version("wid")
    except importlib.metadata.PackageNotFoundError:  # a checkout on PYTHONPATH
        return "dev"


def _digest() -> str:
    sha = hashlib.sha256()
    for path in sorted(SOURCES.rglob("*.java")):
        sha.update(path.relative_to(SOURCES).as_posix().encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:12]


def cached_jar() -> Path:
    """Where :func:`jar_path` keeps the jar for this wid, Spark and source.

    >>> cached_jar().name, pyspark.__version__ in cached_jar().parent.name
    ('wid-live.jar', True)
    """
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return home / "wid" / "jvm" / f"{_version()}-{pyspark.__version__}-{_digest()}" / "wid-live.jar"


def _javac() -> str | None:
    for home in (os.environ.get("WID_JDK"), None if "WID_JDK" in os.environ else os.environ.get("JAVA_HOME")):
        if home and (Path(home) / "bin" / "javac").is_file():
            return str(Path(home) / "bin" / "javac")
    return None if "WID_JDK" in os.environ else shutil.which("javac")


def jar_path() -> Path | None:
    """The step's jar, compiled on first use (see the module doc); None, with one logged line
    saying why, without a JDK or with ``WID_JVM=off``. ``WID_JDK``: the JDK to compile with.

    >>> jar = jar_path()
    >>> jar == cached_jar() and jar.is_file()
    True
    """
    if os.environ.get(SWITCH, "").lower() == "off":
        log.warning(f"wid: {SWITCH}=off: live mode uses the Python step")
        return None
    jar = cached_jar()
    if jar.is_file():
        return jar
    javac = _javac()
    if javac is None:
        log.warning("wid: no JDK (javac) found for live mode's JVM step: live mode uses the Python step "
                    "(install a JDK 17, or set WID_JDK to one)")
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as work:
        classes = Path(work, "classes")
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-cp", f"{jars}/*", "-d", str(classes),
                               *map(str, sorted(SOURCES.rglob("*.java")))], capture_output=True, text=True, check=False)
        if done.returncode:
            log.warning(f"wid: the JVM step did not compile ({done.stderr.strip().splitlines()[0]}): live mode uses "
                        "the Python step")
            return None
        built = Path(work, jar.name)
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(built, jar)  # atomic: a concurrent build writes the same bytes
    return jar


def unavailable(spark: SparkSession) -> str | None:
    """Why ``spark`` cannot run the JVM step (``WID_JVM=off``, no jar on its ``spark.jars``, a
    Spark Connect server without wid's relation plugin), or None when it can.

    >>> unavailable(spark) is None
    True
    """
    if os.environ.get(SWITCH, "").lower() == "off":
        return f"{SWITCH}=off"
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: its server runs the step where it loads the relation plugin
        if CONNECT_STEP not in [c.strip() for c in (spark.conf.get(PLUGINS, "") or "").split(",")]:
            return f"a Spark Connect server without {PLUGINS}={CONNECT_STEP} (docs/live.md)"
        return None
    try:
        jvm.java.lang.Class.forName(STEP, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Py4JError:  # not on the session's classpath
        return "the session has no wid-live.jar on spark.jars (wid.jvm.jar_path() gives it)"
    return None


def pane_step(elements: DataFrame, layout: str) -> DataFrame:
    """``wid.jvm.PaneStep.apply(elements, layout)``: the pane step of live mode over
    ``elements`` (``layout``: its JSON, :func:`wid.stream.live.jvm.layout_json`), on the
    session's JVM, or over Spark Connect through the server's relation plugin
    (:mod:`wid.jvm.connect`). :func:`unavailable` says whether the session can.
    :func:`wid.stream.live.jvm.jvm_panes` builds its arguments; its tests run it.
    """
    spark = elements.sparkSession
    if getattr(spark, "_jvm", None) is None:
        from wid.jvm.connect import pane_relation  # Spark Connect's client, imported when used

        return pane_relation(elements, layout)
    step = spark._jvm.wid.jvm.PaneStep.apply(elements._jdf, layout)
    return DataFrame(step, spark)


def counted(frame: DataFrame, bucket: str) -> DataFrame:
    """``frame`` (a streaming frame on a session that can run the JVM step, with the RocksDB
    state store, as :func:`wid.live` sets it) through ``wid.jvm.CountStep``: every row shuffled
    to the stateful step of its ``bucket`` (an int column), read and counted there; one row per
    bucket and micro-batch, ``(bucket, rows so far)``. The floor ``wid bench --live`` measures:
    no step that sees every row runs faster.

    >>> import tempfile
    >>> from pyspark.sql import functions as F
    >>> spark.conf.set("spark.sql.streaming.stateStore.providerClass",
    ...                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     spark.table("readings").write.parquet(d, mode="overwrite")
    ...     stream = spark.readStream.schema(spark.table("readings").schema).parquet(d)
    ...     out = counted(stream.withColumn("b", F.lit(0)), "b")
    ...     out.writeStream.format("memory").queryName("counted").trigger(availableNow=True).start().awaitTermination()
    >>> [tuple(r) for r in spark.table("counted").collect()] == [(0, spark.table("readings").count())]
    True
    """
    spark = frame.sparkSession
    return DataFrame(spark._jvm.wid.jvm.CountStep.apply(frame._jdf, bucket), spark)


@contextmanager
def python_step() -> Iterator[None]:
    """While open, live queries built run the Python step (``WID_JVM=off``), e.g. to compare the two.

    >>> with python_step():
    ...     print(unavailable(spark))
    WID_JVM=off
    >>> unavailable(spark) is None
    True
    """
    before = os.environ.get(SWITCH)
    os.environ[SWITCH] = "off"
    try:
        yield
    finally:
        if before is None:
            del os.environ[SWITCH]
        else:
            os.environ[SWITCH] = before
