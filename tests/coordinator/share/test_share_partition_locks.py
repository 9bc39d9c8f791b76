"""Acquisition locks on virtual time, and the release of a member's records when its share session
ends: each test names the SharePartitionTest case it mirrors (Kafka 4.3)."""
from __future__ import annotations

import dataclasses

import pytest
from share_partition_harness import (
    ACCEPT, ACQUISITION_LOCK_TIMEOUT_MS, DEFAULT_MAX_WAIT_ACQUISITION_LOCK_TIMEOUT_MS, MEMBER_ID, RELEASE, Harness,
    RecordState, ack, batches, fetch, ranges, records, state,
)

from groupcoord.protocol.errors import ErrorCode

WAIT = DEFAULT_MAX_WAIT_ACQUISITION_LOCK_TIMEOUT_MS


@pytest.fixture
def h() -> Harness:
    return Harness()


# ---- lock expiry ----

def test_acquisition_lock_for_acquiring_single_record(h):
    """testAcquisitionLockForAcquiringSingleRecord: the lock expires, the record is AVAILABLE again."""
    changes = []
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS, on_change=lambda: changes.append(1))
    fetch(sp, records(1), 1)
    lock = sp.batch(0).batch_lock
    assert lock is not None and lock.deadline_ms == ACQUISITION_LOCK_TIMEOUT_MS
    assert len(h.timers) == 1
    h.advance(ACQUISITION_LOCK_TIMEOUT_MS - 1)
    assert sp.batch(0).batch_state is RecordState.ACQUIRED
    h.advance(WAIT - ACQUISITION_LOCK_TIMEOUT_MS + 1)
    b = sp.batch(0)
    assert (b.batch_state, b.batch_delivery_count, b.batch_lock) == (RecordState.AVAILABLE, 1, None)
    assert sp.next_fetch_offset() == 0
    assert len(h.timers) == 0
    assert sp.delivery_complete_count() == 0
    assert sp.counters.lock_expired == 1
    assert changes == [1]
    assert h.writes[-1].state_batches == ((0, 0, RecordState.AVAILABLE, 1),)


def test_acquisition_lock_timeout_cause_max_delivery_count_exceed(h):
    """testAcquisitionLockTimeoutCauseMaxDeliveryCountExceed: redelivered with count 2, then archived."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS, max_delivery_count=2)
    fetch(sp, records(10), 10)
    fetch(sp, records(10, 10), 10)
    assert len(h.timers) == 2
    h.advance(WAIT)
    assert len(h.timers) == 0
    assert sp.next_fetch_offset() == 0
    assert (sp.batch(10).batch_state, sp.batch(10).batch_delivery_count) == (RecordState.AVAILABLE, 1)
    assert sp.delivery_complete_count() == 0

    assert fetch(sp, records(10, 10), 10, fetch_offset=10) == ranges((10, 19, 2))
    assert (sp.batch(10).batch_state, sp.batch(10).batch_delivery_count) == (RecordState.ACQUIRED, 2)
    assert len(h.timers) == 1
    h.advance(WAIT)
    assert len(h.timers) == 0
    assert sp.next_fetch_offset() == 0
    b = sp.batch(10)
    assert (b.batch_state, b.batch_delivery_count, b.batch_lock) == (RecordState.ARCHIVED, 2, None)
    assert sp.delivery_complete_count() == 10
    assert (sp.counters.lock_expired, sp.counters.archived) == (30, 10)


def test_acquisition_lock_timeout_cause_spso_move_forward(h):
    """testAcquisitionLockTimeoutCauseSPSOMoveForward: per-offset locks; archived at the head -> SPSO moves."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS, max_delivery_count=2)
    fetch(sp, records(10), 10)
    h.advance(WAIT)
    assert (sp.next_fetch_offset(), sp.batch(0).batch_state) == (0, RecordState.AVAILABLE)
    fetch(sp, records(5), 5)
    locks = {o: s.lock for o, s in sp.batch(0).offset_state.items()}
    assert all(locks[o] is not None for o in range(5)) and all(locks[o] is None for o in range(5, 10))
    h.advance(WAIT)
    expected = {o: state(RecordState.ARCHIVED, 2) for o in range(5)}
    expected.update({o: state(RecordState.AVAILABLE, 1) for o in range(5, 10)})
    assert sp.batch(0).offset_state == expected
    assert all(s.lock is None for s in sp.batch(0).offset_state.values())
    assert len(h.timers) == 0
    assert sp.next_fetch_offset() == 5
    assert sp.start_offset == 5
    assert sp.delivery_complete_count() == 0


