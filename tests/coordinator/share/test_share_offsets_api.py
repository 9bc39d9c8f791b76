"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92) through
the service, in virtual time, every request and response through the codec both ways as a client sees
them: the versions per Kafka release, the API layer (KafkaApis.handleDescribeShareGroupOffsetsRequest,
handleAlterShareGroupOffsetsRequest, handleDeleteShareGroupOffsetsRequest: share groups off,
authorization, the topics it answers itself), the coordinator (GroupCoordinatorService,
GroupCoordinatorShard, GroupMetadataManager) and the share-partition states behind them (the share
coordinator's summary, initialize and delete), with share consumers fetching and acknowledging.

Each test names the Kafka test it mirrors: KAT = KafkaApisTest, GCST = GroupCoordinatorServiceTest,
GCShT = GroupCoordinatorShardTest, GMMT = GroupMetadataManagerTest, PAIT = PlaintextAdminIntegrationTest,
SCT = ShareConsumerTest (Kafka 4.3 unless said); where no test covers a behaviour, the Kafka code it
follows."""
from __future__ import annotations

import base64
import uuid

import pytest
from test_share_fetch_api import ACCEPT, SHARE_GROUP_HEARTBEAT, Clock, World, acquired, member_uuid, ok

from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.handlers import served_versions
from groupcoord.coordinator.security import Acl
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import APIS

DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
ZERO = uuid.UUID(int=0)
#: Kafka's Errors messages (Errors.java, 4.3)
KAFKA = {
    E.UNSUPPORTED_VERSION: "The version of API is not supported.",
    E.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    E.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    E.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    E.NOT_COORDINATOR: "This is not the correct coordinator.",
    E.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    E.INVALID_GROUP_ID: "The group id is invalid.",
    E.NON_EMPTY_GROUP: "The group is not empty.",
    E.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    E.FENCED_STATE_EPOCH: "The share coordinator rejected the request because the share-group state epoch did "
                          "not match.",
}
NO_OFFSET_INFORMATION = "There is no offset information to delete."
#: member ids as the Java client makes them (Kafka 4.1's share-partition leader parses them as Uuids)
M1, M2 = member_uuid(1), member_uuid(2)


# ============================================================================ helpers
def request(svc: Service, api_key: int, body: dict, version: int, *, node: int | None = None,
            principal: str = "User:ANONYMOUS") -> dict:
    """One request through the codec both ways, at ``node`` (default: the coordinator of the group the
    body names), answered at once."""
    if node is None:
        group = body.get("group_id") if "group_id" in body else body["groups"][0]["group_id"]
        node = svc.cluster.coordinator_for(group)
    api = APIS[api_key]
    decoded = api.request.decode(api.request.encode(body, version), version)
    out = []
    svc.handle(RequestContext(svc, node, "admin", "/127.0.0.1", api_key, version, 7, 42, principal), decoded, out.append)
    assert len(out) == 1, "not answered at once"
    return api.response.decode(api.response.encode(out[0], version), version)


def describe(svc, *groups, version: int = 1, **kw) -> list[dict]:
    """DescribeShareGroupOffsets of (group id, topics: {name: [partitions]} or None) pairs."""
    body = {"groups": [{"group_id": g, "topics": None if topics is None else
                        [{"topic_name": name, "partitions": list(ps)} for name, ps in topics.items()]}
                       for g, topics in groups]}
    return request(svc, DESCRIBE_OFFSETS, body, version, **kw)["groups"]


def offsets(group: dict) -> dict:
    """A described group's partitions: (topic, partition) -> (start offset, leader epoch, lag or None in v0)."""
    assert group["error_code"] == 0, group
    return {(t["topic_name"], p["partition_index"]): (p["start_offset"], p["leader_epoch"], p.get("lag"))
            for t in group["topics"] for p in t["partitions"]}


def alter(svc, group_id: str, topics: dict, **kw) -> dict:
    """AlterShareGroupOffsets of {topic: {partition: start offset}}."""
    body = {"group_id": group_id, "topics": [
        {"topic_name": name, "partitions": [{"partition_index": p, "start_offset": o} for p, o in ps.items()]}
        for name, ps in topics.items()]}
    return request(svc, ALTER_OFFSETS, body, 0, **kw)


def altered(resp: dict) -> dict:
    """An AlterShareGroupOffsets answer's partitions: (topic, partition) -> (error code, message)."""
    return {(t["topic_name"], p["partition_index"]): (p["error_code"], p["error_message"])
            for t in resp["responses"] for p in t["partitions"]}


def delete(svc, group_id: str, *names, **kw) -> dict:
    return request(svc, DELETE_OFFSETS, {"group_id": group_id, "topics": [{"topic_name": n} for n in names]}, 0, **kw)


def deleted(resp: dict) -> list[tuple]:
    """A DeleteShareGroupOffsets answer's topics in order: (name, topic id, error code, message)."""
    return [(t["topic_name"], t["topic_id"], t["error_code"], t["error_message"]) for t in resp["responses"]]


def top(resp: dict) -> tuple:
    return resp["error_code"], resp["error_message"], resp["responses"]


def leave(w: World, member: str, group: str = "q") -> None:
    """ShareGroupHeartbeat with epoch -1."""
    node = w.svc.cluster.coordinator_for(group)
    resp = w.connection(node, conn=0).call(SHARE_GROUP_HEARTBEAT, {
        "group_id": group, "member_id": member, "member_epoch": -1, "rack_id": None,
        "subscribed_topic_names": None}, 1)
    assert resp["error_code"] == 0, resp


def consumed(w: World, member: str = M1, count: int = 10) -> None:
    """``count`` records produced, fetched by ``member`` and accepted (its session at epoch 2 after)."""
    w.produce(count)
    assert acquired(ok(w.fetch(member, 0, max_records=count))) == [(0, count - 1, 1)]
    ok(w.acknowledge(member, 1, {0: [(0, count - 1, ACCEPT)]}))


def emptied(release: str = "4.3", count: int = 10, **config) -> World:
    """A group q of one member that consumed ``count`` records of foo and left: Empty, its state kept."""
    if release == "4.1":
        config.setdefault("group.share.enable", True)
    w = World(release=release, members=(M1,), **config)
    consumed(w, M1, count)
    leave(w, M1)
    return w


def share_group(svc: Service, group_id: str):
    return svc.group_coordinator.share.group(group_id)


# ============================================================================ versions, share groups off
def test_the_offsets_apis_per_release():
    # the schemas: DescribeShareGroupOffsets v0 in 4.1, v0-1 from 4.2 (KIP-1226's Lag); Alter and Delete v0;
    # Kafka 3.9 has none of them
    for release, describe_versions in (("4.1", (0, 0)), ("4.2", (0, 1)), ("4.3", (0, 1))):
        served = served_versions(release)
        assert (served[DESCRIBE_OFFSETS], served[ALTER_OFFSETS], served[DELETE_OFFSETS]) == (
            describe_versions, (0, 0), (0, 0))
    assert not {DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS} & set(served_versions("3.9"))


@pytest.mark.parametrize("release,config", [("4.1", {}), ("4.3", {"share.version": 0})])
def test_share_groups_off_is_unsupported_version(release, config):
    # KAT testDescribeShareGroupOffsetsReturnsUnsupportedVersion, testAlterShareGroupOffsetsReturnsUnsupportedVersion,
    # testDeleteShareGroupOffsetsReturnsUnsupportedVersion: Describe answers each group (no message), Alter and
    # Delete at the top level with getErrorResponse's message
    svc = Service(BrokerConfig({"groupcoord.kafka.version": release, **config}, environ={}), clock=Clock(),
                  emit=lambda e: None)
    svc.create_topic("foo", 1)
    groups = describe(svc, ("g", None), ("h", {"foo": [0]}), version=0)
    assert [(g["group_id"], g["error_code"], g["error_message"], g["topics"]) for g in groups] == [
        ("g", E.UNSUPPORTED_VERSION, None, []), ("h", E.UNSUPPORTED_VERSION, None, [])]
    assert top(alter(svc, "g", {"foo": {0: 5}})) == (E.UNSUPPORTED_VERSION, KAFKA[E.UNSUPPORTED_VERSION], [])
    assert top(delete(svc, "g", "foo")) == (E.UNSUPPORTED_VERSION, KAFKA[E.UNSUPPORTED_VERSION], [])


# ============================================================================ DescribeShareGroupOffsets
@pytest.mark.parametrize("release", ["4.3", "4.2"])
def test_describe_start_offset_and_lag(release):
    # GCST testDescribeShareGroupOffsetsWithDefaultPersister, SCT testSharePartitionLagWithReleaseAcknowledgement /
    # testSharePartitionLagOnGroupCoordinatorMovement: the share coordinator's start offset and leader epoch, and
    # (v1) lag = end offset - start offset - delivery complete count
    w = World(release=release, members=(M1,))
    w.produce(10)
    assert acquired(ok(w.fetch(M1, 0))) == [(0, 9, 1)]
    ok(w.acknowledge(M1, 1, {0: [(0, 4, ACCEPT), (7, 9, ACCEPT)]}))
    kept = w.svc.share_partitions.states.read(("q", w.topic_id, 0))
    expected_lag = 10 - kept.start_offset - kept.delivery_complete_count
    assert expected_lag == 2            # 5 and 6 are still acquired: not done
    [group] = describe(w.svc, ("q", {"foo": [0]}))
    assert offsets(group) == {("foo", 0): (kept.start_offset, 0, 2)}
    assert group["topics"][0]["topic_id"] == w.topic_id
    # v0: no Lag
    [group] = describe(w.svc, ("q", {"foo": [0]}), version=0)
    assert offsets(group) == {("foo", 0): (kept.start_offset, 0, None)}
    # accepting the rest: lag 0; a new record: lag 1
    ok(w.acknowledge(M1, 2, {0: [(5, 6, ACCEPT)]}))
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0])[("foo", 0)][2] == 0
    w.produce(1)
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0])[("foo", 0)][2] == 1


