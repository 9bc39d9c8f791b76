"""report.html: one verdict line per run, the summary, the invariants with counterexamples, plots
(matplotlib PNGs next to the page; the timelines SVG, :mod:`.timeline_svg`) and, for sweeps, the
grid's cells side by side. A grid cell is named by its parameters (those that tell it from the other
cells) wherever the page shows it but in the tables that list its id beside them; timelines mark the
scenario's actions."""
from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .model import INVARIANT_TITLES, expected_notes
from .share import CAUSES, SKIPPED_BECAUSE
from .timeline_svg import BLUE, timeline_svg

#: Groups per timeline picture (every group is drawn, over as many pictures as it takes), in rows
#: of TIMELINE_COLUMNS small multiples.
TIMELINE_PAGE = 12
TIMELINE_COLUMNS = 3
#: Rebalances listed in the page (all are in the Parquet table).
LISTED_REBALANCES = 100

_CSS = """body{font-family:sans-serif;margin:1.2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 5px;font-size:13px;text-align:right}th{background:#eee}
td{white-space:nowrap}td.w{white-space:normal;min-width:10em;max-width:24em}td.l,th.l{text-align:left}.pass{color:#080;font-weight:bold}.fail{color:#b00;font-weight:bold}
.skipped,.unchecked{color:#888;font-weight:bold}.note{background:#ffd;padding:.5em 1em;border:1px solid #dd8}img{max-width:100%}
code{font-size:12px}ul.verdicts{list-style:none;padding:0;margin:.5em 0 1em}ul.verdicts li{margin:.2em 0;font-size:13px}
ul.verdicts b{display:inline-block;min-width:3.6em}"""

#: The summary's columns after the run's own: what the verdict rests on first, then the numbers.
VERDICT_COLUMNS = [("violations", "violations"), ("zombie_overlaps", "zombie overlaps")]
METRIC_COLUMNS = [("groups", "groups"), ("events", "events"), ("rebalances", "rebalances"),
                  ("duration_p50_ms", "p50 ms"), ("duration_p95_ms", "p95 ms"), ("duration_max_ms", "max ms"),
                  ("partition_seconds_unowned", "partition\u2011s unowned"), ("partitions_moved", "moved"),
                  ("min_moves", "minimum"), ("movement_ratio", "moved / minimum"),
                  ("partitions_revoked", "revoked"), ("max_balance", "max balance"),
                  ("max_member_idle_ms", "max idle ms")]
SUMMARY_COLUMNS = [("log", "log"), ("scenario", "scenario"), ("seed", "seed")] + VERDICT_COLUMNS + METRIC_COLUMNS
CELL_SUMMARY_COLUMNS = [("cell", "cell"), ("parameters", "parameters")] + VERDICT_COLUMNS + METRIC_COLUMNS
#: Digits shown of the summary's fractional columns (the Parquet table has them all).
_SHOWN_DIGITS = {"duration_p50_ms": 0, "duration_p95_ms": 0, "partition_seconds_unowned": 1, "movement_ratio": 2}

def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.4g}"
    return html.escape(str(v))


def _shown(key: str, value):
    """A summary value as the page shows it: rounded to :data:`_SHOWN_DIGITS` if listed there."""
    digits = _SHOWN_DIGITS.get(key)
    if digits is None or not isinstance(value, float):
        return value
    return round(value, digits) if digits else int(round(value))


def _table(rows, columns, left=("log", "cell", "scenario", "group", "invariant", "detail", "trigger"),
           wrap=("detail",), flag=()) -> str:
    """An HTML table; ``left``: columns aligned left, ``wrap``: columns whose cells may take several
    lines (the others keep to one), ``flag``: columns whose non-zero values show as failures."""
    head = "".join(f"<th class='{'l' if k in left else ''}'>{html.escape(t)}</th>" for k, t in columns)
    body = []
    for r in rows:
        cells = "".join(f"<td class='{'l' if k in left else ''}{' w' if k in wrap else ''}"
                        f"{' fail' if k in flag and r.get(k) else ''}'>{_fmt(r.get(k))}</td>" for k, _ in columns)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


# ------------------------------------------------------------------ runs: names and verdicts
def cell_names(cell_params: dict | None, leave_out=()) -> tuple[dict[str, str], dict]:
    """({cell: its name}, {parameter: value every cell shares}): a cell is named by the parameters
    that tell it from the others, the scenario by its name and the others as key=value
    ("rolling-restart, protocol=eager (range)"); ``leave_out``: parameters not named."""
    if not cell_params:
        return {}, {}
    situations = [tuple(p.items()) for p in cell_params.values()]
    common = _common(situations) if len(situations) > 1 else {}
    skip = set(common) | set(leave_out)
    names = {cell: _situation_label(tuple(p.items()), skip) or cell for cell, p in cell_params.items()}
    return names, common


