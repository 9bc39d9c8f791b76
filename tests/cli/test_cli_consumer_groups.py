"""``groupcoord groups`` on a consumer group of the new protocol (KIP-848) beside a classic group, as
Kafka 4's kafka-consumer-groups.sh shows them: the TYPE column of ``--list --type``, and the
epochs and target assignments of ``--describe --members --verbose`` and ``--state --verbose``
(a classic group's are "-"). The consumer group is held mid-reconciliation: one member still owns
a partition the other is waiting for."""
from __future__ import annotations

from test_cli_groups_topics import run

from groupcoord.coordinator.group.consumer.requests import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.group.offsets import OffsetCommitRequest

GROUP = "kip848"


def heartbeat(gc, member: str, epoch: int) -> dict:
    """One ConsumerGroupHeartbeat handed to the coordinator on its loop (joining: subscribe to orders)."""
    joining = epoch == 0
    req = ConsumerGroupHeartbeatRequest(GROUP, member, epoch, rebalance_timeout_ms=30000 if joining else -1,
                                        subscribed_topic_names=["orders"] if joining else None,
                                        topic_partitions=[] if joining else None,
                                        client_id=f"cli-{member}", client_host="/127.0.0.1")
    out: list[dict] = []
    gc.call(gc.service.group_coordinator.consumer_group_heartbeat, out.append, req)
    assert out[0]["error_code"] == 0, out
    return out[0]


def test_list_and_describe_a_consumer_group_beside_a_classic_one(groupcoord_factory):
    gc = groupcoord_factory(topics={"orders": 3})
    bootstrap = ("--bootstrap-server", gc.bootstrap_servers)
    heartbeat(gc, "a", 0)
    heartbeat(gc, "b", 0)          # epoch 3 (a new group starts at 1, Kafka 4.3): b waits for what a must give up
    commit = OffsetCommitRequest("simple", [{"name": "orders", "partitions": [
        {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1, "committed_metadata": ""}]}])
    gc.call(gc.service.group_coordinator.offset_commit, lambda response: None, commit)

    r = run("groups", *bootstrap, "--list", "--type", "--state")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines() == [f"{'GROUP':<25} {'TYPE':<20} {'STATE':<20}",
                                  f"{GROUP:<25} {'Consumer':<20} {'Reconciling':<20}",
                                  f"{'simple':<25} {'Classic':<20} {'Empty':<20}"]
    r = run("groups", *bootstrap, "--list", "--type", "consumer")
    assert r.out.splitlines() == [f"{'GROUP':<25} {'TYPE':<20}", f"{GROUP:<25} {'Consumer':<20}"]

    group = gc.call(gc.service.group_coordinator.consumer_group, GROUP)
    target = {m: ",".join(str(p) for ps in group.target[m].values() for p in sorted(ps)) for m in ("a", "b")}
    r = run("groups", *bootstrap, "--describe", "--group", GROUP, "--members", "--verbose")
    assert (r.code, r.err) == (0, f"Warning: Consumer group '{GROUP}' is rebalancing.\n")
    header, *rows = r.out.strip("\n").splitlines()
    assert header.split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                              "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    assert [row.split() for row in rows] == [
        [GROUP, "a", "/127.0.0.1", "cli-a", "3", "2", "orders:0,1,2", "3", f"orders:{target['a']}"],
        [GROUP, "b", "/127.0.0.1", "cli-b", "0", "3", "-", "3", f"orders:{target['b']}"]]

    r = run("groups", *bootstrap, "--describe", "--group", GROUP, "--state", "--verbose")
    header, row = r.out.strip("\n").splitlines()
    assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                              "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
    assert row.split()[-5:] == ["uniform", "Reconciling", "3", "3", "2"]

    # kafka-groups.sh's view (--group-type, --protocol, --consumer, --share, --streams): every type
    r = run("groups", *bootstrap, "--list", "--consumer")
    assert (r.code, r.out.splitlines()) == (0, [f"{'GROUP':<20} {'TYPE':<20} {'PROTOCOL':<20}",
                                                f"{GROUP:<20} {'Consumer':<20} {'consumer':<20} ",
                                                f"{'simple':<20} {'Classic':<20} {'':<20} "])
    r = run("groups", *bootstrap, "--list", "--group-type", "classic")
    assert [line.split() for line in r.out.splitlines()] == [["GROUP", "TYPE", "PROTOCOL"], ["simple", "Classic"]]
    r = run("groups", *bootstrap, "--list", "--protocol", "consumer")
    assert [line.split()[0] for line in r.out.splitlines()] == ["GROUP", GROUP]
    r = run("groups", *bootstrap, "--list", "--share")
    assert r.out.splitlines() == [f"{'GROUP':<20} {'TYPE':<20} {'PROTOCOL':<20}"]
    r = run("groups", *bootstrap, "--list", "--consumer", "--streams")
    assert (r.code, r.err.splitlines()[0]) == (2, 'Option "[consumer]" can\'t be used with option "[streams]"')
    r = run("groups", *bootstrap, "--list", "--group-type", "nope")
    assert (r.code, r.err.splitlines()[0]) == (2, "--group-type must be a valid group type.")

    # a classic group has no epochs: "-", as Kafka prints it
    r = run("groups", *bootstrap, "--describe", "--group", "simple", "--state", "--verbose")
    assert r.err == "Consumer group 'simple' has no active members.\n"
    assert r.out.strip("\n").splitlines()[1].split()[-4:] == ["Empty", "-", "-", "0"]
