"""What Kafka 4.2 and 4.3 changed in the group coordinator, each behind the release that has it
(``groupcoord.kafka.version``), as Kafka's tests of that release expect it. The Kafka-derived
conformance tests of the other files mirror Kafka 4.1's tests and run at 4.1."""
from __future__ import annotations

import pytest

from groupcoord.protocol.errors import ErrorCode as E

from test_conformance_consumer_group import BAR, FOO, GROUP, assigned, group, harness, hb


def bumped(h) -> list[int]:
    """The group epochs written (each epoch record comes with its consumer.group_epoch_bumped)."""
    return [e["generation"] for e in h.events if e["event"] == "consumer.group_epoch_bumped"]


@pytest.mark.parametrize("release,epoch", [("4.3", 2), ("4.2", 1), ("4.1", 1)])
def test_member_joins_an_empty_group_at_the_epoch_of_its_release(release, epoch):
    # GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup: 4.3 expects memberEpoch 2 and the
    # epoch record 2 (KAFKA-20268: a new group starts at epoch 1, written nowhere); 4.2 expects 1
    h = harness(groupcoord_kafka_version=release)
    resp = hb(h, "m1", 0, topics=[FOO, BAR])
    assert resp["error_code"] == 0 and resp["member_epoch"] == epoch
    assert assigned(resp) == {FOO: [0, 1, 2, 3, 4, 5], BAR: [0, 1, 2]}
    g = group(h)
    assert (g.state, g.group_epoch, g.assignment_epoch) == ("Stable", epoch, epoch)
    assert bumped(h) == [epoch]
    # the next member bumps it once more
    assert hb(h, "m2", 0)["member_epoch"] == epoch + 1


def test_a_member_without_a_subscription_joins_a_new_group_at_epoch_1_in_4_3():
    # KAFKA-20268: nothing bumps the epoch of a new group whose first member subscribes to nothing, so it
    # stays at 1 and no epoch record is written; 4.1 forced a bump of a new group (epoch 0 -> 1)
    h = harness(groupcoord_kafka_version="4.3")
    resp = hb(h, "m1", 0, topics=[])
    assert (resp["error_code"], resp["member_epoch"], assigned(resp)) == (0, 1, {})
    assert (group(h).group_epoch, group(h).assignment_epoch) == (1, 1) and bumped(h) == []
    h = harness(groupcoord_kafka_version="4.1")
    assert hb(h, "m1", 0, topics=[])["member_epoch"] == 1 and bumped(h) == [1]


@pytest.mark.parametrize("release,with_pending", [("4.3", True), ("4.2", False)])
def test_describe_shows_the_partitions_a_member_still_has_to_revoke(release, with_pending):
    # ConsumerGroupDescribeRequestTest.testConsumerGroupDescribeIncludesPartitionsPendingRevocation and
    # ConsumerGroupMemberTest.testAsConsumerGroupDescribeMemberWithSameTopicPendingRevocation (KAFKA-20431,
    # 4.3): a member's Assignment is its assigned partitions and those pending revocation, merged per topic
    h = harness(groupcoord_kafka_version=release)
    first = hb(h, "m1", 0)["member_epoch"]
    hb(h, "m2", 0)
    revoking = hb(h, "m1", first, owned={FOO: list(range(6))})
    keep = assigned(revoking)[FOO]
    m1 = group(h).members["m1"]
    pending = sorted(p for ps in m1.pending_revocation.values() for p in ps)
    assert len(keep) == 3 and len(pending) == 3
    described = {m["member_id"]: m for m in h.gc.consumer.describe(GROUP)["members"]}["m1"]
    [topic] = described["assignment"]["topic_partitions"]
    assert topic["topic_name"] == FOO
    assert topic["partitions"] == (sorted(keep + pending) if with_pending else keep)
    [target] = described["target_assignment"]["topic_partitions"]
    assert target["partitions"] == keep


