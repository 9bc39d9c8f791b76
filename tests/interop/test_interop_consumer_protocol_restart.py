"""A consumer group of the new protocol (KIP-848) survives the coordinator's SIGKILL: restarted on the
same port and --data-dir, the daemon replays the group's records, and the confluent-kafka consumers
(``group.protocol=consumer``) carry on with the same member ids, epochs and partitions: no fatal
GROUP_ID_NOT_FOUND, no rejoin, no new group epoch."""
from __future__ import annotations

import json

import pytest

from clients import Daemon, all_partitions, coverage_problems, wait_until
from test_interop_consumer_protocol import ConsumerProtocolMember
from test_interop_durability import PARTITIONS, TOPIC

pytestmark = pytest.mark.interop

GROUP = "kip848-restart"


def group_events(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [e for e in (json.loads(line) for line in f if line.strip()) if e.get("group") == GROUP]


def described(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=20)
    return d.state.name, sorted((m.member_id, tuple(sorted(tp.partition for tp in m.assignment.topic_partitions)))
                                for m in d.members)


def test_consumer_protocol_members_carry_on_across_a_kill_9_of_the_coordinator(tmp_path):
    data_dir = tmp_path / "data"
    partitions = all_partitions({TOPIC: PARTITIONS})
    first = Daemon(data_dir, {TOPIC: PARTITIONS}, events=tmp_path / "events-1.jsonl")
    daemons = [first]
    members: list[ConsumerProtocolMember] = []
    try:
        for i in range(3):
            members.append(ConsumerProtocolMember(f"m{i}", first.bootstrap, GROUP, [TOPIC], None).start())

        def settled(bootstrap):
            for m in members:
                m.check()
            state, described_members = described(bootstrap)
            ok = state == "STABLE" and len(described_members) == 3 and not coverage_problems(members, partitions)
            return described_members if ok else None
        before = wait_until(lambda: settled(first.bootstrap), message=lambda: coverage_problems(members, partitions))
        owned = {m.name: m.owned for m in members}
        joined = [e["member"] for e in group_events(first.events) if e["event"] == "consumer.member_joined"]
        assert sorted(joined) == sorted(m.member_id() for m in members)

        first.kill()
        second = Daemon(data_dir, {TOPIC: PARTITIONS}, events=tmp_path / "events-2.jsonl", port=first.port)
        daemons.append(second)
        # the group as it was, at once (its records replayed), and the members still in it
        assert described(second.bootstrap) == ("STABLE", before)
        after = wait_until(lambda: settled(second.bootstrap), message=lambda: coverage_problems(members, partitions))
        assert after == before
        assert {m.name: m.owned for m in members} == owned
        events = group_events(second.events)
        assert not [e for e in events if e["event"] in ("consumer.member_joined", "consumer.member_fenced",
                                                        "consumer.member_left", "group.created")]
    finally:
        for m in reversed(members):        # while the coordinator is up: they leave the group
            m.close()
        for d in daemons:
            d.close()
