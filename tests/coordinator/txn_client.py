"""A transactional producer's requests handed to a :class:`~groupcoord.coordinator.service.Service`
in-process, as a driver does: InitProducerId, AddPartitionsToTxn, transactional Produce, AddOffsetsToTxn,
TxnOffsetCommit and EndTxn (transactions V1 versions: the epoch stays until the next InitProducerId),
through its request pipeline (``admit``, ``dispatch``), every request and response through the codec both
ways. ``run`` runs a callable where the service lives (the identity in virtual time;
``ThreadedCoordinator.call`` for a coordinator on its own thread)."""
from __future__ import annotations

from typing import Callable

from groupcoord.coordinator.context import RequestContext
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.records import Record, encode_batch

PRODUCE, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 0, 22, 24, 25, 26, 28


class TxnClient:
    """One transactional producer (``transactional_id``) on a connection to node ``node``."""

    def __init__(self, svc, transactional_id: str, *, run: Callable | None = None, node: int = 0,
                 conn: int = 7) -> None:
        self.svc = svc
        self.transactional_id = transactional_id
        self.run = run or (lambda fn, *args: fn(*args))
        self.node, self.conn = node, conn
        self.producer_id, self.producer_epoch = -1, -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.correlation_id = 0

    def call(self, api_key: int, body: dict, version: int) -> dict:
        api = APIS[api_key]
        decoded = api.request.decode(api.request.encode(body, version), version)
        self.correlation_id += 1
        ctx = RequestContext(self.svc, self.node, f"txn-{self.transactional_id}", "/127.0.0.1", api_key, version,
                             self.correlation_id, connection_id=self.conn)
        got: list = []

        def respond(response: dict) -> None:
            got.append(api.response.decode(api.response.encode(response, version), version))

        def go() -> None:
            self.svc.dispatch(ctx, decoded, respond, self.svc.admit(ctx, decoded))
        self.run(go)
        assert got and got[0] is not None, "not answered at once"
        return got[0]

    def init(self, timeout_ms: int = 60_000) -> int:
        r = self.call(INIT_PRODUCER_ID, {"transactional_id": self.transactional_id,
                                         "transaction_timeout_ms": timeout_ms, "producer_id": -1,
                                         "producer_epoch": -1}, 4)
        if not r["error_code"]:
            self.producer_id, self.producer_epoch = r["producer_id"], r["producer_epoch"]
            self.sequences.clear()
        return r["error_code"]

    def add_partitions(self, topic: str, *partitions: int) -> dict:
        r = self.call(ADD_PARTITIONS, {
            "v3_and_below_transactional_id": self.transactional_id, "v3_and_below_producer_id": self.producer_id,
            "v3_and_below_producer_epoch": self.producer_epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}]}, 3)
        return {(t["name"], p["partition_index"]): p["partition_error_code"]
                for t in r["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}

    def produce(self, topic: str, partition: int, count: int, timestamp: int | None = None) -> tuple[int, int]:
        """``count`` records in one transactional batch with this timestamp (ms; default: the service's
        clock now): (error, base offset)."""
        seq = self.sequences.get((topic, partition), 0)
        if timestamp is None:
            timestamp = self.run(self.svc.clock)
        data = encode_batch([Record(i, 0, None, b"t%d" % i, []) for i in range(count)], base_timestamp=timestamp,
                            producer_id=self.producer_id, producer_epoch=self.producer_epoch, base_sequence=seq,
                            transactional=True)
        r = self.call(PRODUCE, {"transactional_id": self.transactional_id, "acks": -1, "timeout_ms": 1000,
                                "topic_data": [{"name": topic, "partition_data": [
                                    {"index": partition, "records": data}]}]}, 9)
        [part] = r["responses"][0]["partition_responses"]
        if not part["error_code"]:
            self.sequences[(topic, partition)] = seq + count
        return part["error_code"], part["base_offset"]

    def add_offsets(self, group: str) -> int:
        return self.call(ADD_OFFSETS, {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                                       "producer_epoch": self.producer_epoch, "group_id": group}, 3)["error_code"]

    def commit_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> list[int]:
        """TxnOffsetCommit (v3, as a producer outside the group's generation); the partitions' errors."""
        topics: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                 "committed_leader_epoch": -1, "committed_metadata": ""})
        r = self.call(TXN_OFFSET_COMMIT, {
            "transactional_id": self.transactional_id, "group_id": group, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}, 3)
        return [p["error_code"] for t in r["topics"] for p in t["partitions"]]

    def end(self, commit: bool) -> int:
        return self.call(END_TXN, {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                                   "producer_epoch": self.producer_epoch, "committed": commit}, 3)["error_code"]
