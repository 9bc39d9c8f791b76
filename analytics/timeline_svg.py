"""The report's timelines as SVG, written here: small multiples of members and partitions without
an owner over time, rebalances shaded, the scenario's actions dashed and named above each column.

SVG text rather than matplotlib: a panel is a few dozen elements, written in well under a
millisecond, where matplotlib took about 50 ms a panel (16 logs of 50 groups: 20.7 s of a 68.4 s
analysis, bench/README.md "The timelines as SVG"). The elements carry what they stand for as ``data-``
attributes (a tick's value, an action's second), so that tests and readers need not measure pixels.
"""
from __future__ import annotations

import math
import re
from html import escape

#: The pictures' colours (the report's other plots use the same)
BLUE, RED, SHADE, START, ACTION = "#47a", "#c44", "#fc8", "#e80", "#333"

# the layout, in pixels: a panel, its title above it, the gaps around
PANEL_W, WIDE_PANEL_W, PANEL_H, TITLE_H = 340, 640, 110, 34
SIDE, GAP, LEGEND_H, STRIP_H, BOTTOM_H = 56, 40, 28, 54, 44
FONT = 11


def _q(v: float) -> str:
    """A coordinate, short (two decimals at most)."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _num(v: float) -> str:
    """A value as a label or data- attribute: whole numbers without a point or an exponent."""
    return str(int(v)) if float(v).is_integer() else f"{v:.10g}"


#: What XML 1.0 does not allow in text (a group id may hold any character but these)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(s: str) -> str:
    """Text for an element or attribute: escaped, characters XML cannot hold replaced by U+FFFD."""
    return escape(_NOT_XML.sub("\ufffd", str(s)))


def int_ticks(top: float, most: int = 4) -> list[int]:
    """Whole-number ticks from 0 to at most ``top``: ``most`` steps or fewer of 1, 2 or 5 times a
    power of ten (at least one step)."""
    want = max(top / most, 1)
    scale = 10 ** math.floor(math.log10(want))
    step = next(m * scale for m in (1, 2, 5, 10) if m * scale >= want)
    return list(range(0, int(top) + 1, int(step)))


def time_ticks(end: float, most: int = 6) -> list[float]:
    """Ticks from 0 to ``end`` seconds, ``most`` steps or fewer of 1, 2, 2.5 or 5 times a power of ten."""
    if end <= 0:
        return [0.0]
    want = end / most
    scale = 10 ** math.floor(math.log10(want))
    step = next(m * scale for m in (1, 2, 2.5, 5, 10) if m * scale >= want)
    return [i * step for i in range(int(end / step + 1e-9) + 1)]


def _steps(xs: list, ys: list, x, y) -> str:
    """A step line's path (each value held until the next x): x and y map values to pixels."""
    out = [f"M{_q(x(xs[0]))} {_q(y(ys[0]))}"]
    for i in range(1, len(xs)):
        px = _q(x(xs[i]))
        out.append(f"H{px}")
        if ys[i] != ys[i - 1]:
            out.append(f"V{_q(y(ys[i]))}")
    return "".join(out)


def timeline_svg(panels: list, end_s: float, actions: list | None = None, columns: int = 3) -> str:
    """Small multiples (``panels``: report.Panel), ``columns`` a row, on one time axis from 0 to
    ``end_s`` seconds and one scale each for members (left, blue) and partitions without an owner
    (right, red); rebalances shaded, each start marked; the scenario's ``actions`` (report.Action)
    dashed on the panels they act on and named in a strip above each column, on three staggered
    levels, each name on the side of its tick towards the middle; the legend above all."""
    n = len(panels)
    ncols = max(1, min(columns, n))
    nrows = math.ceil(n / ncols) if n else 0
    pw = WIDE_PANEL_W if ncols == 1 else PANEL_W
    strip = STRIP_H if actions else 0
    width = 2 * SIDE + ncols * pw + (ncols - 1) * GAP
    top = LEGEND_H + strip
    height = top + nrows * (TITLE_H + PANEL_H) + BOTTOM_H
    end = end_s if end_s > 0 else 1.0
    top_members = max([max(p.members, default=0) for p in panels] + [1])
    top_unowned = max([max(p.unowned, default=0) for p in panels if p.unowned] + [1])
    members_max, unowned_max = top_members * 1.15, top_unowned * 1.15
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' font-family='sans-serif' font-size='{FONT}'>",
           f"<rect width='{width}' height='{height}' fill='white'/>"]
    out.append(_legend(width, bool(actions)))
    for col in range(ncols):
        out.append(f"<clipPath id='col{col}'><rect x='{SIDE + col * (pw + GAP)}' y='0' width='{pw}' "
                   f"height='{height}'/></clipPath>")
    if actions:
        for col in range(ncols):
            out.append(_strip(actions, SIDE + col * (pw + GAP), LEGEND_H, pw, end, col))
    for i, p in enumerate(panels):
        row, col = divmod(i, ncols)
        x0 = SIDE + col * (pw + GAP)
        y0 = top + row * (TITLE_H + PANEL_H) + TITLE_H
        out.append(_panel(p, i, x0, y0, pw, end, members_max, unowned_max,
                          left_labels=col == 0, right_labels=col == ncols - 1 or i == n - 1,
                          time_labels=i + ncols >= n))
    out.append(f"<text class='x-label' x='{_q(width / 2)}' y='{height - 6}' text-anchor='middle' "
               f"font-size='{FONT + 1}'>seconds from the log's start</text>")
    out.append("</svg>")
    return "\n".join(out)


