"""An admin client over our codec and connections: what ``groupcoord groups`` and ``groupcoord
topics`` (Kafka's kafka-consumer-groups.sh and kafka-topics.sh) ask of a cluster.

    admin = AdminClient("127.0.0.1:9092")
    try:
        listings = await admin.list_groups()
        description = (await admin.describe_groups(["billing"]))["billing"]
    finally:
        admin.close()

It talks to any Kafka broker the way Kafka's Admin client does: every connection negotiates
versions with ApiVersions (:class:`~.connection.BrokerConnection`) and each request goes out at
the highest version both sides speak (:data:`ADMIN_VERSIONS`, within what our codec declares);
Metadata gives the brokers and partition leaders; FindCoordinator gives each group's
coordinator, which gets the group's requests (found again after NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE, retried after COORDINATOR_LOAD_IN_PROGRESS); ListGroups goes to every
broker and ListOffsets to each partition's leader.

Every call must finish within ``timeout_ms`` (Kafka's ``default.api.timeout.ms``), retrying
retriable errors until then. Failures raise :class:`AdminError` (a bootstrap server that cannot
be reached, a time-out) or :class:`~groupcoord.protocol.errors.KafkaError` (an error code).
"""
from __future__ import annotations

import asyncio
import os
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.consumer import decode_assignment, flatten_partitions
from groupcoord.protocol.errors import DecodeError, ErrorCode, KafkaError
from groupcoord.protocol.messages import APIS

from .assignors.base import TopicPartition as TP
from .connection import BrokerConnection
from .member import (
    CLIENT_VERSIONS,
    EARLIEST,
    FIND_COORDINATOR,
    LATEST,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    answered_offset,
)

DESCRIBE_GROUPS, LIST_GROUPS, CREATE_TOPICS, DELETE_TOPICS, DELETE_GROUPS, OFFSET_DELETE = (
    ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.DELETE_GROUPS,
    ApiKey.OFFSET_DELETE)
CONSUMER_GROUP_DESCRIBE = int(ApiKey.CONSUMER_GROUP_DESCRIBE)
CREATE_PARTITIONS = int(ApiKey.CREATE_PARTITIONS)
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = (
    int(ApiKey.DESCRIBE_CONFIGS), int(ApiKey.INCREMENTAL_ALTER_CONFIGS), int(ApiKey.LIST_CONFIG_RESOURCES))
#: the transaction admin APIs: DescribeTransactions, ListTransactions, and WriteTxnMarkers (an abort of a hanging
#: transaction, as kafka-transactions.sh's abort sends it)
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, WRITE_TXN_MARKERS = (
    int(ApiKey.DESCRIBE_TRANSACTIONS), int(ApiKey.LIST_TRANSACTIONS), int(ApiKey.WRITE_TXN_MARKERS))
#: FindCoordinator's key types
GROUP_KEY, TRANSACTION_KEY = 0, 1
#: the share group (KIP-932) admin APIs: ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets,
#: DeleteShareGroupOffsets
SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS = (
    77, 90, 91, 92)

#: The versions whose request bodies this client builds, per API key (inclusive ranges); the
#: member's own where it sends the same requests. OffsetFetch starts at v2, the first that
#: fetches every committed offset of a group (Topics null).
ADMIN_VERSIONS: dict[int, tuple[int, int]] = {
    METADATA: CLIENT_VERSIONS[METADATA],
    FIND_COORDINATOR: CLIENT_VERSIONS[FIND_COORDINATOR],
    LIST_OFFSETS: CLIENT_VERSIONS[LIST_OFFSETS],
    OFFSET_COMMIT: CLIENT_VERSIONS[OFFSET_COMMIT],
    OFFSET_FETCH: (2, CLIENT_VERSIONS[OFFSET_FETCH][1]),
    DESCRIBE_GROUPS: (0, 6),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 2),
    OFFSET_DELETE: (0, 0),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 6),
    CREATE_PARTITIONS: (0, 3),
    DESCRIBE_CONFIGS: (1, 4),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    LIST_CONFIG_RESOURCES: (1, 1),
    SHARE_GROUP_DESCRIBE: (1, 1),
    DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),       # v1 (Kafka 4.2, KIP-1226): the Lag
    ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 2),                  # v1: the duration filter (KIP-994); v2: the id pattern (KIP-1152)
    WRITE_TXN_MARKERS: (1, 1),                  # (v0 is gone from Kafka 4.0; v2 adds only TransactionVersion)
}

#: Kafka's ConfigResource.Type, by the names kafka-configs.sh gives them
RESOURCE_TYPES = {"topics": 2, "brokers": 4, "broker-loggers": 8, "client-metrics": 16, "groups": 32}
#: DescribeConfigsResponse's ConfigSource, as Kafka's ConfigEntry.ConfigSource names them
CONFIG_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                  7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
#: IncrementalAlterConfigs' ConfigOperation
SET_CONFIG, DELETE_CONFIG = 0, 1

CONSUMER_PROTOCOL = "consumer"
RETRY_BACKOFF_S = 0.1
_E = ErrorCode
_FIND_AGAIN = (_E.NOT_COORDINATOR, _E.COORDINATOR_NOT_AVAILABLE)
_LEADER_MOVED = (_E.NOT_LEADER_OR_FOLLOWER, _E.LEADER_NOT_AVAILABLE, _E.UNKNOWN_LEADER_EPOCH,
                 _E.FENCED_LEADER_EPOCH, _E.REPLICA_NOT_AVAILABLE)


class AdminError(Exception):
    """A failure that is not a Kafka error code: no bootstrap server reachable, a time-out."""


class _Retry(Exception):
    """Raised inside a retried attempt: try again after the back-off (the reason is kept)."""


# ---------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None          # ListGroups v4+
    type: str | None           # ListGroups v5+ ("classic", "consumer", ...)


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TP, ...]   # decoded from the consumer protocol's assignment bytes
    member_epoch: int | None = None                     # a consumer group's member (KIP-848) only
    target_assignment: tuple[TP, ...] | None = None     # a consumer group's member (KIP-848) only