def test_describe_on_kafka_4_1_is_v0_with_the_unknown_topics_first():
    # Kafka 4.1's GroupCoordinatorService.describeShareGroupOffsets: no lag (v0 only), and the topics the metadata
    # does not know ahead of the share coordinator's answer (4.2+ puts them after)
    w = World(release="4.1", members=(M1,), **{"group.share.enable": True})
    consumed(w)
    [group] = describe(w.svc, ("q", {"nope": [3], "foo": [0]}), version=0)
    assert [(t["topic_name"], t["topic_id"]) for t in group["topics"]] == [("nope", ZERO), ("foo", w.topic_id)]
    assert offsets(group) == {("nope", 3): (-1, 0, None), ("foo", 0): (0, 0, None)}
    new = World(release="4.3", members=(M1,))
    [group] = describe(new.svc, ("q", {"nope": [3], "foo": [0]}))
    assert [t["topic_name"] for t in group["topics"]] == ["foo", "nope"]


def test_describe_all_offsets_lists_the_initialized_partitions():
    # KAT testDescribeShareGroupAllOffsetsRequestSuccess, GCST testDescribeShareGroupAllOffsets, SCT
    # testDescribeShareGroupOffsetsForEmptySharePartition: Topics null -> every initialized share-partition; one
    # no leader has loaded has start offset -1 (and lag -1); a group without any (unknown, another type) has none
    w = World(2, release="4.3", members=(M1,))
    consumed(w)                                           # partition 0 used, partition 1 never fetched
    [group] = describe(w.svc, ("q", None))
    assert offsets(group) == {("foo", 0): (0, 0, 0), ("foo", 1): (-1, 0, -1)}
    [nobody] = describe(w.svc, ("nobody", None))
    assert (nobody["error_code"], nobody["topics"]) == (0, [])


