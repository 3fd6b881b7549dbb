"""Terminal views of a trace, for people and for coding agents reading a terminal.

``summarize`` turns a Trace (and a Selection of launch, blocks, warps, scopes and a time
window) into plain data: header, per-scope statistics, pipeline (busy vs idle per warp),
a text timeline of a few warps, concurrency per scope over time, and the slowest
instances. ``format_text`` lays that data out as text; ``gwatch show --json`` prints
the data itself. Everything is computed over whole columns (pandas/numpy)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import analysis, autotune, instrumentation_cost, overhead
from .trace import Trace

VIEWS = ("stats", "pipeline", "timeline", "concurrency", "outliers")
_WARP_KEYS = ["launch", "block_x", "block_y", "block_z", "warp"]
_TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_IDLE, _ABSENT = ".", " "
_MAX_RANGE = 1 << 16  # warps of a block: far fewer


# ------------------------------------------------------------------ selection

class SelectionError(ValueError):
    """The selection names something the trace does not have."""


@dataclass
class Selection:
    """Which part of a trace to show. Blocks are (x,) (x, y) or (x, y, z) prefixes; scopes
    are names or ids; the window is ns on each launch's own axis."""
    launch: int | None = None
    blocks: list[tuple[int, ...]] = field(default_factory=list)
    warps: list[int] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    start_ns: int | None = None
    end_ns: int | None = None

    def warp_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of a per-warp or per-instance frame that are in the chosen launch, blocks and warps."""
        keep = np.ones(len(frame), bool)
        if self.launch is not None:
            keep &= frame["launch"].to_numpy() == self.launch
        if self.blocks:
            axes = [frame[k].to_numpy() for k in ("block_x", "block_y", "block_z")]
            in_any = np.zeros(len(frame), bool)
            for block in self.blocks:
                match = np.ones(len(frame), bool)
                for axis, value in zip(axes, block):
                    match &= axis == value
                in_any |= match
            keep &= in_any
        if self.warps:
            keep &= np.isin(frame["warp"].to_numpy(), self.warps)
        return keep

    def instances(self, trace: Trace, with_scopes: bool = True) -> pd.DataFrame:
        """The selected scope instances (overlapping the window, if one is set)."""
        df = trace.df
        keep = self.warp_mask(df)
        if self.start_ns is not None:
            keep &= df["end_ns"].to_numpy() > self.start_ns
        if self.end_ns is not None:
            keep &= df["start_ns"].to_numpy() < self.end_ns
        if with_scopes and self.scopes:
            keep &= np.isin(df["scope_id"].to_numpy(), self.scope_ids(trace))
        return df if keep.all() else df[keep]  # no copy of millions of rows when nothing is filtered

    def scope_ids(self, trace: Trace) -> list[int]:
        """The ids the scope filter names; SelectionError naming the known scopes otherwise."""
        by_name: dict[str, list[int]] = {}  # several ids may share a name
        for sid in sorted(trace.df["scope_id"].unique()):
            by_name.setdefault(trace.scope_name(sid), []).append(int(sid))
        ids = []
        for token in self.scopes:
            if token in by_name:
                ids += by_name[token]
            elif token.isdigit() and any(int(token) in group for group in by_name.values()):
                ids.append(int(token))
            else:
                listed = ", ".join(f"{name} ({','.join(map(str, group))})" for name, group in by_name.items())
                raise SelectionError(f"no scope {token!r} in this trace; scopes: {listed or 'none'}")
        return ids

    def check(self, trace: Trace) -> None:
        """SelectionError when the launch or a scope is not in the trace, or the window is empty."""
        launches = len(trace.launches)
        if self.launch is not None and not 0 <= self.launch < launches:
            raise SelectionError(f"no launch {self.launch} in this trace (it has launches 0 to {launches - 1})")
        if self.start_ns is not None and self.end_ns is not None and self.end_ns <= self.start_ns:
            raise SelectionError("the time window is empty: --to must be later than --from")
        self.scope_ids(trace)

    def describe(self) -> dict:
        return {"launch": self.launch, "blocks": [list(b) for b in self.blocks], "warps": self.warps,
                "scopes": self.scopes, "start_ns": self.start_ns, "end_ns": self.end_ns}


def parse_time(text: str) -> int:
    """'12.5us', '800ns', '1.2ms' or a bare number of µs -> integer ns."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"not a time: {text!r} (write e.g. 12.5us, 800ns, 1.2ms)")
    unit = (match.group(2) or "us").lower()
    return int(round(float(match.group(1)) * _TIME_UNITS[unit]))


