"""The Trace: every scope instance of every traced launch, and what is known about them."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from . import launch_config, tiers
from .records import MARKER_PROBLEMS, ZERO_LENGTH_REASON, Intervals, LaunchRecords, pair_scopes, zero_length_scopes
from .timebase import ClockModel, fit_clock

if TYPE_CHECKING:
    import pandas as pd

#: The columns that name one warp, in Trace.df, Trace.warps and every view of them.
WARP_KEY = ("launch", "block_x", "block_y", "block_z", "warp")

_MAX_EXAMPLES = 5

#: Problem kinds that, on a tier, describe the schedule rather than the markers, and so are no
#: warning there. A sass-tier scope is what the compiled kernel does between its readings, and
#: ptxas interleaves neighbouring scopes' instructions: their intervals overlap without nesting
#: by design (``Trace.sites``' span / own / other_scopes say by how much; the views give each
#: overlapping instance a row of its own). On the ptx and interpreter tiers crossing still
#: means the program's markers cross.
_SCHEDULE_PROPERTIES = {"sass": ("crossed",)}


@dataclass
class TraceWarning:
    """One kind of problem found in a trace, with how often and where."""
    kind: str
    message: str
    count: int
    examples: list[dict] = field(default_factory=list)

    def __str__(self) -> str:
        where = "; e.g. " + ", ".join(_format_place(e) for e in self.examples) if self.examples else ""
        return f"{self.kind}: {self.message} ({self.count}){where}"


def _format_place(example: Mapping) -> str:
    block = ",".join(str(b) for b in example["block"])
    return f"{example['kernel']} launch {example['launch']} block ({block}) warp {example['warp']}"


@dataclass
class _Launch:
    records: LaunchRecords
    intervals: Intervals
    clock: ClockModel
    t0: float  # the first warp's entry, in the clock model's relative ns
    problems: dict[str, np.ndarray]

    def ns(self, cycles: np.ndarray, warp_row: np.ndarray) -> np.ndarray:
        """Integer ns since the launch's first warp entered."""
        return self.ns_many([cycles], warp_row)[0]

    def ns_many(self, cycles: list[np.ndarray], warp_row: np.ndarray) -> list[np.ndarray]:
        """``ns`` of several arrays read by the same warps (in place: see ClockModel.to_ns_many)."""
        out = []
        for ns in self.clock.to_ns_many(cycles, warp_row):
            ns -= self.t0
            out.append(np.rint(ns, out=ns).astype(np.int64))
        return out

    @property
    def t0_ns(self) -> int:
        """The launch start on the absolute globaltimer axis."""
        return self.clock.gt_base + int(round(self.t0))


