"""Stall samples charged to scopes (gwatch_nb/stall_reasons.py, sass/scope_map.py): which
scope owns each instruction of a real sm_90a cubin, the map from a rewritten kernel's PCs
back to its own instructions, and the table every view reads, on real H200 samples."""
import os

import numpy as np
import pytest

pytest.importorskip("triton")

from compile_kernels import _compile  # noqa: E402
from corpus_kernels import bottlenecks  # noqa: E402
from gwatch_nb import load  # noqa: E402
from gwatch_nb.sass import markers  # noqa: E402
from gwatch_nb.sass.cfg import ControlFlowGraph  # noqa: E402
from gwatch_nb.sass.cubin import INSTRUCTION_BYTES  # noqa: E402
from gwatch_nb.sass.instrument import instrument  # noqa: E402
from gwatch_nb.sass.rewrite import decoded  # noqa: E402
from gwatch_nb.sass.scope_map import PcOwners, instruction_scopes, original_indices  # noqa: E402
from gwatch_nb.stall_reasons import OUTSIDE, PROBES, StallCounts, by_scope, frame, reason_of  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def _built(fn, signature, constexprs, num_warps=4):
    """What a launch builds: markers compile to nothing."""
    signature = dict(signature, **{name: "constexpr" for name in constexprs})
    return _compile(fn, tuple(signature.items()), tuple(constexprs.items()), num_warps, 3, sentinels=False)


@pytest.fixture(scope="module")
def barrier_kernel():
    return _built(bottlenecks.barrier_loop, {"X": "*fp32", "Out": "*fp32", "ROUNDS": "i32"}, {"BLOCK": 1024}, 8)


def test_each_scope_owns_its_own_instructions_and_the_rest_is_outside(barrier_kernel):
    cubin, name = barrier_kernel.asm["cubin"], barrier_kernel.metadata.name
    owners = instruction_scopes(cubin, name, markers.from_source(bottlenecks.barrier_loop))
    instructions = decoded(cubin)[name]
    by_opcode = {}
    for instruction, owner in zip(instructions, owners):
        by_opcode.setdefault(instruction.base, set()).add(owner)
    assert by_opcode["BAR"] == {3}           # tl.debug_barrier is scope 3's, each unrolled copy of it
    assert by_opcode["FFMA"] == {2}          # x * 1.0001 + 0.5 is scope 2's
    assert by_opcode["LDG"] == by_opcode["STG"] == by_opcode["EXIT"] == {OUTSIDE}


def test_a_rewritten_kernels_pcs_map_back_to_its_own_instructions_or_to_the_probes(barrier_kernel):
    cubin, name = barrier_kernel.asm["cubin"], barrier_kernel.metadata.name
    found = markers.from_source(bottlenecks.barrier_loop)
    made = instrument(cubin, name, found)
    before, after = decoded(cubin)[name], decoded(made.cubin)[name]
    origin = original_indices(len(before), made.inserted)
    assert len(origin) == len(after)
    assert origin.count(PROBES) == made.cost["inserted"]
    assert [after[k].base for k, i in enumerate(origin) if i != PROBES] == [i.base for i in before]
    assert {after[k].base for k, i in enumerate(origin) if i == PROBES} >= {"CS2R", "STG"}
    own, rewritten = instruction_scopes(cubin, name, found), PcOwners(cubin, name, found, inserted=made.inserted)
    for k, i in enumerate(origin):
        assert rewritten(k * INSTRUCTION_BYTES) == (PROBES if i == PROBES else own[i])
    assert rewritten(len(after) * INSTRUCTION_BYTES) == OUTSIDE  # past the end: outside, never dropped


