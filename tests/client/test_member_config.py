"""ConsumerConfig: Kafka's names and defaults, and clear errors that name the key."""
from __future__ import annotations

import pytest

from groupcoord.client import ConfigError, ConsumerConfig, Member
from groupcoord.client.assignors import CooperativeStickyAssignor, RangeAssignor, StickyAssignor
from groupcoord.client.assignors.base import RebalanceProtocol

from test_member_harness import SimpleCooperative, SimpleRange


def test_kafka_defaults():
    c = ConsumerConfig({"group.id": "g"})
    assert c["session.timeout.ms"] == 45000
    assert c["heartbeat.interval.ms"] == 3000
    assert c["max.poll.interval.ms"] == 300000
    assert c["partition.assignment.strategy"] == ["range", "cooperative-sticky"]
    assert c["enable.auto.commit"] is True and c["auto.commit.interval.ms"] == 5000
    assert c["auto.offset.reset"] == "latest"
    assert c["retry.backoff.ms"] == 100 and c["request.timeout.ms"] == 30000
    assert c["default.api.timeout.ms"] == 60000 and c["max.poll.records"] == 500
    assert c["group.instance.id"] is None
    assert [type(a) for a in c.assignors()] == [RangeAssignor, CooperativeStickyAssignor]


def test_a_consumer_without_a_client_id_names_itself_as_kafkas_does():
    # ConsumerConfig.maybeOverrideClientId: a client id none or "" is consumer-<group>-<n>, numbered in
    # the process, or consumer-<group>-<instance id> for a static member (Java's null group: "null"); the
    # name stays through overrides
    first = ConsumerConfig({"group.id": "billing"})
    n = int(first["client.id"].rsplit("-", 1)[1])
    assert first["client.id"] == f"consumer-billing-{n}"
    assert ConsumerConfig({"group.id": "billing", "client.id": ""})["client.id"] == f"consumer-billing-{n + 1}"
    assert ConsumerConfig({})["client.id"] == f"consumer-null-{n + 2}"
    assert ConsumerConfig({"group.id": "g", "group.instance.id": "i-1"})["client.id"] == "consumer-g-i-1"
    assert ConsumerConfig({"group.id": "g", "client.id": "mine"})["client.id"] == "mine"
    assert first.with_overrides({"session.timeout.ms": 10000})["client.id"] == first["client.id"]


def test_string_values_as_in_a_properties_file():
    c = ConsumerConfig({"group.id": "g", "session.timeout.ms": "10000", "enable.auto.commit": "false",
                        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.StickyAssignor, range",
                        "bootstrap.servers": "a:9092, PLAINTEXT://b:9093", "auto.offset.reset": "EARLIEST"})
    assert c["session.timeout.ms"] == 10000 and c["enable.auto.commit"] is False
    assert c["partition.assignment.strategy"] == ["sticky", "range"]
    assert [type(a) for a in c.assignors()] == [StickyAssignor, RangeAssignor]
    assert c["bootstrap.servers"] == ["a:9092", "b:9093"]
    assert c["auto.offset.reset"] == "earliest"
    assert ConsumerConfig(group_id="g", session_timeout_ms=7000)["session.timeout.ms"] == 7000


