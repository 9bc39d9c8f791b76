"""One group, two client libraries: confluent-kafka (librdkafka) and kafka-python members together.

Both are configured with range and roundrobin, in different orders (librdkafka prefers range,
kafka-python roundrobin). The coordinator must pick a protocol every member supports by their
votes (each member votes for its first choice among the candidates; the majority wins), hand the
leader, whichever library it is, everybody's metadata, and distribute its assignment: the group
forms and balances (each member within one partition of the others). Then the leader leaves and
one of the two others (one of each library) takes the lead and assigns everything again.
"""
from __future__ import annotations

import pytest

from clients import TOPICS, ConfluentMember, KafkaPythonMember, wait_covered

pytestmark = pytest.mark.interop

CONFLUENT_PREFS = "range,roundrobin"
KAFKA_PYTHON_PREFS = ["roundrobin", "range"]


@pytest.mark.parametrize("first,majority,expected", [
    ("confluent-kafka", "confluent-kafka", "range"),
    ("kafka-python", "kafka-python", "roundrobin"),
], ids=["librdkafka-leads", "kafka-python-leads"])
def test_mixed_clients_form_and_balance_a_group(coord, closing, first, majority, expected):
    c = coord()
    group = f"mixed-{first}"
    topics = sorted(TOPICS)

    def make(client: str, i: int):
        if client == "confluent-kafka":
            m = ConfluentMember(f"rdkafka-{i}", c.bootstrap, group, topics, CONFLUENT_PREFS)
        else:
            m = KafkaPythonMember(f"kafka-python-{i}", c.bootstrap, group, topics, KAFKA_PYTHON_PREFS)
        return closing(m)

    other = "kafka-python" if majority == "confluent-kafka" else "confluent-kafka"
    members = [make(first, 0).start()]
    # the first member is alone, hence the leader, before the others join
    wait_covered(c, group, members)
    members += [make(other, 1).start(), make(majority, 2).start()]
    view = wait_covered(c, group, members)

    assert view.protocol == expected
    sizes = sorted(len(m.owned) for m in members)
    assert sizes[-1] - sizes[0] <= 1, f"unbalanced: {[(m.name, sorted(m.owned)) for m in members]}"
    leader = members[0]
    assert view.leader == leader_member_id(leader), "the first member should still lead"

    # the leader leaves: a member of the other library becomes the leader and assigns everything
    leader.close()
    rest = members[1:]
    view = wait_covered(c, group, rest)
    assert view.leader in {leader_member_id(m) for m in rest}
    sizes = sorted(len(m.owned) for m in rest)
    assert sizes[-1] - sizes[0] <= 1
    assert view.protocol in ("range", "roundrobin")
    for m in rest:
        m.check()


def leader_member_id(member) -> str:
    if isinstance(member, ConfluentMember):
        return member.member_id()
    return member.run(lambda consumer: consumer.group_metadata().member_id)
