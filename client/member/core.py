"""The member's façade: the inputs, the pump (poll, next_deadline), the assignment and positions,
close and fatal errors. The work is done by its parts (see the package's docstring)."""
from __future__ import annotations

import enum
import logging
import random
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from groupcoord.protocol.errors import ErrorCode, KafkaError

from ..assignors.base import ConsumerGroupMetadata, ConsumerPartitionAssignor, RebalanceProtocol
from ..assignors.base import TopicPartition as TP
from ..consumer_config import ConfigError, ConsumerConfig
from .actions import (
    COMPLETING,
    NEVER,
    STABLE,
    Action,
    Closed,
    ConsumerRecord,
    ErrorRaised,
    FatalConsumerError,
    IllegalStateError,
    MemberState,
    OffsetAndMetadata,
    PartitionsLost,
    PartitionsRevoked,
    SendRequest,
    UnsupportedOperationError,
)
from .commits import Commits
from .completion import CompletionStage
from .connections import COORDINATOR, HEARTBEAT, OFFSET_COMMIT, Connections
from .discovery import Discovery
from .fetching import Fetcher
from .heartbeat import Heartbeat
from .membership import Generation, Membership
from .metadata import Metadata
from .positions import Positions

log = logging.getLogger("groupcoord.client")

_E = ErrorCode


def choose_rebalance_protocol(assignors: list[ConsumerPartitionAssignor]) -> RebalanceProtocol:
    """ConsumerCoordinator's choice: the highest protocol every assignor supports."""
    if not assignors:
        raise ConfigError("partition.assignment.strategy", "needs at least one assignor")
    common = set(assignors[0].supported_protocols)
    for a in assignors[1:]:
        common &= set(a.supported_protocols)
    if not common:
        raise ConfigError("partition.assignment.strategy",
                          f"assignors {[a.name for a in assignors]} have no rebalance protocol in common")
    return max(common, key=lambda p: p.value)


class CloseStage(enum.Enum):
    COMMIT = "commit"               # commit what was consumed (auto-commit)
    REVOKE = "revoke"               # the listener's onPartitionsRevoked (or Lost)
    LEAVE = "leave"                 # LeaveGroup (dynamic members)
    DRAIN = "drain"                 # wait for the commits still under way


@dataclass
class Closing:
    """close() in progress."""
    deadline: int
    stage: CloseStage = CloseStage.COMMIT
    commit_started: bool = False
    commit: int | None = None       # the close commit's handle while it runs
    token: int | None = None        # the listener callback's (-1: none needed)
    leave_started: bool = False
    leave: int | None = None        # the LeaveGroup's request id while it is in flight


_STALE = (0, NEVER)          # Member._static before next_deadline finds it


