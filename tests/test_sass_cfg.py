"""Basic blocks, edges, dominators and loops of real kernels: the blocks and edges of every
corpus kernel match nvdisasm's own basic-block graph; loop counts and nesting match the
kernels' source."""
import pytest

import sass_census
import sass_cubins
import sass_ptx_kernels
import sass_reference
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instruction import Instruction


def _graphs(case: str):
    cubin = sass_cubins.cubins()[case]
    return cubin, {kernel: ControlFlowGraph(instructions, kernel)
                   for kernel, instructions in disassemble(cubin).items()}


@pytest.mark.parametrize("case", sorted(sass_cubins.cubins()))
def test_blocks_and_edges_match_nvdisasm(case):
    cubin, graphs = _graphs(case)
    reference = sass_reference.block_graph(cubin)
    for kernel, cfg in graphs.items():
        reached = [b for b in cfg.blocks if cfg.reachable[b.index]]
        starts = {b.start for b in reached}
        edges = {(b.start, cfg.blocks[s].start) for b in reached for s in b.successors}
        assert (starts, edges) == reference[kernel]
        # Every instruction is in exactly one block, in order.
        assert [i for b in cfg.blocks for i in range(b.start, b.end)] == list(range(len(cfg.instructions)))


@pytest.mark.parametrize("case", sorted(sass_cubins.cubins()))
def test_dominators_and_loops_are_consistent(case):
    _, graphs = _graphs(case)
    for cfg in graphs.values():
        for block in cfg.blocks:
            if cfg.reachable[block.index]:
                assert cfg.dominates(0, block.index) and cfg.dominates(block.index, block.index)
        for k, loop in enumerate(cfg.loops):
            assert all(cfg.dominates(loop.header, b) for b in loop.blocks)
            assert all(header == loop.header and tail in loop.blocks for tail, header in loop.back_edges)
            if loop.parent is not None:
                assert loop.blocks < cfg.loops[loop.parent].blocks
                assert loop.depth == cfg.loops[loop.parent].depth + 1


@pytest.mark.parametrize("case", sorted(sass_cubins.cubins()))
def test_a_block_is_on_a_cycle_where_it_is_in_a_loop(case):
    """Two algorithms agree on every corpus kernel (ptxas's graphs are reducible): a path leaves
    a block of the kernel's own path and comes back to it exactly where a natural loop holds it."""
    _, graphs = _graphs(case)
    for cfg in graphs.values():
        for block in cfg.blocks:
            if cfg.on_own_path(block.index):
                assert cfg.on_cycle(block.index) == any(block.index in loop.blocks for loop in cfg.loops)


def test_a_subroutine_two_calls_share_is_on_a_cycle():
    """A RET goes back after every CALL, so code that two calls reach (the kernel's and the
    recursive function's own) may be passed twice: a path comes back to it, though no loop of
    the kernel's own path holds it."""
    (kernel, instructions), = disassemble(sass_ptx_kernels.cubin(sass_ptx_kernels.CALLS)).items()
    cfg = ControlFlowGraph(instructions, kernel)
    called = {cfg.block_of[i.target] for i in instructions if i.base == "CALL"}
    assert called and all(cfg.in_subroutine[b] and cfg.on_cycle(b) for b in called)


# case -> depths of its loops, outermost first, from the kernel's source
LOOPS = {
    "vector_add (no markers)": [],
    "early_return": [],
    "nested_loops": [1, 2],
    "matmul": [1],
    "attention fwd d64": [1],
    "attention bwd dq": [1],
    "fused softmax": [1],
    "layernorm fwd": [1, 1, 1],
    "grouped GEMM": [1, 2, 3],
}


@pytest.mark.parametrize("case", sorted(LOOPS))
def test_loops_of_kernels_with_known_loops(case):
    _, graphs = _graphs(case)
    (cfg,) = graphs.values()
    assert sorted(loop.depth for loop in cfg.loops) == LOOPS[case]


def test_spin_waits_are_loops_inside_the_k_loop():
    """The persistent TMA matmul: the tile loop, its k loop, and the barrier wait retried inside."""
    _, graphs = _graphs("persistent matmul, host TMA descriptors")
    (cfg,) = graphs.values()
    innermost = max(cfg.loops, key=lambda loop: loop.depth)
    assert innermost.depth == 3
    opcodes = {cfg.instructions[i].opcode for b in innermost.blocks
               for i in range(cfg.blocks[b].start, cfg.blocks[b].end)}
    assert "SYNCS.PHASECHK.TRANS64.TRYWAIT" in opcodes


def test_guarded_exit_falls_through_and_the_last_exit_ends():
    _, graphs = _graphs("early_return")
    (cfg,) = graphs.values()
    exits = [i for i in cfg.instructions if i.base == "EXIT"]
    assert [bool(i.predicate) for i in exits] == [True, True, False]
    for instruction in exits:
        block = cfg.block_at(instruction.index)
        assert block.end == instruction.index + 1
        expected = (cfg.block_of[instruction.index + 1],) if instruction.predicate else ()
        assert block.successors == expected


def test_loop_depth_of_instructions():
    _, graphs = _graphs("nested_loops")
    (cfg,) = graphs.values()
    inner = max(cfg.loops, key=lambda loop: loop.depth)
    first = cfg.blocks[min(inner.blocks)].start
    assert cfg.loop_depth(first) == 2 and cfg.loop_depth(0) == 0


def test_indirect_branch_is_refused():
    _, instructions = sass_ptx_kernels.instructions(sass_ptx_kernels.GUARDED_STORE)
    at = next(i for i in instructions if i.base == "EXIT").index
    indirect = Instruction(at, 0, 0, None, "BRX", ("R4", "-0x10"), None)
    with pytest.raises(SassRewriteError, match=rf"^kernel guarded_store: instruction {at} \(BRX\): an indirect branch"):
        ControlFlowGraph(instructions[:at] + [indirect] + instructions[at + 1:], "guarded_store")


@pytest.mark.parametrize("case", ["calls (PTX)", *(f"census {name}" for name in sass_census.CALLING)])
def test_calls_and_returns(case):
    """nvdisasm draws a called function as a graph of its own; ours joins them: each CALL also
    enters the callee, each RET goes back after every CALL. Otherwise the graphs are equal, on
    a PTX kernel with a recursive call and on kernels calling ptxas's own subroutines."""
    if case.startswith("census "):
        cubin = sass_census.compiled(case.removeprefix("census ")).asm["cubin"]
    else:
        cubin = sass_ptx_kernels.cubin(sass_ptx_kernels.CALLS)
    (kernel, instructions), = disassemble(cubin).items()
    cfg = ControlFlowGraph(instructions, kernel)
    starts, edges = set(), set()
    for blocks, function_edges in sass_reference.block_graph(cubin).values():
        starts |= blocks
        edges |= function_edges
    reached = [b for b in cfg.blocks if cfg.reachable[b.index]]
    assert {b.start for b in reached} == starts
    ours = {(b.start, cfg.blocks[s].start) for b in reached for s in b.successors}
    calls = [i for i in instructions if i.base == "CALL"]
    returns = [i for i in instructions if i.base == "RET"]
    assert calls and returns
    entering = {(cfg.block_at(c.index).start, c.target) for c in calls if cfg.block_at(c.index).start != c.target}
    returning = {(cfg.block_at(r.index).start, c.index + 1) for r in returns for c in calls}
    assert ours - edges == (entering | returning) - edges and edges <= ours
