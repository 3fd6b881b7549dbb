"""The PTX-line table (gwatch_nb/sass/ptx_lines.py) and what it places: each SASS instruction
of a real Triton kernel traced back to the PTX instruction it came from, each copy Triton made
of a scope read on its own, and a loop ptxas unrolled read once per source iteration. Real
kernels compiled for sm_90a with Triton's ptxas, no GPU."""
import re
import types

import pytest

pytest.importorskip("triton")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from compile_kernels import compile_kernel  # noqa: E402
from corpus_kernels.basics import unrolled_taps  # noqa: E402
from gwatch_nb import triton_compat  # noqa: E402
from gwatch_nb.cuda.sass_session import _miscounted  # noqa: E402
from gwatch_nb.sass import markers, ptx_lines  # noqa: E402
from gwatch_nb.sass.cfg import ControlFlowGraph  # noqa: E402
from gwatch_nb.sass.instrument import NO_CODE, instrument  # noqa: E402
from gwatch_nb.sass.rewrite import decoded  # noqa: E402
from gwatch_nb.triton import scope_end, scope_start  # noqa: E402


@triton.jit
def running_count(mask_ptr, out_ptr, n_blocks, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.int32)
    for b in range(0, n_blocks):  # one PTX loop; ptxas unrolls its small body, with a remainder loop
        scope_start(2)
        acc += tl.load(mask_ptr + offsets).to(tl.int32)
        offsets += BLOCK
        scope_end(2)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@triton.jit
def empty_scopes(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, n):
        scope_start(2)  # no code: read where scope 3 starts, as often
        pass
        scope_end(2)
        scope_start(3)
        acc += tl.load(x_ptr + i * BLOCK + offsets)
        scope_end(3)
    if n > 7:
        scope_start(4)  # no code, and nothing else runs only when n > 7: unread
        pass
        scope_end(4)
    tl.store(out_ptr + offsets, acc)


@triton.jit
def guarded_inner(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, n):
        scope_start(2)  # every iteration; ptxas tests the inner loop's trip count in each
        for j in range(0, (i + n) % 4):
            acc += tl.load(x_ptr + (i + j) * BLOCK + offsets)
        scope_end(2)
    tl.store(out_ptr + offsets, acc)


TAPS = ({"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"TAPS": 4, "BLOCK": 128})  # four copies of scope 2 in the PTX
RUNNING_COUNT = ({"mask_ptr": "*i8", "out_ptr": "*i32", "n_blocks": "i32"}, {"BLOCK": 128})
GUARDED_INNER = ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128})
EMPTY_SCOPES = ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128})


def _table(kernel, cubin=None):
    metadata = triton_compat.metadata_dict(kernel.metadata)
    return ptx_lines.table(cubin or kernel.asm["cubin"], kernel.metadata.name, kernel.asm["ptx"],
                           lambda text: triton_compat.assemble_like_triton(text, metadata),
                           triton_compat.ptxas_identity(metadata))


def test_every_instruction_gets_the_ptx_instruction_it_came_from():
    kernel = compile_kernel(unrolled_taps, *TAPS)
    table = _table(kernel)
    instructions = decoded(kernel.asm["cubin"])[kernel.metadata.name]
    assert table is not None and len(table.locations) == len(instructions)
    assert all(loc is not None and loc.file.endswith(ptx_lines.PTX_FILE) for loc in table.locations)
    ptx = kernel.asm["ptx"].splitlines()
    loads = [ptx[loc.line - 1] for ins, loc in zip(instructions, table.locations) if ins.opcode.startswith("LDG")]
    assert len(loads) == 4 and all("ld.global" in line for line in loads), loads
    # The four loads come from four PTX lines, one in each copy of the scope.
    assert len(table.copies) == 4 and {c.scope_id for c in table.copies} == {2}
    load_lines = [loc.line for ins, loc in zip(instructions, table.locations) if ins.opcode.startswith("LDG")]
    assert sorted(sum(line in c.lines for line in load_lines) for c in table.copies) == [1, 1, 1, 1]


def test_the_copy_is_checked_against_the_kernel_that_runs():
    """A cubin whose text is not the self-lined copy's (here: the kernel built for another
    block size) gets no table, and the source lines place its scopes."""
    kernel = compile_kernel(unrolled_taps, *TAPS)
    other = compile_kernel(unrolled_taps, TAPS[0], {"TAPS": 4, "BLOCK": 256})
    assert _table(kernel, cubin=other.asm["cubin"]) is None
    made = instrument(other.asm["cubin"], other.metadata.name, markers.from_source(unrolled_taps), ptx=None)
    assert made.cost["placed_by"] == "source lines"


