"""What `groupcoord analyze` prints: one verdict line per run, then where the report is, and none of
Spark's start-up lines before them (its session logs errors only, :data:`job.LOG4J2_PROPERTIES`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.analytics.cli import done

DATA = Path(__file__).parent / "data"
#: printed by the JVM itself for the module Spark's launcher adds (--add-modules=jdk.incubator.vector),
#: before any logging exists: no log configuration reaches it
JVM_INCUBATOR_LINE = "WARNING: Using incubator modules: jdk.incubator.vector"


def test_done_prints_a_verdict_line_per_run_then_the_report(tmp_path, capsys):
    analysis = job.Analysis(
        out=str(tmp_path), tables={}, events=40, seconds=1.5, rebalances=[], timeline=[], violations=[],
        logs=[{"log": "c000", "cell": "c000"}, {"log": "c001", "cell": "c001"}],
        summary=[{"log": "c000", "cell": "c000", "rebalances": 2, "violations": 0},
                 {"log": "c001", "cell": "c001", "rebalances": 3, "violations": 1}],
        invariants=[{"log": "c000", "invariant": "single_owner", "checked": 4, "failed": 0, "status": "pass"},
                    {"log": "c001", "invariant": "single_owner", "checked": 4, "failed": 1, "status": "fail"}])
    cells = {"c000": {"strategy": "range", "seed": 1}, "c001": {"strategy": "cooperative-sticky", "seed": 1}}
    assert done(analysis, cells) == 0
    assert capsys.readouterr().out.splitlines() == [
        "PASS: c000 strategy=range: every invariant held; 2 rebalances",
        "FAIL: c001 strategy=cooperative-sticky: 1 violation of 'no partition owned by two members at once' (1)",
        f"2 log(s), 40 events in 1.5 s; report: {tmp_path}/report.html; 1 invariant violation(s)"]


def test_the_session_is_configured_to_log_errors_only():
    config = Path(job.log4j2_config().removeprefix("file://")).read_text()
    assert config == job.LOG4J2_PROPERTIES and "rootLogger.level = error" in config


def test_analyze_prints_its_verdicts_first_and_no_spark_lines(tmp_path):
    """A Spark session of its own (a new JVM, as a user's command starts): about 20 s."""
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", "analyze", str(DATA / "eager"),
                        str(DATA / "serve-events.jsonl"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # before: the default log4j profile's notes, the host's loopback address, the native Hadoop
    # library, "Setting default log level", "Setting Spark log level" (eight lines)
    assert [line for line in r.stderr.splitlines() if line != JVM_INCUBATOR_LINE] == []
    lines = r.stdout.splitlines()
    assert lines[0] == "PASS: eager (eager-by-hand, seed 7): every invariant held; 3 rebalances, p95 25 ms"
    assert lines[1].startswith("PASS: serve-events: 1 invariant held; not checked (coordinator events only): ")
    assert lines[2].startswith("2 log(s), ") and len(lines) == 3


def _java_child(pid: int) -> int | None:
    try:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()
        return next((int(c) for c in children if "java" in open(f"/proc/{c}/cmdline").read()), None)
    except OSError:
        return None


@pytest.mark.skipif(sys.platform != "linux", reason="the JVM is found in /proc")
def test_ctrl_c_ends_analyze_with_one_line_and_leaves_no_jvm(tmp_path):
    """Ctrl-C at a terminal goes to the whole process group: while Spark's JVM starts (it ignores
    the signal and, its gateway not up, would outlive the command holding its output), and once
    the tables are being written. Both: status 130, one line, no traceback, no JVM left."""
    import os
    import signal
    import time
    for stage in ("jvm", "tables"):
        out = tmp_path / stage
        # (three logs: the tables' writes last a while after the first begins)
        run = subprocess.Popen([sys.executable, "-m", "groupcoord.cli", "analyze", str(DATA / "eager"),
                                str(DATA / "cooperative"), str(DATA / "consumer"), "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 120
        while (jvm := _java_child(run.pid)) is None or (stage == "tables" and not out.exists()):
            assert run.poll() is None and time.monotonic() < deadline, stage
            time.sleep(0.02)
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 130, (stage, err)
        assert [line for line in err.splitlines() if line and line != JVM_INCUBATOR_LINE] == [
            f"groupcoord analyze: interrupted; {out} may hold part of an analysis"], stage
        while os.path.exists(f"/proc/{jvm}") and open(f"/proc/{jvm}/stat").read().split()[2] != "Z":
            assert time.monotonic() < deadline, f"{stage}: Spark's JVM is left running"
            time.sleep(0.05)


def _python_worker(jvm: int) -> bool:
    """Whether Spark's JVM has started its Python workers (a task of Python code is running)."""
    import glob
    try:      # (started by one of the JVM's threads: each thread's children are listed apart)
        children = [c for path in glob.glob(f"/proc/{jvm}/task/*/children") for c in open(path).read().split()]
        return any("pyspark" in open(f"/proc/{c}/cmdline").read() for c in children)
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="the JVM is found in /proc")
def test_ctrl_c_ends_a_sweep_with_one_line_and_leaves_no_jvm(tmp_path):
    """As analyze: while Spark's JVM starts, and while the cells run as Spark tasks (the session
    made inside the sweep, whose start puts PySpark's handler in place)."""
    import os
    import signal
    import time
    (tmp_path / "s.toml").write_text('name = "s"\nduration_s = 36000\n[topics]\nt = 40\n'
                                     '[[groups]]\nname = "g"\ntopics = ["t"]\nmembers = 20\n')
    grid = tmp_path / "grid.toml"
    grid.write_text('scenario = "s.toml"\n[grid]\nstrategy = ["range", "sticky"]\n')
    for stage in ("jvm", "cells"):
        out = tmp_path / stage
        run = subprocess.Popen([sys.executable, "-m", "groupcoord.cli", "sweep", str(grid), "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 120
        while (jvm := _java_child(run.pid)) is None or (stage == "cells" and not _python_worker(jvm)):
            assert run.poll() is None and time.monotonic() < deadline, stage
            time.sleep(0.02)
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 130, (stage, err)
        assert [line for line in err.splitlines() if line and line != JVM_INCUBATOR_LINE] == [
            f"groupcoord sweep: interrupted; {out} may hold part of a sweep"], stage
        while os.path.exists(f"/proc/{jvm}") and open(f"/proc/{jvm}/stat").read().split()[2] != "Z":
            assert time.monotonic() < deadline, f"{stage}: Spark's JVM is left running"
            time.sleep(0.05)


def test_analyze_called_in_process_puts_the_handlers_back(tmp_path):
    import signal

    from groupcoord.cli import main
    before = signal.getsignal(signal.SIGINT), sys.unraisablehook
    assert main(["analyze", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    assert (signal.getsignal(signal.SIGINT), sys.unraisablehook) == before
