"""What instrumenting a kernel changed in its binary: the shape of
``Trace.meta["instrumentation"]`` and its wording, for the tracer and for every view.

``meta["instrumentation"]`` maps each traced kernel to ``{resource: [original,
instrumented]}`` for ``registers`` (per thread), ``local_bytes`` (local memory per
thread: register spills and stack), ``shared_bytes`` (static shared memory per block)
and ``blocks_per_sm`` (blocks one SM holds at the launch's block size and dynamic
shared memory). The ptx tier measures them at the first launch (cuda/instrumented.py)."""
from __future__ import annotations

from typing import Mapping

RESOURCES = ("registers", "local_bytes", "shared_bytes", "blocks_per_sm")


def summary(kernel: str, change: Mapping[str, list]) -> str:
    """'k instrumented: registers 168 → 255, local memory 0 → 2,176 B/thread, ...'"""
    registers, local = change["registers"], change["local_bytes"]
    shared, blocks = change["shared_bytes"], change["blocks_per_sm"]
    return (f"{kernel} instrumented: registers {registers[0]} → {registers[1]}, local memory (spills) "
            f"{local[0]:,} → {local[1]:,} B/thread, static shared {shared[0]:,} → {shared[1]:,} B/block, "
            f"{blocks[0]} → {blocks[1]} blocks/SM")


def summaries(meta: Mapping) -> list[str]:
    """One line per traced kernel whose change was measured (none on the interpreter tier)."""
    return [summary(kernel, change) for kernel, change in sorted(meta.get("instrumentation", {}).items())
            if change]


def warning(kernel: str, change: Mapping[str, list]) -> str | None:
    """One line when the instrumented copy spills more or fits fewer blocks on an SM than
    the original (its times then describe a slower kernel); None otherwise."""
    local, blocks, registers = change["local_bytes"], change["blocks_per_sm"], change["registers"]
    effects = []
    if local[1] > local[0]:
        effects.append(f"local memory (spills) {local[0]:,} → {local[1]:,} bytes per thread")
    if blocks[1] < blocks[0]:
        effects.append(f"occupancy {blocks[0]} → {blocks[1]} blocks per SM")
    if not effects:
        return None
    return (f"{kernel}: the instrumented copy runs differently from the original: {', '.join(effects)} "
            f"(registers {registers[0]} → {registers[1]}); trace fewer scopes (scopes=...) to narrow the change")
