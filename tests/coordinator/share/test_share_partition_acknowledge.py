"""Acknowledgements (ShareFetch's and ShareAcknowledge's): each test names the Kafka test it mirrors
(SharePartitionTest unless said otherwise, Kafka 4.3)."""
from __future__ import annotations

import dataclasses

import pytest
from share_partition_harness import (
    ACCEPT, EMPTY_MEMBER_ID, GAP, MEMBER_ID, RELEASE, REJECT, RENEW, Harness, RecordState, ack, batches, fetch,
    ranges, records, state,
)

from groupcoord.coordinator.share.partition import acknowledgement_batches_valid
from groupcoord.protocol.errors import ErrorCode, KafkaError


@pytest.fixture
def h() -> Harness:
    return Harness()


def acquired(member_id: str = MEMBER_ID, count: int = 1):
    return state(RecordState.ACQUIRED, count, member_id)


def test_acknowledge_single_record_batch(h):
    """testAcknowledgeSingleRecordBatch: ACCEPT of offset 1 while 0 is held: the SPSO stays."""
    sp = h.partition()
    assert len(fetch(sp, records(1), 1)) == 1
    assert len(fetch(sp, records(1, 1), 1)) == 1
    assert sp.acknowledge(MEMBER_ID, [ack(1, 1, ACCEPT)]) is None
    assert sp.next_fetch_offset() == 2
    assert len(sp.cached_state()) == 2
    b = sp.batch(1)
    assert (b.batch_state, b.batch_delivery_count, b.offset_state) == (RecordState.ACKNOWLEDGED, 1, None)
    assert sp.delivery_complete_count() == 1
    assert sp.start_offset == 0
    assert sp.counters.acknowledged == 1


def test_acknowledge_multiple_record_batch(h):
    """testAcknowledgeMultipleRecordBatch: all accepted, the window is empty and starts after them."""
    changes = []
    sp = h.partition(on_change=lambda: changes.append(1))
    assert len(fetch(sp, records(5, 10), 10)) == 1
    assert sp.acknowledge(MEMBER_ID, [ack(5, 14, ACCEPT)]) is None
    assert sp.next_fetch_offset() == 15
    assert sp.cached_state() == []
    assert (sp.start_offset, sp.end_offset) == (15, 15)
    assert sp.delivery_complete_count() == 0
    assert changes == [1]           # a waiting ShareFetch is woken


def test_acknowledge_multiple_record_batch_with_gap_offsets(h):
    """testAcknowledgeMultipleRecordBatchWithGapOffsets: one type per offset, mixed in a batch."""
    sp = h.partition()
    r1 = records(5, 2)
    r2 = [batches((10, 9))[0]]                  # 10-14 and 18 (15-17 compacted away), one log batch
    assert fetch(sp, r1, 2) == ranges((5, 6, 1))
    assert sp.next_fetch_offset() == 7
    assert fetch(sp, r2, 9) == ranges((10, 18, 1))
    assert sp.next_fetch_offset() == 19
    result = sp.acknowledge(MEMBER_ID, [
        ack(5, 6, RELEASE),
        ack(10, 18, RELEASE, RELEASE, RELEASE, RELEASE, RELEASE, GAP, GAP, GAP, ACCEPT)])
    assert result is None
    assert sp.next_fetch_offset() == 5
    assert len(sp.cached_state()) == 2
    assert sp.batch(5).batch_state is RecordState.AVAILABLE and sp.batch(5).offset_state is None
    with pytest.raises(RuntimeError):
        _ = sp.batch(10).batch_state
    expected = {o: state(RecordState.AVAILABLE, 1) for o in range(10, 15)}
    expected.update({o: state(RecordState.ARCHIVED, 1) for o in (15, 16, 17)})
    expected[18] = state(RecordState.ACKNOWLEDGED, 1)
    assert sp.batch(10).offset_state == expected
    assert sp.delivery_complete_count() == 4
    c = sp.counters
    assert (c.released, c.gaps, c.acknowledged, c.archived) == (7, 3, 1, 3)


