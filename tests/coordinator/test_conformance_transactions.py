"""The transaction coordinator as Kafka's (``TransactionCoordinatorTest``, ``TransactionMetadataTest``,
``TransactionStateManagerTest``, ``KafkaApisTest``'s transaction cases): every request through the codec
at its version, against a real service in virtual time; the markers land in the real partition logs and
offsets partitions."""
from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.events import (
    TRANSACTION_BASE_FIELDS, TRANSACTION_EVENT_FIELDS, TRANSACTION_EVENT_TYPES, check_event,
)
from groupcoord.coordinator.service import Service
from groupcoord.coordinator.storage import LogStore
from groupcoord.protocol import records
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import APIS

INIT, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, FIND_COORDINATOR = 22, 24, 25, 26, 10
DESCRIBE_TXNS, LIST_TXNS = 65, 66
TXN = "txn-1"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def service(nodes: int = 1, store=None, **settings) -> tuple[Service, Clock]:
    clock = Clock()
    events = []
    svc = Service(BrokerConfig(settings, environ={}), clock=clock, emit=events.append, nodes=nodes, store=store)
    svc.events = events
    if "orders" not in svc.cluster.topics:
        svc.cluster.create_topic("orders", 2)
    return svc, clock


def call(svc: Service, api_key: int, version: int, body: dict, node: int = 0) -> dict:
    """Through the codec both ways, as a client would see it."""
    api = APIS[api_key]
    decoded = api.request.decode(api.request.encode(body, version), version)
    out = []
    svc.handle(RequestContext(svc, node, "test", "/127.0.0.1", api_key, version, 1), decoded, out.append)
    return api.response.decode(api.response.encode(out[0], version), version)


def init(svc, txn_id=TXN, timeout=60_000, pid=-1, epoch=-1, version=4) -> tuple[int, int, int]:
    r = call(svc, INIT, version, {"transactional_id": txn_id, "transaction_timeout_ms": timeout,
                                  "producer_id": pid, "producer_epoch": epoch})
    return r["error_code"], r["producer_id"], r["producer_epoch"]


def add(svc, pid, epoch, *partitions, txn_id=TXN, version=3) -> dict:
    topics = {}
    for topic, p in partitions:
        topics.setdefault(topic, []).append(p)
    r = call(svc, ADD_PARTITIONS, version, {"v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                                            "v3_and_below_producer_epoch": epoch,
                                            "v3_and_below_topics": [{"name": t, "partitions": ps}
                                                                    for t, ps in topics.items()]})
    return {(t["name"], p["partition_index"]): p["partition_error_code"]
            for t in r["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}


def add_offsets(svc, pid, epoch, group, txn_id=TXN, version=3) -> int:
    return call(svc, ADD_OFFSETS, version, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                                            "group_id": group})["error_code"]


def end(svc, pid, epoch, commit=True, txn_id=TXN, version=3) -> dict:
    return call(svc, END_TXN, version, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                                        "committed": commit})


def describe(svc, *txn_ids) -> list[dict]:
    return call(svc, DESCRIBE_TXNS, 0, {"transactional_ids": list(txn_ids)})["transaction_states"]


def state(svc, txn_id=TXN) -> str:
    return svc.transactions.transactions[txn_id].state


