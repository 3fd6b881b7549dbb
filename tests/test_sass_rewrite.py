"""rewrite() end to end on real cubins: every corpus kernel and example rewritten with NOPs at
every 7th instruction, every block start, before every branch and inside every loop, and
clock readings into free registers, proven
by rewrite's own checks and then by nvdisasm and cuobjdump here; no insertion gives the cubin
back byte for byte; bad requests and a broken insertion are refused, as are a branch re-aimed in
the written words, a branch whose target field nvdisasm reads otherwise than branches.py, and
an insertion the register check cannot read; the time it takes."""
import dataclasses
import subprocess
import tempfile

import pytest

import sass_census
import sass_cubins
import sass_plans
import sass_ptx_kernels
from gwatch_nb import ptx
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches as branches_module
from gwatch_nb.sass import calls
from gwatch_nb.sass import encode as E
from gwatch_nb.sass import insert as insert_module
from gwatch_nb.sass import rewrite
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.control import NO_BARRIER, Control
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass import registers as regs
from gwatch_nb.sass.instrument import instrument
from gwatch_nb.sass.registers import register_use
from gwatch_nb.sass.scoreboards import SLOW_LATENCY, Scoreboards, control_of

LARGEST = "attention bwd dkdv causal"  # the largest corpus kernel


def _only_kernel(data: bytes) -> str:
    (name,) = Cubin.parse(data).kernels
    return name


def _all_plans(kernel) -> dict:
    plan = {}
    for make in sass_plans.PLANS.values():
        for index, words in make(kernel).items():
            plan.setdefault(index, []).extend(words)
    return plan


def _expected(original, plan) -> tuple[list, dict]:
    """The sequence a rewrite must decode to, and where a branch to each original index lands."""
    expected, landing = [], {}
    for ins in original:
        landing[ins.index] = len(expected)
        expected += [("inserted", word) for word in plan.get(ins.index, [])]
        expected.append(("original", ins))
    return expected, landing


@pytest.mark.parametrize("name", [case.name for case in sass_cubins.CASES])
def test_every_plan_at_once_gives_the_original_plus_the_insertions(name):
    data = sass_cubins.cubins()[name]
    kernel = _only_kernel(data)
    original = rewrite.decoded(data)[kernel]
    plan = _all_plans(sass_plans.kernel(data, kernel))
    assert len(original) not in plan  # the plans insert before instructions only
    out = rewrite.rewrite(data, kernel, plan)
    got = disassemble(out)[kernel]
    expected, landing = _expected(original, plan)
    assert len(got) == len(expected)
    branches = 0
    for new, (kind, item) in zip(got, expected):
        if kind == "inserted":
            assert new.raw == item
        elif item.target is None:
            assert new.raw == item.raw
        else:
            branches += 1
            assert (new.opcode, new.predicate, new.control) == (item.opcode, item.predicate, item.control)
            assert new.target == landing[item.target], (item.index, item.opcode)
    assert branches == sum(ins.target is not None for ins in original)
    _tools_accept(out)


def _calling(name: str) -> bytes:
    return sass_ptx_kernels.cubin(sass_ptx_kernels.CALLS) if name == "calls (PTX)" else \
        sass_census.compiled(name).asm["cubin"]


@pytest.mark.parametrize("name", ["calls (PTX)", *sass_census.CALLING])
def test_kernels_with_subroutine_calls_rewrite_and_decode_back(name):
    """Every plan at once on kernels calling ptxas's own subroutines (64-bit division, slow
    paths of precise division and square root, trigonometric reduction), a Triton noinline
    function and a recursive PTX function: each CALL enters the same subroutine, returns to
    the first instruction placed after it, and everything else is the original."""
    data = _calling(name)
    kernel = _only_kernel(data)
    original = rewrite.decoded(data)[kernel]
    returns = calls.return_addresses(original, kernel)
    assert returns
    plan = _all_plans(sass_plans.kernel(data, kernel))
    got = disassemble(rewrite.rewrite(data, kernel, plan))[kernel]
    expected, landing = _expected(original, plan)
    assert len(got) == len(expected)
    position = {item.index: n for n, (kind, item) in enumerate(expected) if kind == "original"}
    for new, (kind, item) in zip(got, expected):
        if kind == "inserted":
            assert new.raw == item
        elif item.index in returns:
            call = position[returns[item.index] - 1]
            assert got[call].base == "CALL" and calls.return_address(new) == 16 * (call + 1)
        elif item.base == "RET":
            assert new.target == 0
        elif item.target is None:
            assert new.raw == item.raw
        else:
            assert new.target == landing[item.target], (item.index, item.opcode)


