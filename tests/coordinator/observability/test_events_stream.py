"""The live event stream (server-sent events, websocket) and the ring buffer, over real HTTP."""
from __future__ import annotations

import asyncio
import socket
from collections import deque

import contextlib
import logging

import aiohttp
import structlog
from structlog.testing import capture_logs

from groupcoord.client import GroupConsumer
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.events import check_event
from groupcoord.coordinator.group.offsets import OffsetCommitRequest

from observability_support import CONSUMER, TOPIC, Recorder, SSEReader, scrape, until

GROUP = "obs-events"


def _consumer(gc, group: str = GROUP, **extra) -> GroupConsumer:
    config = dict(CONSUMER, **{"bootstrap.servers": gc.bootstrap_servers, "group.id": group}, **extra)
    return GroupConsumer(TOPIC, config=config)


async def _read_until(reader: SSEReader, done, limit: int = 500) -> list[tuple[int, dict]]:
    got = []
    while len(got) < limit:
        item = await reader.next()
        got.append(item)
        if done(item[1]):
            return got
    raise AssertionError(f"no final event in {got}")


async def test_stream_delivers_events_in_order_and_resumes_with_last_event_id():
    async with running(http=True, topics={TOPIC: 4}) as gc, aiohttp.ClientSession() as http:
        rec = Recorder(gc.service)
        a = b = None
        async with http.get(gc.admin_url + "/api/events/stream") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            reader = SSEReader(resp)
            a = await _consumer(gc).start()
            b = await _consumer(gc).start()
            got = await _read_until(reader, lambda e: e["event"] == "rebalance.completed" and e["members"] == 2)
        try:
            ids = [i for i, _ in got]
            assert ids == list(range(ids[0], ids[0] + len(ids)))       # one id per event, no gaps
            events = [e for _, e in got]
            for e in events:
                check_event(e)
            assert events == rec.events[:len(events)]                   # the bus's order
            last_id = ids[-1]

            # while nobody listens: b leaves, a rebalance follows
            await b.close()
            await until(lambda: rec.count("rebalance.completed", members=1) == 1, what="rebalance after leave")
            missed = rec.events[len(events):]
            assert missed

            # resume: exactly the missed events, then live ones
            headers = {"Last-Event-ID": str(last_id)}
            async with http.get(gc.admin_url + "/api/events/stream", headers=headers) as resp:
                reader = SSEReader(resp)
                resumed = [await reader.next() for _ in missed]
                assert [i for i, _ in resumed] == list(range(last_id + 1, last_id + 1 + len(missed)))
                assert [e for _, e in resumed] == missed
                await a.commit({tp: 1 for tp in a.assignment()})
                live_id, live = await reader.next()
                assert live_id == last_id + len(missed) + 1 and live["event"] == "offset.committed"
        finally:
            for c in (a, b):
                if c is not None:
                    await c.close()


async def test_filters_recent_and_bad_parameters():
    async with running(http=True, topics={TOPIC: 2}) as gc, aiohttp.ClientSession() as http:
        rec = Recorder(gc.service)
        url = gc.admin_url + "/api/events/stream?group=obs-two&type=rebalance.,member.left"
        async with http.get(url) as resp:
            reader = SSEReader(resp)
            async with _consumer(gc, "obs-one"), _consumer(gc, "obs-two") as two:
                await until(lambda: rec.count("rebalance.completed", group="obs-one") == 1
                            and len(two.assignment()) == 2, what="both groups stable")
            got = await _read_until(reader, lambda e: e["event"] == "rebalance.completed" and e["members"] == 0)
        wanted = [e for e in rec.events if e["group"] == "obs-two"
                  and (e["event"].startswith("rebalance.") or e["event"] == "member.left")]
        assert [e for _, e in got] == wanted
        assert {e["event"] for _, e in got} == {"rebalance.started", "rebalance.join_completed",
                                                 "rebalance.completed", "member.left"}
        ids = [i for i, _ in got]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)

        async with http.get(gc.admin_url + "/api/events/recent?limit=5") as resp:
            assert await resp.json() == rec.events[-5:]
        async with http.get(gc.admin_url + "/api/events/recent?group=obs-one&type=member.") as resp:
            assert await resp.json() == [e for e in rec.events
                                         if e["group"] == "obs-one" and e["event"].startswith("member.")]
        for path, code in (("/api/events/recent?limit=0", "invalid_limit"),
                           ("/api/events/recent?limit=x", "invalid_limit"),
                           ("/api/events/recent?limit=10001", "invalid_limit"),
                           ("/api/events/stream?last_event_id=abc", "invalid_last_event_id"),
                           ("/api/events/stream?last_event_id=-1", "invalid_last_event_id")):
            async with http.get(gc.admin_url + path) as resp:
                assert resp.status == 400, path
                assert (await resp.json())["error"] == code


