"""Transactions on the data plane (issue 32) through the handlers: Produce's transactional checks and
KIP-890 verification, read_committed Fetch (LSO, aborted transactions, a parked fetch woken by a marker),
ListOffsets per isolation level, WriteTxnMarkers (in-process and over the wire), and all of it after a
restart with a data dir. Each test names the Kafka 4.3 test or code it mirrors."""
from __future__ import annotations

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.cluster import OFFSETS_TOPIC
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.handlers.produce import verification_error
from groupcoord.coordinator.service import Service
from groupcoord.protocol import records
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.records import Record, encode_batch

from test_server import Client

PRODUCE, FETCH, LIST_OFFSETS, WRITE_TXN_MARKERS = 0, 1, 2, 27


def service(directory=None) -> Service:
    svc = Service(BrokerConfig({"num.partitions": 2}, profile="test", environ={}), clock=lambda: 7000,
                  emit=lambda e: None, store=None if directory is None else st.LogStore(str(directory)))
    if "t" not in svc.cluster.topics:
        svc.cluster.create_topic("t", 2)
    svc.transactions = Transactions(None)       # every partition is in its producer's transaction
    return svc


def call(svc, api_key, version, body, correlation_id=1):
    out = []
    svc.handle(RequestContext(svc, 0, "test", "/127.0.0.1", api_key, version, correlation_id), body, out.append)
    return out[0] if out else None


def batch(n, pid=-1, epoch=-1, seq=-1, transactional=False, ts=1000):
    return encode_batch([Record(i, i, None, b"v%d" % i, []) for i in range(n)], base_timestamp=ts,
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)


def produce(svc, data, transactional_id="tx", partition=0, version=9):
    body = {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": partition, "records": data}]}]}
    part = call(svc, PRODUCE, version, body)["responses"][0]["partition_responses"][0]
    return part["error_code"], part["base_offset"]


def fetch_body(offset, isolation, partition=0, max_wait_ms=0):
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [{"partition": partition, "fetch_offset": offset,
                                                     "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def fetch(svc, offset, isolation):
    return call(svc, FETCH, 11, fetch_body(offset, isolation))["responses"][0]["partitions"][0]


def bases(part):
    return [h.base_offset for h, _ in records.iter_batches(part["records"])]


def markers_body(pid, epoch, commit, topic="t", partitions=(0,), coordinator_epoch=0):
    return {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                         "topics": [{"name": topic, "partition_indexes": list(partitions)}],
                         "coordinator_epoch": coordinator_epoch, "transaction_version": 0}]}


def marker_codes(resp):
    return [(t["name"], p["partition_index"], p["error_code"]) for m in resp["markers"] for t in m["topics"]
            for p in t["partitions"]]


def list_offset(svc, ts, isolation, version=7):
    r = call(svc, LIST_OFFSETS, version, {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}]}]})
    part = r["topics"][0]["partitions"][0]
    return part["error_code"], part["offset"]


class Transactions:
    """A stand-in for the transaction coordinator's verify_partition (the interface of the design)."""

    def __init__(self, answer=None):
        self.answer, self.calls = answer, []

    def verify_partition(self, transactional_id, producer_id, producer_epoch, topic, partition, add=False):
        self.calls.append((transactional_id, producer_id, producer_epoch, topic, partition))
        return self.answer


