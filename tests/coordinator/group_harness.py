"""Virtual-time harness for the classic group coordinator conformance tests.

``h`` (a :class:`Harness`) owns an int clock, the Timers, a GroupCoordinator with
deterministic member ids (``<prefix>-<n>``) and the list of emitted events (each checked
against the documented schema). Request helpers return a :class:`Call` that records the
responses delivered to its respond callback, so parked JoinGroup/SyncGroup can be observed.

``svc`` (a :class:`FakeService`) wraps the harness for the API handlers: exactly the
attributes the handlers may rely on (group_coordinator, config, clock(), is_coordinator(),
partition_count()).
"""
from __future__ import annotations

import itertools
import struct
import uuid

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.events import check_event
from groupcoord.coordinator.group.runtime import (GroupCoordinator, HeartbeatRequest, JoinGroupRequest,
                                                  LeaveGroupRequest, SyncGroupRequest, join_error, sync_error)
from groupcoord.coordinator.group.offsets import (OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
                                                  commit_error, fetch_error)
from groupcoord.coordinator.timer import Timers
from groupcoord.protocol.errors import ErrorCode

GROUP = "group-id"


def subscription(topics, version: int = 0, user_data: bytes | None = None) -> bytes:
    """Hand-encoded ConsumerProtocolSubscription (spec §10.1); v1+ add empty owned partitions,
    v2+ generation -1, v3+ a null rack."""
    out = struct.pack(">h", version) + struct.pack(">i", len(topics))
    for t in topics:
        b = t.encode()
        out += struct.pack(">h", len(b)) + b
    out += struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    if version >= 1:
        out += struct.pack(">i", 0)
    if version >= 2:
        out += struct.pack(">i", -1)
    if version >= 3:
        out += struct.pack(">h", -1)
    return out


class Call:
    """A respond callback that records what it is given."""

    def __init__(self) -> None:
        self.responses: list[dict] = []

    def __call__(self, response: dict) -> None:
        self.responses.append(response)

    @property
    def done(self) -> bool:
        return bool(self.responses)

    @property
    def result(self) -> dict:
        assert len(self.responses) == 1, f"expected one response, got {self.responses}"
        return self.responses[0]

    @property
    def error(self) -> int:
        return self.result["error_code"]

    def __repr__(self) -> str:
        return f"Call({self.responses})"


