"""A real client's ConsumerGroupHeartbeat bytes, decoded by our codec.

A minimal broker (a listener thread, plain sockets, the project's frames codec) answers what a
``confluent_kafka.Consumer`` with ``group.protocol=consumer`` asks before its first heartbeat:
ApiVersions (advertising ConsumerGroupHeartbeat v0-1, Metadata and FindCoordinator), Metadata
(one broker: itself) and FindCoordinator (itself). It keeps every request frame as it came; the
test decodes librdkafka's heartbeats with our codec and checks their fields, and that they
re-encode to the very bytes the client sent.

It answers the heartbeats with our encoder too: the join (epoch 0) with epoch 1 and an empty,
non-null Assignment, later ones with epoch 2 and a null Assignment (marker -1). The epochs of the
client's next heartbeats show that it read both shapes. Nothing sleeps: the test waits on a
condition the listener signals, with a timeout as a hang guard.
"""
from __future__ import annotations

import base64
import re
import socket
import socketserver
import struct
import threading
import uuid

import pytest

from groupcoord.protocol import frames
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.messages import APIS

pytestmark = pytest.mark.interop

confluent_kafka = pytest.importorskip("confluent_kafka")

CGH = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
API_VERSIONS, METADATA, FIND_COORDINATOR = int(ApiKey.API_VERSIONS), int(ApiKey.METADATA), int(ApiKey.FIND_COORDINATOR)
NODE_ID = 1
TOPIC_ID = uuid.UUID("5c0ffee0-0000-4000-8000-00000000abcd")
HEARTBEAT_INTERVAL_MS = 250     # librdkafka also uses it as the heartbeat's request timeout
MAX_POLL_INTERVAL_MS = 45000
WAIT_S = 15.0                   # a hang guard: the whole exchange takes well under a second


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


class _Connection(socketserver.BaseRequestHandler):
    server: "FakeBroker"

    def handle(self) -> None:
        sock = self.request
        while True:
            head = _recv_exactly(sock, 4)
            if head is None:
                return
            data = _recv_exactly(sock, struct.unpack(">i", head)[0])
            if data is None:
                return
            try:
                answer = self.server.answer(data)
            except Exception as exc:  # noqa: BLE001 -- reported by the test, not lost in a thread
                self.server.record_error(exc)
                return
            if answer is None:
                return      # a request we do not answer: close, the client then gives up on us
            sock.sendall(answer)


