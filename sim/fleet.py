"""A scenario in real time: simulated consumers (our client library) on one asyncio loop.

The coordinator is a running daemon or Kafka cluster (``bootstrap``; a daemon's admin API at
``admin`` for coordinator events and fault actions) or one started in this process
(:func:`groupcoord.coordinator.embed.running`). Each member of a consumer group is a
:class:`~groupcoord.client.consumer.GroupConsumer`, each member of a share group a
:class:`~groupcoord.client.share_consumer.ShareConsumer`, whose actions are recorded as member
events (:mod:`.events`), and an application loop: one that polls every ``processing_ms``, or a
work queue's (a group with ``job_ms``, every share group: :mod:`.work`), which polls, processes
each record of the poll for its drawn job time, then acknowledges or commits.

The scenario's ``[[produce]]`` producers send Produce requests (our own codec, acks=-1) to the
partitions' leaders, found through Metadata on the bootstrap; one runner produces: the one that
does the cluster-wide actions (shard 0 of a sharded fleet, the parent of a fleet over processes).

Group configs (a consumer or share group's session timeout and heartbeat interval, a share
group's lock duration and delivery count limit, and ``share.auto.offset.reset=earliest``: see
:func:`.model.group_configs`) are set on the in-process coordinator, and on a daemon or a Kafka
cluster with IncrementalAlterConfigs (as ``kafka-configs --entity-type groups --alter``) before the
members start; those that cannot be set are named in the run's notes.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import urllib.parse
from collections import Counter
from typing import Callable

from groupcoord.client.assignors import RebalanceProtocol
from groupcoord.client.connection import BrokerConnection, ResponseCache
from groupcoord.client.consumer import GroupConsumer
from groupcoord.client.member import Closed, CommitCompleted, ErrorRaised, RebalanceCallback
from groupcoord.client.member.connections import pick_version
from groupcoord.client.member.share import ShareMember
from groupcoord.client.member.share_actions import AcknowledgementsCommitted
from groupcoord.client.share_consumer import ShareConsumer
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode, KafkaError
from groupcoord.protocol.records import Record, encode_batch

from .events import stop_reason
from .model import (
    Client, Driver, consumer_config, follow, group_configs, set_group_configs, share_config, sorted_events, summarize,
    write_outputs,
)
from .scenario import Scenario
from .work import Work

log = logging.getLogger("groupcoord.fleet")

#: the longest group filter sent with the event stream request (aiohttp reads request lines of up
#: to 8190 bytes); with more groups the daemon sends every event and the fleet keeps its groups'
STREAM_QUERY_CHARS = 6000


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _resolve(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class _Listener:
    def __init__(self, delay_ms: int):
        self.delay = delay_ms / 1000

    async def _wait(self, partitions) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)        # the application's listener takes this long

    on_partitions_assigned = on_partitions_revoked = on_partitions_lost = _wait


class _Recorded:
    """What a fleet's consumers add to their asyncio driver (GroupConsumer or ShareConsumer): the
    member's actions as member events, a cheaper pump, a crash, a freeze."""

    def __init__(self, client: Client, *args, **kw):
        super().__init__(*args, **kw)
        self.client = client
        self.stopped = False
        self._waiter: asyncio.Future | None = None      # what the pump waits on (see _pump)
        client.recorder.member = self.member

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        super()._wake()

    async def _pump(self) -> None:
        """MemberDriver._pump with a cheaper wait between steps: one future, and one timer for the
        member's next deadline, that _wake resolves. (MemberDriver waits with asyncio.wait on a task
        of Event.wait(): a task, two more futures and their callbacks per wait, which came to half
        of a fleet's CPU while 10,000 members only heartbeat.)"""
        loop = asyncio.get_running_loop()
        member = self.member
        wakeup = self._wakeup
        try:
            while True:
                wakeup.clear()
                actions = member.poll(self._clock())
                for action in actions:
                    self._execute(action)
                if member.closed:
                    return
                if actions:
                    await asyncio.sleep(0)
                    continue
                if wakeup.is_set():
                    continue
                deadline = member.next_deadline()
                waiter = self._waiter = loop.create_future()
                timer = None
                if deadline is not None:
                    timer = loop.call_later(max(0.0, (deadline - self._clock()) / 1000), _resolve, waiter)
                try:
                    await waiter
                finally:
                    if timer is not None:
                        timer.cancel()
                    if self._waiter is waiter:
                        self._waiter = None
        except asyncio.CancelledError:
            raise
        except Exception as e:               # a bug: surface it instead of hanging (as MemberDriver)
            log.exception("the consumer's pump failed")
            self._errors.append(e)
            self._records_ready.set()

    def _execute(self, action) -> None:
        rec = self.client.recorder
        if isinstance(action, RebalanceCallback):
            rec.callback(action.kind, action.partitions)
        elif isinstance(action, CommitCompleted):
            if action.error is None:
                rec.committed(action.offsets)
        elif isinstance(action, AcknowledgementsCommitted):
            rec.acknowledged(action.results, action.types)
        elif isinstance(action, ErrorRaised) and action.fatal:
            self._stop(stop_reason(action.error))
        elif isinstance(action, Closed):
            self._stop("close")
        super()._execute(action)

    def _stop(self, reason: str) -> None:
        if not self.stopped:
            self.stopped = True
            self.client.recorder.stopped(reason)

    async def crash(self) -> None:
        """Die without LeaveGroup: tasks cancelled, sockets closed (a share member's sessions are
        not closed: its leaders release what it held as its connections close)."""
        self._stop("crash")
        await self._shutdown()

    def pause(self, ms: int) -> None:
        """Freeze the member's pump (no requests, no heartbeats) for ms."""
        task = self._pump_task
        if task is None or task.done():
            return
        task.cancel()

        def resume() -> None:
            if not self.stopped and self._pump_task is task:
                self._pump_task = asyncio.get_running_loop().create_task(self._pump(), name="groupcoord-pump")
                self._wake()
        asyncio.get_running_loop().call_later(ms / 1000, resume)


