"""Transactional offset commits (KIP-447) on the group coordinator: TxnOffsetCommit's member checks,
offsets pending per producer until the transaction's marker, OffsetFetch with require_stable, the
offsets log's TxnOffsetCommit/TxnMarker records replayed at load and kept by compaction. Each test
names the Kafka test it mirrors (OffsetMetadataManagerTest, GroupCoordinatorServiceTest,
GroupMetadataManagerTest, KafkaApisTest of Kafka 4.3)."""
from __future__ import annotations

import pytest
from group_harness import Call, FakeService, Harness, ctx_for
from test_conformance_consumer_group import hb, harness as consumer_harness
from test_consumer_group_durability import start

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.group.offsets import OffsetFetchRequest, TxnOffsetCommitRequest, commit_error
from groupcoord.coordinator.handlers import offset_fetch, txn_offset_commit
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import APIS

GROUP = "group-id"
PID = 1000


def errors(resp):
    return {(t["name"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}


def txn_commit(h: Harness, group_id: str = GROUP, *, pid: int = PID, epoch: int = 0, member_id: str = "",
               generation: int = -1, instance_id: str | None = None, offsets=None) -> dict:
    """One TxnOffsetCommit as the handler hands it to the core. offsets: {(topic, p): offset | (offset, metadata)}"""
    topics: dict[str, list] = {}
    for (topic, partition), value in (offsets or {("foo", 0): 100}).items():
        offset, metadata = value if isinstance(value, tuple) else (value, "")
        topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                             "committed_leader_epoch": -1, "committed_metadata": metadata})
    request = TxnOffsetCommitRequest("tx", group_id, pid, epoch, [{"name": t, "partitions": p} for t, p in topics.items()],
                                     generation, member_id, instance_id)
    call = Call()
    error = request.error()
    if error is not None:
        call(commit_error(request.topics, error))
    else:
        h.gc.txn_offset_commit(call, request)
    return call.result


def complete(h: Harness, commit: bool, group_id: str = GROUP, *, pid: int = PID, epoch: int = 0) -> int:
    return h.gc.complete_transaction(h.gc.partition_of(group_id), pid, epoch, commit)


def stable_fetch(h: Harness, group_id: str = GROUP, topics=None) -> dict:
    call = Call()
    h.gc.offset_fetch(call, OffsetFetchRequest(group_id, None if topics is None else [
        {"name": t, "partition_indexes": list(p)} for t, p in topics.items()], require_stable=True))
    return call.result


# ---------------------------------------------------------------- pending until the marker
def test_pending_offsets_are_invisible_until_commit():
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommit + testReplayTransactionEndMarkerWithCommit
    h = Harness()
    assert errors(txn_commit(h, offsets={("foo", 0): 10, ("foo", 1): 11})) == {("foo", 0): 0, ("foo", 1): 0}
    assert h.group().is_simple_group()             # a simple group, created as by a commit of generation -1
    assert h.offsets() == {}                        # not visible yet
    assert h.gc.offsets.has_pending_transactional_offsets(GROUP, "foo", 0)
    assert complete(h, True) == 0
    assert h.offsets() == {("foo", 0): 10, ("foo", 1): 11}
    assert not h.gc.offsets.has_pending_transactional_offsets(GROUP)
    ev = h.events_of("offsets.transaction_committed")[-1]
    assert (ev["producer_id"], ev["partitions"], ev["superseded"]) == (PID, 2, 0)
    assert h.events_of("offsets.transactional_commit")[-1]["partitions"] == 2


def test_pending_offsets_are_dropped_on_abort():
    # OffsetMetadataManagerTest.testReplayTransactionEndMarkerWithAbort
    h = Harness()
    h.commit(offsets={("foo", 0): 5})
    txn_commit(h, offsets={("foo", 0): 10})
    assert complete(h, False) == 0
    assert h.offsets() == {("foo", 0): 5}
    assert h.gc.offsets.pending_offsets(PID) == {}
    assert h.events_of("offsets.transaction_aborted")[-1]["partitions"] == 1


