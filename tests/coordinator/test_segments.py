"""The data plane's records in segment files under the data dir (issue #30): kept across restarts byte
for byte, rolled at segment.bytes, deleted by retention.ms and retention.bytes as whole segments, a torn
tail truncated at load, a failed write cut off again."""
from __future__ import annotations

import os

from structlog.testing import capture_logs

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.config import BrokerConfig
from groupcoord.coordinator.context import RequestContext
from groupcoord.coordinator.service import Service
from groupcoord.protocol.records import Record, decode_batch, encode_batch, read_batch_header

PRODUCE, FETCH = 0, 1
MB = 1 << 20


class Clock:
    def __init__(self, now: int = 10_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def service(directory, clock=None, **config) -> Service:
    return Service(BrokerConfig(config, profile="test", environ={}), clock=clock or Clock(), emit=lambda e: None,
                   store=st.LogStore(str(directory)))


def call(svc: Service, api_key: int, version: int, body: dict) -> dict:
    out = []
    svc.handle(RequestContext(svc, 0, "test", "/127.0.0.1", api_key, version, 1), body, out.append)
    return out[0]


def produce(svc: Service, topic: str, partition: int, values: list[bytes], timestamp: int = 1000) -> int:
    records = encode_batch([Record(i, 0, None, v, []) for i, v in enumerate(values)], base_timestamp=timestamp)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
    part = call(svc, PRODUCE, 8, body)["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 0
    return part["base_offset"]


def values(svc: Service, topic: str, partition: int) -> list[bytes]:
    """Every record value of the partition, read with Fetch from its log start offset."""
    log = svc.cluster.log(topic, partition)
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 64 * MB, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 64 * MB}]}],
                "forgotten_topics_data": [], "rack_id": ""}
        data = call(svc, FETCH, 11, body)["responses"][0]["partitions"][0]["records"]
        pos = 0
        while pos < len(data):
            header, recs = decode_batch(data[pos:pos + read_batch_header(data, pos).size], verify=True)
            out.extend(r.value for r in recs if r.offset >= offset)
            pos += header.size
            offset = header.last_offset + 1
    return out


def test_records_come_back_after_a_restart_as_they_were(tmp_path):
    svc = service(tmp_path)
    svc.create_topic("t", 2)
    produce(svc, "t", 0, [b"a", b"b"])
    produce(svc, "t", 0, [b"c"])
    produce(svc, "t", 1, [b"x" * 1000])
    before = [bytes(b) for b in svc.cluster.log("t", 0).batches]
    svc.store.close()
    assert os.listdir(tmp_path / "t-0") == ["00000000000000000000.log"]       # Kafka's segment names

    again = service(tmp_path)
    assert [bytes(b) for b in again.cluster.log("t", 0).batches] == before
    assert values(again, "t", 0) == [b"a", b"b", b"c"] and values(again, "t", 1) == [b"x" * 1000]
    assert produce(again, "t", 0, [b"d"]) == 3
    again.store.close()
    assert values(service(tmp_path), "t", 0) == [b"a", b"b", b"c", b"d"]


def test_a_torn_tail_is_cut_at_load_and_the_records_before_it_kept(tmp_path):
    svc = service(tmp_path)
    svc.create_topic("t", 1)
    produce(svc, "t", 0, [b"kept"])
    produce(svc, "t", 0, [b"torn"])
    svc.store.close()
    path = tmp_path / "t-0" / "00000000000000000000.log"
    whole = path.read_bytes()
    path.write_bytes(whole[:-5])                        # a crash in the middle of the second batch
    with capture_logs() as logs:
        again = service(tmp_path)
    assert values(again, "t", 0) == [b"kept"]
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["truncating segment"]
    assert produce(again, "t", 0, [b"after"]) == 1      # the end offset kept was 2; the log ends at 1 now
    again.store.close()
    assert values(service(tmp_path), "t", 0) == [b"kept", b"after"]


