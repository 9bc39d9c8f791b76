"""``groupcoord share-groups``, Kafka 4.3's kafka-share-groups.sh (ShareGroupCommand, whose
ShareGroupCommandTest gives the columns and messages): the option checks with Kafka's messages, then
against an embedded service (Kafka 4.3 by default: share groups on) every view of ``--list`` and
``--describe`` line by line, and the effect of ``--reset-offsets --execute``, ``--delete-offsets``
and ``--delete`` seen with ``--describe`` and ``--list`` afterwards. Members join with raw
ShareGroupHeartbeat requests (member and client ids of our choosing), records are produced with raw
Produce requests; the last test does it all with confluent-kafka's ShareConsumer, whose records come
again after a reset to the earliest offsets."""
from __future__ import annotations

import socket
import struct
import sys
import time

import pytest
import structlog
from test_cli_groups_topics import free_port, run

from groupcoord.protocol import frames
from groupcoord.protocol.records import Record, encode_batch

PRODUCE, SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 0, 76, 77
LONG = "a-topic-with-a-long-name"            # 24 characters: wider than the 15 of a column's minimum
TS_2023 = 1_700_000_000_000                  # the records' timestamps (2023-11-14T22:13:20Z)


# ---------------------------------------------------------------------------------- helpers
def rpc(bootstrap: str, api_key: int, version: int, body: dict, client_id: str = "test") -> dict:
    """One request over a socket of its own (the service runs on another thread)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(frames.encode_request(api_key, version, 1, body, client_id))
        size = struct.unpack(">i", _read(s, 4))[0]
        _, response = frames.decode_response(api_key, version, _read(s, size))
    return response


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def heartbeat(bootstrap: str, member: str, epoch: int, topics=None, group: str = "q") -> dict:
    """ShareGroupHeartbeat of a member whose client id is ``cli-<member>``."""
    resp = rpc(bootstrap, SHARE_GROUP_HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                                     "rack_id": None, "subscribed_topic_names": topics},
               client_id=f"cli-{member}")
    assert resp["error_code"] == 0, resp
    return resp


def describe(bootstrap: str, group: str) -> dict:
    """ShareGroupDescribe's entry of the group, raw."""
    return rpc(bootstrap, SHARE_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}
               )["groups"][0]


def join(bootstrap: str, subscriptions: dict[str, list[str]], group: str = "q") -> dict:
    """The members join and heartbeat until every one is at the group's assignment epoch (Stable)."""
    epochs = {m: heartbeat(bootstrap, m, 0, topics, group)["member_epoch"] for m, topics in subscriptions.items()}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for m in epochs:
            epochs[m] = heartbeat(bootstrap, m, epochs[m], group=group)["member_epoch"]
        d = describe(bootstrap, group)
        if d["group_state"] == "Stable" and all(x["member_epoch"] == d["assignment_epoch"] for x in d["members"]):
            return d
    raise AssertionError(f"the share group did not settle: {describe(bootstrap, group)}")


def produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    data = encode_batch([Record(i, 0, None, b"v%d" % i, []) for i in range(count)], base_timestamp=TS_2023)
    resp = rpc(bootstrap, PRODUCE, 8, {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": data}]}]})
    assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0, resp


def table(*rows: str) -> str:
    """What Java's printf("%n...") per row, then println(), prints: a blank line before the header."""
    return "\n" + "".join(f"{row}\n" for row in rows)


def assignment(member: dict) -> str:
    """getAssignmentString of a raw ShareGroupDescribe member: topics sorted, each's partitions sorted."""
    return ";".join(sorted(f"{t['topic_name']}:{','.join(str(p) for p in sorted(t['partitions']))}"
                           for t in member["assignment"]["topic_partitions"]))


class _Stream:
    """A stream kept as it is (structlog's PrintLogger looks sys.stdout up again at each line)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


@pytest.fixture(autouse=True)
def _service_logs_beside_the_output():
    """The embedded service's log lines (its thread logs while a command runs) go to the test's stdout
    as it is now, not to the command's stdout that run() captures (conftest restores structlog's
    configuration afterwards)."""
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(_Stream(sys.stdout)))


@pytest.fixture
def gc(groupcoord_factory):
    # heartbeats come from the test, not every 250 ms: the members must outlive it
    return groupcoord_factory(topics={"orders": 3, LONG: 2}, config={"group.share.session.timeout.ms": 60000})


# ---------------------------------------------------------------------------------- options
ACTIONS = "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets."


@pytest.mark.parametrize("argv, message", [
    ([], ACTIONS),
    (["--list", "--describe", "--all-groups"], ACTIONS),
    (["--list", "--verbose"], "Option(s) [verbose] are unavailable given other options on the command line"),
    (["--list", "--members", "--offsets"],
     "Option(s) [members, offsets] are unavailable given other options on the command line"),
    (["--delete", "--group", "g", "--state"],
     "Option(s) [state] are unavailable given other options on the command line"),
    (["--describe"], "Option [describe] takes one of these options: [all-groups], [group]"),
    (["--describe", "--group", "g", "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--describe", "--group", "g", "--members", "--offsets"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--describe", "--group", "g", "--state", "stable"], "Option [describe] does not take a value for [state]"),
    (["--describe", "--group", "g", "--all-groups"], 'Option "[group]" can\'t be used with option "[all-groups]"'),
    (["--describe", "--group", "g", "--topic", "t"], 'Option "[topic]" can\'t be used with option "[describe]"'),
    (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
    (["--list", "--topic", "t"], 'Option "[topic]" can\'t be used with option "[list]"'),
    (["--delete"], "Option [delete] takes the options [group] or [all-groups]"),
    (["--delete", "--group", "g", "--all-groups"], "Option [delete] takes either [group] or [all-groups], not both."),
    (["--delete", "--group", "g", "--topic", "t"], "Option [delete] does not take the option: [topic]"),
    (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--delete-offsets", "--topic", "t"], "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run", "--execute"],
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest"],
     "Option [reset-offsets] takes the option: [execute] or [dry-run]"),
    (["--reset-offsets", "--all-groups", "--all-topics", "--to-earliest", "--dry-run"],
     "Option [reset-offsets] takes the option: [group]"),
    (["--reset-offsets", "--group", "g", "--to-earliest", "--dry-run"],
     "Option [reset-offsets] takes one of these options: [all-topics], [topic]"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--dry-run"],
     "Option [reset-offsets] takes one of these options: [to-datetime], [to-earliest], [to-latest]"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--dry-run", "--to-earliest", "--to-latest"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (["--reset-offsets", "--group", "g", "--all-topics", "--dry-run", "--to-latest",
      "--to-datetime", "2025-01-01T00:00:00.000"],
     'Option "[to-datetime]" can\'t be used with option "[to-latest]"'),
    (["--list", "--state", "assigning"], "Invalid state list 'assigning'. Valid states are: Stable, Dead, Empty"),
    (["--list", "--state", "bad, wrong"], "Invalid state list 'bad, wrong'. Valid states are: Stable, Dead, Empty"),
    (["--list", "--state", "  bad, Stable"],
     "Invalid state list '  bad, Stable'. Valid states are: Stable, Dead, Empty"),
    (["--list", "--state", "   ,   ,"], "Invalid state list '   ,   ,'. Valid states are: Stable, Dead, Empty"),
    (["--reset-offsets", "--group", "g", "--topic", "t:x", "--to-earliest", "--dry-run"],
     "Invalid partition 'x' specified in topic arg 't:x''"),
])
def test_option_combinations_kafka_refuses_are_refused_with_its_message(gc, argv, message):
    # the tool's checks come before any request (a server that is there changes nothing)
    r = run("share-groups", "--bootstrap-server", gc.bootstrap_servers, *argv)
    assert (r.code, r.out) == (2, "")
    assert r.err.splitlines() == [message, "See 'groupcoord share-groups --help'."]


@pytest.mark.parametrize("action", [["--delete-offsets", "--topic", "t"],
                                    ["--reset-offsets", "--all-topics", "--to-earliest", "--dry-run"]])
def test_one_group_only_where_the_tool_asks_for_one(action):
    # OptionSet.valueOf(group) fails when the command runs, before any request: Kafka's "Error: ..." line
    r = run("share-groups", "--bootstrap-server", f"127.0.0.1:{free_port()}", *action, "--group", "a",
            "--group", "b")
    assert (r.code, r.out) == (1, "")
    assert r.err == ("Error: Executing share group command failed due to Found multiple arguments for option "
                     "group, but you asked for only one\n")


def test_an_unreachable_bootstrap_server_is_one_line_and_exit_1():
    port = free_port()
    r = run("share-groups", "--bootstrap-server", f"127.0.0.1:{port}", "--list", "--timeout", "500")
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Error: Executing share group command failed due to Cannot connect to the bootstrap server "
                     f"127.0.0.1:{port} (Connection refused)\n")


@pytest.mark.parametrize("release, why", [
    ("4.1", "org.apache.kafka.common.errors.UnsupportedVersionException: The version of API is not supported."),
    ("3.9", "The broker does not support ShareGroupDescribe versions 1-1"),
])
def test_a_cluster_without_share_groups(groupcoord_factory, release, why):
    # Kafka 4.1 has them off (share.version 0): ShareGroupDescribe answers UNSUPPORTED_VERSION; 3.9 has no API
    gc = groupcoord_factory(config={"groupcoord.kafka.version": release})
    cmd = ("share-groups", "--bootstrap-server", gc.bootstrap_servers)
    assert run(*cmd, "--list").out == ""
    r = run(*cmd, "--describe", "--group", "g")
    assert (r.code, r.out, r.err) == (1, "", f"Error: Executing share group command failed due to {why}\n")


# ---------------------------------------------------------------------------------- list and describe
def test_list_and_describe_a_stable_share_group(gc):
    bs = gc.bootstrap_servers
    cmd = ("share-groups", "--bootstrap-server", bs)
    d = join(bs, {"member-a": ["orders", LONG], "member-b": ["orders"]})
    # a classic group beside it: not a share group
    assert rpc(bs, 8, 8, {"group_id": "classic", "generation_id_or_member_epoch": -1, "member_id": "",
                          "group_instance_id": None, "retention_time_ms": -1, "topics": [
                              {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                 "committed_leader_epoch": -1,
                                                                 "committed_metadata": ""}]}]}
               )["topics"][0]["partitions"][0]["error_code"] == 0

    r = run(*cmd, "--list")
    assert (r.code, r.out, r.err) == (0, "q\n", "")
    r = run(*cmd, "--list", "--state")
    assert (r.code, r.out, r.err) == (0, "GROUP           STATE\nq               Stable\n", "")
    r = run(*cmd, "--list", "--state", "stable,EMPTY")
    assert r.out == "GROUP           STATE\nq               Stable\n"
    r = run(*cmd, "--list", "--state", "Empty")
    assert (r.code, r.out) == (0, "GROUP           STATE\n")

    # --members: by member id; the assignment as getAssignmentString writes it
    a, b = sorted(d["members"], key=lambda m: m["member_id"])
    held = {(t["topic_name"], p) for m in (a, b) for t in m["assignment"]["topic_partitions"] for p in t["partitions"]}
    assert held == {("orders", 0), ("orders", 1), ("orders", 2), (LONG, 0), (LONG, 1)}
    count = {m["member_id"]: sum(len(t["partitions"]) for t in m["assignment"]["topic_partitions"]) for m in (a, b)}
    r = run(*cmd, "--describe", "--group", "q", "--members")
    assert (r.code, r.err) == (0, "")
    assert r.out == table(
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  ASSIGNMENT",
        f"q               member-a        /127.0.0.1      cli-member-a    {count['member-a']:<12} {assignment(a)}",
        f"q               member-b        /127.0.0.1      cli-member-b    {count['member-b']:<12} {assignment(b)}")
    epoch = d["assignment_epoch"]
    r = run(*cmd, "--describe", "--group", "q", "--members", "--verbose")
    assert r.out == table(
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  MEMBER-EPOCH  ASSIGNMENT",
        f"q               member-a        /127.0.0.1      cli-member-a    {count['member-a']:<12} {epoch:<13} "
        f"{assignment(a)}",
        f"q               member-b        /127.0.0.1      cli-member-b    {count['member-b']:<12} {epoch:<13} "
        f"{assignment(b)}")

    # --state: the coordinator as host:port  (id)
    coordinator = f"{bs}  (0)"
    r = run(*cmd, "--describe", "--group", "q", "--state")
    assert (r.code, r.err) == (0, "")
    assert r.out == table(f"{'GROUP':<15} {'COORDINATOR (ID)':<25} {'STATE':<15} #MEMBERS",
                          f"{'q':<15} {coordinator:<25} {'Stable':<15} 2")
    r = run(*cmd, "--describe", "--group", "q", "--state", "--verbose")
    assert r.out == table(
        f"{'GROUP':<15} {'COORDINATOR (ID)':<25} {'STATE':<15} GROUP-EPOCH  ASSIGNMENT-EPOCH  #MEMBERS",
        f"{'q':<15} {coordinator:<25} {'Stable':<15} {d['group_epoch']:<12} {epoch:<17} 2")

    # --describe (--offsets): every initialized share-partition, "-" while none has a start offset
    r = run(*cmd, "--describe", "--group", "q")
    assert (r.code, r.err) == (0, "")
    assert r.out == table(
        "GROUP           TOPIC                    PARTITION  START-OFFSET  LAG",
        f"q               {LONG} 0          -             -",
        f"q               {LONG} 1          -             -",
        "q               orders                   0          -             -",
        "q               orders                   1          -             -",
        "q               orders                   2          -             -")
    assert run(*cmd, "--describe", "--group", "q", "--offsets").out == r.out
    r = run(*cmd, "--describe", "--group", "q", "--verbose")
    assert r.out.splitlines()[1:3] == ["GROUP           TOPIC                    PARTITION  LEADER-EPOCH  START-OFFSET  LAG",
                                       f"q               {LONG} 0          -             -             -"]

    # a group that is not there, or not a share group: the describe fails as a whole
    for group, why in (("nosuch", "Group nosuch not found."), ("classic", "Group classic is not a share group.")):
        for view in ([], ["--members"], ["--state"]):
            r = run(*cmd, "--describe", "--group", "q", "--group", group, *view)
            assert (r.code, r.out) == (1, "")
            assert r.err == ("Error: Executing share group command failed due to "
                             f"org.apache.kafka.common.errors.GroupIdNotFoundException: {why}\n")

    # nothing changes while the group has members
    r = run(*cmd, "--reset-offsets", "--group", "q", "--all-topics", "--to-earliest", "--execute")
    assert (r.code, r.out, r.err) == (1, "", "Share group 'q' is not empty.\n")
    r = run(*cmd, "--delete-offsets", "--group", "q", "--topic", "orders")
    assert (r.code, r.err) == (1, "Error: The group is not empty.\n")
    assert r.out == table("TOPIC           STATUS", "orders          Error: The group is not empty.")
    r = run(*cmd, "--delete", "--group", "q", "--group", "classic", "--group", "nosuch")
    assert (r.code, r.out) == (1, "")
    assert r.err.splitlines() == [
        "Error: Deletion of some share groups failed:",
        "* Group 'q' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
        "Share group 'q' is not EMPTY.",
        "* Group 'classic' could not be deleted due to: java.lang.IllegalArgumentException: Group 'classic' is not "
        "a share group.",
        "* Group 'nosuch' could not be deleted due to: java.lang.IllegalArgumentException: Group 'nosuch' is not "
        "a share group."]
    assert run(*cmd, "--list", "--state").out == "GROUP           STATE\nq               Stable\n"


# ---------------------------------------------------------------------------------- an empty group
def test_reset_delete_offsets_and_delete_an_empty_share_group(gc):
    bs = gc.bootstrap_servers
    cmd = ("share-groups", "--bootstrap-server", bs)
    join(bs, {"member-a": ["orders", LONG]})
    produce(bs, "orders", 1, 7)
    produce(bs, LONG, 0, 3)
    heartbeat(bs, "member-a", -1)                   # it leaves: the group is Empty
    assert describe(bs, "q")["group_state"] == "Empty"

    r = run(*cmd, "--describe", "--group", "q", "--members")
    assert (r.code, r.out, r.err) == (0, "", "\nShare group 'q' has no active members.\n")
    r = run(*cmd, "--describe", "--group", "q", "--state")
    assert (r.code, r.err) == (0, "\nShare group 'q' has no active members.\n")
    assert r.out.splitlines()[2].split() == ["q", bs, "(0)", "Empty", "0"]

    # a dry run plans, and changes nothing
    r = run(*cmd, "--reset-offsets", "--group", "q", "--all-topics", "--to-latest", "--dry-run")
    assert (r.code, r.err) == (0, "")
    assert r.out == table(
        "GROUP           TOPIC                    PARTITION  NEW-OFFSET",
        f"q               {LONG} 0          3",
        f"q               {LONG} 1          0",
        "q               orders                   0          0",
        "q               orders                   1          7",
        "q               orders                   2          0")
    assert "7 " not in run(*cmd, "--describe", "--group", "q").out

    # --execute: AlterShareGroupOffsets; the start offsets and the lags as --describe then shows them
    r = run(*cmd, "--reset-offsets", "--group", "q", "--all-topics", "--to-latest", "--execute")
    assert (r.code, r.err) == (0, "")
    r = run(*cmd, "--describe", "--group", "q", "--verbose")
    assert (r.code, r.err) == (0, "")
    assert r.out == table(
        "GROUP           TOPIC                    PARTITION  LEADER-EPOCH  START-OFFSET  LAG",
        f"q               {LONG} 0          0             3             0",
        f"q               {LONG} 1          0             0             0",
        "q               orders                   0          0             0             0",
        "q               orders                   1          0             7             0",
        "q               orders                   2          0             0             0")
    # a topic with its partitions, a whole topic; a time before every record: the first offset, or the log
    # end of a partition without one, with Kafka's warning
    r = run(*cmd, "--reset-offsets", "--group", "q", "--topic", "orders:1", "--topic", LONG, "--to-datetime",
            "2020-01-01T00:00:00.000", "--execute")
    assert (r.code, r.err) == (0, "")
    assert r.out == ("\nWarn: Partition 1 from topic a-topic-with-a-long-name is empty. Falling back to latest "
                     "known offset.\n" + table("GROUP           TOPIC                    PARTITION  NEW-OFFSET",
                                                f"q               {LONG} 0          0",
                                                f"q               {LONG} 1          0",
                                                "q               orders                   1          0"))
    r = run(*cmd, "--describe", "--group", "q")
    assert r.out == table(
        "GROUP           TOPIC                    PARTITION  START-OFFSET  LAG",
        f"q               {LONG} 0          0             3",
        f"q               {LONG} 1          0             0",
        "q               orders                   0          0             0",
        "q               orders                   1          0             7",
        "q               orders                   2          0             0")
    # partitions that are not there
    r = run(*cmd, "--reset-offsets", "--group", "q", "--topic", "orders:7", "--to-earliest", "--execute")
    assert (r.code, r.out, r.err) == (
        1, "", 'Error: Executing share group command failed due to The partitions "orders-7" do not exist\n')
    r = run(*cmd, "--reset-offsets", "--group", "q", "--topic", "nosuch", "--to-earliest", "--execute")
    assert (r.code, r.out, r.err) == (1, "", "Error: Executing share group command failed due to This server does "
                                             "not host this topic-partition.\n")

    # --delete-offsets: whole topics, TOPIC STATUS; then that topic has no offsets left
    r = run(*cmd, "--delete-offsets", "--group", "q", "--topic", "orders", "--topic", "nosuch")
    assert (r.code, r.err) == (1, "")        # UNKNOWN_TOPIC_OR_PARTITION: said in the table only
    assert r.out == table("TOPIC           STATUS",
                          "nosuch          Error: This server does not host this topic-partition.",
                          "orders          Successful")
    r = run(*cmd, "--describe", "--group", "q")
    assert r.out == table("GROUP           TOPIC                    PARTITION  START-OFFSET  LAG",
                          f"q               {LONG} 0          0             3",
                          f"q               {LONG} 1          0             0")
    r = run(*cmd, "--delete-offsets", "--group", "q", "--topic", LONG)
    assert (r.code, r.out, r.err) == (0, table(f"{'TOPIC':<24} STATUS", f"{LONG} Successful"), "")
    r = run(*cmd, "--describe", "--group", "q")
    assert (r.code, r.out, r.err) == (0, "\nShare group 'q' has no offset information.\n", "")
    r = run(*cmd, "--reset-offsets", "--group", "q", "--all-topics", "--to-earliest", "--dry-run")
    assert (r.code, r.out) == (0, table("GROUP           TOPIC           PARTITION  NEW-OFFSET"))

    # a group that is not there: reset creates it (Kafka 4.2+); delete-offsets names the broker's error
    r = run(*cmd, "--delete-offsets", "--group", "fresh", "--topic", "orders")
    assert (r.code, r.err) == (1, "Error: Group fresh not found.\n")
    assert r.out == table("TOPIC           STATUS", "orders          Error: Group fresh not found.")
    r = run(*cmd, "--reset-offsets", "--group", "fresh", "--topic", "orders:1", "--to-earliest", "--execute")
    assert (r.code, r.out) == (0, table("GROUP           TOPIC           PARTITION  NEW-OFFSET",
                                        "fresh           orders          1          0"))
    r = run(*cmd, "--list", "--state")
    assert r.out == "GROUP           STATE\nfresh           Empty\nq               Empty\n"
    r = run(*cmd, "--describe", "--all-groups")
    assert r.out == (table("GROUP           TOPIC           PARTITION  START-OFFSET  LAG",
                           "fresh           orders          1          0             7")
                     + "\nShare group 'q' has no offset information.\n")

    # --delete: DeleteGroups of the empty ones; then they are gone
    r = run(*cmd, "--delete", "--group", "q", "--group", "nosuch")
    assert (r.code, r.out) == (1, "\nThese share groups were deleted successfully: 'q'\n")
    assert r.err.splitlines() == ["Error: Deletion of some share groups failed:",
                                  "* Group 'nosuch' could not be deleted due to: java.lang.IllegalArgumentException: "
                                  "Group 'nosuch' is not a share group."]
    assert run(*cmd, "--list").out == "fresh\n"
    r = run(*cmd, "--delete", "--all-groups")
    assert (r.code, r.out, r.err) == (0, "Deletion of requested share groups ('fresh') was successful.\n", "")
    assert run(*cmd, "--list").out == ""
    r = run(*cmd, "--describe", "--group", "fresh", "--state")
    assert r.err == ("Error: Executing share group command failed due to "
                     "org.apache.kafka.common.errors.GroupIdNotFoundException: Group fresh not found.\n")


# ---------------------------------------------------------------------------------- real share consumers
def test_share_consumers_consume_and_a_reset_to_earliest_brings_the_records_again(groupcoord_factory):
    from confluent_kafka import Producer, ShareConsumer

    gc = groupcoord_factory(topics={"orders": 3})
    bs = gc.bootstrap_servers
    cmd = ("share-groups", "--bootstrap-server", bs)
    gc.call(gc.service.alter_group_configs, "q", {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": bs})
    for i in range(30):
        producer.produce("orders", value=b"%d" % i, partition=i % 3)
    assert producer.flush(10) == 0

    def consume(client_id: str) -> tuple[ShareConsumer, list]:
        """A share consumer that has received every record and acknowledged it (implicitly, by polling
        again until the group's lag is 0 on every partition)."""
        consumer = ShareConsumer({"bootstrap.servers": bs, "group.id": "q", "client.id": client_id})
        try:
            consumer.subscribe(["orders"])
            got, lags = [], None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                got += [(m.partition(), m.offset()) for m in consumer.poll(0.1)]
                if len(got) >= 30:
                    out = run(*cmd, "--describe", "--group", "q").out
                    lags = [line.split()[-1] for line in out.splitlines()[2:]]
                    if lags == ["0", "0", "0"]:
                        break
            assert sorted(got) == sorted((i % 3, i // 3) for i in range(30)) and lags == ["0", "0", "0"], (got, lags)
        except BaseException:
            consumer.close()
            raise
        return consumer, got

    consumer, _ = consume("first")
    try:
        d = describe(bs, "q")
        [member] = d["members"]
        w = max(15, len(member["member_id"]))
        r = run(*cmd, "--describe", "--group", "q", "--members")
        assert r.out == table(
            f"{'GROUP':<15} {'CONSUMER-ID':<{w}} {'HOST':<15} {'CLIENT-ID':<15} #PARTITIONS  ASSIGNMENT",
            f"{'q':<15} {member['member_id']:<{w}} {'/127.0.0.1':<15} {'first':<15} {'3':<12} orders:0,1,2")
        r = run(*cmd, "--reset-offsets", "--group", "q", "--all-topics", "--to-earliest", "--execute")
        assert (r.code, r.out, r.err) == (1, "", "Share group 'q' is not empty.\n")
    finally:
        consumer.close()
    deadline = time.monotonic() + 10
    while describe(bs, "q")["group_state"] != "Empty" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert describe(bs, "q")["group_state"] == "Empty"

    r = run(*cmd, "--reset-offsets", "--group", "q", "--all-topics", "--to-earliest", "--execute")
    assert (r.code, r.err) == (0, "")
    assert r.out == table("GROUP           TOPIC           PARTITION  NEW-OFFSET",
                          *(f"q               orders          {p}          0" for p in range(3)))
    r = run(*cmd, "--describe", "--group", "q")
    assert r.out == table("GROUP           TOPIC           PARTITION  START-OFFSET  LAG",
                          *(f"q               orders          {p}          0             10" for p in range(3)))
    # every record again, to a consumer of the group
    consumer, _ = consume("second")
    consumer.close()
