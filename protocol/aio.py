"""The asyncio helper shared by the parts that drive the sans-I/O cores over asyncio: the client's
GroupConsumer and the coordinator's admin app, which may not import each other; their common ground
is :mod:`groupcoord.protocol`, and this is its one module that uses asyncio (the import contracts
name it)."""
from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait for event up to timeout seconds (None: for ever); whether it was set.

    Not asyncio.wait_for: on Python 3.11 it can swallow a cancellation that arrives just as
    the event is set, which would keep a cancelled task running for ever.
    """
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait({waiter}, timeout=timeout)
        return waiter in done
    finally:
        if not waiter.done():
            waiter.cancel()
