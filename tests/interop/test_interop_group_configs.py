"""Group configs over the wire (Kafka's ``kafka-configs --entity-type groups``): the admin clients of
librdkafka and kafka-python alter and describe them (IncrementalAlterConfigs and DescribeConfigs for
ConfigResource.Type GROUP), a running consumer-protocol group takes a new heartbeat interval at its
members' next heartbeat, and a refused value is refused in Kafka's words."""
from __future__ import annotations

import threading
import time

import pytest

from clients import confluent_config

pytestmark = pytest.mark.interop

WAIT = 20


def _wait(cond, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_admin_clients_alter_and_describe_a_groups_configs_and_the_group_uses_them(coord, closing):
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    c = coord(topics={"orders": 4})
    group = "configs-over-the-wire"
    beats: list[tuple[float, str]] = []         # (when, member) of each ConsumerGroupHeartbeat of the group
    lock = threading.Lock()

    def record(ctx, body):
        if ctx.api_key == 68 and body.get("group_id") == group:
            with lock:
                beats.append((time.monotonic(), body.get("member_id")))
    c.gc.service.before_request.append(record)

    conf = confluent_config(c.bootstrap, group, **{"group.protocol": "consumer"})
    for key in ("session.timeout.ms", "heartbeat.interval.ms"):      # (the broker's, with this protocol)
        conf.pop(key)
    consumer = closing(Consumer(conf))
    consumer.subscribe(["orders"])
    _wait(lambda: (consumer.poll(0.1), len(consumer.assignment()) == 4)[1], "the consumer got its partitions")

    def intervals(since: float) -> list[float]:
        with lock:
            times = [t for t, _ in beats if t >= since]
        return [b - a for a, b in zip(times, times[1:])]

    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    # librdkafka: a heartbeat interval of 1 s for this group (the test profile's is 250 ms)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.heartbeat.interval.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(WAIT)
    altered = time.monotonic()
    # the member heartbeats every 250 ms until its next heartbeat tells it 1 s; then every second
    _wait(lambda: (consumer.poll(0.1), len(intervals(altered)) >= 3)[1], "heartbeats after the change")
    assert all(0.8 < gap < 3.0 for gap in intervals(altered)[1:3]), intervals(altered)      # (was 0.25 s)

    # a session timeout not above the heartbeat interval is refused, as Kafka words it
    bad = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([bad]).values()
    with pytest.raises(KafkaException, match="consumer.session.timeout.ms must be greater than "
                                             "consumer.heartbeat.interval.ms"):
        future.result(WAIT)

    # DescribeConfigs: librdkafka sees every group config, the one set as a group config
    [future] = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    described = future.result(WAIT)
    assert described["consumer.heartbeat.interval.ms"].value == "1000"
    assert described["consumer.heartbeat.interval.ms"].source == 8          # DYNAMIC_GROUP_CONFIG
    assert described["consumer.session.timeout.ms"].value == "6000"         # the broker's (test profile)
    assert {"consumer.session.timeout.ms", "consumer.assignment.interval.ms"} <= set(described)

    # kafka-python's admin client: the same, by ConfigResourceType.GROUP (32)
    kadmin = closing(KafkaAdminClient(bootstrap_servers=c.bootstrap))
    assert kadmin.alter_configs([KConfigResource(ConfigResourceType.GROUP, group, configs={
        "consumer.session.timeout.ms": "7000"})]) == {"group": {group: "OK"}}
    kdescribed = kadmin.describe_configs([KConfigResource(ConfigResourceType.GROUP, group)])["group"][group]
    assert kdescribed["consumer.session.timeout.ms"]["value"] == "7000"
    assert kdescribed["consumer.session.timeout.ms"]["config_source"] == "DYNAMIC_GROUP_CONFIG"
    assert c.gc.call(lambda: c.gc.service.group_coordinator.group_configs.values[group]) == {
        "consumer.heartbeat.interval.ms": 1000, "consumer.session.timeout.ms": 7000}