@dataclass(frozen=True)
class GroupDescription:
    """A consumer group as DescribeGroups tells it; a group that does not exist is "Dead" (the
    broker's GROUP_ID_NOT_FOUND of v6 and the bare "Dead" entry of older versions alike)."""
    group_id: str
    state: str
    protocol_type: str
    assignor: str               # ProtocolData: the assignor chosen, "" unless Stable
    members: tuple[MemberDescription, ...]
    coordinator: Node
    group_epoch: int | None = None                  # a consumer group (KIP-848) only
    target_assignment_epoch: int | None = None      # a consumer group (KIP-848) only


@dataclass(frozen=True)
class ShareMemberDescription:
    """A share group's member as ShareGroupDescribe tells it (Kafka's ``ShareMemberDescription``)."""
    member_id: str
    rack_id: str | None
    client_id: str
    host: str
    assignment: tuple[TP, ...]
    member_epoch: int


@dataclass(frozen=True)
class ShareGroupDescription:
    """A share group (KIP-932) as ShareGroupDescribe tells it (Kafka's ``ShareGroupDescription``)."""
    group_id: str
    state: str
    members: tuple[ShareMemberDescription, ...]
    coordinator: Node
    group_epoch: int
    assignment_epoch: int


@dataclass(frozen=True)
class SharePartitionOffsetInfo:
    """A share-partition's start offset as DescribeShareGroupOffsets tells it (Kafka's
    ``SharePartitionOffsetInfo``); None where the broker answers -1 (unknown, or before v1's Lag)."""
    start_offset: int
    leader_epoch: int | None
    lag: int | None


@dataclass(frozen=True)
class TransactionListing:
    """A transactional id as ListTransactions tells it (Kafka's ``TransactionListing``)."""
    transactional_id: str
    producer_id: int
    state: str                  # Kafka's TransactionState name: "Ongoing", "CompleteCommit", ...


@dataclass(frozen=True)
class TransactionDescription:
    """A transactional id as DescribeTransactions tells it (Kafka's ``TransactionDescription``)."""
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None       # None: no transaction open (-1)
    topic_partitions: tuple[TP, ...]            # sorted


