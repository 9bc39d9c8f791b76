"""Fleet scenarios: what a simulated fleet runs, read from TOML.

A scenario declares topics, groups of members and a timeline of events. The same scenario runs
in real time (``groupcoord fleet``) and in virtual time (``groupcoord simulate``).

TOML format (every key but ``[topics]`` and ``[[groups]]`` is optional)::

    name = "rolling-restart"        # default: the file's stem
    duration_s = 600                # how long the run lasts (virtual or real seconds)
    seed = 1                        # default seed (--seed overrides it)

    [coordinator]                   # the in-process coordinator (simulate, or fleet without --bootstrap)
    nodes = 1                       # emulated brokers
    profile = "default"             # broker config profile: "default" (Kafka's) or "test"
    config = { "group.initial.rebalance.delay.ms" = 0 }    # broker configs by Kafka's names

    [network]                       # simulate only
    latency = { dist = "uniform", min_ms = 1, max_ms = 3 } # one way, per message; dists:
              # fixed {ms}, uniform {min_ms, max_ms}, normal {mean_ms, stddev_ms},
              # lognormal {median_ms, sigma}, exponential {mean_ms}; always >= 0, rounded to ms
    loss = 0.0                      # probability that a request or a response is lost
    connect_ms = 0                  # extra time to open a connection (on top of 2 latencies)
    codec = false                   # encode and decode every message through the codec

    [topics]                        # name = partitions
    orders = 12

    [[groups]]
    name = "g0"                     # group id; with count > 1 the ids are g0-0, g0-1, ...
    count = 1                       # identical groups
    topics = ["orders"]             # the subscription
    members = 3                     # members started at t=0
    join_interval_ms = 0            # stagger the initial members (member i starts at i * this)
    group_type = "consumer"         # "consumer" | "share" (KIP-932: a share group, a queue)
    group_protocol = "classic"      # group.protocol: "classic" | "consumer" (KIP-848)
    strategy = "range"              # classic: partition.assignment.strategy, a name or a list
    protocol = "eager"              # classic: "eager" | "cooperative"; default: what the strategy supports
    remote_assignor = "uniform"     # consumer: group.remote.assignor; default: the coordinator's choice
    static = false                  # group.instance.id = "<group>-m<index>"
    session_timeout_ms = 45000      # consumer/share: the group config consumer/share.session.timeout.ms
    heartbeat_interval_ms = 3000    # consumer/share: the group config consumer/share.heartbeat.interval.ms
    max_poll_interval_ms = 300000   # also the rebalance timeout
    request_timeout_ms = 30000
    processing_ms = 100             # the application polls every processing_ms (not in a work queue)
    records_per_poll = 10           # each poll consumes this many records per owned partition (not with job_ms)
    max_poll_records = 500          # max.poll.records
    job_ms = { dist = "exponential", mean_ms = 20 }    # a work queue: the processing time of one record
    callback_ms = 0                 # time the rebalance listener takes per callback
    auto_commit = true              # enable.auto.commit
    auto_commit_interval_ms = 5000
    acknowledgement_mode = "implicit"   # share: share.acknowledgement.mode, "implicit" | "explicit"
    lock_duration_ms = 30000        # share: the group config share.record.lock.duration.ms
    delivery_limit = 5              # share: the group config share.delivery.count.limit (Kafka 4.3)
    config = { "retry.backoff.ms" = 100 }   # any other consumer config by Kafka's name

    [[produce]]                     # a producer appending records to a topic during the run
    topic = "orders"
    rate_per_s = 50                 # records per second (a float is fine)
    start_s = 0
    stop_s = 600                    # default: the run's end
    records = 20000                 # at most this many in all; default: no cap
    batch = 1                       # records per produce request

    [[events]]                      # the timeline; at_s or at_ms
    at_s = 60
    action = "restart"
    group = "g0"                    # a group id, or a [[groups]] name for all its copies;
                                    # omitted: every group
    members = [0, 1]                # member indices; or count = N (picked with the seed);
                                    # omitted: every live member. An index must exist by then
                                    # (the initial members, then those of earlier joins)
    ...

A group with ``group_protocol = "consumer"`` plays Kafka 4's consumer group protocol: its members
send no assignor list (``strategy`` and ``protocol`` are the classic protocol's and are ignored; the
coordinator assigns, with ``remote_assignor`` or its default), and its session timeout and heartbeat
interval are not the members' settings but the group's configs, as ``kafka-configs --entity-type
groups`` sets them: without the keys the coordinator's ``group.consumer.session.timeout.ms`` (45 s)
and ``group.consumer.heartbeat.interval.ms`` (5 s) apply; with them the values must lie within its
``group.consumer.min/max.*`` bounds (Kafka's defaults: session 45 to 60 s, heartbeat 5 to 15 s),
which ``[coordinator] config`` may widen.

A group with ``group_type = "share"`` is a share group (KIP-932, Kafka's KafkaShareConsumer): the
coordinator assigns its members the topics' partitions (group.share.assignors) and several members
may share one partition, each fetch acquiring records under a lock. It has none of
``group_protocol``, ``strategy``, ``protocol``, ``remote_assignor``, ``static``, ``callback_ms``,
``auto_commit`` and ``auto_commit_interval_ms`` (giving one is an error), nor ``records_per_poll``
(its members fetch the topic's records). Its ``session_timeout_ms`` and ``heartbeat_interval_ms``
are the group configs ``share.session.timeout.ms`` and ``share.heartbeat.interval.ms``, as for a
consumer group: without them the coordinator's ``group.share.session.timeout.ms`` (45 s) and
``group.share.heartbeat.interval.ms`` (5 s) apply, with them they must lie within its
``group.share.min/max.*`` bounds (45 to 60 s, 5 to 15 s). So must ``lock_duration_ms``
(``share.record.lock.duration.ms``; default 30 s, bounds 15 to 60 s) and ``delivery_limit``
(``share.delivery.count.limit``, a group config from Kafka 4.3; default 5, bounds 2 to 10); again
``[coordinator] config`` may widen them. ``acknowledgement_mode`` is the members'
``share.acknowledgement.mode``: ``implicit`` (default) acknowledges a poll's records at the next
poll, ``explicit`` has the application acknowledge each record. The coordinator must serve share
groups: Kafka 4.2 and later do; 4.1 with ``share.version = 1``.

A group with ``job_ms`` is a *work queue*: its members fetch the topics' records (what
``[[produce]]`` appends) and the application processes each record of a poll, one after the
other, for a time drawn from ``job_ms``, then polls again (``processing_ms`` plays no part). A
consumer group without ``job_ms`` fetches nothing and counts ``records_per_poll`` as before; a share
group is always a work queue (``job_ms`` default: constant 0, records processed at once). ``job_ms``
is a number (constant) or a table, in milliseconds per record (never negative): ``constant
{ms}``, ``uniform {min_ms, max_ms}``, ``exponential {mean_ms}``, ``lognormal {median_ms, sigma}``
(e^N(ln median, sigma)), ``pareto {scale_ms, alpha}`` (heavy tail: P(X > x) = (scale_ms / x)^alpha
for x >= scale_ms, Python's ``scale_ms * paretovariate(alpha)``; alpha > 0, the mean is infinite
for alpha <= 1). ``max_poll_records`` (``max.poll.records``, Kafka's default 500) caps a poll's
records.

A ``[[produce]]`` entry is a producer appending records to ``topic`` (declared in ``[topics]``)
from ``start_s`` to ``stop_s`` (default and at the latest: the run's end), ``rate_per_s`` records a
second in requests of ``batch`` records at a steady pace (request j at start_s + j * batch /
rate_per_s), until ``records`` in all when given. Record n of a producer (from 0) goes to partition
n mod the topic's partition count at the time (round robin; ``add_partitions`` widens it). Several
entries may write to the same topic, each its own round robin.

Actions and their own keys:

- ``join``: ``count`` new members (default 1), ``interval_ms`` apart.
- ``restart``: a rolling restart; one member after another, ``interval_ms`` apart (default 0),
  each closed gracefully and started again ``down_ms`` later (default 0). Static members keep
  their instance id (and send no LeaveGroup).
- ``crash``: the members die without LeaveGroup; with ``restart_after_ms`` they come back.
- ``leave``: the members close gracefully and stay away.
- ``slow``: for ``duration_ms``, ``kind = "heartbeat"`` freezes the whole client (no requests,
  no heartbeats: a long GC pause) and ``kind = "poll"`` stops the application's polls (the
  member exceeds max.poll.interval.ms when the stall is longer).
- ``subscribe``: the members change their subscription to ``topics``.
- ``add_partitions``: ``topic`` grows to ``partitions``.
- ``move_coordinator``: the offsets-topic partition of ``group`` (a group id) moves to node
  ``node`` (default: the next node).
- ``node_down`` / ``node_up``: ``node`` stops / starts; a stopped node's offsets-topic
  partitions move to the next node that is up.
- ``network_partition`` (simulate only): the members lose their connections and cannot open
  new ones for ``duration_ms``.

Every action that names members (``join``, ``restart``, ``crash``, ``leave``, ``slow``,
``subscribe``, ``network_partition``) acts on share groups as on consumer groups.

API: :func:`load`, :func:`from_dict`, :meth:`Scenario.to_dict`, :func:`apply_overrides`.
Anything invalid raises :class:`ScenarioError` naming the key.
"""
from __future__ import annotations