def test_marker_without_pending_offsets_is_ignored():
    # OffsetMetadataManagerTest.testReplayTransactionEndMarkerWithNonExistingTransaction
    h = Harness()
    h.commit(offsets={("foo", 0): 5})
    assert complete(h, True) == 0
    assert h.offsets() == {("foo", 0): 5}


def test_later_regular_commit_wins_over_the_transactional_one():
    # OffsetMetadataManagerTest.testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset
    h = Harness()
    txn_commit(h, offsets={("foo", 0): 10, ("foo", 1): 11})
    h.commit(offsets={("foo", 0): 20})
    complete(h, True)
    assert h.offsets() == {("foo", 0): 20, ("foo", 1): 11}
    assert h.events_of("offsets.transaction_committed")[-1]["superseded"] == 1


def test_transactions_commit_in_record_order():
    # OffsetMetadataManagerTest: the pending offset written after another producer's wins when
    # both commit, whatever the order of their markers (record offsets compared)
    h = Harness()
    txn_commit(h, pid=1, offsets={("foo", 0): 10, ("foo", 1): 10})
    txn_commit(h, pid=2, offsets={("foo", 0): 20})
    txn_commit(h, pid=1, offsets={("foo", 1): 11})       # pid 1 rewrites foo-1 after pid 2
    complete(h, True, pid=2)
    complete(h, True, pid=1)
    assert h.offsets() == {("foo", 0): 20, ("foo", 1): 11}


def test_pending_offsets_per_producer_and_group():
    # OffsetMetadataManagerTest.testConsumerGroupTransactionalOffsetCommit (several producers)
    h = Harness()
    txn_commit(h, pid=1, offsets={("foo", 0): 1})
    txn_commit(h, pid=2, offsets={("foo", 0): 2})
    assert h.gc.offsets.open_producers(GROUP) == {1, 2}
    complete(h, False, pid=1)
    assert h.gc.offsets.open_producers(GROUP) == {2}
    complete(h, True, pid=2)
    assert h.offsets() == {("foo", 0): 2}


def test_older_producer_epoch_is_invalid():
    # (the log's ProducerAppendInfo.checkProducerEpoch: a batch or a marker of an older epoch)
    h = Harness()
    txn_commit(h, epoch=3)
    assert errors(txn_commit(h, epoch=2)) == {("foo", 0): E.INVALID_PRODUCER_EPOCH}
    assert complete(h, True, epoch=2) == E.INVALID_PRODUCER_EPOCH
    assert complete(h, True, epoch=4) == 0          # (transactions V2: the marker's epoch is bumped)
    assert h.offsets() == {("foo", 0): 100}