def parse_block(text: str) -> tuple[int, ...]:
    """'3', '3,1' or '3,1,0' -> a block prefix."""
    parts = [p for p in re.split(r"[,\s]+", text.strip("() ")) if p]
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a block: {text!r} (write x, x,y or x,y,z)")
    return tuple(int(p) for p in parts)


def parse_numbers(text: str) -> list[int]:
    """'0,2,5-7' -> [0, 2, 5, 6, 7]."""
    numbers = []
    for part in (p for p in text.split(",") if p.strip()):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ValueError(f"not a number or range: {part!r} (write e.g. 0,2,5-7)")
        lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
        if hi < lo or hi - lo > _MAX_RANGE:
            raise ValueError(f"range {part.strip()!r} is backwards or longer than {_MAX_RANGE}")
        numbers.extend(range(lo, hi + 1))
    return numbers


# ------------------------------------------------------------------ data

def summarize(trace: Trace, selection: Selection, views=VIEWS, width: int = 100, rows: int = 8,
              top: int = 5) -> dict:
    """Everything ``gwatch show`` prints, as plain data (times in ns). ``width`` sets how many
    time slices the timeline and concurrency views have (they fit a line that wide)."""
    selection.check(trace)
    selected = selection.instances(trace)
    launch = _focus_launch(trace, selection, selected)
    out = {"header": _header(trace, selection, selected, launch)}
    if "stats" in views:
        out["stats"] = analysis.scope_stats(selected).to_dict("records")
    if "pipeline" in views:
        out["pipeline"] = _pipeline(trace, selection, top)
    if "timeline" in views:
        out["timeline"] = _timeline(trace, selection, selected, launch, width, rows)
    if "concurrency" in views:
        longest_name = max([len(str(n)) for n in selected["scope"].cat.categories] + [1])
        out["concurrency"] = _concurrency(selected, selection, launch, max(10, width - longest_name - 30))
    if "outliers" in views:
        out["outliers"] = _outliers(selected, top)
    return _plain(out)


def _focus_launch(trace: Trace, selection: Selection, selected: pd.DataFrame) -> int | None:
    """The launch the timeline and concurrency views show: the chosen one, else the first
    with selected instances, else the first with selected warps (None when there is none)."""
    if selection.launch is not None:
        return selection.launch
    if len(selected):
        return int(selected["launch"].iloc[0])
    warps = trace.warps
    chosen = warps["launch"].to_numpy()[selection.warp_mask(warps)]
    return int(chosen[0]) if len(chosen) else None


def _header(trace: Trace, selection: Selection, selected: pd.DataFrame, launch: int | None) -> dict:
    launches = trace.launches
    return {
        "tier": trace.meta.get("tier"), "time_source": trace.meta.get("time_source"),
        "scopes_traced": trace.meta.get("scopes_traced"),
        "kernels": sorted(set(launches["kernel"])) if len(launches) else [],
        "launches": launches.to_dict("records"),
        "scopes": [{"scope_id": int(sid), "scope": trace.scope_name(sid)}
                   for sid in sorted(trace.df["scope_id"].unique())],
        "scope_instances": len(trace.df), "selected_instances": len(selected),
        "selection": selection.describe(), "focus_launch": launch,
        "warnings": [str(w) for w in trace.warnings],
        "instrumentation": instrumentation_cost.summaries(trace.meta),
        "autotune": autotune.summaries(trace.meta), "overhead": trace.overhead,
    }