class Harness:
    def __init__(self, **config):
        values = {"group.initial.rebalance.delay.ms": 0}
        values.update({k.replace("_", "."): v for k, v in config.items()})
        self.config = BrokerConfig(values, environ={})
        self.now = 0
        self.timers = Timers()
        self.events: list[dict] = []
        self._seq = itertools.count(1)
        self.gc = GroupCoordinator(self.config, self.timers, lambda: self.now, emit=self._emit,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(self._seq)}")

    def _emit(self, event: dict) -> None:
        check_event(event)
        self.events.append(event)

    # ---- time ------------------------------------------------------------------
    def advance(self, ms: int = 0) -> None:
        self.now += ms
        self.timers.advance(self.now)

    def run_until(self, ms: int) -> None:
        self.now = ms
        self.timers.advance(self.now)

    def keep_alive(self, members, until: int, step: int = 5000, group_id: str = GROUP) -> list[int]:
        """Heartbeat ``members`` (at the group's current generation) every ``step`` ms up to
        (excluding) ``until``; returns the error codes seen."""
        seen = []
        t = self.now + step
        while t < until:
            self.run_until(t)
            g = self.gc.group(group_id)
            for m in members:
                seen.append(self.heartbeat(group_id, m, g.generation_id if g else -1))
            t += step
        return seen

    # ---- inspection ------------------------------------------------------------------
    def group(self, group_id: str = GROUP):
        return self.gc.group(group_id)

    def state(self, group_id: str = GROUP) -> str | None:
        g = self.gc.group(group_id)
        return None if g is None else g.state

    def events_of(self, kind: str, group_id: str | None = None) -> list[dict]:
        return [e for e in self.events if e["event"] == kind and (group_id is None or e["group"] == group_id)]

    def clear_events(self) -> None:
        self.events.clear()

    # ---- requests --------------------------------------------------------------------
    def join(self, group_id: str = GROUP, member_id: str = "", *, instance_id: str | None = None,
             client_id: str = "client", client_host: str = "/127.0.0.1", session: int = 10000,
             rebalance: int | None = 30000, protocol_type: str = "consumer", protocols=None,
             version: int = 9, reason: str | None = None) -> Call:
        call = Call()
        if protocols is None:
            protocols = [("range", subscription(["foo"]))]
        request = JoinGroupRequest(group_id=group_id, member_id=member_id, group_instance_id=instance_id,
                                   client_id=client_id, client_host=client_host, session_timeout_ms=session,
                                   rebalance_timeout_ms=rebalance, protocol_type=protocol_type, protocols=protocols,
                                   reason=reason, require_known_member_id=version >= 4,
                                   supports_skip_assignment=version >= 9)
        # as the JoinGroup handler: the request's own checks, then the coordinator
        error = request.error(self.gc.min_session_timeout_ms, self.gc.max_session_timeout_ms)
        if error is not None:
            call(join_error(member_id, error))
        else:
            self.gc.join_group(call, request)
        return call

    def join_new(self, group_id: str = GROUP, **kw) -> Call:
        """A dynamic member's KIP-394 two-step join: returns the parked (or answered) second call."""
        first = self.join(group_id, **kw)
        assert first.error == 79, first
        return self.join(group_id, first.result["member_id"], **kw)

    def sync(self, group_id: str = GROUP, member_id: str = "", generation: int = 1, *,
             instance_id: str | None = None, assignments=(), protocol_type: str | None = None,
             protocol_name: str | None = None) -> Call:
        call = Call()
        request = SyncGroupRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                                   group_instance_id=instance_id, protocol_type=protocol_type,
                                   protocol_name=protocol_name, assignments=assignments)
        error = request.error()          # as the SyncGroup handler: the request's check, then the coordinator
        if error is not None:
            call(sync_error(error))
        else:
            self.gc.sync_group(call, request)
        return call

    def heartbeat(self, group_id: str = GROUP, member_id: str = "", generation: int = 1,
                  instance_id: str | None = None) -> int:
        call = Call()
        request = HeartbeatRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                                   group_instance_id=instance_id)
        if not group_id:                 # as the Heartbeat handler: its check, then the coordinator
            call({"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_GROUP_ID)})
        else:
            self.gc.heartbeat(call, request)
        return call.error

    def leave(self, group_id: str = GROUP, *members) -> dict:
        call = Call()
        request = LeaveGroupRequest(group_id, list(members))
        error = request.error()          # as the LeaveGroup handler: the request's check, then the coordinator
        if error is not None:
            call({"throttle_time_ms": 0, "error_code": int(error), "members": []})
        else:
            self.gc.leave_group(call, request)
        return call.result

    def commit(self, group_id: str = GROUP, *, member_id: str = "", generation: int = -1,
               instance_id: str | None = None, offsets=None, retention: int = -1,
               group_id_not_found: bool = False) -> dict:
        """offsets: {(topic, partition): offset | (offset, metadata)}"""
        topics: dict[str, list] = {}
        for (topic, partition), value in (offsets or {("foo", 0): 100}).items():
            offset, metadata = value if isinstance(value, tuple) else (value, "")
            topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                 "committed_leader_epoch": -1, "committed_metadata": metadata})
        call = Call()
        request = OffsetCommitRequest(group_id, [{"name": t, "partitions": p} for t, p in topics.items()],
                                      generation_id=generation, member_id=member_id, group_instance_id=instance_id,
                                      retention_time_ms=retention, group_id_not_found=group_id_not_found)
        error = request.error()          # as the OffsetCommit handler: the request's check, then the coordinator
        if error is not None:
            call(commit_error(request.topics, error))
        else:
            self.gc.offset_commit(call, request)
        return call.result

    def fetch(self, group_id: str = GROUP, topics=None) -> dict:
        """topics: {topic: [partitions]} or None for all."""
        call = Call()
        request = OffsetFetchRequest(group_id, None if topics is None else [
            {"name": t, "partition_indexes": list(p)} for t, p in topics.items()])
        error = request.error()          # as the OffsetFetch handler: the request's check, then the coordinator
        if error is not None:
            call(fetch_error(group_id, error))
        else:
            self.gc.offset_fetch(call, request)
        return call.result

    def delete_offsets(self, group_id: str = GROUP, topics=()) -> dict:
        """topics: [{"name", "partitions": [{"partition_index"}]}]"""
        call = Call()
        request = OffsetDeleteRequest(group_id, list(topics))
        error = request.error()          # as the OffsetDelete handler: the request's check, then the coordinator
        if error is not None:
            call({"error_code": int(error), "throttle_time_ms": 0, "topics": []})
        else:
            self.gc.offset_delete(call, request)
        return call.result

    def offsets(self, group_id: str = GROUP) -> dict:
        """{(topic, partition): committed offset} from an all-topics fetch."""
        res = self.fetch(group_id)
        return {(t["name"], p["partition_index"]): p["committed_offset"]
                for t in res["topics"] for p in t["partitions"]}

    # ---- scenarios -------------------------------------------------------------------
    def stable_group(self, n: int = 2, group_id: str = GROUP, *, protocols=None, session: int = 10000,
                     rebalance: int = 30000, assignments: dict | None = None, version: int = 9):
        """Bring n dynamic members into a Stable group; returns their member ids (leader first)."""
        calls = []
        for i in range(n):
            first = self.join(group_id, client_id=f"c{i}", session=session, rebalance=rebalance,
                              protocols=protocols, version=version)
            if version >= 4:
                assert first.error == 79
                calls.append(self.join(group_id, first.result["member_id"], client_id=f"c{i}", session=session,
                                       rebalance=rebalance, protocols=protocols, version=version))
            else:
                calls.append(first)
        self.advance(0)   # initial delay 0: the join completes
        if not all(c.done for c in calls):
            # an existing group: everybody else has to rejoin; complete via the rebalance timeout
            self.advance(rebalance)
        ids = [c.result["member_id"] for c in calls]
        generation = calls[0].result["generation_id"]
        leader = calls[0].result["leader"]
        order = [leader] + [m for m in ids if m != leader]
        if assignments is None:
            assignments = {m: f"assignment-{m}".encode() for m in ids}
        followers = [self.sync(group_id, m, generation) for m in order[1:]]
        lead = self.sync(group_id, leader, generation, assignments=list(assignments.items()))
        assert lead.error == 0, lead
        assert all(f.error == 0 for f in followers)
        assert self.state(group_id) == "Stable"
        return order


