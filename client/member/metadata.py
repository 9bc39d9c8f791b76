"""Cluster metadata: partition leaders and replicas of the topics the member needs, the brokers.

Refreshed every metadata.max.age.ms and when a part asks for it (``requested``: an unknown
leader, a new subscription, the leader about to assign), with retry.backoff.ms between failed
attempts, on the bootstrap connection. A member subscribed to a pattern (group.protocol=consumer)
asks by topic id for the topics of its target assignment instead, to learn their names.
"""
from __future__ import annotations

from typing import Iterable

from groupcoord.protocol.errors import ErrorCode

from ..assignors.base import TopicPartition as TP
from .connections import BOOTSTRAP, METADATA, Request

_E = ErrorCode

# Metadata answers are often one object handed to many members (a fleet's decode cache, the
# coordinator's per-epoch answer in the simulator): the tables built from a topic entry are then
# built once and shared (read-only). Keyed by the entry's id, which stays valid while the entry is held here.
_TOPIC_TABLES: dict[int, tuple] = {}
_TOPIC_TABLES_MAX = 8


def _topic_tables(t: dict) -> tuple[dict[int, int], dict[int, tuple], bool]:
    """(partition -> leader (-1: none), partition -> replicas, whether any has no leader) of a
    Metadata topic entry."""
    parts = t["partitions"]
    hit = _TOPIC_TABLES.get(id(t))
    if hit is not None and hit[0] is t and hit[1] is parts and hit[2] == len(parts):
        return hit[3]
    leaders = {}
    replicas = {}
    for p in parts:
        i = p["partition_index"]
        leaders[i] = p["leader_id"] if p["error_code"] == 0 else -1
        replicas[i] = tuple(p["replica_nodes"])
    tables = (leaders, replicas, any(leader < 0 for leader in leaders.values()))
    if len(_TOPIC_TABLES) >= _TOPIC_TABLES_MAX:
        try:
            _TOPIC_TABLES.pop(next(iter(_TOPIC_TABLES)))
        except (RuntimeError, StopIteration, KeyError):     # members on other threads
            pass
    _TOPIC_TABLES[id(t)] = (t, parts, len(parts), tables)
    return tables


class Metadata:
    """The member's view of the cluster. ``member``: the :class:`Member` it serves (the topics
    it wants, the connections, what to tell the group when partition counts change)."""

    def __init__(self, member, now: int):
        cfg = member.config
        self.member = member
        self.leaders: dict[str, dict[int, int]] = {}     # topic -> partition -> leader (-1: none)
        self.replicas: dict[str, dict[int, tuple]] = {}  # topic -> partition -> replicas
        self.brokers: dict[int, tuple[str, int, str | None]] = {}
        self.in_flight = False
        self.requested = True
        self.next_refresh = now                          # next periodic refresh
        self.retry_at = 0                                # backoff of requested refreshes
        self.version = 0                                 # bumped per response
        self.topics: frozenset[str] = frozenset()        # topics of the last response
        self.topic_names: dict[object, str] = {}         # topic id -> name
        self.max_age_ms: int = cfg["metadata.max.age.ms"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.allow_auto_create: bool = cfg["allow.auto.create.topics"]

    def due(self, now: int) -> bool:
        return not self.in_flight and ((self.requested and now >= self.retry_at) or now >= self.next_refresh)

    def step(self, now: int) -> None:
        if not self.due(now):
            return
        ids = self.member.wanted_topic_ids()
        if ids is not None:
            self._step_by_ids(ids, now)
            return
        topics = self.member.wanted_topics()
        if not topics:
            return
        allow = self.allow_auto_create
        names = sorted(topics)

        def build(v: int) -> dict:
            return {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": allow,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False}
        if self.member.net.send(BOOTSTRAP, METADATA, build, self.on_metadata, now,
                                ctx=frozenset(names)) is not None:
            self.in_flight = True
            self.requested = False

    def _step_by_ids(self, ids: list, now: int) -> None:
        """A pattern subscription: the topics of the target assignment asked by topic id
        (Metadata v12, ConsumerMetadata's MetadataRequest.Builder.forTopicIds; a broker without
        v12 is asked for every topic, whose answer carries the ids from v10)."""
        if not ids:
            self.requested = False                   # nothing to ask (Kafka asks for no topic)
            self.next_refresh = now + self.max_age_ms
            return

        def build(v: int) -> dict:
            topics = [{"name": None, "topic_id": tid} for tid in ids] if v >= 12 else None
            return {"topics": topics, "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False}
        if self.member.net.send(BOOTSTRAP, METADATA, build, self.on_metadata, now, ctx=None) is not None:
            self.in_flight = True
            self.requested = False

    def on_metadata(self, resp: dict | None, req: Request, now: int) -> None:
        self.in_flight = False
        if resp is None:
            self.requested = True
            self.retry_at = now + self.retry_backoff_ms
            return
        self.topics = req.ctx if req.ctx is not None else frozenset(
            t["name"] for t in resp["topics"] if t["error_code"] == 0 and t["name"])
        self.brokers = {b["node_id"]: (b["host"], b["port"], b.get("rack")) for b in resp["brokers"]}
        retry = False
        for t in resp["topics"]:
            name, code = t["name"], t["error_code"]
            if code == 0 or (code == _E.LEADER_NOT_AVAILABLE and t["partitions"]):
                leaders, replicas, unled = _topic_tables(t)
                tid = t.get("topic_id")
                if tid is not None:
                    self.topic_names[tid] = name
                self.leaders[name] = leaders
                self.replicas[name] = replicas
                if unled:
                    retry = True
            else:
                self.leaders.pop(name, None)
                self.replicas.pop(name, None)
                if code in (_E.LEADER_NOT_AVAILABLE,):
                    retry = True
        self.version += 1
        self.next_refresh = now + self.max_age_ms
        if retry:
            self.requested = True
            self.retry_at = now + self.retry_backoff_ms
        self.member.membership.on_metadata(now)

    def partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        return {t: len(self.leaders[t]) for t in topics if t in self.leaders}

    def leader_of(self, tp: TP) -> int | None:
        leader = self.leaders.get(tp.topic, {}).get(tp.partition)
        return leader if leader is not None and leader >= 0 else None

    def node(self, node_id: int) -> tuple[int, str, int] | None:
        """(node id, host, port) of a broker of the last response; None (and a refresh asked
        for) when it is not known."""
        broker = self.brokers.get(node_id)
        if broker is None:
            self.requested = True
            return None
        return (node_id, broker[0], broker[1])

    def racks(self, counts: dict[str, int]) -> dict[TP, frozenset]:
        """The racks of each partition's replicas (partitions without any left out)."""
        racks = {}
        brokers = self.brokers
        for t, n in counts.items():
            for p in range(n):
                r = frozenset(brokers[node][2] for node in self.replicas.get(t, {}).get(p, ())
                              if node in brokers and brokers[node][2])
                if r:
                    racks[TP(t, p)] = r
        return racks
