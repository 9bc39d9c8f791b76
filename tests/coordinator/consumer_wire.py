"""A member of a consumer group (KIP-848) that speaks ConsumerGroupHeartbeat v1 itself over a
:class:`~groupcoord.client.connection.BrokerConnection`, one heartbeat per call: the tests choose
what it owns and when it heartbeats, so a group can be held in any reconciliation state."""
from __future__ import annotations

import uuid

from groupcoord.client.connection import BrokerConnection
from groupcoord.protocol.api_keys import ApiKey

CGH = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)


async def connect(gc, client_id: str = "kip848-client") -> BrokerConnection:
    """A connection to the coordinator's first node (the only one of a one-node cluster)."""
    host, port = gc.bootstrap_servers.split(",")[0].split(":")
    return await BrokerConnection(host, int(port), client_id=client_id).connect()


class WireMember:
    """``heartbeat()`` joins (epoch 0), then heartbeats with the epoch and partitions the last
    answer gave; ``owned`` overrides what it says it owns; ``epoch=-1`` leaves."""

    def __init__(self, conn: BrokerConnection, group: str, member_id: str, topics: list[str],
                 ids: dict[str, uuid.UUID]):
        self.conn, self.group, self.member_id, self.topics, self.ids = conn, group, member_id, topics, ids
        self.epoch = 0
        self.owned: dict[uuid.UUID, list[int]] = {}

    async def send(self, owned: dict[str, list[int]] | None = None, epoch: int | None = None) -> dict:
        """One heartbeat; its response, whatever its error."""
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        if owned is not None:
            self.owned = {self.ids[t]: ps for t, ps in owned.items()}
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": epoch, "instance_id": None,
                "rack_id": None, "rebalance_timeout_ms": 30000 if joining else -1,
                "subscribed_topic_names": self.topics if joining else None, "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [] if joining else [{"topic_id": t, "partitions": ps} for t, ps in self.owned.items()]}
        resp = await self.conn.request(CGH, 1, body)
        if resp["error_code"] == 0:
            self.epoch = resp["member_epoch"]
            if resp["assignment"] is not None:
                self.owned = {t["topic_id"]: sorted(t["partitions"]) for t in resp["assignment"]["topic_partitions"]}
        return resp

    async def heartbeat(self, owned: dict[str, list[int]] | None = None, epoch: int | None = None) -> dict:
        """One heartbeat that must succeed."""
        resp = await self.send(owned, epoch)
        assert resp["error_code"] == 0, resp
        return resp

    def owns(self, topic: str) -> list[int]:
        return sorted(self.owned.get(self.ids[topic], []))


def topic_ids(gc) -> dict[str, uuid.UUID]:
    return {name: t.topic_id for name, t in gc.service.cluster.topics.items()}
