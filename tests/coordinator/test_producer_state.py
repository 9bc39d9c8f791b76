"""Producer state of a partition (issue 32, data plane): sequences, duplicates, epochs, transactions, the
last stable offset and the aborted-transactions index, against coordinator/producers.py and the Cluster
directly. Each test names the Kafka 4.3 test it mirrors (ProducerStateManagerTest, UnifiedLogTest,
LogValidatorTest)."""
from __future__ import annotations

import pytest

from groupcoord.coordinator.cluster import Cluster, Node
from groupcoord.coordinator.producers import (ABORT, COMMIT, INT32_MAX, AbortedTxn, CompletedTxn, Origin,
                                              ProducerStateError, ProducerStateManager)
from groupcoord.protocol import records
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.records import Record, encode_batch

PID, EPOCH = 1, 0


# ---- ProducerStateManagerTest -------------------------------------------------------------------------
def append(mgr, pid, epoch, seq, offset, transactional=False, origin=Origin.CLIENT, last_seq=None, last_offset=None):
    info = mgr.prepare_update(pid, origin)
    info.append_data_batch(epoch, seq, seq if last_seq is None else last_seq, 0, offset,
                           offset if last_offset is None else last_offset, transactional)
    mgr.update(info)


def marker(mgr, pid, epoch, control, offset, coordinator_epoch=0, transaction_version=0):
    info = mgr.prepare_update(pid, Origin.COORDINATOR)
    done = info.append_end_txn_marker(control, coordinator_epoch, epoch, offset, 0, transaction_version)
    mgr.update(info)
    if done is not None:
        mgr.complete_txn(done)
    return done


def raises(code, fn, *args, **kwargs):
    with pytest.raises(ProducerStateError) as exc:
        fn(*args, **kwargs)
    assert exc.value.code == code


def test_basic_id_mapping():
    """ProducerStateManagerTest.testBasicIdMapping"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, EPOCH, 0, 0)
    append(mgr, PID, EPOCH, 1, 1)
    raises(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, mgr, PID, EPOCH, 1, 1)     # (duplicates: checked apart)
    raises(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, mgr, PID, EPOCH, 5, 2)
    append(mgr, PID, EPOCH + 1, 0, 3)                                                  # a new epoch at 0
    raises(ErrorCode.INVALID_PRODUCER_EPOCH, append, mgr, PID, EPOCH, 0, 4)


def test_append_txn_marker_with_no_producer_state():
    """ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState"""
    mgr = ProducerStateManager("t-0")
    assert marker(mgr, PID, 2, COMMIT, 27) is None
    entry = mgr.last_entry(PID)
    assert (entry.producer_epoch, entry.last_seq) == (2, -1)
    raises(ErrorCode.INVALID_PRODUCER_EPOCH, append, mgr, PID, 0, 0, 28)
    raises(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, mgr, PID, 2, 17, 28)
    append(mgr, PID, 2, 0, 28)
    assert mgr.last_entry(PID).last_seq == 0


def test_sequence_wraps_around_at_int32_max():
    """ProducerStateManagerTest.testProducerSequenceWrapAround, ...WithWrapAroundBatchRecord,
    ...InvalidWrapAround"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, 15, INT32_MAX, 735, origin=Origin.REPLICATION)
    raises(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, mgr, PID, 15, 1, 1235)
    append(mgr, PID, 15, 0, 1235)
    entry = mgr.last_entry(PID)
    assert (entry.first_seq, entry.last_seq) == (INT32_MAX, 0)

    mgr = ProducerStateManager("t-0")
    append(mgr, PID, 15, INT32_MAX - 10, 2000, origin=Origin.REPLICATION, last_seq=9, last_offset=2020)
    entry = mgr.last_entry(PID)
    assert (entry.first_seq, entry.last_seq) == (INT32_MAX - 10, 9)
    assert (entry.batches[0].first_offset, entry.batches[-1].last_offset) == (2000, 2020)


