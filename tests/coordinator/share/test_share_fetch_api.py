"""ShareFetch (78) and ShareAcknowledge (79) through the service, in virtual time, every request and
response through the codec both ways as a client sees them: the API layer's refusals
(KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest), share sessions
(SharePartitionManager.newContext / acknowledgeSessionUpdate, ShareSessionCache), acquisition and long
polling (DelayedShareFetch, ShareFetchUtils), acknowledgements, acquisition-lock expiry, the close of a
session and of its connection, leaders, and RENEW (KIP-1222).

Each test names the Kafka test it mirrors: SFAT = ShareFetchAcknowledgeRequestTest, KAT = KafkaApisTest,
SPMT = SharePartitionManagerTest, SPT = SharePartitionTest, SSCT = ShareSessionCacheTest (Kafka 4.3 unless
said). A share group member heartbeats first (the group coordinator initializes the share-partition states
on its first heartbeats); ShareFetch does not check membership, so other member ids fetch as well."""
from __future__ import annotations

import base64
import uuid

import pytest

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.handlers.share_fetch import renew_error
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.records import Record, decode_batch, encode_batch, iter_batches

PRODUCE, SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE = 0, 76, 78, 79
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
LOCK_MS = 30_000            # group.share.record.lock.duration.ms, Kafka's default
START = 1_000_000           # the virtual clock at the start of every test
#: UNKNOWN_TOPIC_OR_PARTITION's message in Kafka's Errors (what an exception built without one carries)
NOT_HOSTED = "This server does not host this topic-partition."


# ============================================================================ helpers
class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now


class Pending:
    """A request's response: None until the service answers it."""

    def __init__(self) -> None:
        self.response: dict | None = None


class Connection:
    """One client connection to one node: its requests numbered, each through the codec both ways."""

    def __init__(self, svc: Service, node_id: int, connection_id: int) -> None:
        self.svc, self.node_id, self.connection_id = svc, node_id, connection_id
        self.correlation_id = 0

    def send(self, api_key: int, body: dict, version: int) -> Pending:
        api = APIS[api_key]
        decoded = api.request.decode(api.request.encode(body, version), version)
        self.correlation_id += 1
        pending = Pending()

        def respond(response: dict) -> None:
            assert pending.response is None, "answered twice"
            pending.response = api.response.decode(api.response.encode(response, version), version)
        ctx = RequestContext(self.svc, self.node_id, "share-client", "/127.0.0.1", api_key, version,
                             self.correlation_id, connection_id=self.connection_id)
        self.svc.handle(ctx, decoded, respond)
        return pending

    def call(self, api_key: int, body: dict, version: int) -> dict:
        pending = self.send(api_key, body, version)
        assert pending.response is not None, "not answered at once"
        return pending.response


def batches(acks) -> list[dict]:
    """AcknowledgementBatches from [(first, last, type or [types])]."""
    return [{"first_offset": first, "last_offset": last,
             "acknowledge_types": [types] if isinstance(types, int) else list(types)} for first, last, types in acks]