import copy
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator, Mapping

from groupcoord.client.assignors import ASSIGNORS, RebalanceProtocol
from groupcoord.client.consumer_config import SHARE_GROUP_UNSUPPORTED_CONFIGS
from groupcoord.coordinator.group.assignors import ASSIGNORS as SERVER_ASSIGNORS


class ScenarioError(ValueError):
    """An invalid scenario; the message names the key at fault."""


ACTIONS: dict[str, tuple[str, ...]] = {
    "join": ("group", "count", "interval_ms"),
    "restart": ("group", "members", "count", "interval_ms", "down_ms"),
    "crash": ("group", "members", "count", "restart_after_ms"),
    "leave": ("group", "members", "count"),
    "slow": ("group", "members", "count", "duration_ms", "kind"),
    "subscribe": ("group", "members", "count", "topics"),
    "add_partitions": ("topic", "partitions"),
    "move_coordinator": ("group", "node"),
    "node_down": ("node",),
    "node_up": ("node",),
    "network_partition": ("group", "members", "count", "duration_ms"),
}
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "fixed": ("ms",), "uniform": ("min_ms", "max_ms"), "normal": ("mean_ms", "stddev_ms"),
    "lognormal": ("median_ms", "sigma"), "exponential": ("mean_ms",),
}
#: the distributions of a work queue's job_ms (the processing time of one record) and their keys
JOB_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "constant": ("ms",), "uniform": ("min_ms", "max_ms"), "exponential": ("mean_ms",),
    "lognormal": ("median_ms", "sigma"), "pareto": ("scale_ms", "alpha"),
}
#: a share group's job_ms when it gives none: its records are processed at once
SHARE_JOB_MS = {"dist": "constant", "ms": 0}
#: GroupSpec's fields a share group has none of, and what it has not (the error says it)
CONSUMER_GROUP_KEYS: dict[str, str] = {
    "group_protocol": "group.protocol (its members speak the share group protocol)",
    "strategy": "partition.assignment.strategy (the coordinator assigns, with group.share.assignors)",
    "protocol": "rebalance protocol (the coordinator assigns, with group.share.assignors)",
    "remote_assignor": "group.remote.assignor (the coordinator assigns, with group.share.assignors)",
    "static": "static membership (group.instance.id)",
    "callback_ms": "rebalance listener",
    "auto_commit": "enable.auto.commit (its members acknowledge records instead)",
    "auto_commit_interval_ms": "auto.commit.interval.ms (its members acknowledge records instead)",
}
#: GroupSpec's fields only a share group has
SHARE_GROUP_KEYS = ("acknowledgement_mode", "lock_duration_ms", "delivery_limit")


