"""The proof that a kernel's readings pair on every path (sass/pairing.py), on real cubins: a
masked tail whose warps ptxas lets exit before the store scope's end, a scope a user closed
before an early `return` (two ends of one start), and placements the proof must refuse; then
the host side, which ends a scope left open at an exit at that warp's exit clock."""
import numpy as np
import pytest

import corpus
import gwatch_nb
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.layout import make_tag
from gwatch_nb.records import WARP_DTYPE, close_at_exit, pair_scopes
from gwatch_nb.sass import markers, pairing
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instrument import instrument
from gwatch_nb.sass.markers import Marker
from gwatch_nb.sass.sites import scopes_of
from sass_cubins import cubins

CASE = {case.name: case for case in corpus.CASES}


def _instrumented(name: str):
    cubin = cubins()[name]
    ((kernel, instructions),) = disassemble(cubin).items()
    return instructions, instrument(cubin, kernel, markers.from_source(CASE[name].fn))


def _exits(instructions) -> set[int]:
    return {i.index for i in instructions if i.base == "EXIT"}


@pytest.mark.parametrize("name", ["vector_add_marked", "closed_before_return"])
def test_scopes_a_warp_can_leave_by_exiting_end_at_an_exit(name):
    instructions, made = _instrumented(name)
    assert made.open_at_exit, "ptxas's early EXIT skips an end: the proof must say so"
    assert set(made.open_at_exit.values()) <= _exits(instructions)
    assert set(made.open_at_exit) <= set(CASE[name].scopes)


def test_a_scope_closed_before_an_early_return_is_one_scope_to_its_last_end():
    found = markers.from_source(CASE["closed_before_return"].fn)
    (program,) = [s for s in scopes_of(found) if s.scope_id == 22]
    ends = sorted(m.line for m in found if m.scope_id == 22 and m.kind == "end")
    assert len(ends) == 2 and program.end_line == ends[-1]


def _looping_kernel():
    cubin = cubins()["matmul"]
    ((kernel, instructions),) = disassemble(cubin).items()
    cfg = ControlFlowGraph(instructions, kernel)
    (loop,) = cfg.loops
    return cfg, loop


def test_a_start_read_again_in_a_loop_before_its_end_is_refused():
    cfg, loop = _looping_kernel()
    header = cfg.blocks[loop.header].start
    after = max(cfg.blocks[b].end for b in loop.blocks)  # past the loop, where it exits
    proof = pairing.check(cfg, [pairing.PlacedReading(header, 7, False), pairing.PlacedReading(after, 7, True)])
    assert list(proof.faults) == [7] and "start at instruction" in proof.faults[7]
    assert "again before its end" in proof.faults[7]
    with pytest.raises(SassRewriteError, match=r"^kernel matmul_kernel: the readings do not pair on every path: "):
        proof.require("matmul_kernel")


def test_an_end_reached_without_its_start_is_refused():
    cfg, loop = _looping_kernel()
    header = cfg.blocks[loop.header].start
    proof = pairing.check(cfg, [pairing.PlacedReading(header, 7, True)])
    assert proof.faults == {7: f"scope 7: an end at instruction {header} is reached with no start before it"}


def test_readings_in_order_around_the_loop_pair():
    cfg, loop = _looping_kernel()
    header = cfg.blocks[loop.header]
    proof = pairing.check(cfg, [pairing.PlacedReading(header.start, 7, False),
                                pairing.PlacedReading(header.end - 1, 7, True)])
    assert proof.faults == {} and proof.open_at_exit == {}


def _warps(ck_exit, dropped=None):
    warps = np.zeros(len(ck_exit), WARP_DTYPE)
    warps["ck_exit"] = ck_exit
    if dropped is not None:
        warps["n_dropped"] = dropped
    return warps


def test_an_open_scope_ends_at_its_warps_exit_innermost_first():
    # warp 0: 1 [ 2 [ ... exits; warp 1: 1 [ ] 2 [ ] (closed); warp 2 dropped events: left open
    tags = np.array([make_tag(1, False), make_tag(2, False),
                     make_tag(1, False), make_tag(1, True), make_tag(2, False), make_tag(2, True),
                     make_tag(1, False)], np.uint32)
    cycles = np.array([10, 20, 10, 15, 20, 25, 30], np.int64)
    warps = _warps([100, 200, 300], dropped=[0, 0, 4])
    warps["n_events"] = [2, 4, 1]
    closed_warps, closed_cycles, closed_tags = close_at_exit(warps, cycles, tags, {1, 2})
    assert closed_warps["n_events"].tolist() == [4, 4, 1]
    assert closed_tags[:4].tolist() == [make_tag(1, False), make_tag(2, False), make_tag(2, True), make_tag(1, True)]
    assert closed_cycles[:4].tolist() == [10, 20, 100, 100]
    intervals, problems = pair_scopes(closed_tags, closed_cycles, closed_warps["n_events"])
    assert problems["unclosed"].tolist() == [2] and len(problems["crossed"]) == 0
    assert sorted(zip(intervals.warp_row.tolist(), intervals.scope_id.tolist(), intervals.end_cycle.tolist())) == \
        [(0, 1, 100), (0, 2, 100), (1, 1, 15), (1, 2, 25)]


def test_scopes_not_proven_to_end_at_an_exit_stay_unclosed():
    tags = np.array([make_tag(3, False)], np.uint32)
    warps = _warps([100])
    warps["n_events"] = [1]
    same = close_at_exit(warps, np.array([5], np.int64), tags, {1, 2})
    assert same[0]["n_events"].tolist() == [1] and same[2].tolist() == tags.tolist()


def test_a_scope_with_no_code_in_the_compiled_kernel_is_named_not_dropped():
    """A scope around code Triton compiled away (a branch on a constexpr, say) has no
    instruction to read: instrument() says so, beside the scopes it did place."""
    cubin = cubins()["matmul"]
    ((kernel, _),) = disassemble(cubin).items()
    written = markers.from_source(CASE["matmul"].fn)
    source = written[0].file
    empty = [Marker(source, 1, "start", 90), Marker(source, 2, "end", 90)]  # the module's first lines: no code
    made = instrument(cubin, kernel, written + empty)
    (entry,) = [o for o in made.left_out if o["scope"] == 90]
    assert entry["instruction"] is None and "no instruction of the compiled kernel" in entry["reason"]
    assert 90 not in made.sites["scope"]
    assert set(made.sites["scope"]) == {m.scope_id for m in written} - {o["scope"] for o in made.left_out}


def test_the_h200_masked_tail_ends_its_open_scopes_at_each_warps_exit(fixture_path):
    """The H200's trace of vector_add_marked on the sass tier: the last block's warps exit before
    the store scope's end reading, yet every warp has one instance of each scope, as on the ptx
    tier, those warps' store instances ending exactly at the warp's exit."""
    trace = gwatch_nb.load(fixture_path("vector_add_exit_sass_h200.json"))
    open_at_exit = {int(s) for s in trace.meta["sass"]["vector_add_marked"]["open_at_exit"]}
    assert open_at_exit and not {w.kind for w in trace.warnings} & {"unclosed", "end_without_start"}
    per_warp = trace.df.groupby(["block_x", "warp", "scope_id"]).size()
    assert (per_warp == 1).all() and len(per_warp) == 2 * len(trace.warps)
    warps = trace.warps.set_index(["block_x", "warp"])["end_ns"]
    ends = trace.df[trace.df.scope_id.isin(open_at_exit)].set_index(["block_x", "warp"])["end_ns"]
    at_exit = ends == warps.reindex(ends.index)
    assert at_exit.any() and not at_exit.all()  # the tail block's warps only
