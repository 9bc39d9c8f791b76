"""Prometheus metrics of a :class:`~groupcoord.coordinator.service.Service`.

A :class:`Metrics` object has its own ``CollectorRegistry`` (never prometheus_client's global
one: several services may live in one process). It is fed by

- a subscription to ``service.bus`` (group, member, rebalance and offset events);
- a ``service.after_request`` hook (requests by API and version, their time, error codes found
  in response bodies: the top-level ``error_code`` and the nested per-topic, per-partition,
  per-group and per-member ones, counted by Kafka error name, ``NONE`` left out);
- gauges computed at scrape time from the live state (groups by state, members, offsets,
  connections, nodes up).

Consumer groups of the new protocol (KIP-848) have Kafka 4's metrics of GroupCoordinatorMetrics:
``group_count{protocol}`` counts both kinds, ``consumer_group_count{state}`` and
``consumer_group_rebalance_total`` are theirs; their members, epochs and offsets also count in the
per-group and total gauges below (``group_generation`` is their group epoch), and their members'
events in the member counters. ``num_groups`` and ``num_groups_by_state`` stay Kafka's
GroupMetadataManager gauges of classic groups.

The hot path is plain dict and list arithmetic on the event loop; prometheus_client only sees
the numbers when ``/metrics`` is scraped (a custom collector). A scrape copies the numbers on the
event loop (:meth:`Metrics.snapshot`: plain tuples, a few microseconds per group) and leaves
building the metric families and encoding them to a thread. ``Metrics`` is attached by the
admin app (``admin/metrics_api.py``), so a service embedded without HTTP pays nothing.

Kafka's names, translated to Prometheus conventions (prefix ``groupcoord_``, snake_case,
counters end in ``_total``, times in seconds, Kafka's per-state or per-request MBeans become
labels):

===========================================================  ===========================================
Kafka                                                        groupcoord
===========================================================  ===========================================
GroupMetadataManager NumGroups                               ``num_groups``
GroupMetadataManager NumGroups{PreparingRebalance,           ``num_groups_by_state{state}`` (every state,
CompletingRebalance,Stable,Dead,Empty}                       0 included)
GroupMetadataManager NumOffsets                              ``num_offsets`` (offsets of every group)
group-coordinator-metrics group-count{protocol}              ``group_count{protocol}`` (classic, consumer)
group-coordinator-metrics classic-group-count{state}         ``classic_group_count{state}`` (every state)
group-coordinator-metrics consumer-group-count{state}        ``consumer_group_count{state}`` (Empty,
                                                             Assigning, Reconciling, Stable, Dead)
group-coordinator-metrics consumer-group-rebalance-count,    ``consumer_group_rebalance_total{reason}``
consumer-group-rebalance-rate                                (one per ``consumer.group_epoch_bumped``;
                                                             Kafka counts the heartbeat's bumps: the
                                                             reasons member_joined, subscription_changed,
                                                             metadata_changed and regex_resolved, not
                                                             member_left and member_fenced)
group-coordinator-metrics group-completed-rebalance-count    ``group_completed_rebalance_total{outcome}``
                                                             (one per ``rebalance.completed`` event)
group-coordinator-metrics group-rebalance-count              ``group_rebalance_total{reason}`` (one per
                                                             ``rebalance.started``)
group-coordinator-metrics offset-commit-count                ``offset_commit_total`` (offsets committed)
group-coordinator-metrics offset-expiration-count            ``offset_expiration_total``
group-coordinator-metrics offset-deletion-count              ``offset_deletion_total``
group-coordinator-metrics share-group-count{state}           ``share_group_count{state}`` (Empty, Stable,
                                                             Dead); ``group_count{protocol="share"}``
group-coordinator-metrics share-group-rebalance-count         ``share_group_rebalance_total{reason}`` (one
                                                             per ``share.group_epoch_bumped``)
BrokerTopicMetrics TotalShareFetchRequestsPerSec{topic}      ``share_fetch_requests_total{topic}``
                                                             (ShareFetch requests reading the topic)
BrokerTopicMetrics FailedShareFetchRequestsPerSec{topic}     ``failed_share_fetch_requests_total{topic}``
BrokerTopicMetrics                                           ``share_acknowledgement_requests_total{topic}``
TotalShareAcknowledgementRequestsPerSec{topic}               (ShareFetch and ShareAcknowledge requests
                                                             acknowledging records of the topic)
BrokerTopicMetrics                                           ``failed_share_acknowledgement_requests_total
FailedShareAcknowledgementRequestsPerSec{topic}              {topic}``
ShareGroupMetrics RecordAcknowledgementsPerSec{ackType}      ``record_acknowledgements_total{ack_type}``
                                                             (Accept, Release, Reject, Renew; records)
SharePartitionMetrics InFlightMessageCount                   ``share_partition_in_flight_message_count
{group,topic,partition}                                      {group,topic,partition}`` (SPEO - SPSO + 1)
SharePartitionMetrics InFlightBatchCount                     ``share_partition_in_flight_batch_count
{group,topic,partition}                                      {group,topic,partition}``
SharePartitionMetrics AcquisitionLockTimeoutPerSec           ``share_partition_acquisition_lock_timeout_total
{group,topic,partition}                                      {group,topic,partition}`` (records; from the
                                                             share-partition's load on its leader)
ShareSessionCache ShareSessionsCount, SharePartitionsCount   ``share_sessions_count{node}``,
                                                             ``share_session_partitions_count{node}``
DelayedShareFetchMetrics ExpiresPerSec                       ``delayed_share_fetch_expires_total``
                                                             (fetches answered at their MaxWaitMs)
consumer coordinator rebalance-latency-{avg,max,total}       ``rebalance_latency_seconds{outcome}``
                                                             histogram (``rebalance.completed``
                                                             ``duration_ms``)
consumer coordinator join-time-{avg,max}, join-rate          ``join_time_seconds`` histogram: how long
                                                             JoinGroup requests were parked
consumer coordinator sync-time-{avg,max}, sync-rate          ``sync_time_seconds`` histogram (SyncGroup)
consumer coordinator heartbeat-total, heartbeat-rate         ``heartbeat_total``
RequestMetrics RequestsPerSec{request,version}               ``requests_total{request,version}``
RequestMetrics TotalTimeMs{request}                          ``request_total_time_seconds{request}``
                                                             histogram
RequestMetrics ErrorsPerSec{request,error}                   ``errors_total{request,error}`` (NONE is
                                                             not counted)
socket-server-metrics connection-count                       ``connection_count{node}``
socket-server-metrics connection-creation-total              ``connection_creation_total``
ReplicaManager ProducerIdCount                               ``producer_id_count`` (producer ids in the
                                                             partitions' producer state, every partition)
ReplicaManager PartitionsWithLateTransactionsCount           ``partitions_with_late_transactions_count``
                                                             (the oldest ongoing transaction's last write
                                                             older than transaction.max.timeout.ms + 5 min)
===========================================================  ===========================================

groupcoord's own: ``group_members{group}``, ``group_generation{group}``, ``members`` (all
groups), ``node_up{node}``, ``events_total{event}`` (every bus event by type),
``group_state_transitions_total{from,to}``, ``groups_created_total{cause}``,
``groups_deleted_total{reason}``, ``members_joined_total`` (``member.joined`` and
``consumer.member_joined``), ``members_left_total{initiator}`` (``member.left`` and
``consumer.member_left``: "member" or "admin"), ``members_removed_total{reason}`` (``member.removed`` and ``member.expired``
reasons, ``consumer.member_fenced``'s session_timeout, rebalance_timeout, join_timeout and
sync_timeout),
``members_replaced_total`` (both protocols), ``connections_closed_malformed_total``,
``share_partition_records{group,topic,partition,state}`` (a share-partition's records between its SPSO
and SPEO by state: available, acquired, acknowledged, archived), ``share_records_total{kind}`` (every
share-partition's records acquired, acknowledged, released, rejected, gaps, renewed, lock_expired and
archived, from :class:`~.share.partition.SharePartitionCounters`), and the ``process_*`` metrics of
prometheus_client. The share metrics are read from the share-partition manager (``service.share_partitions``:
its :class:`~.share.manager.ShareStats` and its share-partitions) at scrape time: nothing is added to the
ShareFetch and ShareAcknowledge path for them but a few dictionary increments.

Transactions (the transaction coordinator, ``service.transactions``): counters from its ``transaction.*``
events, ``transactions_started_total`` (``transaction.partitions_added`` that began one),
``transactions_completed_total{result}`` (commit, abort), ``transaction_duration_seconds{result}`` histogram
(``transaction.completed``'s ``duration_ms``: from the first AddPartitionsToTxn to the last marker),
``transactions_fenced_total{cause}`` (init_producer_id, timeout, admin) and ``transactions_timed_out_total``
(the fenced ones of cause timeout), ``offsets_transaction_completed_total{result}`` (groups' pending offsets
made visible or dropped, from ``offsets.transaction_committed``/``aborted``); gauges read at scrape time,
``transaction_count{state}`` (transactional ids by Kafka's state names, every state but Dead, 0 included),
``open_transactions`` (Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence),
``transactions_past_timeout`` (Ongoing for longer than their timeout: aborted at the coordinator's next
check), ``oldest_open_transaction_age_seconds``, ``pending_transactional_offsets`` (offsets pending in
every group, all producers) and ``partitions_with_unstable_offsets`` (partitions whose last stable offset
is below their log end: read_committed consumers are held back). Kafka's transaction-coordinator-metrics
partition-load-time-max/avg and TransactionMarkerChannelManager's UnknownDestinationQueueSize and
LogAppendRetryQueueSize have no counterpart: the transaction log is read once at start, and markers are
written in process (one still to write keeps its transaction in PrepareCommit or PrepareAbort, which
``transaction_count{state}`` shows).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Iterator

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.schema import A, S
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import generate_latest

#: the group type of Kafka's GroupMetadataManager gauges (NumGroups); every other type has group
#: epochs (Kafka's "modern" groups), its events named "<type>.<what>"
CLASSIC = "classic"

PREFIX = "groupcoord_"
_JOIN_GROUP, _HEARTBEAT, _SYNC_GROUP = int(ApiKey.JOIN_GROUP), int(ApiKey.HEARTBEAT), int(ApiKey.SYNC_GROUP)

#: upper bounds (seconds) of the request-time buckets: a heartbeat (well under 1 ms) up to a
#: JoinGroup parked for the default 5 minute rebalance timeout
REQUEST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0, 60.0, 120.0, 300.0)
#: upper bounds (seconds) of the rebalance-latency buckets
REBALANCE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: upper bounds (seconds) of the transaction-duration buckets (up to transaction.max.timeout.ms, 15 min)
TRANSACTION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
#: the transaction states a transaction is open in
OPEN_TRANSACTION_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
#: Kafka's ProducerStateManager.LATE_TRANSACTION_BUFFER_MS
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000



def error_paths(fields, prefix: tuple = ()) -> list[tuple]:
    """Where a response of these fields carries ``error_code``: tuples of steps, each step
    ``(key, is_array)``, the last one ``("error_code", False)``."""
    paths = []
    for f in fields:
        t = f.type
        if f.key == "error_code":
            paths.append(prefix + (("error_code", False),))
        elif isinstance(t, S):
            paths.extend(error_paths(t.fields, prefix + ((f.key, False),)))
        elif isinstance(t, A) and isinstance(t.elem, S):
            paths.extend(error_paths(t.elem.fields, prefix + ((f.key, True),)))
    return paths


def _count_path(node, path: tuple, i: int, errors: dict) -> None:
    key, is_array = path[i]
    value = node.get(key)
    if not value:
        return
    if i == len(path) - 1:
        errors[value] = errors.get(value, 0) + 1
    elif is_array:
        for item in value:
            _count_path(item, path, i + 1, errors)
    else:
        _count_path(value, path, i + 1, errors)


class _ApiStats:
    """Counters of one API: requests per version, a time histogram, errors by code."""

    __slots__ = ("name", "versions", "buckets", "seconds", "errors", "top_level_only", "paths")

    def __init__(self, api_key: int):
        api = APIS.get(api_key)
        self.name = api.name if api is not None else f"Api{api_key}"
        top = api.request.valid[1] if api is not None else 0
        self.versions = [0] * (top + 1)
        self.buckets = [0] * (len(REQUEST_BUCKETS) + 1)
        self.seconds = 0.0
        self.errors: dict[int, int] = {}
        self.paths = error_paths(api.response.fields) if api is not None else [(("error_code", False),)]
        self.top_level_only = self.paths == [(("error_code", False),)]


def _cumulative(buckets: list[int], bounds: tuple) -> list[tuple[str, int]]:
    out, total = [], 0
    for bound, n in zip(bounds, buckets):
        total += n
        out.append((repr(float(bound)), total))
    total += buckets[-1]
    out.append(("+Inf", total))
    return out


def _error_name(code: int) -> str:
    e = ErrorCode.lookup(code)
    return e.name if isinstance(e, ErrorCode) else str(code)


class Metrics:
    """The metrics of one service (and optionally its TCP server). ``attach()`` starts feeding."""

    def __init__(self, service, server=None, *, process: bool = True):
        self.service = service
        self.server = server
        # the registry holds one collector: a snapshot of this object (process metrics included)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))
        self._process = ProcessCollector(registry=None) if process else None
        self.apis: dict[int, _ApiStats] = {}
        self.events: dict[str, int] = {}
        self.rebalances_started: dict[str, int] = {}
        self.rebalances_completed: dict[str, int] = {}
        self.rebalance_buckets: dict[str, list[int]] = {}
        self.rebalance_seconds: dict[str, float] = {}
        self.transitions: dict[tuple[str, str], int] = {}
        self.groups_created: dict[str, int] = {}
        self.groups_deleted: dict[str, int] = {}
        self.members_joined = 0
        self.members_left: dict[str, int] = {}
        self.members_removed: dict[str, int] = {}
        self.members_replaced = 0
        #: group type -> reason -> group epochs bumped (the modern types': <type>.group_epoch_bumped)
        self.epoch_bumps: dict[str, dict[str, int]] = {}
        self.offsets_committed = 0
        self.offsets_expired = 0
        self.offsets_deleted = 0
        #: transactions: started, completed by result (with their durations), fenced by cause; groups'
        #: pending offsets completed by result
        self.transactions_started = 0
        self.transactions_completed: dict[str, int] = {}
        self.transaction_buckets: dict[str, list[int]] = {}
        self.transaction_seconds: dict[str, float] = {}
        self.transactions_fenced: dict[str, int] = {}
        self.offsets_transactions: dict[str, int] = {}
        #: callables returning more metric families, called on the event loop at each scrape
        self.extra: list = []
        self._unsubscribe = None
        self._on_event_by_type = {
            "rebalance.started": self._rebalance_started,
            "rebalance.completed": self._rebalance_completed,
            "group.state_change": self._state_change,
            "group.created": self._group_created,
            "group.deleted": self._group_deleted,
            "member.joined": self._member_joined,
            "member.left": self._member_left,
            "member.removed": self._member_removed,
            "member.expired": self._member_removed,
            "member.replaced": self._member_replaced,
            "offset.committed": self._offset_committed,
            "offsets.expired": self._offsets_expired,
            "offsets.deleted": self._offsets_deleted,
            "transaction.partitions_added": self._transaction_partitions_added,
            "transaction.completed": self._transaction_completed,
            "transaction.fenced": self._transaction_fenced,
            "offsets.transaction_committed": self._offsets_transaction_completed,
            "offsets.transaction_aborted": self._offsets_transaction_completed,
        }
        for t in service.group_coordinator.group_types():
            if t.type != CLASSIC:
                self.epoch_bumps[t.type] = {}
                self._on_event_by_type.update({
                    f"{t.type}.group_epoch_bumped": self._epoch_bumped,
                    f"{t.type}.member_joined": self._member_joined,
                    f"{t.type}.member_left": self._member_left,
                    f"{t.type}.member_fenced": self._member_removed,
                    f"{t.type}.member_replaced": self._member_replaced,
                })

    # ---- lifecycle ----------------------------------------------------------------------
    def attach(self) -> "Metrics":
        if self._unsubscribe is None:
            self._unsubscribe = self.service.bus.subscribe(self.on_event)
            self.service.after_request.append(self.after_request)
        return self

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            try:
                self.service.after_request.remove(self.after_request)
            except ValueError:
                pass

    def snapshot(self) -> "Snapshot":
        """The numbers as of now, read on the event loop (plain copies, no metric objects);
        prometheus_client's encoders can then run anywhere."""
        nodes = self.service.cluster.nodes
        gc = self.service.group_coordinator
        # group type -> (its states, [(group id, state, members, generation or group epoch, offsets)])
        groups = {t.type: (t.states, []) for t in gc.group_types()}
        for g in gc.groups():
            groups[g.type][1].append((g.group_id, g.state, len(g.members), g.generation_id,
                                      gc.offsets.count(g.group_id)))
        apis = {key: (a.name, list(a.versions), list(a.buckets), a.seconds, dict(a.errors))
                for key, a in self.apis.items()}
        connections = None
        if self.server is not None:
            connections = dict.fromkeys(nodes, 0)
            for conn in list(self.server.connections.values()):
                connections[conn.node_id] = connections.get(conn.node_id, 0) + 1
            connections = (connections, dict(self.server.stats))
        raw = {
            "groups": groups, "apis": apis, "connections": connections,
            "nodes_up": {n: nodes[n].up for n in sorted(nodes)},
            "events": dict(self.events), "rebalances_started": dict(self.rebalances_started),
            "rebalances_completed": dict(self.rebalances_completed),
            "rebalance_buckets": {k: list(v) for k, v in self.rebalance_buckets.items()},
            "rebalance_seconds": dict(self.rebalance_seconds), "transitions": dict(self.transitions),
            "groups_created": dict(self.groups_created), "groups_deleted": dict(self.groups_deleted),
            "members_joined": self.members_joined, "members_left": dict(self.members_left),
            "members_removed": dict(self.members_removed), "members_replaced": self.members_replaced,
            "epoch_bumps": {t: dict(bumps) for t, bumps in self.epoch_bumps.items()},
            "offsets_committed": self.offsets_committed, "offsets_expired": self.offsets_expired,
            "offsets_deleted": self.offsets_deleted,
            "share": _share_snapshot(self.service.share_partitions),
            "transactions": self._transactions_snapshot(),
            "extra": [family for fn in self.extra for family in fn()],
        }
        return Snapshot(raw, self._process)

    def _transactions_snapshot(self) -> dict | None:
        """The transaction coordinator's and the partitions' numbers, and the counters (see the module)."""
        txn = getattr(self.service, "transactions", None)
        if txn is None:
            return None
        now = txn.clock()
        by_state: dict[str, int] = {}
        past_timeout = 0
        oldest = None
        for meta in txn.transactions.values():
            by_state[meta.state] = by_state.get(meta.state, 0) + 1
            if meta.state in OPEN_TRANSACTION_STATES and meta.start_ms >= 0:
                oldest = meta.start_ms if oldest is None else min(oldest, meta.start_ms)
                if meta.state == "Ongoing" and meta.start_ms + meta.timeout_ms < now:
                    past_timeout += 1
        offsets = self.service.group_coordinator.offsets
        producers = {pid for g in offsets.pending_group_ids() for pid in offsets.open_producers(g)}
        pending = sum(len(offsets.pending_offsets(pid)) for pid in producers)
        producer_ids = unstable = late = 0
        late_after = txn.max_timeout_ms + LATE_TRANSACTION_BUFFER_MS
        for topic in self.service.cluster.topics.values():
            for log in topic.partitions:
                state = log.producer_state
                if state is None:
                    continue
                producer_ids += len(state.producers)
                if not state.ongoing:
                    continue
                if log.last_stable_offset < log.log_end_offset:
                    unstable += 1
                # ProducerStateManager.hasLateTransaction: the last write of the oldest ongoing transaction's
                # producer
                entry = state.producers.get(next(iter(state.ongoing.values())))
                if entry is not None and entry.last_timestamp > 0 and now - entry.last_timestamp > late_after:
                    late += 1
        return {"by_state": by_state, "past_timeout": past_timeout,
                "oldest_age": 0.0 if oldest is None else max(0, now - oldest) / 1000.0,
                "pending_offsets": pending, "producer_ids": producer_ids, "unstable_partitions": unstable,
                "late_partitions": late, "started": self.transactions_started,
                "completed": dict(self.transactions_completed),
                "buckets": {k: list(v) for k, v in self.transaction_buckets.items()},
                "seconds": dict(self.transaction_seconds), "fenced": dict(self.transactions_fenced),
                "offsets_completed": dict(self.offsets_transactions)}

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.snapshot())

    # ---- the request hook (hot path) ---------------------------------------------------------
    def after_request(self, ctx, request: dict, response: dict | None, seconds: float,
                      _bisect=bisect_left, _bounds=REQUEST_BUCKETS) -> None:
        s = self.apis.get(ctx.api_key)
        if s is None:
            s = self.apis[ctx.api_key] = _ApiStats(ctx.api_key)
        try:
            s.versions[ctx.api_version] += 1
        except IndexError:
            s.versions.extend([0] * (ctx.api_version + 1 - len(s.versions)))
            s.versions[ctx.api_version] += 1
        s.buckets[_bisect(_bounds, seconds)] += 1
        s.seconds += seconds
        if response is None:
            return
        if s.top_level_only:
            code = response.get("error_code")
            if code:
                s.errors[code] = s.errors.get(code, 0) + 1
        else:
            for path in s.paths:
                _count_path(response, path, 0, s.errors)

    # ---- bus events --------------------------------------------------------------------------
    def on_event(self, event: dict) -> None:
        kind = event.get("event")
        self.events[kind] = self.events.get(kind, 0) + 1
        fn = self._on_event_by_type.get(kind)
        if fn is not None:
            fn(event)

    @staticmethod
    def _inc(d: dict, key, n: int = 1) -> None:
        d[key] = d.get(key, 0) + n

    def _rebalance_started(self, e: dict) -> None:
        self._inc(self.rebalances_started, e.get("reason") or "unknown")

    def _rebalance_completed(self, e: dict) -> None:
        outcome = e.get("outcome") or "unknown"
        self._inc(self.rebalances_completed, outcome)
        seconds = (e.get("duration_ms") or 0) / 1000.0
        buckets = self.rebalance_buckets.get(outcome)
        if buckets is None:
            buckets = self.rebalance_buckets[outcome] = [0] * (len(REBALANCE_BUCKETS) + 1)
        buckets[bisect_left(REBALANCE_BUCKETS, seconds)] += 1
        self.rebalance_seconds[outcome] = self.rebalance_seconds.get(outcome, 0.0) + seconds

    def _state_change(self, e: dict) -> None:
        self._inc(self.transitions, (e.get("state_from"), e.get("state_to")))

    def _group_created(self, e: dict) -> None:
        self._inc(self.groups_created, e.get("cause") or "unknown")

    def _group_deleted(self, e: dict) -> None:
        self._inc(self.groups_deleted, e.get("reason") or "unknown")

    def _member_joined(self, e: dict) -> None:
        self.members_joined += 1

    def _member_left(self, e: dict) -> None:
        self._inc(self.members_left, e.get("initiator") or "member")

    def _member_removed(self, e: dict) -> None:
        self._inc(self.members_removed, e.get("reason") or "unknown")

    def _member_replaced(self, e: dict) -> None:
        self.members_replaced += 1

    def _epoch_bumped(self, e: dict) -> None:
        self._inc(self.epoch_bumps[e["event"].partition(".")[0]], e.get("reason") or "unknown")

    def _offset_committed(self, e: dict) -> None:
        self.offsets_committed += e.get("partitions") or 0

    def _offsets_expired(self, e: dict) -> None:
        self.offsets_expired += e.get("partitions") or 0

    def _offsets_deleted(self, e: dict) -> None:
        self.offsets_deleted += e.get("partitions") or 0

    def _transaction_partitions_added(self, e: dict) -> None:
        if e.get("began"):
            self.transactions_started += 1

    def _transaction_completed(self, e: dict) -> None:
        result = e.get("result") or "unknown"
        self._inc(self.transactions_completed, result)
        seconds = max(0, e.get("duration_ms") or 0) / 1000.0
        buckets = self.transaction_buckets.get(result)
        if buckets is None:
            buckets = self.transaction_buckets[result] = [0] * (len(TRANSACTION_BUCKETS) + 1)
        buckets[bisect_left(TRANSACTION_BUCKETS, seconds)] += 1
        self.transaction_seconds[result] = self.transaction_seconds.get(result, 0.0) + seconds

    def _transaction_fenced(self, e: dict) -> None:
        self._inc(self.transactions_fenced, e.get("cause") or "unknown")

    def _offsets_transaction_completed(self, e: dict) -> None:
        self._inc(self.offsets_transactions, "commit" if e["event"] == "offsets.transaction_committed" else "abort")