def _legend(width: int, with_actions: bool) -> str:
    items = [("line", BLUE, "members"), ("line", RED, "partitions without an owner"),
             ("box", SHADE, "rebalance (its start marked)")]
    if with_actions:
        items.append(("dash", ACTION, "scenario action"))
    # an item's width: its mark, its words at about 0.6 em a letter, a gap
    widths = [28 + 0.6 * FONT * len(label) + 18 for _, _, label in items]
    x = (width - sum(widths)) / 2
    y = LEGEND_H / 2
    out = ["<g class='legend'>"]
    for (kind, colour, label), w in zip(items, widths):
        if kind == "box":
            out.append(f"<rect x='{_q(x)}' y='{_q(y - 5)}' width='20' height='10' fill='{colour}'/>")
        else:
            dash = " stroke-dasharray='4 3'" if kind == "dash" else ""
            out.append(f"<line x1='{_q(x)}' y1='{_q(y)}' x2='{_q(x + 20)}' y2='{_q(y)}' stroke='{colour}' "
                       f"stroke-width='1.5'{dash}/>")
        out.append(f"<text x='{_q(x + 26)}' y='{_q(y + 4)}'>{_text(label)}</text>")
        x += w
    out.append("</g>")
    return "".join(out)


def _strip(actions: list, x0: float, y0: float, pw: float, end: float, col: int) -> str:
    out = [f"<g class='strip' clip-path='url(#col{col})'>"]
    bottom = y0 + STRIP_H
    for i, a in enumerate(sorted(actions, key=lambda a: a.at_s)):
        if not 0 <= a.at_s <= end:          # (off the time axis: not drawn)
            continue
        level = (0.8, 0.5, 0.2)[i % 3]
        ax = x0 + pw * a.at_s / end
        ay = bottom - level * STRIP_H
        right_half = a.at_s > end / 2
        out.append(_action_line(a.at_s, ax, bottom, ay))
        anchor, dx = ("end", -3) if right_half else ("start", 3)
        out.append(f"<text class='action' data-s='{_num(a.at_s)}' x='{_q(ax + dx)}' y='{_q(ay + 4)}' "
                   f"text-anchor='{anchor}' fill='{ACTION}' font-size='{FONT - 1}'>{_text(a.label)}</text>")
    out.append("</g>")
    return "".join(out)


def _action_line(at_s: float, x: float, y1: float, y2: float) -> str:
    """A scenario action's dashed line at pixel x, from y1 to y2."""
    return (f"<line class='action' data-s='{_num(at_s)}' x1='{_q(x)}' y1='{_q(y1)}' x2='{_q(x)}' y2='{_q(y2)}' "
            f"stroke='{ACTION}' stroke-width='0.9' stroke-dasharray='4 3'/>")