def test_acknowledge_multiple_subset_record_batch_with_gap_offsets(h):
    """testAcknowledgeMultipleSubsetRecordBatchWithGapOffsets: one range across two batches, per offset."""
    sp = h.partition()
    assert fetch(sp, records(5, 2), 2) == ranges((5, 6, 1))
    assert fetch(sp, [batches((10, 11))[0]], 11) == ranges((10, 20, 1))
    result = sp.acknowledge(MEMBER_ID, [ack(6, 18, ACCEPT, ACCEPT, ACCEPT, ACCEPT, ACCEPT, ACCEPT,
                                            GAP, GAP, ACCEPT, GAP, ACCEPT, GAP, ACCEPT)])
    assert result is None
    assert sp.next_fetch_offset() == 21
    assert sp.batch(5).offset_state == {5: acquired(), 6: state(RecordState.ACKNOWLEDGED, 1)}
    terminal = {10: RecordState.ACKNOWLEDGED, 11: RecordState.ACKNOWLEDGED, 12: RecordState.ARCHIVED,
                13: RecordState.ARCHIVED, 14: RecordState.ACKNOWLEDGED, 15: RecordState.ARCHIVED,
                16: RecordState.ACKNOWLEDGED, 17: RecordState.ARCHIVED, 18: RecordState.ACKNOWLEDGED}
    expected = {o: state(s, 1) for o, s in terminal.items()}
    expected.update({19: acquired(), 20: acquired()})
    assert sp.batch(10).offset_state == expected
    assert sp.delivery_complete_count() == 10


def test_acknowledge_out_of_range_cached_data(h):
    """testAcknowledgeOutOfRangeCachedData: nothing cached -> INVALID_RECORD_STATE; past the cache ->
    INVALID_REQUEST."""
    sp = h.partition()
    error = sp.acknowledge(MEMBER_ID, [ack(0, 15, REJECT)])
    assert error.code is ErrorCode.INVALID_RECORD_STATE
    assert error.message == "Batch record not found. The request batch offsets are not found in the cache."
    assert len(fetch(sp, records(5, 5), 5)) == 1
    error = sp.acknowledge(MEMBER_ID, [ack(20, 25, REJECT)])
    assert error.code is ErrorCode.INVALID_REQUEST
    assert error.message == "Batch record not found. The first offset in request is past acquired records."
    assert sp.delivery_complete_count() == 0


def test_acknowledge_out_of_range_cached_data_first_batch(h):
    """testAcknowledgeOutOfRangeCachedDataFirstBatch: a range ending past its batch -> INVALID_REQUEST;
    the same request succeeds once the records in between are acquired."""
    sp = h.partition()
    fetch(sp, records(5), 5)
    fetch(sp, records(20, 5), 5)
    request = [ack(0, 10, ACCEPT), ack(20, 24, ACCEPT)]
    error = sp.acknowledge(MEMBER_ID, request)
    assert error.code is ErrorCode.INVALID_REQUEST
    assert error.message == "Batch record not found. The last offset in request is past acquired records."
    fetch(sp, records(5, 6), 6)
    assert sp.acknowledge(MEMBER_ID, request) is None
    assert sp.delivery_complete_count() == 0


