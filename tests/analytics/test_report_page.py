"""The report (no Spark here: hand-made analyses): a verdict line per run, grid cells named by their
parameters, every group's timeline as small multiples with the scenario's actions marked, counts on
whole-number ticks, legends beside the plots rather than on them; and the page in a browser
(Debian's chromium driven by Playwright) at 1300 px, the summary's violation columns in sight.

The browser test writes the page's first screen to ``$GROUPCOORD_ARTIFACTS/report.png`` (default
``test-artifacts/``); tests/analytics/report-screenshot.png is one, kept for review."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import xml.etree.ElementTree as ET

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from groupcoord.analytics import job, report
from groupcoord.analytics.report import TIMELINE_PAGE, write_report

EPOCH = 1_795_000_000_000
ARTIFACTS = Path(os.environ.get("GROUPCOORD_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")
CHROMIUM = os.environ.get("GROUPCOORD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


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


# ---------------------------------------------------------------- a sweep of 12 cells, as `sweep` gives
SCENARIOS = {
    "rolling-restart": {"name": "rolling-restart", "mode": "simulate", "duration_s": 60,
                        "groups": [{"name": "app", "count": 1}],
                        "events": [{"at_ms": 10000, "action": "restart", "interval_ms": 2000}]},
    "crash": {"name": "crash", "mode": "simulate", "duration_s": 60, "groups": [{"name": "app", "count": 1}],
              "events": [{"at_ms": 10000, "action": "crash", "count": 2, "restart_after_ms": 20000},
                         {"at_ms": 30000, "action": "node_down", "node": 1},
                         {"at_ms": 40000, "action": "move_coordinator", "group": "app", "node": 0}]},
}
PROTOCOLS = ["eager (range)", "cooperative-sticky", "consumer (uniform)"]
INVARIANTS = ["single_owner", "all_owned_when_stable", "generations_grow", "commits_kept"]
#: the cell whose log has an ownership violation
BROKEN = "c004"


def sweep_cells() -> dict[str, dict]:
    cells, i = {}, 0
    for name in SCENARIOS:
        for session in (10000, 45000):
            for protocol in PROTOCOLS:
                cells[f"c{i:03d}"] = {"scenario": name, "members": 200, "session_timeout_ms": session,
                                      "protocol": protocol, "seed": 1}
                i += 1
    return cells


def sweep_analysis(tmp_path) -> job.Analysis:
    """12 cells (2 scenarios, 2 session timeouts, 3 protocols) with numbers as wide as a real
    sweep's; one group each; the rebalances of a crash: members down at 10 s, back at 30 s."""
    logs, summary, invariants, timeline, rebalances = [], [], [], [], []
    for n, (cell, params) in enumerate(sweep_cells().items()):
        logs.append({"log": cell, "cell": cell, "scenario": params["scenario"], "seed": 1, "start_ms": 0,
                     "scenario_doc": SCENARIOS[params["scenario"]]})
        broken = cell == BROKEN
        summary.append({"log": cell, "cell": cell, "scenario": params["scenario"], "seed": 1, "groups": 1,
                        "events": 1_234_567 + n, "member_events": True, "rebalances": 40 + n,
                        "duration_p50_ms": 5014.5, "duration_p95_ms": 10006.15, "duration_max_ms": 10012,
                        "partition_seconds_unowned": 11380.682, "partitions_moved": 26024, "min_moves": 940,
                        "movement_ratio": 27.685106, "partitions_revoked": 106400, "max_balance": 20,
                        "max_member_idle_ms": 10006, "violations": int(broken), "zombie_overlaps": 3})
        for name in INVARIANTS:
            failed = int(broken and name == "single_owner")
            invariants.append({"log": cell, "cell": cell, "invariant": name, "checked": 1000, "failed": failed,
                               "status": "fail" if failed else "pass"})
        for at, members, unowned in ((0, 200, 400), (6000, 200, 0), (10000, 198, 4), (30000, 200, 0)):
            timeline.append({"log": cell, "group": "app", "ts_ms": at, "members": members, "unowned": unowned})
        for at, took in ((14, 6000), (10001, 2000), (30002, 1500)):
            rebalances.append({"log": cell, "cell": cell, "group": "app", "start_ms": at, "start_ms_from_log_start": at,
                               "duration_ms": took + 10 * n, "partitions_moved": 400, "min_moves": 20,
                               "trigger": "member_left"})
    violations = [{"log": BROKEN, "cell": BROKEN, "group": "app", "invariant": "single_owner", "ts_ms": 10040,
                   "detail": '{"partition": ["orders", 3], "owners": ["app/m0", "app/m1"]}'}]
    return job.Analysis(out=str(tmp_path), tables={"summary": "summary"}, summary=summary, invariants=invariants,
                        violations=violations, rebalances=rebalances, timeline=timeline, logs=logs,
                        events=sum(s["events"] for s in summary), seconds=12.0)


