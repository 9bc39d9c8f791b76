"""Group configs over the wire (issue 28): IncrementalAlterConfigs and DescribeConfigs for a group
(ConfigResource.Type 32) as Kafka's controller and ConfigHelper answer them, per release, durable
under a data dir; DescribeConfigs of this broker and of a topic."""
from __future__ import annotations

import pytest

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import APIS

DESCRIBE, ALTER = 32, 44
GROUP, BROKER, TOPIC = 32, 4, 2
SET, DELETE, APPEND = 0, 1, 2
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 1, 4, 5, 8


def service(directory=None, **config) -> Service:
    store = st.LogStore(str(directory)) if directory is not None else None
    return Service(BrokerConfig(config, environ={}), clock=lambda: 0, emit=lambda e: None, store=store)


def call(svc: Service, api_key: int, version: int, body: dict) -> dict:
    """Through the codec both ways, as a client would see it."""
    api = APIS[api_key]
    decoded = api.request.decode(api.request.encode(body, version), version)
    out = []
    svc.handle(RequestContext(svc, 0, "test", "/127.0.0.1", api_key, version, 1), decoded, out.append)
    return api.response.decode(api.response.encode(out[0], version), version)


def alter(svc, name: str, *configs, validate_only=False) -> dict:
    [response] = call(svc, ALTER, 1, {"resources": [{"resource_type": GROUP, "resource_name": name, "configs": [
        {"name": n, "config_operation": op, "value": v} for n, op, v in configs]}],
        "validate_only": validate_only})["responses"]
    return response


def describe(svc, kind: int, name: str, keys=None, synonyms=True) -> dict:
    [result] = call(svc, DESCRIBE, 4, {"resources": [{"resource_type": kind, "resource_name": name,
                                                      "configuration_keys": keys}],
                                       "include_synonyms": synonyms, "include_documentation": False})["results"]
    return result


def by_name(result: dict) -> dict:
    return {c["name"]: c for c in result["configs"]}


def test_alter_sets_and_deletes_a_groups_configs_checked_as_kafka_checks_them():
    svc = service()
    assert alter(svc, "g", ("consumer.session.timeout.ms", SET, "50000"))["error_code"] == 0
    assert svc.group_coordinator.group_configs.values == {"g": {"consumer.session.timeout.ms": 50000}}
    refusals = [
        (("consumer.session.timeout.ms", SET, "1000"), E.INVALID_CONFIG,
         "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        (("consumer.heartbeat.interval.ms", SET, "60000"), E.INVALID_CONFIG,
         "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        (("consumer.session.timeout.ms", SET, "abc"), E.INVALID_CONFIG,
         "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"),
        (("session.timeout.ms", SET, "50000"), E.INVALID_CONFIG, "Unknown group config name: session.timeout.ms"),
        (("consumer.session.timeout.ms", SET, None), E.INVALID_REQUEST,
         "Null value not supported for : consumer.session.timeout.ms"),
        (("consumer.session.timeout.ms", APPEND, "1"), E.INVALID_CONFIG,
         "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."),
    ]
    for config, code, message in refusals:
        response = alter(svc, "g", config)
        assert (response["error_code"], response["error_message"]) == (code, message)
    response = call(svc, ALTER, 0, {"resources": [{"resource_type": GROUP, "resource_name": "", "configs": []}],
                                    "validate_only": False})["responses"][0]
    assert (response["error_code"], response["error_message"]) == (E.INVALID_REQUEST,
                                                                   "Default group resources are not allowed.")
    # validate-only changes nothing; DELETE goes back to the broker's value
    assert alter(svc, "g", ("consumer.heartbeat.interval.ms", SET, "6000"), validate_only=True)["error_code"] == 0
    assert svc.group_coordinator.group_configs.values == {"g": {"consumer.session.timeout.ms": 50000}}
    assert alter(svc, "g", ("consumer.session.timeout.ms", DELETE, None))["error_code"] == 0
    assert svc.group_coordinator.group_configs.values == {}
    # another resource type is not alterable here, said so
    response = call(svc, ALTER, 1, {"resources": [{"resource_type": TOPIC, "resource_name": "t", "configs": []}],
                                    "validate_only": False})["responses"][0]
    assert response["error_code"] == E.INVALID_REQUEST and "resource type 2" in response["error_message"]


