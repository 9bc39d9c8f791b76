"""A mixed group (KIP-848's online migration) with real clients: kafka-python, aiokafka and KafkaJS
members of the classic protocol form a classic group; two confluent-kafka members of the consumer
protocol join it (the group is upgraded to a consumer group, the classic members carry on inside it);
they leave again (the group is downgraded and rebalances the classic way). At every step the
coordinator never has a partition owned by two members, and at the end of each every partition is
owned exactly once in the clients' own views."""
from __future__ import annotations

import threading

import pytest

from clients import KAFKAJS_PROTOCOL, all_partitions, coverage_problems, wait_until
from groupcoord.protocol import consumer as cp
from test_interop_consumer_protocol import ConsumerProtocolMember

pytestmark = pytest.mark.interop

TOPICS = {"t0": 8, "t1": 8}
PARTITIONS = all_partitions(TOPICS)
GROUP = "mixed"


class OwnershipWatch:
    """Samples the coordinator's view of who owns what, every few ms, on its own event loop (so each
    sample is one consistent state): a classic group's members' assignments, or a consumer group's
    members' assigned and pending-revocation partitions. Collects every partition seen with two
    owners at once."""

    def __init__(self, c, group_id: str = GROUP):
        self.c = c
        self.group_id = group_id
        self.doubles: list = []
        self.samples = 0
        self.types: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _owners(self):
        gc = self.c.gc.service.group_coordinator
        image = self.c.gc.service.cluster
        owners: dict = {}
        consumer = gc.consumer_group(self.group_id)
        if consumer is not None:
            kind = "consumer"
            for m in consumer.members.values():
                for parts in (m.assigned, m.pending_revocation):
                    for topic_id, ps in parts.items():
                        name = image.topics_by_id[topic_id].name
                        for p in ps:
                            owners.setdefault((name, p), []).append(m.member_id)
        else:
            classic = gc.group(self.group_id)
            if classic is None:
                return None, {}
            kind = f"classic:{classic.state}"
            if classic.state == "Stable":       # assignments are only in force once the group is Stable
                for m in classic.members.values():
                    if m.assignment:
                        for a in cp.decode_assignment(m.assignment)["assigned_partitions"]:
                            for p in a["partitions"]:
                                owners.setdefault((a["topic"], p), []).append(m.member_id)
        return kind, owners

    def _run(self):
        while not self._stop.wait(0.005):
            kind, owners = self.c.gc.call(self._owners)
            self.samples += 1
            if kind is not None and (not self.types or self.types[-1] != kind):
                self.types.append(kind)
            self.doubles.extend((tp, ids) for tp, ids in owners.items() if len(ids) > 1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


def wait_cover(c, members, kind: str):
    def ok():
        for m in members:
            m.check()
        consumer = c.gc.call(lambda: c.gc.service.group_coordinator.consumer_group(GROUP))
        if kind == "consumer":
            state = c.gc.call(lambda: (consumer.state, len(consumer.members)) if consumer else None)
        else:
            view = c.group(GROUP)
            state = (view.state, len(view.members)) if view is not None and consumer is None else None
        return state == ("Stable", len(members)) and not coverage_problems(members, PARTITIONS)
    wait_until(ok, 60, message=lambda: f"{kind} cover: {coverage_problems(members, PARTITIONS)}")


def test_classic_members_of_three_clients_and_consumer_protocol_members_share_one_group(coord, closing, driver_for):
    c = coord(topics=TOPICS)
    topics = sorted(TOPICS)
    kp = driver_for("kafka-python", c.bootstrap)
    aio = driver_for("aiokafka", c.bootstrap)
    js = driver_for("kafkajs", c.bootstrap)
    classic = [closing(kp.member("kafka-python", GROUP, topics, KAFKAJS_PROTOCOL)).start(),
               closing(aio.member("aiokafka", GROUP, topics, KAFKAJS_PROTOCOL)).start(),
               closing(js.member("kafkajs", GROUP, topics, None)).start()]
    with OwnershipWatch(c) as watch:
        wait_cover(c, classic, "classic")
        # the watch has sampled the classic group before the upgrade (its thread may start late on a
        # loaded machine)
        wait_until(lambda: watch.types, message="the watch's first sample of the group")

        # two members of the consumer protocol: the classic group is upgraded
        modern = [closing(ConsumerProtocolMember(f"confluent-{i}", c.bootstrap, GROUP, topics, None)).start()
                  for i in range(2)]
        wait_cover(c, classic + modern, "consumer")
        # the consumer group starts at the classic group's generation (the classic members may have
        # rebalanced again before the upgrade: the one the classic group had when it gave way)
        events = c.events_of(GROUP, "group.deleted", "group.created")
        upgrade = next(i for i, e in enumerate(events) if e.get("cause") == "upgrade")
        converted = events[upgrade - 1]
        assert (converted["event"], converted["reason"]) == ("group.deleted", "converted")
        assert events[upgrade]["generation"] == converted["generation"] > 0

        # they leave: the last one's leave downgrades the group, which rebalances the classic way
        for m in modern:
            m.close()
        wait_cover(c, classic, "classic")
        assert c.events_of(GROUP, "group.created")[-1]["cause"] == "downgrade"
    assert watch.samples > 50
    assert watch.doubles == []
    # classic, then consumer, then classic again (the final Stable is wait_cover's to check)
    assert watch.types[0].startswith("classic") and "consumer" in watch.types
    assert watch.types[-1].startswith("classic")
