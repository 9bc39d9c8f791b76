"""Fixtures of the admin API tests (names start with ``admin_``)."""
from __future__ import annotations

import asyncio

import aiohttp
import pytest

from groupcoord.coordinator.embed import running

from admin_helpers import Http


@pytest.fixture
async def admin_gc():
    """A running coordinator with the admin listener; topics orders (3) and audit (2)."""
    async with running(http=True, topics={"orders": 3, "audit": 2}) as gc:
        yield gc


@pytest.fixture
async def admin_http(admin_gc):
    async with aiohttp.ClientSession() as session:
        yield Http(session, admin_gc.admin_url)


@pytest.fixture
async def admin_consumers():
    """Consumers a test opens; closed afterwards whatever happened."""
    opened = []
    yield opened
    for c in opened:
        try:
            await asyncio.wait_for(c.close(timeout=1), 5)
        except Exception:
            pass


@pytest.fixture
def admin_events(admin_gc):
    """Every coordinator event published while the test runs."""
    seen = []
    unsubscribe = admin_gc.service.bus.subscribe(seen.append)
    yield seen
    unsubscribe()
