"""The consumer group protocol (KIP-848) in the core, in virtual time: ConsumerGroupHeartbeat step
by step, after Kafka's GroupMetadataManagerTest (each test names the case it mirrors), and the
offset APIs' member epochs (OffsetMetadataManagerTest)."""
from __future__ import annotations

import uuid

import pytest

from group_harness import Call, Harness

from groupcoord.coordinator.cluster import Cluster, Node
from groupcoord.coordinator.group.consumer.group import ResolvedRegularExpression
from groupcoord.coordinator.group.consumer.requests import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.errors import ErrorCode as E

GROUP = "cg"
FOO, BAR = "foo", "bar"


def harness(**config) -> Harness:
    config.setdefault("group_consumer_heartbeat_interval_ms", 5000)
    # these mirror Kafka 4.1's tests (a new group's first member at epoch 1); what 4.2 and 4.3
    # changed is in test_conformance_kafka_releases.py
    config.setdefault("groupcoord_kafka_version", "4.1")
    h = Harness(**config)
    cluster = Cluster([Node(0, "localhost", 9092)], topic_id_factory=tid)
    cluster.create_topic(FOO, 6)
    cluster.create_topic(BAR, 3)
    h.gc.set_metadata_image(cluster)
    cluster.topic_listeners.append(h.gc.topics_changed)
    h.cluster = cluster
    return h


_NAMES: dict[uuid.UUID, str] = {}


def tid(name: str) -> uuid.UUID:
    """The topic id the harness' cluster gives a topic (made from its name)."""
    _NAMES[topic_id := uuid.uuid5(uuid.NAMESPACE_OID, name)] = name
    return topic_id


def hb(h: Harness, member_id: str, epoch: int, *, topics=None, owned=None, instance_id=None, assignor=None,
       rebalance_timeout_ms=None, group_id=GROUP, version=1, regex=None) -> dict:
    """One heartbeat as the handler makes it: the request's checks, then the core. ``owned``:
    {topic name: [partitions]}; ``topics``: the subscription (a full request when joining; by
    default [foo], or none with a ``regex``)."""
    joining = epoch == 0
    req = ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
        rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms is not None else (30000 if joining else -1),
        subscribed_topic_names=topics if topics is not None else ([FOO] if joining and regex is None else None),
        subscribed_topic_regex=regex, server_assignor=assignor,
        topic_partitions=[] if joining and owned is None else
        (None if owned is None else [(tid(t), ps) for t, ps in owned.items()]),
        client_id="client", client_host="/127.0.0.1", version=version)
    error = req.error(h.gc.consumer.assignors)
    if error is not None:
        return {"error_code": int(error[0]), "error_message": error[1]}
    call = Call()
    h.gc.consumer_group_heartbeat(call, req)
    return call.result


def assigned(resp: dict) -> dict:
    """{topic name: sorted partitions} of a heartbeat response's assignment (None: not sent)."""
    if resp["assignment"] is None:
        return None
    return {_NAMES[t["topic_id"]]: sorted(t["partitions"]) for t in resp["assignment"]["topic_partitions"]}


def group(h):
    return h.gc.consumer_group(GROUP)


