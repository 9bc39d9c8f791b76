"""Share groups through the service, each request through the codec both ways as a client sees it:
ShareGroupHeartbeat and ShareGroupDescribe per Kafka release (ShareGroupHeartbeatRequestTest and
ShareGroupDescribeRequestTest: off in 4.1 unless enabled, on from 4.2, absent from 3.9), their API
layer's refusals, the share group configs and broker configs, and a share group kept across a
restart under a data dir (GroupMetadataManagerTest ``testOnLoadedWithShareGroup``,
``testOnLoadedSessionTimeoutExpirationForShareMember``)."""
from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.config import BrokerConfig, ConfigError
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.handlers import served_versions
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import APIS

HEARTBEAT, DESCRIBE, LIST_GROUPS = 76, 77, 16
DESCRIBE_CONFIGS, ALTER_CONFIGS = 32, 44


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def service(directory=None, clock=None, **config) -> Service:
    """A service (Kafka 4.3, share groups on, its target assignments at once as the test profile has
    them)."""
    config.setdefault("group.share.assignment.interval.ms", 0)
    config.setdefault("group.share.enable", True)
    store = st.LogStore(str(directory)) if directory is not None else None
    svc = Service(BrokerConfig(config, environ={}), clock=clock or Clock(), emit=lambda e: None, store=store)
    if store is not None:
        svc.load()
    return svc


def call(svc: Service, api_key: int, body: dict, version: int = 1, client_id: str = "share-client") -> dict:
    api = APIS[api_key]
    decoded = api.request.decode(api.request.encode(body, version), version)
    out = []
    svc.handle(RequestContext(svc, 0, client_id, "/127.0.0.1", api_key, version, 1), decoded, out.append)
    return api.response.decode(api.response.encode(out[0], version), version)


def heartbeat(svc, member_id: str, epoch: int, topics=None, group_id: str = "q") -> dict:
    return call(svc, HEARTBEAT, {"group_id": group_id, "member_id": member_id, "member_epoch": epoch,
                                 "rack_id": None, "subscribed_topic_names": topics})


def describe(svc, *group_ids) -> list[dict]:
    return call(svc, DESCRIBE, {"group_ids": list(group_ids), "include_authorized_operations": False})["groups"]


def settle(svc, member_id: str, topics) -> dict:
    """Join, and heartbeat once more: the member has its partitions."""
    first = heartbeat(svc, member_id, 0, topics)
    assert first["error_code"] == 0, first
    return heartbeat(svc, member_id, first["member_epoch"])


# ============================================================================ per release
def test_the_share_group_apis_per_release():
    # Kafka 3.9 has neither API (v0 was unstable); 4.1 serves v1 of both, as 4.2 and 4.3 do
    for release in ("4.3", "4.2", "4.1"):
        assert (served_versions(release)[HEARTBEAT], served_versions(release)[DESCRIBE]) == ((1, 1), (1, 1))
    assert HEARTBEAT not in served_versions("3.9") and DESCRIBE not in served_versions("3.9")


@pytest.mark.parametrize("release,config,on", [
    ("4.1", {}, False), ("4.1", {"group.share.enable": True}, True), ("4.1", {"share.version": 1}, True),
    ("4.2", {}, True), ("4.2", {"share.version": 0}, False), ("4.2", {"share.version": 0, "group.share.enable": True}, True),
    ("4.3", {}, True), ("4.3", {"share.version": 0}, False), ("4.3", {"share.version": 0, "group.share.enable": True}, False),
])
def test_share_groups_on_and_off(release, config, on):
    # SGHT testShareGroupHeartbeatIsInAccessibleWhenConfigsDisabled / ...IsAccessibleWhenShareGroupIsEnabled,
    # SGDT testShareGroupDescribeIsInAccessibleWhenConfigsDisabled: KafkaApis.isShareGroupProtocolEnabled,
    # share.version 1 (a 4.1 cluster is formatted at 0, 4.2+ at 1) or, in 4.1 and 4.2, group.share.enable
    # (4.3 has no such config)
    svc = service(**{"groupcoord.kafka.version": release, "group.share.enable": False, **config})
    svc.create_topic("foo", 2)
    resp = heartbeat(svc, "m1", 0, ["foo"])
    [entry] = describe(svc, "q")
    if on:
        assert (resp["error_code"], resp["member_epoch"]) == (0, 2 if release == "4.3" else 1)
        assert (entry["error_code"], entry["group_state"]) == (0, "Stable")
    else:
        assert (resp["error_code"], resp["error_message"], resp["member_id"]) == (E.UNSUPPORTED_VERSION, None, None)
        assert (entry["error_code"], entry["group_id"]) == (E.UNSUPPORTED_VERSION, "q")