def test_a_call_returning_to_the_old_place_is_caught(monkeypatch):
    """The checks read every return address back: an insertion that leaves one where it was is refused."""
    data = _calling("integer division i64")
    kernel = _only_kernel(data)
    real_insert = insert_module.insert

    def stale(original, words, kernel):
        text, offsets = real_insert(original, words, kernel)
        mov = min(calls.return_addresses(original, kernel))
        at = offsets[mov]
        return text[:at] + original[mov].raw + text[at + 16:], offsets
    monkeypatch.setattr(rewrite, "insert", stale)
    with pytest.raises(SassRewriteError, match="the return address loaded at instruction .* no longer names"):
        rewrite.rewrite(data, kernel, sass_plans.every_seventh(sass_plans.kernel(data, kernel)))


def _tools_accept(data: bytes):
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(data)
        f.flush()
        subprocess.run([sass_cubins.tool("cuobjdump"), "-elf", "-sass", f.name], capture_output=True, check=True)


def test_no_insertion_gives_the_same_bytes():
    for name in ("vector_add (no markers)", "matmul", LARGEST):
        data = sass_cubins.cubins()[name]
        assert rewrite.rewrite(data, _only_kernel(data), {}) == data


def test_bad_requests_are_refused_in_one_line():
    data = sass_cubins.cubins()["vector_add (no markers)"]
    count = len(rewrite.decoded(data)["vector_add"])
    for insertions, reason in (({0: [b"\0" * 8]}, "kernel vector_add: an instruction to insert before 0 is 8 bytes"),
                               ({count + 1: [sass_plans.NOP]}, f"cannot insert before instruction {count + 1}"),
                               ({-1: [sass_plans.NOP]}, "cannot insert before instruction -1")):
        with pytest.raises(SassRewriteError, match=reason) as caught:
            rewrite.rewrite(data, "vector_add", insertions)
        assert "\n" not in str(caught.value)
    with pytest.raises(SassRewriteError, match="kernel nope: not in this cubin"):
        rewrite.rewrite(data, "nope", {})


def test_a_broken_insertion_is_caught_before_it_is_returned(monkeypatch):
    """The checks run on the written cubin: an insertion that bends one branch is refused."""
    data = sass_cubins.cubins()["nested_loops"]
    real_insert = insert_module.insert

    def bent(original, words, kernel):
        text, offsets = real_insert(original, words, kernel)
        branch = next(ins for ins in original if ins.base == "BRA" and ins.target is not None)
        at = offsets[branch.index]
        low = int.from_bytes(text[at:at + 8], "little") ^ 1 << 18  # a bit of the branch's offset field
        return text[:at] + low.to_bytes(8, "little") + text[at + 8:], offsets
    monkeypatch.setattr(rewrite, "insert", bent)
    with pytest.raises(SassRewriteError, match="kernel nested_loops: the rewritten cubin"):
        rewrite.rewrite(data, "nested_loops", sass_plans.every_seventh(sass_plans.kernel(data, "nested_loops")))


def _late_stores():
    """The LATE_STORES kernel (its stores set no read scoreboard), its instructions, the
    scoreboard analysis of them, its EXIT and the registers those stores read (mask)."""
    data = ptx.assemble(sass_ptx_kernels.LATE_STORES, options=("-lineinfo",))
    plain = disassemble(data)["late_stores"]
    board = Scoreboards(ControlFlowGraph(plain, "late_stores"))
    exit_index = next(i.index for i in plain if i.base == "EXIT")
    stored = 0
    for i in plain:
        if i.base == "STG" and control_of(i).read_barrier == NO_BARRIER:
            stored |= register_use(i, "late_stores").reads & regs.GPRS
    return data, plain, board, exit_index, stored


def test_the_proof_refuses_a_write_to_a_register_a_store_with_no_scoreboard_may_still_read():
    data, plain, board, exit_index, stored = _late_stores()
    assert stored, "ptxas gave every store a read scoreboard: the kernel no longer shows the case"
    source = (stored & -stored).bit_length() - 1 - regs.GPR_BASE
    clobber = E.cs2r(E.Reg(source - source % 2), control=Control(stall=SLOW_LATENCY))
    with pytest.raises(SassRewriteError, match="may still be using"):
        rewrite.rewrite(data, "late_stores", {exit_index: [clobber]}, transfers=board)
    # Without the analysis only the sequence is checked, and the same rewrite passes: the
    # analysis is what refuses it.
    rewrite.rewrite(data, "late_stores", {exit_index: [clobber]})