@pytest.mark.parametrize("values,key,fragment", [
    ({"group.id": "g", "sesion.timeout.ms": 1}, "sesion.timeout.ms", "did you mean 'session.timeout.ms'"),
    ({"group.id": "g", "max.poll.records": 0}, "max.poll.records", "at least 1"),
    ({"group.id": "g", "session.timeout.ms": "soon"}, "session.timeout.ms", "expects an integer"),
    ({"group.id": "g", "session.timeout.ms": True}, "session.timeout.ms", "expects an integer"),
    ({"group.id": "g", "request.timeout.ms": 2**31}, "request.timeout.ms", "at most"),
    ({"group.id": "g", "enable.auto.commit": "yes"}, "enable.auto.commit", "true or false"),
    ({"group.id": "g", "auto.offset.reset": "smallest"}, "auto.offset.reset", "latest, earliest, none"),
    ({"group.id": "g", "heartbeat.interval.ms": 45000}, "heartbeat.interval.ms", "lower than session.timeout.ms"),
    ({"group.id": "g", "partition.assignment.strategy": "range,nope"}, "partition.assignment.strategy", "'nope'"),
    ({"group.id": "g", "partition.assignment.strategy": []}, "partition.assignment.strategy", "at least one"),
    ({"group.id": "g", "partition.assignment.strategy": "range,range"}, "partition.assignment.strategy", "twice"),
    ({"group.id": "g", "partition.assignment.strategy": [42]}, "partition.assignment.strategy", "42"),
    ({"group.id": "g", "group.instance.id": "has space"}, "group.instance.id", "not a legal"),
    ({"group.instance.id": "i"}, "group.instance.id", "needs group.id"),
    ({"enable.auto.commit": True}, "enable.auto.commit", "group.id"),
    ({"group.id": "g", "group.protocol": "streams"}, "group.protocol", "classic, consumer"),
    # Kafka's ConsumerConfig.checkUnsupportedConfigsPostProcess, with its message
    ({"group.id": "g", "group.protocol": "consumer", "session.timeout.ms": 10000}, "session.timeout.ms",
     "session.timeout.ms cannot be set when group.protocol=CONSUMER"),
    ({"group.id": "g", "group.protocol": "consumer", "heartbeat.interval.ms": "1000",
      "partition.assignment.strategy": "range"}, "partition.assignment.strategy",
     "partition.assignment.strategy, heartbeat.interval.ms cannot be set when group.protocol=CONSUMER"),
    ({"group.id": "g", "group.remote.assignor": "uniform"}, "group.remote.assignor",
     "group.remote.assignor cannot be set when group.protocol=CLASSIC"),
    ({"group.id": "g", "security.protocol": "SSL"}, "security.protocol", "PLAINTEXT"),
    ({"group.id": "g", "isolation.level": "read_committed"}, "isolation.level", "read_uncommitted"),
    ({"group.id": "g", "bootstrap.servers": "localhost"}, "bootstrap.servers", "host:port"),
    ({"group.id": None, "group.instance.id": None, "client.id": None}, "client.id", "None"),
])
def test_bad_config_names_the_key(values, key, fragment):
    with pytest.raises(ConfigError) as info:
        ConsumerConfig(values)
    assert info.value.key == key
    assert fragment in str(info.value) and str(info.value).startswith(key)


def test_consumer_protocol_configs():
    c = ConsumerConfig({"group.id": "g", "group.protocol": "CONSUMER", "group.remote.assignor": "range"})
    assert c["group.protocol"] == "consumer" and c["group.remote.assignor"] == "range"
    assert ConsumerConfig({"group.id": "g", "group.remote.assignor": None})["group.protocol"] == "classic"


def test_no_group_turns_auto_commit_off_as_kafka_does():
    c = ConsumerConfig({})
    assert c["group.id"] is None and c["enable.auto.commit"] is False


def test_rebalance_protocol_is_the_common_one_of_the_assignors():
    def member(assignors):
        return Member({"group.id": "g"}, assignors).protocol
    assert member([RangeAssignor(), CooperativeStickyAssignor()]) == RebalanceProtocol.EAGER   # Kafka's default
    assert member([CooperativeStickyAssignor()]) == RebalanceProtocol.COOPERATIVE
    assert member([SimpleCooperative(), CooperativeStickyAssignor()]) == RebalanceProtocol.COOPERATIVE
    assert member([SimpleRange()]) == RebalanceProtocol.EAGER


def test_assignors_without_a_common_protocol_are_a_config_error():
    class CoopOnly(SimpleCooperative):
        name = "coop-only"
        supported_protocols = (RebalanceProtocol.COOPERATIVE,)
    with pytest.raises(ConfigError) as info:
        Member({"group.id": "g"}, [SimpleRange(), CoopOnly()])
    assert info.value.key == "partition.assignment.strategy"
    with pytest.raises(ConfigError):
        Member({"group.id": "g"}, ["range"])            # names belong in the config, objects here
