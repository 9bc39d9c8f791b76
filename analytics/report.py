"""report.html: the summary, the invariants with counterexamples, plots (matplotlib PNGs next to
the page) and, for sweeps, the grid's cells side by side."""
from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path

from .model import INVARIANT_TITLES, expected_notes

#: Groups per timeline picture (every group is drawn, over as many pictures as it takes).
TIMELINE_PAGE = 10
#: Rebalances listed in the page (all are in the Parquet table).
LISTED_REBALANCES = 100

_CSS = """body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}th{background:#eee}
td{white-space:nowrap}td.w{white-space:normal}td.l,th.l{text-align:left}.pass{color:#080;font-weight:bold}.fail{color:#b00;font-weight:bold}
.skipped{color:#888}.note{background:#ffd;padding:.5em 1em;border:1px solid #dd8}img{max-width:100%}
code{font-size:12px}"""

SUMMARY_COLUMNS = [("log", "log"), ("scenario", "scenario"), ("seed", "seed"), ("groups", "groups"),
                   ("events", "events"), ("rebalances", "rebalances"), ("duration_p50_ms", "p50 ms"),
                   ("duration_p95_ms", "p95 ms"), ("duration_max_ms", "max ms"),
                   ("partition_seconds_unowned", "partition-s unowned"), ("partitions_moved", "moved"),
                   ("min_moves", "minimum"), ("movement_ratio", "moved / minimum"),
                   ("partitions_revoked", "revoked"), ("max_balance", "max balance"),
                   ("max_member_idle_ms", "max idle ms"), ("violations", "violations"),
                   ("zombie_overlaps", "zombie overlaps")]


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.4g}"
    return html.escape(str(v))


