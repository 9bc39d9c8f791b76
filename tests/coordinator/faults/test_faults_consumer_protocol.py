"""Faults against real consumers of the new protocol (confluent-kafka, ``group.protocol=consumer``):
injected ConsumerGroupHeartbeat errors are survived without a rebalance, and a member fenced at
each group epoch bump (FENCED_MEMBER_EPOCH at its next heartbeat) gives its partitions up, joins
again with epoch 0 and goes on consuming; nothing is lost or consumed twice."""
from __future__ import annotations

import threading

import pytest

from fault_clients import ConfluentMember, produce, wait_until
from test_faults_clients import Coordinator, assert_committed_to_the_end, partitions, wait_consumed_exactly_once

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

pytestmark = pytest.mark.interop

CGH = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)


class ConsumerProtocolMember(ConfluentMember):
    """librdkafka with group.protocol=consumer (it refuses the classic protocol's session and
    heartbeat settings and client-side assignors with it)."""

    client = "confluent-kafka (group.protocol=consumer)"

    def create(self):
        from confluent_kafka import Consumer

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.member_name,
            "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "socket.connection.setup.timeout.ms": 5000, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 50, "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
        })

        def tps(ps):
            return [(p.topic, p.partition) for p in ps]
        consumer.subscribe(self.topics, on_assign=lambda c, ps: self._assigned(tps(ps)),
                           on_revoke=lambda c, ps: self._revoked(tps(ps)), on_lost=lambda c, ps: self._revoked(tps(ps)))
        return consumer


class Heartbeats:
    """Every ConsumerGroupHeartbeat the service answered: (member id, epoch sent, error)."""

    def __init__(self, gc):
        self.gc = gc
        self.seen: list[tuple[str, int, int]] = []
        self.lock = threading.Lock()
        gc.call(gc.service.after_request.append, self._after)

    def _after(self, ctx, body, response, seconds) -> None:
        if ctx.api_key == CGH and response is not None:
            with self.lock:
                self.seen.append((body["member_id"], body["member_epoch"], response["error_code"]))

    def snapshot(self) -> list[tuple[str, int, int]]:
        with self.lock:
            return list(self.seen)


def view(gc, group: str):
    def snapshot():
        g = gc.service.group_coordinator.consumer_group(group)
        return None if g is None else (g.state, g.group_epoch, frozenset(g.members))
    return gc.call(snapshot)


def wait_settled(gc, group, members, timeout: float = 30.0):
    """Stable with exactly these members, whose own views cover every partition exactly once."""
    everything = set(partitions(gc))

    def ok():
        for m in members:
            m.check()
        v = view(gc, group)
        owned = [m.owns() for m in members]
        if v is None or v[0] != "Stable" or v[2] != {m.member_id for m in members}:
            return None
        if any(not o for o in owned) or sum(map(len, owned)) != len(everything) or set().union(*owned) != everything:
            return None
        return v
    return wait_until(ok, timeout, message=lambda: f"{group} settled: {view(gc, group)}, "
                                               f"{[sorted(m.owns()) for m in members]}")


def produce_round(gc, tag: str) -> list:
    return produce(gc.bootstrap_servers, [(t, p, f"{tag}/{p}") for t, p in partitions(gc)])


@pytest.fixture
def stack():
    items: list = []
    yield items.append
    for item in reversed(items):
        item.close() if hasattr(item, "close") else item.stop()


def test_injected_heartbeat_errors_are_survived_without_a_rebalance(stack):
    gc = Coordinator(topics={"t": 4}).start()
    stack(gc)
    group = "kip848-errors"
    members = [ConsumerProtocolMember(f"{group}-{i}", gc.bootstrap_servers, group, ["t"]).begin() for i in range(2)]
    for m in members:
        stack(m)
    before = wait_settled(gc, group, members)
    produced = produce_round(gc, "before")
    wait_consumed_exactly_once(members, produced)
    fault = gc.faults("add", {"api": "ConsumerGroupHeartbeat", "group": group, "error": "COORDINATOR_NOT_AVAILABLE",
                              "count": 2})
    wait_until(lambda: gc.faults("get", fault["id"])["fired"] == 2, message="two heartbeats failed")
    produced += produce_round(gc, "after")
    wait_consumed_exactly_once(members, produced)
    assert wait_settled(gc, group, members) == before              # same epoch, same members
    assert_committed_to_the_end(gc, group, produced)


def test_a_member_fenced_at_each_epoch_bump_rejoins_and_goes_on(stack):
    gc = Coordinator(topics={"t": 4}).start()
    stack(gc)
    heartbeats = Heartbeats(gc)
    group = "kip848-fence"
    first = ConsumerProtocolMember(f"{group}-0", gc.bootstrap_servers, group, ["t"]).begin()
    stack(first)
    wait_settled(gc, group, [first])
    first_id = first.member_id
    fence = gc.faults("add", {"when": {"event": "consumer.group_epoch_bumped", "group": group}, "times": None,
                              "do": {"action": "fence_member", "client_id": first.member_name}})
    produced = produce_round(gc, "before")
    wait_consumed_exactly_once([first], produced)

    second = ConsumerProtocolMember(f"{group}-1", gc.bootstrap_servers, group, ["t"]).begin()
    stack(second)
    wait_settled(gc, group, [first, second])
    assert gc.faults("get", fence["id"])["fired"] == 1
    # the first member was answered FENCED_MEMBER_EPOCH, then joined again under its id with epoch 0
    seen = [(m, epoch, error) for m, epoch, error in heartbeats.snapshot() if m == first_id]
    fenced = seen.index(next(s for s in seen if s[2] == ErrorCode.FENCED_MEMBER_EPOCH))
    assert any(epoch == 0 and error == 0 for _, epoch, error in seen[fenced + 1:]), seen[fenced:]
    assert first.member_id == first_id
    kinds = [e["event"] for e in gc.events_of(group)]
    assert "consumer.member_fenced" not in kinds and kinds.count("consumer.member_joined") == 2

    produced += produce_round(gc, "after")
    wait_consumed_exactly_once([first, second], produced)
    assert_committed_to_the_end(gc, group, produced)