@dataclass
class GroupSpec:
    """One [[groups]] entry, resolved. A share group (``group_type == "share"``) holds empty values
    in the fields of :data:`CONSUMER_GROUP_KEYS` (strategy [], protocol "", group_protocol "",
    remote_assignor "", static False, callback_ms 0, auto_commit False: it has none of them) and 0 in
    records_per_poll; a consumer group holds "" and None in those of :data:`SHARE_GROUP_KEYS`."""
    name: str
    topics: list[str]
    members: int = 3
    count: int = 1
    join_interval_ms: int = 0
    strategy: list[str] = field(default_factory=lambda: ["range"])
    protocol: str = ""                      # resolved: "eager" | "cooperative"
    group_type: str = "consumer"            # "consumer" | "share" (KIP-932)
    group_protocol: str = "classic"         # "classic" | "consumer"
    remote_assignor: str = ""               # consumer groups: "" is the coordinator's default
    static: bool = False
    session_timeout_ms: int | None = None   # None: the protocol's default (see session_ms)
    heartbeat_interval_ms: int | None = None
    max_poll_interval_ms: int = 300000
    request_timeout_ms: int = 30000
    processing_ms: int = 100                # the poll period (not used by work queues)
    records_per_poll: int = 10              # records counted per owned partition and poll; work queues: 0
    #: max.poll.records: the most records one poll returns (Kafka's default)
    max_poll_records: int = 500
    #: the processing time of one record, a distribution (JOB_DISTRIBUTIONS; "dist" and its keys, in
    #: ms); not None: the group is a work queue (always so for share groups, default SHARE_JOB_MS)
    job_ms: dict | None = None
    callback_ms: int = 0
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    #: share groups: share.acknowledgement.mode, "implicit" | "explicit" (consumer groups: "")
    acknowledgement_mode: str = ""
    #: share groups: the group config share.record.lock.duration.ms (None: the coordinator's
    #: group.share.record.lock.duration.ms)
    lock_duration_ms: int | None = None
    #: share groups: the group config share.delivery.count.limit (None: the coordinator's
    #: group.share.delivery.count.limit)
    delivery_limit: int | None = None
    config: dict = field(default_factory=dict)

    @property
    def consumer(self) -> bool:
        """group.protocol=consumer (KIP-848)."""
        return self.group_protocol == "consumer"

    @property
    def share(self) -> bool:
        """A share group (KIP-932)."""
        return self.group_type == "share"

    @property
    def classic(self) -> bool:
        """A consumer group on the classic protocol (JoinGroup/SyncGroup)."""
        return self.group_type == "consumer" and self.group_protocol == "classic"

    @property
    def work_queue(self) -> bool:
        """The members fetch the topics' records and process each for a time drawn from job_ms."""
        return self.job_ms is not None

    @property
    def session_ms(self) -> int | None:
        """The member's session.timeout.ms (classic: default 45 s), or the consumer or share group's
        config (None: the coordinator's group.consumer/share.session.timeout.ms)."""
        if self.session_timeout_ms is None and self.classic:
            return 45000
        return self.session_timeout_ms

    @property
    def heartbeat_ms(self) -> int | None:
        """heartbeat.interval.ms (classic: default 3 s), or the consumer or share group's config
        (None: the coordinator's group.consumer/share.heartbeat.interval.ms)."""
        if self.heartbeat_interval_ms is None and self.classic:
            return 3000
        return self.heartbeat_interval_ms

    def group_configs(self) -> dict[str, int]:
        """A consumer or share group's dynamic configs (Kafka's GroupConfig names) the scenario sets."""
        if not (self.consumer or self.share):
            return {}
        prefix = "share" if self.share else "consumer"
        out = {}
        if self.session_timeout_ms is not None:
            out[f"{prefix}.session.timeout.ms"] = self.session_timeout_ms
        if self.heartbeat_interval_ms is not None:
            out[f"{prefix}.heartbeat.interval.ms"] = self.heartbeat_interval_ms
        if self.lock_duration_ms is not None:
            out["share.record.lock.duration.ms"] = self.lock_duration_ms
        if self.delivery_limit is not None:
            out["share.delivery.count.limit"] = self.delivery_limit
        return out

    def group_ids(self) -> list[str]:
        if self.count == 1:
            return [self.name]
        width = len(str(self.count - 1))
        return [f"{self.name}-{i:0{width}d}" for i in range(self.count)]

    def to_dict(self) -> dict:
        """The keys of its type as plain data (a share group's without those it has none of and
        without its default job_ms; a work queue's without records_per_poll)."""
        out = asdict(self)
        drop = set(SHARE_GROUP_KEYS) if not self.share else set(CONSUMER_GROUP_KEYS) | {"records_per_poll"}
        if self.job_ms is None or (self.share and self.job_ms == SHARE_JOB_MS):
            drop.add("job_ms")
        elif not self.share:
            drop.add("records_per_poll")
        return {k: v for k, v in out.items() if k not in drop}


