"""The decoder on the sm_90a cubins of every corpus kernel and example: the words are the
cubin's text byte for byte, the opcode/guard/operands agree with nvdisasm's JSON (a parse of
its own), the control fields obey what ptxas guarantees, branch targets read from the bits
agree with nvdisasm's labels, and bad input is one line of SassRewriteError."""
import json
import random
import re
import subprocess
import tempfile
from collections import Counter

import pytest

from gwatch_nb import ptx
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches
from gwatch_nb.sass.control import NO_BARRIER, Control
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.disasm import disassemble, nvdisasm_path
from sass_cubins import cubins
from sass_ptx import BRX_PTX, CALL_PTX, SMALL_PTX, TWO_KERNELS_PTX
from support import nvdisasm

NAMES = list(cubins())


@pytest.fixture(scope="module")
def decoded():
    return {name: disassemble(cubin) for name, cubin in cubins().items()}


def _nvdisasm(cubin: bytes, *options: str) -> str:
    return nvdisasm.output(cubin, *options)


@pytest.mark.parametrize("name", NAMES)
def test_words_are_the_text_and_control_round_trips(name, decoded):
    view = Cubin.parse(cubins()[name])
    assert set(decoded[name]) == set(view.kernels)
    for kernel, instructions in decoded[name].items():
        assert b"".join(i.raw for i in instructions) == view.text(kernel)
        assert [i.index for i in instructions] == list(range(len(instructions)))
        assert [i.offset for i in instructions] == [16 * k for k in range(len(instructions))]
        for i in instructions:
            assert i.control.on_high(i.high) == i.high
            assert Control.from_bits(i.control.bits) == i.control
            assert i.base == i.opcode.split(".")[0]


@pytest.mark.parametrize("name", NAMES)
def test_words_match_nvdisasm_hex(name, decoded):
    """nvdisasm -hex prints each instruction's two words: our ELF reading must give the same."""
    listing = _nvdisasm(cubins()[name], "-c", "-hex")
    words = [int(w, 16) for w in re.findall(r"/\* (0x[0-9a-f]{16}) \*/", listing)]
    (instructions,) = decoded[name].values()
    assert words == [w for i in instructions for w in (i.low, i.high)]


def _json_form(operand: str, instruction) -> str:
    """Our operand as nvdisasm's JSON spells it: no spaces, a label as the target's offset."""
    if operand.startswith("`("):
        return hex(16 * instruction.target)
    return operand.replace(" ", "")


def _pieces(operands: str) -> Counter:
    """Operand text cut at commas and brackets: the JSON drops the comma before an address
    ("R1[R2]") and moves LDGSTS's shared address last."""
    return Counter(p for p in re.split(r"[,\[\] ]", operands) if p)


@pytest.mark.parametrize("name", NAMES)
def test_opcodes_guards_operands_agree_with_nvdisasm_json(name, decoded):
    (function,) = json.loads(_nvdisasm(cubins()[name], "-json"))[1]
    (instructions,) = decoded[name].values()
    printed = function["sass-instructions"]
    assert len(printed) == len(instructions)
    for mine, theirs in zip(instructions, printed):
        assert mine.opcode == theirs["opcode"]
        if theirs.get("predicate") == "PR":  # the JSON takes P2R's PR operand for a guard
            assert mine.base == "P2R" and mine.operands[1] == "PR" and mine.predicate is None
            assert [o for o in mine.operands if o != "PR"] == theirs["operands"].split(",")
            continue
        assert mine.predicate == theirs.get("predicate")
        joined = ",".join(_json_form(o, mine) for o in mine.operands)
        assert _pieces(joined) == _pieces(theirs.get("operands", ""))


def test_operand_forms_of_the_contract(decoded):
    seen = {o for result in decoded.values() for instructions in result.values()
            for i in instructions for o in i.operands}
    for form in ("R3.reuse", "-R4", "c[0x0][0x210]", "desc[UR4][R2.64]", "SR_TID.X", "P0", "!PT", "UR5",
                 "{5,4,3,2,1,0}", "-INF"):
        assert any(re.fullmatch(re.sub(r"\d+", r"\\d+", re.escape(form)), o) for o in seen), form
    assert not any(o != o.strip() or not o for o in seen)


@pytest.mark.parametrize("name", NAMES)
def test_branch_targets_from_the_bits_match_nvdisasm(name, decoded):
    for instructions in decoded[name].values():
        for i in instructions:
            if branches.has_relative_target(i.opcode):
                assert i.target is not None
                assert i.offset + 16 + branches.target_of(i.low, i.high) == 16 * i.target
            else:
                assert i.target is None
                assert branches.target_of(i.low, i.high) is None or branches.unsupported(i.opcode)


def _written(i) -> set[str]:
    """The registers a load or S2R writes (its first operand; .64/.128 widen it)."""
    first = re.fullmatch(r"R(\d+)", i.operands[0])
    if first is None:
        return set()
    width = 4 if ".128" in i.opcode else 2 if ".64" in i.opcode else 1
    return {f"R{int(first.group(1)) + k}" for k in range(width)}


def _mentions(i, registers: set[str]) -> bool:
    return any(r in registers for o in i.operands for r in re.findall(r"\bR\d+\b", o))


