"""do_trace and the markers on a machine without a GPU: errors before anything runs,
compile-time checks of the markers. (The interpreter tier: tests/interpreter.)"""
import numpy as np
import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from gwatch_nb import NoGPUError, do_trace
from gwatch_nb.cuda import driver
from gwatch_nb.triton import scope_end, scope_start


def _no_gpu() -> bool:
    try:
        driver.init()
        return False
    except NoGPUError:
        return True


@pytest.mark.skipif(not _no_gpu(), reason="checks the message on a machine without a GPU")
def test_ptx_tier_without_a_gpu_names_the_interpreter_tier():
    ran = []
    with pytest.raises(NoGPUError, match="instrumentation_tier='interpreter'"):
        do_trace(lambda: ran.append(1), r"k")
    assert ran == []  # fn never ran


@pytest.mark.parametrize("options, message", [
    ({"dsl": "cuda"}, r"dsl='cuda' is not supported; supported: triton"),
    ({"instrumentation_tier": "nvbit"},
     r"instrumentation_tier='nvbit' is not supported; supported: auto, ptx, sass, interpreter"),
    ({"instrumentation_tier": "ptx", "auto": True},
     r"auto=True needs instrumentation_tier='sass' \(automatic sites are read off the compiled kernel\)"),
    ({"launches": 0}, r"launches=0 must be 'first', 'all' or a positive integer"),
    ({"kernel_name_pattern": "attn("}, r"kernel_name_pattern='attn\(' is not a regular expression"),
    ({"capacity": 1}, r"capacity=1 must be at least 2 events per warp"),
    ({"capacity": 2.5}, r"capacity=2.5 must be a whole number of events per warp"),
    ({"warmup": -1}, r"warmup=-1 must be an integer of at least 0"),
    ({"rep": 0}, r"rep=0 must be an integer of at least 1"),
    ({"scopes": ["dot"]}, r"scopes='dot' is neither a scope id nor a scope name \(no scope names were given\)"),
])
def test_bad_arguments_are_clear(options, message):
    ran = []
    arguments = {"fn": lambda: ran.append(1), "kernel_name_pattern": "attn", **options}
    with pytest.raises(ValueError, match=message):
        do_trace(**arguments)
    assert ran == []


@triton.jit
def _runtime_id(X, ID):
    scope_start(ID)
    tl.store(X, 1.0)
    scope_end(ID)


@triton.jit
def _id_out_of_range(X):
    scope_start(40000)
    tl.store(X, 1.0)
    scope_end(40000)


@pytest.mark.parametrize("fn, signature, message", [
    (_runtime_id, {"X": "*fp32", "ID": "i32"}, "must be a compile-time integer"),
    (_id_out_of_range, {"X": "*fp32"}, r"must be in \[0, 32767\], got 40000"),
])
def test_marker_ids_are_checked_at_compile_time(fn, signature, message):
    with pytest.raises(triton.CompilationError, match=message):
        triton.compile(ASTSource(fn=fn, signature=signature), target=GPUTarget("cuda", 90, 32))


def test_markers_leave_a_sentinel_per_call():
    from compile_kernels import compile_ptx
    from corpus_kernels.basics import vector_add_marked
    text = compile_ptx(vector_add_marked, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "N": "i32"}, {"BLOCK": 256})
    lines = [line.strip() for line in text.splitlines() if "gwatch." in line]
    assert lines == ["// gwatch.scope_start 1", "// gwatch.scope_end 1", "// gwatch.scope_start 2",
                     "// gwatch.scope_end 2"]


def test_decoding_takes_no_python_loop_per_event():
    """A 2-million-event launch decodes in one vectorised pass (the numbers are in bench/)."""
    from gwatch_nb.records import WARP_DTYPE, LaunchRecords
    from gwatch_nb.trace import Trace
    warps = np.zeros(8192, WARP_DTYPE)
    per_warp = 256
    warps["n_events"] = per_warp
    warps["gt_entry"], warps["ck_entry"] = 10**9, 10**6
    warps["gt_exit"], warps["ck_exit"] = 10**9 + per_warp * 10, 10**6 + per_warp * 20
    tags = np.tile(np.array([200, 201], np.uint32), 8192 * per_warp // 2)
    cycles = np.tile(np.arange(per_warp, dtype=np.int64) * 20 + 10**6, 8192)
    trace = Trace([LaunchRecords("k", (8192, 1, 1), (32, 1, 1), per_warp, warps, cycles, tags)], {100: "x"})
    assert len(trace.df) == 8192 * per_warp // 2 and trace.warnings == []