def run_names(analysis, cell_params: dict | None = None) -> dict[str, str]:
    """{log: how the page names that run}: a grid cell by its id and parameters, another log by
    its name, scenario and seed."""
    names, _ = cell_names(cell_params)
    out = {}
    for entry in analysis.logs:
        log, cell = entry["log"], entry.get("cell")
        if cell in names:
            out[log] = f"{cell} {names[cell]}" if names[cell] != cell else cell
        elif entry.get("scenario") and entry.get("scenario") != log:
            seed = entry.get("seed")
            out[log] = f"{log} ({entry['scenario']}{f', seed {seed}' if seed is not None else ''})"
        else:
            out[log] = log
    return out


@dataclass
class Verdict:
    """A run's verdict: ``status`` "pass" (every invariant checked held), "fail" (one was violated)
    or "unchecked" (none could be checked); ``detail`` says on what it rests."""
    log: str
    run: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status.upper()}: {self.run}: {self.detail}"


def _title(invariant_row) -> str:
    return INVARIANT_TITLES.get(invariant_row["invariant"], invariant_row["invariant"])


def verdicts(analysis, cell_params: dict | None = None) -> list[Verdict]:
    """One verdict per run (log), in the order of the logs' names: the invariants, the rebalances'
    count and p95 (when none failed) and what is expected, not a violation."""
    names = run_names(analysis, cell_params)
    summary = {s["log"]: s for s in analysis.summary}
    invariants = defaultdict(list)
    for r in analysis.invariants:
        invariants[r["log"]].append(r)
    out = []
    for entry in sorted(analysis.logs, key=lambda e: e["log"]):
        log = entry["log"]
        s = summary.get(log, {})
        checks = invariants.get(log, [])
        failed = [r for r in checks if r["status"] == "fail"]
        held = [r for r in checks if r["status"] == "pass"]
        skipped = [r for r in checks if r["status"] == "skipped"]
        if failed:
            status = "fail"
            n = sum(r["failed"] for r in failed)
            parts = [f"{n} violation{'s' if n != 1 else ''} of " + ", ".join(f"'{_title(r)}' ({r['failed']})" for r in failed)]
        elif held:
            status = "pass"
            parts = ["every invariant held" if not skipped else
                     f"{len(held)} invariant{'s' if len(held) != 1 else ''} held"]
        else:
            status, parts = "unchecked", ["no invariant could be checked"]
        why = defaultdict(list)            # a rebalance invariant is skipped for want of member events
        for r in skipped:
            why[SKIPPED_BECAUSE.get(r["invariant"], "coordinator events only")].append(_title(r))
        for reason, titles in why.items():
            parts.append(f"not checked ({reason}): " + ", ".join(titles))
        if s.get("rebalances") is not None and not failed:      # a failure: what failed, the rest below
            parts.append(f"{s['rebalances']} rebalance{'s' if s['rebalances'] != 1 else ''}"
                         + (f", p95 {s['duration_p95_ms']:.0f} ms" if s.get("duration_p95_ms") is not None else ""))
        expected = []
        if s.get("zombie_overlaps"):
            expected.append(f"{s['zombie_overlaps']} zombie overlap{'s' if s['zombie_overlaps'] != 1 else ''}")
        for ev in (entry.get("scenario_doc") or {}).get("events") or []:
            if ev.get("action") == "add_partitions":
                expected.append(f"partitions added late ({ev.get('topic')} to {ev.get('partitions')} "
                                f"at {(ev.get('at_ms') or 0) / 1000:g} s)")
        if expected:
            parts.append(", ".join(expected) + ": expected")
        out.append(Verdict(log, names.get(log, log), status, "; ".join(parts)))
    return out


def _verdicts_section(analysis, cell_params) -> str:
    items = [f"<li class='verdict' data-status='{v.status}'><b class='{v.status}'>{v.status.upper()}</b> "
             f"{html.escape(v.run)}: {html.escape(v.detail)}</li>" for v in verdicts(analysis, cell_params)]
    if not items:
        return ""
    return "<ul class='verdicts'>" + "".join(items) + "</ul>"


# ------------------------------------------------------------------ the page
def write_report(analysis, cell_params: dict | None = None, compare: str | None = None) -> Path | str:
    """Write report.html and its pictures into ``analysis.out``; returns the page's path. The driver
    writes them: into a Hadoop filesystem URI (``hdfs://``...) through the active Spark session."""
    from . import storage
    if storage.is_uri(analysis.out):
        import tempfile
        from pyspark.sql import SparkSession
        with tempfile.TemporaryDirectory(prefix="groupcoord-report-") as tmp:
            _write_report(analysis, Path(tmp), cell_params, compare)
            storage.upload_dir(SparkSession.getActiveSession(), tmp, analysis.out)
        return storage.join(analysis.out, "report.html")
    return _write_report(analysis, Path(analysis.out), cell_params, compare)


