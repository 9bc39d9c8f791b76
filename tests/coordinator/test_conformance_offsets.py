"""OffsetCommit / OffsetFetch / OffsetDelete and offset retention."""
from __future__ import annotations

import pytest

from groupcoord.coordinator.group.offsets import OffsetAndMetadata
from groupcoord.coordinator.group.offsets import OffsetCommitRequest, TxnOffsetCommitRequest

GROUP = "group-id"
DAY = 24 * 3600 * 1000
WEEK = 7 * DAY


def errors(resp):
    return {(t["name"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}


# ---------------------------------------------------------------- commit validation
def test_commit_in_stable_is_accepted_and_refreshes_session(h):
    leader, follower = h.stable_group(2, session=10000)
    h.run_until(8000)
    res = h.commit(member_id=follower, generation=1, offsets={("foo", 0): 10, ("foo", 1): 11, ("bar", 0): 5})
    assert res == {"throttle_time_ms": 0, "topics": [
        {"name": "foo", "partitions": [{"partition_index": 0, "error_code": 0}, {"partition_index": 1, "error_code": 0}]},
        {"name": "bar", "partitions": [{"partition_index": 0, "error_code": 0}]}]}
    assert h.timers.deadline(("hb", GROUP, follower)) == 18000
    assert h.offsets() == {("foo", 0): 10, ("foo", 1): 11, ("bar", 0): 5}
    ev = h.events_of("offset.committed")[-1]
    assert (ev["member"], ev["partitions"], ev["errors"], ev["topics"]) == (follower, 3, 0, 2)


def test_commit_in_preparing_rebalance_with_current_generation(h):
    leader, follower = h.stable_group(2)
    h.join(member_id=leader)
    assert h.state() == "PreparingRebalance"
    assert errors(h.commit(member_id=follower, generation=1)) == {("foo", 0): 0}
    assert errors(h.commit(member_id=follower, generation=2)) == {("foo", 0): 22}


def test_commit_in_completing_rebalance_is_rebalance_in_progress(h):
    calls = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance(0)
    member = calls[1].result["member_id"]
    assert errors(h.commit(member_id=member, generation=1, offsets={("foo", 0): 1, ("foo", 1): 2})) == {
        ("foo", 0): 27, ("foo", 1): 27}
    assert h.offsets() == {}


def test_simple_group_is_created_by_commit_with_negative_generation(h):
    res = h.commit("simple", generation=-1, member_id="", offsets={("foo", 0): 42})
    assert errors(res) == {("foo", 0): 0}
    g = h.group("simple")
    assert g.state == "Empty" and g.protocol_type is None and g.generation_id == 0
    assert g.is_simple_group()
    assert h.events_of("group.created", "simple")[0]["cause"] == "offset_commit"
    assert h.offsets("simple") == {("foo", 0): 42}


def test_commit_negative_generation_on_empty_group_accepted_whatever_member_id(h):
    leader, = h.stable_group(1)
    h.leave(GROUP, {"member_id": leader})
    assert h.state() == "Empty"
    assert errors(h.commit(member_id="anything", generation=-1)) == {("foo", 0): 0}


def test_commit_without_member_to_active_group_is_unknown_member(h):
    h.stable_group(1)
    assert errors(h.commit(member_id="", generation=-1)) == {("foo", 0): 25}


def test_commit_negative_generation_with_member_on_active_group_is_illegal_generation(h):
    leader, = h.stable_group(1)
    assert errors(h.commit(member_id=leader, generation=-1)) == {("foo", 0): 22}


@pytest.mark.parametrize("flag,error", [(False, 22), (True, 69)])
def test_commit_to_missing_group_with_generation(h, flag, error):
    res = h.commit("missing", member_id="m", generation=1, group_id_not_found=flag)
    assert errors(res) == {("foo", 0): error}
    assert h.group("missing") is None


def test_commit_validation_errors(h):
    calls = {i: h.join(instance_id=i) for i in ("a",)}
    h.advance(0)
    mid = calls["a"].result["member_id"]
    h.sync(member_id=mid, generation=1, instance_id="a", assignments=[(mid, b"x")])
    assert errors(h.commit(member_id="stranger", generation=1)) == {("foo", 0): 25}
    assert errors(h.commit(member_id=mid, generation=7)) == {("foo", 0): 22}
    assert errors(h.commit(member_id="other", generation=1, instance_id="a")) == {("foo", 0): 82}
    assert errors(h.commit(member_id=mid, generation=1, instance_id="a")) == {("foo", 0): 0}


def test_commit_null_group_id(h):
    assert errors(h.commit(None, generation=-1)) == {("foo", 0): 24}


def test_commit_offsets_stores_as_offset_commit_or_leaves_it_to_offset_commit(make_harness):
    # commit_offsets (the simulator's steady state: no request, no answer) beside offset_commit on a
    # second harness alike: where offset_commit answers every partition without an error, the same
    # offsets, events and session timer; elsewhere False, and nothing stored, emitted or re-armed
    cases = [  # (member, generation, offsets {(topic, partition): (offset, leader epoch, metadata)})
        (1, 1, {("foo", 0): (10, -1, ""), ("foo", 1): (11, 4, None), ("bar", 0): (5, -1, "m")}),
        (0, 1, {("foo", 0): (16, -1, "x" * 10)}),
        (1, 2, {("foo", 0): (12, -1, "")}),                            # ILLEGAL_GENERATION
        (None, 1, {("foo", 0): (13, -1, "")}),                         # UNKNOWN_MEMBER_ID
        (1, 1, {("foo", 0): (14, -1, ""), ("foo", 1): (15, -1, "x" * 11)}),    # a partition's metadata too large
    ]
    stored = []
    for member, generation, offsets in cases:
        a, b = make_harness(offset_metadata_max_bytes=10), make_harness(offset_metadata_max_bytes=10)
        ids = a.stable_group(2, session=10000)
        assert b.stable_group(2, session=10000) == ids
        member = "someone" if member is None else ids[member]
        a.run_until(4000)
        b.run_until(4000)
        before = (len(a.events), a.offsets(), a.timers.deadline(("hb", GROUP, member)))
        done = a.gc.commit_offsets(GROUP, generation, member, None,
                                   [(t, p, o, e, md) for (t, p), (o, e, md) in offsets.items()])
        topics: dict[str, list] = {}
        for (t, p), (o, e, md) in offsets.items():
            topics.setdefault(t, []).append({"partition_index": p, "committed_offset": o,
                                             "committed_leader_epoch": e, "committed_metadata": md})
        answer = []
        b.gc.offset_commit(answer.append, OffsetCommitRequest(
            GROUP, [{"name": t, "partitions": ps} for t, ps in topics.items()], generation_id=generation,
            member_id=member))
        stored.append(done)
        assert done == (not any(errors(answer[0]).values()))
        if done:                    # (the same offsets in the same order: the records' and the fetches')
            assert a.events == b.events
            assert [(t, list(ps.items())) for t, ps in a.gc.offsets.of(GROUP).items()] == \
                [(t, list(ps.items())) for t, ps in b.gc.offsets.of(GROUP).items()]
            assert a.timers.deadline(("hb", GROUP, member)) == b.timers.deadline(("hb", GROUP, member)) == 14000
        else:
            assert (len(a.events), a.offsets(), a.timers.deadline(("hb", GROUP, member))) == before
    assert stored == [True, True, False, False, False]
    leader, follower = ids
    a.join(member_id=leader)                                          # a rebalance
    assert a.state() == "PreparingRebalance"
    assert a.gc.commit_offsets(GROUP, 1, follower, None, [("foo", 0, 20, -1, "")])      # (accepted then)
    assert not a.gc.commit_offsets("another", 1, follower, None, [("foo", 0, 21, -1, "")])     # no such group
    a.gc.ctx.loading.add(a.gc.ctx.partition_of(GROUP))
    assert not a.gc.commit_offsets(GROUP, 1, follower, None, [("foo", 0, 22, -1, "")])
    a.gc.ctx.loading.clear()
    a.gc.txn_offset_commit(lambda r: None, TxnOffsetCommitRequest("tx", GROUP, 7, 0, [{"name": "bar", "partitions": [
        {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]}]))
    assert not a.gc.commit_offsets(GROUP, 1, follower, None, [("foo", 0, 23, -1, "")])   # a transaction's pending
    assert {t: {p: v.committed_offset for p, v in ps.items()} for t, ps in a.gc.offsets.of(GROUP).items()} == {
        "foo": {0: 20}}


def test_commit_offsets_leaves_a_consumer_groups_commits_to_offset_commit():
    from test_conformance_consumer_group import GROUP as CG, harness, hb
    h = harness()
    assert hb(h, "m1", 0, topics=["foo"])["member_epoch"] == 1
    before = len(h.events)
    assert not h.gc.commit_offsets(CG, 1, "m1", None, [("foo", 0, 5, -1, "")])
    assert len(h.events) == before and not h.gc.offsets.of(CG)
    answer = []
    h.gc.offset_commit(answer.append, OffsetCommitRequest(CG, [{"name": "foo", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": ""}]}],
        generation_id=1, member_id="m1", group_id_not_found=True))              # (v9: the member's epoch)
    assert errors(answer[0]) == {("foo", 0): 0}                       # (offset_commit takes it)


def test_offset_metadata_too_large_by_character_count(make_harness):
    h = make_harness(offset_metadata_max_bytes=10)
    res = h.commit("g", offsets={("foo", 0): (1, "x" * 10), ("foo", 1): (2, "x" * 11),
                                 ("foo", 2): (3, "é" * 10),          # 10 characters, 20 UTF-8 bytes
                                 ("foo", 3): (4, "\U0001F600" * 5),  # 10 UTF-16 units
                                 ("foo", 4): (5, "\U0001F600" * 5 + "x")})
    assert errors(res) == {("foo", 0): 0, ("foo", 1): 12, ("foo", 2): 0, ("foo", 3): 0, ("foo", 4): 12}
    assert h.offsets("g") == {("foo", 0): 1, ("foo", 2): 3, ("foo", 3): 4}
    ev = h.events_of("offset.committed", "g")[-1]
    assert (ev["partitions"], ev["errors"]) == (3, 2)


def test_offset_metadata_default_limit_is_4096(h):
    res = h.commit("g", offsets={("foo", 0): (1, "x" * 4096), ("foo", 1): (1, "x" * 4097)})
    assert errors(res) == {("foo", 0): 0, ("foo", 1): 12}


def test_stored_offset_fields(h):
    h.run_until(1234)
    h.gc.offset_commit(lambda r: None, OffsetCommitRequest("g", [{"name": "foo", "partitions": [
        {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": 3, "committed_metadata": None},
        {"partition_index": 1, "committed_offset": 8, "commit_timestamp": 99, "committed_metadata": "m"}]}]))
    parts = h.gc.offsets.of("g")["foo"]
    assert parts[0] == OffsetAndMetadata(7, 3, "", 1234, None)
    assert parts[1] == OffsetAndMetadata(8, -1, "m", 99, None)    # v1 explicit commit timestamp


def test_explicit_retention_sets_expire_timestamp(h):
    h.run_until(500)
    h.commit("g", offsets={("foo", 0): 1}, retention=5000)
    assert h.gc.offsets.of("g")["foo"][0].expire_timestamp == 5500


# ---------------------------------------------------------------- fetch
def test_fetch_missing_group_returns_minus_one(h):
    assert h.fetch("nope", {"foo": [0, 1]}) == {"group_id": "nope", "error_code": 0, "topics": [
        {"name": "foo", "partitions": [
            {"partition_index": 0, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": 0},
            {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": 0}]}]}
    assert h.fetch("nope") == {"group_id": "nope", "error_code": 0, "topics": []}


def test_fetch_committed_and_missing_partitions(h):
    h.gc.offset_commit(lambda r: None, OffsetCommitRequest("g", [{"name": "foo", "partitions": [
        {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": 3, "committed_metadata": "meta"}]}]))
    res = h.fetch("g", {"foo": [0, 5], "unknown-topic": [0]})
    assert res["topics"] == [
        {"name": "foo", "partitions": [
            {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": 3, "metadata": "meta",
             "error_code": 0},
            {"partition_index": 5, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": 0}]},
        {"name": "unknown-topic", "partitions": [
            {"partition_index": 0, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": 0}]}]


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "CompletingRebalance", "Empty"])
def test_fetch_allowed_in_every_state(h, state):
    h.commit(offsets={("foo", 0): 5})             # simple commit while the group does not exist yet
    if state != "Empty":
        leader, = h.stable_group(1)
        if state == "PreparingRebalance":
            h.join_new(client_id="x")
        elif state == "CompletingRebalance":
            h.join(member_id=leader)
    assert h.state() == state
    assert h.offsets() == {("foo", 0): 5}


def test_fetch_null_group_id(h):
    assert h.fetch(None)["error_code"] == 24


# ---------------------------------------------------------------- retention
def test_empty_group_offsets_expire_from_when_it_became_empty_and_group_is_deleted(make_harness):
    h = make_harness(offsets_retention_minutes=10, offsets_retention_check_interval_ms=60000)
    retention = 10 * 60000
    leader, = h.stable_group(1, session=30000)
    h.commit(member_id=leader, generation=1, offsets={("foo", 0): 1})
    h.keep_alive([leader], 900000, step=20000)    # committed at 0, the group is active until 900000
    h.run_until(900000)
    h.leave(GROUP, {"member_id": leader})
    assert h.state() == "Empty"
    h.run_until(900000 + retention - 60000)       # a sweep before the retention ran out
    assert h.offsets() == {("foo", 0): 1}
    h.run_until(900000 + retention)               # the sweep at 1,500,000
    assert h.group() is None
    assert h.events_of("offsets.expired")[-1]["partitions"] == 1
    deleted = h.events_of("group.deleted")[-1]
    assert (deleted["reason"], deleted["state"], deleted["offsets"]) == ("offsets_expired", "Dead", 0)
    assert h.offsets() == {}


def test_stable_group_keeps_its_offsets(make_harness):
    h = make_harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10000)
    leader, = h.stable_group(1, session=30000)
    h.commit(member_id=leader, generation=1, offsets={("foo", 0): 1, ("other", 0): 2})
    h.keep_alive([leader], 200000, step=20000)
    # "foo" is subscribed: kept; "other" is not: expired by commit time
    assert h.offsets() == {("foo", 0): 1}
    assert h.state() == "Stable"


def test_non_consumer_active_group_offsets_never_expire(make_harness):
    h = make_harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10000)
    c = h.join_new(protocol_type="connect", protocols=[("default", b"\x00")], session=30000)
    h.advance(0)
    mid = c.result["member_id"]
    h.sync(member_id=mid, generation=1, assignments=[(mid, b"")])
    h.commit(member_id=mid, generation=1, offsets={("foo", 0): 1})
    h.keep_alive([mid], 200000, step=20000)
    assert h.offsets() == {("foo", 0): 1}


def test_unparseable_consumer_subscription_keeps_offsets(make_harness):
    h = make_harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10000)
    c = h.join_new(protocols=[("range", b"\x00\x00\xff")], session=30000)
    h.advance(0)
    mid = c.result["member_id"]
    assert h.group().subscribed_topics is None
    h.sync(member_id=mid, generation=1, assignments=[(mid, b"")])
    h.commit(member_id=mid, generation=1, offsets={("foo", 0): 1})
    h.keep_alive([mid], 200000, step=20000)
    assert h.offsets() == {("foo", 0): 1}


def test_simple_group_offsets_expire_by_commit_time(make_harness):
    h = make_harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10000)
    h.commit("s", offsets={("foo", 0): 1})
    h.run_until(30000)
    h.commit("s", offsets={("foo", 1): 2})
    h.run_until(60000)
    assert h.offsets("s") == {("foo", 1): 2}
    h.run_until(90000)
    assert h.group("s") is None


def test_explicit_retention_expires_before_default(make_harness):
    h = make_harness(offsets_retention_check_interval_ms=10000)   # default retention: 7 days
    h.commit("s", offsets={("foo", 0): 1}, retention=25000)
    h.commit("s", offsets={("foo", 1): 1})
    h.run_until(20000)
    assert len(h.offsets("s")) == 2
    h.run_until(30000)
    assert h.offsets("s") == {("foo", 1): 1}


def test_group_without_offsets_is_deleted_by_sweep_when_empty(h):
    h.join()          # creates an Empty group holding only a pending member id
    assert h.state() == "Empty"
    h.run_until(600000)
    assert h.group() is None


def test_sweep_is_rescheduled(make_harness):
    h = make_harness(offsets_retention_check_interval_ms=1000)
    assert h.timers.deadline(("offsets-expiry",)) == 1000
    h.run_until(1000)
    assert h.timers.deadline(("offsets-expiry",)) == 2000
    assert h.gc.cleanup_group_metadata() == (0, 0)


# ---------------------------------------------------------------- OffsetDelete
def test_offset_delete_of_subscribed_topic_in_consumer_group(h):
    leader, = h.stable_group(1)
    h.commit(member_id=leader, generation=1, offsets={("foo", 0): 1, ("bar", 0): 2, ("bar", 1): 3})
    call = []
    call.append(h.delete_offsets(GROUP, [
        {"name": "foo", "partitions": [{"partition_index": 0}]},
        {"name": "bar", "partitions": [{"partition_index": 0}, {"partition_index": 7}]}]))
    assert call[0] == {"error_code": 0, "throttle_time_ms": 0, "topics": [
        {"name": "foo", "partitions": [{"partition_index": 0, "error_code": 86}]},
        {"name": "bar", "partitions": [{"partition_index": 0, "error_code": 0}, {"partition_index": 7, "error_code": 0}]}]}
    assert h.offsets() == {("foo", 0): 1, ("bar", 1): 3}
    assert h.events_of("offsets.deleted")[-1]["partitions"] == 1


def test_offset_delete_non_consumer_non_empty_group(h):
    h.join_new(protocol_type="connect", protocols=[("default", b"")])
    h.advance(0)
    call = []
    call.append(h.delete_offsets(GROUP, [{"name": "foo", "partitions": [{"partition_index": 0}]}]))
    assert call[0] == {"error_code": 68, "throttle_time_ms": 0, "topics": []}


def test_offset_delete_missing_group_and_empty_group(h):
    call = []
    call.append(h.delete_offsets("nope", []))
    assert call[0]["error_code"] == 69
    h.commit("s", offsets={("foo", 0): 1})
    call.append(h.delete_offsets("s", [{"name": "foo", "partitions": [{"partition_index": 0}]}]))
    assert call[1]["error_code"] == 0 and h.offsets("s") == {}
    call.append(h.delete_offsets("", []))
    assert call[2]["error_code"] == 24


def test_offset_delete_unparseable_consumer_subscription_counts_as_subscribed(h):
    h.join_new(protocols=[("range", b"\xff")])
    h.advance(0)
    call = []
    call.append(h.delete_offsets(GROUP, [{"name": "any", "partitions": [{"partition_index": 0}]}]))
    assert call[0]["topics"][0]["partitions"][0]["error_code"] == 86


def test_deleted_topic_offsets_are_dropped_in_every_group(h):
    h.commit("a", offsets={("foo", 0): 1, ("foo", 1): 2, ("bar", 0): 3})
    h.commit("b", offsets={("foo", 0): 4})
    assert h.gc.delete_topic_offsets("foo", [1]) == 1
    assert h.offsets("a") == {("foo", 0): 1, ("bar", 0): 3}
    assert h.gc.delete_topic_offsets("foo") == 2
    assert h.offsets("a") == {("bar", 0): 3} and h.offsets("b") == {}
    assert [e["partitions"] for e in h.events_of("offsets.deleted")] == [1, 1, 1]


def test_offset_delete_with_spec_v3_subscription_bytes(h):
    spec_v3 = bytes.fromhex("0003" "00000002" "0003626172" "0003666f6f" "ffffffff"
                            "00000001" "0003666f6f" "00000001" "00000000" "00000005" "ffff")
    leader, = h.stable_group(1, protocols=[("cooperative-sticky", spec_v3)])
    assert h.group().subscribed_topics == frozenset({"foo", "bar"})
    h.commit(member_id=leader, generation=1, offsets={("foo", 0): 1, ("baz", 0): 2})
    out = []
    out.append(h.delete_offsets(GROUP, [
        {"name": n, "partitions": [{"partition_index": 0}]} for n in ("bar", "foo", "baz")]))
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in out[0]["topics"]] == [
        ("bar", 86), ("foo", 86), ("baz", 0)]
    assert h.offsets() == {("foo", 0): 1}


def test_the_commit_event_sees_the_offsets_committed(h):
    # what a subscriber of offset.committed reads of the group's offsets is the commit it tells of
    seen = []
    emit = h.gc.ctx.emit
    h.gc.ctx.emit = lambda e: (seen.append(dict(h.gc.offsets.of("s"))) if e["event"] == "offset.committed" else None,
                               emit(e))
    h.commit("s", offsets={("foo", 0): 5})
    assert [{t: {p: o.committed_offset for p, o in parts.items()} for t, parts in s.items()} for s in seen] == \
        [{"foo": {0: 5}}]
