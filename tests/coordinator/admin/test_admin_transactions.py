"""GET /api/transactions, GET /api/transactions/{id} and POST /api/transactions/{id}/abort while
transactional producers (tests/coordinator/txn_client.py: their requests handed to the running service)
begin, write, commit offsets into a group and end their transactions: what ListTransactions and
DescribeTransactions tell (``kafka-transactions.sh list``/``describe``, Kafka's
``TransactionsCommandTest``), with each partition's LSO and the pending transactional offsets per group."""
from __future__ import annotations

import aiohttp
import pytest
from txn_client import TxnClient

from groupcoord.coordinator.embed import running
from groupcoord.protocol.errors import ErrorCode as E

from admin_helpers import Http

GROUP = "billing"


def settle(gc) -> None:
    """Run the timers due now: the markers of a transaction that ended."""
    gc.service.advance()


async def test_an_open_transaction_listed_and_described_then_committed(admin_gc, admin_http):
    gc = admin_gc
    tx = TxnClient(gc.service, "pipeline-1")
    assert tx.init(timeout_ms=60_000) == E.NONE
    assert await admin_http.get("/api/transactions") == (200, [{
        "transactional_id": "pipeline-1", "producer_id": tx.producer_id, "producer_epoch": tx.producer_epoch,
        "state": "Empty", "timeout_ms": 60_000, "start_time_ms": None,
        "last_update_ms": gc.service.transactions.transactions["pipeline-1"].last_update_ms, "duration_ms": None,
        "past_timeout": False, "partitions": 0, "pending_offsets": 0,
        "coordinator": {"partition": gc.service.transactions.partition_for("pipeline-1"), "node": 0}}])

    # a record in orders-0 (none in orders-1), offsets of the group in the transaction
    assert tx.add_partitions("orders", 0, 1) == {("orders", 0): E.NONE, ("orders", 1): E.NONE}
    assert tx.produce("orders", 0, 3) == (E.NONE, 0)
    assert tx.add_offsets(GROUP) == E.NONE
    assert tx.commit_offsets(GROUP, {("audit", 1): 42}) == [E.NONE]
    status, [summary] = await admin_http.get("/api/transactions")
    assert status == 200
    assert (summary["state"], summary["partitions"], summary["pending_offsets"]) == ("Ongoing", 3, 1)
    assert summary["duration_ms"] >= 0 and summary["start_time_ms"] is not None and not summary["past_timeout"]

    offsets_partition = gc.service.group_coordinator.partition_of(GROUP)
    status, detail = await admin_http.get("/api/transactions/pipeline-1")
    assert status == 200
    assert detail["timeout_deadline_ms"] == detail["start_time_ms"] + 60_000
    assert detail["pending_offsets"] == [{"group_id": GROUP, "offsets": [
        {"topic": "audit", "partition": 1, "offset": 42, "leader_epoch": -1, "metadata": ""}]}]
    assert detail["partitions"] == [
        {"topic": "__consumer_offsets", "partition": offsets_partition, "kind": "offsets", "groups": [GROUP],
         "log_end_offset": None, "last_stable_offset": None, "first_offset": None, "unstable": False},
        # the LSO stays at the transaction's first offset until its marker
        {"topic": "orders", "partition": 0, "kind": "data", "groups": [], "log_end_offset": 3,
         "last_stable_offset": 0, "first_offset": 0, "unstable": True},
        {"topic": "orders", "partition": 1, "kind": "data", "groups": [], "log_end_offset": 0,
         "last_stable_offset": 0, "first_offset": None, "unstable": False},
    ]

    assert tx.end(commit=True) == E.NONE
    settle(gc)
    status, detail = await admin_http.get("/api/transactions/pipeline-1")
    assert (detail["state"], detail["partitions"], detail["pending_offsets"], detail["duration_ms"]) == (
        "CompleteCommit", [], [], None)
    log = gc.service.cluster.log("orders", 0)
    assert log.last_stable_offset == log.log_end_offset == 4          # the commit marker at offset 3
    assert gc.service.group_coordinator.offsets.of(GROUP)["audit"][1].committed_offset == 42


async def test_list_filters_as_list_transactions(admin_gc, admin_http):
    gc = admin_gc
    a, b = TxnClient(gc.service, "etl-a"), TxnClient(gc.service, "other-b", conn=8)
    assert a.init() == b.init() == E.NONE
    assert a.add_partitions("orders", 2) == {("orders", 2): E.NONE}

    async def ids(query: str) -> list[str]:
        status, body = await admin_http.get("/api/transactions" + query)
        assert status == 200, body
        return [t["transactional_id"] for t in body]

    assert await ids("") == ["etl-a", "other-b"]
    assert await ids("?state=Ongoing") == ["etl-a"]
    assert await ids("?state=Empty,Ongoing") == await ids("?state=Empty&state=Ongoing") == ["etl-a", "other-b"]
    assert await ids("?state=CompleteCommit") == []
    assert await ids(f"?producer_id={b.producer_id}") == ["other-b"]
    assert await ids("?producer_id=123456789") == []
    assert await ids("?pattern=etl-.*") == ["etl-a"]
    assert await ids("?pattern=etl") == []            # the whole id must match, as Kafka's
    # begun longer ago than an hour: none; an Empty id has no start time, and Kafka's filter
    # (now - txnStartTimestamp > duration) lets it through
    assert await ids("?min_duration_ms=3600000") == ["other-b"]
    assert await ids("?min_duration_ms=3600000&state=Ongoing") == []

    for query, words in [("?state=Running", "unknown transaction state Running"),
                         ("?producer_id=x", "producer_id must match"),
                         ("?min_duration_ms=-1", "min_duration_ms must match"),
                         ("?pattern=(", "is not a valid regular expression")]:
        status, body = await admin_http.get("/api/transactions" + query)
        assert (status, body["error"]) == (400, "invalid_request"), query
        assert words in body["message"] and "\n" not in body["message"], body