def produce_txn(svc, pid, epoch, seq=0, topic="orders", partition=0, n=1) -> int:
    """Append a transactional batch as a producer would (the data plane's checks apply)."""
    batch = records.encode_batch([records.Record(offset_delta=i, timestamp_delta=0, key=None, value=b"v")
                                  for i in range(n)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                 transactional=True)
    code, _ = svc.cluster.append(topic, partition, batch)
    return code


def control_batches(svc, topic="orders", partition=0) -> list[tuple[int, int, bool]]:
    """(producer id, epoch, commit) of each marker in the partition's log."""
    log = svc.cluster.log(topic, partition)
    out = []
    for batch in log.batches:
        header = records.read_batch_header(batch)
        if header.is_control:
            _, recs = records.decode_batch(batch, verify=False)
            out.append((header.producer_id, header.producer_epoch, recs[0].key[3] == 1))
    return out


def settle(svc, clock, ms=0) -> None:
    clock.now += ms
    svc.advance()


# ------------------------------------------------------------------------------------ InitProducerId
def test_init_producer_id_gives_a_new_id_epoch_zero_then_bumps_it():
    """TransactionCoordinatorTest.shouldInitPidWithEpochZeroForNewTransactionalId and
    shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingEmptyTransaction."""
    svc, _ = service()
    error, pid, epoch = init(svc)
    assert (error, epoch) == (E.NONE, 0) and pid >= 0
    assert init(svc) == (E.NONE, pid, 1)
    assert state(svc) == "Empty"
    # an idempotent producer (no transactional id) gets a fresh id each time
    r = call(svc, INIT, 4, {"transactional_id": None, "transaction_timeout_ms": 0})
    assert r["error_code"] == 0 and r["producer_epoch"] == 0 and r["producer_id"] not in (pid, -1)


def test_init_producer_id_refusals():
    """shouldReturnInvalidRequestWhenTransactionalIdIsEmpty, shouldRespondWithInvalidRequestOnInitPidWhenTxnTimeout
    TooLarge (INVALID_TRANSACTION_TIMEOUT), KafkaApisTest: a producer id without an epoch is INVALID_REQUEST."""
    svc, _ = service(**{"transaction.max.timeout.ms": 60_000})
    assert init(svc, txn_id="")[0] == E.INVALID_REQUEST
    assert init(svc, timeout=60_001)[0] == E.INVALID_TRANSACTION_TIMEOUT
    assert init(svc, timeout=0)[0] == E.INVALID_TRANSACTION_TIMEOUT
    assert init(svc, pid=5, epoch=-1)[0] == E.INVALID_REQUEST


def test_init_producer_id_resumes_with_its_epoch_or_is_fenced():
    """TransactionCoordinatorTest.shouldNotFenceProducerWhenInitProducerIdRetried... and
    shouldFenceProducerWhenInitProducerIdWithMismatchedEpoch (KIP-360: a producer resumes with its id and
    epoch; a stale epoch is fenced, and below v4 that is INVALID_PRODUCER_EPOCH)."""
    svc, _ = service()
    _, pid, _ = init(svc)
    _, _, epoch = init(svc)                     # epoch 1
    assert init(svc, pid=pid, epoch=epoch) == (E.NONE, pid, 2)
    # a retry of that same request (its answer lost) is answered with the epoch it got
    assert init(svc, pid=pid, epoch=epoch) == (E.NONE, pid, 2)
    assert init(svc, pid=pid, epoch=0)[0] == E.PRODUCER_FENCED
    assert init(svc, pid=pid, epoch=0, version=3)[0] == E.INVALID_PRODUCER_EPOCH
    assert init(svc, pid=pid + 77, epoch=2)[0] == E.PRODUCER_FENCED


def test_a_new_producer_fences_the_open_transaction_of_its_id():
    """shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState: InitProducerId over an
    ongoing transaction bumps the epoch, aborts it (markers into its partitions) and answers
    CONCURRENT_TRANSACTIONS until the abort is complete; the zombie is fenced everywhere."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    assert add(svc, pid, epoch, ("orders", 0)) == {("orders", 0): E.NONE}
    assert produce_txn(svc, pid, epoch) == E.NONE
    assert svc.cluster.log("orders", 0).last_stable_offset == 0
    assert init(svc)[0] == E.CONCURRENT_TRANSACTIONS
    assert state(svc) == "PrepareAbort"
    settle(svc, clock)                          # the markers go out
    assert state(svc) == "CompleteAbort"
    [marker] = control_batches(svc)
    assert marker[0] == pid and marker[1] > epoch and marker[2] is False
    error, pid2, epoch2 = init(svc)
    assert (error, pid2) == (E.NONE, pid) and epoch2 > marker[1]
    # the zombie: fenced at the coordinator and at the partition
    assert end(svc, pid, epoch)["error_code"] == E.PRODUCER_FENCED
    assert end(svc, pid, epoch, version=1)["error_code"] == E.INVALID_PRODUCER_EPOCH
    assert add(svc, pid, epoch, ("orders", 1)) == {("orders", 1): E.PRODUCER_FENCED}
    assert produce_txn(svc, pid, epoch, seq=1) == E.INVALID_PRODUCER_EPOCH
    assert svc.cluster.log("orders", 0).last_stable_offset == svc.cluster.log("orders", 0).log_end_offset
    fenced = [e for e in svc.events if e["event"] == "transaction.fenced"]
    assert [e["cause"] for e in fenced] == ["init_producer_id"]


def test_init_producer_id_while_markers_are_pending_is_concurrent_transactions():
    """shouldRespondWithConcurrentTransactionsOnInitPidWhenInPrepareCommitState."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    add(svc, pid, epoch, ("orders", 0))
    assert end(svc, pid, epoch)["error_code"] == E.NONE
    assert state(svc) == "PrepareCommit"
    assert init(svc)[0] == E.CONCURRENT_TRANSACTIONS
    assert add(svc, pid, epoch, ("orders", 1)) == {("orders", 1): E.CONCURRENT_TRANSACTIONS}
    settle(svc, clock)
    assert state(svc) == "CompleteCommit"
    assert init(svc) == (E.NONE, pid, epoch + 1)


# ------------------------------------------------------------------------------------ AddPartitions, AddOffsets
def test_add_partitions_refusals():
    """shouldRespondWithInvalidPidMappingOnAddPartitionsToTransactionWhenTransactionalIdNotPresent,
    shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent, KafkaApisTest: an unknown
    partition fails the request, the others OPERATION_NOT_ATTEMPTED; the offsets topic cannot be added."""
    svc, _ = service()
    assert add(svc, 1, 0, ("orders", 0), txn_id="nobody") == {("orders", 0): E.INVALID_PRODUCER_ID_MAPPING}
    _, pid, epoch = init(svc)
    assert add(svc, pid + 1, epoch, ("orders", 0)) == {("orders", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert add(svc, pid, epoch + 1, ("orders", 0)) == {("orders", 0): E.PRODUCER_FENCED}
    assert add(svc, pid, epoch + 1, ("orders", 0), version=1) == {("orders", 0): E.INVALID_PRODUCER_EPOCH}
    assert add(svc, pid, epoch, ("orders", 0), ("orders", 9)) == {
        ("orders", 0): E.OPERATION_NOT_ATTEMPTED, ("orders", 9): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert add(svc, pid, epoch, ("__consumer_offsets", 3)) == {("__consumer_offsets", 3): E.TOPIC_AUTHORIZATION_FAILED}
    assert state(svc) == "Empty"


def test_add_partitions_then_offsets_begin_and_grow_the_transaction():
    """shouldAddPartitionsToTransaction...; AddOffsetsToTxn adds the group's offsets-topic partition."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    clock.now += 5
    assert add(svc, pid, epoch, ("orders", 0)) == {("orders", 0): E.NONE}
    started = clock.now
    clock.now += 5
    assert add(svc, pid, epoch, ("orders", 0)) == {("orders", 0): E.NONE}      # nothing new: nothing written
    assert add_offsets(svc, pid, epoch, "g1") == E.NONE
    partition = svc.group_coordinator.partition_of("g1")
    [d] = describe(svc, TXN)
    assert d["transaction_state"] == "Ongoing" and d["transaction_start_time_ms"] == started
    assert {t["topic"]: t["partitions"] for t in d["topics"]} == {"orders": [0], "__consumer_offsets": [partition]}
    assert add_offsets(svc, pid, epoch + 1, "g1") == E.PRODUCER_FENCED
    assert add_offsets(svc, pid, epoch + 1, "g1", version=1) == E.INVALID_PRODUCER_EPOCH


# ------------------------------------------------------------------------------------ EndTxn
def test_commit_writes_a_marker_into_every_partition_then_completes():
    """shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit and
    TransactionMarkerChannelManagerTest: PrepareCommit, the markers, CompleteCommit; the LSO moves."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    add(svc, pid, epoch, ("orders", 0), ("orders", 1))
    assert produce_txn(svc, pid, epoch, partition=0, n=3) == E.NONE
    assert produce_txn(svc, pid, epoch, partition=1) == E.NONE
    assert svc.cluster.log("orders", 0).last_stable_offset == 0
    assert end(svc, pid, epoch)["error_code"] == E.NONE
    assert state(svc) == "PrepareCommit"
    settle(svc, clock)
    assert state(svc) == "CompleteCommit"
    assert control_batches(svc, partition=0) == [(pid, epoch, True)]
    assert control_batches(svc, partition=1) == [(pid, epoch, True)]
    log0 = svc.cluster.log("orders", 0)
    assert log0.last_stable_offset == log0.log_end_offset == 4
    kinds = [e["event"] for e in svc.events if e["event"].startswith("transaction.")]
    for e in svc.events:
        check_event(e)
    assert kinds == ["transaction.producer_initialized", "transaction.partitions_added", "transaction.prepared",
                     "transaction.completed"]


def test_end_txn_in_each_state():
    """shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsCommit (and the
    reverse), shouldReturnOkOnEndTxnWhenStatusIsCompleteCommitAndResultIsCommit,
    shouldReturnConcurrentTxnRequestOnEndTxnRequestWhenStatusIsPrepareCommit,
    shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsEmpty... (transactions V1)."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    assert end(svc, pid, epoch)["error_code"] == E.INVALID_TXN_STATE          # Empty
    add(svc, pid, epoch, ("orders", 0))
    assert end(svc, pid + 1, epoch)["error_code"] == E.INVALID_PRODUCER_ID_MAPPING
    assert end(svc, pid, epoch, commit=False)["error_code"] == E.NONE
    assert end(svc, pid, epoch, commit=False)["error_code"] == E.CONCURRENT_TRANSACTIONS   # PrepareAbort
    assert end(svc, pid, epoch, commit=True)["error_code"] == E.INVALID_TXN_STATE
    settle(svc, clock)
    assert end(svc, pid, epoch, commit=False)["error_code"] == E.NONE           # CompleteAbort: a retry
    assert end(svc, pid, epoch, commit=True)["error_code"] == E.INVALID_TXN_STATE
    assert end(svc, pid, epoch, txn_id="nobody")["error_code"] == E.INVALID_PRODUCER_ID_MAPPING


def test_transactions_v2_bump_the_epoch_at_each_end():
    """TransactionCoordinatorTest's TV2 cases (KIP-890 part 2): EndTxn v5 bumps the epoch and answers the
    producer id and epoch to go on with; a retry with the old epoch is answered the same; an abort with
    nothing added is allowed."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    call(svc, ADD_PARTITIONS, 5, {"transactions": [{"transactional_id": TXN, "producer_id": pid,
                                                     "producer_epoch": epoch, "verify_only": False,
                                                     "topics": [{"name": "orders", "partitions": [0]}]}]})
    r = end(svc, pid, epoch, version=5)
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (E.NONE, pid, epoch + 1)
    settle(svc, clock)
    assert control_batches(svc) == [(pid, epoch + 1, True)]
    again = end(svc, pid, epoch, version=5)
    assert (again["error_code"], again["producer_epoch"]) == (E.NONE, epoch + 1)
    empty_abort = end(svc, pid, epoch + 1, commit=False, version=5)
    assert (empty_abort["error_code"], empty_abort["producer_epoch"]) == (E.NONE, epoch + 2)
    assert end(svc, pid, epoch, commit=True, version=5)["error_code"] == E.PRODUCER_FENCED