@pytest.mark.parametrize("name", NAMES)
def test_a_loads_consumer_waits_on_its_write_barrier(name, decoded):
    """ptxas's contract with the hardware: a variable-latency result (LDG, LDS, S2R) is read only
    after some instruction waited on the scoreboard the producer set. Checks that the write
    barrier and the wait mask are where control.py reads them."""
    checked = producers = unguarded = 0
    for instructions in decoded[name].values():
        targets = {i.target for i in instructions if i.target is not None}
        for k, producer in enumerate(instructions):
            if producer.base not in ("LDG", "LDS", "S2R") or producer.predicate:
                continue
            written = _written(producer)
            barrier = producer.control.write_barrier
            if not written:
                continue
            producers += 1
            if barrier == NO_BARRIER:  # ptxas sets none when the reader is far behind (matmul: LDS 0x32f0, read 0x3bd0)
                unguarded += 1
                continue
            for later in instructions[k + 1:]:
                if later.index in targets or later.target is not None or later.base in ("EXIT", "BRA"):
                    break
                waited = later.control.wait_mask >> barrier & 1 or later.base == "DEPBAR"
                if _mentions(later, written):
                    assert waited or any(j.control.wait_mask >> barrier & 1 for j in
                                         instructions[k + 1:later.index]), f"{later.opcode} at {later.offset:#x}"
                    checked += 1
                    break
                if waited:
                    break
    assert checked > 0 and unguarded <= producers // 4


def test_a_cubin_for_another_architecture_is_refused():
    cubin = ptx.assemble(SMALL_PTX.format(arch="sm_80"), arch="sm_80")
    with pytest.raises(SassRewriteError, match=r"^cubin: built for sm_80") as error:
        disassemble(cubin)
    assert "\n" not in str(error.value)


def test_a_truncated_cubin_is_refused():
    cubin = cubins()["early_return"]
    for cut in (10, 100, len(cubin) // 2):
        with pytest.raises(SassRewriteError) as error:
            disassemble(cubin[:cut])
        assert "\n" not in str(error.value)


def test_an_instruction_nvdisasm_cannot_decode_names_kernel_and_offset():
    cubin = bytearray(cubins()["early_return"])
    view = Cubin.parse(bytes(cubin))
    section = view.elf.sections[view.kernel("early_return").text]
    start = cubin.find(section.data)
    cubin[start + 0x50:start + 0x58] = bytes.fromhex("1234567890abcdef")
    with pytest.raises(SassRewriteError, match=r"^kernel early_return: .* at 0x50\b") as error:
        disassemble(bytes(cubin))
    assert "\n" not in str(error.value)


def test_subroutines_and_jump_tables_decode():
    """A noinline call stays in the kernel's own section, its RET counting from the kernel's
    start; brx.idx becomes BRXU over a jump table in a constant bank: no relative target is
    recorded for it."""
    calls = ptx.assemble(CALL_PTX)
    (instructions,) = disassemble(calls).values()
    call = next(i for i in instructions if i.opcode.startswith("CALL.REL"))
    assert call.target > call.index and instructions[call.target - 1].base == "EXIT"  # the helper follows the kernel
    ret = next(i for i in instructions if i.base == "RET")
    assert ret.target == 0 and ret.operands[0].startswith("R")
    table = ptx.assemble(BRX_PTX)
    (instructions,) = disassemble(table).values()
    brx = next(i for i in instructions if i.base.startswith("BRX"))
    assert brx.target is None and branches.unsupported(brx.opcode) == "indirect branch"
    assert sum(i.base == "BRA" for i in instructions) >= 3


def test_target_fields_agree_with_nvdisasm_on_random_displacements(decoded):
    """with_target on ptxas's own BRA, BSSY and CALL.REL words, for random displacements over
    each field's whole range; nvdisasm -b SM90a prints the absolute target it reads."""
    rng = random.Random(14)
    samples = {}
    for result in decoded.values():
        for instructions in result.values():
            for i in instructions:
                if i.target is not None:
                    samples.setdefault((i.opcode, i.predicate is None), i)  # guarded and not
    samples["call"] = next(i for i in disassemble(ptx.assemble(CALL_PTX))["calls"] if i.target is not None
                                     and i.base == "CALL")
    words, expected = [], []
    for instruction in samples.values():
        width = 32 if instruction.base == "BSSY" else 58
        for delta in [rng.randrange(-(1 << (width - 1)), 1 << (width - 1)) & ~3 for _ in range(40)] + \
                [-(1 << (width - 1)), (1 << (width - 1)) - 4, 0, -16]:
            low, high = branches.with_target(instruction.low, instruction.high, delta)
            assert branches.target_of(low, high) == delta
            assert Control.from_high(high) == instruction.control
            expected.append((instruction.opcode, 16 * len(words) + 16 + delta))
            words.append(low.to_bytes(8, "little") + high.to_bytes(8, "little"))
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(b"".join(words))
        f.flush()
        out = subprocess.run([nvdisasm_path(), "-b", "SM90a", f.name], capture_output=True, text=True,
                             check=True).stdout
    printed = [line.split("*/", 1)[1].split(";")[0].split() for line in out.splitlines() if "*/" in line]
    assert len(printed) == len(expected) and len(samples) >= 4
    for tokens, (opcode, target) in zip(printed, expected):
        assert opcode in tokens and int(tokens[-1], 16) == target, (tokens, opcode, hex(target))


def test_every_kernel_of_a_module_and_the_one_nvdisasm_fails_on():
    cubin = ptx.assemble(TWO_KERNELS_PTX)
    view = Cubin.parse(cubin)
    result = disassemble(cubin)
    assert set(result) == {"first", "second"}
    for kernel, instructions in result.items():
        assert b"".join(i.raw for i in instructions) == view.text(kernel)
        assert all(i.target is None or 0 <= i.target < len(instructions) for i in instructions)
    assert any(i.target is not None for i in result["first"])
    broken = bytearray(cubin)
    start = broken.find(view.text("second"))
    broken[start + 0x10:start + 0x18] = bytes.fromhex("1234567890abcdef")
    with pytest.raises(SassRewriteError, match=r"^kernel second: .* at 0x10\b"):
        disassemble(bytes(broken))
