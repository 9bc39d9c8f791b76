"""Mixed groups and online migration (KIP-848) in virtual time: classic JoinGroup, SyncGroup,
Heartbeat, LeaveGroup and OffsetCommit of members inside a consumer group, the upgrade of a classic
group at the first ConsumerGroupHeartbeat and the downgrade when the last member of the consumer
protocol goes. Each test names the GroupMetadataManagerTest case it mirrors (Kafka 4.x)."""
from __future__ import annotations

import pytest

from group_harness import Harness

from groupcoord.coordinator.group.consumer.group import MemberState
from groupcoord.protocol import consumer as cp
from groupcoord.protocol.errors import ErrorCode as E

from test_conformance_consumer_group import BAR, FOO, GROUP, harness, hb, tid


def sub(topics, owned=None, version: int = 3) -> bytes:
    """A ConsumerProtocolSubscription; ``owned``: {topic: [partitions]} (v1+)."""
    return cp.encode_subscription({"topics": list(topics), "user_data": None, "owned_partitions": [
        {"topic": t, "partitions": ps} for t, ps in (owned or {}).items()], "generation_id": -1, "rack_id": None},
        version)


def join(h: Harness, member_id: str = "", topics=(FOO,), owned=None, *, instance_id=None, protocols=None,
         session: int = 10000, rebalance: int = 30000, version: int = 9, protocol_type: str = "consumer"):
    protocols = protocols or [("range", sub(topics, owned))]
    return h.join(GROUP, member_id, instance_id=instance_id, protocols=protocols, session=session,
                  rebalance=rebalance, version=version, protocol_type=protocol_type)


def join_new(h: Harness, topics=(FOO,), **kw) -> dict:
    first = join(h, "", topics, **kw)
    assert first.error == E.MEMBER_ID_REQUIRED, first
    second = join(h, first.result["member_id"], topics, **kw)
    return second.result


def owned_of(assignment: bytes) -> dict:
    """{topic: sorted partitions} of a SyncGroup's ConsumerProtocolAssignment."""
    return {a["topic"]: sorted(a["partitions"]) for a in cp.decode_assignment(assignment)["assigned_partitions"]}


def sync(h: Harness, member_id: str, generation: int, **kw) -> dict:
    return h.sync(GROUP, member_id, generation, **kw).result


def consumer_group(h):
    return h.gc.consumer_group(GROUP)


def test_a_classic_member_joins_a_consumer_group_and_gets_partitions_once_released():
    # testJoiningConsumerGroupWithNewDynamicMember
    h = harness()
    assert hb(h, "m1", 0, topics=[FOO])["member_epoch"] == 1
    resp = join_new(h)
    c1 = resp["member_id"]
    g = consumer_group(h)
    assert resp["error_code"] == 0 and resp["generation_id"] == 2 == g.group_epoch
    assert (resp["protocol_type"], resp["protocol_name"], resp["leader"], resp["members"]) == \
        ("consumer", "range", "", [])            # every classic member is a follower
    member = g.members[c1]
    assert member.classic is not None and member.state is MemberState.UNRELEASED_PARTITIONS
    # its partitions are still m1's: the SyncGroup gives nothing yet, and a heartbeat waits
    assert owned_of(sync(h, c1, 2)["assignment"]) == {}
    assert h.heartbeat(GROUP, c1, 2) == 0
    # m1 revokes half, then the classic member is told to rejoin and gets them
    r1 = hb(h, "m1", 1, owned={FOO: [0, 1, 2, 3, 4, 5]})
    mine = sorted(t["partitions"] for t in r1["assignment"]["topic_partitions"])[0]
    hb(h, "m1", 1, owned={FOO: mine})
    assert h.heartbeat(GROUP, c1, 2) == E.REBALANCE_IN_PROGRESS
    again = join(h, c1).result
    assert again["generation_id"] == 2
    got = owned_of(sync(h, c1, 2)["assignment"])
    assert sorted(got[FOO] + mine) == [0, 1, 2, 3, 4, 5] and not set(got[FOO]) & set(mine)
    assert g.state == "Stable"


