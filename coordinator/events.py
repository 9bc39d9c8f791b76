"""Structured events of the classic group coordinator (schema version 1).

Every state transition and membership change of a classic group is reported
through ``emit(event: dict)`` (see :class:`~groupcoord.coordinator.group.runtime.GroupCoordinator`).
The events feed an analytics pipeline, so the schema is stable: every event of a
given type carries exactly the fields listed here (values may be ``None`` where
documented), and new fields are only ever added together with a bump of
:data:`SCHEMA_VERSION`.

Common fields (every event)
---------------------------
``v``           int   schema version (:data:`SCHEMA_VERSION`).
``event``       str   event type (below).
``ts_ms``       int   coordinator clock (ms) when it happened.
``group``       str   group id.
``generation``  int   the group's generation id *after* the event.
``state``       str   the group's state *after* the event ("Empty", "PreparingRebalance",
                      "CompletingRebalance", "Stable", "Dead").
``members``     int   number of members *after* the event (KIP-394 pending ids not counted).

Event types and their own fields
--------------------------------
``group.created``        a group came into existence.
    ``protocol_type`` (None: not known yet), ``cause``: "join_group" | "offset_commit".
``group.state_change``   every state transition.
    ``state_from``, ``state_to``, ``duration_ms`` (time spent in ``state_from``),
    ``reason`` (the rebalance reason code for transitions to PreparingRebalance, else
    a short code: "join_completed", "sync_completed", "delete_groups", "offsets_expired").
``group.deleted``        the group was removed (it went to Dead).
    ``reason``: "delete_groups" | "offsets_expired"; ``offsets``: committed offsets dropped.
``group.leader_changed`` the leader changed outside of a member's first join.
    ``leader_from`` (None), ``leader_to`` (None: no member left), ``reason``:
    "leader_removed" | "leader_not_rejoined" | "static_member_replaced".
``member.pending``       KIP-394: a member id was handed out with MEMBER_ID_REQUIRED.
    ``member``, ``client_id``, ``client_host``, ``session_timeout_ms``.
``member.joined``        a member was added to the group (dynamic or static).
    ``member``, ``instance_id`` (None), ``client_id``, ``client_host``, ``protocol_type``,
    ``protocols`` (list of protocol names, preference order), ``session_timeout_ms``,
    ``rebalance_timeout_ms``, ``reason`` (the client's JoinGroup reason, KIP-800, or None),
    ``leader`` (bool: the member became the leader).
``member.replaced``      KIP-345: a static member rejoined with member id "" and took over
    its instance id; the old id was fenced.
    ``member`` (new id), ``old_member``, ``instance_id``, ``rebalance`` (bool: a rebalance
    was needed).
``member.left``          a LeaveGroup removed the member (or KIP-394 pending id).
    ``member``, ``instance_id`` (None), ``reason`` (client's reason, KIP-800, or None),
    ``pending`` (bool: it was only a KIP-394 pending id),
    ``initiator``: "member" (LeaveGroup with its member id) | "admin" (removal by
    instance id with member id "", a LeaveGroup with the admin client's reason "member was removed
    by an admin", or :meth:`GroupCoordinator.remove_member`).
``member.removed``       the coordinator dropped a member.
    ``member``, ``instance_id``, ``reason``: "not_rejoined" (dynamic member that did not
    rejoin before the join phase completed) | "sync_timeout" (no SyncGroup within the
    rebalance timeout) | "group_max_size" (rejected by group.max.size).
``member.expired``       a member timer fired.
    ``member``, ``instance_id``, ``reason``: "session_timeout" | "new_member_join_timeout"
    (5 min timer of a new member's parked JoinGroup) | "pending_member_timeout" (KIP-394 id
    never rejoined); ``session_timeout_ms``.
``rebalance.started``    the group entered PreparingRebalance.
    ``state_from``, ``reason`` (code, see below), ``member`` (the member that triggered it, or
    None), ``client_reason`` (the client's reason string or None), ``round`` (1 for a fresh
    rebalance, n > 1 when a CompletingRebalance was interrupted and the rebalance restarted),
    ``initial`` (bool: started from Empty, so the initial delay applies),
    ``rebalance_timeout_ms`` (the group rebalance timeout at that moment),
    ``delay_ms`` (the initial delay, or None).
    Reason codes: "new_member", "metadata_changed", "leader_rejoined",
    "static_member_protocol_changed", "static_member_rejoined_during_sync",
    "member_left", "member_expired", "sync_timeout".
``rebalance.join_completed`` the join phase ended (PreparingRebalance -> CompletingRebalance or Empty).
    ``protocol`` (selected protocol name or None), ``leader`` (None), ``duration_ms``
    (time in this PreparingRebalance), ``removed`` (dynamic members dropped for not
    rejoining), ``state_to``.
``group.sync_completed`` the leader's assignment was stored (CompletingRebalance -> Stable).
    ``protocol``, ``leader``, ``duration_ms`` (time in CompletingRebalance),
    ``empty_assignments`` (members given zero-length assignment bytes).
``rebalance.completed``  a rebalance ended (reached Stable or Empty).
    ``outcome``: "Stable" | "Empty", ``duration_ms`` (since ``rebalance.started`` of its first
    round), ``rounds``, ``protocol``, ``leader``.
``offset.committed``     one event per OffsetCommit *request* that passed group validation
    (aggregated, not per partition).
    ``member`` ("" for simple/admin commits), ``instance_id``, ``partitions`` (offsets
    stored), ``errors`` (partitions rejected with OFFSET_METADATA_TOO_LARGE), ``topics``
    (distinct topics in the request). Can be switched off with
    ``GroupCoordinator(..., emit_offset_commits=False)``.
``offsets.expired``      the retention sweep dropped offsets of the group (only when > 0).
    ``partitions``.
``offsets.deleted``      an OffsetDelete request dropped stored offsets (only when > 0).
    ``partitions``.
``offsets.transactional_commit`` one per TxnOffsetCommit *request* that passed group validation
    (KIP-447): offsets pending in the producer's transaction, not visible yet.
    ``member`` ("" when the request names none), ``instance_id``, ``producer_id``,
    ``producer_epoch``, ``partitions`` (offsets pending), ``errors`` (partitions rejected with
    OFFSET_METADATA_TOO_LARGE), ``topics``.
``offsets.transaction_committed`` the commit marker of a producer's transaction made its pending
    offsets of the group the committed ones. ``producer_id``, ``producer_epoch``, ``partitions``
    (offsets made visible), ``superseded`` (pending offsets a later commit of their partition
    overtook, left out as Kafka does).
``offsets.transaction_aborted`` the abort marker dropped the producer's pending offsets of the group.
    ``producer_id``, ``producer_epoch``, ``partitions``.

Consumer groups (KIP-848) share ``group.created`` (``cause`` "consumer_group_heartbeat"; "upgrade"
when a classic group with members became a consumer group, "downgrade" for the classic group a
consumer group became), ``group.deleted`` (``reason`` "converted" when a group changes type: the
classic one gives way to a consumer group of that id, or the other way round, and its offsets and
members go to the new one),
``group.state_change`` (their states "Empty", "Assigning", "Reconciling", "Stable"; ``reason``
None), and ``offset.committed``; ``generation`` is their group epoch. Their
members have events of their own:

``consumer.member_joined``   a member joined with ConsumerGroupHeartbeat (epoch 0), or a classic
    member with JoinGroup.
    ``member``, ``instance_id`` (None), ``client_id``, ``client_host``, ``subscribed_topics``
    (names), ``server_assignor`` (None).
``consumer.member_replaced`` a static member rejoined under a new member id and took over the
    departed one's place (its partitions stay put). ``member``, ``old_member``, ``instance_id``.
``consumer.member_left``     a member left (epoch -1), or a static member left for now (epoch -2,
    ``static`` True: it keeps its partitions until its session ends). ``member``, ``instance_id``,
    ``static``, ``initiator``: "member" (its own heartbeat at epoch -1 or -2, a classic member's
    LeaveGroup) | "admin" (a LeaveGroup naming it by instance id alone, or with the admin client's
    reason, "member was removed by an admin"; the admin API's removal). A member the coordinator
    removed is ``consumer.member_fenced``.
``consumer.member_fenced``   the coordinator removed a member. ``member``, ``instance_id``,
    ``reason``: "session_timeout" | "rebalance_timeout" (it did not revoke in time) |
    "join_timeout" | "sync_timeout" (a classic member in a consumer group did not rejoin, or
    sync, within its rebalance timeout); ``timeout_ms``.
``consumer.group_epoch_bumped`` the group epoch went up (Kafka's "Bumped group epoch"): a new
    target assignment follows. Emitted right before the event of the change that bumped it
    (``consumer.member_joined``, ``consumer.member_left``, ``consumer.member_fenced``), else
    before the group's next event or at the end of the heartbeat. ``member`` (whose heartbeat,
    leave or fencing bumped it; None when no member did), ``reason``: "member_joined" |
    "subscription_changed" | "metadata_changed" (a subscribed topic was created, deleted or grew) |
    "regex_resolved" (resolving the group's regular expressions changed its topics) |
    "member_left" | "member_fenced".

Share groups (KIP-932) share ``group.created`` (``cause`` "share_group_heartbeat", or
"alter_share_group_offsets" for a group an AlterShareGroupOffsets made), ``group.deleted``,
``group.state_change`` (their states "Empty", "Stable") and have member events of their own;
``generation`` is their group epoch:

``share.member_joined``   a member joined with ShareGroupHeartbeat (epoch 0). ``member``, ``client_id``,
    ``client_host``, ``subscribed_topics`` (names).
``share.member_left``     a member left (epoch -1). ``member``, ``initiator``: "member".
``share.member_fenced``   the coordinator removed a member. ``member``, ``reason``: "session_timeout";
    ``timeout_ms``.
``share.group_epoch_bumped`` the group epoch went up: a new target assignment follows. Emitted right
    before the event of the change that bumped it. ``member`` (whose heartbeat, leave or fencing bumped
    it), ``reason``: "member_joined" | "subscription_changed" | "metadata_changed" (a subscribed topic
    was created, deleted or grew) | "assignment_pending" (partitions whose share-partition state was
    initialized since wait to be assigned) | "member_left" | "member_fenced".

The share-partition leaders (:mod:`.share.manager`) report their share sessions and what happens to the
records (:data:`SHARE_PARTITION_EVENTS`): counted, never one event per record: one per partition of a
request, one per lock expiry of a partition (the locks expiring together told once). ``generation``,
``state`` and ``members`` are the share group's (-1, "Dead", 0 when it is gone); ``topic`` is the topic's
name (None when its id is unknown), ``partition`` its index:

``share.session_opened``  a ShareFetch at epoch 0 opened a share session on a node. ``member``, ``node``,
    ``partitions`` (how many it names).
``share.session_closed``  a share session ended. ``member``, ``node``, ``reason``: "final_epoch" (the
    member closed it: epoch -1) | "connection_closed" | "replaced" (a ShareFetch at epoch 0 opened
    another; its records stay acquired until their locks expire); ``released`` (records the member held
    there, released), ``archived`` (of them, archived at the delivery count limit).
``share.records_acquired`` a ShareFetch acquired records of a partition for a member. ``member``,
    ``topic``, ``partition``, ``records``, ``first_offset``, ``last_offset``, ``ranges`` ([first, last,
    delivery count] of each range acquired), ``redelivered`` (records delivered before).
``share.records_acknowledged`` a ShareFetch or ShareAcknowledge acknowledged records of a partition.
    ``member``, ``topic``, ``partition``, ``request``: "ShareFetch" | "ShareAcknowledge", ``first_offset``,
    ``last_offset`` (of its batches), ``accepted``, ``released``, ``rejected``, ``gaps``, ``renewed`` (records
    each way; all 0 when it failed), ``archived`` (records it archived: rejected, gaps, released at the
    delivery count limit), ``error`` (the partition's Kafka error name, None), ``dropped`` (a fault
    dropped the acknowledgements: nothing applied), ``batches`` (the request's acknowledgements of the
    partition as runs [first, last, type] of one type, "ACCEPT" | "RELEASE" | "REJECT" | "GAP" |
    "RENEW"), applied all or none (see ``error``, ``dropped``).
``share.lock_expired``    acquisition locks of a partition expired. ``topic``, ``partition``, ``records``
    (whose lock expired), ``archived`` (of them, at the delivery count limit: the others are AVAILABLE
    again), ``cause``: "timeout" | "fault" (an injected expiry).
``share.records_archived`` records were archived without a REJECT or GAP saying so. ``topic``,
    ``partition``, ``records``, ``reason``: "delivery_count_limit" (released, by the member, its session's
    end or a lock expiry, at share.delivery.count.limit; or, acquired then, below the start offset once the
    log start moved past them) | "log_start_moved" (available when the log start offset passed them).

The transaction coordinator's events (``transaction.*``) tell of a transactional id rather than a
group: instead of ``group``, ``generation``, ``state`` and ``members`` they carry
:data:`TRANSACTION_BASE_FIELDS`: ``transactional_id``, ``producer_id``, ``producer_epoch`` (after the
event) and ``transaction_state`` (Kafka's name: "Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
"CompleteCommit", "CompleteAbort", "PrepareEpochFence").

``transaction.producer_initialized`` an InitProducerId gave the id a producer id and epoch. ``timeout_ms``.
``transaction.partitions_added`` AddPartitionsToTxn or AddOffsetsToTxn added partitions. ``partitions``
    (["topic-partition", ...] added; an offsets-topic partition is ``__consumer_offsets-<n>``), ``began``
    (the transaction began with them).
``transaction.prepared``  EndTxn (or an abort of the coordinator's own) wrote PrepareCommit or
    PrepareAbort. ``result``: "commit" | "abort", ``partitions`` (how many get a marker).
``transaction.completed`` every marker was written and CompleteCommit or CompleteAbort with them.
    ``result``, ``duration_ms`` (since the transaction began).
``transaction.fenced``    the producer's epoch was bumped over an open transaction, which is aborted.
    ``cause``: "init_producer_id" (a new producer with the same transactional id) | "timeout" (open for
    longer than its transaction.timeout.ms) | "admin" (``POST /api/transactions/{id}/abort``).

Heartbeats never emit events. The default ``emit`` (:func:`default_emit`) logs each event
through structlog (logger ``groupcoord.events``) at the level :data:`EVENT_LEVELS` gives its type:
info for what an operator follows (groups created and deleted, state changes, members joining,
leaving and expiring, rebalances starting and completing, offsets expired or deleted), debug for
what comes per request or repeats a state change (``offset.committed``, ``member.pending``,
``rebalance.join_completed``, ``group.sync_completed``, ``share.records_acquired``,
``share.records_acknowledged``). The event stream, the metrics and
``--events`` get every event whatever the level.
"""
from __future__ import annotations