def _decode(records: LaunchRecords, cycles_are_ns: bool) -> _Launch:
    warps = records.warps
    fallback = 1e9 / records.info["sm_clock_hz"] if records.info.get("sm_clock_hz") else 1.0
    clock = fit_clock(warps, cycles_are_ns=cycles_are_ns, fallback_ns_per_cycle=fallback)
    intervals, problems = pair_scopes(records.tags, records.cycles, warps["n_events"])
    t0 = float(clock.to_ns(warps["ck_entry"], np.arange(len(warps))).min()) if len(warps) else 0.0
    return _Launch(records, intervals, clock, t0, problems)


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The launches' new int64 columns end to end (one launch's as it is: nothing else holds it)."""
    if not arrays:
        return np.zeros(0, np.int64)
    return np.concatenate(arrays) if len(arrays) > 1 else arrays[0]


class Trace:
    """Scope instances of the traced launches.

    ``df`` has one row per scope instance; ``warps`` one row per warp; ``warp_row`` the
    row in ``warps`` of each instance's warp; ``launches`` one row per traced launch;
    ``warnings`` lists marker problems and dropped events. Integer columns are int64, as
    pandas makes them, so arithmetic on them never wraps."""

    def __init__(self, launches: Sequence[LaunchRecords], scope_names: Mapping[int, str] | None = None,
                 meta: Mapping | None = None):
        self.meta = dict(meta or {})
        self.meta.setdefault("tier", "ptx")
        if self.meta["tier"] not in tiers.TIERS:
            raise ValueError(f"unknown tier {self.meta['tier']!r}")
        tier = tiers.of(self)
        self.meta["time_source"] = tier.time_source
        self.scope_names = {int(k): str(v) for k, v in (scope_names or {}).items()}
        self._launches = [_decode(r, cycles_are_ns=tier.host_clock) for r in launches]
        self.warnings = self._collect_warnings()

    # ------------------------------------------------------------ raw material

    @property
    def records(self) -> list[LaunchRecords]:
        """The launches' records, as collected (what an archive stores)."""
        return [launch.records for launch in self._launches]

    @property
    def events_recorded(self) -> int:
        return sum(l.records.events_recorded for l in self._launches)

    @property
    def events_dropped(self) -> int:
        return sum(l.records.events_dropped for l in self._launches)

    def scope_name(self, scope_id: int) -> str:
        return self.scope_names.get(int(scope_id), str(int(scope_id)))

    # ------------------------------------------------------------ tables

    @functools.cached_property
    def df(self) -> "pd.DataFrame":
        """One row per scope instance (see docs/FORMAT.md for the columns)."""
        import pandas as pd

        parts = [self._interval_columns(i, launch) for i, launch in enumerate(self._launches)]
        columns = {name: _joined([p[name] for p in parts]) for name in _INTERVAL_COLUMNS}
        kernels = sorted({l.records.kernel for l in self._launches})
        kernel_codes = np.concatenate([
            np.full(len(p["launch"]), kernels.index(l.records.kernel), np.int8)
            for p, l in zip(parts, self._launches)]) if parts else np.zeros(0, np.int8)
        scope_ids = columns["scope_id"]
        known = np.flatnonzero(np.bincount(scope_ids))  # the ids present, in order (ids are small)
        names = [self.scope_name(s) for s in known]
        categories = list(dict.fromkeys(names))
        lookup = np.zeros(int(known.max()) + 1 if len(known) else 1, np.int16)
        lookup[known] = [categories.index(n) for n in names]
        scope_codes = lookup[scope_ids] if len(scope_ids) else np.zeros(0, np.int16)
        return pd.DataFrame({
            "kernel": pd.Categorical.from_codes(kernel_codes, kernels),
            **{name: columns[name] for name in WARP_KEY},
            "sm": columns["sm"],
            "scope_id": scope_ids,
            "scope": pd.Categorical.from_codes(scope_codes, categories),
            "start_ns": columns["start_ns"],
            "end_ns": columns["end_ns"],
            "duration_ns": columns["end_ns"] - columns["start_ns"],
            "start_cycle": columns["start_cycle"],
            "end_cycle": columns["end_cycle"],
            "depth": columns["depth"],
            "seq": columns["seq"],
        }, copy=False)  # the columns are this table's own: no second copy of a million rows

    @functools.cached_property
    def warp_row(self) -> np.ndarray:
        """For each row of ``df``, the row of its warp in ``warps`` (int64)."""
        first = np.cumsum([0] + [len(l.records.warps) for l in self._launches])
        return _joined([l.intervals.warp_row.astype(np.int64) + first[i] for i, l in enumerate(self._launches)])

    def _interval_columns(self, index: int, launch: _Launch) -> dict[str, np.ndarray]:
        """One launch's columns, each a new int64 array (the warp table is widened before
        the gather: it is thousands of rows, the instances millions)."""
        iv, warps = launch.intervals, launch.records.warps
        rows = iv.warp_row
        start, end = launch.ns_many([iv.start_cycle, iv.end_cycle], rows)
        return {
            "launch": np.full(len(rows), index, np.int64),
            **{k: warps[k].astype(np.int64)[rows] for k in ("block_x", "block_y", "block_z", "warp", "sm")},
            "scope_id": iv.scope_id.astype(np.int64), "start_ns": start, "end_ns": end,
            "start_cycle": iv.start_cycle.astype(np.int64), "end_cycle": iv.end_cycle.astype(np.int64),
            "depth": iv.depth.astype(np.int64), "seq": iv.seq.astype(np.int64),
        }

    @property
    def sites(self) -> "pd.DataFrame":
        """On the sass tier, one row per clock reading the probes took: its kernel, site number,
        scope, kind (start/end), pair, origin ("marker" or an automatic site's kind), the
        instruction index it was read before, where its stores went, the scope's instructions
        and how many of the neighbouring scopes' ptxas interleaved with them (docs/sass/sites.md
        defines every column). Empty on the other tiers."""
        import pandas as pd
        sites = pd.DataFrame(self.meta.get("sites") or {})
        if len(sites) and "scope" in sites:
            sites.insert(3, "name", [self.scope_name(s) for s in sites["scope"]])
        return sites

    @functools.cached_property
    def stalls(self) -> "pd.DataFrame":
        """Why the warps stalled, per scope (traced with ``stalls=True``): one row per kernel,
        scope and reason, its PC samples, its share of the scope's samples, and how many of
        them did not issue (stall_reasons.py). Scope -1 is "outside scopes", -2 the sass
        tier's own probes. Empty when the trace sampled none."""
        from .stall_reasons import frame
        return frame(self.meta.get("stalls"), self.scope_name)

    @functools.cached_property
    def warps(self) -> "pd.DataFrame":
        """One row per warp: where it ran, its lifetime on the launch's ns axis, its events."""
        import pandas as pd

        frames = []
        for index, launch in enumerate(self._launches):
            w = launch.records.warps
            rows = np.arange(len(w))
            exited = w["gt_exit"] != 0
            entry = launch.ns(w["ck_entry"], rows)
            exit_ns = np.where(exited, launch.ns(w["ck_exit"], rows), -1)
            frames.append(pd.DataFrame({
                "kernel": launch.records.kernel, "launch": np.full(len(w), index, np.int64),
                "block_x": w["block_x"].astype(np.int64), "block_y": w["block_y"].astype(np.int64),
                "block_z": w["block_z"].astype(np.int64), "warp": w["warp"].astype(np.int64),
                "sm": w["sm"].astype(np.int64), "start_ns": entry, "end_ns": exit_ns,
                "events": w["n_events"].astype(np.int64), "dropped": w["n_dropped"].astype(np.int64),
                "exited": exited,
            }))
        if not frames:
            return pd.DataFrame(columns=["kernel", *WARP_KEY, "sm", "start_ns", "end_ns", "events", "dropped",
                                         "exited"])
        return pd.concat(frames, ignore_index=True)

    @functools.cached_property
    def launches(self) -> "pd.DataFrame":
        """One row per traced launch: shape, volume, clock and time span."""
        import pandas as pd

        rows = []
        for index, launch in enumerate(self._launches):
            r, w = launch.records, launch.records.warps
            attempted = w["n_events"].astype(np.int64) + w["n_dropped"]
            end = launch.ns(w["ck_exit"], np.arange(len(w)))[w["gt_exit"] != 0]
            rows.append({
                "kernel": r.kernel, "launch": index, "grid": tuple(r.grid), "block": tuple(r.block),
                "warps": len(w), "events_recorded": r.events_recorded, "events_dropped": r.events_dropped,
                "capacity": r.capacity, "capacity_needed": int(attempted.max()) if len(w) else 0,
                "clock_ghz": launch.clock.clock_ghz, "clock_spread_pct": launch.clock.clock_spread_pct,
                "t0_ns": launch.t0_ns,
                "duration_ns": int(end.max()) if len(end) else 0,
                "scope_instances": len(launch.intervals.scope_id),
                "missing_warps": int(r.info.get("missing_warps", 0)),
                "config": launch_config.label(r.info.get("config")), "autotune": r.info.get("autotune"),
                "tier": r.info.get("tier", self.meta.get("tier")),
            })
        return pd.DataFrame(rows)

    @property
    def overhead(self) -> dict:
        """What tracing cost (overhead.py says the shape): measured, or why not."""
        from .overhead import not_measured
        return self.meta.get("overhead") or not_measured("this trace was made before tracing cost was measured")

    # ------------------------------------------------------------ problems

    def _collect_warnings(self) -> list[TraceWarning]:
        found: dict[str, TraceWarning] = {}

        def add(kind: str, message: str, count: int, launch_index: int, launch: _Launch, rows: Iterable[int]):
            entry = found.setdefault(kind, TraceWarning(kind, message, 0))
            entry.count += count
            w = launch.records.warps
            for row in list(rows)[:_MAX_EXAMPLES - len(entry.examples)]:
                entry.examples.append({
                    "kernel": launch.records.kernel, "launch": launch_index,
                    "block": (int(w["block_x"][row]), int(w["block_y"][row]), int(w["block_z"][row])),
                    "warp": int(w["warp"][row]),
                })

        for index, launch in enumerate(self._launches):
            w = launch.records.warps
            dropped = w["n_dropped"]
            if dropped.any():
                need = int((w["n_events"].astype(np.int64) + dropped).max())
                add("events_dropped", f"events did not fit the per-warp capacity of {launch.records.capacity}; "
                    f"capacity={need} would keep them all", int(dropped.sum()), index, launch,
                    np.flatnonzero(dropped))
            for kind, rows in launch.problems.items():
                if kind in _SCHEDULE_PROPERTIES.get(launch.records.info.get("tier", self.meta["tier"]), ()):
                    continue
                if len(rows):
                    add(kind, MARKER_PROBLEMS[kind], len(rows), index, launch, np.unique(rows))
            stuck = np.flatnonzero(w["gt_exit"] == 0)
            if len(stuck):
                add("warp_not_exited", "warps never reached their exit (no exit time, events not counted)",
                    len(stuck), index, launch, stuck)
            missing = int(launch.records.info.get("missing_warps", 0))
            if missing:
                add("missing_warps", "trace slots no warp wrote", missing, index, launch, [])
        zero = zero_length_scopes([launch.intervals for launch in self._launches])
        for index, launch in enumerate(self._launches):
            rows = launch.intervals.warp_row[np.isin(launch.intervals.scope_id, zero)]
            if len(rows):
                names = ", ".join(self.scope_name(s) for s in zero)
                add("zero_length", f"scope{'s' if len(zero) > 1 else ''} {names}: {ZERO_LENGTH_REASON}", len(rows),
                    index, launch, np.unique(rows))
        for problem in self.meta.get("problems", []):  # what the tracing session met (tiers.Problem)
            found[(problem["kind"], problem["kernel"])] = TraceWarning(problem["kind"], problem["message"], 1)
        return list(found.values())

    # ------------------------------------------------------------ outputs

    def save(self, path) -> None:
        """Write a lossless ``.json`` archive (docs/FORMAT.md); ``gwatch_nb.load`` reads it."""
        from .outputs import write_trace
        write_trace(self, path, "archive")

    def to_parquet(self, directory, run: str | None = None) -> str:
        """Write this trace into the Parquet dataset at ``directory`` as run ``run`` (default:
        its kernels and creation time); returns the run. See gwatch_nb.dataset."""
        from .dataset import write
        return write(self, directory, run)

    def to_perfetto(self, path, group_by: str = "sm") -> None:
        """Write a Perfetto / Chrome trace (ui.perfetto.dev): processes are SMs (or blocks with
        ``group_by="block"``), threads are warps, one event per scope instance."""
        from .outputs import write_trace
        write_trace(self, path, "perfetto", group_by=group_by)

    def __repr__(self) -> str:
        kernels = sorted({l.records.kernel for l in self._launches})
        instances = sum(len(l.intervals.scope_id) for l in self._launches)
        dropped = f", {self.events_dropped} events dropped" if self.events_dropped else ""
        return (f"<Trace {self.meta['tier']}: {len(self._launches)} launch(es) of {', '.join(kernels) or 'nothing'}, "
                f"{instances} scope instances{dropped}, {len(self.warnings)} warning kind(s)>")

    def widget(self, **kw):
        """The interactive timeline (a Jupyter widget); keywords go to ``TimelineWidget``."""
        from .widget import TimelineWidget
        return TimelineWidget(self, **kw)

    def charts(self):
        """The summary charts, one above the other, as a widget that draws offline
        (``.chart`` is the altair chart)."""
        from .charts import ChartsWidget, dashboard
        return ChartsWidget(dashboard(self))

    def to_html(self, path, title=None) -> None:
        """Write a self-contained HTML report of this trace (works offline)."""
        from .outputs import write_trace
        write_trace(self, path, "html", title=title)


_INTERVAL_COLUMNS = ("launch", "block_x", "block_y", "block_z", "warp", "sm", "scope_id", "start_ns", "end_ns",
                     "start_cycle", "end_cycle", "depth", "seq")