class World:
    """A cluster of ``nodes`` (ports 9092...) with topic ``foo`` and share group ``q`` (its members
    joined, share.auto.offset.reset earliest), driven by a virtual clock."""

    def __init__(self, partitions: int = 1, *, release: str = "4.3", nodes: int = 1, members=("m1", "m2"),
                 directory=None, clock: Clock | None = None, **config) -> None:
        self.clock = clock or Clock()
        config.setdefault("group.share.assignment.interval.ms", 0)
        config["groupcoord.kafka.version"] = release
        store = st.LogStore(str(directory)) if directory is not None else None
        self.svc = Service(BrokerConfig(config, environ={}), nodes=nodes, ports=[9092 + n for n in range(nodes)],
                           clock=self.clock, emit=lambda e: None, store=store)
        if store is not None:
            self.svc.load()
        self.svc.create_topic("foo", partitions, exist_ok=True)
        self.topic_id = self.svc.topic_id("foo")
        self._connections: dict[tuple[int, int], Connection] = {}
        self.svc.alter_group_configs("q", {"share.auto.offset.reset": "earliest"})
        for member in members:
            self.join(member)

    def connection(self, node: int = 0, conn: int = 1) -> Connection:
        key = (node, conn)
        if key not in self._connections:
            self._connections[key] = Connection(self.svc, node, conn)
        return self._connections[key]

    def later(self, ms: int) -> None:
        """Move the clock on and run what is due."""
        self.clock.now += ms
        self.svc.advance()

    # ---- the group and the log ----

    def join(self, member: str, group: str = "q") -> None:
        """ShareGroupHeartbeat twice, at the group's coordinator: the member has its partitions, their
        share-partition states are initialized."""
        coordinator = self.connection(self.svc.cluster.coordinator_for(group), conn=0)

        def heartbeat(epoch: int, topics) -> dict:
            resp = coordinator.call(SHARE_GROUP_HEARTBEAT, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                                            "rack_id": None, "subscribed_topic_names": topics}, 1)
            assert resp["error_code"] == 0, resp
            return resp
        heartbeat(heartbeat(0, ["foo"])["member_epoch"], None)

    def produce(self, count: int = 10, partition: int = 0, *, batches: int = 1) -> int:
        """``count`` records in ``batches`` batches, through Produce at the partition's leader; the base offset."""
        per_batch = count // batches
        node = self.svc.cluster.leader_for("foo", partition)
        first = -1
        for b in range(batches):
            data = encode_batch([Record(i, 0, None, b"v%d" % i, []) for i in range(per_batch)], base_timestamp=START)
            resp = self.connection(node, conn=99).call(PRODUCE, {
                "transactional_id": None, "acks": -1, "timeout_ms": 1000,
                "topic_data": [{"name": "foo", "partition_data": [{"index": partition, "records": data}]}]}, 8)
            [part] = resp["responses"][0]["partition_responses"]
            assert part["error_code"] == 0, part
            first = part["base_offset"] if b == 0 else first
        return first

    # ---- ShareFetch and ShareAcknowledge ----

    def fetch_body(self, member, epoch, partitions=(0,), *, acks=None, forget=(), group="q", topic_id=None,
                   max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                   acquire_mode=0, renew=False) -> dict:
        topic_id = self.topic_id if topic_id is None else topic_id
        acks = acks or {}
        indexes = list(dict.fromkeys([*partitions, *acks]))
        return {"group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
                "min_bytes": min_bytes, "max_bytes": max_bytes, "max_records": max_records, "batch_size": batch_size,
                "share_acquire_mode": acquire_mode, "is_renew_ack": renew,
                "topics": [{"topic_id": topic_id, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": batches(acks.get(p, ()))} for p in indexes]}]
                if indexes else [],
                "forgotten_topics_data": [{"topic_id": topic_id, "partitions": list(forget)}] if forget else []}

    def fetch(self, member, epoch, partitions=(0,), *, node=0, conn=1, version=1, **fields) -> dict:
        """A ShareFetch answered at once."""
        return self.connection(node, conn).call(SHARE_FETCH, self.fetch_body(member, epoch, partitions, **fields),
                                                version)

    def fetch_later(self, member, epoch, partitions=(0,), *, node=0, conn=1, version=1, **fields) -> Pending:
        """A ShareFetch that may wait (long polling)."""
        return self.connection(node, conn).send(SHARE_FETCH, self.fetch_body(member, epoch, partitions, **fields),
                                                version)

    def acknowledge(self, member, epoch, acks=None, *, node=0, conn=1, version=1, group="q", topic_id=None,
                    renew=False) -> dict:
        topic_id = self.topic_id if topic_id is None else topic_id
        body = {"group_id": group, "member_id": member, "share_session_epoch": epoch, "is_renew_ack": renew,
                "topics": [{"topic_id": topic_id, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": batches(b)} for p, b in acks.items()]}]
                if acks else []}
        return self.connection(node, conn).call(SHARE_ACKNOWLEDGE, body, version)


def ok(resp: dict) -> dict:
    assert resp["error_code"] == 0, resp
    return resp


def refused(resp: dict) -> tuple:
    """A whole-request error as ShareFetchRequest.getErrorResponse builds it: (code, lock timeout,
    responses, node endpoints)."""
    return resp["error_code"], resp.get("acquisition_lock_timeout_ms", 0), resp["responses"], resp["node_endpoints"]


def entry(resp: dict, partition: int = 0, topic_id=None) -> dict | None:
    """The response's entry of a partition (of any topic, or of ``topic_id``), None when absent."""
    found = [p for t in resp["responses"] if topic_id is None or t["topic_id"] == topic_id
             for p in t["partitions"] if p["partition_index"] == partition]
    assert len(found) <= 1, resp
    return found[0] if found else None


def indexes(resp: dict) -> list[int]:
    return sorted(p["partition_index"] for t in resp["responses"] for p in t["partitions"])


def acquired(resp: dict, partition: int = 0) -> list[tuple[int, int, int]]:
    """AcquiredRecords of a partition as (first, last, delivery count); [] when it has no entry."""
    e = entry(resp, partition)
    return [] if e is None else [(r["first_offset"], r["last_offset"], r["delivery_count"]) for r in e["acquired_records"]]


def offsets_in(records: bytes) -> list[int]:
    """The offsets of the records of a Records field."""
    return [r.offset for _, batch in iter_batches(records) for r in decode_batch(batch)[1]]


def member_uuid(n: int) -> str:
    """A member id as the Java client makes it (Uuid.toString: 22 characters of base64url)."""
    return base64.urlsafe_b64encode(uuid.uuid5(uuid.NAMESPACE_OID, str(n)).bytes).decode().rstrip("=")


# ============================================================================ the API layer
@pytest.mark.parametrize("release,config", [("4.3", {"share.version": 0}), ("4.1", {})])
def test_share_groups_off_is_unsupported_version(release, config):
    # SFAT testShareFetchRequestIsInAccessibleWhenConfigsDisabled, testShareAcknowledgeRequestIsInAccessibleWhenConfigsDisabled;
    # KAT testHandleShareFetchShareGroupDisabled, testHandleShareAcknowledgeShareGroupDisabled: share.version 0
    # (4.1's default), UNSUPPORTED_VERSION with no partitions and AcquisitionLockTimeoutMs 0
    w = World(release=release, members=(), **config)
    w.produce(5)
    assert refused(w.fetch("m1", 0)) == (E.UNSUPPORTED_VERSION, 0, [], [])
    assert refused(w.acknowledge("m1", 1, {0: [(0, 4, ACCEPT)]})) == (E.UNSUPPORTED_VERSION, 0, [], [])
    assert w.svc.share_partitions.sessions() == []


def test_null_group_id_is_invalid_request():
    # KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest (4.3): a null GroupId is INVALID_REQUEST
    # before the session step ("Invalid group id in the request."; see test_top_level_errors_carry_no_message)
    w = World()
    assert refused(w.fetch("m1", 0, group=None))[:3] == (E.INVALID_REQUEST, 0, [])
    assert refused(w.acknowledge("m1", 1, {0: [(0, 0, ACCEPT)]}, group=None))[:3] == (E.INVALID_REQUEST, 0, [])
    assert refused(w.fetch("m1", 1)) == (E.SHARE_SESSION_NOT_FOUND, 0, [], [])     # no session was opened


@pytest.mark.parametrize("release", ["4.2", "4.3"])
def test_member_ids_kafka_4_2_refuses(release):
    # KAT testShareFetchRequestWithInvalidMemberId, testHandleShareAcknowledgeWithInvalidMemberId:
    # KafkaApis.isMemberIdValid (4.2+): not null, not empty, at most 36 characters
    w = World(release=release)
    w.produce(3)
    for member in ("", "m" * 37):
        assert refused(w.fetch(member, 0))[:3] == (E.INVALID_REQUEST, 0, [])
        assert refused(w.acknowledge(member, 1, {0: [(0, 2, ACCEPT)]}))[:3] == (E.INVALID_REQUEST, 0, [])
    assert w.svc.share_partitions.sessions() == []
    assert acquired(ok(w.fetch("m" * 36, 0))) == [(0, 2, 1)]


def test_kafka_4_1_takes_member_ids_it_can_parse():
    # Kafka 4.1's KafkaApis reads MemberId with Uuid.fromString (no isMemberIdValid): a Java client's
    # member id (a base64 Uuid) opens a session and fetches
    w = World(release="4.1", members=(member_uuid(1),), **{"group.share.enable": True})
    w.produce(3)
    resp = ok(w.fetch(member_uuid(1), 0))
    assert (resp["acquisition_lock_timeout_ms"], acquired(resp)) == (LOCK_MS, [(0, 2, 1)])


@pytest.mark.parametrize("member", ["", "m" * 37, "m1"])
def test_kafka_4_1_fails_member_ids_that_are_not_uuids(member):
    # KafkaApis (4.1) handleShareFetchRequest: new ShareRequestMetadata(Uuid.fromString(memberId), epoch)
    w = World(release="4.1", members=(), **{"group.share.enable": True})
    assert refused(w.fetch(member, 0))[:3] == (E.UNKNOWN_SERVER_ERROR, 0, [])


@pytest.mark.parametrize("case", ["null group id", "invalid member id", "renew with limits"])
def test_top_level_errors_carry_no_message(case):
    # ShareFetchRequest.getErrorResponse (4.1 to trunk): ShareFetchResponse.of(Errors.forException(e), ...):
    # the top-level ErrorMessage stays null whatever message KafkaApis built the exception with
    w = World()
    if case == "null group id":
        resp = w.fetch("m1", 0, group=None)
    elif case == "invalid member id":
        resp = w.fetch("", 0)
    else:
        resp = w.fetch("m1", 0, version=2, renew=True, max_wait_ms=10)
    assert resp["error_code"] == E.INVALID_REQUEST
    assert resp["error_message"] is None


# ============================================================================ share sessions
def test_initial_epoch_opens_a_session_whose_next_epoch_is_1():
    # SPMT testNewContext, testSubsequentShareSession: epoch 0 creates the session at epoch 1 (ShareSessionCache.
    # maybeCreateSession: nextEpoch(INITIAL_EPOCH)); each accepted request moves it on by one
    w = World()
    ok(w.fetch("m1", 0))
    for epoch in (1, 2, 3):
        ok(w.fetch("m1", epoch))
    assert refused(w.fetch("m1", 3)) == (E.INVALID_SHARE_SESSION_EPOCH, 0, [], [])
    [session] = w.svc.share_partitions.sessions()
    assert (session.member_id, session.epoch) == ("m1", 4)


def test_wrong_epoch_keeps_the_session():
    # SFAT testShareFetchRequestInvalidShareSessionEpoch; KAT testHandleShareFetchRequestInvalidShareSessionError:
    # a mismatched epoch is INVALID_SHARE_SESSION_EPOCH, the session kept and its epoch not moved
    w = World()
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0))) == [(0, 9, 1)]
    assert refused(w.fetch("m1", 3)) == (E.INVALID_SHARE_SESSION_EPOCH, 0, [], [])
    assert refused(w.fetch("m1", 3, acks={0: [(0, 9, ACCEPT)]})) == (E.INVALID_SHARE_SESSION_EPOCH, 0, [], [])
    resp = ok(w.fetch("m1", 1, acks={0: [(0, 9, ACCEPT)]}))      # the right epoch still works: the ack was not
    assert entry(resp)["acknowledge_error_code"] == 0               # applied before


def test_the_epoch_after_int_max_is_1():
    # ShareRequestMetadata.nextEpoch: after Integer.MAX_VALUE comes 1 (0 and -1 are the open and close epochs)
    w = World()
    ok(w.fetch("m1", 0))
    [session] = w.svc.share_partitions.sessions()
    session.epoch = 2**31 - 1
    ok(w.fetch("m1", 2**31 - 1))
    assert session.epoch == 1
    ok(w.fetch("m1", 1))


@pytest.mark.parametrize("epoch", [1, 5, -1])
def test_no_session(epoch):
    # SFAT testShareFetchRequestShareSessionNotFound, testShareAcknowledgeRequestShareSessionNotFound; SPMT
    # testNewContextThrowsErrorWhenShareSessionNotFoundOnFinalEpoch, testAcknowledgeSessionUpdateThrowsWhenShareSessionNotFound;
    # KAT testHandleShareFetchRequestShareSessionNotFoundError, testHandleShareAcknowledgeRequestSessionNotFound
    w = World()
    assert refused(w.fetch("m1", epoch)) == (E.SHARE_SESSION_NOT_FOUND, 0, [], [])
    assert refused(w.acknowledge("m1", epoch, {0: [(0, 0, ACCEPT)]}, version=2)) == (E.SHARE_SESSION_NOT_FOUND, 0, [], [])
    ok(w.fetch("m1", 0))
    # a session is (group id, member id)'s on one node: it serves neither another member nor another group
    assert refused(w.fetch("m2", epoch))[0] == E.SHARE_SESSION_NOT_FOUND
    assert refused(w.fetch("m1", epoch, group="other"))[0] == E.SHARE_SESSION_NOT_FOUND


def test_acknowledgements_on_the_initial_epoch_are_invalid_request():
    # SFAT testShareFetchInitialEpochWithAcknowledgements; KAT testHandleShareFetchRequestInvalidRequestOnInitialEpoch;
    # SPMT testNewContextThrowsErrorWhenAcknowledgeDataPresentOnInitialEpoch: refused before the session is touched
    w = World()
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0))) == [(0, 9, 1)]
    assert refused(w.fetch("m1", 0, acks={0: [(0, 9, ACCEPT)]})) == (E.INVALID_REQUEST, 0, [], [])
    resp = ok(w.fetch("m1", 1, acks={0: [(0, 9, ACCEPT)]}))     # the session was not replaced, nor the ack applied
    assert entry(resp)["acknowledge_error_code"] == 0


