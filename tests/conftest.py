"""Fixtures for every test."""
from __future__ import annotations

import pytest
import structlog


@pytest.fixture(autouse=True)
def _structlog_config_restored():
    """A test that runs a command in this process (its --log-level reconfigures structlog) leaves
    the configuration as it found it, so a later test's capture_logs() sees info lines."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


#: the fleets in real time: run after tests/analytics on its worker, never beside Spark's JVM (beside
#: it, a member's 100 ms margin and a producer's rate did not hold: a CI run of two workers)
REAL_TIME = ("tests/sim/test_fleet.py", "tests/sim/test_fleet_processes.py", "tests/sim/test_fleet_daemon.py")
#: the one unit of work for those and tests/analytics (in collection order: the analytics first)
SERIAL = "tests/analytics, then the real-time fleets"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs the suite on two workers (pytest-xdist): much of it waits on timers and
    sockets, so two cores do it in about 60-70% of the time. A file's tests stay on one worker (its
    module fixtures run once). tests/analytics and the real-time fleets are one unit, handed out
    before any file: one Spark session (the modules reuse the active one) on one worker beside the
    rest, and the fleets after it. (With two sessions side by side, one module's fixture took 79 s
    instead of 27 s.)"""
    if config.getvalue("dist") not in ("load", "loadfile", "loadscope"):
        return None     # each, loadgroup, worksteal: xdist's own (-n alone means load: this one)
    from xdist.scheduler import LoadScopeScheduling

    class SparkOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SERIAL if path.startswith("tests/analytics/") or path in REAL_TIME else path

        def _assign_work_unit(self, node) -> None:
            # the other files go out as xdist orders them (most tests first)
            if SERIAL in self.workqueue:
                self.workqueue.move_to_end(SERIAL, last=False)
            super()._assign_work_unit(node)

    return SparkOnOneWorker(config, log)
