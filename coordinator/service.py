"""The whole emulated service as one sans-I/O object.

A :class:`Service` holds the configuration, the cluster (nodes, topics, logs), the
timers and the group coordinator, and runs the request pipeline: :meth:`Service.admit`
(the SASL gate and authorization, the request faults), then :meth:`Service.dispatch`
(the fault's answer or the API's handler, the metrics seeing each response). Drivers
(the asyncio TCP server, the in-process embedding, the virtual-time simulator) frame
messages, keep time and deliver; what the core asks of them (hold a request, close a
connection, open a listener again, run something once the responses are written) they
carry out, none of it with asyncio below them.
"""
from __future__ import annotations

import time
import uuid
from typing import Callable, Iterable

import structlog

from groupcoord.protocol.api_keys import ApiKey

from .bus import EventBus
from .cluster import Cluster, Node
from .config import BrokerConfig
from .context import RequestContext, Respond, Verdict
from .events import default_emit
from .faults import FaultEngine
from .group.configs import GROUP_RESOURCE
from .group.runtime import GroupCoordinator
from .handlers import HANDLERS, advertised_versions, served_versions
from .releases import at_least
from .security import Security
from .share.manager import SharePartitionManager
from .timer import Timers
from .txn.coordinator import TransactionCoordinator

log = structlog.get_logger("groupcoord.service")

#: Kafka 4.3's default group.coordinator.rebalance.protocols (KIP-1237 names those a setting disables)
_KAFKA_PROTOCOLS = ("classic", "consumer", "streams")


def _warn_deprecated(config, release: str) -> None:
    """``KafkaConfig.groupCoordinatorRebalanceProtocols``' warnings at start-up, in its words: from
    Kafka 4.2, ``share`` listed in group.coordinator.rebalance.protocols is deprecated (share groups
    follow the share.version feature); 4.3 deprecates the config itself (KIP-1237): set at all, it
    warns."""
    key = "group.coordinator.rebalance.protocols"
    given = {p.strip() for p in str(config[key]).split(",")}
    if "share" in given and at_least(release, "4.2"):
        if at_least(release, "4.3"):
            share = (f"'share' in `{key}` is deprecated. Share groups are controlled by the 'share.version' feature. "
                     "This config will be removed in Kafka 5.0.")
        else:
            share = (f"'share' in {key} is deprecated. Share groups are controlled by the 'share.version' feature; "
                     "this broker config will be ignored in a future release.")
        log.warning("config_deprecated", config=key, message=share)
    if key not in config.explicit or not at_least(release, "4.3"):
        return
    disabled = [p for p in _KAFKA_PROTOCOLS if p not in given]
    message = f"The config `{key}` is deprecated and will be removed in Kafka 5.0."
    if disabled:
        message += (f" The following protocol(s) are currently disabled: {', '.join(disabled)}. In Kafka 5.0, all "
                    "protocols will always be enabled and controlled solely by feature versions (group.version, "
                    "streams.version, share.version) via kafka-features.sh. Please remove the configuration, which "
                    "will restore all protocols to the default enabled state, to prepare for the upgrade.")
    else:
        message += " Please remove the configuration to prepare for the upgrade."
    log.warning("config_deprecated", config=key, message=message)