def test_share_acknowledge_on_the_initial_epoch():
    # SFAT testShareAcknowledgeInitialRequestError; KAT testHandleShareAcknowledgeRequestInvalidRequestOnInitialEpoch;
    # SPMT testAcknowledgeSessionUpdateThrowsOnInitialEpoch: INVALID_SHARE_SESSION_EPOCH, nothing acknowledged
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0))
    assert refused(w.acknowledge("m1", 0, {0: [(0, 9, ACCEPT)]}, version=2)) == (E.INVALID_SHARE_SESSION_EPOCH, 0, [], [])
    resp = ok(w.acknowledge("m1", 1, {0: [(0, 9, ACCEPT)]}))
    assert (entry(resp)["error_code"], entry(resp)["error_message"]) == (0, None)


def test_share_acknowledge_moves_the_epoch():
    # SPMT testAcknowledgeSessionUpdateSuccessOnSubsequentEpoch, testAcknowledgeSessionUpdateThrowsInvalidShareSessionEpochException;
    # SFAT testShareAcknowledgeRequestInvalidShareSessionEpoch; KAT testHandleShareAcknowledgeRequestSuccess
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0))
    resp = ok(w.acknowledge("m1", 1, {0: [(0, 4, ACCEPT)]}, version=2))
    assert (resp["acquisition_lock_timeout_ms"], entry(resp)["error_code"]) == (LOCK_MS, 0)
    assert refused(w.acknowledge("m1", 1, {0: [(5, 9, ACCEPT)]}))[0] == E.INVALID_SHARE_SESSION_EPOCH
    assert refused(w.fetch("m1", 1))[0] == E.INVALID_SHARE_SESSION_EPOCH
    ok(w.fetch("m1", 2))
    resp = ok(w.acknowledge("m1", 3, {0: [(5, 9, ACCEPT)]}, version=1))
    assert entry(resp)["error_code"] == 0
    assert "acquisition_lock_timeout_ms" not in resp                    # (v2+ only)


def test_session_limit_is_answered_after_max_wait():
    # SFAT testShareSessionEvictedOnConnectionDrop; KAT testHandleShareFetchRequestWhenShareSessionCacheIsFull;
    # SPMT testNewContextThrowsErrorWhenShareSessionCacheIsFullOnInitialEpoch, testCreateIdleShareFetchTask,
    # testNewContextExistingSessionNewRequestWithInitialEpoch: SHARE_SESSION_LIMIT_REACHED after MaxWaitMs (the
    # idle share fetch timer task); a member's new epoch 0 replaces its own session, at the limit too
    w = World(**{"group.share.max.size": 2, "group.share.max.share.sessions": 2})
    ok(w.fetch("m1", 0, conn=1))
    ok(w.fetch("m2", 0, conn=2))
    ok(w.fetch("m1", 0, conn=1))                     # replaced, not added
    pending = w.fetch_later("m3", 0, conn=3, max_wait_ms=500)
    w.later(499)
    assert pending.response is None
    w.later(1)
    assert refused(pending.response) == (E.SHARE_SESSION_LIMIT_REACHED, 0, [], [])
    pending = w.fetch_later("m3", 0, conn=3, max_wait_ms=0)              # (a timer due now: the next tick)
    w.later(0)
    assert refused(pending.response)[0] == E.SHARE_SESSION_LIMIT_REACHED
    assert refused(w.fetch("m3", 1, conn=3))[0] == E.SHARE_SESSION_NOT_FOUND        # none was opened
    w.svc.connection_closed(0, 1)                    # m1's connection drops: its session goes
    ok(w.fetch("m3", 0, conn=3))
    assert refused(w.fetch("m1", 1, conn=4))[0] == E.SHARE_SESSION_NOT_FOUND
    assert sorted(s.member_id for s in w.svc.share_partitions.sessions()) == ["m2", "m3"]


# ============================================================================ fetching
def test_fetch_acquires_records():
    # SFAT testShareFetchRequestSuccess: the produced records, acquired with delivery count 1, the log's batches
    # covering them, AcquisitionLockTimeoutMs the group's lock duration
    w = World()
    ok(w.fetch("m1", 0))
    w.produce(10)
    resp = ok(w.fetch("m1", 1))
    assert resp["acquisition_lock_timeout_ms"] == LOCK_MS
    [topic] = resp["responses"]
    assert topic["topic_id"] == w.topic_id
    [part] = topic["partitions"]
    assert (part["partition_index"], part["error_code"], part["acknowledge_error_code"]) == (0, 0, 0)
    assert (part["current_leader"], resp["node_endpoints"]) == ({"leader_id": 0, "leader_epoch": 0}, [])
    assert acquired(resp) == [(0, 9, 1)]
    assert offsets_in(part["records"]) == list(range(10))
    assert acquired(ok(w.fetch("m1", 2))) == []                    # nothing more to acquire


