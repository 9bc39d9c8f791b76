"""Per-partition producer state: idempotence, transactions and the aborted-transactions index.

Sans-I/O, as Kafka's storage classes it mirrors (Kafka 4.3, ``storage/internals/log``):

- :class:`ProducerStateEntry` (``ProducerStateEntry``): per producer id its epoch, the sequence metadata
  of its last :data:`NUM_BATCHES_TO_RETAIN` batches (``BatchMetadata``), the coordinator epoch of the last
  marker and the first offset of its ongoing transaction.
- :class:`ProducerAppendInfo` (``ProducerAppendInfo``): the checks of an append (epoch, sequence,
  coordinator epoch) against a copy of the entry, taken by :meth:`ProducerStateManager.update` only
  once the whole append is accepted (all or nothing).
- :class:`ProducerStateManager` (``ProducerStateManager``): the entries, the ongoing transactions by
  first offset (``ongoingTxns``; the lowest is the first unstable offset, which bounds the last stable
  offset) and the aborted transactions (:class:`TxnIndex`, Kafka's per-segment ``TransactionIndex``
  of ``AbortedTxn``).

Appends come from three origins (Kafka's ``AppendOrigin``): a client's Produce (``CLIENT``: every check),
a transaction marker (``COORDINATOR``: epoch and coordinator-epoch checks, no sequence) and the replay of
a log at load (``REPLICATION``: no check raises; Kafka's ``loadProducersFromRecords``).
"""
from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from groupcoord.protocol.errors import ErrorCode

NUM_BATCHES_TO_RETAIN = 5           # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1

# EndTransactionMarker's control record: key ControlRecordTypeSchema v0 (Version int16, Type int16),
# value EndTxnMarker v0 (Version int16, CoordinatorEpoch int32); ControlRecordType ABORT 0, COMMIT 1
ABORT, COMMIT = 0, 1
CONTROL_KEY_SIZE = 4


class Origin(Enum):
    """Kafka's AppendOrigin (the ones that matter here)."""
    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


class ProducerStateError(Exception):
    """An append refused: the error code the partition answers, and why."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence: sequences wrap from Int32 max to 0."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """ProducerAppendInfo.inSequence: the next one, or 0 after Int32 max."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def end_txn_marker_key(commit: bool) -> bytes:
    return (0).to_bytes(2, "big") + (COMMIT if commit else ABORT).to_bytes(2, "big")


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return (0).to_bytes(2, "big") + coordinator_epoch.to_bytes(4, "big", signed=True)