@pytest.mark.parametrize("release", ["4.3", "4.2"])
def test_describe_a_groups_configs_with_their_sources_as_the_release_gives_them(release):
    # ConfigHelper.createGroupConfigEntry: 4.3 (KAFKA-20289) names the broker synonym and takes its
    # source; 4.1 and 4.2 give DEFAULT_CONFIG under the group config's own name
    svc = service(**{"groupcoord.kafka.version": release, "group.consumer.session.timeout.ms": 50000})
    alter(svc, "g", ("consumer.heartbeat.interval.ms", SET, "6000"))
    configs = by_name(describe(svc, GROUP, "g"))
    expected = {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms",
                "share.heartbeat.interval.ms", "share.record.lock.duration.ms", "share.auto.offset.reset",
                "share.isolation.level"}
    if release == "4.3":
        expected |= {"consumer.assignment.interval.ms", "share.delivery.count.limit",
                     "share.partition.max.record.locks", "share.renew.acknowledge.enable",
                     "share.assignment.interval.ms"}
    assert set(configs) == expected
    hb, session = configs["consumer.heartbeat.interval.ms"], configs["consumer.session.timeout.ms"]
    assert (hb["value"], hb["config_source"], hb["read_only"], hb["config_type"]) == ("6000", GROUP_CONFIG, False, 3)
    assert session["value"] == "50000"
    if release == "4.3":
        assert hb["synonyms"] == [{"name": "consumer.heartbeat.interval.ms", "value": "6000", "source": GROUP_CONFIG},
                                  {"name": "group.consumer.heartbeat.interval.ms", "value": "5000",
                                   "source": DEFAULT_CONFIG}]
        assert (session["config_source"], session["synonyms"]) == (STATIC_BROKER_CONFIG, [
            {"name": "group.consumer.session.timeout.ms", "value": "50000", "source": STATIC_BROKER_CONFIG}])
    else:
        assert hb["synonyms"] == [{"name": "consumer.heartbeat.interval.ms", "value": "6000", "source": GROUP_CONFIG}]
        assert (session["config_source"], session["synonyms"]) == (DEFAULT_CONFIG, [
            {"name": "consumer.session.timeout.ms", "value": "50000", "source": DEFAULT_CONFIG}])
    # a group that set nothing (or does not exist) has the broker's; keys narrow; no synonyms unless asked
    other = describe(svc, GROUP, "nobody", keys=["consumer.heartbeat.interval.ms"], synonyms=False)
    assert [(c["name"], c["value"], c["synonyms"]) for c in other["configs"]] == [
        ("consumer.heartbeat.interval.ms", "5000", [])]
    assert describe(svc, GROUP, "")["error_message"] == "Group name must not be empty"


