"""Broker configuration, by Kafka's config names and with Kafka's defaults.

Values come, lowest precedence first, from the defaults, a profile, a properties
file, the environment (``GROUPCOORD_`` + the key upper-cased with dots as
underscores, e.g. ``GROUPCOORD_GROUP_INITIAL_REBALANCE_DELAY_MS``) and ``--set``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from .releases import RELEASES, at_least

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Setting:
    """A broker config as Kafka's ConfigDef defines it: its type (``kind``; ``long`` for Kafka's LONG
    rather than INT), default, and validator (``at_least``, ``at_most``: Kafka's ``atLeast`` and
    ``between``; ``choices``)."""
    key: str
    default: Any
    doc: str
    kind: type = int
    choices: tuple = ()
    at_least: int | None = None
    at_most: int | None = None
    long: bool = False
    ignore_case: bool = False       # choices compared case-insensitively (CaseInsensitiveValidString)


SETTINGS: dict[str, Setting] = {s.key: s for s in [
    Setting("group.min.session.timeout.ms", 6000, "Smallest session timeout a member may ask for."),
    Setting("group.max.session.timeout.ms", 1800000, "Largest session timeout a member may ask for."),
    Setting("group.initial.rebalance.delay.ms", 3000, "Delay of the first join phase of a group that starts from Empty."),
    Setting("group.max.size", INT32_MAX, "Most members a classic group may have.", at_least=1),
    # the consumer group protocol (KIP-848), Kafka 4.x's names and defaults
    Setting("group.coordinator.rebalance.protocols", "classic,consumer", "The group protocols served: classic, consumer or both (comma-separated). Without consumer, ConsumerGroupHeartbeat and ConsumerGroupDescribe are answered UNSUPPORTED_VERSION. share may be listed and changes nothing, as from Kafka 4.1 (4.2 and 4.3 warn that it is deprecated): share groups follow the share.version feature.", str),
    Setting("group.consumer.heartbeat.interval.ms", 5000, "How often members of a consumer group heartbeat (what the heartbeat response tells them).", at_least=1),
    Setting("group.consumer.min.heartbeat.interval.ms", 5000, "Smallest allowed group.consumer.heartbeat.interval.ms.", at_least=1),
    Setting("group.consumer.max.heartbeat.interval.ms", 15000, "Largest allowed group.consumer.heartbeat.interval.ms.", at_least=1),
    Setting("group.consumer.session.timeout.ms", 45000, "How long a consumer group member may go without a heartbeat before it is removed.", at_least=1),
    Setting("group.consumer.min.session.timeout.ms", 45000, "Smallest allowed group.consumer.session.timeout.ms.", at_least=1),
    Setting("group.consumer.max.session.timeout.ms", 60000, "Largest allowed group.consumer.session.timeout.ms.", at_least=1),
    Setting("group.consumer.max.size", INT32_MAX, "Most members a consumer group may have.", at_least=1),
    Setting("group.consumer.assignors", "uniform,range", "The server-side assignors a consumer group may use (short names or Kafka's class names); the first is the default.", str),
    Setting("group.consumer.migration.policy", "bidirectional", "Whether a classic group may become a consumer group (upgrade) and back (downgrade) while it has members.",
            str, ("disabled", "upgrade", "downgrade", "bidirectional"), ignore_case=True),
    Setting("group.consumer.assignment.interval.ms", 1000, "Kafka 4.3 (KIP-1263): the least time between two computations of a consumer group's target assignment; a change within it waits for a heartbeat after it (0: at once, as before 4.3).", at_least=0),
    Setting("group.consumer.min.assignment.interval.ms", 0, "Smallest allowed consumer.assignment.interval.ms of a group (Kafka 4.3).", at_least=0),
    Setting("group.consumer.max.assignment.interval.ms", 15000, "Largest allowed consumer.assignment.interval.ms of a group (Kafka 4.3).", at_least=0),
    Setting("group.consumer.regex.refresh.interval.ms", 600000, "The longest a consumer group's regex subscriptions go without being resolved again, new topics or not (Kafka 4.1's internal config; at least 10000, Kafka's fixed minimum between two resolutions of a group).", at_least=10000),
    # share groups (KIP-932): Kafka's GroupCoordinatorConfig and ShareGroupConfig, their names, defaults and bounds
    Setting("log.retention.ms", 604800000, "How long a topic's records are kept (Kafka's log.retention.ms; a topic's retention.ms overrides it): whole segments whose newest record is older go. -1: for ever.", at_least=-1, long=True),
    Setting("log.retention.bytes", -1, "How large a partition's log may grow before its oldest segments go (a topic's retention.bytes overrides it). -1: no limit.", long=True),
    Setting("log.segment.bytes", 1073741824, "The size at which a partition's log rolls to a new segment (a topic's segment.bytes overrides it).", at_least=1048576),
    Setting("log.retention.check.interval.ms", 300000, "How often log retention runs.", at_least=1, long=True),
    Setting("group.share.enable", False, "Kafka 4.1 and 4.2's internal switch: share groups on whatever share.version says (Kafka 4.3 has no such config: ignored there).", bool),
    Setting("share.version", -1, "The share.version feature's finalized level (kafka-features.sh): 1 serves share groups (ShareGroupHeartbeat, ShareFetch and the other share APIs; ApiVersions reports it), 0 does not (they answer UNSUPPORTED_VERSION). -1: the release's default, 0 at 4.1 (preview), 1 from 4.2.", at_least=-1, at_most=1),
    Setting("group.share.session.timeout.ms", 45000, "How long a share group member may go without a heartbeat before it is removed.", at_least=1),
    Setting("group.share.min.session.timeout.ms", 45000, "Smallest allowed share.session.timeout.ms of a group.", at_least=1),
    Setting("group.share.max.session.timeout.ms", 60000, "Largest allowed share.session.timeout.ms of a group.", at_least=1),
    Setting("group.share.heartbeat.interval.ms", 5000, "How often members of a share group heartbeat (what the heartbeat response tells them).", at_least=1),
    Setting("group.share.min.heartbeat.interval.ms", 5000, "Smallest allowed share.heartbeat.interval.ms of a group.", at_least=1),
    Setting("group.share.max.heartbeat.interval.ms", 15000, "Largest allowed share.heartbeat.interval.ms of a group.", at_least=1),
    Setting("group.share.max.size", 200, "Most members a share group may have.", at_least=1, at_most=1000),
    Setting("group.share.assignors", "simple", "The share groups' server-side assignor: exactly one, simple (Kafka's SimpleAssignor; its class name is taken too).", str),
    Setting("group.share.assignment.interval.ms", 1000, "Kafka 4.3 (KIP-1263): the least time between two computations of a share group's target assignment; a change within it waits for a heartbeat after it (0: at once, as before 4.3).", at_least=0),
    Setting("group.share.min.assignment.interval.ms", 0, "Smallest allowed share.assignment.interval.ms of a group (Kafka 4.3).", at_least=0),
    Setting("group.share.max.assignment.interval.ms", 15000, "Largest allowed share.assignment.interval.ms of a group (Kafka 4.3).", at_least=0),
    Setting("group.share.record.lock.duration.ms", 30000, "How long a record a share consumer acquired stays locked to it (the acquisition lock).", at_least=1000, at_most=3600000),
    Setting("group.share.min.record.lock.duration.ms", 15000, "Smallest allowed share.record.lock.duration.ms of a group.", at_least=1000, at_most=30000),
    Setting("group.share.max.record.lock.duration.ms", 60000, "Largest allowed share.record.lock.duration.ms of a group.", at_least=30000, at_most=3600000),
    Setting("group.share.delivery.count.limit", 5, "How many times a record is delivered to a share group before it is archived.", at_least=2, at_most=10),
    Setting("group.share.min.delivery.count.limit", 2, "Smallest allowed share.delivery.count.limit of a group (Kafka 4.3).", at_least=2, at_most=5),
    Setting("group.share.max.delivery.count.limit", 10, "Largest allowed share.delivery.count.limit of a group (Kafka 4.3).", at_least=5, at_most=25),
    Setting("group.share.partition.max.record.locks", 2000, "Most records of a share-partition in flight (acquired, or acknowledged behind one that is not).", at_least=100, at_most=10000),
    Setting("group.share.min.partition.max.record.locks", 100, "Smallest allowed share.partition.max.record.locks of a group (Kafka 4.3).", at_least=100, at_most=2000),
    Setting("group.share.max.partition.max.record.locks", 4000, "Largest allowed share.partition.max.record.locks of a group (Kafka 4.3).", at_least=2000, at_most=10000),
    Setting("group.share.max.share.sessions", 2000, "Most share sessions a broker holds.", at_least=1),
    Setting("offsets.topic.num.partitions", 50, "Partitions of __consumer_offsets; a group's coordinator is the leader of abs(hash(group)) % this.", at_least=1),
    Setting("offsets.retention.minutes", 10080, "How long committed offsets of an empty group are kept.", at_least=1),
    Setting("offsets.retention.check.interval.ms", 600000, "How often expired offsets are swept.", at_least=1, long=True),
    Setting("offset.metadata.max.bytes", 4096, "Longest metadata string an offset commit may carry."),
    # the transaction coordinator (Kafka's TransactionStateManagerConfig and TransactionLogConfig)
    Setting("transaction.state.log.num.partitions", 50, "Partitions of the transaction log (__transaction_state): a transactional id's coordinator leads partition abs(javaHash(id)) % this.", at_least=1),
    Setting("transaction.max.timeout.ms", 900000, "The longest transaction.timeout.ms a producer may ask for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it).", at_least=1),
    Setting("transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000, "How often transactions open for longer than their timeout are aborted (their producers fenced).", at_least=1),
    Setting("transactional.id.expiration.ms", 604800000, "How long a transactional id with no transaction open is kept without a request before it is forgotten.", at_least=1),
    Setting("transaction.remove.expired.transaction.cleanup.interval.ms", 3600000, "How often expired transactional ids are forgotten.", at_least=1),
    Setting("producer.id.expiration.ms", 86400000, "How long a partition keeps an idle producer's state (its epoch and last sequences) when it has no open transaction there.", at_least=1),
    Setting("producer.id.expiration.check.interval.ms", 600000, "How often idle producers' state is forgotten.", at_least=1),
    Setting("auto.create.topics.enable", True, "Create unknown topics on Metadata requests that allow it.", bool),
    Setting("num.partitions", 1, "Partitions of auto-created topics.", at_least=1),
    Setting("default.replication.factor", 1, "Replication factor reported for topics (no replication is emulated)."),
    Setting("message.max.bytes", 1048588, "Largest record batch a Produce may carry.", at_least=0),
    Setting("cluster.id", "groupcoord-cluster", "Cluster id reported by Metadata.", str),
    Setting("groupcoord.kafka.version", "4.3", "The Kafka release emulated: the API versions served and advertised, the features ApiVersions reports, and the coordinator's behaviour where a release changed it (4.3, 4.2, 4.1 or 3.9).",
            str, RELEASES),
    Setting("advertised.listeners", "", "The address clients are told (Metadata, FindCoordinator), as LISTENER://host:port, e.g. PLAINTEXT://kafka:9092; node i advertises port+i. Empty: the address listened on (this host's name when that is 0.0.0.0).", str),
    # connections (coordinator/server.py); each node counts its own, as each Kafka broker does
    Setting("socket.request.max.bytes", 104857600, "Largest request a connection may send; a larger size prefix closes the connection.", at_least=1),
    Setting("connections.max.idle.ms", 600000, "Close a connection that has sent and been sent nothing for this long; -1: never.", long=True),
    Setting("socket.listen.backlog.size", 4096, "Connections the kernel queues for a node until they are accepted (capped by net.core.somaxconn). Kafka's default is 50; 4096 lets a burst of 3,000 connects in at once.", at_least=1),
    Setting("max.connections", INT32_MAX, "Most connections a node holds; at the limit it accepts none (they wait in the listen backlog) until one closes.", at_least=0),
    Setting("max.connections.per.ip", INT32_MAX, "Most connections a node holds from one IP address; one more is closed at once. 0 only with overrides.", at_least=0),
    Setting("max.connections.per.ip.overrides", "", "Limits of some addresses as host:count,host:count, e.g. 127.0.0.1:200 (a host name: each address it resolves to).", str),
    # security (coordinator/security.py)
    Setting("sasl.enabled.mechanisms", "", "SASL mechanisms of the listeners: PLAIN, or empty for PLAINTEXT listeners.", str),
    Setting("listener.name.sasl_plaintext.plain.sasl.jaas.config", "", "Kafka's PlainLoginModule JAAS line; its user_<name>=\"<password>\" options are the users.", str),
    Setting("groupcoord.sasl.users", "", "SASL/PLAIN users as name:password,name:password (added to the JAAS users).", str),
    Setting("connection.failed.authentication.delay.ms", 100, "Delay of the answer to a failed authentication, before the connection is closed.", at_least=0),
    Setting("sasl.server.max.receive.size", 524288, "Largest frame before and during SASL authentication; a larger size prefix closes the connection without reading the body. -1: no limit but socket.request.max.bytes."),
    Setting("authorizer.class.name", "", "Any non-empty value turns on the ACL authorizer (StandardAuthorizer semantics).", str),
    Setting("groupcoord.acls.enabled", False, "Turn on the ACL authorizer (as a non-empty authorizer.class.name does).", bool),
    Setting("super.users", "", "Principals allowed everything, e.g. User:admin;User:bob.", str),
    Setting("allow.everyone.if.no.acl.found", False, "Allow an operation on a resource that no ACL matches.", bool),
    Setting("groupcoord.acls.file", "", "A JSON file with a list of ACL bindings loaded at start.", str),
]}

PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    # fast tests: no initial delay, and clients may use short sessions
    "test": {
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 100,
        "offsets.retention.check.interval.ms": 60000,
        # consumer groups: librdkafka uses the heartbeat interval as the heartbeat's request
        # timeout, so 250 ms rather than less on a loaded machine
        "group.consumer.heartbeat.interval.ms": 250,
        "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.session.timeout.ms": 6000,
        "group.consumer.min.session.timeout.ms": 1000,
        # a target assignment at once, as Kafka's own request tests set it (Kafka 4.3's default: 1 s)
        "group.consumer.assignment.interval.ms": 0,
        # share groups the same way: a share consumer gets its partitions a heartbeat after it joins
        "group.share.heartbeat.interval.ms": 250,
        "group.share.min.heartbeat.interval.ms": 100,
        "group.share.session.timeout.ms": 6000,
        "group.share.min.session.timeout.ms": 1000,
        "group.share.assignment.interval.ms": 0,
    },
}


class ConfigError(ValueError):
    pass


#: the names group.share.assignors may give: Kafka's one share group assignor, by name or class name
SHARE_ASSIGNOR_NAMES: dict[str, str] = {"simple": "simple",
                                        "org.apache.kafka.coordinator.group.assignor.SimpleAssignor": "simple"}

#: the names group.consumer.assignors may give, in Kafka's default order: those of the consumer
#: group's server-side assignors (group/assignors' ASSIGNORS, which a test keeps the same)
SERVER_ASSIGNOR_NAMES: tuple[str, ...] = ("uniform", "range")

#: Kafka's class names of those assignors, which group.consumer.assignors may give instead
ASSIGNOR_CLASS_NAMES: dict[str, str] = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(value: str) -> list[str]:
    """group.consumer.assignors: short names or Kafka's class names, comma-separated."""
    out = []
    for item in str(value).split(","):
        name = ASSIGNOR_CLASS_NAMES.get(item.strip(), item.strip())
        if name:
            out.append(name)
    return out


