"""Why a scope is slow: warp stall samples charged to the scopes that own their instructions.

A sampled launch gives, per PC, how often a warp sampled there was stalled for each reason
(cuda/pc_sampling.py). Each PC is an instruction; the kernel's scope map (sass/scope_map.py)
says which scope owns it. Samples of instructions no scope owns are "outside scopes", those
of the sass tier's own probes "tracing probes"; none is dropped.

A trace keeps them in ``meta["stalls"]``, the one form every view reads (docs/FORMAT.md):

    period   the sampling period's exponent N (2^N cycles between one SM's samples)
    chosen   how the period was chosen
    kernels  per kernel: sampled launches, samples kept, CUPTI's total of the brackets, the
             samples it dropped and those of kernels it keeps no PCs of (the driver's own)
    rows     columns kernel, scope, reason, samples, not_issued (one row per kernel, scope
             and reason with samples)"""
from __future__ import annotations

from collections import Counter
from typing import Callable

OUTSIDE = -1  # the scope of an instruction no scope owns
PROBES = -2   # the scope of an instruction the sass tier inserted
ROW_COLUMNS = ("kernel", "scope", "reason", "samples", "not_issued")
#: trace.stalls' columns.
COLUMNS = ("kernel", "scope", "name", "reason", "samples", "share", "not_issued")
PSEUDO_SCOPES = {OUTSIDE: "outside scopes", PROBES: "tracing probes"}
#: Periods CUPTI accepts: 2^5 to 2^31 cycles between the samples of one SM.
PERIODS = range(5, 32)
#: The prefix of every stall reason's CUPTI name ("..._long_scoreboard", "..._barrier_not_issued").
STALL_REASON_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
_NOT_ISSUED = "_not_issued"


def reason_of(cupti_name: str) -> tuple[str, bool]:
    """(short reason, whether it is CUPTI's second count of the samples that did not issue):
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued" -> ("long_scoreboard", True)."""
    name = cupti_name[len(STALL_REASON_PREFIX):] if cupti_name.startswith(STALL_REASON_PREFIX) else cupti_name
    if name.endswith(_NOT_ISSUED):
        return name[:-len(_NOT_ISSUED)], True
    return name, False


class StallCounts:
    """The samples of a session's sampled launches, charged to scopes."""

    def __init__(self, period: int, chosen: str):
        self.period, self.chosen = period, chosen
        self._samples: Counter[tuple[str, int, str]] = Counter()
        self._not_issued: Counter[tuple[str, int, str]] = Counter()
        self._kernels: dict[str, dict] = {}

    def add(self, kernel: str, sampled, reasons: dict[int, str], owner: Callable[[int], int]) -> None:
        """One launch's samples (a pc_sampling.Range): `reasons` names CUPTI's reason
        indices, `owner(pc_offset)` gives the scope that owns an instruction."""
        totals = self._kernels.setdefault(kernel, dict(launches=0, samples=0, total=0, dropped=0, other_kernels=0))
        totals["launches"] += 1
        totals["total"] += sampled.total
        totals["dropped"] += sampled.dropped
        totals["other_kernels"] += sampled.outside_user_kernels
        for (function, pc, index), count in sampled.samples.items():
            reason, not_issued = reason_of(reasons.get(index, f"reason_{index}"))
            # A sample of another function (a kernel running beside it) is the kernel's, outside its scopes.
            key = (kernel, owner(pc) if function == kernel else OUTSIDE, reason)
            if not_issued:
                self._not_issued[key] += count
            else:
                self._samples[key] += count
                totals["samples"] += count

    def __bool__(self) -> bool:
        return bool(self._kernels)

    def meta(self) -> dict:
        keys = sorted(set(self._samples) | set(self._not_issued), key=lambda k: (k[0], k[1], -self._samples[k], k[2]))
        rows = {c: [] for c in ROW_COLUMNS}
        for kernel, scope, reason in keys:
            for column, value in zip(ROW_COLUMNS, (kernel, scope, reason, self._samples[(kernel, scope, reason)],
                                                   self._not_issued[(kernel, scope, reason)])):
                rows[column].append(value)
        return dict(period=self.period, chosen=self.chosen, kernels=self._kernels, rows=rows)


def summaries(meta: dict) -> list[str]:
    """The notes line of a trace that sampled stalls (notes.py): how, and how many samples."""
    stalls = meta.get("stalls")
    if not stalls:
        return []
    kernels = stalls["kernels"]
    kept = sum(k["samples"] for k in kernels.values())
    dropped = sum(k["dropped"] for k in kernels.values())
    return [f"stalls: {kept:,} PC samples of {sum(k['launches'] for k in kernels.values())} launch(es), every "
            f"2^{stalls['period']} cycles per SM ({stalls['chosen']})" + (f", {dropped:,} dropped by CUPTI" if dropped
                                                                         else "")]


def frame(stalls: dict | None, scope_name: Callable[[int], str]):
    """``meta["stalls"]`` as trace.stalls' DataFrame: one row per kernel, scope and reason, its
    samples, its share of the scope's samples, and how many of them did not issue."""
    import pandas as pd
    rows = pd.DataFrame((stalls or {}).get("rows") or {c: [] for c in ROW_COLUMNS}, columns=list(ROW_COLUMNS))
    rows = rows.astype({"scope": "int64", "samples": "int64", "not_issued": "int64"})
    rows.insert(2, "name", [PSEUDO_SCOPES.get(s) or scope_name(s) for s in rows["scope"]])
    per_scope = rows.groupby(["kernel", "scope"])["samples"].transform("sum")
    rows.insert(5, "share", (rows["samples"] / per_scope.where(per_scope > 0)).fillna(0.0))
    return rows[list(COLUMNS)]


def per_scope(table) -> list[dict]:
    """Per kernel and scope in by_scope's order: its `kernel`, `scope` (name), `scope_id`,
    `samples`, and its `reasons` (reason, samples, share, not_issued), most samples first:
    what ``gwatch show --stalls`` and the HTML report list."""
    ranked = table.sort_values("samples", ascending=False, kind="stable")
    reasons_of = dict(iter(ranked.groupby(["kernel", "scope"], sort=False)))
    return [{"kernel": row.kernel, "scope": row.name, "scope_id": int(row.scope), "samples": int(row.samples),
             "reasons": [{"reason": r.reason, "samples": int(r.samples), "share": float(r.share),
                          "not_issued": int(r.not_issued)} for r in reasons_of[(row.kernel, row.scope)].itertuples()]}
            for row in by_scope(table).itertuples()]


def by_scope(table):
    """Per kernel and scope: its samples and its top reason (trace.stalls' rows summed)."""
    if not len(table):
        import pandas as pd
        return pd.DataFrame(columns=["kernel", "scope", "name", "samples", "top_reason", "top_share"])
    ranked = table.sort_values(["kernel", "scope", "samples"], ascending=[True, True, False])
    top = ranked.groupby(["kernel", "scope"], sort=False).head(1).set_index(["kernel", "scope"])
    out = table.groupby(["kernel", "scope", "name"], sort=False, as_index=False)["samples"].sum()
    keys = list(zip(out["kernel"], out["scope"]))
    out["top_reason"] = [top.loc[k, "reason"] for k in keys]
    out["top_share"] = [float(top.loc[k, "share"]) for k in keys]
    return out.sort_values(["kernel", "samples"], ascending=[True, False], ignore_index=True)