#: a share-partition's record states as the metrics label them, by RecordState value
_RECORD_STATES = {0: "available", 1: "acquired", 2: "acknowledged", 4: "archived"}
_ACK_TYPES = {1: "Accept", 2: "Release", 3: "Reject", 4: "Renew"}    # Kafka's ackType tag values


def records_by_state(sp) -> dict[str, int]:
    """A share-partition's records between its SPSO and SPEO by state (available, acquired,
    acknowledged, archived)."""
    out = dict.fromkeys(_RECORD_STATES.values(), 0)
    start = sp.start_offset
    for batch in sp.cached_state():
        if batch.last_offset < start:
            continue
        for first, last, state in batch.states():
            if last >= start:
                name = _RECORD_STATES.get(int(state.state))
                if name is not None:
                    out[name] += last - max(first, start) + 1
    return out


def _share_snapshot(manager) -> dict:
    """The share-partition leaders' numbers (see the module)."""
    stats = manager.stats
    topics = manager.cluster.topics_by_id
    partitions = []
    for (group_id, topic_id, index), sp in manager.share_partitions().items():
        topic = topics.get(topic_id)
        partitions.append((group_id, topic.name if topic is not None else str(topic_id), str(index),
                           sp.in_flight_records(), len(sp.cached_state()), sp.counters.lock_expired,
                           records_by_state(sp)))
    sessions = dict.fromkeys(manager.cluster.nodes, (0, 0))
    for session in manager.sessions():
        n, p = sessions.get(session.node_id, (0, 0))
        sessions[session.node_id] = (n + 1, p + len(session.partitions))
    totals = manager.counters_total()
    return {"fetch": dict(stats.share_fetch), "failed_fetch": dict(stats.failed_share_fetch),
            "acknowledgement": dict(stats.share_acknowledgement),
            "failed_acknowledgement": dict(stats.failed_share_acknowledgement),
            "record_acknowledgements": dict(stats.record_acknowledgements),
            "expires": stats.delayed_share_fetch_expires, "partitions": partitions, "sessions": sessions,
            "records": {name: getattr(totals, name) for name in ("acquired", "acknowledged", "released",
                                                                  "rejected", "gaps", "renewed", "lock_expired",
                                                                  "archived")}}


