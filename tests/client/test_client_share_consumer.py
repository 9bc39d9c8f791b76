"""Our share consumer's asyncio driver (groupcoord.client.ShareConsumer), against our service and against
librdkafka's mock cluster (its share groups: an independent implementation of the broker's side).

The service's share interop checks (tests/interop/test_interop_share_consumer.py) run with this
consumer too; here: its API as an application sees it (poll, acknowledge, commit and its results,
the acknowledgement commit callback, close releasing what it holds), and the same work against the
mock cluster.
"""
from __future__ import annotations

import asyncio

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from rdkafka_mock import MockCluster  # noqa: E402

from groupcoord.client import AcknowledgeType, ShareConsumer, ShareRecord  # noqa: E402
from groupcoord.client.assignors.base import TopicPartition as TP  # noqa: E402
from groupcoord.client.consumer_config import ConfigError  # noqa: E402
from groupcoord.client.member import IllegalStateError  # noqa: E402
from groupcoord.coordinator.embed import ThreadedCoordinator  # noqa: E402

WAIT = 30.0
_OPEN: list[ShareConsumer] = []


@pytest.fixture(autouse=True)
async def close_consumers():
    """Whatever a test did, its consumers are closed (a failed test must not leave pumps running)."""
    _OPEN.clear()
    yield
    for c in _OPEN:
        try:
            await asyncio.wait_for(c.close(timeout=1), 5)
        except Exception:
            pass
    _OPEN.clear()


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(WAIT) == 0


async def consumer(bootstrap: str, group: str = "workers", topic: str = "jobs", **configs) -> ShareConsumer:
    c = ShareConsumer(topic, config={"bootstrap.servers": bootstrap, "group.id": group,
                                     "reconnect.backoff.max.ms": 200}, **configs)
    _OPEN.append(c)
    return await c.start()


async def poll_until(c: ShareConsumer, predicate, *, timeout: float = WAIT, ack=None) -> list[ShareRecord]:
    """Poll until predicate(all records polled) holds; ``ack``: acknowledge each with it (explicit mode)."""
    got: list[ShareRecord] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate(got):
        assert loop.time() < deadline, f"{len(got)} records polled: {sorted((r.partition, r.offset) for r in got)[:20]}"
        batch = await c.poll(0.2)
        got += batch
        if ack is not None:
            for r in batch:
                c.acknowledge(r, ack)
    return got


# ================================================================================ against our service
@pytest.fixture
def service():
    gc = ThreadedCoordinator(topics={"jobs": 2}).start()
    gc.call(gc.service.alter_group_configs, "workers", {"share.auto.offset.reset": "earliest"})
    yield gc
    gc.stop()


def share_start_offsets(gc, group: str = "workers") -> dict[int, int]:
    def read():
        return {p: sp.start_offset for (g, _, p), sp in gc.service.share_partitions.share_partitions().items()
                if g == group}
    return gc.call(read)


def delivery_states(gc, group: str = "workers") -> dict[tuple[int, int], tuple[str, int]]:
    def read():
        return {(p, o): (s.state.name, s.delivery_count)
                for (g, _, p), sp in gc.service.share_partitions.share_partitions().items() if g == group
                for b in sp.cached_state() for first, last, s in b.states() for o in range(first, last + 1)}
    return gc.call(read)


