"""ClassicGroup / Member model: transitions, protocol bookkeeping, subscription parsing."""
from __future__ import annotations

import itertools

import pytest

from groupcoord.coordinator.group.classic.group import (
    VALID_PREVIOUS_STATES, ClassicGroup, GroupState, IllegalStateTransition, Member, parse_subscription_topics,
)

# spec §10.1: v3, topics {bar, foo}, no user data, owning foo-0, generation 5, no rack
SPEC_SUB_V3 = bytes.fromhex("0003" "00000002" "0003626172" "0003666f6f" "ffffffff"
                            "00000001" "0003666f6f" "00000001" "00000000" "00000005" "ffff")

LEGAL = {
    ("Stable", "PreparingRebalance"), ("CompletingRebalance", "PreparingRebalance"), ("Empty", "PreparingRebalance"),
    ("PreparingRebalance", "CompletingRebalance"), ("CompletingRebalance", "Stable"), ("PreparingRebalance", "Empty"),
    ("Stable", "Dead"), ("PreparingRebalance", "Dead"), ("CompletingRebalance", "Dead"), ("Empty", "Dead"),
    ("Dead", "Dead"),
}


@pytest.mark.parametrize("src,dst", list(itertools.product(GroupState.ALL, GroupState.ALL)))
def test_transitions(src, dst):
    g = ClassicGroup("g", 0, state=src)
    if (src, dst) in LEGAL:
        assert g.transition_to(dst, 7) == src
        assert (g.state, g.previous_state, g.current_state_timestamp) == (dst, src, 7)
    else:
        with pytest.raises(IllegalStateTransition):
            g.transition_to(dst, 7)
        assert g.state == src


def test_transition_table_matches_kafka():
    assert {(s, d) for d, srcs in VALID_PREVIOUS_STATES.items() for s in srcs} == LEGAL


def test_can_rebalance():
    assert [s for s in GroupState.ALL if ClassicGroup("g", 0, state=s).can_rebalance()] == \
        ["Empty", "CompletingRebalance", "Stable"]


def test_parse_subscription_topics():
    assert parse_subscription_topics(SPEC_SUB_V3) == ["bar", "foo"]
    v0 = bytes.fromhex("0000" "00000001" "0003666f6f" "00000002" "abcd")
    assert parse_subscription_topics(v0) == ["foo"]
    assert parse_subscription_topics(bytes.fromhex("7fff" "00000000" "ffffffff") + b"trailing") == []
    for bad in (b"", b"\x00\x00", bytes.fromhex("0000" "00000001" "0003666f"),   # truncated topic
                bytes.fromhex("0000" "00000001" "0003666f6f"),                      # no user data
                bytes.fromhex("0000" "00000000" "00000005" "00"),                   # user data too short
                bytes.fromhex("0000" "ffffffff" "ffffffff")):                        # null topics
        with pytest.raises(ValueError):
            parse_subscription_topics(bad)


def member(mid, protocols, instance=None, rebalance=1000):
    return Member(mid, instance, "c", "/h", rebalance, 500, "consumer", protocols)


def test_subscribed_topics_from_selected_protocol():
    g = ClassicGroup("g", 0)
    g.add(member("a", [("range", SPEC_SUB_V3), ("rr", b"junk")]), lambda r: None)
    g.add(member("b", [("rr", b"junk"), ("range", bytes.fromhex("0001" "00000001" "0003717578" "ffffffff"
                                                                 "00000000"))]), lambda r: None)
    g.transition_to("PreparingRebalance", 0)
    g.init_next_generation(1)
    assert g.protocol_name == "range"        # tie broken by the leader "a"
    assert g.subscribed_topics == frozenset({"foo", "bar", "qux"})
    assert g.is_subscribed_to_topic("qux") and not g.is_subscribed_to_topic("zzz")


def test_subscription_parse_failure_means_unknown():
    g = ClassicGroup("g", 0)
    g.add(member("a", [("rr", b"junk")]), lambda r: None)
    g.transition_to("PreparingRebalance", 0)
    g.init_next_generation(1)
    assert g.subscribed_topics is None
    assert g.is_subscribed_to_topic("anything")            # consumer protocol: assume subscribed
    g.protocol_type = "connect"
    assert not g.is_subscribed_to_topic("anything")


