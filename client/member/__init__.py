"""Kafka's ConsumerCoordinator as a pure object (sans-I/O): requests out, responses and time in.

A :class:`Member` is one consumer of a classic consumer group. It knows nothing of sockets,
threads or event loops; every entry point takes ``now`` (milliseconds of whatever clock the
driver uses) and the member answers with *actions*:

========================  =============================================================
:class:`Connect`          open connection ``conn_id`` (bootstrap, coordinator or a broker),
                          negotiate ApiVersions, then call :meth:`Member.on_connected` (or
                          :meth:`Member.on_connection_lost` if that failed)
:class:`SendRequest`      send ``(api_key, api_version, body)`` on ``conn_id``; hand the decoded
                          response to :meth:`Member.on_response` with ``request_id``
:class:`Disconnect`       close ``conn_id``; nothing more is expected from it
:class:`PartitionsRevoked` / :class:`PartitionsAssigned` / :class:`PartitionsLost`
                          run the rebalance listener, then :meth:`Member.callback_done` with
                          the action's ``token`` (the rebalance waits for it)
:class:`CommitCompleted`  an offset commit finished (``error`` None on success)
:class:`OffsetsFetched`   a :meth:`Member.fetch_committed` finished
:class:`ErrorRaised`      an error for the application; ``fatal`` ones end the member
:class:`Closed`           :meth:`Member.close` is complete
========================  =============================================================

Driving it (h11 style)::

    member = Member(config, assignors, topics=["orders"], now=clock())
    while True:
        for action in member.poll(clock()):           # timers fire inside poll
            ...execute it...
        wait until member.next_deadline() or an I/O event; feed the event in:
        member.on_response(request_id, body, clock()) / on_connected / on_connection_lost
        member.callback_done(token, clock())           # after running a rebalance callback
        member.application_poll(clock())               # each time the application polls

Call :meth:`Member.poll` after every input (a driver may skip it after a response for which
:meth:`Member.on_response` returned False, taking the actions with :meth:`Member.take_actions`:
the virtual-time simulator does). The application side: :meth:`Member.commit`
(sync/async), :meth:`Member.fetch_committed`, :meth:`Member.seek` / :meth:`Member.position`,
:meth:`Member.take_records` (with ``fetch=True``), :meth:`Member.subscribe`,
:meth:`Member.close`; state: ``assignment``, ``generation_id``, ``member_id``, ``is_leader``,
``state``, :attr:`Member.stable`, ``fatal_error``.

Rebalance callbacks are actions, so they run between two polls; the member keeps the partitions
being revoked assigned (positions readable, commits possible) until the driver reports the
callback done, and only then goes on with the rebalance (JoinGroup after an eager revocation,
the assignment after a cooperative one), as Kafka invokes its listener before changing the
assignment.

What it implements, after Kafka's ``AbstractCoordinator`` and ``ConsumerCoordinator``
(Kafka 3.x, the classic protocol):

- FindCoordinator on the bootstrap connection, rediscovery on NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, a lost coordinator connection, or a request timeout;
- JoinGroup (KIP-394 MEMBER_ID_REQUIRED retry, static membership with group.instance.id) with
  one ConsumerProtocolSubscription v3 per configured assignor (topics, assignor user data,
  owned partitions, generation, rack); the leader decodes every member's subscription, gets
  partition counts from Metadata, runs the assignor the coordinator selected and sends the
  encoded assignments in SyncGroup; followers send none; KIP-814 SkipAssignment;
- the JoinGroup/SyncGroup/Heartbeat/OffsetCommit error reactions of the Java client
  (``joinGroupIfNeeded``: UNKNOWN_MEMBER_ID resets the member id, ILLEGAL_GENERATION the
  generation, REBALANCE_IN_PROGRESS and MEMBER_ID_REQUIRED rejoin at once, coordinator errors
  rediscover and back off, COORDINATOR_LOAD_IN_PROGRESS backs off, anything else is fatal);
- heartbeats every heartbeat.interval.ms; a member without a successful heartbeat for
  session.timeout.ms considers itself out of the group (PartitionsLost, rejoin); if the
  application does not poll within max.poll.interval.ms the member leaves the group (LeaveGroup
  for dynamic members) and rejoins at the next application poll, as Kafka does;
- the rebalance protocol Kafka chooses: the highest protocol all assignors support (COOPERATIVE
  only if every assignor supports it). EAGER revokes everything before joining; COOPERATIVE
  (KIP-429) revokes, after SyncGroup, only what the new assignment no longer holds, assigns only
  what is new, and rejoins at once when something was revoked;
- offsets: commits (sync with retries until default.api.timeout.ms, async without), auto-commit
  every auto.commit.interval.ms, a commit before revocation (of everything before an eager
  rebalance, of the revoked partitions in a cooperative one), OffsetFetch of newly assigned
  partitions and ListOffsets (auto.offset.reset) for those without a committed offset;
- LeaveGroup on close for dynamic members (static members stay until their session ends);
- optionally (``fetch=True``) a simple fetcher: Fetch to the partition leaders, records decoded
  from the record batches and handed out by :meth:`Member.take_records`.

API versions: each connection's ApiVersions ranges (given to :meth:`Member.on_connected`) are
intersected with :data:`CLIENT_VERSIONS`, and the highest common version is used.

The member in parts, each a module with its own step(now) and deadline, the façade
:class:`Member` (``core``) driving them in a fixed order:

======================  ==================================================================
``actions``             what the member hands out (actions), raises, and its values
``connections``         connections by role, requests in flight, versions, the outbox
``metadata``            partition leaders and replicas, brokers; periodic and asked refreshes
``discovery``           FindCoordinator, rediscovery
``membership``          JoinGroup, the leader's assignment, SyncGroup, LeaveGroup, the listener
``completion``          taking a new assignment, with either protocol: the commit,
                        onPartitionsRevoked, the assignment and onPartitionsAssigned
``heartbeat``           heartbeats, the session and poll timers
``commits``             OffsetCommit (sync, async, auto, before revocation, on close), OffsetFetch
``consumer_protocol``   with group.protocol=consumer (KIP-848), in place of ``membership`` and
                        ``heartbeat``: ConsumerGroupHeartbeat with member epochs, incremental
                        reconciliation, fencing, leaving with -1 / -2 (Kafka 4's
                        ConsumerMembershipManager and ConsumerHeartbeatRequestManager)
``positions``           where an assigned partition starts: committed offset or auto.offset.reset
``fetching``            Fetch and the records handed out
``core``                the façade: inputs, poll, next_deadline, the assignment, close
======================  ==================================================================
"""

