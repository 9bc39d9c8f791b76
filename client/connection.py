"""One Kafka connection over asyncio streams: frames out, responses matched in order.

    conn = BrokerConnection("127.0.0.1", 9092, client_id="me")
    await conn.connect()                    # TCP, then ApiVersions (conn.api_versions)
    body = await conn.request(api_key, version, body)

Requests may be pipelined: Kafka answers the requests of one connection in the order it
received them, so responses are matched to requests first in, first out, and each one's
correlation id is checked. ApiVersions is negotiated at connect time: v3 first; a broker
that does not speak it answers with a v0 error body listing its range for ApiVersions, and
the request is repeated at the highest version both sides speak.

The connection itself has no timeouts beyond the connect timeout; the sans-I/O member
decides when a request has taken too long and closes the connection.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from collections import deque
from typing import Callable

from groupcoord.protocol import frames
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import DecodeError, ErrorCode
from groupcoord.protocol.messages import APIS

log = logging.getLogger("groupcoord.client.connection")

API_VERSIONS = int(ApiKey.API_VERSIONS)
METADATA = int(ApiKey.METADATA)
CLIENT_SOFTWARE_NAME = "groupcoord"
CLIENT_SOFTWARE_VERSION = "0.1.0"
_SIZE = struct.Struct(">i")
MAX_RESPONSE_BYTES = 512 * 1024 * 1024


class ConnectionClosed(ConnectionError):
    pass


def decode_response(api_key: int, version: int, payload: bytes) -> dict:
    """frames.decode_response, except that bytes after the body are ignored.

    Kafka's own clients read what they know and ignore the rest of a response buffer; some
    brokers rely on it (librdkafka's mock cluster sends a stray byte after flexible Metadata).
    """
    api = APIS[api_key]
    header_codec = frames.RESPONSE_HEADER.codec(frames.response_header_version(api_key, version))
    _, pos = header_codec.decode_from(payload, 0)
    return api.response.codec(version).decode(payload, pos, allow_trailing=True)


class ResponseCache:
    """Decoded responses shared by many connections (a fleet's members): payloads of the cached
    APIs that are identical but for the correlation id are decoded once. The bodies handed out
    are shared between their receivers: read them, never change them."""

    def __init__(self, api_keys: tuple[int, ...] = (API_VERSIONS, METADATA), size: int = 64):
        self.api_keys = frozenset(api_keys)
        self.size = size
        self._bodies: dict[tuple, dict] = {}
        self.hits = self.misses = 0

    def decode(self, api_key: int, version: int, payload: bytes) -> dict:
        key = (api_key, version, payload[4:])
        body = self._bodies.get(key)
        if body is not None:
            self.hits += 1
            return body
        self.misses += 1
        body = decode_response(api_key, version, payload)
        if len(self._bodies) >= self.size:
            del self._bodies[next(iter(self._bodies))]
        self._bodies[key] = body
        return body


class BrokerConnection:
    def __init__(self, host: str, port: int, *, client_id: str | None = "groupcoord",
                 on_close: Callable[["BrokerConnection", BaseException | None], None] | None = None,
                 response_cache: ResponseCache | None = None):
        self.host = host
        self.port = port
        self.client_id = client_id
        self._cache = response_cache
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._on_close = on_close
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task | None = None
        self._pending: deque = deque()           # (correlation id, api key, version, future)
        self._correlation = itertools.count(1)
        self.closed = False

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port})"

    # ---- lifecycle ---------------------------------------------------------------------
    async def connect(self, timeout: float = 10.0, api_versions_max: int = 3) -> "BrokerConnection":
        async with asyncio.timeout(timeout):
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        version = api_versions_max
        for _ in range(2):
            async with asyncio.timeout(timeout):
                body = await self.request(API_VERSIONS, version, {
                    "client_software_name": CLIENT_SOFTWARE_NAME,
                    "client_software_version": CLIENT_SOFTWARE_VERSION})
            code = body.get("error_code", 0)
            if code == ErrorCode.UNSUPPORTED_VERSION:
                theirs = next((k for k in body.get("api_keys") or () if k["api_key"] == API_VERSIONS), None)
                version = min(api_versions_max, theirs["max_version"]) if theirs else 0
                continue
            if code:
                raise ConnectionError(f"{self}: ApiVersions failed with error {ErrorCode.lookup(code)}")
            self.api_versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
            return self
        raise ConnectionError(f"{self}: could not agree on an ApiVersions version")

    def close(self, exc: BaseException | None = None, *, notify: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.close()
        if self._read_task is not None and self._read_task is not asyncio.current_task():
            self._read_task.cancel()
        error = exc or ConnectionClosed(f"{self} closed")
        while self._pending:
            _, _, _, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(error)
                fut.exception()             # retrieved: no "never retrieved" warnings
        if notify and self._on_close is not None:
            self._on_close(self, exc)

    # ---- requests ----------------------------------------------------------------------------
    def send(self, api_key: int, version: int, body: dict) -> asyncio.Future:
        """Write one request; the returned future gets the decoded response body."""
        fut = asyncio.get_running_loop().create_future()
        if self.closed or self._writer is None:
            fut.set_exception(ConnectionClosed(f"{self} is closed"))
            return fut
        corr = next(self._correlation)
        try:
            data = frames.encode_request(api_key, version, corr, body, self.client_id)
        except Exception as e:           # an encoding problem is ours, not the connection's
            fut.set_exception(e)
            return fut
        self._pending.append((corr, api_key, version, fut))
        self._writer.write(data)
        return fut

    async def request(self, api_key: int, version: int, body: dict) -> dict:
        return await self.send(api_key, version, body)

    # ---- responses ---------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        reader = self._reader
        exc: BaseException | None = None
        try:
            while True:
                head = await reader.readexactly(4)
                size = _SIZE.unpack(head)[0]
                if size < 4 or size > MAX_RESPONSE_BYTES:
                    raise ConnectionError(f"{self}: invalid response size {size}")
                payload = await reader.readexactly(size)
                if not self._pending:
                    raise ConnectionError(f"{self}: a response nobody asked for")
                corr, api_key, version, fut = self._pending[0]
                got = _SIZE.unpack_from(payload, 0)[0]
                if got != corr:
                    raise ConnectionError(f"{self}: correlation id {got}, expected {corr}")
                if (api_key == API_VERSIONS and len(payload) >= 6
                        and struct.unpack_from(">h", payload, 4)[0] == ErrorCode.UNSUPPORTED_VERSION):
                    # Kafka answers an unsupported ApiVersions version with a v0 body; some
                    # brokers (librdkafka's mock) write something else: then just retry at v0
                    try:
                        _, body = frames.decode_response(api_key, 0, payload)
                    except DecodeError:
                        body = {"error_code": int(ErrorCode.UNSUPPORTED_VERSION), "api_keys": []}
                elif self._cache is not None and api_key in self._cache.api_keys:
                    body = self._cache.decode(api_key, version, payload)
                else:
                    body = decode_response(api_key, version, payload)
                self._pending.popleft()
                if not fut.done():
                    fut.set_result(body)
        except asyncio.CancelledError:
            return
        except Exception as e:           # anything unreadable ends the connection, never the loop
            if not isinstance(e, (asyncio.IncompleteReadError, ConnectionError, OSError, DecodeError)):
                log.warning("%s: dropping the connection: %r", self, e)
            exc = e if not isinstance(e, asyncio.IncompleteReadError) else ConnectionClosed(
                f"{self}: closed by the peer")
        self.close(exc, notify=True)
