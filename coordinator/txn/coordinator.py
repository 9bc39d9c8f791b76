"""Kafka's transaction coordinator, sans-I/O: the requests of a transactional producer, the markers
that end its transactions, their timeouts, the transaction log.

As Kafka's ``TransactionCoordinator``: every change of a transactional id is prepared, written to the
transaction log (``__transaction_state``, one record per change: the id's whole state), then made the
state, and only then answered. Ending a transaction writes PrepareCommit or PrepareAbort and answers;
the markers follow (a timer at once: Kafka's marker channel), into every partition the transaction
added (``Cluster.write_marker``) and every offsets-topic partition it added with AddOffsetsToTxn (the
group coordinator's ``complete_transaction``), then CompleteCommit or CompleteAbort is written. A
marker that fails for a reason that may pass (a partition still loading, a full disk) is sent again
after :data:`MARKER_RETRY_MS`; one for a partition that no longer exists is dropped, as Kafka does, and so
is one the partition refuses for a newer epoch (see :data:`_MARKER_DONE`).

Placement: the transactional id's partition of the transaction log is ``abs(javaHash(id)) %
transaction.state.log.num.partitions``; partition p is led by the node leading partition p of the
offsets topic (modulo its partitions), so it moves with it when a node goes down. Coordinator epochs
stay 0, as the leader epochs do here.

Kafka names throughout: the states (:mod:`.state`), the errors per step, the configs
``transaction.max.timeout.ms``, ``transaction.abort.timed.out.transaction.cleanup.interval.ms``,
``transactional.id.expiration.ms``, ``transaction.remove.expired.transaction.cleanup.interval.ms``.
"""
from __future__ import annotations

import re
from typing import Callable

import structlog

from groupcoord.protocol.errors import ErrorCode

from ..cluster import OFFSETS_TOPIC, partition_for
from ..events import SCHEMA_VERSION
from ..releases import at_least
from . import state as st
from .state import Fenced, TransactionMetadata, Transit

log = structlog.get_logger("groupcoord.transactions")

_E = ErrorCode
#: how long a marker that failed for a passing reason waits before it is sent again
MARKER_RETRY_MS = 100
#: a marker's errors after which its partition needs no more: the topic is gone (Kafka skips a partition
#: without a leader), or the partition has a newer epoch's marker or producer already (Kafka stops sending;
#: here the partition counts as done: a marker sent again after a restart finds its own there)
_MARKER_DONE = frozenset({_E.UNKNOWN_TOPIC_OR_PARTITION, _E.INVALID_PRODUCER_EPOCH, _E.TRANSACTION_COORDINATOR_FENCED})

Respond = Callable[..., None]