# ---- Produce ---------------------------------------------------------------------------------------------
def test_transactional_produce_without_transactional_id_is_refused():
    """KafkaApis.handleProduceRequest: transactional records with a null transactional id fail the whole
    request with TRANSACTIONAL_ID_AUTHORIZATION_FAILED"""
    svc = service()
    assert produce(svc, batch(1, 5, 0, 0, transactional=True), transactional_id=None) == \
        (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
    assert svc.cluster.log("t", 0).log_end_offset == 0


def test_produce_verifies_a_partition_once_per_transaction():
    """ReplicaManager.handleProduceAppend / UnifiedLog.maybeStartTransactionVerification: the first
    transactional batch of a partition is verified with the transaction coordinator, the next ones of the
    ongoing transaction are not; a refused one is not appended"""
    svc = service()
    svc.transactions = Transactions(ErrorCode.TRANSACTION_ABORTABLE)
    assert produce(svc, batch(1, 5, 0, 0, transactional=True)) == (ErrorCode.INVALID_TXN_STATE, -1)
    assert produce(svc, batch(1, 5, 0, 0, transactional=True), version=11) == \
        (ErrorCode.TRANSACTION_ABORTABLE, -1)
    assert svc.cluster.log("t", 0).log_end_offset == 0
    svc.transactions = Transactions(None)
    assert produce(svc, batch(2, 5, 0, 0, transactional=True)) == (ErrorCode.NONE, 0)
    assert produce(svc, batch(1, 5, 0, 2, transactional=True)) == (ErrorCode.NONE, 2)
    assert svc.transactions.calls == [("tx", 5, 0, "t", 0)]
    assert produce(svc, batch(1, 5, 0, 2, transactional=True)) == (ErrorCode.NONE, 2)      # a duplicate
    # idempotent, not transactional: no verification, sequence checks still
    assert produce(svc, batch(1, 6, 0, 0), transactional_id=None) == (ErrorCode.NONE, 3)
    assert produce(svc, batch(1, 6, 0, 3), transactional_id=None) == \
        (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    assert len(svc.transactions.calls) == 1


def test_verification_errors_per_produce_version():
    """AddPartitionsToTxnManager (PRODUCER_FENCED, TRANSACTION_ABORTABLE before v11) and
    ReplicaManager.handleProduceAppend's postVerificationCallback (NOT_ENOUGH_REPLICAS)"""
    assert verification_error(9, ErrorCode.PRODUCER_FENCED) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert verification_error(10, ErrorCode.TRANSACTION_ABORTABLE) == ErrorCode.INVALID_TXN_STATE
    assert verification_error(11, ErrorCode.TRANSACTION_ABORTABLE) == ErrorCode.TRANSACTION_ABORTABLE
    assert verification_error(9, ErrorCode.NOT_COORDINATOR) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert verification_error(11, ErrorCode.CONCURRENT_TRANSACTIONS) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert verification_error(12, ErrorCode.CONCURRENT_TRANSACTIONS) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert verification_error(9, ErrorCode.INVALID_TXN_STATE) == ErrorCode.INVALID_TXN_STATE


def test_stale_epoch_is_refused_before_verification():
    """UnifiedLog.maybeStartTransactionVerification: an epoch older than the producer's is
    INVALID_PRODUCER_EPOCH without asking the coordinator"""
    svc = service()
    assert produce(svc, batch(1, 5, 2, 0, transactional=True)) == (ErrorCode.NONE, 0)
    assert call(svc, WRITE_TXN_MARKERS, 1, markers_body(5, 2, False)) is not None
    svc.transactions.calls.clear()
    assert produce(svc, batch(1, 5, 1, 0, transactional=True)) == (ErrorCode.INVALID_PRODUCER_EPOCH, -1)
    assert svc.transactions.calls == []


# ---- Fetch and ListOffsets -------------------------------------------------------------------------------
def test_read_committed_fetch_stops_at_the_lso_and_lists_aborted_transactions():
    """UnifiedLogTest.testFetchUpToLastStableOffset, LocalLog.addAbortedTransactions and KafkaApis' fetch
    response (read_uncommitted: null aborted transactions; the LSO in both)"""
    svc = service()
    assert produce(svc, batch(2, 5, 0, 0, transactional=True)) == (ErrorCode.NONE, 0)
    assert produce(svc, batch(1)) == (ErrorCode.NONE, 2)
    assert produce(svc, batch(2, 6, 0, 0, transactional=True)) == (ErrorCode.NONE, 3)
    part = fetch(svc, 0, 1)
    assert (part["last_stable_offset"], part["high_watermark"], part["records"]) == (0, 5, b"")
    assert part["aborted_transactions"] == []
    uncommitted = fetch(svc, 0, 0)
    assert bases(uncommitted) == [0, 2, 3] and uncommitted["aborted_transactions"] is None
    assert uncommitted["last_stable_offset"] == 0
    assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, markers_body(5, 0, False))) == [("t", 0, 0)]   # 5
    part = fetch(svc, 0, 1)
    assert part["last_stable_offset"] == 3 and bases(part) == [0, 2]
    assert part["aborted_transactions"] == [{"producer_id": 5, "first_offset": 0}]
    assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, markers_body(6, 0, True))) == [("t", 0, 0)]    # 6
    part = fetch(svc, 3, 1)
    assert part["last_stable_offset"] == 7 and bases(part) == [3, 5, 6]
    assert part["aborted_transactions"] == [{"producer_id": 5, "first_offset": 0}]      # (its marker: 5)
    part = fetch(svc, 6, 1)
    assert bases(part) == [6] and part["aborted_transactions"] == []


