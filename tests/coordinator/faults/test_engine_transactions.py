"""The fault engine on transactions, on the sans-I/O service in virtual time: request faults that fail one
producer's step by its transactional id (and the step retried goes through: the transaction commits),
scheduled faults on the transaction coordinator's events (``transaction.*``: fields of their own, no
group), and ``crash_producer``: a producer cut off between two steps, whose transaction is then aborted
at its timeout (Kafka's ``TransactionCoordinator.abortTimedOutTransactions``, fencing the producer) and
whose transactional id a new producer takes over."""
from __future__ import annotations

import pytest

from test_engine import World

from groupcoord.coordinator.faults import TRANSACTIONAL_APIS, FaultError
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode as E

INIT, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = (
    int(ApiKey.INIT_PRODUCER_ID), int(ApiKey.ADD_PARTITIONS_TO_TXN), int(ApiKey.ADD_OFFSETS_TO_TXN),
    int(ApiKey.END_TXN), int(ApiKey.TXN_OFFSET_COMMIT))
T, U = "txn-t", "txn-u"


@pytest.fixture
def w() -> World:
    return World(transaction_abort_timed_out_transaction_cleanup_interval_ms=1000)


class Producer:
    """A transactional producer's steps as raw requests at its coordinators (InitProducerId v4,
    AddPartitionsToTxn v3, AddOffsetsToTxn v3, TxnOffsetCommit v3, EndTxn v3): each returns its error."""

    def __init__(self, w: World, txn_id: str, client_id: str = "p1"):
        self.w, self.txn_id, self.client_id = w, txn_id, client_id
        self.pid, self.epoch = -1, -1
        self.closed = False

    def _send(self, api_key: int, version: int, body: dict, node: int):
        answer = self.w.send(api_key, version, body, node=node, client_id=self.client_id)
        self.closed = answer.closed
        return None if answer.closed else answer.body

    @property
    def node(self) -> int:
        return self.w.service.transactions.coordinator_node(self.txn_id)

    def init(self, timeout_ms: int = 60000) -> int | None:
        r = self._send(INIT, 4, {"transactional_id": self.txn_id, "transaction_timeout_ms": timeout_ms,
                                 "producer_id": -1, "producer_epoch": -1}, self.node)
        if r is not None and r["error_code"] == 0:
            self.pid, self.epoch = r["producer_id"], r["producer_epoch"]
        return None if r is None else r["error_code"]

    def add_partitions(self, *partitions: int) -> int | None:
        r = self._send(ADD_PARTITIONS, 3, {
            "v3_and_below_transactional_id": self.txn_id, "v3_and_below_producer_id": self.pid,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": [{"name": "t", "partitions": list(partitions)}]}, self.node)
        if r is None:
            return None
        codes = {p["partition_error_code"] for t in r["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}
        assert len(codes) == 1, r
        return codes.pop()

    def add_offsets(self, group: str = "g") -> int | None:
        r = self._send(ADD_OFFSETS, 3, {"transactional_id": self.txn_id, "producer_id": self.pid,
                                        "producer_epoch": self.epoch, "group_id": group}, self.node)
        return None if r is None else r["error_code"]

    def commit_offsets(self, group: str = "g") -> int | None:
        r = self._send(TXN_OFFSET_COMMIT, 3, {
            "transactional_id": self.txn_id, "group_id": group, "producer_id": self.pid, "producer_epoch": self.epoch,
            "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                     "committed_leader_epoch": -1, "committed_metadata": ""}]}]},
            self.w.coordinator(group))
        if r is None:
            return None
        codes = {p["error_code"] for t in r["topics"] for p in t["partitions"]}
        assert len(codes) == 1, r
        return codes.pop()

    def end(self, commit: bool = True) -> int | None:
        r = self._send(END_TXN, 3, {"transactional_id": self.txn_id, "producer_id": self.pid,
                                    "producer_epoch": self.epoch, "committed": commit}, self.node)
        return None if r is None else r["error_code"]


def state(w: World, txn_id: str = T) -> str:
    return w.service.transactions.transactions[txn_id].state


def transaction_events(w: World, txn_id: str = T) -> list[tuple]:
    return [(e["event"], e.get("cause") or e.get("result")) for e in w.events
            if e.get("transactional_id") == txn_id]


# ============================================================================ request faults
def test_the_transactional_apis_are_those_whose_requests_name_a_transactional_id():
    assert TRANSACTIONAL_APIS == {ApiKey.PRODUCE, ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN,
                                  ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT}


def test_a_transactional_id_filter_fails_only_that_producers_requests(w):
    fault = w.faults.add({"api": "InitProducerId", "transactional_id": T, "error": "COORDINATOR_NOT_AVAILABLE",
                          "count": 1})
    other = Producer(w, U, client_id="p2")
    assert other.init() == E.NONE                           # another id: not matched
    p = Producer(w, T)
    assert p.init() == E.COORDINATOR_NOT_AVAILABLE          # the producer finds the coordinator again, retries
    assert p.init() == E.NONE
    assert w.faults.get(fault["id"])["fired"] == 1
    assert w.faults.log[-1]["transactional_id"] == T


STEPS = ["InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"]


@pytest.mark.parametrize("api", STEPS)
def test_each_step_failed_once_is_retried_and_the_transaction_commits(w, api):
    # a retriable error once, as the client sees it (the step's error response); the step sent again
    # succeeds and the transaction commits its offsets
    w.faults.add({"api": api, "transactional_id": T, "error": "COORDINATOR_NOT_AVAILABLE", "count": 1})
    p = Producer(w, T)
    steps = {"InitProducerId": p.init, "AddPartitionsToTxn": lambda: p.add_partitions(0, 1),
             "AddOffsetsToTxn": p.add_offsets, "TxnOffsetCommit": p.commit_offsets, "EndTxn": p.end}
    for name, step in steps.items():
        if name == api:
            assert step() == E.COORDINATOR_NOT_AVAILABLE
        assert step() == E.NONE, name
    w.advance(0)                                            # the markers
    assert state(w) == "CompleteCommit"
    assert transaction_events(w)[-1] == ("transaction.completed", "commit")
    assert w.service.group_coordinator.group("g") is not None


def test_a_transactional_id_filter_needs_an_api_that_carries_one(w):
    with pytest.raises(FaultError, match="Heartbeat requests carry no transactional id"):
        w.faults.add({"api": "Heartbeat", "transactional_id": T, "error": "NOT_COORDINATOR"})
    # without an api: every transactional API, none other
    w.faults.add({"transactional_id": T, "error": "NOT_COORDINATOR", "count": 1})
    assert w.find("g").body["error_code"] == E.NONE
    assert Producer(w, T).init() == E.NOT_COORDINATOR


# ============================================================================ scheduled faults
def test_scheduled_faults_fire_on_transaction_events_by_their_fields(w):
    # the EndTxn after the first partitions are added fails once
    w.faults.add({"when": {"event": "transaction.partitions_added", "transactional_id": T, "began": True},
                  "do": {"action": "inject", "fault": {"api": "EndTxn", "transactional_id": T,
                                                       "error": "CONCURRENT_TRANSACTIONS", "count": 1}}})
    other = Producer(w, U, client_id="p2")
    assert (other.init(), other.add_partitions(0), other.end()) == (E.NONE, E.NONE, E.NONE)
    p = Producer(w, T)
    assert (p.init(), p.add_partitions(0), p.add_partitions(1)) == (E.NONE, E.NONE, E.NONE)
    assert p.end() == E.CONCURRENT_TRANSACTIONS
    assert p.end() == E.NONE


def test_transaction_events_have_no_group_to_match(w):
    with pytest.raises(FaultError, match=r"unknown field\(s\) of when \(transaction.prepared\): group"):
        w.faults.add({"when": {"event": "transaction.prepared", "group": "g"}, "do": {"action": "node_down",
                                                                                        "node": 1}})
    with pytest.raises(FaultError, match="expire_member needs member, instance_id or client_id"):
        w.faults.add({"when": {"event": "transaction.fenced"}, "do": {"action": "expire_member"}})
    with pytest.raises(FaultError, match="crash_producer needs transactional_id: member.joined events name none"):
        w.faults.add({"when": {"event": "member.joined"}, "do": {"action": "crash_producer"}})


def test_crash_producer_between_steps_then_the_transaction_times_out(w):
    hooks = list(w.service.before_request)
    w.faults.add({"id": "crash", "when": {"event": "transaction.partitions_added", "transactional_id": T},
                  "do": {"action": "crash_producer"}})
    assert w.service.before_request == hooks + [w.faults.before_request]     # watching the producers' clients
    p = Producer(w, T)
    assert p.init(timeout_ms=2000) == E.NONE
    assert p.add_partitions(0) == E.NONE                     # answered; then the producer is cut off
    assert w.faults.producers == {T: ["p1"]}
    injected = [f for f in w.faults.list() if f.get("source") == "crash"]
    assert [(f["transactional_id"], f["client_id"], f["drop"], f["count"]) for f in injected] == [(T, "p1", True, None)]
    assert p.add_partitions(1) is None and p.closed          # every later request of the id: dropped
    assert p.end() is None
    assert state(w) == "Ongoing"
    w.advance(1000)
    assert state(w) == "Ongoing"                             # not past its timeout yet
    w.advance(2000)                                          # abortTimedOutTransactions, then the markers
    w.advance(0)
    assert transaction_events(w)[-2:] == [("transaction.fenced", "timeout"), ("transaction.completed", "abort")]
    assert state(w) == "CompleteAbort"
    # the producer's restart (another client id) takes the id over, with the epoch the abort bumped
    restarted = Producer(w, T, client_id="p1-restarted")
    assert restarted.init() == E.NONE
    assert (restarted.pid, restarted.epoch) == (p.pid, p.epoch + 2)
    assert w.faults.clear() == 2
    assert w.service.before_request == hooks


def test_crash_producer_then_a_new_producer_fences_the_open_transaction(w):
    w.faults.add({"when": {"event": "transaction.partitions_added", "transactional_id": T},
                  "do": {"action": "crash_producer"}})
    p = Producer(w, T)
    assert (p.init(), p.add_partitions(0)) == (E.NONE, E.NONE)
    new = Producer(w, T, client_id="p2")
    assert new.init() == E.CONCURRENT_TRANSACTIONS          # the open transaction is being aborted
    w.advance(0)
    assert new.init() == E.NONE
    assert ("transaction.fenced", "init_producer_id") in transaction_events(w)
    assert (new.add_partitions(1), new.end()) == (E.NONE, E.NONE)


def test_drop_connections_of_a_transactional_id_needs_its_clients_seen(w):
    with pytest.raises(FaultError, match="no client seen sending requests of transactional id 'txn-t'") as exc:
        w.faults.drop_connections(transactional_id=T)
    assert exc.value.kind == "not_found"
    w.faults.add({"when": {"event": "transaction.prepared", "transactional_id": T},
                  "do": {"action": "drop_connections", "transactional_id": T}})
    p = Producer(w, T)
    assert (p.init(), p.add_partitions(0), p.end()) == (E.NONE, E.NONE, E.NONE)
    assert w.faults.list()[0]["fired"] == 1 and w.faults.list()[0]["errors"] == []
    assert w.faults.drop_connections(transactional_id=T) == {"closed": 0, "clients": ["p1"]}   # (no server here)
