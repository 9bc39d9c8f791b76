"""What a share group's records look like from outside, in virtual time: the share-partition leaders'
events (sessions opened and closed, records acquired, acknowledged, locks expired, records archived),
counted per request and per lock expiry rather than per record, each as coordinator/events.py documents
it; the share metrics under Kafka's names; and the faults on the share APIs (acknowledgements dropped,
locks expired, a member fenced)."""
from __future__ import annotations

import pytest
from share_client import ACCEPT, GAP, RELEASE, REJECT, ShareClient, acquired, partition_of

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.events import SHARE_PARTITION_EVENTS, check_event
from groupcoord.coordinator.faults import FaultError
from groupcoord.coordinator.metrics import Metrics
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode as E

LOCK_MS = 30_000
START = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now


class World:
    """A service with topic foo (``partitions``), share group q (members m1 and m2 joined, earliest), its
    events kept (each checked against its schema), and a client connection."""

    def __init__(self, partitions: int = 1, *, members=("m1", "m2"), **config) -> None:
        self.clock = Clock()
        config.setdefault("group.share.assignment.interval.ms", 0)
        self.svc = Service(BrokerConfig(config, environ={}), clock=self.clock, emit=lambda e: None)
        self.events: list[dict] = []
        self.svc.bus.subscribe(self._keep)
        self.svc.create_topic("foo", partitions)
        self.svc.alter_group_configs("q", {"share.auto.offset.reset": "earliest"})
        self.client = ShareClient(self.svc)
        for m in members:
            self.client.join(m)

    def _keep(self, event: dict) -> None:
        check_event(event)
        self.events.append(event)

    def later(self, ms: int) -> None:
        self.clock.now += ms
        self.svc.advance()

    def share_events(self, kind: str | None = None) -> list[dict]:
        """The share-partition leaders' events (of one kind), their common fields left out."""
        return [{k: v for k, v in e.items() if k not in ("v", "ts_ms", "group", "generation", "state", "members")}
                for e in self.events if e["event"] in SHARE_PARTITION_EVENTS and (kind is None or e["event"] == kind)]

    def take(self) -> list[dict]:
        out = self.share_events()
        self.events.clear()
        return out


def ok(resp):
    assert resp is not None and resp["error_code"] == 0, resp
    return resp


# ============================================================================ events
def test_a_members_records_as_events_from_acquisition_to_the_end_of_its_session():
    w = World()
    c = w.client
    c.produce(10)
    assert acquired(ok(c.fetch("m1", 0))) == [(0, 9, 1)]
    assert w.take() == [
        {"event": "share.session_opened", "member": "m1", "node": 0, "partitions": 1},
        {"event": "share.records_acquired", "member": "m1", "topic": "foo", "partition": 0, "records": 10,
         "first_offset": 0, "last_offset": 9, "ranges": [[0, 9, 1]], "redelivered": 0}]
    # the common fields: the share group's epoch, state and members
    group = w.svc.group_coordinator.get("q")
    ok(c.fetch("m1", 1, acks={0: [(0, 4, ACCEPT), (5, 6, RELEASE), (7, 7, REJECT)]}, max_records=0))
    [event] = [e for e in w.events if e["event"] == "share.records_acknowledged"]
    assert (event["group"], event["generation"], event["state"], event["members"], event["ts_ms"]) == (
        "q", group.group_epoch, "Stable", 2, START)
    assert w.take() == [
        {"event": "share.records_acknowledged", "member": "m1", "topic": "foo", "partition": 0, "request": "ShareFetch",
         "first_offset": 0, "last_offset": 7, "accepted": 5, "released": 2, "rejected": 1, "gaps": 0, "renewed": 0,
         "archived": 1, "error": None, "dropped": False, "batches": [[0, 4, "ACCEPT"], [5, 6, "RELEASE"], [7, 7, "REJECT"]]}]

    # 8 and 9: their lock expires; 5 and 6, released, come again first (delivery count 2, as 8 and 9)
    w.later(LOCK_MS)
    assert w.take() == [{"event": "share.lock_expired", "topic": "foo", "partition": 0, "records": 2, "archived": 0,
                         "cause": "timeout"}]
    assert acquired(ok(c.fetch("m1", 2))) == [(5, 6, 2), (8, 9, 2)]
    [event] = w.share_events("share.records_acquired")
    assert (event["records"], event["ranges"], event["redelivered"]) == (4, [[5, 6, 2], [8, 9, 2]], 4)
    w.take()

    # ShareAcknowledge of a record it does not hold (7, archived): the partition's error, nothing counted
    resp = ok(c.acknowledge("m1", 3, {0: [(7, 7, ACCEPT)]}))
    assert partition_of(resp)["error_code"] == E.INVALID_RECORD_STATE
    [event] = w.take()
    assert (event["request"], event["accepted"], event["error"]) == ("ShareAcknowledge", 0, "INVALID_RECORD_STATE")

    # the member closes its session (epoch -1): the 4 records it holds are released
    ok(c.fetch("m1", -1, partitions=()))
    assert w.take() == [{"event": "share.session_closed", "member": "m1", "node": 0, "reason": "final_epoch",
                         "released": 4, "archived": 0}]


