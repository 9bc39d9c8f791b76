"""groupcoord inside your own process: for tests and tools.

asyncio code::

    async with groupcoord.coordinator.embed.running(topics={"orders": 3}) as gc:
        consumer = AIOKafkaConsumer("orders", bootstrap_servers=gc.bootstrap_servers, ...)

anything else (a thread runs the event loop)::

    with groupcoord.coordinator.embed.ThreadedCoordinator(topics={"orders": 3}) as gc:
        Consumer({"bootstrap.servers": gc.bootstrap_servers, ...})

Both listen on ephemeral loopback ports and use the ``test`` profile unless told
otherwise (no initial rebalance delay, short minimum session timeout). State stays in memory
unless ``data_dir=`` is given (then it is loaded from and appended to logs there, see
:mod:`.storage`; ``fsync=`` "always", "interval" or "never"). They log as a library does, through
Python's ``logging`` under the ``groupcoord`` loggers: warnings only, until the program asks for
more (``logging.basicConfig(level=logging.INFO)``; see :func:`.logs.quiet_unless_configured`).
"""
from __future__ import annotations

import asyncio
import threading
from contextlib import asynccontextmanager
from typing import Any, Callable, Mapping

from .config import BrokerConfig
from .logs import quiet_unless_configured
from .server import Server
from .service import Service


class Embedded:
    def __init__(self, service: Service, server: Server):
        self.service = service
        self.server = server
        self.admin = None      # an AdminListener when started with http=True

    @property
    def admin_url(self) -> str | None:
        return None if self.admin is None else self.admin.url

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers


def _build(nodes, topics, profile, config, emit, host, data_dir=None, fsync="interval") -> tuple[Service, Server]:
    quiet_unless_configured()
    store = None
    if data_dir is not None:
        from .storage import LogStore
        store = LogStore(str(data_dir), fsync=fsync)
    service = Service(BrokerConfig(dict(config or {}), profile=profile), nodes=nodes, host=host, emit=emit,
                      store=store)
    if store is not None:
        service.load()
    for name, partitions in (topics or {}).items():
        service.create_topic(name, partitions, exist_ok=True)    # may be kept in data_dir
    return service, Server(service, host)


@asynccontextmanager
async def running(*, nodes: int = 1, topics: Mapping[str, int] | None = None, profile: str = "test",
                  config: Mapping[str, Any] | None = None, emit: Callable[[dict], None] | None = None,
                  host: str = "127.0.0.1", data_dir=None, fsync: str = "interval", http: bool = False,
                  http_token: str | None = None):
    service, server = _build(nodes, topics, profile, config, emit, host, data_dir, fsync)
    await server.start()
    embedded = Embedded(service, server)
    try:
        if http:
            from .admin.app import AdminListener
            embedded.admin = await AdminListener(service, server, host, 0, http_token).start()
        yield embedded
    finally:
        if embedded.admin is not None:
            await embedded.admin.stop()
        await server.stop()
        _close_store(service)


def _close_store(service: Service) -> None:
    close = getattr(service.store, "close", None)
    if close is not None:
        close()


class ThreadedCoordinator(Embedded):
    """The service on an event loop of its own thread, for synchronous code."""

    def __init__(self, *, nodes: int = 1, topics: Mapping[str, int] | None = None, profile: str = "test",
                 config: Mapping[str, Any] | None = None, emit: Callable[[dict], None] | None = None,
                 host: str = "127.0.0.1", data_dir=None, fsync: str = "interval", http: bool = False,
                 http_token: str | None = None):
        service, server = _build(nodes, topics, profile, config, emit, host, data_dir, fsync)
        super().__init__(service, server)
        self._http = (http, host, http_token)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="groupcoord", daemon=True)

    def start(self) -> "ThreadedCoordinator":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=10)
        http, host, token = self._http
        if http:
            from .admin.app import AdminListener
            listener = AdminListener(self.service, self.server, host, 0, token)
            self.admin = asyncio.run_coroutine_threadsafe(listener.start(), self.loop).result(timeout=10)
        return self

    def call(self, fn: Callable, *args) -> Any:
        """Run fn(*args) on the service's loop (the core is not thread-safe) and return its result."""
        async def _call():
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(_call(), self.loop).result(timeout=10)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        if self.admin is not None:
            asyncio.run_coroutine_threadsafe(self.admin.stop(), self.loop).result(timeout=10)
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()
        _close_store(self.service)

    def __enter__(self) -> "ThreadedCoordinator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