def test_initial_fetch_names_every_partition_read():
    # SFAT sendFirstShareFetchRequest (every test's first fetch: until each partition is in an epoch-0 response,
    # the topic still empty): DelayedShareFetch reads every acquirable partition, ShareFetchUtils.processFetchResponse
    # puts an entry for each (empty Records, no AcquiredRecords), ShareSessionContext.updateAndGenerateResponseData
    # sends a full context's all; a subsequent context's are pruned to those with records (CachedSharePartition.
    # maybeUpdateResponseData)
    w = World(3)
    resp = ok(w.fetch("m1", 0, [0, 1, 2], min_bytes=0, max_wait_ms=5000))
    assert indexes(resp) == [0, 1, 2]
    assert all((p["error_code"], p["records"], p["acquired_records"]) == (0, b"", [])
               for t in resp["responses"] for p in t["partitions"])
    w.produce(4, partition=1)
    resp = ok(w.fetch("m1", 1, [0, 1, 2], min_bytes=0, max_wait_ms=5000))
    assert (indexes(resp), acquired(resp, 1)) == ([1], [(0, 3, 1)])
    # MaxRecords spent by the first partition read (a whole batch: a soft limit): the others are read and named
    # at epoch 0, nothing acquired from them
    w.produce(4, partition=0)
    w.produce(4, partition=2)
    resp = ok(w.fetch("m2", 0, [0, 1, 2], max_records=1, min_bytes=0))
    assert indexes(resp) == [0, 1, 2]
    assert [acquired(resp, p) for p in (0, 1, 2)] == [[(0, 3, 1)], [], []]


def test_min_bytes_0_answers_at_once():
    # DelayedShareFetch.isMinBytesSatisfied: accumulatedSize >= minBytes (KafkaApis: min(MinBytes, fetchMaxBytes)),
    # so MinBytes 0 completes the fetch at once when a partition is acquirable, data or not
    w = World()
    ok(w.fetch("m1", 0))
    pending = w.fetch_later("m1", 1, min_bytes=0, max_wait_ms=5000)
    assert pending.response is not None and acquired(ok(pending.response)) == []
    pending = w.fetch_later("m1", 2, min_bytes=1, max_wait_ms=5000)      # MinBytes 1 waits for data
    assert pending.response is None


@pytest.mark.parametrize("limit", [{"max_records": 0}, {"max_bytes": 0}])
def test_max_records_or_max_bytes_0_reads_nothing(limit):
    # SharePartitionManager.processShareFetch: maxFetchRecords 0 or maxBytes 0 completes the fetch with an empty
    # map at once (nothing read, so not even an epoch 0 response names the partition)
    w = World()
    w.produce(10)
    resp = ok(w.fetch("m1", 0, max_wait_ms=5000, **limit))
    assert (resp["responses"], resp["acquisition_lock_timeout_ms"]) == ([], LOCK_MS)
    assert acquired(ok(w.fetch("m1", 1))) == [(0, 9, 1)]


def test_max_records_and_batch_size():
    # SFAT testShareFetchRequestWithMaxRecordsAndBatchSize: ten single-record batches, MaxRecords 1, BatchSize 1:
    # one record per fetch; SPT testAcquireSingleBatchInRecordLimitMode (ShareFetch v2 ShareAcquireMode
    # record_limit, KIP-1206): never more than MaxRecords, the batch sent whole
    w = World()
    w.produce(10, batches=10)
    resp = ok(w.fetch("m1", 0, max_records=1, batch_size=1))
    assert acquired(resp) == [(0, 0, 1)]
    assert offsets_in(entry(resp)["records"]) == [0]
    assert acquired(ok(w.fetch("m1", 1, max_records=1, batch_size=1))) == [(1, 1, 1)]
    assert acquired(ok(w.fetch("m1", 2, max_records=3, batch_size=1))) == [(2, 2, 1), (3, 3, 1), (4, 4, 1)]
    w.produce(10)                                                       # offsets 10-19, one batch
    assert acquired(ok(w.fetch("m2", 0, max_records=5))) == [(5, 9, 1)]
    resp = ok(w.fetch("m2", 1, max_records=3, version=2, acquire_mode=1))
    assert acquired(resp) == [(10, 12, 1)]
    assert set(range(10, 13)) <= set(offsets_in(entry(resp)["records"]))


def test_partitions_rotate_by_the_request_epoch():
    # SPMT testFetchMessagesRotatePartitions (PartitionRotateStrategy.rotateRoundRobin): the session's partitions
    # rotated left by the request's ShareSessionEpoch (KafkaApis passes shareFetchRequest.data.shareSessionEpoch),
    # none at epoch 0; with MaxRecords 1 the first partition read takes the fetch's one record
    w = World(3)
    for p in range(3):
        w.produce(5, partition=p, batches=5)
    first = []
    for epoch in range(5):
        resp = ok(w.fetch("m1", epoch, [0, 1, 2], max_records=1, batch_size=1))
        [taken] = [p for p in range(3) if acquired(resp, p)]
        first.append(taken)
    assert first == [0, 1, 2, 0, 1]


def test_members_share_the_records():
    # SFAT testShareFetchRequestSuccessfulSharingBetweenMultipleConsumers: a record acquired by one member is not
    # given to another; testShareFetchRequestNoSharingBetweenMultipleConsumersFromDifferentGroups: another group
    # gets every record
    w = World()
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0))) == [(0, 9, 1)]
    assert acquired(ok(w.fetch("m2", 0))) == []
    w.produce(5)
    assert acquired(ok(w.fetch("m2", 1))) == [(10, 14, 1)]
    assert acquired(ok(w.fetch("m1", 1))) == []
    w.svc.alter_group_configs("q2", {"share.auto.offset.reset": "earliest"})
    w.join("m9", "q2")
    assert acquired(ok(w.fetch("m9", 0, group="q2"))) == [(0, 14, 1)]


def test_long_poll_answered_by_a_produce():
    # DelayedShareFetchTest testTryCompleteWhenMinBytesNotSatisfiedOnFirstFetch / testDelayedShareFetchTryCompleteReturnsTrue:
    # a fetch without data waits (MaxWaitMs) and completes when a produce brings MinBytes
    w = World()
    ok(w.fetch("m1", 0))
    pending = w.fetch_later("m1", 1, max_wait_ms=5000)
    w.later(1000)
    assert pending.response is None
    w.produce(3)
    assert acquired(ok(pending.response)) == [(0, 2, 1)]
    w.later(10_000)                                                     # its timer went with it: answered once


def test_long_poll_answered_at_max_wait():
    # DelayedShareFetchTest testOnCompleteExecutionOnTimeout: at MaxWaitMs the fetch completes with what it can
    # acquire; nothing, so a subsequent context answers no partition
    w = World()
    ok(w.fetch("m1", 0))
    pending = w.fetch_later("m1", 1, max_wait_ms=5000, min_bytes=100_000)
    w.produce(3)                                                        # under MinBytes: still waiting
    w.later(4999)
    assert pending.response is None
    w.later(1)
    assert acquired(ok(pending.response)) == [(0, 2, 1)]                # what it could acquire by then
    pending = w.fetch_later("m1", 2, max_wait_ms=5000)
    w.later(5000)
    assert ok(pending.response)["responses"] == []
    assert pending.response["acquisition_lock_timeout_ms"] == LOCK_MS