def test_describe_named_topics_read_the_share_coordinator_whatever_the_group():
    # GCST testDescribeShareGroupOffsetsNonexistentTopicWithDefaultPersister, KAT
    # testDescribeShareGroupOffsetsRequestEmptyTopicsSuccess / ...EmptyGroupsSuccess: a topic the metadata does not
    # know -> TopicId zero, start offset -1, no error; a partition beyond the topic or never initialized -> -1 and
    # leader epoch 0 (the share coordinator's defaults); no group check; Topics empty -> the group without topics
    w = World(1, release="4.3", members=(M1,))
    consumed(w)
    [q, nobody, empty] = describe(w.svc, ("q", {"foo": [0, 5], "nope": [1, 2]}), ("nobody", {"foo": [0]}),
                                  ("q", {}))
    assert offsets(q) == {("foo", 0): (0, 0, 0), ("foo", 5): (-1, 0, -1), ("nope", 1): (-1, 0, -1),
                          ("nope", 2): (-1, 0, -1)}
    assert [(t["topic_name"], t["topic_id"]) for t in q["topics"]] == [("foo", w.topic_id), ("nope", ZERO)]
    assert offsets(nobody) == {("foo", 0): (-1, 0, -1)}
    assert (empty["group_id"], empty["error_code"], empty["topics"]) == ("q", 0, [])
    assert request(w.svc, DESCRIBE_OFFSETS, {"groups": []}, 1, node=0) == {"throttle_time_ms": 0, "groups": []}


def test_describe_a_read_the_persister_refuses_fails_the_group():
    # GCST testDescribeShareGroupOffsetsWithDefaultPersisterThrowsError: DefaultStatePersister.readSummary refuses
    # a topic without partitions, a negative partition or an empty group id (IllegalArgumentException) ->
    # UNKNOWN_SERVER_ERROR with Kafka's message for the group
    w = World(1, release="4.3", members=(M1,))
    for group_id, topics in (("q", {"foo": []}), ("q", {"foo": [-1]}), ("", {"foo": [0]})):
        [group] = describe(w.svc, (group_id, topics))
        assert (group["group_id"], group["error_code"], group["error_message"], group["topics"]) == (
            group_id, E.UNKNOWN_SERVER_ERROR, KAFKA[E.UNKNOWN_SERVER_ERROR], [])
    # (a topic the metadata does not know is not read: no refusal)
    [group] = describe(w.svc, ("", {"nope": []}))
    assert group["error_code"] == 0 and group["topics"] == [{"topic_name": "nope", "topic_id": ZERO, "partitions": []}]


def test_describe_all_offsets_needs_the_coordinator_named_topics_do_not():
    # GroupCoordinatorService.describeShareGroupAllOffsets reads the group's coordinator (scheduleReadOperation:
    # NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, with Kafka's message); describeShareGroupOffsets reads the
    # share coordinator only, on any broker
    w = World(1, release="4.3", nodes=3, members=(M1,))
    consumed(w)
    home = w.svc.cluster.coordinator_for("q")
    other = (home + 1) % 3
    [group] = describe(w.svc, ("q", None), node=other)
    assert (group["error_code"], group["error_message"], group["topics"]) == (
        E.NOT_COORDINATOR, KAFKA[E.NOT_COORDINATOR], [])
    assert offsets(describe(w.svc, ("q", {"foo": [0]}), node=other)[0]) == {("foo", 0): (0, 0, 0)}
    coordinator = w.svc.group_coordinator
    coordinator.begin_loading(coordinator.partition_of("q"))
    [group] = describe(w.svc, ("q", None))
    assert (group["error_code"], group["error_message"]) == (E.COORDINATOR_LOAD_IN_PROGRESS,
                                                             KAFKA[E.COORDINATOR_LOAD_IN_PROGRESS])


# ============================================================================ authorization
ALICE = "User:alice"


