"""Acquisition (ShareFetch): each test names the SharePartitionTest case it mirrors (Kafka 4.3)."""
from __future__ import annotations

import pytest
from share_partition_harness import (
    EMPTY_MEMBER_ID, MEMBER_ID, RELEASE, Harness, RecordState, ShareAcquireMode, ShareSnapshot, ack,
    batches, fetch, offsets, ranges, records, state,
)

from groupcoord.coordinator.share.partition import LogBatch, PersisterStateBatch


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_acquire_single_record(h):
    """testAcquireSingleRecord"""
    sp = h.partition()
    assert fetch(sp, records(1), 1) == ranges((0, 0, 1))
    assert sp.next_fetch_offset() == 1
    assert len(sp.cached_state()) == 1
    b = sp.batch(0)
    assert (b.first_offset, b.last_offset) == (0, 0)
    assert (b.batch_state, b.batch_member_id, b.batch_delivery_count) == (RecordState.ACQUIRED, MEMBER_ID, 1)
    assert b.offset_state is None
    assert sp.delivery_complete_count() == 0
    assert sp.counters.acquired == 1


def test_acquire_multiple_records(h):
    """testAcquireMultipleRecords"""
    sp = h.partition()
    assert fetch(sp, records(10, 5), 5) == ranges((10, 14, 1))
    assert sp.next_fetch_offset() == 15
    assert [(b.first_offset, b.last_offset) for b in sp.cached_state()] == [(10, 14)]
    assert sp.batch(10).batch_state is RecordState.ACQUIRED
    assert sp.batch(10).offset_state is None
    assert sp.start_offset == 10


def test_acquire_with_max_fetch_records(h):
    """testAcquireWithMaxFetchRecords: MaxRecords is soft, whole log batches are kept."""
    sp = h.partition()
    assert fetch(sp, records(5), 5, max_fetch_records=10, fetch_offset=0) == ranges((0, 4, 1))
    assert sp.next_fetch_offset() == 5
    # from 0 again: 0-4 are held, the rest of the 25-record batch is taken whole
    assert fetch(sp, records(25), 20, max_fetch_records=10, fetch_offset=0) == ranges((5, 24, 1))
    assert sp.next_fetch_offset() == 25
    assert [(b.first_offset, b.last_offset) for b in sp.cached_state()] == [(0, 4), (5, 24)]


def test_acquire_with_multiple_batches_and_max_fetch_records(h):
    """testAcquireWithMultipleBatchesAndMaxFetchRecords"""
    sp = h.partition()
    log = batches((10, 5), (15, 15), (30, 15))
    assert fetch(sp, log, 20, max_fetch_records=10, fetch_offset=0) == ranges((10, 29, 1))
    assert sp.next_fetch_offset() == 30
    assert [(b.first_offset, b.last_offset) for b in sp.cached_state()] == [(10, 29)]


def test_acquire_multiple_records_with_overlap_and_new_batch(h):
    """testAcquireMultipleRecordsWithOverlapAndNewBatch"""
    sp = h.partition()
    assert fetch(sp, records(5), 5) == ranges((0, 4, 1))
    assert fetch(sp, records(10), 5) == ranges((5, 9, 1))
    assert sp.next_fetch_offset() == 10
    assert len(sp.cached_state()) == 2


def test_acquire_same_batch_again(h):
    """testAcquireSameBatchAgain: held records are not handed out twice."""
    sp = h.partition()
    assert fetch(sp, records(10, 5), 5) == ranges((10, 14, 1))
    assert fetch(sp, records(10, 5), 0) == []
    assert fetch(sp, records(10, 2), 0) == []
    assert sp.next_fetch_offset() == 15
    assert sp.batch(10).offset_state is None


def test_acquire_with_empty_fetch_records(h):
    """testAcquireWithEmptyFetchRecords"""
    sp = h.partition()
    assert sp.acquire(MEMBER_ID, [], fetch_offset=0, max_fetch_records=10, batch_size=500).count == 0
    assert sp.next_fetch_offset() == 0