def test_a_waiting_fetch_whose_topic_is_deleted_is_answered_at_max_wait():
    # (groupcoord's own: a topic deleted under a waiting ShareFetch; its partition answers an error at MaxWaitMs)
    w = World()
    ok(w.fetch("m1", 0))
    pending = w.fetch_later("m1", 1, max_wait_ms=5000, min_bytes=100_000)
    assert list(w.svc.share_partitions.share_partitions()) == [("q", w.topic_id, 0)]
    w.svc.cluster.delete_topic("foo")
    assert w.svc.share_partitions.share_partitions() == {}             # dropped with the topic
    w.later(5000)
    assert entry(ok(pending.response))["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_long_poll_woken_by_a_release():
    # SPMT testAcknowledgeCompletesDelayedShareFetchRequest, testReleaseSessionCompletesDelayedShareFetchRequest:
    # an acknowledgement (or a session's release) tries the fetches waiting on the share-partition
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0, conn=1))
    ok(w.fetch("m2", 0, conn=2))
    pending = w.fetch_later("m2", 1, conn=2, max_wait_ms=5000)
    assert pending.response is None
    assert entry(ok(w.acknowledge("m1", 1, {0: [(0, 4, RELEASE)]}, conn=1)))["error_code"] == 0
    assert acquired(ok(pending.response)) == [(0, 4, 2)]
    pending = w.fetch_later("m2", 2, conn=2, max_wait_ms=5000)
    ok(w.acknowledge("m1", -1, conn=1))                                 # closing releases 5-9
    assert acquired(ok(pending.response)) == [(5, 9, 2)]


def test_forgotten_topics_data():
    # SFAT testShareFetchRequestForgetTopicPartitions; SPMT testToForgetPartitions: ForgottenTopicsData leaves the
    # session; the later fetches neither read nor answer the partition; a request naming it adds it back
    w = World(2)
    w.produce(5, partition=0)
    w.produce(5, partition=1)
    resp = ok(w.fetch("m1", 0, [0, 1]))
    assert (acquired(resp, 0), acquired(resp, 1)) == ([(0, 4, 1)], [(0, 4, 1)])
    w.produce(5, partition=0)
    w.produce(5, partition=1)
    resp = ok(w.fetch("m1", 1, [], forget=[1]))
    assert (indexes(resp), acquired(resp, 0)) == ([0], [(5, 9, 1)])
    [session] = w.svc.share_partitions.sessions()
    assert list(session.partitions) == [(w.topic_id, 0)]
    w.produce(5, partition=1)
    assert ok(w.fetch("m1", 2, []))["responses"] == []
    assert acquired(ok(w.fetch("m1", 3, [1])), 1) == [(5, 14, 1)]


def test_partition_errors_carry_no_message():
    # KAT testHandleShareFetchFromShareFetchRequestErrorTopicsInRequest / testHandleShareFetchFromShareFetchRequestWithErroneousPartitions:
    # an unknown topic id is UNKNOWN_TOPIC_ID, a partition the topic lacks UNKNOWN_TOPIC_OR_PARTITION; KafkaApis.
    # getResponsePartitionData copies no ErrorMessage into the response
    w = World()
    w.produce(2)
    unknown = uuid.uuid4()
    resp = ok(w.fetch("m1", 0, [0, 7]))
    assert acquired(resp, 0) == [(0, 1, 1)]
    assert (entry(resp, 7)["error_code"], entry(resp, 7)["error_message"]) == (E.UNKNOWN_TOPIC_OR_PARTITION, None)
    resp = ok(w.fetch("m1", 1, [3], topic_id=unknown))
    assert (entry(resp, 3, unknown)["error_code"], entry(resp, 3, unknown)["error_message"]) == (E.UNKNOWN_TOPIC_ID, None)
    # a group whose share-partitions nobody initialized: the share coordinator's INVALID_REQUEST ("Read
    # operation on uninitialized share partition not allowed.") -> SharePartition.fetchPersisterError ->
    # UNKNOWN_SERVER_ERROR, without its message
    resp = ok(w.fetch("x1", 0, group="nobody"))
    assert (entry(resp)["error_code"], entry(resp)["error_message"]) == (E.UNKNOWN_SERVER_ERROR, None)
    assert acquired(resp) == []


# ============================================================================ acknowledgements
def test_piggybacked_accept():
    # SFAT testShareFetchRequestPiggybackedAccept: the ack's result in AcknowledgeErrorCode of the partition's entry,
    # next to the records fetched; accepted records are never delivered again
    w = World()
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0))) == [(0, 9, 1)]
    w.produce(10)
    resp = ok(w.fetch("m1", 1, acks={0: [(0, 9, ACCEPT)]}))
    part = entry(resp)
    assert (part["acknowledge_error_code"], part["acknowledge_error_message"], acquired(resp)) == (0, None, [(10, 19, 1)])
    w.later(LOCK_MS)                                                    # 10-19 expire; 0-9 stay acknowledged
    assert acquired(ok(w.fetch("m2", 0))) == [(10, 19, 2)]


def test_piggybacked_release():
    # SFAT testShareFetchRequestPiggybackedRelease: released records come again with delivery count 2 (here in the
    # same fetch: the acknowledgement is applied before the fetch reads; Kafka may give them in a later one)
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0))
    w.produce(10)
    resp = ok(w.fetch("m1", 1, acks={0: [(0, 9, RELEASE)]}))
    assert entry(resp)["acknowledge_error_code"] == 0
    assert acquired(resp) == [(0, 9, 2), (10, 19, 1)]


def test_piggybacked_reject():
    # SFAT testShareFetchRequestPiggybackedReject: rejected records are archived, never delivered again
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0))
    w.produce(10)
    resp = ok(w.fetch("m1", 1, acks={0: [(0, 9, REJECT)]}))
    assert (entry(resp)["acknowledge_error_code"], acquired(resp)) == (0, [(10, 19, 1)])
    assert acquired(ok(w.fetch("m2", 0))) == []
    w.later(LOCK_MS)
    assert acquired(ok(w.fetch("m2", 1))) == [(10, 19, 2)]


def test_acknowledgement_of_a_partition_not_fetched_only_acks():
    # KafkaApis.combineShareFetchAndShareAcknowledgeResponses: an acknowledged partition the fetch did not answer
    # gets an entry of its own (ErrorCode NONE, empty Records) carrying the ack's result
    w = World(2)
    w.produce(5, partition=1)
    ok(w.fetch("m1", 0, [1]))
    resp = ok(w.fetch("m1", 1, [], acks={1: [(0, 4, ACCEPT)]}, max_records=0))
    part = entry(resp, 1)
    assert (part["error_code"], part["acknowledge_error_code"], part["records"], part["acquired_records"]) == (
        0, 0, b"", [])


