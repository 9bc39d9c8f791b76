"""Drivers for real Kafka clients, as used by the interop suite.

Every client is wrapped the same way so that one scenario can run against all of them:

- a *member* (:class:`Member`) is one group consumer: ``start()``, ``close()``, ``owned`` (its
  partitions as told by the client's own rebalance callbacks), ``api_assignment()`` (the client's
  assignment() API, where it has one), ``records`` (what it consumed; by default appended only
  after the offset was committed synchronously, see ``autocommit``), ``revocations`` (what the
  callbacks revoked);
- a *driver* (:class:`Driver`) makes members of one client library, produces records with that
  library's own producer (returning the offsets the broker acknowledged) and reads committed
  offsets back with a fresh consumer of the group (``committed()``).

confluent-kafka and kafka-python members run their poll loop in a thread of their own; calls to
the client happen on that thread (``Member.run``). aiokafka members share one event-loop thread.
KafkaJS members live in one node process (js/driver.js) spoken to in JSON lines.

Also here: :func:`wait_until` (every wait of the suite: a condition polled until a deadline),
:class:`Coord` (a started coordinator and snapshots of its core, :class:`GroupView`),
:class:`RequestSpy` (which node answered which group request), :class:`Daemon` (``groupcoord serve
--data-dir`` in a process of its own, to kill and start again), and the assertions
:func:`wait_covered` and :func:`assert_exactly_once`.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

TP = tuple[str, int]
HERE = Path(__file__).resolve().parent
JS_DIR = HERE / "js"

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 500
AUTOCOMMIT_INTERVAL_MS = 600_000   # auto-commit members commit on revocation and close only
WAIT = 30.0            # default deadline of every wait in the suite (seconds)


class Timeout(AssertionError):
    pass


#: how long a close at the interop fixtures' teardown may take (a driver's own close waits up to
#: WAIT on its parts)
CLOSE_WAIT = 2 * WAIT


def close_within(obj, seconds: float) -> None:
    """obj.close(), on a thread of its own, given ``seconds``: a close that has not returned by then
    is left to itself (a daemon thread) and fails the test (Timeout) instead of hanging the suite:
    pytest-timeout cannot end a wait inside a C library, and librdkafka's consumer close can wait
    for ever on its own rebalance callback (confluentinc/librdkafka#4041, seen here once)."""
    done: list = []

    def run() -> None:
        try:
            obj.close()
            done.append(None)
        except BaseException as exc:
            done.append(exc)
    thread = threading.Thread(target=run, name=f"close {type(obj).__name__}", daemon=True)
    thread.start()
    thread.join(seconds)
    if not done:
        raise Timeout(f"{obj!r}.close() had not returned after {seconds:g} s")
    if done[0] is not None:
        raise done[0]


def wait_until(cond: Callable[[], object], timeout: float = WAIT, interval: float = 0.05,
               message: str | Callable[[], str] = "condition") -> object:
    """Poll cond() until it returns something truthy (returned); AssertionError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise Timeout(f"timed out after {timeout:.1f}s waiting for {text}")
        time.sleep(interval)


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    value: str

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)


# ============================================================================ coordinator view
#: the two topics every group of the suite subscribes to (7 partitions)
TOPICS = {"alpha": 4, "beta": 3}


def all_partitions(topics: dict[str, int] = TOPICS) -> frozenset[TP]:
    return frozenset((t, p) for t, n in topics.items() for p in range(n))


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: dict[str, str | None]          # member id -> group instance id
    offsets: dict[TP, int] = field(default_factory=dict)


class Coord:
    def __init__(self, gc):
        self.gc = gc
        self.events: list[dict] = []
        self._lock = threading.Lock()

    @property
    def bootstrap(self) -> str:
        return self.gc.bootstrap_servers

    def record(self, event: dict) -> None:
        with self._lock:
            self.events.append(event)

    def events_of(self, group_id: str, *kinds: str) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e.get("group") == group_id and (not kinds or e["event"] in kinds)]

    def group(self, group_id: str) -> GroupView | None:
        def snapshot():
            gc = self.gc.service.group_coordinator
            g = gc.group(group_id)
            if g is None:
                return None
            return GroupView(g.group_id, g.state, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id,
                             {m.member_id: m.group_instance_id for m in g.members.values()},
                             {(t, p): o.committed_offset for t, parts in gc.offsets.of(group_id).items()
                              for p, o in parts.items()})
        return self.gc.call(snapshot)

    def stable(self, group_id: str, members: int) -> GroupView | None:
        view = self.group(group_id)
        if view is not None and view.state == "Stable" and len(view.members) == members:
            return view
        return None


GROUP_APIS = {8: "OffsetCommit", 9: "OffsetFetch", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup",
              14: "SyncGroup"}
FIND_COORDINATOR = 10


@dataclass(frozen=True)
class Seen:
    node: int
    api: str
    group: str
    error: int | None
    response: dict | None = None


def _error_of(resp: dict) -> int | None:
    """The top-level error code, else the first non-zero partition error (OffsetCommit), else 0."""
    if "error_code" in resp:
        return resp["error_code"]
    for t in resp.get("topics", []):
        for p in t.get("partitions", []):
            if p.get("error_code"):
                return p["error_code"]
    return 0


class RequestSpy:
    """An ``after_request`` hook noting, per request of a group API, the node it reached, the group
    and the error answered (and FindCoordinator answers, key by key). Installed on the service loop."""

    def __init__(self, coord: "Coord"):
        self.coord = coord
        self.seen: list[Seen] = []
        coord.gc.call(coord.gc.service.after_request.append, self._observe)

    def _observe(self, ctx, body, resp, seconds) -> None:
        if resp is None or not (ctx.api_key in GROUP_APIS or ctx.api_key == FIND_COORDINATOR):
            return
        if ctx.api_key == FIND_COORDINATOR:
            found = resp.get("coordinators") or [dict(resp, key=body.get("key"))]
            for c in found:
                self.seen.append(Seen(ctx.node_id, "FindCoordinator", c["key"], c["error_code"], c))
        elif "groups" in body and ctx.api_key == 9:          # OffsetFetch v8+
            for g in resp.get("groups", []):
                self.seen.append(Seen(ctx.node_id, "OffsetFetch", g["group_id"], g["error_code"]))
        else:
            self.seen.append(Seen(ctx.node_id, GROUP_APIS[ctx.api_key], body.get("group_id"), _error_of(resp)))

    def snapshot(self) -> list[Seen]:
        return self.coord.gc.call(list, self.seen)


# ============================================================================ members
def subscription_pattern(topics: list[str]) -> str | None:
    """The regular expression of a pattern subscription: topics given as ["^regex"], as
    librdkafka takes them (confluent-kafka and KafkaJS members pass it on as it is)."""
    if len(topics) == 1 and topics[0].startswith("^"):
        return topics[0]
    return None


class Member:
    """One consumer of a group, seen through its own client's callbacks."""

    client = "?"

    def __init__(self, name: str, bootstrap: str, group_id: str, topics: list[str], strategy: str | None,
                 *, instance_id: str | None = None, extra: dict | None = None, autocommit: bool = False):
        self.name = name
        #: False: each record's offset is committed synchronously before the record counts as consumed.
        #: True: the client's auto-commit, with an interval so long that it commits only when
        #: partitions are revoked (rebalance, close).
        self.autocommit = autocommit
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.topics = list(topics)
        self.strategy = strategy
        self.instance_id = instance_id
        self.extra = dict(extra or {})
        self.lock = threading.Lock()
        self._owned: set[TP] = set()
        self.assignments: list[frozenset[TP]] = []     # what each assign callback added
        self.revocations: list[frozenset[TP]] = []     # what each revoke/lost callback removed
        self.records: list[Record] = []
        self.errors: list[BaseException] = []
        self.closed = False

    # ---- bookkeeping, called from the client's callbacks ----------------------------
    def _assigned(self, tps: Iterable[TP]) -> None:
        tps = frozenset(tps)
        with self.lock:
            self.assignments.append(tps)
            self._owned |= tps

    def _revoked(self, tps: Iterable[TP]) -> None:
        tps = frozenset(tps)
        with self.lock:
            self.revocations.append(tps)
            self._owned -= tps

    def _set_owned(self, tps: Iterable[TP]) -> None:
        """For clients that report the full assignment at each rebalance (KafkaJS)."""
        tps = frozenset(tps)
        with self.lock:
            self.assignments.append(tps)
            self._owned = set(tps)

    def _consumed(self, recs: Iterable[Record]) -> None:
        with self.lock:
            self.records.extend(recs)

    @property
    def owned(self) -> frozenset[TP]:
        with self.lock:
            return frozenset(self._owned) if not self.closed else frozenset()

    def consumed(self) -> list[Record]:
        with self.lock:
            return list(self.records)

    def revocation_count(self) -> int:
        with self.lock:
            return len(self.revocations)

    # ---- to implement -----------------------------------------------------------------
    def start(self) -> "Member":
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def api_assignment(self) -> frozenset[TP] | None:
        """The assignment according to the client's assignment() API; None if it has none."""
        return None

    def member_id(self) -> str | None:
        """The member id the client believes it has."""
        return None

    def check(self) -> None:
        if self.errors:
            raise AssertionError(f"{self.name} failed: {self.errors[0]!r}") from self.errors[0]

    def __repr__(self) -> str:
        return f"<{self.client} {self.name} owned={sorted(self.owned)}>"


class ThreadMember(Member):
    """A member whose client is driven by a poll loop in its own thread."""

    poll_interval = 0.05

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._thread = threading.Thread(target=self._main, name=f"member-{self.name}", daemon=True)
        self._stop = threading.Event()
        self._calls: queue.Queue = queue.Queue()
        self._ready = threading.Event()
        self.consumer = None

    def start(self) -> "ThreadMember":
        self._thread.start()
        if not self._ready.wait(WAIT):
            raise Timeout(f"{self.name} did not start")
        self.check()
        return self

    def run(self, fn: Callable, timeout: float = WAIT):
        """fn(consumer), on the member's own thread between two polls."""
        if not self._thread.is_alive():
            raise RuntimeError(f"{self.name} is not running")
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future.result(timeout)

    def _main(self) -> None:
        try:
            self.consumer = self._create()
        except BaseException as exc:
            self.errors.append(exc)
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._stop.is_set():
                self._poll(self.consumer)
                while True:
                    try:
                        fn, future = self._calls.get_nowait()
                    except queue.Empty:
                        break
                    try:
                        future.set_result(fn(self.consumer))
                    except BaseException as exc:
                        future.set_exception(exc)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            try:
                self._close_client(self.consumer)
            except BaseException as exc:
                self.errors.append(exc)
            with self.lock:
                self.closed = True

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(WAIT)
            if self._thread.is_alive():
                raise Timeout(f"{self.name} did not close")
        with self.lock:
            self.closed = True

    def _create(self):
        raise NotImplementedError

    def _poll(self, consumer) -> None:
        raise NotImplementedError

    def _close_client(self, consumer) -> None:
        consumer.close()


# ---- confluent-kafka / librdkafka -------------------------------------------------------
def confluent_config(bootstrap: str, group_id: str | None = None, **overrides) -> dict:
    conf = {
        "bootstrap.servers": bootstrap,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_MS,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 50,
        "fetch.wait.max.ms": 100,
    }
    if group_id is not None:
        conf["group.id"] = group_id
    conf.update(overrides)
    return conf


class ConfluentMember(ThreadMember):
    client = "confluent-kafka"

    def _create(self):
        from confluent_kafka import Consumer

        overrides = {"client.id": self.name}
        if self.autocommit:
            overrides.update({"enable.auto.commit": True, "auto.commit.interval.ms": AUTOCOMMIT_INTERVAL_MS})
        if self.strategy:
            overrides["partition.assignment.strategy"] = self.strategy
        if self.instance_id:
            overrides["group.instance.id"] = self.instance_id
        overrides.update(self.extra)
        consumer = Consumer(confluent_config(self.bootstrap, self.group_id, **overrides))
        self._subscribe(consumer, self.topics)
        return consumer

    def _subscribe(self, consumer, topics) -> None:
        def tps(partitions):
            return [(p.topic, p.partition) for p in partitions]

        consumer.subscribe(list(topics),
                           on_assign=lambda c, ps: self._assigned(tps(ps)),
                           on_revoke=lambda c, ps: self._revoked(tps(ps)),
                           on_lost=lambda c, ps: self._revoked(tps(ps)))

    def resubscribe(self, topics: list[str]) -> None:
        """Change the subscription of the running consumer (on its thread)."""
        self.topics = list(topics)
        self.run(lambda c: self._subscribe(c, topics))

    def _poll(self, consumer) -> None:
        msg = consumer.poll(self.poll_interval)
        if msg is None:
            return
        if msg.error():
            from confluent_kafka import KafkaError

            # a fatal error comes as a message of code _FATAL, whose own fatal() is False
            fatal = msg.error().fatal() or msg.error().code() == KafkaError._FATAL
            if msg.error().retriable() or not fatal:
                return
            raise RuntimeError(f"consumer error: {msg.error()}")
        if not self.autocommit:
            consumer.commit(message=msg, asynchronous=False)
        self._consumed([Record(msg.topic(), msg.partition(), msg.offset(), msg.value().decode())])

    def api_assignment(self):
        return frozenset((p.topic, p.partition) for p in self.run(lambda c: c.assignment()))

    def member_id(self) -> str:
        return self.run(lambda c: c.memberid())


# ---- kafka-python ---------------------------------------------------------------------------
#: KafkaJS's round-robin assigner's protocol name: the Python clients can announce it (a round robin
#: under that name) to share a classic group with KafkaJS members, whose only built-in it is.
KAFKAJS_PROTOCOL = "RoundRobinAssigner"


def kafka_python_assignor(strategy: str):
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    class KafkaJSRoundRobin(RoundRobinPartitionAssignor):
        name = KAFKAJS_PROTOCOL

    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor,
            KAFKAJS_PROTOCOL: KafkaJSRoundRobin}[strategy]


