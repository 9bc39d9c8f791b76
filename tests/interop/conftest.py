"""Fixtures of the interop suite: a coordinator that records its events, and cleanup of clients.

``coord(nodes=1, topics=TOPICS, config=None)`` starts a groupcoord service (a
:class:`~groupcoord.coordinator.embed.ThreadedCoordinator`, ``test`` profile) and returns a
:class:`Coord`: ``bootstrap``, ``gc``, ``events`` and ``group(group_id)`` (a :class:`GroupView`
snapshot of the coordinator core, taken on the service loop).

``closing(obj)`` registers obj (anything with ``close()``) to be closed at teardown, last
registered first, before the coordinator stops, whatever the test did; each close is given
``CLOSE_WAIT`` seconds (clients.close_within: one that hangs fails the test, not the suite).

``driver_for(client)`` makes a :mod:`clients` driver, closed at teardown.
"""
from __future__ import annotations

import logging

import pytest

from clients import CLOSE_WAIT, DRIVERS, TOPICS, Coord, close_within, kafkajs_available

# The project's pytest plugin (entry point ``groupcoord``) provides groupcoord_factory; importing it
# here keeps the suite working in an environment installed before the entry point existed.
from groupcoord.coordinator.pytest_plugin import groupcoord_factory  # noqa: F401,E402


def _event_line(e: dict) -> str:
    skip = {"v", "event", "ts_ms", "group"}
    fields = " ".join(f"{k}={v}" for k, v in e.items() if k not in skip and v is not None)
    return f"{e['ts_ms'] % 100000:>5} {e.get('group', e.get('transactional_id'))} {e['event']} {fields}"


@pytest.fixture
def coord(groupcoord_factory):
    def start(nodes: int = 1, topics: dict[str, int] | None = None, config: dict | None = None) -> Coord:
        holder: list[Coord] = []
        pending: list[dict] = []

        def emit(event):
            if holder:
                holder[0].record(event)
            else:
                pending.append(event)
        gc = groupcoord_factory(nodes=nodes, topics=dict(TOPICS if topics is None else topics),
                                config=config, emit=emit)
        c = Coord(gc)
        c.events.extend(pending)
        holder.append(c)
        started.append(c)
        return c
    started: list[Coord] = []
    yield start
    # shown by pytest only when the test failed: what the coordinator saw
    for c in started:
        print(f"--- coordinator events ({c.bootstrap})")
        for e in list(c.events):
            if e["event"] != "offset.committed":
                print(_event_line(e))


@pytest.fixture
def closing(groupcoord_factory):
    """Register objects to close at teardown (LIFO), before any coordinator of the test stops."""
    stack: list = []

    def register(obj):
        stack.append(obj)
        return obj
    yield register
    errors = []
    for obj in reversed(stack):
        try:
            close_within(obj, CLOSE_WAIT)
        except Exception as exc:  # close everything; report the first failure
            logging.getLogger("interop").exception("close failed: %r", obj)
            errors.append(exc)
    if errors:
        raise errors[0]


@pytest.fixture
def driver_for(closing):
    def make(client: str, bootstrap: str):
        if client == "kafkajs" and not kafkajs_available():
            pytest.skip("KafkaJS is not installed: run `make js` (npm ci in tests/interop/js)")
        return closing(DRIVERS[client](bootstrap))
    return make
