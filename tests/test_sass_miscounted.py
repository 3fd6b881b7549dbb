"""A scope whose code the compiler copied or unrolled is read other than its markers run:
the sass tier sees it by the loop depth of each start reading against the sentinels' in the
PTX, and tier auto takes such a kernel to the ptx tier (sass_session._miscounted). Real
Triton kernels compiled for sm_90a, no GPU."""
import os
import re
import types

import pytest

pytest.importorskip("triton")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

from compile_kernels import compile_kernel  # noqa: E402
from corpus_kernels.basics import unrolled_taps  # noqa: E402
from gwatch_nb.cuda.sass_session import _miscounted, _ptx_scopes, compiled_away_scopes  # noqa: E402
from gwatch_nb.sass import markers  # noqa: E402
from gwatch_nb.sass.instrument import instrument  # noqa: E402
from gwatch_nb.triton import scope_end, scope_start  # noqa: E402


@triton.jit
def counted_taps(x_ptr, out_ptr, taps, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for tap in range(taps):  # a trip count known only at run time, and a body ptxas keeps whole
        scope_start(2)
        x = tl.load(x_ptr + offsets + tap * BLOCK)
        acc += x - tl.max(x, 0) + tl.sum(x * x, 0)
        scope_end(2)
    tl.store(out_ptr + offsets, acc)


@triton.jit
def tanh_grad_rows(dy_ptr, dx_ptr, da_ptr, x_ptr, alpha_ptr, M, N: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.cast(tl.program_id(0), tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    first = tl.cast(tl.program_id(1), tl.int64)
    alpha = tl.load(alpha_ptr)
    da = 0.0
    for row in range(first, M, tl.num_programs(1)):
        scope_start(3)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        t = libdevice.tanh(alpha * x)
        tmp = (1 - t * t) * dy
        da += tl.sum(x * tmp, 0)
        tl.store(dx_ptr + row * N + cols, alpha * tmp, mask=mask)
        scope_end(3)
    tl.store(da_ptr + first, da)


TANH_GRAD_ROWS = ({"dy_ptr": "*fp32", "dx_ptr": "*fp32", "da_ptr": "*fp32", "x_ptr": "*fp32", "alpha_ptr": "*fp32",
                   "M": "i32"}, {"N": 4096, "BLOCK": 1024})
# Triton 3.6's PTX of tanh_grad_rows with TANH_GRAD_ROWS (the H200's Triton; its `.file` paths
# cut to file names): LLVM laid the loop's last tail blocks above its header there.
TRITON_36_PTX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tanh_grad_rows_triton36.ptx")


@triton.jit
def rows_times_first(q_desc, k_desc, out_ptr, N, BLOCK: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)
    q = q_desc.load([pid * BLOCK, 0])  # a TMA load and its mbarrier wait before the loop
    acc = tl.zeros([BLOCK, D], tl.float32)
    for start in range(0, N, BLOCK):
        scope_start(3)
        k = k_desc.load([start, 0])  # and one in it
        acc += q.to(tl.float32) * k.to(tl.float32)
        scope_end(3)
    rows = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + rows[:, None] * D + tl.arange(0, D)[None, :], acc)


@triton.jit
def scaled_copy(x_ptr, out_ptr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    scope_start(1)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    if SCALE:  # a constexpr branch: Triton compiles it away where SCALE is 0
        scope_start(2)
        x = x * 3.0
        scope_end(2)
    tl.store(out_ptr + offsets, x)
    scope_end(1)


def _checked(fn, signature, constexprs):
    kernel = compile_kernel(fn, signature, constexprs)
    made = instrument(kernel.asm["cubin"], kernel.metadata.name, markers.from_source(fn))
    ptx = kernel.asm["ptx"]
    return made, ptx, _miscounted(types.SimpleNamespace(ptx=ptx), made.start_depths)


def test_an_unrolled_loops_scope_is_miscounted_and_says_why():
    made, ptx, why = _checked(unrolled_taps, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"TAPS": 4, "BLOCK": 128})
    assert markers.ptx_start_depths(ptx)[2] == [0, 0, 0, 0]  # four copies, in no loop
    assert made.start_depths[2] != [0, 0, 0, 0]
    assert why.startswith("scope 2 would be counted other than its markers run"), why


def test_a_loop_kept_as_a_loop_is_counted_as_its_markers_run():
    made, ptx, why = _checked(counted_taps, {"x_ptr": "*fp32", "out_ptr": "*fp32", "taps": "i32"}, {"BLOCK": 128})
    assert markers.ptx_start_depths(ptx)[2] == [1] == made.start_depths[2]
    assert why == ""


@pytest.mark.parametrize("name", ["flattened persistent matmul", "warp-specialized TMA matmul"])
def test_sentinels_the_ptx_tier_itself_miscounts_are_not_the_reference(name):
    """The pipeliner's copies of a start before the loop holding it (the flattened matmul),
    and a warp-specialized kernel's markers, which Triton moves: neither makes a kernel
    miscounted, though their sentinels sit elsewhere than the sass tier's starts."""
    import sass_cubins
    case = next(c for c in sass_cubins.CASES if c.name == name)
    kernel = sass_cubins.compiled(case)
    made = instrument(kernel.asm["cubin"], kernel.metadata.name, markers.from_source(case.fn))
    ptx = kernel.asm["ptx"]
    moved = {s: d for s, d in markers.ptx_start_depths(ptx).items() if made.start_depths.get(s) not in (None, d)}
    assert moved, "the sentinels now sit where the starts do: the case no longer shows the exemption"
    assert _miscounted(types.SimpleNamespace(ptx=ptx), made.start_depths) == ""


@triton.jit
def _scaled_row(x_ptr, offsets, scale):
    scope_start(5)  # marked in the function the kernel calls, as tutorial 06 marks _attn_fwd_inner
    x = tl.load(x_ptr + offsets) * scale
    scope_end(5)
    return x


@triton.jit
def calls_a_marked_helper(x_ptr, out_ptr, BLOCK: tl.constexpr):
    scope_start(4)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, _scaled_row(x_ptr, offsets, 2.0))
    scope_end(4)


def test_a_scope_marked_in_a_called_function_is_read_and_counted_as_its_markers_run():
    made, ptx, why = _checked(calls_a_marked_helper, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 128})
    assert set(made.sites["scope"]) == {4, 5} and made.left_out == [] and why == ""
    assert markers.ptx_start_depths(ptx)[5] == made.start_depths[5] == [0]


