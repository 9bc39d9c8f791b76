"""KIP-932 share groups (Kafka's queues) with real confluent-kafka ShareConsumers (librdkafka's share
consumer, preview) and with our own (groupcoord.client.ShareConsumer, behind the same API:
share_ours.py), the service checked from inside. Every check runs with both (``client``).

* Every record once: 1, 3 and 10 consumers, implicit and explicit acknowledgement, 10,000 records on
  four partitions: every record delivered and acknowledged, each once (delivery count 1), never in
  the hands of two consumers at once, the service's ACQUIRED records held by the consumer that got
  them, and at last every share-partition's start offset at the log end.
* A consumer dies holding records (its process exits): its connection's close releases them at once
  (Kafka 4.3: the share session is tied to the connection), another consumer gets them with delivery
  count 2; a consumer that hangs (alive, connected and heartbeating, never acknowledging) holds them
  until the acquisition lock expires (2 s), then another gets them with delivery count 2.
* REJECT archives a record: never delivered again, ARCHIVED in the service.
* RELEASE up to share.delivery.count.limit: delivered exactly limit times, then ARCHIVED.
* The service killed (-9) and restarted on its --data-dir: no record acknowledged before the kill
  comes back, every other one does, with its last persisted delivery count.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from clients import WAIT, Daemon, wait_until
from share_ours import OurShareConsumer

pytestmark = pytest.mark.interop

#: the share configs every test's group gets (the default, latest, would skip what is produced before
#: the share-partitions are first fetched)
EARLIEST = {"share.auto.offset.reset": "earliest"}
#: librdkafka settings of every ShareConsumer: quick reconnects (the restart test)
CLIENT = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200, "socket.connection.setup.timeout.ms": 2000}

Key = tuple[int, int]           # (partition, offset)


CLIENTS = ("confluent", "ours")


@pytest.fixture(params=CLIENTS)
def client(request) -> str:
    """The share consumer every test runs with: confluent-kafka's, or ours."""
    return request.param


def share_consumer(bootstrap: str, group: str, name: str, mode: str = "explicit", *, client: str = "confluent",
                   **overrides) -> ShareConsumer | OurShareConsumer:
    config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
              "share.acknowledgement.mode": mode, **CLIENT}
    config.update({k.replace("_", "."): v for k, v in overrides.items()})
    return OurShareConsumer(config) if client == "ours" else ShareConsumer(config)


def produce(bootstrap: str, topic: str, records: list[tuple[int, str]], batch: int | None = None) -> None:
    """Produce (partition, value) records; ``batch``: at most that many records in a log batch."""
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if batch is not None:
        conf["batch.num.messages"] = batch
    producer = Producer(conf)
    for partition, value in records:
        producer.produce(topic, value=value.encode(), partition=partition)
    assert producer.flush(WAIT) == 0


def produce_one_batch_each(bootstrap: str, topic: str, records: list[tuple[int, str]]) -> None:
    """Each record in a log batch of its own (flushed one by one)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, value in records:
        producer.produce(topic, value=value.encode(), partition=partition)
        assert producer.flush(WAIT) == 0


# ============================================================================ the service's view
@dataclass(frozen=True)
class Offsets:
    start: int                          # the share-partition start offset (SPSO)
    states: dict[int, tuple[str, int, str]]     # offset -> (state, delivery count, member id)
    counters: dict[str, int]


def share_state(gc, group: str, topic: str) -> dict[int, Offsets]:
    """Every loaded share-partition of (group, topic), by partition, read on the service loop."""
    def read():
        topic_id = gc.service.topic_id(topic)
        out = {}
        for (g, t, p), sp in gc.service.share_partitions.share_partitions().items():
            if g == group and t == topic_id:
                states = {o: (s.state.name, s.delivery_count, s.member_id)
                          for b in sp.cached_state() for first, last, s in b.states() for o in range(first, last + 1)}
                out[p] = Offsets(sp.start_offset, states, dict(vars(sp.counters)))
        return out
    return gc.call(read)


def acquired_by(gc, group: str, topic: str) -> dict[Key, str]:
    """The ACQUIRED records of (group, topic) and their holders, read in one go on the service loop."""
    def read():
        topic_id = gc.service.topic_id(topic)
        held = {}
        for (g, t, p), sp in gc.service.share_partitions.share_partitions().items():
            if g == group and t == topic_id:
                for b in sp.cached_state():
                    for first, last, s in b.states():
                        if s.state.name == "ACQUIRED":
                            held.update(dict.fromkeys(((p, o) for o in range(first, last + 1)), s.member_id))
        return held
    return gc.call(read)


def members(gc, group: str) -> dict[str, str]:
    """client id -> member id of the share group's members (its ShareGroupDescribe entry)."""
    described = gc.call(gc.service.group_coordinator.share.describe, group)
    return {m["client_id"]: m["member_id"] for m in described.get("members", [])}