def test_no_validation_on_first_entry_when_loading_log():
    """ProducerStateManagerTest.testNoValidationOnFirstEntryWhenLoadingLog (and an unknown producer id
    takes any sequence from a client: ProducerAppendInfo.checkSequence, NO_PRODUCER_EPOCH)"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, 5, 16, 735, origin=Origin.REPLICATION)
    assert (mgr.last_entry(PID).first_seq, mgr.last_entry(PID).producer_epoch) == (16, 5)
    append(mgr, 2, 0, 42, 736)
    assert mgr.last_entry(2).last_seq == 42


def test_control_record_bumps_producer_epoch():
    """ProducerStateManagerTest.testControlRecordBumpsProducerEpoch"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, EPOCH, 0, 0)
    marker(mgr, PID, 1, ABORT, 1)
    entry = mgr.last_entry(PID)
    assert (entry.producer_epoch, entry.current_txn_first_offset, entry.first_seq) == (1, None, -1)
    append(mgr, PID, 1, 0, 2)
    assert mgr.last_entry(PID).first_seq == 0


def test_out_of_sequence_after_control_record_epoch_bump():
    """ProducerStateManagerTest.testOutOfSequenceAfterControlRecordEpochBump"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, EPOCH, 0, 0, transactional=True)
    append(mgr, PID, EPOCH, 1, 1, transactional=True)
    marker(mgr, PID, 1, ABORT, 2)
    raises(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, mgr, PID, 1, 2, 3, transactional=True)
    raises(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, mgr, PID, 2, 2, 3, transactional=True)
    append(mgr, PID, 1, 0, 3, transactional=True)
    assert (mgr.last_entry(PID).producer_epoch, mgr.last_entry(PID).last_seq) == (1, 0)


def test_non_transactional_append_with_ongoing_transaction():
    """ProducerStateManagerTest.testNonTransactionalAppendWithOngoingTransaction"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, EPOCH, 0, 0, transactional=True)
    raises(ErrorCode.INVALID_TXN_STATE, append, mgr, PID, EPOCH, 1, 1)


def test_prepare_update_does_not_mutate():
    """ProducerStateManagerTest.testPrepareUpdateDoesNotMutate"""
    mgr = ProducerStateManager("t-0")
    info = mgr.prepare_update(PID, Origin.CLIENT)
    info.append_data_batch(EPOCH, 0, 5, 0, 15, 20, False)
    assert mgr.last_entry(PID) is None
    mgr.update(info)
    info = mgr.prepare_update(PID, Origin.CLIENT)
    info.append_data_batch(EPOCH, 6, 10, 0, 21, 25, False)
    assert mgr.last_entry(PID).last_seq == 5
    mgr.update(info)
    assert (mgr.last_entry(PID).first_seq, mgr.last_entry(PID).last_seq) == (0, 10)