from typing import Literal, TypedDict

import structlog

SCHEMA_VERSION = 1

#: The fields every event carries.
BASE_FIELDS: tuple[str, ...] = ("v", "event", "ts_ms", "group", "generation", "state", "members")

#: Event type -> its own fields (in addition to :data:`BASE_FIELDS`).
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "group.created": ("protocol_type", "cause"),
    "group.state_change": ("state_from", "state_to", "duration_ms", "reason"),
    "group.deleted": ("reason", "offsets"),
    "group.leader_changed": ("leader_from", "leader_to", "reason"),
    "member.pending": ("member", "client_id", "client_host", "session_timeout_ms"),
    "member.joined": ("member", "instance_id", "client_id", "client_host", "protocol_type", "protocols",
                      "session_timeout_ms", "rebalance_timeout_ms", "reason", "leader"),
    "member.replaced": ("member", "old_member", "instance_id", "rebalance"),
    "member.left": ("member", "instance_id", "reason", "pending", "initiator"),
    "member.removed": ("member", "instance_id", "reason"),
    "member.expired": ("member", "instance_id", "reason", "session_timeout_ms"),
    "rebalance.started": ("state_from", "reason", "member", "client_reason", "round", "initial",
                          "rebalance_timeout_ms", "delay_ms"),
    "rebalance.join_completed": ("protocol", "leader", "duration_ms", "removed", "state_to"),
    "group.sync_completed": ("protocol", "leader", "duration_ms", "empty_assignments"),
    "rebalance.completed": ("outcome", "duration_ms", "rounds", "protocol", "leader"),
    "offset.committed": ("member", "instance_id", "partitions", "errors", "topics"),
    "offsets.expired": ("partitions",),
    "offsets.deleted": ("partitions",),
    "offsets.transactional_commit": ("member", "instance_id", "producer_id", "producer_epoch", "partitions",
                                     "errors", "topics"),
    "offsets.transaction_committed": ("producer_id", "producer_epoch", "partitions", "superseded"),
    "offsets.transaction_aborted": ("producer_id", "producer_epoch", "partitions"),
    "consumer.member_joined": ("member", "instance_id", "client_id", "client_host", "subscribed_topics",
                               "server_assignor"),
    "consumer.member_replaced": ("member", "old_member", "instance_id"),
    "consumer.member_left": ("member", "instance_id", "static", "initiator"),
    "consumer.member_fenced": ("member", "instance_id", "reason", "timeout_ms"),
    "consumer.group_epoch_bumped": ("member", "reason"),
    "share.member_joined": ("member", "client_id", "client_host", "subscribed_topics"),
    "share.member_left": ("member", "initiator"),
    "share.member_fenced": ("member", "reason", "timeout_ms"),
    "share.group_epoch_bumped": ("member", "reason"),
    "share.session_opened": ("member", "node", "partitions"),
    "share.session_closed": ("member", "node", "reason", "released", "archived"),
    "share.records_acquired": ("member", "topic", "partition", "records", "first_offset", "last_offset", "ranges",
                               "redelivered"),
    "share.records_acknowledged": ("member", "topic", "partition", "request", "first_offset", "last_offset",
                                   "accepted", "released", "rejected", "gaps", "renewed", "archived", "error",
                                   "dropped", "batches"),
    "share.lock_expired": ("topic", "partition", "records", "archived", "cause"),
    "share.records_archived": ("topic", "partition", "records", "reason"),
}