def _write_report(analysis, out: Path, cell_params: dict | None, compare: str | None = None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>groupcoord rebalance report</title>"
             f"<style>{_CSS}</style></head><body><h1>Rebalance report</h1>",
             f"<p>{len(analysis.logs)} log(s), {analysis.events} events, analysed in "
             f"{analysis.seconds:.1f} s. Tables (Parquet): "
             + ", ".join(f"<code>{html.escape(n)}</code>" for n in sorted(analysis.tables)) + ".</p>",
             _verdicts_section(analysis, cell_params)]
    coordinator_only = [s["log"] for s in analysis.summary if not s.get("member_events")]
    if coordinator_only:
        parts.append("<p class='note'>Coordinator events only (no member events) in: "
                     + ", ".join(html.escape(str(x)) for x in coordinator_only)
                     + ". For these, partitions moved, minimum movement, revocations, time without partitions, "
                       "balance and partition-seconds without an owner are not known (empty), sessions come from "
                       "the coordinator's membership events, and the invariants that need ownership are skipped."
                       "</p>")
    parts.append(_summary_section(analysis, cell_params))
    if cell_params and compare:
        parts.append(_compare_section(analysis, cell_params, compare, out))
    if cell_params:
        parts.append(_cells_section(analysis, cell_params, out))
    parts.append(_work_section(analysis))
    parts.append(_invariants_section(analysis))
    parts.append("<h2>Plots</h2>")
    names = _plot_names(analysis, cell_params)
    for name, title, figure in (
            ("durations.png", "Rebalance durations per log (same axis)", lambda: durations_figure(analysis, names)),
            ("movement.png", "Partitions moved against the minimum necessary", lambda: movement_figure(analysis))):
        fig = figure()
        if fig is not None:
            _save(fig, out / name)
            parts.append(f"<h3>{title}</h3><img src='{name}' alt='{html.escape(title)}'>")
    parts.append(_timeline_section(analysis, out, cell_params, compare))
    parts.append(f"<h2>Rebalances</h2><p>The first {LISTED_REBALANCES} by start (all of them are in the "
                 f"<code>rebalances</code> table).</p>")
    rebs = sorted(analysis.rebalances, key=lambda r: (r["log"], r["start_ms"] or 0, r["group"]))[:LISTED_REBALANCES]
    parts.append(_table(rebs, [("log", "log"), ("group", "group"),
                               ("start_ms_from_log_start", "start (ms from log start)"),
                               ("duration_ms", "duration ms"), ("trigger", "trigger"),
                               ("partitions_moved", "moved"), ("min_moves", "minimum")]))
    parts.append("</body></html>")
    page = out / "report.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page


def _summary_section(analysis, cell_params: dict | None) -> str:
    """One row per run: the run, its violations and zombie overlaps, then its numbers (rounded)."""
    cells = any(s.get("cell") for s in analysis.summary)
    names, common = cell_names(cell_params)
    rows = []
    for s in analysis.summary:
        row = dict(s, parameters=names.get(s.get("cell"), ""))
        for key in _SHOWN_DIGITS:
            row[key] = _shown(key, row.get(key))
        rows.append(row)
    shared = (" Every cell: " + html.escape(", ".join(f"{k}={v}" for k, v in common.items())) + ".") \
        if cells and common else ""
    head = "<h2>Summary per scenario run</h2>" + (f"<p>{shared.strip()}</p>" if shared else "")
    columns = CELL_SUMMARY_COLUMNS if cells else SUMMARY_COLUMNS
    return head + _table(rows, columns, left=("log", "cell", "scenario", "parameters"), wrap=("parameters",),
                         flag=("violations",))


#: The work table's columns the page shows (all are in the Parquet table).
WORK_COLUMNS = [("log", "log"), ("group", "group"), ("group_type", "type"), ("clients", "consumers"),
                ("records", "records"), ("acknowledged", "acknowledged"), ("archived", "archived"),
                ("unfinished", "unfinished"), ("throughput_per_s", "acknowledged / s"),
                ("latency_p50_ms", "p50 latency ms"), ("latency_p99_ms", "p99 latency ms"),
                ("duplicate_deliveries", "duplicate deliveries"), ("causes", "redeliveries by cause"),
                ("mean_utilisation", "mean utilisation"), ("idle_worker_s", "idle worker\u2011s"),
                ("idle_workers", "workers that processed nothing")]
_WORK_DIGITS = {"throughput_per_s": 1, "latency_p50_ms": 0, "latency_p99_ms": 0, "mean_utilisation": 2,
                "idle_worker_s": 1}