@dataclass
class ProduceSpec:
    """A [[produce]] entry: a producer appending records to ``topic`` during the run.

    Request j (from 0) goes at ``start_s + j * batch / rate_per_s`` seconds while that is before
    the stop (``stop_s``, None: the run's end; the run's end at the latest) and carries ``batch``
    records, fewer for the last one when ``records`` caps the total (None: no cap); see
    :meth:`requests`. Record n of the producer (from 0, over all its requests) goes to partition
    n mod the topic's partition count at that time (round robin)."""
    topic: str
    rate_per_s: float                   # records per second, > 0
    start_s: float = 0.0
    stop_s: float | None = None         # None: the run's end
    records: int | None = None          # the most records in all; None: no cap
    batch: int = 1                      # records per produce request

    def stop_ms(self, duration_ms: int) -> float:
        """When producing stops: stop_s, or the run's end when it is sooner or stop_s is None."""
        return duration_ms if self.stop_s is None else min(self.stop_s * 1000, duration_ms)

    def requests(self, duration_ms: int) -> Iterator[tuple[int, int]]:
        """The produce requests of a run of ``duration_ms``: (scenario time in whole ms, rounded
        down; number of records), in time order."""
        interval, start, stop = self.batch * 1000 / self.rate_per_s, self.start_s * 1000, self.stop_ms(duration_ms)
        left = self.records
        j = 0
        while (at := start + j * interval) < stop and (left is None or left > 0):
            n = self.batch if left is None else min(self.batch, left)
            yield int(at), n
            if left is not None:
                left -= n
            j += 1


@dataclass
class NetworkSpec:
    latency: dict = field(default_factory=lambda: {"dist": "uniform", "min_ms": 1, "max_ms": 3})
    loss: float = 0.0
    connect_ms: int = 0
    codec: bool = False


@dataclass
class CoordinatorSpec:
    nodes: int = 1
    profile: str = "default"
    config: dict = field(default_factory=dict)


@dataclass
class Event:
    at_ms: int
    action: str
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"at_ms": self.at_ms, "action": self.action, **self.params}


@dataclass
class Scenario:
    name: str
    topics: dict[str, int]
    groups: list[GroupSpec]
    events: list[Event] = field(default_factory=list)
    duration_s: float = 60.0
    seed: int = 0
    network: NetworkSpec = field(default_factory=NetworkSpec)
    coordinator: CoordinatorSpec = field(default_factory=CoordinatorSpec)
    produce: list[ProduceSpec] = field(default_factory=list)

    @property
    def duration_ms(self) -> int:
        return int(round(self.duration_s * 1000))

    def group_ids(self) -> list[str]:
        return [g for spec in self.groups for g in spec.group_ids()]

    def spec_of(self, group_id: str) -> GroupSpec:
        for spec in self.groups:
            if group_id in spec.group_ids():
                return spec
        raise KeyError(group_id)

    def total_members(self) -> int:
        return sum(s.members * s.count for s in self.groups)

    def to_dict(self) -> dict:
        """A plain dict that :func:`from_dict` reads back into an equal scenario."""
        return {"name": self.name, "duration_s": self.duration_s, "seed": self.seed,
                "coordinator": asdict(self.coordinator), "network": asdict(self.network),
                "topics": dict(self.topics), "groups": [g.to_dict() for g in self.groups],
                "events": [e.to_dict() for e in self.events], "produce": [asdict(p) for p in self.produce]}


# ================================================================================ reading
def load(path) -> Scenario:
    """Read a TOML scenario file. Like every ScenarioError, one raised here does not name the
    file: the caller, who knows how it named it, does."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"not valid TOML: {e}") from None
    data.setdefault("name", path.stem)
    return from_dict(data)


def _int(d: Mapping, key: str, default: Any, where: str, low: int | None = 0) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise ScenarioError(f"{where}.{key}: expected an integer, got {v!r}")
    v = int(v)
    if low is not None and v < low:
        raise ScenarioError(f"{where}.{key}: must be at least {low}, got {v}")
    return v


def _opt_int(d: Mapping, key: str, where: str, low: int | None = 0) -> int | None:
    """_int of a key whose absence (or null, as to_dict writes it) means its default: None."""
    return None if d.get(key) is None else _int(d, key, None, where, low)


def _num(d: Mapping, key: str, default: Any, where: str, low: float = 0.0) -> float:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ScenarioError(f"{where}.{key}: expected a number, got {v!r}")
    if v < low:
        raise ScenarioError(f"{where}.{key}: must be at least {low}, got {v}")
    return v


def _bool(d: Mapping, key: str, default: bool, where: str) -> bool:
    v = d.get(key, default)
    if not isinstance(v, bool):
        raise ScenarioError(f"{where}.{key}: expected true or false, got {v!r}")
    return v


def _unknown(d: Mapping, allowed, where: str) -> None:
    extra = sorted(set(d) - set(allowed))
    if extra:
        raise ScenarioError(f"{where}: unknown key {extra[0]!r} (known: {', '.join(sorted(allowed))})")


def resolve_protocol(strategy: list[str], protocol: str, where: str = "groups") -> str:
    """The rebalance protocol of a strategy list: the given one if every assignor supports it,
    else (when none is given) the highest they all support, as Kafka's ConsumerCoordinator chooses."""
    common = None
    for name in strategy:
        cls = ASSIGNORS.get(name)
        if cls is None:
            raise ScenarioError(f"{where}.strategy: unknown assignor {name!r} (known: {', '.join(ASSIGNORS)})")
        protos = set(cls.supported_protocols)
        common = protos if common is None else common & protos
    if not common:
        raise ScenarioError(f"{where}.strategy: {strategy} have no rebalance protocol in common")
    if not protocol:
        return max(common, key=lambda p: p.value).name.lower()
    if protocol not in ("eager", "cooperative"):
        raise ScenarioError(f"{where}.protocol: expected 'eager' or 'cooperative', got {protocol!r}")
    if RebalanceProtocol[protocol.upper()] not in common:
        raise ScenarioError(f"{where}.protocol: {strategy} do not support the {protocol} protocol")
    return protocol


