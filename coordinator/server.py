"""The asyncio TCP driver: one listener per emulated broker, around the sans-I/O Service.

Per connection, requests are handled one at a time and answered in order, as Kafka
does (it mutes a channel until its response is sent): while a JoinGroup or SyncGroup
is parked, the frames behind it on the same connection wait, and nothing else does.
A malformed frame, or a request of an API version the emulated Kafka release does not
serve (except ApiVersions, which gets Kafka's v0 error body), closes that connection
with a log line; the service and every other client go on. Bytes after a request's
body are ignored, as Kafka ignores them.

Connections are asyncio protocols rather than stream tasks: a burst of pipelined
requests is decoded, handled and answered within one ``data_received`` call. A client that
does not read its answers is not read from either: the next request waits until the answers
before it fit the transport's buffer, so a connection makes the server hold one answer (and
64 KiB) at most, however many requests it pipelines (Kafka holds one).

Connection limits are Kafka's configs, counted per node as per broker (:class:`ConnectionLimits`):
the size of a request (``socket.request.max.bytes``; ``sasl.server.max.receive.size`` before SASL
authentication completes) is checked at its size prefix; a connection idle for
``connections.max.idle.ms`` is closed; at ``max.connections`` a node accepts nothing until one
of its connections closes, and a connection over ``max.connections.per.ip`` is closed at once
(:class:`_Listener`).
"""
from __future__ import annotations

import asyncio
import itertools
import os
import re
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import structlog

from groupcoord.protocol import frames
from groupcoord.protocol.api_keys import KAFKA_API_NAMES
from groupcoord.protocol.errors import DecodeError, EncodeError, UnsupportedVersionError
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.schema import snake

from .config import INT32_MAX, ConfigError
from .context import RequestContext, Verdict
from .handlers import api_versions
from .handlers import heartbeat as heartbeat_api
from .listeners import WILDCARDS, advertised_address, parse_advertised
from .service import Service

log = structlog.get_logger("groupcoord.server")