def parse_end_txn_marker(key: bytes | None, value: bytes | None) -> tuple[int, int]:
    """(control type, coordinator epoch) of an EndTransactionMarker record (EndTransactionMarker.deserialize;
    a key version or value version newer than 0 is read as 0, as Kafka does)."""
    if key is None or len(key) < CONTROL_KEY_SIZE or value is None or len(value) < 6:
        raise ValueError("not an end transaction marker")
    return int.from_bytes(key[2:4], "big", signed=True), int.from_bytes(value[2:6], "big", signed=True)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Kafka's BatchMetadata: what a duplicate is recognised by and answered with."""
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """Kafka's ProducerStateEntry."""
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque = field(default_factory=deque)

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def without_batches(self) -> "ProducerStateEntry":
        """ProducerStateEntry.withProducerId: the same state, no batch metadata (what an append adds)."""
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset)

    def _maybe_update_epoch(self, epoch: int) -> None:
        if self.producer_epoch != epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def _add_metadata(self, batch: BatchMetadata) -> None:
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(batch)

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self._maybe_update_epoch(epoch)
        self._add_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, other: "ProducerStateEntry") -> None:
        """ProducerStateEntry.update(nextEntry): take an append's outcome."""
        self._maybe_update_epoch(other.producer_epoch)
        for batch in other.batches:
            self._add_metadata(batch)
        self.coordinator_epoch = other.coordinator_epoch
        self.current_txn_first_offset = other.current_txn_first_offset
        self.last_timestamp = other.last_timestamp

    def end_transaction(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """ProducerStateEntry.update(epoch, coordinatorEpoch, lastTimestamp): a marker was written."""
        self._maybe_update_epoch(epoch)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """ProducerStateEntry.findDuplicateBatch: a cached batch of this epoch with exactly that range."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """Kafka's CompletedTxn: a transaction a marker ended (last offset: the marker's)."""
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """Kafka's AbortedTxn: an entry of the transaction index. ``last_stable_offset``: the partition's LSO
    once the marker was written (what lets a lookup stop early)."""
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class ProducerAppendInfo:
    """Kafka's ProducerAppendInfo: one producer's batches of one append, checked against its entry."""

    def __init__(self, partition: str, producer_id: int, current: ProducerStateEntry, origin: Origin) -> None:
        self.partition = partition
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.without_batches()
        self.started_transactions: list[int] = []       # first offsets (TxnMetadata)

    def _check_producer_epoch(self, epoch: int, offset: int, transaction_version: int = 0) -> None:
        current = self.updated.producer_epoch
        invalid = epoch <= current if transaction_version >= 2 else epoch < current
        if not invalid:
            return
        if (transaction_version >= 2 and epoch == current
                and (self.updated.current_txn_first_offset is None or epoch == INT16_MAX)):
            return          # KAFKA-19999: a TV2 marker written again after it was written
        if self.origin is not Origin.REPLICATION:
            # since 2.7 INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED: the producer can abort and go on
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {self.producer_id} at offset {offset} in {self.partition} is {epoch}, "
                f"which is {'<=' if transaction_version >= 2 else '<'} the last seen epoch {current}")

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"partition {self.partition}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)")
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # no current epoch (an unknown producer, or its records all gone): any sequence is taken
        if not (current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(last_seq, first_seq)):
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition "
                f"{self.partition}: {first_seq} (incoming seq. number), {last_seq} (current end sequence number)")

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int,
                          first_offset: int, last_offset: int, transactional: bool) -> None:
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is Origin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        updated = self.updated
        updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        if updated.current_txn_first_offset is not None and not transactional:
            if self.origin is not Origin.REPLICATION:
                raise ProducerStateError(
                    ErrorCode.INVALID_TXN_STATE,
                    f"Expected transactional write from producer {self.producer_id} at offset {first_offset} "
                    f"in partition {self.partition}")
        elif updated.current_txn_first_offset is None and transactional:
            updated.current_txn_first_offset = first_offset
            self.started_transactions.append(first_offset)

    def append_end_txn_marker(self, control_type: int, coordinator_epoch: int, epoch: int, offset: int,
                              timestamp: int, transaction_version: int = 0) -> CompletedTxn | None:
        """A commit or abort marker at ``offset``: the transaction it ends, if the producer had one here."""
        self._check_producer_epoch(epoch, offset, transaction_version)
        updated = self.updated
        if updated.coordinator_epoch > coordinator_epoch and self.origin is not Origin.REPLICATION:
            raise ProducerStateError(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in partition "
                f"{self.partition}: {coordinator_epoch} (zombie), {updated.coordinator_epoch} (current)")
        completed = None
        if updated.current_txn_first_offset is not None:
            completed = CompletedTxn(self.producer_id, updated.current_txn_first_offset, offset,
                                     control_type == ABORT)
        updated.end_transaction(epoch, coordinator_epoch, timestamp)
        return completed


class TxnIndex:
    """The aborted transactions of a partition in marker order (Kafka's TransactionIndex, one for the
    whole log rather than one per segment)."""

    __slots__ = ("entries", "_lasts")

    def __init__(self) -> None:
        self.entries: list[AbortedTxn] = []
        self._lasts: list[int] = []

    def append(self, aborted: AbortedTxn) -> None:
        self.entries.append(aborted)
        self._lasts.append(aborted.last_offset)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """TransactionIndex.collectAbortedTxns: those overlapping [fetch_offset, upper_bound_offset), the
        search done once an entry's LSO reaches the upper bound."""
        out = []
        entries = self.entries
        for i in range(bisect.bisect_left(self._lasts, fetch_offset), len(entries)):
            aborted = entries[i]
            if aborted.first_offset < upper_bound_offset:
                out.append(aborted)
            if aborted.last_stable_offset >= upper_bound_offset:
                break
        return out

    def truncate_below(self, log_start_offset: int) -> None:
        """Retention: the entries whose marker is below the log start go with their segments."""
        cut = bisect.bisect_left(self._lasts, log_start_offset)
        if cut:
            del self.entries[:cut], self._lasts[:cut]


class ProducerStateManager:
    """Kafka's ProducerStateManager for one partition (no snapshots: the log is replayed at load)."""

    __slots__ = ("partition", "producers", "ongoing", "aborted")

    def __init__(self, partition: str) -> None:
        self.partition = partition
        self.producers: dict[int, ProducerStateEntry] = {}
        #: first offset -> producer id of each ongoing transaction, in offset order (a transaction starts
        #: at the log end, so insertion order is offset order)
        self.ongoing: dict[int, int] = {}
        self.aborted = TxnIndex()

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: Origin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(self.partition, producer_id, current, origin)

    def update(self, info: ProducerAppendInfo) -> None:
        current = self.producers.get(info.producer_id)
        if current is not None:
            current.update(info.updated)
        else:
            self.producers[info.producer_id] = info.updated
        for first_offset in info.started_transactions:
            self.ongoing[first_offset] = info.producer_id

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget the producers without an open transaction here whose last batch is older than
        ``expiration_ms`` (``removeExpiredProducers`` with ``isProducerExpired``); how many went."""
        gone = [pid for pid, entry in self.producers.items()
                if entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= expiration_ms]
        for pid in gone:
            del self.producers[pid]
        return len(gone)

    def first_undecided_offset(self) -> int | None:
        return next(iter(self.ongoing), None)

    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """UnifiedLog.hasOngoingTransaction."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None and entry.producer_epoch == epoch

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """ProducerStateManager.lastStableOffset(completedTxn): the first offset of the next transaction of
        another producer still open, else right after the marker."""
        for first_offset, producer_id in self.ongoing.items():
            if producer_id != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """The transaction index gets an aborted transaction (with the LSO after it, as
        LogSegment.updateTxnIndex), and the transaction is no longer ongoing (completeTxn)."""
        if completed.is_aborted:
            self.aborted.append(AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset,
                                           self.last_stable_offset(completed)))
        if self.ongoing.pop(completed.first_offset, None) is None:
            raise ValueError(f"transaction {completed} completed on {self.partition} was not started")