# ---------------------------------------------------------------- KIP-447 checks
def test_classic_group_member_checks():
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownMemberId /
    # ...WithIllegalGenerationId / ...WithFencedInstanceId (and ClassicGroupTest.testValidateTransactionalOffsetCommit)
    h = Harness()
    leader, follower = h.stable_group(2)
    assert errors(txn_commit(h, member_id="nobody", generation=1)) == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert errors(txn_commit(h, member_id=follower, generation=2)) == {("foo", 0): E.ILLEGAL_GENERATION}
    assert errors(txn_commit(h, member_id=follower, generation=1, instance_id="i")) == {
        ("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert errors(txn_commit(h, member_id=follower, generation=1)) == {("foo", 0): 0}
    # v0-2: no member, no generation: accepted whatever the state (a regular commit is not)
    assert errors(txn_commit(h)) == {("foo", 0): 0}
    assert errors(h.commit(offsets={("foo", 0): 1})) == {("foo", 0): E.UNKNOWN_MEMBER_ID}


def test_classic_group_static_member_fenced():
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithFencedInstanceId
    h = Harness()
    first = h.join(instance_id="s")
    h.advance(0)
    mid = first.result["member_id"]
    h.sync(member_id=mid, generation=1, instance_id="s", assignments=[(mid, b"x")])
    assert errors(txn_commit(h, member_id="old", generation=1, instance_id="s")) == {
        ("foo", 0): E.FENCED_INSTANCE_ID}
    assert errors(txn_commit(h, member_id=mid, generation=1, instance_id="s")) == {("foo", 0): 0}


def test_classic_group_completing_rebalance_accepts_transactional_commit():
    # ClassicGroup.validateOffsetCommit: the group state is not enforced for transactional commits
    h = Harness()
    calls = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance(0)
    member = calls[1].result["member_id"]
    assert h.state() == "CompletingRebalance"
    assert errors(txn_commit(h, member_id=member, generation=1)) == {("foo", 0): 0}
    assert errors(h.commit(member_id=member, generation=1)) == {("foo", 0): E.REBALANCE_IN_PROGRESS}


def test_missing_group_with_a_generation_is_illegal_generation():
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownGroupId... (generation >= 0)
    h = Harness()
    assert errors(txn_commit(h, member_id="m", generation=1)) == {("foo", 0): E.ILLEGAL_GENERATION}
    assert h.group() is None


def test_consumer_group_member_epoch():
    # OffsetMetadataManagerTest.testConsumerGroupTransactionalOffsetCommit /
    # ...WithStaleMemberEpoch (STALE_MEMBER_EPOCH answered as ILLEGAL_GENERATION)
    h = consumer_harness()
    res = hb(h, "m1", 0, group_id="cg")
    epoch = res["member_epoch"]
    assert errors(txn_commit(h, "cg", member_id="m1", generation=epoch)) == {("foo", 0): 0}
    assert errors(txn_commit(h, "cg", member_id="m1", generation=epoch + 1)) == {("foo", 0): E.ILLEGAL_GENERATION}
    assert errors(txn_commit(h, "cg", member_id="nope", generation=epoch)) == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert errors(txn_commit(h, "cg")) == {("foo", 0): 0}       # v0-2: no member checked


def test_share_group_refuses():
    # ShareGroup.validateOffsetCommit: GROUP_ID_NOT_FOUND
    h = Harness(groupcoord_kafka_version="4.2")
    from groupcoord.coordinator.group.share.requests import ShareGroupHeartbeatRequest
    call = Call()
    h.gc.share_group_heartbeat(call, ShareGroupHeartbeatRequest("sg", "s1", 0, None, ["foo"]))
    assert errors(txn_commit(h, "sg")) == {("foo", 0): E.GROUP_ID_NOT_FOUND}


def test_metadata_too_large_and_loading():
    # OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetMetadataTooLarge; CoordinatorRuntime: loading
    h = Harness(offset_metadata_max_bytes=5)
    assert errors(txn_commit(h, offsets={("foo", 0): (1, "toolong"), ("foo", 1): (2, "ok")})) == {
        ("foo", 0): E.OFFSET_METADATA_TOO_LARGE, ("foo", 1): 0}
    h.gc.begin_loading(h.gc.partition_of("other"))
    assert errors(txn_commit(h, "other")) == {("foo", 0): E.COORDINATOR_LOAD_IN_PROGRESS}
    assert h.gc.complete_transaction(h.gc.partition_of("other"), PID, 0, True) == E.COORDINATOR_LOAD_IN_PROGRESS


# ---------------------------------------------------------------- OffsetFetch require_stable
def test_require_stable_answers_unstable_offset_commit():
    # OffsetMetadataManagerTest.testFetchOffsetsWithPendingTransactionalOffsets / testFetchAllOffsets...
    h = Harness()
    h.commit(offsets={("foo", 0): 5, ("foo", 1): 6})
    txn_commit(h, offsets={("foo", 0): 10, ("bar", 0): 7})
    res = stable_fetch(h, topics={"foo": [0, 1], "bar": [0]})
    assert {(t["name"], p["partition_index"]): (p["committed_offset"], p["error_code"])
            for t in res["topics"] for p in t["partitions"]} == {
        ("foo", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("foo", 1): (6, 0), ("bar", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    everything = stable_fetch(h)       # all topics: the committed ones, the pending one among them unstable
    assert {(t["name"], p["partition_index"]): p["error_code"] for t in everything["topics"]
            for p in t["partitions"]} == {("foo", 0): E.UNSTABLE_OFFSET_COMMIT, ("foo", 1): 0}
    assert h.offsets() == {("foo", 0): 5, ("foo", 1): 6}        # without require_stable: the last committed
    complete(h, True)
    assert errors(stable_fetch(h, topics={"foo": [0]})) == {("foo", 0): 0}


# ---------------------------------------------------------------- interplay
def test_expiry_keeps_offsets_and_group_with_pending_transactions():
    # OffsetMetadataManagerTest.testCleanupExpiredOffsetsWithPendingTransactionalOffsets
    h = Harness(offsets_retention_minutes=1)
    h.commit(offsets={("foo", 0): 1, ("foo", 1): 1})
    txn_commit(h, offsets={("foo", 0): 2})
    txn_commit(h, "pending-only", offsets={("foo", 0): 2})
    h.commit("other", offsets={("foo", 0): 1})
    txn_commit(h, "other", offsets={("foo", 1): 2})
    h.run_until(10 * 60_000)
    assert h.offsets() == {("foo", 0): 1}            # foo-1 expired, foo-0 kept: a transaction is open
    assert h.group() is not None
    assert h.group("pending-only") is not None       # no offsets, but a transaction open: kept
    assert h.offsets("other") == {} and h.group("other") is not None
    complete(h, False)
    complete(h, False, "pending-only")
    complete(h, False, "other")
    h.run_until(20 * 60_000)
    assert h.group() is None and h.group("pending-only") is None and h.group("other") is None


def test_delete_groups_offset_delete_and_topic_deletion_drop_pending_offsets():
    # GroupCoordinatorShardTest.testDeleteGroups / OffsetMetadataManagerTest.testDeleteOffsetsWithPendingTransactionalOffsets
    # / testOnPartitionsDeletedWithPendingTransactionalOffsets
    h = Harness()
    txn_commit(h, offsets={("foo", 0): 1, ("foo", 1): 1, ("bar", 0): 1})
    h.delete_offsets(topics=[{"name": "foo", "partitions": [{"partition_index": 0}]}])
    assert set(h.gc.offsets.pending_offsets(PID)) == {(GROUP, "foo", 1), (GROUP, "bar", 0)}
    h.gc.delete_topic_offsets("bar")
    assert set(h.gc.offsets.pending_offsets(PID)) == {(GROUP, "foo", 1)}
    results = []
    h.gc.delete_groups(results.append, group_ids=[GROUP])
    assert results[0]["results"] == [{"group_id": GROUP, "error_code": 0}]
    assert h.gc.offsets.pending_offsets(PID) == {}
    complete(h, True)
    assert h.offsets() == {}


# ---------------------------------------------------------------- durability
def test_replay_at_load_keeps_pending_and_committed(tmp_path):
    # GroupMetadataManagerTest/OffsetMetadataManagerTest replay of transactional records and markers
    h = start(tmp_path)
    txn_commit(h, "g1", pid=1, offsets={("foo", 0): 10})
    txn_commit(h, "g1", pid=2, offsets={("foo", 1): 20})
    h.commit("g1", offsets={("foo", 2): 30})
    assert h.gc.complete_transaction(h.gc.partition_of("g1"), 1, 0, True) == 0
    h.store.close()
    h2 = start(tmp_path, h.now)
    assert h2.offsets("g1") == {("foo", 0): 10, ("foo", 2): 30}
    assert h2.gc.offsets.pending_offsets(2) == {("g1", "foo", 1): h.gc.offsets.pending_offsets(2)[("g1", "foo", 1)]}
    assert h2.gc.complete_transaction(h2.gc.partition_of("g1"), 2, 0, True) == 0
    h2.store.close()
    h3 = start(tmp_path, h.now)
    assert h3.offsets("g1") == {("foo", 0): 10, ("foo", 1): 20, ("foo", 2): 30}
    assert not h3.gc.offsets.has_pending_transactional_offsets("g1")
    h3.store.close()


def test_compaction_keeps_the_same_state(tmp_path):
    # (LogStore.compact keeps the latest frame of each key: the pending, superseded and committed state survive)
    h = start(tmp_path)
    txn_commit(h, pid=1, offsets={("foo", 0): 10, ("foo", 1): 10})
    txn_commit(h, pid=2, offsets={("foo", 0): 20, ("foo", 2): 20})
    h.commit(offsets={("foo", 1): 15})                 # overtakes pid 1's foo-1
    complete(h, True, pid=2)                          # overtakes pid 1's foo-0
    txn_commit(h, pid=3, offsets={("foo", 3): 30})
    complete(h, False, pid=3)
    txn_commit(h, pid=3, offsets={("foo", 3): 31})     # pending after compaction
    partition = h.gc.partition_of(GROUP)
    before = st.replay(h.store.load(partition))
    h.store.compact(partition)
    h.store.close()
    h2 = start(tmp_path, h.now)
    assert st.replay(h2.store.load(partition)).offsets == before.offsets
    assert h2.offsets() == {("foo", 0): 20, ("foo", 1): 15, ("foo", 2): 20}
    assert set(h2.gc.offsets.pending_offsets(3)) == {(GROUP, "foo", 3)}
    complete(h2, True, pid=1)                         # both of pid 1's offsets were overtaken
    complete(h2, True, pid=3)
    assert h2.offsets() == {("foo", 0): 20, ("foo", 1): 15, ("foo", 2): 20, ("foo", 3): 31}
    h2.store.close()


def test_records_round_trip():
    for key, value in [(st.TxnOffsetCommitKey(7, "g", "t", 1), st.TxnOffsetCommitValue(3, 42, 5, "m", 1000, -1, True)),
                       (st.TxnOffsetCommitKey(7, "g", "t", 1), None),
                       (st.TxnMarkerKey(7), st.TxnMarkerValue(3, 1, 9))]:
        decoded_key, decoded_value, _ = st.decode_payload(st.encode_payload(key, value))
        assert (decoded_key, decoded_value) == (key, value)


# ---------------------------------------------------------------- over the wire
class _Transactions:
    def __init__(self, code=None):
        self.code = code
        self.calls = []

    def verify_offsets(self, transactional_id, producer_id, producer_epoch, group_id, add=False):
        self.calls.append((transactional_id, producer_id, producer_epoch, group_id))
        return self.code


def wire(svc, version: int, body: dict) -> dict:
    """The request encoded and decoded at ``version`` (as the server reads it), handled, and the
    response encoded and decoded (as the client reads it)."""
    api = APIS[ApiKey.TXN_OFFSET_COMMIT]
    request = api.request.decode(api.request.encode(body, version), version)
    out = []
    txn_offset_commit.handle(ctx_for(svc, ApiKey.TXN_OFFSET_COMMIT, version), version, request, out.append)
    return api.response.decode(api.response.encode(out[0], version), version)


def body(**fields):
    b = {"transactional_id": "tx", "group_id": GROUP, "producer_id": PID, "producer_epoch": 0, "generation_id": -1,
         "member_id": "", "group_instance_id": None, "topics": [
             {"name": "foo", "partitions": [{"partition_index": 0, "committed_offset": 10, "committed_leader_epoch": 3,
                                             "committed_metadata": "md"},
                                            {"partition_index": 7, "committed_offset": 1, "committed_leader_epoch": -1,
                                             "committed_metadata": None}]},
             {"name": "nope", "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                              "committed_metadata": None}]}]}
    b.update(fields)
    return b


@pytest.mark.parametrize("version", range(6))
def test_txn_offset_commit_over_the_wire(h, svc, version):
    # KafkaApisTest.testHandleTxnOffsetCommitRequest / ...WithUnknownTopic (unknown topics and partitions
    # answered by the API layer, merged in front of the coordinator's)
    svc.transactions = _Transactions()
    res = wire(svc, version, body())
    assert res["topics"] == [{"name": "foo", "partitions": [{"partition_index": 7, "error_code": 3},
                                                            {"partition_index": 0, "error_code": 0}]},
                             {"name": "nope", "partitions": [{"partition_index": 0, "error_code": 3}]}]
    assert svc.transactions.calls == [("tx", PID, 0, GROUP)]
    complete(h, True)
    res = stable_fetch(h, topics={"foo": [0]})
    assert res["topics"][0]["partitions"][0] == {"partition_index": 0, "committed_offset": 10,
                                                 "committed_leader_epoch": 3 if version >= 2 else -1,
                                                 "metadata": "md", "error_code": 0}


@pytest.mark.parametrize("version,verified,expected", [
    (4, E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH),           # AddPartitionsToTxnManager
    (3, E.TRANSACTION_ABORTABLE, E.INVALID_TXN_STATE),          # DEFAULT_ERROR before v4
    (4, E.TRANSACTION_ABORTABLE, E.TRANSACTION_ABORTABLE),
    (3, E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS),   # CoordinatorOperationExceptionHelper
    (1, E.NETWORK_EXCEPTION, E.COORDINATOR_NOT_AVAILABLE),      # KafkaApis: v0-1
    (5, E.INVALID_PRODUCER_ID_MAPPING, E.INVALID_PRODUCER_ID_MAPPING),
])
def test_verification_errors(h, svc, version, verified, expected):
    # GroupCoordinatorServiceTest.testCommitTransactionalOffsetsWithWrappedError / KafkaApisTest
    svc.transactions = _Transactions(int(verified))
    res = wire(svc, version, body(topics=body()["topics"][:1]))
    assert errors(res) == {("foo", 0): expected, ("foo", 7): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.gc.offsets.pending_offsets(PID) == {}


def test_not_coordinator_and_invalid_group_id(h):
    # GroupCoordinatorServiceTest.testCommitTransactionalOffsetsWithInvalidGroupId / NOT_COORDINATOR
    svc = FakeService(h, owner=lambda group_id: 1)
    assert set(errors(wire(svc, 3, body(topics=body()["topics"][:1]))).values()) == {
        E.NOT_COORDINATOR, E.UNKNOWN_TOPIC_OR_PARTITION}
    svc = FakeService(h)
    assert errors(wire(svc, 3, body(group_id="", topics=body()["topics"][:1])))[("foo", 0)] == E.INVALID_GROUP_ID


def test_versions_per_release():
    from groupcoord.coordinator.handlers import served_versions
    assert served_versions("3.9")[ApiKey.TXN_OFFSET_COMMIT] == (0, 4)
    assert all(served_versions(r)[ApiKey.TXN_OFFSET_COMMIT] == (0, 5) for r in ("4.1", "4.2", "4.3"))


def test_offset_fetch_require_stable_over_the_wire(h, svc):
    # OffsetFetch v7+ RequireStable (KafkaApis passes it to fetchOffsets)
    txn_commit(h, offsets={("foo", 0): 1})
    api = APIS[ApiKey.OFFSET_FETCH]
    for version, stable in ((7, True), (7, False), (8, True)):
        req = {"group_id": GROUP, "topics": [{"name": "foo", "partition_indexes": [0]}], "require_stable": stable,
               "groups": [{"group_id": GROUP, "topics": [{"name": "foo", "partition_indexes": [0]}]}]}
        request = api.request.decode(api.request.encode(req, version), version)
        out = []
        offset_fetch.handle(ctx_for(svc, ApiKey.OFFSET_FETCH, version), version, request, out.append)
        res = api.response.decode(api.response.encode(out[0], version), version)
        topics = res["groups"][0]["topics"] if version >= 8 else res["topics"]
        assert topics[0]["partitions"][0]["error_code"] == (E.UNSTABLE_OFFSET_COMMIT if stable else 0)