@pytest.mark.parametrize("ack_type,again", [(ACCEPT, []), (RELEASE, [(0, 9, 2)]), (REJECT, [])])
def test_share_acknowledge(ack_type, again):
    # SFAT testShareAcknowledgeRequestSuccessAccept / ...SuccessRelease / ...SuccessReject: ShareAcknowledge's
    # per-partition result; RELEASE gives the records again (delivery count 2), ACCEPT and REJECT never
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0))
    resp = ok(w.acknowledge("m1", 1, {0: [(0, 9, ack_type)]}, version=2))
    assert resp["responses"] == [{"topic_id": w.topic_id, "partitions": [{
        "partition_index": 0, "error_code": 0, "error_message": None, "current_leader": {"leader_id": 0, "leader_epoch": 0}}]}]
    assert (resp["acquisition_lock_timeout_ms"], resp["node_endpoints"]) == (LOCK_MS, [])
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == again
    if again:
        ok(w.acknowledge("m2", 1, {0: [(0, 9, ACCEPT)]}, conn=2))
    w.later(LOCK_MS)
    assert acquired(ok(w.fetch("m3", 0, conn=3))) == []                 # none left to come back at a lock's expiry


def test_acknowledgement_types_per_offset():
    # SPMT testAcknowledgeIndividualOffsets; SPT testAcknowledgeMultipleRecordBatchWithGapOffsets: one type per
    # offset, GAP (0) archived as REJECT is; only the released offset comes again
    w = World()
    w.produce(5)
    ok(w.fetch("m1", 0))
    resp = ok(w.acknowledge("m1", 1, {0: [(0, 4, [ACCEPT, GAP, REJECT, RELEASE, ACCEPT])]}))
    assert entry(resp)["error_code"] == 0
    assert acquired(ok(w.fetch("m2", 0))) == [(3, 3, 2)]
    w.later(LOCK_MS)
    assert acquired(ok(w.fetch("m2", 1))) == [(3, 3, 3)]


@pytest.mark.parametrize("acks", [
    [(5, 4, ACCEPT)],                                                   # FirstOffset > LastOffset
    [(5, 9, ACCEPT), (0, 4, ACCEPT)],                                   # batches not ascending
    [(0, 9, [])],                                                       # no types
    [(0, 9, [ACCEPT, ACCEPT])],                                         # several types, not one per offset
    [(0, 9, 5)],                                                        # no such type
    [(0, 9, RENEW)],                                                    # RENEW in v1
], ids=["reversed", "descending", "no-types", "types-count", "unknown-type", "renew-v1"])
def test_invalid_acknowledgement_batches(acks):
    # KAT testHandleShareAcknowledgeRequestBatchValidationError (KafkaApis.validateAcknowledgementBatches): the
    # partition's acknowledgements are INVALID_REQUEST (no message) and none applied; another partition's go on
    w = World(2)
    w.produce(10, partition=0)
    w.produce(10, partition=1)
    ok(w.fetch("m1", 0, [0, 1]))
    resp = ok(w.acknowledge("m1", 1, {0: acks, 1: [(0, 9, ACCEPT)]}))
    assert [(p["partition_index"], p["error_code"], p["error_message"]) for p in resp["responses"][0]["partitions"]] \
        == [(0, E.INVALID_REQUEST, None), (1, 0, None)]
    resp = ok(w.fetch("m1", 2, acks={0: acks}))                          # piggy-backed: the same
    assert entry(resp)["acknowledge_error_code"] == E.INVALID_REQUEST
    assert entry(ok(w.acknowledge("m1", 3, {0: [(0, 9, ACCEPT)]})))["error_code"] == 0     # 0-9 still acquired


def test_acknowledging_the_records_of_another_member():
    # SPT testAcknowledgeWithAnotherMember; KAT testHandleShareFetchRequestPropagatesAcknowledgementErrorMessage:
    # INVALID_RECORD_STATE, the share-partition's message in (Acknowledge)ErrorMessage; the owner still holds them
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0, conn=1))
    ok(w.fetch("m2", 0, conn=2))
    part = entry(ok(w.acknowledge("m2", 1, {0: [(0, 9, REJECT)]}, conn=2)))
    assert (part["error_code"], part["error_message"]) == (E.INVALID_RECORD_STATE, "Member is not the owner of batch record")
    part = entry(ok(w.fetch("m2", 2, acks={0: [(0, 9, ACCEPT)]}, conn=2)))
    assert (part["error_code"], part["acknowledge_error_code"]) == (0, E.INVALID_RECORD_STATE)
    assert part["acknowledge_error_message"] == "Member is not the owner of batch record"
    assert entry(ok(w.acknowledge("m1", 1, {0: [(0, 9, RELEASE)]}, conn=1)))["error_code"] == 0


def test_acknowledging_a_partition_never_fetched():
    # SPMT testAcknowledgeEmptyPartitionCacheMap, testAcknowledgeIncorrectGroupId: no share-partition loaded for the
    # group and partition: UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message() (the exception's,
    # SharePartitionManager.mapAcknowledgementFutures)
    w = World(2)
    w.produce(10)
    ok(w.fetch("m1", 0, [0]))
    part = entry(ok(w.acknowledge("m1", 1, {1: [(0, 9, ACCEPT)]})), 1)
    assert (part["error_code"], part["error_message"]) == (E.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)
    part = entry(ok(w.fetch("m1", 2, [], acks={1: [(0, 9, ACCEPT)]})), 1)
    assert (part["acknowledge_error_code"], part["acknowledge_error_message"]) == (E.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)
    w.svc.alter_group_configs("q2", {"share.auto.offset.reset": "earliest"})
    w.join("m9", "q2")                                                  # initialized, never fetched in q2
    ok(w.fetch("m9", 0, [1], group="q2"))
    part = entry(ok(w.acknowledge("m9", 1, {0: [(0, 9, ACCEPT)]}, group="q2")))
    assert (part["error_code"], part["error_message"]) == (E.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)


def test_acknowledging_an_unknown_topic_id():
    # KafkaApis.getAcknowledgeBatchesFromShareAcknowledgeRequest / ...FromShareFetchRequest: a topic id the metadata
    # lacks is UNKNOWN_TOPIC_ID for each of its partitions (no message)
    w = World()
    ok(w.fetch("m1", 0))
    unknown = uuid.uuid4()
    resp = ok(w.acknowledge("m1", 1, {0: [(0, 0, ACCEPT)], 4: [(0, 0, ACCEPT)]}, topic_id=unknown))
    assert resp["responses"][0]["topic_id"] == unknown
    assert [(p["partition_index"], p["error_code"], p["error_message"]) for p in resp["responses"][0]["partitions"]] \
        == [(0, E.UNKNOWN_TOPIC_ID, None), (4, E.UNKNOWN_TOPIC_ID, None)]
    part = entry(ok(w.fetch("m1", 2, [], acks={0: [(0, 0, ACCEPT)]}, topic_id=unknown)), 0, unknown)
    assert part["acknowledge_error_code"] == E.UNKNOWN_TOPIC_ID


def test_release_up_to_the_delivery_count_limit():
    # SFAT testShareAcknowledgeRequestMaxDeliveryAttemptExhausted (delivery count limit 2): delivered, released,
    # delivered again (count 2), released: archived; the next fetch gets only new records
    w = World(**{"group.share.delivery.count.limit": 2})
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0))) == [(0, 9, 1)]
    ok(w.acknowledge("m1", 1, {0: [(0, 9, RELEASE)]}))
    assert acquired(ok(w.fetch("m1", 2))) == [(0, 9, 2)]
    ok(w.acknowledge("m1", 3, {0: [(0, 9, RELEASE)]}))
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 4))) == [(10, 19, 1)]


