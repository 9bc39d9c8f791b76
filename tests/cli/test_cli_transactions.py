"""``groupcoord transactions``, Kafka 4.3's kafka-transactions.sh (TransactionsCommand, whose
TransactionsCommandTest gives the tables and messages: ``testListTransactions``,
``testDescribeTransaction``, ``testDescribeTransactionsStartOffsetOrProducerIdRequired``,
``testOldBrokerAbortTransaction...``): the option checks, ``ToolsUtils.prettyPrintTable``'s layout, then
against an embedded three-node service whose transactions are driven with raw requests (InitProducerId,
AddPartitionsToTxn, a transactional Produce at each id's coordinator): ``list`` (every broker asked, the
Coordinator column the broker that listed the id, its filters), ``describe`` (FindCoordinator key type 1,
then DescribeTransactions there), ``abort`` (WriteTxnMarkers at the partition's leader: the last stable
offset moves past the hanging transaction), both spellings (``list`` and ``--list``), and the errors as
one line and exit code 1. The admin client's calls are checked beside the command's output."""
from __future__ import annotations

import asyncio
import re
import socket
import struct

import pytest
from test_cli_groups_topics import free_port, run
from test_cli_share_groups import _service_logs_beside_the_output  # noqa: F401 (autouse: logs off the output)

from groupcoord.client.admin import AdminClient, TransactionDescription, TransactionListing
from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.cli import main
from groupcoord.client.transactions_cli import DESCRIBE_HEADERS, LIST_HEADERS, pretty_table
from groupcoord.protocol import frames
from groupcoord.protocol.errors import ErrorCode, KafkaError
from groupcoord.protocol.records import Record, encode_batch

ONE_COMMAND = "Command must include exactly one command: list, describe, abort (or --list, --describe)"
PRODUCE, LIST_OFFSETS, FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS = 0, 2, 10, 22, 24


# ---------------------------------------------------------------------------------- helpers
def rpc(address: str, api_key: int, version: int, body: dict) -> dict:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(frames.encode_request(api_key, version, 1, body, "producer"))
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