def _group(d: Mapping, i: int, topics: Mapping[str, int], coordinator: CoordinatorSpec) -> GroupSpec:
    where = f"groups[{i}]"
    if not isinstance(d, Mapping):
        raise ScenarioError(f"{where}: expected a table")
    _unknown(d, {f.name for f in fields(GroupSpec)}, where)
    name = d.get("name", f"g{i}")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}.name: expected a non-empty string")
    gtopics = d.get("topics")
    if isinstance(gtopics, str):
        gtopics = [gtopics]
    if not gtopics or not isinstance(gtopics, list) or not all(isinstance(t, str) for t in gtopics):
        raise ScenarioError(f"{where}.topics: expected a non-empty list of topic names")
    for t in gtopics:
        if t not in topics:
            raise ScenarioError(f"{where}.topics: {t!r} is not declared in [topics]")
    group_type = d.get("group_type", "consumer")
    if group_type not in ("consumer", "share"):
        raise ScenarioError(f"{where}.group_type: expected 'consumer' or 'share', got {group_type!r}")
    share = group_type == "share"
    if share:
        for key, what in CONSUMER_GROUP_KEYS.items():
            if key in d:
                raise ScenarioError(f"{where}.{key}: a share group has no {what}")
        if "records_per_poll" in d:
            raise ScenarioError(f"{where}.records_per_poll: a share group's members fetch the topics' records "
                                "(job_ms: the time one takes)")
    else:
        for key in SHARE_GROUP_KEYS:
            if key in d:
                raise ScenarioError(f"{where}.{key}: a share group's setting (group_type = 'share'); "
                                    "this is a consumer group")
    job = d.get("job_ms")
    if job is not None:
        job = _distribution(job, f"{where}.job_ms", JOB_DISTRIBUTIONS, "constant")
        if "records_per_poll" in d:
            raise ScenarioError(f"{where}.records_per_poll: give records_per_poll or job_ms, not both (a work "
                                "queue's members fetch the topics' records)")
    elif share:
        job = dict(SHARE_JOB_MS)
    config = d.get("config", {})
    if not isinstance(config, Mapping):
        raise ScenarioError(f"{where}.config: expected a table of consumer configs")
    _check_consumer_configs(config, share, where)
    common = dict(
        name=name, topics=list(gtopics), group_type=group_type,
        members=_int(d, "members", 3, where), count=_int(d, "count", 1, where, 1),
        join_interval_ms=_int(d, "join_interval_ms", 0, where),
        session_timeout_ms=_opt_int(d, "session_timeout_ms", where, 1),
        heartbeat_interval_ms=_opt_int(d, "heartbeat_interval_ms", where, 1),
        max_poll_interval_ms=_int(d, "max_poll_interval_ms", 300000, where, 1),
        request_timeout_ms=_int(d, "request_timeout_ms", 30000, where, 1),
        processing_ms=_int(d, "processing_ms", 100, where, 1),
        max_poll_records=_int(d, "max_poll_records", 500, where, 1),
        job_ms=job, config=dict(config))
    if share:
        mode = d.get("acknowledgement_mode", "implicit")
        if mode not in ("implicit", "explicit"):
            raise ScenarioError(f"{where}.acknowledgement_mode: expected 'implicit' or 'explicit', got {mode!r}")
        g = GroupSpec(**common, strategy=[], protocol="", group_protocol="", remote_assignor="", static=False,
                      records_per_poll=0, callback_ms=0, auto_commit=False, acknowledgement_mode=mode,
                      lock_duration_ms=_opt_int(d, "lock_duration_ms", where, 1),
                      delivery_limit=_opt_int(d, "delivery_limit", where, 1))
        _check_group_configs(g, where, coordinator)
        return g
    strategy = d.get("strategy", ["range"])
    if isinstance(strategy, str):
        strategy = [strategy]
    if not isinstance(strategy, list) or not strategy or not all(isinstance(s, str) for s in strategy):
        raise ScenarioError(f"{where}.strategy: expected an assignor name or a list of them")
    protocol = d.get("protocol", "") or ""
    if not isinstance(protocol, str):
        raise ScenarioError(f"{where}.protocol: expected 'eager' or 'cooperative'")
    group_protocol = d.get("group_protocol", "classic")
    if group_protocol not in ("classic", "consumer"):
        raise ScenarioError(f"{where}.group_protocol: expected 'classic' or 'consumer', got {group_protocol!r}")
    remote = d.get("remote_assignor", "") or ""
    if not isinstance(remote, str) or (remote and remote not in SERVER_ASSIGNORS):
        raise ScenarioError(f"{where}.remote_assignor: expected one of {', '.join(SERVER_ASSIGNORS)}, got {remote!r}")
    g = GroupSpec(
        **common, strategy=list(strategy), protocol=resolve_protocol(strategy, protocol, where),
        group_protocol=group_protocol, remote_assignor=remote,
        static=_bool(d, "static", False, where),
        records_per_poll=0 if job is not None else _int(d, "records_per_poll", 10, where),
        callback_ms=_int(d, "callback_ms", 0, where),
        auto_commit=_bool(d, "auto_commit", True, where),
        auto_commit_interval_ms=_int(d, "auto_commit_interval_ms", 5000, where, 1))
    if g.consumer:
        _check_group_configs(g, where, coordinator)
    elif g.heartbeat_ms >= g.session_ms:
        raise ScenarioError(f"{where}.heartbeat_interval_ms: must be below session_timeout_ms")
    return g


def _check_consumer_configs(config: Mapping, share: bool, where: str) -> None:
    """A group's ``config`` sets none of the consumer configs its own keys set, nor one its client
    refuses (Kafka's ShareConsumerConfig those a share group has no use for; ConsumerConfig the
    share consumer's)."""
    for key, instead in (("max.poll.records", "max_poll_records"),
                         ("share.acknowledgement.mode", "acknowledgement_mode")):
        if key in config:
            raise ScenarioError(f"{where}.config: give {key!r} as the group's {instead}")
    refused = SHARE_GROUP_UNSUPPORTED_CONFIGS if share else ("share.acquire.mode",)
    for key in refused:
        if key in config:
            raise ScenarioError(f"{where}.config: {key!r} cannot be set in a {'share' if share else 'consumer'} group")