class FakeService:
    """Just what the handlers may use of the service."""

    def __init__(self, harness: Harness, topics: dict[str, int] | None = None, owner=None):
        self.group_coordinator = harness.gc
        self.config = harness.config
        self._h = harness
        self.topics = {"foo": 3, "bar": 2} if topics is None else dict(topics)
        self.owner = owner or (lambda group_id: 0)

    def clock(self) -> int:
        return self._h.now

    def is_coordinator(self, group_id: str, node_id: int) -> bool:
        return self.owner(group_id) == node_id

    def partition_count(self, topic: str) -> int | None:
        return self.topics.get(topic)

    def topic_id(self, name: str):
        return topic_uuid(name) if name in self.topics else None

    def topic_name(self, topic_id) -> str | None:
        return next((name for name in self.topics if topic_uuid(name) == topic_id), None)


def topic_uuid(name: str) -> uuid.UUID:
    """The id FakeService gives a topic of that name."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"topic:{name}")


def ctx_for(service: FakeService, api_key: int, version: int, *, node_id: int = 0, client_id: str = "client",
            client_host: str = "/127.0.0.1") -> RequestContext:
    return RequestContext(service=service, node_id=node_id, client_id=client_id, client_host=client_host,
                          api_key=api_key, api_version=version, correlation_id=1)
