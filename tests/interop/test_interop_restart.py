"""After a restart on the data dir a consumer goes on from its committed offset, the records kept
(segment files, issue #30); one whose committed offset fell out of the log's range resets and goes on.

Out of range: a data dir written before records were kept (only the end offsets: the partition starts
empty at its old end offset) or a log whose records retention deleted. The Fetch answer carries
OFFSET_OUT_OF_RANGE with empty records, as Kafka's does; librdkafka rejects a null record set, never saw
the error and fetched again for ever (7,800 Fetch/s measured) instead of resetting by
``auto.offset.reset``.
"""
from __future__ import annotations

import shutil

import pytest
from confluent_kafka import Consumer, TopicPartition

from clients import WAIT, confluent_config, wait_until

pytestmark = pytest.mark.interop

TOPIC = "t"
GROUP = "after-restart"


def produce(bootstrap: str, values: list[str]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for v in values:
        producer.produce(TOPIC, value=v.encode(), partition=0)
    assert producer.flush(WAIT) == 0


def committed_five_of_ten(groupcoord_factory, data_dir) -> None:
    first = groupcoord_factory(topics={TOPIC: 1}, data_dir=data_dir)
    produce(first.bootstrap_servers, [f"old-{i}" for i in range(10)])
    committer = Consumer(confluent_config(first.bootstrap_servers, GROUP))
    committer.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
    committer.close()
    first.stop()


def test_a_consumer_goes_on_from_its_committed_offset_with_the_records_kept(groupcoord_factory, tmp_path, closing):
    committed_five_of_ten(groupcoord_factory, tmp_path)
    second = groupcoord_factory(topics={TOPIC: 1}, data_dir=tmp_path)
    log = second.service.cluster.log(TOPIC, 0)
    assert (log.log_start_offset, log.log_end_offset) == (0, 10)
    consumer = closing(Consumer(confluent_config(second.bootstrap_servers, GROUP)))
    consumer.subscribe([TOPIC])
    got: list[tuple[int, str]] = []

    def consumed():
        msg = consumer.poll(0.1)
        if msg is not None and not msg.error():
            got.append((msg.offset(), msg.value().decode()))
        return len(got) == 5
    wait_until(consumed, WAIT, message=lambda: f"consumed {got}")
    assert got == [(i, f"old-{i}") for i in range(5, 10)]


def test_a_committed_offset_below_the_restarted_log_resets(groupcoord_factory, tmp_path, closing):
    committed_five_of_ten(groupcoord_factory, tmp_path)
    shutil.rmtree(tmp_path / f"{TOPIC}-0")      # (as a data dir of an earlier version: end offsets only)
    second = groupcoord_factory(topics={TOPIC: 1}, data_dir=tmp_path)
    log = second.service.cluster.log(TOPIC, 0)
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)     # empty, at the old end
    fetches = []
    second.call(second.service.after_request.append,
                lambda ctx, body, resp, s: fetches.append(1) if ctx.api_key == 1 else None)
    consumer = closing(Consumer(confluent_config(second.bootstrap_servers, GROUP)))
    consumer.subscribe([TOPIC])
    produce(second.bootstrap_servers, ["new-0", "new-1"])
    got: list[tuple[int, str]] = []

    def consumed_new():
        msg = consumer.poll(0.1)
        if msg is not None and not msg.error():
            got.append((msg.offset(), msg.value().decode()))
        return len(got) == 2
    wait_until(consumed_new, WAIT, message=lambda: f"consumed {got} after {len(fetches)} fetches")
    assert got == [(10, "new-0"), (11, "new-1")]    # reset to the log start (earliest), then on
    assert len(fetches) < 200, len(fetches)