def authorized_service(*acls) -> Service:
    """Kafka 4.3 with ACLs (User:admin a super user), topics a (2 partitions) and b (1), share group g whose
    admin member consumed nothing but has both topics' partitions initialized, then left."""
    svc = Service(BrokerConfig({"groupcoord.acls.enabled": True, "super.users": "User:admin",
                                "group.share.assignment.interval.ms": 0}, environ={}), clock=Clock(),
                  emit=lambda e: None)
    svc.security.authorizer.add(Acl.from_dict({"principal": p, "resource_type": t, "resource_name": n,
                                               "operation": op, "permission_type": "ALLOW", "host": "*",
                                               "pattern_type": "LITERAL"}) for p, t, n, op in acls)
    svc.create_topic("a", 2)
    svc.create_topic("b", 1)

    def heartbeat(epoch, topics):
        resp = request(svc, SHARE_GROUP_HEARTBEAT, {"group_id": "g", "member_id": "m", "member_epoch": epoch,
                                                    "rack_id": None, "subscribed_topic_names": topics}, 1,
                       principal="User:admin")
        assert resp["error_code"] == 0, resp
        return resp
    heartbeat(heartbeat(0, ["a", "b"])["member_epoch"], None)
    heartbeat(-1, None)
    return svc


def test_describe_needs_describe_on_the_group_and_hides_or_fails_topics():
    # KAT testDescribeShareGroupOffsetsRequestGroupAuthorizationFailed, testDescribeShareGroupAllOffsetsRequest-
    # GroupAuthorizationFailed: GROUP_AUTHORIZATION_FAILED without a message; testDescribeShareGroupOffsetsRequest-
    # TopicAuthorizationFailed: named topics not DESCRIBE-authorized follow the others with TopicId zero, start
    # offset -1 and TOPIC_AUTHORIZATION_FAILED; testDescribeShareGroupAllOffsetsRequestTopicAuthorizationFailed: in
    # the all-topics form they are left out
    svc = authorized_service((ALICE, "GROUP", "g", "DESCRIBE"), (ALICE, "TOPIC", "a", "DESCRIBE"))
    [h, h_all] = describe(svc, ("h", {"a": [0]}), ("h", None), principal=ALICE)
    assert [(x["error_code"], x["error_message"], x["topics"]) for x in (h, h_all)] == [
        (E.GROUP_AUTHORIZATION_FAILED, None, [])] * 2
    [named] = describe(svc, ("g", {"b": [0], "a": [0, 1]}), principal=ALICE)
    assert [(t["topic_name"], t["topic_id"]) for t in named["topics"]] == [("a", svc.topic_id("a")), ("b", ZERO)]
    [b] = [t for t in named["topics"] if t["topic_name"] == "b"]
    assert b["partitions"] == [{"partition_index": 0, "start_offset": -1, "leader_epoch": 0, "lag": -1,
                                "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                                "error_message": KAFKA[E.TOPIC_AUTHORIZATION_FAILED]}]
    [every] = describe(svc, ("g", None), principal=ALICE)
    assert offsets(every) == {("a", 0): (-1, 0, -1), ("a", 1): (-1, 0, -1)}
    assert set(offsets(describe(svc, ("g", None), principal="User:admin")[0])) == {("a", 0), ("a", 1), ("b", 0)}


def test_alter_needs_read_on_the_group_and_its_topics():
    # KAT testAlterShareGroupOffsetsAuthorizationFailed: no READ on the group -> top-level GROUP_AUTHORIZATION_FAILED;
    # a topic without READ -> TOPIC_AUTHORIZATION_FAILED on its partitions (TopicId the metadata's), an unknown one ->
    # UNKNOWN_TOPIC_OR_PARTITION (TopicId zero), both ahead of the coordinator's topics
    svc = authorized_service((ALICE, "GROUP", "g", "READ"), (ALICE, "TOPIC", "a", "READ"),
                             (ALICE, "TOPIC", "zoo", "READ"))
    assert top(alter(svc, "h", {"a": {0: 0}}, principal=ALICE)) == (
        E.GROUP_AUTHORIZATION_FAILED, KAFKA[E.GROUP_AUTHORIZATION_FAILED], [])
    resp = alter(svc, "g", {"a": {0: 0, 1: 0}, "b": {0: 0}, "zoo": {0: 0}}, principal=ALICE)
    assert resp["error_code"] == 0
    assert [(t["topic_name"], t["topic_id"]) for t in resp["responses"]] == [
        ("b", svc.topic_id("b")), ("zoo", ZERO), ("a", svc.topic_id("a"))]
    assert altered(resp) == {
        ("b", 0): (E.TOPIC_AUTHORIZATION_FAILED, KAFKA[E.TOPIC_AUTHORIZATION_FAILED]),
        ("zoo", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION]),
        ("a", 0): (0, None), ("a", 1): (0, None)}
    assert offsets(describe(svc, ("g", {"a": [0, 1], "b": [0]}), principal="User:admin")[0]) == {
        ("a", 0): (0, 0, 0), ("a", 1): (0, 0, 0), ("b", 0): (-1, 0, -1)}


def test_delete_needs_delete_on_the_group_and_read_on_its_topics():
    # KAT testDeleteShareGroupOffsetsRequestsGroupAuthorizationFailed: top-level GROUP_AUTHORIZATION_FAILED;
    # testDeleteShareGroupOffsetsRequestsTopicAuthorizationFailed: a topic without READ -> TOPIC_AUTHORIZATION_FAILED
    # (TopicId zero, Kafka's message) ahead of the coordinator's answer
    svc = authorized_service((ALICE, "GROUP", "g", "DELETE"), (ALICE, "TOPIC", "b", "READ"))
    assert top(delete(svc, "h", "a", principal=ALICE)) == (
        E.GROUP_AUTHORIZATION_FAILED, KAFKA[E.GROUP_AUTHORIZATION_FAILED], [])
    resp = delete(svc, "g", "a", "b", principal=ALICE)
    assert resp["error_code"] == 0
    assert deleted(resp) == [("a", ZERO, E.TOPIC_AUTHORIZATION_FAILED, KAFKA[E.TOPIC_AUTHORIZATION_FAILED]),
                             ("b", svc.topic_id("b"), 0, None)]
    group = share_group(svc, "g")
    assert set(group.initialized) == {svc.topic_id("a")} and not group.deleting


# ============================================================================ AlterShareGroupOffsets
def test_alter_an_empty_group_then_consume_from_the_new_start_offset():
    # SCT testSharePartitionLagAfterAlterShareGroupOffsets: 105 records consumed (lag 0), the consumer closed, the
    # start offset altered to 40 -> start offset 40, lag 65 (Kafka 4.3 initializes the delivery complete count
    # at 0); the next consumer gets 40 onwards. GMM.alterShareGroupOffsets: the state initialized at the group epoch
    w = emptied("4.3", count=105)
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0]) == {("foo", 0): (0, 0, 0)}
    group = share_group(w.svc, "q")
    resp = alter(w.svc, "q", {"foo": {0: 40}})
    assert top(resp)[:2] == (0, None)
    assert resp["responses"] == [{"topic_name": "foo", "topic_id": w.topic_id,
                                  "partitions": [{"partition_index": 0, "error_code": 0, "error_message": None}]}]
    kept = w.svc.share_partitions.states.read(("q", w.topic_id, 0))
    assert (kept.start_offset, kept.state_epoch, kept.delivery_complete_count, kept.state_batches) == (
        40, group.group_epoch, 0, ())
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0]) == {("foo", 0): (40, 0, 65)}
    assert (group.initialized[w.topic_id].partitions, group.initializing) == (frozenset({0}), {})
    w.join(M2)
    assert acquired(ok(w.fetch(M2, 0, conn=2, max_records=500))) == [(40, 104, 1)]