_SIZE = struct.Struct(">i")
_PEEK = struct.Struct(">hhi")       # api key, api version, correlation id
_CORRELATION = struct.Struct(">i")
_HEARTBEAT = 12
_READ_HIGH_WATER = 1 << 20      # stop reading a parked connection with this much unhandled input
_WRITE_BATCH = 1 << 16          # hand a burst's answers to the transport once they reach this size


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may send, by Kafka's configs (see :meth:`from_config`)."""
    request_max_bytes: int = 104857600          # socket.request.max.bytes
    sasl_max_receive: int | None = None         # sasl.server.max.receive.size, with SASL on
    max_idle_ms: int = 600000                   # connections.max.idle.ms; < 0: never
    backlog: int = 4096                         # socket.listen.backlog.size
    max_connections: int = INT32_MAX            # max.connections, per node
    max_connections_per_ip: int = INT32_MAX     # max.connections.per.ip, per node
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)   # IP address -> its limit

    @classmethod
    def from_config(cls, config, sasl_enabled: bool = False) -> "ConnectionLimits":
        """The limits of a checked config (each value within Kafka's bounds: config.SETTINGS); what
        the configs require of each other, in KafkaConfig's words."""
        request_max = config["socket.request.max.bytes"]
        sasl_max = config["sasl.server.max.receive.size"]
        if sasl_max < -1:
            raise ConfigError("sasl.server.max.receive.size must be at least 0, or -1 for no limit")
        max_idle = config["connections.max.idle.ms"]
        delay = config["connection.failed.authentication.delay.ms"]
        if 0 <= max_idle <= delay:      # as KafkaConfig requires
            raise ConfigError(f"connection.failed.authentication.delay.ms={delay} should always be less than "
                              f"connections.max.idle.ms={max_idle} to prevent failed authentication responses "
                              "from timing out")
        overrides = parse_per_ip_overrides(config["max.connections.per.ip.overrides"])
        if config["max.connections.per.ip"] == 0 and not overrides:
            raise ConfigError("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                              "property is set.")
        # Kafka's SaslServerAuthenticator reads each frame before authentication completes with a
        # NetworkReceive of this size (-1: NetworkReceive.UNLIMITED)
        return cls(request_max_bytes=request_max,
                   sasl_max_receive=sasl_max if sasl_enabled and sasl_max >= 0 else None,
                   max_idle_ms=max_idle, backlog=config["socket.listen.backlog.size"],
                   max_connections=config["max.connections"],
                   max_connections_per_ip=config["max.connections.per.ip"], per_ip_overrides=overrides)

    def max_connections_from(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_connections_per_ip)

    @property
    def unauthenticated_max_bytes(self) -> int:
        return self.request_max_bytes if self.sasl_max_receive is None else self.sasl_max_receive


_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")     # Kafka's Utils.validHostPattern


def parse_per_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` (``host:count,...``, split as Kafka's Csv.parseCsvMap)
    -> {IP address: count}; a host name stands for each address it resolves to."""
    out: dict[str, int] = {}
    for item in filter(None, re.split(r"\s*,\s*", text.strip())):
        host, sep, count = item.rpartition(":")
        host = host.strip()
        if not sep or not _VALID_HOST.fullmatch(host):
            raise ConfigError(f"max.connections.per.ip.overrides contains invalid addresses : {host or item}")
        try:
            limit = int(count)
        except ValueError:
            raise ConfigError(f"max.connections.per.ip.overrides: {item!r}: {count.strip()!r} is not a number") \
                from None
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve {host!r}: {exc.strerror}") from None
        for info in infos:
            out[info[4][0]] = limit
    return out


def somaxconn() -> int | None:
    """The kernel's cap on a listen backlog (Linux), or None when not known."""
    try:
        with open("/proc/sys/net/core/somaxconn", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


class ListenError(OSError):
    """A node's listener could not be opened; the message names the node and its address."""

    def __str__(self) -> str:
        return self.strerror


class Server:
    """Listens for every node of a Service on host (node i on ports[i]; 0: any free port);
    drives its timers from the event loop. Each node tells clients its advertised address
    (``advertised.listeners``, see :mod:`.listeners`), by default the one it listens on."""

    def __init__(self, service: Service, host: str = "127.0.0.1", ports: Iterable[int] | None = None):
        self.service = service
        self.host = host
        node_ids = service.cluster.node_ids()
        self.ports = list(ports) if ports is not None else [0] * len(node_ids)
        if len(self.ports) != len(node_ids):
            raise ValueError("one port per node")
        self.advertised = parse_advertised(service.config.get("advertised.listeners", ""))
        self.listening: dict[int, int] = {}     # node id -> the port it listens (listened) on
        self._listeners: dict[int, _Listener] = {}
        self._conn_ids = itertools.count(1)
        self.connections: dict[int, _Connection] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._timers_seen = -1                  # Timers.changes when rearm last looked
        self._idle_sweep: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.limits = ConnectionLimits.from_config(service.config, service.security.sasl_enabled)
        self.stats = {"connections": 0, "requests": 0, "closed_malformed": 0, "closed_idle": 0,
                      "rejected_per_ip": 0, "accept_paused": 0}
        self.served: set[bytes] = set()     # api key and version bytes of requests served so far
        faults = getattr(service, "faults", None)
        if faults is not None:
            faults.attach_server(self)      # node down/up and connection drops act on this server

    # ---- lifecycle ----------------------------------------------------------------
    async def start(self) -> "Server":
        self._loop = asyncio.get_running_loop()
        for node_id, port in zip(self.service.cluster.node_ids(), self.ports):
            await self.start_node(node_id, port)
        self.rearm()
        if self.limits.max_idle_ms >= 0:
            self._idle_sweep = self._loop.call_later(self._idle_period(), self._close_idle)
        log.info("listening", host=self.host, ports=",".join(str(self.listening[n]) for n in sorted(self._listeners)),
                 bootstrap_servers=self.bootstrap_servers, nodes=len(self._listeners))
        cap = somaxconn()
        if cap is not None and self.limits.backlog > cap:
            log.warning("listen_backlog_capped", backlog=self.limits.backlog, somaxconn=cap,
                        hint=f"the kernel queues at most net.core.somaxconn={cap} connections per listener, not "
                             f"socket.listen.backlog.size={self.limits.backlog}: a burst of more connects is "
                             "retried by the clients' kernels a second later; raise net.core.somaxconn (sysctl)")
        if self.advertised is None and self.host in WILDCARDS:
            log.warning("advertising_host_name", bootstrap_servers=self.bootstrap_servers,
                        hint=f"listening on {self.host or 'every interface'} with no advertised.listeners: clients "
                             "are told this host's name; set advertised.listeners=PLAINTEXT://HOST:PORT to the "
                             "address they reach")
        return self

    async def load_state(self, between=None) -> dict:
        """Replay the store's logs (:meth:`Service.loader`) while the listeners are open, yielding
        to the event loop after each offsets-topic partition; ``between`` (an async function of
        the partition just loaded) is awaited there instead. Returns the load's statistics."""
        for partition in self.service.loader():
            if between is not None:
                await between(partition)
            else:
                await asyncio.sleep(0)
        self.rearm()
        return self.service.load_stats

    # ---- what the sans-I/O core asks of its driver (faults.py) ----------------------
    @property
    def running(self) -> bool:
        """Started (on an event loop)."""
        return self._loop is not None

    def call_soon(self, fn) -> None:
        """Run fn on the next turn of the loop, once the responses being produced are written (from
        any thread: an embedding's caller may be on another)."""
        self._loop.call_soon_threadsafe(fn)

    def start_node_then(self, node_id: int, done) -> None:
        """Listen as node_id again (:meth:`start_node`), then ``done(moves, None)``, or
        ``done(None, exception)`` if it cannot listen."""
        def finished(task) -> None:
            if not task.cancelled():
                exc = task.exception()
                done(None if exc is not None else task.result(), exc)
        self._loop.call_soon_threadsafe(lambda: self._loop.create_task(self.start_node(node_id)).add_done_callback(finished))

    async def start_node(self, node_id: int, port: int | None = None) -> list:
        """Listen as node_id (again: on its previous port). A node coming back up is marked
        up in the cluster (see :meth:`Cluster.node_up`); returns the leadership moves."""
        if node_id in self._listeners:
            return []
        cluster = self.service.cluster
        index = cluster.node_ids().index(node_id)
        if port is None:
            port = self.listening.get(node_id, self.ports[index])
        try:
            listener = await _Listener.open(self, node_id, self.host, port)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
            raise ListenError(exc.errno, f"cannot listen on {self.host}:{port} for node {node_id}: {reason}") from None
        actual = listener.port
        self._listeners[node_id] = listener
        self.listening[node_id] = actual
        self.service.set_node_address(node_id, *advertised_address(self.advertised, index, self.host, actual))
        if not cluster.nodes[node_id].up:
            return cluster.node_up(node_id)
        return []

    def stop_listening(self, node_id: int) -> list:
        """Take node_id down now: stop listening, drop its connections, and re-elect the
        leaders of what it led (:meth:`Cluster.node_down`); returns those moves."""
        listener = self._listeners.pop(node_id, None)
        if listener is not None:
            listener.close()
        self.drop_connections(node_id=node_id)
        cluster = self.service.cluster
        return cluster.node_down(node_id) if cluster.nodes[node_id].up else []

    async def stop_node(self, node_id: int) -> list:
        """Stop listening as node_id and drop its connections (see :meth:`stop_listening`)."""
        return self.stop_listening(node_id)

    def drop_connections(self, node_id: int | None = None, client_id: str | None = None) -> int:
        """Close the client connections to node_id (any node when None) whose last request
        carried client_id (any when None); returns how many were closed."""
        closed = 0
        for conn in list(self.connections.values()):
            if node_id is not None and conn.node_id != node_id:
                continue
            if client_id is not None and conn.client_id != client_id:
                continue
            if not conn.closed:
                conn.close()
                closed += 1
        return closed

    async def stop(self) -> None:
        for node_id in list(self._listeners):
            self._listeners.pop(node_id).close()
        for conn in list(self.connections.values()):
            conn.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
            self._idle_sweep = None
        await asyncio.sleep(0)  # let transports run their close callbacks
        self._loop = None       # no longer running: the faults engine acts at once again

    async def __aenter__(self) -> "Server":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    @property
    def bootstrap_servers(self) -> str:
        nodes = self.service.cluster.nodes
        return ",".join(f"{nodes[n].host}:{nodes[n].port}" for n in sorted(self._listeners))

    # ---- idle connections ------------------------------------------------------------------
    def _idle_period(self) -> float:
        # a look at every connection each second, or each quarter of connections.max.idle.ms when
        # shorter: an idle connection is closed that much after its limit at most
        return max(0.01, min(self.limits.max_idle_ms / 4, 1000) / 1000)

    def _close_idle(self) -> None:
        """Close the connections that have sent and been sent nothing for connections.max.idle.ms,
        as Kafka's Selector does (its IdleExpiryManager; a parked request does not count as activity)."""
        max_idle_ms = self.limits.max_idle_ms
        oldest = time.monotonic() - max_idle_ms / 1000
        for conn in list(self.connections.values()):
            if conn.last_active < oldest and not conn.closed:
                log.info("closing_connection", reason=f"idle for longer than connections.max.idle.ms={max_idle_ms}",
                         connection=conn.conn_id, node=conn.node_id, peer=conn.client_host)
                self.stats["closed_idle"] += 1
                conn.close()
        self._idle_sweep = self._loop.call_later(self._idle_period(), self._close_idle)

    # ---- timers -----------------------------------------------------------------------
    def rearm(self) -> None:
        """Schedule the next timer of the service; call after changing the core outside a request."""
        timers = self.service.timers
        if timers.changes == self._timers_seen and self._timer is not None:
            return              # the same next deadline, its wake-up set (most requests: a heartbeat's)
        self._timers_seen = timers.changes
        deadline = timers.next_deadline()
        if deadline is None:
            return
        if self._timer is not None and self._timer_at is not None and self._timer_at <= deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, (deadline - self.service.clock()) / 1000.0)
        self._timer_at = deadline
        self._timer = self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        try:
            self.service.advance()
        except Exception:  # a bug in a timer callback must not stop the service
            log.exception("timer_failed")
        self.rearm()


class _Listener:
    """A node's listening sockets, accepting as Kafka's Acceptor does with its ConnectionQuotas.

    At ``max.connections`` it accepts nothing until one of the node's connections closes: new
    connections wait in the listen backlog, as Kafka's acceptor thread waits in
    ``ConnectionQuotas.inc`` (for every listener but the inter-broker one, which clients never
    use). A connection from an address that already has ``max.connections.per.ip`` (or its
    override) is closed at once, as Kafka closes it on a ``TooManyConnectionsException``."""

    def __init__(self, server: "Server", node_id: int, sockets: list[socket.socket]):
        self.server = server
        self.node_id = node_id
        self.sockets = sockets
        self.count = 0                          # the node's connections
        self.per_ip: dict[str, int] = {}
        self.accepting = False
        self.closed = False
        self._retry: asyncio.TimerHandle | None = None
        self._connecting: set[asyncio.Task] = set()

    @classmethod
    async def open(cls, server: "Server", node_id: int, host: str, port: int) -> "_Listener":
        """Bind and listen as asyncio's create_server does (each address of host; SO_REUSEADDR
        on POSIX; IPv6 sockets IPv6 only), with socket.listen.backlog.size."""
        infos = await server._loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                               flags=socket.AI_PASSIVE)
        sockets: list[socket.socket] = []
        try:
            for family, type_, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, type_, proto)
                sockets.append(sock)
                if os.name == "posix":
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
                sock.listen(server.limits.backlog)
                sock.setblocking(False)
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        listener = cls(server, node_id, sockets)
        listener._set_accepting(True)
        return listener

    @property
    def port(self) -> int:
        return self.sockets[0].getsockname()[1]

    def close(self) -> None:
        self._set_accepting(False)
        self.closed = True
        if self._retry is not None:
            self._retry.cancel()
        for sock in self.sockets:
            sock.close()

    def _set_accepting(self, on: bool) -> None:
        if on == self.accepting or (on and self.closed):
            return
        loop = self.server._loop
        for sock in self.sockets:
            if on:
                loop.add_reader(sock.fileno(), self._accept, sock)
            else:
                loop.remove_reader(sock.fileno())
        self.accepting = on

    def _resume(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self.count < self.server.limits.max_connections:
            self._set_accepting(True)

    def _accept(self, sock: socket.socket) -> None:
        server, limits = self.server, self.server.limits
        for _ in range(limits.backlog):         # what is queued, as asyncio's accept loop does
            if self.count >= limits.max_connections:
                self._set_accepting(False)
                server.stats["accept_paused"] += 1
                log.debug("accepting_paused", node=self.node_id, connections=self.count,
                          reason=f"max.connections={limits.max_connections}")
                return
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:      # out of file descriptors or memory: try again in a second
                log.warning("accept_failed", node=self.node_id, reason=os.strerror(exc.errno) if exc.errno
                            else str(exc), retry_in_s=1)
                self._set_accepting(False)
                self._retry = server._loop.call_later(1.0, self._resume)
                return
            ip = address[0]
            allowed = limits.max_connections_from(ip)
            if self.per_ip.get(ip, 0) >= allowed:
                server.stats["rejected_per_ip"] += 1
                log.info("connection_rejected", peer="/" + ip, node=self.node_id,
                         reason=f"address already has the configured maximum of {allowed} connections "
                                f"(max.connections.per.ip)")
                conn.close()
                continue
            self.count += 1
            self.per_ip[ip] = self.per_ip.get(ip, 0) + 1
            conn.setblocking(False)
            protocol = _Connection(server, self.node_id, self, ip)
            task = server._loop.create_task(self._connect(conn, protocol))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, sock: socket.socket, protocol: "_Connection") -> None:
        try:
            await self.server._loop.connect_accepted_socket(lambda: protocol, sock)
        except Exception as exc:        # the client went away already
            log.debug("connection_failed", node=self.node_id, peer=protocol.client_host, reason=str(exc))
            sock.close()
            protocol.release()

    def release(self, ip: str) -> None:
        """A connection from ip closed: its slot is free (ConnectionQuotas.dec)."""
        self.count -= 1
        left = self.per_ip[ip] - 1
        if left:
            self.per_ip[ip] = left
        else:
            del self.per_ip[ip]
        if not self.accepting and not self.closed:
            self._resume()


class _Answer:
    """The answer to one request: given while it is dispatched (sent then, in order), or later
    (a parked JoinGroup or SyncGroup: the connection waits for it, then carries on)."""

    __slots__ = ("conn", "request", "stage", "body")
    DISPATCHING, GIVEN, PARKED, SENT = range(4)

    def __init__(self, conn: "_Connection", request) -> None:
        self.conn, self.request = conn, request
        self.stage, self.body = _Answer.DISPATCHING, None

    def respond(self, body) -> None:
        if self.stage == _Answer.DISPATCHING:
            self.stage, self.body = _Answer.GIVEN, body
        elif self.stage == _Answer.PARKED:
            # a parked request is answered: send it, then carry on with what queued up
            self.stage = _Answer.SENT
            conn = self.conn
            conn.waiting = False
            conn._send(self.request, body)
            conn._update_reading()
            # carry on later: we may be inside the core (a leader's SyncGroup answering its
            # followers), which must not be re-entered
            if not conn.closed and conn.buf:
                conn.server._loop.call_soon(conn._process)

    def dispatched(self) -> None:
        """The dispatch returned: send an answer given meanwhile, or wait for it."""
        if self.stage == _Answer.GIVEN:
            self.stage = _Answer.SENT
            self.conn._send(self.request, self.body)
        else:
            self.stage = _Answer.PARKED
            self.conn.waiting = True


class _Connection(asyncio.Protocol):
    """One client connection: frames in, responses out, in order."""

    def __init__(self, server: Server, node_id: int, listener: _Listener | None = None, ip: str | None = None):
        self.server = server
        self.service = server.service
        self.node_id = node_id
        self.listener = listener    # that counts this connection, until release()
        self.ip = ip
        self.conn_id = next(server._conn_ids)
        self.transport: asyncio.Transport | None = None
        self.client_host = "/" + (ip or "unknown")
        self.buf = bytearray()
        self.waiting = False          # a parked request holds the connection
        self.write_paused = False     # the transport holds more than its high-water mark: the client is not reading
        self.closed = False
        self.reading = True
        self.out: list[bytes] | None = None   # responses batched while a burst is processed
        self.out_size = 0
        self.principal = "User:ANONYMOUS"      # set by SASL authentication
        self.authenticated = False
        self.client_id: str | None = None      # from the last request's header
        self.last_active = time.monotonic()    # when bytes last came in or answers went out
        # the last Heartbeat: (its api key and version bytes, size, bytes after the correlation id, request)
        self.last_heartbeat: tuple | None = None

    # ---- asyncio callbacks ------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        if self.ip is None:
            peer = transport.get_extra_info("peername")
            self.client_host = "/" + (peer[0] if peer else "unknown")
        self.server.connections[self.conn_id] = self
        self.server.stats["connections"] += 1
        if self.listener is not None and self.listener.closed:
            self.close()        # accepted just before its node stopped listening

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.server.connections.pop(self.conn_id, None)
        self.release()
        self.service.connection_closed(self.node_id, self.conn_id)

    def release(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            listener.release(self.ip)

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        self.buf += data
        self._process()

    def pause_writing(self) -> None:
        self.write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._update_reading()
        if self.buf and not self.waiting and not self.closed:
            self._process()

    def buffered_bytes(self) -> int:
        """What the server holds for this connection: unhandled input and unsent output."""
        out = self.out_size
        if self.transport is not None and not self.transport.is_closing():
            out += self.transport.get_write_buffer_size()
        return len(self.buf) + out

    # ---- frames -----------------------------------------------------------------------------
    def _process(self) -> None:
        """Handle the complete frames received, in order, while nothing holds the connection: a
        parked request, or a client that does not read its answers. Kafka mutes a channel from a
        request until its response is sent, so that a connection makes the broker hold one
        response at most; here the next request is handled once the answers before it are in the
        socket or fit the transport's buffer (its high-water mark, 64 KiB), so a connection holds
        at most that and one answer, whatever it pipelines."""
        buf = self.buf
        pos = 0
        end = len(buf)
        self.out = []           # one write (one system call) for a whole burst of answers
        limits = self.server.limits
        request_max, unauthenticated_max = limits.request_max_bytes, limits.unauthenticated_max_bytes
        try:
            while not (self.waiting or self.write_paused or self.closed) and end - pos >= 4:
                size = _SIZE.unpack_from(buf, pos)[0]
                # checked as soon as the size prefix is in, before any of the body (Kafka's NetworkReceive)
                limit = request_max if self.authenticated else unauthenticated_max
                if size < 8 or size > limit:
                    self._invalid_size(size, limit)
                    return
                if end - pos - 4 < size:
                    break
                frame = bytes(buf[pos + 4:pos + 4 + size])
                pos += 4 + size
                self._handle(frame)
                if self.out_size >= _WRITE_BATCH:
                    self._flush()       # the transport pauses us (pause_writing) if the client lags
        finally:
            self._flush()
            self.out = None
        if pos:
            del buf[:pos]
        self._update_reading()

    def _handle(self, frame: bytes) -> None:
        service = self.service
        last = self.last_heartbeat
        if last is not None and len(frame) == last[1] and frame.endswith(last[2]) and frame.startswith(last[0]):
            # a client's next Heartbeat is its last one's bytes but for the correlation id: decoded
            # once (1.3x the heartbeats a second of bench/coordinator.py)
            request, ctx = last[3], last[4]
            correlation_id = _CORRELATION.unpack_from(frame, 4)[0]
            if service.before_request or service.after_request or ctx.principal != self.principal:
                self._serve(frames.Request(request.api_key, request.api_version, correlation_id,
                                           request.client_id, request.body, request.header))
            else:
                self._repeated_heartbeat(request, ctx, correlation_id)
            return
        # the frame's api key and version bytes, looked up as they come (cheaper than unpacking)
        served = self.server.served
        if frame[:4] not in served:
            api_key, api_version, correlation_id = _PEEK.unpack_from(frame, 0)
            if service.serves(api_key, api_version):
                served.add(frame[:4])
            elif api_key == api_versions.API_KEY:    # Kafka answers it with a v0 error body
                self._write(frames.encode_response(
                    api_key, 0, correlation_id, api_versions.unsupported_version_response(service)))
                return
            else:
                self._unsupported(api_key, api_version)
                return
        try:
            request = frames.decode_request(frame)
        except (DecodeError, UnsupportedVersionError) as exc:
            self._malformed(str(exc))
            return
        if request.trailing:
            log.debug("ignoring_trailing_bytes", api=request.api_name, version=request.api_version,
                      trailing=request.trailing, connection=self.conn_id)
        elif request.api_key == _HEARTBEAT:        # (its handler only reads the body)
            ctx = RequestContext(service, self.node_id, request.client_id, self.client_host, _HEARTBEAT,
                                 request.api_version, 0, self.conn_id, self.principal, self)
            self.last_heartbeat = (frame[:4], len(frame), frame[8:], request, ctx)
        self._serve(request)

    def _repeated_heartbeat(self, request, ctx: RequestContext, correlation_id: int) -> None:
        """A repeated Heartbeat with no hook to see it: answered by the handler's ``answer``, which
        never waits, with its last context (1.2x the heartbeats a second of bench/coordinator.py)."""
        self.server.stats["requests"] += 1
        self.client_id = request.client_id
        ctx.correlation_id = correlation_id
        try:
            body = heartbeat_api.answer(ctx, request.api_version, request.body)
            out = frames.encode_response(_HEARTBEAT, request.api_version, correlation_id, body)
        except Exception:
            log.exception("handler_failed", api=request.api_name, version=request.api_version,
                          connection=self.conn_id)
            self.close()
            return
        finally:
            self.server.rearm()
        self._write(out)

    def _serve(self, request) -> None:
        service = self.service
        self.server.stats["requests"] += 1
        self.client_id = request.client_id
        ctx = RequestContext(service, self.node_id, request.client_id, self.client_host, request.api_key,
                             request.api_version, request.correlation_id, self.conn_id,
                             self.principal, self)
        if not service.before_request and not service.after_request:
            self._dispatch(request, ctx, None, hooks=False)    # (no hooks: two calls less a request)
            return
        try:
            verdict = service.admit(ctx, request.body)
        except Exception:   # a failing hook closes this connection only (never leaves the frame unread)
            log.exception("before_request_hook_failed", api=request.api_name, connection=self.conn_id)
            self.close()
            return
        if verdict is not None and verdict.delay_ms > 0:
            # hold this request, and the connection behind it, then carry on
            self.waiting = True
            delay_s = verdict.delay_ms / 1000.0
            verdict = Verdict(verdict.respond, 0, verdict.close, verdict.reason)
            self.server._loop.call_later(delay_s, self._after_delay, request, ctx, verdict)
            return
        self._dispatch(request, ctx, verdict)

    def _after_delay(self, request, ctx, verdict) -> None:
        if self.closed:
            return
        self.waiting = False
        self.out = []
        try:
            self._dispatch(request, ctx, verdict)
        finally:
            self._flush()
            self.out = None
        self._update_reading()
        if self.buf and not self.waiting and not self.closed:
            self._process()

    def _dispatch(self, request, ctx: RequestContext, verdict: Verdict | None, hooks: bool = True) -> None:
        """Run the request through the service (hooks=False: straight to its handler, as no hook is
        there to see it) and send its answer, now or once given."""
        answer = _Answer(self, request)
        try:
            if hooks:
                dispatched = self.service.dispatch(ctx, request.body, answer.respond, verdict)
            else:
                self.service.handle(ctx, request.body, answer.respond)
                dispatched = True
        except Exception:
            log.exception("handler_failed", api=request.api_name, version=request.api_version,
                          connection=self.conn_id)
            self.close()
            return
        finally:
            self.server.rearm()
        if not dispatched:
            log.info("closing_connection", reason=verdict.reason or "fault", connection=self.conn_id,
                     node=self.node_id, api=request.api_name)
            self.close()
            return
        answer.dispatched()

    def _send(self, request, body) -> None:
        if body is None or self.closed:
            return  # Produce with acks=0 has no response; a closed connection gets none
        try:
            out = frames.encode_response(request.api_key, request.api_version, request.correlation_id, body)
        except EncodeError:
            log.exception("response_encode_failed", api=request.api_name, version=request.api_version)
            self.close()
            return
        self._write(out)

    def _write(self, data: bytes) -> None:
        if self.out is not None:
            self.out.append(data)
            self.out_size += len(data)
        else:
            self.last_active = time.monotonic()
            self.transport.write(data)

    def _flush(self) -> None:
        out = self.out
        if out:
            data = out[0] if len(out) == 1 else b"".join(out)
            out.clear()
            self.out_size = 0
            if not self.closed:
                self.last_active = time.monotonic()
                self.transport.write(data)

    # ---- flow control and closing -----------------------------------------------------------
    def _update_reading(self) -> None:
        """Read on unless the client does not read its answers (Kafka keeps the channel muted
        while its response is unsent) or a parked request has _READ_HIGH_WATER of input behind it."""
        if self.write_paused or (self.waiting and len(self.buf) > _READ_HIGH_WATER):
            self._pause_reading()
        else:
            self._resume_reading()

    def _pause_reading(self) -> None:
        if self.reading and not self.closed:
            self.reading = False
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if not self.reading and not self.closed:
            self.reading = True
            self.transport.resume_reading()

    def _unsupported(self, api_key: int, api_version: int) -> None:
        # Kafka's SocketServer closes the connection on a request of a version it does not serve
        api = APIS.get(api_key)
        served = self.service.served_versions.get(api_key)
        release = self.service.config["groupcoord.kafka.version"]
        if api is not None and served is not None:
            reason = f"unsupported version: {api.name} v{api_version} (Kafka {release} serves v{served[0]}-{served[1]})"
        else:       # Kafka's words for an API it does not enable, naming it as its ApiKeys enum does
            name = snake(KAFKA_API_NAMES[api_key]).upper() if api_key in KAFKA_API_NAMES else api_key
            reason = f"Received request api key {name} with version {api_version} which is not enabled"
        self._malformed(reason)

    def _invalid_size(self, size: int, limit: int) -> None:
        if size < 0:
            self._malformed(f"Invalid receive (size = {size})")
        elif size < 8:
            self._malformed(f"Invalid receive (size = {size}, too short for a request header)")
        elif not self.authenticated and self.server.limits.sasl_max_receive is not None:
            # Kafka: a SaslAuthenticationException, logged as a failed authentication, and closed at once
            self._malformed(f"Failing SASL authentication due to invalid receive size (size = {size} larger "
                            f"than sasl.server.max.receive.size={limit})")
        else:
            self._malformed(f"Invalid receive (size = {size} larger than socket.request.max.bytes={limit})")

    def _malformed(self, reason: str) -> None:
        self.server.stats["closed_malformed"] += 1
        log.warning("closing_connection", reason=reason, connection=self.conn_id, node=self.node_id,
                    peer=self.client_host)
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.buf.clear()
            self.transport.close()

    def close_after(self, seconds: float) -> None:
        """Close this connection ``seconds`` from now (security.py's command after a failed
        authentication: the answer goes out first)."""
        self.server._loop.call_later(seconds, self.close)
