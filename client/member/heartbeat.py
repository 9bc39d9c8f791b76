"""Liveness in the group: heartbeats every heartbeat.interval.ms, the session timer
(session.timeout.ms without a successful heartbeat: the membership is lost) and the poll timer
(max.poll.interval.ms without an application poll: leave the group)."""
from __future__ import annotations

import logging

from groupcoord.protocol.errors import ErrorCode

from .actions import COMPLETING, STABLE, FatalConsumerError, MemberState
from .connections import COORDINATOR, HEARTBEAT, Request

log = logging.getLogger("groupcoord.client")

_E = ErrorCode
_error = ErrorCode.lookup
_COORDINATOR_ERRORS = (_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR)


class Heartbeat:
    """``next``: when the next heartbeat is due; ``session_deadline``: when the membership is
    considered lost without a successful heartbeat (None outside a generation);
    ``last_app_poll``: the application's last poll."""

    def __init__(self, member, now: int):
        cfg = member.config
        self.member = member
        self.net = member.net
        self.discovery = member.discovery
        self.group = member.membership
        self.in_flight = False
        self.next = 0
        self.session_deadline: int | None = None
        self.last_app_poll = now
        self.interval_ms: int = cfg["heartbeat.interval.ms"]
        self.session_timeout_ms: int = cfg["session.timeout.ms"]
        self.max_poll_interval_ms: int = cfg["max.poll.interval.ms"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]

    # ---- the timers -------------------------------------------------------------------
    def check_session(self, now: int) -> None:
        group = self.group
        if group.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
            return
        if self.session_deadline is None or now < self.session_deadline:
            return
        log.warning("%s: no successful heartbeat for session.timeout.ms; considering the membership lost",
                    self.member.who())
        self.discovery.unknown(now, "session timed out without a successful heartbeat")
        group.reset_generation("session timed out", reset_member_id=True)
        group.lose_partitions()

    def poll_timed_out(self, now: int) -> bool:
        return now - self.last_app_poll >= self.max_poll_interval_ms

    def check_poll_timeout(self, now: int) -> None:
        group = self.group
        if (group.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
                or self.member.closing is not None):
            return
        if not self.poll_timed_out(now):
            return
        log.warning("%s: the application did not poll within max.poll.interval.ms; leaving the group",
                    self.member.who())
        group.maybe_leave(now, "consumer poll timeout has expired")
        group.left_on_poll_timeout = True

    # ---- the heartbeat ----------------------------------------------------------------
    def step(self, now: int) -> bool:
        """A heartbeat is due (the member's guard: in a generation, none in flight, its time
        come); True if it went out."""
        conn = self.discovery.conn(now)
        if conn is None:
            return False
        member = self.member
        gen = self.group.generation
        body = {"group_id": member.group_id, "generation_id": gen.generation_id, "member_id": gen.member_id,
                "group_instance_id": member.group_instance_id}
        if self.net.send(COORDINATOR, HEARTBEAT, body, self.on_heartbeat, now,
                           ctx=(gen.generation_id, gen.member_id), conn=conn) is not None:
            self.in_flight = True
            self.next = now + self.interval_ms
            return True
        return False

    def on_heartbeat(self, resp: dict | None, req: Request, now: int) -> bool | None:
        self.in_flight = False
        if resp is None:
            self.next = now + self.retry_backoff_ms
            return None
        code = resp["error_code"]
        group = self.group
        if not code:
            self.session_deadline = now + self.session_timeout_ms
            if now < self.next:           # settled, unless the next heartbeat is due already
                state = group.state
                if state is STABLE or state is COMPLETING:
                    self.member.settled_deadline = self.next
                return True
            return False
        code = _error(code)
        gen = group.generation
        unchanged = req.ctx == (gen.generation_id, gen.member_id)
        self.next = now + self.retry_backoff_ms
        if code in _COORDINATOR_ERRORS:
            self.discovery.unknown(now, f"heartbeat: {code.name}")
        elif code == _E.REBALANCE_IN_PROGRESS:
            # still a member: keep the session alive while the group rebalances
            self.session_deadline = now + self.session_timeout_ms
            self.next = now + self.interval_ms
            if group.state == MemberState.STABLE:
                group.request_rejoin("group is already rebalancing")
        elif code in (_E.ILLEGAL_GENERATION, _E.UNKNOWN_MEMBER_ID):
            if unchanged and group.state != MemberState.UNJOINED:
                group.reset_generation(f"heartbeat: {code.name}", reset_member_id=code == _E.UNKNOWN_MEMBER_ID)
                group.request_rejoin(f"heartbeat: {code.name}", prepare=True)
        elif code == _E.FENCED_INSTANCE_ID:
            if unchanged:
                raise FatalConsumerError(code, f"static member {self.member.group_instance_id} was fenced")
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            pass
        elif code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {self.member.group_id}")
        else:
            raise FatalConsumerError(code, f"unexpected error in heartbeat response: {code}")
