"""A SharePartition in virtual time, set up as Kafka's SharePartitionTest sets up its own (its
SharePartitionBuilder and helpers), for the tests of this folder.

Kafka's builder defaults: delivery count limit 5, 200 in-flight records, lock duration 30 s (100 ms in the
lock tests), BatchSize 500, MaxRecords Integer.MAX_VALUE, and ``withState(ACTIVE)``: a share-partition
loaded with start offset 0 and no state batches.
"""
from __future__ import annotations

from groupcoord.coordinator.share.partition import (
    EMPTY_MEMBER_ID, AcquiredRecords, InFlightState, LogBatch, RecordState, ShareAcknowledgementBatch,
    ShareAcquireMode, SharePartition, SharePartitionConfig, ShareSnapshot,
)
from groupcoord.coordinator.timer import Timers

GROUP_ID = "test-group"
TOPIC_ID = "topic-id"
MEMBER_ID = "member-1"
BATCH_SIZE = 500
MAX_FETCH_RECORDS = 2**31 - 1
ACQUISITION_LOCK_TIMEOUT_MS = 100
#: SharePartitionTest.DEFAULT_MAX_WAIT_ACQUISITION_LOCK_TIMEOUT_MS: how far its tests move the clock
DEFAULT_MAX_WAIT_ACQUISITION_LOCK_TIMEOUT_MS = 120

ACCEPT, RELEASE, REJECT, RENEW, GAP = 1, 2, 3, 4, 0

__all__ = ["ACCEPT", "ACQUISITION_LOCK_TIMEOUT_MS", "AcquiredRecords", "BATCH_SIZE",
           "DEFAULT_MAX_WAIT_ACQUISITION_LOCK_TIMEOUT_MS", "EMPTY_MEMBER_ID", "GAP", "Harness", "InFlightState",
           "MAX_FETCH_RECORDS", "MEMBER_ID", "RELEASE", "REJECT", "RENEW", "RecordState", "ShareAcquireMode",
           "ShareSnapshot", "ack", "records", "batches", "state"]


def records(start_offset: int, count: int | None = None) -> list[LogBatch]:
    """Kafka's memoryRecords(startOffset, numOfRecords) (memoryRecords(n): offsets 0 to n - 1), one batch."""
    if count is None:
        start_offset, count = 0, start_offset
    return [LogBatch(start_offset, start_offset + count - 1)]


def batches(*specs: tuple[int, int]) -> list[LogBatch]:
    """Several log batches, each (start offset, number of records), as memoryRecordsBuilder(buffer, ...) x n."""
    return [LogBatch(start, start + count - 1) for start, count in specs]


def ack(first: int, last: int, *types: int) -> ShareAcknowledgementBatch:
    return ShareAcknowledgementBatch(first, last, list(types))


def state(record_state: RecordState, delivery_count: int, member_id: str = EMPTY_MEMBER_ID) -> InFlightState:
    """Kafka's new InFlightState(state, deliveryCount, memberId), compared on those three."""
    return InFlightState(record_state, delivery_count, member_id)


class Harness:
    """A clock and timers the test moves, and the writes the partition made (the persister)."""

    def __init__(self) -> None:
        self.now = 0
        self.timers = Timers()
        self.writes: list = []
        self.fail_writes_with: Exception | None = None

    def clock(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        """Move the clock on and run the timers due: Kafka's mockTimer.advanceClock."""
        self.now += ms
        return self.timers.advance(self.now)

    def _write(self, write) -> None:
        if self.fail_writes_with is not None:
            raise self.fail_writes_with
        self.writes.append(write)

    def partition(self, *, state: ShareSnapshot | None = ShareSnapshot(start_offset=0), log=None,
                  lock_ms: int = 30_000, max_delivery_count: int = 5, max_in_flight: int = 200,
                  on_change=None, **config) -> SharePartition:
        """SharePartitionBuilder.builder()....build(), loaded (``withState(ACTIVE)`` by default)."""
        cfg = SharePartitionConfig(record_lock_duration_ms=lock_ms, delivery_count_limit=max_delivery_count,
                                   partition_max_record_locks=max_in_flight, **config)
        return SharePartition(GROUP_ID, TOPIC_ID, 0, timers=self.timers, clock=self.clock, config=cfg, state=state,
                              log=log, write_state=self._write, on_change=on_change)


def fetch(sp: SharePartition, log_batches: list[LogBatch], expected_count: int, *, member_id: str = MEMBER_ID,
          max_fetch_records: int = MAX_FETCH_RECORDS, batch_size: int = BATCH_SIZE, fetch_offset: int | None = None,
          mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED) -> list[AcquiredRecords]:
    """Kafka's fetchAcquiredRecords: acquire from the first batch's base offset, check the count."""
    if fetch_offset is None:
        fetch_offset = log_batches[0].base_offset
    acquired = sp.acquire(member_id, log_batches, fetch_offset=fetch_offset, max_fetch_records=max_fetch_records,
                          batch_size=batch_size, acquire_mode=mode)
    assert acquired.count == expected_count, acquired
    return acquired.acquired_records


def ranges(*specs: tuple[int, int, int]) -> list[AcquiredRecords]:
    """Expected acquired ranges: (first, last, delivery count) each."""
    return [AcquiredRecords(*s) for s in specs]


def offsets(first: int, last: int, delivery_count: int) -> list[AcquiredRecords]:
    """Kafka's expectedAcquiredRecords(base, last, count): one single-offset range per offset."""
    return [AcquiredRecords(o, o, delivery_count) for o in range(first, last + 1)]


__all__ += ["fetch", "ranges", "offsets"]
