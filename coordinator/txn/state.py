"""The transaction states and a transactional id's metadata, as Kafka's ``TransactionState`` and
``TransactionMetadata``: a change is prepared (a :class:`Transit`, the pending state set), written to
the transaction log, then completed (:meth:`TransactionMetadata.complete`); a failed write drops the
pending state."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767

EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT = "Empty", "Ongoing", "PrepareCommit", "PrepareAbort"
COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"

#: state name -> its id in the transaction log (TransactionStatus)
STATE_IDS = {EMPTY: 0, ONGOING: 1, PREPARE_COMMIT: 2, PREPARE_ABORT: 3, COMPLETE_COMMIT: 4, COMPLETE_ABORT: 5,
             DEAD: 6, PREPARE_EPOCH_FENCE: 7}
STATES_BY_ID = {v: k for k, v in STATE_IDS.items()}
#: the states a transactional id may expire in (``TransactionState.expirationAllowed``)
EXPIRABLE = frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT})
#: a state -> the states it may be reached from (``TransactionState.VALID_PREVIOUS_STATES``)
VALID_PREVIOUS = {
    EMPTY: {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    ONGOING: {ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    PREPARE_COMMIT: {ONGOING},
    PREPARE_ABORT: {ONGOING, PREPARE_EPOCH_FENCE, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    COMPLETE_COMMIT: {PREPARE_COMMIT},
    COMPLETE_ABORT: {PREPARE_ABORT},
    DEAD: {EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT},
    PREPARE_EPOCH_FENCE: {ONGOING},
}


def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class Transit:
    """What a transactional id becomes once a prepared change is written (``TxnTransitMetadata``):
    also the value of its transaction log record."""
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: str
    partitions: frozenset           # of (topic, partition)
    start_ms: int
    last_update_ms: int
    client_version: int = 0         # the client's transaction version (2: epoch bumped at each end)


@dataclass
class TransactionMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``)."""
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: str = EMPTY
    partitions: set = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    client_version: int = 0
    pending: str | None = None
    failed_epoch_fence: bool = False

    # ---- reading -------------------------------------------------------------------
    def current(self) -> Transit:
        return Transit(self.producer_id, self.prev_producer_id, self.next_producer_id, self.producer_epoch,
                       self.last_producer_epoch, self.timeout_ms, self.state, frozenset(self.partitions),
                       self.start_ms, self.last_update_ms, self.client_version)

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def has_pending_transaction(self) -> bool:
        return self.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT)

    # ---- preparing changes (each sets the pending state) -------------------------------
    def _prepare(self, state: str, **changes) -> Transit:
        if self.pending is not None:
            raise RuntimeError(f"{self.transactional_id}: transition to {state} while {self.pending} is pending")
        if self.state not in VALID_PREVIOUS[state]:
            raise RuntimeError(f"{self.transactional_id}: no transition from {self.state} to {state}")
        transit = replace(self.current(), state=state, prev_producer_id=self.producer_id, **changes)
        self.pending = state
        return transit

    def prepare_fence_producer_epoch(self) -> Transit:
        bumped = self.producer_epoch if self.failed_epoch_fence or self.producer_epoch == SHORT_MAX \
            else self.producer_epoch + 1
        return self._prepare(PREPARE_EPOCH_FENCE, producer_epoch=bumped)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None, now: int) -> Transit:
        """InitProducerId of an id in Empty or Complete*: the epoch bumped (or kept, for a producer
        retrying with its last epoch). Raises :class:`Fenced` for an epoch neither current nor last."""
        if self.epoch_exhausted:
            raise RuntimeError(f"no more producer epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise Fenced()
        return self._prepare(EMPTY, producer_epoch=epoch, last_producer_epoch=last, timeout_ms=timeout_ms,
                             partitions=frozenset(), start_ms=-1, last_update_ms=now)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now: int,
                                     record_last_epoch: bool) -> Transit:
        return self._prepare(EMPTY, producer_id=new_producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1, last_update_ms=now)

    def prepare_add_partitions(self, added, now: int, client_version: int) -> Transit:
        start = now if self.state in (EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT) else self.start_ms
        return self._prepare(ONGOING, partitions=frozenset(self.partitions) | frozenset(added), start_ms=start,
                             last_update_ms=now, client_version=client_version)

    def prepare_abort_or_commit(self, state: str, client_version: int, next_producer_id: int, now: int,
                                no_partition_added: bool) -> Transit:
        if client_version >= 2:         # transactions V2: the epoch is bumped at each end
            epoch = self.producer_epoch if (self.producer_epoch == SHORT_MAX and state == PREPARE_ABORT) \
                else self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._prepare(state, producer_epoch=epoch, last_producer_epoch=last,
                             start_ms=now if no_partition_added else self.start_ms,
                             next_producer_id=next_producer_id, last_update_ms=now, client_version=client_version)

    def prepare_complete(self, now: int) -> Transit:
        self.failed_epoch_fence = False
        state = COMPLETE_COMMIT if self.state == PREPARE_COMMIT else COMPLETE_ABORT
        if self.client_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._prepare(state, producer_id=pid, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
                             partitions=frozenset(), last_update_ms=now)

    def prepare_dead(self) -> Transit:
        return self._prepare(DEAD, partitions=frozenset())

    # ---- completing -------------------------------------------------------------------
    def complete(self, transit: Transit) -> None:
        """The prepared change was written: it is the state now (``completeTransitionTo``)."""
        if self.pending != transit.state:
            raise RuntimeError(f"{self.transactional_id}: completing {transit.state} while {self.pending} is pending")
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        self.client_version = transit.client_version
        self.state = transit.state
        self.pending = None

    @classmethod
    def from_transit(cls, transactional_id: str, transit: Transit) -> "TransactionMetadata":
        """An id's state read back from the transaction log."""
        meta = cls(transactional_id, transit.producer_id)
        meta.pending = transit.state
        meta.complete(transit)
        return meta


class Fenced(Exception):
    """An InitProducerId with an epoch that is neither the id's current nor its last one."""
