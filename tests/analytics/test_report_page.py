"""The report shows every group's timeline, logs side by side on one axis, and renders in a browser."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from groupcoord.analytics import job
from groupcoord.analytics.report import TIMELINE_PAGE, write_report

EPOCH = 1_795_000_000_000
#: where the rendered page's screenshot goes for review (tests/analytics/report-screenshot.png is one)
ARTIFACTS = Path(os.environ.get("GROUPCOORD_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")


def analysis_of(tmp_path, groups_per_log: dict[str, int]) -> job.Analysis:
    """Groups with a member joining at 1 s, a 2 ms rebalance at 5 s and a 900 ms one at 20 s."""
    logs, timeline, rebalances = [], [], []
    for log, n in groups_per_log.items():
        start = 0 if log.startswith("sim") else EPOCH
        logs.append({"log": log, "start_ms": start})
        for g in range(n):
            group = f"group-{g:02d}"
            for at, members, unowned in ((1000, 1, 4), (1050, 1, 0), (5000, 2, 2), (5002, 2, 0), (20000, 1, 0)):
                timeline.append({"log": log, "group": group, "ts_ms": start + at, "members": members,
                                 "unowned": unowned})
            for at, took in ((5000, 2), (20000, 900)):
                rebalances.append({"log": log, "cell": None, "group": group, "start_ms": start + at,
                                   "start_ms_from_log_start": at, "duration_ms": took, "partitions_moved": 2,
                                   "min_moves": 2, "trigger": "new_member"})
    return job.Analysis(out=str(tmp_path), tables={}, summary=[], invariants=[], violations=[],
                        rebalances=rebalances, timeline=timeline, logs=logs, events=0, seconds=0.0)


def test_every_groups_timeline_is_drawn(tmp_path):
    n = 2 * TIMELINE_PAGE + 5
    page = write_report(analysis_of(tmp_path, {"sim-a": n - 3, "serve-b": 3})).read_text()
    pictures = sorted(p.name for p in tmp_path.glob("timeline-*.png"))
    assert pictures == [f"timeline-{i}.png" for i in (1, 2, 3)]        # 25 groups, 10 a picture
    assert all(f"src='{name}'" in page for name in pictures)
    assert f"{n} groups" in page and "sim-a / group-21" in page        # the last group is drawn too
    assert "durations.png" in page and "same axis" in page


@pytest.mark.parametrize("logs", [{"sim-a": 2}, {"sim-a": 2, "serve-b": 2}], ids=["one log", "two logs"])
def test_durations_one_log_a_histogram_several_logs_a_box_each(tmp_path, logs):
    page = write_report(analysis_of(tmp_path, logs)).read_text()
    assert (tmp_path / "durations.png").stat().st_size > 1000 and "src='durations.png'" in page


def test_the_page_renders_in_chromium(tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make test installs it as root)")
    page = write_report(analysis_of(tmp_path, {"sim-a": 4, "serve-b": 2}))
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,2400", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=60, check=True)
    assert shot.stat().st_size > 20_000          # a page with its pictures, not a blank one
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, ARTIFACTS / "report.png")