@pytest.mark.parametrize("release,protocols,warned", [
    ("4.3", "classic,consumer", "The following protocol(s) are currently disabled: streams."),
    ("4.3", "classic", "The following protocol(s) are currently disabled: consumer, streams."),
    ("4.3", None, None), ("4.2", "classic,consumer", None)])
def test_the_rebalance_protocols_config_is_deprecated_in_4_3(release, protocols, warned):
    # KIP-1237 (KAFKA-19740): Kafka 4.3 warns at start-up when group.coordinator.rebalance.protocols is
    # set at all, naming the protocols it disables among Kafka's defaults (classic, consumer, streams)
    from structlog.testing import capture_logs

    from groupcoord.coordinator.config import BrokerConfig
    from groupcoord.coordinator.service import Service

    values = {"groupcoord.kafka.version": release}
    if protocols is not None:
        values["group.coordinator.rebalance.protocols"] = protocols
    with capture_logs() as logs:
        Service(BrokerConfig(values, environ={}))
    messages = [e["message"] for e in logs if e["event"] == "config_deprecated"]
    if warned is None:
        assert messages == []
    else:
        [message] = messages
        assert message.startswith("The config `group.coordinator.rebalance.protocols` is deprecated and will be "
                                  "removed in Kafka 5.0. ") and warned in message


def _member_at_epoch_10(classic: bool = False):
    """ConsumerGroupTest's set-up: a member at epoch 10 that got foo-0 at epoch 7."""
    import uuid

    from groupcoord.coordinator.group.consumer.group import (ClassicMemberMetadata, ConsumerGroup,
                                                             ConsumerGroupMember)
    foo = uuid.uuid4()
    group = ConsumerGroup("g", 0)
    group.members["m"] = ConsumerGroupMember(
        "m", member_epoch=10, previous_member_epoch=9, assigned={foo: {0: 7}},
        classic=ClassicMemberMetadata(45000, (("range", b""),)) if classic else None)
    return group, {"foo": foo}.get


def _commit(group, topic_id, epoch: int, partition: int = 0, topic: str = "foo"):
    return group.validate_offset_commit("m", None, epoch, True, [{"name": topic, "partitions": [
        {"partition_index": partition}]}], topic_id)


@pytest.mark.parametrize("classic", [False, True])
def test_an_older_epoch_commits_the_partitions_assigned_at_it_or_before(classic):
    # ConsumerGroupTest.testValidateOffsetCommitWithEpochValidation (and ...WithClassicProtocolMember,
    # ...WithUnassignedTopicOrPartition), Kafka 4.3 (KIP-1251): member epoch 10, foo-0 assigned at 7
    group, topic_id = _member_at_epoch_10(classic)
    stale = E.ILLEGAL_GENERATION if classic else E.STALE_MEMBER_EPOCH
    assert _commit(group, topic_id, 11) == stale                        # newer than the member's
    assert _commit(group, topic_id, 10) is None and _commit(group, topic_id, 7) is None
    assert _commit(group, topic_id, 6) == stale                         # older than foo-0's assignment
    assert _commit(group, topic_id, 8, partition=1) == stale            # not assigned
    assert _commit(group, topic_id, 8, topic="bar") == stale            # no such topic
    # pending revocation counts as well
    m = group.members["m"]
    m.pending_revocation, m.assigned = m.assigned, {}
    assert _commit(group, topic_id, 7) is None and _commit(group, topic_id, 6) == stale
    # before 4.3 (no partitions given) only the member's epoch
    assert group.validate_offset_commit("m", None, 7, True) == stale