def test_each_generation_reads_the_same_subscriptions_once(monkeypatch):
    # a generation reads every member's subscription: alike payloads are parsed once, a malformed
    # one at every generation (never kept), and what is kept stays bounded
    from groupcoord.coordinator.group.classic import group as group_module
    parsed = []

    def parse(data, original=group_module.parse_subscription_topics):
        parsed.append(data)
        return original(data)
    monkeypatch.setattr(group_module, "parse_subscription_topics", parse)
    monkeypatch.setattr(group_module, "_TOPICS_READ", {})
    g = ClassicGroup("g", 0)
    for mid in "abc":
        g.add(member(mid, [("range", bytes(bytearray(SPEC_SUB_V3)))]), lambda r: None)
    g.transition_to("PreparingRebalance", 0)
    for generation in (1, 2):
        g.init_next_generation(generation)
        assert g.subscribed_topics == frozenset({"foo", "bar"})
        g.transition_to("PreparingRebalance", 0)
    assert parsed == [SPEC_SUB_V3]
    g.add(member("d", [("range", b"junk")]), lambda r: None)
    for generation in (3, 4):
        g.init_next_generation(generation)
        assert g.subscribed_topics is None
        g.transition_to("PreparingRebalance", 0)
    assert parsed.count(b"junk") == 2 and list(group_module._TOPICS_READ) == [SPEC_SUB_V3]
    monkeypatch.setattr(group_module, "_TOPICS_READ_MAX", 2)
    others = [bytes.fromhex("0000" "00000001" "0003717578" "00000000") + bytes([i]) for i in range(2)]
    for data in others:                        # (trailing bytes: the same topics, other payloads)
        assert group_module._subscription_topics(data) == ["qux"]
    assert list(group_module._TOPICS_READ) == [others[1]]      # full at the second: emptied first


def test_supports_protocols_and_counts():
    g = ClassicGroup("g", 0)
    assert not g.supports_protocols("", [("range", b"")])
    assert not g.supports_protocols("consumer", [])
    assert g.supports_protocols("consumer", [("x", b"")])   # Empty: anything non-empty
    g.add(member("a", [("range", b""), ("rr", b"")]))
    g.add(member("b", [("rr", b"")]))
    g.state = "Stable"
    assert g.supported_protocols == {"range": 1, "rr": 2}
    assert g.candidate_protocols() == {"rr"}
    assert g.supports_protocols("consumer", [("zz", b""), ("rr", b"")])
    assert not g.supports_protocols("consumer", [("range", b"")])
    assert not g.supports_protocols("connect", [("rr", b"")])
    g.update_member(g.members["b"], [("range", b"")], 1000, 500, None)
    assert g.supported_protocols == {"range": 2, "rr": 1}
    g.remove("a")
    assert g.supported_protocols == {"range": 1, "rr": 0} and g.leader_id == "b"


def test_has_all_members_joined_and_pending():
    g = ClassicGroup("g", 0)
    g.add(member("a", [("r", b"")]), lambda r: None)
    g.add(member("b", [("r", b"")]))
    assert not g.has_all_members_joined()
    g.update_member(g.members["b"], [("r", b"")], 1000, 500, lambda r: None)
    assert g.has_all_members_joined() and g.num_members_awaiting_join == 2
    g.add_pending_member("p")
    assert not g.has_all_members_joined()
    g.remove("p")
    assert g.has_all_members_joined()
    assert g.take_join_callback(g.members["a"]) is not None and g.num_members_awaiting_join == 1


def test_rebalance_timeout_is_the_max_of_members():
    g = ClassicGroup("g", 0)
    assert g.rebalance_timeout_ms() == 0
    g.add(member("a", [("r", b"")], rebalance=5000))
    g.add(member("b", [("r", b"")], rebalance=9000))
    assert g.rebalance_timeout_ms() == 9000


def test_static_member_bookkeeping():
    g = ClassicGroup("g", 0)
    g.add(member("a-1", [("r", b"")], instance="a"), lambda r: None)
    with pytest.raises(RuntimeError):
        g.add(member("a-2", [("r", b"")], instance="a"))
    new, old = g.replace_static_member("a", "a-1", "a-3")
    assert g.static_members == {"a": "a-3"} and g.leader_id == "a-3" and list(g.members) == ["a-3"]
    assert g.num_members_awaiting_join == 0 and old.awaiting_join is not None
    assert g.validate_member("a-1", "a") == 82              # FENCED_INSTANCE_ID
    assert g.validate_member("a-3", "b") == 25
    assert g.validate_member("a-3", "a") is None
    assert g.validate_member("a-3", None) is None
