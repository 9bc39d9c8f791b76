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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs the suite on two workers (pytest-xdist): much of it waits on timers and
    sockets, so two cores do it in about two thirds of the time. A file's tests stay on one worker
    (its module fixtures run once), and tests/analytics is one unit, handed out first: its Spark
    sessions take both cores, and two of them side by side took three times as long each."""
    if config.getvalue("dist") not in ("load", "loadfile", "loadscope"):
        return None                     # another --dist asked for: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class SparkOnOneWorker(LoadScopeScheduling):
        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.config.option.loadscopereorder = False     # collection order: tests/analytics first

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/analytics" if path.startswith("tests/analytics/") else path

    return SparkOnOneWorker(config, log)
