"""The sass tier on cubins the H200 built from kernels other people wrote
(tests/fixtures/third_party_h200.npz, kept by tests/third_party/keep_fixture.py from a corpus
run: the very builds that ran, markers compiled to nothing, with the markers their source
held): each is instrumented here as it was there, refused exactly where the H200 refused it,
and every scope its source marks is either read or named as left out, with a reason."""
import json
import os

import numpy as np
import pytest

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.instrument import instrument
from gwatch_nb.sass.markers import Marker

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "third_party_h200.npz")
_data = np.load(FIXTURE)
KERNELS = json.loads(str(_data["index"]))


@pytest.mark.parametrize("number", range(len(KERNELS)), ids=[k["key"] for k in KERNELS])
def test_a_third_party_h200_cubin_is_instrumented_as_on_the_h200(number):
    kernel = KERNELS[number]
    name = kernel["key"].rpartition(":")[2]
    cubin = _data[f"cubin_{number}"].tobytes()
    markers = [Marker(*m) for m in kernel["markers"]]
    if kernel["refused"]:
        with pytest.raises(SassRewriteError):
            instrument(cubin, name, markers)
        return
    made = instrument(cubin, name, markers)
    assert made is not None
    read = set(made.sites["scope"])
    left_out = {o["scope"]: o["reason"] for o in made.left_out}
    assert {m.scope_id for m in markers} <= read | set(left_out)
    assert all(reason for reason in left_out.values())
    assert made.cost["inserted"] > 0


def _fixture_kernel(key: str) -> tuple[bytes, str, list[Marker]]:
    number = next(n for n, k in enumerate(KERNELS) if k["key"] == key)
    return _data[f"cubin_{number}"].tobytes(), key.rpartition(":")[2], [Marker(*m) for m in KERNELS[number]["markers"]]


def _reachable(cfg, start_block: int) -> set[int]:
    seen, stack = {start_block}, [start_block]
    while stack:
        for b in cfg.blocks[stack.pop()].successors:
            if b not in seen:
                seen.add(b)
                stack.append(b)
    return seen


def test_an_early_return_scope_starts_only_on_the_returning_path():
    # Liger's cross entropy returns early for an ignored target (scopes 3 and 4, then `return`).
    # ptxas laid the other path's first two instructions after that path's EXIT with no line row
    # of their own, so they inherited line 94, inside scope 3: its start went before the branch,
    # and every warp of a counted row took one scope-3 instance more than the ptx tier (15,008
    # keys on the H200).
    from gwatch_nb.sass import sites
    from gwatch_nb.sass.cfg import ControlFlowGraph
    from gwatch_nb.sass.lines import line_table
    from gwatch_nb.sass.rewrite import decoded
    cubin, name, markers = _fixture_kernel("liger/cross_entropy:liger_cross_entropy_kernel")
    instructions = decoded(cubin)[name]
    cfg = ControlFlowGraph(instructions, name)
    placed = sites.place(instructions, line_table(cubin)[name], markers, name, cfg)
    start = {s.scope: s for s in placed if s.kind == "start"}
    assert start[5].block not in _reachable(cfg, start[3].block)  # the returning path never reaches scope 5
    assert start[3].block in _reachable(cfg, start[1].block)


def test_a_kernel_with_no_room_at_its_occupancy_gives_one_step_of_it_rather_than_a_scope():
    # FlagGems' top-k stage 1 (32 registers, every one of R0-R29 live around its SHFL.BFLY
    # reductions): no count keeps its occupancy and frees one, and scope 3 had no reading.
    # One step down (40 registers) the kernel's new top registers are free everywhere.
    from gwatch_nb.sass.instrument import free_register_count, warps_per_sm
    cubin, name, markers = _fixture_kernel("flaggems/topk_stage1:topk_stage1_kernel")
    made = instrument(cubin, name, markers)
    assert free_register_count(32) == 32 and made.cost["registers"] == [32, 40]
    assert warps_per_sm(40) < warps_per_sm(32)
    assert not [o for o in made.left_out if o["instruction"] is not None]
    assert {m.scope_id for m in markers} <= set(made.sites["scope"]) | {o["scope"] for o in made.left_out}
    assert 3 in made.sites["scope"]