def _broker_config(coordinator: CoordinatorSpec):
    """The coordinator's resolved broker config (ScenarioError when [coordinator] is invalid)."""
    from groupcoord.coordinator.config import BrokerConfig, ConfigError
    try:
        return BrokerConfig(dict(coordinator.config), profile=coordinator.profile, environ={})
    except (ConfigError, ValueError) as e:
        raise ScenarioError(f"coordinator.config: {e}") from None


def _check_group_configs(g: GroupSpec, where: str, coordinator: CoordinatorSpec) -> None:
    """A consumer or share group's session timeout and heartbeat interval (a share group's record
    lock duration and delivery count limit too) are group configs, bounded by the coordinator's
    group.consumer/share.min/max.* (Kafka's GroupConfig.validate); a share group needs a coordinator
    that serves share groups."""
    from groupcoord.coordinator.group.share.manager import enabled, share_version
    from groupcoord.coordinator.releases import at_least
    cfg = _broker_config(coordinator)
    kind = "share" if g.share else "consumer"
    release = str(cfg["groupcoord.kafka.version"])
    if g.share and not enabled(cfg):
        how = ("set coordinator.config \"share.version\" = 1" if at_least(release, "4.1")
               else "they came with Kafka 4.1")
        raise ScenarioError(f"{where}.group_type: the coordinator (groupcoord.kafka.version {release}, share.version "
                            f"{share_version(cfg)}) serves no share groups ({how})")
    bounded = [("session_timeout_ms", g.session_timeout_ms, "session.timeout.ms"),
               ("heartbeat_interval_ms", g.heartbeat_interval_ms, "heartbeat.interval.ms")]
    if g.share:
        bounded += [("lock_duration_ms", g.lock_duration_ms, "record.lock.duration.ms"),
                    ("delivery_limit", g.delivery_limit, "delivery.count.limit")]
        if g.delivery_limit is not None and not at_least(release, "4.3"):
            raise ScenarioError(f"{where}.delivery_limit: the group config share.delivery.count.limit came with Kafka "
                                f"4.3; the coordinator's groupcoord.kafka.version is {release} (set its "
                                "group.share.delivery.count.limit in coordinator.config instead)")
    for key, value, what in bounded:
        if value is None:
            continue
        lo, hi = int(cfg[f"group.{kind}.min.{what}"]), int(cfg[f"group.{kind}.max.{what}"])
        if not lo <= value <= hi:
            bound = "min" if value < lo else "max"
            raise ScenarioError(
                f"{where}.{key}: {value} is outside {lo} to {hi}, the coordinator's bounds for a {kind} group's "
                f"{kind}.{what} (widen them: coordinator.config \"group.{kind}.{bound}.{what}\", or --set "
                f"coordinator.config.group.{kind}.{bound}.{what}={value})")
    session = g.session_timeout_ms or int(cfg[f"group.{kind}.session.timeout.ms"])
    if (g.heartbeat_interval_ms or int(cfg[f"group.{kind}.heartbeat.interval.ms"])) >= session:
        raise ScenarioError(f"{where}.heartbeat_interval_ms: must be below the group's session timeout ({session} ms)")


def _distribution(d: Any, where: str, known: Mapping[str, tuple[str, ...]], plain: str) -> dict:
    """A distribution table (``dist`` and its keys, numbers >= 0) of those ``known``; a number is
    the distribution ``plain`` (fixed or constant) of that many ms, as is a table without dist."""
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        d = {"dist": plain, "ms": d}
    if not isinstance(d, Mapping):
        raise ScenarioError(f"{where}: expected a number of ms or a table with 'dist'")
    dist = d.get("dist", plain)
    params = known.get(dist) if isinstance(dist, str) else None
    if params is None:
        raise ScenarioError(f"{where}.dist: unknown distribution {dist!r} (known: {', '.join(known)})")
    _unknown(d, ("dist",) + params, where)
    out = {"dist": dist}
    for p in params:
        if p not in d:
            raise ScenarioError(f"{where}.{p}: required by the {dist} distribution")
        out[p] = _num(d, p, None, where)
    if dist == "uniform" and out["min_ms"] > out["max_ms"]:
        raise ScenarioError(f"{where}: min_ms is above max_ms")
    if dist == "pareto" and out["alpha"] <= 0:
        raise ScenarioError(f"{where}.alpha: must be above 0, got {out['alpha']}")
    return out


def _latency(d: Any) -> dict:
    return _distribution(d, "network.latency", DISTRIBUTIONS, "fixed")


def _produce(d: Mapping, i: int, topics: Mapping[str, int]) -> ProduceSpec:
    where = f"produce[{i}]"
    if not isinstance(d, Mapping):
        raise ScenarioError(f"{where}: expected a table")
    _unknown(d, {f.name for f in fields(ProduceSpec)}, where)
    topic = d.get("topic")
    if not isinstance(topic, str) or topic not in topics:
        raise ScenarioError(f"{where}.topic: expected a topic declared in [topics], got {topic!r}")
    if "rate_per_s" not in d:
        raise ScenarioError(f"{where}.rate_per_s: required (records per second)")
    rate = _num(d, "rate_per_s", None, where)
    if rate <= 0:
        raise ScenarioError(f"{where}.rate_per_s: must be above 0, got {rate}")
    start = _num(d, "start_s", 0, where)
    stop = None if d.get("stop_s") is None else _num(d, "stop_s", None, where)
    if stop is not None and stop <= start:
        raise ScenarioError(f"{where}.stop_s: must be after start_s ({start}), got {stop}")
    return ProduceSpec(topic, float(rate), float(start), None if stop is None else float(stop),
                       _opt_int(d, "records", where, 1), _int(d, "batch", 1, where, 1))