@pytest.mark.parametrize("release,accepted", [("4.3", True), ("4.2", False)])
def test_a_commit_at_the_previous_epoch_for_a_partition_kept_is_accepted_from_4_3(release, accepted):
    # what a consumer whose heartbeat and commit cross sees: m1 keeps half of foo across m2's join and
    # commits one of those at its previous epoch (OffsetMetadataManagerTest's stale-epoch cases, 4.3)
    h = harness(groupcoord_kafka_version=release)
    first = hb(h, "m1", 0)["member_epoch"]
    hb(h, "m2", 0)
    keep = assigned(hb(h, "m1", first, owned={FOO: list(range(6))}))[FOO]
    assert hb(h, "m1", first, owned={FOO: keep})["member_epoch"] == first + 1
    resp = h.commit(GROUP, member_id="m1", generation=first, offsets={(FOO, keep[0]): 5, (FOO, keep[1]): 6},
                    group_id_not_found=True)
    codes = [p["error_code"] for p in resp["topics"][0]["partitions"]]
    assert codes == ([0, 0] if accepted else [E.STALE_MEMBER_EPOCH] * 2)
    # a partition the member never had fails the whole commit
    other = next(p for p in range(6) if p not in keep)
    resp = h.commit(GROUP, member_id="m1", generation=first, offsets={(FOO, keep[0]): 7, (FOO, other): 7},
                    group_id_not_found=True)
    assert [p["error_code"] for p in resp["topics"][0]["partitions"]] == [E.STALE_MEMBER_EPOCH] * 2
    assert h.offsets(GROUP) == ({(FOO, keep[0]): 5, (FOO, keep[1]): 6} if accepted else {})


def test_a_target_assignment_waits_for_the_assignment_interval():
    # GroupMetadataManagerTest.testConsumerGroupAssignmentInterval (Kafka 4.3, KIP-1263; interval 5000)
    h = harness(groupcoord_kafka_version="4.3", group_consumer_assignment_interval_ms=5000)
    h.advance(1_000_000)                      # (a clock that is not 0: 0 is "no previous assignment")
    r1 = hb(h, "m1", 0)
    assert (r1["member_epoch"], assigned(r1)) == (2, {FOO: [0, 1, 2, 3, 4, 5]})      # a new group: at once
    assert group(h).assignment_timestamp == 1_000_000
    h.advance(4995)
    r2 = hb(h, "m2", 0)
    g = group(h)
    assert (r2["member_epoch"], assigned(r2)) == (2, {})         # the last target's epoch, nothing yet
    assert (g.group_epoch, g.assignment_epoch, g.state) == (3, 2, "Assigning")
    assert "m2" not in g.target
    h.advance(10)
    r2 = hb(h, "m2", 2)
    g = group(h)
    assert r2["member_epoch"] == 3 and (g.assignment_epoch, g.assignment_timestamp) == (3, 1_005_005)
    assert g.members["m2"].state.value == "unreleased_partitions"


@pytest.mark.parametrize("release", ["4.2", "4.1"])
def test_before_4_3_a_target_assignment_is_computed_at_once(release):
    h = harness(groupcoord_kafka_version=release, group_consumer_assignment_interval_ms=5000)
    h.advance(1_000_000)
    first = hb(h, "m1", 0)["member_epoch"]
    h.advance(1)
    assert hb(h, "m2", 0)["member_epoch"] == first + 1 and group(h).assignment_timestamp == 0
    # and the group config is Kafka 4.3's
    with pytest.raises(ValueError, match="^Unknown group config name: consumer.assignment.interval.ms$"):
        h.gc.group_configs.set(GROUP, {"consumer.assignment.interval.ms": 0})


def test_the_assignment_interval_is_a_group_config_within_the_brokers_bounds():
    # GroupConfig consumer.assignment.interval.ms (Kafka 4.3): 0 computes at once
    h = harness(groupcoord_kafka_version="4.3", group_consumer_assignment_interval_ms=5000)
    with pytest.raises(ValueError, match="^consumer.assignment.interval.ms must be less than or equal to "
                                         "group.consumer.max.assignment.interval.ms$"):
        h.gc.group_configs.set(GROUP, {"consumer.assignment.interval.ms": 20000})
    h.gc.group_configs.set(GROUP, {"consumer.assignment.interval.ms": 0})
    h.advance(1_000_000)
    hb(h, "m1", 0)
    h.advance(1)
    assert hb(h, "m2", 0)["member_epoch"] == 3