def _block_label(frame: pd.DataFrame, grid: tuple[int, int, int]) -> list[str]:
    """Block coordinates with as many axes as the grid uses: '3', '3,1' or '3,1,0'."""
    used = max([1] + [axis + 1 for axis in range(3) if grid[axis] > 1])
    axes = [frame[k].to_numpy() for k in ("block_x", "block_y", "block_z")[:used]]
    return [",".join(map(str, coords)) for coords in zip(*axes)]


def _pipeline(trace: Trace, selection: Selection, top: int) -> dict:
    activity = analysis.warp_activity(trace)
    activity = activity[selection.warp_mask(activity)]
    exited = activity[activity["exited"]]
    share = exited["busy_share"]
    idlest = exited.nlargest(top, "idle_ns")
    return {
        "warps": len(activity), "warps_not_exited": int((~activity["exited"]).sum()),
        "busy_ns": int(exited["busy_ns"].sum()), "idle_ns": int(exited["idle_ns"].sum()),
        "lifetime_ns_mean": float(exited["lifetime_ns"].mean()) if len(exited) else None,
        "busy_share_mean": float(share.mean()) if len(share) else None,
        "busy_share_min": float(share.min()) if len(share) else None,
        "busy_share_p50": float(share.median()) if len(share) else None,
        "idlest": idlest[[*_WARP_KEYS, "sm", "lifetime_ns", "busy_ns", "idle_ns", "busy_share"]].to_dict("records"),
        "longest_gaps": _gaps(selection.instances(trace, with_scopes=False), top),
    }


def _gaps(df: pd.DataFrame, top: int) -> list[dict]:
    """The longest stretches between consecutive outermost scopes of one warp."""
    top_level = df[df["depth"].to_numpy() == 0]
    if len(top_level) < 2:
        return []
    keys = np.column_stack([top_level[k].to_numpy(np.int64) for k in _WARP_KEYS])
    same_warp = (keys[1:] == keys[:-1]).all(axis=1)
    gap = top_level["start_ns"].to_numpy()[1:] - top_level["end_ns"].to_numpy()[:-1]
    candidates = np.flatnonzero(same_warp & (gap > 0))
    best = candidates[np.argsort(-gap[candidates], kind="stable")[:top]]
    before, after = top_level.iloc[best], top_level.iloc[best + 1]
    return [{**{k: int(v) for k, v in zip(_WARP_KEYS, keys[i])}, "sm": int(b.sm), "gap_ns": int(gap[i]),
             "start_ns": int(b.end_ns), "after": str(b.scope), "before": str(a.scope)}
            for i, b, a in zip(best, before.itertuples(), after.itertuples())]


def _outliers(selected: pd.DataFrame, top: int) -> list[dict]:
    slowest = analysis.outliers(selected, top)
    columns = ["scope", "scope_id", "duration_ns", "x_median", *_WARP_KEYS, "sm", "seq", "start_ns"]
    records = slowest[columns].to_dict("records")
    for record in records:
        record["scope"] = str(record["scope"])
    return records


def _window(trace: Trace, selection: Selection, launch: int, part: pd.DataFrame) -> tuple[int, int]:
    """The shown time range of a launch: the selection's window, else the launch's whole span."""
    span = max(int(trace.launches["duration_ns"].iloc[launch]), int(part["end_ns"].max()) if len(part) else 0, 1)
    start = max(0, selection.start_ns or 0)
    end = selection.end_ns if selection.end_ns is not None else span
    return start, max(end, start + 1)