#: the common fields of the transaction coordinator's events (in place of :data:`BASE_FIELDS`)
TRANSACTION_BASE_FIELDS: tuple[str, ...] = ("v", "event", "ts_ms", "transactional_id", "producer_id",
                                            "producer_epoch", "transaction_state")
#: the transaction coordinator's event types -> their own fields
TRANSACTION_EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "transaction.producer_initialized": ("timeout_ms",),
    "transaction.partitions_added": ("partitions", "began"),
    "transaction.prepared": ("result", "partitions"),
    "transaction.completed": ("result", "duration_ms"),
    "transaction.fenced": ("cause",),
}

#: the share-partition leaders' events (:mod:`.share.manager`), the others' being the group coordinator's
SHARE_PARTITION_EVENTS: tuple[str, ...] = (
    "share.session_opened", "share.session_closed", "share.records_acquired", "share.records_acknowledged",
    "share.lock_expired", "share.records_archived",
)

#: Event type -> the level :func:`default_emit` logs it at (a type not listed: info).
EVENT_LEVELS: dict[str, str] = {
    **{kind: "info" for kind in EVENT_FIELDS},
    "offset.committed": "debug",            # one per OffsetCommit request
    "offsets.transactional_commit": "debug",  # one per TxnOffsetCommit request
    "member.pending": "debug",              # the first JoinGroup of every member (KIP-394)
    "rebalance.join_completed": "debug",    # the same transition as its group.state_change
    "group.sync_completed": "debug",        # the same transition as its group.state_change
    **{kind: "info" for kind in TRANSACTION_EVENT_FIELDS},
    "transaction.partitions_added": "debug",    # one or more per transaction
    "share.records_acquired": "debug",      # one per partition of a ShareFetch
    "share.records_acknowledged": "debug",  # one per partition of an acknowledgement
}

