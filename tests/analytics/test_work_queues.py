"""The shipped work queues (examples/scenarios, share groups with producers), seeds 1-20 shortened,
simulated and analysed in one Spark run: every invariant holds (no record held by two consumers at
once, every record produced acknowledged or archived, no delivery count above the limit), and the
analysis agrees with the simulator's own counts: the records produced, what the share-partition leaders
counted (accepted, archived), and the deliveries its summary saw."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.sim import scenario, simulate

from test_scenarios import SCENARIOS, WORK_QUEUES

SEEDS = range(1, 21)

#: scenario -> overrides that make a run small, keeping its timeline (the crash at 30 s, the hang from
#: 60 s to 105 s, the join at 90 s) and producing long enough for the crash and the hang to hold records
SHORT = {"share-queue": {"produce.stop_s": 70, "produce.rate_per_s": 25, "duration_s": 130}}


def test_every_shipped_work_queue_is_covered():
    assert sorted(SHORT) == sorted(WORK_QUEUES)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[tuple[str, int, Path, dict]]:
    root = tmp_path_factory.mktemp("work-queues")
    out = []
    for name in sorted(SHORT):
        sc = scenario.apply_overrides(scenario.load(SCENARIOS / f"{name}.toml"), SHORT[name])
        for seed in SEEDS:
            d = root / f"{name}-{seed}"
            simulate.run(sc, seed, d)
            out.append((name, seed, d, json.loads((d / "summary.json").read_text())))
    return out


@pytest.fixture(scope="module")
def analysed(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("work-queues-analysed")
    job.analyze(job.find_logs([str(d) for _, _, d, _ in runs]), str(out), report=False)
    import pyarrow.parquet as pq
    return {name: pq.read_table(out / name).to_pylist() for name in ("work", "invariants", "redeliveries")}


def test_every_invariant_holds_and_the_analysis_agrees_with_the_simulator(runs, analysed):
    by_log = {Path(d).name: (name, seed, summary) for name, seed, d, summary in runs}
    work = {r["log"]: r for r in analysed["work"]}
    assert sorted(work) == sorted(by_log)
    for log, (name, seed, summary) in by_log.items():
        w = work[log]
        where = (name, seed)
        group = summary["groups"][w["group"]]
        leaders = group["share_partitions"]
        events = [json.loads(line) for line in (Path(next(d for n, s, d, _ in runs if Path(d).name == log))
                                                / "events.jsonl").read_text().splitlines()]
        produced = sum(e["last"] - e["first"] + 1 for e in events if e["event"] == "producer.produced")
        assert w["all_settled_checked"], where
        assert (w["records_produced"], w["unfinished"]) == (produced, 0), (where, w)
        assert (w["acknowledged"], w["archived"]) == (leaders["acknowledged"], leaders["archived"]), (where, w, leaders)
        assert w["acknowledged"] + w["archived"] == produced, where
        assert w["deliveries"] == group["work"]["records_polled"], (where, w, group["work"])
    checked = [r for r in analysed["invariants"] if r["invariant"] in ("share_single_holder", "all_settled",
                                                                        "delivery_limit")]
    assert {(r["log"], r["invariant"]) for r in checked} == {(log, i) for log in by_log for i in (
        "share_single_holder", "all_settled", "delivery_limit")}
    assert [r for r in checked if r["status"] != "pass"] == []
    # the runs exercise what the scenario is for: a crash's records released at once, a hang's lock expiry
    causes = {r["cause"] for r in analysed["redeliveries"]}
    assert {"crash", "lock_expiry"} <= causes, causes