def test_acquire_with_batch_size_and_multiple_batches(h):
    """testAcquireWithBatchSizeAndMultipleBatches: ranges cut at log batches once BatchSize is reached."""
    sp = h.partition()
    log = batches((2, 5), (10, 5), (15, 7), (22, 6))
    got = fetch(sp, log, 26, batch_size=5, max_fetch_records=100, fetch_offset=0)
    assert got == ranges((2, 9, 1), (10, 14, 1), (15, 21, 1), (22, 27, 1))
    assert sp.next_fetch_offset() == 28
    assert [b.first_offset for b in sp.cached_state()] == [2, 10, 15, 22]
    assert all(b.batch_state is RecordState.ACQUIRED and b.offset_state is None for b in sp.cached_state())


def test_acquire_with_max_in_flight_records_and_try_acquire_new_batch(h):
    """testAcquireWithMaxInFlightRecordsAndTryAcquireNewBatch: group.share.partition.max.record.locks."""
    sp = h.partition(max_in_flight=20)
    assert fetch(sp, records(10), 10, max_fetch_records=500, fetch_offset=0) == ranges((0, 9, 1))
    log = batches((10, 5), (15, 10), (25, 5), (30, 2))
    # 10 more allowed: the batch crossing the limit is taken whole
    assert fetch(sp, log, 15, max_fetch_records=500, fetch_offset=0) == ranges((10, 24, 1))
    assert sp.next_fetch_offset() == 25
    assert not sp.can_acquire_records()
    # at the limit and the fetch is beyond the SPEO: nothing
    assert fetch(sp, records(25, 10), 0, max_fetch_records=500, fetch_offset=25) == []
    assert sp.next_fetch_offset() == 25


def test_acquire_with_max_in_flight_records_and_release_last_offset(h):
    """testAcquireWithMaxInFlightRecordsAndReleaseLastOffset: at the limit, only records inside the window."""
    sp = h.partition(max_in_flight=20)
    log = batches((10, 5), (15, 10), (25, 5), (30, 3))
    assert fetch(sp, log, 20, max_fetch_records=500, fetch_offset=0) == ranges((10, 29, 1))
    assert sp.next_fetch_offset() == 30
    assert sp.acknowledge(MEMBER_ID, [ack(15, 19, RELEASE)]) is None
    assert sp.next_fetch_offset() == 15
    assert fetch(sp, log, 5, max_fetch_records=500, fetch_offset=15) == ranges((15, 19, 2))
    assert sp.next_fetch_offset() == 30
    assert sp.acknowledge(MEMBER_ID, [ack(29, 29, RELEASE)]) is None
    assert sp.next_fetch_offset() == 29
    assert fetch(sp, log, 1, max_fetch_records=500, fetch_offset=29) == ranges((29, 29, 2))
    assert sp.next_fetch_offset() == 30


def test_can_acquire_records_with_cached_data_and_limit_not_reached(h):
    """testCanAcquireRecordsWithCachedDataAndLimitNotReached"""
    sp = h.partition(max_in_flight=6)
    fetch(sp, records(5), 5)
    assert sp.can_acquire_records()
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (0, 4, 5)


def test_can_acquire_records_with_cached_data_and_limit_reached(h):
    """testCanAcquireRecordsWithCachedDataAndLimitReached"""
    sp = h.partition(max_in_flight=1)
    fetch(sp, records(5), 5)
    assert not sp.can_acquire_records()
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (0, 4, 5)


def test_acquire_released_record(h):
    """testAcquireReleasedRecord: a release inside a batch tracks it per offset; redelivery counts 2."""
    sp = h.partition()
    assert fetch(sp, records(10, 5), 5) == ranges((10, 14, 1))
    assert sp.acknowledge(MEMBER_ID, [ack(12, 13, RELEASE)]) is None
    assert sp.next_fetch_offset() == 12
    with pytest.raises(RuntimeError):
        _ = sp.batch(10).batch_state
    assert sp.batch(10).offset_state == {
        10: state(RecordState.ACQUIRED, 1, MEMBER_ID), 11: state(RecordState.ACQUIRED, 1, MEMBER_ID),
        12: state(RecordState.AVAILABLE, 1), 13: state(RecordState.AVAILABLE, 1),
        14: state(RecordState.ACQUIRED, 1, MEMBER_ID)}
    assert fetch(sp, records(10, 5), 2) == ranges((12, 13, 2))
    assert sp.next_fetch_offset() == 15