def test_acquisition_lock_timeout_cause_spso_move_forward_and_clear_cached_state(h):
    """testAcquisitionLockTimeoutCauseSPSOMoveForwardAndClearCachedState"""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS, max_delivery_count=2)
    fetch(sp, records(10), 10)
    h.advance(WAIT)
    assert fetch(sp, records(10), 10) == ranges((0, 9, 2))
    h.advance(WAIT)
    assert len(h.timers) == 0
    assert sp.cached_state() == []
    assert sp.next_fetch_offset() == 10


def test_acknowledge_after_acquisition_lock_timeout(h):
    """testAcknowledgeAfterAcquisitionLockTimeout: too late -> INVALID_RECORD_STATE."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS)
    fetch(sp, records(5, 5), 5)
    h.advance(WAIT)
    assert (sp.next_fetch_offset(), sp.batch(5).batch_state) == (5, RecordState.AVAILABLE)
    for ack_type in (ACCEPT, 3):
        error = sp.acknowledge(MEMBER_ID, [ack(5, 9, ack_type)])
        assert error.code is ErrorCode.INVALID_RECORD_STATE
        assert error.message == "The batch cannot be acknowledged. The batch is not in the acquired state."
        assert sp.batch(5).batch_lock is None and len(h.timers) == 0
    assert sp.delivery_complete_count() == 0


def test_acquisition_lock_after_different_acknowledges(h):
    """testAcquisitionLockAfterDifferentAcknowledges: acknowledged offsets drop their locks, the rest expire."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS)
    fetch(sp, records(5, 5), 5)
    sp.acknowledge(MEMBER_ID, [ack(5, 6, RELEASE)])
    assert [sp.batch(5).offset_state[o].lock is not None for o in range(5, 10)] == [False, False, True, True, True]
    assert len(h.timers) == 3
    sp.acknowledge(MEMBER_ID, [ack(8, 9, ACCEPT)])
    assert [sp.batch(5).offset_state[o].lock is not None for o in range(5, 10)] == [False, False, True, False, False]
    assert len(h.timers) == 1
    assert sp.delivery_complete_count() == 2
    h.advance(WAIT)
    assert sp.batch(5).offset_state == {
        5: state(RecordState.AVAILABLE, 1), 6: state(RecordState.AVAILABLE, 1), 7: state(RecordState.AVAILABLE, 1),
        8: state(RecordState.ACKNOWLEDGED, 1), 9: state(RecordState.ACKNOWLEDGED, 1)}
    assert len(h.timers) == 0
    assert sp.next_fetch_offset() == 5


def test_acquisition_lock_for_acquiring_subset_batch_again(h):
    """testAcquisitionLockForAcquiringSubsetBatchAgain: locks only on the offsets acquired again."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS)
    fetch(sp, records(10, 8), 8)
    assert sp.batch(10).batch_lock is not None and len(h.timers) == 1
    h.advance(WAIT)
    assert (len(h.timers), sp.next_fetch_offset(), sp.batch(10).batch_state) == (0, 10, RecordState.AVAILABLE)
    assert fetch(sp, records(12, 3), 3) == ranges((12, 14, 2))
    assert [o for o, s in sp.batch(10).offset_state.items() if s.lock is not None] == [12, 13, 14]
    assert len(h.timers) == 3
    h.advance(WAIT)
    assert sp.batch(10).offset_state == {o: state(RecordState.AVAILABLE, 2 if 12 <= o <= 14 else 1)
                                         for o in range(10, 18)}
    assert all(s.lock is None for s in sp.batch(10).offset_state.values())
    assert (len(h.timers), sp.next_fetch_offset(), sp.delivery_complete_count()) == (0, 10, 0)


def test_offsets_of_a_split_batch_keep_its_lock_deadline(h):
    """InFlightBatch.maybeInitializeOffsetStateUpdate: a batch tracked per offset from now on gives each
    offset a lock due when the batch's was."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS)
    fetch(sp, records(10, 8), 8)
    h.now = 40
    sp.acknowledge(MEMBER_ID, [ack(12, 12, ACCEPT)])
    deadlines = {o: s.lock.deadline_ms for o, s in sp.batch(10).offset_state.items() if s.lock is not None}
    assert deadlines == {o: ACQUISITION_LOCK_TIMEOUT_MS for o in (10, 11, 13, 14, 15, 16, 17)}
    h.advance(ACQUISITION_LOCK_TIMEOUT_MS - 40)
    assert [s.state for s in sp.batch(10).offset_state.values()].count(RecordState.AVAILABLE) == 7
    assert sp.next_fetch_offset() == 10
    assert fetch(sp, records(10, 8), 7) == ranges((10, 11, 2), (13, 17, 2))


