"""Offsets and group administration across client libraries, on three nodes.

- offsets committed by one library (with metadata, outside any membership: a "simple" group) are
  read back by the others' committed() APIs;
- the admin clients of librdkafka and kafka-python list and describe groups as Kafka would show
  them: state, protocol, members with client ids and the assignments they really own (decoded by
  the clients from DescribeGroups' bytes), the coordinator node;
- DeleteGroups refuses a group with members and deletes an empty one with its offsets.
"""
from __future__ import annotations

import pytest

from clients import (TOPICS, ConfluentDriver, AioKafkaDriver, all_partitions,
                     confluent_config, kafka_python_config, wait_covered)

pytestmark = pytest.mark.interop

NODES = 3
WAIT = 20


def test_offsets_committed_by_one_library_are_read_by_the_others(coord, closing):
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    c = coord(nodes=NODES)
    group = "offsets-across-libraries"
    tps = sorted(all_partitions())
    wanted = {tp: (10 + i, f"meta-{tp[0]}-{tp[1]}") for i, tp in enumerate(tps)}

    rdkafka = Consumer(confluent_config(c.bootstrap, group))
    try:
        rdkafka.commit(offsets=[TopicPartition(t, p, off, metadata=meta) for (t, p), (off, meta) in wanted.items()],
                       asynchronous=False)
    finally:
        rdkafka.close()
    view = c.group(group)
    assert view.state == "Empty" and view.offsets == {tp: off for tp, (off, _) in wanted.items()}

    kp = KafkaConsumer(**kafka_python_config(c.bootstrap, group_id=group))
    try:
        for (t, p), (off, meta) in wanted.items():
            got = kp.committed(KTP(t, p), metadata=True, timeout_ms=WAIT * 1000)
            # confluent-kafka (2.16) sends the metadata with its C string's NUL terminator; Kafka
            # stores the bytes as they come, and so do we
            assert (got.offset, got.metadata) in ((off, meta), (off, meta + "\x00"))
    finally:
        kp.close(autocommit=False)

    aio = closing(AioKafkaDriver(c.bootstrap))
    assert aio.committed(group, tps) == {tp: off for tp, (off, _) in wanted.items()}

    # kafka-python commits over them; librdkafka reads the new values and metadata
    from kafka.structs import OffsetAndMetadata
    kp = KafkaConsumer(**kafka_python_config(c.bootstrap, group_id=group))
    try:
        kp.commit({KTP(t, p): OffsetAndMetadata(off + 100, "kp", -1) for (t, p), (off, _) in wanted.items()})
    finally:
        kp.close(autocommit=False)
    rdkafka = Consumer(confluent_config(c.bootstrap, group))
    try:
        got = rdkafka.committed([TopicPartition(t, p) for t, p in tps], timeout=WAIT)
    finally:
        rdkafka.close()
    # offsets only: confluent-kafka reads committed metadata as a NUL-terminated C string, so
    # metadata committed without a NUL (as every other client sends it) comes back with whatever
    # bytes follow it in memory (librdkafka#4649), whoever the broker is
    assert {(r.topic, r.partition): r.offset for r in got} == {tp: off + 100 for tp, (off, _) in wanted.items()}
    assert c.group(group).offsets == {tp: off + 100 for tp, (off, _) in wanted.items()}