class Snapshot:
    """Numbers copied from a service at one moment; a registry-like object (``collect()``) for
    prometheus_client's encoders, safe to encode on another thread."""

    def __init__(self, raw: dict, process=None):
        self.raw = raw
        self.process = process

    def collect(self) -> Iterator:
        yield from self._groups()
        yield from self._requests()
        yield from self._events()
        yield from self._cluster()
        if "share" in self.raw:
            yield from self._share()
        if self.raw.get("transactions") is not None:
            yield from self._transactions()
        yield from self.raw.get("extra", ())
        if self.process is not None:
            yield from self.process.collect()

    def _groups(self) -> Iterator:
        members_g = GaugeMetricFamily(PREFIX + "group_members", "Members of each group.", labels=["group"])
        generation_g = GaugeMetricFamily(PREFIX + "group_generation", "Generation id of each classic group, "
                                         "group epoch of each consumer group.",
                                         labels=["group"])
        members = offsets = 0
        by_type = {}            # group type -> state -> groups
        for group_type, (states, groups) in self.raw["groups"].items():
            by_state = by_type[group_type] = dict.fromkeys(states, 0)
            for group_id, state, n, generation, n_offsets in groups:
                by_state[state] = by_state.get(state, 0) + 1
                members += n
                offsets += n_offsets
                members_g.add_metric([group_id], n)
                generation_g.add_metric([group_id], generation)
        classic = by_type[CLASSIC]
        yield GaugeMetricFamily(PREFIX + "num_groups", "Classic groups (Kafka: GroupMetadataManager NumGroups).",
                                value=sum(classic.values()))
        state_g = GaugeMetricFamily(PREFIX + "num_groups_by_state",
                                    "Classic groups in each state (Kafka: NumGroups<State>).", labels=["state"])
        for state, n in classic.items():
            state_g.add_metric([state], n)
        yield state_g
        count_g = GaugeMetricFamily(PREFIX + "group_count", "Groups of each rebalance protocol "
                                    "(Kafka: group-count).", labels=["protocol"])
        for group_type, by_state in by_type.items():
            count_g.add_metric([group_type], sum(by_state.values()))
        yield count_g
        for group_type, by_state in by_type.items():
            type_g = GaugeMetricFamily(PREFIX + f"{group_type}_group_count", f"{group_type.capitalize()} groups "
                                       f"in each state (Kafka: {group_type}-group-count).", labels=["state"])
            for state, n in by_state.items():
                type_g.add_metric([state], n)
            yield type_g
        yield GaugeMetricFamily(PREFIX + "members", "Members of all groups.", value=members)
        yield members_g
        yield generation_g
        yield GaugeMetricFamily(PREFIX + "num_offsets", "Committed offsets of every group (Kafka: NumOffsets).",
                                value=offsets)

    def _requests(self) -> Iterator:
        requests = CounterMetricFamily(PREFIX + "requests", "Requests by API and version "
                                       "(Kafka: RequestMetrics RequestsPerSec).", labels=["request", "version"])
        times = HistogramMetricFamily(PREFIX + "request_total_time_seconds", "Time from dispatch to response, "
                                      "parked time included (Kafka: RequestMetrics TotalTimeMs).",
                                      labels=["request"])
        errors = CounterMetricFamily(PREFIX + "errors", "Error codes in responses, NONE left out "
                                     "(Kafka: RequestMetrics ErrorsPerSec).", labels=["request", "error"])
        heartbeats = 0
        join = sync = None
        apis = self.raw["apis"]
        for key in sorted(apis):
            name, versions, buckets, seconds, errs = apis[key]
            for version, n in enumerate(versions):
                if n:
                    requests.add_metric([name, str(version)], n)
            cumulative = _cumulative(buckets, REQUEST_BUCKETS)
            times.add_metric([name], cumulative, seconds)
            for code, n in sorted(errs.items()):
                errors.add_metric([name, _error_name(code)], n)
            if key == _HEARTBEAT:
                heartbeats = sum(versions)
            elif key == _JOIN_GROUP:
                join = (cumulative, seconds)
            elif key == _SYNC_GROUP:
                sync = (cumulative, seconds)
        yield requests
        yield times
        yield errors
        yield CounterMetricFamily(PREFIX + "heartbeat", "Heartbeat requests (Kafka consumer: heartbeat-total).",
                                  value=heartbeats)
        empty = _cumulative([0] * (len(REQUEST_BUCKETS) + 1), REQUEST_BUCKETS)
        for name, what, data in (("join_time_seconds", "JoinGroup", join), ("sync_time_seconds", "SyncGroup", sync)):
            h = HistogramMetricFamily(PREFIX + name, f"How long {what} requests were held until answered "
                                      f"(Kafka consumer: {name.split('_')[0]}-time).")
            buckets, total = data if data is not None else (empty, 0.0)
            h.add_metric([], buckets, total)
            yield h

    def _events(self) -> Iterator:
        raw = self.raw

        def counter(name, doc, labels, data):
            m = CounterMetricFamily(PREFIX + name, doc, labels=labels)
            for key, n in sorted(data.items(), key=lambda kv: str(kv[0])):
                m.add_metric([str(k) for k in key] if isinstance(key, tuple) else [str(key)], n)
            return m

        yield counter("events", "Coordinator events by type.", ["event"], raw["events"])
        yield counter("group_rebalance", "Rebalances started, by reason (Kafka: group-rebalance-count).",
                      ["reason"], raw["rebalances_started"])
        yield counter("group_completed_rebalance", "Rebalances completed, by outcome "
                      "(Kafka: group-completed-rebalance-count).", ["outcome"], raw["rebalances_completed"])
        latency = HistogramMetricFamily(PREFIX + "rebalance_latency_seconds", "Rebalance duration from "
                                        "rebalance.started to Stable or Empty (Kafka consumer: rebalance-latency).",
                                        labels=["outcome"])
        for outcome in sorted(raw["rebalance_buckets"]):
            latency.add_metric([outcome], _cumulative(raw["rebalance_buckets"][outcome], REBALANCE_BUCKETS),
                               raw["rebalance_seconds"][outcome])
        yield latency
        for group_type, bumps in raw["epoch_bumps"].items():
            yield counter(f"{group_type}_group_rebalance", f"Group epochs of {group_type} groups, by why they were "
                          f"bumped (Kafka: {group_type}-group-rebalance-count).", ["reason"], bumps)
        yield counter("group_state_transitions", "Group state transitions.", ["from", "to"], raw["transitions"])
        yield counter("groups_created", "Groups created, by cause.", ["cause"], raw["groups_created"])
        yield counter("groups_deleted", "Groups deleted, by reason.", ["reason"], raw["groups_deleted"])
        yield CounterMetricFamily(PREFIX + "members_joined", "Members added to groups.", value=raw["members_joined"])
        yield counter("members_left", "Members that left by LeaveGroup (or were removed by an admin).",
                      ["initiator"], raw["members_left"])
        yield counter("members_removed", "Members the coordinator dropped or expired, by reason.", ["reason"],
                      raw["members_removed"])
        yield CounterMetricFamily(PREFIX + "members_replaced", "Static members replaced (KIP-345).",
                                  value=raw["members_replaced"])
        yield CounterMetricFamily(PREFIX + "offset_commit", "Offsets committed (Kafka: offset-commit-count).",
                                  value=raw["offsets_committed"])
        yield CounterMetricFamily(PREFIX + "offset_expiration", "Offsets expired by retention "
                                  "(Kafka: offset-expiration-count).", value=raw["offsets_expired"])
        yield CounterMetricFamily(PREFIX + "offset_deletion", "Offsets deleted by OffsetDelete "
                                  "(Kafka: offset-deletion-count).", value=raw["offsets_deleted"])

    def _cluster(self) -> Iterator:
        up = GaugeMetricFamily(PREFIX + "node_up", "1 when the emulated broker listens.", labels=["node"])
        for node_id, is_up in self.raw["nodes_up"].items():
            up.add_metric([str(node_id)], 1 if is_up else 0)
        yield up
        if self.raw["connections"] is None:
            return
        per_node, stats = self.raw["connections"]
        count = GaugeMetricFamily(PREFIX + "connection_count", "Open client connections "
                                  "(Kafka: connection-count).", labels=["node"])
        for node_id in sorted(per_node):
            count.add_metric([str(node_id)], per_node[node_id])
        yield count
        yield CounterMetricFamily(PREFIX + "connection_creation", "Connections accepted "
                                  "(Kafka: connection-creation-total).", value=stats.get("connections", 0))
        yield CounterMetricFamily(PREFIX + "connections_closed_malformed", "Connections closed for a "
                                  "malformed frame.", value=stats.get("closed_malformed", 0))


    def _transactions(self) -> Iterator:
        yield from _transaction_families(self.raw["transactions"])

    def _share(self) -> Iterator:
        share = self.raw["share"]

        def counter(name, doc, label, data):
            m = CounterMetricFamily(PREFIX + name, doc, labels=[label])
            for key, n in sorted(data.items()):
                m.add_metric([key], n)
            return m

        yield counter("share_fetch_requests", "ShareFetch requests reading each topic "
                      "(Kafka: BrokerTopicMetrics TotalShareFetchRequestsPerSec).", "topic", share["fetch"])
        yield counter("failed_share_fetch_requests", "ShareFetch requests with a partition of the topic failing "
                      "(Kafka: BrokerTopicMetrics FailedShareFetchRequestsPerSec).", "topic", share["failed_fetch"])
        yield counter("share_acknowledgement_requests", "ShareFetch and ShareAcknowledge requests acknowledging "
                      "records of each topic (Kafka: BrokerTopicMetrics TotalShareAcknowledgementRequestsPerSec).",
                      "topic", share["acknowledgement"])
        yield counter("failed_share_acknowledgement_requests", "Acknowledging requests with a partition of the topic "
                      "failing (Kafka: BrokerTopicMetrics FailedShareAcknowledgementRequestsPerSec).", "topic",
                      share["failed_acknowledgement"])
        acks = share["record_acknowledgements"]
        yield counter("record_acknowledgements", "Records acknowledged, by acknowledge type (Kafka: "
                      "ShareGroupMetrics RecordAcknowledgementsPerSec).", "ack_type",
                      {name: acks.get(t, 0) for t, name in _ACK_TYPES.items()})
        yield CounterMetricFamily(PREFIX + "delayed_share_fetch_expires", "ShareFetch requests answered when "
                                  "their MaxWaitMs passed (Kafka: DelayedShareFetchMetrics ExpiresPerSec).",
                                  value=share["expires"])
        yield counter("share_records", "Records of every share-partition by what happened to them "
                      "(acquired: each delivery; lock_expired: acquisition locks that expired; archived: for "
                      "whatever reason).", "kind", share["records"])
        labels = ["group", "topic", "partition"]
        in_flight = GaugeMetricFamily(PREFIX + "share_partition_in_flight_message_count", "Records between the "
                                      "share-partition's start and end offsets (Kafka: SharePartitionMetrics "
                                      "InFlightMessageCount).", labels=labels)
        batches = GaugeMetricFamily(PREFIX + "share_partition_in_flight_batch_count", "In-flight batches of the "
                                    "share-partition (Kafka: SharePartitionMetrics InFlightBatchCount).",
                                    labels=labels)
        expired = CounterMetricFamily(PREFIX + "share_partition_acquisition_lock_timeout", "Records whose "
                                      "acquisition lock expired, since the share-partition was loaded (Kafka: "
                                      "SharePartitionMetrics AcquisitionLockTimeoutPerSec).", labels=labels)
        records = GaugeMetricFamily(PREFIX + "share_partition_records", "The share-partition's records between "
                                    "its start and end offsets, by state.", labels=[*labels, "state"])
        for group_id, topic, index, n, n_batches, n_expired, by_state in sorted(share["partitions"]):
            key = [group_id, topic, index]
            in_flight.add_metric(key, n)
            batches.add_metric(key, n_batches)
            expired.add_metric(key, n_expired)
            for state, count in by_state.items():
                records.add_metric([*key, state], count)
        yield in_flight
        yield batches
        yield expired
        yield records
        sessions = GaugeMetricFamily(PREFIX + "share_sessions_count", "Share sessions on each node (Kafka: "
                                     "ShareSessionCache ShareSessionsCount).", labels=["node"])
        session_partitions = GaugeMetricFamily(PREFIX + "share_session_partitions_count", "Partitions in the share "
                                               "sessions of each node (Kafka: ShareSessionCache "
                                               "SharePartitionsCount).", labels=["node"])
        for node_id, (n, p) in sorted(share["sessions"].items()):
            sessions.add_metric([str(node_id)], n)
            session_partitions.add_metric([str(node_id)], p)
        yield sessions
        yield session_partitions


