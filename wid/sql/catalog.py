"""The persistent catalog of ``wid sql`` and ``wid serve``: an embedded Spark with Hive support,
a warehouse directory and a Derby metastore under one home directory, or an external metastore.

The home is ``--warehouse DIR``, else ``$WID_WAREHOUSE``, else ``~/.wid``; it holds
``warehouse/`` (table data), ``metastore_db/`` (the Derby metastore: one process at a time may
open it) and ``derby.log``. ``--metastore-uri thrift://HOST:PORT`` (or ``$WID_METASTORE_URI``)
uses a running Hive metastore instead of Derby.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from wid.session import local_session
from wid.sql.views import register

HOME_ENV, METASTORE_ENV = "WID_WAREHOUSE", "WID_METASTORE_URI"


def home(warehouse: str | None = None) -> Path:
    """The catalog's home directory (created): ``warehouse``, ``$WID_WAREHOUSE`` or ``~/.wid``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = home(tmp + "/catalog/../wid")
    ...     print(path == Path(tmp, "wid").resolve(), path.is_dir())
    True True
    """
    path = Path(warehouse or os.environ.get(HOME_ENV) or Path.home() / ".wid").expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def conf(path: Path, metastore_uri: str | None = None) -> dict[str, str]:
    """Spark settings of a Hive-enabled session on the catalog at ``path``.

    >>> settings = conf(Path("/srv/wid"))
    >>> settings["spark.sql.warehouse.dir"], settings["spark.hadoop.javax.jdo.option.ConnectionURL"]
    ('/srv/wid/warehouse', 'jdbc:derby:;databaseName=/srv/wid/metastore_db;create=true')
    >>> conf(Path("/srv/wid"), "thrift://meta:9083")["spark.hadoop.hive.metastore.uris"]
    'thrift://meta:9083'
    """
    uri = metastore_uri or os.environ.get(METASTORE_ENV)
    settings = {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(path / "warehouse"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={path} -Dderby.stream.error.file={path / 'derby.log'}",
    }
    if uri:
        settings["spark.hadoop.hive.metastore.uris"] = uri
    else:
        settings["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={path / 'metastore_db'};create=true")
    return settings


def session(path: Path, metastore_uri: str | None = None, master: str = "local[2]") -> SparkSession:
    """An embedded session on the catalog at ``path``, wid's functions registered persistently."""
    spark = local_session(master, conf=conf(path, metastore_uri))
    register(spark, persistent=True)
    return spark