def test_admin_clients_list_describe_and_delete_groups(coord, closing):
    from confluent_kafka import ConsumerGroupState, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    c = coord(nodes=NODES)
    stable, empty = "admin-stable", "admin-empty"
    topics = sorted(TOPICS)
    driver = closing(ConfluentDriver(c.bootstrap))
    members = [closing(driver.member(f"admin-member-{i}", stable, topics, "roundrobin")).start() for i in range(2)]
    wait_covered(c, stable, members)
    # a simple group: offsets only
    from confluent_kafka import Consumer
    simple = Consumer(confluent_config(c.bootstrap, empty))
    try:
        simple.commit(offsets=[TopicPartition("alpha", 0, 3)], asynchronous=False)
    finally:
        simple.close()
    coordinator_of = {g: c.gc.call(c.gc.service.cluster.coordinator_for, g) for g in (stable, empty)}

    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    listed = admin.list_consumer_groups(request_timeout=WAIT).result()
    assert not listed.errors
    states = {g.group_id: g.state for g in listed.valid}
    assert states[stable] == ConsumerGroupState.STABLE and states[empty] == ConsumerGroupState.EMPTY
    assert {g.group_id: g.is_simple_consumer_group for g in listed.valid} == {stable: False, empty: True}

    desc = admin.describe_consumer_groups([stable], request_timeout=WAIT)[stable].result()
    assert desc.state == ConsumerGroupState.STABLE and desc.partition_assignor == "roundrobin"
    assert not desc.is_simple_consumer_group
    assert desc.coordinator.id == coordinator_of[stable]
    owned = {m.member_id(): m.owned for m in members}
    assert {d.member_id: frozenset((tp.topic, tp.partition) for tp in d.assignment.topic_partitions)
            for d in desc.members} == owned
    assert {d.client_id for d in desc.members} == {m.name for m in members}
    assert all(d.host.lstrip("/") == "127.0.0.1" for d in desc.members)

    kadmin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=WAIT * 1000)
    try:
        described = kadmin.describe_groups([stable, empty])
        assert described[stable]["group_state"] == "Stable"
        assert described[stable]["protocol_data"] == "roundrobin"
        assert described[empty]["group_state"] == "Empty" and not described[empty]["members"]
        kp_owned = {}
        for m in described[stable]["members"]:
            assignment = m["member_assignment"]
            kp_owned[m["member_id"]] = frozenset((t["topic"], p) for t in assignment["assigned_partitions"]
                                                 for p in t["partitions"])
            assert sorted(m["member_metadata"]["topics"]) == topics
        assert kp_owned == owned
        listed_kp = {g["group_id"]: g for g in kadmin.list_groups()}
        assert listed_kp[stable]["group_state"] == "Stable"
        assert listed_kp[empty]["protocol_type"] == ""
    finally:
        kadmin.close()

    # deleting: refused while the group has members; an empty group goes with its offsets
    results = admin.delete_consumer_groups([stable, empty], request_timeout=WAIT)
    with pytest.raises(Exception, match="NON_EMPTY_GROUP|not empty"):
        results[stable].result()
    results[empty].result()
    assert c.group(empty) is None
    assert ConfluentDriver(c.bootstrap).committed(empty, [("alpha", 0)]) == {("alpha", 0): -1001}
    listed = admin.list_consumer_groups(request_timeout=WAIT).result()
    assert {g.group_id for g in listed.valid} == {stable}
    for m in members:
        m.check()


def test_kafkajs_admin_describes_lists_sets_offsets_and_deletes(coord, driver_for, closing):
    c = coord(nodes=NODES)
    js = driver_for("kafkajs", c.bootstrap)
    rdkafka = closing(ConfluentDriver(c.bootstrap))
    topics = sorted(TOPICS)
    js_group, rd_group, empty = "admin-js-stable", "admin-js-rdkafka", "admin-js-empty"
    js_members = [closing(js.member(f"js-admin-{i}", js_group, topics, None)).start() for i in range(2)]
    rd_member = closing(rdkafka.member("rd-admin-0", rd_group, topics, "range")).start()
    wait_covered(c, js_group, js_members)
    wait_covered(c, rd_group, [rd_member])

    # KafkaJS decodes the member metadata and assignments of its own group and of librdkafka's
    groups = {g["groupId"]: g for g in js.host.call("describeGroups", groupIds=[js_group, rd_group])["groups"]}
    expected = {js_group: ("RoundRobinAssigner", {m.member_id(): m.owned for m in js_members}),
                rd_group: ("range", {rd_member.member_id(): rd_member.owned})}
    for g, (protocol, owned) in expected.items():
        d = groups[g]
        assert (d["errorCode"], d["state"], d["protocolType"], d["protocol"]) == (0, "Stable", "consumer", protocol)
        assert {m["memberId"]: frozenset((t, p) for t, ps in m["assignment"].items() for p in ps)
                for m in d["members"]} == owned
        assert all(sorted(m["topics"]) == topics for m in d["members"])

    # admin offsets for a group without members, then its deletion
    js.host.call("setOffsets", groupId=empty, topic="beta", partitions=[{"partition": 1, "offset": 7}])
    assert js.committed(empty, [("beta", 1), ("beta", 2)]) == {("beta", 1): 7, ("beta", 2): -1}
    assert c.group(empty).offsets == {("beta", 1): 7}
    listed = {g["groupId"]: g for g in js.host.call("listGroups")["groups"]}
    assert {js_group, rd_group, empty} <= set(listed)
    # KafkaJS's setOffsets briefly joins the group as a consumer, so it keeps that protocol type
    assert listed[js_group]["protocolType"] == "consumer"
    assert listed[empty]["protocolType"] == c.group(empty).protocol_type == "consumer"
    results = js.host.call("deleteGroups", groupIds=[empty])["results"]
    assert [(r["groupId"], r["errorCode"]) for r in results] == [(empty, 0)]
    assert c.group(empty) is None
