"""``groupcoord groups`` and ``groupcoord topics`` without client libraries: option checks with
Kafka's messages, the parsers of dates, durations and reset plans, the tables' exact layout, the
topics command against an embedded coordinator, and the errors (unreachable server, unknown
group, unknown topic) as one line and an exit code. The groups' offsets, members and resets with
real consumers are in tests/interop/test_interop_cli.py."""
from __future__ import annotations

import io
import socket
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import pytest

from groupcoord.client.admin_cli import (
    assignment_string, fmt, parse_datetime, parse_duration_ms, print_reset_plan, read_reset_plan,
)
from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(*argv: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return Result(code, out.getvalue(), err.getvalue())


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------- options
@pytest.mark.parametrize("argv, message", [
    ([], "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"),
    (["--list", "--describe"], "Command must include exactly one action"),
    (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]"),
    (["--describe", "--group", "g", "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--describe", "--group", "g", "--state", "stable"], "Option [describe] does not take a value for [state]"),
    (["--list", "--members"], "Option(s) [members] are unavailable given other options on the command line"),
    (["--describe", "--group", "g", "--type"], "Option(s) [type] are unavailable"),
    (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
    (["--describe", "--group", "g", "--all-groups"], 'Option "[group]" can\'t be used with option "[all-groups]"'),
    (["--describe", "--group", "g", "--topic", "t"], 'Option "[topic]" can\'t be used with option "[describe]"'),
    (["--delete", "--group", "g", "--topic", "t"],
     "The consumer does not support topic-specific offset deletion from a consumer group."),
    (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--reset-offsets", "--group", "g", "--all-topics"],
     "Option '[reset-offsets]' requires one of the following scenarios: [[to-offset], [shift-by], [to-datetime], "
     "[by-duration], [to-earliest], [to-latest], [to-current], [from-file]]"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-offset", "3"],
     'Option "[to-offset]" can\'t be used with option "[to-earliest]"'),
    (["--reset-offsets", "--group", "g", "--to-earliest"],
     "One of the reset scopes should be defined: --all-topics, --topic."),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run", "--execute"],
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (["--reset-offsets", "--all-topics", "--to-earliest"],
     "Option [reset-offsets] takes one of these options: [group], [all-groups]"),
    (["--describe", "--group", "g", "--to-earliest"], 'Option "[to-earliest]" can\'t be used with option "[describe]"'),
])
def test_option_combinations_kafka_refuses_are_refused_with_its_message(argv, message):
    # checked before connecting: the bootstrap server is never reached
    r = run("groups", "--bootstrap-server", f"127.0.0.1:{free_port()}", *argv)
    assert r.code == 2
    assert r.out == ""
    first = r.err.splitlines()[0]
    assert first.startswith(message), first
    assert "Traceback" not in r.err


@pytest.mark.parametrize("argv, message", [
    (["--list", "--state", "stable,sleepy"],
     "Invalid state list 'stable,sleepy'. Valid states are: PreparingRebalance, CompletingRebalance, Stable, Dead, "
     "Empty, Assigning, Reconciling"),
    (["--list", "--type", "share"], "Invalid types list 'share'. Valid types are: Consumer, Classic"),
    (["--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "yesterday"],
     "Error parsing timestamp 'yesterday'"),
    (["--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "1h"],
     "Text cannot be parsed to a Duration: 1h"),
])
def test_values_kafka_cannot_parse_are_refused(groupcoord, argv, message):
    r = run("groups", "--bootstrap-server", groupcoord.bootstrap_servers, "--dry-run", *argv) \
        if "--reset-offsets" in argv else run("groups", "--bootstrap-server", groupcoord.bootstrap_servers, *argv)
    assert r.code == 2, r
    assert message in r.err


def test_topics_option_combinations_are_refused():
    port = free_port()
    for argv, message in [
        ([], "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
        (["--create"], 'Missing required argument "[topic]"'),
        (["--alter", "--partitions", "3"], 'Missing required argument "[topic]"'),
        (["--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
        (["--alter", "--topic", "t", "--partitions", "3", "--config", "a=b"],
         'Option combination "[bootstrap-server, config]" can\'t be used with option "[alter]" (To alter topic '
         'configurations, the kafka-configs tool can be used.)'),
        (["--delete"], 'Missing required argument "[topic]"'),
        (["--list", "--partitions", "3"], 'Option "[partitions]" can\'t be used with option "[list]"'),
        (["--describe", "--if-not-exists"], 'Option "[if-not-exists]" can\'t be used with option "[describe]"'),
        (["--create", "--topic", "t", "--exclude-internal"],
         'Option "[exclude-internal]" can\'t be used with option "[create]"'),
    ]:
        r = run("topics", "--bootstrap-server", f"127.0.0.1:{port}", *argv)
        assert (r.code, r.err.splitlines()[0]) == (2, message)


# ---------------------------------------------------------------------------------- parsers and layout
def test_datetimes_are_read_as_kafka_reads_them():
    assert parse_datetime("2024-03-01T12:00:00.000") == 1709294400000               # no zone: UTC
    assert parse_datetime("2024-03-01T12:00:00.250Z") == 1709294400250
    assert parse_datetime("2024-03-01T14:00:00.000+02:00") == 1709294400000
    assert parse_datetime("2024-03-01T14:00:00.000+0200") == 1709294400000
    assert parse_datetime("2024-03-01T07:00:00.000-05") == 1709294400000


def test_durations_are_read_as_java_duration_parse():
    assert parse_duration_ms("PT1H") == 3_600_000
    assert parse_duration_ms("P1DT2H3M4.5S") == ((26 * 60 + 3) * 60 + 4) * 1000 + 500
    assert parse_duration_ms("pt30m") == 1_800_000
    assert parse_duration_ms("-PT10S") == -10_000
    for bad in ("P", "PT", "1H", "P1H"):
        with pytest.raises(Exception, match="Text cannot be parsed to a Duration"):
            parse_duration_ms(bad)


def test_reset_plans_are_read_in_both_csv_layouts(tmp_path):
    one = tmp_path / "one.csv"
    one.write_text("orders,0,5\norders,1,7\n\n")
    assert read_reset_plan(str(one), ["g"]) == {"g": {TP("orders", 0): 5, TP("orders", 1): 7}}
    several = tmp_path / "several.csv"
    several.write_text("g1,orders,0,5\ng2,orders,2,9\n")
    assert read_reset_plan(str(several), ["g1", "g2"]) == {"g1": {TP("orders", 0): 5}, "g2": {TP("orders", 2): 9}}


def test_columns_are_laid_out_as_javas_printf():
    assert fmt(("GROUP", 15), ("TOPIC", 15), ("PARTITION", 10), ("NEW-OFFSET", None)) == \
        "GROUP           TOPIC           PARTITION  NEW-OFFSET"
    # a value longer than its column pushes the rest right, as %-15s does
    assert fmt(("a-very-long-group-name", 15), ("t", 15), (0, None)) == "a-very-long-group-name t               0"
    assert assignment_string([TP("b", 1), TP("a", 2), TP("b", 0), TP("a", 0)]) == "a:0,2;b:0,1"
    out = io.StringIO()
    with redirect_stdout(out):
        print_reset_plan({"billing": {TP("orders", 1): 7, TP("orders", 0): 3}})
    assert out.getvalue() == ("\nGROUP           TOPIC           PARTITION  NEW-OFFSET\n"
                              "billing         orders          0          3\n"
                              "billing         orders          1          7\n")


# ---------------------------------------------------------------------------------- errors
def test_an_unreachable_bootstrap_server_is_one_line_and_exit_1():
    port = free_port()
    r = run("groups", "--bootstrap-server", f"127.0.0.1:{port}", "--list")
    assert r.code == 1
    assert r.out == ""
    assert r.err == (f"Error: Executing consumer group command failed due to Cannot connect to the bootstrap "
                     f"server 127.0.0.1:{port} (Connection refused)\n")
    r = run("topics", "--bootstrap-server", f"127.0.0.1:{port}", "--list")
    assert (r.code, r.err) == (1, f"Error while executing topic command : Cannot connect to the bootstrap server "
                                  f"127.0.0.1:{port} (Connection refused)\n")


@pytest.mark.parametrize("view", [[], ["--offsets"], ["--members"], ["--members", "--verbose"], ["--state"]])
def test_describing_a_group_that_does_not_exist(groupcoord, view):
    r = run("groups", "--bootstrap-server", groupcoord.bootstrap_servers, "--describe", "--group", "missing.group",
            *view)
    assert (r.code, r.out, r.err) == (1, "", "Error: Consumer group 'missing.group' does not exist.\n")


def test_deleting_groups_that_do_not_exist(groupcoord):
    r = run("groups", "--bootstrap-server", groupcoord.bootstrap_servers, "--delete", "--group", "nope")
    assert r.code == 1
    assert r.err.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        "* Group 'nope' could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException: "
        "The group id does not exist."]


def test_no_groups_listed_on_a_fresh_cluster(groupcoord):
    r = run("groups", "--bootstrap-server", groupcoord.bootstrap_servers, "--list")
    assert (r.code, r.out, r.err) == (0, "", "")
    r = run("groups", "--bootstrap-server", groupcoord.bootstrap_servers, "--list", "--state")
    assert (r.code, r.out) == (0, f"{'GROUP':<25} {'STATE':<20}\n")


# ---------------------------------------------------------------------------------- topics
def test_topics_are_created_listed_described_and_deleted(groupcoord_factory):
    gc = groupcoord_factory(nodes=3, topics={"orders": 3})
    bootstrap = gc.bootstrap_servers.split(",")[0]       # one node: the others are found through Metadata
    topics = ("topics", "--bootstrap-server", bootstrap)

    r = run(*topics, "--create", "--topic", "payments", "--partitions", "4")
    assert (r.code, r.out, r.err) == (0, "Created topic payments.\n", "")
    r = run(*topics, "--create", "--topic", "payments", "--partitions", "4")
    assert (r.code, r.err) == (1, "Error while executing topic command : Topic 'payments' already exists.\n")
    assert run(*topics, "--create", "--topic", "payments", "--if-not-exists").code == 0
    r = run(*topics, "--create", "--topic", "audit.log_v1")
    assert r.out.startswith("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore")
    assert run(*topics, "--list").out == "audit.log_v1\norders\npayments\n"

    r = run(*topics, "--describe", "--topic", "payments")
    lines = r.out.splitlines()
    topic = gc.call(lambda: gc.service.cluster.topics["payments"])
    assert lines[0].split("\t") == ["Topic: payments", f"TopicId: {_kafka_uuid(topic.topic_id)}", "PartitionCount: 4",
                                    "ReplicationFactor: 1", "Configs: "]
    assert len(lines) == 5
    for p, line in enumerate(lines[1:]):
        leader = gc.call(gc.service.cluster.leader_for, "payments", p)
        assert line.split("\t") == ["", "Topic: payments", f"Partition: {p}", f"Leader: {leader}",
                                    f"Replicas: {leader}", f"Isr: {leader}", "Elr: N/A", "LastKnownElr: N/A"]
    # --topic is a regular expression (commas are alternatives)
    r = run(*topics, "--describe", "--topic", "pay.*,orders")
    assert [line.split("\t")[0] for line in r.out.splitlines() if line.startswith("Topic:")] == \
        ["Topic: orders", "Topic: payments"]

    r = run(*topics, "--delete", "--topic", "payments")
    assert (r.code, r.out, r.err) == (0, "", "")
    assert "payments" not in gc.call(lambda: set(gc.service.cluster.topics))
    r = run(*topics, "--delete", "--topic", "payments")
    assert (r.code, r.err) == (1, "Topic 'payments' does not exist as expected\n")
    assert run(*topics, "--delete", "--topic", "payments", "--if-exists").code == 0
    r = run(*topics, "--describe", "--topic", "nope")
    assert (r.code, r.err) == (1, "Topic 'nope' does not exist as expected\n")
    r = run(*topics, "--create", "--topic", "zero", "--partitions", "0")
    assert (r.code, r.err) == (1, "The partitions must be greater than 0\n")

    # --alter --partitions: CreatePartitions, Kafka's refusals as kafka-topics.sh prints them
    r = run(*topics, "--alter", "--topic", "orders", "--partitions", "5")
    assert (r.code, r.out, r.err) == (0, "", "")
    assert gc.call(lambda: gc.service.cluster.topics["orders"].partition_count) == 5
    r = run(*topics, "--alter", "--topic", "orders", "--partitions", "2")
    assert (r.code, r.err) == (1, "Error while executing topic command : The topic orders currently has 5 "
                                  "partition(s); 2 would not be an increase.\n")
    r = run(*topics, "--alter", "--topic", "nope", "--partitions", "2")
    assert (r.code, r.err) == (1, "Topic 'nope' does not exist as expected\n")
    assert run(*topics, "--alter", "--topic", "nope", "--partitions", "2", "--if-exists").code == 0


def _kafka_uuid(u) -> str:
    import base64
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")