async def test_unknown_transactional_id_is_a_404(admin_http):
    for method, path in [("GET", "/api/transactions/nobody"), ("POST", "/api/transactions/nobody/abort")]:
        status, body = await admin_http.call(method, path)
        assert (status, body) == (404, {"error": "transactional_id_not_found",
                                        "message": "Transactional id nobody not found."})


async def test_abort_fences_the_producer_as_the_timeout_would(admin_gc, admin_http, admin_events):
    """TransactionCoordinatorTest.shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch, asked by an
    operator: the epoch bumped, the abort marker written, the pending offsets dropped, the old producer
    fenced."""
    gc = admin_gc
    tx = TxnClient(gc.service, "stuck")
    assert tx.init() == E.NONE
    assert tx.add_partitions("orders", 0) == {("orders", 0): E.NONE}
    assert tx.produce("orders", 0, 2) == (E.NONE, 0)
    assert tx.add_offsets(GROUP) == E.NONE
    assert tx.commit_offsets(GROUP, {("orders", 0): 2}) == [E.NONE]

    status, detail = await admin_http.post("/api/transactions/stuck/abort")
    assert status == 200, detail
    assert detail["state"] in ("PrepareAbort", "CompleteAbort")
    assert detail["producer_epoch"] == tx.producer_epoch + 1
    settle(gc)
    status, detail = await admin_http.get("/api/transactions/stuck")
    assert (detail["state"], detail["pending_offsets"]) == ("CompleteAbort", [])
    [fenced] = [e for e in admin_events if e["event"] == "transaction.fenced"]
    assert (fenced["transactional_id"], fenced["cause"]) == ("stuck", "admin")
    log = gc.service.cluster.log("orders", 0)
    assert log.last_stable_offset == log.log_end_offset == 3 and len(log.aborted_transactions(0, 3)) == 1
    assert "orders" not in gc.service.group_coordinator.offsets.of(GROUP)

    assert tx.end(commit=True) == E.PRODUCER_FENCED           # the zombie
    status, body = await admin_http.post("/api/transactions/stuck/abort")
    assert (status, body["error"]) == (409, "invalid_txn_state")
    assert body["message"] == "transactional id stuck has no open transaction (it is CompleteAbort)"


async def test_abort_needs_the_token_when_there_is_one():
    async with running(http=True, http_token="s3cret", topics={"orders": 1}) as gc, \
            aiohttp.ClientSession() as session:
        tx = TxnClient(gc.service, "t")
        assert tx.init() == E.NONE and tx.add_partitions("orders", 0) == {("orders", 0): E.NONE}
        http = Http(session, gc.admin_url)
        assert (await http.post("/api/transactions/t/abort"))[0] == 401
        assert gc.service.transactions.transactions["t"].state == "Ongoing"
        assert (await http.post("/api/transactions/t/abort", token="s3cret"))[0] == 200


async def test_past_timeout_until_the_coordinator_aborts_it():
    """The coordinator's check runs every transaction.abort.timed.out.transaction.cleanup.interval.ms: in
    between, an expired transaction is shown past its timeout."""
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 3_600_000}
    async with running(http=True, topics={"orders": 1}, config=config) as gc, aiohttp.ClientSession() as session:
        http = Http(session, gc.admin_url)
        tx = TxnClient(gc.service, "slow")
        assert tx.init(timeout_ms=1) == E.NONE
        assert tx.add_partitions("orders", 0) == {("orders", 0): E.NONE}
        meta = gc.service.transactions.transactions["slow"]
        while gc.service.clock() <= meta.start_ms + 1:      # (1 ms of the wall clock)
            pass
        status, [summary] = await http.get("/api/transactions")
        assert (summary["state"], summary["past_timeout"]) == ("Ongoing", True)
        assert gc.service.transactions.abort_timed_out_transactions() == 1
        status, [summary] = await http.get("/api/transactions")
        assert summary["past_timeout"] is False and summary["state"] in ("PrepareAbort", "CompleteAbort")


@pytest.mark.parametrize("path", ["/api/transactions", "/api/transactions/{transactional_id}",
                                  "/api/transactions/{transactional_id}/abort"])
async def test_the_openapi_document_has_them(admin_http, path):
    status, doc = await admin_http.get("/openapi.json")
    assert status == 200 and path in doc["paths"]
    for operation in doc["paths"][path].values():
        assert operation["tags"] == ["transactions"]
        assert ("404" in operation["responses"]) == ("{transactional_id}" in path)