REBALANCE_REASONS: tuple[str, ...] = (
    "new_member", "metadata_changed", "leader_rejoined", "static_member_protocol_changed",
    "static_member_rejoined_during_sync", "member_left", "member_expired", "sync_timeout",
    "group_record_too_large",
)


class BaseEvent(TypedDict):
    v: int
    event: str
    ts_ms: int
    group: str
    generation: int
    state: str
    members: int


class GroupCreated(BaseEvent):
    protocol_type: str | None
    cause: Literal["join_group", "offset_commit", "consumer_group_heartbeat", "upgrade", "downgrade",
                   "share_group_heartbeat", "alter_share_group_offsets"]


class GroupStateChange(BaseEvent):
    state_from: str
    state_to: str
    duration_ms: int
    reason: str | None


class GroupDeleted(BaseEvent):
    reason: Literal["delete_groups", "offsets_expired", "converted"]
    offsets: int


class GroupLeaderChanged(BaseEvent):
    leader_from: str | None
    leader_to: str | None
    reason: str


class MemberPending(BaseEvent):
    member: str
    client_id: str
    client_host: str
    session_timeout_ms: int


class MemberJoined(BaseEvent):
    member: str
    instance_id: str | None
    client_id: str
    client_host: str
    protocol_type: str
    protocols: list[str]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    reason: str | None
    leader: bool


