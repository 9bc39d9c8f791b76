"""The share-partition start offset (SPSO), loading (maybeInitialize, share.auto.offset.reset) and the
persisted state (ShareSnapshot/ShareUpdate of __share_group_state) across a restart: each test names
the Kafka test it mirrors (SharePartitionTest unless said otherwise, Kafka 4.3)."""
from __future__ import annotations

import pytest
from share_partition_harness import (
    ACCEPT, MEMBER_ID, RELEASE, REJECT, Harness, RecordState, ShareSnapshot, ack, batches, fetch, ranges, records,
)

from groupcoord.coordinator.share.partition import (
    PartitionStateBatchData, PersisterStateBatch, ShareUpdate, combine_state_batches, parse_share_auto_offset_reset,
)
from groupcoord.protocol.errors import ErrorCode, KafkaError

AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


@pytest.fixture
def h() -> Harness:
    return Harness()


class FakeLog:
    """cluster.PartitionLog's offsets: records as (offset, timestamp)."""

    def __init__(self, start: int, end: int, timestamps: list[tuple[int, int]] = ()) -> None:
        self.log_start_offset, self.log_end_offset = start, end
        self.timestamps = list(timestamps)
        self.asked: list[int] = []

    def offset_for_timestamp(self, ts: int):
        self.asked.append(ts)
        return next(((o, t) for o, t in self.timestamps if t >= ts), None)


def snapshot(start: int, *state_batches: tuple[int, int, int, int], state_epoch: int = 3) -> ShareSnapshot:
    return ShareSnapshot(state_epoch=state_epoch, start_offset=start,
                         state_batches=tuple(PersisterStateBatch(*b) for b in state_batches))


# ---- loading ----

def test_maybe_initialize(h):
    """testMaybeInitialize"""
    sp = h.partition(state=snapshot(5, (5, 10, AVAILABLE, 2), (11, 15, ARCHIVED, 3)))
    assert (sp.start_offset, sp.end_offset, sp.state_epoch, sp.next_fetch_offset()) == (5, 15, 3, 5)
    assert [(b.first_offset, b.last_offset) for b in sp.cached_state()] == [(5, 10), (11, 15)]
    assert (sp.batch(5).batch_state, sp.batch(5).batch_delivery_count) == (RecordState.AVAILABLE, 2)
    assert (sp.batch(11).batch_state, sp.batch(11).batch_delivery_count) == (RecordState.ARCHIVED, 3)
    assert sp.batch(5).offset_state is None and sp.batch(11).offset_state is None
    assert sp.delivery_complete_count() == 5
    assert sp.in_flight_records() == 11
    assert sp.gap_window is None


@pytest.mark.parametrize("reset, expected", [("earliest", 0), ("latest", 15)])
def test_maybe_initialize_default_start_epoch_group_config_returns(h, reset, expected):
    """testMaybeInitializeDefaultStartEpochGroupConfigReturnsEarliest / ...ReturnsLatest: start offset -1
    (initialized, never loaded) takes share.auto.offset.reset; nothing is written for it."""
    sp = h.partition(state=ShareSnapshot(), log=FakeLog(0, 15), auto_offset_reset=reset)
    assert (sp.start_offset, sp.end_offset, sp.state_epoch, sp.delivery_complete_count()) == (expected, expected, 0, 0)
    assert sp.persisted_state().start_offset == -1
    assert h.writes == []


def test_maybe_initialize_default_start_epoch_group_config_returns_by_duration(h):
    """testMaybeInitializeDefaultStartEpochGroupConfigReturnsByDuration: the first record at or after
    now - duration."""
    h.now = 10 * 3_600_000
    log = FakeLog(0, 60, [(o, o * 600_000) for o in range(60)])         # a record every 10 minutes
    sp = h.partition(state=ShareSnapshot(), log=log, auto_offset_reset="by_duration:PT1H")
    assert log.asked == [9 * 3_600_000]
    assert (sp.start_offset, sp.end_offset) == (54, 54)


