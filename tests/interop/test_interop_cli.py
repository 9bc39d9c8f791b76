"""``groupcoord groups`` (kafka-consumer-groups.sh) on groups of real consumers, three nodes.

The command is given only the first node: it finds the others (ListGroups goes to each) and each
group's coordinator through the Kafka protocol, as it would on a Kafka cluster.

1. confluent-kafka consumers consume and commit, then pause; more records are produced: the
   offsets view shows, per partition, the committed offset, the log end and the lag (what was
   produced after), the consumer id and client id of the member that owns it (from the members'
   own APIs and callbacks); the members and state views agree with the group; --list shows it;
   resetting offsets and deleting are refused while it has members, and change nothing.
2. kafka-python consumers consume, commit and leave: the Empty group's offsets are shown without
   consumers; --reset-offsets plans (dry run: nothing changes) and executes (the coordinator and a
   client's committed() see the new offsets) with each scenario; --export feeds --from-file;
   --delete-offsets and --delete remove what they say. Once as a real subprocess.
3. a static member gets the GROUP-INSTANCE-ID column; a group held in PreparingRebalance (a fault
   delays a member's JoinGroup) is described with Kafka's warning, and a reset is refused.
"""
from __future__ import annotations

import datetime as dt
import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients import TOPICS, all_partitions, wait_covered, wait_until

from groupcoord.cli import main

pytestmark = pytest.mark.interop

