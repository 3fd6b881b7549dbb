"""Which scope each instruction of a kernel is: what a PC sample is charged to (stall_reasons.py).

A marker scope owns the instructions whose PTX instruction lies between its sentinels, where
the kernel's PTX-line table is given (ptx_lines.py), else those whose source line lies between
its markers, found as the sass tier's placement finds them (sites.home_chains,
sites.innermost_scopes): the innermost scope holding an instruction owns it. An automatic loop
scope owns its loop's blocks where no marker scope claims them; a wait scope, its wait
instruction (an mbarrier wait, the retry loop it spins in), inside its loop's. In a kernel the
sass tier rewrote, the probes' instructions are their own scope (stall_reasons.PROBES):
`original_indices` gives each rewritten instruction the original it was."""
from __future__ import annotations

from gwatch_nb.sass.callsites import CallSites
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.cubin import INSTRUCTION_BYTES
from gwatch_nb.sass.lines import line_table
from gwatch_nb.sass.markers import Marker
from gwatch_nb.sass.ptx_lines import PtxLines
from gwatch_nb.sass.rewrite import decoded
from gwatch_nb.sass.sites import UNSCOPED, home_chains, innermost_scopes, scopes_of
from gwatch_nb.sass.waits import AutoSite
from gwatch_nb.stall_reasons import OUTSIDE, PROBES


def instruction_scopes(cubin: bytes, kernel: str, markers: list[Marker], callsites: CallSites | None = None,
                       auto_sites: dict[int, AutoSite] | None = None, ptx: PtxLines | None = None) -> list[int]:
    """Per instruction of `kernel` in `cubin` (its original, unrewritten code), the scope id
    that owns it, OUTSIDE where none does. `auto_sites`: the automatic scopes a trace read,
    by scope id. `ptx`: the kernel's PTX-line table, whose sentinels' scopes then own the
    instructions (as instrument() places them)."""
    instructions = decoded(cubin).get(kernel)
    if instructions is None:
        raise KeyError(f"kernel {kernel} is not in the cubin")
    locations = ptx.locations if ptx is not None else line_table(cubin).get(kernel) or [None] * len(instructions)
    cfg = ControlFlowGraph(instructions, kernel)
    owner = [OUTSIDE] * len(instructions)
    if markers:
        scopes = ptx.copies if ptx is not None else scopes_of(markers, kernel)
        callsites = None if ptx is not None else callsites
        chains, _ = home_chains(locations, cfg, {s.file for s in scopes}, callsites)
        inner, _ = innermost_scopes(chains, scopes)
        owner = [scopes[k].scope_id if k != UNSCOPED else OUTSIDE for k in inner]
    claims = {scope: _claimed(cfg, site) for scope, site in (auto_sites or {}).items()}
    for scope, claimed in sorted(claims.items(), key=lambda item: -len(item[1])):
        for i in claimed:
            if owner[i] == OUTSIDE or owner[i] in claims:
                owner[i] = scope  # smaller automatic scopes come later and win
    return owner


def _claimed(cfg: ControlFlowGraph, site: AutoSite) -> list[int]:
    """The instructions an automatic scope owns: a loop's blocks; a wait its instruction, and
    an mbarrier wait the retry loop it spins in (a loop of its one block)."""
    if site.kind == "kernel":
        return []
    block = cfg.block_of[site.instruction]
    loop = cfg.loop_of[block]
    if site.kind == "loop":
        return [i for b in cfg.loops[loop].blocks for i in range(cfg.blocks[b].start, cfg.blocks[b].end)]
    if site.kind == "mbarrier" and loop is not None and cfg.loops[loop].blocks == {block}:
        return list(range(cfg.blocks[block].start, cfg.blocks[block].end))
    return [site.instruction]


def original_indices(count: int, inserted: dict[int, int]) -> list[int]:
    """Per instruction of a kernel rewritten with `inserted[i]` instructions placed before its
    instruction i (rewrite.rewrite's layout: i = `count` is after the last), the original
    instruction it is, or PROBES."""
    out: list[int] = []
    for i in range(count + 1):
        out += [PROBES] * inserted.get(i, 0)
        if i < count:
            out.append(i)
    return out


class PcOwners:
    """A kernel's scope of each PC offset (what stall_reasons.StallCounts.add asks), worked out at the
    first question: of the original `kernel` of `cubin`, or, given `inserted` (instrument's
    count of probes before each instruction), of the copy the sass tier made of it."""

    def __init__(self, cubin: bytes, kernel: str, markers: list[Marker], callsites: CallSites | None = None,
                 auto_sites: dict[int, AutoSite] | None = None, inserted: dict[int, int] | None = None,
                 ptx: PtxLines | None = None):
        self._inputs = (cubin, kernel, markers, callsites, auto_sites, ptx)
        self._inserted = inserted
        self._owners: list[int] | None = None

    def __call__(self, pc_offset: int) -> int:
        if self._owners is None:
            owners = instruction_scopes(*self._inputs)
            if self._inserted is not None:
                owners = [PROBES if i == PROBES else owners[i]
                          for i in original_indices(len(owners), self._inserted)]
            self._owners = owners
        i = pc_offset // INSTRUCTION_BYTES
        return self._owners[i] if 0 <= i < len(self._owners) else OUTSIDE