def test_maybe_initialize_fetch_offset_for_by_duration_throws_error(h):
    """testMaybeInitializeFetchOffsetForByDurationThrowsError: no record that recent -> the load fails
    (ShareFetchUtils.offsetForTimestamp: OffsetNotAvailableException)."""
    h.now = 10 * 3_600_000
    with pytest.raises(KafkaError) as failed:
        h.partition(state=ShareSnapshot(), log=FakeLog(0, 3, [(0, 0), (1, 1), (2, 2)]),
                    auto_offset_reset="by_duration:PT1H")
    assert failed.value.code is ErrorCode.OFFSET_NOT_AVAILABLE


def test_maybe_initialize_with_invalid_start_offset_state_batches(h):
    """testMaybeInitializeWithInvalidStartOffsetStateBatches: a state batch before the start offset."""
    with pytest.raises(KafkaError) as failed:
        h.partition(state=snapshot(6, (5, 10, AVAILABLE, 2), (11, 15, ARCHIVED, 3)))
    assert failed.value.code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_maybe_initialize_state_batches_with_gap_at_beginning(h):
    """testMaybeInitializeStateBatchesWithGapAtBeginning: offsets no state batch covers are fetched again."""
    sp = h.partition(state=snapshot(10, (15, 20, ACKNOWLEDGED, 2), (21, 30, ARCHIVED, 3)))
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (10, 30, 10)
    assert (sp.gap_window.gap_start_offset, sp.gap_window.end_offset) == (10, 30)
    assert sp.delivery_complete_count() == 16


def test_maybe_initialize_state_batches_with_gap_not_at_beginning(h):
    """testMaybeInitializeStateBatchesWithGapNotAtBeginning"""
    sp = h.partition(state=snapshot(15, (15, 20, ACKNOWLEDGED, 2), (30, 40, ARCHIVED, 3)))
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (21, 40, 21)
    assert [b.first_offset for b in sp.cached_state()] == [30]
    assert (sp.gap_window.gap_start_offset, sp.gap_window.end_offset) == (21, 40)
    assert sp.delivery_complete_count() == 11


def test_maybe_initialize_state_batches_without_gaps(h):
    """testMaybeInitializeStateBatchesWithoutGaps: all terminal -> the window starts after them."""
    sp = h.partition(state=snapshot(15, (15, 20, ACKNOWLEDGED, 2), (21, 30, ARCHIVED, 3)))
    assert sp.cached_state() == []
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset(), sp.delivery_complete_count()) == (31, 31, 31, 0)
    assert sp.gap_window is None


