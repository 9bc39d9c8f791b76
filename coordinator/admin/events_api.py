"""Live coordinator events: server-sent events, a websocket and a ring buffer of recent ones.

:func:`setup` gives the admin app an :class:`EventHub` (``app["events"]``), subscribed to the
service's bus while the app runs. Every event gets a sequence number (1, 2, ...) and goes into a
ring buffer of the last :data:`RING_SIZE` events and to the queue of every connected client whose
filters it passes.

``GET /api/events/stream``  server-sent events: ``id: <seq>`` and ``data: <event as JSON>`` per
    event, a ``: keepalive`` comment after 15 s without one. ``Last-Event-ID`` (header, or
    ``?last_event_id=``) replays the buffered events after that id first; a ``: gap`` comment says
    when some of them have already left the buffer (ids restart with the admin listener, at 1 or
    after the rebalance history it put back, below: an id beyond the last one replays nothing).
``GET /api/events/ws``      a websocket carrying the same, one text message per event:
    ``{"id": seq, "event": {...}}`` (resume with ``?last_event_id=``; a ``{"gap": [first, last]}``
    message stands for the ``: gap`` comment).
``GET /api/events/recent``  the last ``limit`` (default 1000) buffered events, oldest first.

Filters (all three endpoints): ``?group=G`` (repeatable: any of them) and ``?type=prefix``
(repeatable or comma-separated: ``?type=rebalance.,member.left``).

A client never slows the service: events are handed to each client's bounded queue; a client
whose queue overflows (it does not read fast enough) is dropped with a log line and its
connection aborted.

Rebalance history across restarts: when the service keeps its state under a data dir
(``--data-dir``), the hub also appends the group, member and rebalance events (every type
starting with one of :data:`HISTORY_TYPES`; not the offsets' events, ``member.pending`` nor the
share-partition leaders' events of records and share sessions) to
``DIR/`` :data:`HISTORY_FILE`, one JSON line each, and at start puts the last
:data:`HISTORY_SIZE` of them back into the ring, before any new event: so ``/api/events/recent``
(what the web page draws its timeline and its table of generations from) still has them after a
restart. The file is bounded: past twice :data:`HISTORY_SIZE` lines it is rewritten with the last
:data:`HISTORY_SIZE` (temporary file, rename). It is history, not state: it is not fsynced (a crash
may lose its last lines), a line that does not read back (a torn tail, damage) is skipped, and a
file that cannot be read or written costs one log line, never the start. Events published while
no admin listener runs are not in it.
"""
from __future__ import annotations

import asyncio
import json
import os
from collections import deque

import structlog
from aiohttp import WSMsgType, web

from groupcoord.protocol.aio import wait_event

from ..events import SHARE_PARTITION_EVENTS
from .app import foreign_origin
from .errors import ApiError

log = structlog.get_logger("groupcoord.admin.events")

routes = web.RouteTableDef()

RING_SIZE = 10_000
CLIENT_QUEUE = 10_000     # events waiting for one client before it is dropped
KEEPALIVE_SECONDS = 15.0
GONE_CHECK_SECONDS = 1.0  # how often an idle stream looks whether its client went away

HISTORY_FILE = "rebalance-history.jsonl"  # under the data dir
HISTORY_SIZE = 5_000                      # events put back into the ring at start
HISTORY_TYPES = ("group.", "rebalance.", "member.", "consumer.", "share.")
#: member.pending: one per KIP-394 join, noise in a history; the share-partition leaders' events (records
#: acquired, acknowledged, locks expiring, share sessions): per request, they would crowd the history out
HISTORY_SKIPPED = ("member.pending", *SHARE_PARTITION_EVENTS)


class _Entry:
    __slots__ = ("seq", "event", "_sse", "_json")

    def __init__(self, seq: int, event: dict):
        self.seq = seq
        self.event = event
        self._sse = None
        self._json = None

    def json(self) -> str:
        if self._json is None:
            self._json = json.dumps(self.event, separators=(",", ":"), default=str)
        return self._json

    def sse(self) -> bytes:
        if self._sse is None:
            self._sse = f"id: {self.seq}\ndata: {self.json()}\n\n".encode()
        return self._sse