def test_parked_read_committed_fetch_wakes_when_the_lso_moves():
    """DelayedFetch: a read_committed fetch with nothing below the LSO waits; transactional data does
    not answer it, the commit marker (an append) does"""
    svc = service()
    assert produce(svc, batch(2, 5, 0, 0, transactional=True)) == (ErrorCode.NONE, 0)
    out = []
    svc.handle(RequestContext(svc, 0, "test", "/127.0.0.1", FETCH, 11, 9), fetch_body(0, 1, max_wait_ms=30000),
               out.append)
    assert out == []
    assert produce(svc, batch(1, 5, 0, 2, transactional=True)) == (ErrorCode.NONE, 2)
    assert out == []
    assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, markers_body(5, 0, True))) == [("t", 0, 0)]
    part = out[0]["responses"][0]["partitions"][0]
    assert part["last_stable_offset"] == 4 and bases(part) == [0, 2, 3]


def test_list_offsets_per_isolation_level():
    """Partition.fetchOffsetForTimestamp (lastFetchableOffset) and ReplicaManager.fetchOffset: latest is the
    LSO for read_committed; a timestamp found at or past it answers -1"""
    svc = service()
    assert produce(svc, batch(2, ts=1000)) == (ErrorCode.NONE, 0)
    assert produce(svc, batch(2, 5, 0, 0, transactional=True, ts=2000)) == (ErrorCode.NONE, 2)
    assert list_offset(svc, -1, 0) == (0, 4)
    assert list_offset(svc, -1, 1) == (0, 2)
    assert list_offset(svc, -2, 1) == (0, 0)
    assert list_offset(svc, 1001, 1) == (0, 1)
    assert list_offset(svc, 2000, 0) == (0, 2)
    assert list_offset(svc, 2000, 1) == (0, -1)
    assert list_offset(svc, -3, 1) == (0, -1)          # the max timestamp is in the open transaction
    call(svc, WRITE_TXN_MARKERS, 1, markers_body(5, 0, True))
    assert list_offset(svc, -1, 1) == (0, 5)
    assert list_offset(svc, 2000, 1) == (0, 2)


# ---- WriteTxnMarkers -------------------------------------------------------------------------------------
class GroupCoordinatorStub:
    def __init__(self, code=0):
        self.code, self.calls = code, []

    def complete_transaction(self, offsets_partition, producer_id, producer_epoch, commit):
        self.calls.append((offsets_partition, producer_id, producer_epoch, commit))
        return self.code