class FleetConsumer(_Recorded, GroupConsumer):
    """A GroupConsumer that reports its member's actions as member events."""


class FleetShareConsumer(_Recorded, ShareConsumer):
    """A ShareConsumer that reports its member's actions as member events (its acknowledgements as
    client.acknowledged)."""


class _Handle:
    __slots__ = ("consumer", "app", "stall_until", "closing", "work", "frozen_until")

    def __init__(self, consumer: FleetConsumer | FleetShareConsumer):
        self.consumer = consumer
        self.app: asyncio.Task | None = None
        self.stall_until = 0.0
        self.closing: asyncio.Task | None = None
        self.work: Work | None = None       # a work queue's application (sim/work.py), on the member's clock
        self.frozen_until = -1              # a work queue's: frozen (slow heartbeat) until then, member's clock


#: a work queue's application waits this long in a poll that finds nothing before it polls again
#: (a poll returns as soon as records come; auto-commits happen at polls)
WORK_POLL_S = 0.5
#: the Produce versions we send (records of magic 2 from v3; v13 names topics by id), the highest both speak
PRODUCE_VERSIONS = (3, 9)
#: how long a produce request may take, its retries included (Kafka's delivery.timeout.ms is 120 s)
PRODUCE_TIMEOUT_S = 30.0
PRODUCE_BACKOFF_S = 0.1                 # between retries (Kafka's retry.backoff.ms)
_PRODUCE, _METADATA = int(ApiKey.PRODUCE), int(ApiKey.METADATA)


class ProduceFailed(Exception):
    """A produce request that got no answer, or an error, within PRODUCE_TIMEOUT_S."""