@pytest.mark.parametrize("transaction_version", [0, 2])
def test_old_epoch_for_control_record(transaction_version):
    """ProducerStateManagerTest.testOldEpochForControlRecord"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, 5, 0, 99, transactional=True)
    raises(ErrorCode.INVALID_PRODUCER_EPOCH, marker, mgr, PID, 3, COMMIT, 100,
           transaction_version=transaction_version)
    if transaction_version >= 2:
        raises(ErrorCode.INVALID_PRODUCER_EPOCH, marker, mgr, PID, 5, COMMIT, 100, transaction_version=2)
    else:
        marker(mgr, PID, 5, COMMIT, 100)


def test_coordinator_fencing():
    """ProducerStateManagerTest.testCoordinatorFencing (TV0)"""
    mgr = ProducerStateManager("t-0")
    append(mgr, PID, 5, 0, 99, transactional=True)
    marker(mgr, PID, 5, COMMIT, 100, coordinator_epoch=1)
    assert mgr.last_entry(PID).coordinator_epoch == 1
    marker(mgr, PID, 5, COMMIT, 101, coordinator_epoch=1)
    marker(mgr, PID, 5, COMMIT, 102, coordinator_epoch=2)
    raises(ErrorCode.TRANSACTION_COORDINATOR_FENCED, marker, mgr, PID, 5, COMMIT, 103, coordinator_epoch=1)


def test_last_stable_offset_completed_txn():
    """ProducerStateManagerTest.testLastStableOffsetCompletedTxn"""
    mgr = ProducerStateManager("t-0")
    s1, s2, s3 = 992342, 992342 + 25, 992342 + 57
    for pid, start in ((1, s1), (2, s2), (3, s3)):
        append(mgr, pid, 0, 0, start, transactional=True)
    last1 = s3 + 15
    done1 = CompletedTxn(1, s1, last1, False)
    assert mgr.last_stable_offset(done1) == s2
    mgr.complete_txn(done1)
    assert mgr.first_undecided_offset() == s2
    done3 = CompletedTxn(3, s3, last1 + 20, False)
    assert mgr.last_stable_offset(done3) == s2
    mgr.complete_txn(done3)
    done2 = CompletedTxn(2, s2, last1 + 98, False)
    assert mgr.last_stable_offset(done2) == last1 + 99
    mgr.complete_txn(done2)
    assert mgr.first_undecided_offset() is None


def test_skip_empty_transactions():
    """ProducerStateManagerTest.testSkipEmptyTransactions"""
    mgr = ProducerStateManager("t-0")
    seq = iter(range(100))

    def data(info, first, last):
        s = next(seq)
        for _ in range(first, last):
            next(seq)
        info.append_data_batch(EPOCH, s, s + last - first, 0, first, last, True)

    def end(info, control, offset):
        return info.append_end_txn_marker(control, 0, EPOCH, offset, 0)

    first = mgr.prepare_update(PID, Origin.CLIENT)
    data(first, 16, 20)
    assert first.started_transactions == [16]
    mgr.update(first)
    assert mgr.first_undecided_offset() == 16
    second = mgr.prepare_update(PID, Origin.CLIENT)
    done1 = end(second, COMMIT, 21)
    assert done1 == CompletedTxn(PID, 16, 21, False)
    assert end(second, COMMIT, 22) is None and end(second, ABORT, 23) is None
    data(second, 24, 27)
    done2 = end(second, ABORT, 28)
    assert done2 is not None and end(second, ABORT, 29) is None
    data(second, 30, 31)
    assert second.started_transactions == [24, 30]
    mgr.update(second)
    mgr.complete_txn(done1)
    mgr.complete_txn(done2)
    assert mgr.first_undecided_offset() == 30


# ---- the Cluster's partitions (UnifiedLogTest, LogValidatorTest) ----------------------------------------
def cluster() -> Cluster:
    c = Cluster([Node(0, "localhost", 9092)], clock=lambda: 5000)
    c.create_topic("t", 1)
    return c


def batch(n, pid=-1, epoch=-1, seq=-1, transactional=False, value=b"v"):
    return encode_batch([Record(i, 0, None, value, []) for i in range(n)], base_timestamp=1000,
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)


class Txn:
    """LogTestUtils.appendTransactionalAsLeader: each call appends n records of the producer's transaction."""

    def __init__(self, c, pid, epoch=0):
        self.c, self.pid, self.epoch, self.seq = c, pid, epoch, 0

    def __call__(self, n):
        code, base = self.c.append("t", 0, batch(n, self.pid, self.epoch, self.seq, transactional=True))
        assert code == ErrorCode.NONE
        self.seq += n
        return base


def plain(c, n):
    code, base = c.append("t", 0, batch(n))
    assert code == ErrorCode.NONE
    return base


def test_transaction_index_updated():
    """UnifiedLogTest.testTransactionIndexUpdated: the aborted transactions with the LSO after each, and
    the first unstable offset as the markers come"""
    c = cluster()
    log = c.log("t", 0)
    p1, p2, p3, p4 = (Txn(c, pid) for pid in (1, 2, 3, 4))
    p1(5)
    plain(c, 3)
    p2(2)
    p1(4)
    p3(3)
    plain(c, 2)
    p1(10)
    assert log.last_stable_offset == 0
    assert c.write_marker("t", 0, 1, 0, False, 0) == ErrorCode.NONE            # 29
    assert log.last_stable_offset == 8
    p2(6)
    p4(3)
    plain(c, 10)
    p3(9)
    assert c.write_marker("t", 0, 3, 0, True, 0) == ErrorCode.NONE             # 58
    p4(8)
    p2(7)
    assert c.write_marker("t", 0, 2, 0, False, 0) == ErrorCode.NONE            # 74
    assert log.last_stable_offset == 36
    plain(c, 10)
    p4(4)
    assert c.write_marker("t", 0, 4, 0, True, 0) == ErrorCode.NONE             # 89
    assert log.producer_state.aborted.entries == [AbortedTxn(1, 0, 29, 8), AbortedTxn(2, 8, 74, 36)]
    assert log.last_stable_offset == log.log_end_offset == 90
    assert log.ongoing_transactions == {}