def test_thousands_of_records_make_a_handful_of_events():
    # one acquisition, an acknowledgement of a thousand offsets each typed on its own, and the per-offset
    # locks of the rest expiring together: one event each, not one per record
    w = World()
    c = w.client
    c.produce(2000)
    ok(c.fetch("m1", 0, max_records=2000))
    types = [ACCEPT if i % 3 else REJECT for i in range(1000)]
    ok(c.acknowledge("m1", 1, {0: [(0, 999, types)]}))
    w.take()
    timers = len(w.svc.timers)
    assert timers >= 1000                     # the 1000 offsets still held, each under a lock of its own
    w.later(LOCK_MS)
    assert w.take() == [{"event": "share.lock_expired", "topic": "foo", "partition": 0, "records": 1000,
                         "archived": 0, "cause": "timeout"}]
    assert len(w.svc.timers) < timers - 999   # (the coalescing timer is gone too)

    ok(c.fetch("m1", 2, max_records=2000))
    events = w.take()
    assert [e["event"] for e in events] == ["share.records_acquired"]
    assert (events[0]["records"], events[0]["redelivered"], len(events[0]["ranges"])) == (1000, 1000, 1)


def test_records_archived_at_the_delivery_count_limit_and_sessions_replaced_or_disconnected():
    w = World()
    c = w.client
    w.svc.alter_group_configs("q", {"share.delivery.count.limit": 2})
    c.produce(3)
    ok(c.fetch("m1", 0))
    ok(c.acknowledge("m1", 1, {0: [(0, 2, RELEASE)]}))          # delivery 1 released: available
    assert acquired(ok(c.fetch("m1", 2))) == [(0, 2, 2)]
    w.take()
    ok(c.acknowledge("m1", 3, {0: [(0, 0, RELEASE), (1, 1, GAP), (2, 2, ACCEPT)]}))
    assert w.take() == [
        {"event": "share.records_acknowledged", "member": "m1", "topic": "foo", "partition": 0,
         "request": "ShareAcknowledge", "first_offset": 0, "last_offset": 2, "accepted": 1, "released": 1,
         "rejected": 0, "gaps": 1, "renewed": 0, "archived": 2, "error": None, "dropped": False,
         "batches": [[0, 0, "RELEASE"], [1, 1, "GAP"], [2, 2, "ACCEPT"]]},
        {"event": "share.records_archived", "topic": "foo", "partition": 0, "records": 1,
         "reason": "delivery_count_limit"}]

    # a new session of m1 (epoch 0) replaces the old; m2's connection closes with records it holds
    c.produce(1)
    c.produce(1)
    ok(c.fetch("m1", 0, max_records=1))
    assert [e["reason"] for e in w.share_events("share.session_closed")] == ["replaced"]
    m2 = ShareClient(w.svc, conn=2)
    assert acquired(ok(m2.fetch("m2", 0))) == [(4, 4, 1)]
    w.take()
    w.svc.connection_closed(0, 2)
    assert w.take() == [{"event": "share.session_closed", "member": "m2", "node": 0, "reason": "connection_closed",
                         "released": 1, "archived": 0}]


def test_records_archived_when_the_log_start_moves_past_them():
    w = World()
    w.svc.cluster.log_defaults["segment.bytes"] = 100       # a segment per batch
    c = w.client
    for _ in range(3):
        c.produce(2)
    ok(c.fetch("m1", 0, max_records=2))
    ok(c.acknowledge("m1", 1, {0: [(0, 1, RELEASE)]}))       # 0-1 available again
    w.svc.cluster.log("foo", 0).delete_segments(2)            # retention: the log starts at 4 (two segments go)
    w.take()
    assert acquired(ok(c.fetch("m1", 2))) == [(4, 5, 1)]
    assert w.take() == [
        {"event": "share.records_archived", "topic": "foo", "partition": 0, "records": 2, "reason": "log_start_moved"},
        {"event": "share.records_acquired", "member": "m1", "topic": "foo", "partition": 0, "records": 2,
         "first_offset": 4, "last_offset": 5, "ranges": [[4, 5, 1]], "redelivered": 0}]