def test_the_last_member_leaving_leaves_the_assignment_epoch_behind_until_4_4():
    # KAFKA-20442 is Kafka 4.4's: in 4.3 the last member's leave writes only the group epoch, so the empty
    # group's assignment epoch stays one behind (GroupMetadataManagerTest.testSessionTimeoutExpiration at 4.3)
    h = harness(groupcoord_kafka_version="4.3")
    h.advance(1_000_000)
    hb(h, "m1", 0)
    hb(h, "m1", -1)
    g = group(h)
    assert (g.state, g.group_epoch, g.assignment_epoch) == ("Empty", 3, 2)
    assert h.gc.consumer.describe(GROUP)["assignment_epoch"] == 2


# ---- fidelity gaps of every 4.x release (older than 4.2, found against Kafka 4.3's tests)
@pytest.mark.parametrize("release", ["4.3", "4.1"])
def test_a_member_subscribed_by_names_is_described_with_an_empty_regex(release):
    # ConsumerGroupDescribeRequestTest.testConsumerGroupDescribeWithNewGroupCoordinator: setSubscribedTopicRegex("")
    # (ConsumerGroupMember.Builder's default since 2023)
    h = harness(groupcoord_kafka_version=release)
    hb(h, "m1", 0)
    hb(h, "m2", 0, topics=None, regex="fo.*")
    described = {m["member_id"]: m for m in h.gc.consumer.describe(GROUP)["members"]}
    assert (described["m1"]["subscribed_topic_regex"], described["m2"]["subscribed_topic_regex"]) == ("", "fo.*")


@pytest.mark.parametrize("release", ["4.3", "4.1"])
def test_a_static_member_rejoining_under_its_own_id_while_active_is_unreleased(release):
    # GroupMetadataManager.throwIfInstanceIdIsUnreleased (4.1 to 4.3): with epoch 0 the static member is
    # found by instance id, and whatever the member id, an instance not released (epoch -2) or expired
    # answers UNRELEASED_INSTANCE_ID (testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId)
    h = harness(groupcoord_kafka_version=release)
    epoch = hb(h, "m1", 0, instance_id="i1")["member_epoch"]
    again = hb(h, "m1", 0, instance_id="i1")
    assert again["error_code"] == E.UNRELEASED_INSTANCE_ID
    assert again["error_message"] == ("Static member m1 with instance id i1 cannot join the group because the "
                                      "instance id is owned by m1 member.")
    assert hb(h, "m2", 0, instance_id="i1")["error_code"] == E.UNRELEASED_INSTANCE_ID
    # once it has left for now (epoch -2), its instance is taken over
    assert hb(h, "m1", -2, instance_id="i1")["error_code"] == 0
    assert hb(h, "m2", 0, instance_id="i1")["member_epoch"] == epoch


# ---- the reconciliation and rejoins of Kafka 4.2 and 4.3
@pytest.mark.parametrize("release,rejoins", [("4.3", True), ("4.2", True), ("4.1", False)])
def test_a_member_may_rejoin_with_epoch_0_under_its_own_id_from_4_2(release, rejoins):
    # GroupMetadataManagerTest.testMemberCanRejoinWithEpochZeroInStableState (Kafka 4.2, KAFKA-19233);
    # 4.1's throwIfConsumerGroupMemberEpochIsInvalid fences a member whose epoch moved past 0
    h = harness(groupcoord_kafka_version=release)
    first = hb(h, "m1", 0)["member_epoch"]
    hb(h, "m2", 0)
    kept = assigned(hb(h, "m1", first, owned={FOO: list(range(6))}))[FOO]
    stable = hb(h, "m1", first, owned={FOO: kept})          # revoked: on to the group's epoch
    epoch = stable["member_epoch"]
    assert epoch == first + 1 and group(h).members["m1"].previous_member_epoch == first
    again = hb(h, "m1", 0)
    if rejoins:
        assert (again["error_code"], again["member_epoch"], assigned(again)) == (0, epoch, {FOO: kept})
    else:
        assert again["error_code"] == E.FENCED_MEMBER_EPOCH
        assert again["error_message"] == (f"The consumer group member has a smaller member epoch (0) than the one "
                                          f"known by the group coordinator ({epoch}). The member must abandon all "
                                          "its partitions and rejoin.")


