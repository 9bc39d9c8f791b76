"""/metrics while transactional producers (tests/coordinator/txn_client.py, their requests handed to the
running service) open, commit, abort and time out transactions: the counters follow the ``transaction.*``
events, the gauges the transaction coordinator and the partitions at scrape time (Kafka's ReplicaManager
ProducerIdCount and PartitionsWithLateTransactionsCount among them)."""
from __future__ import annotations

import aiohttp
import pytest
from txn_client import TxnClient

from groupcoord.coordinator.embed import running
from groupcoord.protocol.errors import ErrorCode as E

from observability_support import scrape

STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
          "PrepareEpochFence")
#: the coordinator's own check of timed-out transactions is left to the test
CONFIG = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 3_600_000}


async def test_transaction_metrics_follow_transactions():
    async with running(http=True, topics={"orders": 2}, config=CONFIG) as gc, aiohttp.ClientSession() as http:
        svc = gc.service
        before = await scrape(http, gc.admin_url)
        assert before.by_label("groupcoord_transaction_count", "state") == dict.fromkeys(STATES, 0)
        for name in ("open_transactions", "pending_transactional_offsets", "partitions_with_unstable_offsets",
                     "producer_id_count", "transactions_started_total", "transactions_timed_out_total",
                     "oldest_open_transaction_age_seconds", "partitions_with_late_transactions_count"):
            assert before.value("groupcoord_" + name) == 0, name

        # one transaction open with a record in each partition and an offset pending; one committed; one
        # open past its timeout
        a, b, c = (TxnClient(svc, t, conn=n) for n, t in enumerate(("a", "b", "c"), 1))
        assert a.init() == b.init() == E.NONE and c.init(timeout_ms=1) == E.NONE
        assert a.add_partitions("orders", 0, 1) == {("orders", 0): E.NONE, ("orders", 1): E.NONE}
        assert a.produce("orders", 0, 2)[0] == a.produce("orders", 1, 1)[0] == E.NONE
        assert a.add_offsets("g") == E.NONE and a.commit_offsets("g", {("orders", 0): 2, ("orders", 1): 1}) == [0, 0]
        assert b.add_partitions("orders", 1) == {("orders", 1): E.NONE}
        assert b.produce("orders", 1, 5)[0] == E.NONE
        assert b.end(commit=True) == E.NONE
        svc.advance()                                   # b's markers
        assert c.add_partitions("orders", 0) == {("orders", 0): E.NONE}
        meta = svc.transactions.transactions["c"]
        while svc.clock() <= meta.start_ms + 1:         # (1 ms of the wall clock)
            pass

        now = await scrape(http, gc.admin_url)
        assert now.by_label("groupcoord_transaction_count", "state") == {
            **dict.fromkeys(STATES, 0), "Ongoing": 2, "CompleteCommit": 1}
        assert now.value("groupcoord_open_transactions") == 2
        assert now.value("groupcoord_transactions_past_timeout") == 1
        assert now.value("groupcoord_oldest_open_transaction_age_seconds") > 0
        assert now.value("groupcoord_pending_transactional_offsets") == 2
        assert now.value("groupcoord_partitions_with_unstable_offsets") == 2       # a's records hold both
        assert now.value("groupcoord_producer_id_count") == 3     # per partition, as Kafka: a in two, b in one
        assert now.value("groupcoord_partitions_with_late_transactions_count") == 0
        assert now.value("groupcoord_transactions_started_total") == 3
        assert now.by_label("groupcoord_transactions_completed_total", "result") == {"commit": 1, "abort": 0}
        assert now.value("groupcoord_transaction_duration_seconds_count", result="commit") == 1

        # the coordinator's timeout aborts c (its producer fenced); a aborts; the offsets are dropped
        assert svc.transactions.abort_timed_out_transactions() == 1
        assert a.end(commit=False) == E.NONE
        svc.advance()
        after = await scrape(http, gc.admin_url)
        assert after.by_label("groupcoord_transaction_count", "state") == {
            **dict.fromkeys(STATES, 0), "CompleteAbort": 2, "CompleteCommit": 1}
        assert after.value("groupcoord_open_transactions") == 0
        assert after.value("groupcoord_oldest_open_transaction_age_seconds") == 0
        assert after.by_label("groupcoord_transactions_completed_total", "result") == {"commit": 1, "abort": 2}
        assert after.by_label("groupcoord_transactions_fenced_total", "cause") == {"timeout": 1}
        assert after.value("groupcoord_transactions_timed_out_total") == 1
        assert after.by_label("groupcoord_offsets_transaction_completed_total", "result") == {"commit": 0, "abort": 1}
        assert after.value("groupcoord_pending_transactional_offsets") == 0
        assert after.value("groupcoord_partitions_with_unstable_offsets") == 0
        assert after.value("groupcoord_transaction_duration_seconds_count") == 3
        assert after.value("groupcoord_events_total", event="transaction.completed") == 3


@pytest.mark.parametrize("late", [False, True])
async def test_partitions_with_late_transactions_as_kafka_counts_them(late):
    """ReplicaManager.lateTransactionsCount: a partition whose oldest ongoing transaction's producer last
    wrote longer ago than transaction.max.timeout.ms + 5 minutes (ProducerStateManager.hasLateTransaction,
    from the batch's timestamp)."""
    config = {**CONFIG, "transaction.max.timeout.ms": 60_000}
    async with running(http=True, topics={"orders": 1}, config=config) as gc, aiohttp.ClientSession() as http:
        tx = TxnClient(gc.service, "old")
        assert tx.init(timeout_ms=60_000) == E.NONE
        assert tx.add_partitions("orders", 0) == {("orders", 0): E.NONE}
        now = gc.service.clock()
        written = now - 60_000 - 5 * 60_000 - 1000 if late else now - 60_000 - 5 * 60_000 + 60_000
        assert tx.produce("orders", 0, 1, timestamp=written)[0] == E.NONE
        got = await scrape(http, gc.admin_url)
        assert got.value("groupcoord_partitions_with_late_transactions_count") == (1 if late else 0)