def test_acquire_released_record_multiple_batches(h):
    """testAcquireReleasedRecordMultipleBatches"""
    sp = h.partition()
    r1, r2, r3, r4 = records(10, 5), records(15, 5), records(23, 5), records(28, 5)
    assert fetch(sp, r1, 5) == ranges((10, 14, 1))
    assert fetch(sp, r2, 5) == ranges((15, 19, 1))
    assert fetch(sp, r3, 5) == ranges((23, 27, 1))
    assert fetch(sp, r4, 5) == ranges((28, 32, 1))
    assert sp.next_fetch_offset() == 33

    assert sp.acknowledge(MEMBER_ID, [ack(12, 30, RELEASE)]) is None
    assert sp.next_fetch_offset() == 12
    assert sp.batch(15).batch_state is RecordState.AVAILABLE and sp.batch(15).batch_member_id == EMPTY_MEMBER_ID
    assert sp.batch(23).batch_state is RecordState.AVAILABLE and sp.batch(23).offset_state is None
    assert sp.batch(10).offset_state == {
        10: state(RecordState.ACQUIRED, 1, MEMBER_ID), 11: state(RecordState.ACQUIRED, 1, MEMBER_ID),
        12: state(RecordState.AVAILABLE, 1), 13: state(RecordState.AVAILABLE, 1), 14: state(RecordState.AVAILABLE, 1)}
    assert sp.batch(28).offset_state == {
        28: state(RecordState.AVAILABLE, 1), 29: state(RecordState.AVAILABLE, 1), 30: state(RecordState.AVAILABLE, 1),
        31: state(RecordState.ACQUIRED, 1, MEMBER_ID), 32: state(RecordState.ACQUIRED, 1, MEMBER_ID)}

    assert fetch(sp, r1, 3) == ranges((12, 14, 2))
    assert sp.next_fetch_offset() == 15
    assert fetch(sp, r3, 5) == ranges((23, 27, 2))
    assert sp.next_fetch_offset() == 15
    assert fetch(sp, records(17, 2), 2) == ranges((17, 18, 2))
    assert sp.next_fetch_offset() == 15
    assert fetch(sp, records(28, 1), 1) == offsets(28, 28, 2)
    assert sp.next_fetch_offset() == 15
    assert fetch(sp, r2, 3) == ranges((15, 16, 2), (19, 19, 2))
    assert sp.next_fetch_offset() == 29


def test_next_fetch_offset_with_multiple_consumers(h):
    """testNextFetchOffsetWithMultipleConsumers: redelivery before new records, whoever fetches."""
    sp = h.partition(max_in_flight=100)
    m2 = "member-2"
    fetch(sp, records(3), 3)
    assert sp.next_fetch_offset() == 3
    assert sp.acknowledge(MEMBER_ID, [ack(0, 2, RELEASE)]) is None
    assert sp.next_fetch_offset() == 0
    fetch(sp, records(3, 2), 2, member_id=m2, fetch_offset=3)
    assert sp.next_fetch_offset() == 0
    fetch(sp, records(3), 3, fetch_offset=0)
    assert sp.next_fetch_offset() == 5
    assert sp.acknowledge(m2, [ack(3, 4, RELEASE)]) is None
    assert sp.next_fetch_offset() == 3


# ---- ShareFetch v2's record_limit mode (KIP-1206) ----

def test_acquire_single_batch_in_record_limit_mode(h):
    """testAcquireSingleBatchInRecordLimitMode: MaxRecords is hard, the rest of the batch stays AVAILABLE."""
    sp = h.partition(lock_ms=100)
    log = records(10)
    got = fetch(sp, log, 5, batch_size=2, max_fetch_records=5, fetch_offset=0, mode=ShareAcquireMode.RECORD_LIMIT)
    assert got == ranges((0, 4, 1))
    assert sp.next_fetch_offset() == 5
    b = sp.batch(0)
    assert (b.first_offset, b.last_offset) == (0, 9)
    for attribute in ("batch_state", "batch_member_id", "batch_delivery_count"):
        with pytest.raises(RuntimeError):
            getattr(b, attribute)
    assert len(b.offset_state) == 10
    assert b.offset_state[4] == state(RecordState.ACQUIRED, 1, MEMBER_ID)
    assert b.offset_state[5].state is RecordState.AVAILABLE and b.offset_state[9].state is RecordState.AVAILABLE

    got = fetch(sp, log, 5, member_id="member-2", batch_size=2, max_fetch_records=5, fetch_offset=0,
                mode=ShareAcquireMode.RECORD_LIMIT)
    assert got == ranges((5, 9, 1))
    assert sp.next_fetch_offset() == 10
    assert b.offset_state[5] == state(RecordState.ACQUIRED, 1, "member-2")
    assert len(h.timers) == 10           # one lock per offset