def test_alter_on_kafka_4_2_leaves_the_lag_unknown():
    # Kafka 4.2's ShareGroupOffset.fromRequest: delivery complete count -1 after an alter, so no lag (until the
    # share-partition's leader writes)
    w = emptied("4.2", count=10)
    assert top(alter(w.svc, "q", {"foo": {0: 4}}))[0] == 0
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0]) == {("foo", 0): (4, 0, -1)}


def test_alter_drops_the_share_partition_a_leader_holds():
    # the leader must not go on serving the old state: the altered key's loaded SharePartition is dropped (Kafka:
    # the group's share-partitions go when it has no share session left, SharePartitionManager.onGroupEmpty);
    # the next fetch loads the new state
    w = World(release="4.3", members=(M1,))
    w.produce(10)
    assert acquired(ok(w.fetch(M1, 0))) == [(0, 9, 1)]       # 0-9 held by m1, whose session stays open
    leave(w, M1)
    key = ("q", w.topic_id, 0)
    assert key in w.svc.share_partitions.share_partitions()
    assert top(alter(w.svc, "q", {"foo": {0: 6}}))[0] == 0
    assert key not in w.svc.share_partitions.share_partitions()
    w.join(M2)
    assert acquired(ok(w.fetch(M2, 0, conn=2))) == [(6, 9, 1)]


def test_alter_a_group_in_use_or_of_another_type():
    # PAIT testAlterShareGroupOffsets: a group with members -> NON_EMPTY_GROUP; GMM.getOrMaybeCreateShareGroup:
    # another type's group -> GROUP_ID_NOT_FOUND "Group cg is not a share group."; GCST
    # testAlterShareGroupOffsetsInvalidGroupId: an empty id -> INVALID_GROUP_ID; all top-level with their messages
    w = World(release="4.3", members=(M1,))
    assert top(alter(w.svc, "q", {"foo": {0: 0}})) == (E.NON_EMPTY_GROUP, KAFKA[E.NON_EMPTY_GROUP], [])
    resp = request(w.svc, 68, {"group_id": "cg", "member_id": "c1", "member_epoch": 0, "instance_id": None,
                               "rack_id": None, "rebalance_timeout_ms": 5000, "subscribed_topic_names": ["foo"],
                               "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}, 1)
    assert resp["error_code"] == 0
    assert top(alter(w.svc, "cg", {"foo": {0: 0}})) == (E.GROUP_ID_NOT_FOUND, "Group cg is not a share group.", [])
    assert top(alter(w.svc, "", {"foo": {0: 0}})) == (E.INVALID_GROUP_ID, KAFKA[E.INVALID_GROUP_ID], [])


def test_alter_creates_the_group():
    # PAIT testAlterShareGroupOffsets ("non-existent group"): the group is made (GMM.getOrMaybeCreateShareGroup,
    # kept by its state metadata record's replay), tp1 altered, an unknown topic UNKNOWN_TOPIC_OR_PARTITION;
    # a partition beyond the topic's count UNKNOWN_TOPIC_OR_PARTITION too (GMM.alterShareGroupOffsets)
    w = World(2, release="4.3", members=())
    resp = alter(w.svc, "fresh", {"foo": {0: 0, 1: 7, 2: 3}, "bar": {0: 0}})
    assert altered(resp) == {("bar", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION]),
                             ("foo", 0): (0, None), ("foo", 1): (0, None),
                             ("foo", 2): (E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION])}
    group = share_group(w.svc, "fresh")
    assert (group.state, group.group_epoch, set(group.initialized_partitions()[w.topic_id])) == ("Empty", 1, {0, 1})
    assert offsets(describe(w.svc, ("fresh", None))[0]) == {("foo", 0): (0, 0, 0), ("foo", 1): (7, 0, -7)}
    # no topic the coordinator knows: nothing written, no group
    assert altered(alter(w.svc, "ghost", {"bar": {0: 0}})) == {
        ("bar", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION])}
    assert w.svc.group_coordinator.get("ghost") is None


