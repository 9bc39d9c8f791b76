"""The share-partition leader's state machine: Kafka's ``SharePartition`` (KIP-932), sans-I/O.

One :class:`SharePartition` per (share group, topic, partition) on the partition's leader. It keeps the
records a share group has in flight: each record's :class:`RecordState` (AVAILABLE, ACQUIRED,
ACKNOWLEDGED, ARCHIVED), the member holding it and its delivery count, between the share-partition start
offset (SPSO, :attr:`SharePartition.start_offset`) and end offset (SPEO, :attr:`SharePartition.end_offset`).

As in Kafka (``core/.../kafka/server/share/SharePartition.java``, 4.3), the records are kept as
:class:`InFlightBatch` es keyed by first offset: one state for the whole batch while all its records share
it, one :class:`InFlightState` per offset once a request touches part of it. That shape is observable:
a whole AVAILABLE batch is re-acquired as one range, a batch tracked per offset as ranges of equal
delivery count, and the state written for persistence follows it.

What the share-partition leader does, and the methods doing it:

* :meth:`SharePartition.next_fetch_offset` / :meth:`~SharePartition.can_acquire_records`: where the next
  log read starts (redelivery of AVAILABLE records first) and whether the in-flight limit
  (``share.partition.max.record.locks``) leaves room;
* :meth:`~SharePartition.acquire`: hands the records of a log read to a member (ShareFetch), each range
  under an acquisition lock of ``share.record.lock.duration.ms`` on the injected :class:`Timers`;
* :meth:`~SharePartition.acknowledge`: ACCEPT, RELEASE, REJECT, GAP and RENEW (ShareFetch's and
  ShareAcknowledge's acknowledgement batches), all or nothing per request;
* :meth:`~SharePartition.release_acquired_records`: a member's share session ended;
* the lock expiry (a :class:`Timers` callback): ACQUIRED records become AVAILABLE again, or ARCHIVED at
  the delivery count limit (``share.delivery.count.limit``);
* :meth:`~SharePartition.update_cache_and_offsets`: the log start offset moved past the SPSO.

Persistence: every change Kafka writes to the share coordinator (WriteShareGroupState) is handed, as a
:class:`PartitionStateBatchData`, to the injected ``write_state`` hook before it takes effect (an exception
from the hook fails an acknowledgement and rolls it back, as a failed write does in Kafka), and merged into
the :class:`ShareSnapshot` that :meth:`SharePartition.persisted_state` returns: what Kafka's share
coordinator keeps in ``__share_group_state`` (its ShareSnapshot and ShareUpdate records; ACQUIRED is never
written). A new :class:`SharePartition` built from that snapshot is the partition after a restart (Kafka's
``maybeInitialize``); a partition without state takes its start offset from ``share.auto.offset.reset``.

Purity: no sockets, no asyncio, no wall clock: time is ``clock()`` (ms), delays go through the keyed
:class:`~groupcoord.coordinator.timer.Timers` the driver advances. Kafka's concurrency (locks, the fetch
lock, futures of persister calls) has no counterpart: every call completes before it returns.

Timer keys: ``("share-lock", group_id, topic_id, partition, instance, n)``, one per acquisition lock.
"""
from __future__ import annotations

import bisect
import enum
import itertools
import re
from dataclasses import dataclass, replace
from typing import Callable, Hashable, Iterable, Iterator, NamedTuple, Protocol, Sequence

from groupcoord.protocol.errors import ErrorCode, KafkaError

from ..timer import Timers

__all__ = [
    "AcknowledgeType", "AcquiredRecords", "AcquisitionLock", "DeliveryCountOps", "EMPTY_MEMBER_ID", "GapWindow",
    "InFlightBatch", "InFlightState", "LogBatch", "PartitionLogView", "PartitionStateBatchData",
    "PersisterStateBatch", "RecordState", "ShareAcknowledgementBatch", "ShareAcquireMode", "ShareAcquiredRecords",
    "ShareSnapshot", "ShareUpdate", "SharePartition", "SharePartitionConfig", "SharePartitionCounters",
    "UNINITIALIZED_START_OFFSET", "acknowledgement_batches_valid", "combine_state_batches",
    "parse_share_auto_offset_reset",
]

#: the member id of records nobody holds
EMPTY_MEMBER_ID = ""
#: the start offset of a share-partition the group coordinator initialized but no leader loaded yet
#: (PartitionFactory.UNINITIALIZED_START_OFFSET)
UNINITIALIZED_START_OFFSET = -1
#: the state epoch of state nobody initialized (PartitionFactory.DEFAULT_STATE_EPOCH)
DEFAULT_STATE_EPOCH = 0
#: SharePartition.MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT
MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2

_E = ErrorCode


# ---- records and acknowledgements ---------------------------------------------------------------

class RecordState(enum.IntEnum):
    """A record's delivery state; the value is the ``DeliveryState`` Kafka persists."""
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3       # KIP-1191's dead-letter queue (trunk); never entered here
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self is RecordState.ACKNOWLEDGED or self is RecordState.ARCHIVED


def _valid_transition(current: RecordState, new: RecordState) -> bool:
    """RecordState.validateTransition: AVAILABLE -> ACQUIRED -> AVAILABLE/ACKNOWLEDGED/ARCHIVED."""
    if current is new or current.terminal:
        return False
    return current is not RecordState.AVAILABLE or new is RecordState.ACQUIRED


class AcknowledgeType(enum.IntEnum):
    """The acknowledgement types of ShareFetch/ShareAcknowledge (0 is Kafka's gap, not a client type)."""
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4           # KIP-1222, ShareFetch/ShareAcknowledge v2 (Kafka 4.2+)


#: SharePartition.ACK_TYPE_TO_RECORD_STATE
_ACK_TYPE_TO_RECORD_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


class ShareAcquireMode(enum.IntEnum):
    """ShareFetch v2's ShareAcquireMode (KIP-1206)."""
    BATCH_OPTIMIZED = 0     # whole log batches; MaxRecords is a soft limit
    RECORD_LIMIT = 1        # never more than MaxRecords records


class DeliveryCountOps(enum.Enum):
    INCREASE = "increase"
    DECREASE = "decrease"   # Kafka 4.1's release of a member's records
    NO_OP = "no-op"


class LogBatch(NamedTuple):
    """A record batch of the log, as a log read returns it: its base and last offset."""
    base_offset: int
    last_offset: int


class AcquiredRecords(NamedTuple):
    """ShareFetchResponse's AcquiredRecords: a range a member now holds."""
    first_offset: int
    last_offset: int
    delivery_count: int


class ShareAcquiredRecords(NamedTuple):
    """What :meth:`SharePartition.acquire` handed out: the ranges and the number of offsets in them."""
    acquired_records: list[AcquiredRecords]
    count: int


class ShareAcknowledgementBatch(NamedTuple):
    """An AcknowledgementBatches entry: one type for the whole range, or one per offset."""
    first_offset: int
    last_offset: int
    acknowledge_types: Sequence[int]


# ---- persisted state (the share coordinator's __share_group_state) -------------------------------