def test_maybe_initialize_and_acquire(h):
    """testMaybeInitializeAndAcquire: the gaps of the loaded state are acquired as new records (count 1),
    the loaded AVAILABLE batches with their count + 1."""
    sp = h.partition(state=snapshot(10, (15, 18, AVAILABLE, 2), (20, 22, ARCHIVED, 2), (26, 30, AVAILABLE, 1)))
    assert (len(sp.cached_state()), sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (3, 10, 30, 10)
    assert sp.delivery_complete_count() == 3
    log = records(10, 40)
    assert fetch(sp, log, 5, max_fetch_records=1, fetch_offset=10) == ranges((10, 14, 1))
    assert sp.next_fetch_offset() == 15
    assert sp.gap_window.gap_start_offset == 15
    got = fetch(sp, log, 13, max_fetch_records=10, fetch_offset=15)
    assert got == ranges((15, 18, 3), (19, 19, 1), (23, 25, 1), (26, 30, 2))
    assert sp.next_fetch_offset() == 31
    assert [b.first_offset for b in sp.cached_state()] == [10, 15, 19, 20, 23, 26]
    assert sp.gap_window is None
    # the gaps are filled: whole log batches again, MaxRecords soft
    assert fetch(sp, log, 19, max_fetch_records=1, fetch_offset=31) == ranges((31, 49, 1))
    assert (sp.next_fetch_offset(), sp.end_offset, sp.delivery_complete_count()) == (50, 49, 3)


# ---- the start offset ----

@pytest.mark.parametrize("ack_type", [ACCEPT, REJECT])
def test_maybe_update_cached_state_when_acknowledge_type_accept_or_reject(h, ack_type):
    """testMaybeUpdateCachedStateWhenAcknowledgeTypeAccept / ...Reject"""
    sp = h.partition()
    fetch(sp, records(250), 250)
    assert not sp.can_acquire_records()
    assert sp.acknowledge(MEMBER_ID, [ack(0, 249, ack_type)]) is None
    assert (sp.next_fetch_offset(), sp.start_offset, sp.end_offset) == (250, 250, 250)
    assert sp.can_acquire_records()
    assert sp.cached_state() == [] and sp.delivery_complete_count() == 0


def test_maybe_update_cached_state_when_acknowledge_type_release(h):
    """testMaybeUpdateCachedStateWhenAcknowledgeTypeRelease: released records hold the SPSO."""
    sp = h.partition()
    fetch(sp, records(250), 250)
    assert sp.acknowledge(MEMBER_ID, [ack(0, 249, RELEASE)]) is None
    assert (sp.start_offset, sp.end_offset) == (0, 249)
    assert sp.can_acquire_records()
    b = sp.batch(0)
    assert (b.batch_state, b.batch_member_id, b.batch_delivery_count) == (RecordState.AVAILABLE, "", 1)


def test_maybe_update_cached_state_when_acknowledgements_from_beginning_for_batch_subset(h):
    """testMaybeUpdateCachedStateWhenAcknowledgementsFromBeginningForBatchSubset: the SPSO inside a batch."""
    sp = h.partition(max_in_flight=20)
    fetch(sp, records(15), 15)
    assert sp.can_acquire_records()
    fetch(sp, records(15, 15), 15)
    assert not sp.can_acquire_records()
    assert sp.acknowledge(MEMBER_ID, [ack(0, 12, ACCEPT)]) is None
    assert sp.batch(0).offset_state[12].state is RecordState.ACKNOWLEDGED
    assert sp.batch(0).offset_state[13].state is RecordState.ACQUIRED
    assert sp.batch(15).batch_state is RecordState.ACQUIRED
    assert sp.can_acquire_records()
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset(), sp.delivery_complete_count()) == (13, 29, 30, 0)


def test_maybe_update_cached_state_when_acknowledgements_from_beginning_for_entire_batch(h):
    """testMaybeUpdateCachedStateWhenAcknowledgementsFromBeginningForEntireBatch"""
    sp = h.partition(max_in_flight=20)
    fetch(sp, records(15), 15)
    fetch(sp, records(15, 15), 15)
    assert sp.acknowledge(MEMBER_ID, [ack(0, 14, REJECT)]) is None
    assert (sp.batch(15).batch_state, sp.batch(15).batch_member_id) == (RecordState.ACQUIRED, MEMBER_ID)
    assert sp.can_acquire_records()
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (15, 29, 30)
    assert [b.first_offset for b in sp.cached_state()] == [15]


def test_maybe_update_cached_state_when_acknowledgements_in_between(h):
    """testMaybeUpdateCachedStateWhenAcknowledgementsInBetween: terminal records after a held one: the SPSO
    stays, and they still count against the in-flight limit."""
    sp = h.partition(max_in_flight=20)
    fetch(sp, records(15), 15)
    fetch(sp, records(15, 15), 15)
    assert sp.acknowledge(MEMBER_ID, [ack(10, 14, REJECT)]) is None
    assert sp.batch(0).offset_state[9].state is RecordState.ACQUIRED
    assert sp.batch(0).offset_state[10].state is RecordState.ARCHIVED
    assert not sp.can_acquire_records()
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset(), sp.delivery_complete_count()) == (0, 29, 30, 5)


def test_maybe_update_cached_state_when_all_records_in_cached_state_are_acknowledged(h):
    """testMaybeUpdateCachedStateWhenAllRecordsInCachedStateAreAcknowledged"""
    sp = h.partition(max_in_flight=20)
    fetch(sp, records(15), 15)
    fetch(sp, records(15, 15), 15)
    assert sp.acknowledge(MEMBER_ID, [ack(0, 29, ACCEPT)]) is None
    assert sp.can_acquire_records()
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset(), sp.delivery_complete_count()) == (30, 30, 30, 0)


