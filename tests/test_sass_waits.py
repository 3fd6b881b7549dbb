"""Automatic sites on every corpus kernel's SASS (the Triton installed here, the H200's 3.6): each wait and
loop the disassembly has is found once, named by a source line, its readings placed where the
wait starts and where every path out of it meets."""
import re
from collections import Counter

import pytest

from gwatch_nb.sass import waits
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.lines import line_table
from sass_cubins import cubins
from test_sass_lines import ALL

WAIT = re.compile(r"^(SYNCS\.PHASECHK\.TRANS64\.TRYWAIT|WARPGROUP\.DEPBAR\.LE|BAR\.(SYNC|RED)|DEPBAR\.LE)")
_FOUND = {}


def found(name: str):
    if name not in _FOUND:
        cubin = ALL[name]
        ((kernel, instructions),) = disassemble(cubin).items()
        (locations,) = line_table(cubin).values()
        cfg = ControlFlowGraph(instructions, kernel)
        _FOUND[name] = instructions, cfg, waits.find(instructions, locations, kernel, cfg)
    return _FOUND[name]


@pytest.mark.parametrize("name", list(ALL))
def test_every_wait_and_loop_is_found_once(name):
    instructions, cfg, sites = found(name)
    by_instruction = Counter(s.instruction for s in sites if s.kind not in ("loop", "kernel"))
    assert all(n == 1 for n in by_instruction.values())
    for i in instructions:
        if WAIT.match(i.opcode) and cfg.reachable[cfg.block_of[i.index]]:
            retry = i.opcode.startswith("SYNCS") and cfg.loop_of[cfg.block_of[i.index]] is not None and \
                cfg.blocks[cfg.block_of[i.index]].index == cfg.loops[cfg.loop_of[cfg.block_of[i.index]]].header and \
                len(cfg.loops[cfg.loop_of[cfg.block_of[i.index]]].blocks) == 1
            assert (i.index in by_instruction) != retry, (i.index, i.opcode)
    loops = {s.loop for s in sites if s.kind == "loop"}
    for k, loop in enumerate(cfg.loops):
        spins = len(loop.blocks) == 1 and any(instructions[j].opcode.startswith("SYNCS.PHASECHK")
                                              for j in range(cfg.blocks[loop.header].start, cfg.blocks[loop.header].end))
        assert (k in loops) != spins, k
    (kernel,) = [s for s in sites if s.kind == "kernel"]
    assert kernel.start == 0 and kernel.ends and all(instructions[e].base == "EXIT" for e in kernel.ends)
    for s in sites:
        assert s.start <= min(s.ends) and s.file is not None and s.line > 0
        assert s.kind in s.name and str(s.line) in s.name
        if s.kind == "mbarrier":  # ends just after the branch to its retry loop, where the retry comes back
            branch = instructions[s.ends[0] - 1]
            assert branch.base == "BRA" and branch.predicate == "@!" + instructions[s.instruction].operands[0]
            retry_end = cfg.blocks[cfg.block_of[branch.target]].end - 1
            assert any(instructions[j].target == s.ends[0] for j in range(branch.target, retry_end + 2))
        elif s.kind == "loop":
            assert s.start == cfg.blocks[cfg.loops[s.loop].header].start
            assert len(s.ends) == len(cfg.loops[s.loop].back_edges)
        elif s.kind != "kernel":
            assert s.ends == (s.instruction + 1,)


@pytest.mark.parametrize("version", ["here", "h200"])
def test_pipelines_seen(version):
    _, cfg, attention = found(f"{version} attention fwd d64")
    (main,) = [k for k, loop in enumerate(cfg.loops) if loop.depth == 1]
    kinds = Counter(s.kind for s in attention if s.loop == main)
    assert kinds["wgmma"] == 2 and kinds["loop"] == 1 and kinds["barrier"] >= 1
    assert {s.line for s in attention if s.kind == "loop"} == {37}  # the `for start_n` line
    _, _, ws = found(f"{version} warp-specialized TMA matmul")
    in_loops = Counter(s.kind for s in ws if s.loop is not None)
    assert in_loops["mbarrier"] >= 4 and in_loops["wgmma"] >= 1 and in_loops["loop"] >= 2
    _, _, softmax = found(f"{version} fused softmax")
    assert Counter(s.kind for s in softmax)["async copy"] == 2


def test_table():
    cubin = cubins()["warp-specialized TMA matmul"]
    ((kernel, instructions),) = disassemble(cubin).items()
    (locations,) = line_table(cubin).values()
    table = waits.columns(waits.find(instructions, locations, kernel))
    assert tuple(table) == waits.COLUMNS
