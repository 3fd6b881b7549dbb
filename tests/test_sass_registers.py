"""The registers each instruction reads and writes, on every instruction of the corpus kernels,
of PTX kernels with the forms the corpus lacks and of the census kernels (tests/sass_census.py),
checked against NVIDIA's own per-instruction marks (`nvdisasm -lrm narrow`: '^' written, 'v'
read, 'x' both)."""
import pytest

import sass_census
import sass_ptx_kernels
import sass_reference
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instruction import Instruction
from gwatch_nb.sass.registers import register_bit, register_names, register_use

# Where nvdisasm marks writes this module does not count (a write left out is the safe side):
# LDGSTS's ignore-source predicate ("!P1") is only read by the instruction; a CALL clobbers
# the registers the ABI lets a callee change, which the code after it rewrites before use.
NOT_WRITTEN = {"LDGSTS": ("P", "UP"), "CALL": ("R", "P", "UR", "UP")}



CENSUS = [f"census {name}" for name in sass_census.CASE]


def _cubin(case: str) -> bytes:
    if case.startswith("census "):
        return sass_census.compiled(case.removeprefix("census ")).asm["cubin"]
    return sass_census.other_cubins()[case]


def _instruction(text: str, predicate=None) -> Instruction:
    opcode, _, rest = text.partition(" ")
    operands = tuple(o.strip() for o in rest.split(", ")) if rest else ()
    return Instruction(0, 0, 0, predicate, opcode, operands, None)


@pytest.mark.parametrize("case", sorted(sass_census.other_cubins()) + CENSUS)
def test_every_instruction_matches_nvdisasm(case):
    cubin = _cubin(case)
    reference = sass_reference.life_ranges(cubin)
    compared = 0
    for kernel, instructions in disassemble(cubin).items():
        for instruction in instructions:
            use = register_use(instruction, kernel)   # raises for any opcode or form not modelled
            marks = reference[kernel].get(instruction.index)
            if marks is None:
                continue  # the padding after the last branch
            compared += 1
            read = {r for r, m in marks.items() if m in "vx"}
            written = {r for r, m in marks.items() if m in "^x"}
            where = f"{kernel} @{instruction.index}: {instruction.predicate or ''} {instruction.opcode} " \
                    f"{', '.join(instruction.operands)}"
            assert read <= set(use.read_names), f"{where}: reads {sorted(read - set(use.read_names))} not counted"
            assert set(use.write_names) <= written, f"{where}: writes {sorted(set(use.write_names) - written)} " \
                                                    "nvdisasm does not see"
            missed = written - set(use.write_names)
            if instruction.base in NOT_WRITTEN:
                missed = {r for r in missed if not r.startswith(NOT_WRITTEN[instruction.base])}
            assert not missed, f"{where}: writes {sorted(missed)} not counted"
    assert compared == sum(len(rows) for rows in reference.values()) > 0


def test_wide_forms_are_in_the_ptx_kernel():
    """The PTX kernel keeps producing the forms the cross-check is there to cover."""
    _, instructions = sass_ptx_kernels.instructions(sass_ptx_kernels.WIDE_FORMS)
    opcodes = {i.opcode for i in instructions}
    for form in ("HMMA.16816.F32", "HMMA.1688.F32", "LDSM.16.M88.4", "LDSM.16.M88.2", "LDS.128", "STS.128",
                 "LDG.E.128", "STG.E.128", "STG.E.64", "DADD", "DMUL", "DFMA", "DSETP.GT.AND", "F2F.F64.F32",
                 "F2F.F32.F64", "I2F.F64", "F2I.S64.F64.TRUNC", "VOTE.ANY", "REDG.E.ADD.64.STRONG.GPU"):
        assert form in opcodes, form


def test_more_forms_are_in_the_ptx_kernel():
    _, instructions = sass_ptx_kernels.instructions(sass_ptx_kernels.MORE_FORMS)
    opcodes = {i.opcode for i in instructions}
    for form in ("MATCH.ANY", "MATCH.ALL", "I2IP.S16.S32.SAT", "VABSDIFF4.U8.ACC", "IDP.2A.LO.S16.S8", "HSET2.GT.AND",
                 "QSPC.E.S", "B2R.RESULT", "BAR.RED.POPC.DEFER_BLOCKING", "UBLKCP.S.G", "UBLKCP.G.S", "UBLKPF.L2",
                 "UBLKRED.G.S.ADD", "MOVM.16.MT88", "STSM.16.MT88.2", "LDSM.16.MT88", "ATOMS.CAS", "MUFU.TANH"):
        assert form in opcodes, form


def _run(first: int, end: int) -> str:
    return " ".join(f"R{r}" for r in range(first, end))