# ============================================================================ 1. every record once
@dataclass
class Ledger:
    """The consumers' side: what each holds (polled, not yet acknowledged) and every delivery; and the
    samples of the service taken while they consume (a consumer keeps what it polled until a whole
    sample was taken after it got it, so that every delivery is cross-checked with the service)."""
    lock: threading.Condition = field(default_factory=threading.Condition)
    holding: dict[Key, str] = field(default_factory=dict)              # key -> consumer (client id)
    deliveries: dict[Key, list[tuple[str, int]]] = field(default_factory=dict)   # key -> [(consumer, count)]
    overlaps: list[tuple[Key, str, str]] = field(default_factory=list)
    acked: dict[Key, int] = field(default_factory=dict)                # the acknowledgement callbacks' offsets
    ack_errors: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    samples: list[tuple[dict[Key, str], dict[Key, str], dict[Key, str]]] = field(default_factory=list)

    def take(self, name: str, keys: list[tuple[Key, int]]) -> int:
        """The consumer holds these records; the number of samples taken so far."""
        with self.lock:
            for key, count in keys:
                other = self.holding.get(key)
                if other is not None:
                    self.overlaps.append((key, other, name))
                self.holding[key] = name
                self.deliveries.setdefault(key, []).append((name, count))
            return len(self.samples)

    def wait_sampled(self, taken_at: int, stop: threading.Event) -> None:
        """Until a sample started after the take is complete (the one after the one under way)."""
        with self.lock:
            self.lock.wait_for(lambda: len(self.samples) >= taken_at + 2 or stop.is_set(), WAIT)

    def drop(self, name: str, keys: list[Key]) -> None:
        with self.lock:
            for key in keys:
                if self.holding.get(key) == name:
                    del self.holding[key]

    def snapshot(self) -> dict[Key, str]:
        with self.lock:
            return dict(self.holding)

    def add_sample(self, sample) -> None:
        with self.lock:
            self.samples.append(sample)
            self.lock.notify_all()

    def settled(self, total: int) -> bool:
        """Everything delivered and nothing held (or a consumer failed)."""
        with self.lock:
            return bool(self.errors) or (len(self.deliveries) >= total and not self.holding)

    def on_ack(self, offsets, exception) -> None:      # the acknowledgement commit callback
        with self.lock:
            if exception is not None:
                self.ack_errors.append(str(exception))
                return
            for tp, acked in offsets.items():
                for o in acked:
                    key = (tp.partition, o)
                    self.acked[key] = self.acked.get(key, 0) + 1


TOTAL = 10_000
PARTITIONS = 4
MAX_POLL_RECORDS = 100