def test_maybe_update_cached_state_multiple_acquisitions_and_acknowledgements(h):
    """testMaybeUpdateCachedStateMultipleAcquisitionsAndAcknowledgements"""
    sp = h.partition(max_in_flight=100)
    for start in (0, 20, 40):
        fetch(sp, records(start, 20), 20)
        assert sp.can_acquire_records()
    sp.acknowledge(MEMBER_ID, [ack(0, 19, ACCEPT)])
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (20, 59, 60)
    fetch(sp, records(60, 20), 20)
    sp.acknowledge(MEMBER_ID, [ack(20, 49, ACCEPT)])
    assert sp.batch(40).offset_state[49].state is RecordState.ACKNOWLEDGED
    assert sp.batch(40).offset_state[50].state is RecordState.ACQUIRED
    assert sp.batch(60).batch_state is RecordState.ACQUIRED
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (50, 79, 80)
    fetch(sp, records(80, 100), 100)
    assert not sp.can_acquire_records()
    sp.acknowledge(MEMBER_ID, [ack(50, 179, REJECT)])
    assert sp.cached_state() == []
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (180, 180, 180)
    fetch(sp, records(180, 20), 20)
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (180, 199, 200)


def test_maybe_update_cached_state_gap_after_last_offset_acknowledged(h):
    """testMaybeUpdateCachedStateGapAfterLastOffsetAcknowledged: the SPSO stops at a gap of the loaded state."""
    sp = h.partition(state=snapshot(11, (11, 20, AVAILABLE, 1), (31, 40, ARCHIVED, 1)))
    assert sp.delivery_complete_count() == 10
    fetch(sp, records(11, 10), 10)
    assert sp.acknowledge(MEMBER_ID, [ack(11, 20, ACCEPT)]) is None
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset(), sp.delivery_complete_count()) == (21, 40, 21, 10)
    assert (sp.gap_window.gap_start_offset, sp.gap_window.end_offset) == (21, 40)


def test_lso_movement_on_initialization_share_partition(h):
    """testLsoMovementOnInitializationSharePartition"""
    sp = h.partition()
    sp.update_cache_and_offsets(0)
    assert (sp.next_fetch_offset(), sp.start_offset, sp.end_offset) == (0, 0, 0)
    sp.update_cache_and_offsets(5)
    assert (sp.next_fetch_offset(), sp.start_offset, sp.end_offset) == (5, 5, 5)


def test_lso_movement_for_archiving_batches(h):
    """testLsoMovementForArchivingBatches: the log start offset passed the SPSO: AVAILABLE records behind
    it are archived, ACQUIRED ones stay with their holders."""
    sp = h.partition()
    for start in (2, 7, 12, 17, 22, 27, 32):
        fetch(sp, records(start, 5), 5)
    sp.acknowledge(MEMBER_ID, [ack(2, 6, ACCEPT), ack(12, 16, RELEASE), ack(22, 26, RELEASE), ack(27, 31, REJECT)])
    assert sp.delivery_complete_count() == 5
    sp.update_cache_and_offsets(20)
    assert (sp.next_fetch_offset(), sp.start_offset, sp.end_offset) == (22, 20, 36)
    got = {b.first_offset: (b.batch_state, b.batch_member_id, b.batch_lock is not None) for b in sp.cached_state()}
    assert got == {7: (RecordState.ACQUIRED, MEMBER_ID, True), 12: (RecordState.ARCHIVED, "", False),
                   17: (RecordState.ACQUIRED, MEMBER_ID, True), 22: (RecordState.AVAILABLE, "", False),
                   27: (RecordState.ARCHIVED, "", False), 32: (RecordState.ACQUIRED, MEMBER_ID, True)}
    assert sp.delivery_complete_count() == 5


# ---- the persisted state ----

