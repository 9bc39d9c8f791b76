"""State as a log (coordinator/storage.py): record codec, replay, tombstones, compaction, torn tails,
recovery from damage."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import uuid

import crc32c
import pytest
from structlog.testing import capture_logs

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.group.runtime import GroupCoordinator
from groupcoord.coordinator.group.offsets import OffsetCommitRequest
from groupcoord.coordinator.service import Service

from group_harness import GROUP, Call, Harness, subscription


def harness(store, now: int = 0) -> Harness:
    h = Harness()
    h.now = now
    h.gc = GroupCoordinator(h.config, h.timers, lambda: h.now, emit=h._emit,
                            member_id_factory=lambda prefix: f"{prefix}-{next(h._seq)}", store=store)
    return h


def reload(directory, now: int, **kw) -> tuple[Harness, st.LogStore]:
    store = st.LogStore(str(directory), **kw)
    h = harness(store, now)
    for p in store.partitions():
        h.gc.begin_loading(p)
    for p in store.partitions():
        h.gc.complete_loading(p, store.load(p))
    return h, store


def snapshot(gc: GroupCoordinator) -> dict:
    out = {}
    for g in gc.groups():
        offsets = gc.offsets.of(g.group_id)
        out[g.group_id] = {
            "state": g.state, "generation": g.generation_id, "leader": g.leader_id,
            "protocol_type": g.protocol_type, "protocol": g.protocol_name,
            # a simple group (offsets only) has no group metadata record, as in Kafka: its state
            # timestamp is not kept (retention of its offsets runs from their commit times)
            "state_ts": g.current_state_timestamp if g.protocol_type is not None else None,
            "members": [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                         m.session_timeout_ms, m.metadata(g.protocol_name) if g.protocol_name else None,
                         m.assignment) for m in g.members.values()],
            "offsets": {(t, p): (o.committed_offset, o.leader_epoch, o.metadata, o.commit_timestamp,
                                 o.expire_timestamp) for t, parts in offsets.items() for p, o in parts.items()},
        }
    return out


RECORDS = [
    (st.OffsetCommitKey("g", "orders", 3),
     st.OffsetCommitValue(42, 7, "meta\u00e9", 1_700_000_000_000, -1)),
    (st.OffsetCommitKey("g", "orders", 4), st.OffsetCommitValue(2**40, -1, "", 5, 99)),
    (st.OffsetCommitKey("g", "orders", 3), None),
    (st.GroupMetadataKey("g"), st.GroupMetadataValue("consumer", 5, "range", "m-1", 1234, (
        st.MemberMetadata("m-1", None, "c1", "/127.0.0.1", 30000, 10000, b"sub1", b"asg1"),
        st.MemberMetadata("m-2", "static-2", "c2", "/10.0.0.2", 60000, 45000, b"", b"\x00\x01"),
    ))),
    (st.GroupMetadataKey("empty"), st.GroupMetadataValue("consumer", 3, None, None, -1, ())),
    (st.GroupMetadataKey("simple"), st.GroupMetadataValue(None, 0, None, None, 0, ())),
    (st.GroupMetadataKey("g"), None),
]


def test_round_trip_of_every_record_kind():
    data = b"".join(st.encode_frame(k, v) for k, v in RECORDS)
    frames, valid, why = st.read_frames(data)
    assert why is None and valid == len(data)
    assert [(k, v) for k, v, _, _ in frames] == RECORDS
    for key, value in RECORDS:
        k2, v2, _ = st.decode_payload(st.encode_payload(key, value))
        assert (k2, v2) == (key, value)


def test_memory_store_is_the_default_and_writes_nothing(tmp_path):
    h = Harness()
    assert isinstance(h.gc.store, st.MemoryStore)
    s = Service()
    assert isinstance(s.store, st.MemoryStore)
    assert s.load()["partitions"] == 0


def _populate(h: Harness) -> list[str]:
    ids = h.stable_group(3, protocols=[("range", subscription(["foo", "bar"]))])
    g = h.group()
    h.commit(member_id=ids[0], generation=g.generation_id, offsets={("foo", 0): 10, ("foo", 1): (11, "x")})
    h.commit(member_id=ids[1], generation=g.generation_id, offsets={("bar", 0): 20})
    h.commit(member_id=ids[1], generation=g.generation_id, offsets={("foo", 0): 12})
    h.commit("simple-group", offsets={("foo", 2): 7}, retention=60_000)
    # a group that went Empty after a generation
    e = h.stable_group(1, "empty-group")
    h.leave("empty-group", {"member_id": e[0]})
    assert h.state("empty-group") == "Empty"
    h.commit("empty-group", offsets={("foo", 0): 1})
    return ids


def test_replay_rebuilds_groups_and_offsets_exactly(tmp_path):
    store = st.LogStore(str(tmp_path))
    h = harness(store, 1000)
    ids = _populate(h)
    before = snapshot(h.gc)
    store.close()

    h2, store2 = reload(tmp_path, now=h.now + 50)
    after = snapshot(h2.gc)
    assert after == before
    assert after[GROUP]["state"] == "Stable" and after[GROUP]["generation"] == 1
    assert after[GROUP]["leader"] == ids[0]
    assert [m[7] for m in after[GROUP]["members"]] == [f"assignment-{m}".encode() for m in sorted(
        ids, key=lambda m: [x[0] for x in before[GROUP]["members"]].index(m))]
    # the members carry on without a rebalance: heartbeats at the same generation succeed
    for m in ids:
        assert h2.heartbeat(GROUP, m, 1) == 0
    assert h2.state() == "Stable"
    # and their session timers were re-armed from the load time: silence expires them
    h2.advance(9_999)
    assert h2.state() == "Stable" and not h2.events_of("member.expired")
    h2.advance(2)
    assert sorted(e["member"] for e in h2.events_of("member.expired")) == sorted(ids)
    assert h2.state() == "Empty"
    store2.close()


def test_tombstones_remove_offsets_and_groups_on_replay(tmp_path):
    store = st.LogStore(str(tmp_path))
    h = harness(store, 1000)
    _populate(h)
    # OffsetDelete on the Empty group
    call = Call()
    call(h.delete_offsets("empty-group", [{"name": "foo", "partitions": [{"partition_index": 0}]}]))
    assert call.result["error_code"] == 0
    # DeleteGroups on the simple group
    call = Call()
    h.gc.delete_groups(call, group_ids=["simple-group"])
    assert call.result["results"][0]["error_code"] == 0
    # a deleted topic drops the Stable group's bar offsets
    assert h.gc.delete_topic_offsets("bar") == 1
    before = snapshot(h.gc)
    assert "simple-group" not in before and ("bar", 0) not in before[GROUP]["offsets"]
    store.close()
    h2, store2 = reload(tmp_path, now=h.now)
    assert snapshot(h2.gc) == before
    records = [r for p in store2.partitions() for r in store2.load(p)]
    assert (st.GroupMetadataKey("simple-group"), None) in records
    assert (st.OffsetCommitKey("simple-group", "foo", 2), None) in records
    assert (st.OffsetCommitKey("empty-group", "foo", 0), None) in records
    assert (st.OffsetCommitKey(GROUP, "bar", 0), None) in records
    store2.close()


def test_expired_offsets_are_tombstoned(tmp_path):
    store = st.LogStore(str(tmp_path))
    h = harness(store, 0)
    h.commit("simple-group", offsets={("foo", 0): 5}, retention=1000)
    h.commit("other", offsets={("foo", 0): 6})
    h.now = 2000
    assert h.gc.cleanup_group_metadata() == (1, 1)
    store.close()
    h2, store2 = reload(tmp_path, now=2000)
    assert h2.gc.group("simple-group") is None
    assert h2.offsets("other") == {("foo", 0): 6}
    store2.close()


def test_loading_gate_answers_load_in_progress(tmp_path):
    h = Harness()
    p = h.gc.partition_of(GROUP)
    h.gc.begin_loading(p)
    assert h.join(GROUP).error == 14
    assert h.sync(GROUP, "m", 1).error == 14
    assert h.heartbeat(GROUP, "m", 1) == 0          # Kafka: NONE while loading
    assert h.leave(GROUP, {"member_id": "m"})["error_code"] == 14
    assert h.commit(GROUP)["topics"][0]["partitions"][0]["error_code"] == 14
    assert h.fetch(GROUP)["error_code"] == 14
    assert h.gc.describe_group(GROUP)["error_code"] == 14
    other = next(f"g{i}" for i in range(1000) if h.gc.partition_of(f"g{i}") != p)
    assert h.join(other).error == 79                # other partitions are open
    h.gc.complete_loading(p, [(st.OffsetCommitKey(GROUP, "foo", 0), st.OffsetCommitValue(9, -1, "", 0, -1))])
    assert h.offsets(GROUP) == {("foo", 0): 9}
    assert h.join(GROUP).error == 79


def test_compaction_keeps_exactly_the_live_records_and_replays_identically(tmp_path):
    store = st.LogStore(str(tmp_path), compact_min_bytes=1 << 62)   # no automatic compaction yet
    h = harness(store, 0)
    ids = h.stable_group(2)
    for i in range(200):
        h.now += 1
        h.commit(member_id=ids[i % 2], generation=1, offsets={("foo", i % 4): i, ("bar", i % 3): i})
    h.commit("doomed", offsets={("foo", 0): 1})
    h.gc.delete_groups(Call(), group_ids=["doomed"])
    before = snapshot(h.gc)
    p = h.gc.partition_of(GROUP)
    size_before = os.path.getsize(store.path(p))
    live_expected = {st.GroupMetadataKey(GROUP)} | {st.OffsetCommitKey(GROUP, t, i) for t, n in
                                                    (("foo", 4), ("bar", 3)) for i in range(n)}
    store.compact(p)
    store.close()
    with open(store.path(p), "rb") as f:
        frames, _, why = st.read_frames(f.read())
    assert why is None
    keys = [k for k, v, _, _ in frames]
    assert all(v is not None for _, v, _, _ in frames)
    dp = h.gc.partition_of("doomed")
    if dp == p:
        assert len(keys) == len(set(keys)) and set(keys) == live_expected
    else:
        assert set(keys) == live_expected
    assert os.path.getsize(store.path(p)) < size_before
    h2, store2 = reload(tmp_path, now=h.now)
    assert snapshot(h2.gc) == before
    store2.close()


def test_automatic_compaction_bounds_the_log(tmp_path):
    store = st.LogStore(str(tmp_path), compact_ratio=2.0, compact_min_bytes=4096)
    h = harness(store, 0)
    for i in range(2000):
        h.commit("simple", offsets={("foo", i % 5): i})
    assert store.compactions > 0
    p = h.gc.partition_of("simple")
    live = 5 * len(st.encode_frame(st.OffsetCommitKey("simple", "foo", 0), st.OffsetCommitValue(1999)))
    assert os.path.getsize(store.path(p)) <= max(4096, 2 * live) + 200
    store.close()
    h2, store2 = reload(tmp_path, now=0)
    assert h2.offsets("simple") == {("foo", i): 1995 + i for i in range(5)}
    store2.close()


def _write_log(directory, records) -> tuple[str, int, int]:
    store = st.LogStore(str(directory))
    store.append(0, records)
    store.close()
    path = store.path(0)
    size = os.path.getsize(path)
    last = len(st.encode_frame(*records[-1]))
    return path, size - last, size


def test_torn_tail_at_every_byte_of_the_last_record_still_loads(tmp_path):
    records = RECORDS[:2] + [RECORDS[3]]
    src = tmp_path / "src"
    path, start, end = _write_log(src, records)
    with open(path, "rb") as f:
        full = f.read()
    for cut in range(start, end):
        d = tmp_path / f"cut{cut}"
        d.mkdir()
        with open(d / os.path.basename(path), "wb") as f:
            f.write(full[:cut])
        with capture_logs() as logs:
            store = st.LogStore(str(d))
            loaded = store.load(0)
        assert loaded == records[:-1], cut
        assert os.path.getsize(d / os.path.basename(path)) == start, cut
        if cut > start:
            assert any(e["event"] == "truncating log tail" for e in logs), cut
        assert _damaged_copies(d) == [], cut          # a torn tail is not damage: nothing kept aside
        # the repaired log takes appends again
        store.append(0, [records[-1]])
        store.close()
        assert st.LogStore(str(d)).load(0) == records
        shutil.rmtree(d)


def test_a_corrupted_byte_in_the_last_record_is_detected(tmp_path):
    records = RECORDS[:2] + [RECORDS[3]]
    path, start, end = _write_log(tmp_path / "src", records)
    with open(path, "rb") as f:
        full = f.read()
    for pos in range(start, end):
        for flip in (0x01, 0x80):
            bad = bytearray(full)
            bad[pos] ^= flip
            frames, valid, why = st.read_frames(bytes(bad))
            assert [(k, v) for k, v, _, _ in frames] == records[:-1], (pos, flip)
            assert valid == start and why is not None
            if pos >= start + 8:
                assert why == "CRC mismatch"


def test_service_load_through_the_store(tmp_path):
    store = st.LogStore(str(tmp_path))
    svc = Service(store=store)
    gc = svc.group_coordinator
    call = Call()
    gc.offset_commit(call, OffsetCommitRequest("g", [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": ""}]}]))
    assert call.result["topics"][0]["partitions"][0]["error_code"] == 0
    # acknowledged means written: the bytes are in the file before any close
    assert os.path.getsize(store.path(gc.partition_of("g"))) > 0
    store.close()
    svc2 = Service(store=st.LogStore(str(tmp_path)))
    stats = svc2.load()
    assert stats["records"] == 1 and stats["groups"] == 1
    assert svc2.group_coordinator.offsets.of("g")["t"][0].committed_offset == 5
    svc2.store.close()


@pytest.mark.parametrize("policy", ["always", "interval", "never"])
def test_fsync_policies_accept_appends(tmp_path, policy):
    store = st.LogStore(str(tmp_path), fsync=policy, fsync_interval_ms=0)
    store.append(1, RECORDS[:2])
    store.sync()
    store.close()
    assert st.LogStore(str(tmp_path)).load(1) == RECORDS[:2]


# ============================================================================ damage recovery
def _varied_records(n: int) -> list:
    """n records of every kind and many sizes, each with its own key (none supersedes another)."""
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append((st.OffsetCommitKey(f"g{i}", "orders", i), st.OffsetCommitValue(i * 1000, i, "m" * (i % 9), i, -1)))
        elif kind == 1:
            out.append((st.OffsetCommitKey(f"g{i}", "t", 0), None))
        elif kind == 2:
            out.append((st.GroupMetadataKey(f"g{i}"), st.GroupMetadataValue("consumer", i, "range", "m-1", i, tuple(
                st.MemberMetadata(f"m-{j}", None, "c", "/127.0.0.1", 30000, 10000, bytes(range(j * 7 % 40)),
                                  b"\x00\x01" * j) for j in range(1 + i % 3)))))
        else:
            out.append((st.GroupMetadataKey(f"g{i}"), None))
    return out


def _damaged_copies(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if ".damaged-" in name)


def _flip(path: str, pos: int, mask: int = 0x01) -> bytes:
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        data[pos] ^= mask
        f.seek(0)
        f.write(data)
    return bytes(data)


def test_one_damaged_byte_early_in_a_large_log_costs_one_record(tmp_path):
    """Issue #14's measurement: byte 20 of a 1,020-record log flipped used to truncate the log at 0."""
    records = [(st.OffsetCommitKey(f"group-{i % 17}", "orders", i % 8),
                st.OffsetCommitValue(i, -1, "", 1_700_000_000_000 + i, -1)) for i in range(1020)]
    store = st.LogStore(str(tmp_path))
    for record in records:
        store.append(0, [record])
    store.close()
    path = store.path(0)
    first = len(st.encode_frame(*records[0]))
    damaged = _flip(path, 20)
    with capture_logs() as logs:
        loaded = st.LogStore(str(tmp_path)).load(0)
    assert loaded == records[1:]
    skipped = [e for e in logs if e["event"] == "skipped damaged bytes"]
    assert [(e["start"], e["end"], e["bytes"], e["reason"], e["log_level"]) for e in skipped] == [
        (0, first, first, "CRC mismatch", "warning")]
    [summary] = [e for e in logs if e["event"] == "recovered damaged log"]
    assert summary["records"] == 1019 and summary["damaged_bytes"] == first and summary["damaged_ranges"] == 1
    assert not any(e["event"] == "truncating log tail" for e in logs)
    # the damaged file is kept as it was; the live log holds exactly the good frames
    assert _damaged_copies(tmp_path) == ["__consumer_offsets-0.log.damaged-1"]
    assert (tmp_path / "__consumer_offsets-0.log.damaged-1").read_bytes() == damaged
    assert (tmp_path / "__consumer_offsets-0.log").read_bytes() == damaged[first:]
    # the next start is clean
    with capture_logs() as logs:
        assert st.LogStore(str(tmp_path)).load(0) == records[1:]
    assert [e for e in logs if e["log_level"] == "warning"] == []