def test_no_emit_no_events_and_no_timer_for_them():
    # (the transaction coordinator's own check of timed-out transactions kept out of the count)
    w = World(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 10 * LOCK_MS})
    w.svc.share_partitions.emit = None
    c = w.client
    c.produce(5)
    ok(c.fetch("m1", 0))
    ok(c.acknowledge("m1", 1, {0: [(0, 1, ACCEPT)]}))
    w.clock.now += LOCK_MS
    assert w.svc.advance() == 3                 # the locks of 2, 3 and 4 (per offset): no timer more for events
    assert w.share_events() == []
    assert w.svc.share_partitions.counters_total().lock_expired == 3


# ============================================================================ metrics
def scrape(metrics: Metrics) -> dict[tuple, float]:
    """{(name, (label, value)...): value} of every sample."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            out[(s.name, *sorted(s.labels.items()))] = s.value
    return out


def test_kafkas_share_metrics():
    w = World(partitions=2)
    metrics = Metrics(w.svc, process=False).attach()
    c = w.client
    c.produce(10)
    ok(c.fetch("m1", 0, partitions=(0, 1)))
    ok(c.fetch("m1", 1, acks={0: [(0, 3, ACCEPT), (4, 5, RELEASE), (6, 6, [REJECT])]}, max_records=0))
    ok(c.acknowledge("m1", 2, {0: [(9, 9, ACCEPT)], 1: [(0, 0, ACCEPT)]}))    # partition 1 has no record: fails
    w.later(LOCK_MS)
    later = c.send(78, c.fetch_body("m2", 0, partitions=(1,), max_wait_ms=500), 1)
    w.later(500)                                # answered at MaxWaitMs: a DelayedShareFetch expired
    assert later and later[0]["error_code"] == 0
    m = scrape(metrics)
    P = "groupcoord_"
    assert m[(P + "share_fetch_requests_total", ("topic", "foo"))] == 3            # the one acknowledging only: not
    assert m[(P + "share_acknowledgement_requests_total", ("topic", "foo"))] == 2
    assert m[(P + "failed_share_acknowledgement_requests_total", ("topic", "foo"))] == 1
    assert {t: m[(P + "record_acknowledgements_total", ("ack_type", t))] for t in ("Accept", "Release", "Reject",
                                                                                  "Renew")} == {
        "Accept": 5, "Release": 2, "Reject": 1, "Renew": 0}
    assert m[(P + "delayed_share_fetch_expires_total",)] == 1
    tp = (("group", "q"), ("partition", "0"), ("topic", "foo"))
    # 0-3 accepted (the SPSO moved to 4), 4-5 released, 6 rejected, 7-8 expired, 9 accepted
    assert m[(P + "share_partition_acquisition_lock_timeout_total", *tp)] == 2
    assert {st: m[(P + "share_partition_records", *tp[:2], ("state", st), tp[2])]
            for st in ("available", "acquired", "acknowledged", "archived")} == {
        "available": 4, "acquired": 0, "acknowledged": 1, "archived": 1}
    assert m[(P + "share_partition_in_flight_message_count", *tp)] == 6
    assert m[(P + "share_records_total", ("kind", "lock_expired"))] == 2
    assert m[(P + "share_sessions_count", ("node", "0"))] == 2
    assert m[(P + "share_session_partitions_count", ("node", "0"))] == 3
    assert m[(P + "group_count", ("protocol", "share"))] == 1
    assert m[(P + "share_group_count", ("state", "Stable"))] == 1
    assert m[(P + "events_total", ("event", "share.records_acquired"))] == 1      # (m2's expired fetch: none)


# ============================================================================ faults
def test_a_dropped_acknowledgement_is_answered_none_and_the_records_come_back():
    w = World()
    c = w.client
    c.produce(4)
    ok(c.fetch("m1", 0))
    fault = w.svc.faults.add({"api": "ShareAcknowledge", "group": "q", "member": "m1", "drop_acknowledgements": True,
                              "count": 1})
    assert (fault["drop_acknowledgements"], fault["api"]) == (True, "ShareAcknowledge")
    resp = ok(c.acknowledge("m1", 1, {0: [(0, 3, ACCEPT)]}))
    assert partition_of(resp)["error_code"] == 0                          # as if applied
    [event] = w.share_events("share.records_acknowledged")
    assert (event["dropped"], event["accepted"], event["error"]) == (True, 0, None)
    assert w.svc.faults.get(fault["id"])["fired"] == 1
    sp = w.svc.share_partitions.share_partitions()[("q", c.topic_id(), 0)]
    assert sp.start_offset == 0                                            # nothing acknowledged
    # the locks expire: redelivered, once more in the count; the fault is spent, this ack counts
    w.later(LOCK_MS)
    assert acquired(ok(c.fetch("m1", 2))) == [(0, 3, 2)]
    ok(c.acknowledge("m1", 3, {0: [(0, 3, ACCEPT)]}))
    assert sp.start_offset == 4


def test_dropped_acknowledgements_answered_with_an_error_and_on_sharefetch():
    w = World()
    c = w.client
    c.produce(4)
    ok(c.fetch("m1", 0))
    # no api: ShareFetch and ShareAcknowledge; a request without acknowledgements does not count
    w.svc.faults.add({"drop_acknowledgements": True, "error": "INVALID_RECORD_STATE", "count": 1, "member": "m1"})
    assert acquired(ok(c.fetch("m1", 1))) == []                           # nothing to acknowledge: served
    resp = ok(c.fetch("m1", 2, acks={0: [(0, 1, ACCEPT)]}))
    assert partition_of(resp)["acknowledge_error_code"] == E.INVALID_RECORD_STATE
    sp = w.svc.share_partitions.share_partitions()[("q", c.topic_id(), 0)]
    assert sp.start_offset == 0
    [event] = w.share_events("share.records_acknowledged")
    assert (event["dropped"], event["error"]) == (True, "INVALID_RECORD_STATE")
    # other APIs, and a connection both dropped and served, are refused
    for spec in ({"api": "Heartbeat", "drop_acknowledgements": True},
                 {"api": "ShareFetch", "drop_acknowledgements": True, "drop": True},
                 {"api": "ShareFetch", "drop_acknowledgements": "yes"}):
        with pytest.raises(FaultError):
            w.svc.faults.add(spec)


def test_request_faults_reach_the_share_apis_by_name_and_group():
    w = World()
    c = w.client
    c.produce(2)
    w.svc.faults.add({"api": "ShareFetch", "group": "other", "error": "GROUP_AUTHORIZATION_FAILED"})
    w.svc.faults.add({"api": "SHARE_FETCH", "group": "q", "error": "UNKNOWN_SERVER_ERROR", "count": 1})
    assert c.fetch("m1", 0)["error_code"] == E.UNKNOWN_SERVER_ERROR
    assert acquired(ok(c.fetch("m1", 0))) == [(0, 1, 1)]
    w.svc.faults.add({"api": "ShareGroupHeartbeat", "member": "m2", "drop": True, "count": 1})
    assert c.heartbeat("m2", 1) is None                                   # its connection closed


def test_expiring_locks_now_and_on_every_acquisition():
    w = World(partitions=2)
    c = w.client
    c.produce(3, partition=0)
    c.produce(2, partition=1)
    ok(c.fetch("m1", 0, partitions=(0, 1)))
    m2 = ShareClient(w.svc, conn=2)
    w.take()
    result = w.svc.faults.expire_locks("q", "m1", "foo", 1)
    assert result == {"group": "q", "member": "m1", "records": 2, "partitions": [
        {"topic": "foo", "partition": 1, "records": 2}]}
    assert w.take() == [{"event": "share.lock_expired", "topic": "foo", "partition": 1, "records": 2, "archived": 0,
                         "cause": "fault"}]
    assert acquired(ok(m2.fetch("m2", 0, partitions=(1,))), 1) == [(0, 1, 2)]   # m2 has them now
    assert w.svc.faults.expire_locks("q", "nobody")["records"] == 0
    with pytest.raises(FaultError):
        w.svc.faults.expire_locks("q", topic="nope")

    # scheduled: whenever m2 acquires, its locks expire at once (after the fetch that acquired): those of
    # 0 and 1 it still holds, and of 2
    w.svc.faults.add({"when": {"event": "share.records_acquired", "group": "q", "member": "m2"},
                      "do": {"action": "expire_locks"}, "times": None})
    c.produce(1, partition=1)
    assert acquired(ok(m2.fetch("m2", 1, partitions=(1,))), 1) == [(2, 2, 1)]
    expired = w.share_events("share.lock_expired")
    assert expired[-1] == {"event": "share.lock_expired", "topic": "foo", "partition": 1, "records": 3,
                           "archived": 0, "cause": "fault"}
    sp = w.svc.share_partitions.share_partitions()[("q", c.topic_id(), 1)]
    assert {st.state.name for b in sp.cached_state() for _, _, st in b.states()} == {"AVAILABLE"}


def test_fencing_a_share_group_member():
    w = World()
    c = w.client
    group = w.svc.group_coordinator.get("q")
    epoch = group.members["m2"].member_epoch
    assert w.svc.faults.fence_member("q", member="m2") == {"group": "q", "member": "m2", "fenced": True}
    fenced = [e for e in w.events if e["event"] == "share.member_fenced"]
    assert [(e["member"], e["reason"]) for e in fenced] == [("m2", "session_timeout")]
    assert set(group.members) == {"m1"}
    assert c.heartbeat("m2", epoch)["error_code"] == E.UNKNOWN_MEMBER_ID
    # scheduled: the member that joins is fenced at once
    w.svc.faults.add({"when": {"event": "share.member_joined", "group": "q"}, "do": {"action": "fence_member"}})
    first = c.heartbeat("m3", 0, ["foo"])
    assert first["error_code"] == 0 and "m3" not in group.members