@pytest.mark.parametrize("case", [
    # PersisterStateBatchCombinerTest's cases: (batches so far, new batches, start offset, expected)
    ([(100, 130, 0, 1)], [], 120, [(120, 130, 0, 1)]),
    ([], [(100, 130, 0, 1)], 120, [(120, 130, 0, 1)]),
    ([], [], 120, []),
    ([(100, 110, 0, 1)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(100, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ([(100, 110, 0, 1)], [(105, 108, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ([(100, 110, 0, 1)], [(105, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ([(100, 110, 0, 1)], [(111, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    # Kafka's data expects [(100, 110, 0, 1), (111, 123, 2, 2)]: its combiner (and this one) keeps 124-130
    ([(100, 110, 0, 1), (121, 130, 0, 1)], [(111, 119, 2, 2), (116, 123, 2, 2)], -1,
     [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)]),
    ([(100, 110, 0, 1)], [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)], -1, [(100, 100, 0, 1), (101, 120, 3, 2)]),
    ([(100, 110, 0, 1), (121, 130, 0, 1)], [(111, 119, 2, 2), (116, 123, 2, 2)], 120, [(120, 123, 2, 2), (124, 130, 0, 1)]),
    ([(111, 120, 0, 1)], [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)], -1,
     [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)]),
    ([(100, 110, 0, 1)], [(100, 110, 0, 2)], -1, [(100, 110, 0, 2)]),
    ([(100, 110, 0, 3)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 3)]),
    ([(100, 110, 0, 1)], [(100, 105, 0, 2)], -1, [(100, 105, 0, 2), (106, 110, 0, 1)]),
    ([(100, 110, 0, 3)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 3)]),
    ([(100, 110, 0, 1)], [(100, 115, 0, 2)], -1, [(100, 115, 0, 2)]),
    ([(100, 110, 0, 3)], [(100, 115, 0, 1)], -1, [(100, 110, 0, 3), (111, 115, 0, 1)]),
    ([(100, 115, 0, 1)], [(105, 110, 1, 1)], -1, [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)]),
    ([(100, 115, 1, 1)], [(105, 110, 0, 1)], -1, [(100, 115, 1, 1)]),
    ([(100, 110, 0, 1)], [(105, 110, 0, 2)], -1, [(100, 104, 0, 1), (105, 110, 0, 2)]),
    ([(100, 110, 0, 2)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 2)]),
    ([(100, 110, 0, 1)], [(105, 115, 0, 2)], -1, [(100, 104, 0, 1), (105, 115, 0, 2)]),
    ([(100, 110, 0, 2)], [(105, 115, 0, 1)], -1, [(100, 110, 0, 2), (111, 115, 0, 1)]),
    # Kafka's split, not the shortest one: a batch made final before a later merge is not joined again
    ([(5, 5, 2, 4), (6, 12, 2, 4)], [(6, 11, 0, 1), (13, 16, 4, 4)], -1, [(5, 5, 2, 4), (6, 12, 2, 4), (13, 16, 4, 4)]),
])
def test_state_batch_combine(case):
    """PersisterStateBatchCombinerTest (share-coordinator): how the share coordinator merges a write."""
    so_far, new, start, expected = case
    got = combine_state_batches([PersisterStateBatch(*b) for b in so_far], [PersisterStateBatch(*b) for b in new], start)
    assert [tuple(b) for b in got] == expected


def test_write_share_group_state(h):
    """testWriteShareGroupState / SharePartition.writeShareGroupState: each change is written with the
    state epoch, leader epoch, the start offset *before* the change moves it and the delivery-complete
    count; ACQUIRED is never written; the share coordinator merges the writes (ShareCoordinatorShard.merge)."""
    sp = h.partition(state=ShareSnapshot(state_epoch=2, start_offset=0))
    fetch(sp, records(10), 10)
    fetch(sp, records(10, 10), 10)
    assert h.writes == []                                     # acquisition writes nothing
    sp.acknowledge(MEMBER_ID, [ack(0, 4, ACCEPT)])          # part of a batch: written offset by offset
    assert h.writes[-1] == PartitionStateBatchData(2, 0, 0, 5, tuple((o, o, ACKNOWLEDGED, 1) for o in range(5)))
    assert sp.start_offset == 5
    after_first = sp.persisted_state()
    assert after_first.start_offset == 0                      # the SPSO is written with the next write
    assert after_first.state_batches == ((0, 4, ACKNOWLEDGED, 1),)
    sp.acknowledge(MEMBER_ID, [ack(10, 19, RELEASE)])
    assert h.writes[-1] == PartitionStateBatchData(2, 0, 5, 0, ((10, 19, AVAILABLE, 1),))
    persisted = sp.persisted_state()
    assert (persisted.state_epoch, persisted.start_offset, persisted.delivery_complete_count) == (2, 5, 0)
    assert persisted.state_batches == ((10, 19, AVAILABLE, 1),)
    # the same through the ShareUpdate record the share coordinator appends for the write
    assert after_first.apply(ShareUpdate.from_write(h.writes[-1], snapshot_epoch=0)) == persisted


def test_persisted_state_survives_a_restart(h):
    """The snapshot round trip (Kafka: the share coordinator's state read back by a new leader,
    testMaybeInitialize*): what was acknowledged is never delivered again, what was held but not
    acknowledged is (a gap of the state, as new records with count 1), released records keep their count."""
    sp = h.partition(state=ShareSnapshot(state_epoch=1), log=FakeLog(0, 0), auto_offset_reset="earliest")
    assert sp.persisted_state().start_offset == -1
    log = batches((0, 10), (10, 10), (20, 10))
    fetch(sp, log[:1], 10)
    fetch(sp, log[1:2], 10)
    fetch(sp, log[2:], 10, member_id="member-2")
    assert sp.acknowledge(MEMBER_ID, [ack(0, 4, ACCEPT)]) is None          # 5-9 held, never written
    assert sp.acknowledge(MEMBER_ID, [ack(10, 19, RELEASE)]) is None
    saved = sp.persisted_state()
    assert (saved.state_epoch, saved.start_offset) == (1, 5)
    assert saved.state_batches == ((10, 19, AVAILABLE, 1),)
    sp.close()
    assert len(h.timers) == 0

    restarted = h.partition(state=saved)
    assert (restarted.start_offset, restarted.end_offset, restarted.next_fetch_offset()) == (5, 19, 5)
    assert (restarted.gap_window.gap_start_offset, restarted.gap_window.end_offset) == (5, 19)
    got = fetch(restarted, log, 25, member_id="member-3", fetch_offset=5)
    assert got == ranges((5, 9, 1), (10, 19, 2), (20, 29, 1))
    assert restarted.acknowledge("member-3", [ack(5, 29, ACCEPT)]) is None
    assert (restarted.start_offset, restarted.cached_state()) == (30, [])
    again = h.partition(state=restarted.persisted_state())
    assert (again.start_offset, again.next_fetch_offset(), again.cached_state()) == (30, 30, [])


def test_parse_share_auto_offset_reset():
    """ShareGroupAutoOffsetResetStrategyTest: latest, earliest, by_duration:<ISO-8601> (not negative)."""
    assert parse_share_auto_offset_reset("latest") == ("latest", 0)
    assert parse_share_auto_offset_reset("earliest") == ("earliest", 0)
    assert parse_share_auto_offset_reset("by_duration:PT1H") == ("by_duration", 3_600 * 10**9)
    assert parse_share_auto_offset_reset("by_duration:P1DT0.5S") == ("by_duration", (86_400 * 10**9) + 5 * 10**8)
    for bad in ("none", "LATEST", "by_duration", "by_duration:", "by_duration:-PT1H", "by_duration:PT", "by_duration:1H"):
        with pytest.raises(ValueError):
            parse_share_auto_offset_reset(bad)


def test_the_share_partition_imports_without_asyncio():
    """The sans-I/O core's rule (pyproject's import-linter contract "no asyncio below the drivers"),
    checked here for coordinator.share, which that contract does not list yet."""
    import subprocess
    import sys
    code = "import sys, groupcoord.coordinator.share.partition; sys.exit('asyncio' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