def _panel(p, i: int, x0: float, y0: float, pw: float, end: float, members_max: float, unowned_max: float, *,
           left_labels: bool, right_labels: bool, time_labels: bool) -> str:
    def x(s):
        return x0 + pw * min(max(s, 0.0), end) / end

    def y_members(v):
        return y0 + PANEL_H - PANEL_H * v / members_max

    def y_unowned(v):
        return y0 + PANEL_H - PANEL_H * v / unowned_max

    # the title's last line is its count of rebalances; the name's own line breaks are spaces
    title, broken, second = p.title.rpartition("\n")
    title, second = (title.replace("\n", " "), second) if broken else (second, "")
    out = [f"<g class='panel' data-index='{i}' data-x='{_q(x0)}' data-y='{_q(y0)}' data-width='{_q(pw)}' "
           f"data-height='{PANEL_H}' data-end-s='{_num(end)}'>",
           f"<title>{_text(title + (': ' + second if second else ''))}</title>",
           f"<text class='title' x='{_q(x0)}' y='{_q(y0 - TITLE_H + 13)}'>{_text(title)}</text>"]
    if second:
        out.append(f"<text class='title' x='{_q(x0)}' y='{_q(y0 - 6)}'>{_text(second)}</text>")
    out.append(f"<svg x='{_q(x0)}' y='{_q(y0)}' width='{_q(pw)}' height='{PANEL_H}' overflow='hidden'>"
               f"<g transform='translate({_q(-x0)},{_q(-y0)})'>")
    for start, duration in p.rebalances:
        left, right = x(start), x(start + duration)
        out.append(f"<rect class='rebalance' x='{_q(left)}' y='{_q(y0)}' width='{_q(max(right - left, 0))}' "
                   f"height='{PANEL_H}' fill='{SHADE}' fill-opacity='0.6'/>")
    for start, _ in p.rebalances:
        out.append(f"<line class='rebalance-start' x1='{_q(x(start))}' y1='{_q(y0)}' x2='{_q(x(start))}' "
                   f"y2='{_q(y0 + PANEL_H)}' stroke='{START}' stroke-width='0.5'/>")
    for a in p.actions:
        if not 0 <= a.at_s <= end:
            continue
        out.append(_action_line(a.at_s, x(a.at_s), y0, y0 + PANEL_H))
    if p.xs:
        xs = list(p.xs) + [end]
        out.append(f"<path class='members' d='{_steps(xs, list(p.members) + p.members[-1:], x, y_members)}' "
                   f"fill='none' stroke='{BLUE}' stroke-width='1.2'/>")
        if p.unowned is not None:
            out.append(f"<path class='unowned' d='{_steps(xs, list(p.unowned) + p.unowned[-1:], x, y_unowned)}' "
                       f"fill='none' stroke='{RED}' stroke-width='1'/>")
    out.append("</g></svg>")
    out.append(f"<rect x='{_q(x0)}' y='{_q(y0)}' width='{_q(pw)}' height='{PANEL_H}' fill='none' stroke='#444' "
               f"stroke-width='0.8'/>")
    out.append(_axis_ticks(x0, y0, "members", int_ticks(members_max), y_members, BLUE, left_labels))
    if p.unowned is not None:
        out.append(_axis_ticks(x0 + pw, y0, "unowned", int_ticks(unowned_max), y_unowned, RED, right_labels))
    ticks = ["<g class='x-ticks'>"]
    for t in time_ticks(end):
        tx = _q(x(t))
        ticks.append(f"<line x1='{tx}' y1='{_q(y0 + PANEL_H)}' x2='{tx}' y2='{_q(y0 + PANEL_H + 4)}' stroke='#444'/>")
        if time_labels:
            ticks.append(f"<text class='tick' data-value='{_num(t)}' x='{tx}' y='{_q(y0 + PANEL_H + 15)}' "
                         f"text-anchor='middle' font-size='{FONT - 1}'>{_num(t)}</text>")
    ticks.append("</g>")
    out.append("".join(ticks))
    out.append("</g>")
    return "".join(out)


def _axis_ticks(ax: float, y0: float, name: str, ticks: list[int], y, colour: str, labels: bool) -> str:
    """A vertical axis' ticks at ax (the panel's left side: members; its right: unowned), their
    labels and the axis' name outside the panel when ``labels``."""
    left = name == "members"
    sign = -1 if left else 1
    out = [f"<g class='y-ticks {name}'>"]
    for v in ticks:
        ty = _q(y(v))
        out.append(f"<line x1='{_q(ax)}' y1='{ty}' x2='{_q(ax + 4 * sign)}' y2='{ty}' stroke='{colour}'/>")
        if labels:
            out.append(f"<text class='tick' data-value='{v}' x='{_q(ax + 6 * sign)}' y='{_q(y(v) + 3.5)}' "
                       f"text-anchor='{'end' if left else 'start'}' fill='{colour}' font-size='{FONT - 1}'>{v}</text>")
    if labels:
        cx, cy = ax + sign * (SIDE - 12), y0 + PANEL_H / 2
        label = "members" if left else "without an owner"
        out.append(f"<text class='axis-label' x='{_q(cx)}' y='{_q(cy)}' text-anchor='middle' fill='{colour}' "
                   f"transform='rotate({-90 if left else 90} {_q(cx)} {_q(cy)})'>{label}</text>")
    out.append("</g>")
    return "".join(out)