def test_member_ids_kafka_4_2_refuses():
    # KafkaApis.isMemberIdValid (Kafka 4.2+): empty or over 36 characters, INVALID_REQUEST without a
    # message; 4.1 takes a long one and refuses an empty one in the coordinator's words
    long_id = "m" * 37
    new = service(**{"groupcoord.kafka.version": "4.2"})
    old = service(**{"groupcoord.kafka.version": "4.1", "group.share.enable": True})
    for svc in (new, old):
        svc.create_topic("foo", 1)
    assert (heartbeat(new, long_id, 0, ["foo"])["error_code"], heartbeat(new, "", 0, ["foo"])["error_message"]) == (
        E.INVALID_REQUEST, None)
    assert heartbeat(old, long_id, 0, ["foo"])["error_code"] == 0
    assert heartbeat(old, "", 0, ["foo"])["error_message"] == "MemberId can't be empty."
    resp = heartbeat(new, "m", 0, [])
    assert (resp["error_code"], resp["error_message"]) == (E.INVALID_REQUEST,
                                                           "SubscribedTopicNames must be set in first request.")


def test_describe_entries():
    # ShareGroupDescribeRequestTest testShareGroupDescribe; GroupCoordinatorService.shareGroupDescribe's
    # INVALID_GROUP_ID for an empty id; GroupMetadataManager.shareGroupDescribe's GROUP_ID_NOT_FOUND
    svc = service()
    svc.create_topic("foo", 2)
    member = settle(svc, "m1", ["foo"])
    call(svc, 68, {"group_id": "cg", "member_id": "c1", "member_epoch": 0, "instance_id": None, "rack_id": None,
                   "rebalance_timeout_ms": 5000, "subscribed_topic_names": ["foo"], "subscribed_topic_regex": None,
                   "server_assignor": None, "topic_partitions": []})
    q, empty, cg, nobody = describe(svc, "q", "", "cg", "nobody")
    assert (q["group_state"], q["group_epoch"], q["assignment_epoch"], q["assignor_name"]) == (
        "Stable", member["member_epoch"], member["member_epoch"], "simple")
    [m] = q["members"]
    assert (m["member_id"], m["client_id"], m["client_host"], m["member_epoch"], m["subscribed_topic_names"]) == (
        "m1", "share-client", "/127.0.0.1", member["member_epoch"], ["foo"])
    assert [(tp["topic_name"], tp["partitions"]) for tp in m["assignment"]["topic_partitions"]] == [("foo", [0, 1])]
    assert (empty["error_code"], empty["group_id"]) == (E.INVALID_GROUP_ID, "")
    assert (cg["error_code"], cg["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group cg is not a share group.")
    assert (nobody["error_code"], nobody["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group nobody not found.")


def test_list_groups_shows_share_groups():
    # ListGroups v5: GroupType "share", ProtocolType "share"; TypesFilter selects them
    svc = service()
    svc.create_topic("foo", 1)
    settle(svc, "m1", ["foo"])
    listed = call(svc, LIST_GROUPS, {"states_filter": [], "types_filter": ["share"]}, version=5)
    assert listed["groups"] == [{"group_id": "q", "protocol_type": "share", "group_state": "Stable",
                                 "group_type": "share"}]


# ============================================================================ configs
def test_share_group_configs_over_the_wire():
    # GroupConfig: the share group configs of each release, their types, Kafka's refusals in its words
    svc = service()

    def alter(*configs) -> dict:
        [response] = call(svc, ALTER_CONFIGS, {"resources": [{"resource_type": 32, "resource_name": "q", "configs": [
            {"name": n, "config_operation": 0, "value": v} for n, v in configs]}], "validate_only": False})["responses"]
        return response
    assert alter(("share.auto.offset.reset", "earliest"), ("share.isolation.level", "read_committed"),
                 ("share.renew.acknowledge.enable", "false"), ("share.record.lock.duration.ms", "20000"))["error_code"] == 0
    assert svc.group_coordinator.group_configs.values["q"] == {
        "share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed",
        "share.renew.acknowledge.enable": False, "share.record.lock.duration.ms": 20000}
    assert alter(("share.auto.offset.reset", "by_duration:PT1H30M"))["error_code"] == 0
    refusals = [
        (("share.auto.offset.reset", "none"), "Invalid value none for configuration share.auto.offset.reset: Invalid "
         "value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or "
         "of the format 'by_duration:<PnDTnHnMn.nS>'."),
        (("share.auto.offset.reset", "by_duration:-PT1H"), None),
        (("share.isolation.level", "dirty"), "Invalid value dirty for configuration share.isolation.level: String "
         "must be one of: read_committed, read_uncommitted"),
        (("share.renew.acknowledge.enable", "yes"), "Invalid value yes for configuration "
         "share.renew.acknowledge.enable: Expected value to be either true or false"),
        (("share.record.lock.duration.ms", "5000"), "share.record.lock.duration.ms must be greater than or equal to "
         "group.share.min.record.lock.duration.ms"),
        (("share.delivery.count.limit", "11"), "share.delivery.count.limit must be less than or equal to "
         "group.share.max.delivery.count.limit"),
        (("share.heartbeat.interval.ms", "50000"), "share.heartbeat.interval.ms must be less than or equal to "
         "group.share.max.heartbeat.interval.ms"),
    ]
    for config, message in refusals:
        response = alter(config)
        assert response["error_code"] == E.INVALID_CONFIG, config
        assert message is None or response["error_message"] == message
    assert alter(("share.session.timeout.ms", "45000"), ("share.heartbeat.interval.ms", "5000"))["error_code"] == 0
    [result] = call(svc, DESCRIBE_CONFIGS, {"resources": [{"resource_type": 32, "resource_name": "q",
                                                           "configuration_keys": None}],
                                            "include_synonyms": False, "include_documentation": False}, 4)["results"]
    types = {c["name"]: (c["value"], c["config_type"]) for c in result["configs"] if c["name"].startswith("share.")}
    assert types == {"share.session.timeout.ms": ("45000", 3), "share.heartbeat.interval.ms": ("5000", 3),
                     "share.record.lock.duration.ms": ("20000", 3), "share.delivery.count.limit": ("5", 3),
                     "share.partition.max.record.locks": ("2000", 3),
                     "share.auto.offset.reset": ("by_duration:PT1H30M", 2),
                     "share.isolation.level": ("read_committed", 2), "share.renew.acknowledge.enable": ("false", 1),
                     "share.assignment.interval.ms": ("0", 3)}       # (the broker's, as service() sets it)
    old = service(**{"groupcoord.kafka.version": "4.1"})
    assert {n for n in old.group_coordinator.group_configs.defined if n.startswith("share.")} == {
        "share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
        "share.auto.offset.reset", "share.isolation.level"}


@pytest.mark.parametrize("values,message", [
    ({"group.share.max.size": 1001}, "Invalid value 1001 for configuration group.share.max.size: Value must be no "
                                     "more than 1000"),
    ({"group.share.record.lock.duration.ms": 999}, "Invalid value 999 for configuration "
                                                   "group.share.record.lock.duration.ms: Value must be at least 1000"),
    ({"group.share.heartbeat.interval.ms": 20000}, "group.share.heartbeat.interval.ms must be less than or equal "
                                                   "to group.share.max.heartbeat.interval.ms"),
    ({"group.share.min.session.timeout.ms": 1000, "group.share.session.timeout.ms": 5000},
     "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"),
    ({"group.share.record.lock.duration.ms": 70000}, "group.share.max.record.lock.duration.ms must be greater than "
                                                     "or equal to group.share.record.lock.duration.ms"),
    ({"group.share.max.share.sessions": 100}, "group.share.max.share.sessions must be greater than or equal to "
                                              "group.share.max.size"),
    ({"group.share.assignors": "simple,simple"}, "group.share.assignors must contain exactly one assignor, but "
                                                 "found 2"),
    ({"group.share.partition.max.record.locks": 5000}, "group.share.max.partition.max.record.locks must be greater "
                                                       "than or equal to group.share.partition.max.record.locks"),
])
def test_broker_configs_are_checked_as_kafka_checks_them(values, message):
    # ConfigDef's ranges, GroupCoordinatorConfig's and ShareGroupConfig.validate's requirements
    with pytest.raises(ConfigError) as e:
        BrokerConfig(values, environ={})
    assert str(e.value) == message
    # (4.2 has no group.share.max.partition.max.record.locks: 5000 is within 100..10000 there)
    BrokerConfig({"groupcoord.kafka.version": "4.2", "group.share.partition.max.record.locks": 5000}, environ={})


@pytest.mark.parametrize("release,warnings", [
    ("4.1", []),
    ("4.2", ["'share' in group.coordinator.rebalance.protocols is deprecated. Share groups are controlled by the "
             "'share.version' feature; this broker config will be ignored in a future release."]),
    ("4.3", ["'share' in `group.coordinator.rebalance.protocols` is deprecated. Share groups are controlled by the "
             "'share.version' feature. This config will be removed in Kafka 5.0.",
             "The config `group.coordinator.rebalance.protocols` is deprecated and will be removed in Kafka 5.0. "
             "The following protocol(s) are currently disabled: streams. In Kafka 5.0, all protocols will always be "
             "enabled and controlled solely by feature versions (group.version, streams.version, share.version) via "
             "kafka-features.sh. Please remove the configuration, which will restore all protocols to the default "
             "enabled state, to prepare for the upgrade."]),
])
def test_share_in_the_rebalance_protocols_changes_nothing_but_a_warning(release, warnings):
    # KafkaConfig.groupCoordinatorRebalanceProtocols: 'share' is taken (it enabled share groups in 4.0
    # only); Kafka 4.2 and 4.3 warn that it is deprecated
    with capture_logs() as logs:
        svc = service(**{"groupcoord.kafka.version": release, "group.share.enable": False, "share.version": 0,
                         "group.coordinator.rebalance.protocols": "classic,consumer,share"})
    assert [e["message"] for e in logs if e["event"] == "config_deprecated"] == warnings
    assert not svc.group_coordinator.share_groups_enabled


# ============================================================================ durability
def test_a_share_group_is_kept_across_a_restart(tmp_path):
    # GMMT testOnLoadedWithShareGroup: members, epochs, targets, assignments and the initialized
    # partitions come back from the log; testOnLoadedSessionTimeoutExpirationForShareMember: the loaded
    # members' sessions start at the load and expire without heartbeats
    clock = Clock()
    svc = service(tmp_path, clock)
    svc.create_topic("foo", 4)
    settle(svc, "m1", ["foo"])
    a = settle(svc, "m2", ["foo"])
    heartbeat(svc, "m1", a["member_epoch"] - 1)
    call(svc, ALTER_CONFIGS, {"resources": [{"resource_type": 32, "resource_name": "q", "configs": [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}], "validate_only": False})
    before = describe(svc, "q")[0]
    group = svc.group_coordinator.get("q")
    initialized = group.initialized_partitions()
    svc.store.close()

    clock.now += 10_000
    again = service(tmp_path, clock)
    restored = again.group_coordinator.get("q")
    assert describe(again, "q")[0] == before
    assert (restored.type, restored.state, restored.initialized_partitions()) == ("share", "Stable", initialized)
    assert again.group_coordinator.group_configs.values["q"] == {"share.auto.offset.reset": "earliest"}
    clock.now += 45_000 - 1
    again.advance()
    assert set(restored.members) == {"m1", "m2"}
    m2 = restored.members["m2"]
    assert heartbeat(again, "m2", m2.member_epoch)["error_code"] == 0       # a member goes on heartbeating
    clock.now += 1
    again.advance()
    assert list(restored.members) == ["m2"]                 # m1 was not heard of since the load
    again.store.close()

    third = service(tmp_path, clock)                        # the fencing was written too
    assert list(third.group_coordinator.get("q").members) == ["m2"]
    assert heartbeat(third, "m2", -1)["member_epoch"] == -1
    assert call(third, 42, {"groups_names": ["q"]}, version=2)["results"] == [{"group_id": "q", "error_code": 0}]
    third.store.close()
    assert service(tmp_path, clock).group_coordinator.get("q") is None      # the tombstones were kept
