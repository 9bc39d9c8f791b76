"""Share groups (KIP-932) in the core, in virtual time: ShareGroupHeartbeat step by step, after Kafka's
GroupMetadataManagerTest (GMMT), GroupCoordinatorServiceTest (GCST) and ShareGroupHeartbeatRequestTest
(SGHT), each test naming the case it mirrors; the records each step writes, and what the other
group APIs answer for a share group."""
from __future__ import annotations

import pytest

from group_harness import Call
from share_harness import GROUP, ShareHarness, assigned, state_topics, tid

from groupcoord.coordinator.group.consumer.requests import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.group.share.records import metadata_hash
from groupcoord.coordinator.group.share.requests import ShareGroupHeartbeatRequest
from groupcoord.protocol.errors import ErrorCode as E

NEW_GROUP_EPOCH = {"4.3": 2, "4.2": 1, "4.1": 1}       # a new group's first member (KAFKA-20268: 4.3)


def names(records) -> list[tuple]:
    return [(name, member, value is None) for name, member, value in records]


# ============================================================================ validation
@pytest.mark.parametrize("request_kw,message", [
    (dict(member_id=""), "MemberId can't be empty."),
    (dict(member_id="  "), "MemberId can't be empty."),
    (dict(group_id=""), "GroupId can't be empty."),
    (dict(group_id="\t"), "GroupId can't be empty."),
    (dict(rack_id=""), "RackId can't be empty."),
    (dict(subscribed_topic_names=None), "SubscribedTopicNames must be set in first request."),
    (dict(subscribed_topic_names=[]), "SubscribedTopicNames must be set in first request."),
    (dict(member_epoch=-2), "MemberEpoch is invalid."),
])
def test_heartbeat_request_validation(request_kw, message):
    # GCST testShareGroupHeartbeatRequestValidation
    base = dict(group_id=GROUP, member_id="m", member_epoch=0, subscribed_topic_names=["foo"])
    base.update(request_kw)
    assert ShareGroupHeartbeatRequest(**base).error() == (E.INVALID_REQUEST, message)
    assert ShareGroupHeartbeatRequest(GROUP, "m", 5).error() is None        # (later heartbeats: names optional)


