"""The fault engine on the sans-I/O Service: requests are driven the way the TCP driver does it
(before_request hooks, then the handler), time is a virtual clock."""
from __future__ import annotations

import itertools

import pytest

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.events import check_event
from groupcoord.coordinator.faults import FaultError
from groupcoord.coordinator.service import Service
from groupcoord.protocol.consumer import encode_subscription
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import APIS

E = ErrorCode
SUB = encode_subscription({"topics": ["t"], "user_data": None}, 0)
JOIN, SYNC, HEARTBEAT, FIND, METADATA, DESCRIBE, OFFSET_COMMIT, OFFSET_FETCH = 11, 14, 12, 10, 3, 15, 8, 9


class Answer:
    """What the driver did with one request: the response, or closed, after delay_ms."""

    def __init__(self):
        self.responses: list[dict] = []
        self.closed = False
        self.delay_ms = 0
        self.reason = ""

    def __call__(self, body):
        self.responses.append(body)

    @property
    def body(self) -> dict:
        assert len(self.responses) == 1, self.responses
        return self.responses[0]

    @property
    def error(self) -> int:
        return self.body["error_code"]


class World:
    """A 3-node Service, a virtual clock, deterministic member ids, and every event checked."""

    def __init__(self, nodes: int = 3, **config):
        self.now = 0
        self.events: list[dict] = []
        seq = itertools.count(1)
        values = {"group.initial.rebalance.delay.ms": 0, **{k.replace("_", "."): v for k, v in config.items()}}
        self.service = Service(BrokerConfig(values, environ={}), nodes=nodes, clock=lambda: self.now,
                               emit=self._emit, member_id_factory=lambda prefix: f"{prefix}-{next(seq)}")
        self.service.create_topic("t", 6)
        self.faults = self.service.faults
        self._corr = itertools.count(1)

    def _emit(self, event):
        check_event(event)
        self.events.append(event)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.service.advance()

    def send(self, api_key: int, version: int, body: dict, *, node: int = 0, client_id: str = "c") -> Answer:
        """As server.py: the hooks first, then the verdict or the handler."""
        api = APIS[api_key]
        body = api.request.decode(api.request.encode(body, version), version)
        ctx = RequestContext(self.service, node, client_id, "/127.0.0.1", api_key, version, next(self._corr))
        answer = Answer()
        verdict = None
        for hook in self.service.before_request:
            verdict = hook(ctx, body)
            if verdict is not None:
                break
        if verdict is not None:
            answer.delay_ms, answer.reason = verdict.delay_ms, verdict.reason
            if verdict.close:
                answer.closed = True
                return answer
            if verdict.respond is not None:
                answer(verdict.respond)
                return answer
        self.service.handle(ctx, body, answer)
        return answer

    def coordinator(self, group: str) -> int:
        return self.service.cluster.coordinator_for(group)

    # ---- group requests, sent to the group's coordinator unless told ----------------------
    def join(self, group, member_id="", client_id="c", node=None, version=9) -> Answer:
        return self.send(JOIN, version, {
            "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": member_id,
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUB}]},
            node=self.coordinator(group) if node is None else node, client_id=client_id)

    def sync(self, group, member_id, generation, assignments=(), node=None) -> Answer:
        return self.send(SYNC, 5, {"group_id": group, "generation_id": generation, "member_id": member_id,
                                   "protocol_type": "consumer", "protocol_name": "range",
                                   "assignments": [{"member_id": m, "assignment": b"x"} for m in assignments]},
                         node=self.coordinator(group) if node is None else node)

    def heartbeat(self, group, member_id, generation, node=None, client_id="c") -> Answer:
        return self.send(HEARTBEAT, 4, {"group_id": group, "generation_id": generation, "member_id": member_id},
                         node=self.coordinator(group) if node is None else node, client_id=client_id)

    def find(self, group, version=3, node=0) -> Answer:
        return self.send(FIND, version, {"key": group, "key_type": 0, "coordinator_keys": [group]}, node=node)

    def stable(self, group, clients=("a", "b")) -> tuple[int, list[str]]:
        """A Stable group of dynamic members; (generation, member ids, leader first)."""
        parked = []
        for c in clients:
            first = self.join(group, client_id=c)
            assert first.error == E.MEMBER_ID_REQUIRED
            parked.append(self.join(group, first.body["member_id"], client_id=c))
        self.advance(0)
        assert all(p.responses for p in parked), parked
        generation = parked[0].body["generation_id"]
        leader = parked[0].body["leader"]
        ids = [p.body["member_id"] for p in parked]
        followers = [self.sync(group, m, generation) for m in ids if m != leader]
        assert self.sync(group, leader, generation, assignments=ids).error == 0
        assert all(f.error == 0 for f in followers)
        assert self.service.group_coordinator.group(group).state == "Stable"
        return generation, [leader] + [m for m in ids if m != leader]

    def kinds(self, group) -> list[tuple]:
        out = []
        for e in self.events:
            if e["group"] != group:
                continue
            if e["event"] == "group.state_change":
                out.append((e["event"], e["state_to"]))
            elif e["event"].startswith("member."):
                out.append((e["event"], e["member"]))
            else:
                out.append((e["event"],))
        return out