def _timeline(trace: Trace, selection: Selection, selected: pd.DataFrame, launch: int | None, width: int,
              rows: int) -> dict | None:
    if launch is None:
        return None
    warps = trace.warps
    warps = warps[selection.warp_mask(warps) & (warps["launch"].to_numpy() == launch)]
    warps = warps.sort_values(["block_z", "block_y", "block_x", "warp"], kind="stable")
    warps = warps.iloc[_pick_rows(warps, rows)]
    grid = tuple(trace.launches["grid"].iloc[launch])
    labels = [f"b{block} w{w.warp} sm{w.sm}" for block, w in zip(_block_label(warps, grid), warps.itertuples())]
    columns = max(10, width - max([len(label) for label in labels] + [0]) - 5)
    part = selected[selected["launch"].to_numpy() == launch]
    start, end = _window(trace, selection, launch, part)
    per_column = (end - start) / columns
    names = list(selected["scope"].cat.categories)
    letters = scope_letters(names)
    lane = _lanes(part, warps)
    part, lane = part[lane >= 0], lane[lane >= 0]
    codes = part["scope"].cat.codes.to_numpy()
    cells = _cells(lane, codes, part["depth"].to_numpy(), part["start_ns"].to_numpy(), part["end_ns"].to_numpy(),
                   warps, len(names), start, per_column, columns)
    symbols = np.array(list(letters.values()) + [_IDLE, _ABSENT])
    lines = ["".join(row) for row in symbols[cells]]
    return {
        "launch": launch, "start_ns": start, "end_ns": end, "ns_per_column": per_column, "columns": columns,
        "legend": {letters[names[c]]: str(names[c]) for c in np.unique(codes)},
        "rows": [{"label": label, **{k: int(getattr(w, k)) for k in (*_WARP_KEYS, "sm")}, "line": line}
                 for label, w, line in zip(labels, warps.itertuples(), lines)],
        "warps_in_selection": int(selection.warp_mask(trace.warps).sum()),
    }


def _lanes(part: pd.DataFrame, warps: pd.DataFrame) -> np.ndarray:
    """Row of each instance's warp in ``warps``, -1 for warps not shown."""
    maybe = np.isin(part["block_x"].to_numpy(), warps["block_x"].to_numpy()) \
        & np.isin(part["warp"].to_numpy(), warps["warp"].to_numpy())  # cheap prefilter before the merge
    shown = warps[_WARP_KEYS].astype(np.int64).assign(_lane=np.arange(len(warps)))
    shown = shown.drop_duplicates(_WARP_KEYS)  # a corrupt archive may repeat a warp: one row gets it
    merged = part.loc[maybe, _WARP_KEYS].astype(np.int64).merge(shown, how="left", on=_WARP_KEYS)
    lane = np.full(len(part), -1, np.int64)
    lane[maybe] = merged["_lane"].fillna(-1).to_numpy(np.int64)
    return lane