def test_each_copy_of_a_body_triton_unrolled_is_read_as_often_as_its_sentinels_run():
    """By the source lines the four copies are one scope, read once (the count check sends such
    a kernel to the ptx tier); by the PTX lines each copy has its pair, in turn where ptxas
    interleaved them, and the readings still pair on every path."""
    kernel = compile_kernel(unrolled_taps, *TAPS)
    found = markers.from_source(unrolled_taps)
    by_source = instrument(kernel.asm["cubin"], kernel.metadata.name, found)
    by_ptx = instrument(kernel.asm["cubin"], kernel.metadata.name, found, ptx=_table(kernel))
    source = types.SimpleNamespace(ptx=kernel.asm["ptx"])
    assert markers.ptx_start_depths(kernel.asm["ptx"])[2] == [0, 0, 0, 0]
    assert by_source.start_depths[2] == [0] and _miscounted(source, by_source.start_depths) != ""
    assert by_ptx.cost["placed_by"] == "sentinels" and by_ptx.start_depths[2] == [0, 0, 0, 0]
    assert _miscounted(source, by_ptx.start_depths, by_ptx=True) == ""
    order = [(k, i) for k, i in zip(by_ptx.sites["kind"], by_ptx.sites["index"])]
    assert [k for k, _ in order] == ["start", "end"] * 4 and [i for _, i in order] == sorted(i for _, i in order)
    # A pair moved to start where the one before ended is measured over its new bounds.
    for n, kind in enumerate(by_ptx.sites["kind"]):
        if kind == "start":
            span = by_ptx.sites["span"][n]
            assert span == by_ptx.sites["own"][n] + by_ptx.sites["other_scopes"][n] + by_ptx.sites["unscoped"][n]
            assert 0 < span <= by_ptx.sites["index"][n + 1] - by_ptx.sites["index"][n] + 1


def test_a_loop_ptxas_unrolled_is_read_once_per_source_iteration():
    """ptxas unrolled the loop four times and kept a remainder loop: by the source lines one
    pair per trip of each (a quarter of the source's count in the main loop); by the PTX lines
    four in the main loop, one for each of its loads, and one in the remainder."""
    kernel = compile_kernel(running_count, *RUNNING_COUNT)
    name = kernel.metadata.name
    instructions = decoded(kernel.asm["cubin"])[name]
    cfg = ControlFlowGraph(instructions, name)
    loads = [sum(instructions[i].opcode.startswith("LDG") for b in loop.blocks
                 for i in range(cfg.blocks[b].start, cfg.blocks[b].end)) for loop in cfg.loops]
    assert sorted(loads) == [1, 4], "ptxas no longer unrolls this loop four times: the case shows nothing"
    found = markers.from_source(running_count)
    by_source = instrument(kernel.asm["cubin"], name, found)
    by_ptx = instrument(kernel.asm["cubin"], name, found, ptx=_table(kernel))
    per_loop = lambda made: sorted(sum(1 for k, lp in zip(made.sites["kind"], made.sites["loop"])
                                       if k == "start" and lp == n) for n in range(len(cfg.loops)))
    assert per_loop(by_source) == [1, 1]
    assert per_loop(by_ptx) == [1, 4] == sorted(loads)


def test_a_scope_with_no_instruction_is_read_where_a_scope_as_frequent_starts():
    """Scope 2 has no code: by the source lines it is left out; by the PTX lines each of its
    sentinels runs as often as scope 3's start, so it gets a zero-length pair at each of scope
    3's start readings, one per iteration ptxas unrolled. Scope 4 (an empty `if` body) runs as
    often as no other scope and stays unread."""
    kernel = compile_kernel(empty_scopes, *EMPTY_SCOPES)
    name = kernel.metadata.name
    found = markers.from_source(empty_scopes)
    by_source = instrument(kernel.asm["cubin"], name, found)
    assert {o["scope"] for o in by_source.left_out} == {2, 4}
    table = _table(kernel)
    by_ptx = instrument(kernel.asm["cubin"], name, found, ptx=table)
    assert by_ptx.cost["placed_by"] == "sentinels"
    assert [(o["scope"], o["reason"]) for o in by_ptx.left_out] == [(4, NO_CODE)]
    sites = list(zip(by_ptx.sites["scope"], by_ptx.sites["kind"], by_ptx.sites["pair"], by_ptx.sites["index"]))
    starts_3 = sorted(i for scope, kind, _, i in sites if scope == 3 and kind == "start")
    pairs_2 = {}
    for scope, kind, pair, i in sites:
        if scope == 2:
            pairs_2.setdefault(pair, []).append((kind, i))
    assert len(starts_3) > 1, "ptxas no longer unrolls the loop: the case shows less"
    assert sorted(p[0][1] for p in pairs_2.values()) == starts_3
    assert all([k for k, _ in p] == ["start", "end"] and p[0][1] == p[1][1] for p in pairs_2.values())
    assert by_ptx.start_depths[2] == by_ptx.start_depths[3]


