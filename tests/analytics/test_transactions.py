"""Logs of a service that ran transactions (issue 32), with both engines in one Spark session.

The transaction coordinator's events (``transaction.*``: a transactional id, no group) are counted in
the summary's ``events``, as a producer's, and read no further; a group's ``offsets.transactional_commit``,
``offsets.transaction_committed`` and ``offsets.transaction_aborted`` are coordinator events of the
group like ``offset.committed``: counted in its ``events`` and ``coordinator_events`` and checked by
``generations_grow`` (their generation is the group's), no table counts them as commits. The logs come
from a run in virtual time (the simulator's fleet, a transactional producer of
tests/coordinator/txn_client.py driving the same Service): the whole log (members' events too) and its
coordinator events alone (a ``serve --events`` file), each with and without the transaction events,
whose tables must be the same but for those counts."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.coordinator.events import TRANSACTION_EVENT_FIELDS, check_event
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.sim import scenario, simulate

from test_pipeline import TABLES, both, write_log  # same directory (rootdir-relative imports)

GROUP_TXN_EVENTS = ("offsets.transactional_commit", "offsets.transaction_committed", "offsets.transaction_aborted")


def _txn_client():
    """tests/coordinator/txn_client.py's TxnClient (loaded by path: that directory is not on sys.path)."""
    path = Path(__file__).parent.parent / "coordinator" / "txn_client.py"
    spec = importlib.util.spec_from_file_location("groupcoord_tests_txn_client", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TxnClient


def is_txn(e: dict) -> bool:
    return e["event"].startswith("transaction.") or e["event"] in GROUP_TXN_EVENTS


@pytest.fixture(scope="module")
def spark():
    return job.spark_session()   # the active session when other modules made one


@pytest.fixture(scope="module")
def txn_run():
    """A classic group of two members (one crashes at 12 s, expired at its 10 s session) whose input a
    transactional producer commits: once committed (5 s), once aborted (during the rebalance), and a
    producer fenced by a new one with its transactional id (40 s). (events, resolved scenario)."""
    sc = scenario.from_dict({
        "duration_s": 60, "topics": {"t": 4, "out": 2},
        "groups": [{"name": "g", "topics": ["t"], "members": 2, "session_timeout_ms": 10000}],
        "events": [{"at_s": 12, "action": "crash", "members": [0]}]})
    sim = simulate.Simulator(sc, 1)
    TxnClient = _txn_client()
    tx, zombie_fencer = TxnClient(sim.service, "pipeline"), TxnClient(sim.service, "pipeline", conn=8)
    answers = []

    def at(ms, fn):
        sim.at(ms, lambda: answers.append(fn()))
    at(0, tx.init)              # the log's first line: transaction.producer_initialized
    at(5000, lambda: (tx.add_partitions("out", 0), tx.produce("out", 0, 3)[0], tx.add_offsets("g"),
                      tx.commit_offsets("g", {("t", 0): 5, ("t", 1): 7})))
    at(5200, lambda: tx.end(True))
    at(20000, lambda: (tx.add_partitions("out", 1), tx.produce("out", 1, 2)[0], tx.add_offsets("g"),
                       tx.commit_offsets("g", {("t", 0): 9})))
    at(20100, lambda: tx.end(False))
    at(40000, lambda: (tx.add_partitions("out", 0), tx.add_offsets("g"), tx.commit_offsets("g", {("t", 2): 4})))
    at(41000, zombie_fencer.init)       # fences tx: its open transaction is aborted (CONCURRENT_TRANSACTIONS)
    at(43000, zombie_fencer.init)       # the retry, once the abort is complete
    events = sim.run()
    assert answers == [0, ({("out", 0): 0}, 0, 0, [0, 0]), 0, ({("out", 1): 0}, 0, 0, [0]), 0,
                       ({("out", 0): 0}, 0, [0]), E.CONCURRENT_TRANSACTIONS, 0], answers
    return events, json.loads(json.dumps(sim.resolved()))


def test_transaction_events_are_counted_and_read_no_further(spark, txn_run, tmp_path):
    events, resolved = txn_run
    txn = [e for e in events if is_txn(e)]
    for e in txn:
        check_event(e)          # as the service writes them
    kinds = Counter(e["event"] for e in txn)
    assert set(kinds) == set(TRANSACTION_EVENT_FIELDS) | set(GROUP_TXN_EVENTS), kinds
    assert kinds["offsets.transaction_aborted"] == 2 and kinds["transaction.fenced"] == 1
    assert events[0]["event"] == "transaction.producer_initialized"
    assert {e["group"] for e in events if e["event"] in GROUP_TXN_EVENTS} == {"g"}
    coordinator = [e for e in events if not e["event"].startswith(("client.", "producer."))]
    assert sum(e["event"] == "rebalance.completed" for e in coordinator) >= 2   # the crashed member's expiry

    def plain(evs):
        return [e for e in evs if not is_txn(e)]

    def lines(evs):
        return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in evs)
    logs = [write_log(tmp_path / "logs" / "fleet-txn", events, resolved),
            write_log(tmp_path / "logs" / "fleet", plain(events), resolved)]
    for name, evs in (("serve-txn", coordinator), ("serve", plain(coordinator))):   # serve --events files
        logs.append(tmp_path / "logs" / f"{name}.jsonl")
        logs[-1].write_text(lines(evs))
    rdd, df = both(spark, logs, tmp_path / "out")
    for name in TABLES:
        assert rdd[name] == df[name], name

    group_txn = sum(kinds[k] for k in GROUP_TXN_EVENTS)
    counted = {"groups": {"events": group_txn, "coordinator_events": group_txn}, "summary": {"events": len(txn)}}

    def key(r):
        return json.dumps(r, sort_keys=True, default=str)
    for with_txn, without, evs in (("fleet-txn", "fleet", events), ("serve-txn", "serve", coordinator)):
        assert next(r["events"] for r in df["summary"] if r["log"] == with_txn) == len(evs)
        # the log starts with the transactional producer's first event (0 ms): where a log's times count from
        earlier = plain(evs)[0]["ts_ms"] - evs[0]["ts_ms"]
        for name in TABLES:
            got, want = [], [dict(r, path=None) if "path" in r else r for r in df[name] if r["log"] == without]
            for r in df[name]:
                if r["log"] != with_txn:
                    continue
                r = dict(r, log=without, path=None) if "path" in r else dict(r, log=without)
                for column, n in counted.get(name, {}).items():
                    r[column] -= n
                if name == "rebalances":
                    r["start_ms_from_log_start"] -= earlier
                if name == "invariants" and r["invariant"] == "generations_grow":
                    r["checked"] -= group_txn
                got.append(r)
            assert got or name == "violations", (name, with_txn)
            diff = [(k, x[k], y.get(k)) for x, y in zip(sorted(got, key=key), sorted(want, key=key))
                    for k in x if x[k] != y.get(k)]
            assert sorted(got, key=key) == sorted(want, key=key), (name, with_txn, diff)
    assert {r["group"] for r in df["groups"]} == {"g"}

    # a transaction event the analyser cannot read: both engines name its line (the pipeline hands it over)
    bad = dict(next(e for e in coordinator if e["event"] == "transaction.completed"), transactional_id=None)
    path = tmp_path / "logs" / "bad.jsonl"
    path.write_text(lines(coordinator[:3] + [bad] + coordinator[3:]))
    for engine in job.ENGINES:
        with pytest.raises(job.LogError, match=r'bad\.jsonl:4: transaction\.completed: "transactional_id" must be'):
            job.analyze(job.find_logs([str(path)]), tmp_path / "out" / f"bad-{engine}", spark=spark, report=False,
                        engine=engine)
    assert next(r for r in df["sessions"] if r["log"] == "fleet-txn")["commits"] > 0   # members' own commits


def test_event_problem_reads_transaction_events():
    ev = {"v": 1, "event": "transaction.completed", "ts_ms": 5, "transactional_id": "tx", "producer_id": 1000,
          "producer_epoch": 0, "transaction_state": "CompleteCommit", "result": "commit", "duration_ms": 3}
    check_event(ev)
    assert job.event_problem(ev) is None
    assert job.event_problem(dict(ev, transactional_id=None)) == 'transaction.completed: "transactional_id" must be a string'
    assert job.event_problem(dict(ev, v=2)) == "transaction.completed: schema version 2 (this analyser reads version 1)"
    assert job.event_problem(dict(ev, event="offsets.transaction_committed")) == \
        'offsets.transaction_committed: "group" must be a string'
    assert job.event_problem({"v": 1, "event": "member.joined", "ts_ms": 5}) == 'member.joined: "group" must be a string'