class MemberReplaced(BaseEvent):
    member: str
    old_member: str
    instance_id: str
    rebalance: bool


class MemberLeft(BaseEvent):
    member: str
    instance_id: str | None
    reason: str | None
    pending: bool
    initiator: Literal["member", "admin"]


class MemberRemoved(BaseEvent):
    member: str
    instance_id: str | None
    reason: Literal["not_rejoined", "sync_timeout", "group_max_size"]


class MemberExpired(BaseEvent):
    member: str
    instance_id: str | None
    reason: Literal["session_timeout", "new_member_join_timeout", "pending_member_timeout"]
    session_timeout_ms: int | None


class RebalanceStarted(BaseEvent):
    state_from: str
    reason: str
    member: str | None
    client_reason: str | None
    round: int
    initial: bool
    rebalance_timeout_ms: int
    delay_ms: int | None


class RebalanceJoinCompleted(BaseEvent):
    protocol: str | None
    leader: str | None
    duration_ms: int
    removed: int
    state_to: str


class GroupSyncCompleted(BaseEvent):
    protocol: str | None
    leader: str | None
    duration_ms: int
    empty_assignments: int


class RebalanceCompleted(BaseEvent):
    outcome: Literal["Stable", "Empty"]
    duration_ms: int
    rounds: int
    protocol: str | None
    leader: str | None