#: how the page names cell c000 (members=200 and seed=1 are every cell's, said once)
C000 = "rolling-restart, session_timeout_ms=10000, protocol=eager (range)"


@pytest.fixture
def figures(monkeypatch) -> dict:
    """The report's figures by file name, as they were saved (still open to inspection)."""
    drawn = {}
    save = report._save

    def keep(fig, path, **kw):
        drawn[Path(path).name] = fig
        save(fig, path, **kw)
    monkeypatch.setattr(report, "_save", keep)
    return drawn


def whole(ticks) -> bool:
    return len(ticks) > 1 and all(float(t).is_integer() for t in ticks)


SVG = "{http://www.w3.org/2000/svg}"


def svg(path) -> ET.Element:
    """A timeline picture's SVG tree (the file must parse as XML)."""
    return ET.parse(path).getroot()


def having(root, tag: str, cls: str) -> list:
    """The elements of a tag whose class attribute names cls."""
    return [e for e in root.iter(SVG + tag) if cls in (e.get("class") or "").split()]


def panels_of(root) -> list:
    return having(root, "g", "panel")


def title_of(panel) -> str:
    return having(panel, "text", "title")[0].text


# ---------------------------------------------------------------- verdicts
def test_one_verdict_line_per_run_naming_cells_by_their_parameters(tmp_path):
    lines = [v.line() for v in report.verdicts(sweep_analysis(tmp_path), sweep_cells())]
    assert len(lines) == 12
    assert lines[0] == f"PASS: c000 {C000}: every invariant held; 40 rebalances, p95 10006 ms; 3 zombie overlaps: expected"
    assert lines[4] == ("FAIL: c004 rolling-restart, session_timeout_ms=45000, protocol=cooperative-sticky: 1 violation "
                        "of 'no partition owned by two members at once' (1); 3 zombie overlaps: expected")


def test_a_verdict_names_partitions_added_late_and_what_could_not_be_checked(tmp_path):
    analysis = analysis_of(tmp_path, {"sim-a": 1, "serve-b": 1})
    analysis.logs[0].update(scenario="slow-members", seed=5, scenario_doc={
        "mode": "simulate", "events": [{"at_ms": 180000, "action": "add_partitions", "topic": "clicks",
                                        "partitions": 18}]})
    analysis.summary = [{"log": "sim-a", "rebalances": 8, "duration_p95_ms": 1002.65,
                         "partition_seconds_unowned": 4.722, "zombie_overlaps": 5},
                        {"log": "serve-b", "rebalances": 3, "zombie_overlaps": None}]
    analysis.invariants = [{"log": "sim-a", "invariant": i, "checked": 5, "failed": 0, "status": "pass"}
                           for i in INVARIANTS] + [
        {"log": "serve-b", "invariant": "generations_grow", "checked": 3, "failed": 0, "status": "pass"},
        {"log": "serve-b", "invariant": "commits_kept", "checked": 0, "failed": 0, "status": "skipped"}]
    serve, sim = report.verdicts(analysis)
    assert sim.line() == ("PASS: sim-a (slow-members, seed 5): every invariant held; 8 rebalances, p95 1003 ms; "
                          "5 zombie overlaps, partitions added late (clicks to 18 at 180 s): expected")
    assert serve.line() == ("PASS: serve-b: 1 invariant held; not checked (coordinator events only): no "
                            "acknowledged commit lost; 3 rebalances")
    analysis.invariants = []
    assert [v.status for v in report.verdicts(analysis)] == ["unchecked", "unchecked"]


