"""Every client lists all topics and subscribes by pattern, as against Kafka.

librdkafka asks for all topics with a Metadata request whose null topic array leaves three
stray bytes after the body (a four-byte placeholder for the count); Kafka reads the fields it
knows and ignores the rest, and so do we. Its regular-expression subscriptions and those of
kafka-python and aiokafka are resolved by the client from all-topics metadata, refreshed every
``metadata.max.age.ms``: a topic created later that matches joins the subscription, and the
group rebalances to assign it. KafkaJS resolves its regular expressions once, at subscribe().
"""
from __future__ import annotations

import asyncio

import pytest

from clients import WAIT, all_partitions, wait_until

pytestmark = pytest.mark.interop

TOPICS = {"orders": 2, "ord-eu": 1, "payments": 2}
PATTERN = "^ord.*"
REFRESH_MS = 300        # the clients' metadata refresh, so that a new topic is seen soon


def list_topics_confluent(bootstrap: str) -> dict[str, set[str]]:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "list-topics"})
    try:
        return {"AdminClient.list_topics": set(admin.list_topics(timeout=WAIT).topics),
                "Consumer.list_topics": set(consumer.list_topics(timeout=WAIT).topics)}
    finally:
        consumer.close()


def list_topics_kafka_python(bootstrap: str) -> dict[str, set[str]]:
    from kafka import KafkaAdminClient, KafkaConsumer

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return {"KafkaAdminClient.list_topics": set(admin.list_topics()),
                "KafkaConsumer.topics": set(consumer.topics())}
    finally:
        consumer.close()
        admin.close()


def list_topics_aiokafka(bootstrap: str) -> dict[str, set[str]]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await admin.start()
        await consumer.start()
        try:
            return {"AIOKafkaAdminClient.list_topics": set(await admin.list_topics()),
                    "AIOKafkaConsumer.topics": set(await consumer.topics())}
        finally:
            await consumer.stop()
            await admin.close()
    return asyncio.run(run())


def list_topics_kafkajs(driver) -> dict[str, set[str]]:
    return {"admin.listTopics": set(driver.host.call("listTopics")["topics"])}


def list_topics(client: str, bootstrap: str, driver) -> dict[str, set[str]]:
    if client == "kafkajs":
        return list_topics_kafkajs(driver)
    return {"confluent-kafka": list_topics_confluent, "kafka-python": list_topics_kafka_python,
            "aiokafka": list_topics_aiokafka}[client](bootstrap)


CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka", "kafkajs"]


@pytest.mark.parametrize("client", CLIENTS)
def test_list_all_topics(coord, driver_for, client):
    c = coord(topics=TOPICS)
    driver = driver_for(client, c.bootstrap)
    for api, topics in list_topics(client, c.bootstrap, driver).items():
        assert topics == set(TOPICS), api
    c.gc.call(c.gc.service.create_topic, "later", 3)
    for api, topics in list_topics(client, c.bootstrap, driver).items():
        assert topics == set(TOPICS) | {"later"}, api


def refresh_config(client: str) -> dict:
    return {"confluent-kafka": {"topic.metadata.refresh.interval.ms": REFRESH_MS},
            "kafka-python": {"metadata_max_age_ms": REFRESH_MS},
            "aiokafka": {"metadata_max_age_ms": REFRESH_MS},
            "kafkajs": {}}[client]


@pytest.mark.parametrize("client", CLIENTS)
def test_pattern_subscription_follows_new_topics(coord, driver_for, closing, client):
    c = coord(topics=TOPICS)
    driver = driver_for(client, c.bootstrap)
    group = f"pattern-{client}"
    member = closing(driver.member(f"{client}-pattern", group, [PATTERN], "range" if client != "kafkajs" else None,
                                   extra=refresh_config(client)))
    if client == "kafka-python":
        # its leader rejoins when its metadata snapshot changes (a new matching topic), the kind of
        # rejoin whose result a poll() starting mid-join loses (see KafkaPythonMember.poll_interval)
        member.poll_interval = 0.5
    member.start()
    matching = frozenset(tp for tp in all_partitions(TOPICS) if tp[0].startswith("ord"))
    wait_until(lambda: member.check() or member.owned == matching, WAIT,
               message=lambda: f"{member.name} owns {sorted(member.owned)}, expected {sorted(matching)}")
    view = c.stable(group, 1)
    assert view is not None

    # records of a matching topic reach it, those of another topic do not
    produced = driver.produce([("orders", 0, "o-1"), ("payments", 0, "p-1"), ("ord-eu", 0, "e-1")])
    wait_until(lambda: member.check() or {r.value for r in member.consumed()} == {"o-1", "e-1"}, WAIT,
               message=lambda: f"{member.name} consumed {member.consumed()}")
    assert len(produced) == 3

    c.gc.call(c.gc.service.create_topic, "ord-late", 2)
    c.gc.call(c.gc.service.create_topic, "other-late", 1)
    if client == "kafkajs":
        # KafkaJS resolves a regular expression once, when subscribe() is called
        assert member.owned == matching
        return
    grown = matching | {("ord-late", 0), ("ord-late", 1)}
    wait_until(lambda: member.check() or member.owned == grown, WAIT,
               message=lambda: f"{member.name} owns {sorted(member.owned)}, expected {sorted(grown)}")
    later = c.stable(group, 1)
    assert later is not None and later.generation > view.generation


def test_admin_clients_add_partitions_and_a_group_takes_them(coord, closing):
    """CreatePartitions (kafka-topics --alter --partitions) from librdkafka's and kafka-python's admin
    clients: the topic grows, a refusal is Kafka's, and a consumer group subscribed to it gets the new
    partitions (librdkafka once said "requires broker version >= 1.0.0")."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewPartitions as KNewPartitions
    from test_interop_consumer_protocol import ConsumerProtocolMember

    c = coord(topics={"orders": 2})
    member = closing(ConsumerProtocolMember("m0", c.bootstrap, "grows", ["orders"], None)).start()
    wait_until(lambda: member.owned == all_partitions({"orders": 2}), message="the member owns both partitions")

    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    [future] = admin.create_partitions([NewPartitions("orders", 4)]).values()
    future.result(WAIT)
    [future] = admin.create_partitions([NewPartitions("orders", 3)]).values()
    with pytest.raises(KafkaException, match="currently has 4 partition"):
        future.result(WAIT)
    kadmin = closing(KafkaAdminClient(bootstrap_servers=c.bootstrap))
    kadmin.create_partitions({"orders": KNewPartitions(total_count=6)})
    assert c.gc.call(lambda: c.gc.service.cluster.topics["orders"].partition_count) == 6
    wait_until(lambda: member.owned == all_partitions({"orders": 6}), message="the member owns the new partitions")