def _work_section(analysis) -> str:
    """Work queues (share groups, consumer groups with job_ms): one row per group, when a log has any."""
    rows = getattr(analysis, "work", None) or []
    if not rows:
        return ""
    shown = []
    for r in sorted(rows, key=lambda r: (r["log"], r["group"])):
        row = dict(r)
        row["causes"] = ", ".join(f"{c.replace('_', ' ')} {r.get(f'redeliveries_{c}')}" for c in CAUSES
                                  if r.get(f"redeliveries_{c}")) or "none"
        for key, digits in _WORK_DIGITS.items():
            v = row.get(key)
            if isinstance(v, float):
                row[key] = round(v, digits) if digits else int(round(v))
        shown.append(row)
    unchecked = sorted({f"{r['log']}/{r['group']}" for r in rows if not r.get("all_settled_checked")})
    note = ("<p class='note'>Unfinished records are not violations where the producers stopped less than the "
            "group's lock duration (consumer groups: session timeout) + 10 s before the log's end: "
            + html.escape(", ".join(unchecked)) + ".</p>") if unchecked else ""
    return ("<h2>Work queues</h2><p>Share groups (KIP-932) and consumer groups used as work queues: each "
            "record produced to a group's topics, its deliveries (polls that returned it) and how it ended "
            "(acknowledged: a share group's successful ACCEPT, a consumer group's first commit past it; "
            "archived: rejected, or its last delivery at the delivery limit not accepted). Latency is from "
            "production to acknowledgement; throughput is acknowledged records per second from the first "
            "record produced to the last acknowledged; a redelivery's cause is what ended the delivery "
            "before it. Tables (Parquet): <code>deliveries</code>, <code>consumers</code>, "
            "<code>redeliveries</code>, <code>archived</code>, <code>work</code>.</p>"
            + _table(shown, WORK_COLUMNS, left=("log", "group", "group_type", "causes"), wrap=("causes",)) + note)


def _plot_names(analysis, cell_params: dict | None) -> dict[str, str]:
    """{log: its name in a plot}: a grid cell by its parameters alone, another log by its name."""
    names, _ = cell_names(cell_params)
    return {e["log"]: names.get(e.get("cell"), e["log"]) for e in analysis.logs}


def _invariants_section(analysis) -> str:
    parts = ["<h2>Invariants</h2>"]
    by_log = defaultdict(list)
    for r in analysis.invariants:
        by_log[r["log"]].append(r)
    rows = []
    zombies = {s["log"]: s.get("zombie_overlaps") for s in analysis.summary}
    expected = []
    for entry in sorted(analysis.logs, key=lambda x: x["log"]):
        for note in expected_notes(entry.get("scenario_doc"), zombies.get(entry["log"])):
            expected.append(f"<li><b>{html.escape(entry['log'])}</b>: {html.escape(note)}</li>")
    for log, checks in sorted(by_log.items()):
        for c in checks:
            status = c["status"]
            rows.append(f"<tr><td class='l'>{html.escape(log)}</td>"
                        f"<td class='l'>{html.escape(INVARIANT_TITLES.get(c['invariant'], c['invariant']))}</td>"
                        f"<td class='l {status}'>{status}</td><td>{c['checked']}</td><td>{c['failed']}</td></tr>")
    parts.append("<table><tr><th class='l'>log</th><th class='l'>invariant</th><th class='l'>result</th>"
                 "<th>checks</th><th>violations</th></tr>" + "".join(rows) + "</table>")
    if expected:
        parts.append("<h3>Expected, not violations</h3><ul class='note'>" + "".join(expected) + "</ul>")
    if analysis.violations:
        parts.append("<h3>Counterexamples</h3>")
        starts = {entry["log"]: entry.get("start_ms") or 0 for entry in analysis.logs}
        rows = [dict(v, invariant=INVARIANT_TITLES.get(v["invariant"], v["invariant"]),
                     ms_from_log_start=v["ts_ms"] - starts.get(v["log"], 0),
                     detail=json.loads(v["detail"])) for v in analysis.violations]
        for r in rows:
            r["detail"] = json.dumps(r["detail"], sort_keys=True)
        parts.append(_table(rows, [("log", "log"), ("group", "group"), ("invariant", "invariant"),
                                   ("ms_from_log_start", "at (ms from log start)"), ("detail", "detail")]))
    return "\n".join(parts)