def _members_sel(d: Mapping, where: str) -> None:
    if "members" in d:
        m = d["members"]
        if not isinstance(m, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in m):
            raise ScenarioError(f"{where}.members: expected a list of member indices")
        if "count" in d:
            raise ScenarioError(f"{where}: give members or count, not both")


def _event(d: Mapping, i: int, sc_topics: Mapping[str, int], groups: list[GroupSpec], nodes: int) -> Event:
    where = f"events[{i}]"
    if not isinstance(d, Mapping):
        raise ScenarioError(f"{where}: expected a table")
    action = d.get("action")
    if action not in ACTIONS:
        raise ScenarioError(f"{where}.action: expected one of {', '.join(ACTIONS)}, got {action!r}")
    allowed = ("at_s", "at_ms", "action") + ACTIONS[action]
    _unknown(d, allowed, where)
    if ("at_s" in d) == ("at_ms" in d):
        raise ScenarioError(f"{where}: give exactly one of at_s and at_ms")
    at_ms = _int(d, "at_ms", 0, where) if "at_ms" in d else int(round(_num(d, "at_s", 0, where) * 1000))
    params = {k: copy.deepcopy(v) for k, v in d.items() if k not in ("at_s", "at_ms", "action")}
    if "group" in params:
        names = {s.name for s in groups} | {g for s in groups for g in s.group_ids()}
        if params["group"] not in names:
            raise ScenarioError(f"{where}.group: no group {params['group']!r}")
    _members_sel(params, where)
    for key in ("count", "interval_ms", "down_ms", "restart_after_ms", "duration_ms"):
        if key in params:
            _int(params, key, 0, where, 1 if key == "count" else 0)
    if action == "join":
        params.setdefault("count", 1)
    if action in ("slow", "network_partition") and "duration_ms" not in params:
        raise ScenarioError(f"{where}.duration_ms: required by {action}")
    if action == "slow":
        kind = params.setdefault("kind", "heartbeat")
        if kind not in ("heartbeat", "poll"):
            raise ScenarioError(f"{where}.kind: expected 'heartbeat' or 'poll', got {kind!r}")
    if action == "subscribe":
        t = params.get("topics")
        if isinstance(t, str):
            t = params["topics"] = [t]
        if not t or not isinstance(t, list) or any(x not in sc_topics for x in t):
            raise ScenarioError(f"{where}.topics: expected a list of topics declared in [topics]")
    if action == "add_partitions":
        if params.get("topic") not in sc_topics:
            raise ScenarioError(f"{where}.topic: expected a topic declared in [topics]")
        _int(params, "partitions", None, where, 1)
    if action == "move_coordinator":
        if "group" not in params or params["group"] not in {g for s in groups for g in s.group_ids()}:
            raise ScenarioError(f"{where}.group: move_coordinator needs one group id")
        if nodes < 2:
            raise ScenarioError(f"{where}: move_coordinator needs coordinator.nodes >= 2")
    if action in ("node_down", "node_up") or (action == "move_coordinator" and "node" in params):
        n = _int(params, "node", None, where)
        if n >= nodes:
            raise ScenarioError(f"{where}.node: there are only {nodes} nodes")
    return Event(at_ms, action, params)


def _targets(ev: Event, groups: list[GroupSpec]) -> list[str]:
    """The group ids an event acts on (as :meth:`Driver._groups_of <.model.Driver._groups_of>`)."""
    name = ev.params.get("group")
    if name is None:
        return [g for s in groups for g in s.group_ids()]
    return next((s.group_ids() for s in groups if s.name == name), [name])


def _check_member_indices(events: list[tuple[int, Event]], groups: list[GroupSpec]) -> None:
    """An event naming members by index names members that exist when it happens: a group's
    initial members, then those its earlier join events added. ``events``: (index in the file,
    event), in time order."""
    known = {g: s.members for s in groups for g in s.group_ids()}
    for i, ev in events:
        if ev.action == "join":
            for g in _targets(ev, groups):
                known[g] += ev.params["count"]
        elif "members" in ev.params:
            for g in _targets(ev, groups):
                missing = [m for m in ev.params["members"] if m >= known[g]]
                if missing:
                    has = f"members 0 to {known[g] - 1}" if known[g] else "no members"
                    raise ScenarioError(f"events[{i}].members: group {g!r} has no member {missing[0]} "
                                        f"(it has {has} at {ev.at_ms} ms)")


