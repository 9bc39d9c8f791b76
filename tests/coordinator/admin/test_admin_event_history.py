"""The rebalance history the admin listener keeps under the data dir: what ``/api/events/recent``
(and so the web page's timeline and table of generations) still has after a restart, bounded,
and never a reason for the service not to start."""
from __future__ import annotations

import contextlib
import json
import logging

import aiohttp
import structlog
from structlog.testing import capture_logs

from groupcoord.coordinator.admin.events_api import HISTORY_FILE, EventHistory
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.group.consumer.requests import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.group.offsets import OffsetCommitRequest

TOPIC = "orders"
GROUP = "durable"


def heartbeat(gc, member: str, epoch: int) -> None:
    """A member of the consumer group joins (epoch 0) or leaves (-1), on the service's loop."""
    joining = epoch == 0
    req = ConsumerGroupHeartbeatRequest(GROUP, member, epoch, rebalance_timeout_ms=30000 if joining else -1,
                                        subscribed_topic_names=[TOPIC] if joining else None,
                                        topic_partitions=[] if joining else None, client_id=f"client-{member}")
    out: list[dict] = []
    gc.service.group_coordinator.consumer_group_heartbeat(out.append, req)
    assert out[0]["error_code"] == 0, out


def commit(gc) -> None:
    gc.service.group_coordinator.offset_commit(lambda _r: None, OffsetCommitRequest("simple", [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]))


async def recent(gc, **params) -> list[dict]:
    async with aiohttp.ClientSession() as http, http.get(gc.admin_url + "/api/events/recent",
                                                         params={"limit": "10000", **params}) as r:
        assert r.status == 200
        return await r.json()


@contextlib.contextmanager
def logs():
    """capture_logs, whatever level an earlier in-process CLI run configured structlog with."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET))
    try:
        with capture_logs() as captured:
            yield captured
    finally:
        structlog.configure(**saved)


async def test_the_rebalance_history_survives_a_restart_with_a_data_dir(tmp_path):
    async with running(http=True, topics={TOPIC: 3}, data_dir=tmp_path) as gc:
        heartbeat(gc, "a", 0)
        heartbeat(gc, "b", 0)
        heartbeat(gc, "b", -1)
        commit(gc)
        before = await recent(gc)
    kept = [e for e in before if e["event"] != "offset.committed"]
    assert {"consumer.member_joined", "consumer.member_left", "consumer.group_epoch_bumped"} <= \
        {e["event"] for e in kept}
    assert len(kept) < len(before)          # the offset commit is not rebalance history

    async with running(http=True, topics={TOPIC: 3}, data_dir=tmp_path) as gc:
        assert await recent(gc) == kept     # back in the buffer, in their order, before anything new
        heartbeat(gc, "c", 0)
        ours = [e for e in kept if e["group"] == GROUP]
        after = await recent(gc, group=GROUP)
        assert after[:len(ours)] == ours
        assert [e["member"] for e in after[len(ours):] if e["event"] == "consumer.member_joined"] == ["c"]

    async with running(http=True, topics={TOPIC: 3}, data_dir=tmp_path) as gc:      # and again
        assert [e["member"] for e in await recent(gc, type="consumer.member_joined")] == ["a", "b", "c"]


async def test_without_a_data_dir_nothing_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with running(http=True, topics={TOPIC: 3}) as gc:
        heartbeat(gc, "a", 0)
        assert gc.admin.app["events"].history is None
    assert list(tmp_path.iterdir()) == []


async def test_a_damaged_history_costs_one_log_line_and_is_rewritten_clean(tmp_path):
    good = [{"v": 1, "event": "consumer.member_joined", "ts_ms": 1000 + i, "group": GROUP, "generation": i,
             "state": "Assigning", "members": i, "member": f"m{i}"} for i in range(3)]
    path = tmp_path / HISTORY_FILE
    path.write_bytes(json.dumps(good[0]).encode() + b"\n\x00\xff not json\n" + json.dumps(good[1]).encode() +
                     b"\n[1, 2]\n" + json.dumps(good[2]).encode() + b'\n{"v": 1, "event": "consumer.mem')
    with logs() as captured:
        async with running(http=True, topics={TOPIC: 3}, data_dir=tmp_path) as gc:
            assert await recent(gc) == good
            heartbeat(gc, "a", 0)
    warnings = [e for e in captured if e["log_level"] == "warning"]
    assert [(e["event"], e["skipped_lines"], e["events"]) for e in warnings] == [("event_history_damaged", 3, 3)]
    lines = path.read_bytes().splitlines()
    events = [json.loads(line) for line in lines]           # every line reads back now
    assert events[:3] == good
    assert [e["member"] for e in events[3:] if e["event"] == "consumer.member_joined"] == ["a"]


async def test_an_unreadable_history_does_not_stop_the_start(tmp_path):
    (tmp_path / HISTORY_FILE).mkdir()       # not a file: neither readable nor writable
    with logs() as captured:
        async with running(http=True, topics={TOPIC: 3}, data_dir=tmp_path) as gc:
            heartbeat(gc, "a", 0)
            assert "consumer.member_joined" in [e["event"] for e in await recent(gc)]     # live as ever
    assert [e["event"] for e in captured if e["log_level"] == "warning"] == ["event_history_unreadable"]
    assert (tmp_path / HISTORY_FILE).is_dir()


def test_the_history_file_is_bounded(tmp_path):
    path = tmp_path / HISTORY_FILE
    history = EventHistory(str(path), size=4)
    assert history.load() == []                     # a first start: no file yet, nothing logged
    for i in range(25):
        history.append({"event": "rebalance.completed", "ts_ms": i})
        history.append({"event": "offset.committed", "ts_ms": i})        # never kept
        history.append({"event": "member.pending", "ts_ms": i})          # nor this one
        assert len(path.read_bytes().splitlines()) <= 2 * 4
    history.close()
    assert [e["ts_ms"] for e in EventHistory(str(path), size=4).load()] == [21, 22, 23, 24]