def test_lock_duration_from_group_config(h):
    """testScheduleAcquisitionLockTimeoutValueFromGroupConfig / ...ValueUpdatesSuccessfully:
    share.record.lock.duration.ms is read at each acquisition."""
    sp = h.partition(lock_ms=100)
    fetch(sp, records(1), 1)
    assert sp.batch(0).batch_lock.deadline_ms == 100
    sp.config = dataclasses.replace(sp.config, record_lock_duration_ms=200)
    fetch(sp, records(1, 1), 1)
    assert sp.batch(1).batch_lock.deadline_ms == 200
    assert sp.acquisition_lock_timeout_ms == 200


# ---- release when a member's share session ends ----

def test_release_single_record_batch(h):
    """testReleaseSingleRecordBatch"""
    sp = h.partition()
    fetch(sp, records(1), 1)
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.next_fetch_offset() == 0
    b = sp.batch(0)
    assert (b.batch_state, b.batch_delivery_count, b.offset_state) == (RecordState.AVAILABLE, 1, None)
    assert len(h.timers) == 0
    assert sp.counters.released == 1


def test_release_multiple_record_batch(h):
    """testReleaseMultipleRecordBatch"""
    sp = h.partition()
    fetch(sp, records(5, 10), 10)
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.next_fetch_offset() == 5
    assert (sp.batch(5).batch_state, sp.batch(5).batch_delivery_count) == (RecordState.AVAILABLE, 1)


def test_release_multiple_acknowledged_record_batch(h):
    """testReleaseMultipleAcknowledgedRecordBatch: acknowledged records stay acknowledged."""
    sp = h.partition()
    fetch(sp, records(5), 5)
    fetch(sp, records(5, 2), 2)
    fetch(sp, records(10, 9), 9)
    sp.acknowledge(MEMBER_ID, [ack(5, 18, ACCEPT)])
    assert sp.delivery_complete_count() == 11
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.next_fetch_offset() == 0
    assert len(sp.cached_state()) == 3
    assert sp.batch(5).batch_state is RecordState.ACKNOWLEDGED and sp.batch(10).batch_state is RecordState.ACKNOWLEDGED
    assert sp.delivery_complete_count() == 11


def test_release_acquired_records_with_another_member(h):
    """testReleaseAcquiredRecordsWithAnotherMember: only the leaving member's records are released."""
    sp = h.partition()
    sp.acquire("member-2", records(5, 1), fetch_offset=5, max_fetch_records=100, batch_size=500)
    sp.acquire(MEMBER_ID, [batches((10, 11))[0]], fetch_offset=10, max_fetch_records=100, batch_size=500)
    sp.acknowledge(MEMBER_ID, [ack(10, 18, ACCEPT, ACCEPT, 0, 0, ACCEPT, 0, ACCEPT, 0, ACCEPT)])
    assert sp.delivery_complete_count() == 9
    terminal = {10: RecordState.ACKNOWLEDGED, 11: RecordState.ACKNOWLEDGED, 12: RecordState.ARCHIVED,
                13: RecordState.ARCHIVED, 14: RecordState.ACKNOWLEDGED, 15: RecordState.ARCHIVED,
                16: RecordState.ACKNOWLEDGED, 17: RecordState.ARCHIVED, 18: RecordState.ACKNOWLEDGED}
    expected = {o: state(s, 1) for o, s in terminal.items()}
    expected.update({19: state(RecordState.AVAILABLE, 1), 20: state(RecordState.AVAILABLE, 1)})

    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.next_fetch_offset() == 19
    assert sp.batch(5).batch_state is RecordState.ACQUIRED
    assert sp.batch(10).offset_state == expected

    assert sp.release_acquired_records("member-2") is None
    assert sp.next_fetch_offset() == 5
    assert (sp.batch(5).batch_state, sp.batch(5).batch_member_id) == (RecordState.AVAILABLE, "")
    assert sp.batch(10).offset_state == expected
    assert sp.delivery_complete_count() == 9