@pytest.mark.parametrize("text, predicate, reads, writes", [
    ("IMAD.WIDE.U32 R4, R15, 0x2, R8", None, "R15 R8 R9", "R4 R5"),
    ("IADD3 R38, P0, P1, R190, UR6, R115", None, "R190 R115 UR6", "R38 P0 P1"),
    ("IADD3.X R39, RZ, UR7, R36, P0, P1", None, "R36 UR7 P0 P1", "R39"),
    ("LOP3.LUT P0, RZ, R2, 0x1, RZ, 0xc0, !PT", None, "R2", "P0"),
    ("ISETP.GT.U32.AND.EX P1, PT, R89.reuse, RZ, PT, P1", "@!P2", "R89 P1 P2", "P1"),
    ("LDG.E.128 R16, desc[UR6][R2.64+0x10]", None, "R2 R3 UR6 UR7", "R16 R17 R18 R19"),
    ("STS.64 [R15+UR6], R16", None, "R15 R16 R17 UR6", ""),
    ("CS2R R56, SRZ", None, "", "R56 R57"),
    ("CS2R.32 R5, SR_CLOCKLO", None, "", "R5"),
    ("UIADD3.64 UR22, UR10, 0x2, URZ", None, "UR10 UR11", "UR22 UR23"),
    ("HGMMA.64x64x16.F32 R24, gdesc[UR28], RZ, !UPT", None, "UR28 UR29 UR30 UR31",
     " ".join(f"R{r}" for r in range(24, 56))),
    ("P2R R28, PR, RZ, 0x41", None, "P0 P6", "R28"),
    ("R2P PR, R3, 0x6", None, "R3", ""),
    ("QGMMA.64x64x32.F16.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0", None, "UR8 UR9 UR10 UR11 " + _run(24, 40),
     _run(24, 40)),
    ("IGMMA.64x128x32.S8.S8 R24, gdesc[UR12], R24, gsb0", None, "UR12 UR13 UR14 UR15 " + _run(24, 88),
     _run(24, 88)),
    ("DMMA.8x8x4 R20, R42, R44, R20", None, "R42 R43 R44 R45 R20 R21 R22 R23", "R20 R21 R22 R23"),
    ("IMMA.16832.S8.S8.SAT R4, R8, R12, R4", None, "R8 R9 R10 R11 R12 R13 R4 R5 R6 R7", "R4 R5 R6 R7"),
    ("LDSM.16.M88 R39, [R36+UR4]", None, "R36 UR4", "R39"),
    ("STSM.16.MT88 [R6], R3", None, "R6 R3", ""),
    ("REDUX.SUM.S32 UR4, R4", "@P0", "R4 P0", "UR4"),
    ("VIMNMX3.U32 R15, R4, R15, R14, PT", None, "R4 R15 R14", "R15"),
    ("ATOMG.E.ADD.F64.RN.STRONG.GPU PT, R8, desc[UR8][R10.64], R6", None, "R10 R11 UR8 UR9 R6 R7", "R8 R9"),
    ("IMAD.HI.U32 R14, P1, R23, R25, R14", None, "R23 R25 R14 R15", "R14 P1"),
    ("CGAERRBAR", None, "", ""),
    ("CALL.REL.NOINC `($k$__internal_0_$__cuda_sm20_div_s64)", None, "R0 R1", ""),
    ("UTMALDG.2D [UR8], [UR12]", "@UP3", "UR8 UR9 UR10 UR11 UR12 UR13 UP3", ""),
    ("DADD R12, R2, UR4", None, "R2 R3 UR4 UR5", "R12 R13"),
    ("STG.E desc[UR8][R2.64], RZ", None, "R2 R3 UR8 UR9", ""),
    ("FSET.BF.GT.AND R5, R2, R3, PT", None, "R2 R3", "R5"),  # FlagGems' dropout: a compare to 1.0/0.0
])
def test_forms(text, predicate, reads, writes):
    use = register_use(_instruction(text, predicate), "k")
    assert sorted(use.read_names) == sorted(reads.split())
    assert sorted(use.write_names) == sorted(writes.split())


def test_names_and_bits_round_trip():
    mask = register_bit("R0") | register_bit("R254") | register_bit("UR62") | register_bit("P6") | register_bit("UP0")
    assert register_names(mask) == ["R0", "R254", "UR62", "P6", "UP0"]
    assert register_bit("RZ") == register_bit("URZ") == register_bit("PT") == register_bit("UPT") == 0
    with pytest.raises(ValueError):
        register_bit("R255")


@pytest.mark.parametrize("text, reason", [
    ("FOO R1, R2", "opcode FOO are not modelled"),
    ("MOV.64 R2, R4", "wide form is not modelled"),
    ("HGMMA.64x64x16 R24, gdesc[UR28], RZ", "shape or type is not modelled"),
    ("UTMALDG.2D.IM2COL [UR8], [UR12]", "TMA mode is not modelled"),
])
def test_unmodelled_forms_are_refused(text, reason):
    with pytest.raises(SassRewriteError, match=f"^kernel attn_fwd: instruction 0 .*{reason}"):
        register_use(_instruction(text), "attn_fwd")
