"""The report's timeline pictures drawn by processes of their own (from PARALLEL_PICTURES of them on)
are the same files as drawn in this process."""
import os
import subprocess

from groupcoord.analytics import report
from groupcoord.analytics.report import Action, Panel


def pictures(out, n: int) -> list[tuple]:
    action = Action(at_s=5.0, label="crash g/m001", groups=None)
    result = []
    for i in range(n):
        panels = [Panel(title=f"log{i} / g{k}\n1 rebalances", xs=[0.0, 2.0, 9.0 + k], members=[1, 3, 2 + i % 3],
                        unowned=[4, 0, k], rebalances=[(2.0, 1.5)], actions=[action]) for k in range(3)]
        result.append((panels, 12.0, [action], 3, out / f"timeline-{i + 1}.png"))
    return result


def test_timelines_drawn_apart_are_the_same_files(tmp_path, monkeypatch):
    n = report.PARALLEL_PICTURES
    started = []
    popen = subprocess.Popen
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: started.append(a) or popen(*a, **kw))
    (tmp_path / "here").mkdir()
    (tmp_path / "apart").mkdir()
    report._draw(pictures(tmp_path / "here", n))
    report._draw_timelines(pictures(tmp_path / "apart", n))
    for i in range(1, n + 1):
        here, apart = (tmp_path / d / f"timeline-{i}.png" for d in ("here", "apart"))
        assert here.read_bytes() == apart.read_bytes() and here.stat().st_size > 1000
    assert len(started) == 2           # two processes drew them


def test_timelines_are_drawn_here_when_the_processes_fail(tmp_path, monkeypatch, capsys):
    # a child that exits at once (cannot start or import groupcoord): no broken pipe out of the
    # report, the pictures drawn in this process instead
    import sys
    n = report.PARALLEL_PICTURES
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(sys, "executable", "/bin/false")
    report._draw_timelines(pictures(tmp_path, n))
    assert all((tmp_path / f"timeline-{i}.png").stat().st_size > 1000 for i in range(1, n + 1))
    assert "drawn in this process" in capsys.readouterr().err


def test_timelines_started_early_give_the_section_drawn_in_place(tmp_path, monkeypatch):
    # analyze() starts the timelines (report.Timelines) once their rows are known, drawn apart while
    # Spark writes the other tables: the same HTML and files as the section drawn when the page is
    started = []
    popen = subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: started.append(a) or popen(*a, **kw))
    from types import SimpleNamespace
    logs = [{"log": f"run{i}", "cell": None, "scenario": "s", "seed": i, "path": "-", "start_ms": 0,
             "scenario_doc": {"name": "s", "duration_s": 30,
                              "events": [{"at_s": 10, "action": "crash", "group": "g", "members": [1]}]}}
            for i in range(2)]
    timeline = [{"log": log["log"], "group": g, "ts_ms": t * 1000, "members": 2 + (t > 10), "unowned": (t == 11) * 3}
                for log in logs for g in ("g", "h") for t in range(0, 31, 5)]
    rebalances = [{"log": log["log"], "group": "g", "start_ms": 10000, "duration_ms": 1500} for log in logs]
    view = SimpleNamespace(logs=logs, timeline=timeline, rebalances=rebalances)
    (tmp_path / "early").mkdir()
    (tmp_path / "here").mkdir()
    early = report.Timelines(view, tmp_path / "early")
    here = report._timeline_section(view, tmp_path / "here")
    assert early.section() == here and "timeline-1.png" in here
    files = sorted(p.name for p in (tmp_path / "here").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "early").iterdir()) and files
    for name in files:
        assert (tmp_path / "early" / name).read_bytes() == (tmp_path / "here" / name).read_bytes()
    assert started                     # drawn by a process of its own, few as they are


def test_timelines_started_early_raise_their_failure_when_asked(tmp_path, monkeypatch):
    from types import SimpleNamespace
    monkeypatch.setattr(report, "_draw_timelines", lambda pictures, apart=False: 1 / 0)
    view = SimpleNamespace(logs=[{"log": "a", "cell": None, "start_ms": 0}],
                           timeline=[{"log": "a", "group": "g", "ts_ms": 0, "members": 1, "unowned": 0}],
                           rebalances=[])
    early = report.Timelines(view, tmp_path)
    import pytest
    with pytest.raises(ZeroDivisionError):
        early.section()