async def test_gap_comment_and_keepalive():
    async with running(http=True, topics={TOPIC: 2}) as gc, aiohttp.ClientSession() as http:
        hub = gc.admin.app["events"]
        hub.ring = deque(maxlen=3)
        hub.keepalive = 0.1
        rec = Recorder(gc.service)
        async with _consumer(gc) as c:
            await until(lambda: len(c.assignment()) == 2, what="assignment")
        assert len(rec.events) > 4
        async with http.get(gc.admin_url + "/api/events/stream", headers={"Last-Event-ID": "1"}) as resp:
            reader = SSEReader(resp)
            replayed = [await reader.next() for _ in range(3)]
            oldest = hub.seq - 2
            assert f"gap: events 2..{oldest - 1} are no longer buffered" in reader.comments
            assert [i for i, _ in replayed] == [oldest, oldest + 1, oldest + 2]
            assert [e for _, e in replayed] == rec.events[-3:]
            assert await reader.until_comment("keepalive", timeout=5) == "keepalive"


async def test_websocket_carries_the_same_events():
    async with running(http=True, topics={TOPIC: 2}) as gc, aiohttp.ClientSession() as http:
        rec = Recorder(gc.service)
        async with http.ws_connect(gc.admin_url + "/api/events/ws?type=rebalance.") as ws:
            async with _consumer(gc) as c:
                await until(lambda: len(c.assignment()) == 2, what="assignment")
                first = [await ws.receive_json(timeout=10) for _ in range(3)]
        assert [m["event"] for m in first] == [e for e in rec.events if e["event"].startswith("rebalance.")][:3]
        async with http.ws_connect(gc.admin_url + f"/api/events/ws?last_event_id={first[0]['id']}") as ws:
            again = await ws.receive_json(timeout=10)
        assert again["id"] == first[0]["id"] + 1
        assert again["event"] == rec.events[again["id"] - 1]      # ids count the bus's events from 1


async def test_a_websocket_from_another_origin_is_refused():
    """Browsers let any web page open a websocket to 127.0.0.1 and send its Origin along."""
    async with running(http=True) as gc, aiohttp.ClientSession() as http:
        url = gc.admin_url + "/api/events/ws"
        for origin in ("http://evil.example", "null"):
            try:
                await http.ws_connect(url, origin=origin)
            except aiohttp.WSServerHandshakeError as exc:
                assert exc.status == 403, origin
            else:
                raise AssertionError(f"a websocket from {origin} was accepted")
        assert not gc.admin.app["events"].clients
        async with http.ws_connect(url, origin=gc.admin_url) as ws:       # the page's own origin
            gc.service.bus.publish({"event": "test.ping", "group": "g"})
            assert (await ws.receive_json(timeout=5))["event"]["event"] == "test.ping"


@contextlib.contextmanager
def all_logs():
    """capture_logs, whatever level an earlier in-process CLI run configured structlog with."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET))
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**saved)


async def test_a_slow_client_is_dropped_and_nobody_waits_for_it():
    async with running(http=True) as gc, aiohttp.ClientSession() as http:
        hub = gc.admin.app["events"]
        hub.client_queue = 200
        coordinator = gc.service.group_coordinator
        host, port = gc.admin_url.removeprefix("http://").split(":")

        # a client that asks for the stream and never reads it
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_connect(slow, (host, int(port)))
        await loop.sock_sendall(slow, f"GET /api/events/stream HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await until(lambda: len(hub.clients) == 1, what="the slow client to subscribe")

        async with http.get(gc.admin_url + "/api/events/stream") as resp:
            fast = SSEReader(resp)
            await until(lambda: len(hub.clients) == 2, what="the fast client to subscribe")
            first = hub.seq + 1
            sent = 0
            group = "bulk-" + "x" * 4000        # 4 KB events fill the socket buffers sooner
            with all_logs() as logs:
                # real offset commits of a simple group, 3 per loop turn, until the slow client is gone
                for _ in range(5000):
                    for _ in range(3):
                        coordinator.offset_commit(lambda _r: None, OffsetCommitRequest(group, [
                            {"name": "t", "partitions": [{"partition_index": sent % 8, "committed_offset": sent,
                                                          "committed_metadata": ""}]}]))
                        sent += 1
                    await asyncio.sleep(0)
                    if hub.dropped:
                        break
                assert hub.dropped == 1, "the slow client was never dropped"
            dropped = [e for e in logs if e["event"] == "event_stream_client_dropped"]
            assert len(dropped) == 1 and dropped[0]["limit"] == 200 and dropped[0]["log_level"] == "warning"
            assert len(hub.clients) == 1

            # the fast client saw every event, in order
            events = [await fast.next() for _ in range(hub.seq - first + 1)]
            assert [i for i, _ in events] == list(range(first, hub.seq + 1))
            assert sum(e["event"] == "offset.committed" for _, e in events) == sent

        async def streams_closed():
            m = await scrape(http, gc.admin_url)
            return m.value("groupcoord_event_stream_clients") == 0 and m
        m = await until(streams_closed, what="the fast client's stream to be noticed closed")
        assert m.value("groupcoord_event_stream_dropped_clients_total") == 1

        # the slow client's connection was aborted
        slow.setblocking(True)
        slow.settimeout(10)
        try:
            while slow.recv(65536):
                pass
        except ConnectionResetError:
            pass
        slow.close()