class Producers:
    """The scenario's producers' side of the cluster: Produce requests (acks=-1) to each partition's
    leader, with our own codec. Leaders and brokers come from Metadata on a bootstrap connection,
    asked again when a leader is unknown or answers NOT_LEADER_OR_FOLLOWER (or another retriable
    error); one connection per leader, shared by the producers."""

    def __init__(self, bootstrap: str, topics, client_id: str = "groupcoord-fleet-producer"):
        self.bootstrap = [s.strip() for s in bootstrap.split(",") if s.strip()]
        self.topics = topics                   # the topics to ask Metadata for (a live mapping)
        self.client_id = client_id
        self.leaders: dict[str, dict[int, int]] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self._meta: BrokerConnection | None = None
        self._refresh: asyncio.Future | None = None
        self._conns: dict[int, asyncio.Future] = {}      # leader id -> its connection (being) opened
        self._next_bootstrap = 0
        self.closed = False

    async def _dial(self, host: str, port: int) -> BrokerConnection:
        return await BrokerConnection(host, port, client_id=self.client_id).connect()

    async def _bootstrap_conn(self) -> BrokerConnection:
        conn = self._meta
        if conn is not None and not conn.closed:
            return conn
        error: Exception | None = None
        for _ in range(len(self.bootstrap)):
            target = self.bootstrap[self._next_bootstrap % len(self.bootstrap)]
            self._next_bootstrap += 1
            host, _, port = target.rpartition(":")
            try:
                self._meta = await self._dial(host, int(port))
                return self._meta
            except (OSError, ConnectionError, asyncio.TimeoutError, KafkaError) as e:
                error = e
        raise ConnectionError(f"no bootstrap server answered: {error}")

    async def refresh(self) -> None:
        """Metadata of the topics (one request under way at a time: the others wait for it)."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._ask_metadata())
            self._refresh.add_done_callback(_retrieved)
        await asyncio.shield(self._refresh)

    async def _ask_metadata(self) -> None:
        conn = await self._bootstrap_conn()
        version = pick_version(_METADATA, conn.api_versions)
        if version is None:
            raise ProduceFailed("the broker speaks no Metadata version we do")
        try:
            resp = await asyncio.wait_for(conn.request(_METADATA, version, {
                "topics": [{"name": t} for t in sorted(self.topics)], "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}),
                PRODUCE_TIMEOUT_S)
        except BaseException:
            conn.close()
            raise
        self.brokers = {b["node_id"]: (b["host"], b["port"]) for b in resp["brokers"]}
        for t in resp["topics"]:
            if t["error_code"] == 0 or t["partitions"]:
                self.leaders[t["name"]] = {p["partition_index"]: p["leader_id"] if p["error_code"] == 0 else -1
                                           for p in t["partitions"]}

    async def _leader(self, topic: str, partition: int) -> BrokerConnection:
        leader = self.leaders.get(topic, {}).get(partition, -1)
        if leader < 0 or leader not in self.brokers:
            await self.refresh()
            leader = self.leaders.get(topic, {}).get(partition, -1)
            if leader < 0 or leader not in self.brokers:
                raise _Retry(f"no leader known for {topic}-{partition}")
        fut = self._conns.get(leader)
        if fut is not None and fut.done() and (fut.cancelled() or fut.exception() is not None or fut.result().closed):
            fut = None
        if fut is None:
            host, port = self.brokers[leader]
            fut = self._conns[leader] = asyncio.ensure_future(self._dial(host, port))
            fut.add_done_callback(_retrieved)
        return await asyncio.shield(fut)

    async def produce(self, topic: str, partition: int, count: int, timestamp: int) -> int:
        """Append count records (no key, an empty value) to the partition: their base offset."""
        data = encode_batch([Record(i, 0, None, b"", []) for i in range(count)], base_timestamp=timestamp)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PRODUCE_TIMEOUT_S
        last = "no answer"
        while True:
            conn = None
            try:
                conn = await self._leader(topic, partition)
                theirs = conn.api_versions.get(_PRODUCE)
                if theirs is None or max(theirs[0], PRODUCE_VERSIONS[0]) > min(theirs[1], PRODUCE_VERSIONS[1]):
                    raise ProduceFailed(f"the broker speaks Produce versions {theirs}, we speak {PRODUCE_VERSIONS}")
                body = {"transactional_id": None, "acks": -1, "timeout_ms": int(PRODUCE_TIMEOUT_S * 1000),
                        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": data}]}]}
                resp = await asyncio.wait_for(conn.request(_PRODUCE, min(theirs[1], PRODUCE_VERSIONS[1]), body),
                                              max(0.001, deadline - loop.time()))
                [part] = resp["responses"][0]["partition_responses"]
                code = part["error_code"]
                if not code:
                    return part["base_offset"]
                error = ErrorCode.lookup(code)
                if not getattr(error, "retriable", False):
                    raise ProduceFailed(f"error {getattr(error, 'name', code)}")
                last = f"error {error.name}"
                self.leaders.pop(topic, None)          # NOT_LEADER_OR_FOLLOWER and the like: ask again
            except _Retry as e:
                last = str(e)
            except (OSError, ConnectionError, asyncio.TimeoutError, KafkaError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                if conn is not None:
                    conn.close()
                self.leaders.pop(topic, None)
            if self.closed or loop.time() + PRODUCE_BACKOFF_S >= deadline:
                raise ProduceFailed(f"{last} (after {PRODUCE_TIMEOUT_S:.0f} s)")
            await asyncio.sleep(PRODUCE_BACKOFF_S)

    def close(self) -> None:
        self.closed = True
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        if self._meta is not None:
            self._meta.close()
        for fut in self._conns.values():
            if not fut.done():
                fut.cancel()
            elif not fut.cancelled() and fut.exception() is None:
                fut.result().close()
        self._conns.clear()


class _Retry(Exception):
    """Nothing to send to yet (no leader known): try again after a backoff."""


def _retrieved(fut: asyncio.Future) -> None:
    """A shared future's exception is its awaiters' (each sees it): none is logged as never retrieved."""
    if not fut.cancelled():
        fut.exception()


class FleetRunner(Driver):
    mode = "fleet"

    def __init__(self, scenario: Scenario, seed: int, *, bootstrap: str | None = None, admin: str | None = None,
                 admin_token: str | None = None, progress: bool = False, until_stable: bool = False,
                 hold_s: float = 0.0, share_connections: bool = False, shard: tuple[int, int] | None = None,
                 cluster_actions: bool = True, start_at: float | None = None):
        super().__init__(scenario, seed)
        self.start_at = start_at             # the wall time (time.time()) of the scenario's t=0; None: now
        # shard (i, n): run only the members whose index is i mod n (see Driver.owns); the
        # cluster-wide actions and the daemon's event stream only with cluster_actions
        self.shard = shard
        self.cluster_actions = cluster_actions
        # share_connections: each member opens one TCP connection per address (bootstrap, broker
        # and coordinator on one node share it) instead of one per role as Kafka's Java client
        self.share_connections = share_connections
        self.response_cache = ResponseCache()     # identical Metadata/ApiVersions answers decode once
        self.bootstrap = bootstrap
        self.admin = admin.rstrip("/") if admin else None
        self.admin_token = admin_token
        self.progress = progress
        self.until_stable = until_stable
        self.hold_s = hold_s                 # with until_stable: keep running this long after
        self.stable_at: float | None = None  # seconds from the start to the first all-stable moment
        # per group, the members' generations at stable_at and at the end (a rebalance while held
        # stable shows as a later generation)
        self.stable_generations: dict[str, list[int]] = {}
        self.final_generations: dict[str, list[int]] = {}
        self.last_progress = (0, 0)          # (stable, live) members when last looked (--until-stable)
        self.embedded = None
        self._t0 = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._stopping = False
        self._timeline_left = 0              # timeline actions scheduled that have not run yet
        self._admin_calls = 0                # fault and admin API calls of the timeline under way
        self.final: dict[str, str] = {}
        self.final_running: dict[str, int] = {}
        self.producers: Producers | None = None     # the [[produce]] producers' connections (see produce)
        self._produce_calls = 0                     # produce requests under way
        self._produce_failures: Counter = Counter()     # (topic, why) -> failed produce requests

    # ---- Driver primitives -------------------------------------------------------------------
    def now_ms(self) -> int:
        return int((self._loop.time() - self._t0) * 1000)

    def ts_ms(self) -> int:
        return wall_ms()

    def at(self, ms: int, fn: Callable[[], None]) -> None:
        counted = ms <= self.scenario.duration_ms    # (later ones never run)
        if counted:
            self._timeline_left += 1
        self._loop.call_at(self._t0 + ms / 1000, self._guard, fn, counted)

    def _guard(self, fn, counted: bool = False) -> None:
        if counted:
            self._timeline_left -= 1
        if self._stopping:
            return
        try:
            fn()
        except Exception:
            log.exception("timeline action failed")

    def _timeline_over(self) -> bool:
        """Every timeline action ran, and every fault or admin API call one made has returned
        (--until-stable: a coordinator move at the timeline's last moment is not cut off)."""
        return self._timeline_left == 0 and self._admin_calls == 0 and self._produce_calls == 0

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def start_member(self, c: Client) -> None:
        prev: _Handle | None = c.handle
        if prev is not None and prev.closing is not None and not prev.closing.done():
            prev.closing.add_done_callback(lambda _t: self._start_after_close(c, prev))
            return
        spec = c.spec
        if spec.share:
            consumer = FleetShareConsumer(c, *c.topics, config=share_config(c, self.bootstrap),
                                          response_cache=self.response_cache)
        else:
            # a work queue's members fetch: no shared connection (a parked Fetch would hold the rest)
            consumer = FleetConsumer(c, *c.topics, config=consumer_config(c, self.bootstrap),
                                     listener=_Listener(spec.callback_ms), fetch=spec.work_queue,
                                     share_connections=self.share_connections and not spec.work_queue,
                                     response_cache=self.response_cache)
            if spec.protocol == "eager" and not spec.consumer:
                consumer.member.protocol = RebalanceProtocol.EAGER
        h = _Handle(consumer)
        c.handle = h
        c.recorder.started()
        if spec.consumer:
            follow(consumer.member, c.recorder)
        h.app = self._spawn(self._work_loop(c, h) if spec.work_queue else self._app_loop(c, h))

    def _start_after_close(self, c: Client, prev: _Handle) -> None:
        if c.alive and c.handle is prev and not self._stopping:
            c.handle = None
            self.start_member(c)

    async def _app_loop(self, c: Client, h: _Handle) -> None:
        consumer = h.consumer
        await consumer.start()
        period = c.spec.processing_ms / 1000
        step = c.spec.records_per_poll
        loop = asyncio.get_running_loop()
        try:
            while not consumer.stopped:
                if loop.time() >= h.stall_until:
                    try:
                        await consumer.poll(0)
                    except Exception as e:       # fatal errors end the member (recorded by _execute)
                        if consumer.member.fatal_error is not None:
                            break
                        log.info("%s: %s", c.name, e)
                    if step:
                        pos = consumer.member.positions
                        for tp in pos:
                            pos[tp] += step
                await asyncio.sleep(period)
        finally:
            if consumer.member.fatal_error is not None:
                c.alive = False
                await consumer._shutdown()

    async def _work_loop(self, c: Client, h: _Handle) -> None:
        """A work queue's application (sim/work.py, as the simulator runs it): poll; process the
        poll's records one after the other, each for its drawn job time; then acknowledge them (a
        share group's explicit mode) or commit (a consumer group's, unless auto-commit, which
        commits at a poll every auto_commit_interval_ms); poll again. A poll stall (slow, kind
        poll) hangs it: the batch under way ends that much later, or the next poll comes later; a
        freeze (slow, kind heartbeat) holds it too, until the freeze ends."""
        consumer = h.consumer
        await consumer.start()
        member = consumer.member
        clock = consumer._clock                # the member's clock: Work's times are on it
        rec = c.recorder
        w = h.work = Work(c.spec, random.Random(f"{self.seed}/jobs/{c.name}/{c.generation}"), clock())

        async def hold(until: Callable[[], int]) -> None:
            while not consumer.stopped:
                wait = until() - clock()
                if wait <= 0:
                    return
                await asyncio.sleep(wait / 1000)

        def held() -> int:
            return max(w.hang_until, h.frozen_until)

        def busy() -> int:
            return max(w.busy_until, h.frozen_until)
        try:
            while not consumer.stopped:
                await hold(held)
                if consumer.stopped:
                    break
                try:
                    w.polled(member, clock())          # the poll timer; an auto-commit when due
                    records = await consumer.poll(WORK_POLL_S)
                except Exception as e:       # fatal errors end the member (recorded by _execute)
                    if member.fatal_error is not None or consumer.stopped:
                        break
                    log.info("%s: %s", c.name, e)
                    await asyncio.sleep(WORK_POLL_S)
                    continue
                if not records:
                    continue
                await hold(held)                  # a hang that began while it waited in the poll
                if consumer.stopped:
                    break
                rec.polled(records)
                started = self.ts_ms()
                w.start_batch(records, clock())
                await hold(busy)
                if consumer.stopped:
                    break
                rec.batch_processed(records, started, w.busy_ms)
                try:
                    w.end_batch(member, clock())       # acknowledge, or commit
                except Exception as e:
                    if member.fatal_error is not None:
                        break
                    log.info("%s: %s", c.name, e)
                consumer._wake()                     # the commit to send
        finally:
            if member.fatal_error is not None:
                c.alive = False
                await consumer._shutdown()

    def stop_member(self, c: Client, crash: bool) -> None:
        h: _Handle | None = c.handle
        if h is None or h.consumer.stopped:
            return
        if h.app is not None:
            h.app.cancel()
        if crash:
            h.closing = self._spawn(h.consumer.crash())
        else:
            async def close():
                await h.consumer.close()
                h.consumer._stop("close")
            h.closing = self._spawn(close())

    def freeze(self, c: Client, ms: int) -> None:
        h = c.handle
        if h is not None:
            h.consumer.pause(ms)
            if c.spec.work_queue:           # the whole process stops: its application too
                h.frozen_until = max(h.frozen_until, h.consumer._clock() + ms)

    def stall(self, c: Client, ms: int) -> None:
        h = c.handle
        if h is None:
            return
        w = h.work
        if w is not None:
            # the application hangs (as the simulator's): the batch under way ends ms later, or the
            # next poll comes ms later
            now = h.consumer._clock()
            w.hang_until = max(w.hang_until, now + ms)
            if w.busy_until is not None:
                w.busy_until += ms
            return
        if c.spec.work_queue:
            # not polling yet (starting): the first poll comes ms later
            h.frozen_until = max(h.frozen_until, h.consumer._clock() + ms)
            return
        h.stall_until = self._loop.time() + ms / 1000

    def set_subscription(self, c: Client, topics: list[str]) -> None:
        h = c.handle
        if h is not None and not h.consumer.stopped:
            h.consumer.subscribe(topics)

    def add_partitions(self, topic: str, n: int) -> None:
        if self.embedded is not None:
            self.embedded.service.cluster.add_partitions(topic, n)
        else:
            self._admin(f"/api/topics/{topic}/partitions", {"count": n})

    def _fault(self, what: str, fn) -> None:
        from groupcoord.coordinator.faults import FaultError
        try:
            fn()
        except FaultError as e:
            self.notes.append(f"{what}: {e}")

    def move_coordinator(self, group: str, node: int | None) -> None:
        if self.embedded is not None:
            self._fault(f"move_coordinator {group}", lambda: self.embedded.service.faults.move_group(group, node))
        else:
            self._admin(f"/api/groups/{group}/coordinator/move", {} if node is None else {"node": node})

    def node_down(self, node: int) -> None:
        if self.embedded is not None:
            self._fault(f"node_down {node}", lambda: self.embedded.service.faults.node_down(node))
        else:
            self._admin(f"/api/nodes/{node}/down", {})

    def node_up(self, node: int) -> None:
        if self.embedded is not None:
            self._admin_calls += 1          # until the listener is open (the server opens it on this loop)

            def done(result, exc) -> None:
                if exc is not None:
                    self.notes.append(f"node_up {node}: {exc}")
                self._admin_calls -= 1

            def node_up() -> None:
                try:
                    self.embedded.service.faults.node_up_soon(node, False, done)
                except BaseException:
                    self._admin_calls -= 1      # refused before anything started
                    raise
            self._fault(f"node_up {node}", node_up)
        else:
            self._admin(f"/api/nodes/{node}/up", {})

    def produce(self, producer: str, topic: str, partition: int, count: int) -> None:
        """A Produce request of a [[produce]] entry, sent in the background (the runner that does
        the cluster-wide actions produces, the others do not: the records would be appended once
        per shard); :meth:`produced` once the leader answers."""
        if not self.cluster_actions or self._stopping:
            return
        if self.producers is None:
            self.producers = Producers(self.bootstrap, self.topics)
        self._produce_calls += 1
        self._spawn(self._produce_one(producer, topic, partition, count))

    async def _produce_one(self, producer: str, topic: str, partition: int, count: int) -> None:
        try:
            base = await self.producers.produce(topic, partition, count, wall_ms())
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._produce_failures[(topic, str(e) or type(e).__name__)] += 1
            return
        finally:
            self._produce_calls -= 1
        if not self._stopping:
            self.produced(producer, topic, partition, base, base + count - 1)

    def net_partition(self, c: Client, ms: int) -> None:
        self.notes.append("network_partition is only simulated (groupcoord simulate); skipped")

    # ---- the admin API of a daemon --------------------------------------------------------------
    def _admin(self, path: str, body: dict) -> None:
        """POST to the daemon's admin API in the background (counted until it returns)."""
        self._admin_calls += 1
        self._spawn(self._admin_post(path, body))

    async def _admin_post(self, path: str, body: dict) -> None:
        try:
            await self._post(path, body)
        finally:
            self._admin_calls -= 1

    async def _post(self, path: str, body: dict) -> None:
        if self.admin is None:
            self.notes.append(f"POST {path}: needs --admin URL of the daemon; skipped")
            return
        import aiohttp
        headers = {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}
        try:
            async with aiohttp.ClientSession() as s:
                async with s.post(self.admin + path, json=body, headers=headers) as resp:
                    if resp.status >= 300:
                        self.notes.append(f"POST {path}: HTTP {resp.status} {await resp.text()}")
        except aiohttp.ClientError as e:
            self.notes.append(f"POST {path}: {e}")

    async def _stream_events(self) -> None:
        """Coordinator events of a daemon, from its admin API's server-sent events: those of the
        scenario's groups only (the daemon may serve others)."""
        import aiohttp
        groups = set(self.scenario.group_ids())
        # the daemon filters too when the groups fit in its request line
        query = [("group", g) for g in sorted(groups)]
        if len(urllib.parse.urlencode(query)) > STREAM_QUERY_CHARS:    # as sent: percent-encoded
            query = []
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as s:
                async with s.get(self.admin + "/api/events/stream", params=query) as resp:
                    if resp.status != 200:
                        self.notes.append(f"GET /api/events/stream: HTTP {resp.status}: no coordinator events")
                        return
                    async for line in resp.content:
                        if line.startswith(b"data:"):
                            try:
                                event = json.loads(line[5:])
                            except ValueError:
                                continue
                            if isinstance(event, dict) and event.get("group") in groups:
                                self.events.append(event)
        except (aiohttp.ClientError, asyncio.CancelledError):
            pass

    async def _create_topics(self) -> None:
        from groupcoord.client.connection import BrokerConnection
        host, _, port = self.bootstrap.split(",")[0].rpartition(":")
        conn = await BrokerConnection(host, int(port), client_id="groupcoord-fleet").connect()
        try:
            body = {"topics": [{"name": n, "num_partitions": p, "replication_factor": -1, "assignments": [],
                                "configs": []} for n, p in self.scenario.topics.items()],
                    "timeout_ms": 10000, "validate_only": False}
            version = min(conn.api_versions.get(19, (0, 4))[1], 4)
            resp = await conn.request(19, version, body)
            for t in resp["topics"]:
                if t["error_code"] not in (0, 36):          # 36: TOPIC_ALREADY_EXISTS
                    raise RuntimeError(f"cannot create topic {t['name']}: error {t['error_code']}")
        finally:
            conn.close()

    # ---- running ----------------------------------------------------------------------------------
    async def run(self) -> list[dict]:
        self._loop = asyncio.get_running_loop()
        sc = self.scenario
        fetching = [spec.name for spec in sc.groups if spec.work_queue]
        if self.share_connections and fetching:
            self.notes.append(f"--share-connections: the members of {', '.join(fetching)} fetch records (work queues, "
                              f"share groups): they open one connection per role")
        if self.bootstrap is None:
            from groupcoord.coordinator.embed import running
            async with running(nodes=sc.coordinator.nodes, topics=sc.topics, profile=sc.coordinator.profile,
                               config=sc.coordinator.config, emit=self.events.append) as gc:
                self.embedded = gc
                self.bootstrap = gc.bootstrap_servers
                set_group_configs(gc.service, sc)
                return await self._run()
        await self._create_topics()
        if self.cluster_actions:
            await self._set_group_configs()
        streamer = self._spawn(self._stream_events()) if self.admin and self.cluster_actions else None
        try:
            return await self._run()
        finally:
            if streamer is not None:
                streamer.cancel()

    async def _set_group_configs(self) -> None:
        """The groups' configs on the daemon or cluster (IncrementalAlterConfigs of GROUP resources, as
        kafka-configs --entity-type groups --alter); what cannot be set is a note of the run."""
        from groupcoord.client.admin import RESOURCE_TYPES, AdminClient
        admin = AdminClient(self.bootstrap, timeout_ms=10_000)
        try:
            for spec in self.scenario.groups:
                configs = group_configs(spec)
                for gid in spec.group_ids() if configs else ():
                    try:
                        await admin.incremental_alter_configs(RESOURCE_TYPES["groups"], gid,
                                                              {k: str(v) for k, v in configs.items()})
                    except Exception as e:          # (any failure: the run goes on with the cluster's defaults)
                        self.notes.append(
                            f"groups {spec.name}: the group configs {configs} could not be set on {self.bootstrap} "
                            f"({e}): the cluster's defaults apply" + (
                                " (a share group's: share.auto.offset.reset=latest, records produced before its "
                                "members first fetch are skipped)" if spec.share else ""))
                        break
        finally:
            admin.close()

    async def _start_clock(self) -> float:
        """The loop time of the scenario's t=0: now, or at the wall time start_at (the shards of a
        scenario on several hosts with one start time; the processes of a fleet start at the time the
        parent sets)."""
        if self.start_at is None:
            return self._loop.time()
        return self._loop.time() + (self.start_at - time.time())

    def _should_end(self, elapsed: float) -> bool:
        if elapsed >= self.scenario.duration_s:
            return True
        if self.until_stable and elapsed > 1 and self._timeline_over():
            if self.stable_at is None and self.all_stable():
                self.stable_at = elapsed
                self.stable_generations = self.generations()
            if self.stable_at is not None and elapsed >= self.stable_at + self.hold_s:
                return True
        return False

    def _progress(self) -> tuple[int, int]:
        """(stable, live) members."""
        live = stable = 0
        for c in self.clients.values():
            h = c.handle
            if h is not None and not h.consumer.stopped:
                live += 1
                stable += h.consumer.member.stable
        return stable, live

    def _tick(self, elapsed: float) -> None:
        """Every quarter of a second while the run lasts."""

    async def _finish(self) -> None:
        """At the end of the run: the final checks, then every member stops."""
        self.final = self.checks()
        self.final_running = {gid: len(self._running_members(gid)) for gid in self.scenario.group_ids()}
        self.final_generations = self.generations()
        await self.shutdown()

    async def _run(self) -> list[dict]:
        self._t0 = await self._start_clock()
        self.plan()
        duration = self.scenario.duration_s
        bar = task = None
        if self.progress:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                           TimeElapsedColumn())
            task = bar.add_task(f"fleet {self.scenario.name}", total=duration, info="")
            bar.start()
        try:
            while True:
                elapsed = self._loop.time() - self._t0
                if self._should_end(elapsed):
                    break
                self._tick(elapsed)
                if bar is not None or self.until_stable:
                    stable, live = self.last_progress = self._progress()
                if bar is not None:
                    bar.update(task, completed=min(max(elapsed, 0), duration), info=f"{stable}/{live} members stable")
                await asyncio.sleep(0.25)
        finally:
            if bar is not None:
                bar.stop()
            await self._finish()
        self.wall_s = self._loop.time() - self._t0
        return sorted_events(self.events)

    def _running_members(self, group: str):
        return [c.handle.consumer.member for c in self.by_group.get(group, [])
                if c.alive and c.handle is not None and not c.handle.consumer.stopped]

    def generations(self) -> dict[str, list[int]]:
        """Per group: the generations its running members are in."""
        return {gid: sorted({m.generation.generation_id for m in self._running_members(gid)})
                for gid in self.scenario.group_ids()}

    def all_stable(self) -> bool:
        return all(v == "ok" for v in self.checks().values())

    def checks(self) -> dict[str, str]:
        """Per group: the ownership check of :func:`.simulate.ownership_check` (in-process
        coordinator), else from the members alone (a shard's: of its own members only, see
        :func:`check_reports`)."""
        from .simulate import find_group, ownership_check
        out = {}
        for gid in self.scenario.group_ids():
            members = self._running_members(gid)
            if self.shard is not None:
                out[gid] = check_reports([member_report(members)], self.topics, complete=False)
            elif self.embedded is not None:
                out[gid] = ownership_check(self.embedded.service, find_group(self.embedded.service, gid), members)
            else:
                out[gid] = _member_side_check(members, self.topics)
        return out

    async def shutdown(self) -> None:
        """End of the run: every member stops at once (no LeaveGroup, no more events)."""
        self._stopping = True
        consumers = [c.handle.consumer for c in self.clients.values() if c.handle is not None]
        for c in consumers:
            c.stopped = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(c._shutdown() for c in consumers), return_exceptions=True)
        if self.producers is not None:
            self.producers.close()
        for (topic, why), n in sorted(self._produce_failures.items()):
            self.notes.append(f"produce to {topic}: {n} request{'s' if n > 1 else ''} failed: {why}")
        self._produce_failures.clear()
        for _ in range(3):
            await asyncio.sleep(0)          # let the cancelled connection readers finish

    def resolved(self) -> dict:
        d = super().resolved()
        if self.shard is not None:
            d["shard"] = list(self.shard)
        return d

    def client_count(self) -> int:
        """Clients of the scenario this run ran (a shard's own)."""
        return len(self.owned_clients())

    def summary(self, events: list[dict]) -> dict:
        groups = summarize(events)
        for gid, check in self.final.items():
            groups.setdefault(gid, {})["final"] = {"check": check,
                                                   "running_clients": self.final_running.get(gid, 0)}
        out = {"scenario": self.scenario.name, "seed": self.seed, "mode": self.mode,
               "wall_s": round(self.wall_s, 3), "events": len(events), "clients": self.client_count(),
               "notes": list(self.notes), "groups": groups}
        if self.shard is not None:
            i, n = self.shard
            out["shard"] = f"{i}/{n}"
            out["notes"].append(f"shard {i}/{n}: the members whose index is {i} mod {n}; the check covers "
                                f"them only (not whether the shards together own every partition)")
        return out