def test_cuptis_reason_names_are_shortened_and_the_not_issued_count_told_apart():
    assert reason_of("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == ("long_scoreboard", False)
    assert reason_of("smsp__pcsamp_warps_issue_stalled_barrier_not_issued") == ("barrier", True)


class _Range:
    def __init__(self, samples, total, dropped=0, outside_user_kernels=0):
        self.samples, self.total, self.dropped, self.outside_user_kernels = samples, total, dropped, outside_user_kernels


def test_every_sample_is_charged_to_a_scope_or_outside_and_none_is_lost():
    reasons = {14: "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
               15: "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
               28: "smsp__pcsamp_warps_issue_stalled_selected"}
    owner = {0: 1, 16: 1, 32: OUTSIDE, 48: PROBES}.get
    counts = StallCounts(11, "CUPTI's default for this GPU")
    sampled = {("k", 0, 14): 30, ("k", 0, 15): 25, ("k", 16, 28): 10, ("k", 32, 14): 5, ("k", 48, 28): 3,
               ("other", 0, 14): 2}
    counts.add("k", _Range(sampled, total=52, outside_user_kernels=2), reasons, owner)
    table = frame(counts.meta(), lambda s: f"scope {s}")
    assert table["samples"].sum() == 30 + 10 + 5 + 3 + 2 == counts.meta()["kernels"]["k"]["samples"]
    one = table[table["scope"] == 1].set_index("reason")
    assert one.loc["long_scoreboard", "samples"] == 30 and one.loc["long_scoreboard", "not_issued"] == 25
    assert one["share"].sum() == pytest.approx(1.0) and one.loc["long_scoreboard", "share"] == pytest.approx(0.75)
    assert set(table["name"]) == {"scope 1", "outside scopes", "tracing probes"}
    assert table[table["scope"] == OUTSIDE]["samples"].sum() == 5 + 2  # another function's samples are outside


@pytest.mark.parametrize("name, scope, reason", [("copy_loop", "copy", "long_scoreboard"),
                                                 ("barrier_loop", "barrier", "barrier"),
                                                 ("dot_loop", "load", "long_scoreboard"),
                                                 # kernels of the third-party corpus (make_stall_fixtures --third-party)
                                                 ("fla_chunk_fwd_h", "load_kv", "long_scoreboard"),
                                                 ("fla_chunk_fwd_h", "dot", "barrier"),  # the wgmma's wait
                                                 ("vllm_decode_attention_mla", "load_k", "long_scoreboard")])
def test_the_h200s_samples_name_each_scopes_known_bottleneck(name, scope, reason):
    trace = load(os.path.join(FIXTURES, f"{name}_stalls_h200.json"))
    table = trace.stalls
    kernels = trace.meta["stalls"]["kernels"]
    assert table["samples"].sum() == sum(k["samples"] for k in kernels.values())
    for k in kernels.values():  # what CUPTI counted: kept, dropped, or another kernel's
        assert k["samples"] + k["dropped"] + k["other_kernels"] == k["total"]
    shares = table.groupby(["kernel", "scope"])["share"].sum()
    assert np.allclose(shares, 1.0)
    top = by_scope(table).set_index("name")
    assert top.loc[scope, "top_reason"] == reason and top.loc[scope, "top_share"] > 0.5


@pytest.fixture(scope="module")
def dot_trace():
    return load(os.path.join(FIXTURES, "dot_loop_stalls_h200.json"))


def test_gwatch_show_prints_each_scopes_top_reasons_and_how_it_sampled(dot_trace):
    from gwatch_nb.show import Selection, format_text, summarize
    summary = summarize(dot_trace, Selection())
    assert "stalls" in summary  # a default section on a trace that sampled stalls
    text = format_text(summary)
    section = text[text.index("STALLS"):].splitlines()
    assert f"every 2^{dot_trace.meta['stalls']['period']} cycles per SM" in section[0]
    for row in by_scope(dot_trace.stalls).itertuples():
        line = next(line for line in section if line.strip().startswith(row.name + " "))
        assert f"{row.samples:,}" in line and f"{row.top_reason} {row.top_share:.0%}" in line
    plain = load(os.path.join(FIXTURES, "matmul_cold_h200.json"))
    assert "stalls" not in summarize(plain, Selection())
    assert "STALLS: none sampled" in format_text(summarize(plain, Selection(), views=["stalls"]))


def test_the_chart_stacks_every_reason_of_every_scope(dot_trace):
    from gwatch_nb.charts import all_charts
    captions = [caption for caption, _ in all_charts(dot_trace)]
    assert captions[-1] == "Stall reasons per scope"
    spec = all_charts(dot_trace)[-1][1].to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert len(rows) == len(dot_trace.stalls)
    assert {(r["name"], r["reason"]) for r in rows} == set(zip(dot_trace.stalls["name"], dot_trace.stalls["reason"]))


def test_the_html_report_lists_each_scopes_stall_reasons(dot_trace, tmp_path):
    path = tmp_path / "report.html"
    dot_trace.to_html(path)
    page = path.read_text()
    assert "gw-stall-table" in page and "Why each scope" in page
    for row in by_scope(dot_trace.stalls).itertuples():
        assert f"<td>{row.name}</td><td>{row.samples:,}</td><td>{row.top_reason} {row.top_share:.0%}" in page


def test_compare_says_which_reasons_share_moved(dot_trace):
    import copy

    from gwatch_nb import compare
    from gwatch_nb.trace import Trace
    meta = copy.deepcopy(dot_trace.meta)
    rows = meta["stalls"]["rows"]
    dot = [k for k, (scope, reason) in enumerate(zip(rows["scope"], rows["reason"])) if scope == 5 and reason == "barrier"]
    rows["samples"][dot[0]] //= 4  # the dot scope waiting a quarter as often at its barrier
    changed = Trace(dot_trace.records, dot_trace.scope_names, meta)
    same = compare(dot_trace, dot_trace, labels=["a", "b"])
    assert same.stall_changes == [] and (same.stalls.dropna()["points"] == 0).all()
    moved = compare(dot_trace, changed, labels=["before", "after"])
    (line,) = moved.stall_changes
    assert line.startswith("dot in after: barrier 61% → ") and line.endswith("(against before)")
    assert "why (stall reasons" in repr(moved)


@pytest.mark.parametrize("kwargs, option", [(dict(stall_period=8), "stall_period"),
                                            (dict(stalls=True, stall_period=4), "stall_period"),
                                            (dict(stalls=True, instrumentation_tier="interpreter"), "stalls"),
                                            (dict(stalls=True, instrumentation_tier="ptx"), "stalls"),
                                            (dict(stalls="yes"), "stalls")])
def test_a_bad_stall_option_is_one_line_before_anything_runs(kwargs, option):
    from gwatch_nb import OptionError, do_trace
    ran = []
    with pytest.raises(OptionError) as error:
        do_trace(lambda: ran.append(1), "k", **kwargs)
    assert error.value.option == option and not ran and "\n" not in str(error.value)


def test_the_notes_say_how_stalls_were_sampled(dot_trace):
    from gwatch_nb.notes import notes
    kernel = dot_trace.meta["stalls"]["kernels"]["dot_loop"]
    assert f"stalls: {kernel['samples']:,} PC samples of 1 launch(es), every 2^11 cycles per SM " \
           "(CUPTI's default for this GPU)" in notes(dot_trace)


def test_automatic_scopes_own_their_loops_and_waits_where_no_marker_scope_does(barrier_kernel):
    cubin, name = barrier_kernel.asm["cubin"], barrier_kernel.metadata.name
    found = markers.from_source(bottlenecks.barrier_loop)
    auto = instrument(cubin, name, [], auto=True).auto_sites
    kinds = {site.kind for site in auto.values()}
    assert {"loop", "barrier"} <= kinds
    instructions = decoded(cubin)[name]
    cfg = ControlFlowGraph(instructions, name)
    alone = instruction_scopes(cubin, name, [], auto_sites=auto)
    beside = instruction_scopes(cubin, name, found, auto_sites=auto)
    seen = set()
    for instruction, owner, with_markers in zip(instructions, alone, beside):
        kind = auto[owner].kind if owner in auto else None
        in_loop = cfg.loop_of[cfg.block_of[instruction.index]] is not None
        if instruction.base == "BAR":  # each wait its own scope, inside its loop's; a marker scope owns it first
            assert (kind, with_markers) == ("barrier", 3)
        elif instruction.base == "FFMA":  # the loop's, where ptxas left it in a loop (it peeled some out)
            assert (kind if in_loop else owner, with_markers) == ("loop" if in_loop else OUTSIDE, 2)
        elif instruction.base in ("LDG", "EXIT"):
            assert owner == with_markers == OUTSIDE
        seen.add((instruction.base, in_loop))
    assert {("FFMA", True), ("FFMA", False), ("BAR", True)} <= seen


def test_stalls_without_a_gpu_say_so_in_one_line_before_fn_runs():
    from gwatch_nb import NoGPUError, stalls
    from gwatch_nb.cuda import driver
    try:
        driver.init()
        pytest.skip("checks a machine without a GPU")
    except NoGPUError:
        pass
    ran = []
    with pytest.raises(NoGPUError) as error:
        stalls(lambda: ran.append(1), "k")
    assert not ran and "\n" not in str(error.value)