def kafka_python_config(bootstrap: str, **overrides) -> dict:
    conf = dict(bootstrap_servers=bootstrap, session_timeout_ms=SESSION_TIMEOUT_MS,
                heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest", enable_auto_commit=False,
                request_timeout_ms=10000, retry_backoff_ms=50, reconnect_backoff_ms=50,
                reconnect_backoff_max_ms=500, fetch_max_wait_ms=100)
    conf.update(overrides)
    return conf


class KafkaPythonMember(ThreadMember):
    client = "kafka-python"
    #: Tests where the leader's metadata changes under it (members subscribed to different topics)
    #: raise this: a poll() that *starts* while the leader's metadata-triggered rejoin is in
    #: flight loses its result (the kafka-python bug described in _subscribe); fewer, longer polls
    #: make that window rarer.
    poll_interval = 0.05

    def _create(self):
        from kafka import KafkaConsumer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member._revoked((tp.topic, tp.partition) for tp in revoked)

            def on_partitions_assigned(self, assigned):
                member._assigned((tp.topic, tp.partition) for tp in assigned)

            def on_partitions_lost(self, lost):
                member._revoked((tp.topic, tp.partition) for tp in lost)

        strategies = self.strategy if isinstance(self.strategy, (list, tuple)) else [self.strategy]
        overrides = dict(group_id=self.group_id, client_id=self.name,
                         partition_assignment_strategy=[kafka_python_assignor(s) for s in strategies])
        if self.instance_id:
            overrides["group_instance_id"] = self.instance_id
        if self.autocommit:
            overrides.update(enable_auto_commit=True, auto_commit_interval_ms=AUTOCOMMIT_INTERVAL_MS)
        overrides.update(self.extra)
        consumer = KafkaConsumer(**kafka_python_config(self.bootstrap, **overrides))
        self._listener = Listener()
        self._subscribe(consumer, self.topics)
        return consumer

    def _subscribe(self, consumer, topics) -> None:
        pattern = subscription_pattern(topics)
        if pattern is not None:
            consumer.subscribe(pattern=pattern, listener=self._listener)
            return
        consumer.subscribe(list(topics), listener=self._listener)
        # kafka-python 3.0.12 bug: ensure_active_group() awaits its in-flight join only while
        # need_rejoin() is true. For a rejoin not requested through request_rejoin() (a
        # subscription change, or the leader's metadata snapshot changing), need_rejoin() turns
        # false while JoinGroup/SyncGroup are in flight, so when a poll() times out mid-rebalance
        # the next poll skips the finished join: no assignment, heartbeats left disabled, the
        # member expires after session.timeout.ms. Subscribed to a list of topics, it also joins
        # before its metadata snapshot has them (KAFKA-3949's race), so a leader assigns nothing
        # and rejoins that way once the metadata arrives. Hence: wait for the snapshot before the
        # next poll, and request the rejoin explicitly on a subscription change (resubscribe).
        coordinator = consumer._coordinator
        wait_until(lambda: all(coordinator._metadata_snapshot.get(t) for t in topics), 15,
                   message=f"kafka-python metadata for {topics}")

    def resubscribe(self, topics: list[str]) -> None:
        """Change the subscription of the running consumer (on its thread)."""
        self.topics = list(topics)

        def change(consumer):
            self._subscribe(consumer, topics)
            consumer._coordinator.request_rejoin()      # see _subscribe
        self.run(change)

    def _poll(self, consumer) -> None:
        batches = consumer.poll(timeout_ms=int(self.poll_interval * 1000))
        if not batches:
            return
        if not self.autocommit:
            consumer.commit()       # the positions after what poll returned, synchronously
        self._consumed(Record(r.topic, r.partition, r.offset, r.value.decode())
                       for recs in batches.values() for r in recs)

    def _close_client(self, consumer) -> None:
        consumer.close(autocommit=self.autocommit)

    def api_assignment(self):
        return frozenset((tp.topic, tp.partition) for tp in self.run(lambda c: c.assignment()))

    def member_id(self) -> str:
        return self.run(lambda c: c.group_metadata().member_id)


