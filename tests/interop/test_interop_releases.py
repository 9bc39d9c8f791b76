"""Real clients against each emulated Kafka release (``groupcoord.kafka.version``): confluent-kafka
consumers of the classic protocol and of the consumer protocol (KIP-848) form their groups, commit and
read back offsets at the versions they negotiated within what the release serves; the admin clients
of confluent-kafka and kafka-python describe and alter group configs as the release has them; and a
running consumer group takes a session timeout altered over the wire."""
from __future__ import annotations

import threading

import pytest

from clients import (WAIT, ConfluentDriver, ConfluentMember, all_partitions, coverage_problems, wait_covered,
                     wait_until)
from test_interop_consumer_protocol import ConsumerProtocolMember, consumer_group

from groupcoord.coordinator.handlers import served_versions

pytestmark = pytest.mark.interop

TOPICS = {"alpha": 4, "beta": 3}
PARTITIONS = all_partitions(TOPICS)
#: the group configs each release defines (Kafka's GroupConfig, consumer group ones)
_SHARE_CONFIGS = {"share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
                  "share.auto.offset.reset", "share.isolation.level"}
GROUP_CONFIGS = {"4.3": {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
                         "consumer.assignment.interval.ms", *_SHARE_CONFIGS, "share.delivery.count.limit",
                         "share.partition.max.record.locks", "share.renew.acknowledge.enable",
                         "share.assignment.interval.ms"},
                 "4.2": {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", *_SHARE_CONFIGS},
                 "4.1": {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", *_SHARE_CONFIGS}}


def _versions_seen(c) -> dict[int, set[int]]:
    """Every request's (API key -> versions) as the coordinator receives them, from now on."""
    seen: dict[int, set[int]] = {}
    lock = threading.Lock()

    def record(ctx, body):
        with lock:
            seen.setdefault(ctx.api_key, set()).add(ctx.api_version)
    c.gc.service.before_request.append(record)
    return seen


@pytest.mark.parametrize("release", ["4.3", "4.2", "4.1", "3.9"])
def test_confluent_consumers_and_admin_clients_against_each_release(coord, closing, release):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    c = coord(topics=TOPICS, config={"groupcoord.kafka.version": release})
    seen = _versions_seen(c)
    driver = closing(ConfluentDriver(c.bootstrap))
    topics = sorted(TOPICS)

    classic = [closing(ConfluentMember(f"c{i}", c.bootstrap, "classic-group", topics, "range")).start()
               for i in range(2)]
    wait_covered(c, "classic-group", classic, PARTITIONS)
    groups = {"classic-group": classic}
    if release != "3.9":            # (Kafka 3.9's consumer protocol is an early access, off by default)
        modern = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, "consumer-group", topics, None)).start()
                  for i in range(2)]
        wait_until(lambda: consumer_group(c, "consumer-group") is not None
                   and consumer_group(c, "consumer-group")[0] == "Stable" and not coverage_problems(modern, PARTITIONS),
                   message=lambda: f"consumer-group: {coverage_problems(modern, PARTITIONS)}")
        groups["consumer-group"] = modern

    # every record consumed once per group, each offset committed and read back
    produced = driver.produce([(t, p, f"{t}/{p}/{i}") for t, p in sorted(PARTITIONS) for i in range(2)])
    for group, members in groups.items():
        wait_until(lambda members=members: sum(len(m.consumed()) for m in members) >= len(produced),
                   message=f"{group} consumed")
    for group in groups:
        assert driver.committed(group, sorted(PARTITIONS)) == {tp: 2 for tp in PARTITIONS}, group

    # the clients negotiated versions the release serves, and the ones it changed
    served = served_versions(release)
    for key, versions in seen.items():
        lo, hi = served[key]
        assert all(lo <= v <= hi for v in versions), (key, versions, served[key])

    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    kadmin = closing(KafkaAdminClient(bootstrap_servers=c.bootstrap))
    resource = ConfigResource(ResourceType.GROUP, "consumer-group")
    if release == "3.9":
        [future] = admin.describe_configs([resource]).values()
        with pytest.raises(Exception, match="INVALID_REQUEST|InvalidRequest|nvalid request"):
            future.result(WAIT)
        return
    [future] = admin.describe_configs([resource]).values()
    assert set(future.result(WAIT)) == GROUP_CONFIGS[release]
    assert kadmin.alter_configs([KConfigResource(ConfigResourceType.GROUP, "consumer-group", configs={
        "consumer.heartbeat.interval.ms": "1000"})]) == {"group": {"consumer-group": "OK"}}
    described = kadmin.describe_configs([KConfigResource(ConfigResourceType.GROUP, "consumer-group")])
    entry = described["group"]["consumer-group"]["consumer.heartbeat.interval.ms"]
    assert (entry["value"], entry["config_source"]) == ("1000", "DYNAMIC_GROUP_CONFIG")


@pytest.mark.parametrize("release", ["4.3", "4.1"])
def test_a_running_group_takes_a_session_timeout_altered_over_the_wire(coord, closing, release):
    """A member whose heartbeats stop is fenced after the group's session timeout, the one just set
    with IncrementalAlterConfigs (the test profile's broker value is 6 s)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    c = coord(topics=TOPICS, config={"groupcoord.kafka.version": release})
    group = "session-timeout-group"
    members = [closing(ConsumerProtocolMember(f"m{i}", c.bootstrap, group, sorted(TOPICS), None)).start()
               for i in range(2)]
    wait_until(lambda: not coverage_problems(members, PARTITIONS), message="the group formed")
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    [future] = admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "9000", incremental_operation=AlterConfigOpType.SET)])]).values()
    future.result(WAIT)
    # the coordinator stops hearing m0: its heartbeats are held (a slow broker, as far as it can tell)
    stalled = members[0].member_id()
    c.gc.call(lambda: c.gc.service.faults.add_injected(
        {"api": "ConsumerGroupHeartbeat", "member": stalled, "latency_ms": 60_000, "count": None}, "test"))
    fenced = wait_until(lambda: c.events_of(group, "consumer.member_fenced"), timeout=WAIT,
                        message="m0 fenced")
    assert [(e["member"], e["reason"], e["timeout_ms"]) for e in fenced] == [(stalled, "session_timeout", 9000)]