# ============================================================================ acquisition locks
def test_an_expired_lock_redelivers():
    # SPT testAcquisitionLockForAcquiringMultipleRecords, testAcknowledgeAfterAcquisitionLockTimeout: at
    # share.record.lock.duration.ms the records are AVAILABLE again (another member gets them, count 2); the
    # first member's acknowledgement then fails
    w = World()
    w.produce(5)
    assert acquired(ok(w.fetch("m1", 0, conn=1))) == [(0, 4, 1)]
    w.later(LOCK_MS - 1)
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == []
    pending = w.fetch_later("m2", 1, conn=2, max_wait_ms=5000)
    w.later(1)                                                          # the expiry wakes the waiting fetch
    assert acquired(ok(pending.response)) == [(0, 4, 2)]
    part = entry(ok(w.acknowledge("m1", 1, {0: [(0, 4, ACCEPT)]}, conn=1)))
    assert part["error_code"] == E.INVALID_RECORD_STATE


def test_the_group_lock_duration():
    # SPT testScheduleAcquisitionLockTimeoutValueFromGroupConfig: the group's share.record.lock.duration.ms, also
    # AcquisitionLockTimeoutMs of the responses
    w = World()
    w.svc.alter_group_configs("q", {"share.record.lock.duration.ms": 20_000})
    w.produce(5)
    assert ok(w.fetch("m1", 0, conn=1))["acquisition_lock_timeout_ms"] == 20_000
    w.later(20_000)
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == [(0, 4, 2)]


def test_expiry_at_the_delivery_count_limit_archives():
    # SPT testAcquisitionLockTimeoutCauseMaxDeliveryCountExceed (delivery count limit 2): expired twice, archived
    w = World(**{"group.share.delivery.count.limit": 2})
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0))) == [(0, 9, 1)]
    w.later(LOCK_MS)
    assert acquired(ok(w.fetch("m1", 1))) == [(0, 9, 2)]
    w.later(LOCK_MS)
    assert acquired(ok(w.fetch("m2", 0))) == []
    w.produce(1)
    assert acquired(ok(w.fetch("m2", 1))) == [(10, 10, 1)]


# ============================================================================ closing
def test_share_acknowledge_on_the_final_epoch_closes_the_session():
    # SFAT testShareSessionCloseWithShareAcknowledge; KAT testHandleShareAcknowledgeRequestSuccessOnFinalEpoch;
    # SPMT testAcknowledgeSessionUpdateSuccessOnFinalEpoch, testReleaseSessionSuccess, SPT
    # testReleaseAcquiredRecordsDoNotDecreaseDeliveryCount: acknowledgements first, then the member's other records
    # released (another member gets them at once, count 2) and the session gone
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0, conn=1))
    resp = ok(w.acknowledge("m1", -1, {0: [(0, 4, ACCEPT)]}, conn=1))
    assert [(p["partition_index"], p["error_code"]) for t in resp["responses"] for p in t["partitions"]] == [(0, 0)]
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == [(5, 9, 2)]
    assert refused(w.acknowledge("m1", -1, conn=1))[0] == E.SHARE_SESSION_NOT_FOUND
    assert refused(w.fetch("m1", 1, conn=1))[0] == E.SHARE_SESSION_NOT_FOUND
    assert [s.member_id for s in w.svc.share_partitions.sessions()] == ["m2"]


def test_share_fetch_on_the_final_epoch_closes_the_session():
    # SFAT testShareSessionCloseWithShareFetch; SPMT testNewContextReturnsFinalContextWithoutRequestData,
    # testNewContextReturnsFinalContextWithRequestData; KAT testHandleShareFetchRequestInvalidRequestOnFinalEpoch's
    # path: no fetch (an empty response), the acknowledgements' results, then the release
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0, conn=1))
    w.produce(5)
    resp = ok(w.fetch("m1", -1, conn=1))
    assert (resp["acquisition_lock_timeout_ms"], resp["responses"]) == (LOCK_MS, [])
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == [(0, 9, 2), (10, 14, 1)]
    ok(w.fetch("m1", 0, conn=1))
    assert acquired(ok(w.fetch("m2", 1, conn=2, acks={0: [(0, 14, ACCEPT)]}))) == []
    w.produce(5)
    ok(w.fetch("m1", 1, conn=1))                                        # m1 holds 15-19
    resp = ok(w.fetch("m1", -1, conn=1, acks={0: [(15, 16, ACCEPT)]}))
    part = entry(resp)
    assert (part["acknowledge_error_code"], part["acquired_records"], part["records"]) == (0, [], b"")
    assert acquired(ok(w.fetch("m2", 2, conn=2))) == [(17, 19, 2)]
    assert refused(w.fetch("m1", -1, conn=1))[0] == E.SHARE_SESSION_NOT_FOUND


def test_kafka_4_1_release_decreases_the_delivery_count():
    # Kafka 4.1's SharePartition.releaseAcquiredRecords (DeliveryCountOps.DECREASE; 4.2+ keep it, SPT
    # testReleaseAcquiredRecordsDoNotDecreaseDeliveryCount): a closed session's records come back at count 1
    m1, m2 = member_uuid(1), member_uuid(2)
    w = World(release="4.1", members=(m1, m2), **{"group.share.enable": True})
    w.produce(10)
    ok(w.fetch(m1, 0, conn=1))
    ok(w.acknowledge(m1, -1, conn=1))
    assert acquired(ok(w.fetch(m2, 0, conn=2))) == [(0, 9, 1)]


def test_a_dropped_connection_closes_its_sessions():
    # SFAT testShareSessionEvictedOnConnectionDrop; SSCT testRemoveConnection; SPMT testShareGroupListener
    # (onMemberLeave -> releaseSession): the sessions opened on the connection go, their records released; a fetch
    # waiting on it is dropped; another connection's sessions stay
    w = World()
    w.produce(10, batches=2)
    assert acquired(ok(w.fetch("m1", 0, conn=7, max_records=5))) == [(0, 4, 1)]
    pending = w.fetch_later("m1", 1, conn=7, max_wait_ms=5000, min_bytes=1_000_000)
    ok(w.fetch("m2", 0, conn=8))                                        # m2 holds 5-9
    w.svc.connection_closed(0, 108)                                     # another connection: nothing
    assert len(w.svc.share_partitions.sessions()) == 2
    w.svc.connection_closed(0, 7)
    w.later(10_000)
    assert pending.response is None                                     # never answered
    assert refused(w.fetch("m1", 2, conn=9))[0] == E.SHARE_SESSION_NOT_FOUND
    assert acquired(ok(w.fetch("m2", 1, conn=8))) == [(0, 4, 2)]


def test_a_new_initial_epoch_does_not_release_the_old_sessions_records():
    # SPMT testNewContextExistingSessionNewRequestWithInitialEpoch (the session replaced, the cache's size kept):
    # SharePartitionManager.newContext removes the old session without releaseSession: its records stay acquired
    # until their locks expire
    w = World()
    w.produce(10)
    assert acquired(ok(w.fetch("m1", 0, conn=1))) == [(0, 9, 1)]
    assert acquired(ok(w.fetch("m1", 0, conn=2))) == []                 # (on another connection)
    assert len(w.svc.share_partitions.sessions()) == 1
    assert acquired(ok(w.fetch("m2", 0, conn=3))) == []
    assert entry(ok(w.acknowledge("m1", 1, {0: [(0, 4, ACCEPT)]}, conn=2)))["error_code"] == 0   # still m1's
    w.svc.connection_closed(0, 1)           # the old connection: its session is gone already (SSCT
    #                                         testShareGroupListenerEventsOnStaleSession: the new one stays)
    assert entry(ok(w.acknowledge("m1", 2, {0: [(5, 5, ACCEPT)]}, conn=2)))["error_code"] == 0
    w.later(LOCK_MS)
    assert acquired(ok(w.fetch("m2", 1, conn=3))) == [(6, 9, 2)]