class Member:
    """One consumer-group member; see the package's docstring.

    ``config``     a :class:`ConsumerConfig` or a mapping of Kafka consumer configs.
    ``assignors``  assignor objects; default: from partition.assignment.strategy.
    ``topics``     the subscription (may also be given later with :meth:`subscribe`).
    ``fetch``      also fetch records for the assigned partitions (:meth:`take_records`).
    ``rng``        randomness (only used for the fetch order); seed it for reproducible runs.
    ``max_versions`` api key -> highest version to use, below what both sides advertise (for
                   brokers that advertise versions they do not parse correctly).

    Its parts: ``net`` (connections, requests, the outbox), ``metadata``, ``discovery`` (the
    coordinator), ``membership`` (the group's rebalances), ``heartbeat`` (and the session and
    poll timers), ``commits`` (OffsetCommit, OffsetFetch), ``offsets`` (where positions start:
    committed offsets, auto.offset.reset), ``fetcher``.
    """

    # Class attributes, set on an instance only when used: a member's instance dict stays within
    # the 30 keys CPython 3.11 shares between instances (one more cost 1.8% of the simulator's
    # instructions per request, bench/fleet.py instructions).
    #: the regex of subscribe_pattern (group.protocol=consumer), resolved by the coordinator;
    #: None when subscribed by names (the subscription is then empty, as Kafka's)
    subscription_pattern: str | None = None
    #: group.protocol=consumer: called with (Kafka's MemberState name, member epoch) as they are set
    state_listener = None
    #: polls between inputs that only heartbeat and commit take the short way (_quick_poll); off,
    #: every poll is a whole one (what a quick poll must equal: tests/sim/test_quick_polls.py)
    quick_polls = True

    def __init__(self, config: ConsumerConfig | Mapping[str, Any], assignors: list | None = None, *,
                 topics: Iterable[str] = (), now: int = 0, fetch: bool = False,
                 rng: random.Random | None = None, max_versions: Mapping[int, int] | None = None):
        self.config = config if isinstance(config, ConsumerConfig) else ConsumerConfig(config)
        cfg = self.config
        self.group_id: str | None = cfg["group.id"]
        self.group_instance_id: str | None = cfg["group.instance.id"]
        self.client_id: str = cfg["client.id"]
        #: group.protocol=consumer (KIP-848): the parts of consumer_protocol play the group
        self.consumer_protocol: bool = cfg["group.protocol"] == "consumer"
        if self.consumer_protocol:
            if assignors:
                raise ConfigError("partition.assignment.strategy",
                                  "client-side assignors cannot be used when group.protocol=CONSUMER "
                                  "(see group.remote.assignor)")
            self.assignors: list[ConsumerPartitionAssignor] = []
            self.protocol: RebalanceProtocol = RebalanceProtocol.COOPERATIVE    # incremental, always
        else:
            self.assignors = list(assignors) if assignors is not None else cfg.assignors()
            for a in self.assignors:
                if not isinstance(a, ConsumerPartitionAssignor):
                    raise ConfigError("partition.assignment.strategy", f"{a!r} is not a ConsumerPartitionAssignor")
            self.protocol = choose_rebalance_protocol(self.assignors)
        self.fetch_enabled = fetch
        self._now = now
        # see poll(): a pass that ran only the heartbeat and the commits leaves nothing to do
        self._one_quiet_pass = cfg["request.timeout.ms"] > 0 and cfg["auto.commit.interval.ms"] > 0
        #: until when (exclusive) a poll has nothing to run but the heartbeat, the auto-commit and the
        #: commits (see _quick_poll; 0: not so, -1: so, until next_deadline() finds when); a driver may
        #: leave out what only the other steps read meanwhile
        self.quiet_until = 0
        self._static = _STALE                  # see next_deadline

        # what the application sees (Kafka's SubscriptionState)
        self.subscription: frozenset[str] = frozenset()
        self.assignment: frozenset[TP] = frozenset()
        self.positions: dict[TP, int] = {}
        self.pending_revocation: set[TP] = set()     # still assigned, being given up
        self._sorted_assignment: tuple = (None, [])   # (assignment, sorted) for all_consumed
        self._consumed_cache: dict[TP, OffsetAndMetadata] = {}
        self.settled_deadline: int | None = None      # see on_response
        self.closing: Closing | None = None
        self.closed = False
        self.fatal_error: Exception | None = None

        # the parts (in this order: each may take its predecessors at hand)
        self.net = Connections(cfg, max_versions)
        self.metadata = Metadata(self, now)
        self.discovery = Discovery(self)
        if self.consumer_protocol:
            from .consumer_protocol import ConsumerHeartbeat, ConsumerMembership
            self.membership = ConsumerMembership(self, rng)
            self.heartbeat = ConsumerHeartbeat(self, now)
        else:
            self.membership = Membership(self)
            self.heartbeat = Heartbeat(self, now)
        self.commits = Commits(self, now)
        self.offsets = Positions(self)
        self.fetcher = Fetcher(self, rng)

        if topics:
            self.subscribe(topics, now)

    # ============================================================================ inputs
    def subscribe(self, topics: Iterable[str], now: int) -> None:
        """Set the subscription; a change while in a group makes the member rejoin."""
        self._input()
        if self.group_id is None:
            raise ConfigError("group.id", "subscribe() needs group.id")
        new = frozenset(topics)
        if new == self.subscription and self.subscription_pattern is None:
            return
        self.subscription = new
        if self.subscription_pattern is not None:
            self.subscription_pattern = None
        self.metadata.requested = True
        self.membership.request_rejoin("subscription changed")

    def subscribe_pattern(self, pattern: str, now: int) -> None:
        """Subscribe to the topics matching a regular expression (RE2/J syntax, matching whole
        names), which the coordinator resolves: Kafka's ``subscribe(SubscriptionPattern)``, only
        with group.protocol=consumer. The member names no topic (its subscription is empty); its
        assignment comes by topic ids, whose names it learns from Metadata by id. Replaces a
        subscription by names (Kafka asks for unsubscribe() in between)."""
        self._input()
        if not self.consumer_protocol:
            # Kafka's ClassicKafkaConsumer (its text lacks the space after "using")
            raise UnsupportedOperationError("Subscribe to RE2/J pattern is not supported when using the CLASSIC "
                                            "protocol defined in config group.protocol")
        if self.group_id is None:
            raise ConfigError("group.id", "subscribe() needs group.id")
        if pattern is None:
            raise ValueError("Topic pattern to subscribe to cannot be null")
        if not pattern:
            raise ValueError("Topic pattern to subscribe to cannot be empty")
        if pattern == self.subscription_pattern:
            return
        self.subscription = frozenset()
        self.subscription_pattern = pattern
        self.membership.request_rejoin("subscription changed")

    def application_poll(self, now: int) -> bool:
        """The application polled: resets the max.poll.interval.ms timer (Kafka's pollTimer).
        True if that asks for a rejoin (the first poll after leaving on the poll timeout)."""
        self.heartbeat.last_app_poll = now
        group = self.membership
        if group.left_on_poll_timeout:
            self._input()
            group.left_on_poll_timeout = False
            group.request_rejoin("rejoining after the poll timeout")
            return True
        return False

    def on_connected(self, conn_id: int, api_versions, now: int) -> None:
        """Connection conn_id is up; api_versions: the broker's ApiVersions ``api_keys``
        (a list of {api_key, min_version, max_version}) or a mapping key -> (min, max)."""
        self._input()
        self.net.on_connected(conn_id, api_versions)

    def on_connection_lost(self, conn_id: int, now: int) -> None:
        """Connection conn_id failed to open or broke; its requests get no responses."""
        self._input()
        conn = self.net.conns.get(conn_id)
        if conn is None:
            return
        self._now = now
        try:
            self.net.drop(conn, now, backoff=True)
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)

    def on_response(self, request_id: int, body: dict | None, now: int) -> bool:
        """The response to request_id. Returns False when it settled all it touched: a successful
        heartbeat before the next one is due, a successful commit that nothing of a rebalance or
        of close() waits for. Then poll() has nothing to do because of it (only its actions, a
        CommitCompleted, to hand out: :meth:`take_actions`) and a driver may skip the poll; such a
        response moved no deadline earlier but :attr:`settled_deadline` (the next heartbeat's),
        so a driver that knows the member's last next_deadline() need not ask again."""
        self.settled_deadline = None
        req = self.net.inflight.pop(request_id, None)
        if req is None:
            self._input()
            return True
        self._now = now
        try:
            handler = req.handler      # (a call through a local: 3.11 specializes it, not req.handler())
            if handler(body, req, now):
                return False
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)
        self._input()
        return True

    def _input(self) -> None:
        """An input came: the next poll is a whole one (see _quick_poll)."""
        self.quiet_until = 0
        self._static = _STALE

    def callback_done(self, token: int, now: int) -> None:
        """The rebalance listener ran the callback of the action with this token."""
        self._input()
        self.membership.callbacks_pending.discard(token)

    # ---- application requests ---------------------------------------------------------
    def commit(self, offsets: Mapping[TP, int | OffsetAndMetadata] | None, now: int, *,
               sync: bool = True, timeout_ms: int | None = None) -> int:
        """Commit offsets (the next offsets to read), or every consumed position if None.

        Returns a handle; a :class:`CommitCompleted` with it follows. Sync commits retry
        retriable errors until the timeout (default.api.timeout.ms); async ones do not.
        """
        self._input()
        if offsets is None:
            offsets = self.all_consumed()
        normalized = {}
        for tp, v in offsets.items():
            tp = TP(*tp)
            normalized[tp] = v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(int(v))
        return self.commits.start(normalized, "sync" if sync else "async", now, retry=sync,
                                  timeout_ms=timeout_ms)

    def fetch_committed(self, partitions: Iterable[TP], now: int, *, timeout_ms: int | None = None) -> int:
        """OffsetFetch for partitions; an :class:`OffsetsFetched` with the returned handle follows."""
        self._input()
        return self.commits.fetch(partitions, now, timeout_ms)

    def close(self, now: int, timeout_ms: int | None = None) -> None:
        """Leave the group as Kafka's close does: auto-commit, revoke, LeaveGroup (dynamic only)."""
        self._input()
        if self.closing is not None or self.closed:
            return
        self.closing = Closing(now + (self.commits.api_timeout_ms if timeout_ms is None else timeout_ms))

    def seek(self, tp: TP, offset: int) -> None:
        self._input()
        tp = TP(*tp)
        if tp not in self.assignment:
            raise IllegalStateError(f"{tp} is not assigned to this member")
        self.positions[tp] = offset
        self.offsets.seeked(tp)
        self.fetcher.completed.pop(tp, None)

    def position(self, tp: TP) -> int | None:
        return self.positions.get(TP(*tp))

    def all_consumed(self) -> dict[TP, OffsetAndMetadata]:
        """SubscriptionState.allConsumed: the position of every assigned partition that has one."""
        assignment = self.assignment
        if self._sorted_assignment[0] is not assignment:
            self._sorted_assignment = (assignment, sorted(assignment))
        positions = self.positions
        cache = self._consumed_cache        # OffsetAndMetadata is immutable: reuse unchanged ones
        out = {}
        for tp in self._sorted_assignment[1]:
            if tp in positions:
                offset = positions[tp]
                om = cache.get(tp)
                if om is None or om.offset != offset:
                    om = cache[tp] = OffsetAndMetadata(offset)
                out[tp] = om
        return out

    def take_records(self, max_records: int | None = None) -> list[ConsumerRecord]:
        """Fetched records of assigned partitions, advancing their positions (fetch=True)."""
        self._input()
        return self.fetcher.take_records(max_records or self.config["max.poll.records"])

    # ---- introspection ------------------------------------------------------------------
    @property
    def state(self) -> MemberState:
        return self.membership.state

    @property
    def generation(self) -> Generation:
        return self.membership.generation

    @property
    def member_id(self) -> str:
        return self.membership.generation.member_id

    @property
    def generation_id(self) -> int:
        return self.membership.generation.generation_id

    @property
    def is_leader(self) -> bool:
        return self.membership.is_leader

    @property
    def leader_id(self) -> str | None:
        return self.membership.leader_id

    @property
    def rebalances(self) -> int:
        """Successful SyncGroups (for tests and stats)."""
        return self.membership.rebalances

    @property
    def coordinator(self) -> tuple[int, str, int] | None:
        return self.discovery.coordinator

    @property
    def committed_offsets(self) -> dict[TP, int]:
        """The last offset committed successfully, per partition."""
        return self.commits.committed_offsets

    @property
    def session_timeout_ms(self) -> int:
        return self.membership.session_timeout_ms

    @property
    def rebalance_timeout_ms(self) -> int:
        return self.membership.rebalance_timeout_ms

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def stable(self) -> bool:
        """In a stable generation with nothing of a rebalance left to do: no rejoin requested, no
        assignment being applied, no listener callback outstanding."""
        group = self.membership
        return (group.state == MemberState.STABLE and not group.rejoin_needed and group.completion is None
                and group.prepare is None and not group.callbacks_pending and self.fatal_error is None
                and self.closing is None)

    def group_metadata(self) -> ConsumerGroupMetadata:
        gen = self.membership.generation
        return ConsumerGroupMetadata(self.group_id or "", gen.generation_id, gen.member_id, self.group_instance_id)

    def in_flight(self) -> list[tuple[int, int]]:
        """(request id, api key) of every request awaiting a response."""
        return [(r.request_id, r.api_key) for r in self.net.inflight.values()]

    # ============================================================================ the pump
    def poll(self, now: int) -> list[Action]:
        """Run everything due at ``now``; returns the actions to execute, in order."""
        if now < self.quiet_until:
            return self._quick_poll(now)
        self.quiet_until = 0
        self._static = _STALE
        self._now = now
        if self.closed:
            return self.take_actions()
        net = self.net
        group = self.membership
        closing = self.closing
        # _snapshot() written out (the same fields; closed is False here): one call less per poll,
        # 440 instructions per request of bench/fleet.py instructions
        before = (len(net.actions), group.state, group.completion is None, group.prepare is None,
                  group.rejoin_needed, group.needs_prepare, self.discovery.coordinator, len(self.commits.ops),
                  len(group.callbacks_pending), False, closing.stage if closing is not None else None)
        for _ in range(8):
            if self.closed:
                break
            quiet = not net.expire(now)
            if self.fatal_error is not None and self.closing is not None and not self.closed:
                self._finish_close(now)       # a failed member has nothing left to say to the group
            if self.fatal_error is None:
                try:
                    quiet = self._step(now) and quiet
                except (FatalConsumerError, IllegalStateError) as e:
                    self._fail_fatally(e)
                    quiet = False
            else:
                quiet = False
            if quiet and self._one_quiet_pass:
                # the pass only sent a heartbeat or ran the commits (auto-commit, sends, done
                # ones dropped): they change nothing another step reads (nor what the snapshot
                # holds but the actions and the commits), so another pass would find nothing to do
                if self.quick_polls and not self.consumer_protocol and not self.fetch_enabled:
                    self.quiet_until = -1           # (next_deadline finds until when)
                break
            after = self._snapshot()
            if after == before:
                break
            before = after
        out, net.actions = net.actions, []     # (take_actions(), without the call)
        return out

    def _snapshot(self) -> tuple:
        """What a step may change that lets another step go on at once."""
        group = self.membership
        closing = self.closing
        return (len(self.net.actions), group.state, group.completion is None, group.prepare is None,
                group.rejoin_needed, group.needs_prepare, self.discovery.coordinator, len(self.commits.ops),
                len(group.callbacks_pending), self.closed, closing.stage if closing is not None else None)

    def next_deadline(self) -> int | None:
        """When poll() next has something to do without any input (None: nothing scheduled)."""
        now = self._now
        net = self.net
        failed = self.fatal_error is not None or self.closed
        if failed:
            rare = NEVER
        else:
            static = self._static
            if now >= static[0]:           # (or stale: an input or a whole poll came since it was found)
                static = self._static = self._static_deadline(now)
            rare = static[0]
        # rare: every timer but the heartbeat's, the auto-commit's and the commits' (see _quick_poll);
        # the timers read at every call are read here, not through their part's deadline(): five
        # calls more cost 4% of the simulator's instructions per request (bench/fleet.py instructions)
        for r in net.inflight.values():
            d = r.deadline
            if now < d < rare:
                rare = d
        if failed:
            self.quiet_until = 0
            return None if rare == NEVER else rare
        state = self.membership.state
        if state is STABLE or state is COMPLETING:
            hb = self.heartbeat
            d = hb.session_deadline
            if d is not None and now < d < rare:
                rare = d
            if self.closing is None:
                d = hb.last_app_poll + hb.max_poll_interval_ms
                if now < d < rare:
                    rare = d
        # (a metadata request asked for waits for its back-off, or for a poll: no wake-up of its own)
        if self.quiet_until:
            retry = static[1]
            self.quiet_until = retry if now < retry < rare else rare
        # the heartbeat's, the auto-commit's and the commits' timers (a call less: 1% of the
        # simulator's opcodes a request)
        best = rare
        if (state is STABLE or state is COMPLETING) and not self.heartbeat.in_flight:
            d = self.heartbeat.next
            if now < d < best:
                best = d
        commits = self.commits
        if commits.auto_commit and state is STABLE:
            d = commits.next_auto_commit
            if now < d < best:
                best = d
        for op in commits.ops:
            if op.done:
                continue                   # settled by a response since the last poll
            if not op.in_flight:
                d = op.next_try
                if now < d < best:
                    best = d
            d = op.deadline
            if now < d < best:
                best = d
        return None if best == NEVER else best

    def _static_deadline(self, now: int) -> tuple[int, int]:
        """The earliest timer of the parts only inputs and whole polls move (metadata, the offset
        fetches, the rejoin, the coordinator's discovery, the positions' resets, reconnects, close),
        and when a metadata request asked for may go (NEVER: none asked for)."""
        best = NEVER
        group = self.membership
        commits = self.commits
        metadata = self.metadata
        d = metadata.next_refresh
        if now < d < best:
            best = d
        # the other parts are asked when they may have something scheduled
        if commits.fetches:
            best = commits.fetches_deadline(now, best)
        if group.join_retry_at > now or group.prepare is not None or group.completion is not None:
            best = group.deadline(now, best)
        if self.discovery.retry_at > now:
            best = self.discovery.deadline(now, best)
        if self.offsets.retry_at > now:
            best = self.offsets.deadline(now, best)
        net = self.net
        if net.reconnect_at:
            best = net.reconnect_deadline(now, best)
        if self.closing is not None:
            d = self.closing.deadline
            if now < d < best:
                best = d
        return best, (metadata.retry_at if metadata.requested else NEVER)

    def _quick_poll(self, now: int) -> list[Action]:
        """poll() after a poll whose last pass found nothing to do but the heartbeat and the
        commits, with no input since (an input or a whole poll clears ``quiet_until``) and before
        ``quiet_until``: the earliest of the other timers (request timeouts, the session, the poll
        timeout, metadata), as the last next_deadline() found them, or sooner. Then a whole poll's
        first pass would find no other step to enter (nothing but time moves them, and none of
        their times has come) and end the poll (see poll): this is that pass. The deadlines it
        leaves, next_deadline() finds as after a whole poll."""
        self._now = now
        net = self.net
        hb = self.heartbeat
        try:
            if not hb.in_flight and now >= hb.next:
                cid = net.by_key.get(COORDINATOR)
                if cid is None or net.conns[cid].versions is None:
                    self.quiet_until = 0           # no connection to send on yet: a whole poll
                    return self.poll(now)
                hb.step(now)
            commits = self.commits
            if commits.auto_commit and now >= commits.next_auto_commit:
                commits.step_auto_commit(now)
            if commits.ops:
                commits.step(now)
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)
            self.quiet_until = 0
        for a in net.actions:                   # (their timeouts are among the other timers)
            if type(a) is SendRequest and a.deadline < self.quiet_until:
                self.quiet_until = a.deadline
        out, net.actions = net.actions, []
        return out

    def quick_heartbeat(self, now: int) -> SendRequest | None:
        """poll(now) when it is a quick poll (``now < quiet_until``) that only sends the heartbeat:
        the heartbeat due, its connection ready and its version picked, the auto-commit not due and
        no commit under way. Then the heartbeat's request, which poll() would have handed out
        alone, with what _quick_poll and Heartbeat.step change changed; else None, nothing
        changed (poll()). For a driver's lane of the steady state (the simulator's)."""
        if now >= self.quiet_until:
            return None
        hb = self.heartbeat
        if hb.in_flight or now < hb.next:
            return None
        commits = self.commits
        ops = commits.ops
        if (commits.auto_commit and now >= commits.next_auto_commit) or (ops and not all(op.done for op in ops)):
            return None
        net = self.net
        cid = net.by_key.get(COORDINATOR)
        if cid is None or net.actions or self.discovery.coordinator is None:
            return None
        conn = net.conns[cid]
        version = conn.picked.get(HEARTBEAT)
        if version is None or conn.versions is None:
            return None
        self._now = now
        if ops:
            ops.clear()                 # done ones, as Commits.step drops them
        gen = self.membership.generation
        gid, mid = gen.generation_id, gen.member_id
        rid = next(net.ids)
        timeout = net.request_timeout_ms
        req = net.inflight[rid] = SendRequest(
            rid, cid, HEARTBEAT, version, {"group_id": self.group_id, "generation_id": gid, "member_id": mid,
                                           "group_instance_id": self.group_instance_id},
            timeout, hb.on_heartbeat, now + timeout, (gid, mid))
        hb.in_flight = True
        hb.next = now + hb.interval_ms
        if req.deadline < self.quiet_until:
            self.quiet_until = req.deadline
        return req

    def quick_auto_commit(self, now: int) -> list[Action] | None:
        """poll(now) when it is a quick poll (``now < quiet_until``) that only commits (the
        heartbeat not due): the auto-commit due, in a generation, the coordinator's connection ready
        and OffsetCommit's version picked (unless nothing was consumed: a member without partitions
        never commits), no other commit under way. Then the actions poll() would
        have handed out (the auto-commit's request, or none when nothing was consumed), with what
        _quick_poll and the commits change changed; else None, nothing changed (poll())."""
        if now >= self.quiet_until:
            return None
        hb = self.heartbeat
        commits = self.commits
        if (not hb.in_flight and now >= hb.next) or not commits.auto_commit or now < commits.next_auto_commit:
            return None
        ops = commits.ops
        for op in ops:
            if not op.done:
                return None
        net = self.net
        group = self.membership
        gen = group.generation
        if (net.actions or self.fatal_error is not None or group.state is not STABLE or group.completion is not None
                or self.discovery.coordinator is None or not self.subscription or gen.generation_id < 0
                or commits.api_timeout_ms <= 0):
            return None
        cid = net.by_key.get(COORDINATOR)
        if cid is None:
            return None
        conn = net.conns[cid]
        if conn.versions is None:
            return None
        offsets = self.all_consumed() if self.assignment else {}    # (most members of a large group own none)
        if offsets and conn.picked.get(OFFSET_COMMIT) is None:
            return None                 # (the general way's first commit picks the version)
        # Commits.step_auto_commit, then Commits.step: the done commits dropped, the new one sent
        self._now = now
        ops.clear()
        commits.next_auto_commit = now + commits.auto_commit_interval_ms
        if offsets:
            commits.start(offsets, "auto", now, retry=False)
            commits.send(ops[0], gen.generation_id, gen.member_id, STABLE, conn, now)
        out = net.actions
        for a in out:                           # (as _quick_poll)
            if type(a) is SendRequest and a.deadline < self.quiet_until:
                self.quiet_until = a.deadline
        net.actions = []
        return out

    def commit_settled(self, request_id: int, resp: dict, now: int) -> dict | None:
        """on_response(request_id, resp, now) when it is an OffsetCommit's answer without error
        that settles (no rebalance step nor close() waiting for a commit) and the member has no
        action to hand out: the response taken, the commit completed, and its offsets returned
        (the CommitCompleted's, which the member does not hand out then); else None, nothing
        changed (on_response)."""
        net = self.net
        req = net.inflight.get(request_id)
        if req is None or req.api_key != OFFSET_COMMIT or net.actions or self.closing is not None:
            return None
        group = self.membership
        if group.prepare is not None or group.completion is not None:
            return None
        op = req.ctx[0]             # (Commits.send's context: the only sender of an OffsetCommit)
        if op.done:
            return None
        commits = self.commits
        for t in resp["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    return None
        self.settled_deadline = None
        del net.inflight[request_id]
        self._now = now
        op.in_flight = False
        op.done = True                                  # Commits.complete, without its action
        op.error = None
        committed = commits.committed_offsets
        for tp, om in op.offsets.items():
            committed[tp] = om.offset
        return op.offsets

    def idle_poll(self, now: int) -> list[Action] | None:
        """poll(now) after an input of a classic rebalance that leaves the poll nothing to do but
        hand out what the input queued, or only take the assignment once the listener is done: a
        follower's JoinGroup answered (COMPLETING_REBALANCE, its SyncGroup sent), a SyncGroup
        answered (the assignment waiting for the listener's onPartitionsAssigned), or the
        listener done with an assignment that revokes nothing and fetches no offsets. No other
        part's time may have come: then a whole poll's first pass enters only the rebalance's
        step, which waits (the poll ends after it) or takes the assignment (a second pass finds
        nothing to do): this is that poll. Else None, nothing changed (poll()). For a driver's
        lane of the rebalance (the simulator's). (It follows poll() and _step() as written here:
        a subclass that changes them must not take it.)"""
        if now < self.quiet_until or self.consumer_protocol or self.fetch_enabled:
            return None
        group = self.membership
        state = group.state
        c = group.completion
        if state is COMPLETING:
            if c is not None or group.leader_task is not None:
                return None
        elif state is not STABLE or c is None or c.stage is not CompletionStage.ASSIGN or c.token is None:
            return None
        # _step's guards, none of them holding but the rebalance's own
        if (self.closed or self.fatal_error is not None or self.closing is not None
                or self.group_id is None or group.left_on_poll_timeout):
            return None
        hb = self.heartbeat
        d = hb.session_deadline
        if (d is not None and now >= d) or now - hb.last_app_poll >= hb.max_poll_interval_ms:
            return None
        if not hb.in_flight and now >= hb.next:
            return None
        metadata = self.metadata
        if not metadata.in_flight and ((metadata.requested and now >= metadata.retry_at)
                                       or now >= metadata.next_refresh):
            return None
        net = self.net
        if self.discovery.coordinator is None or COORDINATOR not in net.by_key:
            return None
        commits = self.commits
        if commits.ops or commits.fetches or self.offsets.need_committed or self.offsets.need_reset:
            return None
        for r in net.inflight.values():       # (net.expire's look)
            if r.deadline <= now:
                return None
        quiet = 0
        if state is STABLE and c.token not in group.callbacks_pending:
            # the listener is done: the assignment taken, then the second pass finds the group
            # stable with nothing due (an auto-commit due, which waited while the rebalance ran,
            # would go; an unsubscribed member's subscription is not the one it joined with)
            if (c.revoked or group.rejoin_needed or group.joined_subscription != self.subscription
                    or (commits.auto_commit and now >= commits.next_auto_commit)):
                return None
            group.step_completion(now)
            if self._one_quiet_pass and self.quick_polls:
                quiet = -1                     # (as poll(): next_deadline finds until when)
        self.quiet_until = quiet
        self._now = now
        self._static = _STALE
        out, net.actions = net.actions, []
        return out

    def heartbeat_settled(self, request_id: int, resp: dict, now: int) -> int | None:
        """on_response(request_id, resp, now) when it is a heartbeat's answer without error that
        settles (the next heartbeat not due yet, the member in a generation): the response taken,
        and the next heartbeat's time returned (then :attr:`settled_deadline`); else None,
        nothing changed (on_response)."""
        hb = self.heartbeat
        if resp["error_code"] or now >= hb.next or self.consumer_protocol:
            return None
        state = self.membership.state
        if state is not STABLE and state is not COMPLETING:
            return None
        net = self.net
        req = net.inflight.get(request_id)
        if req is None or req.api_key != HEARTBEAT:
            return None
        del net.inflight[request_id]
        self._now = now
        hb.in_flight = False
        hb.session_deadline = now + hb.session_timeout_ms
        d = self.settled_deadline = hb.next
        return d

    def take_actions(self) -> list[Action]:
        """The actions inputs queued since the last poll (after on_response returned False)."""
        net = self.net
        out, net.actions = net.actions, []
        return out

    def _step(self, now: int) -> bool:
        """One pass over the parts' steps. Each is entered only when it may have something to do
        (the guards below are necessary conditions of its own checks, read afresh as earlier
        steps may change them). True if no step ran but the heartbeat (when it sent one), the
        auto-commit and the commits: what they change, no other step reads, and they have
        nothing left to do at ``now`` once they ran."""
        other = False
        group = self.membership
        hb = self.heartbeat
        state = group.state
        if state is STABLE or state is COMPLETING:
            d = hb.session_deadline
            if d is not None and now >= d:
                other = True
                hb.check_session(now)
        state = group.state
        if ((state is STABLE or state is COMPLETING) and self.closing is None
                and now - hb.last_app_poll >= hb.max_poll_interval_ms):
            other = True
            hb.check_poll_timeout(now)
        metadata = self.metadata
        if not metadata.in_flight and (
                (metadata.requested and now >= metadata.retry_at) or now >= metadata.next_refresh):
            other = True
            metadata.step(now)
        discovery = self.discovery
        if discovery.coordinator is None or COORDINATOR not in self.net.by_key:
            other = True
            discovery.step(now)
        commits = self.commits
        if self.closing is not None:
            other = True
            self._step_close(now)
        else:
            if (group.completion is not None or group.state is not STABLE or group.rejoin_needed
                    or group.joined_subscription != self.subscription):
                other = True
                group.step(now)
            state = group.state
            if (state is STABLE or state is COMPLETING) and not hb.in_flight and now >= hb.next:
                if not hb.step(now):
                    other = True
            if commits.auto_commit and now >= commits.next_auto_commit:
                commits.step_auto_commit(now)
        if commits.ops:
            commits.step(now)
        offsets = self.offsets
        if offsets.need_committed or commits.fetches:
            other = True
            commits.step_fetches(now)
        if offsets.need_reset:
            other = True
            offsets.step(now)
        if self.fetch_enabled and self.closing is None:
            other = True
            self.fetcher.step(now)
        return not other

    # ============================================================================ what the parts ask
    def wanted_topics(self) -> set[str]:
        """The topics metadata is wanted for."""
        group = self.membership
        topics = set(self.subscription) | set(group.group_topics) | {tp.topic for tp in self.assignment}
        if group.leader_task is not None:
            topics |= group.leader_task.topics
        return topics

    def wanted_topic_ids(self) -> list | None:
        """With a pattern subscription, the topic ids metadata is wanted for (asked by id, as
        Kafka's ConsumerMetadata does for a broker-side regex): those of the target assignment
        (SubscriptionState.assignedTopicIds); None when subscribed by names."""
        if self.subscription_pattern is None:
            return None
        target = self.membership.target
        return sorted(target, key=str) if target else []

    def needs_coordinator(self) -> bool:
        if self.group_id is None:
            return False
        commits = self.commits
        if self.closing is not None:
            return self.membership.state != MemberState.UNJOINED or commits.pending()
        return bool(self.subscription or self.subscription_pattern is not None or commits.ops or commits.fetches)

    def set_assignment(self, tps: frozenset) -> None:
        """The assignment becomes tps; what concerned partitions no longer assigned is forgotten."""
        self.assignment = assignment = frozenset(tps)
        self.pending_revocation &= assignment
        positions = self.positions
        for tp in list(positions):
            if tp not in assignment:
                del positions[tp]
        self.offsets.forget(assignment)
        self.fetcher.forget(assignment)

    def who(self) -> str:
        """The member as log lines name it."""
        return f"member {self.membership.generation.member_id or '?'}" + (
            f" ({self.group_instance_id})" if self.group_instance_id else "")

    # ============================================================================ close, fatal errors
    def _step_close(self, now: int) -> None:
        c = self.closing
        group = self.membership
        commits = self.commits
        expired = now >= c.deadline
        if c.stage is CloseStage.COMMIT:
            if not c.commit_started:
                c.commit_started = True
                offsets = self.all_consumed()
                if (commits.auto_commit and offsets and group.state == MemberState.STABLE
                        and group.generation.generation_id >= 0):
                    c.commit = commits.start(offsets, "close", now, retry=True,
                                             timeout_ms=max(0, c.deadline - now))
            if c.commit is not None:
                op = commits.op(c.commit)
                if op is not None and not op.done and not expired:
                    return
            c.stage = CloseStage.REVOKE
        if c.stage is CloseStage.REVOKE:
            if c.token is None:
                owned = self.assignment
                gen = group.generation
                c.token = -1
                self.pending_revocation |= owned
                if owned:
                    lost = gen.generation_id < 0 or not gen.member_id
                    c.token = group.callback(PartitionsLost if lost else PartitionsRevoked, owned)
            if c.token in group.callbacks_pending and not expired:
                return
            self.set_assignment(frozenset())
            c.stage = CloseStage.LEAVE
        if c.stage is CloseStage.LEAVE:
            if not c.leave_started:
                c.leave_started = True
                if self.group_id is not None and self.discovery.ready(now):
                    group.maybe_leave(now, "the consumer is being closed")
                group.left_on_poll_timeout = True          # never rejoin
            if c.leave is not None and not expired:
                return
            c.stage = CloseStage.DRAIN
        if c.stage is CloseStage.DRAIN:
            if commits.pending() and not expired:
                return
            self._finish_close(now)

    def _finish_close(self, now: int) -> None:
        self.commits.fail_all(KafkaError(_E.REQUEST_TIMED_OUT, "the consumer closed"))
        self.net.close()
        self.closed = True
        self.membership.state = MemberState.UNJOINED
        self.net.actions.append(Closed())

    def _fail_fatally(self, error: Exception) -> None:
        if self.fatal_error is not None:
            return
        log.error("%s: fatal: %s", self.who(), error)
        self.fatal_error = error
        self.membership.state = MemberState.UNJOINED
        self.net.actions.append(ErrorRaised(error, True))
        self.commits.fail_all(error)
        self.commits.fail_fetches(error)

    def __repr__(self) -> str:
        gen = self.membership.generation
        return (f"Member(group={self.group_id!r}, member_id={gen.member_id!r}, "
                f"generation={gen.generation_id}, state={self.state.name}, "
                f"assignment={sorted(self.assignment)})")