def _table(rows, columns, left=("log", "cell", "scenario", "group", "invariant", "detail", "trigger")) -> str:
    head = "".join(f"<th class='{'l' if k in left else ''}'>{html.escape(t)}</th>" for k, t in columns)
    body = []
    for r in rows:
        cells = "".join(f"<td class='{'l' if k in left else ''}{' w' if k == 'detail' else ''}'>{_fmt(r.get(k))}</td>"
                        for k, _ in columns)     # cells keep to one line, but a counterexample's detail
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def write_report(analysis, cell_params: dict | None = None, compare: str | None = None) -> Path | str:
    """Write report.html and its PNGs into ``analysis.out``; returns the page's path. The driver
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
             + ", ".join(f"<code>{html.escape(n)}</code>" for n in sorted(analysis.tables)) + ".</p>"]
    coordinator_only = [s["log"] for s in analysis.summary if not s.get("member_events")]
    if coordinator_only:
        parts.append("<p class='note'>Coordinator events only (no member events) in: "
                     + ", ".join(html.escape(str(x)) for x in coordinator_only)
                     + ". For these, partitions moved, minimum movement, revocations, time without partitions, "
                       "balance and partition-seconds without an owner are not known (empty), sessions come from "
                       "the coordinator's membership events, and the invariants that need ownership are skipped."
                       "</p>")
    parts.append("<h2>Summary per scenario run</h2>")
    columns = SUMMARY_COLUMNS if not any(s.get("cell") for s in analysis.summary) else \
        [("cell", "cell")] + SUMMARY_COLUMNS[1:]
    parts.append(_table(analysis.summary, columns))
    if cell_params and compare:
        parts.append(_compare_section(analysis, cell_params, compare, out))
    if cell_params:
        parts.append(_cells_section(analysis, cell_params, out))
    parts.append(_invariants_section(analysis))
    parts.append("<h2>Plots</h2>")
    for name, title, draw in (("durations.png", "Rebalance durations per log (same axis)", _plot_durations),
                              ("movement.png", "Partitions moved against the minimum necessary", _plot_movement)):
        if draw(analysis, out / name):
            parts.append(f"<h3>{title}</h3><img src='{name}' alt='{html.escape(title)}'>")
    parts.append(_timeline_section(analysis, out))
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
        ("duration_max_ms", "max ms"), ("partition_seconds_unowned", "partition-s unowned"),
        ("movement_ratio", "moved / minimum"), ("violations", "violations")]
    left = ("cell",) + tuple(f"param:{k}" for k in keys)
    parts = ["<h2>Grid cells side by side</h2>", _table(rows, columns, left=left)]
    if _plot_cells(rows, out / "cells.png"):
        parts.append("<img src='cells.png' alt='cells'>")
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
        cells = [f"<td class='l'>{html.escape(_situation_label(sit, common))}</td>"]
        for key, _ in COMPARED:
            got = [table.get((sit, v), {}).get(key) for v in values]
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
    if _plot_compare(situations, values, table, out / "compare.png", common):
        parts.append(f"<img src='compare.png' alt='{html.escape(compare)} side by side'>")
    return "\n".join(parts)


def _save(fig, path: Path) -> bool:
    """Lay a plot out, write it as a PNG and free it; True (a plot was written)."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def _plot_compare(situations, values, table, path: Path, common=()) -> bool:
    """One panel per metric (2 by 2): for each situation (a row), one bar per compared value (a
    shared legend); a log scale where the values span more than 30 times."""
    import matplotlib.pyplot as plt
    colors = ["#c44", "#47a", "#4a7", "#a7c", "#ca4", "#777"]
    n, k = len(situations), len(values)
    labels = [_situation_label(s, common) for s in situations]
    height = max(2.5, 0.22 * n * (k + 1))
    fig, axes = plt.subplots(2, 2, figsize=(13, 2 * height + 1.2), squeeze=False)
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
    axes[0, 0].legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def _plot_cells(rows, path: Path) -> bool:
    import matplotlib.pyplot as plt
    if not rows:
        return False
    labels = [r["cell"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(max(9, 0.5 * len(rows) * 3), 3.5))
    for ax, key, title in zip(axes, ("duration_p95_ms", "partition_seconds_unowned", "movement_ratio"),
                              ("p95 rebalance ms", "partition-s unowned", "moved / minimum")):
        ax.bar(range(len(rows)), [r.get(key) or 0 for r in rows], color="#4a7")
        ax.set_xticks(range(len(rows)), labels, rotation=60, fontsize=7)
        ax.set_title(title, fontsize=9)
    return _save(fig, path)


def _plot_durations(analysis, path: Path) -> bool:
    """One box of rebalance durations per log, side by side on one axis (a histogram for one log)."""
    import matplotlib.pyplot as plt
    by_log = defaultdict(list)
    for r in analysis.rebalances:
        if r["duration_ms"] is not None:
            by_log[r["log"]].append(r["duration_ms"])
    if not by_log:
        return False
    logs = sorted(by_log)
    if len(logs) == 1:
        values = by_log[logs[0]]
        fig, ax = plt.subplots(figsize=(6, 3.2))
        ax.hist(values, bins=min(40, max(5, len(set(values)))), color="#47a")
        ax.set_xlabel("rebalance duration (ms)")
        ax.set_ylabel("rebalances")
    else:
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(logs)), 3.6))
        ax.boxplot([by_log[log] for log in logs], showfliers=True)
        ax.set_xticks(range(1, len(logs) + 1), logs, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("rebalance duration (ms)")
    return _save(fig, path)


def _plot_movement(analysis, path: Path) -> bool:
    import matplotlib.pyplot as plt
    pts = [(r["min_moves"], r["partitions_moved"]) for r in analysis.rebalances
           if r["min_moves"] is not None and r["partitions_moved"] is not None]
    if not pts:
        return False
    fig, ax = plt.subplots(figsize=(4.5, 4))
    xs, ys = zip(*pts)
    ax.scatter(xs, ys, s=12, alpha=0.6, color="#a47")
    top = max(max(xs), max(ys), 1)
    ax.plot([0, top], [0, top], color="#888", linewidth=1, label="moved = minimum")
    ax.set_xlabel("minimum necessary moves")
    ax.set_ylabel("partitions moved")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _timeline_section(analysis, out: Path) -> str:
    """Every group's timeline, TIMELINE_PAGE groups a picture; the groups of one log share its time axis."""
    series = defaultdict(list)
    for p in analysis.timeline:
        series[(p["log"], p["group"])].append(p)
    if not series:
        return ""
    keys = sorted(series)
    parts = [f"<h3>Timeline per group</h3><p>Members and partitions without an owner over time, in seconds from "
             f"each log's start; rebalances shaded, each start marked (so the shortest show). {len(keys)} groups.</p>"]
    for page, first in enumerate(range(0, len(keys), TIMELINE_PAGE), 1):
        chunk = keys[first:first + TIMELINE_PAGE]
        name = f"timeline-{page}.png"
        _plot_timeline(analysis, series, chunk, out / name)
        label = f"{chunk[0][0]} / {chunk[0][1]} to {chunk[-1][0]} / {chunk[-1][1]}"
        parts.append(f"<h4>{html.escape(label)}</h4><img src='{name}' alt='timeline of {html.escape(label)}'>")
    return "\n".join(parts)


def _plot_timeline(analysis, series: dict, keys: list, path: Path) -> None:
    import matplotlib.pyplot as plt
    log_start = {entry["log"]: entry.get("start_ms") for entry in analysis.logs}
    rebalances = defaultdict(list)
    for r in analysis.rebalances:
        if r["start_ms"] is not None:
            rebalances[(r["log"], r["group"])].append((r["start_ms"], r["duration_ms"] or 0))

    def origin(key):
        start = log_start.get(key[0])
        return start if start is not None else min(p["ts_ms"] for p in series[key])
    end = max((p["ts_ms"] - origin(k)) / 1000 for k in keys for p in series[k])
    height = 1.6 * len(keys) + 0.6
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, height), squeeze=False, sharex=True)
    for ax, key in zip(axes[:, 0], keys):
        t0 = origin(key)
        pts = sorted(series[key], key=lambda p: p["ts_ms"])
        xs = [(p["ts_ms"] - t0) / 1000 for p in pts] + [end]
        members = [p["members"] or 0 for p in pts]
        ax.step(xs, members + members[-1:], where="post", color="#47a", label="members")
        if any(p["unowned"] is not None for p in pts):
            unowned = [p["unowned"] or 0 for p in pts]
            ax.step(xs, unowned + unowned[-1:], where="post", color="#c44", label="partitions without owner")
        spans = [((s - t0) / 1000, d / 1000) for s, d in rebalances[key]]
        if spans:     # one collection each (an artist per rebalance: 5x slower to draw)
            ax.broken_barh(spans, (0, 1), transform=ax.get_xaxis_transform(), color="#fc8", alpha=0.6, linewidth=0)
            ax.vlines([x for x, _ in spans], 0, 1, transform=ax.get_xaxis_transform(), color="#e80", linewidth=0.6)
        ax.set_title(f"{key[0]} / {key[1]}: {len(rebalances[key])} rebalances", fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
    axes[0, 0].legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("seconds from the log's start")
    # fixed margins: tight_layout measured every tick label (half the time)
    fig.subplots_adjust(left=0.07, right=0.98, top=1 - 0.3 / height, bottom=0.5 / height, hspace=0.45)
    fig.savefig(path, dpi=80)
    plt.close(fig)