class Cluster:
    """The embedded service's brokers by node id, and a transactional producer's steps as raw requests."""

    def __init__(self, gc):
        self.gc = gc
        self.addresses = gc.bootstrap_servers.split(",")
        self.bootstrap = self.addresses[0]

    def coordinator(self, txn_id: str) -> int:
        r = rpc(self.bootstrap, FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [txn_id]})
        entry = r["coordinators"][0]
        assert entry["error_code"] == 0, entry
        return entry["node_id"]

    def leader(self, topic: str, partition: int) -> int:
        return self.gc.call(self.gc.service.cluster.leader_for, topic, partition)

    def init(self, txn_id: str, timeout_ms: int = 60000) -> tuple[int, int]:
        r = rpc(self.addresses[self.coordinator(txn_id)], INIT_PRODUCER_ID, 4, {
            "transactional_id": txn_id, "transaction_timeout_ms": timeout_ms, "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == 0, r
        return r["producer_id"], r["producer_epoch"]

    def add(self, txn_id: str, pid: int, epoch: int, topic: str, *partitions: int) -> None:
        r = rpc(self.addresses[self.coordinator(txn_id)], ADD_PARTITIONS, 3, {
            "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}]})
        codes = [p["partition_error_code"] for t in r["results_by_topic_v3_and_below"] for p in t["results_by_partition"]]
        assert codes == [0] * len(partitions), r

    def produce(self, txn_id: str, pid: int, epoch: int, topic: str, partition: int) -> None:
        batch = encode_batch([Record(0, 0, None, b"v", [])], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                             transactional=True)
        r = rpc(self.addresses[self.leader(topic, partition)], PRODUCE, 9, {
            "transactional_id": txn_id, "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0, r

    def last_stable_offset(self, topic: str, partition: int) -> int:
        """ListOffsets LATEST at read_committed: the partition's last stable offset."""
        r = rpc(self.addresses[self.leader(topic, partition)], LIST_OFFSETS, 5, {
            "replica_id": -1, "isolation_level": 1, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}]})
        p = r["topics"][0]["partitions"][0]
        assert p["error_code"] == 0, r
        return p["offset"]


def ids_on_two_coordinators(cluster: Cluster) -> tuple[str, str]:
    """Two transactional ids whose coordinators differ."""
    first = cluster.coordinator("billing-1")
    for i in range(2, 100):
        other = f"billing-{i}"
        if cluster.coordinator(other) != first:
            return "billing-1", other
    raise AssertionError("every id on one coordinator")


@pytest.fixture
def cluster(groupcoord_factory):
    return Cluster(groupcoord_factory(nodes=3, topics={"orders": 2}))


def rows(text: str) -> list[list[str]]:
    """prettyPrintTable's lines split at its tabs (every value is followed by one)."""
    out = []
    for line in text.splitlines():
        assert line.endswith("\t"), repr(line)
        out.append([v.rstrip(" ") for v in line[:-1].split("\t")])
    return out


# ---------------------------------------------------------------------------------- options
@pytest.mark.parametrize("argv, message", [
    ([], ONE_COMMAND),
    (["--list", "--describe", "--transactional-id", "t"], ONE_COMMAND),
    (["--list", "describe", "--transactional-id", "t"], ONE_COMMAND),
    (["--describe"], "--describe needs --transactional-id"),
    (["--list", "--transactional-id", "t"], "--transactional-id is not an option of --list"),
    (["--describe", "--transactional-id", "t", "--duration-filter", "5"], "--duration-filter is not an option of "
                                                                            "--describe"),
])
def test_commands_that_do_not_go_together_are_refused(argv, message):
    r = run("transactions", "--bootstrap-server", f"127.0.0.1:{free_port()}", *argv)
    assert (r.code, r.out) == (2, "")
    assert r.err.splitlines() == [message, "See 'groupcoord transactions --help'."]


def test_describe_requires_the_transactional_id_as_argparse4j_does(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["transactions", "--bootstrap-server", f"127.0.0.1:{free_port()}", "describe"])
    assert exited.value.code == 2
    assert "the following arguments are required: --transactional-id" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    # TransactionsCommandTest.testOldBrokerAbortTransactionWithUnknownCoordinatorEpoch's siblings: what is missing
    ((), "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or "
         "with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"),
    (("--producer-id", "5"), "Missing required argument --producer-epoch"),
    (("--producer-id", "5", "--producer-epoch", "1"), "Missing required argument --coordinator-epoch"),
    (("--start-offset", "0"), "--start-offset needs DescribeProducers, which groupcoord's admin client does not "
                              "speak: give --producer-id, --producer-epoch and --coordinator-epoch (groupcoord "
                              "transactions describe shows the producer id and epoch)"),
])
def test_abort_needs_the_producer_before_connecting(extra, message):
    r = run("transactions", "--bootstrap-server", f"127.0.0.1:{free_port()}", "abort", "--topic", "orders",
            "--partition", "0", *extra)
    assert (r.code, r.out, r.err) == (1, "", message + "\n")


def test_pretty_print_table_pads_each_column_to_its_widest_and_ends_each_value_with_a_tab():
    # ToolsUtils.prettyPrintTable, as TransactionsCommandTest.assertNormalExit reads it back (split on \t)
    out = pretty_table(("TransactionalId", "Coordinator"), [("t-with-a-long-id", "0"), ("u", "12")])
    assert out == ("TransactionalId \tCoordinator\t\n"
                   "t-with-a-long-id\t0          \t\n"
                   "u               \t12         \t\n")
    assert pretty_table(LIST_HEADERS, []) == "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n"


def test_an_unreachable_bootstrap_server_is_one_line_and_exit_1():
    address = f"127.0.0.1:{free_port()}"
    r = run("transactions", "--bootstrap-server", address, "--timeout", "500", "list")
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Failed to list transactions: Cannot connect to the bootstrap server {address} "
                     "(Connection refused). Enable debug logging for additional detail.\n")


# ---------------------------------------------------------------------------------- list
def test_list_asks_every_broker_and_names_the_coordinator_of_each_id(cluster):
    # TransactionsCommandTest.testListTransactions: a row per listing, the Coordinator column its broker
    ongoing, empty = ids_on_two_coordinators(cluster)
    pid, epoch = cluster.init(ongoing)
    cluster.add(ongoing, pid, epoch, "orders", 0, 1)
    other_pid, _ = cluster.init(empty)
    expected = sorted([[ongoing, str(cluster.coordinator(ongoing)), str(pid), "Ongoing"],
                       [empty, str(cluster.coordinator(empty)), str(other_pid), "Empty"]], key=lambda r: int(r[1]))
    for spelling in (("list",), ("--list",)):
        r = run("transactions", "--bootstrap-server", cluster.bootstrap, *spelling)
        assert (r.code, r.err) == (0, ""), r.err
        assert rows(r.out) == [list(LIST_HEADERS), *expected]

    by_broker = asyncio.run(_list(cluster.bootstrap))
    assert sorted(by_broker) == [0, 1, 2]           # every broker asked, those without ids too
    assert by_broker[cluster.coordinator(ongoing)] == [TransactionListing(ongoing, pid, "Ongoing")]
    assert asyncio.run(_list(cluster.bootstrap, states=["Empty"])) == {
        n: ([TransactionListing(empty, other_pid, "Empty")] if n == cluster.coordinator(empty) else []) for n in range(3)}


async def _list(bootstrap: str, **filters):
    async with AdminClient(bootstrap) as admin:
        return await admin.list_transactions(**filters)


def test_list_filters_by_pattern_and_duration(cluster):
    ongoing, empty = ids_on_two_coordinators(cluster)
    pid, epoch = cluster.init(ongoing)
    cluster.add(ongoing, pid, epoch, "orders", 0)
    cluster.init(empty)
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "list", "--transactional-id-pattern",
            re.escape(ongoing))
    assert [row[0] for row in rows(r.out)[1:]] == [ongoing]
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "--list", "--transactional-id-pattern", "billing-.*")
    assert sorted(row[0] for row in rows(r.out)[1:]) == sorted([ongoing, empty])
    # the open transaction has not run for an hour; an id without one (start time -1) passes any duration
    # filter, as in Kafka's TransactionStateManager.listTransactionStates
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "list", "--duration-filter", "3600000")
    assert (r.code, [row[0] for row in rows(r.out)]) == (0, ["TransactionalId", empty])
    # ListTransactions' INVALID_REGULAR_EXPRESSION fails the listing, with the broker named
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "list", "--transactional-id-pattern", "(")
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith("Failed to list transactions: ListTransactions request sent to broker 0 failed with an "
                            "unexpected exception. Enable debug logging")