NODES = 3
OFFSETS_COLUMNS = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                   "CLIENT-ID"]


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(*argv: str) -> Result:
    """The command in this process, as `groupcoord ARGV...`."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return Result(code, out.getvalue(), err.getvalue())


def run_subprocess(*argv: str) -> Result:
    """The installed `groupcoord` script (or `python -m groupcoord.cli` without it)."""
    script = Path(sys.executable).with_name("groupcoord")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "groupcoord.cli"]
    proc = subprocess.run(command + list(argv), capture_output=True, text=True, timeout=60)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def table(out: str) -> tuple[list[str], list[list[str]]]:
    """A printed table as its header's words and each row's (no value of ours holds a space)."""
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines, f"no table in {out!r}"
    header = lines[0].split()
    rows = [line.split() for line in lines[1:]]
    for row in rows:
        assert len(row) == len(header), f"{row} does not fit {header}"
    return header, rows


def records(counts: dict, tag: str) -> list[tuple[str, int, str]]:
    return [(t, p, f"{tag}-{t}-{p}-{i}") for (t, p), n in sorted(counts.items()) for i in range(n)]


# ================================================================================ 1. an active group
def test_describe_offsets_members_and_state_of_a_consuming_group(coord, driver_for, closing):
    c = coord(nodes=NODES)
    bootstrap = c.bootstrap.split(",")[0]
    groups = ("groups", "--bootstrap-server", bootstrap)
    driver = driver_for("confluent-kafka", c.bootstrap)
    group = "cli-describe"
    tps = sorted(all_partitions())
    first = {tp: 2 + i for i, tp in enumerate(tps)}          # records before the pause: 2..8
    later = {tp: 1 + i % 3 for i, tp in enumerate(tps)}      # and after: the lag

    driver.produce(records(first, "first"))
    members = [closing(driver.member(f"cli-member-{i}", group, sorted(TOPICS), "range").start()) for i in range(2)]
    wait_covered(c, group, members)
    wait_until(lambda: c.group(group).offsets == first, message=lambda: f"offsets {c.group(group).offsets} == {first}")
    for m in members:
        m.run(lambda consumer: consumer.pause(consumer.assignment()))
    driver.produce(records(later, "later"))
    assert c.group(group).offsets == first                    # paused: nothing more consumed

    owner = {tp: m for m in members for tp in m.owned}
    member_ids = {m.name: m.member_id() for m in members}
    assert set(owner) == set(tps) and all(member_ids.values())

    # --describe (the offsets view)
    r = run(*groups, "--describe", "--group", group)
    assert (r.code, r.err) == (0, "")
    assert r.out.startswith("\n")
    header, rows = table(r.out)
    assert header == OFFSETS_COLUMNS
    got = {(row[1], int(row[2])): dict(zip(header, row)) for row in rows}
    assert sorted(got) == tps and len(rows) == len(tps)
    for tp, row in got.items():
        m = owner[tp]
        assert row == {"GROUP": group, "TOPIC": tp[0], "PARTITION": str(tp[1]),
                       "CURRENT-OFFSET": str(first[tp]), "LOG-END-OFFSET": str(first[tp] + later[tp]),
                       "LAG": str(later[tp]), "CONSUMER-ID": member_ids[m.name], "HOST": "/127.0.0.1",
                       "CLIENT-ID": m.name}, tp
    # Kafka's order: the member with the most partitions first, each member's partitions sorted
    by_size = sorted(members, key=lambda m: -len(m.owned))
    assert [(row[1], int(row[2])) for row in rows] == [tp for m in by_size for tp in sorted(m.owned)]
    assert run(*groups, "--describe", "--group", group, "--offsets").out == r.out

    r = run(*groups, "--describe", "--group", group, "--offsets", "--verbose")
    header, rows = table(r.out)
    assert header == OFFSETS_COLUMNS[:3] + ["LEADER-EPOCH"] + OFFSETS_COLUMNS[3:]
    assert {(row[1], int(row[2])): row[4] for row in rows} == {tp: str(n) for tp, n in first.items()}

    # --members [--verbose]
    r = run(*groups, "--describe", "--group", group, "--members")
    assert (r.code, r.err) == (0, "")
    header, rows = table(r.out)
    assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert sorted(rows) == sorted([group, member_ids[m.name], "/127.0.0.1", m.name, str(len(m.owned))]
                                  for m in members)
    r = run(*groups, "--describe", "--group", group, "--members", "--verbose")
    header, rows = table(r.out)
    assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                      "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]

    def assignment(m):
        return ";".join(f"{t}:{','.join(str(p) for p in sorted(p for tt, p in m.owned if tt == t))}"
                        for t in sorted({t for t, _ in m.owned}))
    assert sorted(rows) == sorted([group, member_ids[m.name], "/127.0.0.1", m.name, str(len(m.owned)), "-",
                                   assignment(m), "-", "-"] for m in members)

    # --state: the coordinator is the node FindCoordinator names (not necessarily the bootstrap one)
    node = c.gc.call(c.gc.service.cluster.coordinator_for, group)
    address = c.gc.call(lambda: f"{c.gc.service.cluster.nodes[node].host}:{c.gc.service.cluster.nodes[node].port}")
    r = run(*groups, "--describe", "--group", group, "--state")
    assert (r.code, r.err) == (0, "")
    header, rows = table(r.out)
    assert header == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert rows == [[group, address, f"({node})", "range", "Stable", "2"]]
    r = run(*groups, "--describe", "--all-groups", "--state")
    assert table(r.out)[1] == [[group, address, f"({node})", "range", "Stable", "2"]]

    # --list [--state]
    assert run(*groups, "--list").out == f"{group}\n"
    r = run(*groups, "--list", "--state", "stable,empty")
    assert table(r.out) == (["GROUP", "STATE"], [[group, "Stable"]])
    assert table(run(*groups, "--list", "--state", "Empty").out) == (["GROUP", "STATE"], [])

    # refused while the group has members: nothing changes
    r = run(*groups, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute")
    assert r.code == 1
    assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current state "
            f"is Stable.") in r.err.splitlines()
    r = run(*groups, "--delete", "--group", group)
    assert r.code == 1
    assert r.err.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        f"* Group '{group}' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
        "The group is not empty."]
    view = c.group(group)
    assert view.state == "Stable" and view.offsets == first


# ================================================================================ 2. an empty group
def test_reset_offsets_and_delete_an_inactive_group(coord, driver_for, closing, tmp_path):
    c = coord(nodes=NODES)
    bootstrap = c.bootstrap.split(",")[0]
    groups = ("groups", "--bootstrap-server", bootstrap)
    driver = driver_for("kafka-python", c.bootstrap)
    group = "cli-reset"
    tps = sorted(all_partitions())
    counts = {tp: 3 + i for i, tp in enumerate(tps)}         # the log end offsets: 3..9
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    driver.produce(records(counts, "r"))
    members = [closing(driver.member(f"cli-kp-{i}", group, sorted(TOPICS), "roundrobin").start()) for i in range(2)]
    wait_covered(c, group, members)
    wait_until(lambda: c.group(group).offsets == counts, message=lambda: f"offsets {c.group(group).offsets}")
    for m in members:
        m.close()
    wait_until(lambda: c.group(group).state == "Empty", message="the group empty")

    def committed():
        return c.group(group).offsets

    # the offsets of a group without members: no consumer, no lag
    r = run(*groups, "--describe", "--group", group)
    assert (r.code, r.err) == (0, f"Consumer group '{group}' has no active members.\n")
    header, rows = table(r.out)
    assert header == OFFSETS_COLUMNS
    assert rows == [[group, t, str(p), str(counts[(t, p)]), str(counts[(t, p)]), "0", "-", "-", "-"] for t, p in tps]
    r = run(*groups, "--describe", "--group", group, "--state")
    assert table(r.out)[1][0][3:] == ["-", "Empty", "0"]

    # a dry run (the default) plans and changes nothing
    r = run(*groups, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest")
    assert r.code == 0
    assert r.err.startswith("WARN: No action will be performed as the --execute option is missing.")
    assert table(r.out) == (["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[group, t, str(p), "0"] for t, p in tps])
    r = run(*groups, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--dry-run")
    assert (r.code, r.err) == (0, "")
    assert committed() == counts

    # --execute: --shift-by on two partitions of alpha
    r = run(*groups, "--reset-offsets", "--group", group, "--topic", "alpha:0,2", "--shift-by", "-2", "--execute")
    assert (r.code, r.err) == (0, "")
    assert table(r.out)[1] == [[group, "alpha", "0", str(counts[("alpha", 0)] - 2)],
                               [group, "alpha", "2", str(counts[("alpha", 2)] - 2)]]
    expected = dict(counts)
    expected[("alpha", 0)] -= 2
    expected[("alpha", 2)] -= 2
    assert committed() == expected
    assert driver.committed(group, tps) == expected            # a client reads them back
    header, rows = table(run(*groups, "--describe", "--group", group).out)
    assert {(row[1], int(row[2])): row[5] for row in rows} == {tp: str(counts[tp] - expected[tp]) for tp in tps}

    # a whole topic to a date before every record: offset 0; past the log end: clamped, with a warning
    stamp = before.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    r = run(*groups, "--reset-offsets", "--group", group, "--topic", "beta", "--to-datetime", stamp, "--execute")
    assert table(r.out)[1] == [[group, "beta", str(p), "0"] for p in range(TOPICS["beta"])]
    expected.update({("beta", p): 0 for p in range(TOPICS["beta"])})
    assert committed() == expected
    r = run(*groups, "--reset-offsets", "--group", group, "--topic", "beta:1", "--to-offset", "1000", "--execute")
    assert table(r.out)[1] == [[group, "beta", "1", str(counts[("beta", 1)])]]
    assert (f"WARN New offset (1000) is higher than latest offset for topic partition beta-1. Value will be set "
            f"to {counts[('beta', 1)]}.") in r.err
    expected[("beta", 1)] = counts[("beta", 1)]
    assert committed() == expected
    # no record at or after now: Kafka falls back to the log end
    r = run(*groups, "--reset-offsets", "--group", group, "--topic", "beta:0", "--by-duration", "PT0S", "--dry-run")
    assert "Warn: Partition 0 from topic beta is empty. Falling back to latest known offset." in r.out
    assert table(r.out.split("known offset.")[-1])[1] == [[group, "beta", "0", str(counts[("beta", 0)])]]

    # --export, then --from-file
    r = run(*groups, "--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--export", "--dry-run")
    assert r.out == "".join(f"{t},{p},{counts[(t, p)]}\n" for t, p in tps) + "\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(r.out)
    r = run(*groups, "--reset-offsets", "--group", group, "--from-file", str(plan), "--execute")
    assert (r.code, r.err) == (0, "")
    assert committed() == counts

    # the same describe as a real subprocess
    r = run_subprocess(*groups, "--describe", "--group", group)
    assert r.code == 0
    assert r.err == f"Consumer group '{group}' has no active members.\n"
    assert table(r.out)[1] == [[group, t, str(p), str(counts[(t, p)]), str(counts[(t, p)]), "0", "-", "-", "-"]
                               for t, p in tps]

    # --delete-offsets of one topic
    r = run(*groups, "--delete-offsets", "--group", group, "--topic", "beta")
    assert (r.code, r.err) == (0, "")
    assert r.out.startswith(f"Request succeeded for deleting offsets from group {group}.\n")
    assert table(r.out.split("\n", 1)[1]) == (["TOPIC", "PARTITION", "STATUS"],
                                             [["beta", str(p), "Successful"] for p in range(TOPICS["beta"])])
    assert committed() == {tp: n for tp, n in counts.items() if tp[0] == "alpha"}

    # --delete
    r = run(*groups, "--delete", "--group", group)
    assert (r.code, r.out, r.err) == (0, f"Deletion of requested consumer groups ('{group}') was successful.\n", "")
    assert c.group(group) is None
    assert run(*groups, "--list").out == ""
    r = run_subprocess(*groups, "--describe", "--group", group)
    assert (r.code, r.out, r.err) == (1, "", f"Error: Consumer group '{group}' does not exist.\n")


# ================================================================================ 3. static members, a rebalance
def test_a_static_member_and_a_group_caught_rebalancing(coord, driver_for, closing):
    c = coord(nodes=1)
    groups = ("groups", "--bootstrap-server", c.bootstrap)
    driver = driver_for("confluent-kafka", c.bootstrap)
    group = "cli-static"
    static = closing(driver.member("cli-static-1", group, sorted(TOPICS), "range", instance_id="static-1").start())
    wait_covered(c, group, [static])

    # a group with a static member gets Kafka's GROUP-INSTANCE-ID column
    r = run(*groups, "--describe", "--group", group, "--members")
    assert table(r.out) == (["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                            [[group, static.member_id(), "static-1", "/127.0.0.1", "cli-static-1",
                              str(len(all_partitions()))]])

    # a second member joins; the first member's JoinGroup is held for a while: the group stays in
    # PreparingRebalance until it arrives
    c.gc.call(c.gc.service.faults.add, {"api": "JoinGroup", "client_id": "cli-static-1", "latency_ms": 5000,
                                        "count": 1})
    joiner = closing(driver.member("cli-joiner", group, sorted(TOPICS), "range").start())
    wait_until(lambda: c.group(group).state == "PreparingRebalance", message="the group rebalancing")
    r = run(*groups, "--describe", "--group", group, "--state")
    assert (r.code, r.err) == (0, f"Warning: Consumer group '{group}' is rebalancing.\n")
    header, rows = table(r.out)
    assert rows[0][3:] == ["-", "PreparingRebalance", "2"]      # the joiner is a member already
    r = run(*groups, "--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute")
    assert r.code == 1
    assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current state is "
            "PreparingRebalance.") in r.err.splitlines()
    wait_covered(c, group, [static, joiner])
