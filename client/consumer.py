"""The asyncio driver of :class:`~groupcoord.client.member.Member`: a group consumer.

    consumer = GroupConsumer("orders", config={"bootstrap.servers": gc.bootstrap_servers,
                                               "group.id": "billing"})
    await consumer.start()
    while running:
        for record in await consumer.poll(1.0):     # records of the assigned partitions
            ...
        await consumer.commit()                     # what was polled so far
    await consumer.close()                          # commit (auto-commit), revoke, LeaveGroup

One background task pumps the member: it executes the member's actions (connections,
requests, rebalance callbacks, commit completions), feeds it responses, lost connections and
time, and sleeps until the member's next deadline or the next I/O event. Rebalance callbacks
run on that task, one at a time and in order; the member waits for each to finish before the
rebalance goes on (heartbeats continue meanwhile). A callback may be a coroutine function and
may call ``commit``/``committed``.

``pattern`` (or ``subscribe(pattern=...)``), with group.protocol=consumer: subscribe to the topics
matching a regular expression (RE2/J syntax) that the group coordinator resolves, as Kafka's
``subscribe(SubscriptionPattern)``.

``listener``: an object with ``on_partitions_revoked``, ``on_partitions_assigned`` and
optionally ``on_partitions_lost`` (Kafka's ConsumerRebalanceListener; lost defaults to
revoked), each taking a set of TopicPartition, plain or async.

Errors: a fatal error of the member (e.g. FENCED_INSTANCE_ID) is raised by the next ``poll``
and by every call after it; other errors for the application (NoOffsetForPartition, a failing
listener) are raised once by the next ``poll``.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import Any, Awaitable, Callable, Iterable, Mapping

from groupcoord.protocol.aio import wait_event
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import KafkaError

from .assignors.base import TopicPartition
from .connection import BrokerConnection, ResponseCache
from .consumer_config import ConsumerConfig
from .member import (
    BOOTSTRAP,
    Closed,
    CommitCompleted,
    Connect,
    ConsumerRecord,
    Disconnect,
    ErrorRaised,
    Member,
    OffsetAndMetadata,
    OffsetsFetched,
    RebalanceCallback,
    SendRequest,
)

log = logging.getLogger("groupcoord.client.consumer")

TP = TopicPartition


_PARKING = (int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP))      # Kafka may hold their answers for long


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ConsumerClosedError(RuntimeError):
    pass


class MemberDriver:
    """What drives a sans-I/O member over asyncio, whichever it is (:class:`GroupConsumer`'s
    :class:`Member`, :class:`~groupcoord.client.share_consumer.ShareConsumer`'s ShareMember): one
    task pumping its actions, its connections, the generic actions (requests, connections, errors,
    close). A subclass makes ``self.member`` and handles the actions of its own
    (:meth:`_execute_other`)."""

    def _init_driver(self, clock: Callable[[], int], share_connections: bool,
                     response_cache: ResponseCache | None) -> None:
        self._clock = clock
        self._conns: dict[int, BrokerConnection] = {}
        # share_connections: one TCP connection per address, whatever the member's role for it
        # (bootstrap, broker, coordinator); see _execute_send and _disconnect
        self._share = share_connections
        self._by_address: dict[str, asyncio.Future] = {}
        self._on_wire: dict[int, int] = {}                 # member conn id -> requests written, unanswered
        self._parked: dict[BrokerConnection, list] = {}    # JoinGroup/SyncGroup in flight: [conn id, count]
        self._held: dict[BrokerConnection, list] = {}      # requests of other roles waiting for them
        self._response_cache = response_cache
        self._tasks: set[asyncio.Task] = set()
        self._wakeup: asyncio.Event | None = None
        self._records_ready: asyncio.Event | None = None
        self._pump_task: asyncio.Task | None = None
        self._errors: list[Exception] = []
        self._closed_event: asyncio.Event | None = None
        self._bootstrap_index = 0

    def _start_driver(self) -> None:
        self._wakeup = asyncio.Event()
        self._records_ready = asyncio.Event()
        self._closed_event = asyncio.Event()
        self._pump_task = asyncio.create_task(self._pump(), name="groupcoord-pump")

    def _background_tasks(self) -> tuple:
        return (self._pump_task, *self._tasks)

    async def _shutdown(self) -> None:
        tasks = self._background_tasks()
        for task in tasks:
            if task is not None and not task.done():
                task.cancel()
        for task in tasks:
            if task is not None:
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        if self._closed_event is not None:
            self._closed_event.set()

    async def _close_member(self, timeout: float | None) -> None:
        """Ask the member to close and wait for it (at most the timeout, default.api.timeout.ms)."""
        if self._pump_task is None or self._closed_event.is_set():
            await self._shutdown()
            return
        timeout_ms = None if timeout is None else int(timeout * 1000)
        self.member.close(self._clock(), timeout_ms)
        self._wake()
        wait = (timeout if timeout is not None else self.config["default.api.timeout.ms"] / 1000) + 1
        if not await wait_event(self._closed_event, wait):
            log.warning("close did not complete within %.1fs", wait)
        await self._shutdown()

    # ============================================================================ the pump
    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def _raise_errors(self) -> None:
        if self.member.fatal_error is not None:
            raise self.member.fatal_error
        if self._errors:
            raise self._errors.pop(0)

    def _drain_now(self) -> None:
        """Execute what the member has ready (completions of empty commits, mostly)."""
        if self._pump_task is not None:
            for action in self.member.poll(self._clock()):
                self._execute(action)

    async def _pump(self) -> None:
        try:
            while True:
                self._wakeup.clear()
                actions = self.member.poll(self._clock())
                for action in actions:
                    self._execute(action)
                if self.member.closed:
                    return
                if actions:
                    await asyncio.sleep(0)
                    continue
                deadline = self.member.next_deadline()
                timeout = None if deadline is None else max(0.0, (deadline - self._clock()) / 1000)
                await wait_event(self._wakeup, timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:               # a bug: surface it instead of hanging
            log.exception("the consumer's pump failed")
            self._errors.append(e)
            self._records_ready.set()

    def _spawn(self, coro: Awaitable) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _execute(self, action) -> None:
        member = self.member
        if isinstance(action, SendRequest):
            conn = self._conns.get(action.conn_id)
            if conn is None:
                member.on_connection_lost(action.conn_id, self._clock())
                return
            self._execute_send(conn, action)
        elif isinstance(action, Connect):
            self._spawn(self._connect(action))
        elif isinstance(action, Disconnect):
            self._disconnect(action.conn_id)
        elif isinstance(action, ErrorRaised):
            if action.fatal:
                self._fail_waiters(action.error)
            else:
                self._errors.append(action.error)
            self._records_ready.set()
        elif isinstance(action, Closed):
            self._closed_event.set()
        else:
            self._execute_other(action)
        self._after_action()

    def _execute_other(self, action) -> None:
        """An action of the subclass's member."""

    def _after_action(self) -> None:
        """After each action and response: wake a waiting poll when records are ready."""

    def _fail_waiters(self, error: Exception) -> None:
        """A fatal error: whatever the application awaits fails with it."""

    # ---- connections shared between roles (share_connections) --------------------------------
    # Kafka answers a connection's requests one at a time, in order: a parked JoinGroup or
    # SyncGroup holds everything behind it. Requests of the member's other roles are therefore
    # held back here while one is in flight (and sent after it), so that they cannot time out
    # behind it; a role whose own request is on the wire when the member gives up on it
    # (timeout, coordinator lost) closes the connection, telling every role, as a request
    # timeout closes a Java client's connection.
    def _execute_send(self, conn: BrokerConnection, action: SendRequest) -> None:
        if self._share:
            parked = self._parked.get(conn)
            if parked is not None and parked[0] != action.conn_id:
                self._held.setdefault(conn, []).append(action)
                return
            self._on_wire[action.conn_id] = self._on_wire.get(action.conn_id, 0) + 1
            if action.api_key in _PARKING:
                if parked is None:
                    self._parked[conn] = [action.conn_id, 1]
                else:
                    parked[1] += 1
        fut = conn.send(action.api_key, action.api_version, action.body)
        fut.add_done_callback(lambda f, a=action, c=conn: self._on_response(a, c, f))

    def _answered(self, action: SendRequest, conn: BrokerConnection) -> None:
        n = self._on_wire.get(action.conn_id, 0) - 1
        if n > 0:
            self._on_wire[action.conn_id] = n
        else:
            self._on_wire.pop(action.conn_id, None)
        if action.api_key in _PARKING:
            parked = self._parked.get(conn)
            if parked is not None:
                parked[1] -= 1
                if parked[1] <= 0:
                    del self._parked[conn]
                    for held in self._held.pop(conn, ()):
                        if self._conns.get(held.conn_id) is conn and not conn.closed:
                            self._execute_send(conn, held)

    def _disconnect(self, conn_id: int) -> None:
        conn = self._conns.pop(conn_id, None)
        if conn is None:
            return
        if not self._share:
            conn.close()
            return
        held = self._held.get(conn)
        if held:
            held[:] = [a for a in held if a.conn_id != conn_id]
        if self._on_wire.get(conn_id):
            conn.close(notify=True)          # its unanswered request holds the connection
        elif conn not in self._conns.values():
            conn.close()

    def _on_response(self, action: SendRequest, conn: BrokerConnection, fut: asyncio.Future) -> None:
        if self._share:
            self._answered(action, conn)
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is None:
            self.member.on_response(action.request_id, fut.result(), self._clock())
        elif self._conns.get(action.conn_id) is conn:
            log.info("request %s failed: %s", action.request_id, exc)
            if self._share and not isinstance(exc, (ConnectionError, OSError)):
                # not the connection's fault (e.g. the request could not be encoded): only this
                # role's connection is lost
                self._disconnect(action.conn_id)
                self.member.on_connection_lost(action.conn_id, self._clock())
            else:
                conn.close(notify=True)      # every role using it is told
        self._wake()
        self._after_action()

    async def _connect(self, action: Connect) -> None:
        if action.role == BOOTSTRAP:
            servers = self.config["bootstrap.servers"]
            start = self._bootstrap_index
            targets = [servers[(start + i) % len(servers)] for i in range(len(servers))]
            self._bootstrap_index += 1
        else:
            targets = [f"{action.host}:{action.port}"]
        for target in targets:
            conn = await self._open(target)
            if conn is None:
                continue
            if action.conn_id not in self.member.net.conns:     # the member gave up on it meanwhile
                if not self._share or conn not in self._conns.values():
                    conn.close()
                return
            self._conns[action.conn_id] = conn
            self.member.on_connected(action.conn_id, conn.api_versions, self._clock())
            self._wake()
            return
        self.member.on_connection_lost(action.conn_id, self._clock())
        self._wake()

    async def _open(self, target: str) -> BrokerConnection | None:
        """A ready connection to target: a new one, or (share_connections) the open one."""
        if self._share:
            while True:
                pending = self._by_address.get(target)
                if pending is None:
                    break
                conn = await asyncio.shield(pending)
                if conn is None:
                    return None              # that dial failed: so does this one (the member backs off)
                if not conn.closed:
                    return conn
                if self._by_address.get(target) is pending:
                    del self._by_address[target]
            fut = self._by_address[target] = asyncio.get_running_loop().create_future()
            conn = None
            try:
                conn = await self._dial(target)
            finally:
                fut.set_result(conn)
                if conn is None and self._by_address.get(target) is fut:
                    del self._by_address[target]
            return conn
        return await self._dial(target)

    async def _dial(self, target: str) -> BrokerConnection | None:
        host, _, port = target.rpartition(":")
        conn = BrokerConnection(host, int(port), client_id=self.config["client.id"] or None,
                                on_close=lambda c, exc: self._on_conn_closed(c),
                                response_cache=self._response_cache)
        try:
            await conn.connect(self.config["socket.connection.setup.timeout.ms"] / 1000)
        except (OSError, asyncio.TimeoutError, ConnectionError, KafkaError) as e:
            log.info("cannot connect to %s: %s", target, e)
            conn.close()
            return None
        except BaseException:                # cancelled (shutdown): no half-open connection left
            conn.close()
            raise
        return None if conn.closed else conn

    def _on_conn_closed(self, conn: BrokerConnection) -> None:
        """A connection ended: each of the member's connections on it is lost."""
        self._held.pop(conn, None)
        self._parked.pop(conn, None)
        lost = [cid for cid, c in self._conns.items() if c is conn]
        for cid in lost:
            del self._conns[cid]
        for cid in lost:
            self.member.on_connection_lost(cid, self._clock())
        if lost:
            self._wake()


class GroupConsumer(MemberDriver):
    """A consumer-group member over asyncio. See the module docstring."""

    def __init__(self, *topics: str, config: Mapping[str, Any] | ConsumerConfig | None = None,
                 pattern: str | None = None,
                 assignors: list | None = None, listener: Any = None, fetch: bool = True,
                 clock: Callable[[], int] = monotonic_ms, max_versions: Mapping[int, int] | None = None,
                 share_connections: bool = False, response_cache: ResponseCache | None = None,
                 **configs: Any):
        if isinstance(config, ConsumerConfig):
            self.config = config.with_overrides({k.replace("_", "."): v for k, v in configs.items()}) \
                if configs else config
        else:
            merged = dict(config or {})
            merged.update({k.replace("_", "."): v for k, v in configs.items()})
            self.config = ConsumerConfig(merged)
        if not self.config["bootstrap.servers"]:
            from .consumer_config import ConfigError
            raise ConfigError("bootstrap.servers", "is required")
        self._init_driver(clock, share_connections, response_cache)
        if topics and pattern is not None:
            raise ValueError("subscribe to topics or to a pattern, not both")
        self.member = Member(self.config, assignors, topics=topics, now=clock(), fetch=fetch,
                             max_versions=max_versions)
        if pattern is not None:
            self.member.subscribe_pattern(pattern, clock())
        self.listener = listener
        if share_connections and fetch:
            raise ValueError("share_connections is for members that do not fetch (fetch=False): a parked "
                             "Fetch would hold the coordinator's requests behind it")
        self._callbacks: asyncio.Queue | None = None
        self._callback_task: asyncio.Task | None = None
        self._commit_waiters: dict[int, asyncio.Future] = {}
        self._commit_callbacks: dict[int, Callable] = {}
        self._fetch_waiters: dict[int, asyncio.Future] = {}
        self.rebalance_log: list[tuple[str, frozenset]] = []     # (kind, partitions) as called back

    # ============================================================================ lifecycle
    async def start(self) -> "GroupConsumer":
        if self._pump_task is not None:
            return self
        self._callbacks = asyncio.Queue()
        self._callback_task = asyncio.create_task(self._run_callbacks(), name="groupcoord-callbacks")
        self._start_driver()
        return self

    async def close(self, timeout: float | None = None) -> None:
        """Kafka's close: auto-commit, revoke (listener), LeaveGroup for dynamic members."""
        await self._close_member(timeout)

    def _background_tasks(self) -> tuple:
        return (self._pump_task, self._callback_task, *self._tasks)

    async def __aenter__(self) -> "GroupConsumer":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ============================================================================ the API
    async def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records of the assigned partitions (possibly none), waiting up to timeout seconds."""
        self._check_open()
        self.member.application_poll(self._clock())
        self._wake()
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self._raise_errors()
            records = self.member.take_records(max_records)
            if records:
                self._wake()                     # positions moved: fetch more
                return records
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return []
            self._records_ready.clear()
            if not await wait_event(self._records_ready, remaining):
                self._raise_errors()
                return []

    def assignment(self) -> set[TP]:
        return set(self.member.assignment)

    def subscription(self) -> set[str]:
        return set(self.member.subscription)

    def subscription_pattern(self) -> str | None:
        return self.member.subscription_pattern

    def subscribe(self, topics: Iterable[str] | None = None, *, pattern: str | None = None) -> None:
        """Subscribe to topics by name, or (``pattern``, group.protocol=consumer only: Kafka's
        ``subscribe(SubscriptionPattern)``) to those matching a regular expression in RE2/J syntax,
        which the group coordinator resolves (``UnsupportedOperationError`` with the classic
        protocol)."""
        if (topics is None) == (pattern is None):
            raise ValueError("subscribe to topics or to a pattern (one of them)")
        if pattern is not None:
            self.member.subscribe_pattern(pattern, self._clock())
        else:
            self.member.subscribe(topics, self._clock())
        self._wake()

    def position(self, tp: TP) -> int | None:
        return self.member.position(tp)

    def seek(self, tp: TP, offset: int) -> None:
        self.member.seek(tp, offset)
        self._wake()

    async def commit(self, offsets: Mapping[TP, int | OffsetAndMetadata] | None = None,
                     timeout: float | None = None) -> None:
        """Commit synchronously (the next offsets to read; default: every consumed position)."""
        self._check_open()
        timeout_ms = None if timeout is None else int(timeout * 1000)
        handle = self.member.commit(offsets, self._clock(), sync=True, timeout_ms=timeout_ms)
        fut = asyncio.get_running_loop().create_future()
        self._commit_waiters[handle] = fut
        self._drain_now()
        self._wake()
        await fut

    def commit_async(self, offsets: Mapping[TP, int | OffsetAndMetadata] | None = None,
                     callback: Callable[[dict, Exception | None], Any] | None = None) -> None:
        """Commit without waiting; callback(offsets, error) runs when it completes."""
        self._check_open()
        handle = self.member.commit(offsets, self._clock(), sync=False)
        if callback is not None:
            self._commit_callbacks[handle] = callback
        self._drain_now()
        self._wake()

    async def committed(self, partitions: Iterable[TP], timeout: float | None = None
                        ) -> dict[TP, OffsetAndMetadata | None]:
        self._check_open()
        timeout_ms = None if timeout is None else int(timeout * 1000)
        handle = self.member.fetch_committed(partitions, self._clock(), timeout_ms=timeout_ms)
        fut = asyncio.get_running_loop().create_future()
        self._fetch_waiters[handle] = fut
        self._wake()
        return await fut

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0, poll: bool = True) -> None:
        """Poll (as the application would) until predicate() holds; TimeoutError after timeout s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            if loop.time() >= deadline:
                raise asyncio.TimeoutError(f"condition not met within {timeout}s; member: {self.member!r}")
            if poll:
                await self.poll(0.05)
            else:
                await asyncio.sleep(0.05)

    # ============================================================================ the pump
    def _check_open(self) -> None:
        if self._pump_task is None:
            raise ConsumerClosedError("start() the consumer first")
        if self.member.fatal_error is not None:
            raise self.member.fatal_error
        if self._closed_event.is_set():
            raise ConsumerClosedError("the consumer is closed")

    def _execute_other(self, action) -> None:
        if isinstance(action, RebalanceCallback):
            self._callbacks.put_nowait(action)
        elif isinstance(action, CommitCompleted):
            fut = self._commit_waiters.pop(action.handle, None)
            if fut is not None and not fut.done():
                if action.error is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(action.error)
            callback = self._commit_callbacks.pop(action.handle, None)
            if callback is not None:
                try:
                    result = callback(action.offsets, action.error)
                    if inspect.isawaitable(result):
                        self._spawn(result)
                except Exception:
                    log.exception("offset commit callback failed")
            elif action.error is not None and action.kind in ("auto", "async"):
                log.warning("%s offset commit failed: %s", action.kind, action.error)
        elif isinstance(action, OffsetsFetched):
            fut = self._fetch_waiters.pop(action.handle, None)
            if fut is not None and not fut.done():
                if action.error is None:
                    fut.set_result(action.offsets)
                else:
                    fut.set_exception(action.error)

    def _fail_waiters(self, error: Exception) -> None:
        for fut in [*self._commit_waiters.values(), *self._fetch_waiters.values()]:
            if not fut.done():
                fut.set_exception(error)
        self._commit_waiters.clear()
        self._fetch_waiters.clear()

    def _after_action(self) -> None:
        if self.member.fetch_enabled and self.member.fetcher.completed:
            self._records_ready.set()

    async def _run_callbacks(self) -> None:
        while True:
            action: RebalanceCallback = await self._callbacks.get()
            partitions = set(action.partitions)
            self.rebalance_log.append((action.kind, frozenset(partitions)))
            try:
                fn = self._listener_method(action.kind)
                if fn is not None:
                    result = fn(partitions)
                    if inspect.isawaitable(result):
                        await result
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception("rebalance listener failed on partitions %s", action.kind)
                self._errors.append(e)
                self._records_ready.set()
            finally:
                self.member.callback_done(action.token, self._clock())
                self._wake()

    def _listener_method(self, kind: str):
        listener = self.listener
        if listener is None:
            return None
        fn = getattr(listener, f"on_partitions_{kind}", None)
        if fn is None and kind == "lost":
            fn = getattr(listener, "on_partitions_revoked", None)
        return fn

    def __repr__(self) -> str:
        return f"GroupConsumer({self.member!r})"