def test_acquire_multiple_batches_in_record_limit_mode(h):
    """testAcquireMultipleBatchesInRecordLimitMode"""
    sp = h.partition(lock_ms=100)
    log = batches((10, 5), (15, 15), (30, 15))
    got = fetch(sp, log, 10, max_fetch_records=10, fetch_offset=0, mode=ShareAcquireMode.RECORD_LIMIT)
    assert got == ranges((10, 19, 1))
    assert sp.next_fetch_offset() == 20
    b = sp.batch(10)
    assert (b.first_offset, b.last_offset) == (10, 29)
    assert b.offset_state[19] == state(RecordState.ACQUIRED, 1, MEMBER_ID)
    assert b.offset_state[20].state is RecordState.AVAILABLE


def test_acquire_when_insufficient_records_in_record_limit_mode(h):
    """testAcquireWhenInsufficientRecordsInRecordLimitMode"""
    sp = h.partition(lock_ms=100)
    log = batches((10, 5), (15, 5), (20, 5))
    got = fetch(sp, log, 15, batch_size=2, max_fetch_records=20, fetch_offset=0, mode=ShareAcquireMode.RECORD_LIMIT)
    assert got == ranges((10, 24, 1))
    assert sp.next_fetch_offset() == 25
    assert sp.batch(10).offset_state is None and sp.batch(10).batch_state is RecordState.ACQUIRED
    assert len(h.timers) == 1


# ---- poison-record isolation (4.2+) ----

