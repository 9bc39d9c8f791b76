"""/metrics over real HTTP while real consumer groups form, rebalance and commit."""
from __future__ import annotations

import asyncio

import aiohttp
import pytest
from kafka.admin import KafkaAdminClient
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

from groupcoord.client import GroupConsumer
from groupcoord.coordinator.embed import running

from observability_support import CONSUMER, TOPIC, Recorder, scrape, until

GROUP = "obs-metrics"


def _describe(bootstrap: str) -> dict[str, tuple[str, int]]:
    """group id -> (state, members) as Kafka's DescribeGroups tells (kafka-python's admin client)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="obs-admin")
    try:
        ids = [g["group_id"] for g in admin.list_groups()]
        return {gid: (d["group_state"], len(d["members"])) for gid, d in admin.describe_groups(ids).items()}
    finally:
        admin.close()


async def test_metrics_follow_a_group_forming_rebalancing_and_committing():
    async with running(http=True, topics={TOPIC: 6}) as gc, aiohttp.ClientSession() as http:
        rec = Recorder(gc.service)
        before = await scrape(http, gc.admin_url)
        assert before.value("groupcoord_num_groups") == 0
        assert before.value("groupcoord_node_up", node="0") == 1

        config = dict(CONSUMER, **{"bootstrap.servers": gc.bootstrap_servers, "group.id": GROUP})
        a = await GroupConsumer(TOPIC, config=config, client_id="a").start()
        b = await GroupConsumer(TOPIC, config=config, client_id="b").start()
        try:
            await until(lambda: len(a.assignment()) + len(b.assignment()) == 6 and a.assignment()
                        and b.assignment(), what="both members assigned")
            await a.commit({tp: 5 for tp in a.assignment()})
            await b.commit({tp: 7 for tp in b.assignment()})

            formed = await scrape(http, gc.admin_url)
            completed = rec.count("rebalance.completed")
            assert completed >= 1
            assert formed.value("groupcoord_group_completed_rebalance_total") == completed
            assert formed.value("groupcoord_group_completed_rebalance_total", outcome="Stable") == \
                rec.count("rebalance.completed", outcome="Stable")
            assert formed.value("groupcoord_rebalance_latency_seconds_count") == completed
            assert formed.value("groupcoord_rebalance_latency_seconds_sum") == pytest.approx(
                sum(e["duration_ms"] for e in rec.events if e["event"] == "rebalance.completed") / 1000, abs=1e-9)
            assert formed.value("groupcoord_group_rebalance_total") == rec.count("rebalance.started")
            assert formed.value("groupcoord_members_joined_total") == rec.count("member.joined") == 2
            assert formed.value("groupcoord_offset_commit_total") == 6
            assert formed.value("groupcoord_num_offsets") == 6
            assert formed.value("groupcoord_events_total", event="offset.committed") == 2

            # requests, join and sync time; KIP-394's MEMBER_ID_REQUIRED is counted by error name
            joins = formed.value("groupcoord_requests_total", request="JoinGroup")
            assert joins >= 4       # two members, each joining twice (KIP-394)
            assert formed.value("groupcoord_join_time_seconds_count") == joins
            assert formed.value("groupcoord_request_total_time_seconds_count", request="JoinGroup") == joins
            assert formed.value("groupcoord_sync_time_seconds_count") == \
                formed.value("groupcoord_requests_total", request="SyncGroup") >= 2
            assert formed.value("groupcoord_errors_total", request="JoinGroup", error="MEMBER_ID_REQUIRED") == \
                rec.count("member.pending") == 2
            versions = formed.by_label("groupcoord_requests_total", "version")
            assert versions and all(v.isdigit() for v in versions)

            # the gauges agree with what Kafka's DescribeGroups says
            described = await asyncio.to_thread(_describe, gc.bootstrap_servers)
            assert described[GROUP] == ("Stable", 2)
            now = await scrape(http, gc.admin_url)
            states = now.by_label("groupcoord_num_groups_by_state", "state")
            assert set(states) == {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}
            for state, n in states.items():
                assert n == sum(1 for s, _ in described.values() if s == state), state
            assert now.value("groupcoord_num_groups") == len(described)
            assert now.value("groupcoord_group_members", group=GROUP) == 2
            assert now.value("groupcoord_members") == 2
            assert now.value("groupcoord_group_generation", group=GROUP) == \
                gc.service.group_coordinator.group(GROUP).generation_id
            assert now.value("groupcoord_connection_count") == len(gc.server.connections) > 0
            assert now.value("groupcoord_connection_creation_total") >= now.value("groupcoord_connection_count")

            # heartbeats keep counting
            hb = now.value("groupcoord_heartbeat_total")
            assert hb == now.value("groupcoord_requests_total", request="Heartbeat")

            async def more_heartbeats():
                return (await scrape(http, gc.admin_url)).value("groupcoord_heartbeat_total") >= hb + 4
            await until(more_heartbeats, what="heartbeat_total to grow")
        finally:
            await b.close()

        # b left: one more rebalance, completed with one member
        await until(lambda: len(a.assignment()) == 6, what="a owns every partition")
        after = await scrape(http, gc.admin_url)
        assert after.value("groupcoord_members_left_total", initiator="member") == rec.count("member.left") == 1
        assert after.value("groupcoord_group_completed_rebalance_total") == rec.count("rebalance.completed") \
            == completed + 1
        assert after.value("groupcoord_group_rebalance_total", reason="member_left") == 1
        assert after.value("groupcoord_group_members", group=GROUP) == 1
        transitions = [(e["state_from"], e["state_to"]) for e in rec.events if e["event"] == "group.state_change"]
        for (src, dst) in set(transitions):
            assert after.value("groupcoord_group_state_transitions_total", **{"from": src, "to": dst}) == \
                transitions.count((src, dst))
        await a.close()

        emptied = await scrape(http, gc.admin_url)
        assert emptied.value("groupcoord_num_groups_by_state", state="Empty") == 1
        assert emptied.value("groupcoord_group_completed_rebalance_total", outcome="Empty") == \
            rec.count("rebalance.completed", outcome="Empty")


async def test_nested_error_codes_are_counted_by_name():
    async with running(http=True, topics={TOPIC: 2}) as gc, aiohttp.ClientSession() as http:
        def delete_missing_groups():
            admin = KafkaAdminClient(bootstrap_servers=gc.bootstrap_servers, client_id="obs-admin")
            try:
                return admin.delete_groups(["missing-1", "missing-2", "missing-3"])
            finally:
                admin.close()
        results = await asyncio.to_thread(delete_missing_groups)
        assert len(results) == 3
        m = await scrape(http, gc.admin_url)
        # DeleteGroups answers per group (results[].error_code): three GROUP_ID_NOT_FOUND
        assert m.value("groupcoord_errors_total", request="DeleteGroups", error="GROUP_ID_NOT_FOUND") == 3
        assert m.value("groupcoord_errors_total", error="NONE") == 0


async def test_each_service_has_its_own_registry_and_no_http_means_no_metrics():
    async with running() as bare:
        # embedded without HTTP: no hook, only the default bus subscriber
        assert bare.service.after_request == []
        assert len(bare.service.bus) == 1
    async with running(http=True, topics={TOPIC: 2}) as one, running(http=True, topics={TOPIC: 2}) as two, \
            aiohttp.ClientSession() as http:
        config = dict(CONSUMER, **{"bootstrap.servers": one.bootstrap_servers, "group.id": "only-one"})
        async with GroupConsumer(TOPIC, config=config) as c:
            await until(lambda: len(c.assignment()) == 2, what="assignment")
            m1, m2 = await scrape(http, one.admin_url), await scrape(http, two.admin_url)
        assert m1.value("groupcoord_group_completed_rebalance_total") == 1
        assert m2.value("groupcoord_group_completed_rebalance_total") == 0
        assert m2.value("groupcoord_requests_total", request="JoinGroup") == 0
        assert one.admin.app["metrics"].registry is not two.admin.app["metrics"].registry
        service = one.service
        assert len(service.after_request) == 1
    # the admin listener stopped: its hook and bus subscriptions are gone
    assert service.after_request == []
    assert len(service.bus) == 1


async def test_openmetrics_when_asked():
    async with running(http=True) as gc, aiohttp.ClientSession() as http:
        headers = {"Accept": "application/openmetrics-text; version=1.0.0"}
        async with http.get(gc.admin_url + "/metrics", headers=headers) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
            text = await resp.text()
        names = {f.name for f in parse_openmetrics(text)}
        assert {"groupcoord_num_groups", "groupcoord_requests", "groupcoord_rebalance_latency_seconds"} <= names
        async with http.get(gc.admin_url + "/openapi.json") as resp:
            doc = await resp.json()
        assert "/metrics" in doc["paths"]


async def test_consumer_group_metrics_as_kafka_names_them():
    from consumer_wire import WireMember, connect, topic_ids

    async with running(http=True, topics={TOPIC: 4}) as gc, aiohttp.ClientSession() as http:
        rec = Recorder(gc.service)
        conn = await connect(gc)
        try:
            ids = topic_ids(gc)
            a = WireMember(conn, "kip848", "a", [TOPIC], ids)
            b = WireMember(conn, "kip848", "b", [TOPIC], ids)
            await a.heartbeat()
            await b.heartbeat()                    # b waits for what a must give up: Reconciling
            m = await scrape(http, gc.admin_url)
            assert m.by_label("groupcoord_consumer_group_count", "state") == {
                "Empty": 0, "Assigning": 0, "Reconciling": 1, "Stable": 0, "Dead": 0}
            assert m.by_label("groupcoord_group_count", "protocol") == {"classic": 0, "consumer": 1, "share": 0}
            assert m.value("groupcoord_num_groups") == 0                  # NumGroups: classic groups
            assert m.value("groupcoord_consumer_group_rebalance_total", reason="member_joined") == 2
            assert m.value("groupcoord_group_generation", group="kip848") == 3       # (from 1: Kafka 4.3)
            assert m.value("groupcoord_group_members", group="kip848") == 2 == m.value("groupcoord_members")
            assert m.value("groupcoord_members_joined_total") == 2
            assert m.value("groupcoord_requests_total", request="ConsumerGroupHeartbeat") == 2

            await a.heartbeat()                    # revokes
            await a.heartbeat(owned={TOPIC: a.owns(TOPIC)})
            await b.heartbeat()
            m = await scrape(http, gc.admin_url)
            assert m.value("groupcoord_consumer_group_count", state="Stable") == 1
            assert m.value("groupcoord_consumer_group_count", state="Reconciling") == 0
            assert m.value("groupcoord_group_state_transitions_total", **{"from": "Reconciling", "to": "Stable"}) == 1

            await b.heartbeat(epoch=-1)
            await a.heartbeat(epoch=-1)
            status = await http.post(f"{gc.admin_url}/api/groups/kip848/offsets/reset", json={"topic": TOPIC,
                                                                                             "to": "earliest"})
            assert status.status == 200
            m = await scrape(http, gc.admin_url)
            assert m.value("groupcoord_consumer_group_count", state="Empty") == 1
            assert m.by_label("groupcoord_consumer_group_rebalance_total", "reason") == {
                "member_joined": 2, "member_left": 2}
            assert m.value("groupcoord_consumer_group_rebalance_total") == rec.count("consumer.group_epoch_bumped") == 4
            assert m.value("groupcoord_members_left_total", initiator="member") == 2
            assert m.value("groupcoord_group_generation", group="kip848") == 5
            assert m.value("groupcoord_num_offsets") == 4                 # NumOffsets: every group's
        finally:
            conn.close()