@pytest.mark.parametrize("request_kw,message", [
    (dict(member_epoch=0, member_id="", version=1), "MemberId can't be empty."),
    (dict(member_epoch=1, member_id="", version=0), "MemberId can't be empty."),
    (dict(group_id=""), "GroupId can't be empty."),
    (dict(group_id="   "), "GroupId can't be empty."),          # "GroupId can't be all whitespaces"
    (dict(group_id="\t\n"), "GroupId can't be empty."),        # (Java's trim: every char up to ' ')
    (dict(member_epoch=1, member_id=" ", version=1), "MemberId can't be empty."),
    (dict(instance_id=""), "InstanceId can't be empty."),
    (dict(instance_id="  "), "InstanceId can't be empty."),
    (dict(rack_id=""), "RackId can't be empty."),
    (dict(rack_id=" "), "RackId can't be empty."),
    (dict(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided in first request."),
    (dict(topic_partitions=None), "TopicPartitions must be empty when (re-)joining."),
    (dict(topic_partitions=[(tid(FOO), [0])]), "TopicPartitions must be empty when (re-)joining."),
    (dict(subscribed_topic_names=None), "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                                        "when (re-)joining."),
    (dict(member_epoch=-2), "InstanceId can't be null."),
    (dict(member_epoch=-3), "MemberEpoch is invalid."),
])
def test_heartbeat_request_validation(request_kw, message):
    # testConsumerHeartbeatRequestValidation
    base = dict(group_id=GROUP, member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                subscribed_topic_names=[FOO], topic_partitions=[])
    base.update(request_kw)
    assert ConsumerGroupHeartbeatRequest(**base).error(["uniform", "range"]) == (E.INVALID_REQUEST, message)


def test_an_unknown_server_assignor_is_unsupported():
    # testConsumerHeartbeatRequestValidation (UnsupportedAssignorException)
    h = harness()
    resp = hb(h, "m", 0, assignor="sticky")
    assert resp["error_code"] == E.UNSUPPORTED_ASSIGNOR and "Supported assignors: uniform, range." in resp["error_message"]


def test_member_joins_an_empty_group_and_gets_everything():
    # testMemberJoinsEmptyConsumerGroup
    h = harness()
    resp = hb(h, "m1", 0, topics=[FOO, BAR])
    assert resp["error_code"] == 0 and resp["member_id"] == "m1" and resp["member_epoch"] == 1
    assert resp["heartbeat_interval_ms"] == 5000
    assert assigned(resp) == {FOO: [0, 1, 2, 3, 4, 5], BAR: [0, 1, 2]}
    g = group(h)
    assert (g.state, g.group_epoch, g.assignment_epoch) == ("Stable", 1, 1)
    assert [e["event"] for e in h.events] == ["group.created", "consumer.group_epoch_bumped", "consumer.member_joined",
                                              "group.state_change"]


def test_unknown_group_and_unknown_member():
    # testGroupIdNotFound / testMemberIdNotFound (epoch > 0)
    h = harness()
    assert hb(h, "m1", 1)["error_code"] == E.GROUP_ID_NOT_FOUND
    hb(h, "m1", 0)
    assert hb(h, "m2", 1)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_epochs_ahead_are_fenced_the_previous_one_is_accepted_with_a_subset():
    # testMemberEpochIsFenced... (throwIfConsumerGroupMemberEpochIsInvalid)
    h = harness()
    hb(h, "m1", 0)
    assert hb(h, "m1", 2, owned={FOO: list(range(6))})["error_code"] == E.FENCED_MEMBER_EPOCH
    hb(h, "m2", 0)                                       # epoch 2: m1 must give up half of foo
    r = hb(h, "m1", 1, owned={FOO: list(range(6))})
    assert r["error_code"] == 0 and r["member_epoch"] == 1           # revoking at its epoch
    keep = assigned(r)[FOO]
    r = hb(h, "m1", 1, owned={FOO: keep})                            # revoked: moves to epoch 2
    assert r["member_epoch"] == 2
    # the response was lost: epoch 1 again, owning a subset of its assignment, is accepted
    assert hb(h, "m1", 1, owned={FOO: keep})["error_code"] == 0
    # but not with a partition it no longer has
    other = [p for p in range(6) if p not in keep][:1]
    assert hb(h, "m1", 1, owned={FOO: keep + other})["error_code"] == E.FENCED_MEMBER_EPOCH


def test_a_partition_moves_only_once_released():
    # testReconciliationProcess: revocation first, then the new owner
    h = harness()
    hb(h, "m1", 0)
    r2 = hb(h, "m2", 0)
    assert r2["member_epoch"] == 2 and assigned(r2) == {}            # waits for m1 to release
    assert group(h).members["m2"].state.value == "unreleased_partitions"
    r1 = hb(h, "m1", 1, owned={FOO: list(range(6))})
    keep = assigned(r1)[FOO]
    assert len(keep) == 3 and group(h).members["m1"].state.value == "unrevoked_partitions"
    assert hb(h, "m2", 2, owned={})["assignment"] is None            # still owned by m1
    hb(h, "m1", 1, owned={FOO: keep})                                # m1 releases
    r2 = hb(h, "m2", 2, owned={})
    assert assigned(r2) == {FOO: sorted(set(range(6)) - set(keep))}
    assert group(h).state == "Stable"


def test_leave_bumps_the_epoch_and_the_others_take_over():
    # testLeavingMemberBumpsGroupEpoch
    h = harness()
    hb(h, "m1", 0)
    hb(h, "m2", 0)
    keep = assigned(hb(h, "m1", 1, owned={FOO: list(range(6))}))[FOO]
    hb(h, "m1", 1, owned={FOO: keep})
    hb(h, "m2", 2, owned={})
    r = hb(h, "m2", -1)
    assert (r["error_code"], r["member_id"], r["member_epoch"]) == (0, "m2", -1)
    assert group(h).group_epoch == 3 and "m2" not in group(h).members
    r = hb(h, "m1", 2, owned={FOO: keep})
    assert r["member_epoch"] == 3 and assigned(r) == {FOO: list(range(6))}
    assert hb(h, "m2", -1)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_a_static_member_leaves_for_now_and_its_replacement_keeps_its_partitions():
    # testStaticMemberRejoinsWithNewMemberIdAndPartitionsAreReassignedToIt /
    # testStaticMemberGetsBackAssignmentUponRejoin
    h = harness()
    hb(h, "a", 0, instance_id="i-a")
    hb(h, "b", 0, instance_id="i-b")
    keep = assigned(hb(h, "a", 1, owned={FOO: list(range(6))}, instance_id="i-a"))[FOO]
    hb(h, "a", 1, owned={FOO: keep}, instance_id="i-a")
    b_parts = assigned(hb(h, "b", 2, owned={}, instance_id="i-b"))[FOO]
    epoch = group(h).group_epoch
    assert hb(h, "b", -2, instance_id="i-b")["member_epoch"] == -2
    assert group(h).group_epoch == epoch                              # no bump: partitions reserved
    # another member with the instance id while the first still holds it... is refused
    assert hb(h, "b2", 0, instance_id="i-a")["error_code"] == E.UNRELEASED_INSTANCE_ID
    r = hb(h, "b2", 0, instance_id="i-b")
    assert r["error_code"] == 0 and assigned(r) == {FOO: b_parts} and group(h).group_epoch == epoch
    assert "b" not in group(h).members and group(h).static_members["i-b"] == "b2"
    assert hb(h, "b", 2, instance_id="i-b")["error_code"] == E.FENCED_INSTANCE_ID


def test_session_timeout_fences_the_member_in_virtual_time():
    # testSessionTimeoutLifecycle
    h = harness(group_consumer_session_timeout_ms=45000)
    hb(h, "m1", 0)
    hb(h, "m2", 0)
    h.advance(44_999)
    hb(h, "m1", 1, owned={FOO: list(range(6))})
    h.advance(1)                                                     # m2's session ends
    assert "m2" not in group(h).members and group(h).group_epoch == 3
    fenced = [e for e in h.events if e["event"] == "consumer.member_fenced"]
    assert [(e["member"], e["reason"], e["ts_ms"]) for e in fenced] == [("m2", "session_timeout", 45000)]


def test_group_configs_set_one_groups_session_timeout_and_heartbeat_interval():
    # GroupConfig consumer.session.timeout.ms / consumer.heartbeat.interval.ms, validated as
    # GroupConfig.validate does against the broker's group.consumer.min/max bounds
    h = harness(group_consumer_session_timeout_ms=45000)
    # (GroupConfig.validateValues' message, Kafka 4.1 to 4.3: it names the broker config, not the range)
    with pytest.raises(ValueError, match="^consumer.session.timeout.ms must be greater than or equal to "
                                         "group.consumer.min.session.timeout.ms$"):
        h.gc.group_configs.set(GROUP, {"consumer.session.timeout.ms": 10000})
    with pytest.raises(ValueError, match="^Unknown group config name: session.timeout.ms$"):
        h.gc.group_configs.set(GROUP, {"session.timeout.ms": 50000})
    h.gc.group_configs.set(GROUP, {"consumer.session.timeout.ms": 50000, "consumer.heartbeat.interval.ms": 7000})
    assert hb(h, "m1", 0)["heartbeat_interval_ms"] == 7000
    assert hb(h, "o1", 0, group_id="other")["heartbeat_interval_ms"] == 5000     # the broker's
    hb(h, "m2", 0)
    h.advance(49_999)
    hb(h, "m1", 1, owned={FOO: list(range(6))})
    assert "m2" in group(h).members
    h.advance(1)                                                     # m2's session: 50 s
    assert "m2" not in group(h).members
    h.gc.group_configs.set(GROUP, {"consumer.heartbeat.interval.ms": None})
    assert hb(h, "m1", group(h).members["m1"].member_epoch)["heartbeat_interval_ms"] == 5000


def test_rebalance_timeout_fences_a_member_that_does_not_revoke():
    # testRebalanceTimeoutLifecycle
    h = harness()
    hb(h, "m1", 0, rebalance_timeout_ms=12000)
    hb(h, "m2", 0)
    hb(h, "m1", 1, owned={FOO: list(range(6))})                      # told to revoke at t=0
    h.advance(11_999)
    hb(h, "m1", 1, owned={FOO: list(range(6))})                      # still owns them
    assert "m1" in group(h).members
    h.advance(1)
    assert "m1" not in group(h).members
    assert [e["reason"] for e in h.events if e["event"] == "consumer.member_fenced"] == ["rebalance_timeout"]


def test_group_max_size():
    # testConsumerGroupMemberEpochValidation... GROUP_MAX_SIZE_REACHED (consumerGroupHeartbeat)
    h = harness(group_consumer_max_size=1)
    hb(h, "m1", 0)
    assert hb(h, "m2", 0)["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_a_new_partition_bumps_the_epoch_at_the_next_heartbeat():
    # testSubscriptionMetadataRefreshedAfterTopicChange (Kafka waits for the next heartbeat too)
    h = harness()
    hb(h, "m1", 0)
    h.cluster.add_partitions(FOO, 8)
    r = hb(h, "m1", 1)
    assert r["member_epoch"] == 2 and assigned(r) == {FOO: list(range(8))}


def test_offset_commits_carry_the_member_epoch():
    # OffsetMetadataManagerTest: testConsumerGroupOffsetCommitWithStaleMemberEpoch,
    # testConsumerGroupOffsetCommitWithVersionSmallerThanVersion9, testConsumerGroupOffsetCommitFromAdminClient
    h = harness()
    hb(h, "m1", 0)
    ok = h.commit(GROUP, member_id="m1", generation=1, offsets={(FOO, 0): 10}, group_id_not_found=True)
    assert ok["topics"][0]["partitions"][0]["error_code"] == 0
    stale = h.commit(GROUP, member_id="m1", generation=2, offsets={(FOO, 0): 11}, group_id_not_found=True)
    assert stale["topics"][0]["partitions"][0]["error_code"] == E.STALE_MEMBER_EPOCH
    old = h.commit(GROUP, member_id="m1", generation=1, offsets={(FOO, 0): 11})
    assert old["topics"][0]["partitions"][0]["error_code"] == E.UNSUPPORTED_VERSION
    unknown = h.commit(GROUP, member_id="zz", generation=1, offsets={(FOO, 0): 11}, group_id_not_found=True)
    assert unknown["topics"][0]["partitions"][0]["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.offsets(GROUP) == {(FOO, 0): 10}


def test_list_describe_and_delete_see_the_consumer_group():
    h = harness()
    hb(h, "m1", 0)
    listed = Call()
    h.gc.list_groups(listed)
    assert listed.result["groups"] == [{"group_id": GROUP, "protocol_type": "consumer", "group_state": "Stable",
                                        "group_type": "consumer"}]
    classic_only = Call()
    h.gc.list_groups(classic_only, types_filter=["classic"])
    assert classic_only.result["groups"] == []
    d = h.gc.describe_group(GROUP, group_id_not_found=True)
    assert d["error_code"] == E.GROUP_ID_NOT_FOUND and d["error_message"] == f"Group {GROUP} is not a classic group."
    described = h.gc.consumer.describe(GROUP)
    assert described["group_state"] == "Stable" and described["members"][0]["member_id"] == "m1"
    assert described["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == FOO
    deleted = Call()
    h.gc.delete_groups(deleted, group_ids=[GROUP])
    assert deleted.result["results"] == [{"group_id": GROUP, "error_code": E.NON_EMPTY_GROUP}]
    hb(h, "m1", -1)
    deleted = Call()
    h.gc.delete_groups(deleted, group_ids=[GROUP])
    assert deleted.result["results"] == [{"group_id": GROUP, "error_code": 0}] and group(h) is None


def test_every_consumer_event_type_is_emitted_and_checked():
    # (the harness checks every event against its documented fields as it is emitted)
    from groupcoord.coordinator.events import EVENT_FIELDS
    h = harness(group_consumer_session_timeout_ms=45000)
    hb(h, "a", 0, instance_id="i-a")
    hb(h, "b", 0)
    hb(h, "a", -2, instance_id="i-a")                 # consumer.member_left (static)
    hb(h, "a2", 0, instance_id="i-a")                 # consumer.member_replaced
    hb(h, "b", -1)                                    # consumer.member_left
    h.advance(45_000)                                 # consumer.member_fenced (a2's session)
    kinds = {e["event"] for e in h.events}
    assert {k for k in EVENT_FIELDS if k.startswith("consumer.")} <= kinds
    # an empty consumer group becomes a classic one at a JoinGroup: group.deleted "converted"
    h.join(GROUP, client_id="classic")
    deleted = [e for e in h.events if e["event"] == "group.deleted"]
    assert [e["reason"] for e in deleted] == ["converted"] and h.gc.group(GROUP) is not None


def test_deleted_topics_and_offset_retention_reach_consumer_groups():
    # OffsetMetadataManagerTest: testOnPartitionsDeleted, testCleanupExpiredOffsets (consumer group:
    # offsets expire from their commit time; an empty group without offsets is deleted)
    h = harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    hb(h, "m1", 0, topics=[FOO, BAR])
    h.commit(GROUP, member_id="m1", generation=1, offsets={(FOO, 0): 5, (BAR, 0): 7}, group_id_not_found=True)
    assert h.gc.delete_topic_offsets(FOO) == 1 and h.offsets(GROUP) == {(BAR, 0): 7}
    h.run_until(120_000)                       # bar is subscribed: its offset stays
    hb(h, "m1", 1)
    assert h.offsets(GROUP) == {(BAR, 0): 7}
    hb(h, "m1", -1)
    h.run_until(180_000)
    assert group(h) is None
    assert [e["reason"] for e in h.events if e["event"] == "group.deleted"] == ["offsets_expired"]


def test_a_topic_re_created_smaller_under_the_same_id_does_not_break_the_assignor():
    h = harness()                              # (the harness' topic ids are made from the names)
    hb(h, "m1", 0)
    h.cluster.delete_topic(FOO)
    h.cluster.create_topic(FOO, 2)
    r = hb(h, "m1", 1)
    assert r["error_code"] == 0 and assigned(r) == {FOO: [0, 1]}


def test_a_static_member_rejoins_a_full_group():
    # testStaticMemberCanRejoinConsumerGroupWhenGroupIsFull (throwIfConsumerGroupIsFull skips a known instance)
    h = harness(group_consumer_max_size=1)
    assert hb(h, "a", 0, instance_id="ia")["error_code"] == 0
    assert hb(h, "b", 0)["error_code"] == E.GROUP_MAX_SIZE_REACHED
    hb(h, "a", -2, instance_id="ia")
    resp = hb(h, "a2", 0, instance_id="ia")
    assert resp["error_code"] == 0 and resp["member_epoch"] == 1


# ---- regular expressions (SubscribedTopicRegex) ---------------------------------------------------------------
def resolved(h, regex: str):
    """(topics, timestamp) of the group's resolution of the regex, None if it has none."""
    r = group(h).resolved_regexes.get(regex)
    return None if r is None else (set(r.topics), r.timestamp_ms)


def test_heartbeat_regex_validation():
    # testConsumerHeartbeatRegexValidation (Kafka 4.0)
    h = harness()
    r = hb(h, "m", 0, regex="[")
    assert r["error_code"] == E.INVALID_REGULAR_EXPRESSION
    assert r["error_message"] == "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ]."
    assert group(h) is None                                 # the refused heartbeat made no group
    assert hb(h, "m", 0, regex="x.*")["member_epoch"] == 1  # valid (and matches no topic)
    r = hb(h, "m", 1, regex="(")
    assert (r["error_code"], r["error_message"]) == (
        E.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `(` is not a valid regular expression: missing closing ).")
    assert group(h).members["m"].subscribed_topic_regex == "x.*"
    assert hb(h, "m", 1, topics=[FOO])["member_epoch"] == 2  # names changed: the regex stays


def test_a_new_regex_is_resolved_after_the_heartbeat_that_brings_it():
    # testConsumerGroupMemberJoinsWithNewRegex (Kafka 4.0): no bump for an unresolved regex; the
    # resolution (Kafka's background job) bumps the group epoch; the member gets its topics next time
    h = harness()
    hb(h, "m1", 0)
    r = hb(h, "m2", 0, regex="foo*")
    assert (r["member_epoch"], assigned(r)) == (1, {})
    g = group(h)
    assert g.resolved_regexes == {"foo*": ResolvedRegularExpression(frozenset({FOO}), h.gc.consumer.metadata_version, 0)}
    assert (g.group_epoch, g.assignment_epoch, g.state) == (2, 1, "Assigning")
    assert g.is_subscribed_to_topic(FOO) and not g.homogeneous()
    h.advance(5000)
    assert hb(h, "m2", 1, owned={})["member_epoch"] == 2           # waits for m1 to release
    keep = assigned(hb(h, "m1", 1, owned={FOO: list(range(6))}))[FOO]
    hb(h, "m1", 1, owned={FOO: keep})
    r = hb(h, "m2", 2, owned={})
    assert assigned(r) == {FOO: sorted(set(range(6)) - set(keep))} and group(h).state == "Stable"


def test_a_member_picks_up_a_regex_already_resolved_at_once():
    # testConsumerGroupMemberPicksUpExistingResolvedRegularExpression (Kafka 4.0)
    h = harness()
    hb(h, "m1", 0, regex="foo*")
    assert assigned(hb(h, "m1", 1)) == {FOO: list(range(6))}
    r = hb(h, "m2", 0, regex="foo*")
    g = group(h)
    assert r["member_epoch"] == g.group_epoch == 3 and g.subscribed_regexes == {"foo*": 2}
    assert g.homogeneous()                       # one regex for every member, no names
    assert {m: len(t.get(tid(FOO), ())) for m, t in g.target.items()} == {"m1": 3, "m2": 3}


def test_a_changed_regex_drops_the_old_topics_at_once_and_is_resolved_after():
    # testConsumerGroupMemberJoinsWithUpdatedRegex (Kafka 4.2: the current assignment follows the new
    # subscription at once, KAFKA-19431; an unresolved regex counts as no topic)
    h = harness(groupcoord_kafka_version="4.2")
    hb(h, "m1", 0, regex="foo*")
    hb(h, "m1", 1)
    h.advance(10_001)                            # past the 10 s between two resolutions
    r = hb(h, "m1", 2, regex="foo*|bar*", owned={})
    assert (r["member_epoch"], assigned(r)) == (2, {})
    g = group(h)
    assert list(g.resolved_regexes) == ["foo*|bar*"]                # the old one's resolution is gone
    assert resolved(h, "foo*|bar*") == ({FOO, BAR}, 10_001) and g.group_epoch == 3
    assert assigned(hb(h, "m1", 2, owned={})) == {FOO: list(range(6)), BAR: [0, 1, 2]}


def test_a_regex_changed_within_10s_of_a_resolution_is_resolved_at_a_later_heartbeat():
    # testConsumerGroupMemberJoinsWithRegexAndUpdatesItBeforeResolutionCompleted: Kafka's job for the
    # first regex had not run when the member changed it; here it had (it runs right after the
    # heartbeat), and the change within 10 s of it waits, as Kafka's second job does, for the next heartbeat
    h = harness()
    hb(h, "m1", 0, regex="foo*")
    assert resolved(h, "foo*") == ({FOO}, 0) and group(h).group_epoch == 2
    r = hb(h, "m1", 1, regex="foo*|bar*")
    assert (r["member_epoch"], assigned(r)) == (2, None)
    assert group(h).resolved_regexes == {} and group(h).group_epoch == 2
    r = hb(h, "m1", 2)
    assert r["member_epoch"] == 2 and resolved(h, "foo*|bar*") == ({FOO, BAR}, 0) and group(h).group_epoch == 3
    assert assigned(hb(h, "m1", 2)) == {FOO: list(range(6)), BAR: [0, 1, 2]}


def test_a_topic_created_later_is_resolved_at_the_first_heartbeat_10s_after_the_last_resolution():
    # testConsumerGroupMemberJoinRefreshesExpiredRegexes (Kafka 4.0: new topics in the metadata image)
    h = harness()
    hb(h, "m1", 0, regex="foo*")
    h.advance(5000)
    hb(h, "m1", 1)
    h.cluster.create_topic("fooo", 2)
    h.cluster.create_topic("other", 1)
    h.advance(4000)
    assert hb(h, "m1", 2)["member_epoch"] == 2 and resolved(h, "foo*") == ({FOO}, 0)     # within 10 s
    h.advance(2000)
    assert hb(h, "m1", 2)["member_epoch"] == 2                                           # answered first...
    g = group(h)
    assert resolved(h, "foo*") == ({FOO, "fooo"}, 11_000) and g.group_epoch == 3       # ...then resolved
    assert g.resolved_regexes["foo*"].version == h.gc.consumer.metadata_version
    assert assigned(hb(h, "m1", 2)) == {FOO: list(range(6)), "fooo": [0, 1]}


def test_without_new_topics_regexes_are_resolved_again_after_the_refresh_interval():
    # testConsumerGroupMemberJoinsRefreshTopicAuthorization's interval (Kafka 4.1, KAFKA-18961:
    # group.consumer.regex.refresh.interval.ms)
    h = harness(group_consumer_regex_refresh_interval_ms=60_000)
    hb(h, "m1", 0, regex="foo*")
    h.advance(30_000)
    hb(h, "m1", 1)
    assert resolved(h, "foo*") == ({FOO}, 0)
    h.advance(30_001)
    hb(h, "m1", 2)
    assert resolved(h, "foo*") == ({FOO}, 60_001) and group(h).group_epoch == 2       # same topics: no bump


def test_partitions_added_to_or_a_topic_deleted_under_a_regex_reach_the_member_without_a_resolution():
    # testOnMetadataUpdate: the groups subscribed to a changed topic, through a regex too, refresh
    # their metadata at their next heartbeat; a grown or deleted topic is no new topic for the regexes
    h = harness()
    hb(h, "m1", 0, regex="foo*|bar")
    h.advance(11_000)
    assert assigned(hb(h, "m1", 1)) == {FOO: list(range(6)), BAR: [0, 1, 2]}
    h.cluster.add_partitions(FOO, 8)
    r = hb(h, "m1", 2)
    assert r["member_epoch"] == 3 and assigned(r) == {FOO: list(range(8)), BAR: [0, 1, 2]}
    h.cluster.delete_topic(BAR)
    r = hb(h, "m1", 3, owned={FOO: list(range(8)), BAR: [0, 1, 2]})
    assert r["member_epoch"] == 3 and assigned(r) == {FOO: list(range(8))}    # bar's to revoke
    assert hb(h, "m1", 3, owned={FOO: list(range(8))})["member_epoch"] == group(h).group_epoch == 4
    assert resolved(h, "foo*|bar") == ({FOO, BAR}, 0)          # cleaned at the next resolution (Kafka too)


def test_clearing_the_regex_bumps_the_group_epoch():
    # testConsumerGroupMemberClearsRegex (Kafka 4.1.2/4.2, KAFKA-19891)
    h = harness()
    hb(h, "m1", 0, regex="foo*")
    hb(h, "m1", 1)
    r = hb(h, "m1", 2, regex="", owned={})
    assert (r["member_epoch"], assigned(r)) == (3, {})
    g = group(h)
    assert g.subscribed_regexes == {} and g.resolved_regexes == {} and g.subscription_metadata == {}
    assert g.members["m1"].subscribed_topic_regex is None


def test_the_last_member_leaving_a_regex_drops_its_resolution():
    # testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced
    h = harness(group_consumer_session_timeout_ms=45000)
    hb(h, "m1", 0, regex="foo*")
    hb(h, "m2", 0, regex="foo*")
    hb(h, "m3", 0, topics=[BAR])
    assert group(h).subscribed_regexes == {"foo*": 2} and group(h).is_subscribed_to_topic(FOO)
    hb(h, "m1", -1)
    assert resolved(h, "foo*") == ({FOO}, 0)
    h.advance(30_000)
    hb(h, "m3", group(h).members["m3"].member_epoch)
    h.advance(15_000)                            # m2's session ends
    g = group(h)
    assert list(g.members) == ["m3"] and g.resolved_regexes == {} and g.subscribed_regexes == {}
    assert not g.is_subscribed_to_topic(FOO) and set(g.subscription_metadata) == {BAR}


def test_a_static_member_rejoining_with_another_regex_and_a_replacement_keeping_it():
    # testStaticConsumerGroupMemberJoinsWithUpdatedRegex (Kafka 4.2: the topics of the old regex are
    # dropped at once); a replacement with the same regex keeps its resolution
    h = harness(groupcoord_kafka_version="4.2")
    hb(h, "s1", 0, instance_id="i", regex="foo*|bar*")
    assert assigned(hb(h, "s1", 1, instance_id="i")) == {FOO: list(range(6)), BAR: [0, 1, 2]}
    h.advance(10_001)
    hb(h, "s1", -2, instance_id="i")
    r = hb(h, "s2", 0, instance_id="i", regex="foo*")
    assert (r["member_epoch"], assigned(r)) == (2, {})
    g = group(h)
    assert list(g.resolved_regexes) == ["foo*"] and resolved(h, "foo*") == ({FOO}, 10_001) and g.group_epoch == 3
    assert assigned(hb(h, "s2", 2, instance_id="i")) == {FOO: list(range(6))}
    hb(h, "s2", -2, instance_id="i")
    r = hb(h, "s3", 0, instance_id="i", regex="foo*")
    assert assigned(r) == {FOO: list(range(6))} and group(h).group_epoch == 3
    assert resolved(h, "foo*") == ({FOO}, 10_001) and group(h).subscribed_regexes == {"foo*": 1}


def test_subscription_type_and_subscribed_topics_with_regexes():
    # ConsumerGroupTest: testSubscriptionType, testIsSubscribedToTopic, testSubscribedRegularExpressionCount
    from groupcoord.coordinator.group.consumer.group import ConsumerGroup, ConsumerGroupMember

    def group_of(*members, resolutions=None):
        g = ConsumerGroup("g", 0)
        for i, (names, regex) in enumerate(members):
            g.update_member(ConsumerGroupMember(f"m{i}", subscribed_topic_names=tuple(names),
                                                subscribed_topic_regex=regex))
        for regex, topics in (resolutions or {}).items():
            g.resolved_regexes[regex] = ResolvedRegularExpression(frozenset(topics), 0, 0)
        return g
    assert group_of(([FOO], None), ([FOO], None)).homogeneous()
    assert not group_of(([FOO], None), ([BAR], None)).homogeneous()
    assert group_of(([], "f.*"), ([], "f.*")).homogeneous()
    assert not group_of(([], "f.*"), ([BAR], "f.*")).homogeneous()
    assert not group_of(([], "f.*"), ([], "b.*")).homogeneous()
    assert not group_of(([], "f.*"), ([FOO], None)).homogeneous()
    g = group_of(([BAR], None), ([], "f.*"), ([], "f.*"), resolutions={"f.*": {FOO}})
    assert g.subscribed_regexes == {"f.*": 2} and g.subscribed_topic_names() == {FOO, BAR}
    assert set(g.member_topics(g.members["m1"])) == {FOO} and g.is_subscribed_to_topic(FOO)
    g.remove_member("m1")
    g.update_member(ConsumerGroupMember("m2", subscribed_topic_regex="b.*"))
    assert g.subscribed_regexes == {"b.*": 1}
    assert g.subscribed_topic_names() == {BAR}             # an unsubscribed regex's topics no longer count


def test_refresh_interval_config_has_kafkas_minimum():
    # GroupCoordinatorConfig: group.consumer.regex.refresh.interval.ms, atLeast(10 * 1000) (Kafka 4.1)
    from groupcoord.coordinator.config import BrokerConfig, ConfigError
    assert BrokerConfig({})["group.consumer.regex.refresh.interval.ms"] == 600_000
    with pytest.raises(ConfigError, match="at least 10000"):
        BrokerConfig({"group.consumer.regex.refresh.interval.ms": 9999})


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _service(clock, **config):
    """A service (handlers, ACLs) with the harness' topics foo (6) and bar (3)."""
    from groupcoord.coordinator.config import BrokerConfig
    from groupcoord.coordinator.service import Service
    svc = Service(BrokerConfig(config, profile="test"), clock=clock, topic_id_factory=tid)
    svc.create_topic(FOO, 6)
    svc.create_topic(BAR, 3)
    return svc


def _handle(svc, principal: str, version: int = 1, **body) -> dict:
    """A ConsumerGroupHeartbeat through the handler, as ``principal``."""
    from groupcoord.coordinator.context import RequestContext
    request = {"group_id": GROUP, "member_id": "m1", "member_epoch": 0, "instance_id": None, "rack_id": None,
               "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
               "server_assignor": None, "topic_partitions": None}
    request.update(body)
    out = []
    svc.handle(RequestContext(svc, 0, "c", "/127.0.0.1", 68, version, 1, 1, principal), request, out.append)
    return out[0]


def test_a_regex_resolves_to_the_topics_the_principal_may_describe():
    # testConsumerGroupMemberJoinsWithRegexWithTopicAuthorizationFailure and
    # testConsumerGroupMemberJoinsRefreshTopicAuthorization (the refresh interval, Kafka 4.1)
    from groupcoord.coordinator.security import Acl

    def allow(resource_type, name, operation):
        return Acl.from_dict({"principal": "User:alice", "resource_type": resource_type, "resource_name": name,
                              "operation": operation, "permission_type": "ALLOW", "pattern_type": "LITERAL",
                              "host": "*"})
    clock = _Clock()
    svc = _service(clock, **{"groupcoord.acls.enabled": True, "group.consumer.regex.refresh.interval.ms": 60_000})
    svc.security.authorizer.add([allow("GROUP", GROUP, "READ"), allow("TOPIC", FOO, "DESCRIBE")])
    join = dict(rebalance_timeout_ms=30000, subscribed_topic_regex="foo|bar", topic_partitions=[])
    # a regex needs no DESCRIBE of its own (names do: TOPIC_AUTHORIZATION_FAILED)
    assert _handle(svc, "User:alice", subscribed_topic_names=[BAR], rebalance_timeout_ms=30000,
                   topic_partitions=[])["error_code"] == E.TOPIC_AUTHORIZATION_FAILED
    assert _handle(svc, "User:alice", **join)["member_epoch"] == 1
    g = svc.group_coordinator.consumer_group(GROUP)
    assert set(g.resolved_regexes["foo|bar"].topics) == {FOO}         # bar: no DESCRIBE
    assert assigned(_handle(svc, "User:alice", member_epoch=1)) == {FOO: list(range(6))}
    svc.security.authorizer.add([allow("TOPIC", BAR, "DESCRIBE")])
    clock.now = 30_000
    _handle(svc, "User:alice", member_epoch=2)
    assert set(g.resolved_regexes["foo|bar"].topics) == {FOO}         # no new topic, interval not over
    clock.now = 60_001
    _handle(svc, "User:alice", member_epoch=2)
    assert set(g.resolved_regexes["foo|bar"].topics) == {FOO, BAR} and g.group_epoch == 3
    assert assigned(_handle(svc, "User:alice", member_epoch=2)) == {FOO: list(range(6)), BAR: [0, 1, 2]}


def test_consumer_group_heartbeat_v0_has_no_regex():
    # ConsumerGroupHeartbeatRequest.json: SubscribedTopicRegex is v1+ (Kafka's client refuses to send
    # one at v0); a v1 regex is described as the member sent it
    svc = _service(_Clock())
    r = _handle(svc, "User:ANONYMOUS", version=0, member_id="", rebalance_timeout_ms=30000,
                subscribed_topic_regex="foo", topic_partitions=[])
    assert (r["error_code"], r["error_message"]) == (
        E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    assert _handle(svc, "User:ANONYMOUS", rebalance_timeout_ms=30000, subscribed_topic_regex="fo+",
                   topic_partitions=[])["error_code"] == 0
    described = svc.group_coordinator.consumer.describe(GROUP)["members"][0]
    assert (described["subscribed_topic_regex"], described["subscribed_topic_names"]) == ("fo+", [])
