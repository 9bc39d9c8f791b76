"""A malformed frame closes only the connection it came on.

Raw sockets send broken frames (bad sizes, unknown API key, unsupported version, truncated body)
while a librdkafka group member keeps consuming, and another raw connection, opened before them,
keeps being answered. An ApiVersions request of a version we do not speak is not malformed: Kafka
answers it with a v0 UNSUPPORTED_VERSION body listing its ApiVersions range, and the connection
stays open.
"""
from __future__ import annotations

import socket
import struct

import pytest

from clients import TOPICS, ConfluentDriver, all_partitions, assert_exactly_once, wait_covered, wait_until

pytestmark = pytest.mark.interop

API_VERSIONS, JOIN_GROUP = 18, 11
UNSUPPORTED_VERSION = 35


def request(api_key: int, version: int, correlation_id: int, body: bytes = b"", client_id: bytes = b"raw") -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(header) + len(body)) + header + body


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return out


def read_response(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    return recv_exactly(sock, size)


def api_versions_v0(sock: socket.socket, correlation_id: int, version: int = 0) -> tuple[int, dict[int, tuple]]:
    """Send ApiVersions; returns (error code, {api key: (min, max)}) of the v0 response body."""
    sock.sendall(request(API_VERSIONS, version, correlation_id))
    data = read_response(sock)
    corr, error, n = struct.unpack_from(">ihi", data, 0)
    assert corr == correlation_id
    apis = {}
    for i in range(n):
        key, lo, hi = struct.unpack_from(">hhh", data, 10 + 6 * i)
        apis[key] = (lo, hi)
    return error, apis


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.settimeout(10)
    return sock


MALFORMED = {
    "size-too-small": struct.pack(">i", 2) + b"ab",
    "negative-size": struct.pack(">i", -1),
    "size-over-socket.request.max.bytes": struct.pack(">i", 104857601),
    "unknown-api-key": request(9999, 0, 1),
    "unsupported-join-group-version": request(JOIN_GROUP, 99, 2, b"\x00" * 16),
    "truncated-join-group": request(JOIN_GROUP, 5, 3, b"\x00\x05gr"),
    "garbage-header": struct.pack(">i", 9) + b"\xff" * 9,
}


def test_malformed_frames_close_only_their_connection(coord, closing):
    c = coord()
    group = "malformed-bystander"
    driver = closing(ConfluentDriver(c.bootstrap))
    member = closing(driver.member("bystander", group, sorted(TOPICS), "range")).start()
    view = wait_covered(c, group, [member])
    generation = view.generation

    bystander = closing(connect(c.bootstrap))
    error, apis = api_versions_v0(bystander, 100)
    assert error == 0 and JOIN_GROUP in apis

    produced = []
    for n, (name, frame) in enumerate(MALFORMED.items()):
        before = c.gc.server.stats["closed_malformed"]
        with connect(c.bootstrap) as sock:
            sock.sendall(frame)
            assert closed_by_peer(sock), f"{name}: connection left open"
        wait_until(lambda: c.gc.server.stats["closed_malformed"] == before + 1, 5,
                   message=f"{name} counted as malformed")
        # the other raw connection is still answered
        error, apis = api_versions_v0(bystander, 200 + n)
        assert error == 0 and JOIN_GROUP in apis, name
        # and the real client goes on consuming
        produced += driver.produce([(t, p, f"{name}/{t}/{p}") for t, p in sorted(all_partitions())])
        wait_until(lambda: len(member.consumed()) >= len(produced), 15, message=f"consumed after {name}")
    assert_exactly_once(member.consumed(), produced)

    view = c.group(group)
    assert view.state == "Stable" and view.generation == generation
    assert member.member_id() in view.members
    member.check()


def test_unsupported_api_versions_version_is_answered_and_connection_kept(coord, closing):
    c = coord()
    sock = closing(connect(c.bootstrap))
    error, apis = api_versions_v0(sock, 7, version=127)
    assert error == UNSUPPORTED_VERSION
    # as Kafka's ApiVersionsRequest.getErrorResponse (KIP-511): only ApiVersions' own range, so that
    # the client retries with a version it has
    assert list(apis) == [API_VERSIONS] and apis[API_VERSIONS][0] == 0 and apis[API_VERSIONS][1] >= 3
    error, _ = api_versions_v0(sock, 8)
    assert error == 0
    assert c.gc.server.stats["closed_malformed"] == 0