class PersisterStateBatch(NamedTuple):
    """A StateBatch of ShareSnapshot/ShareUpdate and of the Read/WriteShareGroupState RPCs."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class PartitionStateBatchData:
    """One WriteShareGroupState of the share-partition (Kafka's PartitionStateBatchData): the start
    offset and delivery-complete count at the time of the write, and the state batches that changed."""
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[PersisterStateBatch, ...]


@dataclass(frozen=True)
class ShareUpdate:
    """ShareUpdateValue (record type 1 of ``__share_group_state``): one write, as the share coordinator
    records it between snapshots."""
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[PersisterStateBatch, ...]

    @classmethod
    def from_write(cls, write: PartitionStateBatchData, snapshot_epoch: int) -> "ShareUpdate":
        """The update record of a write (ShareCoordinatorShard.generateShareStateRecord)."""
        return cls(snapshot_epoch, write.leader_epoch, write.start_offset, write.delivery_complete_count,
                   tuple(combine_state_batches((), write.state_batches, write.start_offset)))


@dataclass(frozen=True)
class ShareSnapshot:
    """ShareSnapshotValue (record type 0 of ``__share_group_state``): a share-partition's whole state as
    the share coordinator keeps it. ``start_offset`` -1: initialized by the group coordinator, no leader
    has chosen the start offset yet. ``delivery_complete_count`` -1: unknown (written by 4.2+)."""
    state_epoch: int = DEFAULT_STATE_EPOCH
    start_offset: int = UNINITIALIZED_START_OFFSET
    state_batches: tuple[PersisterStateBatch, ...] = ()
    leader_epoch: int = -1
    delivery_complete_count: int = -1
    snapshot_epoch: int = 0
    create_timestamp: int = -1
    write_timestamp: int = -1

    def merge(self, write: PartitionStateBatchData) -> "ShareSnapshot":
        """The state after a write (ShareCoordinatorShard.merge of the write's ShareUpdate)."""
        return self.apply(ShareUpdate.from_write(write, self.snapshot_epoch))

    def apply(self, update: ShareUpdate) -> "ShareSnapshot":
        """The state after a ShareUpdate record (ShareCoordinatorShard.merge)."""
        start = self.start_offset if update.start_offset == -1 else update.start_offset
        leader_epoch = self.leader_epoch if update.leader_epoch == -1 else update.leader_epoch
        return replace(self, start_offset=start, leader_epoch=leader_epoch,
                       delivery_complete_count=update.delivery_complete_count,
                       state_batches=tuple(combine_state_batches(self.state_batches, update.state_batches, start)))


def combine_state_batches(batches_so_far: Iterable[PersisterStateBatch], new_batches: Iterable[PersisterStateBatch],
                          start_offset: int) -> list[PersisterStateBatch]:
    """Kafka's PersisterStateBatchCombiner.combineStateBatches, step for step: the batches before
    ``start_offset`` are dropped (one crossing it is cut), then overlapping batches are merged, offset by
    offset the higher delivery count winning, then the higher delivery state; contiguous batches of equal
    count and state are joined where the merge meets them (not always: Kafka's split is kept, as it
    decides the in-flight batches of a later load)."""
    batches = list(batches_so_far) + list(new_batches)
    if start_offset != -1:
        batches = [b if b.first_offset >= start_offset else b._replace(first_offset=start_offset)
                   for b in batches if b.last_offset >= start_offset]
    if len(batches) < 2:
        return batches
    return _StateBatchMerge(batches).merge()


def _batch_key(b: PersisterStateBatch) -> tuple[int, int, int, int]:
    """PersisterStateBatch.compareTo: first offset, last offset, delivery count, delivery state."""
    return b.first_offset, b.last_offset, b.delivery_count, b.delivery_state


def _compare_delivery_info(b1: PersisterStateBatch, b2: PersisterStateBatch) -> int:
    """compareBatchDeliveryInfo: by delivery count, then delivery state."""
    k1, k2 = (b1.delivery_count, b1.delivery_state), (b2.delivery_count, b2.delivery_state)
    return (k1 > k2) - (k1 < k2)


class _StateBatchMerge:
    """The merge loop of PersisterStateBatchCombiner over its TreeSet (a sorted key list here)."""

    def __init__(self, batches: list[PersisterStateBatch]) -> None:
        self._sorted: list[tuple[int, int, int, int]] = sorted({_batch_key(b) for b in batches})
        self._final: list[PersisterStateBatch] = []

    @staticmethod
    def _batch(key: tuple[int, int, int, int]) -> PersisterStateBatch:
        first, last, count, state = key
        return PersisterStateBatch(first, last, state, count)

    def _add(self, b: PersisterStateBatch) -> None:
        key = _batch_key(b)
        i = bisect.bisect_left(self._sorted, key)
        if i == len(self._sorted) or self._sorted[i] != key:
            self._sorted.insert(i, key)

    def _remove(self, b: PersisterStateBatch) -> None:
        self._sorted.remove(_batch_key(b))

    def merge(self) -> list[PersisterStateBatch]:
        pair = self._merge_candidate_pair()
        while pair is not None:
            prev, candidate = pair
            self._remove(prev)
            self._remove(candidate)
            if _compare_delivery_info(candidate, prev) == 0:        # same state: overlapping or contiguous
                self._add(prev._replace(last_offset=max(candidate.last_offset, prev.last_offset)))
            elif candidate.first_offset == prev.first_offset:
                self._first_offset_aligned(prev, candidate)
            elif candidate.last_offset < prev.last_offset:          # prev swallows candidate
                if _compare_delivery_info(candidate, prev) < 0:
                    self._add(prev)
                else:
                    self._add(prev._replace(last_offset=candidate.first_offset - 1))
                    self._add(candidate)
                    self._add(prev._replace(first_offset=candidate.last_offset + 1))
            elif candidate.last_offset == prev.last_offset:
                if _compare_delivery_info(candidate, prev) < 0:
                    self._add(prev)
                else:
                    self._add(prev._replace(last_offset=candidate.first_offset - 1))
                    self._add(candidate)
            elif _compare_delivery_info(candidate, prev) < 0:     # candidate reaches further
                self._add(prev)
                self._add(candidate._replace(first_offset=prev.last_offset + 1))
            else:
                self._add(prev._replace(last_offset=candidate.first_offset - 1))
                self._add(candidate)
            pair = self._merge_candidate_pair()
        return self._final + [self._batch(k) for k in self._sorted]

    def _first_offset_aligned(self, prev: PersisterStateBatch, candidate: PersisterStateBatch) -> None:
        if candidate.last_offset == prev.last_offset:
            self._add(candidate)        # the set's order puts the higher priority second
        elif _compare_delivery_info(candidate, prev) < 0:
            self._add(prev)
            self._add(candidate._replace(first_offset=prev.last_offset + 1))
        else:
            self._add(candidate)

    def _merge_candidate_pair(self) -> tuple[PersisterStateBatch, PersisterStateBatch] | None:
        """The first two batches that overlap or are contiguous with equal state; the batches before
        them are final."""
        if not self._sorted:
            return None
        keys = self._sorted
        prev = self._batch(keys[0])
        for i in range(1, len(keys)):
            candidate = self._batch(keys[i])
            if candidate.first_offset <= prev.last_offset or (
                    prev.last_offset + 1 == candidate.first_offset and _compare_delivery_info(prev, candidate) == 0):
                self._final += [self._batch(k) for k in keys[:i - 1]]
                del keys[:i - 1]
                return prev, candidate
            prev = candidate
        self._final += [self._batch(k) for k in keys[:-1]]
        del keys[:-1]
        return None


# ---- configuration and the log --------------------------------------------------------------------

@dataclass(frozen=True)
class SharePartitionConfig:
    """The group's share configs the partition reads at each use (assign a new one when they change,
    as Kafka reads its GroupConfigManager at each use). Each is the group config, else the broker's."""
    #: share.record.lock.duration.ms / group.share.record.lock.duration.ms
    record_lock_duration_ms: int = 30_000
    #: share.delivery.count.limit / group.share.delivery.count.limit
    delivery_count_limit: int = 5
    #: share.partition.max.record.locks / group.share.partition.max.record.locks
    partition_max_record_locks: int = 2000
    #: share.renew.acknowledge.enable (4.3; RENEW always allowed in 4.2)
    renew_acknowledge_enable: bool = True
    #: share.auto.offset.reset: latest, earliest or by_duration:<ISO-8601 duration>
    auto_offset_reset: str = "latest"
    #: Kafka 4.1 released a leaving member's records with their delivery count decreased (and so never
    #: archived them at the limit); 4.2 on keeps the count
    release_decreases_delivery_count: bool = False


class PartitionLogView(Protocol):
    """What the initial start offset needs of the partition's log (cluster.PartitionLog has it)."""
    log_start_offset: int
    log_end_offset: int

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None: ...


# Java's Duration.parse: [-+]PnDTnHnMn.nS, case-insensitive, each number signed
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)


def java_duration_ns(text: str) -> int | None:
    """``java.time.Duration.parse(text)`` in nanoseconds, or None when Java refuses the text."""
    m = _DURATION.fullmatch(text)
    if m is None or (m.group(3) or "").upper() == "T" or not any(m.group(i) for i in (2, 4, 5, 6)):
        return None
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    fraction = m.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    if (m.group(6) or "").startswith("-"):
        nanos = -nanos
    total_ns = ((days * 24 + hours) * 60 + minutes) * 60_000_000_000 + seconds * 1_000_000_000 + nanos
    return -total_ns if m.group(1) == "-" else total_ns


def parse_share_auto_offset_reset(value: str) -> tuple[str, int]:
    """ShareGroupAutoOffsetResetStrategy.fromString: ("latest" | "earliest", 0) or ("by_duration",
    nanoseconds); ValueError with the config validator's message otherwise."""
    if value in ("latest", "earliest"):
        return value, 0
    if value.startswith("by_duration:"):
        nanos = java_duration_ns(value[len("by_duration:"):])
        if nanos is not None and nanos >= 0:
            return "by_duration", nanos
    raise ValueError(f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be "
                     "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


# ---- in-flight state ------------------------------------------------------------------------------

_instances = itertools.count()


class AcquisitionLock:
    """Kafka's AcquisitionLockTimerTask: the lock on records acquired together, due at ``deadline_ms``."""
    __slots__ = ("key", "member_id", "first_offset", "last_offset", "deadline_ms", "cancelled", "_timers")

    def __init__(self, timers: Timers, key: Hashable, member_id: str, first_offset: int, last_offset: int,
                 deadline_ms: int) -> None:
        self._timers = timers
        self.key = key
        self.member_id = member_id
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.deadline_ms = deadline_ms
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self._timers.cancel(self.key)

    def __repr__(self) -> str:
        return f"AcquisitionLock({self.member_id!r}, {self.first_offset}-{self.last_offset}, due {self.deadline_ms})"


class InFlightState:
    """The state, delivery count and holder of a batch or an offset (Kafka's InFlightState).

    A state transition of an acknowledgement or a release is staged (:meth:`start_state_transition`)
    until the write of the whole request succeeded (:meth:`complete_state_transition`), else rolled back.
    """
    __slots__ = ("state", "delivery_count", "member_id", "lock", "_rollback")

    def __init__(self, state: RecordState, delivery_count: int, member_id: str = EMPTY_MEMBER_ID,
                 lock: AcquisitionLock | None = None) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.lock = lock
        self._rollback: tuple[RecordState, str] | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InFlightState):
            return NotImplemented
        return (self.state, self.delivery_count, self.member_id) == (other.state, other.delivery_count,
                                                                     other.member_id)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"InFlightState({self.state.name}, {self.delivery_count}, {self.member_id!r})"

    def has_ongoing_state_transition(self) -> bool:
        return self._rollback is not None

    def try_update_state(self, new_state: RecordState, ops: DeliveryCountOps, max_delivery_count: int,
                         new_member_id: str) -> bool:
        """Move to ``new_state`` if allowed (False if not): AVAILABLE becomes ARCHIVED once the delivery
        count reached the limit; the count changes unless the record is archived."""
        if self.has_ongoing_state_transition():
            return False
        if (new_state is RecordState.AVAILABLE and ops is not DeliveryCountOps.DECREASE
                and self.delivery_count >= max_delivery_count):
            new_state = RecordState.ARCHIVED
        if not _valid_transition(self.state, new_state):
            return False
        self.state = new_state
        if new_state is not RecordState.ARCHIVED:
            if ops is DeliveryCountOps.INCREASE:
                self.delivery_count += 1
            elif ops is DeliveryCountOps.DECREASE:
                self.delivery_count -= 1
        self.member_id = new_member_id
        return True

    def start_state_transition(self, new_state: RecordState, ops: DeliveryCountOps, max_delivery_count: int,
                               new_member_id: str) -> bool:
        saved = (self.state, self.member_id)
        if not self.try_update_state(new_state, ops, max_delivery_count, new_member_id):
            return False
        self._rollback = saved
        return True

    def complete_state_transition(self, commit: bool) -> None:
        """Commit (the lock is cancelled: the records left ACQUIRED) or roll back state and holder."""
        if commit:
            self.cancel_and_clear_lock()
        elif self._rollback is not None:
            self.state, self.member_id = self._rollback
        self._rollback = None

    def archive(self) -> None:
        self.state = RecordState.ARCHIVED
        self.member_id = EMPTY_MEMBER_ID
        self.cancel_and_clear_lock()

    def cancel_and_clear_lock(self) -> None:
        if self.lock is not None:
            self.lock.cancel()
            self.lock = None


class InFlightBatch:
    """Records acquired together from the log (Kafka's InFlightBatch): one :class:`InFlightState` for
    all of them, or, once they differ, one per offset (:attr:`offset_state`)."""
    __slots__ = ("first_offset", "last_offset", "_batch_state", "offset_state")

    def __init__(self, first_offset: int, last_offset: int, state: RecordState, delivery_count: int,
                 member_id: str = EMPTY_MEMBER_ID, lock: AcquisitionLock | None = None) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self._batch_state: InFlightState | None = InFlightState(state, delivery_count, member_id, lock)
        #: offset -> state, in offset order; None while the batch has one state
        self.offset_state: dict[int, InFlightState] | None = None

    @property
    def in_flight_state(self) -> InFlightState:
        """The whole batch's state; RuntimeError (Kafka's IllegalStateException) once tracked per offset."""
        if self._batch_state is None:
            raise RuntimeError("The batch state is not available as the offset state is maintained")
        return self._batch_state

    @property
    def batch_state(self) -> RecordState:
        return self.in_flight_state.state

    @property
    def batch_member_id(self) -> str:
        return self.in_flight_state.member_id

    @property
    def batch_delivery_count(self) -> int:
        return self.in_flight_state.delivery_count

    @property
    def batch_lock(self) -> AcquisitionLock | None:
        return self.in_flight_state.lock

    def states(self) -> Iterator[tuple[int, int, InFlightState]]:
        """(first, last, state) of the batch, or of each offset."""
        if self.offset_state is None:
            yield self.first_offset, self.last_offset, self.in_flight_state
        else:
            for offset, state in self.offset_state.items():
                yield offset, offset, state

    def __repr__(self) -> str:
        inner = self._batch_state if self.offset_state is None else self.offset_state
        return f"InFlightBatch({self.first_offset}-{self.last_offset}, {inner})"


class _CachedState:
    """Kafka's cachedState, a NavigableMap first offset -> :class:`InFlightBatch`, on a sorted key list."""

    def __init__(self) -> None:
        self._keys: list[int] = []
        self._batches: dict[int, InFlightBatch] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[InFlightBatch]:
        return (self._batches[k] for k in list(self._keys))

    def get(self, first_offset: int) -> InFlightBatch | None:
        return self._batches.get(first_offset)

    def put(self, batch: InFlightBatch) -> None:
        if batch.first_offset not in self._batches:
            bisect.insort(self._keys, batch.first_offset)
        self._batches[batch.first_offset] = batch

    def first(self) -> InFlightBatch:
        return self._batches[self._keys[0]]

    def last(self) -> InFlightBatch:
        return self._batches[self._keys[-1]]

    def floor(self, offset: int) -> InFlightBatch | None:
        """The batch of the greatest first offset <= offset."""
        i = bisect.bisect_right(self._keys, offset)
        return self._batches[self._keys[i - 1]] if i else None

    def higher_key(self, offset: int) -> int | None:
        i = bisect.bisect_right(self._keys, offset)
        return self._keys[i] if i < len(self._keys) else None

    def lower_key(self, offset: int) -> int | None:
        i = bisect.bisect_left(self._keys, offset)
        return self._keys[i - 1] if i else None

    def sub_map(self, lo: int, hi: int) -> list[InFlightBatch]:
        """The batches whose first offset is in [lo, hi]."""
        i, j = bisect.bisect_left(self._keys, lo), bisect.bisect_right(self._keys, hi)
        return [self._batches[k] for k in self._keys[i:j]]

    def head(self, before: int) -> list[InFlightBatch]:
        """The batches whose first offset is < before."""
        return [self._batches[k] for k in self._keys[:bisect.bisect_left(self._keys, before)]]

    def remove_through(self, last_key: int) -> None:
        """Drop the batches whose first offset is <= last_key."""
        j = bisect.bisect_right(self._keys, last_key)
        for k in self._keys[:j]:
            del self._batches[k]
        del self._keys[:j]

    def clear(self) -> None:
        self._keys.clear()
        self._batches.clear()


@dataclass
class GapWindow:
    """Offsets the persisted state did not cover at load ([gap_start_offset, end_offset], Kafka's
    GapWindow): fetched and acquired as new records until the SPEO passes ``end_offset``."""
    end_offset: int
    gap_start_offset: int


@dataclass
class SharePartitionCounters:
    """Counts of records, for the service's metrics and events (each counted once it took effect)."""
    acquired: int = 0           # records handed to members (each delivery)
    acknowledged: int = 0       # ACCEPTed
    released: int = 0           # RELEASEd, or released when their member's share session ended
    rejected: int = 0           # REJECTed
    gaps: int = 0               # acknowledged as GAP
    renewed: int = 0            # locks renewed (RENEW)
    lock_expired: int = 0       # acquisition locks that expired, in records
    archived: int = 0           # records that became ARCHIVED, for whatever reason


class _Transition(NamedTuple):
    """A staged state change and the state batch it writes (Kafka's PersisterBatch)."""
    state: InFlightState
    batch: PersisterStateBatch
    ack_type: AcknowledgeType | None     # None: a release of the member's records


# ---- the share partition --------------------------------------------------------------------------

class SharePartition:
    """The in-flight records of one share group on one topic-partition (see the module).

    ``timers``, ``clock``  the service's keyed timers and its clock (ms).
    ``config``             :class:`SharePartitionConfig`; :attr:`config` may be replaced at any time.
    ``state``              the persisted state to load (:meth:`persisted_state` of the partition before);
                           None: state the group coordinator initialized (start offset -1, state epoch 0).
    ``log``                the partition's log, needed when the start offset is -1
                           (``share.auto.offset.reset``).
    ``write_state``        called with each write (WriteShareGroupState) before it takes effect; raising
                           KafkaError(code, message) fails it with the share coordinator's error (any
                           other exception: UNKNOWN_SERVER_ERROR).
    ``on_change``          called when records may have become acquirable or the SPSO moved (Kafka
                           completes delayed share fetches then).

    Raises KafkaError when the partition cannot be loaded: OFFSET_NOT_AVAILABLE when ``by_duration``
    finds no record, UNKNOWN_SERVER_ERROR for state batches before the start offset or reversed.
    """

    def __init__(self, group_id: str, topic_id: object, partition: int, *, timers: Timers,
                 clock: Callable[[], int], config: SharePartitionConfig | None = None,
                 state: ShareSnapshot | None = None, log: PartitionLogView | None = None, leader_epoch: int = 0,
                 write_state: Callable[[PartitionStateBatchData], object] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.config = config if config is not None else SharePartitionConfig()
        self.counters = SharePartitionCounters()
        self._timers = timers
        self._clock = clock
        self._write_hook = write_state
        self._on_change = on_change
        self._instance = next(_instances)
        self._lock_seq = itertools.count()
        self._cached = _CachedState()
        self._find_next_fetch_offset = False
        #: the fetch holding the fetch lock (Kafka's fetchLock), None when free
        self.fetch_lock: Hashable | None = None
        self.gap_window: GapWindow | None = None
        self._persisted = state if state is not None else ShareSnapshot()
        self.state_epoch = self._persisted.state_epoch
        self.start_offset = self._start_offset_during_initialization(self._persisted.start_offset, log)
        self.end_offset = self.start_offset
        self._load(self._persisted.state_batches)

    # ---- loading (maybeInitialize) ----

    def _name(self) -> str:
        return f"{self.group_id}-{self.topic_id}:{self.partition}"

    def _start_offset_during_initialization(self, persisted: int, log: PartitionLogView | None) -> int:
        if persisted != UNINITIALIZED_START_OFFSET:
            return persisted
        strategy, nanos = parse_share_auto_offset_reset(self.config.auto_offset_reset)
        if log is None:
            raise ValueError("the start offset comes from the log (share.auto.offset.reset): log is needed")
        if strategy == "latest":
            return log.log_end_offset
        if strategy == "earliest":
            return log.log_start_offset
        timestamp = (self._clock() * 1_000_000 - nanos) // 1_000_000
        found = log.offset_for_timestamp(timestamp)
        if found is None:
            raise KafkaError(_E.OFFSET_NOT_AVAILABLE,
                             f"Offset for timestamp {timestamp} not found for topic partition: "
                             f"{self.topic_id}:{self.partition}")
        return found[0]

    def _load(self, state_batches: Sequence[PersisterStateBatch]) -> None:
        gap_start = -1
        previous_last = self.start_offset - 1
        for b in state_batches:
            if b.first_offset < self.start_offset or b.last_offset < b.first_offset:
                raise KafkaError(_E.UNKNOWN_SERVER_ERROR, f"Failed to initialize the share partition {self._name()}")
            if gap_start == -1 and b.first_offset > previous_last + 1:
                gap_start = previous_last + 1
            previous_last = b.last_offset
            self._cached.put(InFlightBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state),
                                           b.delivery_count))
        if self._cached:
            self._find_next_fetch_offset = True
            self.end_offset = self._cached.last().last_offset
            if gap_start != -1:
                self.gap_window = GapWindow(self.end_offset, gap_start)
            self._maybe_update_cached_state_and_offsets()
        else:
            self.end_offset = self.start_offset

    # ---- reading ----

    @property
    def acquisition_lock_timeout_ms(self) -> int:
        """ShareFetch's AcquisitionLockTimeoutMs: the group's lock duration."""
        return self.config.record_lock_duration_ms

    def cached_state(self) -> list[InFlightBatch]:
        """The in-flight batches in offset order (read them, do not change them)."""
        return list(self._cached)

    def batch(self, first_offset: int) -> InFlightBatch | None:
        """The in-flight batch starting at first_offset."""
        return self._cached.get(first_offset)

    def persisted_state(self) -> ShareSnapshot:
        """What the share coordinator holds for this share-partition: the loaded state with every
        successful write merged in. Load a new SharePartition from it to survive a restart."""
        return self._persisted

    def in_flight_records(self) -> int:
        """SPEO - SPSO + 1 while anything is cached (acknowledged records above the SPSO included)."""
        return 0 if not self._cached else self.end_offset - self.start_offset + 1

    def delivery_complete_count(self) -> int:
        """The records at or after the SPSO in a terminal state (KIP-1226's DeliveryCompleteCount)."""
        count = 0
        for batch in self._cached:
            if batch.last_offset < self.start_offset:
                continue
            for first, last, state in batch.states():
                if state.state.terminal and last >= self.start_offset:
                    count += last - max(first, self.start_offset) + 1
        return count

    def next_fetch_offset(self) -> int:
        """The offset the next log read starts at: the SPEO + 1, or the first AVAILABLE record after a
        release, a lock expiry or a load (redelivery before new records)."""
        cache_is_behind = not self._cached or self.start_offset > self._cached.last().last_offset
        if not self._find_next_fetch_offset:
            return self.end_offset if cache_is_behind else self.end_offset + 1
        if cache_is_behind:
            self._find_next_fetch_offset = False
            return self.end_offset

        next_offset = -1
        gap_start = self.gap_window.gap_start_offset if self._gap_window_active() else -1
        for batch in self._cached:
            if self._gap_window_active():
                if batch.first_offset > gap_start:
                    next_offset = gap_start
                    break
                gap_start = max(batch.last_offset + 1, gap_start)
            for first, _, state in batch.states():
                if state.state is RecordState.AVAILABLE and not state.has_ongoing_state_transition():
                    next_offset = first
                    break
            if next_offset != -1:
                break
        if next_offset == -1:
            self._find_next_fetch_offset = False
            next_offset = self.end_offset + 1
        return next_offset

    def can_acquire_records(self) -> bool:
        """True when redelivery is pending or the in-flight records are below the limit."""
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.in_flight_records() < self.config.partition_max_record_locks

    # ---- the fetch lock ----

    def maybe_acquire_fetch_lock(self, fetch_id: Hashable) -> bool:
        """One fetch at a time reads the log for the share-partition and acquires (from the read of
        :meth:`next_fetch_offset` to :meth:`acquire`); a ShareFetch that cannot take the lock skips the
        partition this time (Kafka's DelayedShareFetch)."""
        if self.fetch_lock is not None:
            return False
        self.fetch_lock = fetch_id
        return True

    def release_fetch_lock(self, fetch_id: Hashable) -> None:
        """Release the fetch lock; as in Kafka, whoever asks (a mismatched id is not refused)."""
        self.fetch_lock = None

    # ---- acquire ----

    def acquire(self, member_id: str, batches: Sequence[LogBatch], *, fetch_offset: int, max_fetch_records: int,
                batch_size: int, acquire_mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED,
                aborted_batches: Sequence[LogBatch] = ()) -> ShareAcquiredRecords:
        """Hand the records of a log read to ``member_id`` (ShareFetch).

        ``batches``          the log's record batches read from ``fetch_offset`` (normally
                             :meth:`next_fetch_offset`), the first one holding it, in offset order.
        ``max_fetch_records`` what is left of the request's MaxRecords: a soft limit in batch_optimized
                             mode (whole log batches), a hard one in record_limit mode.
        ``batch_size``       the request's BatchSize: new records come as ranges of about this size, cut at
                             log batch boundaries (batch_optimized mode).
        ``aborted_batches``  read_committed only: the batches of aborted transactions among ``batches``;
                             they are archived and cut out of the result.

        Returns the ranges now held with their delivery counts and the number of offsets in them.
        """
        record_limit = acquire_mode is ShareAcquireMode.RECORD_LIMIT
        if max_fetch_records <= 0 or not batches:
            return ShareAcquiredRecords([], 0)
        last_batch = batches[-1]
        if last_batch.last_offset < self.start_offset:
            return ShareAcquiredRecords([], 0)
        last_offset_to_acquire, max_records = self._last_offset_and_max_records_to_acquire(
            fetch_offset, max_fetch_records, last_batch.last_offset)
        if max_records <= 0:
            return ShareAcquiredRecords([], 0)

        first_batch = batches[0]
        base_offset = first_batch.base_offset
        self._maybe_archive_stale_batches(fetch_offset, base_offset)

        floor = self._cached.floor(base_offset)
        if floor is None:
            base_offset = max(base_offset, self.start_offset)
        elif floor.last_offset >= base_offset:
            base_offset = floor.first_offset
        overlapping = self._cached.sub_map(min(first_batch.base_offset, base_offset), last_offset_to_acquire)
        if not overlapping:
            acquired = self._acquire_new_batch_records(member_id, batches, record_limit, base_offset,
                                                       last_offset_to_acquire, batch_size, max_records)
            return self._finish_acquire(acquired, aborted_batches)

        result: list[AcquiredRecords] = []
        acquired_count = 0
        maybe_gap_start = base_offset
        for batch in overlapping:
            if acquired_count >= max_records:
                break
            if self._gap_window_active():
                if maybe_gap_start < batch.first_offset:      # offsets the persisted state did not cover
                    gap = self._acquire_new_batch_records(member_id, batches, record_limit, maybe_gap_start,
                                                          batch.first_offset - 1, batch_size,
                                                          max_records - acquired_count)
                    result += gap.acquired_records
                    acquired_count += gap.count
                maybe_gap_start = batch.last_offset + 1
                if acquired_count >= max_records:
                    break

            full_match = batch.first_offset >= first_batch.base_offset and batch.last_offset <= last_offset_to_acquire
            remaining = max_records - acquired_count
            record_limit_subset = record_limit and batch.last_offset - batch.first_offset + 1 > remaining
            throttle = self._should_throttle_records_delivery(batch, first_batch.base_offset, last_offset_to_acquire)
            if throttle and acquired_count > 0:
                # records close to the delivery limit go in a later fetch of their own
                max_records = 0
                break
            if not full_match or batch.offset_state is not None or record_limit_subset or throttle:
                if batch.offset_state is None:
                    state = batch.in_flight_state
                    if state.state is not RecordState.AVAILABLE or state.has_ongoing_state_transition():
                        continue
                    self._initialize_offset_state(batch)
                taken = self._acquire_subset_batch_records(member_id, record_limit, remaining,
                                                           first_batch.base_offset, last_offset_to_acquire,
                                                           batch, result)
                acquired_count += taken
                if throttle and taken > 0:
                    max_records = 0
                    break
                continue

            state = batch.in_flight_state
            if state.state is not RecordState.AVAILABLE or state.has_ongoing_state_transition():
                continue
            if not state.try_update_state(RecordState.ACQUIRED, DeliveryCountOps.INCREASE,
                                          self.config.delivery_count_limit, member_id):
                continue
            state.lock = self._schedule_lock(member_id, batch.first_offset, batch.last_offset)
            result.append(AcquiredRecords(batch.first_offset, batch.last_offset, state.delivery_count))
            acquired_count += batch.last_offset - batch.first_offset + 1

        last_cached = overlapping[-1].last_offset
        if acquired_count < max_records and last_cached < last_offset_to_acquire:
            more = self._acquire_new_batch_records(member_id, batches, record_limit, last_cached + 1,
                                                   last_offset_to_acquire, batch_size, max_records - acquired_count)
            result += more.acquired_records
            acquired_count += more.count
        if result:
            self._maybe_update_gap_window_start(result[-1].last_offset + 1)
        return self._finish_acquire(ShareAcquiredRecords(result, acquired_count), aborted_batches)

    def _finish_acquire(self, acquired: ShareAcquiredRecords, aborted_batches: Sequence[LogBatch]) -> ShareAcquiredRecords:
        if acquired.acquired_records and aborted_batches:
            acquired = self._filter_aborted_transactional_acquired_records(acquired, aborted_batches)
        self.counters.acquired += acquired.count
        return acquired

    def _last_offset_and_max_records_to_acquire(self, fetch_offset: int, max_fetch_records: int,
                                                last_offset: int) -> tuple[int, int]:
        """The in-flight limit: at most limit - in-flight new records; when the partition is full, only
        the records inside the window (released ones) up to the SPEO."""
        max_records = min(max_fetch_records, self.config.partition_max_record_locks - self.in_flight_records())
        last_to_acquire = last_offset
        if max_records <= 0 and fetch_offset <= self.end_offset:
            max_records = min(max_fetch_records, self.end_offset - fetch_offset + 1)
            last_to_acquire = min(last_offset, self.end_offset)
        return last_to_acquire, max_records

    def _acquire_new_batch_records(self, member_id: str, batches: Sequence[LogBatch], record_limit: bool,
                                   first_offset: int, last_offset: int, batch_size: int,
                                   max_fetch_records: int) -> ShareAcquiredRecords:
        """Records of the log not in the cache yet: new in-flight batches, ACQUIRED, delivery count 1."""
        first_acquired = first_offset
        if not self._cached and self.end_offset > first_acquired:
            first_acquired = self.end_offset
        last_acquired = last_offset
        if max_fetch_records < last_acquired - first_acquired + 1:
            # keep whole log batches: up to the end of the batch holding the last record wanted
            last_acquired = _last_offset_of_batch_with(batches, first_acquired + max_fetch_records - 1)
            if self._gap_window_active() and last_acquired > last_offset:
                last_acquired = last_offset
        acquired = self._create_batches(member_id, batches, record_limit, max_fetch_records, first_acquired,
                                        last_acquired, batch_size)
        if self._cached.first().first_offset == first_acquired:
            self.start_offset = first_acquired
        if last_acquired > self.end_offset:
            self.end_offset = last_acquired
        if record_limit:
            last_acquired = acquired[0].last_offset
        self._maybe_update_gap_window_start(last_acquired + 1)
        return ShareAcquiredRecords(acquired, last_acquired - first_acquired + 1)

    def _create_batches(self, member_id: str, batches: Sequence[LogBatch], record_limit: bool, max_fetch_records: int,
                        first_acquired: int, last_acquired: int, batch_size: int) -> list[AcquiredRecords]:
        result: list[AcquiredRecords] = []
        current_first = first_acquired
        if not record_limit and last_acquired - first_acquired + 1 > batch_size:
            for b in batches:           # cut at the first log batch boundary past each batch_size records
                if b.base_offset > last_acquired:
                    break
                if b.base_offset - current_first >= batch_size:
                    result.append(AcquiredRecords(current_first, b.base_offset - 1, 1))
                    current_first = b.base_offset
        result.append(AcquiredRecords(current_first, last_acquired, 1))

        if record_limit and last_acquired - current_first + 1 > max_fetch_records:
            # the cached batch keeps the whole log batches; only max_fetch_records of them are acquired
            batch = InFlightBatch(current_first, last_acquired, RecordState.ACQUIRED, 1, member_id)
            target = current_first + max_fetch_records - 1
            self._initialize_offset_state_up_to(batch, target)
            self._find_next_fetch_offset = True
            self._cached.put(batch)
            return [AcquiredRecords(current_first, target, 1)]

        for r in result:
            lock = self._schedule_lock(member_id, r.first_offset, r.last_offset)
            self._cached.put(InFlightBatch(r.first_offset, r.last_offset, RecordState.ACQUIRED, 1, member_id, lock))
        return result

    def _acquire_subset_batch_records(self, member_id: str, record_limit: bool, max_fetch_records: int,
                                      request_first: int, request_last: int, batch: InFlightBatch,
                                      result: list[AcquiredRecords]) -> int:
        """Acquire the AVAILABLE offsets of a batch tracked per offset; with poison-record isolation."""
        assert batch.offset_state is not None
        acquired: list[AcquiredRecords] = []
        max_delivery_count = self.config.delivery_count_limit
        throttle_limit = _throttle_records_delivery_limit(max_delivery_count)
        throttled_max = -1
        has_throttled = False
        for offset, state in batch.offset_state.items():
            if offset < request_first:
                continue
            if offset > request_last:
                break
            if state.state is not RecordState.AVAILABLE or state.has_ongoing_state_transition():
                continue
            count = state.delivery_count
            if max_delivery_count > 2 and count == max_delivery_count - 1 and acquired:
                break                   # a record on its last attempt is delivered alone, next time
            if count >= throttle_limit and throttled_max < 0:
                throttled_max = max(1, len(batch.offset_state) >> (count - throttle_limit + 1))
                has_throttled = True
            if not state.try_update_state(RecordState.ACQUIRED, DeliveryCountOps.INCREASE, max_delivery_count,
                                          member_id):
                continue
            state.lock = self._schedule_lock(member_id, offset, offset)
            acquired.append(AcquiredRecords(offset, offset, state.delivery_count))
            if state.delivery_count == max_delivery_count and max_delivery_count > 2:
                break                   # on its last attempt: alone
            if record_limit and len(acquired) == max_fetch_records:
                break
            if has_throttled and len(acquired) == throttled_max:
                break
        _accumulate_acquired_records(result, acquired)
        return len(acquired)

    def _should_throttle_records_delivery(self, batch: InFlightBatch, request_first: int, request_last: int) -> bool:
        limit = _throttle_records_delivery_limit(self.config.delivery_count_limit)
        if batch.offset_state is None:
            state = batch.in_flight_state
            return (state.state is RecordState.AVAILABLE and not state.has_ongoing_state_transition()
                    and state.delivery_count >= limit)
        counts = [s.delivery_count for o, s in batch.offset_state.items()
                  if request_first <= o <= request_last and s.state is RecordState.AVAILABLE
                  and not s.has_ongoing_state_transition()]
        return max(counts, default=0) >= limit

    def _maybe_archive_stale_batches(self, fetch_offset: int, base_offset: int) -> None:
        """AVAILABLE batches between the fetch offset and the first batch the log returned are gone
        (compaction): archive them so that the SPSO can move on."""
        if not self._cached or fetch_offset >= base_offset:
            return
        floor_offset = fetch_offset
        floor = self._cached.floor(fetch_offset)
        if floor is not None and floor.last_offset >= fetch_offset:
            floor_offset = floor.first_offset
        stale = self._cached.sub_map(floor_offset, base_offset - 1)
        if stale and self._archive_records(fetch_offset, base_offset, stale, RecordState.AVAILABLE):
            self._find_next_fetch_offset = True

    def _filter_aborted_transactional_acquired_records(self, acquired: ShareAcquiredRecords,
                                                       aborted_batches: Sequence[LogBatch]) -> ShareAcquiredRecords:
        """read_committed: archive the acquired records of aborted transactions and cut them out."""
        for b in aborted_batches:
            floor = self._cached.floor(b.base_offset)
            if floor is None:
                raise RuntimeError("Batch record not found. The request batch offsets are not found in the cache.")
            self._archive_records(b.base_offset, b.last_offset + 1,
                                  self._cached.sub_map(floor.first_offset, b.last_offset), RecordState.ACQUIRED)
        ranges = _filter_record_batches_from_acquired_records(acquired.acquired_records, aborted_batches)
        return ShareAcquiredRecords(ranges, sum(r.last_offset - r.first_offset + 1 for r in ranges))

    # ---- acknowledge ----

    def acknowledge(self, member_id: str, batches: Sequence[ShareAcknowledgementBatch]) -> KafkaError | None:
        """Apply a request's acknowledgements for this partition, all or nothing: None when done, else the
        partition's error as Kafka answers it (INVALID_RECORD_STATE, INVALID_REQUEST, a write's error).

        Batches entirely below the SPSO are skipped; every other offset named must be ACQUIRED by
        ``member_id``. ACCEPT -> ACKNOWLEDGED, RELEASE -> AVAILABLE (ARCHIVED at the delivery limit),
        REJECT and GAP -> ARCHIVED, RENEW restarts the lock (nothing written)."""
        staged: list[_Transition] = []
        error: KafkaError | None = None
        for batch in batches:
            types = list(batch.acknowledge_types)
            if any(t != AcknowledgeType.GAP and t not in _KNOWN_ACK_TYPES for t in types):
                error = KafkaError(_E.INVALID_REQUEST, f"Invalid acknowledge type: [{', '.join(map(str, types))}]")
                break
            if not types or (len(types) > 1 and len(types) != batch.last_offset - batch.first_offset + 1):
                # KafkaApis rejects these first (acknowledgement_batches_valid); Kafka's SharePartition would fail
                error = KafkaError(_E.INVALID_REQUEST)
                break
            if batch.last_offset < self.start_offset:
                continue                # already out of the window
            overlapping = self._fetch_sub_map_for_acknowledgement_batch(batch)
            if isinstance(overlapping, KafkaError):
                error = overlapping
                break
            error = self._acknowledge_batch_records(member_id, batch, types, overlapping, staged)
            if error is not None:
                break
        return self._rollback_or_process_state_updates(error, staged)

    def _fetch_sub_map_for_acknowledgement_batch(self, batch: ShareAcknowledgementBatch) -> list[InFlightBatch] | KafkaError:
        floor = self._cached.floor(batch.first_offset)
        if floor is None:
            if batch.first_offset < self.start_offset <= batch.last_offset:
                floor = self._cached.floor(self.start_offset)
            if floor is None:
                return KafkaError(_E.INVALID_RECORD_STATE,
                                  "Batch record not found. The request batch offsets are not found in the cache.")
        overlapping = self._cached.sub_map(floor.first_offset, batch.last_offset)
        if overlapping[-1].last_offset < batch.first_offset:
            return KafkaError(_E.INVALID_REQUEST,
                              "Batch record not found. The first offset in request is past acquired records.")
        if batch.last_offset > overlapping[-1].last_offset:
            return KafkaError(_E.INVALID_REQUEST,
                              "Batch record not found. The last offset in request is past acquired records.")
        return overlapping

    def _acknowledge_batch_records(self, member_id: str, batch: ShareAcknowledgementBatch, types: list[int],
                                   overlapping: list[InFlightBatch], staged: list[_Transition]) -> KafkaError | None:
        for in_flight in overlapping:
            if in_flight.last_offset < self.start_offset:
                continue
            if in_flight.offset_state is None:
                state = in_flight.in_flight_state
                if state.member_id == EMPTY_MEMBER_ID:
                    return KafkaError(_E.INVALID_RECORD_STATE,
                                      "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if state.member_id != member_id:
                    return KafkaError(_E.INVALID_RECORD_STATE, "Member is not the owner of batch record")
                if state.has_ongoing_state_transition():
                    return KafkaError(_E.INVALID_RECORD_STATE, "The record state is invalid. The acknowledgement "
                                                               "of delivery could not be completed.")
            full_match = in_flight.first_offset >= batch.first_offset and in_flight.last_offset <= batch.last_offset
            per_offset_ack = len(types) > 1
            start_inside = in_flight.first_offset < self.start_offset <= in_flight.last_offset
            if not full_match or in_flight.offset_state is not None or per_offset_ack or start_inside:
                if in_flight.offset_state is None:
                    if in_flight.batch_state is not RecordState.ACQUIRED:
                        return KafkaError(_E.INVALID_RECORD_STATE, "The batch cannot be acknowledged. The subset "
                                                                   "batch is not in the acquired state.")
                    self._initialize_offset_state(in_flight)
                error = self._acknowledge_per_offset_batch_records(member_id, batch, types, in_flight, staged)
            else:
                error = self._acknowledge_complete_batch(member_id, types[0], in_flight, staged)
            if error is not None:
                return error
        return None

    def _acknowledge_per_offset_batch_records(self, member_id: str, batch: ShareAcknowledgementBatch,
                                              types: list[int], in_flight: InFlightBatch,
                                              staged: list[_Transition]) -> KafkaError | None:
        assert in_flight.offset_state is not None
        for offset, state in in_flight.offset_state.items():
            if offset < batch.first_offset or offset < self.start_offset:
                continue
            if offset > batch.last_offset:
                break
            if state.state is not RecordState.ACQUIRED:
                return KafkaError(_E.INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired.")
            if state.has_ongoing_state_transition():
                return KafkaError(_E.INVALID_RECORD_STATE, "The record state is invalid. The acknowledgement of "
                                                           "delivery could not be completed.")
            if state.member_id != member_id:
                return KafkaError(_E.INVALID_RECORD_STATE, "Member is not the owner of offset")
            ack_type = AcknowledgeType(types[offset - batch.first_offset] if len(types) > 1 else types[0])
            if ack_type is AcknowledgeType.RENEW:
                if not self.config.renew_acknowledge_enable:
                    return KafkaError(_E.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group.")
                self._renew_lock(state, member_id, offset, offset)
                continue
            if not state.start_state_transition(_ACK_TYPE_TO_RECORD_STATE[ack_type], DeliveryCountOps.NO_OP,
                                                self.config.delivery_count_limit, EMPTY_MEMBER_ID):
                return KafkaError(_E.INVALID_RECORD_STATE, "Unable to acknowledge records for the batch")
            staged.append(_Transition(state, _state_batch(offset, offset, state), ack_type))
        return None

    def _acknowledge_complete_batch(self, member_id: str, ack_type_id: int, in_flight: InFlightBatch,
                                    staged: list[_Transition]) -> KafkaError | None:
        state = in_flight.in_flight_state
        if state.state is not RecordState.ACQUIRED:
            return KafkaError(_E.INVALID_RECORD_STATE,
                              "The batch cannot be acknowledged. The batch is not in the acquired state.")
        ack_type = AcknowledgeType(ack_type_id)
        if ack_type is AcknowledgeType.RENEW:
            if not self.config.renew_acknowledge_enable:
                return KafkaError(_E.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group.")
            self._renew_lock(state, member_id, in_flight.first_offset, in_flight.last_offset)
            return None
        if not state.start_state_transition(_ACK_TYPE_TO_RECORD_STATE[ack_type], DeliveryCountOps.NO_OP,
                                            self.config.delivery_count_limit, EMPTY_MEMBER_ID):
            return KafkaError(_E.INVALID_RECORD_STATE, "Unable to acknowledge records for the batch")
        staged.append(_Transition(state, _state_batch(in_flight.first_offset, in_flight.last_offset, state), ack_type))
        return None

    def _renew_lock(self, state: InFlightState, member_id: str, first: int, last: int) -> None:
        """RENEW: a new lock of the full duration; the state, count and persisted state stay."""
        state.cancel_and_clear_lock()
        state.lock = self._schedule_lock(member_id, first, last)
        self.counters.renewed += last - first + 1

    # ---- release (a member's share session ended) ----

    def release_acquired_records(self, member_id: str) -> KafkaError | None:
        """Release everything ``member_id`` holds (its share session closed or its connection dropped):
        AVAILABLE again, or ARCHIVED at the delivery limit or below the SPSO; the delivery count stays
        (4.2+; 4.1 decreased it, see :class:`SharePartitionConfig`). None when done, else the write's error."""
        decrease = self.config.release_decreases_delivery_count
        ops = DeliveryCountOps.DECREASE if decrease else DeliveryCountOps.NO_OP
        staged: list[_Transition] = []
        error: KafkaError | None = None
        for batch in self._cached:
            if (batch.offset_state is None and batch.batch_state is RecordState.ACQUIRED
                    and batch.batch_member_id == member_id
                    and batch.first_offset < self.start_offset <= batch.last_offset):
                self._initialize_offset_state(batch)        # the part below the SPSO is archived
            if batch.offset_state is not None:
                for offset, state in batch.offset_state.items():
                    if state.member_id not in (member_id, EMPTY_MEMBER_ID):
                        if decrease:
                            break           # Kafka 4.1 stopped at the first offset of another member
                        continue
                    if state.state is not RecordState.ACQUIRED:
                        continue
                    target = RecordState.ARCHIVED if offset < self.start_offset else RecordState.AVAILABLE
                    if not state.start_state_transition(target, ops, self.config.delivery_count_limit, EMPTY_MEMBER_ID):
                        error = KafkaError(_E.INVALID_RECORD_STATE, "Unable to release acquired records for the offset")
                        break
                    staged.append(_Transition(state, _state_batch(offset, offset, state), None))
                if error is not None:
                    break
                continue
            state = batch.in_flight_state
            if state.member_id not in (member_id, EMPTY_MEMBER_ID) or state.state is not RecordState.ACQUIRED:
                continue
            target = RecordState.ARCHIVED if batch.last_offset < self.start_offset else RecordState.AVAILABLE
            if not state.start_state_transition(target, ops, self.config.delivery_count_limit, EMPTY_MEMBER_ID):
                error = KafkaError(_E.INVALID_RECORD_STATE, "Unable to release acquired records for the batch")
                break
            staged.append(_Transition(state, _state_batch(batch.first_offset, batch.last_offset, state), None))
        return self._rollback_or_process_state_updates(error, staged)

    # ---- writes, commit and rollback ----

    def _rollback_or_process_state_updates(self, error: KafkaError | None, staged: list[_Transition]) -> KafkaError | None:
        if error is None and staged:
            error = self._write_share_group_state([t.batch for t in staged])
        if error is not None:
            for t in staged:
                t.state.complete_state_transition(False)
                if t.state.state is RecordState.AVAILABLE:
                    self._find_next_fetch_offset = True
            return error
        if not staged:
            return None
        for t in staged:
            t.state.complete_state_transition(True)
            if t.state.state is RecordState.AVAILABLE:
                self._find_next_fetch_offset = True
            self._count(t)
        self._maybe_update_cached_state_and_offsets()
        self._notify()
        return None

    def _count(self, t: _Transition) -> None:
        n = t.batch.last_offset - t.batch.first_offset + 1
        c = self.counters
        if t.ack_type is None or t.ack_type is AcknowledgeType.RELEASE:
            c.released += n
        elif t.ack_type is AcknowledgeType.ACCEPT:
            c.acknowledged += n
        elif t.ack_type is AcknowledgeType.REJECT:
            c.rejected += n
        else:
            c.gaps += n
        if t.state.state is RecordState.ARCHIVED:
            c.archived += n

    def _write_share_group_state(self, state_batches: list[PersisterStateBatch]) -> KafkaError | None:
        """WriteShareGroupState: hand the write to the hook, then merge it into the persisted state."""
        write = PartitionStateBatchData(self.state_epoch, self.leader_epoch, self.start_offset,
                                        self.delivery_complete_count(), tuple(state_batches))
        if self._write_hook is not None:
            try:
                self._write_hook(write)
            except KafkaError as e:
                return _persister_error(e)
            except Exception:
                return KafkaError(_E.UNKNOWN_SERVER_ERROR,
                                  f"Failed to write the share group state for share partition {self._name()}")
        self._persisted = self._persisted.merge(write)
        return None

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change()

    # ---- acquisition locks ----

    def _schedule_lock(self, member_id: str, first: int, last: int, delay_ms: int | None = None) -> AcquisitionLock:
        if delay_ms is None:
            delay_ms = self.config.record_lock_duration_ms
        key = ("share-lock", self.group_id, self.topic_id, self.partition, self._instance, next(self._lock_seq))
        lock = AcquisitionLock(self._timers, key, member_id, first, last, self._clock() + delay_ms)
        self._timers.schedule(key, lock.deadline_ms, lambda: self._release_acquisition_lock_on_timeout(lock))
        return lock

    def _release_acquisition_lock_on_timeout(self, lock: AcquisitionLock) -> None:
        """A lock expired: its ACQUIRED records become AVAILABLE, or ARCHIVED at the delivery limit or
        below the SPSO. The write's failure is ignored: the change stands."""
        if lock.cancelled:
            return
        floor = self._cached.floor(lock.first_offset)
        if floor is None:
            return
        state_batches: list[PersisterStateBatch] = []
        expired = archived = 0
        for batch in self._cached.sub_map(floor.first_offset, lock.last_offset):
            if (batch.offset_state is None and batch.batch_state is RecordState.ACQUIRED
                    and batch.first_offset < self.start_offset <= batch.last_offset):
                self._initialize_offset_state(batch)
            for first, last, state in batch.states():
                if first < lock.first_offset or last > lock.last_offset or state.state is not RecordState.ACQUIRED:
                    continue
                target = RecordState.ARCHIVED if last < self.start_offset else RecordState.AVAILABLE
                if not state.try_update_state(target, DeliveryCountOps.NO_OP, self.config.delivery_count_limit,
                                              EMPTY_MEMBER_ID):
                    continue
                state.cancel_and_clear_lock()       # this lock (it fired), as Kafka clears the task
                state_batches.append(_state_batch(first, last, state))
                expired += last - first + 1
                if state.state is RecordState.ARCHIVED:
                    archived += last - first + 1
                else:
                    self._find_next_fetch_offset = True
        if state_batches:
            self.counters.lock_expired += expired
            self.counters.archived += archived
            self._write_share_group_state(state_batches)
            self._maybe_update_cached_state_and_offsets()
            self._notify()

    def _initialize_offset_state(self, batch: InFlightBatch) -> None:
        """Track a batch per offset from now on (InFlightBatch.maybeInitializeOffsetStateUpdate); each
        offset of an acquired batch gets a lock of its own, due when the batch's was."""
        if batch.offset_state is not None:
            return
        whole = batch.in_flight_state
        lock = whole.lock
        whole.cancel_and_clear_lock()
        offsets: dict[int, InFlightState] = {}
        for offset in range(batch.first_offset, batch.last_offset + 1):
            own = None
            if lock is not None:
                own = self._schedule_lock(whole.member_id, offset, offset, lock.deadline_ms - self._clock())
            offsets[offset] = InFlightState(whole.state, whole.delivery_count, whole.member_id, own)
        batch.offset_state = offsets
        batch._batch_state = None

    def _initialize_offset_state_up_to(self, batch: InFlightBatch, target_offset: int) -> None:
        """record_limit mode: the offsets up to target_offset acquired (with locks), the rest AVAILABLE
        with the delivery count before this acquisition."""
        whole = batch.in_flight_state
        offsets: dict[int, InFlightState] = {}
        for offset in range(batch.first_offset, batch.last_offset + 1):
            if offset <= target_offset:
                lock = self._schedule_lock(whole.member_id, offset, offset)
                offsets[offset] = InFlightState(whole.state, whole.delivery_count, whole.member_id, lock)
            else:
                offsets[offset] = InFlightState(RecordState.AVAILABLE, whole.delivery_count - 1)
        batch.offset_state = offsets
        batch._batch_state = None

    # ---- the start offset ----

    def _maybe_update_cached_state_and_offsets(self) -> bool:
        """Move the SPSO past the terminal records at the head of the window; drop the batches that are
        entirely behind it (a batch is dropped only whole, so the SPSO may sit inside one)."""
        if not self._can_move_start_offset():
            return False
        last_acknowledged = self._find_last_offset_acknowledged()
        if last_acknowledged == -1:
            return False
        last_cached = self._cached.last().last_offset
        if last_acknowledged == last_cached:
            self.start_offset = self.end_offset = last_cached + 1
            self._cached.clear()
            return True

        entry = self._cached.floor(last_acknowledged)
        assert entry is not None
        if last_acknowledged == entry.last_offset:
            higher = self._cached.higher_key(last_acknowledged)
            assert higher is not None
            if higher > self.start_offset:
                self.start_offset = higher
            if self._gap_window_active():
                assert self.gap_window is not None
                self.start_offset = min(self.gap_window.gap_start_offset, self.start_offset)
            last_key_to_remove: int | None = entry.first_offset
        else:
            if last_acknowledged + 1 > self.start_offset:
                self.start_offset = last_acknowledged + 1
            last_key_to_remove = self._cached.lower_key(entry.first_offset)
        if last_key_to_remove is not None:
            self._cached.remove_through(last_key_to_remove)
        return True

    def _can_move_start_offset(self) -> bool:
        if not self._cached:
            return False
        entry = self._cached.floor(self.start_offset)
        if entry is None:
            return False            # a gap of the persisted state at the start
        state = entry.in_flight_state if entry.offset_state is None else entry.offset_state.get(self.start_offset)
        if state is None or state.has_ongoing_state_transition():
            return False
        return state.state.terminal

    def _find_last_offset_acknowledged(self) -> int:
        last = -1
        for batch in self._cached:
            if self._gap_window_active():
                assert self.gap_window is not None
                if batch.last_offset >= self.gap_window.gap_start_offset:
                    return last
            for _, state_last, state in batch.states():
                if state.has_ongoing_state_transition() or not state.state.terminal:
                    return last
                last = state_last
        return last

    def update_cache_and_offsets(self, log_start_offset: int) -> None:
        """The log start offset moved past the SPSO (retention, DeleteRecords; the log read answered
        OFFSET_OUT_OF_RANGE): the SPSO (and the SPEO if behind) jump to it, AVAILABLE records below it are
        archived; ACQUIRED ones are archived when released or expired. Nothing is written now."""
        if log_start_offset <= self.start_offset:
            return
        if not self._cached:
            self.start_offset = self.end_offset = log_start_offset
            return
        if self._archive_records(self.start_offset, log_start_offset, self._cached.head(log_start_offset),
                                 RecordState.AVAILABLE):
            self._find_next_fetch_offset = True
        self.start_offset = log_start_offset
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    def _archive_records(self, start: int, end: int, batches: list[InFlightBatch], initial_state: RecordState) -> bool:
        """Archive the records in ``initial_state`` of [start, end) (no write); True if any were."""
        any_archived = False
        for batch in batches:
            if batch.first_offset >= end:
                break
            full_match = batch.first_offset >= start and batch.last_offset <= end - 1
            if not full_match or batch.offset_state is not None:
                if batch.offset_state is None:
                    if batch.batch_state is not initial_state:
                        continue
                    self._initialize_offset_state(batch)
                assert batch.offset_state is not None
                for offset, state in batch.offset_state.items():
                    if offset < start:
                        continue
                    if offset > end - 1:
                        break
                    if state.state is initial_state:
                        state.archive()
                        self.counters.archived += 1
                        any_archived = True
            elif batch.batch_state is initial_state:
                batch.in_flight_state.archive()
                self.counters.archived += batch.last_offset - batch.first_offset + 1
                any_archived = True
        return any_archived

    # ---- the gap window of a load ----

    def _gap_window_active(self) -> bool:
        return self.gap_window is not None and self.gap_window.end_offset == self.end_offset

    def _maybe_update_gap_window_start(self, offset: int) -> None:
        if self.gap_window is None:
            return
        if self.gap_window.end_offset == self.end_offset and offset <= self.gap_window.end_offset:
            self.gap_window.gap_start_offset = offset
        else:
            self.gap_window = None

    # ---- end ----

    def close(self) -> None:
        """The share-partition is dropped (fenced, its last share session gone, the group deleted):
        cancel its acquisition locks. A new SharePartition loads from :meth:`persisted_state`."""
        for batch in self._cached:
            for _, _, state in batch.states():
                state.cancel_and_clear_lock()


# ---- helpers -------------------------------------------------------------------------------------

def acknowledgement_batches_valid(batches: Sequence[ShareAcknowledgementBatch], *, supports_renew: bool,
                                  is_renew_ack: bool) -> bool:
    """KafkaApis.validateAcknowledgementBatches, the check of a partition's acknowledgements before they
    reach the share-partition (False: the partition answers INVALID_REQUEST, no message): ranges in
    order and not reversed, types present, one per offset when more than one, known (RENEW only in
    ShareFetch/ShareAcknowledge v2, ``supports_renew``, and only with IsRenewAck)."""
    previous_last = -1
    max_type = AcknowledgeType.RENEW if supports_renew else AcknowledgeType.REJECT
    for b in batches:
        types = list(b.acknowledge_types)
        if b.first_offset > b.last_offset or b.first_offset < previous_last or not types:
            return False
        if len(types) > 1 and b.last_offset - b.first_offset != len(types) - 1:
            return False
        if any(t < 0 or t > max_type for t in types):
            return False
        if AcknowledgeType.RENEW in types and not is_renew_ack:
            return False
        previous_last = b.last_offset
    return True


_KNOWN_ACK_TYPES = frozenset(int(t) for t in AcknowledgeType if t is not AcknowledgeType.GAP)


def _state_batch(first: int, last: int, state: InFlightState) -> PersisterStateBatch:
    return PersisterStateBatch(first, last, int(state.state), state.delivery_count)


def _throttle_records_delivery_limit(max_delivery_count: int) -> int:
    """Half the delivery limit rounded up, at least 2: from this count on, fewer records per fetch."""
    return max(MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, -(-max_delivery_count // 2))


def _last_offset_of_batch_with(batches: Sequence[LogBatch], offset: int) -> int:
    """The last offset of the log batch holding ``offset``, else ``offset``."""
    previous = None
    for b in batches:
        if offset >= b.base_offset:
            previous = b
            continue
        break
    if previous is not None and offset <= previous.last_offset:
        return previous.last_offset
    return offset


def _accumulate_acquired_records(result: list[AcquiredRecords], acquired: list[AcquiredRecords]) -> None:
    """ShareFetchUtils.accumulateAcquiredRecords: contiguous offsets of equal delivery count, one range."""
    if not acquired:
        return
    first, last, count = acquired[0]
    for r in acquired[1:]:
        if r.first_offset == last + 1 and r.delivery_count == count:
            last = r.last_offset
        else:
            result.append(AcquiredRecords(first, last, count))
            first, last, count = r
    result.append(AcquiredRecords(first, last, count))


def _filter_record_batches_from_acquired_records(acquired: list[AcquiredRecords],
                                                 to_remove: Sequence[LogBatch]) -> list[AcquiredRecords]:
    """The acquired ranges without the offsets of ``to_remove`` (both in offset order)."""
    result: list[AcquiredRecords] = []
    for r in acquired:
        first = r.first_offset
        for b in to_remove:
            if b.last_offset < first or b.base_offset > r.last_offset:
                continue
            if first < b.base_offset:
                result.append(AcquiredRecords(first, b.base_offset - 1, r.delivery_count))
            first = b.last_offset + 1
        if first <= r.last_offset:
            result.append(AcquiredRecords(first, r.last_offset, r.delivery_count))
    return result


def _persister_error(e: KafkaError) -> KafkaError:
    """SharePartition.fetchPersisterError: the share coordinator's error as the partition answers it."""
    code = e.code
    if code in (_E.NOT_COORDINATOR, _E.COORDINATOR_NOT_AVAILABLE, _E.COORDINATOR_LOAD_IN_PROGRESS):
        return KafkaError(_E.COORDINATOR_NOT_AVAILABLE, e.message)
    if code in (_E.GROUP_ID_NOT_FOUND, _E.UNKNOWN_TOPIC_OR_PARTITION):
        return KafkaError(code, e.message)
    if code in (_E.FENCED_LEADER_EPOCH, _E.FENCED_STATE_EPOCH):
        return KafkaError(_E.NOT_LEADER_OR_FOLLOWER, e.message)
    if code in (_E.SASL_AUTHENTICATION_FAILED, _E.UNSUPPORTED_VERSION):
        return KafkaError(_E.UNKNOWN_SERVER_ERROR, "Unable to complete operation due to server error.")
    return KafkaError(_E.UNKNOWN_SERVER_ERROR, e.message)
