"""A share consumer (KIP-932, Kafka's queues) as a pure object: Kafka's ShareConsumerImpl with its
ShareMembershipManager, ShareHeartbeatRequestManager and ShareConsumeRequestManager, sans-I/O.

It is driven as :class:`~groupcoord.client.member.Member` is (``poll(now)`` hands out actions,
``on_response`` / ``on_connected`` / ``on_connection_lost`` take the I/O back, ``next_deadline``
says when to call again) and shares its parts for connections, metadata and the coordinator's
discovery. Its own parts:

- :class:`ShareMembership`: the member in its share group: ShareGroupHeartbeat (v1) with a member id
  it makes itself, joining with epoch 0 and the subscription, heartbeats at the coordinator's
  interval carrying only what changed (everything after an error), the assignment by topic ids
  resolved through metadata, fencing (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH: rejoin with epoch 0),
  leaving with epoch -1, and the poll timer (max.poll.interval.ms without a poll: leave, rejoin at
  the next poll). There is no rebalance listener: a share group's partitions are shared, not owned.
- ``fetcher`` (:class:`~groupcoord.client.member.share_fetching.ShareFetcher`): share sessions,
  ShareFetch, acknowledgements, ShareAcknowledge.

The application's side, as Kafka's ShareConsumer: :meth:`ShareMember.take_records` (a poll's
records), :meth:`ShareMember.acknowledge` (``share.acknowledgement.mode=explicit``; with implicit,
the default, every record of a poll is accepted at the next poll or commit), :meth:`ShareMember.commit`
(sends every pending acknowledgement; a :class:`ShareCommitCompleted` follows), :meth:`ShareMember.close`
(the acknowledgements made so far go out with each session's close, ShareAcknowledge epoch -1, which
releases everything else the member holds; then the leave heartbeat). As Kafka's client does, close
does not accept the last poll's records in implicit mode: commit first to accept them.
"""
from __future__ import annotations

import enum
import logging
import random
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from groupcoord.protocol.errors import ErrorCode, KafkaError

from ..assignors.base import TopicPartition as TP
from ..consumer_config import ConfigError, ShareConsumerConfig
from .actions import NEVER, Action, Closed, ErrorRaised, FatalConsumerError, IllegalStateError
from .connections import COORDINATOR, SHARE_GROUP_HEARTBEAT, Connections, Request
from .consumer_protocol import new_member_id
from .discovery import Discovery
from .membership import Generation
from .metadata import Metadata
from .share_actions import ACCEPT, AcknowledgeType, ShareRecord
from .share_fetching import ShareFetcher

log = logging.getLogger("groupcoord.client")

_E = ErrorCode
_error = ErrorCode.lookup
_COORDINATOR_ERRORS = (_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR)
_FATAL = (_E.GROUP_AUTHORIZATION_FAILED, _E.INVALID_REQUEST, _E.GROUP_MAX_SIZE_REACHED, _E.UNSUPPORTED_VERSION,
          _E.GROUP_ID_NOT_FOUND)
JOIN_EPOCH, LEAVE_EPOCH = 0, -1


class ShareState(enum.Enum):
    """Kafka's MemberState, as a share member goes through it."""
    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    LEAVING = "LEAVING"


_OUT = (ShareState.UNSUBSCRIBED, ShareState.FENCED, ShareState.LEAVING)