def test_a_scope_the_sass_tier_has_no_marker_for_is_named_left_out_so_auto_takes_the_ptx_tier():
    """Where a marker escapes the source the sass tier reads (here: read from the kernel's own
    body only), the PTX still holds its sentinel: the scope is named left out."""
    from gwatch_nb.cuda.sass_session import _ptx_scopes, marked_elsewhere
    kernel = compile_kernel(calls_a_marked_helper, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 128})
    own = [m for m in markers.from_source(calls_a_marked_helper) if m.scope_id == 4]
    made = instrument(kernel.asm["cubin"], kernel.metadata.name, own)
    in_ptx = _ptx_scopes(types.SimpleNamespace(ptx=kernel.asm["ptx"]))
    assert set(made.sites["scope"]) == {4} and made.left_out == []
    assert marked_elsewhere(in_ptx, made, None) == [5]
    assert marked_elsewhere(in_ptx, made, frozenset({4})) == []  # not asked for: nothing is missing


@pytest.mark.parametrize("scale", [0, 1])
def test_a_scope_triton_compiled_away_is_not_a_reading_left_out(scale):
    """Neither the PTX's sentinels nor the final schedule have scope 2 where SCALE is 0: no tier
    can record it, so it is named compiled away, not left out (which warns, and would send tier
    auto to a ptx tier that records no more). Where SCALE is 1 it is read."""
    kernel = compile_kernel(scaled_copy, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"SCALE": scale, "BLOCK": 128})
    made = instrument(kernel.asm["cubin"], kernel.metadata.name, markers.from_source(scaled_copy))
    source = types.SimpleNamespace(ptx=kernel.asm["ptx"])
    away = compiled_away_scopes(source, made.left_out, _ptx_scopes(source))
    assert (away, sorted(set(made.sites["scope"]))) == (([2], [1]) if scale == 0 else ([], [1, 2]))
    unmarked = types.SimpleNamespace(ptx=kernel.asm["ptx"].replace("gwatch", "other"))
    assert compiled_away_scopes(unmarked, made.left_out, set()) == []  # no sentinels: nothing to tell by


def test_a_loop_is_a_loop_of_the_control_flow_not_a_backward_branch():
    """Triton 3.6's LLVM put the last blocks of tanh_grad_rows' loop body above the loop's
    header, reached by backward branches from inside one iteration: counting backward branches
    over a sentinel put scope 3 two loops deep, so tier auto sent such kernels (Liger's DyT
    backward) to the ptx tier for a count difference that was not there. The natural loops of
    the PTX's control flow hold it once, as the compiled kernel's start reading."""
    with open(TRITON_36_PTX) as f:
        ptx = f.read()
    lines = ptx.splitlines()
    header = next(n for n, text in enumerate(lines) if "Loop Header" in text)
    labels = {m.group(1): n for n, text in enumerate(lines) if (m := re.match(r"^([$\w]+):", text))}
    backwards = [n for n, text in enumerate(lines) if (m := re.search(r"\bbra(?:\.uni)?\s+([$\w]+);", text))
                 and n > header and labels[m.group(1)] < header]
    assert backwards, "the fixture no longer has a loop's tail above its header"
    assert markers.ptx_start_depths(ptx) == {3: [1]}
    kernel = compile_kernel(tanh_grad_rows, *TANH_GRAD_ROWS)  # the Triton installed here
    made = instrument(kernel.asm["cubin"], kernel.metadata.name, markers.from_source(tanh_grad_rows))
    assert markers.ptx_start_depths(kernel.asm["ptx"]) == made.start_depths == {3: [1]}


def test_a_label_inline_assembly_repeats_is_known_in_its_own_braces():
    """Each mbarrier wait Triton writes is inline assembly with its own `waitLoop:` label inside
    `{ }`. Taking every branch to the last label of that name made the wait before the loop
    jump into the loop's body, so the loop's header no longer dominated it and scope 3 read as
    in no loop (Triton's TMA attention tutorial then read as counted other than its markers)."""
    kernel = compile_kernel(rows_times_first, {"q_desc": "tensordesc<fp16[64, 64]>",
                                               "k_desc": "tensordesc<fp16[64, 64]>", "out_ptr": "*fp32", "N": "i32"},
                            {"BLOCK": 64, "D": 64})
    ptx = kernel.asm["ptx"]
    assert ptx.count("waitLoop:") >= 2
    in_source = [m.loops for m in markers.from_source(rows_times_first) if m.kind == "start"]
    assert markers.ptx_start_depths(ptx) == {3: in_source} == {3: [1]}