@pytest.mark.parametrize("cooperative", [False, True])
def test_a_classic_member_gives_up_partitions_through_a_rejoin(cooperative):
    # testReconciliationInJoiningConsumerGroupWithEagerProtocol / ...WithCooperativeProtocol
    h = harness()
    hb(h, "m1", 0, topics=[BAR])
    c1 = join_new(h)["member_id"]
    assert owned_of(sync(h, c1, 2)["assignment"]) == {FOO: [0, 1, 2, 3, 4, 5]}
    assert hb(h, "m2", 0)["member_epoch"] == 3          # a consumer member on foo takes half
    assert h.heartbeat(GROUP, c1, 2) == E.REBALANCE_IN_PROGRESS
    if cooperative:
        # it rejoins still owning everything: it must revoke first, at its epoch
        resp = join(h, c1, owned={FOO: [0, 1, 2, 3, 4, 5]}).result
        member = consumer_group(h).members[c1]
        assert resp["generation_id"] == 2 and member.state is MemberState.UNREVOKED_PARTITIONS
        kept = owned_of(sync(h, c1, 2)["assignment"])[FOO]
        assert len(kept) == 3
        assert h.heartbeat(GROUP, c1, 2) == E.REBALANCE_IN_PROGRESS
        resp = join(h, c1, owned={FOO: kept}).result
    else:
        resp = join(h, c1).result                 # an eager client revoked everything before rejoining
        kept = None
    assert resp["generation_id"] == 3
    assigned = owned_of(sync(h, c1, 3)["assignment"])[FOO]
    assert len(assigned) == 3 and (kept is None or assigned == kept)
    r2 = hb(h, "m2", 3, owned={})
    assert sorted(r2["assignment"]["topic_partitions"][0]["partitions"] + assigned) == [0, 1, 2, 3, 4, 5]


def test_join_errors():
    # testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported, ...IfGroupOverMaxSize,
    # testStaticMemberJoiningConsumerGroupWithUnknownInstanceId / WithUnmatchedMemberId
    h = harness(group_consumer_max_size=3)
    hb(h, "m1", 0)
    assert join(h, "", protocol_type="connect").error == E.INCONSISTENT_GROUP_PROTOCOL
    c1 = join_new(h)["member_id"]
    # a protocol the classic members do not all support
    assert join(h, "", protocols=[("roundrobin", sub([FOO]))]).error == E.INCONSISTENT_GROUP_PROTOCOL
    assert join(h, "", instance_id="s", protocols=[("roundrobin", sub([FOO])), ("range", sub([FOO]))]).error == 0
    assert join(h, "").error == E.GROUP_MAX_SIZE_REACHED
    assert join(h, "x", instance_id="unknown").error == E.GROUP_MAX_SIZE_REACHED
    assert join(h, c1, instance_id="s").error == E.FENCED_INSTANCE_ID
    assert join(h, c1).error == 0


def test_with_migration_disabled_a_classic_member_cannot_join():
    # testClassicMemberJoinToConsumerGroupWithDisabledMigrationPolicy (Kafka 4.3.1, KAFKA-20640); before,
    # it joined as with any other policy
    h = harness(group_consumer_migration_policy="disabled", groupcoord_kafka_version="4.3")
    hb(h, "m1", 0)
    call = join(h, "")
    assert call.error == E.INCONSISTENT_GROUP_PROTOCOL
    h = harness(group_consumer_migration_policy="disabled", groupcoord_kafka_version="4.2")
    hb(h, "m1", 0)
    assert join_new(h)["member_id"] in consumer_group(h).members


