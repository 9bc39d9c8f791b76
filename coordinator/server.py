"""The asyncio TCP driver: one listener per emulated broker, around the sans-I/O Service.

Per connection, requests are handled one at a time and answered in order, as Kafka
does (it mutes a channel until its response is sent): a parked JoinGroup or
SyncGroup holds only its own connection. A malformed frame, or a request of an API
version we do not speak (except ApiVersions, which gets Kafka's v0 error body),
closes that connection with a log line; the service and every other client go on.
"""
from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Iterable

import structlog

from groupcoord.protocol import frames
from groupcoord.protocol.errors import DecodeError, EncodeError, UnsupportedVersionError

from .context import RequestContext
from .handlers import api_versions
from .service import Service

log = structlog.get_logger("groupcoord.server")

MAX_REQUEST_BYTES = 104857600   # Kafka's socket.request.max.bytes
_SIZE = struct.Struct(">i")
_WRITE_HIGH_WATER = 1 << 20


class Server:
    """Listens for every node of a Service; drives its timers from the event loop."""

    def __init__(self, service: Service, host: str = "127.0.0.1", ports: Iterable[int] | None = None):
        self.service = service
        self.host = host
        node_ids = service.cluster.node_ids()
        self.ports = list(ports) if ports is not None else [0] * len(node_ids)
        if len(self.ports) != len(node_ids):
            raise ValueError("one port per node")
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._conn_ids = itertools.count(1)
        self._connections: dict[int, asyncio.StreamWriter] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stats = {"connections": 0, "requests": 0, "closed_malformed": 0}

    # ---- lifecycle ----------------------------------------------------------------
    async def start(self) -> "Server":
        self._loop = asyncio.get_running_loop()
        for node_id, port in zip(self.service.cluster.node_ids(), self.ports):
            await self.start_node(node_id, port)
        self._rearm()
        log.info("listening", bootstrap_servers=self.bootstrap_servers, nodes=len(self._servers))
        return self

    async def start_node(self, node_id: int, port: int | None = None) -> None:
        if port is None:
            port = self.service.cluster.nodes[node_id].port
        server = await asyncio.start_server(
            lambda r, w: self._serve(node_id, r, w), self.host, port, limit=1 << 16)
        actual = server.sockets[0].getsockname()[1]
        self._servers[node_id] = server
        self.service.set_node_address(node_id, self.host, actual)
        self.service.cluster.nodes[node_id].up = True

    async def stop_node(self, node_id: int) -> None:
        server = self._servers.pop(node_id, None)
        if server is not None:
            server.close()
            await server.wait_closed()

    async def stop(self) -> None:
        for node_id in list(self._servers):
            server = self._servers.pop(node_id)
            server.close()
        for writer in list(self._connections.values()):
            writer.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def __aenter__(self) -> "Server":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    @property
    def bootstrap_servers(self) -> str:
        nodes = self.service.cluster.nodes
        return ",".join(f"{nodes[n].host}:{nodes[n].port}" for n in sorted(self._servers))

    # ---- timers -----------------------------------------------------------------------
    def _rearm(self) -> None:
        deadline = self.service.timers.next_deadline()
        if deadline is None:
            return
        if self._timer is not None and self._timer_at is not None and self._timer_at <= deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, (deadline - self.service.clock()) / 1000.0)
        self._timer_at = deadline
        self._timer = self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        try:
            self.service.advance()
        except Exception:  # a bug in a timer callback must not stop the service
            log.exception("timer_failed")
        self._rearm()

    # ---- connections --------------------------------------------------------------------
    async def _serve(self, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn_id = next(self._conn_ids)
        self._connections[conn_id] = writer
        self.stats["connections"] += 1
        peer = writer.get_extra_info("peername")
        client_host = "/" + (peer[0] if peer else "unknown")
        service = self.service
        loop = self._loop
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                size = _SIZE.unpack(head)[0]
                if size < 8 or size > MAX_REQUEST_BYTES:
                    self._malformed(conn_id, node_id, client_host, f"invalid frame size {size}")
                    return
                try:
                    data = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                try:
                    request = frames.decode_request(data)
                except UnsupportedVersionError as exc:
                    api_key, api_version, correlation_id = frames.peek_header(data)
                    if api_key == api_versions.API_KEY:
                        writer.write(frames.encode_response(
                            api_key, 0, correlation_id, api_versions.unsupported_version_response(service)))
                        continue
                    self._malformed(conn_id, node_id, client_host, str(exc))
                    return
                except DecodeError as exc:
                    self._malformed(conn_id, node_id, client_host, str(exc))
                    return
                self.stats["requests"] += 1
                ctx = RequestContext(service, node_id, request.client_id, client_host, request.api_key,
                                     request.api_version, request.correlation_id, conn_id)
                box: list = []
                future: asyncio.Future | None = None

                def respond(body, _box=box):
                    if future is None:
                        _box.append(body)
                    elif not future.done():
                        future.set_result(body)

                try:
                    service.handle(ctx, request.body, respond)
                except Exception:
                    log.exception("handler_failed", api=request.api_name, version=request.api_version,
                                  connection=conn_id)
                    return
                finally:
                    self._rearm()
                if box:
                    body = box[0]
                else:
                    future = loop.create_future()
                    body = await future
                if body is None:
                    continue  # e.g. Produce with acks=0
                try:
                    out = frames.encode_response(request.api_key, request.api_version,
                                                 request.correlation_id, body)
                except EncodeError:
                    log.exception("response_encode_failed", api=request.api_name, version=request.api_version)
                    return
                writer.write(out)
                if writer.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                    await writer.drain()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection_failed", connection=conn_id)
        finally:
            self._connections.pop(conn_id, None)
            writer.close()

    def _malformed(self, conn_id: int, node_id: int, client_host: str, reason: str) -> None:
        self.stats["closed_malformed"] += 1
        log.warning("closing_connection", reason=reason, connection=conn_id, node=node_id, peer=client_host)