class _Client:
    """One connected stream: its filters and its bounded queue of entries."""

    def __init__(self, hub: "EventHub", groups, types, transport, peer: str, kind: str):
        self.hub = hub
        self.groups = frozenset(groups) if groups else None
        self.types = tuple(types) if types else None
        self.transport = transport
        self.peer = peer
        self.kind = kind
        self.pending: deque[_Entry] = deque()
        self.wakeup = asyncio.Event()
        self.closed = False       # dropped, gone or shutting down
        self.dropped = False

    def matches(self, event: dict) -> bool:
        if self.groups is not None and event.get("group") not in self.groups:
            return False
        if self.types is not None and not str(event.get("event", "")).startswith(self.types):
            return False
        return True

    def offer(self, entry: _Entry) -> None:
        if self.closed or not self.matches(entry.event):
            return
        transport = self.transport
        if transport is None or transport.is_closing():
            self.close()
            return
        if len(self.pending) >= self.hub.client_queue:
            self.dropped = True
            log.warning("event_stream_client_dropped", peer=self.peer, stream=self.kind,
                        queued=len(self.pending), limit=self.hub.client_queue, last_taken_id=self.last_taken())
            self.hub.dropped += 1
            self.close()
            transport.abort()     # the handler may be blocked writing to this client
            return
        self.pending.append(entry)
        self.wakeup.set()

    def last_taken(self) -> int | None:
        """The id before the oldest queued entry: where this client could resume."""
        return self.pending[0].seq - 1 if self.pending else None

    def take(self) -> list[_Entry]:
        batch = list(self.pending)
        self.pending.clear()
        return batch

    def close(self) -> None:
        self.closed = True
        self.hub.clients.discard(self)
        self.wakeup.set()

    def gone(self) -> bool:
        transport = self.transport
        return transport is None or transport.is_closing()

    async def idle(self, keepalive: float, write) -> bool:
        """Wait for entries; meanwhile write keepalives (``write()``) and notice a client that
        went away (then close). Whether there is something to send."""
        waited = 0.0
        while not self.closed:
            step = min(GONE_CHECK_SECONDS, keepalive)
            if await self.wait(step):
                return not self.closed
            if self.gone():
                self.close()
                return False
            waited += step
            if waited >= keepalive:
                await write()
                waited = 0.0
        return False

    async def wait(self, timeout: float) -> bool:
        """Wait until there is something to send (or the client is closed); False on timeout."""
        if self.pending or self.closed:
            return True
        self.wakeup.clear()
        return await wait_event(self.wakeup, timeout)


