"""The asyncio driver of :class:`~groupcoord.client.member.share.ShareMember`: a share consumer
(KIP-932, Kafka's queues), with Kafka's ShareConsumer's API.

    consumer = ShareConsumer("jobs", config={"bootstrap.servers": gc.bootstrap_servers,
                                             "group.id": "workers"})
    await consumer.start()
    while running:
        for record in await consumer.poll(1.0):   # records acquired for this consumer
            ...                                    # (record.delivery_count: 1 the first time)
    await consumer.commit()                        # implicit mode: this poll's records accepted
    await consumer.close()

``share.acknowledgement.mode``: ``implicit`` (the default) accepts every record of a poll at the
next poll or commit; ``explicit`` makes the application call ``acknowledge(record, type)`` for each
(ACCEPT, RELEASE: deliver again, REJECT: never again) before it polls again. Acknowledgements go
out with the next fetch or at once; ``commit()`` sends them all and returns each partition's
result; ``set_acknowledgement_commit_callback(cb)`` hears of every one, ``cb(offsets, error)``
per partition, offsets a set of TopicPartition-qualified offsets as ``{TP: {offsets}}``.

A record is delivered under an acquisition lock (``acquisition_lock_timeout_ms``, the group's
share.record.lock.duration.ms); a record whose lock expired before the application polled is not
handed out, and acknowledging one whose lock expired fails with INVALID_RECORD_STATE in its commit
result, as the leader may have given it to another consumer meanwhile. ``close()`` sends the
acknowledgements made and closes the share sessions, which releases everything else the consumer
holds (in implicit mode the last poll's records too, as Kafka's close does: commit first to accept
them), then leaves the group.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable, Iterable, Mapping

from groupcoord.protocol.aio import wait_event

from .assignors.base import TopicPartition
from .connection import ResponseCache
from .consumer import ConsumerClosedError, MemberDriver, monotonic_ms
from .consumer_config import ConfigError, ShareConsumerConfig
from .member.share import ShareMember
from .member.share_actions import ACCEPT, AcknowledgementsCommitted, ShareCommitCompleted, ShareRecord

log = logging.getLogger("groupcoord.client.share_consumer")

TP = TopicPartition


class ShareConsumer(MemberDriver):
    """A share-group consumer over asyncio. See the module docstring."""

    def __init__(self, *topics: str, config: Mapping[str, Any] | ShareConsumerConfig | None = None,
                 clock: Callable[[], int] = monotonic_ms, max_versions: Mapping[int, int] | None = None,
                 response_cache: ResponseCache | None = None, rng=None, **configs: Any):
        if isinstance(config, ShareConsumerConfig):
            self.config = config.with_overrides({k.replace("_", "."): v for k, v in configs.items()}) \
                if configs else config
        else:
            merged = dict(config or {})
            merged.update({k.replace("_", "."): v for k, v in configs.items()})
            self.config = ShareConsumerConfig(merged)
        if not self.config["bootstrap.servers"]:
            raise ConfigError("bootstrap.servers", "is required")
        self._init_driver(clock, False, response_cache)
        self.member = ShareMember(self.config, topics=topics, now=clock(), rng=rng, max_versions=max_versions)
        self._commit_waiters: dict[int, asyncio.Future] = {}
        self._ack_callback: Callable | None = None

    # ============================================================================ lifecycle
    async def start(self) -> "ShareConsumer":
        if self._pump_task is None:
            self._start_driver()
        return self

    async def close(self, timeout: float | None = None) -> None:
        """Kafka's close: the acknowledgements made go out as the share sessions close (releasing
        whatever else is held), then the consumer leaves its group."""
        await self._close_member(timeout)

    async def __aenter__(self) -> "ShareConsumer":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ============================================================================ the API
    def subscribe(self, topics: Iterable[str]) -> None:
        self.member.subscribe(topics, self._clock())
        self._wake()

    def unsubscribe(self) -> None:
        self.member.subscribe((), self._clock())
        self._wake()

    def subscription(self) -> set[str]:
        return set(self.member.subscription)

    def assignment(self) -> set[TP]:
        """The partitions the group's assignor gave this consumer (shared with others when the
        group has more consumers than partitions)."""
        return set(self.member.assignment)

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        return self.member.acquisition_lock_timeout_ms

    async def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ShareRecord]:
        """Records acquired for this consumer (possibly none), waiting up to timeout seconds. In
        implicit mode the last poll's records are accepted first; in explicit mode each must have
        been acknowledged (IllegalStateError otherwise)."""
        self._check_open()
        self.member.application_poll(self._clock())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self._raise_errors()
            records = self.member.take_records(self._clock(), max_records)
            self._wake()                      # acknowledgements to send, or records to fetch
            if records:
                return records
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            self._records_ready.clear()
            if not await wait_event(self._records_ready, remaining):
                self._raise_errors()
                return []

    def acknowledge(self, record: ShareRecord | tuple, type: int = ACCEPT) -> None:
        """Explicit mode: ACCEPT, RELEASE or REJECT a record of the last poll (a ShareRecord or
        (topic, partition, offset))."""
        self.member.acknowledge(record, type)

    async def commit(self, timeout: float | None = None) -> dict[TP, Exception | None]:
        """Send every acknowledgement made and wait for the leaders' answers: each partition's
        result (None when accepted), as Kafka's commitSync."""
        self._check_open()
        handle = self.member.commit(self._clock())
        fut = asyncio.get_running_loop().create_future()
        self._commit_waiters[handle] = fut
        self._drain_now()
        self._wake()
        wait = timeout if timeout is not None else self.config["default.api.timeout.ms"] / 1000
        results = await asyncio.wait_for(fut, wait)
        return {tp: error for tp, (_offsets, error) in results.items()}

    def commit_async(self) -> None:
        """Send every acknowledgement made without waiting (the callback hears the results)."""
        self._check_open()
        self.member.commit(self._clock())
        self._drain_now()
        self._wake()

    def set_acknowledgement_commit_callback(self, callback: Callable[[dict, Exception | None], Any] | None) -> None:
        """callback({TP: offsets}, error) for each partition's acknowledgements once answered
        (plain or async); None removes it."""
        self._ack_callback = callback

    # ============================================================================ the pump
    def _check_open(self) -> None:
        if self._pump_task is None:
            raise ConsumerClosedError("start() the consumer first")
        if self.member.fatal_error is not None:
            raise self.member.fatal_error
        if self._closed_event.is_set():
            raise ConsumerClosedError("the consumer is closed")

    def _execute_other(self, action) -> None:
        if isinstance(action, ShareCommitCompleted):
            fut = self._commit_waiters.pop(action.handle, None)
            if fut is not None and not fut.done():
                if action.error is None:
                    fut.set_result(action.results)
                else:
                    fut.set_exception(action.error)
        elif isinstance(action, AcknowledgementsCommitted):
            callback = self._ack_callback
            if callback is None:
                for tp, (offsets, error) in action.results.items():
                    if error is not None:
                        log.info("acknowledgement of %s %s failed: %s", tp, sorted(offsets), error)
                return
            for tp, (offsets, error) in action.results.items():
                try:
                    result = callback({tp: set(offsets)}, error)
                    if inspect.isawaitable(result):
                        self._spawn(result)
                except Exception:
                    log.exception("acknowledgement commit callback failed")

    def _fail_waiters(self, error: Exception) -> None:
        for fut in self._commit_waiters.values():
            if not fut.done():
                fut.set_exception(error)
        self._commit_waiters.clear()

    def _after_action(self) -> None:
        if self.member.fetcher.buffer:
            self._records_ready.set()

    def __repr__(self) -> str:
        return f"ShareConsumer({self.member!r})"
