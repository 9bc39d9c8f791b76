"""One time base per log: ``start_ms_from_log_start`` counts from the log's first event whether
the log's ts_ms are virtual milliseconds from 0 (simulate) or epoch milliseconds (serve --events,
fleet), and the report shows only that (no Spark here)."""
import json
from pathlib import Path

from groupcoord.analytics import job
from groupcoord.analytics.model import analyze_group, group_partitions
from groupcoord.analytics.report import write_report

DATA = Path(__file__).parent / "data"
EPOCH = 1_764_000_000_000


def eager(shift=0):
    events = [json.loads(x) for x in (DATA / "eager" / "events.jsonl").read_text().splitlines() if x]
    for e in events:
        e["ts_ms"] += shift
    return events


def test_start_from_log_start_is_the_same_in_virtual_and_epoch_time():
    scenario = json.loads((DATA / "eager" / "scenario.json").read_text())
    virtual = analyze_group("g", eager(), group_partitions(scenario, "g"), log_start_ms=0)
    epoch = analyze_group("g", eager(EPOCH), group_partitions(scenario, "g"), log_start_ms=EPOCH)
    assert [r["start_ms_from_log_start"] for r in virtual["rebalances"]] == [10, 1005, 3002]
    assert [r["start_ms_from_log_start"] for r in epoch["rebalances"]] == [10, 1005, 3002]
    assert [r["start_ms"] for r in epoch["rebalances"]] == [EPOCH + 10, EPOCH + 1005, EPOCH + 3002]
    # without the log's start: the group's first event (0 here)
    assert [r["start_ms_from_log_start"] for r in analyze_group("g", eager(EPOCH))["rebalances"]] == [10, 1005, 3002]


def test_find_logs_reads_the_log_start_from_the_first_line(tmp_path):
    path = tmp_path / "serve.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in eager(EPOCH)))
    (virtual, epoch) = job.find_logs([DATA / "eager", path])
    assert (virtual.start_ms, epoch.start_ms) == (0, EPOCH)


def test_report_lists_rebalances_and_violations_from_each_log_start(tmp_path):
    rebalances = [{"log": log, "cell": None, "group": "g", "start_ms": start + 1005, "start_ms_from_log_start": 1005,
                   "duration_ms": 25, "partitions_moved": 2, "min_moves": 2, "trigger": "new_member"}
                  for log, start in (("sim", 0), ("serve", EPOCH))]
    analysis = job.Analysis(
        out=str(tmp_path), tables={}, summary=[], invariants=[], rebalances=rebalances, timeline=[],
        violations=[{"log": "serve", "cell": None, "group": "g", "invariant": "single_owner", "ts_ms": EPOCH + 1040,
                     "detail": "{}"}],
        logs=[{"log": "sim", "start_ms": 0}, {"log": "serve", "start_ms": EPOCH}], events=0, seconds=0.0)
    page = write_report(analysis).read_text()
    assert "start (ms from log start)" in page and "at (ms from log start)" in page
    assert str(EPOCH)[:6] not in page            # no epoch milliseconds in the page
    assert page.count("<td class=''>1005</td>") == 2 and "<td class=''>1040</td>" in page