class OffsetCommitted(BaseEvent):
    member: str
    instance_id: str | None
    partitions: int
    errors: int
    topics: int


class OffsetsExpired(BaseEvent):
    partitions: int


class OffsetsDeleted(BaseEvent):
    partitions: int


class OffsetsTransactionalCommit(BaseEvent):
    member: str
    instance_id: str | None
    producer_id: int
    producer_epoch: int
    partitions: int
    errors: int
    topics: int


class OffsetsTransactionCommitted(BaseEvent):
    producer_id: int
    producer_epoch: int
    partitions: int
    superseded: int


class OffsetsTransactionAborted(BaseEvent):
    producer_id: int
    producer_epoch: int
    partitions: int


class ConsumerMemberJoined(BaseEvent):
    member: str
    instance_id: str | None
    client_id: str
    client_host: str
    subscribed_topics: list[str]
    server_assignor: str | None


class ConsumerMemberReplaced(BaseEvent):
    member: str
    old_member: str
    instance_id: str


class ConsumerMemberLeft(BaseEvent):
    member: str
    instance_id: str | None
    static: bool
    initiator: Literal["member", "admin"]


class ConsumerMemberFenced(BaseEvent):
    member: str
    instance_id: str | None
    reason: Literal["session_timeout", "rebalance_timeout", "join_timeout", "sync_timeout"]
    timeout_ms: int


class ConsumerGroupEpochBumped(BaseEvent):
    member: str | None
    reason: Literal["member_joined", "subscription_changed", "metadata_changed", "regex_resolved", "member_left",
                    "member_fenced"]


class ShareMemberJoined(BaseEvent):
    member: str
    client_id: str
    client_host: str
    subscribed_topics: list[str]


class ShareMemberLeft(BaseEvent):
    member: str
    initiator: Literal["member"]


class ShareMemberFenced(BaseEvent):
    member: str
    reason: Literal["session_timeout"]
    timeout_ms: int


class ShareGroupEpochBumped(BaseEvent):
    member: str | None
    reason: Literal["member_joined", "subscription_changed", "metadata_changed", "assignment_pending", "member_left",
                    "member_fenced"]


class ShareSessionOpened(BaseEvent):
    member: str
    node: int
    partitions: int


class ShareSessionClosed(BaseEvent):
    member: str
    node: int
    reason: Literal["final_epoch", "connection_closed", "replaced"]
    released: int
    archived: int


class ShareRecordsAcquired(BaseEvent):
    member: str
    topic: str | None
    partition: int
    records: int
    first_offset: int
    last_offset: int
    ranges: list[list[int]]
    redelivered: int


class ShareRecordsAcknowledged(BaseEvent):
    member: str
    topic: str | None
    partition: int
    request: Literal["ShareFetch", "ShareAcknowledge"]
    first_offset: int
    last_offset: int
    accepted: int
    released: int
    rejected: int
    gaps: int
    renewed: int
    archived: int
    error: str | None
    dropped: bool
    batches: list[list]          # [first, last, type name] runs


class ShareLockExpired(BaseEvent):
    topic: str | None
    partition: int
    records: int
    archived: int
    cause: Literal["timeout", "fault"]


class ShareRecordsArchived(BaseEvent):
    topic: str | None
    partition: int
    records: int
    reason: Literal["delivery_count_limit", "log_start_moved"]


class TransactionEvent(TypedDict):
    v: int
    event: str
    ts_ms: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    transaction_state: str