class FakeBroker(socketserver.ThreadingTCPServer):
    """One node that is its own group coordinator and knows only what a first heartbeat needs."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Connection)
        self.port = self.server_address[1]
        self.cond = threading.Condition()
        self.requests: list[tuple[int, int]] = []   # (api key, version) of every request, in order
        self.heartbeats: list[bytes] = []           # raw ConsumerGroupHeartbeat frames (no size prefix)
        self.epochs: list[int] = []                 # their member epochs, as decoded here
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self.serve_forever, name="fake-broker", daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "FakeBroker":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(WAIT_S)

    def record_error(self, exc: BaseException) -> None:
        with self.cond:
            self.errors.append(exc)
            self.cond.notify_all()

    def wait_for(self, predicate, what: str) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: self.errors or predicate(), WAIT_S)
        if self.errors:
            raise self.errors[0]
        assert ok, f"no {what} within {WAIT_S} s; requests seen: {self.requests}"

    # ---- the answers -----------------------------------------------------------------------
    def answer(self, data: bytes) -> bytes | None:
        req = frames.decode_request(data)
        key, version = req.api_key, req.api_version
        body = None
        if key == API_VERSIONS:
            body = {"error_code": 0, "throttle_time_ms": 0, "api_keys": [
                {"api_key": k, "min_version": APIS[k].request.valid[0], "max_version": APIS[k].request.valid[1]}
                for k in (METADATA, FIND_COORDINATOR, API_VERSIONS, CGH)]}
        elif key == METADATA:
            body = self._metadata(req.body)
        elif key == FIND_COORDINATOR:
            body = self._coordinator(version, req.body)
        elif key == CGH:
            body = self._heartbeat(req.body)
        with self.cond:
            self.requests.append((key, version))
            if key == CGH:
                self.heartbeats.append(data)
                self.epochs.append(req.body["member_epoch"])
            self.cond.notify_all()
        if body is None:
            return None
        return frames.encode_response(key, version, req.correlation_id, body)

    def _metadata(self, body: dict) -> dict:
        topics = [t["name"] for t in body.get("topics") or [] if t.get("name")]
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "cluster_id": "fake-cluster", "controller_id": NODE_ID,
            "topics": [{"error_code": 0, "name": name, "topic_id": TOPIC_ID, "is_internal": False,
                        "topic_authorized_operations": -2147483648,
                        "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": NODE_ID,
                                        "leader_epoch": 0, "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID],
                                        "offline_replicas": []}]} for name in topics],
        }

    def _coordinator(self, version: int, body: dict) -> dict:
        me = {"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "error_code": 0, "error_message": None}
        if version >= 4:    # KIP-699: a batch of keys
            return {"throttle_time_ms": 0, "coordinators": [dict(me, key=k) for k in body["coordinator_keys"]]}
        return dict(me, throttle_time_ms=0)

    @staticmethod
    def _heartbeat(body: dict) -> dict:
        epoch = body["member_epoch"]
        if epoch < 0:                       # leaving (-1), or a static member leaving for now (-2)
            new_epoch, assignment = epoch, None
        elif epoch == 0:                    # joining: epoch 1, an empty assignment (marker 1)
            new_epoch, assignment = 1, {"topic_partitions": []}
        else:                               # epoch 2, the assignment unchanged: null (marker -1)
            new_epoch, assignment = 2, None
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": body["member_id"],
                "member_epoch": new_epoch, "heartbeat_interval_ms": 0 if epoch < 0 else HEARTBEAT_INTERVAL_MS,
                "assignment": assignment}


@pytest.fixture
def broker():
    b = FakeBroker().start()
    yield b
    b.stop()


CASES = {
    # name: (client config, subscription, expected fields of the join heartbeat)
    "topic-names": (
        {"group.remote.assignor": "uniform"}, ["orders", "payments"],
        {"subscribed_topic_names": ["orders", "payments"], "subscribed_topic_regex": "",
         "server_assignor": "uniform", "instance_id": None, "rack_id": None}),
    "regexes-no-assignor": (
        {}, ["orders", "^audit-.*", "^x[0-9]+"],
        {"subscribed_topic_names": ["orders"], "subscribed_topic_regex": "(^audit-.*)|(^x[0-9]+)",
         "server_assignor": None, "instance_id": None, "rack_id": None}),
    "static-member-with-rack": (
        {"group.remote.assignor": "range", "group.instance.id": "instance-1", "client.rack": "rack-a"}, ["orders"],
        {"subscribed_topic_names": ["orders"], "subscribed_topic_regex": "",
         "server_assignor": "range", "instance_id": "instance-1", "rack_id": "rack-a"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_confluent_consumer_heartbeats_decode(broker: FakeBroker, name: str):
    overrides, subscription, expected = CASES[name]
    group_id = f"cgh-{name}"
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": group_id, "group.protocol": "consumer",
        "client.id": "cgh-probe", "max.poll.interval.ms": MAX_POLL_INTERVAL_MS, **overrides})
    try:
        consumer.subscribe(subscription)
        # the join, then a heartbeat at epoch 1 (our non-null Assignment read), then one at
        # epoch 2 (our null Assignment read)
        broker.wait_for(lambda: 2 in broker.epochs, "heartbeat at epoch 2")
    finally:
        consumer.close()
    leave = -2 if "group.instance.id" in overrides else -1
    broker.wait_for(lambda: leave in broker.epochs, f"leave heartbeat (epoch {leave})")
    with broker.cond:
        raw = list(broker.heartbeats)
        requests = list(broker.requests)

    assert {key for key, _ in requests} <= {API_VERSIONS, METADATA, FIND_COORDINATOR, CGH}, requests
    codec = APIS[CGH].request.codec(1)
    decoded = []
    for data in raw:
        req = frames.decode_request(data)
        assert (req.api_key, req.api_version, req.client_id) == (CGH, 1, "cgh-probe")
        assert req.trailing == 0                        # our layout consumed every byte it sent
        # request header v2 (api key, version, correlation id, client id, tags), then the body:
        # the body re-encodes to exactly the bytes librdkafka wrote
        header_len = 2 + 2 + 4 + 2 + len("cgh-probe") + 1
        assert data[header_len:] == codec.encode(req.body)
        decoded.append(req.body)

    first = decoded[0]
    member_id = first["member_id"]
    assert re.fullmatch(r"[A-Za-z0-9+/]{22}", member_id), member_id     # KIP-1082: made by the client
    assert len(base64.b64decode(member_id + "==")) == 16                 # a UUID in base64, unpadded
    # the names in librdkafka's own order (it wrote ["payments", "orders"] for ["orders", "payments"])
    first = dict(first, subscribed_topic_names=sorted(first["subscribed_topic_names"]))
    assert first == dict(expected, group_id=group_id, member_id=member_id, member_epoch=0,
                         rebalance_timeout_ms=MAX_POLL_INTERVAL_MS, topic_partitions=[])

    epochs = [body["member_epoch"] for body in decoded]
    assert epochs[:3] == [0, 1, 2] and epochs[-1] == leave, epochs
    assert {body["member_id"] for body in decoded} == {member_id}        # one id for the handle's life
    assert all(body["group_id"] == group_id for body in decoded)
    # the leave: only the ids and the epoch, everything else "unchanged" (null / -1)
    assert decoded[-1] == {"group_id": group_id, "member_id": member_id, "member_epoch": leave,
                           "instance_id": expected["instance_id"], "rack_id": None, "rebalance_timeout_ms": -1,
                           "subscribed_topic_names": None, "subscribed_topic_regex": None,
                           "server_assignor": None, "topic_partitions": None}
