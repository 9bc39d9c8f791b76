"""Our share consumer (:class:`groupcoord.client.ShareConsumer`) behind confluent-kafka's ShareConsumer
API, so that the share interop checks run one scenario against both clients.

Each consumer runs its asyncio loop in a thread of its own; the methods are synchronous, as
confluent-kafka's: ``subscribe``, ``poll(timeout)`` (a list of messages with ``topic()``,
``partition()``, ``offset()``, ``value()``, ``delivery_count()``, ``error()``), ``acknowledge(message,
type)``, ``acknowledge_offset(topic, partition, offset, type)``, ``commit_sync(timeout)`` ({TP: error or
None}), ``set_acknowledgement_commit_callback(cb)`` (cb({TP: offsets}, error), on the consumer's
thread), ``close()``. Configs by Kafka's names, as confluent-kafka takes them.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any

from groupcoord.client import ShareConsumer as OurConsumer
from groupcoord.client.member.share_actions import ShareRecord


class Message:
    __slots__ = ("_r",)

    def __init__(self, record: ShareRecord):
        self._r = record

    def topic(self) -> str:
        return self._r.topic

    def partition(self) -> int:
        return self._r.partition

    def offset(self) -> int:
        return self._r.offset

    def value(self) -> bytes | None:
        return self._r.value

    def key(self) -> bytes | None:
        return self._r.key

    def delivery_count(self) -> int:
        return self._r.delivery_count

    def error(self) -> None:
        return None


class OurShareConsumer:
    def __init__(self, config: dict[str, Any]):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="our-share-consumer", daemon=True)
        self._thread.start()
        self._consumer = self._call(self._make, dict(config))
        self._closed = False

    async def _make(self, config: dict) -> OurConsumer:
        consumer = OurConsumer(config=config)
        return await consumer.start()

    def _call(self, fn, *args, timeout: float | None = 60.0):
        async def run():
            result = fn(*args)
            return await result if asyncio.iscoroutine(result) else result
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def subscribe(self, topics: list[str]) -> None:
        self._call(self._consumer.subscribe, topics)

    def poll(self, timeout: float = 0.0) -> list[Message]:
        return [Message(r) for r in self._call(self._consumer.poll, timeout, timeout=timeout + 60)]

    def acknowledge(self, message: Message, ack_type=1) -> None:
        self._call(self._consumer.acknowledge, message._r, int(ack_type))

    def acknowledge_offset(self, topic: str, partition: int, offset: int, ack_type=1) -> None:
        self._call(self._consumer.acknowledge, (topic, partition, offset), int(ack_type))

    def commit_sync(self, timeout: float | None = None) -> dict:
        return self._call(self._consumer.commit, timeout, timeout=(timeout or 60) + 5)

    def set_acknowledgement_commit_callback(self, callback) -> None:
        self._call(self._consumer.set_acknowledgement_commit_callback, callback)

    def member_id(self) -> str:
        return self._consumer.member.member_id

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._call(self._consumer.close, timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