def _transaction_families(t: dict) -> Iterator:
    """The transaction metrics of a snapshot (see the module)."""
    def counter(name, doc, label, data):
        m = CounterMetricFamily(PREFIX + name, doc, labels=[label])
        for key, n in sorted(data.items()):
            m.add_metric([key], n)
        return m

    states = GaugeMetricFamily(PREFIX + "transaction_count", "Transactional ids in each transaction state "
                               "(Kafka's TransactionState names).", labels=["state"])
    for state in ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                  "PrepareEpochFence"):
        states.add_metric([state], t["by_state"].get(state, 0))
    yield states
    yield GaugeMetricFamily(PREFIX + "open_transactions", "Transactions begun and not completed (Ongoing, "
                            "PrepareCommit, PrepareAbort, PrepareEpochFence).",
                            value=sum(t["by_state"].get(s, 0) for s in OPEN_TRANSACTION_STATES))
    yield GaugeMetricFamily(PREFIX + "transactions_past_timeout", "Ongoing transactions open for longer than their "
                            "transaction.timeout.ms, not aborted yet.", value=t["past_timeout"])
    yield GaugeMetricFamily(PREFIX + "oldest_open_transaction_age_seconds", "How long the oldest open "
                            "transaction has been open (0: none).", value=t["oldest_age"])
    yield GaugeMetricFamily(PREFIX + "pending_transactional_offsets", "Transactional offsets pending in every "
                            "group, waiting for their transaction's marker.", value=t["pending_offsets"])
    yield GaugeMetricFamily(PREFIX + "partitions_with_unstable_offsets", "Partitions whose last stable offset "
                            "is below their log end (an open transaction holds read_committed consumers).",
                            value=t["unstable_partitions"])
    yield GaugeMetricFamily(PREFIX + "producer_id_count", "Producer ids in the partitions' producer state, "
                            "idempotent and transactional (Kafka: ReplicaManager ProducerIdCount).",
                            value=t["producer_ids"])
    yield GaugeMetricFamily(PREFIX + "partitions_with_late_transactions_count", "Partitions whose oldest ongoing "
                            "transaction last wrote longer ago than transaction.max.timeout.ms + 5 min (Kafka: "
                            "ReplicaManager PartitionsWithLateTransactionsCount).", value=t["late_partitions"])
    yield CounterMetricFamily(PREFIX + "transactions_started", "Transactions begun (their first "
                              "AddPartitionsToTxn or AddOffsetsToTxn).", value=t["started"])
    yield counter("transactions_completed", "Transactions completed (every marker written), by result.",
                  "result", {"commit": 0, "abort": 0, **t["completed"]})
    duration = HistogramMetricFamily(PREFIX + "transaction_duration_seconds", "Transactions from their beginning "
                                     "to their last marker, by result.", labels=["result"])
    for result in sorted(t["buckets"]):
        duration.add_metric([result], _cumulative(t["buckets"][result], TRANSACTION_BUCKETS), t["seconds"][result])
    yield duration
    yield counter("transactions_fenced", "Producers fenced over an open transaction, which was aborted, by cause "
                  "(init_producer_id, timeout, admin).", "cause", t["fenced"])
    yield CounterMetricFamily(PREFIX + "transactions_timed_out", "Transactions aborted for running past their "
                              "transaction.timeout.ms.", value=t["fenced"].get("timeout", 0))
    yield counter("offsets_transaction_completed", "Groups' pending transactional offsets completed by a marker, "
                  "by result (commit: made visible; abort: dropped), one per group and marker.", "result",
                  {"commit": 0, "abort": 0, **t["offsets_completed"]})


class _Collector:
    """Registers a Metrics in its registry (collecting reads the service: on its loop only)."""

    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def collect(self):
        return self.metrics.snapshot().collect()