def _consume(consumer: ShareConsumer, name: str, mode: str, ledger: Ledger, stop: threading.Event) -> None:
    """One consumer's thread: poll, hold until the service was sampled, acknowledge (explicit: ACCEPT and
    commit_sync; implicit: the next poll or the last commit accepts them), until told to stop."""
    try:
        while not stop.is_set():
            batch = consumer.poll(0.1)
            taken = []
            for m in batch:
                if m.error() is not None:
                    ledger.errors.append(f"{name}: {m.error()}")
                    continue
                taken.append(((m.partition(), m.offset()), m.delivery_count()))
            if taken:
                ledger.wait_sampled(ledger.take(name, taken), stop)
                ledger.drop(name, [k for k, _ in taken])        # from here on they may be acknowledged
            if mode == "explicit" and batch:
                for m in batch:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                result = consumer.commit_sync(WAIT)
                failed = {tp.partition: str(e) for tp, e in result.items() if e is not None}
                if failed:
                    ledger.errors.append(f"{name}: commit_sync {failed}")
        # implicit: the last poll's records are accepted by a commit (explicit: nothing is pending)
        result = consumer.commit_sync(WAIT)
        failed = {tp.partition: str(e) for tp, e in result.items() if e is not None}
        if failed:
            ledger.errors.append(f"{name}: last commit_sync {failed}")
    except Exception as exc:        # reported by the test
        ledger.errors.append(f"{name}: {exc!r}")