def _cells_section(analysis, cell_params: dict, out: Path) -> str:
    keys = sorted({k for p in cell_params.values() for k in p})
    summary = {s["cell"]: s for s in analysis.summary}
    rows = []
    for cell in sorted(cell_params):
        row = {"cell": cell, **{f"param:{k}": cell_params[cell].get(k) for k in keys}}
        row.update(summary.get(cell, {}))
        rows.append(row)
    columns = [("cell", "cell")] + [(f"param:{k}", k) for k in keys] + [
        ("rebalances", "rebalances"), ("duration_p50_ms", "p50 ms"), ("duration_p95_ms", "p95 ms"),
        ("duration_max_ms", "max ms"), ("partition_seconds_unowned", "partition\u2011s unowned"),
        ("movement_ratio", "moved / minimum"), ("violations", "violations")]
    left = ("cell",) + tuple(f"param:{k}" for k in keys)
    parts = ["<h2>Grid cells side by side</h2>", _table(rows, columns, left=left)]
    names, common = cell_names(cell_params)
    fig = cells_figure(rows, [names[r["cell"]] for r in rows], common)
    if fig is not None:
        _save(fig, out / "cells.png")
        parts.append("<img src='cells.png' alt='p95 rebalance ms, partition-s unowned and moved / minimum of "
                     + html.escape("; ".join(names[r["cell"]] for r in rows)) + "'>")
    return "\n".join(parts)


#: What the comparison puts side by side: summary column, title, unit note.
COMPARED = [("duration_p50_ms", "p50 rebalance ms"), ("duration_p95_ms", "p95 rebalance ms"),
            ("partition_seconds_unowned", "partition-s without an owner"),
            ("movement_ratio", "partitions moved / minimum")]


def comparison(summary: list[dict], cell_params: dict, compare: str) -> tuple[list, list, dict]:
    """(situations, values of the compared axis, {(situation, value): summary row}): a situation is
    one combination of the other parameters (seed included), as a tuple of (key, value)."""
    by_cell = {s["cell"]: s for s in summary}
    situations, values, table = [], [], {}
    for cell in sorted(cell_params):
        params = cell_params[cell]
        if compare not in params:
            continue
        situation = tuple((k, v) for k, v in params.items() if k != compare)
        value = params[compare]
        if situation not in situations:
            situations.append(situation)
        if value not in values:
            values.append(value)
        table[(situation, value)] = by_cell.get(cell, {})
    return situations, values, table


def _situation_label(situation, common=()) -> str:
    return ", ".join(f"{v}" if k == "scenario" else f"{k}={v}" for k, v in situation if k not in common)


def _common(situations) -> dict:
    """The parameters every situation shares (seed=1, say): said once, not in every label."""
    if not situations:
        return {}
    first = dict(situations[0])
    return {k: v for k, v in first.items() if all(dict(s).get(k) == v for s in situations[1:])}


def _compare_section(analysis, cell_params: dict, compare: str, out: Path) -> str:
    situations, values, table = comparison(analysis.summary, cell_params, compare)
    if not situations:
        return ""
    common = _common(situations) if len(situations) > 1 else {}
    head = ["<th class='l' rowspan='2'>situation</th>"] + [
        f"<th colspan='{len(values)}'>{html.escape(title)}</th>" for _, title in COMPARED]
    sub = [f"<th>{html.escape(str(v))}</th>" for _ in COMPARED for v in values]
    rows = []
    for sit in situations:
        cells = [f"<td class='l w'>{html.escape(_situation_label(sit, common))}</td>"]
        for key, _ in COMPARED:
            got = [_shown(key, table.get((sit, v), {}).get(key)) for v in values]
            best = min((g for g in got if g is not None), default=None)
            cells += [f"<td{' class=pass' if g is not None and g == best and len(values) > 1 else ''}>{_fmt(g)}</td>"
                      for g in got]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    shared = (" Every cell: " + html.escape(", ".join(f"{k}={v}" for k, v in common.items())) + ".") if common else ""
    parts = [f"<h2>{html.escape(compare)} side by side</h2>",
             f"<p>Each row is one situation (the other parameters); each metric has one column per "
             f"{html.escape(compare)}, the lowest in bold.{shared} A rebalance's duration runs from its start "
             f"to its completion: classic groups from the JoinGroup round's start to the SyncGroup that ends "
             f"it; consumer groups (KIP-848) from an epoch bump until every member is at that epoch or a later "
             f"one and every partition that change released has its new owner (such rebalances overlap). "
             f"Partition-seconds without an owner are the groups' own, over the whole run; moved / minimum "
             f"is over the rebalances measured (a consumer group's only when no later change was under way "
             f"at its end).</p>",
             "<table><tr>" + "".join(head) + "</tr><tr>" + "".join(sub) + "</tr>" + "".join(rows) + "</table>"]
    fig = compare_figure(situations, values, table, common, compare)
    _save(fig, out / "compare.png")
    parts.append(f"<img src='compare.png' alt='{html.escape(compare)} side by side'>")
    return "\n".join(parts)


