"""Topics are durable in the data dir (issue #14): names, partition counts, topic ids, replication
factors, configs and end offsets come back after a restart, whichever way the topics were made,
and deleted topics stay deleted; so do their records (issue #30: segment files), a restored partition
holding what was produced to it, from its log start offset on."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import aiohttp
from structlog.testing import capture_logs

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.service import Service
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.records import Record, encode_batch

from test_server import Client

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 2, 3, 8, 19, 20


def service(directory, **store) -> Service:
    return Service(BrokerConfig({"num.partitions": 2}, profile="test", environ={}), clock=lambda: 0,
                   emit=lambda e: None, store=st.LogStore(str(directory), **store))


def call(svc: Service, api_key: int, version: int, body: dict) -> dict:
    out = []
    svc.handle(RequestContext(svc, 0, "test", "/127.0.0.1", api_key, version, 1), body, out.append)
    return out[0]


def batch(n: int) -> bytes:
    return encode_batch([Record(i, 0, None, b"v%d" % i, []) for i in range(n)], base_timestamp=1000)


def produce_body(topic: str, partition: int, n: int) -> dict:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch(n)}]}]}


def produce(svc: Service, topic: str, partition: int, n: int) -> int:
    part = call(svc, PRODUCE, 8, produce_body(topic, partition, n))["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 0
    return part["base_offset"]


def create_topics_body(*topics) -> dict:
    return {"topics": [{"name": name, "num_partitions": n, "replication_factor": -1, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()]}
                       for name, n, configs in topics], "timeout_ms": 1000, "validate_only": False}


def list_offsets(svc: Service, topic: str, partition: int) -> tuple[int, int]:
    """(earliest, latest)"""
    got = []
    for ts in (-2, -1):
        r = call(svc, LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                            "timestamp": ts}]}]})
        part = r["topics"][0]["partitions"][0]
        assert part["error_code"] == 0
        got.append(part["offset"])
    return tuple(got)


def shape(svc: Service) -> dict:
    """What must survive a restart: per topic its id, replication factor, configs and
    (log start, log end) of each partition."""
    return {name: (t.topic_id, t.replication_factor, dict(t.configs),
                   [(p.log_start_offset, p.log_end_offset) for p in t.partitions])
            for name, t in sorted(svc.cluster.topics.items())}


def test_topics_made_every_way_and_their_end_offsets_survive_a_restart(tmp_path):
    svc = service(tmp_path)
    svc.create_topic("from-cli", 3, exist_ok=True)                       # --topic from-cli:3
    r = call(svc, CREATE_TOPICS, 5, create_topics_body(
        ("created", 2, {"retention.ms": "1000", "cleanup.policy": "compact", "unset": None}),
        ("doomed", 1, {})))
    assert [t["error_code"] for t in r["topics"]] == [0, 0]
    md = call(svc, METADATA, 9, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True,
                                 "include_cluster_authorized_operations": False,
                                 "include_topic_authorized_operations": False})
    assert md["topics"][0]["error_code"] == 0                            # auto-created: num.partitions (2)
    svc.cluster.add_partitions("created", 4)                             # as the admin API's CreatePartitions
    r = call(svc, DELETE_TOPICS, 4, {"topic_names": ["doomed"], "timeout_ms": 1000})
    assert r["responses"][0]["error_code"] == 0
    assert produce(svc, "from-cli", 0, 3) == 0
    assert produce(svc, "from-cli", 0, 4) == 3
    assert produce(svc, "created", 3, 5) == 0                            # a partition added later
    assert produce(svc, "auto", 1, 1) == 0
    before = shape(svc)
    assert sorted(before) == ["auto", "created", "from-cli"]
    assert before["from-cli"][3] == [(0, 7), (0, 0), (0, 0)]
    svc.store.close()

    again = service(tmp_path)
    assert shape(again) == before
    assert again.cluster.topics["created"].configs == {"retention.ms": "1000", "cleanup.policy": "compact",
                                                       "unset": None}
    assert again.cluster.topics_by_id[before["created"][0]].name == "created"
    assert list_offsets(again, "from-cli", 0) == (0, 7)
    assert list_offsets(again, "created", 3) == (0, 5)
    # a start's --topic for a topic that exists is no error, and changes nothing
    with capture_logs() as logs:
        assert again.create_topic("from-cli", 5, exist_ok=True) is again.cluster.topics["from-cli"]
    assert again.cluster.topics["from-cli"].partition_count == 3
    assert [e["event"] for e in logs] == ["topic exists with other partitions: kept as it is"]
    # offsets go on from the old end; the records before it are read as before the restart
    assert produce(again, "from-cli", 0, 2) == 7
    assert list_offsets(again, "from-cli", 0) == (0, 9)
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "topics": [{"topic": "from-cli", "partitions": [
                 {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
             "forgotten_topics_data": [], "rack_id": ""}
    for offset, code in ((0, 0), (3, 0), (7, 0), (9, 0), (10, ErrorCode.OFFSET_OUT_OF_RANGE)):
        fetch["topics"][0]["partitions"][0]["fetch_offset"] = offset
        part = call(again, FETCH, 11, fetch)["responses"][0]["partitions"][0]
        assert (part["error_code"], part["log_start_offset"], part["high_watermark"]) == (code, 0, 9), offset
        assert bool(part["records"]) == (code == 0 and offset < 9), offset
    fetch["topics"][0]["partitions"][0]["fetch_offset"] = 0
    records_before = call(again, FETCH, 11, fetch)["responses"][0]["partitions"][0]["records"]
    again.store.close()
    third = service(tmp_path)
    assert shape(third)["from-cli"][3][0] == (0, 9)
    assert call(third, FETCH, 11, fetch)["responses"][0]["partitions"][0]["records"] == records_before


def test_a_deleted_topic_stays_deleted_and_its_name_starts_afresh(tmp_path):
    svc = service(tmp_path)
    old_id = svc.create_topic("t", 2).topic_id
    produce(svc, "t", 1, 4)
    svc.store.close()
    svc = service(tmp_path)
    assert svc.cluster.log("t", 1).log_end_offset == 4
    r = call(svc, DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": old_id}], "timeout_ms": 1000})
    assert r["responses"][0]["error_code"] == 0
    svc.store.close()
    svc = service(tmp_path)
    assert svc.cluster.topics == {} and svc.cluster.topics_by_id == {}
    assert not os.path.exists(tmp_path / "t-1") and not os.path.exists(tmp_path / "t-0")     # its segment files went
    new = svc.create_topic("t", 1)
    assert new.topic_id != old_id
    assert produce(svc, "t", 0, 1) == 0                                  # a new topic: offsets from 0
    svc.store.close()
    svc = service(tmp_path)
    assert shape(svc) == {"t": (new.topic_id, 1, {}, [(0, 1)])}       # its record, not the old topic's
    svc.store.close()
    # the deleted topic's records are gone from the log once it is compacted (here: at load)
    store = st.LogStore(str(tmp_path), compact_min_bytes=0)
    store.load_topics()
    assert store.compactions == 1
    store.close()
    with open(store.metadata_path(), "rb") as f:
        frames, _, why = st.read_frames(f.read(), st.decode_metadata_payload)
    assert why is None
    assert [(k, v) for k, v, _, _ in frames] == [
        (st.TopicKey("t"), st.TopicValue(new.topic_id, 1, 1, ())), (st.EndOffsetKey(new.topic_id, 0), st.EndOffsetValue(1))]


def test_an_end_offset_is_written_before_the_produce_is_acknowledged(tmp_path):
    """What a kill -9 keeps: the bytes the OS has. No close, no sync: another store reads the file."""
    svc = service(tmp_path, fsync="never")
    svc.create_topic("t", 1)
    produce(svc, "t", 0, 3)
    assert st.LogStore(str(tmp_path)).load_topics().end_offsets == {(svc.cluster.topics["t"].topic_id, 0): 3}


def test_a_produce_whose_end_offset_cannot_be_kept_fails_with_kafka_storage_error(tmp_path, monkeypatch):
    svc = service(tmp_path, fsync="never")
    svc.create_topic("t", 1)
    produce(svc, "t", 0, 2)

    def full_disk(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(svc.store, "put_end_offset", full_disk)
    part = call(svc, PRODUCE, 8, produce_body("t", 0, 3))["responses"][0]["partition_responses"][0]
    assert (part["error_code"], part["base_offset"]) == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
    assert svc.cluster.log("t", 0).log_end_offset == 2          # nothing taken
    monkeypatch.undo()
    assert produce(svc, "t", 0, 1) == 2


def test_with_fsync_always_an_end_offset_is_on_disk_before_a_commit_past_it(tmp_path, monkeypatch):
    synced = []
    real = st._LogFile.fsync

    def fsync(self):
        synced.append(os.path.basename(self.path))
        real(self)

    monkeypatch.setattr(st._LogFile, "fsync", fsync)
    svc = service(tmp_path, fsync="always", fsync_interval_ms=3_600_000)
    svc.create_topic("t", 1)
    assert synced == ["__cluster_metadata.log"]                           # a new topic: fsynced at once
    synced.clear()
    produce(svc, "t", 0, 3)
    assert synced == []                                                   # not at each produce
    r = call(svc, OFFSET_COMMIT, 2, {"group_id": "g", "generation_id": -1, "member_id": "",
                                     "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                                         {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}]}]})
    assert r["topics"][0]["partitions"][0]["error_code"] == 0
    partition = svc.group_coordinator.partition_of("g")
    assert synced == ["__cluster_metadata.log", f"__consumer_offsets-{partition}.log"]
    svc.store.close()


def test_the_metadata_log_is_compacted_and_keeps_exact_end_offsets(tmp_path):
    svc = service(tmp_path, compact_min_bytes=4096)
    svc.create_topic("t", 3)
    for i in range(600):
        produce(svc, "t", i % 3, 1 + i % 2)
    ends = [p.log_end_offset for p in svc.cluster.topics["t"].partitions]
    assert svc.store.compactions > 0
    assert os.path.getsize(svc.store.metadata_path()) < 4096 + 200
    svc.store.close()
    assert [p.log_end_offset for p in service(tmp_path).cluster.topics["t"].partitions] == ends


def test_a_damaged_metadata_log_keeps_its_other_records(tmp_path):
    svc = service(tmp_path)
    for name in ("a", "b", "c"):
        svc.create_topic(name, 2)
    produce(svc, "c", 1, 5)
    svc.store.close()
    path = svc.store.metadata_path()
    with open(path, "r+b") as f:
        f.seek(12)                                 # inside the first record: topic "a"
        f.write(b"\xff")
    with capture_logs() as logs:
        again = service(tmp_path)
    assert sorted(again.cluster.topics) == ["b", "c"] and again.cluster.log("c", 1).log_end_offset == 5
    assert any(e["event"] == "skipped damaged bytes" for e in logs)
    assert os.path.exists(path + ".damaged-1")


def test_metadata_records_round_trip():
    tid = st.uuid.UUID(int=12345)
    records = [(st.TopicKey("orders"), st.TopicValue(tid, 12, 3, (("a", "1"), ("b", None)))),
               (st.TopicKey("gone"), None),
               (st.EndOffsetKey(tid, 7), st.EndOffsetValue(2**40)),
               (st.EndOffsetKey(tid, 8), None)]
    for key, value in records:
        k, v, key_len = st.decode_metadata_payload(st.encode_metadata_payload(key, value))
        assert (k, v) == (key, value) and key_len == len(st.encode_metadata_record(key, None)[0])


async def test_the_admin_api_and_embedding_keep_topics(tmp_path):
    """Create, add partitions to and delete topics over the admin HTTP API; an embedding given
    the same topics again on the same data_dir starts as usual."""
    async with running(http=True, data_dir=tmp_path, topics={"orders": 3}) as gc:
        async with aiohttp.ClientSession() as http:
            async with http.post(gc.admin_url + "/api/topics", json={
                    "name": "made", "partitions": 2, "configs": {"retention.ms": "5"}}) as r:
                assert r.status == 201
            async with http.post(gc.admin_url + "/api/topics/made/partitions", json={"count": 5}) as r:
                assert r.status == 200
            async with http.post(gc.admin_url + "/api/topics", json={"name": "doomed"}) as r:
                assert r.status == 201
            async with http.delete(gc.admin_url + "/api/topics/doomed") as r:
                assert r.status == 200
        produce(gc.service, "made", 4, 2)
        before = shape(gc.service)
    async with running(http=True, data_dir=tmp_path, topics={"orders": 3}) as gc:
        assert shape(gc.service) == before
        assert sorted(before) == ["made", "orders"] and before["made"][2] == {"retention.ms": "5"}
        assert gc.service.cluster.log("made", 4).log_end_offset == 2


# ============================================================================ the real command
class Serve:
    """``groupcoord serve`` on a data dir, on an ephemeral port."""

    def __init__(self, data_dir, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--profile", "test",
             "--data-dir", str(data_dir), "--log-format", "json", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        line = self.proc.stdout.readline()
        assert line.startswith("bootstrap servers: "), (line, self.proc.stderr.read() if not line else "")
        self.bootstrap = line.split(": ", 1)[1].strip()

    async def call(self, api_key: int, version: int, body: dict) -> dict:
        c = await Client.connect(self.bootstrap)
        try:
            return await c.call(api_key, version, body)
        finally:
            c.close()

    def stop(self, sig) -> int:
        self.proc.send_signal(sig)
        self.proc.communicate(timeout=10)
        return self.proc.returncode

    def kill_if_running(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)


async def _topics_and_ends(server: Serve) -> dict:
    md = await server.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})
    out = {}
    for t in md["topics"]:
        parts = sorted(p["partition_index"] for p in t["partitions"])
        lo = await server.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": t["name"], "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                                               for p in parts]}]})
        out[t["name"]] = (t["topic_id"], [p["offset"] for p in lo["topics"][0]["partitions"]])
    return out


def test_groupcoord_serve_keeps_topics_across_kill_9_and_sigterm(tmp_path):
    data = tmp_path / "data"
    servers = []

    def start() -> Serve:
        servers.append(Serve(data, "--topic", "orders:3"))
        return servers[-1]

    try:
        first = start()

        async def make():
            r = await first.call(CREATE_TOPICS, 5, create_topics_body(("made", 2, {"retention.ms": "9"})))
            assert r["topics"][0]["error_code"] == 0
            for topic, partition, n in (("orders", 2, 3), ("orders", 2, 2), ("made", 1, 4)):
                r = await first.call(PRODUCE, 8, produce_body(topic, partition, n))
                assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
            return await _topics_and_ends(first)

        before = asyncio.run(make())
        assert {name: ends for name, (_, ends) in before.items()} == {"orders": [0, 0, 5], "made": [0, 4]}
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL           # nothing closed, nothing synced
        second = start()                                              # --topic orders:3 again: no error
        assert asyncio.run(_topics_and_ends(second)) == before

        async def delete():
            r = await second.call(DELETE_TOPICS, 4, {"topic_names": ["made"], "timeout_ms": 1000})
            assert r["responses"][0]["error_code"] == 0
            r = await second.call(PRODUCE, 8, produce_body("orders", 2, 1))
            assert r["responses"][0]["partition_responses"][0]["base_offset"] == 5

        asyncio.run(delete())
        assert second.stop(signal.SIGTERM) == 0
        third = start()
        assert asyncio.run(_topics_and_ends(third)) == {"orders": (before["orders"][0], [0, 0, 6])}
        assert third.stop(signal.SIGTERM) == 0
    finally:
        for s in servers:
            s.kill_if_running()