class TransactionCoordinator:
    """Every transactional id's state and the requests on it.

    ``config``: the broker config (the transaction.* settings); ``timers``/``clock``: the service's;
    ``cluster``: placement and the data partitions' markers (``write_marker``); ``groups``: the group
    coordinator (``complete_transaction`` of an offsets-topic partition); ``next_producer_id``: a new
    producer id (never handed out before, restarts included); ``keep(transactional_id, transit)``: the
    transaction log's write (None: a tombstone), raising OSError when it fails, or None when nothing is
    kept; ``emit``: the event bus."""

    def __init__(self, config, timers, clock: Callable[[], int], cluster, groups, *,
                 next_producer_id: Callable[[], int], keep: Callable | None = None,
                 emit: Callable[[dict], None] | None = None) -> None:
        self.timers = timers
        self.clock = clock
        self.cluster = cluster
        self.groups = groups
        self.next_producer_id = next_producer_id
        self.keep = keep
        self.emit = emit
        self.num_partitions = int(config["transaction.state.log.num.partitions"])
        self.max_timeout_ms = int(config["transaction.max.timeout.ms"])
        self.abort_interval_ms = int(config["transaction.abort.timed.out.transaction.cleanup.interval.ms"])
        self.expiration_ms = int(config["transactional.id.expiration.ms"])
        self.expiry_interval_ms = int(config["transaction.remove.expired.transaction.cleanup.interval.ms"])
        #: transactional id -> its state
        self.transactions: dict[str, TransactionMetadata] = {}
        self.coordinator_epoch = 0
        #: the cluster's finalized transaction.version (2 from Kafka 4.0: ApiVersions reports it), which the
        #: coordinator's own aborts (a fenced producer's, a timed-out transaction's) follow
        self.server_version = 2 if at_least(str(config["groupcoord.kafka.version"]), "4.0") else 0
        self._schedule_abort_check()
        self._schedule_expiry()

    # ==================================================================== placement
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def coordinator_node(self, transactional_id: str) -> int:
        leaders = self.cluster.offsets_leaders
        return leaders[self.partition_for(transactional_id) % len(leaders)]

    def is_coordinator(self, transactional_id: str, node_id: int) -> bool:
        return self.coordinator_node(transactional_id) == node_id

    # ==================================================================== the log
    def load(self, states) -> int:
        """The transaction log's states read back at start ((transactional id, Transit) pairs, the latest
        of each): each id as it was; a transaction caught between its PrepareCommit/PrepareAbort and
        its Complete record gets its markers sent again (Kafka's ``loadTransactionsForTxnTopicPartition``).
        Returns how many ids were loaded."""
        for transactional_id, transit in states:
            meta = TransactionMetadata.from_transit(transactional_id, transit)
            self.transactions[transactional_id] = meta
            if meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
                self._send_markers(transactional_id)
        return len(self.transactions)

    def _write(self, meta: TransactionMetadata, transit: Transit) -> int:
        """Write the prepared change, then make it the state (NONE), or drop it (the error)."""
        if self.keep is not None:
            try:
                self.keep(meta.transactional_id, transit)
            except (OSError, ValueError) as exc:
                meta.pending = None
                log.warning("transaction state not written", transactional_id=meta.transactional_id,
                            state=transit.state, error=str(exc))
                return _E.COORDINATOR_NOT_AVAILABLE
        meta.complete(transit)
        return _E.NONE

    # ==================================================================== InitProducerId
    def init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                         expected: tuple[int, int] | None = None, *, enable_2pc: bool = False,
                         keep_prepared: bool = False) -> tuple[int, int, int]:
        """(error, producer id, epoch) (``handleInitProducerId``). ``expected``: the producer id and
        epoch an idempotent or transactional producer resumes with (v3+), None for a new one. A block of
        producer ids that cannot be kept (a full disk) is COORDINATOR_NOT_AVAILABLE, nothing changed."""
        try:
            return self._init_producer_id(transactional_id, timeout_ms, expected, enable_2pc, keep_prepared)
        except OSError as exc:
            log.warning("no producer id block kept", transactional_id=transactional_id, error=str(exc))
            return _E.COORDINATOR_NOT_AVAILABLE, -1, -1

    def _init_producer_id(self, transactional_id, timeout_ms, expected, enable_2pc, keep_prepared):
        if transactional_id is None:
            return _E.NONE, self.next_producer_id(), 0
        if not transactional_id:
            return _E.INVALID_REQUEST, -1, -1
        if enable_2pc:
            return _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1      # (transaction.two.phase.commit.enable off)
        if keep_prepared:
            return _E.UNSUPPORTED_VERSION, -1, -1
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return _E.INVALID_TRANSACTION_TIMEOUT, -1, -1
        now = self.clock()
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = self.transactions[transactional_id] = TransactionMetadata(
                transactional_id, self.next_producer_id(), timeout_ms=timeout_ms, last_update_ms=now)
        error, transit = self._prepare_init(meta, timeout_ms, expected, now)
        if error:
            return error, -1, -1
        if transit.state == st.PREPARE_EPOCH_FENCE:
            # an ongoing transaction: its producer is fenced and the transaction aborted; the new producer
            # retries until that is done
            error = self._end(meta, transit.producer_id, transit.producer_epoch, commit=False, from_client=False,
                              client_version=self.server_version, fence=transit)[0]
            self._event("transaction.fenced", meta, {"cause": "init_producer_id"})
            return (error or _E.CONCURRENT_TRANSACTIONS), -1, -1
        error = self._write(meta, transit)
        if error:
            return error, -1, -1
        self._event("transaction.producer_initialized", meta, {"timeout_ms": meta.timeout_ms})
        return _E.NONE, meta.producer_id, meta.producer_epoch

    def _prepare_init(self, meta: TransactionMetadata, timeout_ms: int, expected, now: int):
        def valid_producer_id(pid: int, epoch: int) -> bool:
            return (meta.producer_epoch == st.NO_PRODUCER_EPOCH or pid == meta.producer_id
                    or (pid == meta.prev_producer_id and st.is_epoch_exhausted(epoch)))
        if meta.pending is not None:
            return _E.CONCURRENT_TRANSACTIONS, None
        if expected is not None and not valid_producer_id(*expected):
            return _E.PRODUCER_FENCED, None
        if meta.state in (st.PREPARE_ABORT, st.PREPARE_COMMIT):
            return _E.CONCURRENT_TRANSACTIONS, None
        if meta.state in (st.COMPLETE_ABORT, st.COMPLETE_COMMIT, st.EMPTY):
            if meta.epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
                return _E.NONE, meta.prepare_producer_id_rotation(self.next_producer_id(), timeout_ms, now,
                                                                  expected is not None)
            try:
                return _E.NONE, meta.prepare_increment_producer_epoch(
                    timeout_ms, None if expected is None else expected[1], now)
            except Fenced:
                return _E.PRODUCER_FENCED, None
            except RuntimeError:        # (epochs exhausted: Kafka's IllegalStateException)
                return _E.UNKNOWN_SERVER_ERROR, None
        if meta.state == st.ONGOING:
            return _E.NONE, meta.prepare_fence_producer_epoch()
        raise RuntimeError(f"transactional id {meta.transactional_id} in state {meta.state}")

    # ==================================================================== AddPartitionsToTxn, AddOffsetsToTxn
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions,
                       client_version: int = 0) -> int:
        """Add (topic, partition)s to the producer's transaction (``handleAddPartitionsToTransaction``);
        the error."""
        if not transactional_id:
            return _E.INVALID_REQUEST
        meta = self.transactions.get(transactional_id)
        if meta is None:
            return _E.INVALID_PRODUCER_ID_MAPPING
        partitions = set(partitions)
        if meta.pending is not None:
            return _E.CONCURRENT_TRANSACTIONS
        if meta.producer_id != producer_id:
            return _E.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return _E.PRODUCER_FENCED
        if meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            return _E.CONCURRENT_TRANSACTIONS
        if meta.state == st.ONGOING and partitions <= meta.partitions:
            return _E.NONE
        began = meta.state != st.ONGOING
        added = partitions - meta.partitions
        error = self._write(meta, meta.prepare_add_partitions(partitions, self.clock(), client_version))
        if not error:
            self._event("transaction.partitions_added", meta, {"partitions": _names(added), "began": began})
        return error

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        """AddOffsetsToTxn: the group's offsets-topic partition joins the transaction."""
        partition = self.groups.partition_of(group_id)
        return self.add_partitions(transactional_id, producer_id, producer_epoch, {(OFFSETS_TOPIC, partition)})

    def verify_partitions(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                          partitions) -> dict:
        """(topic, partition) -> error: whether each is in the producer's ongoing transaction
        (``handleVerifyPartitionsInTransaction``, KIP-890 part 1's server-side defence)."""
        partitions = list(partitions)
        meta = self.transactions.get(transactional_id) if transactional_id else None
        if not transactional_id:
            error = _E.INVALID_REQUEST
        elif meta is None or meta.producer_id != producer_id:
            error = _E.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != producer_epoch:
            error = _E.PRODUCER_FENCED
        elif meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            error = _E.CONCURRENT_TRANSACTIONS
        else:
            return {tp: (_E.NONE if tp in meta.partitions and meta.state == st.ONGOING
                         else _E.TRANSACTION_ABORTABLE) for tp in partitions}
        return {tp: error for tp in partitions}

    def verify_partition(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                         topic: str, partition: int, add: bool = False) -> int | None:
        """The leader's check of a transactional Produce (KIP-890 part 1): None when the partition is in
        the producer's ongoing transaction, else the error of :meth:`verify_partitions`. ``add`` (Produce
        v12, transactions V2): the partition is added to the transaction instead."""
        if add:
            error = self.add_partitions(transactional_id, producer_id, producer_epoch, {(topic, partition)},
                                        client_version=2)
            return None if error == _E.NONE else error
        error = self.verify_partitions(transactional_id, producer_id, producer_epoch, [(topic, partition)])[
            (topic, partition)]
        return None if error == _E.NONE else error

    def verify_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       group_id: str, add: bool = False) -> int | None:
        """The group coordinator's check of a TxnOffsetCommit: the group's offsets partition is in the
        producer's ongoing transaction (AddOffsetsToTxn came first). ``add`` (TxnOffsetCommit v5,
        transactions V2): the partition is added to the transaction instead, as Kafka's ADD_PARTITION
        verification does."""
        if add:
            error = self.add_partitions(transactional_id, producer_id, producer_epoch,
                                        {(OFFSETS_TOPIC, self.groups.partition_of(group_id))}, client_version=2)
            return None if error == _E.NONE else error
        return self.verify_partition(transactional_id, producer_id, producer_epoch, OFFSETS_TOPIC,
                                     self.groups.partition_of(group_id))

    # ==================================================================== EndTxn
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                client_version: int = 0) -> tuple[int, int, int]:
        """(error, producer id, epoch) of an EndTxn (``handleEndTransaction``); the id and epoch are the
        ones to go on with in transactions V2 (EndTxn v5), else -1."""
        return self._end(self.transactions.get(transactional_id) if transactional_id else None, producer_id,
                         producer_epoch, commit=commit, from_client=True, client_version=client_version,
                         transactional_id=transactional_id)

    def _end(self, meta: TransactionMetadata | None, producer_id: int, producer_epoch: int, *, commit: bool,
             from_client: bool, client_version: int, fence: Transit | None = None,
             transactional_id: str | None = None) -> tuple[int, int, int]:
        if meta is None:
            return (_E.INVALID_REQUEST if not transactional_id and fence is None
                    else _E.INVALID_PRODUCER_ID_MAPPING), -1, -1
        if client_version >= 2:
            return self._end_v2(meta, producer_id, producer_epoch, commit, from_client, client_version, fence)
        if meta.producer_id != producer_id:
            return _E.INVALID_PRODUCER_ID_MAPPING, -1, -1
        if fence is None and ((from_client and producer_epoch != meta.producer_epoch)
                              or producer_epoch < meta.producer_epoch):
            return _E.PRODUCER_FENCED, -1, -1
        if meta.pending is not None and meta.pending != st.PREPARE_EPOCH_FENCE:
            return _E.CONCURRENT_TRANSACTIONS, -1, -1
        result = st.PREPARE_COMMIT if commit else st.PREPARE_ABORT
        if meta.state == st.ONGOING:
            if fence is not None:           # the fenced epoch is the transaction's from now on
                meta.pending = None
                meta.producer_epoch = fence.producer_epoch
                meta.last_producer_epoch = st.NO_PRODUCER_EPOCH
            transit = meta.prepare_abort_or_commit(result, 0, st.NO_PRODUCER_ID, self.clock(), False)
        elif meta.state == st.COMPLETE_COMMIT:
            return (_E.NONE if commit else _E.INVALID_TXN_STATE), -1, -1
        elif meta.state == st.COMPLETE_ABORT:
            return (_E.NONE if not commit else _E.INVALID_TXN_STATE), -1, -1
        elif meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            return (_E.CONCURRENT_TRANSACTIONS if result == meta.state else _E.INVALID_TXN_STATE), -1, -1
        else:
            return _E.INVALID_TXN_STATE, -1, -1
        return self._prepared(meta, transit, fence), -1, -1

    def _end_v2(self, meta: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                from_client: bool, client_version: int, fence: Transit | None) -> tuple[int, int, int]:
        """EndTxn of transactions V2 (KIP-890 part 2: the epoch bumped at each end; a retry of the last
        end answered as it was)."""
        is_fence = fence is not None
        retry_on_overflow = (not is_fence and meta.prev_producer_id == producer_id
                             and producer_epoch == st.SHORT_MAX - 1 and meta.producer_epoch == 0)
        retry_on_bump = not is_fence and meta.producer_epoch == producer_epoch + 1
        if is_fence:
            valid_epoch = producer_epoch >= meta.producer_epoch
        elif meta.state in (st.ONGOING, st.EMPTY):
            valid_epoch = producer_epoch == meta.producer_epoch
        elif meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        else:
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if meta.pending is not None and meta.pending != st.PREPARE_EPOCH_FENCE:
            return _E.CONCURRENT_TRANSACTIONS, -1, -1
        if meta.producer_id != producer_id and not retry_on_overflow:
            return _E.INVALID_PRODUCER_ID_MAPPING, -1, -1
        if not valid_epoch:
            return _E.PRODUCER_FENCED, -1, -1
        now = self.clock()
        result = st.PREPARE_COMMIT if commit else st.PREPARE_ABORT
        current = (meta.producer_id, meta.producer_epoch)

        def prepare(no_partition_added: bool) -> Transit:
            if is_fence:
                meta.pending = None
            next_pid = self.next_producer_id() if meta.epoch_exhausted else st.NO_PRODUCER_ID
            return meta.prepare_abort_or_commit(result, client_version, next_pid, now, no_partition_added)

        try:
            return self._end_v2_prepared(meta, commit, result, is_retry, prepare, current, fence)
        except OSError as exc:      # (a block of producer ids not kept: nothing changed)
            log.warning("no producer id block kept", transactional_id=meta.transactional_id, error=str(exc))
            return _E.COORDINATOR_NOT_AVAILABLE, -1, -1

    def _end_v2_prepared(self, meta, commit, result, is_retry, prepare, current, fence) -> tuple[int, int, int]:
        if meta.state == st.ONGOING:
            transit = prepare(False)
        elif meta.state == st.COMPLETE_COMMIT and commit and is_retry:
            return (_E.NONE, *current)
        elif meta.state == st.COMPLETE_ABORT and not commit and is_retry:
            return (_E.NONE, *current)
        elif meta.state in (st.COMPLETE_COMMIT, st.COMPLETE_ABORT, st.EMPTY) and not commit:
            transit = prepare(True)         # an abort with nothing added: the epoch bumped all the same
        elif meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            return (_E.CONCURRENT_TRANSACTIONS if result == meta.state else _E.INVALID_TXN_STATE), -1, -1
        else:
            return _E.INVALID_TXN_STATE, -1, -1
        error = self._prepared(meta, transit, fence)
        if error:
            return error, -1, -1
        next_pid = transit.next_producer_id
        return (_E.NONE, next_pid, 0) if next_pid != st.NO_PRODUCER_ID else (_E.NONE, transit.producer_id,
                                                                            transit.producer_epoch)

    def _prepared(self, meta: TransactionMetadata, transit: Transit, fence: Transit | None) -> int:
        """Write PrepareCommit/PrepareAbort; then the markers go out (the EndTxn is answered first)."""
        error = self._write(meta, transit)
        if error:
            if fence is not None:
                meta.failed_epoch_fence = True
            return error
        self._event("transaction.prepared", meta, {"result": _result(meta.state), "partitions": len(meta.partitions)})
        self._send_markers(meta.transactional_id)
        return _E.NONE

    # ==================================================================== markers
    def _send_markers(self, transactional_id: str, delay_ms: int = 0) -> None:
        self.timers.schedule(("txn-markers", transactional_id), self.clock() + delay_ms,
                             lambda: self._write_markers(transactional_id))

    def _write_markers(self, transactional_id: str) -> None:
        """The markers of a prepared transaction into each partition it added (each removed once
        written: Kafka's ``removePartition``), then its Complete record."""
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state not in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            return
        commit = meta.state == st.PREPARE_COMMIT
        left = set()
        for topic, partition in sorted(meta.partitions):
            try:
                if topic == OFFSETS_TOPIC:
                    error = self.groups.complete_transaction(partition, meta.producer_id, meta.producer_epoch, commit)
                else:
                    error = self.cluster.write_marker(topic, partition, meta.producer_id, meta.producer_epoch, commit,
                                                      self.coordinator_epoch, transaction_version=meta.client_version)
            except OSError as exc:      # (an offsets log not written: its pending offsets stay on disk, retried)
                log.warning("transaction marker not written", transactional_id=transactional_id, topic=topic,
                            partition=partition, error=str(exc))
                error = _E.KAFKA_STORAGE_ERROR
            if error and error not in _MARKER_DONE:
                left.add((topic, partition))
                log.info("transaction marker not written", transactional_id=transactional_id, topic=topic,
                         partition=partition, error=ErrorCode(error).name)
        meta.partitions = left
        if left or self._write(meta, meta.prepare_complete(self.clock())):
            self._send_markers(transactional_id, MARKER_RETRY_MS)
            return
        self._event("transaction.completed", meta, {"result": _result(meta.state),
                                                    "duration_ms": self.clock() - meta.start_ms})

    # ==================================================================== timeouts, expiry
    def _schedule_abort_check(self) -> None:
        self.timers.schedule(("txn-abort-timed-out",), self.clock() + self.abort_interval_ms, self._abort_timed_out)

    def _abort_timed_out(self) -> None:
        """Abort every transaction open for longer than its timeout (``abortTimedOutTransactions``): its
        producer is fenced (the epoch bumped) and the transaction aborted."""
        try:
            self.abort_timed_out_transactions()
        finally:
            self._schedule_abort_check()

    def abort_timed_out_transactions(self) -> int:
        now = self.clock()
        aborted = 0
        for meta in list(self.transactions.values()):
            if meta.pending is not None or meta.state != st.ONGOING or meta.start_ms + meta.timeout_ms >= now:
                continue
            if self._fence_and_abort(meta, "timeout") == _E.NONE:
                aborted += 1
        return aborted

    def abort(self, transactional_id: str) -> int:
        """An operator's abort of the id's open transaction (the admin API's): done as its timeout would
        (the producer fenced, its epoch bumped, the transaction aborted; ``transaction.fenced`` with cause
        "admin"). The error: TRANSACTIONAL_ID_NOT_FOUND, CONCURRENT_TRANSACTIONS (already ending),
        INVALID_TXN_STATE (no open transaction), or that of the transaction log's write."""
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state == st.DEAD:
            return _E.TRANSACTIONAL_ID_NOT_FOUND
        if meta.pending is not None or meta.state in (st.PREPARE_COMMIT, st.PREPARE_ABORT):
            return _E.CONCURRENT_TRANSACTIONS
        if meta.state != st.ONGOING:
            return _E.INVALID_TXN_STATE
        return self._fence_and_abort(meta, "admin")

    def _fence_and_abort(self, meta: TransactionMetadata, cause: str) -> int:
        """Fence the producer of an Ongoing transaction and abort it (``abortTimedOutTransactions``'s
        step for one id); the error."""
        fence = meta.prepare_fence_producer_epoch()
        error = self._end(meta, fence.producer_id, fence.producer_epoch, commit=False, from_client=False,
                          client_version=self.server_version, fence=fence)[0]
        if error:
            meta.pending = None
            log.warning("transaction not aborted", transactional_id=meta.transactional_id, cause=cause,
                        error=ErrorCode(error).name)
            return error
        self._event("transaction.fenced", meta, {"cause": cause})
        return _E.NONE

    def _schedule_expiry(self) -> None:
        self.timers.schedule(("txn-expire-ids",), self.clock() + self.expiry_interval_ms, self._expire)

    def _expire(self) -> None:
        try:
            self.expire_transactional_ids()
        finally:
            self._schedule_expiry()

    def expire_transactional_ids(self) -> int:
        """Forget the ids idle longer than ``transactional.id.expiration.ms`` in a state that allows it
        (a tombstone in the transaction log)."""
        now = self.clock()
        gone = 0
        for meta in list(self.transactions.values()):
            if meta.pending is not None or meta.state not in st.EXPIRABLE \
                    or meta.last_update_ms + self.expiration_ms > now:
                continue
            if self.keep is not None:
                try:
                    self.keep(meta.transactional_id, None)
                except (OSError, ValueError):
                    continue
            del self.transactions[meta.transactional_id]
            gone += 1
        return gone

    # ==================================================================== describing
    def describe(self, transactional_id: str) -> dict:
        """One DescribeTransactions entry (``handleDescribeTransactions``)."""
        out = {"error_code": _E.NONE, "transactional_id": transactional_id, "transaction_state": "",
               "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
               "producer_epoch": -1, "topics": []}
        meta = self.transactions.get(transactional_id) if transactional_id else None
        if not transactional_id:
            out["error_code"] = _E.INVALID_REQUEST
        elif meta is None or meta.state == st.DEAD:
            out["error_code"] = _E.TRANSACTIONAL_ID_NOT_FOUND
        else:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(meta.partitions):
                by_topic.setdefault(topic, []).append(partition)
            out.update(transaction_state=meta.state, transaction_timeout_ms=meta.timeout_ms,
                       transaction_start_time_ms=meta.start_ms, producer_id=meta.producer_id,
                       producer_epoch=meta.producer_epoch,
                       topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()])
        return out

    def list_transactions(self, states=(), producer_ids=(), duration_ms: int = -1,
                          pattern: str | None = None) -> dict:
        """ListTransactions (``listTransactionStates``): the ids in any of ``states`` (all when none),
        of any of ``producer_ids``, open for longer than ``duration_ms`` (-1: any), whose id matches
        ``pattern`` whole (a Java regular expression; Python's here). Raises ValueError for a bad
        pattern, with Kafka's message."""
        known = set(st.STATE_IDS)
        unknown = [s for s in states if s not in known]
        wanted = {s for s in states if s in known}
        compiled = None
        if pattern:
            try:
                compiled = re.compile(pattern)
            except (re.error, OverflowError, RecursionError) as exc:
                raise ValueError(f"Transaction ID pattern `{pattern}` is not a valid regular expression: {exc}.") \
                    from None
        now = self.clock()
        pids = set(producer_ids)
        out = []
        for meta in self.transactions.values():
            if meta.state == st.DEAD or (pids and meta.producer_id not in pids) or (states and meta.state not in wanted):
                continue
            if duration_ms >= 0 and now - meta.start_ms <= duration_ms:
                continue
            if compiled is not None and not compiled.fullmatch(meta.transactional_id):
                continue
            out.append({"transactional_id": meta.transactional_id, "producer_id": meta.producer_id,
                        "transaction_state": meta.state})
        return {"error_code": _E.NONE, "unknown_state_filters": unknown, "transaction_states": out}

    # ==================================================================== events
    def _event(self, kind: str, meta: TransactionMetadata, fields: dict) -> None:
        if self.emit is None:
            return
        event = {"v": SCHEMA_VERSION, "event": kind, "ts_ms": self.clock(), "transactional_id": meta.transactional_id,
                 "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch,
                 "transaction_state": meta.state}
        event.update(fields)
        self.emit(event)


def _names(partitions) -> list[str]:
    return [f"{topic}-{partition}" for topic, partition in sorted(partitions)]


def _result(state: str) -> str:
    return "commit" if state in (st.PREPARE_COMMIT, st.COMPLETE_COMMIT) else "abort"
