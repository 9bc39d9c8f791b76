"""Helpers of the observability tests: scraping /metrics, reading server-sent events, polling."""
from __future__ import annotations

import asyncio
import json
import time

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

TOPIC = "obs"

CONSUMER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 100, "enable.auto.commit": False,
            "auto.offset.reset": "earliest"}


class Scrape:
    """A parsed /metrics page: ``value(name, **labels)`` sums the samples that match."""

    def __init__(self, text: str):
        self.text = text
        self.samples = [s for fam in text_string_to_metric_families(text) for s in fam.samples]

    def value(self, name: str, **labels) -> float:
        return sum(s.value for s in self.samples
                   if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))

    def by_label(self, name: str, label: str) -> dict[str, float]:
        return {s.labels[label]: s.value for s in self.samples if s.name == name}


async def scrape(session: aiohttp.ClientSession, url: str) -> Scrape:
    async with session.get(url + "/metrics") as resp:
        assert resp.status == 200, await resp.text()
        return Scrape(await resp.text())


async def until(predicate, timeout: float = 20.0, interval: float = 0.02, what: str = "condition"):
    """Poll an (async or plain) predicate until it returns a truthy value; return that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


class SSEReader:
    """Reads server-sent events from an aiohttp response: ``(id, event)`` pairs and comments."""

    def __init__(self, resp: aiohttp.ClientResponse):
        self.resp = resp
        self.comments: list[str] = []

    async def next(self, timeout: float = 20.0) -> tuple[int, dict]:
        async with asyncio.timeout(timeout):
            event_id, data = None, []
            while True:
                raw = await self.resp.content.readline()
                if not raw:
                    raise EOFError("the stream ended")
                line = raw.decode().rstrip("\n")
                if line == "":
                    if data:
                        return event_id, json.loads("\n".join(data))
                    continue
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "id":
                    event_id = int(value)
                elif field == "data":
                    data.append(value)

    async def until_comment(self, prefix: str, timeout: float = 20.0) -> str:
        """Read lines until a comment starting with prefix (events read meanwhile are dropped)."""
        async with asyncio.timeout(timeout):
            while True:
                for c in self.comments:
                    if c.startswith(prefix):
                        return c
                raw = await self.resp.content.readline()
                if not raw:
                    raise EOFError("the stream ended")
                line = raw.decode().rstrip("\n")
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())


class Recorder:
    """Every event published on a service's bus, in order."""

    def __init__(self, service):
        self.events: list[dict] = []
        self.unsubscribe = service.bus.subscribe(self.events.append)

    def count(self, kind: str, **fields) -> int:
        return sum(1 for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in fields.items()))