def from_dict(d: Mapping) -> Scenario:
    """Build and validate a scenario from plain data (a parsed TOML file or :meth:`Scenario.to_dict`)."""
    if not isinstance(d, Mapping):
        raise ScenarioError("a scenario is a table")
    # "mode" and "group_ids" are written into scenario.json by the runs; they are ignored here
    _unknown(d, ("name", "duration_s", "seed", "coordinator", "network", "topics", "groups", "events", "produce",
                 "mode", "group_ids"), "scenario")
    topics = d.get("topics")
    if not isinstance(topics, Mapping) or not topics:
        raise ScenarioError("topics: expected a table of topic = partitions")
    topics = {str(k): _int(topics, k, None, "topics", 1) for k in topics}
    coord = d.get("coordinator", {})
    if not isinstance(coord, Mapping):
        raise ScenarioError("coordinator: expected a table")
    _unknown(coord, ("nodes", "profile", "config"), "coordinator")
    profile = coord.get("profile", "default")
    if profile not in ("default", "test"):
        raise ScenarioError(f"coordinator.profile: expected 'default' or 'test', got {profile!r}")
    cconfig = coord.get("config", {})
    if not isinstance(cconfig, Mapping):
        raise ScenarioError("coordinator.config: expected a table of broker configs")
    coordinator = CoordinatorSpec(_int(coord, "nodes", 1, "coordinator", 1), profile, dict(cconfig))
    net = d.get("network", {})
    if not isinstance(net, Mapping):
        raise ScenarioError("network: expected a table")
    _unknown(net, ("latency", "loss", "connect_ms", "codec"), "network")
    loss = _num(net, "loss", 0.0, "network")
    if loss >= 1:
        raise ScenarioError("network.loss: must be below 1")
    network = NetworkSpec(_latency(net.get("latency", NetworkSpec().latency)), float(loss),
                          _int(net, "connect_ms", 0, "network"), _bool(net, "codec", False, "network"))
    groups_raw = d.get("groups")
    if not isinstance(groups_raw, list) or not groups_raw:
        raise ScenarioError("groups: expected at least one [[groups]] table")
    groups = [_group(g, i, topics, coordinator) for i, g in enumerate(groups_raw)]
    ids = [g for s in groups for g in s.group_ids()]
    if len(set(ids)) != len(ids):
        raise ScenarioError("groups: two groups have the same id")
    events_raw = d.get("events", [])
    if not isinstance(events_raw, list):
        raise ScenarioError("events: expected a list of [[events]] tables")
    numbered = [(i, _event(e, i, topics, groups, coordinator.nodes)) for i, e in enumerate(events_raw)]
    numbered.sort(key=lambda n: n[1].at_ms)     # stable: same-time events keep their order
    _check_member_indices(numbered, groups)
    events = [e for _, e in numbered]
    produce_raw = d.get("produce", [])
    if not isinstance(produce_raw, list):
        raise ScenarioError("produce: expected a list of [[produce]] tables")
    produce = [_produce(p, i, topics) for i, p in enumerate(produce_raw)]
    name = d.get("name", "scenario")
    if not isinstance(name, str):
        raise ScenarioError("name: expected a string")
    duration = _num(d, "duration_s", 60.0, "scenario")
    if duration <= 0:
        raise ScenarioError("scenario.duration_s: must be positive")
    return Scenario(name=name, topics=topics, groups=groups, events=events, duration_s=duration,
                    seed=_int(d, "seed", 0, "scenario", None), network=network, coordinator=coordinator,
                    produce=produce)


_TOP_LEVEL = ("duration_s", "seed", "name")
_GROUP_KEYS = {f.name for f in fields(GroupSpec)} - {"name"}
_PRODUCE_KEYS = {f.name for f in fields(ProduceSpec)}


def _takes(group: Mapping, key: str) -> bool:
    """Whether a group (as to_dict writes it) has the key: a consumer group those of
    CONSUMER_GROUP_KEYS, a share group those of SHARE_GROUP_KEYS, records_per_poll a consumer group
    that is no work queue; every group the others."""
    share = group.get("group_type", "consumer") == "share"
    if key in CONSUMER_GROUP_KEYS:
        return not share
    if key in SHARE_GROUP_KEYS:
        return share
    if key == "records_per_poll":
        return not share and group.get("job_ms") is None
    return True


def apply_overrides(sc: Scenario, overrides: Mapping[str, Any]) -> Scenario:
    """A new scenario with overrides applied: group keys (strategy, protocol, group_protocol,
    members, static, session_timeout_ms, group_type, job_ms, ...) to every group that has the key
    (consumer groups' keys to consumer groups, share groups' to share groups, records_per_poll to
    those that are no work queue; an error when none has it), top-level keys (duration_s, seed,
    name) to the scenario, ``network.<key>`` and ``coordinator.<key>`` to those tables,
    ``produce.<key>`` to every [[produce]] entry, ``coordinator.config.<broker config>`` and
    ``config.<consumer config>`` (every group's) to one config each. ``group_type`` goes first: a
    group that changes type drops the keys its new type has not (and records_per_poll on becoming a
    share group); ``job_ms`` drops records_per_poll. Validated again."""
    d = sc.to_dict()
    groups = d["groups"]
    if "group_type" in overrides:
        new = overrides["group_type"]
        for g in groups:
            if g.get("group_type", "consumer") != new:
                gone = SHARE_GROUP_KEYS if new == "consumer" else (*CONSUMER_GROUP_KEYS, "records_per_poll")
                for key in gone:
                    g.pop(key, None)
            g["group_type"] = new
    if overrides.get("job_ms") is not None:        # the groups become work queues
        for g in groups:
            g.pop("records_per_poll", None)
    strategy_changed = "strategy" in overrides and "protocol" not in overrides
    for key, value in overrides.items():
        if key in _TOP_LEVEL:
            d[key] = value
        elif key.startswith("coordinator.config."):        # one broker config, by Kafka's name
            d["coordinator"]["config"][key[len("coordinator.config."):]] = value
        elif key.startswith("config."):                     # one consumer config of every group
            for g in groups:
                g["config"][key[len("config."):]] = value
        elif key.startswith(("network.", "coordinator.")):
            table, _, sub = key.partition(".")
            d[table][sub] = value
        elif key.startswith("produce."):                    # one key of every producer
            sub = key[len("produce."):]
            if sub not in _PRODUCE_KEYS:
                raise ScenarioError(f"override {key!r}: not a [[produce]] key "
                                    f"(known: {', '.join(sorted(_PRODUCE_KEYS))})")
            if not d["produce"]:
                raise ScenarioError(f"override {key!r}: the scenario has no [[produce]]")
            for p in d["produce"]:
                p[sub] = value
        elif key in _GROUP_KEYS:
            takers = [g for g in groups if _takes(g, key)]
            if not takers:
                why = ("a consumer group's key" if key in CONSUMER_GROUP_KEYS else
                       "a share group's key" if key in SHARE_GROUP_KEYS else
                       "share groups and work queues (job_ms) fetch records")
                raise ScenarioError(f"override {key!r}: no group of the scenario has it ({why})")
            for g in takers:
                g[key] = value
        else:
            raise ScenarioError(f"override {key!r}: not a scenario, group, config.*, network.*, coordinator.* or "
                                "produce.* key")
    if strategy_changed:
        for g in groups:
            if _takes(g, "protocol"):
                g["protocol"] = ""          # re-derive from the new strategy
    return from_dict(d)