def test_write_txn_markers_to_the_offsets_topic():
    """KafkaApis.handleWriteTxnMarkersRequest: __consumer_offsets partitions go to the group coordinator's
    completeTransaction (NOT_COORDINATOR answered NOT_LEADER_OR_FOLLOWER); without it, unknown"""
    svc = service()
    body = markers_body(5, 0, True, topic=OFFSETS_TOPIC, partitions=(3,))
    if not hasattr(svc.group_coordinator, "complete_transaction"):
        assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, body)) == \
            [(OFFSETS_TOPIC, 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    stub = svc.group_coordinator = GroupCoordinatorStub()
    assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, body)) == [(OFFSETS_TOPIC, 3, 0)]
    assert stub.calls == [(3, 5, 0, True)]
    stub.code = ErrorCode.NOT_COORDINATOR
    assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, body)) == [(OFFSETS_TOPIC, 3, ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert marker_codes(call(svc, WRITE_TXN_MARKERS, 1, markers_body(5, 0, True, topic="nope"))) == \
        [("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


async def test_write_txn_markers_over_the_wire():
    """WriteTxnMarkersRequestTest (v1 and v2 frames): a marker per partition; an older epoch refused"""
    async with running(topics={"t": 2}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        cluster = gc.service.cluster
        assert cluster.append("t", 0, batch(2, 9, 1, 0, transactional=True)) == (ErrorCode.NONE, 0)
        r = await c.call(WRITE_TXN_MARKERS, 1, markers_body(9, 0, False, partitions=(0, 1)))
        assert marker_codes(r) == [("t", 0, ErrorCode.INVALID_PRODUCER_EPOCH), ("t", 1, 0)]
        r = await c.call(WRITE_TXN_MARKERS, 2, markers_body(9, 1, False, partitions=(0,)))
        assert marker_codes(r) == [("t", 0, 0)]
        log = cluster.log("t", 0)
        assert log.last_stable_offset == log.log_end_offset == 3
        assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_transactions(0, 3)] == [(9, 0, 2)]
        c.close()


# ---- durability ------------------------------------------------------------------------------------------
def test_transactions_and_producers_come_back_after_a_restart(tmp_path):
    """UnifiedLogTest.testRebuildTransactionalState: the log replayed at load gives the same ongoing
    transactions, aborted index, LSO and duplicates as before"""
    svc = service(tmp_path)
    assert produce(svc, batch(2, 5, 0, 0, transactional=True)) == (ErrorCode.NONE, 0)
    assert produce(svc, batch(1, 7, 0, 0), transactional_id=None) == (ErrorCode.NONE, 2)
    assert produce(svc, batch(2, 6, 0, 0, transactional=True)) == (ErrorCode.NONE, 3)
    call(svc, WRITE_TXN_MARKERS, 1, markers_body(5, 0, False, coordinator_epoch=4))              # 5
    assert produce(svc, batch(1, 6, 0, 2, transactional=True)) == (ErrorCode.NONE, 6)
    before = svc.cluster.log("t", 0)
    expected = (before.last_stable_offset, before.ongoing_transactions, before.aborted_transactions(0, 100))
    assert expected[0] == 3 and expected[1] == {6: 3}
    svc.store.close()

    again = service(tmp_path)
    log = again.cluster.log("t", 0)
    assert (log.last_stable_offset, log.ongoing_transactions, log.aborted_transactions(0, 100)) == expected
    assert produce(again, batch(1, 7, 0, 0), transactional_id=None) == (ErrorCode.NONE, 2)        # duplicate
    assert produce(again, batch(1, 6, 0, 2, transactional=True)) == (ErrorCode.NONE, 6)
    assert marker_codes(call(again, WRITE_TXN_MARKERS, 1, markers_body(5, 0, True, coordinator_epoch=3))) == \
        [("t", 0, ErrorCode.TRANSACTION_COORDINATOR_FENCED)]
    part = fetch(again, 0, 1)
    assert bases(part) == [0, 2] and part["aborted_transactions"] == [{"producer_id": 5, "first_offset": 0}]
    call(again, WRITE_TXN_MARKERS, 1, markers_body(6, 0, True))
    assert fetch(again, 0, 1)["last_stable_offset"] == log.log_end_offset == 8
    again.store.close()