def test_describe_this_broker_and_a_topic():
    svc = service(**{"group.max.size": 7})
    svc.cluster.create_topic("t", 2, configs={"cleanup.policy": "compact"})
    broker = by_name(describe(svc, BROKER, "0"))
    assert broker["group.max.size"]["value"] == "7" and broker["group.max.size"]["config_source"] == STATIC_BROKER_CONFIG
    assert broker["group.min.session.timeout.ms"]["config_source"] == DEFAULT_CONFIG
    assert broker["auto.create.topics.enable"]["value"] == "true" and broker["group.max.size"]["read_only"]
    assert (describe(svc, BROKER, "")["error_code"], describe(svc, BROKER, "")["configs"]) == (0, [])
    assert describe(svc, BROKER, "3")["error_code"] == E.INVALID_REQUEST
    topic = describe(svc, TOPIC, "t")
    assert [(c["name"], c["value"], c["config_source"]) for c in topic["configs"]] == [
        ("cleanup.policy", "compact", DYNAMIC_TOPIC_CONFIG)]
    assert describe(svc, TOPIC, "nope")["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_configs_v0_says_which_are_defaults():
    # v0 (Kafka 3.9) has IsDefault instead of ConfigSource
    svc = service(**{"groupcoord.kafka.version": "3.9", "group.max.size": 7})
    [result] = call(svc, DESCRIBE, 0, {"resources": [{"resource_type": BROKER, "resource_name": "0",
                                                      "configuration_keys": ["group.max.size", "num.partitions"]}]}
                    )["results"]
    assert sorted((c["name"], c["is_default"]) for c in result["configs"]) == [("group.max.size", False),
                                                                               ("num.partitions", True)]


def test_kafka_3_9_has_no_group_resource_type():
    # ConfigHelper.handleDescribeConfigsRequest fails the whole request on a type it does not know;
    # ConfigAdminManager.preprocess refuses it per resource ("Unknown resource type 32")
    svc = service(**{"groupcoord.kafka.version": "3.9"})
    results = call(svc, DESCRIBE, 4, {"resources": [{"resource_type": GROUP, "resource_name": "g",
                                                     "configuration_keys": None},
                                                    {"resource_type": BROKER, "resource_name": "0",
                                                     "configuration_keys": None}],
                                      "include_synonyms": False, "include_documentation": False})["results"]
    assert [(r["error_code"], r["configs"]) for r in results] == [(E.INVALID_REQUEST, [])] * 2
    response = alter(svc, "g", ("consumer.session.timeout.ms", SET, "50000"))
    assert (response["error_code"], response["error_message"]) == (E.INVALID_REQUEST, "Unknown resource type 32")
    assert svc.group_coordinator.group_configs.values == {}


def test_a_groups_configs_survive_a_restart(tmp_path):
    svc = service(tmp_path)
    assert alter(svc, "g", ("consumer.session.timeout.ms", SET, "50000"),
                 ("consumer.heartbeat.interval.ms", SET, "7000"))["error_code"] == 0
    assert alter(svc, "h", ("consumer.session.timeout.ms", SET, "55000"))["error_code"] == 0
    assert alter(svc, "h", ("consumer.session.timeout.ms", DELETE, None))["error_code"] == 0
    svc.store.close()
    again = service(tmp_path)
    assert again.group_coordinator.group_configs.values == {
        "g": {"consumer.session.timeout.ms": 50000, "consumer.heartbeat.interval.ms": 7000}}
    assert by_name(describe(again, GROUP, "g"))["consumer.heartbeat.interval.ms"]["config_source"] == GROUP_CONFIG
    again.store.close()


def test_list_config_resources_names_groups_with_configs_brokers_and_topics():
    """KafkaApis.handleListConfigResources: v1 per type asked for (every type when none is), v0 only
    client-metrics resources (none here); a type it does not know fails the whole request."""
    svc = service(**{"num.partitions": 1})
    svc.cluster.create_topic("orders", 1)
    assert alter(svc, "billing", ("consumer.session.timeout.ms", SET, "50000"))["error_code"] == 0
    resources = call(svc, 74, 1, {"resource_types": []})
    assert resources["error_code"] == 0
    assert [(r["resource_name"], r["resource_type"]) for r in resources["config_resources"]] == [
        ("billing", GROUP), ("0", 8), ("0", BROKER), ("orders", TOPIC)]
    assert [r["resource_name"] for r in call(svc, 74, 1, {"resource_types": [GROUP]})["config_resources"]] == \
        ["billing"]
    assert call(svc, 74, 1, {"resource_types": [GROUP, 3]}) == {
        "throttle_time_ms": 0, "error_code": E.UNSUPPORTED_VERSION, "config_resources": []}
    assert call(svc, 74, 0, {})["config_resources"] == []
    # a group whose configs are all deleted is no longer listed
    assert alter(svc, "billing", ("consumer.session.timeout.ms", DELETE, None))["error_code"] == 0
    assert call(svc, 74, 1, {"resource_types": [GROUP]})["config_resources"] == []
