"""Consumer groups (KIP-848) survive a restart: their records (Kafka's ConsumerGroup* records) in
the offsets partitions' logs, replayed at load (GroupMetadataManagerTest's replay cases and
``testConsumerGroupOnLoaded``-style checks), in virtual time and real files."""
from __future__ import annotations

import uuid

from group_harness import Call, Harness

from groupcoord.coordinator.group.consumer import records as crec
from groupcoord.coordinator import storage as st
from groupcoord.coordinator.cluster import Cluster, Node
from groupcoord.coordinator.group.consumer.group import MemberState
from groupcoord.coordinator.group.runtime import GroupCoordinator
from groupcoord.coordinator.group.offsets import OffsetCommitRequest

from test_conformance_consumer_group import BAR, FOO, GROUP, hb, tid

SESSION_MS = 45000


def new_cluster(partitions: dict[str, int]) -> Cluster:
    cluster = Cluster([Node(0, "localhost", 9092)], topic_id_factory=lambda name: uuid.uuid5(uuid.NAMESPACE_OID, name))
    for name, count in partitions.items():
        cluster.create_topic(name, count)
    return cluster


def start(directory, now: int = 0, cluster: Cluster | None = None) -> Harness:
    """A coordinator on the logs of ``directory``, loaded as the service loads them."""
    h = Harness(group_consumer_heartbeat_interval_ms=5000, groupcoord_kafka_version="4.1")   # (epochs as 4.1's)
    h.now = now
    store = st.LogStore(str(directory))
    h.store = store
    h.gc = GroupCoordinator(h.config, h.timers, lambda: h.now, emit=h._emit,
                            member_id_factory=lambda prefix: f"{prefix}-{next(h._seq)}", store=store)
    h.cluster = cluster if cluster is not None else new_cluster({FOO: 6, BAR: 3})
    h.gc.set_metadata_image(h.cluster)
    h.cluster.topic_listeners.append(h.gc.topics_changed)
    for p in store.partitions():
        h.gc.begin_loading(p)
    for p in store.partitions():
        h.gc.complete_loading(p, store.load(p))
    return h


def restart(h: Harness, directory, cluster: Cluster | None = None) -> Harness:
    h.store.close()
    return start(directory, h.now, cluster if cluster is not None else h.cluster)


def snapshot(h: Harness, group_id: str = GROUP) -> dict:
    g = h.gc.consumer_group(group_id)
    return {
        "epochs": (g.group_epoch, g.assignment_epoch, g.state),
        "members": {m.member_id: (m.member_epoch, m.previous_member_epoch, m.state, m.instance_id, m.rack_id,
                                  m.client_id, m.client_host, m.rebalance_timeout_ms, m.subscribed_topic_names,
                                  m.subscribed_topic_regex, m.server_assignor, m.assigned, m.pending_revocation)
                    for m in g.members.values()},
        "target": g.target,
        "static": g.static_members,
        "partition_epochs": g.partition_epochs,
        "offsets": {(t, p): o.committed_offset for t, parts in h.gc.offsets.of(g.group_id).items()
                    for p, o in parts.items()},
    }


