"""Inserting instructions into every corpus kernel and example: the new text, written into the
cubin and decoded again by nvdisasm, is exactly the original sequence plus the insertions,
every original instruction keeps its bits (a branch only its displacement), and every branch
reaches the same original instruction (the first instruction inserted before it)."""
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gwatch_nb import ptx
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches, calls, encode
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.disasm import disassemble, nvdisasm_path
from gwatch_nb.sass.insert import insert
from sass_cubins import cubins, ptxas12_cubins
from sass_ptx import ABSOLUTE_CALL_PTX, BRX_PTX, CALL_PTX

NAMES = list(cubins())
NOP_RAW = encode.nop().raw
SMALL = ["vector_add_marked", "early_return", "nested_loops"]


@pytest.fixture(scope="module")
def decoded():
    return {name: disassemble(cubin) for name, cubin in cubins().items()}


def _only(decoded, name):
    (kernel, instructions), = decoded[name].items()
    return kernel, instructions


def _block_starts(instructions) -> set[int]:
    starts = {0} | {i.target for i in instructions if i.target is not None}
    starts |= {i.index + 1 for i in instructions if i.target is not None or i.base == "EXIT"}
    return {s for s in starts if s < len(instructions)}


def _plans(instructions) -> dict[str, set[int]]:
    count = len(instructions)
    loops = [(i.target, i.index) for i in instructions if i.target is not None and i.target <= i.index]
    inside = {k for head, back in loops for k in (head, (head + back) // 2, back)}
    return {
        "every 7th": set(range(0, count + 1, 7)),
        "block starts": _block_starts(instructions),
        "before branches": {i.index for i in instructions if i.target is not None or i.base in ("EXIT", "BSYNC")},
        "inside loops": inside,
    }


def _expected(instructions, insertions):
    """(sequence of (kind, value)) the new text must decode to, and each original's new index."""
    sequence, new_index = [], []
    for i in instructions:
        sequence.extend(("inserted", raw) for raw in insertions.get(i.index, ()))
        new_index.append(len(sequence))
        sequence.append(("original", i))
    sequence.extend(("inserted", raw) for raw in insertions.get(len(instructions), ()))
    return sequence, new_index


def _check(instructions, insertions, got, new_offset):
    sequence, new_index = _expected(instructions, insertions)
    assert len(got) == len(sequence)
    assert new_offset == [16 * k for k in new_index]
    for (kind, value), new in zip(sequence, got):
        if kind == "inserted":
            assert new.raw == value
            continue
        old = value
        assert (new.opcode, new.predicate, new.control) == (old.opcode, old.predicate, old.control)
        if old.target is None:
            assert (new.low, new.high) == (old.low, old.high)
            assert new.operands == old.operands
        else:
            landing = new_index[old.target] - len(insertions.get(old.target, ()))
            assert new.target == landing, f"{old.opcode} at {old.offset:#x}"
            bits = branches.with_target(old.low, old.high, 0)
            assert branches.with_target(new.low, new.high, 0) == bits  # only the displacement changed


@pytest.mark.parametrize("plan", ["every 7th", "block starts", "before branches", "inside loops"])
@pytest.mark.parametrize("name", NAMES)
def test_nops_decode_to_the_original_plus_the_insertions(name, plan, decoded):
    kernel, instructions = _only(decoded, name)
    sites = _plans(instructions)[plan]
    assert sites
    insertions = {k: [NOP_RAW] * (1 + k % 2) for k in sites}
    text, new_offset = insert(instructions, insertions, kernel)
    cubin = Cubin.parse(cubins()[name]).with_text(kernel, text, lambda offset: new_offset[offset // 16])
    got = disassemble(cubin)[kernel]
    _check(instructions, insertions, got, new_offset)


@pytest.mark.parametrize("name", NAMES)
def test_no_insertion_is_the_same_bytes(name, decoded):
    kernel, instructions = _only(decoded, name)
    view = Cubin.parse(cubins()[name])
    for insertions in ({}, {0: [], len(instructions): []}):
        text, new_offset = insert(instructions, insertions, kernel)
        assert text == view.text(kernel)
        assert new_offset == [16 * k for k in range(len(instructions))]
        assert view.with_text(kernel, text, lambda offset: offset) == cubins()[name]


def _raw_listing(text: bytes):
    """nvdisasm -b SM90a over a bare text: (offset, opcode, printed target or None) per instruction."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(text)
        f.flush()
        out = subprocess.run([nvdisasm_path(), "-b", "SM90a", f.name], capture_output=True, text=True,
                             check=True).stdout
    return [line.split("*/", 1)[1].split(";")[0].strip() for line in out.splitlines() if line.strip().startswith("/*")]


insertion_sets = st.dictionaries(st.integers(0, 200), st.integers(0, 3), max_size=30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(NAMES), picks=insertion_sets)
def test_random_insertions_keep_every_target(name, picks, decoded):
    """Fast property over all kernels: the bits of the new text, read with branches.py, land
    every branch where it must; everything else is untouched."""
    kernel, instructions = _only(decoded, name)
    count = len(instructions)
    insertions = {k * count // 200: [NOP_RAW] * n for k, n in picks.items()}
    text, new_offset = insert(instructions, insertions, kernel)
    sequence, new_index = _expected(instructions, insertions)
    assert len(text) == 16 * len(sequence) and new_offset == [16 * k for k in new_index]
    for position, (kind, value) in enumerate(sequence):
        word = text[16 * position:16 * position + 16]
        if kind == "inserted" or value.target is None:
            assert word == (value if kind == "inserted" else value.raw)
            continue
        low, high = int.from_bytes(word[:8], "little"), int.from_bytes(word[8:], "little")
        landing = new_index[value.target] - len(insertions.get(value.target, ()))
        assert 16 * (position + 1) + branches.target_of(low, high) == 16 * landing


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(SMALL), picks=insertion_sets)
def test_random_insertions_as_nvdisasm_reads_them(name, picks, decoded):
    """The same property checked by nvdisasm on the bare text (small kernels keep it fast)."""
    kernel, instructions = _only(decoded, name)
    count = len(instructions)
    insertions = {k * count // 200: [NOP_RAW] * n for k, n in picks.items()}
    text, _ = insert(instructions, insertions, kernel)
    printed = _raw_listing(text)
    sequence, new_index = _expected(instructions, insertions)
    assert len(printed) == len(sequence)
    nop_text = _raw_listing(NOP_RAW)[0]
    plain = _raw_listing(b"".join(i.raw for i in instructions))
    for position, (kind, value) in enumerate(sequence):
        if kind == "inserted":
            assert printed[position] == nop_text
        elif value.target is None:
            assert printed[position] == plain[value.index]
        else:
            landing = new_index[value.target] - len(insertions.get(value.target, ()))
            assert printed[position].split()[-1] == hex(16 * landing)


def test_insertion_at_the_end_follows_the_padding(decoded):
    kernel, instructions = _only(decoded, "early_return")
    text, new_offset = insert(instructions, {len(instructions): [NOP_RAW, NOP_RAW]}, kernel)
    assert text == b"".join(i.raw for i in instructions) + NOP_RAW * 2
    assert new_offset == [i.offset for i in instructions]


def test_bad_insertions_are_refused(decoded):
    kernel, instructions = _only(decoded, "early_return")
    branch = next(i for i in instructions if i.base == "BRA")
    for insertions, message in (({len(instructions) + 1: [NOP_RAW]}, "cannot insert before instruction"),
                                ({-1: [NOP_RAW]}, "cannot insert before instruction"),
                                ({3: [NOP_RAW[:15]]}, "is 15 bytes, not 16"),
                                ({3: [branch.raw]}, "inserted code may not branch")):
        with pytest.raises(SassRewriteError, match=f"^kernel early_return: .*{message}") as error:
            insert(instructions, insertions, kernel)
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("source, why", [(BRX_PTX, "indirect branch"),
                                         (ABSOLUTE_CALL_PTX, "read of the program counter")])
def test_code_addresses_in_registers_are_refused(source, why):
    (kernel, instructions), = disassemble(ptx.assemble(source)).items()
    with pytest.raises(SassRewriteError, match=f"^kernel {kernel}: {why} at 0x[0-9a-f]+ .*not supported$"):
        insert(instructions, {1: [NOP_RAW]}, kernel)
    text, _ = insert(instructions, {}, kernel)
    assert text == b"".join(i.raw for i in instructions)


def test_only_relative_calls_and_returns_are_taken():
    """vprintf's call (ABSOLUTE_CALL_PTX) takes its return address with LEPC and calls through a
    register: refused above; the relative forms ptxas gives its own subroutines are re-laid."""
    assert branches.unsupported("CALL.ABS.NOINC") == "subroutine call to an absolute address"
    assert branches.unsupported("RET.ABS.NODEC") == "subroutine return to an absolute address"
    assert branches.unsupported("CALL.REL.NOINC") is None and branches.unsupported("RET.REL.NODEC") is None


def test_calls_return_after_the_instructions_inserted_after_them():
    """A noinline call in a loop, a NOP or two before every instruction: as nvdisasm reads the
    new text, each CALL still enters the helper, its return-address MOV names the first
    instruction after the CALL (the NOPs inserted before the one it returned to), the RET still
    counts from the kernel's start, and every other instruction is unchanged."""
    cubin = ptx.assemble(CALL_PTX)
    (kernel, instructions), = disassemble(cubin).items()
    returns = calls.return_addresses(instructions, kernel)
    assert len(returns) == sum(i.base == "CALL" for i in instructions) > 0
    insertions = {k: [NOP_RAW] * (1 + k % 2) for k in range(len(instructions))}
    text, new_offset = insert(instructions, insertions, kernel)
    got = disassemble(Cubin.parse(cubin).with_text(kernel, text, lambda offset: new_offset[offset // 16]))[kernel]
    _, new_index = _expected(instructions, insertions)
    for old in instructions:
        new = got[new_index[old.index]]
        if old.index in returns:
            site = returns[old.index]
            assert got[new_index[site - 1]].base == "CALL"
            assert calls.return_address(new) == 16 * (new_index[site - 1] + 1)
            assert calls.with_return_address(new.low, new.high, calls.return_address(old)) == (old.low, old.high)
        elif old.base == "RET":
            assert new.target == 0
        elif old.target is not None:
            assert new.target == new_index[old.target] - len(insertions[old.target])
        else:
            assert new.raw == old.raw


def test_a_displacement_that_does_not_fit_is_refused(decoded):
    bssy = next(i for result in decoded.values() for instructions in result.values()
                for i in instructions if i.base == "BSSY")
    with pytest.raises(SassRewriteError, match="does not fit its 32-bit field"):
        branches.with_target(bssy.low, bssy.high, 1 << 31)
    assert branches.target_of(*branches.with_target(bssy.low, bssy.high, -(1 << 31))) == -(1 << 31)


@pytest.mark.parametrize("name", NAMES)
def test_ptxas12_cubins_take_insertions_too(name):
    """The older ELF layout (CUDA 12's ptxas, as on the H200's Triton) decodes and re-lays alike."""
    cubin, _ = ptxas12_cubins()[name]
    (kernel, instructions), = disassemble(cubin).items()
    insertions = {k: [NOP_RAW] for k in _plans(instructions)["every 7th"] | _block_starts(instructions)}
    text, new_offset = insert(instructions, insertions, kernel)
    out = Cubin.parse(cubin).with_text(kernel, text, lambda offset: new_offset[offset // 16])
    _check(instructions, insertions, disassemble(out)[kernel], new_offset)
