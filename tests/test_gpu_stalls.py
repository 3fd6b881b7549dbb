"""Warp stall reasons per scope on the H200 (gwatch_nb.stalls, do_trace(stalls=True)): kernels
written to wait on one thing in one scope name it as the scope's top reason; every sample is
charged to a scope, "outside scopes" or the probes; the shares agree with Nsight Compute's
own samples of the same cubin, charged to the same scopes."""
import sys

import pytest

torch = pytest.importorskip("torch")

from corpus_kernels import bottlenecks  # noqa: E402
from gwatch_nb import do_trace, stalls  # noqa: E402
from gwatch_nb.sass import markers  # noqa: E402
from gwatch_nb.sass.rewrite import decoded  # noqa: E402
from gwatch_nb.sass.scope_map import instruction_scopes  # noqa: E402
from gwatch_nb.stall_reasons import OUTSIDE, PROBES, by_scope  # noqa: E402
from support import ncu  # noqa: E402

pytestmark = pytest.mark.gpu

#: (run, kernel, scope names, the scope, the reasons that may top it). On sm_90 a warp waiting
#: for its warpgroup's MMA (at the HGMMA itself, or at WARPGROUP.DEPBAR) is sampled as stalled
#: on a barrier, the warpgroup's own; test_a_dots_wait_is_on_the_tensor_cores_own_instructions
#: shows those samples are on the MMA's instructions, not on a BAR.
CASES = [
    (bottlenecks.run_copy, "copy_loop", bottlenecks.COPY_SCOPES, "copy", {"long_scoreboard"}),
    (bottlenecks.run_barrier, "barrier_loop", bottlenecks.BARRIER_SCOPES, "barrier", {"barrier"}),
    (bottlenecks.run_dot, "dot_loop", bottlenecks.DOT_SCOPES, "dot", {"barrier", "math_pipe_throttle", "wait",
                                                                       "warpgroup_arrive"}),
    (bottlenecks.run_dot, "dot_loop", bottlenecks.DOT_SCOPES, "load", {"long_scoreboard"}),
]
#: The most two samplings of one kernel may differ in a scope's share of one reason: ncu's
#: samples and ours are each some ten thousand, of launches of their own.
NCU_TOLERANCE = 0.10


_CHILD = """import json, sys
sys.path[:0] = {path!r}
import torch
from corpus_kernels import bottlenecks
runs = [(bottlenecks.run_copy, "copy_loop", bottlenecks.COPY_SCOPES),
        (bottlenecks.run_barrier, "barrier_loop", bottlenecks.BARRIER_SCOPES),
        (bottlenecks.run_dot, "dot_loop", bottlenecks.DOT_SCOPES)]
for run, _, _ in runs:
    run()
torch.cuda.synchronize()
if len(sys.argv) > 1:  # gwatch_nb's own samples of the same launches, as JSON
    import gwatch_nb
    out = {{kernel: gwatch_nb.stalls(run, kernel, names).to_dict("list") for run, kernel, names in runs}}
    out["cubins"] = {{kernel: next(k for c in fn.device_caches.values() for k in c[0].values()).asm["cubin"].hex()
                     for fn, kernel in ((bottlenecks.copy_loop, "copy_loop"), (bottlenecks.barrier_loop, "barrier_loop"),
                                        (bottlenecks.dot_loop, "dot_loop"))}}
    open(sys.argv[1], "w").write(json.dumps(out))
"""


@pytest.mark.skipif(not ncu.available(), reason="needs Nsight Compute (ncu)")
def test_the_shares_agree_with_nsight_computes_on_the_same_cubin(tmp_path):
    """Both samplings in processes of their own, and the inputs left in the caches as a user's
    run leaves them (ncu --cache-control none)."""
    import json
    import subprocess
    import pandas as pd
    script = tmp_path / "run.py"
    script.write_text(_CHILD.format(path=sys.path))
    report = str(tmp_path / "bottlenecks")
    ncu.profile(report, [sys.executable, str(script)])
    subprocess.run([sys.executable, str(script), str(tmp_path / "ours.json")], check=True)
    ours_all = json.loads((tmp_path / "ours.json").read_text())
    worst = []
    for kernel, fn, names in (("copy_loop", bottlenecks.copy_loop, bottlenecks.COPY_SCOPES),
                              ("barrier_loop", bottlenecks.barrier_loop, bottlenecks.BARRIER_SCOPES),
                              ("dot_loop", bottlenecks.dot_loop, bottlenecks.DOT_SCOPES)):
        ours = pd.DataFrame(ours_all[kernel])
        owners = instruction_scopes(bytes.fromhex(ours_all["cubins"][kernel]), kernel, markers.from_source(fn))
        theirs = ncu.samples_per_instruction(report, kernel)
        for scope in names:
            mine = ours[ours["scope"] == scope].set_index("reason")["share"].to_dict()
            other = _shares(theirs, owners, scope)
            gap = max(abs(mine.get(r, 0.0) - other.get(r, 0.0)) for r in set(mine) | set(other))
            top = max(mine, key=mine.get)
            print(f"{kernel} {names[scope]}: ours {top} {mine[top]:.1%}, ncu {other.get(top, 0):.1%}; "
                  f"largest gap {gap:.1%}")
            worst.append(gap)
    assert max(worst) <= NCU_TOLERANCE


