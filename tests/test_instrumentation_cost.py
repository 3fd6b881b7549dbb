"""What instrumenting changes in a kernel's binary, compared with the original's at load
time: registers, local memory (spills), static shared memory, and the blocks an SM holds
at the launch's size. A change that spills or loses occupancy is a warning; the numbers
are in Trace.meta["instrumentation"]."""
import numpy as np
import pytest

from gwatch_nb.instrumentation_cost import RESOURCES, summaries
from gwatch_nb.instrumentation_cost import warning as cost_warning


def _change(registers=(100, 110), local=(0, 0), shared=(0, 0), blocks=(2, 2)):
    return {"registers": list(registers), "local_bytes": list(local), "shared_bytes": list(shared),
            "blocks_per_sm": list(blocks)}


def test_more_registers_alone_is_no_warning():
    assert cost_warning("k", _change()) is None


def test_spills_are_a_warning_with_the_numbers():
    message = cost_warning("grouped", _change(registers=(168, 255), local=(0, 2176)))
    assert message.startswith("grouped: the instrumented copy runs differently from the original: ")
    assert "local memory (spills) 0 → 2,176 bytes per thread" in message and "registers 168 → 255" in message


def test_lost_occupancy_is_a_warning():
    message = cost_warning("persistent", _change(registers=(114, 162), blocks=(2, 1)))
    assert "occupancy 2 → 1 blocks per SM" in message and "spills" not in message


def test_views_get_one_line_per_measured_kernel():
    meta = {"instrumentation": {"b": _change(registers=(168, 255), local=(0, 2176)), "a": _change(), "c": {}}}
    assert summaries(meta) == [
        "a instrumented: registers 100 → 110, local memory (spills) 0 → 0 B/thread, "
        "static shared 0 → 0 B/block, 2 → 2 blocks/SM",
        "b instrumented: registers 168 → 255, local memory (spills) 0 → 2,176 B/thread, "
        "static shared 0 → 0 B/block, 2 → 2 blocks/SM"]
    assert summaries({}) == []


def test_the_html_report_and_gwatch_show_state_the_change(fixture_path, tmp_path, capsys):
    from gwatch_nb import load
    from gwatch_nb.cli import main
    trace = load(fixture_path("matmul_h200.json"))
    trace.meta["instrumentation"] = {"matmul_kernel": _change(registers=(110, 114), blocks=(2, 2))}
    line = summaries(trace.meta)[0]
    trace.save(tmp_path / "t.json")
    trace.to_html(tmp_path / "t.html")
    assert line in (tmp_path / "t.html").read_text()
    assert main(["show", str(tmp_path / "t.json")]) == 0
    assert line in capsys.readouterr().out


@pytest.mark.gpu
def test_the_change_is_measured_against_the_loaded_original(tmp_path):
    torch = pytest.importorskip("torch")
    from corpus import CASES
    from gwatch_nb import do_trace, load, triton_compat
    case = next(c for c in CASES if c.name == "grouped GEMM")
    workload = case.workload("cuda")
    workload.launch()  # loaded before the trace, as in a notebook
    torch.cuda.synchronize()
    trace = do_trace(workload.launch, case.pattern, scope_name_map=case.scopes)
    change = trace.meta["instrumentation"]["grouped_matmul_kernel"]
    assert tuple(change) == RESOURCES
    (original,) = {obj for obj, _, name, _, _ in triton_compat.compiled_kernels() if name == "grouped_matmul_kernel"}
    assert change["registers"][0] == original.n_regs and change["local_bytes"][0] == 4 * original.n_spills
    assert change["registers"][1] >= change["registers"][0] and min(change["blocks_per_sm"]) >= 1
    assert change["shared_bytes"][1] == change["shared_bytes"][0]  # the records go to global memory
    assert trace.records[0].info["instrumented_registers"] == change["registers"][1]
    trace.save(tmp_path / "t.json")
    assert load(tmp_path / "t.json").meta["instrumentation"] == trace.meta["instrumentation"]
    costly = [w for w in trace.warnings if w.kind == "instrumentation_cost"]
    assert bool(costly) == (change["local_bytes"][1] > change["local_bytes"][0]
                            or change["blocks_per_sm"][1] < change["blocks_per_sm"][0])
    assert np.all(np.array(change["registers"]) > 0)
