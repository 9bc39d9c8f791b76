"""A member's process dies (SIGKILL): no LeaveGroup, its connections reset.

Two KafkaJS processes share a group; one is killed. The coordinator notices nothing but silence:
after session.timeout.ms it expires the member and rebalances, and the survivors, in the other
process, take over its partitions and the records produced meanwhile, resuming from the
committed offsets.
"""
from __future__ import annotations

import pytest

from clients import (SESSION_TIMEOUT_MS, TOPICS, KafkaJSDriver, all_partitions, assert_exactly_once, wait_covered,
                     wait_until)

pytestmark = pytest.mark.interop


def test_killed_kafkajs_member_is_expired_and_its_partitions_taken_over(coord, driver_for, closing):
    c = coord()
    survivors_host = driver_for("kafkajs", c.bootstrap)
    doomed_host = closing(KafkaJSDriver(c.bootstrap))
    group = "crash-kafkajs"
    topics = sorted(TOPICS)
    survivors = [closing(survivors_host.member(f"survivor-{i}", group, topics, None)).start() for i in range(2)]
    doomed = closing(doomed_host.member("doomed", group, topics, None)).start()
    view = wait_covered(c, group, survivors + [doomed])
    doomed_id = doomed.member_id()
    assert doomed_id in view.members

    produced = survivors_host.produce([(t, p, f"before/{t}/{p}") for t, p in sorted(all_partitions())])
    everyone = survivors + [doomed]
    wait_until(lambda: sum(len(m.consumed()) for m in everyone) >= len(produced), message="consumed before the kill")

    doomed_host.host.proc.kill()
    doomed_host.host.proc.wait(10)
    doomed.closed = True            # its last view no longer counts
    view = wait_covered(c, group, survivors, timeout=SESSION_TIMEOUT_MS / 1000 + 20, after=view.generation)
    expired = c.events_of(group, "member.expired")
    assert [(e["member"], e["reason"]) for e in expired] == [(doomed_id, "session_timeout")]
    assert not c.events_of(group, "member.left")

    produced += survivors_host.produce([(t, p, f"after/{t}/{p}") for t, p in sorted(all_partitions())])
    wait_until(lambda: sum(len(m.consumed()) for m in everyone) >= len(produced), message="consumed after the kill")
    assert_exactly_once([r for m in everyone for r in m.consumed()], produced)
