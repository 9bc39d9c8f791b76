"""Consumer configuration, by Kafka's consumer config names and with Kafka's defaults.

    cfg = ConsumerConfig({"group.id": "orders", "session.timeout.ms": 10000})
    cfg["heartbeat.interval.ms"]            # 3000, Kafka's default
    ConsumerConfig(group_id="orders")       # keyword form: underscores stand for dots

Values may be given typed (``10000``, ``True``, ``["range"]``) or as the strings of a
properties file (``"10000"``, ``"true"``, ``"range,cooperative-sticky"``). An unknown key,
a value of the wrong type or out of range, or an inconsistent combination raises
:class:`ConfigError`, whose ``key`` names the offending config.

Only what this client implements is accepted: ``group.protocol`` is ``classic`` or ``consumer``
(KIP-848), ``security.protocol`` ``PLAINTEXT``. As Kafka's ``ConsumerConfig`` does, the settings
one group protocol does not use are refused when given with the other (see
:data:`CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`), and :class:`ShareConsumerConfig` (a share consumer's,
Kafka's ``ShareConsumerConfig``) refuses those a share group has no use for
(:data:`SHARE_GROUP_UNSUPPORTED_CONFIGS`). Configs Kafka has that only tune I/O buffers
(``send.buffer.bytes`` ...) are accepted and ignored, so that Java property files load.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


#: the numbers of the client ids a consumer gives itself (Kafka's CONSUMER_CLIENT_ID_SEQUENCE)
_CLIENT_ID_SEQUENCE = itertools.count(1)


class ConfigError(ValueError):
    """A bad consumer config; ``key`` is the config at fault."""

    def __init__(self, key: str | None, message: str):
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.reason = message


_NO_DEFAULT = object()


@dataclass(frozen=True)
class ConfigDef:
    key: str
    default: Any
    kind: str                                   # int, long, bool, str, list, choice
    doc: str
    low: int | None = None                      # inclusive bounds of int / long
    high: int | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False
    ignored: bool = False                       # accepted for compatibility, no effect here


def _d(key, default, kind, doc, **kw) -> ConfigDef:
    return ConfigDef(key, default, kind, doc, **kw)


#: Kafka's assignor class names, accepted as synonyms of the protocol names.
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
KNOWN_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: Kafka's ConsumerConfig.CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS and CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS
CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS = ("group.remote.assignor", "share.acknowledgement.mode", "share.acquire.mode")
CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS = ("partition.assignment.strategy", "heartbeat.interval.ms",
                                         "session.timeout.ms", "share.acknowledgement.mode", "share.acquire.mode")
#: Kafka's ShareConsumerConfig.SHARE_GROUP_UNSUPPORTED_CONFIGS (interceptor.classes is not a config here)
SHARE_GROUP_UNSUPPORTED_CONFIGS = ("auto.offset.reset", "enable.auto.commit", "group.instance.id", "isolation.level",
                                   "partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms",
                                   "group.protocol", "group.remote.assignor")

CONSUMER_CONFIGS: dict[str, ConfigDef] = {d.key: d for d in [
    _d("bootstrap.servers", [], "list", "host:port pairs used to reach the cluster the first time."),
    _d("client.id", "", "str", "Client id sent in request headers; prefix of dynamic member ids. None or "
                               "empty: consumer-<group.id>-<group.instance.id or n>, as Kafka's consumer names itself."),
    _d("client.rack", "", "str", "Rack of this consumer (subscription v3 rack id); empty for none."),
    _d("group.id", None, "str", "Consumer group to join; None disables group management.", nullable=True),
    _d("group.instance.id", None, "str", "Static member id (KIP-345); None for a dynamic member.",
       nullable=True),
    _d("group.protocol", "classic", "choice",
       "The group protocol: 'classic' (JoinGroup/SyncGroup) or 'consumer' (KIP-848, ConsumerGroupHeartbeat).",
       choices=("classic", "consumer")),
    _d("group.remote.assignor", None, "str",
       "The server-side assignor (group.protocol=consumer); None lets the coordinator pick its first.",
       nullable=True),
    _d("session.timeout.ms", 45000, "int", "Session timeout of the group membership.", low=1),
    _d("heartbeat.interval.ms", 3000, "int", "Interval between heartbeats; below session.timeout.ms.",
       low=1),
    _d("max.poll.interval.ms", 300000, "int",
       "Longest gap between polls before the member leaves the group; also the rebalance timeout.",
       low=1),
    _d("max.poll.records", 500, "int", "Most records one poll returns.", low=1),
    _d("partition.assignment.strategy", ["range", "cooperative-sticky"], "list",
       "Assignors in order of preference: names, Kafka class names or assignor objects."),
    _d("enable.auto.commit", True, "bool", "Commit consumed offsets in the background."),
    _d("auto.commit.interval.ms", 5000, "int", "Interval of auto-commits.", low=0),
    _d("auto.offset.reset", "latest", "choice", "Where to start without a committed offset.",
       choices=("latest", "earliest", "none")),
    _d("retry.backoff.ms", 100, "long", "Backoff before retrying a failed request.", low=0),
    _d("retry.backoff.max.ms", 1000, "long", "Largest retry backoff.", low=0),
    _d("reconnect.backoff.ms", 50, "long", "Backoff before reconnecting to a node.", low=0),
    _d("reconnect.backoff.max.ms", 1000, "long", "Largest reconnect backoff.", low=0),
    _d("request.timeout.ms", 30000, "int", "How long to wait for a response.", low=0),
    _d("default.api.timeout.ms", 60000, "int", "Timeout of blocking calls (commit, committed, close).",
       low=0),
    _d("socket.connection.setup.timeout.ms", 10000, "long", "Timeout of a connection attempt.", low=0),
    _d("metadata.max.age.ms", 300000, "long", "Refresh metadata at least this often.", low=0),
    _d("allow.auto.create.topics", True, "bool", "Let Metadata requests auto-create subscribed topics."),
    _d("exclude.internal.topics", True, "bool", "Internal topics are never subscribed by pattern."),
    _d("fetch.min.bytes", 1, "int", "Least data a fetch waits for.", low=0),
    _d("fetch.max.bytes", 52428800, "int", "Most data one fetch returns.", low=0),
    _d("fetch.max.wait.ms", 500, "int", "Longest a fetch waits for fetch.min.bytes.", low=0),
    _d("max.partition.fetch.bytes", 1048576, "int", "Most data per partition in one fetch.", low=0),
    _d("isolation.level", "read_uncommitted", "choice",
       "Which records fetches return; read_committed is not implemented.", choices=("read_uncommitted",)),
    _d("check.crcs", True, "bool", "Verify the CRC of fetched record batches."),
    _d("security.protocol", "PLAINTEXT", "choice", "Only PLAINTEXT is implemented.",
       choices=("PLAINTEXT",)),
    _d("client.dns.lookup", "use_all_dns_ips", "choice", "Accepted for compatibility.",
       choices=("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"), ignored=True),
    _d("connections.max.idle.ms", 540000, "long", "Accepted for compatibility.", low=-1, ignored=True),
    _d("send.buffer.bytes", 131072, "int", "Accepted for compatibility.", low=-1, ignored=True),
    _d("receive.buffer.bytes", 65536, "int", "Accepted for compatibility.", low=-1, ignored=True),
    _d("metrics.sample.window.ms", 30000, "long", "Accepted for compatibility.", low=0, ignored=True),
    _d("metrics.num.samples", 2, "int", "Accepted for compatibility.", low=1, ignored=True),
    _d("metrics.recording.level", "INFO", "choice", "Accepted for compatibility.",
       choices=("INFO", "DEBUG", "TRACE"), ignored=True),
    _d("enable.metrics.push", True, "bool", "Accepted for compatibility.", ignored=True),
    _d("share.acknowledgement.mode", "implicit", "choice",
       "A share consumer's: 'implicit' accepts every record of a poll at the next poll or commit; 'explicit' "
       "makes the application acknowledge each record (acknowledge()).", choices=("implicit", "explicit")),
    _d("share.acquire.mode", "batch_optimized", "choice",
       "A share consumer's: 'record_limit' acquires at most max.poll.records per fetch (ShareFetch v2, Kafka "
       "4.2+); 'batch_optimized' may acquire more, to whole batches.", choices=("batch_optimized", "record_limit")),
]}


def _convert(d: ConfigDef, value: Any) -> Any:
    key = d.key
    if value is None:
        if d.nullable:
            return None
        raise ConfigError(key, "must not be None")
    if d.kind in ("int", "long"):
        if isinstance(value, bool):
            raise ConfigError(key, f"expects an integer, got {value!r}")
        if isinstance(value, int):
            n = value
        elif isinstance(value, str):
            try:
                n = int(value.strip())
            except ValueError:
                raise ConfigError(key, f"expects an integer, got {value!r}") from None
        else:
            raise ConfigError(key, f"expects an integer, got {type(value).__name__} {value!r}")
        high = d.high if d.high is not None else (INT32_MAX if d.kind == "int" else INT64_MAX)
        if d.low is not None and n < d.low:
            raise ConfigError(key, f"must be at least {d.low}, got {n}")
        if n > high:
            raise ConfigError(key, f"must be at most {high}, got {n}")
        return n
    if d.kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ConfigError(key, f"expects true or false, got {value!r}")
    if d.kind == "str":
        if not isinstance(value, str):
            raise ConfigError(key, f"expects a string, got {type(value).__name__} {value!r}")
        return value
    if d.kind == "choice":
        if not isinstance(value, str):
            raise ConfigError(key, f"expects one of {', '.join(d.choices)}, got {value!r}")
        for c in d.choices:
            if value.strip().lower() == c.lower():
                return c
        raise ConfigError(key, f"expects one of {', '.join(d.choices)}, got {value!r}")
    if d.kind == "list":
        if isinstance(value, str):
            items: list = [v.strip() for v in value.split(",") if v.strip()]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            items = [value]
        return items
    raise AssertionError(d.kind)


def _check_assignors(items: list) -> list:
    from .assignors.base import ConsumerPartitionAssignor
    if not items:
        raise ConfigError("partition.assignment.strategy", "needs at least one assignor")
    out = []
    for item in items:
        if isinstance(item, str):
            name = ASSIGNOR_CLASS_NAMES.get(item, item)
            known = _known_assignor_names()
            if name not in known:
                raise ConfigError("partition.assignment.strategy",
                                  f"unknown assignor {item!r}; known: {', '.join(sorted(known))} "
                                  "(or an assignor object)")
            out.append(name)
        elif isinstance(item, ConsumerPartitionAssignor) or (
                isinstance(item, type) and issubclass(item, ConsumerPartitionAssignor)):
            out.append(item)
        else:
            raise ConfigError("partition.assignment.strategy",
                              f"{item!r} is neither an assignor name nor a ConsumerPartitionAssignor")
    names = [a if isinstance(a, str) else a.name for a in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError("partition.assignment.strategy", f"assignor {sorted(dupes)[0]!r} is listed twice")
    return out


def _given(keys: tuple[str, ...], given: dict) -> list[str]:
    """Those of keys set in given (None or a blank string counts as not set)."""
    return [k for k in keys if k in given and given[k] is not None and str(given[k]).strip() != ""]


def _check_servers(items: list) -> list[str]:
    out = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError("bootstrap.servers", f"expects host:port strings, got {item!r}")
        text = item.strip()
        if "://" in text:
            text = text.split("://", 1)[1]
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError("bootstrap.servers", f"invalid address {item!r}: expected host:port")
        out.append(f"{host}:{int(port)}")
    return out


class ConsumerConfig(Mapping[str, Any]):
    """Resolved consumer configuration: Kafka's defaults overridden by ``values``."""

    def __init__(self, values: Mapping[str, Any] | None = None, **kwargs: Any):
        given: dict[str, Any] = dict(values or {})
        for k, v in kwargs.items():
            given[k.replace("_", ".")] = v
        self._precheck(given)
        resolved: dict[str, Any] = {}
        for key, value in given.items():
            d = CONSUMER_CONFIGS.get(key)
            if d is None:
                close = [k for k in CONSUMER_CONFIGS if k.split(".")[-1] == key.split(".")[-1]
                         or k.replace(".", "") == key.replace(".", "").replace("_", "")]
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(key, f"unknown consumer config{hint}")
            resolved[key] = _convert(d, value)
        self._given = frozenset(resolved)
        self._check_unsupported(resolved, given)
        values_out = {k: d.default for k, d in CONSUMER_CONFIGS.items()}
        values_out.update(resolved)
        values_out["partition.assignment.strategy"] = _check_assignors(
            list(values_out["partition.assignment.strategy"]))
        values_out["bootstrap.servers"] = _check_servers(list(values_out["bootstrap.servers"]))
        self._values = values_out
        self._validate()

    def _precheck(self, given: dict) -> None:
        """What is refused before any value is read (a share consumer's: see ShareConsumerConfig)."""

    def _check_unsupported(self, resolved: dict, given: dict) -> None:
        """ConsumerConfig.checkUnsupportedConfigsPostProcess: the configs the chosen group.protocol
        does not use may not be set, with Kafka's message."""
        protocol = resolved.get("group.protocol", "classic")
        invalid = _given(CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS if protocol == "consumer"
                         else CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS, given)
        if invalid:
            raise ConfigError(invalid[0], f"{', '.join(invalid)} cannot be set when group.protocol={protocol.upper()}")

    def _validate(self) -> None:
        v = self._values
        if v["group.protocol"] == "classic" and v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            raise ConfigError("heartbeat.interval.ms",
                              f"must be lower than session.timeout.ms ({v['heartbeat.interval.ms']} >= "
                              f"{v['session.timeout.ms']})")
        gid = v["group.instance.id"]
        if gid is not None and (not gid.strip() or len(gid) > 249
                                or not all(c.isalnum() or c in "._-" for c in gid)):
            raise ConfigError("group.instance.id",
                              f"{gid!r} is not a legal instance id (1-249 of ASCII alphanumerics, '.', '_', '-')")
        if v["group.id"] is None:
            if "enable.auto.commit" in self._given and v["enable.auto.commit"]:
                raise ConfigError("enable.auto.commit", "cannot be true when group.id is not set")
            v["enable.auto.commit"] = False     # Kafka turns it off without a group
            if gid is not None:
                raise ConfigError("group.instance.id", "needs group.id")
        if v["retry.backoff.max.ms"] < v["retry.backoff.ms"]:
            v["retry.backoff.max.ms"] = v["retry.backoff.ms"]
        if not v["client.id"]:
            # Kafka's ConsumerConfig.maybeOverrideClientId: none or "" is "consumer-<group>-<instance id>",
            # or "consumer-<group>-<n>" numbered in this process from 1 (Java's null group: "null"); kept
            # from then on, overrides included. The coordinator prefixes member ids with it
            group = "null" if v["group.id"] is None else v["group.id"]
            part = gid if gid is not None else next(_CLIENT_ID_SEQUENCE)
            v["client.id"] = f"consumer-{group}-{part}"
            self._given = self._given | {"client.id"}
        if v["reconnect.backoff.max.ms"] < v["reconnect.backoff.ms"]:
            v["reconnect.backoff.max.ms"] = v["reconnect.backoff.ms"]

    # ---- Mapping ---------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise ConfigError(key, "unknown consumer config") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def is_set(self, key: str) -> bool:
        """Whether the config was given (rather than defaulted)."""
        return key in self._given

    def with_overrides(self, values: Mapping[str, Any]) -> "ConsumerConfig":
        merged = {k: self._values[k] for k in self._given}
        merged.update(values)
        return type(self)(merged)

    def __repr__(self) -> str:
        return f"ConsumerConfig({ {k: self._values[k] for k in sorted(self._given)} })"

    # ---- assignors ------------------------------------------------------------------
    def assignors(self, factories: Mapping[str, Callable[[], Any]] | None = None) -> list:
        """Assignor objects for partition.assignment.strategy.

        Names are looked up in ``factories`` (name -> zero-argument callable) or else in
        :mod:`groupcoord.client.assignors`; classes are instantiated; objects are used as they are.
        """
        out = []
        for item in self._values["partition.assignment.strategy"]:
            if isinstance(item, str):
                factory = (factories or {}).get(item) or _builtin_assignor(item)
                out.append(factory())
            elif isinstance(item, type):
                out.append(item())
            else:
                out.append(item)
        return out