def raise_fd_limit() -> tuple[int, int]:
    """The soft limit of open files raised to the hard limit (each member holds one to three
    sockets); returns (soft, hard) as they are then."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, ValueError, OSError):
        return (-1, -1)


def ignored_against_daemon(sc: Scenario) -> list[str]:
    """The scenario's [coordinator] settings that a run against a daemon (``bootstrap``) does
    not apply, one line each: the daemon runs with its own nodes, profile and configs."""
    from .scenario import CoordinatorSpec
    default = CoordinatorSpec()
    lines = []
    if sc.coordinator.nodes != default.nodes:
        lines.append(f"[coordinator] nodes = {sc.coordinator.nodes}")
    if sc.coordinator.profile != default.profile:
        lines.append(f"[coordinator] profile = {json.dumps(sc.coordinator.profile)}")
    for key, value in sc.coordinator.config.items():
        lines.append(f"[coordinator] config {json.dumps(key)} = {json.dumps(value)}")
    return [f"{line} is ignored: the daemon runs with its own settings" for line in lines]


def member_report(members) -> dict:
    """What the member-side check needs of some members of one group (plain data: a process of a
    fleet over several processes sends it to the parent, which checks the union)."""
    assigned: list = []
    subscribed: set = set()
    for m in members:
        assigned += m.assignment
        subscribed |= m.subscription
    return {"members": len(members), "stable": sum(1 for m in members if m.stable),
            "generations": sorted({m.generation.generation_id for m in members}), "assigned": assigned,
            "subscribed": sorted(subscribed), "share": any(isinstance(m, ShareMember) for m in members)}


def check_reports(reports: list[dict], topics: dict[str, int], complete: bool = True) -> str:
    """The member-side check of one group over the members of several reports (member_report):
    "ok" when every member is stable in one generation with disjoint partitions that (complete)
    cover the subscribed topics. A share group's members share partitions (and their epochs are
    their own): "ok" when every member is stable and (complete) the subscribed partitions are each
    assigned to one of them at least, as :func:`.simulate.ownership_check`. A shard of the members
    (complete=False) cannot see the others: its "ok" leaves the coverage out."""
    members = sum(r["members"] for r in reports)
    share = any(r.get("share") for r in reports)
    generations = {g for r in reports for g in r["generations"]}
    if not members or sum(r["stable"] for r in reports) != members or (len(generations) != 1 and not share):
        return "unsettled"
    seen: set = set()
    count = 0
    subscribed: set = set()
    for r in reports:
        seen.update(map(tuple, r["assigned"]))
        count += len(r["assigned"])
        subscribed.update(r["subscribed"])
    if len(seen) != count and not share:
        return "violated: a partition owned twice"
    if not complete:
        return "ok"
    expected = {(t, p) for t in subscribed for p in range(topics.get(t, 0))}
    return "ok" if seen == expected else f"unsettled: {len(expected - seen)} partitions unowned"


def _member_side_check(members, topics: dict[str, int]) -> str:
    return check_reports([member_report(members)], topics)


async def run(sc: Scenario, seed: int | None = None, out_dir=None, *, bootstrap: str | None = None,
              admin: str | None = None, admin_token: str | None = None, progress: bool = False,
              until_stable: bool = False, hold_s: float = 0.0, share_connections: bool = False,
              processes: int = 1, shard: tuple[int, int] | None = None, start_at: float | None = None,
              log_level: str = "error", event_format: str = "jsonl") -> FleetRunner:
    """Run a scenario in real time; returns the runner (``sorted_events``, ``final``, ``summary()``).
    ``until_stable``: end once the timeline is over and every group is stable (``hold_s`` later).

    ``shard`` (i, n): run only the members whose index is i mod n, against a daemon (``bootstrap``),
    so that n hosts drive one daemon with the same scenario; shard 0 does the cluster-wide actions and
    streams the coordinator's events (``admin``); each shard's log holds its own members' events.
    ``processes`` > 1: the members (of the shard) run in that many child processes
    (:mod:`.processes`; ``log_level`` is theirs), this one merges their events into one log.
    ``start_at``: the wall time (``time.time()``) at which the scenario's clock starts (default: now),
    e.g. one time for every shard, so that their timelines run together. ``event_format``: how the
    event log is written to ``out_dir`` (:func:`~.model.write_outputs`)."""
    seed = sc.seed if seed is None else seed
    if shard is not None and bootstrap is None:
        raise ValueError("a shard of a scenario runs against a daemon (bootstrap)")
    kw = dict(bootstrap=bootstrap, admin=admin, admin_token=admin_token, progress=progress,
              until_stable=until_stable, hold_s=hold_s, share_connections=share_connections, start_at=start_at)
    if processes > 1:
        from .processes import ParentRunner
        runner: FleetRunner = ParentRunner(sc, seed, processes=processes, shard=shard, log_level=log_level, **kw)
    else:
        runner = FleetRunner(sc, seed, shard=shard, cluster_actions=shard is None or shard[0] == 0, **kw)
    events = await runner.run()
    runner.sorted_events = events
    if out_dir is not None:
        write_outputs(out_dir, events, runner.resolved(), runner.summary(events), event_format=event_format)
    return runner
