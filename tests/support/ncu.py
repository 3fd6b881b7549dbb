"""Nsight Compute's own warp stall samples of a kernel, per SASS instruction, for holding
gwatch_nb.stalls to them: run a program under ``ncu --section SourceCounters`` and read the
source page back as CSV."""
from __future__ import annotations

import csv
import io
import shutil
import subprocess

#: ncu's source-page column of each reason -> CUPTI's reason name, shortened (stall_reasons.reason_of).
REASONS = {
    "stall_barrier": "barrier", "stall_branch_resolving": "branch_resolving", "stall_dispatch": "dispatch_stall",
    "stall_drain": "drain", "stall_imc": "imc_miss", "stall_lg": "lg_throttle", "stall_long_sb": "long_scoreboard",
    "stall_math": "math_pipe_throttle", "stall_membar": "membar", "stall_mio": "mio_throttle", "stall_misc": "misc",
    "stall_no_inst": "no_instructions", "stall_not_selected": "not_selected", "stall_selected": "selected",
    "stall_short_sb": "short_scoreboard", "stall_sleep": "sleeping", "stall_tex": "tex_throttle",
    "stall_wait": "wait", "stall_gmma": "warpgroup_arrive",
}


def available() -> bool:
    return shutil.which("ncu") is not None


def profile(report: str, command: list[str], timeout: int = 300) -> None:
    """Run `command` under ncu's warp-state and source-counter sections (clocks and caches left
    alone, as the program's own run leaves them)."""
    done = subprocess.run(["ncu", "--clock-control", "none", "--cache-control", "none", "--section", "WarpStateStats", "--section",
                           "SourceCounters", "-f", "-o", report, *command], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"ncu exited {done.returncode}: {(done.stdout + done.stderr)[-1500:]}")


def samples_per_instruction(report: str, kernel: str) -> dict[int, dict[str, int]]:
    """Per instruction index of `kernel` (its first profiled launch), ncu's samples of each
    reason (all samples, not only those that did not issue)."""
    text = subprocess.run(["ncu", "-i", report + ".ncu-rep", "--kernel-name", kernel, "--launch-count", "1",
                           "--page", "source", "--csv", "--print-source", "sass"],
                          check=True, capture_output=True, text=True).stdout
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith('"Address"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    addresses = [int(r["Address"], 16) for r in rows]
    first = min(addresses)
    out = {}
    for address, row in zip(addresses, rows):
        counts = {reason: int(float(row[column] or 0)) for column, reason in REASONS.items() if column in row}
        out[(address - first) // 16] = {r: n for r, n in counts.items() if n}
    return out