class EventHistory:
    """The rebalance history kept under the data dir: a file of JSON lines, one event each (see
    the module's "Rebalance history across restarts")."""

    def __init__(self, path: str, size: int = HISTORY_SIZE):
        self.path = path
        self.size = size
        self.lines: deque[str] = deque(maxlen=size)   # the last ``size`` lines, to rewrite the file
        self.written = 0                               # lines in the file
        self._file = None
        self._rewrite_first = False                    # the file has damage: rewritten at the next event
        self._broken = False                           # it cannot be read or written: logged once, history off

    @staticmethod
    def keeps(event: dict) -> bool:
        kind = event.get("event")
        return isinstance(kind, str) and kind.startswith(HISTORY_TYPES) and kind not in HISTORY_SKIPPED

    def load(self) -> list[dict]:
        """The events kept, oldest first (at most ``size``). A missing file is a first start; one
        that cannot be read, or has lines that do not read back, is logged once and skipped."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("event_history_unreadable", path=self.path, error=str(exc))
            self._broken = True       # (and never overwritten: it may be readable again later)
            return []
        lines = raw.splitlines()
        events = [e for e in map(_history_event, lines) if e is not None]
        bad = len(lines) - len(events)
        events = events[-self.size:]
        self.lines.extend(json.dumps(e, separators=(",", ":"), default=str) for e in events)
        self.written = len(lines)
        # damage, or a torn last line (a crash mid-write) that the next line must not be glued to
        self._rewrite_first = bad > 0 or (bool(raw) and not raw.endswith(b"\n"))
        if bad:
            log.warning("event_history_damaged", path=self.path, skipped_lines=bad, events=len(events))
        return events

    def append(self, event: dict) -> None:
        if self._broken or not self.keeps(event):
            return
        line = json.dumps(event, separators=(",", ":"), default=str)
        self.lines.append(line)
        try:
            if self._rewrite_first or self.written >= 2 * self.size:
                self._rewrite()
            else:
                if self._file is None:
                    self._file = open(self.path, "a", encoding="utf-8")
                self._file.write(line + "\n")
                self._file.flush()
                self.written += 1
        except OSError as exc:
            log.warning("event_history_not_written", path=self.path, error=str(exc))
            self._broken = True
            self.close()

    def _rewrite(self) -> None:
        """The file with the last ``size`` lines only: a temporary file renamed over it."""
        self.close()
        tmp = self.path + ".rewriting"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in self.lines))
        os.replace(tmp, self.path)
        self.written = len(self.lines)
        self._rewrite_first = False

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


def _history_event(line: bytes) -> dict | None:
    """The event of one line of the history file, or None when it is not one."""
    try:
        event = json.loads(line)
    except ValueError:        # (UnicodeDecodeError is one)
        return None
    return event if isinstance(event, dict) and EventHistory.keeps(event) else None


class EventHub:
    """Sequence numbers, the ring buffer and the connected clients of one admin app; with a
    ``history``, the ring starts with the events it kept and it keeps the new ones."""

    def __init__(self, bus, ring_size: int = RING_SIZE, client_queue: int = CLIENT_QUEUE,
                 keepalive: float = KEEPALIVE_SECONDS, history: EventHistory | None = None):
        self.ring: deque[_Entry] = deque(maxlen=ring_size)
        self.seq = 0
        self.clients: set[_Client] = set()
        self.client_queue = client_queue
        self.keepalive = keepalive
        self.dropped = 0
        self.bus = bus
        self.history = history
        self._unsubscribe = None

    def attach(self) -> "EventHub":
        if self._unsubscribe is None:
            if self.history is not None:
                for event in self.history.load():     # before any client: they are plain ring entries
                    self.seq += 1
                    self.ring.append(_Entry(self.seq, event))
            self._unsubscribe = self.bus.subscribe(self.publish)
        return self

    def publish(self, event: dict) -> None:
        self.seq += 1
        entry = _Entry(self.seq, event)
        self.ring.append(entry)
        if self.history is not None:
            self.history.append(event)
        if self.clients:
            for client in list(self.clients):
                client.offer(entry)

    def replay(self, client: _Client, last_id: int) -> tuple[list[_Entry], tuple[int, int] | None]:
        """Buffered entries after last_id that pass the client's filters, and the range of ids
        that are no longer buffered (or None)."""
        ring = self.ring
        if not ring or last_id >= self.seq:
            return [], None
        oldest = ring[0].seq
        gap = (last_id + 1, oldest - 1) if last_id + 1 < oldest else None
        start = max(0, last_id + 1 - oldest)
        entries = [ring[i] for i in range(start, len(ring))]
        return [e for e in entries if client.matches(e.event)], gap

    def recent(self, limit: int, groups=None, types=None) -> list[dict]:
        probe = _Client(self, groups, types, None, "", "recent")
        out: list[dict] = []
        for entry in reversed(self.ring):
            if len(out) >= limit:
                break
            if probe.matches(entry.event):
                out.append(entry.event)
        out.reverse()
        return out

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.history is not None:
            self.history.close()
        for client in list(self.clients):
            client.close()


# ---- request parsing -----------------------------------------------------------------------
def _filters(request: web.Request) -> tuple[list[str], list[str]]:
    groups = request.query.getall("group", [])
    types = [t for v in request.query.getall("type", []) for t in v.split(",") if t]
    return groups, types


def _last_event_id(request: web.Request) -> int | None:
    raw = request.headers.get("Last-Event-ID")
    if raw is None:
        raw = request.query.get("last_event_id")
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "invalid_last_event_id",
                       f"Last-Event-ID must be an event id (an integer), not {raw!r}") from None
    if value < 0:
        raise ApiError(400, "invalid_last_event_id", f"Last-Event-ID must be >= 0, not {value}")
    return value


def _peer(request: web.Request) -> str:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    return f"{peer[0]}:{peer[1]}" if peer else "unknown"


def _connect(request: web.Request, kind: str) -> tuple[_Client, list[_Entry], tuple[int, int] | None]:
    hub: EventHub = request.app["events"]
    groups, types = _filters(request)
    last_id = _last_event_id(request)
    client = _Client(hub, groups, types, request.transport, _peer(request), kind)
    replay, gap = hub.replay(client, last_id) if last_id is not None else ([], None)
    hub.clients.add(client)     # no await since the replay snapshot: nothing missed, nothing twice
    return client, replay, gap


# ---- handlers ---------------------------------------------------------------------------------
@routes.get("/api/events/stream")
async def stream(request: web.Request) -> web.StreamResponse:
    hub: EventHub = request.app["events"]
    client, replay, gap = _connect(request, "sse")
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    try:
        await resp.prepare(request)
        head = [b": groupcoord events\n\n"]
        if gap is not None:
            head.append(f": gap: events {gap[0]}..{gap[1]} are no longer buffered\n\n".encode())
        head.extend(e.sse() for e in replay)
        await resp.write(b"".join(head))

        async def keepalive():
            await resp.write(b": keepalive\n\n")

        while await client.idle(hub.keepalive, keepalive):
            batch = client.take()
            if batch:
                await resp.write(b"".join(e.sse() for e in batch))
    except (ConnectionError, RuntimeError):
        pass        # the client went away (or was dropped)
    finally:
        client.close()
    return resp


@routes.get("/api/events/ws")
async def websocket(request: web.Request) -> web.WebSocketResponse:
    hub: EventHub = request.app["events"]
    ws = web.WebSocketResponse(heartbeat=hub.keepalive, timeout=1.0)   # close handshake: 1 s at most
    if not ws.can_prepare(request).ok:
        raise ApiError(400, "websocket_upgrade_required",
                       "this endpoint speaks WebSocket: connect with an Upgrade: websocket request")
    origin = foreign_origin(request)
    if origin is not None:      # browsers let any site open a websocket; the same-origin policy does not apply
        raise ApiError(403, "cross_origin", f"a websocket from origin {origin!r} is refused: "
                                            "only the admin page's own origin or non-browser clients may follow events")
    client, replay, gap = _connect(request, "ws")
    reader = None
    try:
        await ws.prepare(request)

        async def _read():
            async for msg in ws:      # ping/pong and close are handled by aiohttp
                if msg.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                    break
            client.close()

        reader = asyncio.ensure_future(_read())
        if gap is not None:
            await ws.send_str(json.dumps({"gap": list(gap)}))
        for e in replay:
            await ws.send_str(f'{{"id":{e.seq},"event":{e.json()}}}')

        async def nothing():      # aiohttp pings (heartbeat=)
            pass

        while await client.idle(hub.keepalive, nothing):
            for e in client.take():
                await ws.send_str(f'{{"id":{e.seq},"event":{e.json()}}}')
    except (ConnectionError, RuntimeError):
        pass
    finally:
        client.close()
        if reader is not None:
            reader.cancel()
        if not ws.closed and not client.dropped:
            await ws.close()
    return ws


@routes.get("/api/events/recent")
async def recent(request: web.Request) -> web.Response:
    hub: EventHub = request.app["events"]
    raw = request.query.get("limit", "1000")
    try:
        limit = int(raw)
    except ValueError:
        raise ApiError(400, "invalid_limit", f"limit must be an integer, not {raw!r}") from None
    if not 1 <= limit <= RING_SIZE:
        raise ApiError(400, "invalid_limit", f"limit must be between 1 and {RING_SIZE}, not {limit}")
    groups, types = _filters(request)
    return web.json_response(hub.recent(limit, groups, types))


def setup(app: web.Application) -> None:
    service = app["service"]
    directory = getattr(service.store, "directory", None)     # a LogStore's: --data-dir
    history = EventHistory(os.path.join(directory, HISTORY_FILE)) if directory is not None else None
    hub = EventHub(service.bus, history=history)
    app["events"] = hub

    async def _attach(app: web.Application) -> None:
        hub.attach()     # on the service's loop, when the listener starts

    async def _shutdown(app: web.Application) -> None:
        hub.close()      # ends every stream so that the listener stops at once

    app.on_startup.append(_attach)
    app.on_shutdown.append(_shutdown)


_FILTER_PARAMS = [
    {"name": "group", "in": "query", "required": False, "description": "only events of this group (repeatable)",
     "schema": {"type": "string"}},
    {"name": "type", "in": "query", "required": False,
     "description": "only events whose type starts with this prefix (repeatable or comma-separated), "
                    "e.g. `rebalance.` or `member.left`", "schema": {"type": "string"}},
]
_RESUME_PARAMS = [
    {"name": "Last-Event-ID", "in": "header", "required": False,
     "description": "resume after this event id: buffered events after it are sent first",
     "schema": {"type": "integer", "minimum": 0}},
    {"name": "last_event_id", "in": "query", "required": False,
     "description": "the same as the Last-Event-ID header", "schema": {"type": "integer", "minimum": 0}},
]
_ERROR = {"description": "bad parameter",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}

SCHEMAS = {
    "Event": {
        "type": "object",
        "description": "a coordinator event (schema in groupcoord.coordinator.events): a group's carries group, "
                       "generation, state and members; the transaction coordinator's (transaction.*) "
                       "transactional_id, producer_id, producer_epoch and transaction_state instead",
        "required": ["v", "event", "ts_ms"],
        "properties": {
            "v": {"type": "integer"}, "event": {"type": "string"}, "ts_ms": {"type": "integer"},
            "group": {"type": "string"}, "generation": {"type": "integer"}, "state": {"type": "string"},
            "members": {"type": "integer"},
        },
        "additionalProperties": True,
    },
}

PATHS = {
    "/api/events/stream": {
        "get": {
            "summary": "Live events (server-sent events)",
            "description": "Each coordinator event as `id: <seq>` and `data: <JSON>`; a `: keepalive` "
                           "comment every 15 s without events. A client that falls behind by more than "
                           f"{CLIENT_QUEUE} events is disconnected.",
            "tags": ["events"],
            "parameters": _FILTER_PARAMS + _RESUME_PARAMS,
            "responses": {"200": {"description": "the event stream",
                                  "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                          "400": _ERROR},
        },
    },
    "/api/events/ws": {
        "get": {
            "summary": "Live events (websocket)",
            "description": 'One text message per event: `{"id": seq, "event": {...}}`.',
            "tags": ["events"],
            "parameters": _FILTER_PARAMS + _RESUME_PARAMS[1:],
            "responses": {"101": {"description": "switching to the websocket protocol"},
                          "400": _ERROR,
                          "403": {**_ERROR, "description": "a browser's websocket from another origin"}},
        },
    },
    "/api/events/recent": {
        "get": {
            "summary": "Recent events",
            "description": f"The last events (the buffer holds {RING_SIZE}), oldest first. With a data dir "
                           "the buffer starts with the group, member and rebalance events of earlier runs "
                           f"(the last {HISTORY_SIZE}, kept in {HISTORY_FILE} there).",
            "tags": ["events"],
            "parameters": [{"name": "limit", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": RING_SIZE, "default": 1000}}]
                          + _FILTER_PARAMS,
            "responses": {"200": {"description": "events, oldest first",
                                  "content": {"application/json": {"schema": {
                                      "type": "array", "items": {"$ref": "#/components/schemas/Event"}}}}},
                          "400": _ERROR},
        },
    },
}
