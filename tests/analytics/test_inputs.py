"""``groupcoord analyze`` checks what it can before Spark starts, and says what is wrong in one
line: an output path that cannot be a directory, a Java too old or that cannot be run (the
missing-Java and not-an-event-log cases are in tests/cli/test_cli_errors.py). Each check runs
with no usable java on PATH or a fake one, so reaching Spark would be a different error."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.cli import main

DATA = Path(__file__).parent / "data"


def analyze(tmp_path, log, out, **env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in env_changes}
    env.update({k: v for k, v in env_changes.items() if v is not None})
    return subprocess.run([sys.executable, "-m", "groupcoord.cli", "analyze", str(log), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("groupcoord analyze: ")
    return r.stderr.strip()


def fake_java(tmp_path, script: str) -> Path:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(script)
    java.chmod(0o755)
    return java


def test_out_that_is_a_file_is_refused_before_spark(tmp_path):
    # before: Spark started (8 s), then a FileExistsError traceback
    out = tmp_path / "report.html"
    out.write_text("")
    line = one_line(analyze(tmp_path, DATA / "eager", out, PATH=str(tmp_path), JAVA_HOME=None))
    assert line.endswith(f"--out {out}: exists and is not a directory")
    line = one_line(analyze(tmp_path, DATA / "eager", out / "sub", PATH=str(tmp_path), JAVA_HOME=None))
    assert line.endswith(f"--out {out / 'sub'}: {out} is not a directory")


@pytest.mark.parametrize("printed, major", [('openjdk version "11.0.22" 2024-01-16', 11),
                                            ('java version "1.8.0_392"', 8)])
def test_a_java_older_than_17_is_named_in_one_line(tmp_path, printed, major):
    # before: PySpark's launcher failed on it (JAVA_GATEWAY_EXITED) without saying why
    java = fake_java(tmp_path, f"#!/bin/sh\necho '{printed}' >&2\nexit 0\n")
    line = one_line(analyze(tmp_path, DATA / "eager", tmp_path / "out", JAVA_HOME=str(java.parents[1])))
    assert line.endswith(f"needs Java 17 or newer: {java} is Java {major} (set JAVA_HOME to a Java 17+ installation)")
    assert not (tmp_path / "out").exists()


def test_a_java_that_cannot_be_run_is_named_in_one_line(tmp_path):
    java = fake_java(tmp_path, "not a program\n")       # executable bit, no interpreter: ENOEXEC
    line = one_line(analyze(tmp_path, DATA / "eager", tmp_path / "out", JAVA_HOME=str(java.parents[1])))
    assert f"cannot run {java}: Exec format error" in line


def test_java_version_of_this_machine():
    import shutil
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    if java is None:
        pytest.skip("no java here")
    assert job.java_version(java) >= job.JAVA_MIN


def test_check_out_creates_nothing(tmp_path):
    job.check_out(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()
    job.check_out(tmp_path)


def test_sweep_refuses_an_out_that_is_a_file_before_spark(tmp_path):
    # before: the grid's cells were simulated on Spark first (no java on PATH here: reaching
    # Spark would be another error)
    out = tmp_path / "report.html"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", "sweep", str(DATA / "sweep" / "tiny.toml"),
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.strip() == f"groupcoord sweep: --out {out}: exists and is not a directory"


def test_analyze_without_pyspark_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    assert main(["analyze", str(DATA / "eager"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    # how this project installs (its clone: make install-dev, or pip install -e '.[analytics]'), not a
    # package index's name that does not exist
    assert "PySpark" in err and "make install-dev" in err and "pip install -e '.[analytics]'" in err
    assert "groupcoord[analytics]" not in err
    assert not (tmp_path / "out").exists()