# ---- aiokafka -----------------------------------------------------------------------------
class LoopThread:
    """An asyncio loop in a thread of its own, shared by the aiokafka members of a test."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="aiokafka-loop", daemon=True)
        self._thread.start()

    def submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro, timeout: float = WAIT):
        return self.submit(coro).result(timeout)

    def close(self) -> None:
        async def _drain():
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            self.run(_drain(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()


def aiokafka_assignor(strategy: str):
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    class KafkaJSRoundRobin(RoundRobinPartitionAssignor):
        name = KAFKAJS_PROTOCOL

    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor, KAFKAJS_PROTOCOL: KafkaJSRoundRobin}[strategy]


def aiokafka_config(bootstrap: str, **overrides) -> dict:
    conf = dict(bootstrap_servers=bootstrap, session_timeout_ms=SESSION_TIMEOUT_MS,
                heartbeat_interval_ms=HEARTBEAT_MS, auto_offset_reset="earliest", enable_auto_commit=False,
                retry_backoff_ms=50, fetch_max_wait_ms=100, request_timeout_ms=10000)
    conf.update(overrides)
    return conf


class AioKafkaMember(Member):
    client = "aiokafka"

    def __init__(self, *args, loop_thread: LoopThread, **kwargs):
        super().__init__(*args, **kwargs)
        self.lt = loop_thread
        self.consumer = None
        self._task: concurrent.futures.Future | None = None

    def start(self) -> "AioKafkaMember":
        self.lt.run(self._start())
        self._task = self.lt.submit(self._loop())
        return self

    async def _start(self):
        from aiokafka import AIOKafkaConsumer
        from aiokafka.abc import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                member._revoked((tp.topic, tp.partition) for tp in revoked)

            async def on_partitions_assigned(self, assigned):
                member._assigned((tp.topic, tp.partition) for tp in assigned)

        overrides = dict(group_id=self.group_id, client_id=self.name,
                         partition_assignment_strategy=(aiokafka_assignor(self.strategy),))
        if self.instance_id:
            overrides["group_instance_id"] = self.instance_id
        if self.autocommit:
            overrides.update(enable_auto_commit=True, auto_commit_interval_ms=AUTOCOMMIT_INTERVAL_MS)
        overrides.update(self.extra)
        self.consumer = AIOKafkaConsumer(**aiokafka_config(self.bootstrap, **overrides))
        self._listener = Listener()
        pattern = subscription_pattern(self.topics)
        if pattern is not None:
            self.consumer.subscribe(pattern=pattern, listener=self._listener)
        else:
            self.consumer.subscribe(self.topics, listener=self._listener)
        await self.consumer.start()

    def resubscribe(self, topics: list[str]) -> None:
        self.topics = list(topics)

        async def change():
            self.consumer.subscribe(list(topics), listener=self._listener)
        self.lt.run(change())

    async def _loop(self):
        try:
            while True:
                batches = await self.consumer.getmany(timeout_ms=100)
                if batches:
                    if not self.autocommit:
                        await self.consumer.commit()
                    self._consumed(Record(r.topic, r.partition, r.offset, r.value.decode())
                                   for recs in batches.values() for r in recs)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:
            self.errors.append(exc)

    def close(self) -> None:
        if self.closed:
            return
        with self.lock:
            self.closed = True

        async def _close():
            if self._task is not None:
                self._task.cancel()
            await self.consumer.stop()
        if self.consumer is not None:
            self.lt.run(_close())

    def api_assignment(self):
        async def _get():
            return frozenset((tp.topic, tp.partition) for tp in self.consumer.assignment())
        return self.lt.run(_get())

    def member_id(self) -> str:
        async def _get():
            return self.consumer._coordinator.member_id     # aiokafka has no public accessor
        return self.lt.run(_get())


# ---- KafkaJS ---------------------------------------------------------------------------------
def kafkajs_available() -> bool:
    return (JS_DIR / "node_modules" / "kafkajs" / "package.json").is_file()


class KafkaJSHost:
    """One node process running js/driver.js; replies and events come back as JSON lines."""

    def __init__(self, bootstrap: str):
        self.proc = subprocess.Popen(["node", str(JS_DIR / "driver.js")], cwd=JS_DIR, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._ids = itertools.count(1)
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._lock = threading.Lock()
        self.members: dict[str, "KafkaJSMember"] = {}
        self.events: list[dict] = []
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, name="kafkajs-stdout", daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_err, name="kafkajs-stderr", daemon=True)
        self._err_reader.start()
        self.call("init", brokers=bootstrap.split(","))

    def _read(self) -> None:
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.stderr.append(f"(stdout) {line}")
                continue
            if "id" in msg:
                with self._lock:
                    future = self._pending.pop(msg["id"], None)
                if future is not None:
                    if msg.get("ok"):
                        future.set_result(msg)
                    else:
                        future.set_exception(RuntimeError(f"kafkajs: {msg.get('error')}"))
                continue
            self.events.append(msg)
            member = self.members.get(msg.get("name"))
            if member is not None:
                member._event(msg)
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(RuntimeError("kafkajs driver exited:\n" + "\n".join(self.stderr[-20:])))

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())

    def call(self, op: str, timeout: float = WAIT, **args) -> dict:
        future: concurrent.futures.Future = concurrent.futures.Future()
        cid = next(self._ids)
        with self._lock:
            self._pending[cid] = future
        try:
            self.proc.stdin.write(json.dumps({"id": cid, "op": op, **args}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise RuntimeError("kafkajs driver is gone:\n" + "\n".join(self.stderr[-20:])) from exc
        return future.result(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("shutdown", timeout=20)
            except Exception:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass
        if self.stderr:     # shown by pytest only when the test failed
            print("--- kafkajs stderr (last 40 lines)", *self.stderr[-40:], sep="\n")


class KafkaJSMember(Member):
    client = "kafkajs"

    def __init__(self, *args, host: KafkaJSHost, **kwargs):
        super().__init__(*args, **kwargs)
        self.host = host
        self._member_id = None
        self.group_protocol = None

    def start(self) -> "KafkaJSMember":
        self.host.members[self.name] = self
        self.host.call("consumer.start", name=self.name, groupId=self.group_id, topics=self.topics,
                       sessionTimeout=SESSION_TIMEOUT_MS, heartbeatInterval=HEARTBEAT_MS)
        return self

    def _event(self, msg: dict) -> None:
        kind = msg["event"]
        if kind == "group_join":
            self._member_id = msg["memberId"]
            self.group_protocol = msg["groupProtocol"]
            self._set_owned((t, p) for t, ps in msg["assignment"].items() for p in ps)
        elif kind == "message":
            self._consumed([Record(msg["topic"], msg["partition"], msg["offset"], msg["value"])])
        elif kind == "crash":
            self.errors.append(RuntimeError(f"kafkajs consumer crashed: {msg['error']}"))

    def member_id(self) -> str | None:
        return self._member_id

    def close(self) -> None:
        if self.closed:
            return
        self.host.call("consumer.stop", name=self.name)
        with self.lock:
            self.closed = True


# ============================================================================ drivers
class Driver:
    """Members, producer and committed-offset reader of one client library."""

    client = "?"
    strategies: tuple[str, ...] = ()

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def member(self, name: str, group_id: str, topics: list[str], strategy: str | None, **kw) -> Member:
        raise NotImplementedError

    def produce(self, messages: list[tuple[str, int, str]]) -> list[Record]:
        """Send (topic, partition, value) with this client's producer; the acknowledged records."""
        raise NotImplementedError

    def committed(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int]:
        """Committed offsets read back by a fresh consumer of the group (-1/None: none)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class ConfluentDriver(Driver):
    client = "confluent-kafka"
    strategies = ("range", "roundrobin", "cooperative-sticky")

    def member(self, name, group_id, topics, strategy, **kw):
        return ConfluentMember(name, self.bootstrap, group_id, topics, strategy, **kw)

    def produce(self, messages):
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "acks": "all",
                             "enable.idempotence": False})
        acked: list[Record] = []
        failures: list = []

        def report(err, msg):
            if err is not None:
                failures.append(err)
            else:
                acked.append(Record(msg.topic(), msg.partition(), msg.offset(), msg.value().decode()))

        try:
            for topic, partition, value in messages:
                producer.produce(topic, value=value.encode(), partition=partition, on_delivery=report)
            remaining = producer.flush(WAIT)
        finally:
            if hasattr(producer, "close"):      # confluent-kafka >= 2.x; older ones free it on GC
                producer.close()
        assert remaining == 0 and not failures, f"produce failed: {failures}, {remaining} undelivered"
        return acked

    def committed(self, group_id, tps):
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(confluent_config(self.bootstrap, group_id))
        try:
            result = consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=WAIT)
        finally:
            consumer.close()
        return {(r.topic, r.partition): r.offset for r in result}


class KafkaPythonDriver(Driver):
    client = "kafka-python"
    strategies = ("range", "roundrobin", "sticky", "cooperative-sticky")

    def member(self, name, group_id, topics, strategy, **kw):
        return KafkaPythonMember(name, self.bootstrap, group_id, topics, strategy, **kw)

    def produce(self, messages):
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                                 retry_backoff_ms=50)
        try:
            futures = [(producer.send(topic, value=value.encode(), partition=partition), value)
                       for topic, partition, value in messages]
            producer.flush(WAIT)
            acked = []
            for future, value in futures:
                md = future.get(timeout=WAIT)
                acked.append(Record(md.topic, md.partition, md.offset, value))
            return acked
        finally:
            producer.close(timeout=10)

    def committed(self, group_id, tps):
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(**kafka_python_config(self.bootstrap, group_id=group_id))
        try:
            return {(t, p): consumer.committed(TopicPartition(t, p), timeout_ms=int(WAIT * 1000))
                    for t, p in tps}
        finally:
            consumer.close(autocommit=False)


class AioKafkaDriver(Driver):
    client = "aiokafka"
    strategies = ("range", "roundrobin", "sticky")

    def __init__(self, bootstrap):
        super().__init__(bootstrap)
        self.lt = LoopThread()

    def member(self, name, group_id, topics, strategy, **kw):
        return AioKafkaMember(name, self.bootstrap, group_id, topics, strategy, loop_thread=self.lt, **kw)

    def produce(self, messages):
        from aiokafka import AIOKafkaProducer

        async def _produce():
            producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5)
            await producer.start()
            try:
                futures = [(await producer.send(topic, value=value.encode(), partition=partition), value)
                           for topic, partition, value in messages]
                acked = []
                for future, value in futures:
                    md = await future
                    acked.append(Record(md.topic, md.partition, md.offset, value))
                return acked
            finally:
                await producer.stop()
        return self.lt.run(_produce())

    def committed(self, group_id, tps):
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        async def _committed():
            consumer = AIOKafkaConsumer(**aiokafka_config(self.bootstrap, group_id=group_id))
            await consumer.start()
            try:
                return {(t, p): await consumer.committed(TopicPartition(t, p)) for t, p in tps}
            finally:
                await consumer.stop()
        return self.lt.run(_committed())

    def close(self):
        self.lt.close()


class KafkaJSDriver(Driver):
    client = "kafkajs"
    strategies = ("RoundRobinAssigner",)    # KafkaJS's default (and only built-in) assigner

    def __init__(self, bootstrap):
        super().__init__(bootstrap)
        self.host = KafkaJSHost(bootstrap)

    def member(self, name, group_id, topics, strategy, **kw):
        return KafkaJSMember(name, self.bootstrap, group_id, topics, strategy, host=self.host, **kw)

    def produce(self, messages):
        res = self.host.call("produce", messages=[{"topic": t, "partition": p, "value": v}
                                                  for t, p, v in messages])
        return [Record(t, p, off, v) for (t, p, off), (_, _, v) in zip(res["offsets"], messages)]

    def committed(self, group_id, tps):
        topics = sorted({t for t, _ in tps})
        res = self.host.call("fetchOffsets", groupId=group_id, topics=topics)
        got = {(t, p): off for t, p, off in res["offsets"]}
        return {tp: got.get(tp) for tp in tps}

    def close(self):
        self.host.close()


DRIVERS: dict[str, type[Driver]] = {
    d.client: d for d in (ConfluentDriver, KafkaPythonDriver, AioKafkaDriver, KafkaJSDriver)}


# ============================================================================ assertions
def coverage_problems(members: Iterable[Member], partitions: frozenset[TP]) -> list[str]:
    """Why the members' own views are not an exactly-once cover of partitions (empty: they are)."""
    problems = []
    seen: dict[TP, str] = {}
    for m in members:
        owned = m.owned
        if not owned:
            problems.append(f"{m.name} owns nothing")
        for tp in owned:
            if tp in seen:
                problems.append(f"{tp} owned by {seen[tp]} and {m.name}")
            seen[tp] = m.name
    missing = partitions - set(seen)
    extra = set(seen) - partitions
    if missing:
        problems.append(f"unassigned: {sorted(missing)}")
    if extra:
        problems.append(f"unknown partitions assigned: {sorted(extra)}")
    return problems


