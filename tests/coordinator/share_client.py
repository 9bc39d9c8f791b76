"""A share consumer's requests handed to a :class:`~groupcoord.coordinator.service.Service` in-process,
as a driver does: through its request pipeline (``admit``: the request faults; ``dispatch``), every
request and response through the codec both ways. ``run`` runs a callable where the service lives (the
identity in virtual time; ``ThreadedCoordinator.call`` for a coordinator on its own thread)."""
from __future__ import annotations

from typing import Callable

from groupcoord.coordinator.context import RequestContext
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.records import Record, encode_batch

PRODUCE, SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE = 0, 76, 78, 79
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


def batches(acks) -> list[dict]:
    """AcknowledgementBatches from [(first, last, type or [types])]."""
    return [{"first_offset": first, "last_offset": last,
             "acknowledge_types": [types] if isinstance(types, int) else list(types)} for first, last, types in acks]


class ShareClient:
    """One client connection (``conn``) to node ``node`` of the service."""

    def __init__(self, svc, *, run: Callable | None = None, node: int = 0, conn: int = 1,
                 client_id: str = "share-client", group: str = "q", topic: str = "foo") -> None:
        self.svc = svc
        self.run = run or (lambda fn, *args: fn(*args))
        self.node, self.conn, self.client_id = node, conn, client_id
        self.group, self.topic = group, topic
        self.correlation_id = 0

    def topic_id(self, topic: str | None = None):
        return self.run(self.svc.topic_id, topic or self.topic)

    def send(self, api_key: int, body: dict, version: int) -> list:
        """The request through admit and dispatch; a list that gets the response (empty until answered;
        [None] when the connection was closed instead)."""
        api = APIS[api_key]
        decoded = api.request.decode(api.request.encode(body, version), version)
        self.correlation_id += 1
        ctx = RequestContext(self.svc, self.node, self.client_id, "/127.0.0.1", api_key, version, self.correlation_id,
                             connection_id=self.conn)
        got: list = []

        def respond(response: dict) -> None:
            got.append(api.response.decode(api.response.encode(response, version), version))

        def go() -> None:
            verdict = self.svc.admit(ctx, decoded)
            if not self.svc.dispatch(ctx, decoded, respond, verdict):      # (a delay is not waited for here)
                got.append(None)
        self.run(go)
        return got

    def call(self, api_key: int, body: dict, version: int) -> dict | None:
        got = self.send(api_key, body, version)
        assert got, "not answered at once"
        return got[0]

    # ---- the group, the log ----

    def heartbeat(self, member: str, epoch: int, topics=None) -> dict:
        return self.call(SHARE_GROUP_HEARTBEAT, {"group_id": self.group, "member_id": member, "member_epoch": epoch,
                                                 "rack_id": None, "subscribed_topic_names": topics}, 1)

    def join(self, member: str, topics=None) -> int:
        """Two heartbeats: the member has its partitions, their share-partition states are initialized;
        its member epoch."""
        first = self.heartbeat(member, 0, topics or [self.topic])
        assert first["error_code"] == 0, first
        second = self.heartbeat(member, first["member_epoch"])
        assert second["error_code"] == 0, second
        return second["member_epoch"]

    def produce(self, count: int, partition: int = 0, topic: str | None = None) -> int:
        """``count`` records in one batch; its base offset."""
        data = encode_batch([Record(i, 0, None, b"v%d" % i, []) for i in range(count)], base_timestamp=1)
        resp = self.call(PRODUCE, {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
            {"name": topic or self.topic, "partition_data": [{"index": partition, "records": data}]}]}, 8)
        [part] = resp["responses"][0]["partition_responses"]
        assert part["error_code"] == 0, part
        return part["base_offset"]

    # ---- ShareFetch and ShareAcknowledge ----

    def fetch_body(self, member: str, epoch: int, partitions=(0,), *, acks=None, max_records: int = 500,
                   max_wait_ms: int = 0, topic: str | None = None) -> dict:
        acks = acks or {}
        indexes = list(dict.fromkeys([*partitions, *acks]))
        return {"group_id": self.group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
                "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records, "batch_size": 500,
                "share_acquire_mode": 0, "is_renew_ack": False,
                "topics": [{"topic_id": self.topic_id(topic), "partitions": [
                    {"partition_index": p, "acknowledgement_batches": batches(acks.get(p, ()))} for p in indexes]}]
                if indexes else [], "forgotten_topics_data": []}

    def fetch(self, member: str, epoch: int, partitions=(0,), **fields) -> dict | None:
        return self.call(SHARE_FETCH, self.fetch_body(member, epoch, partitions, **fields), 1)

    def acknowledge(self, member: str, epoch: int, acks: dict, topic: str | None = None) -> dict | None:
        body = {"group_id": self.group, "member_id": member, "share_session_epoch": epoch, "is_renew_ack": False,
                "topics": [{"topic_id": self.topic_id(topic), "partitions": [
                    {"partition_index": p, "acknowledgement_batches": batches(b)} for p, b in acks.items()]}]}
        return self.call(SHARE_ACKNOWLEDGE, body, 1)


def partition_of(resp: dict, partition: int = 0) -> dict:
    """The response's entry of a partition."""
    [found] = [p for t in resp["responses"] for p in t["partitions"] if p["partition_index"] == partition]
    return found


def acquired(resp: dict, partition: int = 0) -> list[tuple[int, int, int]]:
    """(first, last, delivery count) of what a ShareFetch acquired of a partition."""
    found = [p for t in resp["responses"] for p in t["partitions"] if p["partition_index"] == partition]
    return [(r["first_offset"], r["last_offset"], r["delivery_count"]) for p in found for r in p["acquired_records"]]