# ---------------------------------------------------------------- plots
def test_counts_are_on_whole_number_ticks(tmp_path, figures):
    analysis = analysis_of(tmp_path, {"sim-a": 1})          # two rebalances: a histogram of 0 and 1
    write_report(analysis)
    (hist,) = figures["durations.png"].axes
    assert whole(hist.get_yticks()) and hist.get_ylabel() == "rebalances"
    moved = figures["movement.png"].axes[0]
    assert whole(moved.get_xticks()) and whole(moved.get_yticks())
    timeline = svg(tmp_path / "timeline-1.svg")
    for axis in ("members", "unowned"):
        (first, *_) = having(timeline, "g", axis)           # the first column's labels
        ticks = [t.get("data-value") for t in having(first, "text", "tick")]
        assert whole(ticks) and [t.text for t in having(first, "text", "tick")] == ticks


def test_cells_are_labelled_by_their_parameters(tmp_path, figures):
    page = write_report(sweep_analysis(tmp_path), cell_params=sweep_cells(), compare="protocol").read_text()
    bars = figures["cells.png"].axes[0]
    labels = [t.get_text() for t in bars.get_yticklabels()]
    assert labels[0] == C000 and labels[-1] == "crash, session_timeout_ms=45000, protocol=consumer (uniform)"
    assert len(set(labels)) == 12 and not any(label.startswith("c0") for label in labels)
    assert figures["cells.png"]._suptitle.get_text() == "every cell: members=200, seed=1"
    boxes = [t.get_text() for t in figures["durations.png"].axes[0].get_yticklabels()]
    assert boxes == labels
    assert f"alt='p95 rebalance ms, partition-s unowned and moved / minimum of {C000};" in page
    assert "<td class='l w'>rolling-restart, session_timeout_ms=10000, protocol=eager (range)</td>" in page


def test_legends_sit_beside_the_plots_not_on_them(tmp_path, figures):
    write_report(sweep_analysis(tmp_path), cell_params=sweep_cells(), compare="protocol")
    for name in ("compare.png", "movement.png"):
        fig = figures[name]
        renderer = FigureCanvasAgg(fig).get_renderer()         # saved, the figure's own canvas is closed
        fig.canvas.draw()
        legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        assert legends, name
        for legend in legends:
            box = legend.get_window_extent(renderer)
            for ax in fig.axes:
                assert not box.overlaps(ax.get_window_extent(renderer)), (name, ax.get_title())
    compare = figures["compare.png"]
    assert [t.get_text() for t in compare.legends[0].get_texts()] == PROTOCOLS
    # the timelines' legend above the actions' strips, the strips above the first row's titles
    timeline = svg(tmp_path / "timeline-1.svg")
    (legend,) = having(timeline, "g", "legend")
    legend_bottom = max(float(e.get("y", e.get("y1", 0))) + float(e.get("height", 0)) for e in legend)
    strip_top = min(min(float(line.get("y2")), float(line.get("y1"))) for line in having(timeline, "line", "action")
                    if line in list(having(timeline, "g", "strip")[0]))
    strip_bottom = max(float(t.get("y")) for t in having(timeline, "text", "action"))
    first_title = min(float(t.get("y")) - 11 for t in having(timeline, "text", "title"))
    assert legend_bottom < strip_top - 4 and strip_bottom < first_title
    assert [t.text for t in legend.iter(SVG + "text")] == ["members", "partitions without an owner",
                                                          "rebalance (its start marked)", "scenario action"]