def wait_covered(coord: Coord, group_id: str, members: list[Member],
                 partitions: frozenset[TP] | None = None, timeout: float = 30.0,
                 after: int | None = None) -> GroupView:
    """Wait until the group is Stable with exactly these members (in a generation above ``after``,
    if given), each owning something, and their callback-reported assignments cover every
    partition exactly once; then check the clients' assignment() APIs agree. Returns the
    coordinator's view."""
    partitions = all_partitions() if partitions is None else partitions

    def ok():
        for m in members:
            m.check()
        view = coord.stable(group_id, len(members))
        if view is None or (after is not None and view.generation <= after):
            return None
        return view if not coverage_problems(members, partitions) else None

    def why():
        return (f"exactly-once cover of {group_id}: {coverage_problems(members, partitions)}; "
                f"coordinator: {coord.group(group_id)}")
    view = wait_until(ok, timeout, message=why)
    for m in members:
        wait_until(lambda: m.api_assignment() in (None, m.owned), 10,
                   message=lambda: f"{m.name}: assignment() {m.api_assignment()} == callbacks {m.owned}")
    return view


def assert_exactly_once(consumed: list, produced: list) -> None:
    keys = [(r.topic, r.partition, r.offset) for r in consumed]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    assert not dups, f"records consumed more than once: {dups[:10]}"
    assert sorted(consumed, key=lambda r: (r.topic, r.partition, r.offset)) == \
        sorted(produced, key=lambda r: (r.topic, r.partition, r.offset))