# ------------------------------------------------------------------ plots
# Each *_figure function returns a matplotlib Figure (None: nothing to draw) laid out by
# matplotlib's constrained layout, legends outside the axes; _save writes and frees it.

def _save(fig, path: Path, dpi: int = 90) -> None:
    """Write a figure as a PNG and free it."""
    import matplotlib.pyplot as plt
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def _counts(axis, nbins: int | str = "auto") -> None:
    """Ticks at whole numbers on an axis of counts (rebalances, members, partitions)."""
    from matplotlib.ticker import MaxNLocator
    axis.set_major_locator(MaxNLocator(integer=True, nbins=nbins))


def compare_figure(situations, values, table, common=(), compare: str | None = None):
    """One panel per metric (2 by 2): for each situation (a row), one bar per compared value, the
    values' legend above the panels; a log scale where the values span more than 30 times."""
    import matplotlib.pyplot as plt
    colors = ["#c44", "#47a", "#4a7", "#a7c", "#ca4", "#777"]
    n, k = len(situations), len(values)
    labels = [_situation_label(s, common) for s in situations]
    height = max(2.5, 0.22 * n * (k + 1))
    fig, axes = plt.subplots(2, 2, figsize=(13, 2 * height + 1.6), squeeze=False, layout="constrained")
    width = 0.8 / k
    for ax, (key, title) in zip(axes.flat, COMPARED):
        positive = []
        for j, v in enumerate(values):
            xs = [table.get((s, v), {}).get(key) or 0 for s in situations]
            positive += [x for x in xs if x > 0]
            ax.barh([i + (j - (k - 1) / 2) * width for i in range(n)], xs, width, color=colors[j % len(colors)],
                    label=str(v))
        if positive and max(positive) / min(positive) > 30:
            ax.set_xscale("log")
        ax.set_yticks(range(n), labels, fontsize=8)
        ax.invert_yaxis()                        # the table's order, top down
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper center", ncols=min(k, 6), fontsize=9, frameon=False,
               title=compare, title_fontsize=9)
    return fig


def cells_figure(rows: list[dict], labels: list[str], common: dict | None = None):
    """p95 rebalance ms, partition-s unowned and moved / minimum per cell: one horizontal bar per
    cell, named by its parameters (``labels``, one per row), top down in the table's order."""
    import matplotlib.pyplot as plt
    if not rows:
        return None
    n = len(rows)
    fig, axes = plt.subplots(1, 3, figsize=(13, 1.2 + 0.28 * n), sharey=True, layout="constrained")
    for ax, key, title in zip(axes, ("duration_p95_ms", "partition_seconds_unowned", "movement_ratio"),
                              ("p95 rebalance ms", "partition-s unowned", "moved / minimum")):
        ax.barh(range(n), [r.get(key) or 0 for r in rows], color="#4a7")
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(n), labels, fontsize=8)
    axes[0].invert_yaxis()                       # shared: every panel top down as the table
    if common:
        fig.suptitle("every cell: " + ", ".join(f"{k}={v}" for k, v in common.items()), fontsize=9)
    return fig


def durations_figure(analysis, names: dict | None = None):
    """Rebalance durations: a histogram for one log; for several, one box per log side by side on
    one axis, each named (``names``: log -> name, a cell's parameters)."""
    import matplotlib.pyplot as plt
    by_log = defaultdict(list)
    for r in analysis.rebalances:
        if r["duration_ms"] is not None:
            by_log[r["log"]].append(r["duration_ms"])
    if not by_log:
        return None
    logs = sorted(by_log)
    if len(logs) == 1:
        values = by_log[logs[0]]
        fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
        ax.hist(values, bins=min(40, max(5, len(set(values)))), color=BLUE)
        ax.set_xlabel("rebalance duration (ms)")
        ax.set_ylabel("rebalances")
        _counts(ax.yaxis)
    else:
        labels = [(names or {}).get(log, log) for log in logs]
        fig, ax = plt.subplots(figsize=(10, 1 + 0.32 * len(logs)), layout="constrained")
        ax.boxplot([by_log[log] for log in logs], orientation="horizontal", showfliers=True)
        ax.set_yticks(range(1, len(logs) + 1), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("rebalance duration (ms)")
        ax.grid(axis="x", alpha=0.3)
    return fig


def movement_figure(analysis):
    """Partitions moved against the minimum necessary, one point per rebalance."""
    import matplotlib.pyplot as plt
    pts = [(r["min_moves"], r["partitions_moved"]) for r in analysis.rebalances
           if r["min_moves"] is not None and r["partitions_moved"] is not None]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(4.5, 4.3), layout="constrained")
    xs, ys = zip(*pts)
    ax.scatter(xs, ys, s=12, alpha=0.6, color="#a47")
    top = max(max(xs), max(ys), 1)
    ax.plot([0, top], [0, top], color="#888", linewidth=1, label="moved = minimum")
    ax.set_xlabel("minimum necessary moves")
    ax.set_ylabel("partitions moved")
    _counts(ax.xaxis)
    _counts(ax.yaxis)
    fig.legend(loc="outside upper center", fontsize=8, frameon=False)
    return fig