from __future__ import annotations

from ..assignors.base import TopicPartition as TP
from .actions import (
    Action,
    Closed,
    CommitCompleted,
    CommitFailedError,
    Connect,
    ConsumerRecord,
    Disconnect,
    ErrorRaised,
    FatalConsumerError,
    IllegalStateError,
    MemberState,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RebalanceCallback,
    RebalanceInProgressError,
    RetriableCommitFailedError,
    SendRequest,
    UnsupportedOperationError,
)
from .connections import (
    API_VERSIONS,
    BOOTSTRAP,
    BROKER,
    CLIENT_VERSIONS,
    CONSUMER_GROUP_HEARTBEAT,
    COORDINATOR,
    FETCH,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    SYNC_GROUP,
    pick_version,
)
from .core import Member, choose_rebalance_protocol
from .membership import PROTOCOL_TYPE
from .positions import EARLIEST, LATEST, answered_offset

__all__ = [
    "API_VERSIONS", "BOOTSTRAP", "BROKER", "CLIENT_VERSIONS", "CONSUMER_GROUP_HEARTBEAT", "COORDINATOR", "EARLIEST", "FETCH",
    "FIND_COORDINATOR", "HEARTBEAT", "JOIN_GROUP", "LATEST", "LEAVE_GROUP", "LIST_OFFSETS", "METADATA",
    "OFFSET_COMMIT", "OFFSET_FETCH", "PROTOCOL_TYPE", "SYNC_GROUP",
    "Action", "Closed", "CommitCompleted", "CommitFailedError", "Connect", "ConsumerRecord", "Disconnect",
    "ErrorRaised", "FatalConsumerError", "IllegalStateError", "Member", "MemberState", "UnsupportedOperationError",
    "NoOffsetForPartitionError", "OffsetAndMetadata", "OffsetsFetched", "PartitionsAssigned", "PartitionsLost",
    "PartitionsRevoked", "RebalanceCallback", "RebalanceInProgressError", "RetriableCommitFailedError",
    "SendRequest", "TP", "answered_offset", "choose_rebalance_protocol", "pick_version",
]