class ShareMembership:
    """The member in its share group; see the module docstring. ``state``, ``epoch``,
    ``target`` (topic id -> partitions, as the coordinator last sent it)."""

    def __init__(self, member, now: int, rng: random.Random | None):
        cfg = member.config
        self.member = member
        self.member_id = new_member_id(rng)
        self.epoch = JOIN_EPOCH
        self.state = ShareState.UNSUBSCRIBED
        self.target: dict | None = None
        self.in_flight = False
        self.next = 0                                   # the next heartbeat
        self.sent_at = 0
        self.interval_ms = 0                            # the coordinator's
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.rack: str | None = cfg["client.rack"] or None
        self.max_poll_interval_ms: int = cfg["max.poll.interval.ms"]
        self.last_app_poll = now
        self.left_on_poll_timeout = False
        self.sent_topics: frozenset | None = None       # what the last heartbeat carried
        self.leave: int | None = None                   # the leave heartbeat's request id
        self.rebalances = 0                             # assignments taken (for tests and stats)
        self.state_listener = None                      # (state name, epoch), as they are set

    def _to(self, state: ShareState, epoch: int | None = None) -> None:
        if state is not self.state:
            log.debug("%s: %s -> %s", self.member.who(), self.state.name, state.name)
        self.state = state
        if epoch is not None:
            self.epoch = epoch
        if self.state_listener is not None:
            self.state_listener(state.value, self.epoch)

    def on_metadata(self, now: int) -> None:
        if self.target is not None and self.state not in _OUT:
            self.reconcile(now)

    def fenced(self, now: int, reason: str) -> None:
        log.warning("%s: fenced (%s); rejoining", self.member.who(), reason)
        self.target = None
        self.member.set_assignment(frozenset(), now)
        self._to(ShareState.FENCED, JOIN_EPOCH)

    # ---- the step ------------------------------------------------------------------------------
    def step(self, now: int) -> None:
        member = self.member
        state = self.state
        if state not in _OUT and self.last_app_poll + self.max_poll_interval_ms <= now:
            log.warning("%s: the application did not poll within max.poll.interval.ms; leaving the group",
                        member.who())
            self.maybe_leave(now)
            self.left_on_poll_timeout = True
            return
        if state in _OUT:
            if (member.subscription and not self.left_on_poll_timeout and member.closing is None
                    and member.discovery.ready(now)):
                log.info("%s: joining the share group", member.who())
                self.target = None
                self.sent_topics = None
                self._to(ShareState.JOINING, JOIN_EPOCH)
                self.next = now
            else:
                return
        if self.sent_topics is not None and self.sent_topics != member.subscription:
            self.next = min(self.next, now)             # a new subscription goes out at once
        if not self.in_flight and now >= self.next:
            self._heartbeat(now)

    def _heartbeat(self, now: int) -> None:
        member = self.member
        conn = member.discovery.conn(now)
        if conn is None:
            return
        full = self.state is ShareState.JOINING or self.sent_topics is None
        body: dict[str, Any] = {"group_id": member.group_id, "member_id": self.member_id,
                                "member_epoch": self.epoch, "rack_id": self.rack if full else None,
                                "subscribed_topic_names": None}
        topics = member.subscription
        if full or topics != self.sent_topics:
            body["subscribed_topic_names"] = sorted(topics)
        if member.net.send(COORDINATOR, SHARE_GROUP_HEARTBEAT, body, self.on_heartbeat, now,
                           ctx=(self.epoch, topics), conn=conn) is None:
            return
        self.in_flight = True
        self.sent_at = now
        self.next = now + (self.interval_ms or self.retry_backoff_ms)

    def on_heartbeat(self, resp: dict | None, req: Request, now: int) -> None:
        """ShareHeartbeatRequestManager.onResponse / onErrorResponse / onFailure."""
        self.in_flight = False
        member = self.member
        if self.state in _OUT:
            return                                      # answered after a leave or fencing
        if resp is None:
            self.sent_topics = None                     # the next one carries everything
            self.next = now + self.retry_backoff_ms
            return
        code = _error(resp["error_code"])
        if code == _E.NONE:
            self.sent_topics = req.ctx[1]
            interval = resp["heartbeat_interval_ms"]
            if interval > 0 and interval != self.interval_ms:
                self.interval_ms = interval
                self.next = self.sent_at + interval
            if resp.get("member_id"):
                self.member_id = resp["member_id"]
            self.epoch = resp["member_epoch"]
            a = resp.get("assignment")
            if a is not None:
                self.target = {t["topic_id"]: frozenset(t["partitions"]) for t in a["topic_partitions"]
                               if t["partitions"]}
            if self.state is ShareState.JOINING and a is None:
                self.next = now                         # still joining: again at once
                return
            self.reconcile(now)
            return
        self.sent_topics = None
        self.next = now + self.retry_backoff_ms
        message = resp.get("error_message") or code.message
        if code in _COORDINATOR_ERRORS:
            member.discovery.unknown(now, f"ShareGroupHeartbeat: {code.name}")
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            pass
        elif code in (_E.FENCED_MEMBER_EPOCH, _E.UNKNOWN_MEMBER_ID):
            if req.ctx[0] == self.epoch:
                self.fenced(now, f"ShareGroupHeartbeat: {code.name}: {message}")
        elif code == _E.TOPIC_AUTHORIZATION_FAILED:
            member.net.actions.append(ErrorRaised(KafkaError(code, message), False))
        elif code in _FATAL:
            raise FatalConsumerError(code, f"ShareGroupHeartbeat failed: {message}")
        else:
            raise FatalConsumerError(code, f"unexpected error in ShareGroupHeartbeat response: {code}: {message}")

    def reconcile(self, now: int) -> None:
        """ShareMembershipManager's reconciliation: the part of the target whose topic ids metadata
        names becomes the assignment at once (nothing to commit, no listener); the rest waits for
        metadata, which is asked for."""
        member = self.member
        target = self.target or {}
        names = member.metadata.topic_names
        if any(tid not in names for tid in target):
            member.metadata.requested = True
        assigned = frozenset(TP(names[tid], p) for tid, ps in target.items() if tid in names for p in ps)
        if assigned != member.assignment:
            log.info("%s: assigned %s at epoch %s", member.who(), sorted(assigned), self.epoch)
            member.set_assignment(assigned, now)
            self.rebalances += 1
            self.next = now                             # acknowledged by a heartbeat at once
        self._to(ShareState.STABLE if len(assigned) == sum(len(ps) for ps in target.values())
                 else ShareState.RECONCILING)

    # ---- leaving -------------------------------------------------------------------------------
    def maybe_leave(self, now: int) -> None:
        """A heartbeat with epoch -1, unless out of the group; the assignment goes."""
        member = self.member
        if self.state not in _OUT and member.discovery.coordinator is not None:
            body = {"group_id": member.group_id, "member_id": self.member_id, "member_epoch": LEAVE_EPOCH,
                    "rack_id": None, "subscribed_topic_names": None}
            self.leave = member.net.send(COORDINATOR, SHARE_GROUP_HEARTBEAT, body, self.on_leave, now)
            log.info("%s: leaving the share group", member.who())
        self.target = None
        member.set_assignment(frozenset(), now)
        self._to(ShareState.UNSUBSCRIBED, LEAVE_EPOCH)

    def on_leave(self, resp: dict | None, req: Request, now: int) -> None:
        if self.leave == req.request_id:
            self.leave = None
        if resp is not None and resp["error_code"]:
            log.info("%s: the leave heartbeat failed: %s", self.member.who(), _error(resp["error_code"]))

    def deadline(self, now: int, best: int) -> int:
        if self.state not in _OUT:
            d = self.next
            if now < d < best and not self.in_flight:
                best = d
            d = self.last_app_poll + self.max_poll_interval_ms
            if now < d < best:
                best = d
        return best