# ------------------------------------------------------------------------------------ verification (KIP-890 part 1)
def test_a_transactional_produce_to_a_partition_not_added_is_refused():
    """TransactionCoordinatorTest.shouldReturnErrorsForVerifyPartitions... / ProduceRequest verification:
    the leader asks the coordinator whether the partition is in the ongoing transaction."""
    svc, _ = service()
    _, pid, epoch = init(svc)
    add(svc, pid, epoch, ("orders", 0))
    tc = svc.transactions
    assert tc.verify_partition(TXN, pid, epoch, "orders", 0) is None
    assert tc.verify_partition(TXN, pid, epoch, "orders", 1) == E.TRANSACTION_ABORTABLE
    assert tc.verify_partition(TXN, pid, epoch - 1, "orders", 0) == E.PRODUCER_FENCED
    r = call(svc, ADD_PARTITIONS, 4, {"transactions": [{"transactional_id": TXN, "producer_id": pid,
                                                         "producer_epoch": epoch, "verify_only": True,
                                                         "topics": [{"name": "orders", "partitions": [0, 1]}]}]})
    [txn] = r["results_by_transaction"]
    assert {p["partition_index"]: p["partition_error_code"] for t in txn["topic_results"]
            for p in t["results_by_partition"]} == {0: E.NONE, 1: E.TRANSACTION_ABORTABLE}
    assert state(svc) == "Ongoing" and svc.transactions.transactions[TXN].partitions == {("orders", 0)}


