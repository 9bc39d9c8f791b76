"""The Spark job on a real standalone cluster (issue #16): a master and one worker (1 core) started
from the pyspark installation's ``spark-class`` on 127.0.0.1, the CLI run as a subprocess with
``--master spark://127.0.0.1:PORT``, its tables against local mode's.

The worker imitates a second node: it runs in its own mount namespace (``unshare -m``) with a
tmpfs over the directory ``private``, so what it writes there the driver does not see, and what
the driver has there it does not see. Its executors run this Python with ``-S`` (no site-packages)
and groupcoord's runtime dependencies, not groupcoord, on PYTHONPATH (links to this environment's
packages, as a directory made with ``pip install --target`` would give them), so the groupcoord
code they run is the zip the driver ships."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupcoord.analytics import job

DATA = Path(__file__).parent / "data"
START_TIMEOUT = 60          # seconds for the master to listen and the worker to register
RUN_TIMEOUT = 120


def _spark_class() -> str:
    import pyspark
    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True, timeout=10)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(not _can_unshare(), reason="needs unshare -m and mount (root): the worker's own disk")


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, what: str) -> re.Match:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text(errors="replace"))
        if m:
            return m
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:]
    raise AssertionError(f"{what}: not seen in {START_TIMEOUT} s (exit {proc.poll()}):\n{tail}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster")
    for d in ("shared", "private", "work", "logs"):
        (base / d).mkdir()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_LOCAL_DIRS": str(base / "work")}
    procs = []
    try:
        mlog = base / "logs" / "master.log"
        with open(mlog, "wb") as f:
            master = subprocess.Popen([_spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", "0", "--webui-port", "0"], stdout=f, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        procs.append(master)
        url = _wait_for(mlog, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master, "the master").group(1)
        # the worker: its own mount namespace, a tmpfs over `private` (the driver keeps its own)
        wlog = base / "logs" / "worker.log"
        with open(wlog, "wb") as f:
            worker = subprocess.Popen(
                ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64m tmpfs "$0" && exec "$@"', str(base / "private"),
                 _spark_class(), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0",
                 "--webui-port", "0", "--cores", "1", "--memory", "1g", "--work-dir", str(base / "work"), url],
                stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        procs.append(worker)
        _wait_for(wlog, r"Successfully registered with master", worker, "the worker's registration")
        runs = []
        yield {"url": url, "base": base, "env": env, "runs": runs}
    finally:
        for p in runs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=15)
        for p in reversed(procs):
            _stop(p)


def _executor_python(base: Path) -> str:
    """A Python for the executors: this interpreter with -S (no site-packages), groupcoord's
    dependencies on PYTHONPATH; it cannot import groupcoord by itself."""
    script = base / "executor-python"
    if not script.exists():
        deps = _deps_dir(base)
        script.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{deps}" exec "{sys.executable}" -S "$@"\n')
        script.chmod(0o755)
        r = subprocess.run([str(script), "-c", "import groupcoord.client"], capture_output=True, text=True)
        assert r.returncode != 0 and "No module named 'groupcoord'" in r.stderr, r.stderr
    return str(script)


def _deps_dir(base: Path) -> Path:
    """groupcoord's runtime dependencies without groupcoord: links to this environment's packages."""
    import construct
    site = Path(construct.__file__).parent.parent
    deps = base / "deps"
    deps.mkdir(exist_ok=True)
    for entry in site.iterdir():
        if "groupcoord" in entry.name or entry.suffix == ".pth" or entry.name in ("pyspark", "__pycache__"):
            continue
        (deps / entry.name).symlink_to(entry)
    return deps


class Run:
    """The CLI as a subprocess on the cluster; .result() waits (the test meanwhile does local mode)."""

    def __init__(self, cluster, args, conf):
        self.t0, self.command = time.monotonic(), args[0]
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys; from groupcoord.cli import main; "
                                                            "sys.exit(main(sys.argv[1:]))", *args,
                                      "--master", cluster["url"], *conf],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster["env"])
        cluster["runs"].append(self.proc)    # killed in the teardown if a test left it running

    def result(self) -> subprocess.CompletedProcess:
        try:
            out, err = self.proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        print(f"{self.command} on the cluster: exit {self.proc.returncode} in {time.monotonic() - self.t0:.1f} s")
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)


def run_cli(cluster, *args, python=None, wait=True):
    quick = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"     # short jobs: the JVMs start faster
    conf = ["--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=1",
            "--conf", f"spark.driver.extraJavaOptions={quick}", "--conf", f"spark.executor.extraJavaOptions={quick}"]
    if python:
        conf += ["--conf", f"spark.pyspark.python={python}"]
    run = Run(cluster, args, conf)
    return run.result() if wait else run


def one_error_line(r, command: str) -> str:
    """The run failed with exit 2 and one line of ours, no traceback (Spark's start-up lines aside)."""
    assert r.returncode == 2, r.stderr[-3000:]
    ours = [line for line in r.stderr.splitlines() if line.startswith(f"groupcoord {command}:")]
    assert len(ours) == 1 and "Traceback" not in r.stderr and "Exception" not in r.stderr, r.stderr[-3000:]
    return ours[0]


@pytest.fixture(scope="module")
def spark():
    with pytest.MonkeyPatch.context() as mp:     # loopback (if this starts the session)
        mp.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        return job.spark_session()  # local mode, to read the tables and analyse the same logs


def rows(spark, where, name):
    keep = lambda r: {k: v for k, v in r.asDict(recursive=True).items() if k != "path"}  # noqa: E731
    return sorted((keep(r) for r in spark.read.parquet(str(where / name)).collect()), key=repr)


LOGS = [DATA / "eager", DATA / "cooperative", DATA / "serve-events.jsonl"]


def test_analyze_on_the_cluster_writes_the_tables_of_local_mode(cluster, spark, tmp_path):
    """A log as a file:// URI, two through viewfs:// (a Hadoop filesystem other than file:, mounted
    by --conf: a directory and an events file), OUT a viewfs:// URI onto the shared directory: the
    tables equal local mode's; the executors cannot import groupcoord by themselves (it is shipped)."""
    out = cluster["base"] / "shared" / "analysis"
    out.mkdir()
    run = run_cli(cluster, "analyze", LOGS[0].resolve().as_uri(), "viewfs://gc/data/cooperative/",
                "viewfs://gc/data/serve-events.jsonl", "--out", "viewfs://gc/analysis",
                "--conf", f"spark.hadoop.fs.viewfs.mounttable.gc.link./analysis={out.as_uri()}",
                "--conf", f"spark.hadoop.fs.viewfs.mounttable.gc.link./data={DATA.resolve().as_uri()}",
                python=_executor_python(cluster["base"]), wait=False)
    local_out = tmp_path / "local"
    job.analyze(job.find_logs(LOGS), local_out, spark=spark)
    r = run.result()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "report: viewfs://gc/analysis/report.html" in r.stdout
    for name in ("rebalances", "sessions", "groups", "invariants", "violations", "summary"):
        assert rows(spark, out, name) == rows(spark, local_out, name), name
    assert "Rebalance report" in (out / "report.html").read_text()


def test_sweep_on_the_cluster(cluster, spark, tmp_path):
    grid = tmp_path / "grid.toml"
    shutil.copy(DATA / "sweep" / "tiny.toml", tmp_path / "tiny.toml")
    grid.write_text('scenario = "tiny.toml"\nseeds = [1]\n[grid]\nstrategy = ["range", "cooperative-sticky"]\n')
    out = cluster["base"] / "shared" / "sweep"
    run = run_cli(cluster, "sweep", str(grid), "--out", str(out), python=_executor_python(cluster["base"]), wait=False)
    local_out = tmp_path / "local"
    from groupcoord.sim.sweep import sweep
    sweep(grid, local_out, spark=spark)
    r = run.result()
    assert r.returncode == 0, r.stderr[-3000:]
    for cell in ("c000", "c001"):
        assert (out / "cells" / cell / "events.jsonl").read_bytes() == \
            (local_out / "cells" / cell / "events.jsonl").read_bytes()
    for name in ("rebalances", "sessions", "summary"):
        assert rows(spark, out, name) == rows(spark, local_out, name), name
    grid_rows = [{k: v for k, v in r.items() if k != "sim_seconds"} for r in rows(spark, out, "grid")]
    assert grid_rows == [{k: v for k, v in r.items() if k != "sim_seconds"} for r in rows(spark, local_out, "grid")]
    assert json.loads((out / "cells.json").read_text())["cells"]["c001"] == {"strategy": "cooperative-sticky", "seed": 1}


def test_out_the_executors_do_not_share_is_one_line(cluster, tmp_path):
    out = cluster["base"] / "private" / "out"
    line = one_error_line(run_cli(cluster, "analyze", str(DATA / "eager"), "--out", str(out)), "analyze")
    assert f"--out {out}: not shared between the driver and the executors" in line
    assert not (out / "rebalances").exists()


def test_a_log_only_the_driver_sees_is_one_line(cluster, tmp_path):
    log = cluster["base"] / "private" / "only-here"
    shutil.copytree(DATA / "eager", log)
    line = one_error_line(run_cli(cluster, "analyze", str(log), "--out", str(cluster["base"] / "shared" / "x")),
                          "analyze")
    assert f"{log / 'events.jsonl'}: the executors cannot read it" in line