def test_acknowledge_with_another_member(h):
    """testAcknowledgeWithAnotherMember: a member may only acknowledge what it holds."""
    sp = h.partition()
    fetch(sp, records(5, 5), 5)
    error = sp.acknowledge("member-2", [ack(5, 9, REJECT)])
    assert (error.code, error.message) == (ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record")
    assert sp.batch(5).batch_state is RecordState.ACQUIRED


def test_acknowledge_subset_with_another_member(h):
    """testAcknowledgeSubsetWithAnotherMember"""
    sp = h.partition()
    fetch(sp, records(5, 7), 7)
    assert sp.acknowledge(MEMBER_ID, [ack(5, 7, ACCEPT)]) is None
    error = sp.acknowledge("member-2", [ack(9, 11, ACCEPT)])
    assert (error.code, error.message) == (ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")


def test_acknowledge_when_offset_not_acquired(h):
    """testAcknowledgeWhenOffsetNotAcquired: released or already acknowledged records -> INVALID_RECORD_STATE."""
    sp = h.partition()
    fetch(sp, records(5, 5), 5)
    assert sp.acknowledge(MEMBER_ID, [ack(5, 9, RELEASE)]) is None
    assert sp.delivery_complete_count() == 0
    error = sp.acknowledge(MEMBER_ID, [ack(5, 9, ACCEPT)])
    assert error.code is ErrorCode.INVALID_RECORD_STATE
    assert error.message == "The batch cannot be acknowledged. The batch is not in the acquired state."
    assert len(fetch(sp, records(5, 5), 5)) == 1
    assert sp.acknowledge(MEMBER_ID, [ack(6, 8, REJECT)]) is None
    assert sp.delivery_complete_count() == 3
    error = sp.acknowledge(MEMBER_ID, [ack(6, 8, REJECT)])
    assert (error.code, error.message) == (ErrorCode.INVALID_RECORD_STATE,
                                           "The offset cannot be acknowledged. The offset is not acquired.")
    assert sp.delivery_complete_count() == 3


def _three_batches(h):
    sp = h.partition()
    for start in (5, 10, 15):
        fetch(sp, records(start, 5), 5)
    assert len(sp.cached_state()) == 3
    return sp


def test_acknowledge_rollback_with_full_batch_error(h):
    """testAcknowledgeRollbackWithFullBatchError: one bad batch rolls the whole request back."""
    sp = _three_batches(h)
    error = sp.acknowledge(MEMBER_ID, [ack(5, 9, RELEASE), ack(10, 14, ACCEPT), ack(15, 19, ACCEPT),
                                       ack(15, 19, ACCEPT)])
    assert error.code is ErrorCode.INVALID_RECORD_STATE
    assert [b.batch_state for b in sp.cached_state()] == [RecordState.ACQUIRED] * 3
    assert [b.batch_member_id for b in sp.cached_state()] == [MEMBER_ID] * 3
    assert sp.delivery_complete_count() == 0
    assert h.writes == []
    assert sp.counters.acknowledged == 0


def test_acknowledge_rollback_with_subset_error(h):
    """testAcknowledgeRollbackWithSubsetError"""
    sp = _three_batches(h)
    error = sp.acknowledge(MEMBER_ID, [ack(5, 9, RELEASE), ack(10, 14, ACCEPT), ack(15, 19, ACCEPT),
                                       ack(16, 19, ACCEPT)])
    assert error.code is ErrorCode.INVALID_RECORD_STATE
    assert [b.batch_state for b in sp.cached_state()] == [RecordState.ACQUIRED] * 3
    assert sp.batch(15).offset_state is None
    assert sp.delivery_complete_count() == 0


def test_invalid_acknowledge_type_in_batch_acknowledgement(h):
    """testInvalidAcknowledgeTypeInBatchAcknowledgement"""
    sp = h.partition()
    fetch(sp, records(1, 10), 10)
    error = sp.acknowledge(MEMBER_ID, [ack(1, 10, 5)])
    assert (error.code, error.message) == (ErrorCode.INVALID_REQUEST, "Invalid acknowledge type: [5]")


def test_invalid_acknowledge_type_in_subset_acknowledgement(h):
    """testInvalidAcknowledgeTypeInSubsetAcknowledgement"""
    sp = h.partition()
    fetch(sp, records(1, 10), 10)
    error = sp.acknowledge(MEMBER_ID, [ack(2, 3, -1)])
    assert error.code is ErrorCode.INVALID_REQUEST


def test_max_delivery_count_limit_exceeded_for_record_batch(h):
    """testMaxDeliveryCountLimitExceededForRecordBatch: released at the limit -> ARCHIVED, the SPSO moves."""
    sp = h.partition(max_delivery_count=2)
    fetch(sp, records(5, 10), 10)
    assert sp.acknowledge(MEMBER_ID, [ack(5, 14, RELEASE)]) is None
    assert fetch(sp, records(5, 10), 10) == ranges((5, 14, 2))
    assert sp.acknowledge(MEMBER_ID, [ack(5, 14, RELEASE)]) is None
    assert (sp.next_fetch_offset(), sp.start_offset, sp.end_offset) == (15, 15, 15)
    assert sp.cached_state() == []
    assert (sp.counters.released, sp.counters.archived) == (20, 10)


def test_max_delivery_count_limit_exceeded_for_records_subset_and_cached_state_not_cleared(h):
    """testMaxDeliveryCountLimitExceededForRecordsSubsetAndCachedStateNotCleared"""
    sp = h.partition(max_delivery_count=2)
    fetch(sp, records(5), 5)
    assert sp.acknowledge(MEMBER_ID, [ack(0, 1, RELEASE)]) is None
    fetch(sp, records(2), 2)
    assert sp.acknowledge(MEMBER_ID, [ack(0, 4, RELEASE)]) is None
    assert sp.next_fetch_offset() == 2
    assert sp.batch(0).offset_state == {
        0: state(RecordState.ARCHIVED, 2), 1: state(RecordState.ARCHIVED, 2), 2: state(RecordState.AVAILABLE, 1),
        3: state(RecordState.AVAILABLE, 1), 4: state(RecordState.AVAILABLE, 1)}


def test_acknowledge_batch_with_write_share_group_state_failure(h):
    """testAcknowledgeBatchWithWriteShareGroupStateFailure: a failed write fails the acknowledgement with the
    share coordinator's error and leaves the records ACQUIRED by the member."""
    sp = h.partition()
    h.fail_writes_with = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    fetch(sp, records(5, 10), 10)
    error = sp.acknowledge(MEMBER_ID, [ack(5, 14, ACCEPT)])
    assert error.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert len(sp.cached_state()) == 1
    assert (sp.batch(5).batch_state, sp.batch(5).batch_member_id) == (RecordState.ACQUIRED, MEMBER_ID)
    assert sp.persisted_state().state_batches == ()


def test_acknowledge_offset_with_write_share_group_state_failure(h):
    """testAcknowledgeOffsetWithWriteShareGroupStateFailure"""
    sp = h.partition()
    h.fail_writes_with = KafkaError(ErrorCode.GROUP_ID_NOT_FOUND)
    fetch(sp, records(5, 6), 6)
    error = sp.acknowledge(MEMBER_ID, [ack(8, 10, REJECT)])
    assert error.code is ErrorCode.GROUP_ID_NOT_FOUND
    assert sp.batch(5).offset_state == {o: acquired() for o in range(5, 11)}


def test_write_failure_codes_as_the_partition_answers_them(h):
    """SharePartition.fetchPersisterError: fenced epochs -> NOT_LEADER_OR_FOLLOWER, coordinator moving ->
    COORDINATOR_NOT_AVAILABLE, anything else -> UNKNOWN_SERVER_ERROR."""
    sp = h.partition()
    fetch(sp, records(5), 5)
    for code, expected in [(ErrorCode.FENCED_STATE_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
                           (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
                           (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                           (ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_SERVER_ERROR)]:
        h.fail_writes_with = KafkaError(code)
        assert sp.acknowledge(MEMBER_ID, [ack(0, 4, ACCEPT)]).code is expected
    h.fail_writes_with = OSError("disk full")
    assert sp.acknowledge(MEMBER_ID, [ack(0, 4, ACCEPT)]).code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert sp.batch(0).batch_state is RecordState.ACQUIRED


# ---- RENEW (KIP-1222, 4.2+) ----

def test_renew_acknowledge_with_complete_batch_ack(h):
    """testRenewAcknowledgeWithCompleteBatchAck: a new lock of the full duration, nothing written."""
    sp = h.partition(lock_ms=100, max_delivery_count=2)
    assert fetch(sp, records(0, 1), 1) == ranges((0, 0, 1))
    original = sp.batch(0).batch_lock
    h.now = 60
    assert sp.acknowledge(MEMBER_ID, [ack(0, 0, RENEW)]) is None
    assert original.cancelled and sp.batch(0).batch_lock is not original
    assert sp.batch(0).batch_lock.deadline_ms == 160
    assert len(h.timers) == 1
    assert sp.batch(0).batch_state is RecordState.ACQUIRED
    assert h.writes == []
    h.advance(41)                       # the old deadline (100) passes: still held
    assert sp.batch(0).batch_state is RecordState.ACQUIRED
    h.advance(60)
    assert sp.batch(0).batch_lock is None
    assert sp.batch(0).batch_state is RecordState.AVAILABLE
    assert len(h.timers) == 0
    assert len(h.writes) == 1
    assert sp.counters.renewed == 1


def test_renew_acknowledge_on_expired_batch(h):
    """testRenewAcknowledgeOnExpiredBatch"""
    sp = h.partition(lock_ms=100, max_delivery_count=2)
    fetch(sp, records(0, 1), 1)
    h.advance(101)
    assert sp.batch(0).batch_lock is None
    error = sp.acknowledge(MEMBER_ID, [ack(0, 0, RENEW)])
    assert error.code is ErrorCode.INVALID_RECORD_STATE
    assert len(h.timers) == 0
    assert sp.batch(0).batch_state is RecordState.AVAILABLE
    assert len(h.writes) == 1


def test_renew_acknowledge_with_per_offset_ack(h):
    """testRenewAcknowledgeWithPerOffsetAck: RENEW and ACCEPT in one batch, per offset."""
    sp = h.partition(lock_ms=100, max_delivery_count=2)
    assert fetch(sp, records(0, 2), 2) == ranges((0, 1, 1))
    original = sp.batch(0).batch_lock
    assert sp.acknowledge(MEMBER_ID, [ack(0, 1, RENEW, ACCEPT)]) is None
    assert original.cancelled
    offset0, offset1 = sp.batch(0).offset_state[0], sp.batch(0).offset_state[1]
    assert offset0.state is RecordState.ACQUIRED and offset0.lock is not None
    assert offset1.state is RecordState.ACKNOWLEDGED and offset1.lock is None
    assert len(h.timers) == 1
    assert len(h.writes) == 1
    h.advance(101)
    assert offset0.lock is None and offset0.state is RecordState.AVAILABLE
    assert len(h.timers) == 0
    assert len(h.writes) == 2


def test_renew_acknowledge_disabled_with_complete_batch_ack(h):
    """testRenewAcknowledgeDisabledWithCompleteBatchAck: share.renew.acknowledge.enable=false (4.3)."""
    sp = h.partition(lock_ms=100, renew_acknowledge_enable=False)
    fetch(sp, records(0, 1), 1)
    original = sp.batch(0).batch_lock
    error = sp.acknowledge(MEMBER_ID, [ack(0, 0, RENEW)])
    assert (error.code, error.message) == (ErrorCode.INVALID_RECORD_STATE,
                                           "Renewing acquisition locks is not enabled for the group.")
    assert sp.batch(0).batch_lock is original and not original.cancelled


def test_validate_acknowledgement_batches():
    """KafkaApisTest testHandleAcknowledgementsInvalidAcknowledgementBatches and
    testValidateAcknowledgementBatchesForRenew (KafkaApis.validateAcknowledgementBatches): the checks
    made before the share-partition, answered INVALID_REQUEST."""
    def valid(*batches, renew=True, is_renew_ack=False):
        return acknowledgement_batches_valid(list(batches), supports_renew=renew, is_renew_ack=is_renew_ack)

    assert valid(ack(0, 4, ACCEPT), ack(4, 9, RELEASE))       # first == previous last passes
    assert not valid(ack(5, 4, ACCEPT))
    assert not valid(ack(0, 9, ACCEPT), ack(5, 12, ACCEPT))
    assert not valid(ack(0, 4))
    assert not valid(ack(0, 4, ACCEPT, REJECT))
    assert not valid(ack(0, 0, 5))
    assert not valid(ack(0, 0, RENEW))                        # IsRenewAck false
    assert valid(ack(0, 0, RENEW), is_renew_ack=True)
    assert not valid(ack(0, 0, RENEW), renew=False, is_renew_ack=True)
    assert valid(ack(0, 2, ACCEPT, GAP, REJECT))


def test_acknowledge_below_start_offset_is_ignored(h):
    """SharePartition.acknowledge: a batch entirely below the SPSO is already out of the window."""
    sp = h.partition()
    fetch(sp, records(10), 10)
    assert sp.acknowledge(MEMBER_ID, [ack(0, 4, ACCEPT)]) is None
    assert sp.acknowledge(MEMBER_ID, [ack(0, 4, ACCEPT)]) is None
    assert sp.start_offset == 5
    assert sp.batch(0).offset_state[5] == acquired()
    assert sp.batch(0).offset_state[4] == state(RecordState.ACKNOWLEDGED, 1, EMPTY_MEMBER_ID)


# ---- group configs read at each use ----

def test_dynamic_delivery_count_decrease_causes_archival(h):
    """testDynamicDeliveryCountDecreaseCausesArchival: share.delivery.count.limit lowered while held."""
    sp = h.partition(max_delivery_count=10)
    log = records(5, 10)
    fetch(sp, log, 10)
    sp.acknowledge(MEMBER_ID, [ack(5, 14, RELEASE)])
    fetch(sp, log, 10)
    sp.config = dataclasses.replace(sp.config, delivery_count_limit=2)
    assert sp.acknowledge(MEMBER_ID, [ack(5, 14, RELEASE)]) is None
    fetch(sp, log, 0)
    assert sp.next_fetch_offset() == 15


def test_dynamic_delivery_count_increase_allows_more_deliveries(h):
    """testDynamicDeliveryCountIncreaseAllowsMoreDeliveries"""
    sp = h.partition(max_delivery_count=2)
    log = records(5, 10)
    fetch(sp, log, 10)
    sp.acknowledge(MEMBER_ID, [ack(5, 14, RELEASE)])
    sp.config = dataclasses.replace(sp.config, delivery_count_limit=10)
    fetch(sp, log, 10)
    sp.acknowledge(MEMBER_ID, [ack(5, 14, RELEASE)])
    assert fetch(sp, log, 10) == ranges((5, 14, 3))
    assert sp.cached_state() != []
