"""The census of what ptxas emits for sm_90a (tests/sass_census.py): every opcode and form in
it is modelled by registers.py; the census still has the forms the sass tier used to refuse;
the offset-holding attributes its kernels add name the instructions they are about; and a
marked kernel with each formerly refused form is instrumented on the sass tier."""
import collections

import pytest

import sass_census
from census_kernels import CENSUS_SCOPE
from gwatch_nb.sass import markers
from gwatch_nb.sass.cubin import OFFSET_FIELDS, Cubin
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instrument import instrument
from gwatch_nb.sass.registers import KNOWN_OPCODES, register_use

# Forms the sass tier refused before the census, and a census kernel that has each.
FORMERLY_REFUSED = {
    "CGAERRBAR": "atomic add i32",
    "QGMMA.64x128x32.F32.E4M3.E4M3": "dot fp8e4nv wgmma",
    "QGMMA.64x64x32.F32.E5M2.E5M2": "dot fp8e5 wgmma",
    "IGMMA.64x128x32.S8.S8": "dot int8 wgmma",
    "IMMA.16832.S8.S8.SAT": "dot int8 mma v2",
    "DMMA.8x8x4": "dot fp64",
    "VIMNMX3": "minmax3 i32",
    "VHMNMX": "minmax3 fp16",
    "REDUX.SUM.S32": "reductions i32",
    "REDUX.MAX.S32": "reductions i32",
    "LDSM.16.M88": "fp8 quantize fp8e4nv",
    "STSM.16.MT88": "sort scan fp16",
    "FCHK": "float math fp32",
    "IDP.4A.S8.S8": "inline asm",
    "ACQBULK": "special registers",
    "PREEXIT": "special registers",
    "ATOMG.E.ADD.F64.RN.STRONG.GPU": "atomic add fp64",
    "CALL.REL.NOINC": "integer division i64",
    "RET.REL.NODEC": "noinline call",
}
# Offset-holding attributes the census kernels add to the corpus's, and what they name.
EXPECTED_AT_OFFSETS = {"EIATTR_ATOM16_EMUL_INSTR_REG_MAP": {"LDG", "ATOMG"},
                       "EIATTR_UNUSED_LOAD_BYTE_OFFSET": {"LDS"}}


@pytest.fixture(scope="module")
def listings():
    return sass_census.instructions()


def test_every_opcode_and_form_of_the_census_is_modelled(listings):
    found = sass_census.census(listings)
    assert len(listings) > 150 and len(found) > 120
    assert set(found) <= KNOWN_OPCODES, sorted(set(found) - KNOWN_OPCODES)
    for name, listing in listings.items():
        for instruction in listing:
            register_use(instruction, name)  # raises for any form not modelled


def test_the_census_has_the_forms_the_tier_refused(listings):
    for form, name in FORMERLY_REFUSED.items():
        assert any(i.opcode == form for i in listings[name]), (form, name)


def test_offset_attributes_of_the_census_name_their_instructions():
    seen = collections.defaultdict(set)
    for name in sass_census.CASE:
        kernel, instructions = sass_census.decoded(name)
        for record in Cubin.parse(sass_census.compiled(name).asm["cubin"]).attributes(kernel):
            if record.name in EXPECTED_AT_OFFSETS:
                assert record.id in OFFSET_FIELDS
                seen[record.name] |= {instructions[offset // 16].base for offset in record.offsets()}
    assert dict(seen) == EXPECTED_AT_OFFSETS


def _instrumented(name: str):
    compiled = sass_census.compiled(name)
    cubin = compiled.asm["cubin"]
    kernel, plain = sass_census.decoded(name)
    # The markers as the sass session reads them: from the source, which says how many loops
    # surround each (the PTX cannot; libdevice's own loops then seem to repeat the scope).
    result = instrument(cubin, kernel, markers.from_source(sass_census.CASE[name].fn), None, auto=True)
    assert result is not None and all(row["scope"] != CENSUS_SCOPE for row in result.left_out)
    kinds = {kind for scope, kind in zip(result.sites["scope"], result.sites["kind"])
             if scope == CENSUS_SCOPE}
    assert kinds == {"start", "end"}
    ((_, new),) = disassemble(result.cubin).items()
    assert len(new) == len(plain) + result.cost["inserted"]
    return plain, new


@pytest.mark.parametrize("form", sorted(FORMERLY_REFUSED))
def test_a_marked_kernel_with_a_formerly_refused_form_is_instrumented(form):
    plain, new = _instrumented(FORMERLY_REFUSED[form])
    assert sum(i.opcode == form for i in new) == sum(i.opcode == form for i in plain) > 0


@pytest.mark.parametrize("name", sass_census.CALLING)
def test_kernels_calling_subroutines_are_instrumented(name):
    """The calls return where the probes moved the code: each CALL's return-address MOV names
    the first instruction placed after it, and every RET counts from the kernel's start."""
    plain, new = _instrumented(name)
    calls = [i for i in new if i.base == "CALL"]
    assert len(calls) == sum(i.base == "CALL" for i in plain) > 0
    assert all(i.target == 0 for i in new if i.base == "RET")
    for call in calls:
        movs = [i for i in new[:call.index] if i.base == "MOV" and i.operands[-1] == hex(16 * (call.index + 1))]
        assert movs, f"{name}: no return address for the call at {call.index}"