@dataclass
class _Closing:
    deadline: int
    stage: str = "acks"              # acks (close the sessions), leave, done


class ShareMember:
    """One share consumer; see the module docstring.

    ``config``  a :class:`ShareConsumerConfig` or a mapping of Kafka consumer configs (those a
                share consumer refuses raise ConfigError, as Kafka's).
    ``topics``  the subscription (or later, :meth:`subscribe`).
    ``rng``     randomness for the member id; seed it for reproducible runs.
    """

    def __init__(self, config: ShareConsumerConfig | Mapping[str, Any], *, topics: Iterable[str] = (),
                 now: int = 0, rng: random.Random | None = None, max_versions: Mapping[int, int] | None = None):
        self.config = config if isinstance(config, ShareConsumerConfig) else ShareConsumerConfig(config)
        cfg = self.config
        self.group_id: str = cfg["group.id"]
        self.client_id: str = cfg["client.id"]
        self.explicit: bool = cfg["share.acknowledgement.mode"] == "explicit"
        self.max_poll_records: int = cfg["max.poll.records"]
        self.api_timeout_ms: int = cfg["default.api.timeout.ms"]
        self.subscription: frozenset[str] = frozenset()
        self.assignment: frozenset[TP] = frozenset()
        self._topic_ids: tuple[int, dict] = (-1, {})    # (metadata version, topic name -> id)
        self.batch: dict[tuple, list] = {}              # the last poll's records: (tp, offset) -> [deadline, type]
        self.closing: _Closing | None = None
        self.closed = False
        self.fatal_error: Exception | None = None
        self._now = now
        self.net = Connections(cfg, max_versions)
        self.metadata = Metadata(self, now)
        self.discovery = Discovery(self)
        self.membership = ShareMembership(self, now, rng)
        self.fetcher = ShareFetcher(self)
        if topics:
            self.subscribe(topics, now)

    # ============================================================================ the application
    def subscribe(self, topics: Iterable[str], now: int) -> None:
        """The topics to consume (exact names); an empty list unsubscribes (the member leaves)."""
        new = frozenset(topics)
        if any(not t or not t.strip() for t in new):
            raise ValueError("Topic collection to subscribe to cannot contain null or empty topic")
        if new == self.subscription:
            return
        self.subscription = new
        self.metadata.requested = True
        if not new:
            self.membership.maybe_leave(now)

    def application_poll(self, now: int) -> None:
        """The application polls: implicit mode accepts the last poll's records; explicit mode
        insists every one of them was acknowledged (both before the subscription is checked, as
        ShareConsumerImpl.poll does); the poll timer restarts."""
        self._check_open()
        self._settle_batch(now)
        if not self.subscription:
            raise IllegalStateError("Consumer is not subscribed to any topics.")
        group = self.membership
        group.last_app_poll = now
        if group.left_on_poll_timeout:
            group.left_on_poll_timeout = False

    def _settle_batch(self, now: int) -> None:
        """The last poll's records: implicit mode accepts them all; explicit mode needs each one
        acknowledged; either way the acknowledgements go to the fetcher, and the batch is over."""
        batch = self.batch
        if not batch:
            return
        if self.explicit:
            if any(v[1] is None for v in batch.values()):
                raise IllegalStateError("All records must be acknowledged in explicit acknowledgement mode.")
        fetcher = self.fetcher
        for (tp, offset), (deadline, kind) in batch.items():
            fetcher.acknowledge(tp, offset, ACCEPT if kind is None else kind, deadline)
        self.batch = {}

    def take_records(self, now: int, max_records: int | None = None) -> list[ShareRecord]:
        """Records of this poll (none if nothing is buffered: then records are fetched). Call
        :meth:`application_poll` first."""
        got = self.fetcher.take(max_records or self.max_poll_records, now)
        if not got:
            self.fetcher.wanted = True
            return []
        self.fetcher.wanted = False
        out = []
        for rec, deadline in got:
            self.batch[(TP(rec.topic, rec.partition), rec.offset)] = [deadline, None]
            out.append(rec)
        return out

    def acknowledge(self, record: ShareRecord | tuple, kind: int = ACCEPT) -> None:
        """Acknowledge a record of the last poll (explicit mode): ACCEPT, RELEASE or REJECT. The
        acknowledgement goes out at the next poll or commit. ``record``: a :class:`ShareRecord` or
        (topic, partition, offset)."""
        self._check_open()
        if not self.explicit:
            raise IllegalStateError("Implicit acknowledgement of delivery is being used.")
        kind = int(AcknowledgeType(kind))
        if isinstance(record, ShareRecord):
            key = (TP(record.topic, record.partition), record.offset)
        else:
            topic, partition, offset = record
            key = (TP(topic, partition), offset)
        entry = self.batch.get(key)
        if entry is None:
            raise IllegalStateError("The record cannot be acknowledged.")
        entry[1] = kind

    def commit(self, now: int) -> int:
        """Send every acknowledgement made (implicit mode: the last poll's records accepted first);
        a :class:`ShareCommitCompleted` with the returned handle follows."""
        self._check_open()
        if not self.explicit:
            self._settle_batch(now)
        else:
            self._take_acknowledged()
        return self.fetcher.commit(now)

    def _take_acknowledged(self) -> None:
        """Explicit mode: the acknowledged records of the batch go to the fetcher now."""
        for key in [k for k, v in self.batch.items() if v[1] is not None]:
            deadline, kind = self.batch.pop(key)
            self.fetcher.acknowledge(key[0], key[1], kind, deadline)

    def close(self, now: int, timeout_ms: int | None = None) -> None:
        """Leave as Kafka's close does: the acknowledgements made go out as each session closes
        (which releases everything else held), then the leave heartbeat."""
        if self.closing is not None or self.closed:
            return
        if self.explicit:
            self._take_acknowledged()
        self.batch = {}
        self.closing = _Closing(now + (self.api_timeout_ms if timeout_ms is None else timeout_ms))
        self.fetcher.closing = True
        self.fetcher.release_buffer()

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """The AcquisitionLockTimeoutMs of the last ShareFetch answered (None before any)."""
        return self.fetcher.lock_timeout_ms

    def _check_open(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error
        if self.closing is not None or self.closed:
            raise IllegalStateError("This consumer has already been closed.")

    # ============================================================================ the I/O
    def on_connected(self, conn_id: int, api_versions, now: int) -> None:
        self.net.on_connected(conn_id, api_versions)

    def on_connection_lost(self, conn_id: int, now: int) -> None:
        conn = self.net.conns.get(conn_id)
        if conn is None:
            return
        self._now = now
        if isinstance(conn.key, tuple):
            # the leader drops the share session with the connection (Kafka 4.3): start over at epoch 0
            self.fetcher.connection_lost(conn.node_id)
        try:
            self.net.drop(conn, now, backoff=True)
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)

    def on_response(self, request_id: int, body: dict | None, now: int) -> bool:
        req = self.net.inflight.pop(request_id, None)
        if req is None:
            return True
        self._now = now
        try:
            req.handler(body, req, now)
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)
        return True

    def poll(self, now: int) -> list[Action]:
        """Run everything due at ``now``; the actions to execute, in order."""
        self._now = now
        if self.closed:
            return self.take_actions()
        for _ in range(6):
            before = len(self.net.actions)
            self.net.expire(now)
            if self.fatal_error is None:
                try:
                    self._step(now)
                except (FatalConsumerError, IllegalStateError) as e:
                    self._fail_fatally(e)
            elif not self.closed:
                self._finish_close()
            if len(self.net.actions) == before or self.closed:
                break
        return self.take_actions()

    def take_actions(self) -> list[Action]:
        out, self.net.actions = self.net.actions, []
        return out

    def _step(self, now: int) -> None:
        if self.metadata.due(now):
            self.metadata.step(now)
        if self.discovery.needed():
            self.discovery.step(now)
        if self.closing is not None:
            self._step_close(now)
            return
        self.membership.step(now)
        self.fetcher.step(now)

    def _step_close(self, now: int) -> None:
        c = self.closing
        expired = now >= c.deadline
        if c.stage == "acks":
            self.fetcher.step(now)
            if (self.fetcher.sessions or not self.fetcher.idle()) and not expired:
                return
            c.stage = "leave"
        if c.stage == "leave" and self.membership.leave is None and self.membership.state not in _OUT:
            if not self.discovery.ready(now):
                if not expired:
                    return                              # the leave heartbeat waits for the coordinator
            else:
                self.membership.maybe_leave(now)
        if c.stage == "leave":
            if self.membership.leave is not None and not expired:
                return
            self._finish_close()

    def next_deadline(self) -> int | None:
        now = self._now
        best = NEVER
        for r in self.net.inflight.values():
            if now < r.deadline < best:
                best = r.deadline
        if self.fatal_error is None and not self.closed:
            if self.closing is None:
                best = self.membership.deadline(now, best)
            elif now < self.closing.deadline < best:
                best = self.closing.deadline
            metadata = self.metadata
            for d in (metadata.next_refresh, metadata.retry_at if metadata.requested else NEVER,
                      self.discovery.retry_at):
                if now < d < best:
                    best = d
            best = self.fetcher.deadline(now, best)
            if self.net.reconnect_at:
                best = self.net.reconnect_deadline(now, best)
        return None if best == NEVER else best

    # ============================================================================ what the parts ask
    @property
    def topic_ids(self) -> dict:
        """Topic name -> topic id, as metadata last said."""
        version, ids = self._topic_ids
        if version != self.metadata.version:
            ids = {name: tid for tid, name in self.metadata.topic_names.items()}
            self._topic_ids = (self.metadata.version, ids)
        return ids

    def wanted_topics(self) -> set[str]:
        return set(self.subscription) | {tp.topic for tp in self.assignment}

    def wanted_topic_ids(self) -> None:
        return None

    def needs_coordinator(self) -> bool:
        if self.closing is not None:
            return self.membership.state not in _OUT
        return bool(self.subscription)

    def set_assignment(self, tps: frozenset, now: int) -> None:
        self.assignment = frozenset(tps)

    def who(self) -> str:
        return f"share member {self.membership.member_id}"

    @property
    def member_id(self) -> str:
        return self.membership.member_id

    @property
    def member_epoch(self) -> int:
        return self.membership.epoch

    @property
    def generation(self) -> Generation:
        """(member epoch, member id), as a consumer's generation reads (the fleets' event recorder)."""
        return Generation(self.membership.epoch, self.membership.member_id, None)

    @property
    def state(self) -> ShareState:
        return self.membership.state

    @property
    def stable(self) -> bool:
        return self.membership.state is ShareState.STABLE and self.closing is None and self.fatal_error is None

    def in_flight(self) -> list[tuple[int, int]]:
        return [(r.request_id, r.api_key) for r in self.net.inflight.values()]

    # ============================================================================ close, fatal errors
    def _finish_close(self) -> None:
        self.fetcher.fail_commits(KafkaError(_E.REQUEST_TIMED_OUT, "the consumer closed"))
        self.net.close()
        self.closed = True
        self.membership.state = ShareState.UNSUBSCRIBED
        self.net.actions.append(Closed())

    def _fail_fatally(self, error: Exception) -> None:
        if self.fatal_error is not None:
            return
        log.error("%s: fatal: %s", self.who(), error)
        self.fatal_error = error
        self.membership.state = ShareState.UNSUBSCRIBED
        self.net.actions.append(ErrorRaised(error, True))
        self.fetcher.fail_commits(error)

    def __repr__(self) -> str:
        return (f"ShareMember(group={self.group_id!r}, member_id={self.member_id!r}, epoch={self.member_epoch}, "
                f"state={self.state.name}, assignment={sorted(self.assignment)})")


__all__ = ["ConfigError", "ShareMember", "ShareMembership", "ShareState"]