@pytest.fixture
def w() -> World:
    return World()


# ============================================================================ request faults
def test_no_fault_no_hook_and_no_subscriber(w):
    subscribers = len(w.service.bus)
    hooks = list(w.service.before_request)
    assert w.faults.before_request not in hooks
    rule = w.faults.add({"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "count": 1})
    assert w.service.before_request == hooks + [w.faults.before_request]
    assert len(w.service.bus) == subscribers
    w.faults.remove(rule["id"])
    assert w.service.before_request == hooks
    w.faults.add({"when": {"event": "member.joined"}, "do": {"action": "expire_member"}})
    assert len(w.service.bus) == subscribers + 1 and w.service.before_request == hooks
    assert w.faults.clear() == 1
    assert len(w.service.bus) == subscribers


def test_count_fails_exactly_the_next_n_matching_requests(w):
    generation, (leader, follower) = w.stable("g")
    rule = w.faults.add({"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "count": 2})
    assert rule["remaining"] == 2 and rule["error_code"] == 27 and rule["api"] == "Heartbeat"
    # a JoinGroup does not match: handled normally
    assert w.send(DESCRIBE, 5, {"groups": ["g"]}, node=w.coordinator("g")).body["groups"][0]["group_state"] == "Stable"
    got = [w.heartbeat("g", m, generation).error for m in (leader, follower, leader)]
    assert got == [E.REBALANCE_IN_PROGRESS, E.REBALANCE_IN_PROGRESS, E.NONE]
    after = w.faults.get(rule["id"])
    assert after["fired"] == 2 and after["remaining"] == 0 and not after["active"]
    assert w.faults.before_request not in w.service.before_request     # exhausted: the hook is gone
    assert [entry["fault"] for entry in w.faults.log] == [rule["id"]] * 2
    # the group never noticed: the injected errors were answered instead of the handler
    assert w.service.group_coordinator.group("g").state == "Stable"


def test_filters_group_node_client_and_skip(w):
    gen_g, (g1, _) = w.stable("g")
    gen_h, (h1, _) = w.stable("h")
    w.faults.add({"api": 12, "group": "h", "client_id": "x", "skip": 1, "error": "NOT_COORDINATOR"})
    assert w.heartbeat("g", g1, gen_g, client_id="x").error == 0           # other group
    assert w.heartbeat("h", h1, gen_h, client_id="y").error == 0           # other client
    assert w.heartbeat("h", h1, gen_h, client_id="x").error == 0           # skipped
    assert w.heartbeat("h", h1, gen_h, client_id="x").error == E.NOT_COORDINATOR
    assert w.heartbeat("h", h1, gen_h, client_id="x").error == E.NOT_COORDINATOR   # unlimited
    w.faults.clear()
    w.faults.add({"node": 2, "error": "NETWORK_EXCEPTION", "count": 1})      # any API, node 2 only
    meta = {"topics": [{"name": "t"}]}
    assert w.send(METADATA, 12, meta, node=1).body["topics"][0]["error_code"] == 0
    answer = w.send(METADATA, 12, meta, node=2)
    assert answer.body["topics"] == [{**answer.body["topics"][0], "error_code": E.NETWORK_EXCEPTION}]
    assert answer.body["brokers"] == []


def test_group_filter_fails_only_that_group_of_a_batched_request(w):
    w.stable("g")
    w.stable("h")
    w.faults.add({"api": "FindCoordinator", "group": "h", "error": "COORDINATOR_NOT_AVAILABLE", "count": 1})
    answer = w.send(FIND, 4, {"key_type": 0, "coordinator_keys": ["g", "h"]}, node=1)
    assert [(c["key"], c["error_code"], c["node_id"]) for c in answer.body["coordinators"]] == [
        ("g", 0, w.coordinator("g")), ("h", E.COORDINATOR_NOT_AVAILABLE, -1)]
    # DeleteGroups: the faulted group is not deleted, the others are handled as usual
    for group in ("e1", "e2"):
        w.service.cluster.offsets_leaders[w.service.cluster.coordinator_partition(group)] = 0
        w.send(OFFSET_COMMIT, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                  "topics": [{"name": "t", "partitions": [{"partition_index": 0,
                                                                           "committed_offset": 1}]}]}, node=0)
    w.faults.add({"api": "DeleteGroups", "group": "e1", "error": "COORDINATOR_LOAD_IN_PROGRESS"})
    answer = w.send(42, 2, {"groups_names": ["e1", "e2"]}, node=0)
    assert answer.body["results"] == [{"group_id": "e1", "error_code": E.COORDINATOR_LOAD_IN_PROGRESS},
                                      {"group_id": "e2", "error_code": 0}]
    assert "e1" in w.service.group_coordinator and "e2" not in w.service.group_coordinator


def test_latency_and_drop(w):
    w.faults.add({"api": "Metadata", "latency_ms": 250, "count": 1})
    answer = w.send(METADATA, 12, {"topics": None})
    assert answer.delay_ms == 250 and answer.body["brokers"]         # delayed, then handled
    w.faults.add({"api": "Metadata", "drop": True, "latency_ms": 5, "count": 1, "id": "cut"})
    answer = w.send(METADATA, 12, {"topics": None})
    assert answer.closed and answer.delay_ms == 5 and answer.reason == "fault cut"
    assert w.send(METADATA, 12, {"topics": None}).body["brokers"]     # both exhausted


@pytest.mark.parametrize("spec,message", [
    ({"api": "Heartbeat"}, "needs an error, latency_ms or drop"),
    ({"api": "Heartbeats", "error": 27}, "unknown API"),
    ({"api": "Metadata", "group": "g", "error": 27}, "carry no group id"),
    ({"error": "NOPE"}, "unknown Kafka error"),
    ({"error": 27, "drop": True}, "not both"),
    ({"error": 27, "count": 0}, "count must be an integer >= 1"),
    ({"error": 27, "node": 7}, "no node 7"),
    ({"error": 27, "groups": "g"}, "unknown field(s) of a request fault: groups"),
    ({"when": {"event": "group.state_change", "state": "Stable", "stateto": "Stable"},
      "do": {"action": "expire_member", "member": "m"}}, "unknown field(s) of when (group.state_change): stateto"),
    ({"when": {"event": "group.state_changed"}, "do": {"action": "node_down", "node": 1}}, "unknown event"),
    ({"when": {"event": "group.state_change"}, "do": {"action": "expire_member"}}, "needs member, instance_id"),
    ({"when": {"group": "g"}, "do": {"action": "explode"}}, "unknown action"),
    ({"when": {"group": "g"}, "do": {"action": "inject", "fault": {"api": "Heartbeat"}}}, "needs an error"),
    ({"when": {"group": "g"}, "do": {"action": "move_coordinator", "partition": 50}}, "no offsets-topic partition 50"),
    ({"when": {"group": "g"}, "do": {"action": "node_down", "node": 1}, "times": 0}, "times must be"),
])
def test_bad_specs_are_refused_clearly(w, spec, message):
    with pytest.raises(FaultError) as info:
        w.faults.add(spec)
    assert message in str(info.value)
    assert w.faults.list() == [] and w.faults.before_request not in w.service.before_request


def test_ids_are_sequential_or_given_and_unique(w):
    assert w.faults.add({"error": 27})["id"] == "f1"
    assert w.faults.add({"error": 27, "id": "mine"})["id"] == "mine"
    with pytest.raises(FaultError) as info:
        w.faults.add({"error": 27, "id": "mine"})
    assert info.value.kind == "conflict"
    assert [f["id"] for f in w.faults.list()] == ["f1", "mine"]


# ============================================================================ cluster faults
def test_moving_a_coordinator_keeps_the_group_and_the_old_node_answers_not_coordinator(w):
    generation, (leader, follower) = w.stable("g")
    old = w.coordinator("g")
    commit = {"group_id": "g", "generation_id_or_member_epoch": generation, "member_id": leader,
              "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 42}]}]}
    assert w.send(OFFSET_COMMIT, 8, commit, node=old).body["topics"][0]["partitions"][0]["error_code"] == 0
    moved = w.faults.move_group("g", None)
    new = moved["to"]
    assert moved["from"] == old and new != old and "g" in moved["groups"]
    assert w.coordinator("g") == new
    assert w.heartbeat("g", leader, generation, node=old).error == E.NOT_COORDINATOR
    assert w.find("g").body["node_id"] == new
    assert w.heartbeat("g", leader, generation, node=new).error == 0
    fetched = w.send(OFFSET_FETCH, 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}, node=new)
    assert fetched.body["topics"][0]["partitions"][0]["committed_offset"] == 42
    group = w.service.group_coordinator.group("g")
    assert (group.state, group.generation_id, set(group.members)) == ("Stable", generation, {leader, follower})


def test_moving_a_coordinator_answers_requests_parked_on_the_old_one_not_coordinator(w):
    """As Kafka's GroupCoordinator.onGroupUnloaded: parked joins and syncs get NOT_COORDINATOR;
    the members then complete the rebalance on the new coordinator."""
    generation, (leader, follower) = w.stable("g")
    old = w.coordinator("g")
    parked_join = w.join("g", leader, client_id="a")              # starts a rebalance, waits for b
    assert not parked_join.responses
    w.faults.move_group("g", None)
    new = w.coordinator("g")
    assert parked_join.body["error_code"] == E.NOT_COORDINATOR and parked_join.body["member_id"] == leader
    joins = [w.join("g", leader, client_id="a"), w.join("g", follower, client_id="b")]
    w.advance(0)
    assert all(j.error == 0 for j in joins)
    generation = joins[0].body["generation_id"]
    parked_sync = w.sync("g", follower, generation)                # waits for the leader's assignment
    assert not parked_sync.responses
    w.faults.move_partition(w.service.cluster.coordinator_partition("g"), old)
    assert parked_sync.error == E.NOT_COORDINATOR
    assert w.coordinator("g") == old != new
    assert w.sync("g", leader, generation, assignments=[leader, follower]).error == 0
    assert w.sync("g", follower, generation).error == 0
    assert w.service.group_coordinator.group("g").state == "Stable"


def test_node_down_moves_its_partitions_and_up_does_not_take_them_back(w):
    cluster = w.service.cluster
    group = next(f"grp-{i}" for i in itertools.count() if w.coordinator(f"grp-{i}") == 1)
    w.stable(group)
    led = [p for p in range(6) if cluster.leader_for("t", p) == 1]
    down = w.faults.node_down(1)
    assert not down["up"] and {m["partition"] for m in down["moves"] if m["topic"] == "t"} == set(led)
    assert all(m["to"] != 1 for m in down["moves"])
    new = w.coordinator(group)
    assert new != 1 and w.find(group).body["node_id"] == new
    meta = w.send(METADATA, 12, {"topics": [{"name": "t"}]}).body
    assert sorted(b["node_id"] for b in meta["brokers"]) == [0, 2]
    parts = {p["partition_index"]: p for p in meta["topics"][0]["partitions"]}
    for p in led:     # the next replica in ring order
        assert parts[p]["leader_id"] == (p + 1) % 3
    assert w.service.group_coordinator.group(group).state == "Stable"
    with pytest.raises(FaultError):
        w.faults.node_down(1)
    with pytest.raises(FaultError) as info:
        w.faults.move_group(group, 1)
    assert "is down" in str(info.value)

    up = w.faults.node_up_soon(1)              # no event loop here: runs at once
    assert up["up"] and up["moves"] == []
    assert w.coordinator(group) == new          # leadership stays where it went
    back = w.service.cluster.elect_preferred_leaders(1)
    assert {topic for topic, _, _, _ in back} == {None, "t"}
    assert w.coordinator(group) == 1 and all(cluster.leader_for("t", p) == 1 for p in led)


def test_node_up_with_preferred_election(w):
    w.faults.node_down(2)
    w.faults.node_down(0)
    assert {w.service.cluster.leader_for("t", p) for p in range(6)} == {1}
    up = w.faults.node_up_soon(0, True)
    assert {(m["topic"], m["partition"]) for m in up["moves"] if m["topic"] == "t"} == {("t", 0), ("t", 3)}
    assert w.service.cluster.controller_id == 1


def test_a_preferred_election_unloads_the_groups_it_moves(w):
    group = next(f"grp-{i}" for i in itertools.count() if w.coordinator(f"grp-{i}") == 1)
    generation, (leader, follower) = w.stable(group)
    w.faults.node_down(1)
    interim = w.coordinator(group)
    parked = w.join(group, leader, client_id="a")                 # a rebalance on the interim node
    assert not parked.responses
    w.faults.node_up_soon(1, True)
    assert w.coordinator(group) == 1 != interim
    assert parked.error == E.NOT_COORDINATOR
    joins = [w.join(group, leader, client_id="a"), w.join(group, follower, client_id="b")]
    w.advance(0)
    assert all(j.error == 0 for j in joins) and joins[0].body["generation_id"] == generation + 1


# ============================================================================ scheduled faults
def test_scheduled_expire_fires_right_when_the_group_enters_completing_rebalance(w):
    generation, (leader, follower) = w.stable("g")
    w.faults.add({"when": {"event": "group.state_change", "group": "g", "state_to": "CompletingRebalance"},
                  "do": {"action": "expire_member", "member": follower}})
    w.events.clear()
    # the leader rejoins: a rebalance; the follower's heartbeat tells it to rejoin too
    rejoin_leader = w.join("g", leader, client_id="a")
    assert w.heartbeat("g", follower, generation).error == E.REBALANCE_IN_PROGRESS
    rejoin_follower = w.join("g", follower, client_id="b")
    # within that same JoinGroup: the join phase completed, then at once the follower expired
    assert w.kinds("g") == [
        ("group.state_change", "PreparingRebalance"), ("rebalance.started",),
        ("group.state_change", "CompletingRebalance"), ("rebalance.join_completed",),
        ("member.expired", follower),
        ("group.state_change", "PreparingRebalance"), ("rebalance.started",),
    ]
    expired = [e for e in w.events if e["event"] == "member.expired"][0]
    assert expired["reason"] == "session_timeout" and expired["generation"] == generation + 1
    # both JoinGroups were answered with the generation the expiry cut short
    assert rejoin_leader.body["generation_id"] == rejoin_follower.body["generation_id"] == generation + 1
    assert w.sync("g", leader, generation + 1, assignments=[leader, follower]).error == E.REBALANCE_IN_PROGRESS
    assert w.sync("g", follower, generation + 1).error == E.UNKNOWN_MEMBER_ID
    # one-shot: the next rebalance (the leader alone) completes untouched
    w.join("g", leader, client_id="a")
    assert w.kinds("g")[-2:] == [("group.state_change", "CompletingRebalance"), ("rebalance.join_completed",)]
    group = w.service.group_coordinator.group("g")
    assert set(group.members) == {leader} and group.generation_id == generation + 2
    fault = w.faults.list()[0]
    assert fault["fired"] == 1 and not fault["active"]


def test_scheduled_inject_and_move(w):
    generation, (leader, follower) = w.stable("g")
    old = w.coordinator("g")
    w.faults.add({"when": {"event": "rebalance.started", "group": "g"}, "times": None,
                  "do": {"action": "inject", "fault": {"api": "SyncGroup", "group": "g", "count": 1,
                                                       "error": "COORDINATOR_NOT_AVAILABLE"}}})
    w.faults.add({"when": {"event": "rebalance.join_completed", "group": "g"},
                  "do": {"action": "move_coordinator"}})
    joined = [w.join("g", leader, client_id="a")]
    w.heartbeat("g", follower, generation)
    joined.append(w.join("g", follower, client_id="b"))
    new = w.coordinator("g")
    assert new != old                                   # moved when the join phase completed
    generation = joined[0].body["generation_id"]
    # the injected fault comes first (hooks run before the handler), then the old node refuses
    assert w.sync("g", leader, generation, assignments=[leader, follower]).error == E.COORDINATOR_NOT_AVAILABLE
    assert w.sync("g", leader, generation, assignments=[leader, follower], node=old).error == E.NOT_COORDINATOR
    follower_sync = w.sync("g", follower, generation)
    assert not follower_sync.responses
    assert w.sync("g", leader, generation, assignments=[leader, follower]).error == 0
    assert follower_sync.error == 0
    injected = [f for f in w.faults.list() if f["kind"] == "request"]
    assert [(f["source"], f["fired"], f["active"]) for f in injected] == [("f1", 1, False)]


def test_scheduled_action_failure_is_recorded_not_raised(w):
    w.faults.add({"when": {"event": "group.created"}, "do": {"action": "expire_member", "member": "ghost"}})
    first = w.join("g", client_id="a")
    assert first.error == E.MEMBER_ID_REQUIRED
    fault = w.faults.list()[0]
    assert fault["fired"] == 1 and "no member 'ghost'" in fault["errors"][0]