def _missing(ledger: Ledger, gc, group: str, topic: str) -> str:
    """What a run that did not get everything left: the records missing, held, and the service's states."""
    missing: dict[int, list[int]] = {}
    for i in range(TOTAL):
        if (i % PARTITIONS, i // PARTITIONS) not in ledger.deliveries:
            missing.setdefault(i % PARTITIONS, []).append(i // PARTITIONS)
    service = {}
    for p, o in share_state(gc, group, topic).items():
        by_state: dict[str, int] = {}
        for state, _, _ in o.states.values():
            by_state[state] = by_state.get(state, 0) + 1
        service[p] = (o.start, by_state, o.counters)
    return (f"{len(ledger.deliveries)} of {TOTAL} delivered; missing (partition: first offsets) "
            f"{ {p: os_[:5] for p, os_ in missing.items()} }; held {len(ledger.snapshot())}; "
            f"members {members(gc, group)}; service {service}")


@pytest.mark.parametrize("consumers", [1, 3, 10])
@pytest.mark.parametrize("mode", ["implicit", "explicit"])
def test_every_record_is_delivered_and_acknowledged_once_and_held_by_one_consumer(groupcoord_factory, mode,
                                                                                  consumers, client):
    topic, group = "orders", f"queue-{mode}-{consumers}"
    gc = groupcoord_factory(topics={topic: PARTITIONS})
    gc.call(gc.service.alter_group_configs, group, EARLIEST)
    ledger = Ledger()
    names = [f"c{i}" for i in range(consumers)]
    clients = []
    stop = threading.Event()
    try:
        for name in names:
            c = share_consumer(gc.bootstrap_servers, group, name, mode, client=client,
                               max_poll_records=MAX_POLL_RECORDS)
            clients.append(c)
            c.set_acknowledgement_commit_callback(ledger.on_ack)
            c.subscribe([topic])
        threads = [threading.Thread(target=_consume, args=(c, n, mode, ledger, stop), daemon=True)
                   for c, n in zip(clients, names)]
        for t in threads:
            t.start()

        def assigned():
            described = gc.call(gc.service.group_coordinator.share.describe, group)
            return len(described.get("members", [])) == consumers and all(
                m["assignment"]["topic_partitions"] for m in described["members"])
        wait_until(assigned, message="every consumer has partitions")
        # small log batches (a fetch hands out whole ones): consumers sharing a partition take turns
        produce(gc.bootstrap_servers, topic, [(i % PARTITIONS, str(i)) for i in range(TOTAL)], batch=25)

        # sample the service while they consume: the consumers' holds before and after its ACQUIRED records
        deadline = time.monotonic() + WAIT
        while not ledger.settled(TOTAL) and time.monotonic() < deadline:
            before = ledger.snapshot()
            acquired = acquired_by(gc, group, topic)
            ledger.add_sample((before, acquired, ledger.snapshot()))
        stop.set()
        for t in threads:
            t.join(WAIT)
        assert not ledger.errors, ledger.errors[:5]
        assert len(ledger.deliveries) == TOTAL, _missing(ledger, gc, group, topic)
        member_of = members(gc, group)
        assert sorted(member_of) == names, member_of
        # at last every record is acknowledged: each share-partition's start offset at the log end
        per_partition = TOTAL // PARTITIONS
        wait_until(lambda: all(o.start == per_partition and not o.states
                               for o in share_state(gc, group, topic).values()),
                   message=lambda: f"share-partitions acknowledged: {share_state(gc, group, topic)}")
        state = share_state(gc, group, topic)
    finally:
        stop.set()
        for c in clients:
            c.close()

    everything = {(i % PARTITIONS, i // PARTITIONS) for i in range(TOTAL)}
    # none lost, none delivered twice, delivery count 1
    assert set(ledger.deliveries) == everything
    twice = {k: d for k, d in ledger.deliveries.items() if len(d) != 1 or d[0][1] != 1}
    assert not twice, list(twice.items())[:5]
    # never in two consumers' hands at once (consumer side)
    assert not ledger.overlaps, ledger.overlaps[:5]
    # every record acknowledged once, as the acknowledgement callbacks say, and by the service's counters
    assert not ledger.ack_errors, ledger.ack_errors[:5]
    assert set(ledger.acked) == everything and set(ledger.acked.values()) == {1}
    assert sorted(state) == list(range(PARTITIONS))
    for p, o in state.items():
        assert (o.counters["acquired"], o.counters["acknowledged"]) == (per_partition, per_partition), (p, o.counters)
        assert o.counters["released"] == o.counters["lock_expired"] == o.counters["archived"] == 0, (p, o.counters)
    # the service's side: every ACQUIRED record it showed is held by the member of the consumer that got
    # it; and every record, while its consumer held it (polled, not yet acknowledged), was ACQUIRED by
    # that consumer's member
    consumer_of_member = {m: c for c, m in member_of.items()}
    got_by = {k: d[0][0] for k, d in ledger.deliveries.items()}
    covered: set[Key] = set()
    for before, acquired, after in ledger.samples:
        for key, member in acquired.items():
            assert consumer_of_member.get(member) == got_by[key], (key, member, got_by[key])
        for key, name in before.items():
            if after.get(key) == name:
                assert acquired.get(key) == member_of[name], (key, name, acquired.get(key))
                covered.add(key)
    assert covered == everything, f"{len(everything - covered)} deliveries not seen held in a sample"


# ============================================================================ 2. a consumer dies holding records
LOCK_MS = 2000
SHORT_LOCK = {"group.share.record.lock.duration.ms": LOCK_MS, "group.share.min.record.lock.duration.ms": 1000}

#: a share consumer in a process of its own: polls one batch (explicit mode), prints it as a JSON line and
#: then exits at once without acknowledging (os._exit: no close, its connections reset) or hangs (alive,
#: its connections and heartbeats going on, never acknowledging)
DOOMED = textwrap.dedent("""
    import json, os, sys, time
    from confluent_kafka import ShareConsumer
    bootstrap, group, topic, then = sys.argv[1:5]
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "doomed",
                       "share.acknowledgement.mode": "explicit", "max.poll.records": 10})
    c.subscribe([topic])
    while True:
        got = [(m.partition(), m.offset(), m.delivery_count()) for m in c.poll(0.2) if m.error() is None]
        if got:
            print(json.dumps(got), flush=True)
            break
    if then == "exit":
        os._exit(0)
    time.sleep(120)
""")


#: the same with our share consumer
DOOMED_OURS = textwrap.dedent("""
    import asyncio, json, os, sys
    from groupcoord.client import ShareConsumer
    bootstrap, group, topic, then = sys.argv[1:5]
    async def main():
        c = ShareConsumer(topic, config={"bootstrap.servers": bootstrap, "group.id": group, "client.id": "doomed",
                                         "share.acknowledgement.mode": "explicit", "max.poll.records": 10})
        await c.start()
        while True:
            got = [(r.partition, r.offset, r.delivery_count) for r in await c.poll(0.2)]
            if got:
                print(json.dumps(got), flush=True)
                break
        if then == "exit":
            os._exit(0)
        await asyncio.sleep(120)
    asyncio.run(main())
""")


class Doomed:
    def __init__(self, bootstrap: str, group: str, topic: str, then: str, client: str = "confluent"):
        script = DOOMED_OURS if client == "ours" else DOOMED
        self.proc = subprocess.Popen([sys.executable, "-c", script, bootstrap, group, topic, then],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(WAIT)
        assert lines and lines[0], f"the doomed consumer polled nothing (exit code {self.proc.poll()})"
        self.polled = [tuple(r) for r in json.loads(lines[0])]       # [(partition, offset, delivery count)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def _consume_all(consumer: ShareConsumer, expected: int, deliveries: dict[Key, list[int]],
                 ack=AcknowledgeType.ACCEPT, timeout: float = WAIT) -> None:
    """Poll (explicit mode), acknowledge each with ``ack`` and commit, until ``expected`` distinct
    records were delivered; every commit must succeed."""
    deadline = time.monotonic() + timeout
    while len(deliveries) < expected:
        assert time.monotonic() < deadline, f"{len(deliveries)} of {expected} delivered: {sorted(deliveries)}"
        batch = consumer.poll(0.1)
        for m in batch:
            assert m.error() is None, m.error()
            deliveries.setdefault((m.partition(), m.offset()), []).append(m.delivery_count())
            consumer.acknowledge(m, ack)
        if batch:
            result = consumer.commit_sync(WAIT)
            assert all(e is None for e in result.values()), result


@pytest.mark.parametrize("then", ["exit", "hang"])
def test_the_records_of_a_consumer_that_dies_or_hangs_go_to_another_with_delivery_count_2(groupcoord_factory,
                                                                                          closing, then, client):
    """exit: the process ends without acknowledging (os._exit): its connection's close releases its
    records at once (Kafka 4.3 ties the share session to the connection), before the lock expires;
    hang: the process lives on, connected and heartbeating, never acknowledging: the records come back
    when the acquisition lock (2 s) expires. Either way the survivor gets them with delivery count 2."""
    topic, group, total = "jobs", f"dies-{then}", 30
    gc = groupcoord_factory(topics={topic: 1}, config=SHORT_LOCK)
    gc.call(gc.service.alter_group_configs, group, EARLIEST)
    produce(gc.bootstrap_servers, topic, [(0, str(i)) for i in range(total)], batch=10)

    doomed = closing(Doomed(gc.bootstrap_servers, group, topic, then, client))
    polled = doomed.polled
    assert polled and all(count == 1 for _, _, count in polled), polled
    doomed_keys = sorted((p, o) for p, o, _ in polled)
    doomed_member = wait_until(lambda: members(gc, group).get("doomed"), message="the doomed member")

    if then == "exit":
        assert doomed.proc.wait(WAIT) == 0
        # released by the connection's close: AVAILABLE again, nobody's, the delivery count kept; by the
        # release (the counters), not by the lock's expiry
        wait_until(lambda: all(share_state(gc, group, topic)[0].states[o] == ("AVAILABLE", 1, "")
                               for _, o in doomed_keys),
                   message=lambda: f"released at disconnect: {share_state(gc, group, topic)}")
        counters = share_state(gc, group, topic)[0].counters
        assert (counters["released"], counters["lock_expired"]) == (len(doomed_keys), 0), counters

    survivor = closing(share_consumer(gc.bootstrap_servers, group, "survivor", client=client))
    survivor.subscribe([topic])
    deliveries: dict[Key, list[int]] = {}
    _consume_all(survivor, total, deliveries)
    assert sorted(deliveries) == [(0, o) for o in range(total)]
    assert {k: c for k, c in deliveries.items() if k in doomed_keys} == {k: [2] for k in doomed_keys}
    assert {k: c for k, c in deliveries.items() if k not in doomed_keys} == {
        (0, o): [1] for o in range(total) if (0, o) not in doomed_keys}

    state = wait_until(lambda: (s := share_state(gc, group, topic)[0]).start == total and s,
                       message=lambda: f"all acknowledged: {share_state(gc, group, topic)}")
    if then == "hang":
        # the hung consumer is still there, a member of the group: its records came back by their lock
        assert doomed.proc.poll() is None
        assert members(gc, group).get("doomed") == doomed_member
        assert (state.counters["lock_expired"], state.counters["released"]) == (len(doomed_keys), 0), state.counters
    assert state.counters["acknowledged"] == total and state.counters["acquired"] == total + len(doomed_keys)


# ============================================================================ 3. REJECT archives
def test_a_rejected_record_is_archived_and_never_delivered_again(groupcoord_factory, closing, client):
    topic, group, total, rejected = "tasks", "rejects", 10, 3
    gc = groupcoord_factory(topics={topic: 1})
    gc.call(gc.service.alter_group_configs, group, EARLIEST)
    produce(gc.bootstrap_servers, topic, [(0, str(i)) for i in range(total)])
    consumer = closing(share_consumer(gc.bootstrap_servers, group, "rejecter", client=client))
    consumer.subscribe([topic])

    # first delivery: REJECT one, RELEASE the others (so that they come back)
    first: dict[Key, list[int]] = {}
    deadline = time.monotonic() + WAIT
    while len(first) < total:
        assert time.monotonic() < deadline, first
        batch = consumer.poll(0.1)
        for m in batch:
            assert m.error() is None, m.error()
            first.setdefault((m.partition(), m.offset()), []).append(m.delivery_count())
            consumer.acknowledge(m, AcknowledgeType.REJECT if m.offset() == rejected else AcknowledgeType.RELEASE)
        if batch:
            result = consumer.commit_sync(WAIT)
            assert all(e is None for e in result.values()), result
    assert first == {(0, o): [1] for o in range(total)}
    state = share_state(gc, group, topic)[0]
    assert state.start == 0
    assert {o: s for o, s in state.states.items()} == {
        o: ("ARCHIVED", 1, "") if o == rejected else ("AVAILABLE", 1, "") for o in range(total)}
    assert (state.counters["rejected"], state.counters["archived"], state.counters["released"]) == (1, 1, total - 1)

    # the others come back (delivery count 2), the rejected one does not; then a new record, after it
    again: dict[Key, list[int]] = {}
    _consume_all(consumer, total - 1, again)
    assert again == {(0, o): [2] for o in range(total) if o != rejected}
    produce(gc.bootstrap_servers, topic, [(0, "after")])
    later: dict[Key, list[int]] = {}
    _consume_all(consumer, 1, later)
    assert later == {(0, total): [1]}
    state = wait_until(lambda: (s := share_state(gc, group, topic)[0]).start == total + 1 and s,
                       message=lambda: f"all acknowledged: {share_state(gc, group, topic)}")
    assert (state.counters["rejected"], state.counters["archived"], state.counters["acknowledged"]) == (
        1, 1, total)


# ============================================================================ 4. RELEASE up to the limit
@pytest.mark.parametrize("limit", [2, 3])
def test_a_record_released_each_time_is_delivered_limit_times_then_archived(groupcoord_factory, closing, limit,
                                                                           client):
    """offset 0 is held by a pinning consumer (never acknowledged until the end), so that the share-partition
    start offset stays at 0 and offset 1's state stays to be seen; offset 1 is released at each delivery."""
    topic, group = "retries", f"limit-{limit}"
    gc = groupcoord_factory(topics={topic: 1}, config={"group.share.delivery.count.limit": limit})
    gc.call(gc.service.alter_group_configs, group, EARLIEST)
    produce_one_batch_each(gc.bootstrap_servers, topic, [(0, "pinned"), (0, "poison")])

    pin = closing(share_consumer(gc.bootstrap_servers, group, "pin", client=client, max_poll_records=1))
    pin.subscribe([topic])
    pinned = wait_until(lambda: [(m.offset(), m.delivery_count()) for m in pin.poll(0.1)],
                        message="the pin's record")
    assert pinned == [(0, 1)]

    releaser = closing(share_consumer(gc.bootstrap_servers, group, "releaser", client=client))
    releaser.subscribe([topic])
    counts: list[int] = []
    deadline = time.monotonic() + WAIT
    while len(counts) < limit:
        assert time.monotonic() < deadline, counts
        batch = releaser.poll(0.1)
        for m in batch:
            assert (m.error(), m.offset()) == (None, 1), (m.error(), m.offset())
            counts.append(m.delivery_count())
            releaser.acknowledge(m, AcknowledgeType.RELEASE)
        if batch:
            result = releaser.commit_sync(WAIT)
            assert all(e is None for e in result.values()), result
    assert counts == list(range(1, limit + 1))
    state = share_state(gc, group, topic)[0]
    assert (state.start, state.states) == (0, {0: ("ACQUIRED", 1, members(gc, group)["pin"]),
                                               1: ("ARCHIVED", limit, "")})
    assert (state.counters["archived"], state.counters["released"]) == (1, limit), state.counters

    # never again: a record produced after it is delivered, it is not
    produce(gc.bootstrap_servers, topic, [(0, "after")])
    later: dict[Key, list[int]] = {}
    _consume_all(releaser, 1, later)
    assert later == {(0, 2): [1]}
    pin.acknowledge_offset(topic, 0, 0, AcknowledgeType.ACCEPT)
    assert all(e is None for e in pin.commit_sync(WAIT).values())
    wait_until(lambda: share_state(gc, group, topic)[0].start == 3,
               message=lambda: f"all done: {share_state(gc, group, topic)}")


# ============================================================================ 5. the service killed (-9) and restarted
@dataclass
class _CloseAll:
    items: list

    def close(self) -> None:
        for item in reversed(self.items):
            item.close()


def persisted_share_states(data_dir, group: str) -> dict[int, object]:
    """partition -> ShareSnapshot of the group's share-partitions as the share state log has them, read
    from a copy of ``data_dir`` (reading repairs a torn tail: the original stays the daemon's)."""
    import shutil
    import tempfile

    from groupcoord.coordinator.storage import LogStore
    with tempfile.TemporaryDirectory() as copy:
        shutil.copytree(data_dir, copy, dirs_exist_ok=True)
        store = LogStore(copy, fsync="never")
        try:
            states = store.load_share_states()
        finally:
            store.close()
    return {p: s for (g, _, p), s in states.items() if g == group}


def persisted_records(data_dir, group: str) -> tuple[set[Key], dict[Key, int]]:
    """The records the share state log has terminal (before the start offset, ACKNOWLEDGED or ARCHIVED),
    and those it has AVAILABLE with their delivery count (it never has ACQUIRED ones)."""
    terminal: set[Key] = set()
    available: dict[Key, int] = {}
    for p, snapshot in persisted_share_states(data_dir, group).items():
        terminal |= {(p, o) for o in range(snapshot.start_offset)}
        for batch in snapshot.state_batches:
            keys = {(p, o) for o in range(batch.first_offset, batch.last_offset + 1)}
            assert batch.delivery_state in (0, 2, 4), batch         # AVAILABLE, ACKNOWLEDGED, ARCHIVED
            if batch.delivery_state == 0:
                available.update(dict.fromkeys(keys, batch.delivery_count))
            else:
                terminal |= keys
    return terminal, available


def _poll_batch(consumer: ShareConsumer) -> list:
    batch = wait_until(lambda: list(consumer.poll(0.1)), message="a batch")
    assert all(m.error() is None for m in batch), [m.error() for m in batch]
    return batch


def test_acknowledged_records_survive_a_kill_9_of_the_service_and_the_others_come_back(tmp_path, closing, client):
    """Two explicit-mode consumers accept batches (commit_sync: the acknowledged ones are those of the
    partitions it reports without error), one batch is released once, then, holding a batch each
    (one released before, one new), the service is killed (-9) and restarted on the same --data-dir and
    port. What was acknowledged never comes back; everything else does, with its last persisted
    delivery count + 1 (acquisitions are not persisted: a record acquired once comes back at 1)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    topic, group, partitions, total = "work", "durable-queue", 2, 200
    data_dir = tmp_path / "data"
    daemons: list[Daemon] = []
    closing(_CloseAll(daemons))             # (registered first: closed after the consumers)
    first = Daemon(data_dir, {topic: partitions})
    daemons.append(first)
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    [altered] = admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])]).values()
    altered.result(WAIT)
    produce(first.bootstrap, topic, [(i % partitions, str(i)) for i in range(total)], batch=10)
    everything = {(i % partitions, i // partitions) for i in range(total)}

    a = closing(share_consumer(first.bootstrap, group, "a", client=client, max_poll_records=10))
    b = closing(share_consumer(first.bootstrap, group, "b", client=client, max_poll_records=10))
    for c in (a, b):
        c.subscribe([topic])
    acked: set[Key] = set()            # acknowledged, as commit_sync reported
    for _ in range(4):
        for c in (a, b):
            batch = _poll_batch(c)
            for m in batch:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            ok = {tp.partition for tp, e in c.commit_sync(WAIT).items() if e is None}
            acked |= {(m.partition(), m.offset()) for m in batch if m.partition() in ok}
    assert len(acked) >= 60, len(acked)     # (a batch holds up to 10 records)
    released = _poll_batch(a)
    for m in released:
        a.acknowledge(m, AcknowledgeType.RELEASE)
    assert all(e is None for e in a.commit_sync(WAIT).values())
    released_keys = {(m.partition(), m.offset()) for m in released}
    held = {"a": _poll_batch(a), "b": _poll_batch(b)}         # acquired, not acknowledged
    held_keys = {(m.partition(), m.offset()): m.delivery_count() for batch in held.values() for m in batch}
    assert not set(held_keys) & acked
    assert {k: n for k, n in held_keys.items() if k in released_keys} == dict.fromkeys(released_keys & set(held_keys), 2)

    first.kill()
    # what the share state log kept: the acknowledged records terminal, the released ones AVAILABLE with
    # delivery count 1, nothing ACQUIRED (never written)
    terminal, available = persisted_records(data_dir, group)
    assert terminal == acked
    assert available == dict.fromkeys(released_keys, 1)

    second = Daemon(data_dir, {topic: partitions}, port=first.port)
    daemons.append(second)
    assert second.bootstrap == first.bootstrap
    # the held records' acknowledgement cannot succeed: the restarted service holds them for nobody
    for name, c in (("a", a), ("b", b)):
        for m in held[name]:
            c.acknowledge(m, AcknowledgeType.RELEASE)
        result = c.commit_sync(WAIT)
        assert all(e is not None for e in result.values()), result

    after: dict[Key, list[int]] = {}
    expected = len(everything - acked)
    deadline = time.monotonic() + WAIT
    while len(after) < expected:
        assert time.monotonic() < deadline, f"{len(after)} of {expected} delivered after the restart"
        for c in (a, b):
            batch = c.poll(0.1)
            for m in batch:
                assert m.error() is None, m.error()
                after.setdefault((m.partition(), m.offset()), []).append(m.delivery_count())
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            if batch:
                assert all(e is None for e in c.commit_sync(WAIT).values())
    assert not set(after) & acked                       # no acknowledged record came back
    assert set(after) == everything - acked             # every other one did, once
    assert after == {k: [available.get(k, 0) + 1] for k in after}
    assert set(held_keys) <= set(after) and released_keys <= set(after)
    for c in (a, b):
        c.close()
    second.close()
    # at last every record is terminal in the share state log (the start offset written with the last
    # acknowledgement is the one before it, as Kafka writes it: the batch after it is ACKNOWLEDGED)
    assert persisted_records(data_dir, group) == (everything, {})
