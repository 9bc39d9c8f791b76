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
    group_protocol = "classic"      # group.protocol: "classic" | "consumer" (KIP-848)
    strategy = "range"              # classic: partition.assignment.strategy, a name or a list
    protocol = "eager"              # classic: "eager" | "cooperative"; default: what the strategy supports
    remote_assignor = "uniform"     # consumer: group.remote.assignor; default: the coordinator's choice
    static = false                  # group.instance.id = "<group>-m<index>"
    session_timeout_ms = 45000      # consumer: the group config consumer.session.timeout.ms
    heartbeat_interval_ms = 3000    # consumer: the group config consumer.heartbeat.interval.ms
    max_poll_interval_ms = 300000   # also the rebalance timeout
    request_timeout_ms = 30000
    processing_ms = 100             # the application polls every processing_ms
    records_per_poll = 10           # each poll consumes this many records per owned partition
    callback_ms = 0                 # time the rebalance listener takes per callback
    auto_commit = true              # enable.auto.commit
    auto_commit_interval_ms = 5000
    config = { "retry.backoff.ms" = 100 }   # any other consumer config by Kafka's name

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

API: :func:`load`, :func:`from_dict`, :meth:`Scenario.to_dict`, :func:`apply_overrides`.
Anything invalid raises :class:`ScenarioError` naming the key.
"""
from __future__ import annotations

import copy
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from groupcoord.client.assignors import ASSIGNORS, RebalanceProtocol
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


@dataclass
class GroupSpec:
    name: str
    topics: list[str]
    members: int = 3
    count: int = 1
    join_interval_ms: int = 0
    strategy: list[str] = field(default_factory=lambda: ["range"])
    protocol: str = ""                      # resolved: "eager" | "cooperative"
    group_protocol: str = "classic"         # "classic" | "consumer"
    remote_assignor: str = ""               # consumer groups: "" is the coordinator's default
    static: bool = False
    session_timeout_ms: int | None = None   # None: the protocol's default (see session_ms)
    heartbeat_interval_ms: int | None = None
    max_poll_interval_ms: int = 300000
    request_timeout_ms: int = 30000
    processing_ms: int = 100
    records_per_poll: int = 10
    callback_ms: int = 0
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    config: dict = field(default_factory=dict)

    @property
    def consumer(self) -> bool:
        """group.protocol=consumer (KIP-848)."""
        return self.group_protocol == "consumer"

    @property
    def session_ms(self) -> int | None:
        """The member's session.timeout.ms (classic: default 45 s), or the consumer group's config
        (None: the coordinator's group.consumer.session.timeout.ms)."""
        if self.session_timeout_ms is None and not self.consumer:
            return 45000
        return self.session_timeout_ms

    @property
    def heartbeat_ms(self) -> int | None:
        """heartbeat.interval.ms (classic: default 3 s), or the consumer group's config (None: the
        coordinator's group.consumer.heartbeat.interval.ms)."""
        if self.heartbeat_interval_ms is None and not self.consumer:
            return 3000
        return self.heartbeat_interval_ms

    def group_configs(self) -> dict[str, int]:
        """A consumer group's dynamic configs (Kafka's GroupConfig names) the scenario sets."""
        if not self.consumer:
            return {}
        out = {}
        if self.session_timeout_ms is not None:
            out["consumer.session.timeout.ms"] = self.session_timeout_ms
        if self.heartbeat_interval_ms is not None:
            out["consumer.heartbeat.interval.ms"] = self.heartbeat_interval_ms
        return out

    def group_ids(self) -> list[str]:
        if self.count == 1:
            return [self.name]
        width = len(str(self.count - 1))
        return [f"{self.name}-{i:0{width}d}" for i in range(self.count)]


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
                "topics": dict(self.topics), "groups": [asdict(g) for g in self.groups],
                "events": [e.to_dict() for e in self.events]}


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
    strategy = d.get("strategy", ["range"])
    if isinstance(strategy, str):
        strategy = [strategy]
    if not isinstance(strategy, list) or not strategy or not all(isinstance(s, str) for s in strategy):
        raise ScenarioError(f"{where}.strategy: expected an assignor name or a list of them")
    protocol = d.get("protocol", "") or ""
    if not isinstance(protocol, str):
        raise ScenarioError(f"{where}.protocol: expected 'eager' or 'cooperative'")
    config = d.get("config", {})
    if not isinstance(config, Mapping):
        raise ScenarioError(f"{where}.config: expected a table of consumer configs")
    group_protocol = d.get("group_protocol", "classic")
    if group_protocol not in ("classic", "consumer"):
        raise ScenarioError(f"{where}.group_protocol: expected 'classic' or 'consumer', got {group_protocol!r}")
    remote = d.get("remote_assignor", "") or ""
    if not isinstance(remote, str) or (remote and remote not in SERVER_ASSIGNORS):
        raise ScenarioError(f"{where}.remote_assignor: expected one of {', '.join(SERVER_ASSIGNORS)}, got {remote!r}")
    g = GroupSpec(
        name=name, topics=list(gtopics), strategy=list(strategy),
        protocol=resolve_protocol(strategy, protocol, where),
        members=_int(d, "members", 3, where), count=_int(d, "count", 1, where, 1),
        join_interval_ms=_int(d, "join_interval_ms", 0, where),
        group_protocol=group_protocol, remote_assignor=remote,
        static=_bool(d, "static", False, where),
        session_timeout_ms=_opt_int(d, "session_timeout_ms", where, 1),
        heartbeat_interval_ms=_opt_int(d, "heartbeat_interval_ms", where, 1),
        max_poll_interval_ms=_int(d, "max_poll_interval_ms", 300000, where, 1),
        request_timeout_ms=_int(d, "request_timeout_ms", 30000, where, 1),
        processing_ms=_int(d, "processing_ms", 100, where, 1),
        records_per_poll=_int(d, "records_per_poll", 10, where),
        callback_ms=_int(d, "callback_ms", 0, where),
        auto_commit=_bool(d, "auto_commit", True, where),
        auto_commit_interval_ms=_int(d, "auto_commit_interval_ms", 5000, where, 1),
        config=dict(config))
    if g.consumer:
        _check_group_configs(g, where, coordinator)
    elif g.heartbeat_ms >= g.session_ms:
        raise ScenarioError(f"{where}.heartbeat_interval_ms: must be below session_timeout_ms")
    return g