def test_a_body_spread_over_a_guarded_inner_loop_is_one_pair_per_iteration():
    """ptxas puts the inner loop's zero-trip test in the outer body, so scope 2's code lies on
    paths not all taken: by the source lines it is read in pieces; by the PTX lines, which
    say it runs every iteration, one pair per outer iteration, from its first instruction to
    where the paths meet again."""
    kernel = compile_kernel(guarded_inner, *GUARDED_INNER)
    name = kernel.metadata.name
    found = markers.from_source(guarded_inner)
    by_source = instrument(kernel.asm["cubin"], name, found)
    assert by_source.sites["kind"].count("start") > 1, "ptxas no longer spreads the body: the case shows nothing"
    by_ptx = instrument(kernel.asm["cubin"], name, found, ptx=_table(kernel))
    assert by_ptx.cost["placed_by"] == "sentinels"
    assert by_ptx.sites["kind"] == ["start", "end"]
    cfg = ControlFlowGraph(decoded(kernel.asm["cubin"])[name], name)
    start, end = by_ptx.sites["index"]
    (outer,) = {by_ptx.sites["loop"][0], by_ptx.sites["loop"][1]}
    assert cfg.loops[outer].depth == 1 and cfg.blocks[cfg.block_of[end]].start == end
    assert all(cfg.dominates(cfg.block_of[start], tail) and cfg.dominates(cfg.block_of[end], tail)
               for tail, _ in cfg.loops[outer].back_edges)


def test_a_pipelined_loops_copies_each_end_where_their_execution_meets_a_sentinel():
    """The flattened persistent matmul's PTX holds more starts than ends of its loop scope (the
    pipeliner copied the start into the prologue): each start's scope runs, through the PTX's
    control flow, to the next sentinel of its id, and a prologue copy stays out of the loop
    that holds the others. The loop's copy runs on some iterations of the flattened loop only
    (a new tile), so the source lines place the scopes, as before the table."""
    import sass_cubins
    case = next(c for c in sass_cubins.CASES if c.name == "flattened persistent matmul")
    kernel = sass_cubins.compiled(case)
    table = _table(kernel)
    assert table is not None
    ptx = kernel.asm["ptx"].splitlines()
    sentinels = [(n, m.group(1), int(m.group(2))) for n, text in enumerate(ptx, 1)
                 if (m := re.search(r"gwatch\.scope_(start|end) (\d+)", text))]
    kinds = [(scope, kind) for _, kind, scope in sentinels]
    assert any(kinds.count((s, "start")) > kinds.count((s, "end")) for s, _ in kinds), \
        "the pipeliner no longer copies a start: the case shows nothing"
    for copy in table.copies:  # none runs through a sentinel of its own id
        assert not copy.lines & {n for n, _, scope in sentinels if scope == copy.scope_id}
    assert table.conditional
    made = instrument(kernel.asm["cubin"], kernel.metadata.name, markers.from_source(case.fn), ptx=table)
    plain = instrument(kernel.asm["cubin"], kernel.metadata.name, markers.from_source(case.fn))
    assert made.cost["placed_by"] == "source lines" and made.sites == plain.sites


def test_the_self_lined_ptx_names_each_instruction_by_its_own_line():
    kernel = compile_kernel(unrolled_taps, *TAPS)
    ptx = kernel.asm["ptx"]
    lined = ptx_lines.self_lined(ptx).splitlines()
    number = re.search(rf'\.file\s+(\d+)\s+"{ptx_lines.PTX_FILE}"', "\n".join(lined)).group(1)
    original = ptx.splitlines()
    for previous, text in zip(lined, lined[1:]):
        if previous.strip().startswith(".loc"):
            file, line = previous.split()[1:3]
            assert file == number and original[int(line) - 1] == text
    assert not any(re.match(rf"\s*\.loc\s+(?!{number}\b)", text) for text in lined)  # Triton's own are gone


def test_without_line_information_there_is_no_table_and_the_source_lines_place(monkeypatch):
    """ptxas writes no line program where Triton's line information is turned off: the copy
    has no table to give, and the kernel is placed as before, not refused."""
    kernel = compile_kernel(unrolled_taps, TAPS[0], {"TAPS": 4, "BLOCK": 64})
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    assert _table(kernel) is None