# ---------------------------------------------------------------------------------- describe
def test_describe_finds_the_coordinator_of_the_id_and_shows_its_transaction(cluster):
    # TransactionsCommandTest.testDescribeTransaction: the columns of DescribeTransactionsCommand.HEADERS
    txn_id, _ = ids_on_two_coordinators(cluster)
    pid, epoch = cluster.init(txn_id, timeout_ms=45000)
    cluster.add(txn_id, pid, epoch, "orders", 1, 0)
    for spelling in (("describe", "--transactional-id", txn_id), ("--describe", "--transactional-id", txn_id)):
        r = run("transactions", "--bootstrap-server", cluster.bootstrap, *spelling)
        assert (r.code, r.err) == (0, ""), r.err
        header, row = rows(r.out)
        assert header == list(DESCRIBE_HEADERS)
        values = dict(zip(header, row))
        start, duration = int(values.pop("CurrentTransactionStartTimeMs")), int(values.pop("TransactionDurationMs"))
        assert values == {"CoordinatorId": str(cluster.coordinator(txn_id)), "TransactionalId": txn_id,
                          "ProducerId": str(pid), "ProducerEpoch": str(epoch), "TransactionState": "Ongoing",
                          "TransactionTimeoutMs": "45000", "TopicPartitions": "orders-0,orders-1"}
        assert start > 0 and 0 <= duration < 60000

    described = asyncio.run(_describe(cluster.bootstrap, [txn_id]))[txn_id]
    assert isinstance(described, TransactionDescription)
    assert (described.coordinator_id, described.state, described.producer_id, described.topic_partitions) == (
        cluster.coordinator(txn_id), "Ongoing", pid, (TP("orders", 0), TP("orders", 1)))


async def _describe(bootstrap: str, ids):
    async with AdminClient(bootstrap) as admin:
        return await admin.describe_transactions(ids)


def test_describe_of_an_unknown_id_fails_with_kafkas_message(cluster):
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "describe", "--transactional-id", "nosuch")
    assert (r.code, r.out) == (1, "")
    assert r.err == ("Failed to describe transaction state of transactional-id `nosuch`: DescribeTransactions "
                     "request for transactionalId `nosuch` failed because the ID could not be found. Enable debug "
                     "logging for additional detail.\n")
    error = asyncio.run(_describe(cluster.bootstrap, ["nosuch"]))["nosuch"]
    assert isinstance(error, KafkaError) and error.code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


# ---------------------------------------------------------------------------------- abort
def test_abort_writes_an_abort_marker_at_the_partitions_leader(cluster):
    # the hanging transaction's records hold the last stable offset back until the marker is written
    txn_id, _ = ids_on_two_coordinators(cluster)
    pid, epoch = cluster.init(txn_id)
    cluster.add(txn_id, pid, epoch, "orders", 1)
    cluster.produce(txn_id, pid, epoch, "orders", 1)
    assert cluster.last_stable_offset("orders", 1) == 0
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "abort", "--topic", "orders", "--partition", "1",
            "--producer-id", str(pid), "--producer-epoch", str(epoch), "--coordinator-epoch", "-1")
    assert (r.code, r.out, r.err) == (0, "", "")
    assert cluster.last_stable_offset("orders", 1) == 2          # the record, then the abort marker


def test_abort_with_a_stale_producer_epoch_fails_with_kafkas_message(cluster):
    txn_id, _ = ids_on_two_coordinators(cluster)
    pid, _ = cluster.init(txn_id)
    pid, epoch = cluster.init(txn_id)                            # epoch 1: the marker of epoch 0 is stale
    cluster.add(txn_id, pid, epoch, "orders", 0)
    cluster.produce(txn_id, pid, epoch, "orders", 0)
    r = run("transactions", "--bootstrap-server", cluster.bootstrap, "abort", "--topic", "orders", "--partition", "0",
            "--producer-id", str(pid), "--producer-epoch", str(epoch - 1), "--coordinator-epoch", "0")
    spec = (f"AbortTransactionSpec(topicPartition=orders-0, producerId={pid}, producerEpoch={epoch - 1}, "
            "coordinatorEpoch=0)")
    assert (r.code, r.out) == (1, "")
    assert r.err == (f"Failed to abort transaction {spec}: WriteTxnMarkers request with {spec} failed due an invalid "
                     "producer epoch. Enable debug logging for additional detail.\n")
    assert cluster.last_stable_offset("orders", 0) == 0