def _check_group_configs(g: GroupSpec, where: str, coordinator: CoordinatorSpec) -> None:
    """A consumer group's session timeout and heartbeat interval are group configs, bounded by the
    coordinator's group.consumer.min/max.* (Kafka's GroupConfig.validate)."""
    from groupcoord.coordinator.config import BrokerConfig, ConfigError
    try:
        cfg = BrokerConfig(dict(coordinator.config), profile=coordinator.profile, environ={})
    except (ConfigError, ValueError) as e:
        raise ScenarioError(f"coordinator.config: {e}") from None
    for key, value, what in (("session_timeout_ms", g.session_timeout_ms, "session.timeout"),
                             ("heartbeat_interval_ms", g.heartbeat_interval_ms, "heartbeat.interval")):
        if value is None:
            continue
        lo, hi = int(cfg[f"group.consumer.min.{what}.ms"]), int(cfg[f"group.consumer.max.{what}.ms"])
        if not lo <= value <= hi:
            raise ScenarioError(
                f"{where}.{key}: {value} is outside {lo} to {hi}, the coordinator's bounds for a consumer group's "
                f"consumer.{what}.ms (widen them: coordinator.config \"group.consumer.{'min' if value < lo else 'max'}"
                f".{what}.ms\", or --set coordinator.config.group.consumer.{'min' if value < lo else 'max'}"
                f".{what}.ms={value})")
    session = g.session_timeout_ms or int(cfg["group.consumer.session.timeout.ms"])
    if (g.heartbeat_interval_ms or int(cfg["group.consumer.heartbeat.interval.ms"])) >= session:
        raise ScenarioError(f"{where}.heartbeat_interval_ms: must be below the group's session timeout ({session} ms)")


def _latency(d: Any) -> dict:
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        d = {"dist": "fixed", "ms": d}
    if not isinstance(d, Mapping):
        raise ScenarioError("network.latency: expected a number of ms or a table with 'dist'")
    dist = d.get("dist", "fixed")
    params = DISTRIBUTIONS.get(dist)
    if params is None:
        raise ScenarioError(f"network.latency.dist: unknown distribution {dist!r} "
                            f"(known: {', '.join(DISTRIBUTIONS)})")
    _unknown(d, ("dist",) + params, "network.latency")
    out = {"dist": dist}
    for p in params:
        if p not in d:
            raise ScenarioError(f"network.latency.{p}: required by the {dist} distribution")
        out[p] = _num(d, p, None, "network.latency")
    if dist == "uniform" and out["min_ms"] > out["max_ms"]:
        raise ScenarioError("network.latency: min_ms is above max_ms")
    return out


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
    _unknown(d, ("name", "duration_s", "seed", "coordinator", "network", "topics", "groups", "events", "mode",
                 "group_ids"), "scenario")
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
    name = d.get("name", "scenario")
    if not isinstance(name, str):
        raise ScenarioError("name: expected a string")
    duration = _num(d, "duration_s", 60.0, "scenario")
    if duration <= 0:
        raise ScenarioError("scenario.duration_s: must be positive")
    return Scenario(name=name, topics=topics, groups=groups, events=events, duration_s=duration,
                    seed=_int(d, "seed", 0, "scenario", None), network=network, coordinator=coordinator)


_TOP_LEVEL = ("duration_s", "seed", "name")
_GROUP_KEYS = {f.name for f in fields(GroupSpec)} - {"name"}


def apply_overrides(sc: Scenario, overrides: Mapping[str, Any]) -> Scenario:
    """A new scenario with overrides applied: group keys (strategy, protocol, group_protocol,
    members, static, session_timeout_ms, ...) to every group, top-level keys (duration_s, seed,
    name) to the scenario, ``network.<key>`` and ``coordinator.<key>`` to those tables,
    ``coordinator.config.<broker config>`` and ``config.<consumer config>`` (every group's) to one
    config each. Validated again."""
    d = sc.to_dict()
    strategy_changed = "strategy" in overrides and "protocol" not in overrides
    for key, value in overrides.items():
        if key in _TOP_LEVEL:
            d[key] = value
        elif key.startswith("coordinator.config."):        # one broker config, by Kafka's name
            d["coordinator"]["config"][key[len("coordinator.config."):]] = value
        elif key.startswith("config."):                     # one consumer config of every group
            for g in d["groups"]:
                g["config"][key[len("config."):]] = value
        elif key.startswith(("network.", "coordinator.")):
            table, _, sub = key.partition(".")
            d[table][sub] = value
        elif key in _GROUP_KEYS:
            for g in d["groups"]:
                g[key] = value
        else:
            raise ScenarioError(f"override {key!r}: not a scenario, group, config.*, network.* or coordinator.* key")
    if strategy_changed:
        for g in d["groups"]:
            g["protocol"] = ""          # re-derive from the new strategy
    return from_dict(d)