def test_unknown_group():
    # GMMT testShareGroupUnknownGroupId
    h = ShareHarness()
    resp = h.hb("m", 100, ["foo", "bar"])
    assert (resp["error_code"], resp["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Share group fooup not found.")
    assert h.group() is None and h.new_records() == []


def test_unknown_member_with_an_epoch_is_refused():
    # GMMT testShareGroupUnknownMemberIdJoins
    h = ShareHarness(topics={"foo": 1, "bar": 1})
    assert h.hb("m1", 0, ["foo", "bar"])["member_epoch"] == 2
    resp = h.hb("m2", 1, ["foo", "bar"])
    assert (resp["error_code"], resp["error_message"]) == (E.UNKNOWN_MEMBER_ID,
                                                           "Member m2 is not a member of group fooup.")


# ============================================================================ joining
@pytest.mark.parametrize("release", ["4.3", "4.2", "4.1"])
def test_a_member_joins_an_empty_group(release):
    # GMMT testShareGroupMemberJoinsEmptyGroupWithAssignments: the heartbeat's records in Kafka's order,
    # the share-partition states initialized at the new group epoch; Kafka's mock assignor hands out
    # every partition at once, its SimpleAssignor only initialized ones: the partitions come at the
    # member's next heartbeat (SGHT testShareGroupHeartbeatIsAccessibleWhenShareGroupIsEnabled)
    h = ShareHarness(release)
    epoch = NEW_GROUP_EPOCH[release]
    resp = h.hb("m1", 0, ["foo", "bar"])
    assert (resp["error_code"], resp["member_id"], resp["member_epoch"], resp["heartbeat_interval_ms"]) == (
        0, "m1", epoch, 5000)
    assert assigned(resp) == {}                      # an empty assignment, not a null one
    records = h.new_records()
    assert names(records) == [
        ("ShareGroupMemberMetadata", "m1", False), ("ShareGroupMetadata", None, False),
        ("ShareGroupTargetAssignmentMember", "m1", False), ("ShareGroupTargetAssignmentMetadata", None, False),
        ("ShareGroupCurrentMemberAssignment", "m1", False), ("ShareGroupStatePartitionMetadata", None, False),
        # (the second operation: the share coordinator answered, the partitions are initialized)
        ("ShareGroupStatePartitionMetadata", None, False)]
    member, group_epoch, _, target_epoch, current, initializing, initialized = (v for _, _, v in records)
    assert member == {"rack_id": None, "client_id": "client", "client_host": "/127.0.0.1",
                      "subscribed_topic_names": ["bar", "foo"]}
    assert group_epoch["epoch"] == epoch and target_epoch["assignment_epoch"] == epoch
    assert current == {"member_epoch": epoch, "previous_member_epoch": 0, "state": 0, "assigned_partitions": []}
    assert (state_topics(initializing["initializing_topics"]), initializing["initialized_topics"]) == (
        {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}, [])
    assert (initialized["initializing_topics"], state_topics(initialized["initialized_topics"])) == (
        [], {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]})
    assert h.persister.initialized == [(GROUP, epoch, {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]})]

    # its next heartbeat: the initialized partitions are not in the target: a new epoch, every partition
    resp = h.hb("m1", epoch)
    assert resp["member_epoch"] == epoch + 1
    assert assigned(resp) == {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}
    assert h.hb("m1", epoch + 1)["assignment"] is None      # nothing new: no assignment sent
    assert h.events_of("share.group_epoch_bumped")[-1]["reason"] == "assignment_pending"