#: the first producer id handed out, and how many each block kept in the metadata log holds (Kafka's
#: ProducerIdManager.PRODUCER_ID_BLOCK_SIZE)
_FIRST_PRODUCER_ID = 1000
PRODUCER_ID_BLOCK_SIZE = 1000


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Service:
    def __init__(self, config: BrokerConfig | None = None, *, nodes: int = 1, host: str = "127.0.0.1",
                 ports: Iterable[int] | None = None, clock: Callable[[], int] = wall_clock_ms,
                 emit: Callable[[dict], None] | None = None,
                 member_id_factory: Callable[[str], str] | None = None,
                 topic_id_factory: Callable[[str], uuid.UUID] | None = None, store=None) -> None:
        self.config = config or BrokerConfig()
        self.clock = clock
        self.timers = Timers()
        ports = list(ports) if ports is not None else [0] * nodes
        if len(ports) != nodes:
            raise ValueError("one port per node")
        self.cluster = Cluster([Node(i, host, p) for i, p in enumerate(ports)],
                               offsets_partitions=self.config["offsets.topic.num.partitions"],
                               cluster_id=self.config["cluster.id"], topic_id_factory=topic_id_factory,
                               clock=clock)
        # every structured event goes through the bus; ``emit`` (default: the structlog logger)
        # is its first subscriber
        self.bus = EventBus()
        self.bus.subscribe(emit if emit is not None else default_emit)
        # the request pipeline's hooks (admit and dispatch below), in order:
        #   before(ctx, body) -> None to go on, or a Verdict (respond with a body, delay, close):
        #     the SASL gate and authorization (security.py), the request faults (faults.py)
        #   after(ctx, body, response, seconds) once the response is produced (metrics.py)
        self.before_request: list[Callable] = []
        self.after_request: list[Callable] = []
        # SASL/PLAIN and ACLs (sets self.security; with SASL on, its connection gate is the first hook)
        Security.from_config(self.config).install(self)
        self.group_coordinator = GroupCoordinator(self.config, self.timers, clock, emit=self.bus.publish,
                                                  member_id_factory=member_id_factory, store=store)
        self.store = self.group_coordinator.store
        # the group types read the cluster's topics, and hear of their changes
        self.group_coordinator.set_metadata_image(self.cluster)
        self.cluster.topic_listeners.append(self.group_coordinator.topics_changed)
        release = self.config["groupcoord.kafka.version"]
        # the share-partition leaders' side of share groups (ShareFetch, ShareAcknowledge), whose
        # share-partition states the group coordinator initializes and deletes
        self.share_partitions = SharePartitionManager(cluster=self.cluster, timers=self.timers, clock=clock,
                                                      config=self.config,
                                                      group_configs=self.group_coordinator.group_configs,
                                                      release=release)
        self.group_coordinator.share.persister = self.share_partitions.states
        # its events (share sessions, records acquired, acknowledged, lock expiries) on the bus, with the
        # group's epoch, state and members as every event has them
        self._kept_next_producer_id = 0
        self.share_partitions.group_view = self._group_view
        self.share_partitions.emit = self.bus.publish
        self.cluster.log_defaults = {"retention.ms": self.config["log.retention.ms"],
                                     "retention.bytes": self.config["log.retention.bytes"],
                                     "segment.bytes": self.config["log.segment.bytes"]}
        # the API versions of the Kafka release emulated: answered, and listed by ApiVersions
        _warn_deprecated(self.config, release)
        self.served_versions = served_versions(release)
        self._advertised = advertised_versions(release)
        if hasattr(self.store, "load_topics"):
            self._restore_topics()
        if hasattr(self.store, "load_share_states"):
            states = self.share_partitions.states
            states.restore(self.store.load_share_states().items())
            states.log = self._keep_share_state
        self._schedule_retention()
        self._schedule_producer_expiry()
        # producer ids: handed out from blocks kept in the metadata log (Kafka's ProducerIdsRecord), so
        # none is handed out twice, restarts included
        self._next_producer_id = max(_FIRST_PRODUCER_ID, self._kept_next_producer_id)
        self._producer_id_block_end = self._next_producer_id
        # the transaction coordinator: transactional producers' state (the transaction log), the
        # markers into the partitions and offsets their transactions touched
        self.transactions = TransactionCoordinator(
            self.config, self.timers, clock, self.cluster, self.group_coordinator,
            next_producer_id=self.next_producer_id,
            keep=self.store.put_transaction if hasattr(self.store, "put_transaction") else None,
            emit=self.bus.publish)
        if hasattr(self.store, "load_transactions"):
            loaded = self.transactions.load(self.store.load_transactions().items())
            if loaded:
                log.info("loaded transactions", transactional_ids=loaded)
        # fault injection (faults.py): hooks itself into before_request / the bus only when used
        self.faults = FaultEngine(self)

    def _group_view(self, group_id: str) -> tuple[int, str, int]:
        """(generation or group epoch, state, members) of a group, as events carry them; (-1, "Dead", 0)
        when there is none."""
        group = self.group_coordinator.get(group_id)
        if group is None:
            return -1, "Dead", 0
        return group.generation_id, group.state, len(group.members)

    def _keep_share_state(self, key, kind: str, value) -> None:
        """The share state log gets each share-partition's state as it changes (its latest whole state)."""
        group_id, topic_id, partition = key
        self.store.put_share_state(group_id, topic_id, partition, value)

    def _schedule_retention(self) -> None:
        """Kafka's log retention check, every log.retention.check.interval.ms."""
        def check() -> None:
            cut = self.cluster.apply_retention(self.clock())
            if cut:
                log.info("log retention", partitions=len(cut))
            self._schedule_retention()
        self.timers.schedule(("log-retention",), self.clock() + int(self.config["log.retention.check.interval.ms"]),
                             check)

    def _schedule_producer_expiry(self) -> None:
        """Kafka's producer id expiration, every producer.id.expiration.check.interval.ms."""
        def check() -> None:
            gone = self.cluster.expire_producers(self.clock(), int(self.config["producer.id.expiration.ms"]))
            if gone:
                log.info("producer ids expired", producers=gone)
            self._schedule_producer_expiry()
        self.timers.schedule(("producer-expiry",),
                             self.clock() + int(self.config["producer.id.expiration.check.interval.ms"]), check)

    def _restore_topics(self) -> None:
        """Bring back the store's topics (before any listener opens: a Metadata request would
        auto-create them), then keep every topic change and end offset in it."""
        state = self.store.load_topics()
        self._kept_next_producer_id = state.next_producer_id
        self.cluster.restore_topics(state.topics, state.end_offsets, self.store)
        self.cluster.store = self.store
        group_configs = self.group_coordinator.group_configs
        for (resource_type, group_id), configs in state.configs.items():
            if resource_type == GROUP_RESOURCE:
                for name, value in configs.items():
                    group_configs.restore(group_id, name, value)     # (by its type; a bad one ignored)
        if state.topics:
            log.info("loaded topics", topics=len(state.topics),
                     partitions=sum(t.partitions for t in state.topics.values()))

    def load(self) -> dict:
        """Replay the store's logs into the coordinator, synchronously (for drivers that load
        before their listeners open). Returns statistics."""
        for _ in self.loader():
            pass
        return self.load_stats

    def loader(self):
        """Replay the store's logs one offsets-topic partition at a time, yielding each partition
        once loaded (a driver may serve requests in between: until its partition is loaded, a
        group answers COORDINATOR_LOAD_IN_PROGRESS, as in Kafka); then ``load_stats`` holds the
        statistics."""
        store = self.store
        partitions = store.partitions() if hasattr(store, "partitions") else []
        started = time.monotonic()
        records = groups = 0
        gc = self.group_coordinator
        for p in partitions:
            gc.begin_loading(p)     # every partition with data is loading from now on
        self.load_stats = stats = {"partitions": len(partitions), "records": 0, "groups": 0,
                                    "duration_ms": 0.0}
        for i, p in enumerate(partitions):
            try:
                loaded = store.load(p)
            except BaseException:
                for q in partitions[i:]:
                    gc.complete_loading(q, [])
                raise
            records += len(loaded)
            groups += gc.complete_loading(p, loaded)
            stats.update(records=records, groups=groups)
            yield p
        stats["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
        if partitions:
            log.info("loaded state", **stats)

    # ---- what handlers rely on ---------------------------------------------------
    def is_coordinator(self, group_id: str, node_id: int) -> bool:
        return self.cluster.coordinator_for(group_id) == node_id

    def alter_group_configs(self, group_id: str, changes: dict, validate_only: bool = False) -> None:
        """Set (None: delete) dynamic configs of a group, as IncrementalAlterConfigs does: checked as
        Kafka's GroupConfig.validate checks them (ValueError, in its words, nothing changed), then
        kept in the metadata log under ``--data-dir``. Running groups use them from their members'
        next heartbeat. Kafka 3.9 has no group configs: ValueError."""
        if not at_least(self.config["groupcoord.kafka.version"], "4.0"):
            raise ValueError("Kafka 3.9 has no group configs (they came with Kafka 4.0)")
        configs = self.group_coordinator.group_configs
        if validate_only:
            configs.check(group_id, changes)
            return
        configs.set(group_id, changes)
        put = getattr(self.store, "put_config", None)
        if put is not None:
            for name, value in changes.items():
                put(GROUP_RESOURCE, group_id, name, None if value is None else str(value))

    def connection_closed(self, node_id: int, connection_id) -> None:
        """A driver tells that a client connection closed: its share sessions go and release what
        their members hold (Kafka's share session cache, on a disconnect)."""
        self.share_partitions.connection_closed(node_id, connection_id)

    def topic_name(self, topic_id) -> str | None:
        """The name of the topic of that id, None when there is none."""
        topic = self.cluster.topics_by_id.get(topic_id)
        return topic.name if topic is not None else None

    def topic_id(self, name: str):
        """The id of the topic of that name, None when there is none."""
        topic = self.cluster.topics.get(name)
        return topic.topic_id if topic is not None else None

    def partition_count(self, topic: str) -> int | None:
        return self.cluster.partition_count(topic)

    def next_producer_id(self) -> int:
        """A producer id never handed out before (Kafka's ProducerIdManager: blocks of
        :data:`PRODUCER_ID_BLOCK_SIZE`, each kept in the metadata log before its first id goes out)."""
        pid = self._next_producer_id
        if pid >= self._producer_id_block_end:
            end = pid + PRODUCER_ID_BLOCK_SIZE
            put = getattr(self.store, "put_producer_ids", None)
            if put is not None:
                put(end)            # (an OSError: the request fails, nothing handed out)
            self._producer_id_block_end = end
        self._next_producer_id = pid + 1
        return pid

    def set_node_address(self, node_id: int, host: str, port: int) -> None:
        node = self.cluster.nodes[node_id]
        node.host, node.port = host, port
        self.cluster.epoch += 1

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int = 1, *,
                     exist_ok: bool = False):
        """Create a topic. ``exist_ok``: a topic of that name (say, kept in the data dir from an
        earlier run) is returned as it is, as ``kafka-topics --create --if-not-exists`` leaves it."""
        existing = self.cluster.topics.get(name)
        if existing is not None and exist_ok:
            if partitions is not None and partitions != existing.partition_count:
                log.warning("topic exists with other partitions: kept as it is", topic=name,
                            partitions=existing.partition_count, requested=partitions)
            return existing
        if partitions is None:
            partitions = self.config["num.partitions"]
        return self.cluster.create_topic(name, partitions, replication_factor)

    # ---- dispatch -------------------------------------------------------------
    def supported_versions(self) -> dict[int, tuple[int, int]]:
        """The versions ApiVersions lists, per API key (what a client negotiates against)."""
        return dict(self._advertised)

    def serves(self, api_key: int, api_version: int) -> bool:
        """Whether a request of this API and version is answered (else its connection closes)."""
        rng = self.served_versions.get(api_key)
        return rng is not None and rng[0] <= api_version <= rng[1]

    # ---- the request pipeline: what every driver runs for a request -----------------------
    def admit(self, ctx: RequestContext, body: dict) -> Verdict | None:
        """The hooks before the handler (``before_request``, in order: the first verdict wins).
        None: on to the handler. A verdict is the driver's to carry out: hold the request
        ``delay_ms`` (the connection behind it too), then :meth:`dispatch` it with the verdict."""
        for hook in self.before_request:
            verdict = hook(ctx, body)
            if verdict is not None:
                return verdict
        return None

    def dispatch(self, ctx: RequestContext, body: dict, respond: Respond, verdict: Verdict | None = None) -> bool:
        """Answer with the verdict's body, or run the handler; ``after_request`` (metrics) sees
        each response as ``respond`` gets it. False: the verdict closes the connection instead
        (the driver closes it; nothing is answered)."""
        if verdict is not None and verdict.close:
            return False
        if self.after_request:
            respond = self._observed(ctx, body, respond)
        if verdict is not None and verdict.respond is not None:
            respond(verdict.respond)
        else:
            self.handle(ctx, body, respond)
        return True

    def _observed(self, ctx: RequestContext, body: dict, respond: Respond) -> Respond:
        started = time.perf_counter()
        hooks = self.after_request

        def observed(response) -> None:
            elapsed = time.perf_counter() - started
            for hook in hooks:
                try:
                    hook(ctx, body, response, elapsed)
                except Exception:
                    log.exception("after_request_hook_failed", api=ApiKey(ctx.api_key).title)
            respond(response)
        return observed

    def handle(self, ctx: RequestContext, body: dict, respond: Respond) -> None:
        """Dispatch one decoded request; respond(body) is called now or later.

        respond(None) means the request gets no response (Produce with acks=0).
        """
        handler = HANDLERS.get(ctx.api_key)
        if handler is None:
            raise KeyError(f"no handler for API key {ctx.api_key}")
        handler.handle(ctx, ctx.api_version, body, respond)

    def advance(self, now_ms: int | None = None) -> int:
        """Run due timers; returns how many fired."""
        return self.timers.advance(self.clock() if now_ms is None else now_ms)