def test_fetch_up_to_last_stable_offset():
    """UnifiedLogTest.testFetchUpToLastStableOffset: read_committed reads whole batches below the LSO only"""
    c = cluster()
    log = c.log("t", 0)
    p1, p2 = Txn(c, 1), Txn(c, 2)
    p1(5)
    plain(c, 3)
    p2(2)
    p1(4)
    plain(c, 2)
    p1(10)
    assert log.last_stable_offset == 0
    assert log.read_committed(0, 1 << 20) == (b"", [])
    assert c.write_marker("t", 0, 1, 0, True, 0) == ErrorCode.NONE
    assert log.last_stable_offset == 8
    data, aborted = log.read_committed(0, 1 << 20)
    assert [h.base_offset for h, _ in records.iter_batches(data)] == [0, 5] and aborted == []
    assert log.read_committed(8, 1 << 20) == (b"", [])
    assert c.write_marker("t", 0, 2, 0, False, 0) == ErrorCode.NONE
    assert log.last_stable_offset == log.log_end_offset
    data, aborted = log.read_committed(6, 1 << 20)
    bases = [h.base_offset for h, _ in records.iter_batches(data)]
    assert bases == [5, 8, 10, 14, 16, 26, 27]
    assert [(a.producer_id, a.first_offset) for a in aborted] == [(2, 8)]
    # a read that stops before the aborted transaction does not list it (LocalLog.addAbortedTransactions)
    _, aborted = log.read_committed(0, 1)
    assert aborted == []


def test_duplicate_appends():
    """UnifiedLogTest.testDuplicateAppends: a duplicate of one of the last five batches answers the offset it
    got; a partial or older duplicate is out of order"""
    c = cluster()
    for seq in range(6):
        assert c.append("t", 0, batch(1, PID, EPOCH, seq)) == (ErrorCode.NONE, seq)
    multi = batch(3, PID, EPOCH, 6)
    assert c.append("t", 0, multi) == (ErrorCode.NONE, 6)
    assert c.append("t", 0, multi) == (ErrorCode.NONE, 6)
    assert c.log("t", 0).log_end_offset == 9
    assert c.append("t", 0, batch(2, PID, EPOCH, 7))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert c.append("t", 0, batch(1, PID, EPOCH, 2)) == (ErrorCode.NONE, 2)        # 4th from the tail
    assert c.append("t", 0, batch(1, PID, EPOCH, 1))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert c.append("t", 0, batch(1, PID, EPOCH, 9)) == (ErrorCode.NONE, 9)
    assert c.append("t", 0, batch(1, PID, EPOCH, 9)) == (ErrorCode.NONE, 9)
    assert c.log("t", 0).log_end_offset == 10


def test_old_producer_epoch():
    """UnifiedLogTest.testOldProducerEpoch"""
    c = cluster()
    assert c.append("t", 0, batch(1, PID, 1, 0))[0] == ErrorCode.NONE
    assert c.append("t", 0, batch(1, PID, 0, 0)) == (ErrorCode.INVALID_PRODUCER_EPOCH, -1)


