"""The groups endpoints on a share group (KIP-932), driven with ShareGroupHeartbeat requests on the
wire: its summary and detail as the share group type's view gives them (epochs, the initialized
share-partitions, members sharing partitions), conforming to the OpenAPI document, its configs, and
deleting it once it is empty."""
from __future__ import annotations

import aiohttp
import pytest
from admin_helpers import Http
from test_admin_consumer_groups import conforms

from groupcoord.coordinator.admin.cluster_api import kafka_uuid
from groupcoord.coordinator.embed import running

GROUP = "queue"


@pytest.fixture
async def admin_gc():
    """The admin listener's coordinator of conftest.py, with share groups on (groupcoord keeps them off
    until ShareFetch is served)."""
    async with running(http=True, topics={"orders": 3, "audit": 2}, config={"group.share.enable": True}) as gc:
        yield gc


@pytest.fixture
async def admin_http(admin_gc):
    async with aiohttp.ClientSession() as session:
        yield Http(session, admin_gc.admin_url)


async def heartbeat(conn, member_id: str, epoch: int, topics=None) -> dict:
    return await conn.request(76, 1, {"group_id": GROUP, "member_id": member_id, "member_epoch": epoch,
                                      "rack_id": None, "subscribed_topic_names": topics})


async def test_a_share_group_as_the_admin_api_shows_it(admin_gc, admin_http):
    from consumer_wire import connect

    conn = await connect(admin_gc, client_id="share-client")
    try:
        for member in ("a", "b", "c", "d"):         # four members, three partitions: each shared
            first = await heartbeat(conn, member, 0, ["orders"])
            await heartbeat(conn, member, first["member_epoch"])
        for member in ("a", "b", "c", "d"):
            await heartbeat(conn, member, admin_gc.service.group_coordinator.get(GROUP).members[member].member_epoch)
    finally:
        conn.close()
    group = admin_gc.service.group_coordinator.get(GROUP)

    status, groups = await admin_http.get("/api/groups")
    [summary] = [g for g in groups if g["group_id"] == GROUP]
    orders = kafka_uuid(admin_gc.service.topic_id("orders"))
    assert summary == {"group_id": GROUP, "type": "share", "state": "Stable", "protocol_type": "share",
                       "protocol": "simple", "generation": group.group_epoch, "leader": None, "members": 4,
                       "coordinator": {"partition": admin_gc.service.cluster.coordinator_partition(GROUP), "node": 0},
                       "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
                       "initialized": {"partitions": [{"topic": "orders", "topic_id": orders, "partition": p}
                                                      for p in range(3)]}}
    await conforms(admin_http, summary, "GroupSummary")

    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert status == 200 and detail["offsets"] == []
    await conforms(admin_http, detail, "GroupDetail")
    members = {m["member_id"]: m for m in detail["members"]}
    assert set(members) == {"a", "b", "c", "d"}
    held = [tp["partition"] for m in members.values() for tp in m["assignment"]["partitions"]]
    assert sorted(held) == [0, 0, 1, 1, 2, 2]           # (SimpleAssignor: ceil(4 / 3) = 2 members per partition)
    a = members["a"]
    assert (a["client_id"], a["subscribed_topic_names"], a["member_epoch"]) == (
        "share-client", ["orders"], group.assignment_epoch)
    assert a["assignment"] == a["target_assignment"]

    status, configs = await admin_http.get(f"/api/groups/{GROUP}/configs")
    assert configs["configs"]["share.auto.offset.reset"] == {"value": "latest", "source": "DEFAULT_CONFIG"}
    status, configs = await admin_http.call("PATCH", f"/api/groups/{GROUP}/configs",
                                            {"configs": {"share.renew.acknowledge.enable": False,
                                                         "share.auto.offset.reset": "earliest"}})
    assert status == 200
    assert (configs["configs"]["share.renew.acknowledge.enable"]["value"],
            configs["configs"]["share.auto.offset.reset"]["value"]) == (False, "earliest")
    await conforms(admin_http, configs, "GroupConfigs")

    status, body = await admin_http.call("DELETE", f"/api/groups/{GROUP}")
    assert status == 409                                  # not empty
    conn = await connect(admin_gc)
    try:
        for member in ("a", "b", "c", "d"):
            await heartbeat(conn, member, -1)
    finally:
        conn.close()
    status, body = await admin_http.call("DELETE", f"/api/groups/{GROUP}")
    assert status == 200 and admin_gc.service.group_coordinator.get(GROUP) is None