def test_an_exit_epilogue_leaves_the_sources_of_stores_with_no_scoreboard_alone():
    data, plain, board, exit_index, stored = _late_stores()
    new = disassemble(instrument(data, "late_stores", [], auto=True).cubin)["late_stores"]
    kernel_stores = [i.index for i in new if i.base == "STG" and i.operands[0].startswith("desc[")]
    new_exit = next(i.index for i in new if i.base == "EXIT")
    # What is inserted between the kernel's last store and its EXIT: the epilogue among it.
    inserted = new[kernel_stores[-1] + 1:new_exit]
    assert any(i.base == "CS2R" for i in inserted), "no epilogue before the EXIT"
    written = 0
    for i in inserted:
        written |= register_use(i, "late_stores").writes
    assert not written & stored, (f"the epilogue writes {regs.register_names(written & stored)}, which a store "
                                  "may still read")


def _rewritten_with_branch(name: str = "nested_loops"):
    """A cubin rewritten with NOPs at every 7th instruction, what _verify takes of it, and its
    first BRA whose target has a NOP inserted before it."""
    data = sass_cubins.cubins()[name]
    original = rewrite.decoded(data)[name]
    plan = sass_plans.every_seventh(sass_plans.kernel(data, name))
    words = {index: list(items) for index, items in plan.items()}
    _, new_offset = insert_module.insert(original, words, name)
    out = rewrite.rewrite(data, name, plan)
    branch = next(i for i in original if i.base == "BRA" and i.target is not None and i.target in plan)
    return data, out, original, words, new_offset, branch


def _with_word(cubin: bytes, kernel: str, index: int, low: int, high: int) -> bytes:
    view = Cubin.parse(cubin)
    text = bytearray(view.text(kernel))
    text[16 * index:16 * index + 16] = low.to_bytes(8, "little") + high.to_bytes(8, "little")
    return view.with_text(kernel, bytes(text), lambda offset: offset)


def test_the_proof_reads_each_branch_target_from_the_rewritten_words():
    """A branch of the written cubin re-aimed past the NOP inserted before its target (at the
    original instruction itself, an easy slip) is refused: its target is read from its own word."""
    data, out, original, words, new_offset, branch = _rewritten_with_branch()
    rewrite._verify(Cubin.parse(data), out, "nested_loops", original, words, new_offset, None, None)  # as written
    at = new_offset[branch.index] // 16
    word = Cubin.parse(out).text("nested_loops")[16 * at:16 * at + 16]
    low, high = int.from_bytes(word[:8], "little"), int.from_bytes(word[8:], "little")
    landing = new_offset[branch.target] // 16  # the original instruction, past its NOP
    low, high = branches_module.with_target(low, high, (landing - at - 1) * 16)
    bent = _with_word(out, "nested_loops", at, low, high)
    with pytest.raises(SassRewriteError, match=f"the BRA at instruction {branch.index} no longer reaches "
                                               f"instruction {branch.target}") as caught:
        rewrite._verify(Cubin.parse(data), bent, "nested_loops", original, words, new_offset, None, None)
    assert "\n" not in str(caught.value)


def test_the_proof_refuses_a_branch_whose_field_reader_disagrees_with_nvdisasm():
    """Where the target branches.py reads in an original branch is not the one nvdisasm printed,
    the field reader is not proven for that form, and nothing read with it is trusted."""
    data, out, original, words, new_offset, branch = _rewritten_with_branch()
    misread = list(original)
    misread[branch.index] = dataclasses.replace(branch, target=branch.target + 1)
    with pytest.raises(SassRewriteError, match="the field reader is not proven for that form"):
        rewrite._verify(Cubin.parse(data), out, "nested_loops", misread, words, new_offset, None, None)


def test_with_the_scoreboard_analysis_each_insertion_must_come_with_its_listing():
    data, plain, board, exit_index, _ = _late_stores()
    with pytest.raises(SassRewriteError, match="inserted instruction 0 before .* comes without its listing"):
        rewrite.rewrite(data, "late_stores", {exit_index: [E.nop().raw]}, transfers=board)
    rewrite.rewrite(data, "late_stores", {exit_index: [E.nop(control=Control(stall=1))]}, transfers=board)