# ------------------------------------------------------------------------------------ timeouts and expiry
def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced():
    """TransactionCoordinatorTest.shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch."""
    svc, clock = service(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
    _, pid, epoch = init(svc, timeout=5000)
    add(svc, pid, epoch, ("orders", 0))
    assert produce_txn(svc, pid, epoch) == E.NONE
    settle(svc, clock, 4000)
    assert state(svc) == "Ongoing"
    settle(svc, clock, 2000)                    # the check after the timeout
    settle(svc, clock)                          # its markers
    assert state(svc) == "CompleteAbort"
    [(mpid, mepoch, commit)] = control_batches(svc)
    assert (mpid, commit) == (pid, False) and mepoch > epoch
    assert end(svc, pid, epoch)["error_code"] == E.PRODUCER_FENCED
    assert [e["cause"] for e in svc.events if e["event"] == "transaction.fenced"] == ["timeout"]


def test_idle_transactional_ids_expire():
    """TransactionStateManagerTest.shouldRemoveCompleteCommitExpiredTransactionalIds (and not an ongoing one)."""
    svc, clock = service(**{"transactional.id.expiration.ms": 10_000,
                            "transaction.remove.expired.transaction.cleanup.interval.ms": 1000})
    init(svc, txn_id="idle")
    _, pid, epoch = init(svc, txn_id="busy", timeout=900_000)
    add(svc, pid, epoch, ("orders", 0), txn_id="busy")
    settle(svc, clock, 11_000)
    assert "idle" not in svc.transactions.transactions
    assert state(svc, "busy") == "Ongoing"
    assert describe(svc, "idle")[0]["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND


# ------------------------------------------------------------------------------------ describing, finding
def test_describe_and_list_transactions():
    """TransactionCoordinatorTest.testDescribeTransactions / TransactionStateManagerTest.testListTransactions
    Filtering (states, producer ids, duration, transactional id pattern; unknown states listed back)."""
    svc, clock = service()
    _, pid_a, epoch_a = init(svc, txn_id="orders-a")
    init(svc, txn_id="orders-b")
    init(svc, txn_id="payments")
    add(svc, pid_a, epoch_a, ("orders", 1), txn_id="orders-a")
    clock.now += 10_000
    [a, missing, empty] = describe(svc, "orders-a", "nope", "")
    assert (a["error_code"], a["transaction_state"], a["producer_id"], a["transaction_timeout_ms"]) == (
        E.NONE, "Ongoing", pid_a, 60_000)
    assert a["topics"] == [{"topic": "orders", "partitions": [1]}]
    assert missing["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND and empty["error_code"] == E.INVALID_REQUEST

    def listed(version=2, **body) -> tuple[set, list]:
        r = call(svc, LIST_TXNS, version, {"state_filters": [], "producer_id_filters": [], **body})
        return {s["transactional_id"] for s in r["transaction_states"]}, r["unknown_state_filters"]
    assert listed() == ({"orders-a", "orders-b", "payments"}, [])
    assert listed(state_filters=["Ongoing", "Bogus"]) == ({"orders-a"}, ["Bogus"])
    assert listed(producer_id_filters=[pid_a]) == ({"orders-a"}, [])
    # open for longer than the duration; ids without a transaction (start time -1) always are, as in Kafka
    assert listed(version=1, duration_filter=5_000) == ({"orders-a", "orders-b", "payments"}, [])
    assert listed(version=1, duration_filter=20_000) == ({"orders-b", "payments"}, [])
    assert listed(transactional_id_pattern="orders-.*") == ({"orders-a", "orders-b"}, [])
    bad = call(svc, LIST_TXNS, 2, {"state_filters": [], "producer_id_filters": [], "transactional_id_pattern": "("})
    assert bad["error_code"] == E.INVALID_REGULAR_EXPRESSION


def test_find_coordinator_of_a_transactional_id_and_not_coordinator_elsewhere():
    """FindCoordinator key type 1: the leader of partition abs(javaHash(id)) % 50 of the transaction log;
    the other nodes answer NOT_COORDINATOR."""
    svc, _ = service(nodes=3)
    r = call(svc, FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [TXN, "other"]})
    nodes = {c["key"]: c["node_id"] for c in r["coordinators"]}
    assert nodes[TXN] == svc.transactions.partition_for(TXN) % 3
    elsewhere = (nodes[TXN] + 1) % 3
    body = {"transactional_id": TXN, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1}
    assert call(svc, INIT, 4, body, node=elsewhere)["error_code"] == E.NOT_COORDINATOR
    assert call(svc, INIT, 4, body, node=nodes[TXN])["error_code"] == E.NONE


# ------------------------------------------------------------------------------------ the transaction log
def test_the_transaction_log_brings_every_id_back_and_completes_a_prepared_commit(tmp_path):
    """TransactionStateManagerTest.shouldLoadTransactionsAndCompletePrepared...: an ongoing transaction comes
    back ongoing; one caught between PrepareCommit and its markers gets them at load; producer ids are never
    handed out twice across restarts."""
    store = LogStore(str(tmp_path))
    svc, _ = service(store=store)
    _, pid_a, epoch_a = init(svc, txn_id="a")
    add(svc, pid_a, epoch_a, ("orders", 0), txn_id="a")
    _, pid_b, epoch_b = init(svc, txn_id="b")
    add(svc, pid_b, epoch_b, ("orders", 1), txn_id="b")
    assert produce_txn(svc, pid_b, epoch_b, partition=1) == E.NONE
    assert end(svc, pid_b, epoch_b, txn_id="b")["error_code"] == E.NONE     # PrepareCommit, no markers yet
    store.close()                                                              # (the process dies here)

    store2 = LogStore(str(tmp_path))
    svc2, clock2 = service(store=store2)
    assert state(svc2, "a") == "Ongoing" and svc2.transactions.transactions["a"].partitions == {("orders", 0)}
    assert state(svc2, "b") == "PrepareCommit"
    settle(svc2, clock2)
    assert state(svc2, "b") == "CompleteCommit"
    assert control_batches(svc2, partition=1) == [(pid_b, epoch_b, True)]
    r = call(svc2, INIT, 4, {"transactional_id": None, "transaction_timeout_ms": 0})
    assert r["producer_id"] not in (pid_a, pid_b) and r["producer_id"] > max(pid_a, pid_b)
    store2.close()


@pytest.mark.parametrize("release", ["3.9", "4.3"])
def test_versions_served_per_release(release):
    """Kafka 4.0 brought EndTxn v5 (transactions V2) and 4.1 ListTransactions v2; InitProducerId v6 is
    unstable in every 4.x."""
    svc, _ = service(**{"groupcoord.kafka.version": release})
    served = svc.served_versions
    assert served[INIT] == (0, 5)
    assert served[END_TXN] == ((0, 4) if release == "3.9" else (0, 5))
    assert served[LIST_TXNS] == ((0, 1) if release == "3.9" else (0, 2))
    assert served[DESCRIBE_TXNS] == (0, 0) and served[ADD_PARTITIONS] == (0, 5) and served[ADD_OFFSETS] == (0, 4)


def test_the_transaction_events_schema():
    assert set(TRANSACTION_EVENT_FIELDS) == set(TRANSACTION_EVENT_TYPES)
    for kind, td in TRANSACTION_EVENT_TYPES.items():
        assert set(td.__annotations__) == set(TRANSACTION_BASE_FIELDS) | set(TRANSACTION_EVENT_FIELDS[kind]), kind
    with pytest.raises(ValueError):
        check_event({"event": "transaction.completed", "v": 1})


# ------------------------------------------------------------------------------------ with the group coordinator
TXN_OFFSET_COMMIT, OFFSET_FETCH = 28, 9


def txn_commit(svc, pid, epoch, group, offset, version=3, partition=0) -> int:
    r = call(svc, TXN_OFFSET_COMMIT, version, {
        "transactional_id": TXN, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "orders", "partitions": [{"partition_index": partition, "committed_offset": offset,
                                                      "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    [code] = {p["error_code"] for t in r["topics"] for p in t["partitions"]}
    return code


def fetch_offset(svc, group, require_stable) -> tuple[int, int]:
    r = call(svc, OFFSET_FETCH, 7, {"group_id": group, "topics": [{"name": "orders", "partition_indexes": [0]}],
                                    "require_stable": require_stable})
    [p] = r["topics"][0]["partitions"]
    return p["error_code"], p["committed_offset"]


@pytest.mark.parametrize("commit", [True, False])
def test_send_offsets_to_transaction_end_to_end(commit):
    """TransactionsTest.testSendOffsetsWithGroupMetadata / OffsetMetadataManagerTest transactional cases,
    through both coordinators: AddOffsetsToTxn, TxnOffsetCommit (pending: UNSTABLE_OFFSET_COMMIT to a
    require_stable fetch), EndTxn, the marker in the group's offsets partition; the offset is committed
    by the commit and dropped by the abort."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    # a TxnOffsetCommit before AddOffsetsToTxn is refused (KIP-890 part 1's verification)
    assert txn_commit(svc, pid, epoch, "g", 7) == E.INVALID_TXN_STATE
    assert add_offsets(svc, pid, epoch, "g") == E.NONE
    assert txn_commit(svc, pid, epoch, "g", 7) == E.NONE
    assert fetch_offset(svc, "g", require_stable=True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    assert fetch_offset(svc, "g", require_stable=False) == (E.NONE, -1)
    assert end(svc, pid, epoch, commit=commit)["error_code"] == E.NONE
    settle(svc, clock)
    assert state(svc) == ("CompleteCommit" if commit else "CompleteAbort")
    assert fetch_offset(svc, "g", require_stable=True) == (E.NONE, 7 if commit else -1)


def test_transactions_v2_txn_offset_commit_adds_the_offsets_partition():
    """TxnOffsetCommit v5 (transactions V2): no AddOffsetsToTxn; the group coordinator's verification
    adds the group's offsets partition to the transaction (Kafka's ADD_PARTITION operation)."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    assert txn_commit(svc, pid, epoch, "g", 9, version=5) == E.NONE
    partition = svc.group_coordinator.partition_of("g")
    assert ("__consumer_offsets", partition) in svc.transactions.transactions[TXN].partitions
    r = end(svc, pid, epoch, version=5)
    assert r["error_code"] == E.NONE
    settle(svc, clock)
    assert fetch_offset(svc, "g", require_stable=True) == (E.NONE, 9)


# ------------------------------------------------------------------------------------ Produce v10-13
PRODUCE = 0


def produce_wire(svc, version, pid, epoch, partition=0, topic="orders", topic_id=None, node=0, seq=0) -> dict:
    batch = records.encode_batch([records.Record(offset_delta=0, timestamp_delta=0, key=None, value=b"v")],
                                 producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=pid >= 0)
    body = {"transactional_id": TXN if pid >= 0 else None, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "topic_id": topic_id,
                            "partition_data": [{"index": partition, "records": batch}]}]}
    return call(svc, PRODUCE, version, body, node=node)


@pytest.mark.parametrize("version,expected", [(10, E.INVALID_TXN_STATE), (11, E.TRANSACTION_ABORTABLE), (12, E.NONE)])
def test_produce_v12_adds_the_partition_to_the_transaction(version, expected):
    """Transactions V2 (KIP-890 part 2, ``ReplicaManager`` with ADD_PARTITION verification): a Produce v12
    of a transactional batch adds its partition to the transaction; before v12 a partition not added is
    refused (TRANSACTION_ABORTABLE from v11, INVALID_TXN_STATE before)."""
    svc, clock = service()
    _, pid, epoch = init(svc)
    [t] = produce_wire(svc, version, pid, epoch)["responses"]
    assert t["partition_responses"][0]["error_code"] == expected
    if version == 12:
        assert svc.transactions.transactions[TXN].partitions == {("orders", 0)}
        assert end(svc, pid, epoch, version=5)["error_code"] == E.NONE
        settle(svc, clock)
        assert control_batches(svc) == [(pid, epoch + 1, True)]


def test_produce_v13_names_topics_by_id_and_v10_names_the_new_leader():
    """ProduceRequest v13 (KIP-516): topics by id, UNKNOWN_TOPIC_ID for an id not known; v10 (KIP-951):
    NOT_LEADER_OR_FOLLOWER carries the partition's leader and its address."""
    svc, _ = service(nodes=2)
    topic_id = svc.topic_id("orders")
    [t] = produce_wire(svc, 13, -1, -1, topic="", topic_id=topic_id)["responses"]
    assert t["topic_id"] == topic_id and t["partition_responses"][0]["error_code"] == E.NONE
    [t] = produce_wire(svc, 13, -1, -1, topic="", topic_id=uuid.uuid4())["responses"]
    assert t["partition_responses"][0]["error_code"] == E.UNKNOWN_TOPIC_ID
    r = produce_wire(svc, 10, -1, -1, partition=1, node=0)
    [p] = r["responses"][0]["partition_responses"]
    assert p["error_code"] == E.NOT_LEADER_OR_FOLLOWER and p["current_leader"]["leader_id"] == 1
    assert [(n["node_id"], n["port"]) for n in r["node_endpoints"]] == [(1, svc.cluster.nodes[1].port)]


def test_a_producer_id_block_that_cannot_be_kept_fails_init_producer_id_cleanly(tmp_path):
    """ProducerIdManager: a block not written is not handed out (here a full disk: the metadata log's write
    fails), and the request gets a retriable error instead of a closed connection."""
    store = LogStore(str(tmp_path))
    svc, _ = service(store=store)

    def full(*_args):
        raise OSError(28, "No space left on device")
    store.put_producer_ids = full
    assert init(svc)[0] == E.COORDINATOR_NOT_AVAILABLE
    assert TXN not in svc.transactions.transactions
    store.close()


# ------------------------------------------------------------------------------------ the review's findings
def test_a_produce_partition_is_exactly_one_batch():
    """ProduceRequest.validateRecords (KafkaApis.handleProduceRequest): a partition's records are one batch
    of magic 2, else INVALID_RECORD and nothing appended. (Two batches, the second transactional under a
    producer id no coordinator knows, opened a transaction no marker would ever end: the LSO stuck.)"""
    svc, _ = service()
    first = records.encode_batch([records.Record(0, 0, None, b"a", [])], producer_id=5000, producer_epoch=0,
                                 base_sequence=0)
    second = records.encode_batch([records.Record(0, 0, None, b"b", [])], producer_id=5001, producer_epoch=0,
                                  base_sequence=0, transactional=True)

    def produce(data) -> int:
        r = call(svc, PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
            {"name": "orders", "partition_data": [{"index": 0, "records": data}]}]})
        return r["responses"][0]["partition_responses"][0]["error_code"]
    assert produce(first + second) == E.INVALID_RECORD
    assert produce(b"") == E.INVALID_RECORD
    log = svc.cluster.log("orders", 0)
    assert (log.log_end_offset, log.last_stable_offset, log.ongoing_transactions) == (0, 0, {})
    assert produce(first) == E.NONE


def test_markers_are_retried_when_the_offsets_log_cannot_be_written(tmp_path):
    """TransactionMarkerChannelManager retries a marker until it is written: an offsets log write that fails
    once (a full disk) leaves the transaction in PrepareCommit only until the next try, and the committed
    offset is on disk after a restart. (The error escaped the timer: the transaction stayed PrepareCommit.)"""
    store = LogStore(str(tmp_path))
    svc, clock = service(store=store)
    _, pid, epoch = init(svc)
    add(svc, pid, epoch, ("orders", 0))
    assert produce_txn(svc, pid, epoch) == E.NONE
    assert add_offsets(svc, pid, epoch, "g") == E.NONE
    assert txn_commit(svc, pid, epoch, "g", 1) == E.NONE
    real_append, failures = store.append, []

    def full_once(partition, recs):
        if not failures:
            failures.append(partition)
            raise OSError(28, "No space left on device")
        return real_append(partition, recs)
    store.append = full_once
    assert end(svc, pid, epoch)["error_code"] == E.NONE
    settle(svc, clock)
    assert failures and state(svc) == "PrepareCommit"
    settle(svc, clock, 100)
    assert state(svc) == "CompleteCommit"
    assert svc.cluster.log("orders", 0).last_stable_offset == svc.cluster.log("orders", 0).log_end_offset
    store.close()
    store2 = LogStore(str(tmp_path))
    svc2, _ = service(store=store2)
    svc2.load()
    assert fetch_offset(svc2, "g", require_stable=True) == (E.NONE, 1)
    store2.close()


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 2000 + ")" * 2000, "(", "[z-a]"])
def test_a_pattern_that_is_no_regular_expression_is_refused(pattern):
    """TransactionStateManager.listTransactionStates: INVALID_REGULAR_EXPRESSION for any pattern that does not
    compile (Python's re raised OverflowError or RecursionError for some, out of the handler)."""
    svc, _ = service()
    init(svc)
    r = call(svc, LIST_TXNS, 2, {"state_filters": [], "producer_id_filters": [], "transactional_id_pattern": pattern})
    assert r["error_code"] == E.INVALID_REGULAR_EXPRESSION and r["transaction_states"] == []


