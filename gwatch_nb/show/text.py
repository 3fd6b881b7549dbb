"""``gwatch show``'s sections laid out as text lines, from the plain data the summaries
and the raster compute (what ``--json`` prints)."""
from __future__ import annotations

import numpy as np

from .. import site_rows
from ..tiers import TIERS
from ..units import format_ns, format_scaled, range_unit
from .raster import ABSENT, IDLE


class Style:
    """Characters for the terminal: Unicode when it can show them, ASCII otherwise."""

    def __init__(self, unicode: bool):
        self.ascii = not unicode
        self.ramp = " ▁▂▃▄▅▆▇█" if unicode else " .:-=+*#@"
        self.dot = " · " if unicode else " | "

    def time(self, ns) -> str:
        return format_ns(ns, ascii=self.ascii)


def _number(value: float) -> str:
    return format_scaled(value, 1.0)


def _table(header: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """Columns padded to their widest cell; the first ``left`` columns left-aligned."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    out = []
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _triple(values) -> str:
    return "(" + ",".join(str(v) for v in values) + ")"


def _place(r: dict) -> list:
    return [r["launch"], _triple((r["block_x"], r["block_y"], r["block_z"])), r["warp"], r["sm"]]


def header(h: dict, style: Style, width: int) -> list[str]:
    dot = style.dot
    scopes = ", ".join(f"{s['scope']}" for s in h["scopes"]) or "none"
    lines = [f"{', '.join(h['kernels']) or 'no kernel'}{dot}{len(h['launches'])} launch(es){dot}"
             f"{h['scope_instances']:,} scope instances{dot}{len(h['scopes'])} scopes: {scopes}",
             f"tier {h['tier']}: {h['time_source']}"]
    if h["scopes_traced"] is not None:
        lines.append(f"only scopes {', '.join(map(str, h['scopes_traced']))} were traced; the kernel's other markers "
                     "were left idle")
    shown = h["launches"][:8]
    for launch in shown:
        dropped = launch["events_dropped"]
        capacity = (f" (capacity {launch['capacity']:,}/warp; {launch['capacity_needed']:,} would keep all)"
                    if dropped else "")
        clock = (f"clock {launch['clock_ghz']:.2f} GHz ±{launch['clock_spread_pct']:.2f}%"
                 if not TIERS[h["tier"]].host_clock and launch["clock_ghz"] else "host clock")
        lines.append(f"launch {launch['launch']}{dot}{launch['kernel']}{dot}grid {_triple(launch['grid'])} "
                     f"block {_triple(launch['block'])}{dot}{launch['warps']:,} warps{dot}"
                     f"span {style.time(launch['duration_ns'])}")
        lines.append(f"  records {launch['events_recorded']:,}{dot}dropped {dropped:,}{capacity}{dot}{clock}")
        if launch["config"]:
            lines.append(f"  config {launch['config']}" + (f" ({launch['autotune']})" if launch["autotune"] else ""))
    if len(h["launches"]) > len(shown):
        lines.append(f"... and {len(h['launches']) - len(shown)} more launches (choose one with --launch N)")
    selection = {k: v for k, v in h["selection"].items() if v not in (None, [])}
    if selection:
        parts = []
        for key, value in selection.items():
            if key in ("start_ns", "end_ns"):
                parts.append(f"{'from' if key == 'start_ns' else 'to'} {style.time(value)}")
            elif key == "blocks":
                parts.append("blocks " + " ".join(_triple(b) for b in value))
            else:
                parts.append(f"{key} {value if not isinstance(value, list) else ','.join(map(str, value))}")
        lines.append(f"selected: {', '.join(parts)}{dot}{h['selected_instances']:,} instances")
    lines += h["notes"]
    lines.append("warnings: none" if not h["warnings"] else "warnings:")
    lines += [f"  ! {w}" for w in h["warnings"]]
    return lines


def stats(stats: list[dict], style: Style, width: int) -> list[str]:
    if not stats:
        return ["SCOPES: no scope instances selected"]
    unit, scale = range_unit(max(s["max_ns"] for s in stats), style.ascii)
    several_kernels = len({s["kernel"] for s in stats}) > 1
    header = (["kernel"] if several_kernels else []) + ["scope", "count", "min", "p50", "mean", "p95", "max",
                                                         "total"]
    rows = [([s["kernel"]] if several_kernels else []) + [s["scope"], f"{s['count']:,}"]
            + [format_scaled(s[k], scale) for k in ("min_ns", "p50_ns", "mean_ns", "p95_ns", "max_ns", "total_ns")]
            for s in stats]
    return [f"SCOPES (durations in {unit})"] + _table(header, rows, left=2 if several_kernels else 1)


def pipeline(p: dict, style: Style, width: int) -> list[str]:
    if not p["warps"]:
        return ["PIPELINE: no warps selected"]
    pct = lambda share: "-" if share is None else f"{100 * share:.1f}%"
    lines = ["PIPELINE (busy = inside a selected scope, overlaps once; idle = the rest of each warp's life)",
             f"  {p['warps']:,} warps{style.dot}busy {pct(p['busy_share_mean'])} on average "
             f"(median {pct(p['busy_share_p50'])}, lowest {pct(p['busy_share_min'])})",
             f"  mean life {style.time(p['lifetime_ns_mean'])}{style.dot}"
             f"idle {style.time(p['idle_ns'])} of {style.time(p['idle_ns'] + p['busy_ns'])} warp-time"]
    if p["warps_not_exited"]:
        lines.append(f"  {p['warps_not_exited']:,} warps never exited (left out above)")
    if p["idlest"]:
        lines.append("  idlest warps:")
        lines += _table(["launch", "block", "warp", "sm", "idle", "busy", "life"],
                        [[*_place(w), style.time(w["idle_ns"]), pct(w["busy_share"]), style.time(w["lifetime_ns"])]
                         for w in p["idlest"]], left=0)
    if p["longest_gaps"]:
        lines.append("  longest gaps between scopes:")
        lines += _gap_table(p["longest_gaps"], style)
    return lines


def _gap_table(gaps: list[dict], style: Style) -> list[str]:
    return _table(["launch", "block", "warp", "sm", "gap", "at", "after", "before"],
                  [[*_place(g), style.time(g["gap_ns"]), style.time(g["start_ns"]), g["after"], g["before"]]
                   for g in gaps], left=0)


def timeline(t: dict | None, style: Style, width: int) -> list[str]:
    if not t or not t["rows"]:
        return ["TIMELINE: no warps selected"]
    labels = [r["label"] for r in t["rows"]]
    pad = max(map(len, labels))
    legend = [f"{letter}={name}" for letter, name in t["legend"].items()]
    legend += [f"{IDLE}=idle", "blank=not running", "lower case=partly busy"]
    order = f"{style.dot}warps with the most {t['sort_by']} time first" if t["sort_by"] else ""
    lines = [f"TIMELINE launch {t['launch']}{style.dot}{len(t['rows'])} of {t['warps_in_selection']:,} warps"
             f"{style.dot}{style.time(t['start_ns'])} to {style.time(t['end_ns'])}, "
             f"{style.time(t['ns_per_column'])} per column{order}",
             *_wrapped("legend: ", legend, width)]
    lines += [f"  {label.ljust(pad)} |{row['line']}|" for label, row in zip(labels, t["rows"])]
    lines.append("  " + " " * pad + " " + _axis(t["start_ns"], t["end_ns"], t["columns"], style))
    return lines


def _wrapped(lead: str, items: list[str], width: int) -> list[str]:
    """Items joined by two spaces in lines of at most ``width`` (an item longer stays whole)."""
    lines, line = [], "  " + lead
    for item in items:
        if len(line) + len(item) > width and line.strip() != lead.strip():
            lines.append(line.rstrip())
            line = "  " + " " * len(lead)
        line += item + "  "
    return lines + [line.rstrip()]


def _axis(start: float, end: float, columns: int, style: Style) -> str:
    """Times under the timeline's first, middle and last columns (each marked by a ^)."""
    axis = [ABSENT] * (columns + 2)  # the row is |cells|: the cells sit at 1..columns
    right = style.time(end) + "^"
    axis[columns + 1 - len(right):columns + 1] = right
    for at, label in ((1, "^" + style.time(start)), (1 + columns // 2, "^" + style.time((start + end) / 2))):
        if all(c == " " for c in axis[at:at + len(label) + 1]):
            axis[at:at + len(label)] = label
    return "".join(axis).rstrip()


def concurrency(c: dict | None, style: Style, width: int) -> list[str]:
    if not c or not c["series"]:
        return ["CONCURRENCY: no scope instances selected"]
    pad = max(len(s["scope"]) for s in c["series"])
    lines = [f"CONCURRENCY launch {c['launch']}{style.dot}warps inside each scope over time, "
             f"{style.time(c['start_ns'])} to {style.time(c['end_ns'])} in {c['bins']} slices "
             f"(each row scaled to its peak)"]
    ramp = style.ramp
    for s in c["series"]:
        values = np.asarray(s["values"], float)
        level = np.zeros(len(values), int) if s["peak"] <= 0 else \
            np.clip(np.ceil(values / s["peak"] * (len(ramp) - 1)), 0, len(ramp) - 1).astype(int)
        line = "".join(ramp[i] for i in level)
        lines.append(f"  {s['scope'].ljust(pad)} |{line}| peak {_number(s['peak'])} mean {_number(s['mean'])}")
    return lines


def outliers(o: list[dict], style: Style, width: int) -> list[str]:
    if not o:
        return ["OUTLIERS: no scope instances selected"]
    return ["OUTLIERS (slowest instances)"] + _table(
        ["scope", "duration", "x median", "launch", "block", "warp", "sm", "seq", "start"],
        [[r["scope"], style.time(r["duration_ns"]), "-" if r["x_median"] is None else f"{r['x_median']:.1f}x",
          *_place(r), r["seq"], style.time(r["start_ns"])] for r in o])


def longest(items: list[dict], style: Style, width: int) -> list[str]:
    lines = ["LONGEST (the longest instance of each scope asked for)"]
    lines += _table(["scope", "duration", "x median", "of", "launch", "block", "warp", "sm", "seq", "start", "end"],
                    [[r["scope"], style.time(r["duration_ns"]),
                      "-" if r["x_median"] is None else f"{r['x_median']:.1f}x", f"{r['instances']:,}",
                      *_place(r), r["seq"], style.time(r["start_ns"]), style.time(r["end_ns"])] for r in items])
    return lines


def longest_bubble(gap: dict | None, style: Style, width: int) -> list[str]:
    if not gap:
        return ["LONGEST BUBBLE: no gap between selected scopes"]
    return ["LONGEST BUBBLE (the longest gap between scopes on one warp)"] + _gap_table([gap], style)


def sites(s: dict, style: Style, width: int) -> list[str]:
    if not TIERS[s["tier"]].has_sites:
        return [f"SITES: none (the {s['tier']} tier reads no sites; instrumentation_tier='sass' places readings "
                "in the compiled kernel)"]
    if not s["scopes"]:
        return ["SITES: no readings of the selected scopes"]
    readings = [r for scope in s["scopes"] for r in scope["readings"]]
    several_kernels = len({r["kernel"] for r in readings}) > 1
    moved = any(r["moved"] for r in readings)
    names = [scope["scope"] for scope in s["scopes"]]
    header = ["kind", "origin", "pair", "at"] + (["moved"] if moved else []) + [
        "stores", "loop", "span", "own", "other", "unscoped", "sharpness"]
    rows, labels = [], {}
    for scope in s["scopes"]:
        # A name several scopes share (automatic sites of one line) takes its id.
        labels[len(rows)] = ((f"{scope['kernel']}{style.dot}" if several_kernels else "") + scope["scope"]
                             + (f" [{scope['scope_id']}]" if names.count(scope["scope"]) > 1 else ""))
        for r in scope["readings"]:
            rows.append([r["kind"], r["origin"], r["pair"], r["index"]]
                        + ([f"{r['moved']:+d}" if r["moved"] else ""] if moved else [])
                        + [r["store"], _dash(r["loop"]), _dash(r["span"]), _dash(r["own"]), _dash(r["other_scopes"]),
                           _dash(r["unscoped"]), site_rows.label(r)])
    table = _table(header, rows, left=2)
    lines = ["SITES (per scope, where its clock readings landed in the compiled kernel)"]
    legend = ("at: the SASS instruction a reading is taken just before"
              + ("; moved: how far it moved from its site for want of free registers" if moved else "")
              + "; stores: the instruction its stores precede; loop: the loop a pair repeats with (-: once per "
              "run); span: the pair's instructions from first to last, own: the scope's, other: other scopes', "
              "unscoped: no scope's; " + s["rule"])
    lines += ["  " + part for part in _split(legend, width - 2)]
    lines.append("  " + table[0])
    for k, line in enumerate(table[1:]):
        if k in labels:
            lines.append(f"  {labels[k]}")
        lines.append("  " + line)
    return lines


#: Reasons shown per scope; the rest are summed into "other".
STALL_REASONS_SHOWN = 4


def stalls(s: dict, style: Style, width: int) -> list[str]:
    if not s["sampled"]:
        return ["STALLS: none sampled (trace with stalls=True on the sass tier, or gwatch_nb.stalls(fn, pattern) "
                "for the untraced kernel)"]
    kernels = s["kernels"]
    counted = ", ".join(f"{name}: {k['samples']:,} samples of {k['launches']} launch(es)"
                        + (f", {k['dropped']:,} dropped" if k["dropped"] else "") for name, k in kernels.items())
    lines = [f"STALLS (per scope, why its warps were not issuing: PC samples every 2^{s['period']} cycles per SM, "
             f"{s['chosen']})"]
    lines += ["  " + part for part in _split(counted, width - 2)]
    if not s["scopes"]:
        return lines + ["  no samples of the selected scopes"]
    several_kernels = len({scope["kernel"] for scope in s["scopes"]}) > 1
    rows = []
    for scope in s["scopes"]:
        shown = scope["reasons"][:STALL_REASONS_SHOWN]
        rest = sum(r["share"] for r in scope["reasons"][STALL_REASONS_SHOWN:])
        label = (f"{scope['kernel']}{style.dot}" if several_kernels else "") + scope["scope"]
        rows.append([label, f"{scope['samples']:,}",
                     ", ".join(f"{r['reason']} {r['share']:.0%}" for r in shown) + (f", other {rest:.0%}" if rest >= 0.005
                                                                                   else "")])
    return lines + _table(["scope", "samples", "top reasons (share of the scope's samples)"], rows, left=1)


def _dash(value) -> str:
    return "-" if value is None else str(value)


def _split(text: str, width: int) -> list[str]:
    """Words of ``text`` in lines of at most ``width`` (a longer word stays whole)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]