def test_timelines_are_small_multiples_with_the_scenarios_actions(tmp_path):
    page = write_report(sweep_analysis(tmp_path), cell_params=sweep_cells(), compare="protocol").read_text()
    # one picture per scenario, a protocol a column, a session timeout a row, on one time axis
    assert sorted(p.name for p in tmp_path.glob("timeline-*")) == ["timeline-1.svg", "timeline-2.svg"]
    crash = svg(tmp_path / "timeline-1.svg")
    panels = panels_of(crash)
    assert [title_of(p) for p in panels] == [f"{p}, session_timeout_ms={s}" for s in (10000, 45000) for p in PROTOCOLS]
    assert len({p.get("data-x") for p in panels}) == 3 and len({p.get("data-y") for p in panels}) == 2
    assert len({(p.get("data-width"), p.get("data-end-s")) for p in panels}) == 1
    # the crash, the node down and the coordinator move dashed on every panel where their seconds are, and named above
    for p in panels:
        dashed = having(p, "line", "action")
        assert sorted(float(d.get("data-s")) for d in dashed) == [10, 30, 40]
        x0, width, end = (float(p.get(k)) for k in ("data-x", "data-width", "data-end-s"))
        for d in dashed:
            assert float(d.get("x1")) == pytest.approx(x0 + width * float(d.get("data-s")) / end, abs=0.01)
            assert d.get("stroke-dasharray")
    names = {t.text for strip in having(crash, "g", "strip") for t in having(strip, "text", "action")}
    assert names == {"crash 2 members, back after 20 s", "node 1 down", "coordinator moves to node 0 (app)"}
    assert len(having(crash, "g", "strip")) == 3                # one above each column
    # the time axis labelled under the bottom row only, the counts left of the first column only
    labelled = [p for p in panels if having(p, "text", "tick") and having(having(p, "g", "x-ticks")[0], "text", "tick")]
    assert labelled == panels[3:]
    assert [p for p in panels if having(having(p, "g", "members")[0], "text", "tick")] == [panels[0], panels[3]]
    assert ("Scenario <b>crash</b>, its actions (dashed): 10 s: crash 2 members, back after 20 s; 30 s: node 1 down; "
            "40 s: coordinator moves to node 0 (app).") in page
    assert "<h4>crash: 6 runs</h4>" in page and "<h4>rolling-restart: 6 runs</h4>" in page


def test_a_timeline_draws_its_steps_and_rebalances_to_scale(tmp_path):
    from groupcoord.analytics.report import Action, Panel
    from groupcoord.analytics.timeline_svg import timeline_svg
    panel = Panel(title="run / g\n1 rebalances", xs=[0.0, 10.0, 30.0], members=[2, 4, 3], unowned=[0, 6, 0],
                  rebalances=[(10.0, 5.0)], actions=[Action(20.0, "crash", None)])
    (tmp_path / "t.svg").write_text(timeline_svg([panel], 40.0, [Action(20.0, "crash", None)], 3))
    root = svg(tmp_path / "t.svg")
    (p,) = panels_of(root)
    x0, y0, width, height = (float(p.get(k)) for k in ("data-x", "data-y", "data-width", "data-height"))
    (shade,) = having(p, "rect", "rebalance")
    assert float(shade.get("x")) == pytest.approx(x0 + width / 4, abs=0.01)          # 10 s of 40
    assert float(shade.get("width")) == pytest.approx(width / 8, abs=0.01)            # 5 s of 40
    (members,) = having(p, "path", "members")
    # held at 2 to 10 s, 4 to 30 s, 3 to the end: the scale's top is 4 x 1.15
    y = [y0 + height - height * v / (4 * 1.15) for v in (2, 4, 3)]
    parts = [x0, y[0], x0 + width / 4, y[1], x0 + 3 * width / 4, y[2], x0 + width]
    d = members.get("d").replace("M", " ").replace("H", " ").replace("V", " ").split()
    assert [float(v) for v in d] == pytest.approx(parts, abs=0.01)
    (unowned,) = having(p, "path", "unowned")          # on its own scale: its top is 6 x 1.15
    d = unowned.get("d").replace("M", " ").replace("H", " ").replace("V", " ").split()
    y = [y0 + height - height * v / (6 * 1.15) for v in (0, 6, 0)]
    assert [float(v) for v in d] == pytest.approx([x0, y[0], x0 + width / 4, y[1], x0 + 3 * width / 4, y[2], x0 + width],
                                                  abs=0.01)
    assert [t.text for t in having(root, "text", "title")] == ["run / g", "1 rebalances"]