def test_init_producer_id_with_the_epochs_exhausted_and_a_stale_epoch():
    """TransactionCoordinator.prepareInitProducerIdTransit: prepareIncrementProducerEpoch's
    IllegalStateException is UNKNOWN_SERVER_ERROR (it raised out of the handler here); with the current epoch
    the producer id is rotated instead."""
    svc, _ = service()
    _, pid, _ = init(svc)
    svc.transactions.transactions[TXN].producer_epoch = 32766
    svc.transactions.transactions[TXN].last_producer_epoch = 32765
    assert init(svc, pid=pid, epoch=5)[0] == E.UNKNOWN_SERVER_ERROR
    error, new_pid, new_epoch = init(svc, pid=pid, epoch=32766)
    assert (error, new_epoch) == (E.NONE, 0) and new_pid != pid


def test_idle_producers_are_forgotten_by_the_partitions():
    """ProducerStateManager.removeExpiredProducers (producer.id.expiration.ms): an idle producer's state goes,
    one with an open transaction stays."""
    svc, clock = service(**{"producer.id.expiration.ms": 60_000, "producer.id.expiration.check.interval.ms": 10_000})
    _, pid, epoch = init(svc)
    add(svc, pid, epoch, ("orders", 0))
    batch = records.encode_batch([records.Record(0, 0, None, b"i", [])], base_timestamp=clock.now,
                                 producer_id=7, producer_epoch=0, base_sequence=0)
    assert svc.cluster.append("orders", 0, batch)[0] == E.NONE
    txn = records.encode_batch([records.Record(0, 0, None, b"t", [])], base_timestamp=clock.now,
                               producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    assert svc.cluster.append("orders", 0, txn)[0] == E.NONE
    state_ = svc.cluster.log("orders", 0).producer_state
    settle(svc, clock, 70_000)
    assert set(state_.producers) == {pid}