def commit(h: Harness, member_id: str, epoch: int, offsets: dict) -> int:
    call = Call()
    h.gc.offset_commit(call, OffsetCommitRequest(GROUP, [
        {"name": t, "partitions": [{"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                                    "commit_timestamp": -1, "committed_metadata": ""} for p, o in parts.items()]}
        for t, parts in offsets.items()], epoch, member_id, group_id_not_found=True))
    return call.result["topics"][0]["partitions"][0]["error_code"]


def test_a_group_part_way_through_a_rebalance_comes_back_as_it_was(tmp_path):
    # replay of ConsumerGroupMetadata, MemberMetadata, TargetAssignment*, CurrentMemberAssignment
    h = start(tmp_path)
    assert hb(h, "m1", 0, topics=[FOO, BAR])["member_epoch"] == 1
    assert hb(h, "m2", 0, topics=[FOO], instance_id="i2", assignor="range")["member_epoch"] == 2
    # m1 must give foo 0-2 up to m2 (range): it is revoking them, m2 waits for them
    r1 = hb(h, "m1", 1, owned={FOO: [0, 1, 2, 3, 4, 5], BAR: [0, 1, 2]})
    assert r1["member_epoch"] == 1
    assert h.gc.consumer_group(GROUP).members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert commit(h, "m1", 1, {FOO: {0: 17}, BAR: {2: 5}}) == 0
    before = snapshot(h)

    h2 = restart(h, tmp_path)
    assert snapshot(h2) == before
    # the members go on where they were: m1 releases, m2 gets foo's partitions
    r1 = hb(h2, "m1", 1, owned={BAR: [0, 1, 2], FOO: [3, 4, 5]})
    assert r1["error_code"] == 0 and r1["member_epoch"] == 2
    r2 = hb(h2, "m2", 2, owned={}, instance_id="i2")
    assert r2["error_code"] == 0 and r2["member_epoch"] == 2
    assert sorted(p for t in r2["assignment"]["topic_partitions"] for p in t["partitions"]) == [0, 1, 2]
    assert h2.gc.consumer_group(GROUP).state == "Stable"
    assert snapshot(restart(h2, tmp_path)) == snapshot(h2)


def test_sessions_restart_at_load_and_expire(tmp_path):
    # on load every member's session timer is armed again (GroupMetadataManager.onLoaded)
    h = start(tmp_path)
    hb(h, "m1", 0)
    h.advance(10_000)
    h2 = restart(h, tmp_path)
    h2.advance(SESSION_MS - 1)
    assert "m1" in h2.gc.consumer_group(GROUP).members
    h2.advance(1)
    g = h2.gc.consumer_group(GROUP)
    assert not g.members and g.state == "Empty" and g.group_epoch == 2
    assert [e["event"] for e in h2.events if e["event"].startswith("consumer.")] == [
        "consumer.group_epoch_bumped", "consumer.member_fenced"]
    # the fencing is written too: the next start has an empty group at epoch 2
    g3 = restart(h2, tmp_path).gc.consumer_group(GROUP)
    assert (g3.state, g3.group_epoch, g3.members) == ("Empty", 2, {})


def test_a_member_that_left_is_tombstoned(tmp_path):
    h = start(tmp_path)
    hb(h, "m1", 0)
    hb(h, "m2", 0)
    hb(h, "m2", -1)
    h2 = restart(h, tmp_path)
    assert list(h2.gc.consumer_group(GROUP).members) == ["m1"]
    live = st.replay(h2.store.load(h2.gc.partition_of(GROUP))).group_records[GROUP]
    assert (crec.MEMBER, "m1") in live
    assert not any(name == "m2" for _, name in live)


def test_a_static_member_gone_with_minus_two_keeps_its_place_across_a_restart(tmp_path):
    h = start(tmp_path)
    hb(h, "a", 0, instance_id="ia")
    hb(h, "a", -2, instance_id="ia")
    h2 = restart(h, tmp_path)
    g = h2.gc.consumer_group(GROUP)
    assert g.members["a"].member_epoch == -2 and g.static_members == {"ia": "a"}
    # a new instance takes its partitions over without a new group epoch
    resp = hb(h2, "a2", 0, instance_id="ia")
    assert resp["error_code"] == 0 and resp["member_epoch"] == 1


def test_deleting_the_group_tombstones_all_its_records(tmp_path):
    # DeleteGroups of an empty consumer group: createGroupTombstoneRecords
    h = start(tmp_path)
    hb(h, "m1", 0)
    assert commit(h, "m1", 1, {FOO: {0: 3}}) == 0
    hb(h, "m1", -1)
    call = Call()
    h.gc.delete_groups(call, group_ids=[GROUP])
    assert call.result["results"][0]["error_code"] == 0
    h2 = restart(h, tmp_path)
    assert h2.gc.consumer_group(GROUP) is None and h2.gc.group(GROUP) is None
    assert st.replay(h2.store.load(h2.gc.partition_of(GROUP))).group_records == {}


def test_an_empty_consumer_group_converted_by_a_join_stays_classic(tmp_path):
    h = start(tmp_path)
    hb(h, "m1", 0)
    hb(h, "m1", -1)
    members = h.stable_group(1, GROUP)
    h2 = restart(h, tmp_path)
    assert h2.gc.consumer_group(GROUP) is None
    assert h2.state(GROUP) == "Stable" and list(h2.group(GROUP).members) == members


def test_a_topic_grown_while_away_bumps_the_group_epoch_at_load(tmp_path):
    # KIP-1101: the metadata hash in ConsumerGroupMetadataValue tells the subscribed topics changed
    h = start(tmp_path)
    hb(h, "m1", 0, topics=[FOO])
    h2 = restart(h, tmp_path)
    assert h2.gc.consumer_group(GROUP).group_epoch == 1          # nothing changed: no bump
    h3 = restart(h2, tmp_path, cluster=new_cluster({FOO: 8, BAR: 3}))
    g = h3.gc.consumer_group(GROUP)
    assert (g.group_epoch, g.assignment_epoch, g.state) == (2, 1, "Assigning")
    # the bump is written at load: another restart finds epoch 2, not a second bump
    h3 = restart(h3, tmp_path)
    g = h3.gc.consumer_group(GROUP)
    assert (g.group_epoch, g.assignment_epoch) == (2, 1)
    resp = hb(h3, "m1", 1, owned={FOO: [0, 1, 2, 3, 4, 5]})
    assert resp["member_epoch"] == 2
    assert sorted(resp["assignment"]["topic_partitions"][0]["partitions"]) == list(range(8))


def test_records_are_kafkas_shapes():
    # the values are flexible (compact strings, tagged fields) as Kafka's ConsumerGroup*Value schemas
    key, payload = st.encode_record(st.GroupRecordKey(crec.EPOCH, "g"),
                                    {"epoch": 5, "metadata_hash": 0})
    assert payload == (b"\x00\x03" + b"\x00\x01g"          # kind 3, GroupId "g" (classic string)
                       + b"\x01" + b"\x00\x00"             # a value follows, version 0
                       + b"\x00\x00\x00\x05"               # Epoch
                       + b"\x00")                          # no tagged fields (MetadataHash at its default)
    t = tid(FOO)
    value = {"member_epoch": 3, "previous_member_epoch": 2, "state": 1,
             "assigned_partitions": [{"topic_id": t, "partitions": [0, 1], "assignment_epochs": [1, 3]}],
             "partitions_pending_revocation": []}
    k = st.GroupRecordKey(crec.CURRENT, "g", "m")
    decoded_key, decoded_value, _ = st.decode_payload(st.encode_payload(k, value))
    assert decoded_key == k and decoded_value == value


def test_resolved_regexes_and_classic_members_come_back(tmp_path):
    # replay of ConsumerGroupRegularExpression (16) and of a member's ClassicMemberMetadata (5)
    from test_conformance_mixed_group import join_new, sync
    h = start(tmp_path)
    hb(h, "m1", 0, regex="fo.*")
    r = hb(h, "m1", 1)                               # the regex was resolved after the first heartbeat
    assert r["member_epoch"] == 2
    c1 = join_new(h, topics=(BAR,), session=30000)["member_id"]
    generation = h.gc.consumer_group(GROUP).members[c1].member_epoch
    assert sync(h, c1, generation)["error_code"] == 0
    before = snapshot(h)
    resolved = h.gc.consumer_group(GROUP).resolved_regexes["fo.*"]

    h2 = restart(h, tmp_path)
    g = h2.gc.consumer_group(GROUP)
    assert snapshot(h2) == before
    assert g.resolved_regexes["fo.*"].topics == resolved.topics == frozenset({FOO})
    assert g.members[c1].classic == h.gc.consumer_group(GROUP).members[c1].classic
    # the classic member carries on: its heartbeat is known, its session its own
    assert h2.heartbeat(GROUP, c1, generation) == 0
    h2.advance(29_999)
    hb(h2, "m1", g.members["m1"].member_epoch)
    assert h2.heartbeat(GROUP, c1, generation) == 0
    # the regex's member changes to names: its resolution is tombstoned
    hb(h2, "m1", g.members["m1"].member_epoch, topics=[FOO], regex="")
    h3 = restart(h2, tmp_path)
    assert h3.gc.consumer_group(GROUP).resolved_regexes == {}
    live = st.replay(h3.store.load(h3.gc.partition_of(GROUP))).group_records[GROUP]
    assert not [k for k in live if k[0] == crec.REGEX]
    # the last member of the consumer protocol leaves: the classic member's group is classic again
    hb(h3, "m1", -1)
    h4 = restart(h3, tmp_path)
    assert h4.gc.consumer_group(GROUP) is None and list(h4.gc.group(GROUP).members) == [c1]


def test_records_of_no_member_are_tombstoned_at_the_next_write(tmp_path):
    # a target or a resolved regex left by a log written elsewhere: gone from the log at the next change
    store = st.LogStore(str(tmp_path))
    p = st.GroupRecordKey
    partition = start(tmp_path).gc.partition_of(GROUP)
    store.append(partition, [
        (p(crec.EPOCH, GROUP), {"epoch": 3, "metadata_hash": 0}),
        (p(crec.TARGET_EPOCH, GROUP), {"assignment_epoch": 3, "assignment_timestamp": 0}),
        (p(crec.TARGET, GROUP, "ghost"),
         {"topic_partitions": [{"topic_id": tid(FOO), "partitions": [0]}]}),
        (p(crec.REGEX, GROUP, "gh.*"), {"topics": ["ghost"], "version": 1, "timestamp": 0}),
    ])
    store.close()
    h = start(tmp_path)
    assert hb(h, "m1", 0)["error_code"] == 0
    live = st.replay(h.store.load(partition)).group_records[GROUP]
    assert not [k for k in live if k[1] in ("ghost", "gh.*")]
    assert (crec.MEMBER, "m1") in live