# ------------------------------------------------------------------ timelines
@dataclass
class Action:
    """A scenario action drawn on a timeline: ``at_s`` seconds from the log's start; ``groups``:
    the group ids it acts on (None: every group)."""
    at_s: float
    label: str
    groups: frozenset | None


def _who(ev: dict) -> str:
    if ev.get("members") is not None:
        return "m" + ",".join(str(m) for m in ev["members"])
    if ev.get("count") is not None:
        return f"{ev['count']} members"
    return "all members"


def _seconds(ms) -> str:
    return f"{(ms or 0) / 1000:g} s"


def action_label(ev: dict) -> str:
    """A scenario action in a few words ("crash 5 members", "clicks to 18 partitions")."""
    a = ev.get("action")
    if a == "crash":
        text = f"crash {_who(ev)}" + (f", back after {_seconds(ev['restart_after_ms'])}"
                                      if ev.get("restart_after_ms") else "")
    elif a == "slow":
        what = "freeze" if ev.get("kind", "heartbeat") == "heartbeat" else "poll stall"
        text = f"{_who(ev)} {what} {_seconds(ev.get('duration_ms'))}"
    elif a == "subscribe":
        text = "subscribe " + "+".join(ev.get("topics") or [])
    elif a == "add_partitions":
        text = f"{ev.get('topic')} to {ev.get('partitions')} partitions"
    elif a == "move_coordinator":
        text = "coordinator moves" + (f" to node {ev['node']}" if ev.get("node") is not None else "")
    elif a in ("node_down", "node_up"):
        text = f"node {ev.get('node')} {'down' if a == 'node_down' else 'up'}"
    elif a == "restart":
        text = "rolling restart" + (f" {_who(ev)}" if ev.get("members") or ev.get("count") else "")
    elif a == "join":
        text = f"+{ev.get('count', 1)} members"
    elif a == "leave":
        text = f"{_who(ev)} leave"
    elif a == "network_partition":
        text = f"network partition {_seconds(ev.get('duration_ms'))}"
    else:
        text = str(a)
    return f"{ev['group']}: {text}" if ev.get("group") and a != "move_coordinator" else \
        (f"{text} ({ev['group']})" if ev.get("group") else text)


def scenario_actions(entry: dict) -> list[Action]:
    """The actions of a log's scenario (scenario.json's events), on the log's time axis: a
    simulation's virtual time starts at 0, a fleet's scenario with its log."""
    doc = entry.get("scenario_doc") or {}
    start = entry.get("start_ms") or 0
    origin = 0 if doc.get("mode") == "simulate" else start
    ids = {}
    for g in doc.get("groups") or []:
        count = g.get("count") or 1
        width = len(str(count - 1))
        ids[g.get("name")] = [g.get("name")] if count == 1 else [f"{g.get('name')}-{i:0{width}d}" for i in range(count)]
    out = []
    for ev in doc.get("events") or []:
        group = ev.get("group")
        groups = None if group is None else frozenset(ids.get(group, [group]))
        out.append(Action((origin + (ev.get("at_ms") or 0) - start) / 1000, action_label(ev), groups))
    return out


@dataclass
class Panel:
    """One group's timeline: steps of members and partitions without an owner (None: unknown),
    rebalances as (start, duration) in seconds, the scenario's actions on it."""
    title: str
    xs: list
    members: list
    unowned: list | None
    rebalances: list
    actions: list


def _timeline_section(analysis, out: Path, cell_params: dict | None = None, compare: str | None = None) -> str:
    """Every group's timeline, the runs of one scenario together (TIMELINE_PAGE groups a picture),
    each run named by its parameters in a sweep (with a compared axis: its values across, one
    situation a row); the scenario's actions marked and listed. The pictures are SVG files
    (:mod:`.timeline_svg`)."""
    section, pictures = _timeline_pictures(analysis, out, cell_params, compare)
    for panels, end_s, actions, columns, path in pictures:
        path.write_text(timeline_svg(panels, end_s, actions, columns), encoding="utf-8")
    return section


