"""What the service's console log shows at the default level: a group forming (a rebalance) is
there, its heartbeats and offset commits are not (they are at debug)."""
from __future__ import annotations

import io


from groupcoord.client.connection import BrokerConnection
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.logs import configure
from groupcoord.protocol.consumer import encode_subscription

GROUP = "levels"
SUB = encode_subscription({"topics": ["t"], "user_data": None}, 0)
HEARTBEAT = 12


async def one_member_group(gc, heartbeats: int) -> tuple[int, int]:
    """Join, sync, heartbeat and commit over TCP; returns the log's length after the rebalance
    and after the commit."""
    host, port = gc.bootstrap_servers.split(",")[0].rsplit(":", 1)
    conn = await BrokerConnection(host, int(port)).connect()
    try:
        join = {"group_id": GROUP, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
                "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": SUB}]}
        r = await conn.request(11, 5, join)                 # MEMBER_ID_REQUIRED
        r = await conn.request(11, 5, {**join, "member_id": r["member_id"]})
        member, generation = r["member_id"], r["generation_id"]
        r = await conn.request(14, 3, {"group_id": GROUP, "generation_id": generation, "member_id": member,
                                       "group_instance_id": None,
                                       "assignments": [{"member_id": member, "assignment": b""}]})
        assert r["error_code"] == 0
        after_rebalance = gc.log.tell()
        for _ in range(heartbeats):
            r = await conn.request(HEARTBEAT, 3, {"group_id": GROUP, "generation_id": generation,
                                                  "member_id": member, "group_instance_id": None})
            assert r["error_code"] == 0
        r = await conn.request(8, 7, {"group_id": GROUP, "generation_id_or_member_epoch": generation,
                                      "member_id": member, "group_instance_id": None, "topics": [
                                          {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                                        "committed_metadata": None}]}]})
        assert r["topics"][0]["partitions"][0]["error_code"] == 0
        return after_rebalance, gc.log.tell()
    finally:
        conn.close()


async def run_at(level: str) -> tuple[str, str]:
    """The console lines up to the group's first rebalance, and those of its heartbeats and commit."""
    log = io.StringIO()
    configure("console", level, stream=log)
    async with running(topics={"t": 1}) as gc:
        gc.log = log
        rebalance_end, commit_end = await one_member_group(gc, heartbeats=3)
    text = log.getvalue()
    return text[:rebalance_end], text[rebalance_end:commit_end]


async def test_at_info_a_rebalance_is_logged_and_heartbeats_and_commits_are_not():
    forming, steady = await run_at("info")
    for event in ("group.created", "member.joined", "rebalance.started", "group.state_change",
                  "rebalance.completed"):
        assert f"] {event} " in forming, (event, forming)
    assert "member.pending" not in forming
    assert steady == ""          # three heartbeats and an offset commit: not one line


async def test_at_debug_the_commit_is_logged():
    forming, steady = await run_at("debug")
    assert "] member.pending " in forming and "] group.sync_completed " in forming
    assert "] offset.committed " in steady and "partitions=1" in steady