def _pick_rows(warps: pd.DataFrame, rows: int) -> np.ndarray:
    """Up to ``rows`` warps: those of the first block (a block's warps side by side show its
    pipeline), then warps spread evenly over the rest."""
    if len(warps) <= rows:
        return np.arange(len(warps))
    blocks = warps[["block_x", "block_y", "block_z"]].to_numpy()
    first = np.flatnonzero((blocks == blocks[0]).all(axis=1))[: max(1, rows // 2)]
    rest = np.setdiff1d(np.arange(len(warps)), first)
    spread = rest[np.unique(np.linspace(0, len(rest) - 1, rows - len(first)).round().astype(int))]
    return np.concatenate([first, spread])


def scope_letters(names: list[str]) -> dict[str, str]:
    """One distinct character per scope: its initial if free, else another of its letters,
    else the first free letter or digit."""
    pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    taken: dict[str, str] = {}
    for name in names:
        candidates = [c.upper() for c in str(name) if c.isascii() and c.isalnum()] + list(pool)
        letter = next((c for c in candidates if c not in taken.values()), "?")
        taken[name] = letter
    return taken


def _coverage(group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int, columns: int) -> np.ndarray:
    """(groups, columns): the fraction of each column covered by each group's intervals
    (positions in columns units, already clipped to [0, columns])."""
    if not groups:
        return np.zeros((0, columns))
    end = np.maximum(end, start)  # a corrupt record may end before it starts: it covers nothing
    width = columns + 1  # one spare column takes ends that fall exactly on the right edge
    base = group * width
    first, last = np.floor(start).astype(np.int64), np.floor(end).astype(np.int64)
    size = groups * width
    one = first == last
    cover = np.zeros(size)
    cover += np.bincount(base[one] + first[one], end[one] - start[one], size)
    many = ~one
    cover += np.bincount(base[many] + first[many], (first + 1 - start)[many], size)
    cover += np.bincount(base[many] + last[many], (end - last)[many], size)
    # Whole columns strictly between first and last: +1 there, by a running sum.
    steps = np.bincount(base[many] + first[many] + 1, minlength=size) - np.bincount(base[many] + last[many],
                                                                                    minlength=size)
    cover += np.cumsum(steps.reshape(groups, width), axis=1).reshape(-1)
    return cover.reshape(groups, width)[:, :columns]


def _cells(lane, code, depth, start_ns, end_ns, warps, scopes, t0, per_column, columns) -> np.ndarray:
    """(lanes, columns) symbol index per cell: a scope code, then idle, then absent.

    A cell shows the scope covering most of it at the deepest nesting level that still
    covers at least half of the busy time there; idle when scopes cover less than half
    of the time the warp was alive in it; absent when the warp was not alive at all."""
    lanes = len(warps)
    depths = int(depth.max()) + 1 if len(depth) else 1
    a = np.clip((start_ns - t0) / per_column, 0, columns)
    b = np.clip((end_ns - t0) / per_column, 0, columns)
    by_scope = _coverage((lane * depths + depth) * max(scopes, 1) + code, a, b, lanes * depths * max(scopes, 1),
                         columns).reshape(lanes, depths, max(scopes, 1), columns)
    level_cover = by_scope.sum(axis=2)                      # (lanes, depths, columns)
    busy = level_cover[:, 0]
    deep_enough = (level_cover >= 0.5 * busy[:, None]) & (busy[:, None] > 0)
    level = depths - 1 - np.argmax(deep_enough[:, ::-1], axis=1)  # deepest qualifying level
    at_level = np.take_along_axis(by_scope, level[:, None, None, :], axis=1)[:, 0]  # (lanes, scopes, columns)
    symbol = np.argmax(at_level, axis=1)
    warp_end = np.where(warps["exited"].to_numpy(), warps["end_ns"].to_numpy(), t0 + per_column * columns)
    alive = _coverage(np.arange(lanes), np.clip((warps["start_ns"].to_numpy() - t0) / per_column, 0, columns),
                      np.clip((warp_end - t0) / per_column, 0, columns), lanes, columns)
    symbol = np.where(busy < 0.5 * alive, scopes, symbol)
    return np.where(alive <= 0, scopes + 1, symbol)


def _concurrency(selected: pd.DataFrame, selection: Selection, launch: int | None, columns: int) -> dict | None:
    if launch is None:
        return None
    part = selected[selected["launch"].to_numpy() == launch]
    t0 = max(0, selection.start_ns or 0)
    t1 = selection.end_ns if selection.end_ns is not None else int(part["end_ns"].max()) if len(part) else t0 + 1
    # Clip to the window and shift it to 0: concurrency() bins from 0 to the last end.
    clipped = part.assign(start_ns=part["start_ns"].clip(t0, t1) - t0, end_ns=part["end_ns"].clip(t0, t1) - t0)
    levels = analysis.concurrency(clipped, bins=columns, by="scope")
    series = []
    for scope, group in levels.groupby("scope", observed=True, sort=False):
        values = group["warps"].to_numpy()
        series.append({"scope": str(scope), "peak": float(values.max()), "mean": float(values.mean()),
                       "values": np.round(values, 2).tolist()})
    end = t0 + (float(levels["t_end_ns"].max()) if len(levels) else 0.0)
    return {"launch": launch, "start_ns": t0, "end_ns": end, "bins": columns, "series": series}


def _plain(value):
    """JSON-ready: numpy scalars to Python, NaN to None, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ------------------------------------------------------------------ text

class _Style:
    """Characters for the terminal: Unicode when it can show them, ASCII otherwise."""

    def __init__(self, unicode: bool):
        self.micro = "µs" if unicode else "us"
        self.ramp = " ▁▂▃▄▅▆▇█" if unicode else " .:-=+*#@"
        self.dot = " · " if unicode else " | "

    def time(self, ns) -> str:
        """A single duration with a unit picked for it."""
        if ns is None:
            return "-"
        for unit, scale in (("ms", 1e6), (self.micro, 1e3)):
            if abs(ns) >= scale:
                return f"{_number(ns / scale)} {unit}"
        return f"{_number(ns)} ns"

    def unit(self, largest: float) -> tuple[str, float]:
        """One unit for a whole column of durations."""
        if largest >= 1e7:
            return "ms", 1e6
        return (self.micro, 1e3) if largest >= 1e4 else ("ns", 1.0)


def _number(value: float) -> str:
    value = float(value)
    if value == int(value):
        return f"{int(value):,}"
    digits = 3 if abs(value) < 10 else 2 if abs(value) < 100 else 1 if abs(value) < 1000 else 0
    return f"{value:,.{digits}f}"


def _table(header: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """Columns padded to their widest cell; the first ``left`` columns left-aligned."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    out = []
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def format_text(summary: dict, width: int = 100, unicode: bool = True) -> str:
    style = _Style(unicode)
    lines = _format_header(summary["header"], style)
    for view, formatter in (("stats", _format_stats), ("pipeline", _format_pipeline),
                            ("timeline", _format_timeline), ("concurrency", _format_concurrency),
                            ("outliers", _format_outliers)):
        if view in summary:
            lines += [""] + formatter(summary[view], style, width)
    return "\n".join(lines) + "\n"


def _triple(values) -> str:
    return "(" + ",".join(str(v) for v in values) + ")"


def _format_header(h: dict, style: _Style) -> list[str]:
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
                 if h["tier"] == "ptx" and launch["clock_ghz"] else "host clock")
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
    lines += h["instrumentation"] + h["autotune"] + [overhead.summary(h["overhead"])]
    lines.append("warnings: none" if not h["warnings"] else "warnings:")
    lines += [f"  ! {w}" for w in h["warnings"]]
    return lines


def _format_stats(stats: list[dict], style: _Style, width: int) -> list[str]:
    if not stats:
        return ["SCOPES: no scope instances selected"]
    unit, scale = style.unit(max(s["max_ns"] for s in stats))
    several_kernels = len({s["kernel"] for s in stats}) > 1
    header = (["kernel"] if several_kernels else []) + ["scope", "count", "min", "p50", "mean", "p95", "max",
                                                         "total"]
    rows = [([s["kernel"]] if several_kernels else []) + [s["scope"], f"{s['count']:,}"]
            + [_number(s[k] / scale) for k in ("min_ns", "p50_ns", "mean_ns", "p95_ns", "max_ns", "total_ns")]
            for s in stats]
    return [f"SCOPES (durations in {unit})"] + _table(header, rows, left=2 if several_kernels else 1)


def _format_pipeline(p: dict, style: _Style, width: int) -> list[str]:
    if not p["warps"]:
        return ["PIPELINE: no warps selected"]
    pct = lambda share: "-" if share is None else f"{100 * share:.1f}%"
    lines = ["PIPELINE (busy = inside an outermost scope; idle = the rest of each warp's life)",
             f"  {p['warps']:,} warps{style.dot}busy {pct(p['busy_share_mean'])} on average "
             f"(median {pct(p['busy_share_p50'])}, lowest {pct(p['busy_share_min'])})",
             f"  mean life {style.time(p['lifetime_ns_mean'])}{style.dot}"
             f"idle {style.time(p['idle_ns'])} of {style.time(p['idle_ns'] + p['busy_ns'])} warp-time"]
    if p["warps_not_exited"]:
        lines.append(f"  {p['warps_not_exited']:,} warps never exited (left out above)")
    if p["idlest"]:
        lines.append("  idlest warps:")
        lines += _table(["launch", "block", "warp", "sm", "idle", "busy", "life"],
                        [[w["launch"], _triple((w["block_x"], w["block_y"], w["block_z"])), w["warp"], w["sm"],
                          style.time(w["idle_ns"]), pct(w["busy_share"]), style.time(w["lifetime_ns"])]
                         for w in p["idlest"]], left=0)
    if p["longest_gaps"]:
        lines.append("  longest gaps between scopes:")
        lines += _table(["launch", "block", "warp", "sm", "gap", "at", "after", "before"],
                        [[g["launch"], _triple((g["block_x"], g["block_y"], g["block_z"])), g["warp"], g["sm"],
                          style.time(g["gap_ns"]), style.time(g["start_ns"]), g["after"], g["before"]]
                         for g in p["longest_gaps"]], left=0)
    return lines


def _format_timeline(t: dict | None, style: _Style, width: int) -> list[str]:
    if not t or not t["rows"]:
        return ["TIMELINE: no warps selected"]
    labels = [r["label"] for r in t["rows"]]
    pad = max(map(len, labels))
    legend = "  ".join(f"{letter}={name}" for letter, name in t["legend"].items())
    lines = [f"TIMELINE launch {t['launch']}{style.dot}{len(t['rows'])} of {t['warps_in_selection']:,} warps"
             f"{style.dot}{style.time(t['start_ns'])} to {style.time(t['end_ns'])}, "
             f"{style.time(t['ns_per_column'])} per column",
             f"  legend: {legend}  {_IDLE}=idle  (blank)=warp not running"]
    lines += [f"  {label.ljust(pad)} |{row['line']}|" for label, row in zip(labels, t["rows"])]
    lines.append("  " + " " * pad + " " + _axis(t["start_ns"], t["end_ns"], t["columns"], style))
    return lines


def _axis(start: float, end: float, columns: int, style: _Style) -> str:
    """Times under the timeline's first, middle and last columns (each marked by a ^)."""
    axis = [" "] * (columns + 2)  # the row is |cells|: the cells sit at 1..columns
    right = style.time(end) + "^"
    axis[columns + 1 - len(right):columns + 1] = right
    for at, label in ((1, "^" + style.time(start)), (1 + columns // 2, "^" + style.time((start + end) / 2))):
        if all(c == " " for c in axis[at:at + len(label) + 1]):
            axis[at:at + len(label)] = label
    return "".join(axis).rstrip()


def _format_concurrency(c: dict | None, style: _Style, width: int) -> list[str]:
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


def _format_outliers(o: list[dict], style: _Style, width: int) -> list[str]:
    if not o:
        return ["OUTLIERS: no scope instances selected"]
    return ["OUTLIERS (slowest instances)"] + _table(
        ["scope", "duration", "x median", "launch", "block", "warp", "sm", "seq", "start"],
        [[r["scope"], style.time(r["duration_ns"]), "-" if r["x_median"] is None else f"{r['x_median']:.1f}x",
          r["launch"], _triple((r["block_x"], r["block_y"], r["block_z"])), r["warp"], r["sm"], r["seq"],
          style.time(r["start_ns"])] for r in o])