def test_any_name_makes_a_picture_that_parses(tmp_path):
    # a group id may hold any character (Kafka refuses only an empty one): markup, quotes, a line
    # break, characters XML cannot hold
    from groupcoord.analytics.report import Action, Panel
    from groupcoord.analytics.timeline_svg import timeline_svg
    name = "a&b<c>'\"d\ne\x01f"
    action = Action(1.0, name, None)
    panel = Panel(title=f"{name}\n2 rebalances", xs=[0.0], members=[1], unowned=None, rebalances=[],
                  actions=[action, Action(99.0, "later", None)])
    (tmp_path / "t.svg").write_text(timeline_svg([panel], 10.0, [action, Action(99.0, "later", None)]))
    root = svg(tmp_path / "t.svg")
    assert [t.text for t in having(root, "text", "title")] == ["a&b<c>'\"d e\ufffdf", "2 rebalances"]
    assert [t.text for t in having(root, "text", "action")] == ["a&b<c>'\"d\ne\ufffdf"]  # (99 s: off the axis)
    assert [line.get("data-s") for line in having(panels_of(root)[0], "line", "action")] == ["1"]


def test_tick_steps_are_round():
    from groupcoord.analytics.timeline_svg import int_ticks, time_ticks
    assert int_ticks(1.15) == [0, 1] and int_ticks(4.6) == [0, 2, 4] and int_ticks(230) == [0, 100, 200]
    assert int_ticks(23) == [0, 10, 20] and int_ticks(9) == [0, 5]
    assert time_ticks(60) == [0, 10, 20, 30, 40, 50, 60] and time_ticks(3600) == [0, 1000, 2000, 3000]
    assert time_ticks(25) == [0, 5, 10, 15, 20, 25] and time_ticks(0) == [0.0]


def test_actions_are_placed_on_the_logs_time_axis_and_on_their_groups():
    doc = {"mode": "fleet", "groups": [{"name": "billing", "count": 2}, {"name": "audit", "count": 1}],
           "events": [{"at_ms": 5000, "action": "slow", "members": [1], "kind": "poll", "duration_ms": 30000},
                      {"at_ms": 6000, "action": "move_coordinator", "group": "billing-1"},
                      {"at_ms": 7000, "action": "crash", "group": "billing", "count": 1},
                      {"at_ms": 8000, "action": "add_partitions", "topic": "clicks", "partitions": 18}]}
    # a fleet's log starts with its scenario (epoch ms); a simulation's scenario at virtual 0
    fleet = report.scenario_actions({"scenario_doc": doc, "start_ms": EPOCH})
    assert [(a.at_s, a.label, a.groups) for a in fleet] == [
        (5, "m1 poll stall 30 s", None),
        (6, "coordinator moves (billing-1)", frozenset({"billing-1"})),
        (7, "billing: crash 1 members", frozenset({"billing-0", "billing-1"})),
        (8, "clicks to 18 partitions", None)]
    simulated = report.scenario_actions({"scenario_doc": dict(doc, mode="simulate"), "start_ms": 13})
    assert [a.at_s for a in simulated] == [4.987, 5.987, 6.987, 7.987]


