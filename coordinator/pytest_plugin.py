"""pytest plugin (entry point ``groupcoord``): a coordinator for your tests in milliseconds.

Fixtures:

- ``groupcoord``: a running coordinator (one node, ``test`` profile) on an ephemeral
  port, for the test that uses it; ``groupcoord.bootstrap_servers`` is what clients need.
- ``groupcoord_factory``: call it with ``nodes=``, ``topics=``, ``config=`` ... to start
  more or differently configured ones; all are stopped after the test.
"""
from __future__ import annotations

import pytest


@pytest.fixture
def groupcoord_factory():
    from .embed import ThreadedCoordinator  # imported late: loading the plugin stays cheap

    started = []

    def start(**kwargs) -> ThreadedCoordinator:
        coordinator = ThreadedCoordinator(**kwargs).start()
        started.append(coordinator)
        return coordinator

    yield start
    for coordinator in started:
        coordinator.stop()


@pytest.fixture
def groupcoord(groupcoord_factory):
    return groupcoord_factory()