def _frame_bounds(records) -> list[tuple[int, int]]:
    bounds, pos = [], 0
    for record in records:
        size = len(st.encode_frame(*record))
        bounds.append((pos, pos + size))
        pos += size
    return bounds


def test_a_flipped_byte_anywhere_costs_only_its_own_record(tmp_path):
    """Bytes flipped in every frame's length, CRC and payload (first, middle, last byte) and in a
    sample across the file: every other record survives, the damaged file is kept aside, the
    skipped range is exactly the damaged frame, and the rewritten log loads clean."""
    records = _varied_records(24)
    src, _, _ = _write_log(tmp_path / "src", records)
    with open(src, "rb") as f:
        original = f.read()
    bounds = _frame_bounds(records)
    positions = set(range(0, len(original), 13))
    for start, end in bounds:
        positions.update(range(start, start + 8))                       # length and CRC
        positions.update((start + 8, (start + 8 + end) // 2, end - 1))  # payload
    cases = 0
    for pos in sorted(positions):
        for mask in (0x01, 0x80, 0xFF):
            index = next(i for i, (s, e) in enumerate(bounds) if s <= pos < e)
            start, end = bounds[index]
            d = tmp_path / f"d{pos}-{mask}"
            d.mkdir()
            path = str(d / os.path.basename(src))
            with open(path, "wb") as f:
                f.write(original)
            damaged = _flip(path, pos, mask)
            length = int.from_bytes(damaged[start:start + 4], "big", signed=True)
            torn = index == len(records) - 1 and end - start - 4 < length <= st.MAX_FRAME
            with capture_logs() as logs:
                store = st.LogStore(str(d))
                loaded = store.load(0)
                store.close()
            case = (pos, mask)
            assert loaded == records[:index] + records[index + 1:], case
            assert (d / os.path.basename(src)).read_bytes() == original[:start] + original[end:], case
            if torn:     # the last frame's length now runs past the end: as a torn write
                assert _damaged_copies(d) == [], case
                assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["truncating log tail"], case
            else:
                assert _damaged_copies(d) == [os.path.basename(src) + ".damaged-1"], case
                assert (d / _damaged_copies(d)[0]).read_bytes() == damaged, case
                assert [(e["start"], e["end"]) for e in logs if e["event"] == "skipped damaged bytes"] == [
                    (start, end)], case
            with capture_logs() as logs:
                assert st.LogStore(str(d)).load(0) == loaded, case
            assert [e for e in logs if e["log_level"] == "warning"] == [], case
            shutil.rmtree(d)
            cases += 1
    assert cases > 3 * 24 * 11


def test_an_oversized_length_field_does_not_end_the_log(tmp_path):
    """A frame whose length claims more than MAX_FRAME (or is negative) is skipped, and the good
    frames after it are read."""
    records = _varied_records(6)
    frames = [st.encode_frame(*r) for r in records]
    for length in (st.MAX_FRAME + 1, 2**31 - 1, -1):
        d = tmp_path / f"len{length}"
        d.mkdir()
        bogus = struct.pack(">iI", length, 0) + b"\x00\x01junk"
        (d / "__consumer_offsets-0.log").write_bytes(b"".join(frames[:2]) + bogus + b"".join(frames[2:]))
        with capture_logs() as logs:
            assert st.LogStore(str(d)).load(0) == records, length
        start = len(frames[0]) + len(frames[1])
        assert [(e["start"], e["end"], e["reason"]) for e in logs if e["event"] == "skipped damaged bytes"] == [
            (start, start + len(bogus), f"bad frame length {length}")]
        assert (d / "__consumer_offsets-0.log").read_bytes() == b"".join(frames)


def test_several_damaged_ranges_and_a_torn_tail_in_one_log(tmp_path):
    records = _varied_records(40)
    path, _, _ = _write_log(tmp_path, records)
    bounds = _frame_bounds(records)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    # a zeroed stretch over frames 5..7 (from inside 5 to inside 7), a flipped byte in frame 20,
    # and the last frame torn
    zero_from, zero_to = bounds[5][0] + 3, bounds[7][0] + 9
    data[zero_from:zero_to] = bytes(zero_to - zero_from)
    data[bounds[20][0] + 5] ^= 0x10
    data = data[:bounds[-1][0] + 11]
    with open(path, "wb") as f:
        f.write(data)
    with capture_logs() as logs:
        loaded = st.LogStore(str(tmp_path)).load(0)
    lost = {5, 6, 7, 20, len(records) - 1}
    assert loaded == [r for i, r in enumerate(records) if i not in lost]
    assert [(e["start"], e["end"]) for e in logs if e["event"] == "skipped damaged bytes"] == [
        (bounds[5][0], bounds[8][0]), (bounds[20][0], bounds[21][0])]
    [summary] = [e for e in logs if e["event"] == "recovered damaged log"]
    assert summary["torn_tail_bytes"] == 11 and summary["damaged_ranges"] == 2
    assert summary["damaged_bytes"] == bounds[8][0] - bounds[5][0] + bounds[21][0] - bounds[20][0]
    assert (tmp_path / _damaged_copies(tmp_path)[0]).read_bytes() == bytes(data)


def test_a_second_damage_keeps_the_first_damaged_copy(tmp_path):
    records = _varied_records(10)
    path, _, _ = _write_log(tmp_path, records)
    first = _flip(path, 30)
    st.LogStore(str(tmp_path)).load(0)
    second = _flip(path, os.path.getsize(path) - 3)
    loaded = st.LogStore(str(tmp_path)).load(0)
    assert loaded == records[1:-1]
    name = os.path.basename(path)
    assert _damaged_copies(tmp_path) == [name + ".damaged-1", name + ".damaged-2"]
    assert (tmp_path / (name + ".damaged-1")).read_bytes() == first
    assert (tmp_path / (name + ".damaged-2")).read_bytes() == second


def test_resync_accepts_no_false_frame_inside_the_damage(tmp_path):
    """Inside a damaged stretch: a whole frame whose CRC matches an undecodable payload, and a
    decodable payload under a wrong CRC. Neither is taken for a record."""
    records = _varied_records(4)
    frames = [st.encode_frame(*r) for r in records]
    undecodable = b"\x00\x07unknown key version"
    good_payload = st.encode_payload(st.OffsetCommitKey("false", "t", 0), st.OffsetCommitValue(1))
    garbage = (b"\xff\xff" + struct.pack(">iI", len(undecodable) + 4, crc32c.crc32c(undecodable)) + undecodable
               + struct.pack(">iI", len(good_payload) + 4, crc32c.crc32c(good_payload) ^ 1) + good_payload)
    (tmp_path / "__consumer_offsets-0.log").write_bytes(frames[0] + garbage + b"".join(frames[1:]))
    with capture_logs() as logs:
        assert st.LogStore(str(tmp_path)).load(0) == records
    assert [(e["start"], e["end"]) for e in logs if e["event"] == "skipped damaged bytes"] == [
        (len(frames[0]), len(frames[0]) + len(garbage))]


def test_a_zero_filled_tail_is_a_torn_write_and_keeps_no_copy(tmp_path):
    # a power loss on ext4 or XFS can leave the file's last blocks allocated and zeroed
    store = st.LogStore(str(tmp_path))
    store.append(0, [(st.OffsetCommitKey("g", "t", p), st.OffsetCommitValue(p)) for p in range(3)])
    store.close()
    path = tmp_path / "__consumer_offsets-0.log"
    good = path.read_bytes()
    path.write_bytes(good + b"\x00" * 4096)
    records = st.LogStore(str(tmp_path)).load(0)
    assert [v.offset for _, v in records] == [0, 1, 2]
    assert path.read_bytes() == good
    assert not list(tmp_path.glob("*.damaged-*"))


def test_a_record_the_log_could_not_read_back_is_never_written(tmp_path, monkeypatch):
    monkeypatch.setattr(st, "MAX_FRAME", 1024)
    store = st.LogStore(str(tmp_path))
    store.append(0, [(st.OffsetCommitKey("g", "t", 0), st.OffsetCommitValue(1))])
    big = st.GroupMetadataValue("consumer", 1, "range", "m", -1, (
        st.MemberMetadata("m", None, "c", "/h", 1, 1, b"x" * 2048, b""),))
    with pytest.raises(ValueError, match="frame limit"):
        store.append(0, [(st.OffsetCommitKey("g", "t", 1), st.OffsetCommitValue(2)), (st.GroupMetadataKey("g"), big)])
    store.append(0, [(st.OffsetCommitKey("g", "t", 2), st.OffsetCommitValue(3))])
    store.close()
    records = st.LogStore(str(tmp_path)).load(0)
    assert [(k.partition, v.offset) for k, v in records] == [(0, 1), (2, 3)]
    assert not list(tmp_path.glob("*.damaged-*"))


# The bytes the logs held before their records were declared (coordinator/records.py): written by
# the hand-made encoder this replaced, so that the logs of every earlier data dir still read.
_EARLIER_OFFSETS_LOG = [
    (st.OffsetCommitKey("orders", "t-1", 7), st.OffsetCommitValue(42, 3, "meta-é", 1700000000000, -1),
     "000100066f72646572730003742d3100000007010000000000000000002a0000000300076d6574612dc3a90000018bcfe568"
     "00ffffffffffffffff"),
    (st.OffsetCommitKey("orders", "t-1", 7), None, "000100066f72646572730003742d310000000700"),
    (st.GroupMetadataKey("orders"), st.GroupMetadataValue("consumer", 5, "range", "m-1", 1700000000123, (
        st.MemberMetadata("m-1", None, "c1", "/127.0.0.1", 30000, 10000, b"\x00\x01sub", b"\x00\x01asg"),
        st.MemberMetadata("m-2", "inst-2", "c2", "/10.0.0.2", 60000, 45000, b"", b""))),
     "000200066f72646572730100000008636f6e73756d657200000005000572616e676500036d2d310000018bcfe5687b00000002"
     "00036d2d31ffff00026331000a2f3132372e302e302e31000075300000271000000005000173756200000005000161736700036d"
     "2d320006696e73742d320002633200092f31302e302e302e320000ea600000afc80000000000000000"),
    (st.GroupMetadataKey("empty"), st.GroupMetadataValue(None, 0, None, None, -1, ()),
     "00020005656d707479010000ffff00000000ffffffffffffffffffffffff00000000"),
]
_EARLIER_METADATA_LOG = [
    (st.TopicKey("t-1"), st.TopicValue(uuid.UUID(int=0x1234), 6, 1, (("cleanup.policy", "compact"),
                                                                      ("retention.ms", None))),
     "00010003742d310100000000000000000000000000000000123400000006000100000002000e636c65616e75702e706f6c6963"
     "790007636f6d70616374000c726574656e74696f6e2e6d73ffff"),
    (st.EndOffsetKey(uuid.UUID(int=0x1234), 5), st.EndOffsetValue(99),
     "000200000000000000000000000000001234000000050100000000000000000063"),
    (st.TopicKey("t-1"), None, "00010003742d3100"),
]


@pytest.mark.parametrize("key, value, earlier", _EARLIER_OFFSETS_LOG)
def test_offsets_records_keep_the_bytes_of_earlier_logs(key, value, earlier):
    assert st.encode_payload(key, value).hex() == earlier
    k, v, key_len = st.decode_payload(bytes.fromhex(earlier))
    assert (k, v) == (key, value) and key_len == len(st.encode_key(key))


@pytest.mark.parametrize("key, value, earlier", _EARLIER_METADATA_LOG)
def test_metadata_records_keep_the_bytes_of_earlier_logs(key, value, earlier):
    assert st.encode_metadata_payload(key, value).hex() == earlier
    assert st.decode_metadata_payload(bytes.fromhex(earlier))[:2] == (key, value)


def test_a_member_without_a_client_id_is_kept_as_the_earlier_logs_kept_it():
    # a request header's client id may be null: the earlier encoder wrote it as a null string
    key, value, earlier = _EARLIER_OFFSETS_LOG[2]
    without = st.GroupMetadataValue(value.protocol_type, value.generation, value.protocol_name, value.leader,
                                    value.current_state_timestamp,
                                    (st.MemberMetadata("m-1", None, None, "/127.0.0.1", 30000, 10000, b"\x00\x01sub",
                                                       b"\x00\x01asg"), value.members[1]))
    payload = st.encode_payload(key, without)
    assert payload.hex() == earlier.replace("ffff00026331000a", "ffffffff000a", 1)
    assert st.decode_payload(payload)[:2] == (key, without)


def test_a_stray_consumer_group_record_does_not_cost_a_classic_group_at_load():
    # a damaged log: a Stable classic group, then a consumer group's target record of the same id
    # and no epoch record: the classic group stays (the consumer group needs its epoch record)
    from groupcoord.coordinator.group.consumer import records as crec
    h = Harness()
    p = h.gc.partition_of("g")
    h.gc.begin_loading(p)
    h.gc.complete_loading(p, [
        (st.GroupMetadataKey("g"), st.GroupMetadataValue("consumer", 5, "range", "m-1", 1234, (
            st.MemberMetadata("m-1", None, "c1", "/127.0.0.1", 30000, 10000, b"", b""),))),
        (st.GroupRecordKey(crec.TARGET, "g", "x"), {"topic_partitions": []}),
    ])
    group = h.gc.group("g")
    assert group is not None and group.state == "Stable" and list(group.members) == ["m-1"]
    assert h.gc.consumer_group("g") is None


def test_a_store_opened_on_its_own_reads_every_group_types_records(tmp_path):
    # each group type registers its records when its package is imported: a script that imports only
    # the store must still read them, not count them as damage and rewrite the log without them
    write = ("from groupcoord.coordinator import storage as st\n"
             "from groupcoord.coordinator.group.consumer import records as crec\n"
             f"s = st.LogStore({str(tmp_path)!r})\n"
             "s.append(0, [(st.GroupRecordKey(crec.EPOCH, 'g'), {'epoch': 3, 'metadata_hash': 0}),\n"
             "             (st.OffsetCommitKey('g', 't', 0), st.OffsetCommitValue(5))])\n"
             "s.close()\n")
    read = ("from groupcoord.coordinator import storage as st\n"
            f"print([type(k).__name__ for k, _ in st.LogStore({str(tmp_path)!r}).load(0)])\n")
    subprocess.run([sys.executable, "-c", write], check=True, timeout=60)
    out = subprocess.run([sys.executable, "-c", read], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "['GroupRecordKey', 'OffsetCommitKey']"
    assert sorted(os.listdir(tmp_path)) == ["__consumer_offsets-0.log"]