def _timeline_pictures(analysis, out: Path, cell_params: dict | None = None,
                       compare: str | None = None) -> tuple[str, list[tuple]]:
    """The timeline section's HTML and its pictures to write: (panels, end_s, actions, columns, path)."""
    series = defaultdict(list)
    for p in analysis.timeline:
        series[(p["log"], p["group"])].append(p)
    if not series:
        return "", []
    entries = {e["log"]: e for e in analysis.logs}
    params = {e["log"]: (cell_params or {}).get(e.get("cell")) for e in analysis.logs}
    names, common = cell_names(cell_params, leave_out=("scenario", compare))
    values = []           # the compared axis' values, in the grid's order
    for p in (cell_params or {}).values():
        if compare in p and p[compare] not in values:
            values.append(p[compare])
    rebalances = defaultdict(list)
    for r in analysis.rebalances:
        if r["start_ms"] is not None:
            rebalances[(r["log"], r["group"])].append((r["start_ms"], r["duration_ms"] or 0))
    groups_of = defaultdict(set)
    for log, group in series:
        groups_of[log].add(group)

    def scenario_of(log):
        entry = entries.get(log, {})
        return entry.get("scenario") or (entry.get("scenario_doc") or {}).get("name")

    def title(key):
        """A grid cell's run by its parameters, its compared value first; another log's by name."""
        log, group = key
        run = params.get(log)
        if run is None:
            return f"{log} / {group}"
        first = [str(run[compare])] if compare in run else []
        rest = [names[entries[log]["cell"]]] if names[entries[log]["cell"]] != entries[log]["cell"] else []
        if len(groups_of[log]) > 1:
            rest.append(group)
        return ", ".join(first + rest) or log

    def order(key):       # with a compared axis: one situation a row, its values across
        run = params.get(key[0])
        if run is None or compare not in run:
            return (0, key)
        situation = tuple((k, str(v)) for k, v in run.items() if k != compare)
        return (1, situation, key[1], values.index(run[compare]), key)

    by_scenario = defaultdict(list)
    for key in sorted(series, key=order):
        by_scenario[scenario_of(key[0])].append(key)
    columns = len(values) if compare and 2 <= len(values) <= 4 else TIMELINE_COLUMNS
    page_size = TIMELINE_PAGE - TIMELINE_PAGE % columns
    total = len(series)
    shared = (" Every run: " + html.escape(", ".join(f"{k}={v}" for k, v in common.items() if k != "scenario"))
              + ".") if common else ""
    parts = [f"<h3>Timeline per group</h3><p>Members (blue, left scale) and partitions without an owner (red, "
             f"right scale) over time, in seconds from each log's start; rebalances shaded, each start marked (so "
             f"the shortest show); the scenario's actions dashed. The runs of one scenario side by side, on one "
             f"time axis and scale{f', a column per {html.escape(compare)}' if columns == len(values) else ''}. "
             f"{total} groups.{shared}</p>"]
    page, pictures = 0, []
    for scenario, keys in by_scenario.items():
        actions = scenario_actions(entries.get(keys[0][0], {}))
        if actions:
            listed = "; ".join(f"{a.at_s:g} s: {html.escape(a.label)}" for a in sorted(actions, key=lambda a: a.at_s))
            parts.append(f"<p>Scenario <b>{html.escape(str(scenario))}</b>, its actions (dashed): {listed}.</p>")
        for first in range(0, len(keys), page_size):
            page += 1
            chunk = keys[first:first + page_size]
            panels, end_s = [], 0.0
            for key in chunk:
                entry = entries.get(key[0], {})
                pts = sorted(series[key], key=lambda p: p["ts_ms"])
                t0 = entry.get("start_ms")
                t0 = t0 if t0 is not None else pts[0]["ts_ms"]
                duration = (entry.get("scenario_doc") or {}).get("duration_s")
                xs = [(p["ts_ms"] - t0) / 1000 for p in pts]
                end_s = max(end_s, xs[-1], float(duration or 0))
                has_unowned = any(p["unowned"] is not None for p in pts)
                panels.append(Panel(
                    title=f"{title(key)}\n{len(rebalances[key])} rebalances", xs=xs,
                    members=[p["members"] or 0 for p in pts],
                    unowned=[p["unowned"] or 0 for p in pts] if has_unowned else None,
                    rebalances=[((s - t0) / 1000, d / 1000) for s, d in rebalances[key]],
                    actions=[a for a in scenario_actions(entry) if a.groups is None or key[1] in a.groups]))
            name = f"timeline-{page}.svg"
            pictures.append((panels, end_s, actions, columns, out / name))
            if all(params.get(log) is not None for log, _ in chunk):
                heading = f"{scenario}: {len(chunk)} runs"
            else:
                label = f"{chunk[0][0]} / {chunk[0][1]} to {chunk[-1][0]} / {chunk[-1][1]}"
                heading = f"{scenario}: {label}" if scenario else label
            alt = "timelines of " + "; ".join(p.title.replace("\n", ": ") for p in panels)
            parts.append(f"<h4>{html.escape(heading)}</h4><img src='{name}' alt='{html.escape(alt)}'>")
    return "\n".join(parts), pictures