@dataclass(frozen=True)
class Committed:
    offset: int
    leader_epoch: int | None
    metadata: str


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True)
class ConfigEntry:
    """One config of a resource as DescribeConfigs tells it (Kafka's ``ConfigEntry``)."""
    name: str
    value: str | None
    source: str                 # CONFIG_SOURCES' name ("DYNAMIC_GROUP_CONFIG", ...; "UNKNOWN")
    sensitive: bool
    read_only: bool
    synonyms: tuple[tuple[str, str | None, str], ...] = ()     # (name, value, source), most specific first


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """"host:port,host2:port2" -> [(host, port), ...] (IPv6 literals in brackets)."""
    out = []
    for item in servers.split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise AdminError(f"Invalid url in bootstrap.servers: {item}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise AdminError("No resolvable bootstrap urls given in bootstrap.servers")
    return out


def pick_version(api_key: int, broker: Mapping[int, tuple[int, int]]) -> int:
    """The highest version of api_key that we build, our codec declares and the broker speaks."""
    lo, hi = ADMIN_VERSIONS[api_key]
    codec = APIS[api_key].versions
    lo, hi = max(lo, codec.start), min(hi, codec.stop - 1)
    theirs = broker.get(api_key)
    if theirs is not None:
        lo, hi = max(lo, theirs[0]), min(hi, theirs[1])
    if theirs is None or lo > hi:
        raise KafkaError(_E.UNSUPPORTED_VERSION, f"The broker does not support {APIS[api_key].name} "
                                                 f"versions {ADMIN_VERSIONS[api_key][0]}-{ADMIN_VERSIONS[api_key][1]}")
    return hi


def _code(value: int) -> ErrorCode | int:
    return ErrorCode.lookup(value)


def _reason(exc: BaseException) -> str:
    """An exception in a few words: "Connection refused" rather than "[Errno 111] Connect call failed ..."."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.errno and exc.errno > 0:
        return os.strerror(exc.errno)           # "Connection refused"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror                     # a name that does not resolve: "Name or service not known"
    return str(exc) or type(exc).__name__


# ---------------------------------------------------------------------------------- the client
class AdminClient:
    def __init__(self, bootstrap_servers: str, *, client_id: str = "groupcoord-admin", timeout_ms: int = 30_000):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.client_id = client_id
        self.timeout_ms = timeout_ms
        self._deadline = 0.0
        self._conns: dict[tuple[str, int], BrokerConnection] = {}
        self._coordinators: dict[tuple[int, str], Node] = {}     # (key type, key) -> its coordinator

    # ---- time -----------------------------------------------------------------------------
    def _start(self) -> None:
        """Each public call has timeout_ms from its start."""
        self._deadline = time.monotonic() + self.timeout_ms / 1000

    def _remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    async def _retrying(self, what: str, attempt: Callable):
        """Run attempt() until it returns; a _Retry, a lost connection or a request time-out
        means: wait the back-off and try again, until the call's deadline."""
        while True:
            try:
                return await attempt()
            except (_Retry, ConnectionError, OSError, TimeoutError) as exc:
                reason = _reason(exc)
            if self._remaining() <= RETRY_BACKOFF_S:
                raise AdminError(f"Timed out after {self.timeout_ms} ms waiting for {what} (last: {reason})")
            await asyncio.sleep(RETRY_BACKOFF_S)

    # ---- connections ----------------------------------------------------------------------
    async def _connect(self, host: str, port: int) -> BrokerConnection:
        conn = self._conns.get((host, port))
        if conn is not None and not conn.closed:
            return conn
        conn = BrokerConnection(host, port, client_id=self.client_id)
        try:
            await conn.connect(timeout=max(self._remaining(), 0.001))
        except BaseException:
            conn.close()
            raise
        self._conns[(host, port)] = conn
        return conn

    async def _any_broker(self) -> BrokerConnection:
        """A connection to a bootstrap server (the first that answers)."""
        for host, port in self.bootstrap:
            conn = self._conns.get((host, port))
            if conn is not None and not conn.closed:
                return conn
        problems = []
        for host, port in self.bootstrap:
            try:
                return await self._connect(host, port)
            except (OSError, ConnectionError, TimeoutError, DecodeError) as exc:
                problems.append(f"{host}:{port} ({_reason(exc)})")
        raise AdminError("Cannot connect to the bootstrap server " + ", ".join(problems))

    async def _send(self, conn: BrokerConnection, api_key: int, build) -> tuple[int, dict]:
        """One request at the negotiated version; build: a body, or a function of the version."""
        version = pick_version(api_key, conn.api_versions)
        body = build(version) if callable(build) else build
        try:
            async with asyncio.timeout(max(self._remaining(), 0.001)):
                return version, await conn.request(api_key, version, body)
        except TimeoutError:
            conn.close()
            raise

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    async def __aenter__(self) -> "AdminClient":
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    # ---- metadata -------------------------------------------------------------------------
    async def _metadata(self, topics: list[str] | None) -> tuple[dict[int, Node], dict]:
        async def attempt():
            conn = await self._any_broker()
            _, resp = await self._send(conn, METADATA, {
                "topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False})
            return resp
        resp = await self._retrying("Metadata", attempt)
        brokers = {b["node_id"]: Node(b["node_id"], b["host"], b["port"]) for b in resp["brokers"]}
        return brokers, {t["name"]: t for t in resp["topics"]}

    async def brokers(self) -> dict[int, Node]:
        self._start()
        brokers, _ = await self._metadata([])
        return brokers

    async def describe_topics(self, names: Iterable[str] | None = None) -> dict[str, TopicDescription | KafkaError]:
        """The topics named (every topic when None): a description, or the topic's error."""
        self._start()
        _, topics = await self._metadata(None if names is None else list(names))
        out: dict[str, TopicDescription | KafkaError] = {}
        for name, t in topics.items():
            code = t["error_code"]
            if code and not (code == _E.LEADER_NOT_AVAILABLE and t["partitions"]):
                out[name] = KafkaError(code)
                continue
            parts = tuple(sorted((
                PartitionInfo(p["partition_index"], p["leader_id"] if p["leader_id"] >= 0 else None,
                              tuple(p["replica_nodes"]), tuple(p["isr_nodes"]))
                for p in t["partitions"]), key=lambda p: p.partition))
            out[name] = TopicDescription(name, t.get("topic_id") or uuid.UUID(int=0), bool(t.get("is_internal")),
                                         parts)
        return out

    # ---- topics ---------------------------------------------------------------------------
    async def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1,
                           configs: Mapping[str, str] | None = None) -> None:
        """CreateTopics for one topic; the broker's error as a KafkaError with its message."""
        self._start()

        def build(v: int) -> dict:
            return {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                                "assignments": [],
                                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
                    "timeout_ms": int(self._remaining() * 1000), "validate_only": False}

        async def attempt():
            conn = await self._any_broker()
            _, resp = await self._send(conn, CREATE_TOPICS, build)
            return resp["topics"][0]
        result = await self._retrying("CreateTopics", attempt)
        if result["error_code"]:
            raise KafkaError(result["error_code"], result.get("error_message"))

    async def create_partitions(self, name: str, total: int,
                                assignments: list[list[int]] | None = None) -> None:
        """CreatePartitions of one topic up to ``total`` partitions (``assignments``: the brokers of
        each new partition); the broker's error as a KafkaError with its message."""
        self._start()

        async def attempt():
            conn = await self._any_broker()
            _, resp = await self._send(conn, CREATE_PARTITIONS, {
                "topics": [{"name": name, "count": total, "assignments": None if assignments is None else
                            [{"broker_ids": list(b)} for b in assignments]}],
                "timeout_ms": int(self._remaining() * 1000), "validate_only": False})
            return resp["results"][0]
        result = await self._retrying("CreatePartitions", attempt)
        if result["error_code"]:
            raise KafkaError(result["error_code"], result.get("error_message"))

    async def delete_topics(self, names: list[str]) -> dict[str, KafkaError | None]:
        self._start()

        def build(v: int) -> dict:
            timeout = int(self._remaining() * 1000)
            if v >= 6:
                return {"topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names], "timeout_ms": timeout}
            return {"topic_names": names, "timeout_ms": timeout}

        async def attempt():
            conn = await self._any_broker()
            _, resp = await self._send(conn, DELETE_TOPICS, build)
            return resp["responses"]
        out = {}
        for r in await self._retrying("DeleteTopics", attempt):
            out[r["name"]] = KafkaError(r["error_code"], r.get("error_message")) if r["error_code"] else None
        return out

    # ---- configs --------------------------------------------------------------------------
    async def _config_broker(self, resource_type: int, name: str) -> BrokerConnection:
        """A broker's own configs are asked of that broker, the rest of any (as Kafka's Admin does)."""
        if resource_type in (RESOURCE_TYPES["brokers"], RESOURCE_TYPES["broker-loggers"]) and name:
            brokers, _ = await self._metadata([])
            node = brokers.get(int(name))
            if node is not None:
                return await self._connect(node.host, node.port)
        return await self._any_broker()

    async def describe_configs(self, resource_type: int, name: str, *,
                               synonyms: bool = True) -> list[ConfigEntry]:
        """DescribeConfigs of one resource (a ConfigResource.Type and its name): its configs, or the
        resource's error as a KafkaError with the broker's message."""
        self._start()

        async def attempt():
            conn = await self._config_broker(resource_type, name)
            _, resp = await self._send(conn, DESCRIBE_CONFIGS, {
                "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
                "include_synonyms": synonyms, "include_documentation": False})
            return resp["results"][0]
        result = await self._retrying("DescribeConfigs", attempt)
        if result["error_code"]:
            raise KafkaError(result["error_code"], result.get("error_message"))
        return [ConfigEntry(c["name"], c["value"], CONFIG_SOURCES.get(c["config_source"], "UNKNOWN"),
                            bool(c["is_sensitive"]), bool(c["read_only"]),
                            tuple((s["name"], s["value"], CONFIG_SOURCES.get(s["source"], "UNKNOWN"))
                                  for s in c["synonyms"]))
                for c in result["configs"]]

    async def incremental_alter_configs(self, resource_type: int, name: str, set_configs: Mapping[str, str],
                                        delete_configs: Iterable[str] = (), *, validate_only: bool = False) -> None:
        """IncrementalAlterConfigs of one resource: the deletions, then the values set (SET), in the
        order kafka-configs.sh sends them. The broker's error as a KafkaError with its message."""
        self._start()
        ops = ([{"name": k, "config_operation": DELETE_CONFIG, "value": ""} for k in delete_configs]
               + [{"name": k, "config_operation": SET_CONFIG, "value": v} for k, v in set_configs.items()])

        async def attempt():
            conn = await self._config_broker(resource_type, name)
            _, resp = await self._send(conn, INCREMENTAL_ALTER_CONFIGS, {
                "resources": [{"resource_type": resource_type, "resource_name": name, "configs": ops}],
                "validate_only": validate_only})
            return resp["responses"][0]
        result = await self._retrying("IncrementalAlterConfigs", attempt)
        if result["error_code"]:
            raise KafkaError(result["error_code"], result.get("error_message"))

    async def list_config_resources(self, resource_types: Iterable[int]) -> list[tuple[str, int]]:
        """ListConfigResources v1 (KIP-1142): (name, type) of the resources with configs of those
        types (a group is listed once a dynamic config is set for it)."""
        self._start()

        async def attempt():
            conn = await self._any_broker()
            _, resp = await self._send(conn, LIST_CONFIG_RESOURCES, {"resource_types": list(resource_types)})
            return resp
        resp = await self._retrying("ListConfigResources", attempt)
        if resp["error_code"]:
            raise KafkaError(resp["error_code"])
        return [(r["resource_name"], r["resource_type"]) for r in resp["config_resources"]]

    # ---- log offsets ----------------------------------------------------------------------
    async def list_offsets(self, partitions: Iterable[TP], spec: int) -> dict[TP, int]:
        """ListOffsets of each partition at its leader: spec EARLIEST, LATEST or a timestamp (ms).
        The offset per partition (-1: no record at or after the timestamp); partitions that
        do not exist, or have no leader, are left out (Kafka's tool shows them as unknown)."""
        self._start()
        wanted = set(partitions)
        found: dict[TP, int] = {}

        async def attempt():
            pending = wanted - set(found)
            brokers, topics = await self._metadata(sorted({tp.topic for tp in pending}))
            by_leader: dict[int, list[TP]] = {}
            for tp in pending:
                t = topics.get(tp.topic)
                leader = None
                if t is not None and not (t["error_code"] and not t["partitions"]):
                    leader = next((p["leader_id"] for p in t["partitions"] if p["partition_index"] == tp.partition),
                                  None)
                if leader is None or leader < 0 or leader not in brokers:
                    found.setdefault(tp, None)       # unknown partition, or no leader
                    continue
                by_leader.setdefault(leader, []).append(tp)
            moved = False
            for leader, tps in by_leader.items():
                by_topic: dict[str, list] = {}
                for tp in sorted(tps):
                    by_topic.setdefault(tp.topic, []).append(
                        {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": spec,
                         "max_num_offsets": 1})
                node = brokers[leader]
                conn = await self._connect(node.host, node.port)
                _, resp = await self._send(conn, LIST_OFFSETS, {
                    "replica_id": -1, "isolation_level": 0, "timeout_ms": int(self._remaining() * 1000),
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]})
                for t in resp["topics"]:
                    for p in t["partitions"]:
                        tp = TP(t["name"], p["partition_index"])
                        code = _code(p["error_code"])
                        if code == _E.NONE:
                            found[tp] = answered_offset(p)
                        elif code in _LEADER_MOVED:
                            moved = True
                        else:
                            found[tp] = None
            if moved:
                raise _Retry("a partition's leader moved")
        await self._retrying("ListOffsets", attempt)
        return {tp: offset for tp, offset in found.items() if offset is not None}

    # ---- groups: coordinators ---------------------------------------------------------------
    async def find_coordinator(self, key: str, key_type: int = GROUP_KEY) -> Node:
        """The coordinator of a group (key type 0) or a transactional id (key type 1), remembered
        until it moves."""
        node = self._coordinators.get((key_type, key))
        if node is not None:
            return node

        def build(v: int) -> dict:
            if v >= 4:
                return {"key_type": key_type, "coordinator_keys": [key]}
            if key_type != GROUP_KEY and v < 1:
                raise KafkaError(_E.UNSUPPORTED_VERSION, "The broker does not support FindCoordinator of other "
                                                         "than groups (FindCoordinator v1)")
            return {"key": key, "key_type": key_type}
        conn = await self._any_broker()
        version, resp = await self._send(conn, FIND_COORDINATOR, build)
        entry = resp["coordinators"][0] if version >= 4 else resp
        code = _code(entry["error_code"])
        if code != _E.NONE:
            if isinstance(code, ErrorCode) and code.retriable:
                raise _Retry(f"FindCoordinator: {code.name}")
            raise KafkaError(code, entry.get("error_message") or None)
        node = self._coordinators[(key_type, key)] = Node(entry["node_id"], entry["host"], entry["port"])
        return node

    async def _group_request(self, group_id: str, api_key: int, build, error_of, *,
                             key_type: int = GROUP_KEY) -> tuple[int, dict, Node]:
        """One request to the coordinator of a group (or, key_type 1, of a transactional id), again at
        the (new) coordinator while the answer (error_of(resp, version)) says it moved or is loading."""
        what = "group" if key_type == GROUP_KEY else "transactional id"

        async def attempt():
            node = await self.find_coordinator(group_id, key_type)
            try:
                conn = await self._connect(node.host, node.port)
                version, resp = await self._send(conn, api_key, build)
            except (ConnectionError, OSError, TimeoutError):
                self._coordinators.pop((key_type, group_id), None)
                raise
            code = _code(error_of(resp, version))
            if code in _FIND_AGAIN:
                self._coordinators.pop((key_type, group_id), None)
                raise _Retry(f"{APIS[api_key].name}: {code.name}")
            if code == _E.COORDINATOR_LOAD_IN_PROGRESS:
                raise _Retry(f"{APIS[api_key].name}: {code.name}")
            return version, resp, node
        return await self._retrying(f"{APIS[api_key].name} of {what} {group_id}", attempt)

    # ---- groups -----------------------------------------------------------------------------
    async def list_groups(self, states: Iterable[str] | None = None, types: Iterable[str] | None = None,
                          protocol_types: Iterable[str] | None = ("", CONSUMER_PROTOCOL)) -> list[GroupListing]:
        """ListGroups at every broker, merged (a broker lists the groups it coordinates). As
        ``ListGroupsOptions.forConsumerGroups()``: only protocol types "" and "consumer" (None:
        every group); states and types filter at the brokers (ListGroups v4+ and v5+)."""
        self._start()
        states = sorted(states or ())
        types = sorted(types or ())
        brokers, _ = await self._metadata([])
        out: dict[str, GroupListing] = {}
        for node in sorted(brokers.values(), key=lambda n: n.node_id):
            async def attempt(node=node):
                conn = await self._connect(node.host, node.port)

                def build(v: int) -> dict:
                    if states and v < 4:
                        raise KafkaError(_E.UNSUPPORTED_VERSION,
                                         "The broker does not support listing groups by state (ListGroups v4)")
                    return {"states_filter": states, "types_filter": types}
                version, resp = await self._send(conn, LIST_GROUPS, build)
                code = _code(resp["error_code"])
                if code == _E.COORDINATOR_LOAD_IN_PROGRESS or code == _E.COORDINATOR_NOT_AVAILABLE:
                    raise _Retry(f"ListGroups at node {node.node_id}: {code.name}")
                if code != _E.NONE:
                    raise KafkaError(code)
                return version, resp["groups"]
            version, groups = await self._retrying(f"ListGroups at node {node.node_id}", attempt)
            for g in groups:
                if protocol_types is not None and g["protocol_type"] not in protocol_types:
                    continue
                out[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"],
                                                  g.get("group_state") if version >= 4 else None,
                                                  g.get("group_type") if version >= 5 else None)
        return sorted(out.values(), key=lambda g: g.group_id)

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """DescribeGroups at each group's coordinator, assignments decoded. A group of another
        protocol type than "consumer" raises AdminError, as Kafka's describeConsumerGroups fails."""
        self._start()
        out = {}
        for group_id in group_ids:
            def error_of(resp, version, group_id=group_id):
                return resp["groups"][0]["error_code"]
            _, resp, node = await self._group_request(
                group_id, DESCRIBE_GROUPS, {"groups": [group_id], "include_authorized_operations": False}, error_of)
            g = resp["groups"][0]
            code = _code(g["error_code"])
            if code == _E.GROUP_ID_NOT_FOUND:
                # perhaps a consumer group of KIP-848 ("not a classic group"): ConsumerGroupDescribe
                out[group_id] = await self._describe_consumer_group(group_id) or \
                    GroupDescription(group_id, "Dead", "", "", (), node)
                continue
            if code != _E.NONE:
                raise KafkaError(code, g.get("error_message") or None)
            protocol_type = g["protocol_type"]
            if protocol_type not in ("", CONSUMER_PROTOCOL):
                raise AdminError(f"GroupId {group_id} is not a consumer group ({protocol_type}).")
            members = []
            for m in g["members"]:
                assignment: tuple[TP, ...] = ()
                if m["member_assignment"]:
                    decoded = decode_assignment(m["member_assignment"])
                    assignment = tuple(TP(t, p) for t, p in flatten_partitions(decoded["assigned_partitions"]))
                members.append(MemberDescription(m["member_id"], m.get("group_instance_id"), m["client_id"],
                                                 m["client_host"], assignment))
            out[group_id] = GroupDescription(group_id, g["group_state"], protocol_type, g["protocol_data"],
                                             tuple(members), node)
        return out

    async def _describe_consumer_group(self, group_id: str) -> GroupDescription | None:
        """ConsumerGroupDescribe of a group DescribeGroups did not find; None if the broker has no
        such group (or no such API)."""
        def error_of(resp, version):
            return resp["groups"][0]["error_code"]
        try:
            _, resp, node = await self._group_request(
                group_id, CONSUMER_GROUP_DESCRIBE, {"group_ids": [group_id], "include_authorized_operations": False},
                error_of)
        except KafkaError as exc:
            if exc.code == _E.UNSUPPORTED_VERSION:
                return None
            raise
        g = resp["groups"][0]
        code = _code(g["error_code"])
        if code in (_E.GROUP_ID_NOT_FOUND, _E.UNSUPPORTED_VERSION):     # (the protocol switched off)
            return None
        if code != _E.NONE:
            raise KafkaError(code, g.get("error_message") or None)
        def partitions(assignment: dict) -> tuple[TP, ...]:
            return tuple(TP(t["topic_name"], p) for t in assignment["topic_partitions"] for p in t["partitions"])
        members = tuple(
            MemberDescription(m["member_id"], m.get("instance_id"), m["client_id"], m["client_host"],
                              partitions(m["assignment"]), m["member_epoch"], partitions(m["target_assignment"]))
            for m in g["members"])
        return GroupDescription(group_id, g["group_state"], CONSUMER_PROTOCOL, g["assignor_name"], members, node,
                                g["group_epoch"], g["assignment_epoch"])

    async def committed_offsets(self, group_id: str) -> dict[TP, Committed]:
        """Every offset the group has committed (OffsetFetch with every topic)."""
        self._start()

        def build(v: int) -> dict:
            if v >= 8:
                return {"groups": [{"group_id": group_id, "member_id": None, "member_epoch": -1, "topics": None}],
                        "require_stable": False}
            return {"group_id": group_id, "topics": None, "require_stable": False}

        def error_of(resp, v):
            if v >= 8:
                return resp["groups"][0]["error_code"]
            return resp.get("error_code", 0)
        version, resp, _ = await self._group_request(group_id, OFFSET_FETCH, build, error_of)
        if version >= 8:
            code, topics = resp["groups"][0]["error_code"], resp["groups"][0]["topics"]
        else:
            code, topics = resp.get("error_code", 0), resp["topics"]
        if code and code != _E.GROUP_ID_NOT_FOUND:
            raise KafkaError(code)
        out = {}
        for t in topics or ():
            for p in t["partitions"]:
                if p["error_code"]:
                    raise KafkaError(p["error_code"], f"{t['name']}-{p['partition_index']}: "
                                                      f"{ErrorCode.lookup(p['error_code'])!s}")
                if p["committed_offset"] >= 0:
                    epoch = p.get("committed_leader_epoch", -1)
                    out[TP(t["name"], p["partition_index"])] = Committed(
                        p["committed_offset"], epoch if epoch is not None and epoch >= 0 else None,
                        p.get("metadata") or "")
        return out

    async def alter_offsets(self, group_id: str, offsets: Mapping[TP, int]) -> dict[TP, ErrorCode | int]:
        """OffsetCommit outside any generation (as Kafka's alterConsumerGroupOffsets): the
        coordinator takes it only while the group is Empty (or unknown). Error per partition."""
        self._start()
        by_topic: dict[str, list] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset, "committed_leader_epoch": -1,
                "commit_timestamp": -1, "committed_metadata": ""})
        body = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

        def error_of(resp, v):
            return next((p["error_code"] for t in resp["topics"] for p in t["partitions"] if p["error_code"]), 0)
        _, resp, _ = await self._group_request(group_id, OFFSET_COMMIT, body, error_of)
        return {TP(t["name"], p["partition_index"]): _code(p["error_code"])
                for t in resp["topics"] for p in t["partitions"]}

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode | int]:
        """DeleteGroups at each group's coordinator: the error code per group (NONE: deleted)."""
        self._start()
        out = {}
        for group_id in group_ids:
            def error_of(resp, v):
                return resp["results"][0]["error_code"]
            _, resp, _ = await self._group_request(group_id, DELETE_GROUPS, {"groups_names": [group_id]}, error_of)
            out[group_id] = _code(resp["results"][0]["error_code"])
        return out

    async def delete_offsets(self, group_id: str, partitions: Iterable[TP]
                             ) -> tuple[ErrorCode | int, dict[TP, ErrorCode | int]]:
        """OffsetDelete: the top-level error code and one per partition."""
        self._start()
        by_topic: dict[str, list] = {}
        for tp in sorted(set(partitions)):
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition})
        body = {"group_id": group_id, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        _, resp, _ = await self._group_request(group_id, OFFSET_DELETE, body, lambda resp, v: resp["error_code"])
        return _code(resp["error_code"]), {TP(t["name"], p["partition_index"]): _code(p["error_code"])
                                           for t in resp["topics"] for p in t["partitions"]}


    # ---- share groups (KIP-932) ---------------------------------------------------------------
    async def describe_share_groups(self, group_ids: Iterable[str]
                                    ) -> dict[str, ShareGroupDescription | KafkaError]:
        """ShareGroupDescribe at each group's coordinator: a description, or the group's error with the
        broker's message (GROUP_ID_NOT_FOUND: no such group, or not a share group), as Kafka's
        DescribeShareGroupsHandler fails the group's future."""
        self._start()
        out: dict[str, ShareGroupDescription | KafkaError] = {}
        for group_id in dict.fromkeys(group_ids):
            def error_of(resp, version):
                return resp["groups"][0]["error_code"]
            _, resp, node = await self._group_request(
                group_id, SHARE_GROUP_DESCRIBE, {"group_ids": [group_id], "include_authorized_operations": False},
                error_of)
            g = resp["groups"][0]
            if g["error_code"]:
                out[group_id] = KafkaError(g["error_code"], g.get("error_message"))
                continue
            members = tuple(
                ShareMemberDescription(
                    m["member_id"], m.get("rack_id"), m["client_id"], m["client_host"],
                    tuple(sorted({TP(t["topic_name"], p) for t in m["assignment"]["topic_partitions"]
                                  for p in t["partitions"]})),
                    m["member_epoch"])
                for m in g["members"])
            out[group_id] = ShareGroupDescription(group_id, g["group_state"], members, node, g["group_epoch"],
                                                  g["assignment_epoch"])
        return out

    async def list_share_group_offsets(self, group_id: str, partitions: Iterable[TP] | None = None
                                       ) -> dict[TP, SharePartitionOffsetInfo | None]:
        """DescribeShareGroupOffsets of one group (Kafka's ``listShareGroupOffsets``): every share-partition
        whose state the group has initialized (partitions None), or those asked. None for a partition
        without a start offset (-1); partitions answered with an error are left out, as Kafka's
        ListShareGroupOffsetsHandler skips them. The group's error raises KafkaError."""
        self._start()
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(set(partitions)):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]
        body = {"groups": [{"group_id": group_id, "topics": topics}]}

        def error_of(resp, version):
            return resp["groups"][0]["error_code"]
        _, resp, _ = await self._group_request(group_id, DESCRIBE_SHARE_GROUP_OFFSETS, body, error_of)
        g = resp["groups"][0]
        if g["error_code"]:
            raise KafkaError(g["error_code"], g.get("error_message"))
        out: dict[TP, SharePartitionOffsetInfo | None] = {}
        for t in g["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    continue
                tp = TP(t["topic_name"], p["partition_index"])
                if p["start_offset"] < 0:
                    out[tp] = None
                    continue
                lag = p.get("lag", -1)
                out[tp] = SharePartitionOffsetInfo(p["start_offset"],
                                                   p["leader_epoch"] if p["leader_epoch"] >= 0 else None,
                                                   lag if lag is not None and lag >= 0 else None)
        return out

    async def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TP, int]
                                        ) -> dict[TP, KafkaError | None]:
        """AlterShareGroupOffsets (Kafka's ``alterShareGroupOffsets``): the start offsets of an empty
        share group's share-partitions. The error per partition (None: altered); an error of the whole
        request is every partition's, as AlterShareGroupOffsetsHandler answers it (REBALANCE_IN_PROGRESS
        and COORDINATOR_LOAD_IN_PROGRESS are retried)."""
        self._start()
        by_topic: dict[str, list] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "start_offset": offset})
        body = {"group_id": group_id, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]}
        _, resp, _ = await self._group_request(group_id, ALTER_SHARE_GROUP_OFFSETS, body, _share_group_error)
        if resp["error_code"]:
            error = KafkaError(resp["error_code"], resp.get("error_message"))
            return {tp: error for tp in sorted(offsets)}
        return {TP(t["topic_name"], p["partition_index"]):
                KafkaError(p["error_code"], p.get("error_message")) if p["error_code"] else None
                for t in resp["responses"] for p in t["partitions"]}

    async def delete_share_group_offsets(self, group_id: str, topics: Iterable[str]
                                         ) -> tuple[KafkaError | None, dict[str, KafkaError | None]]:
        """DeleteShareGroupOffsets (Kafka's ``deleteShareGroupOffsets``): an empty share group's
        share-partition states of whole topics. The request's error (None: none) and each answered
        topic's (None: deleted); REBALANCE_IN_PROGRESS and COORDINATOR_LOAD_IN_PROGRESS are retried."""
        self._start()
        body = {"group_id": group_id, "topics": [{"topic_name": t} for t in dict.fromkeys(topics)]}
        _, resp, _ = await self._group_request(group_id, DELETE_SHARE_GROUP_OFFSETS, body, _share_group_error)
        if resp["error_code"]:
            return KafkaError(resp["error_code"], resp.get("error_message")), {}
        return None, {t["topic_name"]: KafkaError(t["error_code"], t.get("error_message")) if t["error_code"]
                      else None for t in resp["responses"]}

    # ---- transactions -------------------------------------------------------------------------
    async def list_transactions(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int = -1, pattern: str | None = None
                                ) -> dict[int, list[TransactionListing]]:
        """ListTransactions at every broker (each lists the transactional ids it coordinates), as Kafka's
        ``listTransactions(...).allByBrokerId()``: the listings by broker id. Filters: states (Kafka's
        names), producer ids, open for longer than ``duration_ms`` (-1: any; v1+), ids matching
        ``pattern`` (a regular expression; v2+). COORDINATOR_LOAD_IN_PROGRESS is retried; any other error
        of a broker raises KafkaError, as Kafka's ListTransactionsHandler fails the broker's future."""
        self._start()
        body = {"state_filters": list(states), "producer_id_filters": list(producer_ids),
                "duration_filter": duration_ms, "transactional_id_pattern": pattern or None}

        def build(v: int) -> dict:
            # ListTransactionsRequest.Builder.build refuses filters the version lacks
            if duration_ms >= 0 and v < 1:
                raise KafkaError(_E.UNSUPPORTED_VERSION, "Duration filter can be set only when using API version 1 "
                                                         "or higher.")
            if pattern and v < 2:
                raise KafkaError(_E.UNSUPPORTED_VERSION, "Transactional ID pattern filter can be set only when "
                                                         "using API version 2 or higher.")
            return body
        brokers, _ = await self._metadata([])
        out: dict[int, list[TransactionListing]] = {}
        for node in sorted(brokers.values(), key=lambda n: n.node_id):
            async def attempt(node=node):
                conn = await self._connect(node.host, node.port)
                _, resp = await self._send(conn, LIST_TRANSACTIONS, build)
                code = _code(resp["error_code"])
                if code == _E.COORDINATOR_LOAD_IN_PROGRESS:
                    raise _Retry(f"ListTransactions at node {node.node_id}: {code.name}")
                if code == _E.COORDINATOR_NOT_AVAILABLE:
                    raise KafkaError(code, f"ListTransactions request sent to broker {node.node_id} failed because "
                                           "the coordinator is shutting down")
                if code != _E.NONE:
                    raise KafkaError(code, f"ListTransactions request sent to broker {node.node_id} failed with "
                                           "an unexpected exception")
                return resp["transaction_states"]
            states_of = await self._retrying(f"ListTransactions at node {node.node_id}", attempt)
            out[node.node_id] = [TransactionListing(t["transactional_id"], t["producer_id"], t["transaction_state"])
                                 for t in states_of]
        return out

    async def describe_transactions(self, transactional_ids: Iterable[str]
                                    ) -> dict[str, TransactionDescription | KafkaError]:
        """DescribeTransactions of each id at its coordinator (FindCoordinator key type 1): a description,
        or the id's error with Kafka's message (TRANSACTIONAL_ID_NOT_FOUND: no such id), as Kafka's
        DescribeTransactionsHandler fails the id's future. NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE
        find the coordinator again; COORDINATOR_LOAD_IN_PROGRESS is retried."""
        self._start()
        out: dict[str, TransactionDescription | KafkaError] = {}
        for txn_id in dict.fromkeys(transactional_ids):
            def error_of(resp, version, txn_id=txn_id):
                return _state_of(resp, txn_id)["error_code"]
            _, resp, node = await self._group_request(txn_id, DESCRIBE_TRANSACTIONS, {"transactional_ids": [txn_id]},
                                                      error_of, key_type=TRANSACTION_KEY)
            t = _state_of(resp, txn_id)
            code = _code(t["error_code"])
            if code != _E.NONE:
                why = _DESCRIBE_TRANSACTIONS_ERRORS.get(code, "failed due to unexpected error")
                out[txn_id] = KafkaError(code, f"DescribeTransactions request for transactionalId `{txn_id}` {why}")
                continue
            start = t["transaction_start_time_ms"]
            out[txn_id] = TransactionDescription(
                node.node_id, t["transaction_state"], t["producer_id"], t["producer_epoch"],
                t["transaction_timeout_ms"], start if start >= 0 else None,
                tuple(sorted({TP(x["topic"], p) for x in t["topics"] for p in x["partitions"]})))
        return out

    async def abort_transaction(self, partition: TP, producer_id: int, producer_epoch: int,
                                coordinator_epoch: int) -> None:
        """Abort a hanging transaction of one partition (Kafka's ``abortTransaction`` with an
        ``AbortTransactionSpec``): WriteTxnMarkers with an abort marker to the partition's leader, found
        again while it moves (NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE, BROKER_NOT_AVAILABLE,
        UNKNOWN_TOPIC_OR_PARTITION, as AbortTransactionHandler retries them); any other error raises
        KafkaError. The broker must let the principal ALTER (or CLUSTER_ACTION) the cluster."""
        self._start()
        spec = (f"AbortTransactionSpec(topicPartition={partition.topic}-{partition.partition}, "
                f"producerId={producer_id}, producerEpoch={producer_epoch}, coordinatorEpoch={coordinator_epoch})")
        body = {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": False,
                             "topics": [{"name": partition.topic, "partition_indexes": [partition.partition]}],
                             "coordinator_epoch": coordinator_epoch, "transaction_version": 0}]}

        async def attempt():
            brokers, topics = await self._metadata([partition.topic])
            t = topics.get(partition.topic)
            leader = next((p["leader_id"] for p in (t or {}).get("partitions", ())
                           if p["partition_index"] == partition.partition), -1)
            if leader not in brokers:
                raise _Retry(f"no leader of {partition.topic}-{partition.partition}")
            conn = await self._connect(brokers[leader].host, brokers[leader].port)
            _, resp = await self._send(conn, WRITE_TXN_MARKERS, body)
            codes = [p["error_code"] for m in resp["markers"] if m["producer_id"] == producer_id
                     for x in m["topics"] if x["name"] == partition.topic
                     for p in x["partitions"] if p["partition_index"] == partition.partition]
            if len(codes) != 1:
                raise AdminError(f"WriteTxnMarkers response included unexpected entries: {resp['markers']} "
                                 f"(expected to find exactly one entry with {spec})")
            code = _code(codes[0])
            if code in _ABORT_RETRIED:
                raise _Retry(f"WriteTxnMarkers: {code.name}")
            return code
        code = await self._retrying(f"WriteTxnMarkers of {partition.topic}-{partition.partition}", attempt)
        if code == _E.INVALID_PRODUCER_EPOCH:
            raise KafkaError(code, f"WriteTxnMarkers request with {spec} failed due an invalid producer epoch")
        if code == _E.TRANSACTION_COORDINATOR_FENCED:
            raise KafkaError(code, f"WriteTxnMarkers request with {spec} failed since the provided coordinator "
                                   f"epoch {coordinator_epoch} has been fenced by the active coordinator")
        if code == _E.CLUSTER_AUTHORIZATION_FAILED:
            raise KafkaError(code, f"WriteTxnMarkers request with {spec} failed due to cluster authorization error")
        if code != _E.NONE:
            raise KafkaError(code, f"WriteTxnMarkers request with {spec} failed due to unexpected error: "
                                   f"{code.message if isinstance(code, ErrorCode) else f'error code {code}'}")