def _warmed(run):
    run()
    torch.cuda.synchronize()
    return run


@pytest.mark.parametrize("run, kernel, names, scope, expected", CASES, ids=lambda c: c if isinstance(c, str) else "")
def test_a_scope_written_to_wait_on_one_thing_names_it_first(run, kernel, names, scope, expected):
    table = stalls(_warmed(run), kernel, names)
    top = by_scope(table).set_index("name")
    print(kernel, scope, top.loc[scope].to_dict())
    assert top.loc[scope, "top_reason"] in expected


@pytest.mark.parametrize("period", [None, 8])
def test_every_sample_is_kept_charged_to_a_scope_or_outside(period):
    table = stalls(_warmed(bottlenecks.run_copy), "copy_loop", bottlenecks.COPY_SCOPES, period=period)
    meta = table.attrs["stalls"]
    kernel = meta["kernels"]["copy_loop"]
    assert meta["period"] == (period or meta["period"]) and 5 <= meta["period"] <= 31
    assert table["samples"].sum() == kernel["samples"] > 1000
    assert kernel["samples"] + kernel["dropped"] + kernel["other_kernels"] == kernel["total"]
    assert set(table["scope"]) <= {1, OUTSIDE}


def test_a_kernel_loaded_while_sampling_was_off_after_an_earlier_sampling_is_charged_too():
    """CUPTI gives no PC for a module it did not see load: one loaded between two samplings
    (sampling off) is sampled through a copy loaded while sampling is on."""
    stalls(_warmed(bottlenecks.run_copy), "copy_loop", bottlenecks.COPY_SCOPES)
    fresh = _warmed(lambda: bottlenecks.run_copy(block=512))  # a new constexpr: compiled and loaded now
    table = stalls(fresh, "copy_loop", bottlenecks.COPY_SCOPES)
    assert table[table["scope"] == 1]["samples"].sum() > 0.5 * table["samples"].sum() > 1000


def test_a_trace_after_stall_sampling_still_times_its_kernels():
    """Sampling is off once a session ends: CUPTI's kernel activity records, which time a
    trace's launches, cannot be enabled while it is on."""
    stalls(_warmed(bottlenecks.run_copy), "copy_loop", bottlenecks.COPY_SCOPES)
    trace = do_trace(lambda: [bottlenecks.run_copy() for _ in range(3)], "copy_loop", launches=1,
                     scope_name_map=bottlenecks.COPY_SCOPES, instrumentation_tier="sass")
    assert trace.overhead["measured"], trace.overhead


def test_stalls_beside_a_sass_trace_charge_the_probes_their_own_samples():
    x, plain = bottlenecks.run_copy()
    torch.cuda.synchronize()
    outputs = []
    trace = do_trace(lambda: outputs.append(bottlenecks.run_copy()), "copy_loop",
                     scope_name_map=bottlenecks.COPY_SCOPES, instrumentation_tier="sass", stalls=True)
    assert torch.equal(outputs[0][1], plain)
    table = trace.stalls
    assert set(table["scope"]) == {1, OUTSIDE, PROBES}
    assert by_scope(table).set_index("name").loc["copy", "top_reason"] == "long_scoreboard"
    assert len(trace.df) > 0 and trace.meta["stalls"]["kernels"]["copy_loop"]["launches"] == 1


def test_a_dots_wait_is_on_the_tensor_cores_own_instructions():
    """The dot scope's barrier samples fall on HGMMA and WARPGROUP instructions (the MMA and
    the wait for it), not on a block-wide BAR."""
    from gwatch_nb.cuda import driver, pc_sampling
    a, b = (torch.randn(4096, 256, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.float32)
    b = b.T.contiguous()
    sampler = pc_sampling.Sampler(driver.current_context())
    try:  # a build of its own, loaded while sampling is on (CUPTI gives PCs only for those)
        launch = lambda: bottlenecks.dot_loop[(32, 32)](a, b, c, 256, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                                                        REPEAT=48, num_warps=4)
        compiled = launch()
        sampler.bracket_start()
        launch()
        sampled = sampler.bracket_stop()
        reasons = sampler.reasons
    finally:
        sampler.close()
    cubin = compiled.asm["cubin"]
    owners = instruction_scopes(cubin, "dot_loop", markers.from_source(bottlenecks.dot_loop))
    instructions = decoded(cubin)["dot_loop"]
    barrier = {k for k, name in reasons.items() if name.endswith("_stalled_barrier")}
    on = {}
    for (_, pc, reason), n in sampled.samples.items():
        if reason in barrier and owners[pc // 16] == 5:
            on[instructions[pc // 16].base] = on.get(instructions[pc // 16].base, 0) + n
    print("dot scope's barrier samples by opcode:", on)
    assert sum(on.values()) > 1000
    assert (on.get("HGMMA", 0) + on.get("WARPGROUP", 0)) >= 0.8 * sum(on.values())


def _shares(per_instruction, owners, scope):
    counts = {}
    for index, reasons in per_instruction.items():
        if owners[index] == scope:
            for reason, n in reasons.items():
                counts[reason] = counts.get(reason, 0) + n
    total = sum(counts.values())
    return {r: n / total for r, n in counts.items()}
