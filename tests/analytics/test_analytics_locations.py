"""Locations and the checks of a cluster run that need no Spark (issue #16)."""
import zipfile

import pytest

from groupcoord.analytics import job, storage
from groupcoord.cli import main


def test_locations():
    assert storage.local("file:///data/out%20x") == "/data/out x" and storage.local("out") == "out"
    assert storage.is_uri("hdfs://nn:8020/logs") and storage.is_uri("s3a://bucket/x")
    assert not storage.is_uri("file:///x") and not storage.is_uri("/x") and not storage.is_uri("c:/x")
    assert storage.join("s3a://bucket/out/", "cells", "c000") == "s3a://bucket/out/cells/c000"
    assert storage.join("out", "cells") == "out/cells"
    with pytest.raises(storage.LocationError, match="names no host"):
        storage.local("file://otherhost/x")


def test_a_table_with_only_the_success_marker_is_not_a_success(tmp_path):
    """What the committer leaves on the driver when the executors wrote the files on their own disk."""
    (tmp_path / "rebalances").mkdir()
    (tmp_path / "rebalances" / "_SUCCESS").write_text("")
    with pytest.raises(storage.NotShared, match=r"Parquet files of .*rebalances are not there as the driver sees it "
                                                 r"\(found: _SUCCESS\)"):
        storage.check_written(None, str(tmp_path / "rebalances"))
    (tmp_path / "rebalances" / "part-00000-x.snappy.parquet").write_bytes(b"PAR1")
    storage.check_written(None, str(tmp_path / "rebalances"))


def test_a_task_that_cannot_open_a_log_is_one_line():
    text = ("Job aborted due to stage failure: ... org.apache.spark.SparkFileNotFoundException: "
            "java.io.FileNotFoundException: File file:/n/only-here/events.jsonl does not exist\n\tat org...")
    assert job._missing_input(text).startswith("file:/n/only-here/events.jsonl: the executors cannot read it")
    text = "org.apache.hadoop.mapred.InvalidInputException: Input path does not exist: file:/n/x.jsonl\n"
    assert job._missing_input(text).startswith("file:/n/x.jsonl: the executors cannot read it")
    assert job._missing_input("Python worker exited unexpectedly") is None


def test_the_shipped_zip_holds_the_package(tmp_path):
    names = set(zipfile.ZipFile(storage.package_zip(tmp_path)).namelist())
    assert {"groupcoord/__init__.py", "groupcoord/analytics/job.py", "groupcoord/sim/simulate.py",
            "groupcoord/coordinator/service.py", "groupcoord/protocol/records.py"} <= names
    assert not any("__pycache__" in n for n in names)


@pytest.mark.parametrize("conf", ["novalue", "=x"])
def test_conf_needs_key_and_value(conf, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["analyze", str(tmp_path), "--out", str(tmp_path / "o"), "--conf", conf])
    assert e.value.code == 2 and "expected key=value" in capsys.readouterr().err


def test_conf_overrides_the_sessions_defaults(monkeypatch):
    """--conf comes last in the builder: a default of spark_session (shuffle partitions, log level)
    can be changed; spark.pyspark.python becomes PYSPARK_PYTHON (PySpark reads only that)."""
    from pyspark.sql import SparkSession
    seen = {}

    def get_or_create(builder):
        seen.update(builder._options)
        raise RuntimeError("not started")

    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", get_or_create)
    monkeypatch.setenv("PYSPARK_PYTHON", "before")   # restored after the test (spark_session sets it)
    with pytest.raises(RuntimeError, match="not started"):
        job.spark_session("spark://127.0.0.1:1", conf={"spark.sql.shuffle.partitions": "1",
                                                       "spark.pyspark.python": "/opt/py/bin/python3"})
    assert seen["spark.sql.shuffle.partitions"] == "1" and seen["spark.master"] == "spark://127.0.0.1:1"
    assert "spark.driver.extraJavaOptions" not in seen      # the local-mode JVM options: local only
    import os
    assert os.environ["PYSPARK_PYTHON"] == "/opt/py/bin/python3"