async def test_implicit_mode_accepts_a_poll_at_the_next_commit_and_the_callback_hears_each_partition(service):
    produce(service.bootstrap_servers, "jobs", 40, 2)
    c = await consumer(service.bootstrap_servers)
    heard: list[tuple[dict, object]] = []
    c.set_acknowledgement_commit_callback(lambda offsets, error: heard.append((offsets, error)))
    got = await poll_until(c, lambda g: len(g) >= 40)
    assert sorted((r.partition, r.offset) for r in got) == sorted((i % 2, i // 2) for i in range(40))
    assert {r.delivery_count for r in got} == {1}
    assert c.acquisition_lock_timeout_ms == 30000          # the group's share.record.lock.duration.ms
    assert c.assignment() == {TP("jobs", 0), TP("jobs", 1)}
    with pytest.raises(IllegalStateError, match="Implicit acknowledgement"):
        c.acknowledge(got[0])
    results = await c.commit()
    assert results == {TP("jobs", 0): None, TP("jobs", 1): None}
    assert share_start_offsets(service) == {0: 20, 1: 20}
    acked = {}
    for offsets, error in heard:
        assert error is None
        for tp, os_ in offsets.items():
            acked.setdefault(tp.partition, set()).update(os_)
    assert acked == {0: set(range(20)), 1: set(range(20))}
    assert await c.commit() == {}                          # nothing left to acknowledge


async def test_explicit_mode_release_comes_back_reject_never_and_unacknowledged_records_stop_the_next_poll(service):
    produce(service.bootstrap_servers, "jobs", 10, 1)
    c = await consumer(service.bootstrap_servers, share_acknowledgement_mode="explicit")
    first = await poll_until(c, lambda g: len(g) >= 10)
    with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
        await c.poll(0)
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        c.acknowledge(("jobs", 1, 0))                    # not a record of this poll
    for r in first:
        c.acknowledge(r, AcknowledgeType.REJECT if r.offset == 3 else
                      AcknowledgeType.RELEASE if r.offset < 5 else AcknowledgeType.ACCEPT)
    assert await c.commit() == {TP("jobs", 0): None}
    states = delivery_states(service)
    assert states[(0, 3)] == ("ARCHIVED", 1)
    assert {o: states[(0, o)] for o in (0, 1, 2, 4)} == dict.fromkeys((0, 1, 2, 4), ("AVAILABLE", 1))
    again = await poll_until(c, lambda g: len(g) >= 4, ack=AcknowledgeType.ACCEPT)
    assert sorted((r.offset, r.delivery_count) for r in again) == [(0, 2), (1, 2), (2, 2), (4, 2)]
    assert await c.commit() == {TP("jobs", 0): None}
    assert share_start_offsets(service) == {0: 10, 1: 0}


async def test_close_releases_what_the_consumer_holds_and_another_gets_it_with_delivery_count_2(service):
    produce(service.bootstrap_servers, "jobs", 6, 1)
    a = await consumer(service.bootstrap_servers, share_acknowledgement_mode="explicit", max_poll_records=6)
    held = await poll_until(a, lambda g: len(g) >= 6)
    for r in held[:2]:
        a.acknowledge(r, AcknowledgeType.ACCEPT)         # made, not sent: close sends it
    await a.close()
    states = delivery_states(service)
    assert share_start_offsets(service) == {0: 2, 1: 0}
    assert {o: states[(0, o)] for o in range(2, 6)} == dict.fromkeys(range(2, 6), ("AVAILABLE", 1))
    b = await consumer(service.bootstrap_servers)
    got = await poll_until(b, lambda g: len(g) >= 4)
    assert sorted((r.offset, r.delivery_count) for r in got) == [(o, 2) for o in range(2, 6)]


async def test_a_record_whose_lock_expired_is_not_acknowledged_as_if_held():
    """The lock is 1 s; the application holds its poll 1.5 s: the acknowledgement is not sent (the commit
    reports INVALID_RECORD_STATE for the lock's expiry, not the leader's refusal), and the record comes back
    with delivery count 2."""
    gc = ThreadedCoordinator(topics={"jobs": 1}, config={"group.share.min.record.lock.duration.ms": 1000}).start()
    try:
        gc.call(gc.service.alter_group_configs, "workers", {"share.auto.offset.reset": "earliest",
                                                            "share.record.lock.duration.ms": 1000})
        produce(gc.bootstrap_servers, "jobs", 3, 1)
        c = await consumer(gc.bootstrap_servers, share_acknowledgement_mode="explicit")
        got = await poll_until(c, lambda g: len(g) >= 3)
        assert c.acquisition_lock_timeout_ms == 1000
        await asyncio.sleep(1.5)                         # (real time: the lock is the service's)
        for r in got:
            c.acknowledge(r, AcknowledgeType.ACCEPT)
        result = await c.commit()
        assert list(result) == [TP("jobs", 0)]
        assert "INVALID_RECORD_STATE" in repr(result[TP("jobs", 0)]) and "lock expired" in str(result[TP("jobs", 0)])
        again = await poll_until(c, lambda g: len(g) >= 3, ack=AcknowledgeType.ACCEPT)
        assert sorted((r.offset, r.delivery_count) for r in again) == [(0, 2), (1, 2), (2, 2)]
        assert await c.commit() == {TP("jobs", 0): None}
    finally:
        for c in _OPEN:
            await c.close(timeout=2)
        _OPEN.clear()
        gc.stop()


def test_a_share_consumer_refuses_the_configs_a_share_group_has_no_use_for():
    with pytest.raises(ConfigError, match="group.instance.id, isolation.level cannot be set when using a share group"):
        ShareConsumer("t", config={"bootstrap.servers": "localhost:9092", "group.id": "g",
                                   "group.instance.id": "i", "isolation.level": "read_uncommitted"})
    with pytest.raises(ConfigError, match="group.id"):
        ShareConsumer("t", config={"bootstrap.servers": "localhost:9092"})
    with pytest.raises(ConfigError, match="share.acknowledgement.mode"):
        ShareConsumer("t", config={"bootstrap.servers": "localhost:9092", "group.id": "g",
                                   "share.acknowledgement.mode": "sometimes"})


# ================================================================================ against librdkafka's mock
@pytest.fixture
def mock():
    cluster = MockCluster(brokers=1)
    cluster.create_topic("jobs", 4)
    cluster.share_groups(earliest=True)
    yield cluster
    cluster.close()


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
async def test_three_consumers_share_a_topic_on_the_mock_cluster(mock, mode):
    """Every record is delivered and acknowledged; a record delivered twice has a higher delivery count the
    second time (the mock may redeliver when assignments move: see bench/README.md)."""
    total = 400
    produce(mock.bootstrap_servers, "jobs", total, 4)
    consumers = [await consumer(mock.bootstrap_servers, share_acknowledgement_mode=mode) for _ in range(3)]
    deliveries: dict[tuple[int, int], list[int]] = {}
    errors: list = []

    async def work(c: ShareConsumer) -> None:
        while len(deliveries) < total:
            batch = await c.poll(0.2)
            for r in batch:
                deliveries.setdefault((r.partition, r.offset), []).append(r.delivery_count)
                if mode == "explicit":
                    c.acknowledge(r, AcknowledgeType.ACCEPT)
            if batch:
                errors.extend(e for e in (await c.commit()).values() if e is not None)
    await asyncio.wait_for(asyncio.gather(*(work(c) for c in consumers)), WAIT)
    assert set(deliveries) == {(i % 4, i // 4) for i in range(total)}
    assert all(counts == sorted(counts) and counts[0] == 1 for counts in deliveries.values()), deliveries
    assert not errors, errors[:5]


async def test_close_releases_on_the_mock_cluster_too(mock):
    produce(mock.bootstrap_servers, "jobs", 8, 4)
    a = await consumer(mock.bootstrap_servers, share_acknowledgement_mode="explicit")
    held = await poll_until(a, lambda g: len(g) >= 8)
    await a.close()
    b = await consumer(mock.bootstrap_servers)
    got = await poll_until(b, lambda g: len(g) >= 8)
    assert sorted((r.partition, r.offset) for r in got) == sorted((r.partition, r.offset) for r in held)
    assert {r.delivery_count for r in got} == {2}