def test_alter_a_negative_partition():
    # Kafka 4.2+: GMM.alterShareGroupOffsets lets index < partitionCount through, DefaultStatePersister refuses it
    # (IllegalArgumentException) -> persisterInitialize's buildErrorResponse -> a top-level UNKNOWN_SERVER_ERROR with
    # the persister's message; Kafka 4.1 (existingPartitions.contains) -> UNKNOWN_TOPIC_OR_PARTITION
    w = emptied("4.3")
    kafka_uuid = base64.urlsafe_b64encode(w.topic_id.bytes).decode().rstrip("=")      # (Uuid.toString)
    assert top(alter(w.svc, "q", {"foo": {-1: 0}})) == (
        E.UNKNOWN_SERVER_ERROR, f"Initialize share group parameters has invalid partitionId - q {kafka_uuid} -1", [])
    old = emptied("4.1")
    resp = alter(old.svc, "q", {"foo": {-1: 0, 0: 3}})
    assert top(resp)[:2] == (0, None)
    assert altered(resp) == {("foo", -1): (E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION]),
                             ("foo", 0): (0, None)}
    assert offsets(describe(old.svc, ("q", {"foo": [0]}), version=0)[0]) == {("foo", 0): (3, 0, None)}


def test_alter_a_fenced_state_epoch():
    # GCST testPersisterInitializeForAlterShareGroupOffsetsResponseFailure analog: the share coordinator holds a
    # newer state epoch (Kafka: FENCED_STATE_EPOCH per partition) -> the partition answers it (4.2+), and the
    # partitions written as initializing stay so (persisterInitialize does not call initializeShareGroupState)
    w = emptied("4.3")
    states = w.svc.share_partitions.states
    assert states.initialize("q", 99, {w.topic_id: [0]}) == 0         # (a newer state epoch than the group's)
    resp = alter(w.svc, "q", {"foo": {0: 2}})
    assert top(resp)[:2] == (0, None)
    assert altered(resp) == {("foo", 0): (E.FENCED_STATE_EPOCH, KAFKA[E.FENCED_STATE_EPOCH])}
    group = share_group(w.svc, "q")
    assert group.initializing[w.topic_id].partitions == frozenset({0})
    assert states.read(("q", w.topic_id, 0)).state_epoch == 99


def test_alter_at_another_coordinator_or_while_loading():
    # the coordinator runtime's NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS (handleOperationException), top-level
    w = World(release="4.3", nodes=3, members=())
    other = (w.svc.cluster.coordinator_for("q") + 1) % 3
    assert top(alter(w.svc, "q", {"foo": {0: 0}}, node=other)) == (E.NOT_COORDINATOR, KAFKA[E.NOT_COORDINATOR], [])
    assert top(delete(w.svc, "q", "foo", node=other)) == (E.NOT_COORDINATOR, KAFKA[E.NOT_COORDINATOR], [])
    coordinator = w.svc.group_coordinator
    coordinator.begin_loading(coordinator.partition_of("q"))
    for resp in (alter(w.svc, "q", {"foo": {0: 0}}), delete(w.svc, "q", "foo")):
        assert top(resp) == (E.COORDINATOR_LOAD_IN_PROGRESS, KAFKA[E.COORDINATOR_LOAD_IN_PROGRESS], [])


def test_kafka_4_1_alter_drops_the_coordinators_errors():
    # Kafka 4.1's KafkaApis.handleAlterShareGroupOffsetsRequest merges only the coordinator's topics
    # (AlterShareGroupOffsetsResponse.Builder.merge): a group not found (4.1 does not create it) or not empty
    # answers NONE without them; GroupCoordinatorService (4.1) answers empty Topics at once
    w = World(release="4.1", members=(M1,), **{"group.share.enable": True})
    for group_id in ("nobody", "q"):
        assert top(alter(w.svc, group_id, {"foo": {0: 0}, "bar": {0: 0}})) == (0, None, [
            {"topic_name": "bar", "topic_id": ZERO, "partitions": [
                {"partition_index": 0, "error_code": E.UNKNOWN_TOPIC_OR_PARTITION,
                 "error_message": KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION]}]}])
    assert share_group(w.svc, "nobody") is None
    leave(w, M1)
    assert altered(alter(w.svc, "q", {"foo": {0: 2}})) == {("foo", 0): (0, None)}
    assert offsets(describe(w.svc, ("q", {"foo": [0]}), version=0)[0]) == {("foo", 0): (2, 0, None)}
    # only partitions beyond the topic: Kafka 4.1 asks the persister for nothing, which it refuses: every
    # partition UNKNOWN_SERVER_ERROR
    assert altered(alter(w.svc, "q", {"foo": {3: 2}})) == {
        ("foo", 3): (E.UNKNOWN_SERVER_ERROR, KAFKA[E.UNKNOWN_SERVER_ERROR])}


