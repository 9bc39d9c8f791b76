"""Helpers of the admin API tests: consumers of our client library, polling until the group
is stable, producing with aiokafka, and JSON calls over HTTP."""
from __future__ import annotations

import asyncio

from groupcoord.client import GroupConsumer
from groupcoord.client.assignors.base import TopicPartition as TP

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "retry.backoff.ms": 50,
        "auto.offset.reset": "earliest", "enable.auto.commit": False}


def make_consumer(gc, *topics, group: str, opened: list, **config) -> GroupConsumer:
    c = GroupConsumer(*topics, config={"bootstrap.servers": gc.bootstrap_servers, "group.id": group, **FAST,
                                       **{k.replace("_", "."): v for k, v in config.items()}})
    opened.append(c)
    return c


async def until(predicate, consumers=(), timeout: float = 20.0, what: str = "condition", records=None):
    """Poll the consumers (so that they heartbeat and rebalance) until predicate() is true;
    what they return goes to ``records`` (a list) when given."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if consumers:
            for polled in await asyncio.gather(*(c.poll(0.02) for c in consumers)):
                if records is not None:
                    records.extend(polled)
        else:
            await asyncio.sleep(0.02)
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")


async def stable(gc, consumers, group: str, timeout: float = 20.0, records=None):
    """Until the group is Stable with exactly these consumers, each knowing its assignment."""
    def done():
        g = gc.service.group_coordinator.group(group)
        owned = [tp for c in consumers for tp in c.assignment()]
        topics = set().union(*(c.subscription() for c in consumers))
        expected = {TP(t, p) for t in topics for p in range(gc.service.partition_count(t))}
        return (g is not None and g.state == "Stable" and len(g.members) == len(consumers)
                and all(c.member.stable and c.member.generation_id == g.generation_id for c in consumers)
                and len(owned) == len(set(owned)) and set(owned) == expected) and g
    return await until(done, consumers, timeout, f"group {group} to be stable", records)


async def produce(gc, topic: str, messages) -> list:
    """Produce (partition, value[, timestamp_ms]) with aiokafka; returns the record metadata."""
    from aiokafka import AIOKafkaProducer
    producer = AIOKafkaProducer(bootstrap_servers=gc.bootstrap_servers, acks="all", linger_ms=0)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=m[1].encode(), partition=m[0],
                                       timestamp_ms=m[2] if len(m) > 2 else None) for m in messages]
        return [await f for f in futures]
    finally:
        await producer.stop()


class Http:
    """JSON over aiohttp against the admin URL: ``await http.get(path)`` -> (status, body)."""

    def __init__(self, session, base: str, token: str | None = None):
        self.session = session
        self.base = base
        self.token = token

    async def call(self, method: str, path: str, body=None, *, token=..., raw: bytes | None = None,
                   headers=None):
        headers = dict(headers or {})
        token = self.token if token is ... else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        kwargs = {"json": body} if raw is None and body is not None else {"data": raw}
        async with self.session.request(method, self.base + path, headers=headers, **kwargs) as r:
            assert r.content_type == "application/json", (r.status, await r.text())
            return r.status, await r.json()

    async def get(self, path, **kw):
        return await self.call("GET", path, **kw)

    async def post(self, path, body=None, **kw):
        return await self.call("POST", path, body, **kw)

    async def delete(self, path, **kw):
        return await self.call("DELETE", path, **kw)