def test_a_new_member_is_refused_when_the_group_is_full():
    # GMMT testShareGroupNewMemberIsRejectedWithMaximumMembersIsReached, SGHT testShareGroupMaxSizeConfigExceeded
    h = ShareHarness(group_share_max_size=2)
    h.share_join("m1")
    h.share_join("m2")
    resp = h.hb("m3", 0, ["foo"])
    assert (resp["error_code"], resp["error_message"]) == (
        E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of 2 members.")
    epoch = h.group().members["m1"].member_epoch
    assert h.hb("m1", epoch)["error_code"] == 0           # the members keep heartbeating


def test_a_member_rejoins_with_epoch_zero():
    # GMMT testShareGroupMemberCanRejoinWithEpochZero, SGHT testFencedMemberCanRejoinWithEpochZero
    h = ShareHarness(topics={"foo": 3})
    resp = h.share_join("m1")
    epoch = resp["member_epoch"]
    h.new_records()
    resp = h.hb("m1", 0, ["foo"])
    assert (resp["error_code"], resp["member_epoch"], assigned(resp)) == (0, epoch, {"foo": [0, 1, 2]})
    assert h.new_records() == [] and h.group().group_epoch == epoch        # nothing changed, nothing written


def test_before_4_2_a_rejoin_at_epoch_zero_is_a_smaller_epoch():
    # KAFKA-19233's share half is Kafka 4.2's: 4.1's throwIfShareGroupMemberEpochIsInvalid fences a member
    # that moved past epoch 0 unless 0 is its previous epoch
    h = ShareHarness(release="4.1", topics={"foo": 3}, group_share_enable=True)
    first = h.hb("m1", 0, ["foo"])["member_epoch"]
    epoch = h.hb("m1", first)["member_epoch"]
    assert epoch == first + 1 and h.group().members["m1"].previous_member_epoch == first
    resp = h.hb("m1", 0, ["foo"])
    assert (resp["error_code"], resp["error_message"]) == (E.FENCED_MEMBER_EPOCH, (
        f"The share group member has a smaller member epoch (0) than the one known by the group coordinator "
        f"({epoch}), and it does not match the previous member epoch ({first}). The member must abandon all its "
        "partitions and rejoin."))


def test_member_epochs_are_checked():
    # GroupMetadataManager.throwIfShareGroupMemberEpochIsInvalid, in its words: a greater epoch is fenced,
    # a smaller one only when it is not the previous one (a lost response)
    h = ShareHarness(topics={"foo": 3})
    first = h.hb("m1", 0, ["foo"])["member_epoch"]
    epoch = h.hb("m1", first)["member_epoch"]
    assert epoch == first + 1
    resp = h.hb("m1", epoch + 1)
    assert (resp["error_code"], resp["error_message"]) == (E.FENCED_MEMBER_EPOCH, (
        f"The share group member has a greater member epoch ({epoch + 1}) than the one known by the group "
        f"coordinator ({epoch}). The member must abandon all its partitions and rejoin."))
    assert h.hb("m1", first)["error_code"] == 0              # the previous epoch: its response was lost
    resp = h.hb("m1", first - 1)
    assert (resp["error_code"], resp["error_message"]) == (E.FENCED_MEMBER_EPOCH, (
        f"The share group member has a smaller member epoch ({first - 1}) than the one known by the group "
        f"coordinator ({epoch}), and it does not match the previous member epoch ({first}). The member must "
        "abandon all its partitions and rejoin."))


def test_members_share_the_partitions():
    # SGHT testShareGroupHeartbeatWithMultipleMembers: two members, three partitions, one epoch; then
    # more members than partitions: every member gets the one partition (SimpleAssignor's sharing)
    h = ShareHarness(topics={"foo": 3})
    h.share_join("m1")
    h.share_join("m2")
    e1 = h.hb("m1", h.group().members["m1"].member_epoch)
    e2 = h.hb("m2", h.group().members["m2"].member_epoch)
    m1, m2 = (h.group().members[m] for m in ("m1", "m2"))
    assert m1.member_epoch == m2.member_epoch == h.group().assignment_epoch
    assert set(assigned(m1.assigned)["foo"]) | set(assigned(m2.assigned)["foo"]) == {0, 1, 2}
    assert e1["error_code"] == e2["error_code"] == 0

    h = ShareHarness(topics={"one": 1})
    for m in ("a", "b", "c"):
        h.share_join(m, topics=["one"])
    for m in ("a", "b", "c"):
        h.hb(m, h.group().members[m].member_epoch)
    assert {m: assigned(member.assigned) for m, member in h.group().members.items()} == {
        "a": {"one": [0]}, "b": {"one": [0]}, "c": {"one": [0]}}


# ============================================================================ leaving and fencing
def test_a_leaving_member_bumps_the_group_epoch():
    # GMMT testShareGroupLeavingMemberBumpsGroupEpoch: its records tombstoned, the metadata hash of what
    # the others subscribe to, MemberEpoch -1 echoed
    h = ShareHarness(topics={"foo": 6, "bar": 3, "zar": 1})
    h.share_join("m1", topics=["foo", "bar"])
    h.share_join("m2", topics=["foo", "bar", "zar"])
    epoch = h.group().group_epoch
    h.new_records()
    resp = h.hb("m2", -1)
    assert resp == {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m2",
                    "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}
    records = h.new_records()
    assert names(records) == [("ShareGroupCurrentMemberAssignment", "m2", True),
                              ("ShareGroupTargetAssignmentMember", "m2", True),
                              ("ShareGroupMemberMetadata", "m2", True), ("ShareGroupMetadata", None, False)]
    expected_hash = metadata_hash({"foo": (tid("foo"), 6), "bar": (tid("bar"), 3)})     # zar no longer
    assert records[-1][2] == {"epoch": epoch + 1, "metadata_hash": expected_hash}
    assert ("m2" not in h.group().members, h.group().state) == (True, "Stable")
    assert h.events_of("share.member_left")[-1]["member"] == "m2"


@pytest.mark.parametrize("member_id,group_id,message", [
    ("nobody", GROUP, "Member nobody is not a member of group fooup."),
    ("m1", "other", "Group other not found."),
])
def test_leaving_what_is_not_there(member_id, group_id, message):
    # GroupMetadataManager.shareGroupLeave: shareGroup(groupId), then getOrMaybeCreateMember(memberId, false)
    h = ShareHarness()
    h.share_join("m1")
    resp = h.hb(member_id, -1, group_id=group_id)
    code = E.UNKNOWN_MEMBER_ID if group_id == GROUP else E.GROUP_ID_NOT_FOUND
    assert (resp["error_code"], resp["error_message"]) == (code, message)


def test_a_member_without_heartbeats_is_fenced_after_its_session():
    # GMMT testSessionTimeoutExpirationForShareMember, SGHT testMemberJoiningAndExpiring
    h = ShareHarness(topics={"foo": 6})
    resp = h.hb("m1", 0, ["foo"])
    assert resp["member_epoch"] == 2
    h.new_records()
    assert h.timers.deadline(("sg-session", GROUP, "m1")) == 45000
    h.advance(45000 + 1)
    records = h.new_records()
    assert names(records) == [("ShareGroupCurrentMemberAssignment", "m1", True),
                              ("ShareGroupTargetAssignmentMember", "m1", True),
                              ("ShareGroupMemberMetadata", "m1", True), ("ShareGroupMetadata", None, False)]
    assert records[-1][2] == {"epoch": 3, "metadata_hash": 0}
    assert h.timers.deadline(("sg-session", GROUP, "m1")) is None
    [fenced] = h.events_of("share.member_fenced")
    assert (fenced["member"], fenced["reason"], fenced["timeout_ms"]) == ("m1", "session_timeout", 45000)
    assert h.group().state == "Empty"
    resp = h.hb("m1", 2)
    assert (resp["error_code"], resp["error_message"]) == (E.UNKNOWN_MEMBER_ID,
                                                           "Member m1 is not a member of group fooup.")


def test_the_group_configs_set_the_interval_and_the_session():
    # GMMT testShareGroupDynamicConfigs
    h = ShareHarness(topics={"foo": 6})
    resp = h.hb("m1", 0, ["foo"])
    assert resp["heartbeat_interval_ms"] == 5000
    h.gc.group_configs.set(GROUP, {"share.session.timeout.ms": 50000, "share.heartbeat.interval.ms": 10000})
    h.advance(1000)
    resp = h.hb("m1", resp["member_epoch"])
    assert resp["heartbeat_interval_ms"] == 10000
    assert h.timers.deadline(("sg-session", GROUP, "m1")) == 1000 + 50000
    h.gc.group_configs.set(GROUP, {"share.session.timeout.ms": None, "share.heartbeat.interval.ms": None})
    assert h.hb("m1", resp["member_epoch"])["heartbeat_interval_ms"] == 5000


def test_the_group_states():
    # GMMT testShareGroupStates: Empty without members, Stable with some
    h = ShareHarness()
    h.share_join("m1")
    assert h.group().state == "Stable"
    h.hb("m1", -1)
    assert h.group().state == "Empty"
    assert [(e["state_from"], e["state_to"]) for e in h.events_of("group.state_change")] == [
        ("Empty", "Stable"), ("Stable", "Empty")]


# ============================================================================ subscriptions and topics
@pytest.mark.parametrize("release", ["4.3", "4.1"])
def test_a_subscription_change_takes_unsubscribed_topics_away(release):
    # ShareGroupAssignmentBuilder: from Kafka 4.2 a member whose subscription changed gets its target
    # again, filtered by what it subscribes to, before a new target is computed (here the assignment
    # interval of 4.3 holds the new target back); 4.1 waits for the new target
    h = ShareHarness(release, now=10_000)
    resp = h.share_join("m1", topics=["foo", "bar"])
    if release == "4.3":        # (the partitions initialized after the first target wait for the interval)
        h.advance(1000)
        resp = h.hb("m1", resp["member_epoch"])
    epoch = resp["member_epoch"]
    assert assigned(resp) == {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}
    h.advance(100)
    resp = h.hb("m1", epoch, ["foo"])
    assert h.events_of("share.group_epoch_bumped")[-1]["reason"] == "subscription_changed"
    if release == "4.3":        # (the target of this epoch waits for the assignment interval: 1 s)
        assert (resp["member_epoch"], assigned(resp)) == (epoch, {"foo": [0, 1, 2, 3, 4, 5]})
        h.advance(1000)
        resp = h.hb("m1", epoch)
        assert resp["assignment"] is None         # (nothing new for the member)
    else:
        assert assigned(resp) == {"foo": [0, 1, 2, 3, 4, 5]}
    assert resp["member_epoch"] == epoch + 1
    assert assigned(h.group().members["m1"].assigned) == {"foo": [0, 1, 2, 3, 4, 5]}


@pytest.mark.parametrize("interval", [0, 1000])
def test_partitions_follow_the_topics(interval):
    # SGHT testPartitionAssignmentWithChangingTopics, step for step: a member subscribes to topics that
    # do not exist yet; they are created, one grows, one is deleted. Without an assignment interval each
    # change takes two epochs (the metadata, then the partitions initialized); with one (heartbeats
    # closer than it), one
    h = ShareHarness(topics={}, now=10_000, group_share_assignment_interval_ms=interval)
    resp = h.hb("m", 0, ["foo", "bar", "baz"])
    epoch = resp["member_epoch"]
    assert (epoch, assigned(resp)) == (2, {})
    step = 2 if interval == 0 else 1

    def settle(expected: dict) -> None:
        nonlocal epoch
        for _ in range(10):
            h.advance(100)
            resp = h.hb("m", epoch)
            epoch = resp["member_epoch"]
            if assigned(h.group().members["m"].assigned) == expected:
                return
        raise AssertionError(assigned(h.group().members["m"].assigned))

    h.create_topic("foo", 2)
    h.create_topic("bar", 3)
    settle({"foo": [0, 1], "bar": [0, 1, 2]})
    assert epoch == 2 + step
    h.create_topic("baz", 4)
    settle({"foo": [0, 1], "bar": [0, 1, 2], "baz": [0, 1, 2, 3]})
    assert epoch == 2 + 2 * step
    h.cluster.add_partitions("bar", 6)       # only the new partitions are initialized, at the new epoch
    settle({"foo": [0, 1], "bar": [0, 1, 2, 3, 4, 5], "baz": [0, 1, 2, 3]})
    assert epoch == 2 + 3 * step
    assert h.persister.initialized[-1][2] == {"bar": [3, 4, 5]}
    h.cluster.delete_topic("foo")            # gone from the state metadata at once, from the member next
    assert state_topics(h.new_records()[-1][2]["initialized_topics"]) == {"bar": [0, 1, 2, 3, 4, 5],
                                                                         "baz": [0, 1, 2, 3]}
    settle({"bar": [0, 1, 2, 3, 4, 5], "baz": [0, 1, 2, 3]})
    if interval:                # the reconciliation filtered foo out before the next target
        assert epoch == 2 + 3 * step
        while epoch == 2 + 3 * step:
            h.advance(100)
            epoch = h.hb("m", epoch)["member_epoch"]
    assert epoch == 2 + 3 * step + 1


def test_a_grown_topic_initializes_only_its_new_partitions():
    # GMMT testShareGroupHeartbeatInitializeOnPartitionUpdate: the state metadata record of the
    # heartbeat after the growth, and the initialization at the new group epoch
    h = ShareHarness(topics={"t1": 2, "t2": 2})
    resp = h.hb("m", 0, ["t1", "t2"])
    assert h.persister.initialized == [(GROUP, 2, {"t1": [0, 1], "t2": [0, 1]})]
    h.cluster.add_partitions("t1", 4)
    h.new_records()
    resp = h.hb("m", resp["member_epoch"])
    state = [v for name, _, v in h.new_records() if name == "ShareGroupStatePartitionMetadata"][0]
    assert (state_topics(state["initializing_topics"]), state_topics(state["initialized_topics"])) == (
        {"t1": [2, 3]}, {"t1": [0, 1], "t2": [0, 1]})
    assert h.persister.initialized[-1] == (GROUP, 3, {"t1": [2, 3]})
    assert h.gc.share.group(GROUP).initialized_partitions() == {tid("t1"): frozenset(range(4)),
                                                               tid("t2"): frozenset(range(2))}


def test_no_epoch_bump_while_the_assignment_waits_for_its_interval():
    # GMMT testShareGroupHeartbeatDoesNotBumpGroupEpochDuringAssignmentDelay (Kafka 4.3): initialized
    # partitions not assigned bump the group epoch once; while the new target waits, no further bump
    h = ShareHarness(topics={"t1": 2}, now=10_000, group_share_assignment_interval_ms=15000)
    resp = h.hb("m", 0, ["t1"])             # the first target at once; initialized after it
    h.new_records()
    resp = h.hb("m", resp["member_epoch"])
    assert names(h.new_records()) == [("ShareGroupMetadata", None, False)]
    assert (resp["member_epoch"], h.group().group_epoch, h.group().assignment_epoch) == (2, 3, 2)
    h.hb("m", 2)
    assert h.new_records() == []
    h.advance(15000)
    resp = h.hb("m", 2)
    assert (resp["member_epoch"], assigned(resp)) == (3, {"t1": [0, 1]})


def test_initialization_that_failed_is_retried_after_its_interval():
    # GroupCoordinatorService.persisterInitialize and uninitializeShareGroupState: the partitions leave
    # the initializing state; initializing entries are retried after group.share.initialize.retry.interval.ms
    h = ShareHarness(topics={"foo": 2})
    h.persister.error = E.COORDINATOR_NOT_AVAILABLE
    resp = h.hb("m", 0, ["foo"])
    states = [v for name, _, v in h.new_records() if name == "ShareGroupStatePartitionMetadata"]
    assert [state_topics(v["initializing_topics"]) for v in states] == [{"foo": [0, 1]}, {}]
    h.persister.error = 0
    resp = h.hb("m", resp["member_epoch"])       # not initializing any more: asked again at once
    assert h.persister.initialized[-1] == (GROUP, 2, {"foo": [0, 1]})
    assert assigned(h.hb("m", resp["member_epoch"])) == {"foo": [0, 1]}


# ============================================================================ the other group APIs
def test_other_group_types_and_share_groups_keep_apart():
    # GMMT testShareGroupHeartbeatOnConsumerGroup, testConsumerGroupHeartbeatOnShareGroup,
    # testClassicGroupJoinOnShareGroup, testClassicGroupSyncOnShareGroup, testClassicGroupLeaveOnShareGroup,
    # testConsumerGroupDescribeOnShareGroup, testShareGroupDescribeOnConsumerGroup
    h = ShareHarness()
    h.share_join("m1")
    call = Call()
    h.gc.consumer_group_heartbeat(call, ConsumerGroupHeartbeatRequest(
        GROUP, "c1", 0, rebalance_timeout_ms=5000, subscribed_topic_names=["foo"], topic_partitions=[]))
    assert (call.error, call.result["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group fooup is not a consumer group.")
    join = h.join(GROUP, "")
    assert (join.error, join.result["member_id"]) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    assert h.sync(GROUP, "m1", 1).error == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(GROUP, "m1", 1) == E.UNKNOWN_MEMBER_ID
    assert h.leave(GROUP, ("m1", None, None))["error_code"] == E.UNKNOWN_MEMBER_ID
    described = h.gc.consumer.describe(GROUP)
    assert (described["error_code"], described["error_message"]) == (E.GROUP_ID_NOT_FOUND,
                                                                     "Group fooup is not a consumer group.")
    h.hb("m1", -1)                               # an empty share group does not give way either
    assert h.join(GROUP, "").error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.group().type == "share"

    call = Call()
    h.gc.consumer_group_heartbeat(call, ConsumerGroupHeartbeatRequest(
        "cg", "c1", 0, rebalance_timeout_ms=5000, subscribed_topic_names=["foo"], topic_partitions=[]))
    assert call.error == 0
    for epoch in (0, 1):
        resp = h.hb("s1", epoch, ["foo"], group_id="cg")
        assert (resp["error_code"], resp["error_message"]) == (E.GROUP_ID_NOT_FOUND, "Group cg is not a share group.")
    assert h.gc.share.describe("cg")["error_message"] == "Group cg is not a share group."
    assert h.gc.share.describe("nobody")["error_message"] == "Group nobody not found."


def test_describe_a_share_group():
    # GMMT testShareGroupDescribeNoErrors, SGDT testShareGroupDescribe
    h = ShareHarness(topics={"foo": 2})
    h.share_join("m1", rack_id="r1")
    h.share_join("m2")
    for m in ("m1", "m2"):
        h.hb(m, h.group().members[m].member_epoch)
    described = h.gc.share.describe(GROUP)
    g = h.group()
    assert {k: described[k] for k in ("error_code", "group_id", "group_state", "group_epoch", "assignment_epoch",
                                      "assignor_name")} == {
        "error_code": 0, "group_id": GROUP, "group_state": "Stable", "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch, "assignor_name": "simple"}
    m1, m2 = described["members"]
    assert (m1["member_id"], m1["rack_id"], m1["client_id"], m1["client_host"], m1["subscribed_topic_names"]) == (
        "m1", "r1", "client", "/127.0.0.1", ["foo"])
    assert [(tp["topic_name"], tp["topic_id"]) for tp in m1["assignment"]["topic_partitions"]] == [("foo", tid("foo"))]
    assert sorted(m1["assignment"]["topic_partitions"][0]["partitions"] +
                  m2["assignment"]["topic_partitions"][0]["partitions"]) == [0, 1]
    h.cluster.delete_topic("foo")                # a deleted topic is left out of the members' assignments
    assert h.gc.share.describe(GROUP)["members"][0]["assignment"] == {"topic_partitions": []}


def test_list_describe_and_delete_a_share_group():
    # ListGroups (type "share", protocol type "share"), DescribeGroups (classic only: GROUP_ID_NOT_FOUND from
    # v6), DeleteGroups (NON_EMPTY_GROUP, then GMMT testShareGroupDeleteTombstones after the state goes)
    h = ShareHarness(topics={"foo": 2})
    h.share_join("m1")
    listed = Call()
    h.gc.list_groups(listed, types_filter=["SHARE"])
    assert listed.result["groups"] == [{"group_id": GROUP, "protocol_type": "share", "group_state": "Stable",
                                        "group_type": "share"}]
    listed = Call()
    h.gc.list_groups(listed, states_filter=["stable"], types_filter=["consumer"])
    assert listed.result["groups"] == []
    described = h.gc.describe_group(GROUP, group_id_not_found=True)
    assert (described["error_code"], described["error_message"]) == (E.GROUP_ID_NOT_FOUND,
                                                                     "Group fooup is not a classic group.")
    assert h.gc.describe_group(GROUP)["group_state"] == "Dead"
    deleted = Call()
    h.gc.delete_groups(deleted, group_ids=[GROUP])
    assert deleted.result["results"] == [{"group_id": GROUP, "error_code": E.NON_EMPTY_GROUP}]
    h.hb("m1", -1)
    h.new_records()
    deleted = Call()
    h.gc.delete_groups(deleted, group_ids=[GROUP])
    assert deleted.result["results"] == [{"group_id": GROUP, "error_code": 0}]
    records = h.new_records()
    assert names(records) == [("ShareGroupStatePartitionMetadata", None, False),     # everything to deleting
                              ("ShareGroupTargetAssignmentMetadata", None, True),
                              ("ShareGroupStatePartitionMetadata", None, True), ("ShareGroupMetadata", None, True)]
    assert records[0][2]["deleting_topics"] == [{"topic_id": tid("foo"), "topic_name": "foo"}]
    assert h.persister.deleted == [(GROUP, {"foo": [0, 1]})]
    assert h.group() is None
    assert h.events_of("group.deleted")[-1]["reason"] == "delete_groups"


def test_a_share_group_state_that_cannot_be_deleted_keeps_the_group():
    # GroupCoordinatorService.deleteShareGroups: a group whose persister delete failed keeps that error
    h = ShareHarness(topics={"foo": 2})
    h.share_join("m1")
    h.hb("m1", -1)
    h.persister.error = E.COORDINATOR_NOT_AVAILABLE
    deleted = Call()
    h.gc.delete_groups(deleted, group_ids=[GROUP])
    assert deleted.result["results"] == [{"group_id": GROUP, "error_code": E.COORDINATOR_NOT_AVAILABLE}]
    assert h.group().deleting == {tid("foo")}
    h.persister.error = 0
    h.gc.delete_groups(deleted, group_ids=[GROUP])          # retried: the deleting topic is deleted again
    assert h.persister.deleted[-1] == (GROUP, {"foo": [0, 1]}) and h.group() is None


def test_offsets_of_a_share_group():
    # ShareGroup.validateOffsetCommit / validateOffsetDelete: GROUP_ID_NOT_FOUND; validateOffsetFetch too,
    # which OffsetMetadataManager.fetchOffsets answers as no offsets (-1, no error). shouldExpire() is false:
    # the retention sweep leaves an empty share group alone
    h = ShareHarness(offsets_retention_check_interval_ms=1000, offsets_retention_minutes=1)
    h.share_join("m1")
    committed = h.commit(GROUP, member_id="m1", generation=2, group_id_not_found=True)
    assert [p["error_code"] for t in committed["topics"] for p in t["partitions"]] == [E.GROUP_ID_NOT_FOUND]
    assert h.commit(GROUP)["topics"][0]["partitions"][0]["error_code"] == E.GROUP_ID_NOT_FOUND    # (admin: -1)
    fetched = h.fetch(GROUP, {"foo": [0, 1]})
    assert fetched["error_code"] == 0
    assert [(p["partition_index"], p["committed_offset"]) for p in fetched["topics"][0]["partitions"]] == [(0, -1),
                                                                                                          (1, -1)]
    assert h.fetch(GROUP)["topics"] == []
    assert h.delete_offsets(GROUP, [{"name": "foo", "partitions": [{"partition_index": 0}]}])["error_code"] == \
        E.GROUP_ID_NOT_FOUND
    h.hb("m1", -1)
    h.advance(5 * 60_000)
    assert h.group() is not None and h.group().state == "Empty"


def test_every_share_event_type_is_emitted():
    # the share groups' events (coordinator/events.py), each checked against its schema by the harness (the
    # share-partition leaders' own: tests/coordinator/share/test_share_observability.py)
    from groupcoord.coordinator.events import EVENT_FIELDS, SHARE_PARTITION_EVENTS
    h = ShareHarness(topics={"foo": 2})
    h.share_join("m1")
    h.share_join("m2")
    h.hb("m2", -1)
    h.advance(45001)
    assert {e["event"] for e in h.events if e["event"].startswith("share.")} == {
        kind for kind in EVENT_FIELDS if kind.startswith("share.") and kind not in SHARE_PARTITION_EVENTS}
    assert h.events_of("group.created")[0]["cause"] == "share_group_heartbeat"
