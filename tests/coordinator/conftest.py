"""The fixtures of the coordinator's tests: ``h`` a :class:`group_harness.Harness`, ``svc`` a
:class:`group_harness.FakeService` over it, ``sub`` and ``ctx`` its helpers (group_harness.py)."""
from __future__ import annotations

import pytest
from group_harness import FakeService, Harness, ctx_for, subscription


@pytest.fixture
def h() -> Harness:
    return Harness()


@pytest.fixture
def make_harness():
    return Harness


@pytest.fixture
def svc(h) -> FakeService:
    return FakeService(h)


@pytest.fixture
def sub():
    return subscription


@pytest.fixture
def ctx():
    return ctx_for