class ShareConsumerConfig(ConsumerConfig):
    """A share consumer's configuration (Kafka's ShareConsumerConfig): the consumer's configs, but
    those a share group has no use for (:data:`SHARE_GROUP_UNSUPPORTED_CONFIGS`) may not be set, and
    group.id is required."""

    def _precheck(self, given: dict) -> None:
        # before the values are read: isolation.level=read_committed is Kafka's refusal too, not ours
        invalid = _given(SHARE_GROUP_UNSUPPORTED_CONFIGS, given)
        if invalid:
            raise ConfigError(invalid[0], f"{', '.join(invalid)} cannot be set when using a share group.")

    def _check_unsupported(self, resolved: dict, given: dict) -> None:
        pass

    def _validate(self) -> None:
        if not self._values["group.id"]:
            raise ConfigError("group.id", "a share consumer needs group.id")
        super()._validate()


def _builtin_assignor(name: str) -> Callable[[], Any]:
    """The assignor of groupcoord.client.assignors registered under ``name``."""
    from . import assignors as package
    registry = getattr(package, "ASSIGNORS", {})
    if name in registry:
        return registry[name]
    raise ConfigError("partition.assignment.strategy",
                      f"assignor {name!r} is not available in groupcoord.client.assignors")


def _known_assignor_names() -> set[str]:
    try:
        from .assignors import ASSIGNORS
        return set(ASSIGNORS) | set(KNOWN_ASSIGNORS)
    except ImportError:          # the assignors package is optional for the config itself
        return set(KNOWN_ASSIGNORS)
