"""BrokerConfig's check of group.consumer.assignors, and the server assignors' names it knows."""
from __future__ import annotations

import re

import pytest

from groupcoord.coordinator import config
from groupcoord.coordinator.config import BrokerConfig, ConfigError
from groupcoord.coordinator.group.assignors import ASSIGNORS


def test_the_config_knows_the_server_assignors_by_their_names():
    assert config.SERVER_ASSIGNOR_NAMES == tuple(ASSIGNORS)
    assert set(config.ASSIGNOR_CLASS_NAMES.values()) == set(ASSIGNORS)


def test_assignors_by_short_or_class_name():
    cfg = BrokerConfig({"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform"})
    assert config.assignor_names(cfg["group.consumer.assignors"]) == ["range", "uniform"]


@pytest.mark.parametrize("value, shown", [("uniform,fastest", "['fastest']"), (" , ", "(none given)")])
def test_unknown_or_no_assignors_are_refused(value, shown):
    with pytest.raises(ConfigError, match=re.escape(f"unknown assignor(s) {shown}; known: uniform, range")):
        BrokerConfig({"group.consumer.assignors": value})


# ---- every config typed and range-checked as Kafka's ConfigDef does (issue 29, item 1)
@pytest.mark.parametrize("key,value,message", [
    ("offsets.topic.num.partitions", "0", "Invalid value 0 for configuration offsets.topic.num.partitions: "
                                          "Value must be at least 1"),
    ("num.partitions", "-1", "Invalid value -1 for configuration num.partitions: Value must be at least 1"),
    ("group.max.size", "0", "Invalid value 0 for configuration group.max.size: Value must be at least 1"),
    ("offsets.retention.minutes", "0", "Invalid value 0 for configuration offsets.retention.minutes: "
                                       "Value must be at least 1"),
    ("socket.request.max.bytes", "0", "Invalid value 0 for configuration socket.request.max.bytes: "
                                      "Value must be at least 1"),
    ("max.connections", "-1", "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    ("group.consumer.regex.refresh.interval.ms", "5000", "Invalid value 5000 for configuration "
                                                         "group.consumer.regex.refresh.interval.ms: Value must be at least 10000"),
    ("group.max.size", "abc", "Invalid value abc for configuration group.max.size: Not a number of type INT"),
    ("group.max.size", "2147483648", "Invalid value 2147483648 for configuration group.max.size: "
                                     "Not a number of type INT"),
    ("offsets.retention.check.interval.ms", "1e3", "Invalid value 1e3 for configuration "
                                                   "offsets.retention.check.interval.ms: Not a number of type LONG"),
    ("auto.create.topics.enable", "yes", "Invalid value yes for configuration auto.create.topics.enable: "
                                         "Expected value to be either true or false"),
    ("groupcoord.kafka.version", "5.0", "Invalid value 5.0 for configuration groupcoord.kafka.version: "
                                        "String must be one of: 4.3, 4.2, 4.1, 3.9"),
    ("group.consumer.migration.policy", "sideways", "Invalid value sideways for configuration "
                                                    "group.consumer.migration.policy: String must be one of (case "
                                                    "insensitive): disabled, upgrade, downgrade, bidirectional"),
    ("group.consumer.session.timeout.ms", "1000", "group.consumer.session.timeout.ms must be greater than or equal to "
                                                  "group.consumer.min.session.timeout.ms"),
    ("group.consumer.max.heartbeat.interval.ms", "4000", "group.consumer.max.heartbeat.interval.ms must be greater "
                                                         "than or equal to group.consumer.min.heartbeat.interval.ms"),
])
def test_a_value_kafka_would_refuse_is_refused_in_its_words(key, value, message):
    with pytest.raises(ConfigError) as refused:
        BrokerConfig({key: value}, environ={})
    assert str(refused.value) == message
    # from the environment and a properties file alike
    with pytest.raises(ConfigError, match=re.escape(message)):
        BrokerConfig(environ={"GROUPCOORD_" + key.upper().replace(".", "_"): value})


def test_values_kafka_takes_are_taken():
    cfg = BrokerConfig({"group.consumer.migration.policy": "UPGRADE", "connections.max.idle.ms": "99999999999",
                        "auto.create.topics.enable": "FALSE", "offsets.retention.check.interval.ms": 2**40,
                        # no validator in Kafka (GroupCoordinatorConfig): a negative delay is no delay
                        "group.initial.rebalance.delay.ms": "-5"}, environ={})
    assert (cfg["group.consumer.migration.policy"], cfg["connections.max.idle.ms"], cfg["auto.create.topics.enable"],
            cfg["group.initial.rebalance.delay.ms"]) == ("upgrade", 99999999999, False, -5)


def test_serve_refuses_to_start_with_one_line(capsys):
    from groupcoord.cli import main
    assert main(["serve", "--port", "0", "--set", "offsets.topic.num.partitions=0"]) == 2
    err = capsys.readouterr().err
    assert err == ("groupcoord: Invalid value 0 for configuration offsets.topic.num.partitions: "
                   "Value must be at least 1\n")


def test_a_negative_initial_rebalance_delay_is_no_delay():
    # Kafka takes it (no validator); its InitialDelayedJoin then completes at once, as with 0
    from group_harness import Harness
    h = Harness(group_initial_rebalance_delay_ms=-5)
    call = h.join_new()
    h.advance(0)
    assert call.done and call.result["generation_id"] == 1 and h.state() == "CompletingRebalance"


def test_the_assignment_interval_is_checked_only_where_the_release_has_it():
    # KIP-1263's configs are Kafka 4.3's: a 4.1 broker does not know them
    refused = "group.consumer.assignment.interval.ms must be greater than or equal to " \
              "group.consumer.min.assignment.interval.ms"
    with pytest.raises(ConfigError, match=re.escape(refused)):
        BrokerConfig({"group.consumer.min.assignment.interval.ms": 5000}, environ={})
    cfg = BrokerConfig({"group.consumer.min.assignment.interval.ms": 5000, "groupcoord.kafka.version": "4.1"},
                       environ={})
    assert cfg["group.consumer.min.assignment.interval.ms"] == 5000