def _invalid(key: str, value: Any, why: str) -> ConfigError:
    """Kafka's ConfigException: "Invalid value <value> for configuration <key>: <why>"."""
    return ConfigError(f"Invalid value {value} for configuration {key}: {why}")


def _convert(key: str, value: Any) -> Any:
    """A config's value parsed and checked as Kafka's ConfigDef does (ConfigError in its words)."""
    setting = SETTINGS.get(key)
    if setting is None:
        raise ConfigError(f"unknown config {key!r}; known: {', '.join(sorted(SETTINGS))}")
    text = str(value).strip() if not isinstance(value, bool) else str(value).lower()
    if setting.choices:
        if (text.lower() if setting.ignore_case else text) not in setting.choices:
            kind = " (case insensitive)" if setting.ignore_case else ""
            raise _invalid(key, value, f"String must be one of{kind}: {', '.join(setting.choices)}")
        return text.lower() if setting.ignore_case else text
    if setting.kind is str:
        return str(value)
    if setting.kind is bool:
        if text.lower() not in ("true", "false"):
            raise _invalid(key, value, "Expected value to be either true or false")
        return text.lower() == "true"
    bits = 63 if setting.long else 31
    try:
        number = value if isinstance(value, int) and not isinstance(value, bool) else int(text)
    except ValueError:
        number = None
    if number is None or not -2**bits <= number < 2**bits:
        raise _invalid(key, value, f"Not a number of type {'LONG' if setting.long else 'INT'}")
    if setting.at_least is not None and number < setting.at_least:
        raise _invalid(key, value, f"Value must be at least {setting.at_least}")
    if setting.at_most is not None and number > setting.at_most:
        raise _invalid(key, value, f"Value must be no more than {setting.at_most}")
    return number


