"""``consumer.group_epoch_bumped``: one event per group epoch a consumer group goes through, with
why and by whom, in the order of the change (before the member's own event)."""
from __future__ import annotations

from test_conformance_consumer_group import BAR, FOO, group, harness, hb


def bumps(h) -> list[tuple]:
    return [(e["generation"], e["reason"], e["member"]) for e in h.events if e["event"] == "consumer.group_epoch_bumped"]


def test_every_epoch_has_one_bump_event_with_its_reason():
    h = harness(group_consumer_session_timeout_ms=45000)
    hb(h, "a", 0, topics=[FOO])
    hb(h, "b", 0, topics=[FOO])
    hb(h, "b", 2, topics=[FOO, BAR])                          # b subscribes to more
    h.cluster.add_partitions(FOO, 8)                          # a topic grows: at the next heartbeat
    hb(h, "a", group(h).members["a"].member_epoch)
    hb(h, "b", -1)
    h.advance(45_000)                                         # a's session ends
    assert bumps(h) == [(1, "member_joined", "a"), (2, "member_joined", "b"), (3, "subscription_changed", "b"),
                        (4, "metadata_changed", "a"), (5, "member_left", "b"), (6, "member_fenced", "a")]
    assert group(h) is not None and group(h).group_epoch == 6


def test_the_bump_comes_before_the_event_of_its_change():
    h = harness()
    hb(h, "a", 0)
    hb(h, "b", 0)
    kinds = [e["event"] for e in h.events if e["event"] != "group.state_change"]
    assert kinds == ["group.created", "consumer.group_epoch_bumped", "consumer.member_joined",
                     "consumer.group_epoch_bumped", "consumer.member_joined"]
    joined = [e for e in h.events if e["event"] == "consumer.member_joined"]
    assert [e["generation"] for e in joined] == [1, 2]


def test_a_bump_without_an_event_of_its_own_is_told_at_the_end_of_the_heartbeat():
    # one member changing its subscription reconciles at once: no member or state event
    h = harness()
    hb(h, "a", 0, topics=[FOO])
    before = len(h.events)
    resp = hb(h, "a", 1, topics=[FOO, BAR])
    assert resp["member_epoch"] == 2 and group(h).state == "Stable"
    assert [(e["event"], e["generation"], e["reason"]) for e in h.events[before:]] == [
        ("consumer.group_epoch_bumped", 2, "subscription_changed")]


def test_heartbeats_that_change_nothing_tell_nothing():
    h = harness()
    hb(h, "a", 0)
    before = len(h.events)
    for _ in range(3):
        assert hb(h, "a", 1)["error_code"] == 0
    hb(h, "a", 0)                                            # a rejoin with epoch 0: same subscription
    assert h.events[before:] == []


def test_a_static_member_replaced_with_another_subscription_bumps_for_it():
    h = harness(group_consumer_session_timeout_ms=45000)
    hb(h, "s1", 0, topics=[FOO], instance_id="i")
    hb(h, "s1", -2, instance_id="i")
    hb(h, "s2", 0, topics=[FOO], instance_id="i")            # same subscription: no bump
    assert bumps(h) == [(1, "member_joined", "s1")]
    hb(h, "s2", -2, instance_id="i")
    hb(h, "s3", 0, topics=[FOO, BAR], instance_id="i")
    assert bumps(h)[1:] == [(2, "subscription_changed", "s3")]
    kinds = [e["event"] for e in h.events]
    last = len(kinds) - 1 - kinds[::-1].index("consumer.member_replaced")
    assert kinds[last - 1] == "consumer.group_epoch_bumped"


def test_a_group_deleted_and_created_again_starts_its_epochs_over():
    h = harness()
    hb(h, "a", 0)
    hb(h, "a", -1)
    h.gc.delete_groups(lambda response: None, group_ids=["cg"])
    assert group(h) is None
    hb(h, "b", 0)
    assert bumps(h) == [(1, "member_joined", "a"), (2, "member_left", "a"), (1, "member_joined", "b")]