class TransactionProducerInitialized(TransactionEvent):
    timeout_ms: int


class TransactionPartitionsAdded(TransactionEvent):
    partitions: list[str]
    began: bool


class TransactionPrepared(TransactionEvent):
    result: Literal["commit", "abort"]
    partitions: int


class TransactionCompleted(TransactionEvent):
    result: Literal["commit", "abort"]
    duration_ms: int


class TransactionFenced(TransactionEvent):
    cause: Literal["init_producer_id", "timeout", "admin"]


#: The transaction coordinator's event types -> their TypedDicts.
TRANSACTION_EVENT_TYPES: dict[str, type] = {
    "transaction.producer_initialized": TransactionProducerInitialized,
    "transaction.partitions_added": TransactionPartitionsAdded,
    "transaction.prepared": TransactionPrepared,
    "transaction.completed": TransactionCompleted,
    "transaction.fenced": TransactionFenced,
}

#: Event type -> its TypedDict.
EVENT_TYPES: dict[str, type] = {
    "group.created": GroupCreated,
    "group.state_change": GroupStateChange,
    "group.deleted": GroupDeleted,
    "group.leader_changed": GroupLeaderChanged,
    "member.pending": MemberPending,
    "member.joined": MemberJoined,
    "member.replaced": MemberReplaced,
    "member.left": MemberLeft,
    "member.removed": MemberRemoved,
    "member.expired": MemberExpired,
    "rebalance.started": RebalanceStarted,
    "rebalance.join_completed": RebalanceJoinCompleted,
    "group.sync_completed": GroupSyncCompleted,
    "rebalance.completed": RebalanceCompleted,
    "offset.committed": OffsetCommitted,
    "offsets.expired": OffsetsExpired,
    "offsets.deleted": OffsetsDeleted,
    "offsets.transactional_commit": OffsetsTransactionalCommit,
    "offsets.transaction_committed": OffsetsTransactionCommitted,
    "offsets.transaction_aborted": OffsetsTransactionAborted,
    "consumer.member_joined": ConsumerMemberJoined,
    "consumer.member_replaced": ConsumerMemberReplaced,
    "consumer.member_left": ConsumerMemberLeft,
    "consumer.member_fenced": ConsumerMemberFenced,
    "consumer.group_epoch_bumped": ConsumerGroupEpochBumped,
    "share.member_joined": ShareMemberJoined,
    "share.member_left": ShareMemberLeft,
    "share.member_fenced": ShareMemberFenced,
    "share.group_epoch_bumped": ShareGroupEpochBumped,
    "share.session_opened": ShareSessionOpened,
    "share.session_closed": ShareSessionClosed,
    "share.records_acquired": ShareRecordsAcquired,
    "share.records_acknowledged": ShareRecordsAcknowledged,
    "share.lock_expired": ShareLockExpired,
    "share.records_archived": ShareRecordsArchived,
}

_log = None


def default_emit(event: dict) -> None:
    """Log the event through structlog (logger ``groupcoord.events``), at its type's level in
    :data:`EVENT_LEVELS`."""
    global _log
    if _log is None:
        _log = structlog.get_logger("groupcoord.events")
    getattr(_log, EVENT_LEVELS.get(event.get("event"), "info"))(**event)


def check_event(event: dict) -> None:
    """Raise ``ValueError`` unless ``event`` has exactly the documented fields."""
    if str(event.get("event", "")).startswith("transaction."):
        check_fields(event, TRANSACTION_BASE_FIELDS, TRANSACTION_EVENT_FIELDS)
        return
    check_fields(event, BASE_FIELDS, EVENT_FIELDS)


def check_fields(event: dict, base_fields: tuple[str, ...], event_fields: dict[str, tuple[str, ...]],
                 what: str = "event") -> str:
    """Raise ``ValueError`` unless ``event``'s type is one of ``event_fields`` and it has exactly
    ``base_fields`` and that type's own fields; return its type. Any events' schema (the
    coordinator's here, the fleet members' of :mod:`groupcoord.sim.events`); ``what`` names
    them in the error."""
    kind = event.get("event")
    own = event_fields.get(kind)
    if own is None:
        raise ValueError(f"unknown {what} type {kind!r}")
    expected = set(base_fields) | set(own)
    got = set(event)
    if got != expected:
        raise ValueError(f"{kind}: missing {sorted(expected - got)}, unexpected {sorted(got - expected)}")
    return kind