def read_properties(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
            if sep < 0:
                raise ConfigError(f"{path}:{lineno}: expected key=value")
            out[line[:sep].strip()] = line[sep + 1:].strip()
    return out


def _check(values: dict[str, Any]) -> None:
    """The checks of Kafka's GroupCoordinatorConfig between settings."""
    protocols = [p.strip() for p in values["group.coordinator.rebalance.protocols"].split(",") if p.strip()]
    unknown = [p for p in protocols if p not in ("classic", "consumer", "share")]
    if unknown or "classic" not in protocols:
        raise ConfigError("group.coordinator.rebalance.protocols must list classic, and may list consumer and share; "
                          f"got {values['group.coordinator.rebalance.protocols']!r}")
    # GroupCoordinatorConfig's requirements, in its words
    # (the assignment interval is Kafka 4.3's: before, its configs do not exist and are not checked)
    new_interval = at_least(values["groupcoord.kafka.version"], "4.3")
    for what in ("heartbeat.interval", "session.timeout") + (("assignment.interval",) if new_interval else ()):
        key, lo_key, hi_key = (f"group.consumer.{m}{what}.ms" for m in ("", "min.", "max."))
        if values[hi_key] < values[lo_key]:
            raise ConfigError(f"{hi_key} must be greater than or equal to {lo_key}")
        if values[key] < values[lo_key]:
            raise ConfigError(f"{key} must be greater than or equal to {lo_key}")
        if values[key] > values[hi_key]:
            raise ConfigError(f"{key} must be less than or equal to {hi_key}")
    if values["group.consumer.heartbeat.interval.ms"] >= values["group.consumer.session.timeout.ms"]:
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    _check_share(values)
    names = assignor_names(values["group.consumer.assignors"])
    unknown = [n for n in names if n not in SERVER_ASSIGNOR_NAMES]
    if unknown or not names:
        raise ConfigError(f"group.consumer.assignors: unknown assignor(s) {unknown or '(none given)'}; "
                          f"known: {', '.join(SERVER_ASSIGNOR_NAMES)}")


def _check_share(values: dict[str, Any]) -> None:
    """The share group configs' requirements between them: GroupCoordinatorConfig's and
    ShareGroupConfig.validate's, in their words (the minimums and maximums of delivery count limits
    and record locks came with Kafka 4.3, as did the assignment interval)."""
    bounded = ["heartbeat.interval", "session.timeout"]
    if at_least(values["groupcoord.kafka.version"], "4.3"):
        bounded.append("assignment.interval")
    for what in bounded:            # GroupCoordinatorConfig
        key, lo_key, hi_key = (f"group.share.{m}{what}.ms" for m in ("", "min.", "max."))
        _require(values, hi_key, ">=", lo_key)
        _require(values, key, ">=", lo_key)
        _require(values, key, "<=", hi_key)
    _require(values, "group.share.heartbeat.interval.ms", "<", "group.share.session.timeout.ms")
    given = [n.strip() for n in str(values["group.share.assignors"]).split(",") if n.strip()]
    if len(given) != 1:
        raise ConfigError(f"group.share.assignors must contain exactly one assignor, but found {len(given)}")
    if given[0] not in SHARE_ASSIGNOR_NAMES:
        raise ConfigError(f"group.share.assignors: unknown assignor {given[0]!r}; known: simple")
    # ShareGroupConfig.validate
    _require(values, "group.share.record.lock.duration.ms", ">=", "group.share.min.record.lock.duration.ms")
    _require(values, "group.share.max.record.lock.duration.ms", ">=", "group.share.record.lock.duration.ms")
    if at_least(values["groupcoord.kafka.version"], "4.3"):
        for what in ("delivery.count.limit", "partition.max.record.locks"):
            key, lo_key, hi_key = (f"group.share.{m}{what}" for m in ("", "min.", "max."))
            _require(values, hi_key, ">=", key)
            _require(values, key, ">=", lo_key)
    _require(values, "group.share.max.share.sessions", ">=", "group.share.max.size")


_RELATIONS = {">=": ("greater than or equal to", lambda a, b: a >= b),
              "<=": ("less than or equal to", lambda a, b: a <= b), "<": ("less than", lambda a, b: a < b)}


def _require(values: dict[str, Any], key: str, relation: str, other: str) -> None:
    """Kafka's ``Utils.require`` of one setting against another: "<key> must be <relation> <other>"."""
    words, holds = _RELATIONS[relation]
    if not holds(values[key], values[other]):
        raise ConfigError(f"{key} must be {words} {other}")


class BrokerConfig:
    """Resolved configuration: ``cfg["group.max.size"]`` or ``cfg.get(...)``."""

    def __init__(self, values: Mapping[str, Any] | None = None, *, profile: str = "default",
                 properties_file: str | None = None, environ: Mapping[str, str] | None = None):
        if profile not in PROFILES:
            raise ConfigError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
        self.profile = profile
        merged: dict[str, Any] = {k: s.default for k, s in SETTINGS.items()}
        merged.update(PROFILES[profile])
        explicit = set()
        if properties_file:
            given = read_properties(properties_file)
            merged.update({k: _convert(k, v) for k, v in given.items()})
            explicit.update(given)
        env = os.environ if environ is None else environ
        for key in SETTINGS:
            name = "GROUPCOORD_" + key.upper().replace(".", "_")
            if name in env:
                merged[key] = _convert(key, env[name])
                explicit.add(key)
        for k, v in (values or {}).items():
            merged[k] = _convert(k, v)
            explicit.add(k)
        _check(merged)
        self._values = merged
        #: the settings given (a file, the environment, --set), not left to a default or the profile
        self.explicit = frozenset(explicit)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != SETTINGS[k].default}
        return f"BrokerConfig(profile={self.profile!r}, {changed})"