def test_throttle_records_when_pending_deliveries_exist(h):
    """testThrottleRecordsWhenPendingDeliveriesExist: gaps of the loaded state acquired as new records;
    a record at the throttle count (3 of 5) is not delivered with others."""
    sp = h.partition(state=ShareSnapshot(state_epoch=3, start_offset=5, state_batches=(
        PersisterStateBatch(15, 19, 0, 2), PersisterStateBatch(20, 22, 4, 3), PersisterStateBatch(26, 30, 0, 3))))
    assert (len(sp.cached_state()), sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (3, 5, 30, 5)
    log = batches((7, 13), (20, 8))
    got = fetch(sp, log, 16, max_fetch_records=500, fetch_offset=5)
    assert got == ranges((7, 14, 1), (15, 19, 3), (23, 25, 1))
    assert sp.next_fetch_offset() == 26
    assert (sp.batch(23).first_offset, sp.batch(23).last_offset) == (23, 25)
    assert [sp.batch(k).batch_state for k in (7, 15, 20, 23, 26)] == [
        RecordState.ACQUIRED, RecordState.ACQUIRED, RecordState.ARCHIVED, RecordState.ACQUIRED, RecordState.AVAILABLE]
    assert sp.end_offset == 30
    assert sp.delivery_complete_count() == 3
    # 5 records at count 3: half of them
    assert fetch(sp, log, 2, max_fetch_records=500, fetch_offset=26) == ranges((26, 27, 4))


def test_acquire_records_halves_batch_size_on_each_failure_until_single_record_on_last_attempt(h):
    """testAcquireRecordsHalvesBatchSizeOnEachFailureUntilSingleRecordOnLastAttempt"""
    sp = h.partition(state=ShareSnapshot(state_epoch=3, start_offset=5, state_batches=(
        PersisterStateBatch(15, 34, 0, 4),)), max_delivery_count=7, lock_ms=120)
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (5, 34, 5)
    log = records(15, 20)
    assert fetch(sp, log, 10, max_fetch_records=500, fetch_offset=5) == ranges((15, 24, 5))
    h.advance(121)
    assert fetch(sp, log, 5, max_fetch_records=500, fetch_offset=5) == ranges((15, 19, 6))
    h.advance(121)
    for i in range(5):                  # the last attempt: one record per fetch
        assert fetch(sp, log, 1, max_fetch_records=500, fetch_offset=5) == ranges((15 + i, 15 + i, 7))
    assert fetch(sp, log, 5, max_fetch_records=500, fetch_offset=5) == ranges((20, 24, 6))
    assert fetch(sp, log, 10, max_fetch_records=500, fetch_offset=5) == ranges((25, 34, 5))


def test_last_attempt_record_isolation_with_mixed_delivery_count(h):
    """testLastAttemptRecordIsolationWithMixedDeliveryCount"""
    sp = h.partition(state=ShareSnapshot(state_epoch=3, start_offset=15, state_batches=(
        PersisterStateBatch(15, 34, 0, 2),)))
    log = records(15, 20)
    fetch(sp, log, 20, max_fetch_records=500, fetch_offset=15)
    assert sp.acknowledge(MEMBER_ID, [ack(17, 17, RELEASE), ack(20, 20, RELEASE)]) is None
    fetch(sp, log, 2, max_fetch_records=500, fetch_offset=15)
    assert sp.acknowledge(MEMBER_ID, [ack(15, 34, RELEASE)]) is None
    counts = {o: sp.batch(15).offset_state[o].delivery_count for o in (15, 16, 17, 18)}
    assert counts == {15: 3, 16: 3, 17: 4, 18: 3}
    # 17 is on its last attempt (4 of 5): the fetch stops before it, the next one delivers it alone
    assert fetch(sp, log, 2, max_fetch_records=500, fetch_offset=5) == ranges((15, 16, 4))
    assert fetch(sp, log, 1, max_fetch_records=500, fetch_offset=5) == ranges((17, 17, 5))


# ---- read_committed ----

def test_acquire_with_read_committed_isolation_level(h):
    """testAcquireWithReadCommittedIsolationLevel: the batches of aborted transactions (what the caller
    found, as Kafka's fetchAbortedTransactionRecordBatches) are archived and cut out of the ranges."""
    sp = h.partition()
    log = batches((10, 5), (15, 5), (20, 15), (50, 8), (58, 10), (70, 5))
    got = sp.acquire(MEMBER_ID, log, fetch_offset=0, max_fetch_records=100, batch_size=10,
                     aborted_batches=[LogBatch(10, 14), LogBatch(58, 67), LogBatch(70, 74)])
    assert got.acquired_records == ranges((15, 19, 1), (20, 49, 1), (50, 57, 1), (68, 69, 1))
    assert got.count == 45
    assert sp.next_fetch_offset() == 75
    assert [(b.first_offset, b.last_offset) for b in sp.cached_state()] == [(10, 19), (20, 49), (50, 69), (70, 74)]
    assert sp.batch(20).batch_state is RecordState.ACQUIRED and sp.batch(20).batch_lock is not None
    assert sp.batch(70).batch_state is RecordState.ARCHIVED and sp.batch(70).batch_member_id == EMPTY_MEMBER_ID
    assert sp.batch(70).batch_lock is None
    archived, acquired = state(RecordState.ARCHIVED, 1), state(RecordState.ACQUIRED, 1, MEMBER_ID)
    assert sp.batch(10).offset_state == {o: archived if o < 15 else acquired for o in range(10, 20)}
    assert [o for o, s in sp.batch(10).offset_state.items() if s.lock is not None] == list(range(15, 20))
    assert sp.batch(50).offset_state == {o: archived if 58 <= o <= 67 else acquired for o in range(50, 70)}
    assert [o for o, s in sp.batch(50).offset_state.items() if s.lock is None] == list(range(58, 68))


def test_maybe_acquire_and_release_fetch_lock(h):
    """testMaybeAcquireAndReleaseFetchLock / testFetchLockReleasedByDifferentId (without the metrics)."""
    sp = h.partition()
    assert sp.fetch_lock is None
    assert sp.maybe_acquire_fetch_lock("fetch-1")
    assert not sp.maybe_acquire_fetch_lock("fetch-1")
    assert not sp.maybe_acquire_fetch_lock("fetch-2")
    sp.release_fetch_lock("fetch-2")            # not strict, as Kafka's
    assert sp.fetch_lock is None
    assert sp.maybe_acquire_fetch_lock("fetch-2")