# ---------------------------------------------------------------- the page
def test_every_groups_timeline_is_drawn(tmp_path):
    n = 2 * TIMELINE_PAGE + 5
    page = write_report(analysis_of(tmp_path, {"sim-a": n - 3, "serve-b": 3})).read_text()
    pictures = sorted(p.name for p in tmp_path.glob("timeline-*"))
    assert pictures == [f"timeline-{i}.svg" for i in (1, 2, 3)]        # TIMELINE_PAGE groups a picture
    assert sum(len(panels_of(svg(tmp_path / name))) for name in pictures) == n
    assert all(f"src='{name}'" in page for name in pictures)
    assert f"{n} groups" in page and f"sim-a / group-{n - 4}" in page  # the last group is drawn too
    assert "durations.png" in page and "same axis" in page


@pytest.mark.parametrize("logs", [{"sim-a": 2}, {"sim-a": 2, "serve-b": 2}], ids=["one log", "two logs"])
def test_durations_one_log_a_histogram_several_logs_a_box_each(tmp_path, logs):
    page = write_report(analysis_of(tmp_path, logs)).read_text()
    assert (tmp_path / "durations.png").stat().st_size > 1000 and "src='durations.png'" in page


def test_the_summary_shows_violations_first(tmp_path):
    page = write_report(sweep_analysis(tmp_path), cell_params=sweep_cells()).read_text()
    summary = page.split("<h2>Summary per scenario run</h2>")[1].split("</tr>")[0]
    heads = [h.split(">")[1].split("<")[0] for h in summary.split("<th")[1:]]
    assert heads[:4] == ["cell", "parameters", "violations", "zombie overlaps"]
    assert "<p>Every cell: members=200, seed=1.</p>" in page


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (Debian package 'chromium')")
def test_the_page_in_chromium_at_1300_px(tmp_path):
    from playwright.sync_api import sync_playwright
    page_path = write_report(sweep_analysis(tmp_path), cell_params=sweep_cells(), compare="protocol")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            # nothing wider than the window: no sideways scrolling, no column out of sight
            assert page.evaluate("document.documentElement.scrollWidth") <= 1300
            summary = page.locator("h2:has-text('Summary per scenario run') ~ table").first
            for column in ("violations", "zombie overlaps"):
                head = summary.locator("th", has_text=column).first
                box = head.bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= 1300, column
                covering = page.evaluate("([x, y]) => document.elementFromPoint(x, y).textContent",
                                         [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
                assert covering == column
            violations = summary.locator("tr", has_text="c004").locator("td").nth(2)
            assert violations.inner_text() == "1" and violations.get_attribute("class") == " fail"
            # a verdict line per run, on one line each, the cells named by their parameters
            lines = page.locator("ul.verdicts li")
            assert lines.count() == 12
            assert lines.nth(0).inner_text() == (f"PASS c000 {C000}: every invariant held; 40 rebalances, p95 10006 "
                                                 f"ms; 3 zombie overlaps: expected")
            assert lines.nth(4).locator("b").inner_text() == "FAIL"
            assert lines.nth(4).locator("b").evaluate("e => getComputedStyle(e).color") == "rgb(187, 0, 0)"
            line_height = lines.nth(0).locator("b").bounding_box()["height"]     # one line of text
            assert [i for i in range(12) if lines.nth(i).bounding_box()["height"] > 1.5 * line_height] == []
            assert lines.nth(11).bounding_box()["y"] < 900            # all of them on the first screen
            # the pictures loaded, the cells' named by their parameters
            assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 100)")
            assert C000 in page.locator("img[src='cells.png']").get_attribute("alt")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report.png"))       # the first screen
        finally:
            browser.close()