# ============================================================================ leaders
def test_a_partition_led_by_another_node():
    # SFAT testShareFetchRequestToNonLeaderReplica: NOT_LEADER_OR_FOLLOWER with CurrentLeader and NodeEndpoints
    # (KafkaApis.processShareFetchResponse, getCurrentLeader); sessions are each node's own
    w = World(2, nodes=2)
    assert [w.svc.cluster.leader_for("foo", p) for p in (0, 1)] == [0, 1]
    w.produce(3, partition=0)
    w.produce(4, partition=1)
    resp = ok(w.fetch("m1", 0, [0, 1], node=0))
    assert resp["acquisition_lock_timeout_ms"] == LOCK_MS
    assert acquired(resp, 0) == [(0, 2, 1)]
    part = entry(resp, 1)
    assert (part["error_code"], part["error_message"], part["acquired_records"]) == (E.NOT_LEADER_OR_FOLLOWER, None, [])
    assert part["current_leader"] == {"leader_id": 1, "leader_epoch": 0}
    assert resp["node_endpoints"] == [{"node_id": 1, "host": "127.0.0.1", "port": 9093, "rack": None}]
    resp = ok(w.fetch("m1", 0, [1], node=1))                            # its leader: a session of its own
    assert (acquired(resp, 1), resp["node_endpoints"]) == ([(0, 3, 1)], [])
    assert sorted((s.node_id, s.epoch) for s in w.svc.share_partitions.sessions()) == [(0, 1), (1, 1)]


def test_a_waiting_fetch_whose_partition_moves_to_another_leader_takes_nothing():
    # DelayedShareFetch: a partition no longer led here completes the fetch with NOT_LEADER_OR_FOLLOWER
    # (the waiting fetch must not take the share-partition back from its new leader: records held twice)
    w = World(1, nodes=2)
    ok(w.fetch("m1", 0, node=0))
    pending = w.fetch_later("m1", 1, node=0, max_wait_ms=500)
    w.svc.cluster.set_leader("foo", 0, 1)
    w.produce(10)
    part = entry(ok(pending.response))
    assert (part["error_code"], part["acquired_records"]) == (E.NOT_LEADER_OR_FOLLOWER, [])
    assert part["current_leader"]["leader_id"] == 1
    assert acquired(ok(w.fetch("m2", 0, node=1))) == [(0, 9, 1)]        # the new leader's: each record once


def test_a_deleted_topics_share_state_goes_with_it():
    # ShareCoordinatorShard's clean-up of deleted topics' state
    w = World(2)
    w.produce(3)
    ok(w.fetch("m1", 0, [0, 1]))
    assert sorted(k[2] for k in w.svc.share_partitions.states.keys()) == [0, 1]
    w.svc.cluster.delete_topic("foo")
    assert w.svc.share_partitions.states.keys() == [] and w.svc.share_partitions.share_partitions() == {}


# ============================================================================ RENEW (KIP-1222)
@pytest.mark.parametrize("limits,message", [
    ({"max_bytes": 20, "min_bytes": 10, "max_records": 30, "max_wait_ms": 40},
     "maxBytes must be set to 0, minBytes must be set to 0, maxRecords must be set to 0, maxWaitMs must be set to 0, "
     "if isRenewAck is true."),
    ({"max_bytes": 0, "min_bytes": 0, "max_records": 1, "max_wait_ms": 0}, "maxRecords must be set to 0, if isRenewAck is true."),
])
def test_renew_with_fetch_limits_is_invalid_request(limits, message):
    # KAT testHandleShareFetchRenewInvalidRequest: ShareFetch v2 with IsRenewAck needs MaxBytes, MinBytes, MaxRecords
    # and MaxWaitMs 0; KafkaApis.handleShareFetchRequest's message (in the exception it logs and answers with; on the
    # wire only the code, see test_top_level_errors_carry_no_message)
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0))
    body = w.fetch_body("m1", 1, acks={0: [(0, 9, RENEW)]}, renew=True, **limits)
    assert renew_error(body) == message
    assert refused(w.connection().call(SHARE_FETCH, body, 2))[:3] == (E.INVALID_REQUEST, 0, [])
    ok(w.fetch("m1", 1))                                                # the session's epoch did not move


def test_renew_restarts_the_lock():
    # KAT testHandleShareFetchRequestSuccessWithRenewAcknowledgements, SPT testRenewAcknowledgeWithCompleteBatchAck:
    # a ShareFetch v2 with IsRenewAck acknowledges and fetches nothing; RENEW gives the records a new lock of the
    # full duration (no redelivery at the old deadline, the delivery count unchanged)
    w = World()
    w.produce(10)
    resp = ok(w.fetch("m1", 0, [0, 7], conn=1, version=2))           # (7: a partition foo lacks, in the session)
    assert (acquired(resp), entry(resp, 7)["error_code"]) == ([(0, 9, 1)], E.UNKNOWN_TOPIC_OR_PARTITION)
    w.produce(5)
    w.later(20_000)
    resp = ok(w.fetch("m1", 1, [], conn=1, version=2, renew=True, acks={0: [(0, 9, RENEW)]},
                      max_bytes=0, min_bytes=0, max_records=0, max_wait_ms=0))
    assert indexes(resp) == [0]                                         # no fetch, so no partition 7 either
    part = entry(resp)
    assert (part["acknowledge_error_code"], part["acquired_records"], resp["acquisition_lock_timeout_ms"]) == (0, [], LOCK_MS)
    w.later(LOCK_MS - 20_000)                                           # the old deadline
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == [(10, 14, 1)]
    w.later(20_000 - 1)
    assert acquired(ok(w.fetch("m2", 1, conn=2))) == []
    w.later(1)                                                          # the renewed deadline
    assert acquired(ok(w.fetch("m2", 2, conn=2))) == [(0, 9, 2)]


def test_renew_by_share_acknowledge():
    # KAT testHandleShareAcknowledgeRequestWithRenewAcknowledgements(isRenewAck, shouldFail): RENEW needs v2 and
    # IsRenewAck (else the partition's INVALID_REQUEST); ShareAcknowledge v2 answers AcquisitionLockTimeoutMs
    w = World()
    w.produce(10)
    ok(w.fetch("m1", 0, conn=1))
    w.later(LOCK_MS - 1)
    assert entry(ok(w.acknowledge("m1", 1, {0: [(0, 9, RENEW)]}, version=2)))["error_code"] == E.INVALID_REQUEST
    assert entry(ok(w.acknowledge("m1", 2, {0: [(0, 9, RENEW)]}, version=1)))["error_code"] == E.INVALID_REQUEST
    resp = ok(w.acknowledge("m1", 3, {0: [(0, 9, RENEW)]}, version=2, renew=True))
    assert (entry(resp)["error_code"], resp["acquisition_lock_timeout_ms"]) == (0, LOCK_MS)
    w.later(LOCK_MS - 1)
    assert acquired(ok(w.fetch("m2", 0, conn=2))) == []
    w.later(1)
    assert acquired(ok(w.fetch("m2", 1, conn=2))) == [(0, 9, 2)]