def test_a_produce_of_several_batches_is_all_or_nothing():
    """UnifiedLog.analyzeAndValidateProducerState checks every batch before any is appended"""
    c = cluster()
    log = c.log("t", 0)
    assert c.append("t", 0, batch(1, PID, EPOCH, 0)) == (ErrorCode.NONE, 0)
    assert c.append("t", 0, batch(1, PID, EPOCH, 1) + batch(1, PID, EPOCH, 5)) == \
        (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    assert log.log_end_offset == 1 and log.producer_state.last_entry(PID).last_seq == 0
    assert c.append("t", 0, batch(1, PID, EPOCH, 1) + batch(2, PID, EPOCH, 2)) == (ErrorCode.NONE, 1)
    assert log.producer_state.last_entry(PID).last_seq == 3


def test_client_batches_checked_as_log_validator_does():
    """LogValidatorTest.testControlRecordsNotAllowedFromClients, testInvalidSequence (INVALID_RECORD)"""
    c = cluster()
    control = encode_batch([Record(0, 0, b"\0\0\0\1", b"\0\0\0\0\0\0", [])], base_timestamp=0, producer_id=PID,
                           producer_epoch=0, transactional=True, control=True)
    assert c.append("t", 0, control) == (ErrorCode.INVALID_RECORD, -1)
    assert c.append("t", 0, batch(1, PID, EPOCH, -1)) == (ErrorCode.INVALID_RECORD, -1)
    assert c.log("t", 0).log_end_offset == 0


def test_transactional_batch_of_a_stale_epoch_is_refused():
    """UnifiedLogTest.testStaleProducerEpochReturnsRecoverableErrorForTV1Clients: INVALID_PRODUCER_EPOCH"""
    c = cluster()
    assert c.write_marker("t", 0, PID, 3, False, 0) == ErrorCode.NONE      # the producer was fenced at epoch 3
    assert c.append("t", 0, batch(1, PID, 2, 0, transactional=True)) == (ErrorCode.INVALID_PRODUCER_EPOCH, -1)
    log = c.log("t", 0)
    with pytest.raises(ProducerStateError):
        log.transaction_verification_needed(PID, 2)
    assert log.transaction_verification_needed(PID, 3)
    assert c.append("t", 0, batch(1, PID, 3, 0, transactional=True))[0] == ErrorCode.NONE
    assert not log.transaction_verification_needed(PID, 3)           # ongoing: nothing to verify


def test_marker_epochs():
    """UnifiedLogTest.testEndTxnWithFencedProducerEpoch and testZombieCoordinatorFencedEmptyTransaction"""
    c = cluster()
    Txn(c, PID, epoch=1)(2)
    assert c.write_marker("t", 0, PID, 0, True, 0) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert c.write_marker("t", 0, PID, 1, True, 0, transaction_version=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert c.log("t", 0).log_end_offset == 2
    assert c.write_marker("t", 0, PID, 1, False, 5) == ErrorCode.NONE
    assert c.write_marker("t", 0, PID, 1, False, 4) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    header, [rec] = records.decode_batch(c.log("t", 0).batches[-1])
    assert header.is_control and header.is_transactional and (header.producer_id, header.base_sequence) == (PID, -1)
    assert (rec.key, rec.value, rec.timestamp) == (b"\0\0\0\0", b"\0\0\0\0\0\5", 5000)


def test_last_stable_offset_does_not_go_below_the_log_start_and_retention_keeps_producers():
    """UnifiedLogTest.testLastStableOffsetDoesNotExceedLogStartOffsetAfterSegmentDeletion; the producers
    stay (Kafka's snapshots keep them), aborted transactions wholly below the log start go"""
    c = cluster()
    c.topics["t"].configs["segment.bytes"] = "1"          # a segment per batch
    log = c.log("t", 0)
    p1 = Txn(c, 1)
    p1(2)
    c.write_marker("t", 0, 1, 0, False, 0)                 # aborted 0..2
    p2 = Txn(c, 2)
    p2(2)                                                  # ongoing from 3
    plain(c, 1)
    assert log.last_stable_offset == 3
    log.delete_segments(3)                                 # the log starts at 5
    assert log.log_start_offset == 5 and log.last_stable_offset == 5
    assert log.producer_state.aborted.entries == []
    assert c.append("t", 0, batch(2, 2, 0, 0, transactional=True)) == (ErrorCode.NONE, 3)      # still a duplicate
