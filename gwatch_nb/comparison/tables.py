"""The comparison's tables: ``compare(a, b, ...)`` and the ``Comparison`` it returns.

Scopes are matched by name and id (matching.py), instances by (scope, seq) and by warp
role (the warp's index in its block), and every run is compared with the first one. The
change of each measure comes with a bootstrap interval (stats.py says which and why), and a verdict in words only where that interval excludes zero. Whatever the runs do
not share (kernels, grids, warps per block, scopes, iterations) is left out of the
comparison and listed in ``notes``."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..trace import Trace
from .matching import listed, match_scopes, shape_notes
from .runs import Run
from .stats import LEVEL, MIN_UNITS, RESAMPLES, SEED, Change, compare_groups, compare_units, ratio_mean, verdict

#: The tail of a launch: from when this share of its warps had exited to the last exit.
TAIL_QUANTILE = 0.95
CHANGE_COLUMNS = ["change", "ci_low", "ci_high", "verdict"]
SCOPE_COLUMNS = ["scope", "run", "scope_id", "count", "p50_ns", "p95_ns", "mean_ns", "total_ns", "share",
                 "p50_change", *CHANGE_COLUMNS]
#: Launch-level measures: name (its value in ns where it ends in _ns) -> (what it is, the
#: word kind for verdicts, what its samples are: the units the bootstrap resamples).
KERNEL_MEASURES = {
    "duration_ns": ("kernel duration per launch", "time", "launches"),
    "sm_busy_ns": ("busy time per SM (inside outermost scopes)", "time", "(SM, launch) pairs"),
    "tail_ns": (f"tail: from {TAIL_QUANTILE:.0%} of warps exited to the last", "time", "launches"),
    "idle_share": ("share of warp lifetime outside any scope", "share", "warps"),
}
KERNEL_COLUMNS = ["measure", "what", "run", "value", "samples", "samples_of", *CHANGE_COLUMNS]
STALL_COLUMNS = ["scope", "reason", "run", "samples", "share", "points"]
#: A stall reason's share of a scope's samples must move this far (in points of share) for
#: ``stall_changes`` to name it: sampling noise at some thousands of samples is a point or two.
STALL_CHANGE_POINTS = 0.05


def _quantiles(durations: pd.Series) -> tuple[float, float]:
    return float(durations.quantile(0.5)), float(durations.quantile(0.95))


class Comparison:
    """Runs compared with the first. Tables (one row per measure and run; the baseline's
    change columns are empty): ``df`` per scope, ``kernel`` launch-level measures,
    ``iterations`` per (scope, seq), ``roles`` per (scope, warp index in the block),
    ``sms`` busy time per SM. ``verdicts`` lists the changes whose interval excludes zero
    (scopes and kernel measures); ``notes`` what the runs do not share. Where every run
    sampled stalls (stalls=True), ``stalls`` holds per scope and reason each run's share of
    the scope's PC samples and its move from the baseline's in points, and ``stall_changes``
    says, per scope, the reasons whose share moved most: why its time changed."""

    def __init__(self, traces: Sequence[Trace], labels: Sequence[str], resamples: int = RESAMPLES,
                 level: float = LEVEL, seed: int = SEED):
        self.runs = [Run(label, trace) for label, trace in zip(labels, traces)]
        self.labels = list(labels)
        self.resamples, self.level, self.seed = resamples, level, seed
        self.notes: list[str] = []
        base = self.runs[0]
        self.matches: list[dict[int, int]] = [{sid: sid for sid in base.scope_ids()}]
        for run in self.runs[1:]:
            matched, notes = match_scopes(base.scope_ids(), run.scope_ids())
            self.notes += shape_notes(base, run) + notes
            other = run.scope_ids()
            unmatched_base = [base.trace.scope_name(s) for s in base.scope_ids() if s not in matched]
            unmatched_other = [other[s] for s in other if s not in matched.values()]
            if unmatched_base:
                self.notes.append(f"only in {base.label}, not in {run.label}: {listed(unmatched_base)}")
            if unmatched_other:
                self.notes.append(f"only in {run.label}, not in {base.label}: {listed(unmatched_other)}")
            self.matches.append(matched)
        self.scopes = [s for s in base.scope_ids() if all(s in m for m in self.matches)]
        self.df = self._scope_table()
        self.kernel = self._kernel_table()
        self.roles = self._grouped_table("warp", "role")
        self.iterations = self._grouped_table("seq", "seq")
        self.sms = self._sm_table()
        self.stalls = self._stall_table()
        self.stall_changes = self._stall_changes()
        self.verdicts = [v for table in (self.df, self.kernel) for v in table["verdict"] if isinstance(v, str)]

    # ------------------------------------------------------------ helpers

    def scope_name(self, scope_id: int) -> str:
        return self.runs[0].trace.scope_name(scope_id)

    def _key(self, table: str, run: int) -> str:
        """What seeds a table's bootstrap of ``run`` against the baseline: the table and the
        two runs' data, never their labels or the other runs beside them."""
        return f"{table}/{self.runs[0].fingerprint}/{self.runs[run].fingerprint}"

    def _change(self, key: str, a, b) -> Change:
        return compare_units(key, a, b, self.resamples, self.level, self.seed)

    def _change_columns(self, change: Change, subject: str, run: int, kind: str = "time") -> dict:
        return {"change": change.change, "ci_low": change.low, "ci_high": change.high,
                "verdict": verdict(subject, change, self.labels[0], self.labels[run], kind, self.level)}

    @staticmethod
    def _blank() -> dict:
        return {"change": np.nan, "ci_low": np.nan, "ci_high": np.nan, "verdict": None}

    # ------------------------------------------------------------ tables

    def _unit_matrices(self, by: list[str], groups: list[list[tuple]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per run, (sums, counts) of durations, warps × groups; ``groups[r]`` lists run r's
        group keys (values of the ``by`` columns) in table order."""
        return [run.unit_matrix(by, keys) for run, keys in zip(self.runs, groups)]

    def _changes(self, table: str, matrices: list[tuple[np.ndarray, np.ndarray]]) -> list[list[Change]]:
        """Per run after the baseline, the Change of every group against the baseline's."""
        return [[]] + [compare_groups(self._key(table, r), matrices[0], matrices[r], self.resamples,
                                      self.level, self.seed) for r in range(1, len(self.runs))]

    def _scope_table(self) -> pd.DataFrame:
        groups = [[(m[s],) for s in self.scopes] for m in self.matches]
        changes = self._changes("scope", self._unit_matrices(["scope_id"], groups))
        rows = []
        for g, sid in enumerate(self.scopes):
            name = self.scope_name(sid)
            base_p50 = None
            for r, run in enumerate(self.runs):
                rid = self.matches[r][sid]
                durations = run.df.loc[run.df["scope_id"] == rid, "duration_ns"]
                p50, p95 = _quantiles(durations)
                total = int(durations.sum())
                row = {"scope": name, "run": run.label, "scope_id": rid, "count": len(durations), "p50_ns": p50,
                       "p95_ns": p95, "mean_ns": float(durations.mean()), "total_ns": total,
                       "share": total / run.warp_time_ns if run.warp_time_ns else np.nan}
                if r == 0:
                    base_p50 = p50
                    row.update(p50_change=np.nan, **self._blank())
                else:
                    row.update(p50_change=p50 / base_p50 - 1 if base_p50 else np.nan,
                               **self._change_columns(changes[r][g], name, r))
                rows.append(row)
        return pd.DataFrame(rows, columns=SCOPE_COLUMNS)

    def _grouped_table(self, column: str, title: str) -> pd.DataFrame:
        """Per matched scope and value of ``column`` (seq or warp) shared by every run."""
        present = [run.df.groupby(["scope_id", column], observed=True).size() for run in self.runs]
        shared = {}
        for sid in self.scopes:
            values = [set(p.loc[self.matches[r][sid]].index) if self.matches[r][sid] in p.index.get_level_values(0)
                      else set() for r, p in enumerate(present)]
            shared[sid] = sorted(set.intersection(*values))
            left_out = sorted(set.union(*values) - set(shared[sid]))
            if left_out:
                self.notes.append(f"{self.scope_name(sid)}: {title} {_ranges(left_out)} not in every run, left out "
                                  f"of the {title} comparison")
        keys = [(sid, value) for sid in self.scopes for value in shared[sid]]
        groups = [[(m[sid], value) for sid, value in keys] for m in self.matches]
        matrices = self._unit_matrices(["scope_id", column], groups)
        changes = self._changes(title, matrices)
        rows = []
        for g, (sid, value) in enumerate(keys):
            name = self.scope_name(sid)
            for r, run in enumerate(self.runs):
                sums, counts = matrices[r]
                row = {"scope": name, title: int(value), "run": run.label, "count": int(counts[:, g].sum()),
                       "mean_ns": float(sums[:, g].sum() / counts[:, g].sum())}
                row.update(self._blank() if r == 0 else self._change_columns(changes[r][g], f"{name} {title} {value}",
                                                                             r))
                rows.append(row)
        return pd.DataFrame(rows, columns=["scope", title, "run", "count", "mean_ns", *CHANGE_COLUMNS])

    def _kernel_units(self, run: Run) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        launches, activity = run.trace.launches, run.activity
        durations = launches["duration_ns"].to_numpy(np.float64) if len(launches) else np.zeros(0)
        per_sm = activity.groupby(["launch", "sm"], observed=True)["busy_ns"].sum().to_numpy(np.float64)
        exited = activity[activity["exited"]]
        tails = [float(part["end_ns"].max() - part["end_ns"].quantile(TAIL_QUANTILE))
                 for _, part in exited.groupby("launch")]
        alive = activity[activity["lifetime_ns"] > 0]
        return {
            "duration_ns": (durations, np.ones(len(durations))),
            "sm_busy_ns": (per_sm, np.ones(len(per_sm))),
            "tail_ns": (np.array(tails), np.ones(len(tails))),
            "idle_share": (alive["idle_ns"].to_numpy(np.float64), alive["lifetime_ns"].to_numpy(np.float64)),
        }

    def _kernel_table(self) -> pd.DataFrame:
        units = [self._kernel_units(run) for run in self.runs]
        rows = []
        for measure, (what, kind, samples_of) in KERNEL_MEASURES.items():
            base = units[0][measure]
            for r, run in enumerate(self.runs):
                mine = units[r][measure]
                row = {"measure": measure, "what": what, "run": run.label, "value": ratio_mean(*mine),
                       "samples": len(mine[0]), "samples_of": samples_of}
                if r == 0:
                    row.update(self._blank())
                else:
                    change = self._change(self._key(f"kernel/{measure}", r), base, mine)
                    row.update(self._change_columns(change, what, r, kind))
                rows.append(row)
        for r, run in enumerate(self.runs[1:], 1):
            if min(len(units[0]["duration_ns"][0]), len(units[r]["duration_ns"][0])) < MIN_UNITS:
                self.notes.append(f"{run.label} vs {self.labels[0]}: fewer than {MIN_UNITS} launches in a run, so kernel "
                                  "duration and tail have no interval (trace more launches to get one)")
        return pd.DataFrame(rows, columns=KERNEL_COLUMNS)

    def _sm_table(self) -> pd.DataFrame:
        """Busy ns per SM, averaged over each run's launches; SMs not used by a run are absent."""
        frames = []
        for run in self.runs:
            launches = max(len(run.trace.launches), 1)
            busy = run.activity.groupby("sm", observed=True)["busy_ns"].sum() / launches
            frames.append(busy.rename(run.label))
        return pd.concat(frames, axis=1).rename_axis("sm").reset_index()

    def _stall_table(self) -> pd.DataFrame:
        if not all(run.trace.meta.get("stalls") for run in self.runs):
            return pd.DataFrame(columns=STALL_COLUMNS)
        # Per run, each scope's samples per reason (summed over the run's kernels).
        by_reason = [run.trace.stalls.groupby(["scope", "reason"])["samples"].sum() for run in self.runs]
        rows = []
        for sid in self.scopes:
            name = self.scope_name(sid)
            per_run = [_samples_of(totals, self.matches[r][sid]) for r, totals in enumerate(by_reason)]
            reasons = sorted(set().union(*(s.index for s in per_run)), key=lambda k: -per_run[0].get(k, 0))
            for reason in reasons:
                base = _share(per_run[0], reason)
                for r, samples in enumerate(per_run):
                    share = _share(samples, reason)
                    rows.append({"scope": name, "reason": reason, "run": self.labels[r],
                                 "samples": int(samples.get(reason, 0)), "share": share,
                                 "points": np.nan if r == 0 else share - base})
        return pd.DataFrame(rows, columns=STALL_COLUMNS)

    def _stall_changes(self) -> list[str]:
        out = []
        for (scope, run), moves in self.stalls.dropna(subset=["points"]).groupby(["scope", "run"], sort=False):
            moved = moves[moves["points"].abs() >= STALL_CHANGE_POINTS].sort_values("points", key=abs, ascending=False)
            if len(moved):
                base = self.stalls[(self.stalls["scope"] == scope) & (self.stalls["run"] == self.labels[0])]
                was = dict(zip(base["reason"], base["share"]))
                shown = ", ".join(f"{m.reason} {was.get(m.reason, 0.0):.0%} → {m.share:.0%}"
                                  for m in moved.head(3).itertuples())
                out.append(f"{scope} in {run}: {shown} of its stall samples (against {self.labels[0]})")
        return out

    # ------------------------------------------------------------ outputs

    def to_dict(self, scopes: Sequence[str] | None = None) -> dict:
        """Everything as JSON-ready values (NaN becomes None); ``scopes`` limits the scope tables."""
        def chosen(table: pd.DataFrame) -> pd.DataFrame:
            return table[table["scope"].isin(scopes)] if scopes is not None and "scope" in table else table

        def records(table: pd.DataFrame) -> list[dict]:
            return [{k: _plain(v) for k, v in row.items()} for row in chosen(table).to_dict("records")]

        verdicts = [v for table in (chosen(self.df), self.kernel) for v in table["verdict"] if isinstance(v, str)]

        return {"labels": self.labels, "level": self.level, "resamples": self.resamples, "seed": self.seed,
                "interval": "percentile bootstrap over warps (kernel measures: over launches, SMs or warps)",
                "notes": self.notes, "verdicts": verdicts, "scopes": records(self.df),
                "kernel": records(self.kernel), "roles": records(self.roles), "iterations": records(self.iterations),
                "sms": records(self.sms), "stalls": records(self.stalls), "stall_changes": self.stall_changes,
                "stall_change_points": STALL_CHANGE_POINTS}

    def __repr__(self) -> str:
        from .text import format_text
        return format_text(self.to_dict())

    def _ipython_display_(self) -> None:
        from .widget import display_comparison
        display_comparison(self)

    def widget(self, **kw):
        """The runs' timelines stacked on one time axis, zoom and pan in step (a Jupyter widget)."""
        from .widget import CompareWidget
        return CompareWidget(self, **kw)

    def charts(self):
        """The overlaid distributions and per-iteration trends, as one altair chart."""
        from .charts import dashboard
        return dashboard(self)

    def to_html(self, path, title: str | None = None) -> None:
        """One offline HTML file: verdicts, tables, charts and the runs' timelines on one time axis."""
        from ..outputs import write_comparison
        write_comparison(self, path, "html", title=title)


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    parts, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            parts.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ", ".join(parts)


def no_stall_change(points: float) -> str:
    """What ``stall_changes`` says when no reason moved `points` (a share) or more."""
    return f"no reason's share moved {round(100 * points)} points or more"


def _samples_of(totals: pd.Series, scope: int) -> pd.Series:
    """One scope's samples per reason from a (scope, reason) series; empty where it has none."""
    return totals.xs(scope, level="scope") if scope in totals.index.get_level_values("scope") else \
        pd.Series(dtype="int64")


def _share(samples: pd.Series, reason: str) -> float:
    total = samples.sum()
    return float(samples.get(reason, 0) / total) if total else 0.0


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else float(value)
    return value


def compare(*traces, labels: Sequence[str] | None = None, resamples: int = RESAMPLES, level: float = LEVEL,
            seed: int = SEED) -> Comparison:
    """Compare two or more traces (or one list of them), each with the first.

    ``labels`` names the runs (default "run 0", "run 1", ...); ``resamples``, ``level`` and
    ``seed`` set the bootstrap (same inputs and seed: same intervals)."""
    if len(traces) == 1 and isinstance(traces[0], (list, tuple)):
        traces = tuple(traces[0])
    if len(traces) < 2:
        raise ValueError(f"compare needs at least two traces, got {len(traces)}")
    for i, trace in enumerate(traces):
        if not isinstance(trace, Trace):
            raise TypeError(f"compare: argument {i} is a {type(trace).__name__}, not a gwatch_nb.Trace")
    labels = [f"run {i}" for i in range(len(traces))] if labels is None else [str(l) for l in labels]
    if len(labels) != len(traces):
        raise ValueError(f"compare: {len(labels)} labels for {len(traces)} traces")
    if len(set(labels)) != len(labels):
        raise ValueError(f"compare: labels must differ, got {labels}")
    if not 0 < level < 1:
        raise ValueError(f"compare: level must be between 0 and 1, got {level}")
    if resamples < 100:
        raise ValueError(f"compare: resamples must be at least 100, got {resamples}")
    return Comparison(traces, labels, resamples, level, seed)
