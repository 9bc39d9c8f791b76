"""Virtual-time harness of the share group conformance tests: a :class:`~group_harness.Harness` (int
clock, timers, events checked against their schema) whose coordinator keeps every record it appends
(``records``) and whose share-partition states are a :class:`Persister` that records its calls, with
a cluster of topics (ids made from their names)."""
from __future__ import annotations

import uuid

from group_harness import Call, Harness

from groupcoord.coordinator.cluster import Cluster, Node
from groupcoord.coordinator.group.runtime import GroupCoordinator
from groupcoord.coordinator.group.share import records as share_records
from groupcoord.coordinator.group.share.requests import ShareGroupHeartbeatRequest

GROUP = "fooup"

#: record kind -> the name Kafka gives the record
RECORD_NAMES = {share_records.MEMBER: "ShareGroupMemberMetadata", share_records.EPOCH: "ShareGroupMetadata",
                share_records.TARGET_EPOCH: "ShareGroupTargetAssignmentMetadata",
                share_records.TARGET: "ShareGroupTargetAssignmentMember",
                share_records.CURRENT: "ShareGroupCurrentMemberAssignment",
                share_records.STATE_PARTITIONS: "ShareGroupStatePartitionMetadata"}


def tid(name: str) -> uuid.UUID:
    """The id the harness' cluster gives a topic of that name."""
    return uuid.uuid5(uuid.NAMESPACE_OID, name)


_NAMES: dict[uuid.UUID, str] = {}


class RecordingStore:
    """A store that keeps what is appended: [(partition, key, value)]."""

    def __init__(self) -> None:
        self.appended: list = []

    def append(self, partition: int, records) -> None:
        self.appended.extend((partition, key, value) for key, value in records)


class Persister:
    """Share-partition states that record the calls and answer ``error`` (0: success)."""

    def __init__(self) -> None:
        self.initialized: list[tuple[str, int, dict]] = []
        self.deleted: list[tuple[str, dict]] = []
        self.error = 0

    def initialize(self, group_id: str, state_epoch: int, partitions: dict) -> int:
        self.initialized.append((group_id, state_epoch, {_NAMES[t]: sorted(ps) for t, ps in partitions.items()}))
        return self.error

    def delete(self, group_id: str, partitions: dict) -> int:
        self.deleted.append((group_id, {_NAMES[t]: sorted(ps) for t, ps in partitions.items()}))
        return self.error


class ShareHarness(Harness):
    """A harness for share groups: ``release`` the Kafka release emulated, ``topics`` {name: partitions}."""

    def __init__(self, release: str = "4.3", topics: dict | None = None, now: int = 0, **config):
        config.setdefault("groupcoord_kafka_version", release)
        super().__init__(**config)
        self.now = now
        self.store = RecordingStore()
        self.gc = GroupCoordinator(self.config, self.timers, lambda: self.now, emit=self._emit, store=self.store)
        self.persister = self.gc.share.persister = Persister()
        self.cluster = Cluster([Node(0, "localhost", 9092)], topic_id_factory=tid)
        self.gc.set_metadata_image(self.cluster)
        self.cluster.topic_listeners.append(self.gc.topics_changed)
        for name, partitions in ({"foo": 6, "bar": 3} if topics is None else topics).items():
            self.create_topic(name, partitions)
        self._mark = 0

    def create_topic(self, name: str, partitions: int) -> None:
        _NAMES[tid(name)] = name
        self.cluster.create_topic(name, partitions)

    # ---- requests ------------------------------------------------------------------------
    def hb(self, member_id: str, epoch: int, topics=None, *, rack_id=None, group_id: str = GROUP,
           client_id: str = "client") -> dict:
        """One ShareGroupHeartbeat as the handler makes it: the request's checks, then the core."""
        req = ShareGroupHeartbeatRequest(group_id, member_id, epoch, rack_id=rack_id, subscribed_topic_names=topics,
                                         client_id=client_id, client_host="/127.0.0.1")
        error = req.error()
        if error is not None:
            return {"error_code": int(error[0]), "error_message": error[1]}
        call = Call()
        self.gc.share_group_heartbeat(call, req)
        return call.result

    def share_join(self, member_id: str, topics=("foo",), **kw) -> dict:
        """A member joins and heartbeats once more: it has its partitions (the first response has none
        until their share-partition state is initialized)."""
        first = self.hb(member_id, 0, list(topics), **kw)
        assert first["error_code"] == 0, first
        return self.hb(member_id, first["member_epoch"], **kw)

    # ---- inspection ------------------------------------------------------------------------
    def group(self, group_id: str = GROUP):
        return self.gc.get(group_id)

    def new_records(self) -> list[tuple]:
        """The records appended since the last call: (Kafka's record name, the member or None, value)."""
        out = [(RECORD_NAMES.get(key.kind, key.kind), getattr(key, "name", None), value)
               for _, key, value in self.store.appended[self._mark:]]
        self._mark = len(self.store.appended)
        return out


def assigned(resp_or_parts) -> dict | None:
    """{topic name: sorted partitions} of a heartbeat response's assignment (None: not sent), or of a
    member's assigned partitions."""
    if isinstance(resp_or_parts, dict) and "assignment" in resp_or_parts:
        if resp_or_parts["assignment"] is None:
            return None
        return {_NAMES[t["topic_id"]]: sorted(t["partitions"]) for t in resp_or_parts["assignment"]["topic_partitions"]}
    return {_NAMES[t]: sorted(ps) for t, ps in resp_or_parts.items()}


def state_topics(entries) -> dict:
    """{topic name: partitions} of a ShareGroupStatePartitionMetadata value's topics."""
    return {e["topic_name"]: e["partitions"] for e in entries}