def test_segments_roll_at_segment_bytes_and_retention_bytes_deletes_the_oldest(tmp_path):
    svc = service(tmp_path, **{"log.segment.bytes": MB, "log.retention.check.interval.ms": 1000})
    svc.create_topic("t", 1)
    svc.cluster.topics["t"].configs["retention.bytes"] = str(2 * MB)
    big = b"v" * (400 * 1024)
    for i in range(8):                  # 8 batches of 400 KiB: segments of two batches each
        produce(svc, "t", 0, [big + b"%d" % i])
    log = svc.cluster.log("t", 0)
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6]
    assert sorted(os.listdir(tmp_path / "t-0")) == [f"{b:020d}.log" for b in (0, 2, 4, 6)]
    svc.clock.now += 1000
    # the retention check: 3.2 MiB over 2 MiB; a segment goes while the rest is at least 2 MiB (Kafka's
    # deleteRetentionSizeBreachedSegments), so 2.4 MiB are kept
    svc.advance(svc.clock.now)
    assert log.log_start_offset == 2 and [s.base_offset for s in log.segments] == [2, 4, 6]
    assert sorted(os.listdir(tmp_path / "t-0")) == [f"{b:020d}.log" for b in (2, 4, 6)]
    assert [v[-1:] for v in values(svc, "t", 0)] == [b"2", b"3", b"4", b"5", b"6", b"7"]
    svc.store.close()
    again = service(tmp_path)
    assert again.cluster.log("t", 0).log_start_offset == 2
    assert [v[-1:] for v in values(again, "t", 0)] == [b"2", b"3", b"4", b"5", b"6", b"7"]


def test_retention_ms_deletes_the_segments_whose_newest_record_is_too_old_the_active_one_too(tmp_path):
    # UnifiedLog.deleteRetentionMsBreachedSegments: oldest first, while the largest timestamp is too old; the
    # active segment too (the next record starts a new segment at the log end)
    clock = Clock(10_000_000)
    svc = service(tmp_path, clock, **{"log.segment.bytes": MB, "log.retention.ms": 60_000,
                                      "log.retention.check.interval.ms": 1000})
    svc.create_topic("t", 1)
    big = b"v" * (700 * 1024)
    produce(svc, "t", 0, [big], timestamp=clock.now - 120_000)      # old, in segment 0
    produce(svc, "t", 0, [big], timestamp=clock.now)                # new, in segment 1
    produce(svc, "t", 0, [b"active"], timestamp=clock.now - 120_000)   # old, in segment 1 with a new one
    log = svc.cluster.log("t", 0)
    assert [s.base_offset for s in log.segments] == [0, 1]
    clock.now += 1000
    svc.advance(clock.now)
    assert log.log_start_offset == 1 and os.listdir(tmp_path / "t-0") == [f"{1:020d}.log"]
    clock.now += 60_000
    svc.advance(clock.now)
    assert (log.log_start_offset, log.log_end_offset, log.segments) == (3, 3, [])     # all gone
    assert os.listdir(tmp_path / "t-0") == []
    assert produce(svc, "t", 0, [b"next"], timestamp=clock.now) == 3
    assert values(svc, "t", 0) == [b"next"] and os.listdir(tmp_path / "t-0") == [f"{3:020d}.log"]
    svc.store.close()
    again = service(tmp_path, clock)
    assert (again.cluster.log("t", 0).log_start_offset, values(again, "t", 0)) == (3, [b"next"])


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    # a produce whose end offset could not be kept is answered KAFKA_STORAGE_ERROR and its records cut off
    # again: the next produce takes the same offsets, and a restart reads each record once
    svc = service(tmp_path)
    svc.create_topic("t", 1)
    produce(svc, "t", 0, [b"a"])
    real = svc.store.put_end_offset

    def full(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(svc.store, "put_end_offset", full)
    records = encode_batch([Record(0, 0, None, b"lost", [])], base_timestamp=1000)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]}
    assert call(svc, PRODUCE, 8, body)["responses"][0]["partition_responses"][0]["error_code"] == 56
    monkeypatch.setattr(svc.store, "put_end_offset", real)
    assert produce(svc, "t", 0, [b"b"]) == 1
    svc.store.close()
    assert values(service(tmp_path), "t", 0) == [b"a", b"b"]


def test_at_most_max_open_segment_files_are_open(tmp_path, monkeypatch):
    # a client producing to many partitions must not exhaust the descriptors: the least recently written
    # segment is closed (fsynced first), and opened again when written to
    from groupcoord.coordinator import segments
    monkeypatch.setattr(segments, "MAX_OPEN", 3)
    svc = service(tmp_path)
    svc.create_topic("t", 5)
    for round_ in range(2):
        for p in range(5):
            produce(svc, "t", p, [b"%d-%d" % (round_, p)])
            assert len(svc.store.segments._active) <= 3
    svc.store.close()
    again = service(tmp_path)
    assert [values(again, "t", p) for p in range(5)] == [[b"0-%d" % p, b"1-%d" % p] for p in range(5)]