@pytest.mark.parametrize("release,bumped_epoch", [("4.2", False), ("4.1", True)])
def test_a_member_revoking_again_after_a_revocation_keeps_its_epoch_from_4_2(release, bumped_epoch):
    # CurrentAssignmentBuilder UNREVOKED_PARTITIONS -> UNREVOKED_PARTITIONS: 4.1 moves the member to epoch + 1
    # (computeNextAssignment(memberEpoch + 1)); 4.2 keeps its epoch (KAFKA-19974)
    h = harness(groupcoord_kafka_version=release)
    e1 = hb(h, "m1", 0)["member_epoch"]
    hb(h, "m2", 0)
    kept = assigned(hb(h, "m1", e1, owned={FOO: list(range(6))}))[FOO]     # revoking the other three
    assert len(kept) == 3 and group(h).members["m1"].state.value == "unrevoked_partitions"
    hb(h, "m3", 0)                                                        # m1 is to give one more away
    r = hb(h, "m1", e1, owned={FOO: kept})                                # the first three revoked
    m1 = group(h).members["m1"]
    assert m1.state.value == "unrevoked_partitions" and len(assigned(r)[FOO]) == 2
    assert r["member_epoch"] == m1.member_epoch == (e1 + 1 if bumped_epoch else e1)


@pytest.mark.parametrize("release,dropped", [("4.2", True), ("4.1", False)])
def test_a_changed_regex_drops_the_old_topics_before_the_new_target_from_4_2(release, dropped):
    # KAFKA-19431 (4.2): a member whose subscription changed reconciles against it at once (the old
    # regex's topics go before the new one is resolved); 4.1 keeps them until the next target
    h = harness(groupcoord_kafka_version=release)
    hb(h, "m1", 0, regex="foo*")
    e = hb(h, "m1", 1)["member_epoch"]
    h.advance(10_001)
    r = hb(h, "m1", e, regex="bar*", owned={})
    assert (r["member_epoch"], assigned(r)) == ((e, {}) if dropped else (e, None))
    assert bool(group(h).members["m1"].assigned) is not dropped


def test_a_classic_member_rejoins_only_for_a_newer_target_in_4_3():
    # KAFKA-20272 (4.3): with the assignment interval the target lags the group epoch; a classic member of a
    # mixed group is told to rejoin (REBALANCE_IN_PROGRESS) once the newer target exists
    from test_conformance_mixed_group import join_new, sync
    h = harness(groupcoord_kafka_version="4.3", group_consumer_assignment_interval_ms=5000)
    h.advance(1_000_000)
    e = hb(h, "m1", 0)["member_epoch"]
    h.advance(5000)
    classic = join_new(h)
    assert sync(h, classic["member_id"], classic["generation_id"])["error_code"] == 0
    c1, generation = classic["member_id"], classic["generation_id"]
    h.advance(10)
    hb(h, "m2", 0)                                   # bumps the group epoch; the target waits
    assert group(h).group_epoch > group(h).assignment_epoch == generation
    assert h.heartbeat(GROUP, c1, generation) == 0
    h.advance(5000)
    hb(h, "m1", e)                                   # the interval passed: the new target
    assert group(h).assignment_epoch == group(h).group_epoch
    assert h.heartbeat(GROUP, c1, generation) == E.REBALANCE_IN_PROGRESS
