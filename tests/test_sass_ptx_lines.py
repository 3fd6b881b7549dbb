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
from gwatch_nb.sass.instrument import instrument  # noqa: E402
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


TAPS = ({"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"TAPS": 4, "BLOCK": 128})  # four copies of scope 2 in the PTX
RUNNING_COUNT = ({"mask_ptr": "*i8", "out_ptr": "*i32", "n_blocks": "i32"}, {"BLOCK": 128})


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
