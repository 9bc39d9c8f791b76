"""The TCP driver, the CLI and the embedding, over real sockets with raw Kafka frames."""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys

import pytest
from structlog.testing import capture_logs

from groupcoord.coordinator.cluster import partition_for
from groupcoord.coordinator.config import BrokerConfig, ConfigError
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.server import Server
from groupcoord.coordinator.service import Service
from groupcoord.protocol import frames
from groupcoord.protocol.consumer import encode_subscription
from groupcoord.protocol.errors import ErrorCode

SUB = encode_subscription({"topics": ["t"], "user_data": None}, 0)


class Client:
    """A raw Kafka connection: send frames, read responses in order."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.corr = 0

    @classmethod
    async def connect(cls, bootstrap: str) -> "Client":
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    def send(self, api_key: int, version: int, body: dict, client_id: str | None = "test") -> int:
        self.corr += 1
        self.writer.write(frames.encode_request(api_key, version, self.corr, body, client_id))
        return self.corr

    async def read(self, api_key: int, version: int, timeout: float = 5.0) -> tuple[int, dict]:
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), timeout))[0]
        data = await asyncio.wait_for(self.reader.readexactly(size), timeout)
        return frames.decode_response(api_key, version, data)

    async def call(self, api_key: int, version: int, body: dict) -> dict:
        corr = self.send(api_key, version, body)
        got, resp = await self.read(api_key, version)
        assert got == corr
        return resp

    async def closed(self, timeout: float = 5.0) -> bool:
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except ConnectionError:
            return True
        return data == b""

    def close(self):
        self.writer.close()


def join_body(group: str, member_id: str = "", session: int = 10000) -> dict:
    return {"group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": session,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUB}]}


async def advertised(gc) -> dict[int, tuple[int, int]]:
    c = await Client.connect(gc.bootstrap_servers)
    resp = await c.call(18, 3, {"client_software_name": "test", "client_software_version": "1.0"})
    c.close()
    assert resp["error_code"] == 0
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}


@pytest.mark.parametrize("release,topic_ids", [(None, True), ("4.2", True), ("4.1", False)])
async def test_api_versions_of_kafka_4(release, topic_ids):
    async with running(config={} if release is None else {"groupcoord.kafka.version": release}) as gc:
        keys = await advertised(gc)
    # the group APIs: every version Kafka 4.x serves (JoinGroup 0-1 were restored in 4.0.1)
    assert keys[11] == (0, 9) and keys[14] == (0, 5) and keys[12] == (0, 4) and keys[13] == (0, 5)
    assert keys[10] == (0, 6) and keys[18] == (0, 4) and keys[15] == (0, 6) and keys[16] == (0, 5)
    # KIP-896 floors; Produce still lists v0 (KAFKA-18659) though it serves 3+ (v12: transactions V2,
    # v13: topic ids)
    assert keys[1] == (4, 12) and keys[2] == (1, 7)
    assert keys[19] == (2, 7) and keys[20] == (1, 6) and keys[0] == (0, 13)
    # the transaction APIs: EndTxn and TxnOffsetCommit v5 (transactions V2), ListTransactions v2
    assert keys[22] == (0, 5) and keys[24] == (0, 5) and keys[26] == (0, 5) and keys[28] == (0, 5)
    assert keys[65] == (0, 0) and keys[66] == (0, 2)
    assert keys[68] == (0, 1) and keys[69] == (0, 1)       # KIP-848: ConsumerGroupHeartbeat, ...Describe
    # OffsetCommit / OffsetFetch v10 (topic ids): unstable in 4.1, served from 4.2 (the default: 4.3)
    assert (keys[8], keys[9]) == (((2, 10), (1, 10)) if topic_ids else ((2, 9), (1, 9)))


@pytest.mark.parametrize("release,metadata_version,share_streams", [
    (None, 30, True), ("4.3", 30, True), ("4.2", 29, True), ("4.1", 27, False), ("3.9", None, False)])
async def test_api_versions_reports_the_features_of_the_release(release, metadata_version, share_streams):
    # Kafka's finalized features of a freshly formatted cluster (Feature.defaultLevel at
    # MetadataVersion.LATEST_PRODUCTION); share.version and streams.version came with 4.2's default
    async with running(config={} if release is None else {"groupcoord.kafka.version": release}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        v4 = await c.call(18, 4, {"client_software_name": "test", "client_software_version": "1.0"})
        v3 = await c.call(18, 3, {"client_software_name": "test", "client_software_version": "1.0"})
        c.close()
    finalized = {f["name"]: f["max_version_level"] for f in v4["finalized_features"]}
    supported = {f["name"]: (f["min_version"], f["max_version"]) for f in v4["supported_features"]}
    if metadata_version is None:
        assert (finalized, supported, v4["finalized_features_epoch"]) == ({}, {}, -1)
        return
    expected = {"metadata.version": metadata_version, "transaction.version": 2, "group.version": 1,
                "eligible.leader.replicas.version": 1}
    if share_streams:
        expected.update({"share.version": 1, "streams.version": 1})
    assert finalized == expected
    assert supported["metadata.version"] == (7, metadata_version) and supported["share.version"] == (0, 1)
    assert ("streams.version" in supported) == share_streams
    # below v4 only the features whose lowest level is above 0 (KAFKA-17492)
    assert [f["name"] for f in v3["supported_features"]] == ["metadata.version"]


async def test_api_versions_of_kafka_3_9_keep_the_old_versions():
    async with running(config={"groupcoord.kafka.version": "3.9"}) as gc:
        keys = await advertised(gc)
    assert keys[8] == (0, 9) and keys[9] == (0, 9) and keys[1] == (0, 12) and keys[2] == (0, 7)
    assert keys[0] == (0, 11) and keys[19] == (0, 7) and keys[20] == (0, 6)
    assert keys[26] == (0, 4) and keys[28] == (0, 4) and keys[66] == (0, 1)     # transactions V2 came with 4.0
    assert keys[3] == (0, 12) and keys[15] == (0, 5)      # Metadata v13, DescribeGroups v6 came with 4.0
    assert keys[68] == (0, 0) and keys[69] == (0, 0)      # v1 (regexes, client-made member ids) with 4.0


def test_unknown_kafka_version_is_refused():
    from groupcoord.coordinator.config import BrokerConfig, ConfigError
    with pytest.raises(ConfigError, match="groupcoord.kafka.version.*4.3, 4.2, 4.1, 3.9"):
        BrokerConfig({"groupcoord.kafka.version": "2.8"})


COMMIT_V1 = {"group_id": "g", "generation_id": -1, "member_id": "",
             "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                      "commit_timestamp": -1, "committed_metadata": None}]}]}


def commit_v10(topic_id) -> dict:
    return {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                             "committed_leader_epoch": -1,
                                                             "committed_metadata": None}]}]}


@pytest.mark.parametrize("release,served", [("4.3", True), ("4.2", True), ("4.1", False)])
async def test_offset_commit_v10_is_served_from_4_2(release, served):
    # the boundary version of the 4.x releases: OffsetCommit v10 was unstable (not served) in 4.1
    async with running(topics={"t": 1}, config={"groupcoord.kafka.version": release}) as gc:
        topic_id = gc.service.cluster.topics["t"].topic_id
        c = await Client.connect(gc.bootstrap_servers)
        if served:
            resp = await c.call(8, 10, commit_v10(topic_id))
            assert resp["topics"] == [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "error_code": 0}]}]
            assert gc.service.group_coordinator.offsets.of("g")["t"][0].committed_offset == 1
        else:
            c.send(8, 10, commit_v10(topic_id))
            assert await c.closed()


@pytest.mark.parametrize("release,served", [("4.3", False), ("4.1", False), ("3.9", True)])
async def test_a_version_the_release_does_not_serve_closes_the_connection(release, served):
    async with running(topics={"t": 1}, config={"groupcoord.kafka.version": release}) as gc:
        c, other = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
        if served:
            resp = await c.call(8, 1, COMMIT_V1)
            assert resp["topics"][0]["partitions"][0]["error_code"] == 0
        else:
            c.send(8, 1, COMMIT_V1)     # OffsetCommit v1: removed in Kafka 4.0 (KIP-896)
            assert await c.closed()
            # Produce v2 is listed by ApiVersions but not served either
            p = await Client.connect(gc.bootstrap_servers)
            p.send(0, 2, {"acks": 1, "timeout_ms": 1000, "topic_data": []})
            assert await p.closed()
        assert (await other.call(18, 0, {}))["error_code"] == 0     # the others go on
        other.close()


@pytest.mark.parametrize("release,served", [("4.1", True), ("3.9", False)])
async def test_list_config_resources_v1_is_served_from_4_1(release, served):
    # key 74 was ListClientMetricsResources v0 until KIP-1142 (4.1) made it ListConfigResources v1
    async with running(config={"groupcoord.kafka.version": release}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        assert (await c.call(74, 0, {}))["error_code"] == 0
        if served:
            resp = await c.call(74, 1, {"resource_types": [4]})
            assert resp["config_resources"] == [{"resource_name": "0", "resource_type": 4}]
        else:
            c.send(74, 1, {"resource_types": [4]})
            assert await c.closed()


async def test_bytes_after_a_request_body_are_ignored():
    # librdkafka's all-topics Metadata request leaves a 4-byte placeholder for the null topic
    # array: three zero bytes follow the body, which Kafka ignores
    async with running(topics={"t": 2}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        c.corr += 1
        payload = frames.encode_request(3, 13, c.corr, {"topics": None, "allow_auto_topic_creation": True,
                                                        "include_topic_authorized_operations": False},
                                        framed=False) + b"\x00\x00\x00"
        c.writer.write(struct.pack(">i", len(payload)) + payload)
        corr, resp = await c.read(3, 13)
        assert corr == c.corr and [t["name"] for t in resp["topics"]] == ["t"]
        assert (await c.call(18, 0, {}))["error_code"] == 0     # the connection stays open
        c.close()


@pytest.mark.parametrize("version,message", [(1, "NONE"), (2, "NONE"), (3, "NONE"), (4, None)])
async def test_find_coordinator_success_message(version, message):
    # Errors.NONE.message() is "NONE" on v1-3 answers; v4+ coordinators carry no message
    async with running() as gc:
        c = await Client.connect(gc.bootstrap_servers)
        if version < 4:
            resp = await c.call(10, version, {"key": "g", "key_type": 0})
        else:
            resp = (await c.call(10, version, {"key_type": 0, "coordinator_keys": ["g"]}))["coordinators"][0]
        c.close()
    assert resp["error_code"] == 0 and resp["error_message"] == message


async def test_api_versions_too_new_gets_v0_error_body_and_the_connection_stays_open():
    async with running() as gc:
        c = await Client.connect(gc.bootstrap_servers)
        c.corr += 1
        # ApiVersions v9 does not exist: header v2 with an arbitrary body
        payload = struct.pack(">hhih", 18, 9, c.corr, 4) + b"test" + b"\x00" + b"\x00\x00"
        c.writer.write(struct.pack(">i", len(payload)) + payload)
        corr, resp = await c.read(18, 0)
        assert corr == c.corr
        assert resp["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        assert resp["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
        # the client retries with a version we speak, on the same connection
        assert (await c.call(18, 0, {}))["error_code"] == 0
        c.close()


async def test_invalid_software_name_is_invalid_request():
    async with running() as gc:
        c = await Client.connect(gc.bootstrap_servers)
        resp = await c.call(18, 3, {"client_software_name": "bad name!", "client_software_version": "1"})
        assert resp["error_code"] == ErrorCode.INVALID_REQUEST
        c.close()


async def test_unsupported_version_of_another_api_closes_only_that_connection():
    async with running() as gc:
        bad, good = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
        payload = struct.pack(">hhih", 12, 42, 1, 4) + b"test" + b"\x00"
        bad.writer.write(struct.pack(">i", len(payload)) + payload)
        assert await bad.closed()
        assert (await good.call(18, 0, {}))["error_code"] == 0
        assert gc.server.stats["closed_malformed"] == 1


@pytest.mark.parametrize("api_key,version,release,reason", [
    (76, 1, "3.9", "Received request api key SHARE_GROUP_HEARTBEAT with version 1 which is not enabled"),
    (88, 0, "4.3", "Received request api key STREAMS_GROUP_HEARTBEAT with version 0 which is not enabled"),
    (999, 0, "4.3", "Received request api key 999 with version 0 which is not enabled"),
    (12, 42, "4.3", "unsupported version: Heartbeat v42 (Kafka 4.3 serves v0-4)"),
])
async def test_a_request_not_served_is_closed_with_a_log_line_naming_it(api_key, version, release, reason):
    # Kafka's SocketServer closes the connection of a request whose API or version it does not enable
    # (Kafka 3.9 has no ShareGroupHeartbeat; streams groups are not emulated)
    async with running(config={"groupcoord.kafka.version": release}) as gc:
        with capture_logs() as logs:
            c = await Client.connect(gc.bootstrap_servers)
            payload = struct.pack(">hhih", api_key, version, 1, 4) + b"test" + b"\x00"
            c.writer.write(struct.pack(">i", len(payload)) + payload)
            assert await c.closed()
        assert [e["reason"] for e in logs if e["event"] == "closing_connection"] == [reason]


@pytest.mark.parametrize("garbage", [
    struct.pack(">i", -5),                                        # negative frame size
    struct.pack(">i", 3) + b"abc",                                # too short for a header
    struct.pack(">i", 12) + struct.pack(">hhi", 12, 4, 1) + b"\x7f\x7f\x7f\x7f",  # body past the end
    struct.pack(">i", 10) + struct.pack(">hhi", 999, 0, 1) + b"\x00\x00",         # unknown API key
])
async def test_malformed_frames_close_that_connection_only(garbage):
    async with running() as gc:
        bad, good = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
        bad.writer.write(garbage)
        assert await bad.closed()
        assert (await good.call(3, 1, {"topics": None}))["brokers"][0]["port"] > 0
        good.close()


async def test_socket_request_max_bytes_closes_at_the_size_prefix():
    # Kafka's NetworkReceive refuses a size over socket.request.max.bytes before reading the body
    async with running(config={"socket.request.max.bytes": 1000}) as gc:
        with capture_logs() as logs:
            big = await Client.connect(gc.bootstrap_servers)
            big.writer.write(struct.pack(">i", 1001))
            assert await big.closed()
        assert [e["reason"] for e in logs if e["event"] == "closing_connection"] == [
            "Invalid receive (size = 1001 larger than socket.request.max.bytes=1000)"]
        ok = await Client.connect(gc.bootstrap_servers)
        ok.writer.write(frames.encode_request(3, 1, 1, {"topics": None}, "c" * 900))   # 914 bytes
        assert (await ok.read(3, 1))[1]["brokers"]
        ok.close()
    with pytest.raises(ConfigError, match="^Invalid value 0 for configuration socket.request.max.bytes: "
                                          "Value must be at least 1$"):
        Server(Service(BrokerConfig({"socket.request.max.bytes": 0})))


async def stable_group(c: Client, group: str, metadata: bytes) -> None:
    body = {**join_body(group), "protocols": [{"name": "range", "metadata": metadata}]}
    r = await c.call(11, 5, body)
    r = await c.call(11, 5, {**body, "member_id": r["member_id"]})
    s = await c.call(14, 3, {"group_id": group, "generation_id": r["generation_id"], "member_id": r["member_id"],
                             "assignments": [{"member_id": r["member_id"], "assignment": b"a"}]})
    assert s["error_code"] == 0


async def test_a_client_that_does_not_read_its_answers_makes_the_server_hold_one_at_most():
    """Kafka mutes a channel from a request until its response is sent: whatever a client
    pipelines, the broker holds one response of it. 200 DescribeGroups of a group with 128 KiB of
    metadata (26 MB of answers) from a client that reads none: the server holds one answer (and
    what fits its transport's high-water mark), and handles the next once the client reads."""
    metadata = b"m" * (128 << 10)
    async with running() as gc:
        c = await Client.connect(gc.bootstrap_servers)
        await stable_group(c, "big", metadata)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)      # the kernel takes little for it
        sock.setblocking(False)
        host, port = gc.bootstrap_servers.rsplit(":", 1)
        await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
        hog = Client(*await asyncio.open_connection(sock=sock, limit=1024))
        before = gc.server.stats["requests"]
        for _ in range(200):
            hog.send(15, 5, {"groups": ["big"], "include_authorized_operations": False})
        conn = max(gc.server.connections.values(), key=lambda conn: conn.conn_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while conn.transport.get_write_buffer_size() == 0:      # until it is blocked on the client
            assert loop.time() < deadline
            await asyncio.sleep(0.005)
        assert conn.buffered_bytes() < (1 << 20)
        assert gc.server.stats["requests"] - before < 200
        # the others are served meanwhile
        d = await c.call(15, 5, {"groups": ["big"], "include_authorized_operations": False})
        assert d["groups"][0]["members"][0]["member_metadata"] == metadata
        # and the client that reads late gets every answer, in order
        for corr in range(1, 201):
            got, resp = await hog.read(15, 5)
            assert got == corr and len(resp["groups"][0]["members"][0]["member_metadata"]) == len(metadata)
            assert conn.buffered_bytes() < (1 << 20)
        hog.close()
        c.close()


async def test_a_connection_idle_longer_than_connections_max_idle_ms_is_closed():
    # Kafka's Selector closes a connection with no traffic for connections.max.idle.ms
    async with running(config={"connections.max.idle.ms": 300}) as gc:
        with capture_logs() as logs:
            idle, busy = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
            assert (await idle.call(18, 0, {}))["error_code"] == 0
            loop = asyncio.get_running_loop()
            started = loop.time()
            closed = asyncio.create_task(idle.closed(timeout=5))
            while not closed.done():        # the other one talks every 50 ms meanwhile
                assert (await busy.call(18, 0, {}))["error_code"] == 0
                await asyncio.sleep(0.05)
            assert closed.result()
            assert 0.25 <= loop.time() - started < 2
            assert (await busy.call(18, 0, {}))["error_code"] == 0
        assert [e["reason"] for e in logs if e["event"] == "closing_connection"] == [
            "idle for longer than connections.max.idle.ms=300"]
        assert gc.server.stats["closed_idle"] == 1
        busy.close()


def test_connections_max_idle_ms_must_exceed_the_failed_authentication_delay():
    config = BrokerConfig({"connections.max.idle.ms": 100, "connection.failed.authentication.delay.ms": 100})
    with pytest.raises(ConfigError, match="should always be less than connections.max.idle.ms=100"):
        Server(Service(config))
    Server(Service(BrokerConfig({"connections.max.idle.ms": -1, "connection.failed.authentication.delay.ms": 100})))


async def wait_for(condition, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


async def test_at_max_connections_a_node_accepts_no_more_until_one_closes():
    # Kafka's acceptor waits in ConnectionQuotas.inc for a slot: a new connection waits, unanswered
    async with running(config={"max.connections": 2}) as gc:
        a, b = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
        assert (await a.call(18, 0, {}))["error_code"] == 0 and (await b.call(18, 0, {}))["error_code"] == 0
        waiting = await Client.connect(gc.bootstrap_servers)     # the kernel completes it: the listen backlog
        corr = waiting.send(18, 0, {})
        with pytest.raises(asyncio.TimeoutError):
            await waiting.read(18, 0, timeout=0.3)
        assert len(gc.server.connections) == 2 and gc.server.stats["accept_paused"] >= 1
        a.close()
        got, resp = await waiting.read(18, 0)                   # accepted once a slot is free
        assert got == corr and resp["error_code"] == 0
        assert len(gc.server.connections) == 2
        b.close()
        waiting.close()


async def test_a_connection_over_max_connections_per_ip_is_closed_at_once():
    # Kafka's acceptor closes it on a TooManyConnectionsException, with an info line
    async with running(config={"max.connections.per.ip": 2}) as gc:
        with capture_logs() as logs:
            a, b = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
            over = await Client.connect(gc.bootstrap_servers)
            over.send(18, 0, {})
            assert await over.closed()
        assert [(e["peer"], e["reason"]) for e in logs if e["event"] == "connection_rejected"] == [
            ("/127.0.0.1", "address already has the configured maximum of 2 connections (max.connections.per.ip)")]
        assert gc.server.stats["rejected_per_ip"] == 1
        assert (await a.call(18, 0, {}))["error_code"] == 0 and (await b.call(18, 0, {}))["error_code"] == 0
        a.close()
        await wait_for(lambda: len(gc.server.connections) == 1)
        again = await Client.connect(gc.bootstrap_servers)      # a slot of that address is free again
        assert (await again.call(18, 0, {}))["error_code"] == 0
        b.close()
        again.close()


@pytest.mark.parametrize("overrides", ["127.0.0.1:1", "localhost:1", "10.1.1.1:5, 127.0.0.1 : 1"])
async def test_max_connections_per_ip_overrides(overrides):
    config = {"max.connections.per.ip": 0, "max.connections.per.ip.overrides": overrides}
    async with running(config=config) as gc:
        one = await Client.connect(gc.bootstrap_servers)
        assert (await one.call(18, 0, {}))["error_code"] == 0
        two = await Client.connect(gc.bootstrap_servers)
        assert await two.closed()
        one.close()


@pytest.mark.parametrize("config,message", [
    ({"max.connections.per.ip": 0}, "can be set to zero only if max.connections.per.ip.overrides"),
    ({"max.connections.per.ip.overrides": "bad host!:3"}, "contains invalid addresses : bad host!"),
    ({"max.connections.per.ip.overrides": "127.0.0.1"}, "contains invalid addresses : 127.0.0.1"),
    ({"max.connections.per.ip.overrides": "127.0.0.1:many"}, "'many' is not a number"),
    ({"max.connections": -1}, "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    ({"socket.listen.backlog.size": 0},
     "Invalid value 0 for configuration socket.listen.backlog.size: Value must be at least 1"),
])
def test_connection_limit_configs_are_checked(config, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        Server(Service(BrokerConfig(config)))


@pytest.mark.skipif(sys.platform != "linux", reason="Linux queues backlog + 1 connections")
@pytest.mark.parametrize("backlog,burst,queued", [(8, 40, 9), (None, 300, 300)])
async def test_socket_listen_backlog_size_is_what_the_kernel_queues(backlog, burst, queued):
    """A node that accepts nothing (max.connections=0) leaves connects to the kernel: it completes
    as many handshakes as the backlog holds. The default (4096, not Kafka's 50) holds a burst."""
    from groupcoord.coordinator.server import somaxconn
    if backlog is None and (somaxconn() or 0) < burst:
        pytest.skip("net.core.somaxconn caps the backlog")
    config = {"max.connections": 0}
    if backlog is not None:
        config["socket.listen.backlog.size"] = backlog
    async with running(config=config) as gc:
        host, port = gc.bootstrap_servers.rsplit(":", 1)
        loop = asyncio.get_running_loop()
        socks = [socket.socket() for _ in range(burst)]
        try:
            for s in socks:
                s.setblocking(False)
            tasks = [asyncio.create_task(loop.sock_connect(s, (host, int(port)))) for s in socks]
            done, pending = await asyncio.wait(tasks, timeout=0.5)     # a dropped SYN is sent again after 1 s
            for t in pending:
                t.cancel()
            assert sum(1 for t in done if t.exception() is None) == queued
        finally:
            for s in socks:
                s.close()


async def test_random_bytes_close_their_connections_and_nothing_else():
    """Seeded random blobs on 60 connections, each then half-closed: every one ends (answered,
    closed as malformed, or at its EOF), nothing fails inside, another client is served."""
    import random
    rng = random.Random(15)
    async with running(topics={"t": 1}) as gc:
        with capture_logs() as logs:
            good = await Client.connect(gc.bootstrap_servers)
            for _ in range(60):
                blob = rng.randbytes(rng.randint(1, 3000))
                if rng.random() < 0.5:      # a plausible size prefix and header, then garbage
                    blob = struct.pack(">ihhi", len(blob) + 8, rng.choice([3, 11, 12, 18, 999]),
                                       rng.randint(-2, 20), 1) + blob
                bad = await Client.connect(gc.bootstrap_servers)
                bad.writer.write(blob)
                bad.writer.write_eof()
                while True:     # answers, if any, then the end
                    try:
                        if not await asyncio.wait_for(bad.reader.read(1 << 16), 5):
                            break
                    except ConnectionError:
                        break
            assert (await good.call(3, 1, {"topics": None}))["brokers"]
        assert gc.server.stats["closed_malformed"] >= 30     # (53 with this seed; the rest end at their EOF)
        assert not [e for e in logs if e.get("log_level") in ("error", "critical") or "exception" in e
                    or e["event"].endswith("_failed")]
        await wait_for(lambda: len(gc.server.connections) == 1)
        good.close()


async def test_connection_churn_with_resets_leaves_no_connection_or_slot_behind():
    """200 connections reset (SO_LINGER 0) right after sending: a request, half a frame, or
    DescribeGroups of a 64 KiB group (reset while the server writes). With a per-IP limit of 21
    a leaked slot would refuse the connections that follow."""
    async with running(config={"max.connections.per.ip": 21}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        await stable_group(c, "churn", b"m" * (64 << 10))
        host, port = gc.bootstrap_servers.rsplit(":", 1)
        describe = frames.encode_request(15, 5, 1, {"groups": ["churn"], "include_authorized_operations": False},
                                         "churn")
        sends = [frames.encode_request(18, 0, 1, {}, "churn"), describe * 3, describe[:20], b""]
        loop = asyncio.get_running_loop()
        for _ in range(10):
            socks = []
            for i in range(20):
                sock = socket.socket()
                sock.setblocking(False)
                await loop.sock_connect(sock, (host, int(port)))
                socks.append(sock)
                if sends[i % 4]:
                    await loop.sock_sendall(sock, sends[i % 4])
            for sock in socks:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
            await wait_for(lambda: len(gc.server.connections) == 1)
        assert gc.server.stats["rejected_per_ip"] == 0
        others = [await Client.connect(gc.bootstrap_servers) for _ in range(20)]   # 21 with c: all admitted
        for o in others:
            assert (await o.call(18, 0, {}))["error_code"] == 0
            o.close()
        assert (await c.call(15, 5, {"groups": ["churn"]}))["groups"][0]["group_state"] == "Stable"
        c.close()


async def test_ten_thousand_groups_from_one_client_are_answered_then_cleaned_up():
    """As Kafka: a JoinGroup (v4+) without a member id creates its group and a pending member
    (MEMBER_ID_REQUIRED); the pending member expires after its session timeout, and the
    retention sweep (cleanupGroupMetadata) deletes a group left Empty without offsets."""
    n = 10_000
    async with running(config={"offsets.retention.check.interval.ms": 300}) as gc:
        seen = {"group.created": 0, "member.pending": 0, "group.deleted": 0}

        def count(event):
            if event["event"] in seen:
                seen[event["event"]] += 1
        gc.service.bus.subscribe(count)
        c, other = await Client.connect(gc.bootstrap_servers), await Client.connect(gc.bootstrap_servers)
        c.writer.write(b"".join(frames.encode_request(11, 5, i + 1, join_body(f"flood-{i}", session=100), "flood")
                                for i in range(n)))
        assert (await other.call(18, 0, {}))["error_code"] == 0        # served during the flood
        for i in range(n):
            corr, resp = await c.read(11, 5)
            assert corr == i + 1 and resp["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        await wait_for(lambda: not list(gc.service.group_coordinator.groups()), timeout=10)
        assert seen == {"group.created": n, "member.pending": n, "group.deleted": n}
        assert (await other.call(18, 0, {}))["error_code"] == 0
        c.close()
        other.close()


async def test_requests_are_answered_in_order_behind_a_parked_join():
    async with running(config={"group.initial.rebalance.delay.ms": 300}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        first = await c.call(11, 5, join_body("g"))
        assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        corr_join = c.send(11, 5, join_body("g", first["member_id"]))   # parked for the initial delay
        corr_meta = c.send(3, 1, {"topics": None})
        other = await Client.connect(gc.bootstrap_servers)          # other connections are not held
        assert (await other.call(18, 0, {}))["error_code"] == 0
        got, join = await c.read(11, 5)
        assert got == corr_join and join["error_code"] == 0 and join["generation_id"] == 1
        got, meta = await c.read(3, 1)
        assert got == corr_meta and meta["brokers"]
        c.close()
        other.close()


async def test_a_failing_before_request_hook_closes_only_that_connection():
    """Also behind a delayed request, where the frame after it is read from a timer callback."""
    from groupcoord.coordinator.context import Verdict

    def hook(ctx, body):
        if ctx.client_id != "test":
            return None
        if ctx.api_key == 18:
            return Verdict(delay_ms=50)
        raise RuntimeError("hook bug")

    async with running() as gc:
        gc.service.before_request.append(hook)
        c = await Client.connect(gc.bootstrap_servers)
        corr = c.send(18, 0, {})            # delayed
        c.send(3, 1, {"topics": None})      # its hook raises, from the delay's callback
        got, resp = await c.read(18, 0)
        assert got == corr and resp["error_code"] == 0
        assert await c.closed(timeout=2.0)
        other = await Client.connect(gc.bootstrap_servers)
        other.send(3, 1, {"topics": None}, client_id="other")
        assert (await other.read(3, 1))[1]["brokers"]
        other.close()


async def test_requests_behind_a_delayed_one_keep_their_order_and_a_close_cancels_it():
    async with running() as gc:
        gc.service.faults.add({"api": "Metadata", "latency_ms": 100, "count": 2})
        c = await Client.connect(gc.bootstrap_servers)
        sent = [c.send(3, 1, {"topics": None}), c.send(18, 0, {}), c.send(18, 0, {})]
        got = [(await c.read(3, 1))[0], (await c.read(18, 0))[0], (await c.read(18, 0))[0]]
        assert got == sent
        gone = await Client.connect(gc.bootstrap_servers)
        gone.send(3, 1, {"topics": None})
        gone.send(18, 0, {})
        while gc.service.faults.list()[0]["remaining"]:
            await asyncio.sleep(0.005)
        gone.close()                                    # while its Metadata is held
        deadline = asyncio.get_running_loop().time() + 5
        while len(gc.server.connections) > 1:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.15)                       # the held request's timer fires on a closed connection
        assert (await c.call(18, 0, {}))["error_code"] == 0
        c.close()


async def test_a_group_forms_over_tcp_and_heartbeats():
    async with running() as gc:
        c = await Client.connect(gc.bootstrap_servers)
        r = await c.call(11, 5, join_body("g2"))
        r = await c.call(11, 5, join_body("g2", r["member_id"]))
        assert r["error_code"] == 0 and r["leader"] == r["member_id"]
        member, gen = r["member_id"], r["generation_id"]
        s = await c.call(14, 3, {"group_id": "g2", "generation_id": gen, "member_id": member,
                                 "assignments": [{"member_id": member, "assignment": b"x"}]})
        assert s == {"throttle_time_ms": 0, "error_code": 0, "assignment": b"x"}
        hb = await c.call(12, 4, {"group_id": "g2", "generation_id": gen, "member_id": member})
        assert hb["error_code"] == 0
        d = await c.call(15, 5, {"groups": ["g2"]})
        group = d["groups"][0]
        assert group["group_state"] == "Stable" and group["protocol_data"] == "range"
        assert group["members"][0]["client_host"] == "/127.0.0.1"
        assert group["members"][0]["client_id"] == "test"
        c.close()


async def test_a_connection_s_repeated_heartbeats_are_answered_each_with_its_own_correlation_id_and_state():
    # the server decodes a connection's heartbeat once while its bytes repeat (but for the
    # correlation id): each answer must still carry its own id, and the group's state of the moment
    async with running() as gc:
        c = await Client.connect(gc.bootstrap_servers)
        r = await c.call(11, 5, join_body("g3"))
        r = await c.call(11, 5, join_body("g3", r["member_id"]))
        member, gen = r["member_id"], r["generation_id"]
        await c.call(14, 3, {"group_id": "g3", "generation_id": gen, "member_id": member,
                             "assignments": [{"member_id": member, "assignment": b"x"}]})
        hb = {"group_id": "g3", "generation_id": gen, "member_id": member, "group_instance_id": None}
        sent = [c.send(12, 4, hb) for _ in range(5)]
        got = [await c.read(12, 4) for _ in sent]
        assert [corr for corr, _ in got] == sent
        assert {resp["error_code"] for _, resp in got} == {0}
        # a second member joins: the same bytes now get REBALANCE_IN_PROGRESS
        other = await Client.connect(gc.bootstrap_servers)
        other.send(11, 5, join_body("g3"))
        _, first = await other.read(11, 5)             # MEMBER_ID_REQUIRED, with its id
        other.send(11, 5, join_body("g3", first["member_id"]))   # (parked: the group rebalances)
        assert (await c.call(12, 4, hb))["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
        # another generation: other bytes, answered as such
        assert (await c.call(12, 4, {**hb, "generation_id": gen + 7}))["error_code"] == ErrorCode.ILLEGAL_GENERATION
        assert (await c.call(12, 4, hb))["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
        c.close()
        other.close()


async def test_repeated_heartbeats_meet_hooks_added_later_and_a_coordinator_that_moved():
    # repeated heartbeats take a lane past the dispatch (no hook, the answer never waits): a hook
    # added later must still see them, and each answer is the one of the moment
    async with running(nodes=2) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        meta = await c.call(10, 3, {"key": "g4", "key_type": 0})
        node = meta["node_id"]
        c.close()
        host = gc.bootstrap_servers.split(",")[0].rsplit(":", 1)[0]
        c = await Client.connect(f"{host}:{gc.server.listening[node]}")
        r = await c.call(11, 5, join_body("g4"))
        r = await c.call(11, 5, join_body("g4", r["member_id"]))
        member, gen = r["member_id"], r["generation_id"]
        await c.call(14, 3, {"group_id": "g4", "generation_id": gen, "member_id": member,
                             "assignments": [{"member_id": member, "assignment": b"x"}]})
        hb = {"group_id": "g4", "generation_id": gen, "member_id": member, "group_instance_id": None}
        for _ in range(3):
            assert (await c.call(12, 4, hb))["error_code"] == 0
        handled = []                    # the lane: repeated heartbeats answered without the dispatch
        handle = gc.service.handle
        gc.service.handle = lambda ctx, body, respond: (handled.append(ctx.api_key), handle(ctx, body, respond))
        assert [(await c.call(12, 4, hb))["error_code"] for _ in range(2)] == [0, 0] and handled == []
        assert (await c.call(12, 4, {**hb, "generation_id": gen + 1}))["error_code"] == ErrorCode.ILLEGAL_GENERATION
        assert handled == [12]          # other bytes: decoded and dispatched
        del gc.service.handle
        for _ in range(2):              # these bytes again: the lane again
            assert (await c.call(12, 4, hb))["error_code"] == 0
        requests = gc.server.stats["requests"]
        seen = []
        gc.service.before_request.append(lambda ctx, body: seen.append((ctx.api_key, ctx.correlation_id)))
        sent = [c.send(12, 4, hb) for _ in range(2)]
        assert [corr for corr, _ in [await c.read(12, 4) for _ in sent]] == sent
        assert seen == [(12, corr) for corr in sent]
        gc.service.before_request.clear()
        assert (await c.call(12, 4, hb))["error_code"] == 0
        assert gc.server.stats["requests"] == requests + 3
        gc.service.faults.move_group("g4", 1 - node)
        assert (await c.call(12, 4, hb))["error_code"] == ErrorCode.NOT_COORDINATOR
        c.close()


async def test_metadata_auto_creates_topics_and_reports_ids():
    async with running(config={"num.partitions": 3}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        r = await c.call(3, 12, {"topics": [{"name": "auto", }], "allow_auto_topic_creation": True,
                                 "include_topic_authorized_operations": False})
        topic = r["topics"][0]
        assert topic["error_code"] == 0 and len(topic["partitions"]) == 3 and topic["topic_id"].int != 0
        r = await c.call(3, 12, {"topics": [{"name": "nope", }], "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False})
        assert r["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        r = await c.call(3, 12, {"topics": [{"name": "bad name", }],
                                 "allow_auto_topic_creation": True, "include_topic_authorized_operations": False})
        assert r["topics"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
        r = await c.call(3, 0, {"topics": []})  # v0: empty list = every topic
        assert [t["name"] for t in r["topics"]] == ["auto"]
        c.close()


async def test_create_and_delete_topics():
    async with running(nodes=2) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        r = await c.call(19, 5, {"topics": [
            {"name": "a", "num_partitions": 4, "replication_factor": 1, "assignments": [], "configs": []},
            {"name": "b", "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []},
            {"name": "c", "num_partitions": 0, "replication_factor": 1, "assignments": [], "configs": []},
        ], "timeout_ms": 1000, "validate_only": False})
        codes = {t["name"]: t["error_code"] for t in r["topics"]}
        assert codes == {"a": 0, "b": ErrorCode.INVALID_REPLICATION_FACTOR, "c": ErrorCode.INVALID_PARTITIONS}
        r = await c.call(19, 5, {"topics": [{"name": "a", "num_partitions": 1, "replication_factor": 1,
                                             "assignments": [], "configs": []}], "timeout_ms": 1000})
        assert r["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
        assert gc.service.partition_count("a") == 4
        r = await c.call(20, 3, {"topic_names": ["a", "zz"], "timeout_ms": 1000})
        assert {t["name"]: t["error_code"] for t in r["responses"]} == {
            "a": 0, "zz": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert gc.service.partition_count("a") is None
        c.close()


async def test_find_coordinator_names_the_node_of_the_offsets_partition():
    async with running(nodes=3) as gc:
        nodes = gc.service.cluster.nodes
        clients = {n: await Client.connect(f"{nodes[n].host}:{nodes[n].port}") for n in nodes}
        groups = ["my-group", "orders", "polygenelubricants", "😀emoji", "g-7"]
        assert partition_for("my-group", 50) == 12 and partition_for("polygenelubricants", 50) == 0
        assert partition_for("😀emoji", 50) == 27
        r = await clients[0].call(10, 4, {"key_type": 0, "coordinator_keys": groups})
        for entry, group in zip(r["coordinators"], groups):
            expected = partition_for(group, 50) % 3
            assert entry["key"] == group and entry["error_code"] == 0 and entry["node_id"] == expected
            assert entry["port"] == nodes[expected].port
            # only that node coordinates the group
            for node_id, c in clients.items():
                hb = await c.call(12, 3, {"group_id": group, "generation_id": 1, "member_id": "m"})
                want = ErrorCode.UNKNOWN_MEMBER_ID if node_id == expected else ErrorCode.NOT_COORDINATOR
                assert hb["error_code"] == want, (group, node_id)
        flat = await clients[1].call(10, 1, {"key": "my-group", "key_type": 0})
        assert flat["error_code"] == 0 and flat["node_id"] == 12 % 3
        for c in clients.values():
            c.close()


async def test_produce_fetch_and_list_offsets_with_raw_batches():
    from groupcoord.protocol.records import Record, decode_batch, encode_batch, iter_batches
    async with running(topics={"t": 1}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        fetch = {"replica_id": -1, "max_wait_ms": 2000, "min_bytes": 1, "max_bytes": 1 << 20,
                 "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                 "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                             "partition_max_bytes": 1 << 20}]}],
                 "forgotten_topics_data": [], "rack_id": ""}
        corr = c.send(1, 11, fetch)               # parks: nothing to read yet
        producer = await Client.connect(gc.bootstrap_servers)
        batch = encode_batch([Record(i, 0, None, b"v%d" % i, []) for i in range(3)], base_timestamp=1000)
        produce = {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
                   "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
        r = await producer.call(0, 8, produce)
        assert r["responses"][0]["partition_responses"][0]["base_offset"] == 0
        r = await producer.call(0, 8, produce)
        assert r["responses"][0]["partition_responses"][0]["base_offset"] == 3
        got, resp = await c.read(1, 11)          # the parked fetch is answered by the append
        assert got == corr
        part = resp["responses"][0]["partitions"][0]
        assert part["error_code"] == 0 and part["high_watermark"] >= 3
        values = [rec.value for _, b in iter_batches(part["records"]) for rec in decode_batch(b)[1]]
        assert values[:3] == [b"v0", b"v1", b"v2"]
        lo = await c.call(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1},
                                         {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -2}]}]})
        parts = lo["topics"][0]["partitions"]
        assert parts[0]["offset"] == 6 and parts[1]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # acks=0: no response at all; the next request's answer comes first
        producer.send(0, 8, {**produce, "acks": 0})
        assert (await producer.call(18, 0, {}))["error_code"] == 0
        assert gc.service.cluster.log("t", 0).log_end_offset == 9
        c.close()
        producer.close()


async def test_a_fetch_partition_in_error_carries_empty_records_not_null():
    # Kafka's FetchResponse.partitionResponse: MemoryRecords.EMPTY (length 0); librdkafka rejects a
    # null record set (length -1) and so never sees the error (an OFFSET_OUT_OF_RANGE never resets)
    async with running(topics={"t": 1}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                 "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "", "topics": [
                     {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 99, "partition_max_bytes": 1024},
                                                   {"partition": 7, "fetch_offset": 0, "partition_max_bytes": 1024}]}]}
        parts = (await c.call(1, 11, fetch))["responses"][0]["partitions"]
        assert [(p["error_code"], p["records"]) for p in parts] == [
            (ErrorCode.OFFSET_OUT_OF_RANGE, b""), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, b"")]
        gc.service.faults.add({"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "count": 1})
        parts = (await c.call(1, 11, fetch))["responses"][0]["partitions"]
        assert [(p["error_code"], p["records"]) for p in parts] == [(ErrorCode.NOT_LEADER_OR_FOLLOWER, b"")] * 2
        c.close()


async def test_fetch_waits_at_most_max_wait():
    async with running(topics={"t": 1}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        fetch = {"replica_id": -1, "max_wait_ms": 150, "min_bytes": 1, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}]}
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        resp = await c.call(1, 4, fetch)
        assert loop.time() - t0 >= 0.14
        assert resp["responses"][0]["partitions"][0]["records"] == b""
        c.close()


def test_config_precedence(tmp_path):
    props = tmp_path / "broker.properties"
    props.write_text("# comment\ngroup.max.size = 10\nnum.partitions: 4\n")
    cfg = BrokerConfig({"num.partitions": "7"}, profile="test", properties_file=str(props),
                       environ={"GROUPCOORD_GROUP_MAX_SIZE": "20"})
    assert cfg["group.initial.rebalance.delay.ms"] == 0      # profile
    assert cfg["group.max.size"] == 20                       # environment over file
    assert cfg["num.partitions"] == 7                        # --set over everything
    assert cfg["offsets.topic.num.partitions"] == 50         # Kafka's default
    with pytest.raises(ConfigError):
        BrokerConfig({"group.max.sise": 1})
    with pytest.raises(ConfigError):
        BrokerConfig({"group.max.size": "many"})


def test_cli_serve_prints_bootstrap_servers_and_stops_on_sigterm(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--nodes", "2",
         "--topic", "orders:3", "--profile", "test", "--set", "group.max.size=5", "--log-format", "json",
         "--events", str(tmp_path / "events.jsonl"), "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("bootstrap servers: 127.0.0.1:")
        servers = line.split(": ", 1)[1].strip().split(",")
        assert len(servers) == 2

        async def check():
            c = await Client.connect(servers[0])
            md = await c.call(3, 1, {"topics": None})
            group = "my-group"   # coordinated by node 12 % 2 == 0
            r = await c.call(11, 5, join_body(group))
            r = await c.call(11, 5, join_body(group, r["member_id"]))
            assert r["error_code"] == 0
            c.close()
            return md

        md = asyncio.run(check())
        assert [(t["name"], len(t["partitions"])) for t in md["topics"]] == [("orders", 3)]
        assert len(md["brokers"]) == 2
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "stopped" in out
        assert '"event": "listening"' in err      # JSON log lines
        events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
        kinds = [e["event"] for e in events]
        assert "member.joined" in kinds and "rebalance.join_completed" in kinds
        assert all(e["group"] == "my-group" for e in events)
        assert any(e["event"] == "group.state_change" and e["state_to"] == "CompletingRebalance" for e in events)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("flags,offset_commit", [([], (2, 10)), (["--kafka-version", "4.1"], (2, 9)),
                                                  (["--kafka-version", "3.9"], (0, 9)),
                                                  (["--set", "groupcoord.kafka.version=3.9"], (0, 9))])
def test_cli_serve_emulates_the_kafka_release_asked_for(flags, offset_commit):
    proc = subprocess.Popen([sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--in-memory",
                             *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        assert line.startswith("bootstrap servers: "), proc.stderr.read() if proc.poll() is not None else line

        async def offset_commit_range():
            c = await Client.connect(line.split(": ", 1)[1].strip())
            resp = await c.call(18, 0, {})
            c.close()
            return next((k["min_version"], k["max_version"]) for k in resp["api_keys"] if k["api_key"] == 8)
        assert asyncio.run(offset_commit_range()) == offset_commit
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


def test_cli_rejects_bad_config():
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--in-memory",
                        "--set", "no.such.config=1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "unknown config 'no.such.config'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--in-memory",
                        "--http-port", "70000"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "port must be 0-65535" in r.stderr and "Traceback" not in r.stderr


def test_cli_lists_the_connection_limits_and_refuses_bad_ones():
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", "configs"], capture_output=True, text=True,
                       timeout=30, check=True)
    for line in ("socket.request.max.bytes = 104857600", "sasl.server.max.receive.size = 524288",
                 "connections.max.idle.ms = 600000", "socket.listen.backlog.size = 4096",
                 "max.connections = 2147483647", "max.connections.per.ip = 2147483647",
                 "max.connections.per.ip.overrides = "):
        assert "\n" + line in r.stdout, line
    r = subprocess.run([sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--in-memory",
                        "--set", "max.connections.per.ip=0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "max.connections.per.ip can be set to zero only if" in r.stderr
    assert "Traceback" not in r.stderr


def test_pytest_plugin_fixture_gives_a_running_coordinator(groupcoord):
    import socket
    host, port = groupcoord.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(frames.encode_request(18, 0, 7, {}, "plugin"))
        size = struct.unpack(">i", s.recv(4))[0]
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
    corr, body = frames.decode_response(18, 0, data)
    assert corr == 7 and body["error_code"] == 0


async def test_groups_answer_load_in_progress_until_their_partition_is_loaded(tmp_path):
    from groupcoord.coordinator.server import Server
    from groupcoord.coordinator.service import Service
    from groupcoord.coordinator.group.offsets import OffsetCommitRequest
    from groupcoord.coordinator.storage import LogStore

    def commit(service, group):
        out = []
        service.group_coordinator.offset_commit(out.append, OffsetCommitRequest(group, [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]))
        assert out[0]["topics"][0]["partitions"][0]["error_code"] == 0

    # two groups in different offsets-topic partitions, committed through a durable store
    groups = ["a", "b"]
    while partition_for(groups[0], 50) == partition_for(groups[1], 50):
        groups[1] += "b"
    first = Service(BrokerConfig(profile="test"), store=LogStore(str(tmp_path)))
    for g in groups:
        commit(first, g)
    first.store.close()

    service = Service(BrokerConfig(profile="test"), store=LogStore(str(tmp_path)))
    order = service.store.partitions()
    assert len(order) == 2
    early, late = sorted(groups, key=lambda g: order.index(partition_for(g, 50)))
    server = Server(service)
    await server.start()
    try:
        c = await Client.connect(server.bootstrap_servers)
        fetch = {"group_id": late, "topics": [{"name": "t", "partition_indexes": [0]}]}
        release = asyncio.Event()
        seen = []

        async def between(partition):
            if partition == order[0]:
                # the first partition is loaded, the second is not: ask the listener now
                seen.append(await c.call(11, 5, join_body(late)))
                seen.append(await c.call(9, 7, fetch))
                seen.append(await c.call(9, 7, dict(fetch, group_id=early)))
                release.set()

        loading = asyncio.create_task(server.load_state(between))
        await asyncio.wait_for(release.wait(), 10)
        join, late_fetch, early_fetch = seen
        assert join["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert late_fetch["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert early_fetch["error_code"] == 0
        assert early_fetch["topics"][0]["partitions"][0]["committed_offset"] == 7
        stats = await loading
        assert stats["groups"] == 2 and stats["records"] == 2
        after = await c.call(9, 7, fetch)
        assert after["error_code"] == 0 and after["topics"][0]["partitions"][0]["committed_offset"] == 7
        c.close()
    finally:
        await server.stop()
        service.store.close()