def test_release_acquired_records_for_empty_cached_data(h):
    """testReleaseAcquiredRecordsForEmptyCachedData"""
    sp = h.partition()
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.cached_state() == [] and h.writes == []


def test_release_acquired_records_do_not_decrease_delivery_count(h):
    """testReleaseAcquiredRecordsDoNotDecreaseDeliveryCount: 4.2+ keeps the count; below the SPSO
    (the log start offset moved) released records are archived."""
    sp = h.partition()
    fetch(sp, records(5, 5), 5)
    fetch(sp, records(10, 5), 5)
    sp.acknowledge(MEMBER_ID, [ack(12, 13, ACCEPT)])
    assert sp.delivery_complete_count() == 2
    sp.update_cache_and_offsets(11)
    assert (sp.next_fetch_offset(), sp.start_offset, sp.end_offset) == (15, 11, 14)
    assert len(sp.cached_state()) == 2
    assert sp.release_acquired_records(MEMBER_ID) is None
    b5 = sp.batch(5)
    assert (b5.batch_member_id, b5.batch_state, b5.batch_delivery_count) == ("", RecordState.ARCHIVED, 1)
    assert sp.batch(10).offset_state == {
        10: state(RecordState.ARCHIVED, 1), 11: state(RecordState.AVAILABLE, 1),
        12: state(RecordState.ACKNOWLEDGED, 1), 13: state(RecordState.ACKNOWLEDGED, 1),
        14: state(RecordState.AVAILABLE, 1)}
    assert sp.delivery_complete_count() == 2


def test_max_delivery_count_limit_not_exceeded_for_records_subset_after_release_acquired_records(h):
    """testMaxDeliveryCountLimitNotExceededForRecordsSubsetAfterReleaseAcquiredRecords: released at the
    delivery limit -> ARCHIVED."""
    sp = h.partition(max_delivery_count=2)
    fetch(sp, records(10), 10)
    fetch(sp, records(10, 5), 5)
    sp.acknowledge(MEMBER_ID, [ack(10, 14, RELEASE)])
    fetch(sp, records(10, 5), 5)
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.next_fetch_offset() == 0
    assert len(sp.cached_state()) == 2
    assert sp.batch(10).batch_state is RecordState.ARCHIVED and sp.batch(10).offset_state is None
    assert sp.delivery_complete_count() == 5


def test_release_decreases_delivery_count_in_kafka_4_1(h):
    """Kafka 4.1's releaseAcquiredRecords (DeliveryCountOps.DECREASE): the count goes back, so a record
    released at the limit is not archived (reference §4.1; SharePartition.java of the 4.1 branch)."""
    sp = h.partition(max_delivery_count=2, release_decreases_delivery_count=True)
    fetch(sp, records(10), 10)
    fetch(sp, records(10, 5), 5)
    sp.acknowledge(MEMBER_ID, [ack(10, 14, RELEASE)])
    fetch(sp, records(10, 5), 5)
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert (sp.batch(10).batch_state, sp.batch(10).batch_delivery_count) == (RecordState.AVAILABLE, 1)
    assert (sp.batch(0).batch_state, sp.batch(0).batch_delivery_count) == (RecordState.AVAILABLE, 0)


def test_release_batch_with_write_share_group_state_failure(h):
    """testReleaseBatchWithWriteShareGroupStateFailure: a failed write keeps the records acquired."""
    from groupcoord.protocol.errors import KafkaError
    sp = h.partition()
    fetch(sp, records(5, 10), 10)
    h.fail_writes_with = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert sp.release_acquired_records(MEMBER_ID).code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (sp.batch(5).batch_state, sp.batch(5).batch_member_id) == (RecordState.ACQUIRED, MEMBER_ID)
    assert sp.batch(5).batch_lock is not None


def test_acquisition_lock_on_releasing_multiple_record_batch(h):
    """testAcquisitionLockOnReleasingMultipleRecordBatch: a release cancels the lock."""
    sp = h.partition(lock_ms=ACQUISITION_LOCK_TIMEOUT_MS)
    fetch(sp, records(5, 10), 10)
    assert sp.release_acquired_records(MEMBER_ID) is None
    assert sp.batch(5).batch_lock is None and len(h.timers) == 0
    assert h.advance(WAIT) == 0