def test_a_group_alter_made_survives_a_restart(tmp_path):
    # GMM.replay of ShareGroupStatePartitionMetadata (getOrMaybeCreatePersistedShareGroup): the group an alter made
    # has no group epoch record, and comes back at load with its initialized partitions
    clock = Clock()
    w = World(release="4.3", members=(), directory=tmp_path, clock=clock)
    w.produce(10)
    assert altered(alter(w.svc, "fresh", {"foo": {0: 3}})) == {("foo", 0): (0, None)}
    w.svc.store.close()
    again = World(release="4.3", members=(), directory=tmp_path, clock=clock)
    group = share_group(again.svc, "fresh")
    assert group is not None and (group.state, group.group_epoch) == ("Empty", 1)
    assert offsets(describe(again.svc, ("fresh", None))[0]) == {("foo", 0): (3, 0, 7)}


# ============================================================================ DeleteShareGroupOffsets
def test_delete_offsets_of_a_group():
    # PAIT testDeleteShareGroupOffsets: in use -> NON_EMPTY_GROUP; an unknown group -> GROUP_ID_NOT_FOUND; once empty,
    # the topic's offsets go (listShareGroupOffsets then has no offset for it) and an unknown topic is
    # UNKNOWN_TOPIC_OR_PARTITION; GCShT testInitiateDeleteShareGroupOffsetsGroupNotFound / ...NonEmptyShareGroup
    w = World(release="4.3", members=(M1,))
    consumed(w)
    assert top(delete(w.svc, "q", "foo", "bar")) == (E.NON_EMPTY_GROUP, KAFKA[E.NON_EMPTY_GROUP], [])
    assert top(delete(w.svc, "fake", "foo", "bar")) == (E.GROUP_ID_NOT_FOUND, "Group fake not found.", [])
    leave(w, M1)
    key = ("q", w.topic_id, 0)
    assert key in w.svc.share_partitions.share_partitions()
    resp = delete(w.svc, "q", "foo", "bar")
    assert top(resp)[:2] == (0, None)
    assert deleted(resp) == [("foo", w.topic_id, 0, None),
                             ("bar", ZERO, E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION])]
    assert w.svc.share_partitions.states.read(key) is None
    assert key not in w.svc.share_partitions.share_partitions()
    group = share_group(w.svc, "q")
    assert (group.initialized, group.deleting) == ({}, set())
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0]) == {("foo", 0): (-1, 0, -1)}
    assert describe(w.svc, ("q", None))[0]["topics"] == []


def test_deleted_offsets_start_over_from_the_auto_offset_reset():
    # SCT testSharePartitionLagAfterDeleteShareGroupOffsets: after the delete the next consumer's heartbeat
    # initializes the partition again and share.auto.offset.reset (earliest) applies: the 5 records come again
    w = emptied("4.3", count=5)
    assert deleted(delete(w.svc, "q", "foo")) == [("foo", w.topic_id, 0, None)]
    w.join(M2)
    assert acquired(ok(w.fetch(M2, 0, conn=2))) == [(0, 4, 1)]
    ok(w.acknowledge(M2, 1, {0: [(0, 4, ACCEPT)]}, conn=2))
    assert offsets(describe(w.svc, ("q", {"foo": [0]}))[0])[("foo", 0)][2] == 0


def test_delete_topics_without_initialized_state():
    # GMMT testSharePartitionsEligibleForOffsetDeletionUninitializedTopics / ...UninitializedAndErrorTopics /
    # ...ErrorTopics: a known topic that is initializing or not in the group's state metadata ->
    # UNKNOWN_TOPIC_OR_PARTITION "There is no offset information to delete."; an unknown one -> Kafka's message;
    # both after the deleted ones
    w = World(release="4.3", members=(M1,))
    w.svc.create_topic("other", 1)
    w.svc.create_topic("slow", 2)
    group = share_group(w.svc, "q")
    leave(w, M1)
    # (slow as initializing, as a heartbeat leaves it until the share coordinator answers)
    from groupcoord.coordinator.group.share import records
    from groupcoord.coordinator.group.share.group import InitMapValue
    manager = w.svc.group_coordinator.share
    slow = w.svc.topic_id("slow")
    manager._emit(*records.state_partitions_record("q", {slow: InitMapValue("slow", frozenset({0, 1}), 0)},
                                                   dict(group.initialized), {}))
    manager._flush()
    resp = delete(w.svc, "q", "slow", "other", "nope", "foo")
    assert deleted(resp) == [
        ("foo", w.topic_id, 0, None),
        ("slow", ZERO, E.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSET_INFORMATION),
        ("other", ZERO, E.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSET_INFORMATION),
        ("nope", ZERO, E.UNKNOWN_TOPIC_OR_PARTITION, KAFKA[E.UNKNOWN_TOPIC_OR_PARTITION])]
    assert (set(group.initializing), group.initialized, group.deleting) == ({slow}, {}, set())


def test_delete_a_topic_left_deleting():
    # GMMT testSharePartitionsEligibleForOffsetDeletionContainsDeletingTopics: a topic still deleting (a deletion
    # that did not complete) is deleted again, every partition of it
    w = emptied("4.3")
    group = share_group(w.svc, "q")
    manager = w.svc.group_coordinator.share
    from groupcoord.coordinator.group.share import records
    manager._emit(*records.state_partitions_record("q", {}, {}, {w.topic_id: "foo"}))
    manager._flush()
    assert w.svc.share_partitions.states.read(("q", w.topic_id, 0)) is not None
    assert deleted(delete(w.svc, "q", "foo")) == [("foo", w.topic_id, 0, None)]
    assert w.svc.share_partitions.states.read(("q", w.topic_id, 0)) is None
    assert group.deleting == set()