def test_sync_and_heartbeat_errors():
    # testClassicGroupSyncToConsumerGroupWith{UnknownMemberId,IllegalGeneration,InconsistentGroupProtocol},
    # testClassicGroupHeartbeatToConsumerWith{UnknownMember,IllegalGenerationId,MemberNotUsingClassicProtocol}
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    assert sync(h, "nobody", 2)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert sync(h, c1, 7)["error_code"] == E.ILLEGAL_GENERATION
    assert sync(h, c1, 2, protocol_name="roundrobin")["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert sync(h, c1, 2, protocol_type="connect")["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.heartbeat(GROUP, "nobody", 2) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(GROUP, c1, 7) == E.ILLEGAL_GENERATION
    assert h.heartbeat(GROUP, "m1", 1) == E.UNKNOWN_MEMBER_ID      # a member of the consumer protocol


def test_sync_is_refused_while_a_newer_target_waits():
    # testClassicGroupSyncToConsumerGroupRebalanceInProgress
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    hb(h, "m2", 0)                                  # group epoch 3, c1 is at 2
    assert sync(h, c1, 2)["error_code"] == E.REBALANCE_IN_PROGRESS


def test_a_classic_member_is_fenced_at_its_own_session_timeout():
    # testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h, session=20000)["member_id"]
    sync(h, c1, 2)
    h.advance(19999)
    hb(h, "m1", consumer_group(h).members["m1"].member_epoch)
    assert c1 in consumer_group(h).members
    h.advance(1)
    assert c1 not in consumer_group(h).members
    fenced = [e for e in h.events if e["event"] == "consumer.member_fenced"]
    assert [(e["member"], e["reason"], e["timeout_ms"]) for e in fenced] == [(c1, "session_timeout", 20000)]


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced():
    # testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout
    h = harness()
    hb(h, "m1", 0, topics=[BAR])
    c1 = join_new(h, rebalance=5000, session=45000)["member_id"]
    sync(h, c1, 2)
    hb(h, "m2", 0)
    assert h.heartbeat(GROUP, c1, 2) == E.REBALANCE_IN_PROGRESS       # arms the join timer
    h.advance(4999)
    assert h.heartbeat(GROUP, c1, 2) == E.REBALANCE_IN_PROGRESS       # does not re-arm it
    h.advance(1)
    assert c1 not in consumer_group(h).members
    assert [e["reason"] for e in h.events if e["event"] == "consumer.member_fenced"] == ["join_timeout"]


def test_a_batch_leave_removes_classic_members_with_one_bump():
    # testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    c2 = join(h, "", instance_id="i2").result["member_id"]          # static: no second JoinGroup
    epoch = consumer_group(h).group_epoch
    resp = h.leave(GROUP, (c1, None, None), ("", "i2", None), ("ghost", None, None))
    assert [m["error_code"] for m in resp["members"]] == [0, 0, E.UNKNOWN_MEMBER_ID]
    g = consumer_group(h)
    assert list(g.members) == ["m1"] and g.group_epoch == epoch + 1
    assert c2 not in g.members
    # the member named by its instance id alone was removed by an admin (kafka-consumer-groups, the
    # admin client); one named by its member id left of itself
    assert [(e["member"], e["initiator"]) for e in h.events_of("consumer.member_left")] == [
        (c1, "member"), (c2, "admin")]


def test_who_initiated_a_consumer_members_leave_is_told():
    """consumer.member_left's initiator: the member's own heartbeat at epoch -1 or -2, the admin
    client's LeaveGroup (its reason, KafkaAdminClient.DEFAULT_LEAVE_GROUP_REASON), the admin API."""
    h = harness()
    for m in ("m1", "m2", "m3", "m4"):
        hb(h, m, 0)
    hb(h, "s1", 0, instance_id="i-s1")
    hb(h, "m1", -1)
    hb(h, "s1", -2, instance_id="i-s1")
    # one batch: the admin client's reason is the member's, not the batch's
    resp = h.leave(GROUP, ("m2", None, "member was removed by an admin"), ("m4", None, "bye"))
    assert [m["error_code"] for m in resp["members"]] == [0, 0]
    assert h.gc.remove_member(GROUP, "m3", reason="fault") == 0
    assert [(e["member"], e["static"], e["initiator"]) for e in h.events_of("consumer.member_left")] == [
        ("m1", False, "member"), ("s1", True, "member"), ("m2", False, "admin"), ("m4", False, "member"),
        ("m3", False, "admin")]


def test_a_classic_members_commit_checks_its_generation():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetCommitWithIllegalGenerationId (classic member)
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    bad = h.commit(GROUP, member_id=c1, generation=1, offsets={(FOO, 0): 5})
    assert bad["topics"][0]["partitions"][0]["error_code"] == E.ILLEGAL_GENERATION
    good = h.commit(GROUP, member_id=c1, generation=2, offsets={(FOO, 0): 5})   # an OffsetCommit below v9
    assert good["topics"][0]["partitions"][0]["error_code"] == 0


def test_describe_shows_the_classic_member_type():
    # ConsumerGroupDescribe: MemberType 0 for a classic member (CGD v1)
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    members = {m["member_id"]: m["member_type"] for m in h.gc.consumer.describe(GROUP)["members"]}
    assert members == {"m1": 1, c1: 0}


# ---- upgrade ----------------------------------------------------------------------------

def classic_group(h: Harness, n: int = 2) -> list[str]:
    """A Stable classic group of n members on foo (range, each half), their ids leader first."""
    calls = [join(h, "", [FOO]) for _ in range(n)]
    ids = [c.result["member_id"] for c in calls]
    calls = [join(h, m, [FOO]) for m in ids]
    h.advance(0)
    generation = calls[0].result["generation_id"]
    leader = calls[0].result["leader"]
    share = {m: [p for p in range(6) if p % n == i] for i, m in enumerate(ids)}
    assignments = [(m, cp.encode_assignment({"assigned_partitions": [{"topic": FOO, "partitions": ps}],
                                             "user_data": None}, 0)) for m, ps in share.items()]
    for m in ids:
        if m != leader:
            h.sync(GROUP, m, generation)
    assert h.sync(GROUP, leader, generation, assignments=assignments).error == 0
    assert h.state(GROUP) == "Stable"
    return ids


def test_the_first_consumer_heartbeat_upgrades_a_classic_group():
    # testConsumerGroupHeartbeatWithStableClassicGroup
    h = harness()
    ids = classic_group(h)
    generation = h.group(GROUP).generation_id
    h.commit(GROUP, member_id=ids[0], generation=generation, offsets={(FOO, 1): 42})
    resp = hb(h, "m1", 0)
    assert resp["error_code"] == 0 and resp["member_epoch"] == generation + 1
    assert h.group(GROUP) is None
    g = consumer_group(h)
    assert g.group_epoch == generation + 1 and set(g.members) == {*ids, "m1"}
    for i, m in enumerate(ids):
        member = g.members[m]
        assert member.classic is not None and member.member_epoch == generation
        assert {t: sorted(ps) for t, ps in member.assigned.items()} == {tid(FOO): [p for p in range(6) if p % 2 == i]}
    # the classic members are told to rejoin; the offsets came along
    assert h.heartbeat(GROUP, ids[0], generation) == E.REBALANCE_IN_PROGRESS
    assert h.offsets(GROUP) == {(FOO, 1): 42}
    created = [e for e in h.events if e["event"] == "group.created"]
    assert created[-1]["cause"] == "upgrade" and created[-1]["protocol_type"] == "consumer"


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_no_upgrade_when_the_policy_forbids_it(policy):
    # testConsumerGroupHeartbeatWithNonEmptyClassicGroup (online upgrade disabled)
    h = harness(group_consumer_migration_policy=policy)
    classic_group(h)
    resp = hb(h, "m1", 0)
    assert resp["error_code"] == E.GROUP_ID_NOT_FOUND
    assert resp["error_message"] == (f"Cannot upgrade classic group {GROUP} to consumer group because online "
                                     "upgrade is disabled.")
    assert h.state(GROUP) == "Stable"


def test_no_upgrade_of_a_group_of_another_protocol_type():
    # validateOnlineUpgrade: the group does not use the consumer embedded protocol
    h = harness()
    first = join(h, "", protocol_type="connect", protocols=[("v1", b"x")])
    join(h, first.result["member_id"], protocol_type="connect", protocols=[("v1", b"x")])
    resp = hb(h, "m1", 0)
    assert resp["error_code"] == E.GROUP_ID_NOT_FOUND and "consumer embedded protocol" in resp["error_message"]


def test_an_upgrade_answers_waiting_joins_with_rebalance_in_progress():
    # testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup
    h = harness()
    ids = classic_group(h)
    waiting = join(h, ids[0], [FOO, BAR])          # a new subscription: the group prepares a rebalance
    assert not waiting.done
    hb(h, "m1", 0)
    assert waiting.error == E.REBALANCE_IN_PROGRESS and consumer_group(h) is not None


# ---- downgrade --------------------------------------------------------------------------

def test_the_last_consumer_member_leaving_downgrades_the_group():
    # testLastConsumerProtocolMemberLeavingConsumerGroup
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    c2 = join_new(h)["member_id"]
    g = consumer_group(h)
    epoch = g.group_epoch
    hb(h, "m1", -1)
    assert consumer_group(h) is None
    # the leave is told of the consumer group, before it gives way
    kinds = [e["event"] for e in h.events]
    left = kinds.index("consumer.member_left")
    assert kinds[left + 1:left + 3] == ["group.deleted", "group.created"]
    classic = h.group(GROUP)
    assert classic.generation_id == epoch and classic.state == "PreparingRebalance"
    assert set(classic.members) == {c1, c2} and classic.protocol_name == "range"
    # the classic members rejoin the classic way and the group forms again
    assert h.heartbeat(GROUP, c1, epoch) == E.REBALANCE_IN_PROGRESS
    calls = [join(h, m) for m in (c1, c2)]
    assert all(c.done for c in calls) and calls[0].result["generation_id"] == epoch + 1
    deleted = [e for e in h.events if e["event"] == "group.deleted"]
    assert deleted[-1]["reason"] == "converted"


def test_a_downgraded_members_assignment_is_its_target():
    # ClassicGroup.fromConsumerGroup: assignments serialized from the target, in the member's version
    h = harness()
    hb(h, "m0", 0, topics=[BAR])
    c1 = join_new(h)["member_id"]
    sync(h, c1, 2)
    hb(h, "m1", 0)                               # c1 must give half to m1
    hb(h, "m0", -1)
    target = sorted(consumer_group(h).target[c1][tid(FOO)])
    hb(h, "m1", -1)
    classic = h.group(GROUP)
    # the downgrade happened before c1 revoked: its classic assignment is its target anyway
    assert owned_of(classic.members[c1].assignment) == {FOO: target}


def test_the_last_consumer_member_timing_out_downgrades_the_group():
    # testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h, session=60000)["member_id"]
    sync(h, c1, 2)
    h.advance(45000)                             # m1's session (group.consumer.session.timeout.ms)
    assert consumer_group(h) is None and set(h.group(GROUP).members) == {c1}


def test_no_downgrade_when_the_policy_forbids_it():
    # validateOnlineDowngradeWithFencedMembers (online downgrade disabled)
    h = harness(group_consumer_migration_policy="upgrade")
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    hb(h, "m1", -1)
    g = consumer_group(h)
    assert g is not None and list(g.members) == [c1]


def test_no_downgrade_past_the_classic_max_size():
    # testNoConversionWhenSizeExceedsClassicMaxGroupSize
    h = harness(group_max_size=1)
    hb(h, "m1", 0)
    join_new(h)
    join_new(h)
    hb(h, "m1", -1)
    assert consumer_group(h) is not None and h.group(GROUP) is None


# ---- the review's cases: static replacements across protocols, refused upgrades ----------

def test_a_consumer_member_takes_over_a_classic_static_members_instance():
    # testConsumerGroupHeartbeatFromExistingClassicStaticMember: no UNRELEASED_INSTANCE_ID (a classic
    # member never leaves with -2), and the new member is one of the consumer protocol
    h = harness()
    hb(h, "m1", 0, topics=[BAR])
    c1 = join(h, "", instance_id="i1").result["member_id"]
    owned = owned_of(sync(h, c1, 2)["assignment"])
    resp = hb(h, "new", 0, instance_id="i1")
    assert resp["error_code"] == 0
    g = consumer_group(h)
    assert set(g.members) == {"m1", "new"} and g.members["new"].classic is None
    assert g.static_members == {"i1": "new"}
    assert {m["member_id"]: m["member_type"] for m in h.gc.consumer.describe(GROUP)["members"]} == {"m1": 1, "new": 1}
    assert {t: sorted(ps) for t, ps in g.target["new"].items()} == {tid(FOO): owned[FOO]}


def test_an_upgrade_by_a_static_members_new_instance():
    # testConsumerGroupHeartbeatToClassicGroupFromExistingStaticMember
    h = harness()
    calls = [join(h, "", instance_id=f"i{n}") for n in range(2)]
    h.advance(0)
    ids = [c.result for c in calls]
    generation = h.group(GROUP).generation_id
    leader = next(r["leader"] for r in ids if r["leader"])
    for r in ids:
        if r["member_id"] != leader:
            h.sync(GROUP, r["member_id"], generation)
    h.sync(GROUP, leader, generation, assignments=[
        (r["member_id"], cp.encode_assignment({"assigned_partitions": [{"topic": FOO, "partitions": [n, n + 2, n + 4]}],
                                               "user_data": None}, 0)) for n, r in enumerate(ids)])
    resp = hb(h, "modern", 0, instance_id="i0")
    assert resp["error_code"] == 0
    g = consumer_group(h)
    assert set(g.members) == {"modern", ids[1]["member_id"]}
    assert sorted(p for t in resp["assignment"]["topic_partitions"] for p in t["partitions"]) == [0, 2, 4]


@pytest.mark.parametrize("refusal", ["full", "regex"])
def test_a_refused_heartbeat_does_not_upgrade_the_group(refusal):
    # Kafka: the conversion is records of the heartbeat; a heartbeat that fails writes none
    h = harness(**({"group_consumer_max_size": 2} if refusal == "full" else {}))
    classic_group(h)
    resp = hb(h, "m1", 0, **({"regex": "("} if refusal == "regex" else {}))
    assert resp["error_code"] == (E.GROUP_MAX_SIZE_REACHED if refusal == "full" else E.INVALID_REGULAR_EXPRESSION)
    assert consumer_group(h) is None and h.state(GROUP) == "Stable"
    assert not [e for e in h.events if e["event"] == "group.deleted"]


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_the_group():
    # testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember: Stable, no rebalance, the
    # new instance with the replaced member's assignment
    h = harness()
    hb(h, "s", 0, instance_id="is")
    c1 = join_new(h)["member_id"]
    sync(h, c1, 2)
    r = hb(h, "s", 1, instance_id="is", owned={FOO: [0, 1, 2, 3, 4, 5]})
    kept = sorted(p for t in r["assignment"]["topic_partitions"] for p in t["partitions"])
    hb(h, "s", 1, instance_id="is", owned={FOO: kept})
    assert h.heartbeat(GROUP, c1, 2) == E.REBALANCE_IN_PROGRESS
    join(h, c1)
    sync(h, c1, 2)
    assert consumer_group(h).state == "Stable"
    resp = join(h, "", instance_id="is").result
    assert consumer_group(h) is None
    classic = h.group(GROUP)
    assert classic.state == "Stable" and classic.generation_id == resp["generation_id"] == 2
    assert classic.static_members["is"] == resp["member_id"]
    assert owned_of(sync(h, resp["member_id"], 2)["assignment"]) == {FOO: kept}


def test_the_last_consumer_member_missing_its_rebalance_timeout_downgrades_the_group():
    # testLastConsumerProtocolMemberRebalanceTimeoutInConsumerGroup
    h = harness()
    hb(h, "m1", 0, rebalance_timeout_ms=5000)
    c1 = join_new(h)["member_id"]
    hb(h, "m1", 1, owned={FOO: [0, 1, 2, 3, 4, 5]})   # m1 must revoke: its rebalance timer runs
    h.advance(5000)
    assert consumer_group(h) is None and set(h.group(GROUP).members) == {c1}
    fenced = [e for e in h.events if e["event"] == "consumer.member_fenced"]
    assert [(e["member"], e["reason"]) for e in fenced] == [("m1", "rebalance_timeout")]


def test_a_classic_members_offset_fetch_checks_its_generation():
    # ConsumerGroup.validateOffsetFetch: a classic member's wrong epoch is ILLEGAL_GENERATION
    from groupcoord.coordinator.group.offsets import OffsetFetchRequest
    from group_harness import Call
    h = harness()
    hb(h, "m1", 0)
    c1 = join_new(h)["member_id"]
    for epoch, code in ((1, E.ILLEGAL_GENERATION), (2, 0)):
        call = Call()
        h.gc.offset_fetch(call, OffsetFetchRequest(GROUP, None, member_id=c1, member_epoch=epoch))
        assert call.result["error_code"] == code