class Daemon:
    """``groupcoord serve --profile test --data-dir DIR --fsync always`` in a process of its own (fsync
    before every acknowledgement), with ``topics`` (name -> partitions), ``events`` (a file for
    ``--events``), ``settings`` (``--set`` key=value) and a fixed ``port`` (0: any; to start again where a
    killed one listened). ``kill()`` is kill -9; ``close()`` a clean stop."""

    def __init__(self, data_dir, topics: dict, *, port: int = 0, events=None, settings: Iterable[str] = ()):
        self.events = events
        args = [sys.executable, "-m", "groupcoord.cli", "serve", "--port", str(port), "--profile", "test",
                "--data-dir", str(data_dir), "--fsync", "always", "--log-format", "json"]
        for name, partitions in topics.items():
            args += ["--topic", f"{name}:{partitions}"]
        for setting in settings:
            args += ["--set", setting]
        if events is not None:
            args += ["--events", str(events)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = ""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("bootstrap servers:") or not line:
                break
        assert line.startswith("bootstrap servers:"), f"daemon did not start: {line!r}"
        self.bootstrap = line.split(":", 1)[1].strip()
        self.port = int(self.bootstrap.rsplit(":", 1)[1])

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def events_where(self, **fields) -> list[dict]:
        """The events written to ``events`` so far that have all of ``fields``."""
        if self.events is None or not os.path.exists(self.events):
            return []
        with open(self.events, encoding="utf-8") as f:
            return [e for e in (json.loads(line) for line in f if line.strip())
                    if all(e.get(k) == v for k, v in fields.items())]