def test_delete_in_a_group_without_state_metadata_answers_no_topic():
    # GMM.sharePartitionsEligibleForOffsetDeletion: no ShareGroupStatePartitionMetadata for the group -> nothing to
    # delete and no error for any topic (GCShT testInitiateDeleteShareGroupOffsetsEmptyResult); a group of another
    # type -> GROUP_ID_NOT_FOUND "Group cg is not a share group."; an empty id -> INVALID_GROUP_ID (GCST
    # testDeleteShareGroupOffsetsInvalidGroupId)
    w = World(release="4.3", members=())
    ok_join = request(w.svc, SHARE_GROUP_HEARTBEAT, {"group_id": "idle", "member_id": "m", "member_epoch": 0,
                                                     "rack_id": None, "subscribed_topic_names": ["nope"]}, 1)
    assert ok_join["error_code"] == 0
    request(w.svc, SHARE_GROUP_HEARTBEAT, {"group_id": "idle", "member_id": "m", "member_epoch": -1,
                                           "rack_id": None, "subscribed_topic_names": None}, 1)
    assert not share_group(w.svc, "idle").state_metadata
    assert top(delete(w.svc, "idle", "foo", "nope")) == (0, None, [])
    request(w.svc, 68, {"group_id": "cg", "member_id": "c1", "member_epoch": 0, "instance_id": None, "rack_id": None,
                        "rebalance_timeout_ms": 5000, "subscribed_topic_names": ["foo"], "subscribed_topic_regex": None,
                        "server_assignor": None, "topic_partitions": []}, 1)
    assert top(delete(w.svc, "cg", "foo")) == (E.GROUP_ID_NOT_FOUND, "Group cg is not a share group.", [])
    assert top(delete(w.svc, "", "foo")) == (E.INVALID_GROUP_ID, KAFKA[E.INVALID_GROUP_ID], [])


@pytest.mark.parametrize("release", ["4.3", "4.1"])
def test_delete_with_every_topic_refused(release):
    # KAT testDeleteShareGroupOffsetsRequestEmptyTopicsSuccess: Kafka 4.2+ asks the coordinator even with no topic
    # left (an unknown group: GROUP_ID_NOT_FOUND); Kafka 4.1's KafkaApis answers at once with the refused topics
    config = {"groupcoord.acls.enabled": True, "super.users": "User:admin", "group.share.enable": True,
              "groupcoord.kafka.version": release}
    svc = Service(BrokerConfig(config, environ={}), clock=Clock(), emit=lambda e: None)
    svc.security.authorizer.add([Acl.from_dict({"principal": ALICE, "resource_type": "GROUP", "resource_name": "nobody",
                                                "operation": "DELETE", "permission_type": "ALLOW", "host": "*",
                                                "pattern_type": "LITERAL"})])
    svc.create_topic("a", 1)
    resp = delete(svc, "nobody", "a", principal=ALICE)
    if release == "4.1":
        assert top(resp) == (0, None, [{"topic_name": "a", "topic_id": ZERO, "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                                        "error_message": KAFKA[E.TOPIC_AUTHORIZATION_FAILED]}])
    else:
        assert top(resp) == (E.GROUP_ID_NOT_FOUND, "Group nobody not found.", [])


# ============================================================================ the wire
def test_the_messages_as_kafka_encodes_them():
    # DescribeShareGroupOffsetsRequest v0/v1 (flexible: compact strings and arrays, a tag buffer after each struct):
    # Topics null is a compact array length of 0; the response's Lag is in v1 only, between LeaderEpoch and ErrorCode
    api = APIS[DESCRIBE_OFFSETS]
    body = {"groups": [{"group_id": "g", "topics": None},
                       {"group_id": "h", "topics": [{"topic_name": "t", "partitions": [0, 1]}]}]}
    wire = bytes.fromhex("03" "02" "67" "00" "00" "02" "68" "02" "02" "74" "03" "00000000" "00000001" "00" "00" "00")
    for version in (0, 1):
        assert api.request.encode(body, version) == wire
        assert api.request.decode(wire, version) == body
    partition = {"partition_index": 2, "start_offset": 40, "leader_epoch": 0, "lag": 65, "error_code": 0,
                 "error_message": None}
    response = {"throttle_time_ms": 0, "groups": [{"group_id": "g", "topics": [
        {"topic_name": "t", "topic_id": ZERO, "partitions": [partition]}], "error_code": 0, "error_message": None}]}
    head = "00000000" "02" "02" "67" "02" "02" "74" + "00" * 16 + "02" "00000002" "0000000000000028" "00000000"
    tail = "0000" "00" "00" "00" "0000" "00" "00" "00"
    assert api.response.encode(response, 0) == bytes.fromhex(head + tail)
    assert api.response.encode(response, 1) == bytes.fromhex(head + "0000000000000041" + tail)
    # AlterShareGroupOffsetsRequest v0 and DeleteShareGroupOffsetsRequest v0
    alter_body = {"group_id": "g", "topics": [{"topic_name": "t", "partitions": [
        {"partition_index": 1, "start_offset": 40}]}]}
    assert APIS[ALTER_OFFSETS].request.encode(alter_body, 0) == bytes.fromhex(
        "02" "67" "02" "02" "74" "02" "00000001" "0000000000000028" "00" "00" "00")
    assert APIS[DELETE_OFFSETS].request.encode({"group_id": "g", "topics": [{"topic_name": "t"}]}, 0) == bytes.fromhex(
        "02" "67" "02" "02" "74" "00" "00")