#: DescribeTransactionsHandler's messages of an id's errors (after "DescribeTransactions request for
#: transactionalId `X` ")
_DESCRIBE_TRANSACTIONS_ERRORS = {
    _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "failed due to authorization failure",
    _E.TRANSACTIONAL_ID_NOT_FOUND: "failed because the ID could not be found",
}
#: the WriteTxnMarkers errors AbortTransactionHandler retries after finding the leader again
_ABORT_RETRIED = (_E.NOT_LEADER_OR_FOLLOWER, _E.REPLICA_NOT_AVAILABLE, _E.BROKER_NOT_AVAILABLE,
                  _E.UNKNOWN_TOPIC_OR_PARTITION)


def _state_of(resp: dict, transactional_id: str) -> dict:
    """The DescribeTransactions entry of one id."""
    for t in resp["transaction_states"]:
        if t["transactional_id"] == transactional_id:
            return t
    raise AdminError(f"DescribeTransactions response included no entry for transactionalId `{transactional_id}`")


def _share_group_error(resp: dict, version: int) -> int:
    """The top-level error of AlterShareGroupOffsets and DeleteShareGroupOffsets, REBALANCE_IN_PROGRESS
    retried as COORDINATOR_LOAD_IN_PROGRESS is (as Kafka's handlers retry both)."""
    code = resp["error_code"]
    return int(_E.COORDINATOR_LOAD_IN_PROGRESS) if code == _E.REBALANCE_IN_PROGRESS else code


__all__ = [
    "ADMIN_VERSIONS", "AdminClient", "AdminError", "Committed", "EARLIEST", "GroupDescription", "GroupListing",
    "LATEST", "MemberDescription", "Node", "PartitionInfo", "ShareGroupDescription", "ShareMemberDescription",
    "SharePartitionOffsetInfo", "TopicDescription", "TransactionDescription", "TransactionListing", "parse_bootstrap",
    "pick_version",
]
