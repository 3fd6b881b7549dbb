"""The cubin container (gwatch_nb/sass/elf.py, cubin.py) on real cubins: ptxas's own output for
every corpus kernel and example, from CUDA 13.4 (Triton's cubins) and CUDA 12.9 (the older
ELF layout), read and written byte for byte, edited, and checked with cuobjdump and nvdisasm."""
import re
import struct
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sass_cubins
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import cubin as C
from gwatch_nb.sass.elf import SECTION_HEADER, Elf

NOP = struct.pack("<QQ", 0x0000000000007918, 0x000FC00000000000)
NAMES = [case.name for case in sass_cubins.CASES]


def _all_cubins():
    out = {f"{name} (ptxas 13.4)": data for name, data in sass_cubins.cubins().items()}
    out.update({f"{name} (ptxas 12.9)": data for name, (data, _) in sass_cubins.ptxas12_cubins().items()})
    return out


@pytest.fixture(scope="module")
def all_cubins():
    return _all_cubins()


def _run(tool: str, *args, data: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(data)
        f.flush()
        return subprocess.run([sass_cubins.tool(tool), *args, f.name], capture_output=True, text=True,
                              check=True).stdout


def _only_kernel(cubin: C.Cubin) -> str:
    (name,) = cubin.kernels
    return name


def _listing(data: bytes) -> dict[int, str]:
    """nvdisasm's instructions by byte offset (text as printed, without the trailing ';')."""
    text = _run("nvdisasm", "-c", data=data)
    return {int(m.group(1), 16): m.group(2).strip() for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", text)}


def test_round_trip_is_byte_identical(all_cubins):
    assert len(all_cubins) == 2 * len(NAMES)
    for name, data in all_cubins.items():
        assert Elf.parse(data).to_bytes() == data, name
        cubin = C.Cubin.parse(data)
        assert cubin.elf.to_bytes() == data, name
        assert len(cubin.kernels) == 1, name


def test_both_elf_layouts_are_read(all_cubins):
    abis = {name.rsplit("(", 1)[1]: Elf.parse(data).ident[8] for name, data in all_cubins.items()}
    assert abis == {"ptxas 13.4)": 8, "ptxas 12.9)": 7}


def test_attribute_table_is_what_cuobjdump_names():
    """Each id of the table written into a real cubin's .nv.info.<kernel>: cuobjdump names it so."""
    data = sass_cubins.cubins()["vector_add (no markers)"]
    elf = Elf.parse(data)
    info = elf.index(".nv.info.vector_add")
    records = b"".join(C.Attribute(C.EIFMT_HVAL, attr, b"\x10\x00").pack() for attr in sorted(C.EIATTR))
    listing = _run("cuobjdump", "-elf", data=elf.with_section_data(info, records + elf.sections[info].data).to_bytes())
    section = listing.split("\n.nv.info.vector_add\n", 1)[1]
    names = re.findall(r"Attribute:\t(\S+)", section)[:len(C.EIATTR)]
    assert names == [C.EIATTR[attr] for attr in sorted(C.EIATTR)]


def test_attributes_parse_as_cuobjdump_lists_them(all_cubins):
    for name, data in all_cubins.items():
        cubin = C.Cubin.parse(data)
        kernel = _only_kernel(cubin)
        listing = _run("cuobjdump", "-elf", data=data)
        section = listing.split(f"\n.nv.info.{kernel}\n", 1)[1].split("\n.", 1)[0]
        printed = re.findall(r"Attribute:\t(.*)\n\tFormat:\t(\S+)", section)
        ours = [(r.name if r.id in C.EIATTR else "unknown Attribute", C.FORMATS[r.format])
                for r in cubin.attributes(kernel)]
        assert ours == printed, name
        assert all(r.id in C.EIATTR or r.format != C.EIFMT_SVAL or r.id in C.UNNAMED_KEPT
                   for r in cubin.attributes(kernel)), name


# the instructions each offset attribute of the corpus names (read off nvdisasm)
EXPECTED_AT_OFFSETS = {"EIATTR_EXIT_INSTR_OFFSETS": {"EXIT"}, "EIATTR_ANNOTATIONS": {"STL", "LDL"},
                       "EIATTR_COOP_GROUP_INSTR_OFFSETS": {"SHFL", "BAR", "NOP"},
                       "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS": {"VOTEU", "VOTE"},
                       "EIATTR_MBARRIER_INSTR_OFFSETS": {"SYNCS"}}


def _opcode(instruction: str) -> str:
    words = instruction.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def test_offset_attributes_name_the_instructions_they_are_about():
    seen = set()
    for name, data in sass_cubins.cubins().items():
        cubin = C.Cubin.parse(data)
        kernel = _only_kernel(cubin)
        listing = _listing(data)
        for record in cubin.attributes(kernel):
            if record.id in C.OFFSET_FIELDS:
                seen.add(record.name)
                opcodes = {_opcode(listing[offset]) for offset in record.offsets()}
                assert opcodes <= EXPECTED_AT_OFFSETS[record.name], (name, record.name, opcodes)
    assert seen == set(EXPECTED_AT_OFFSETS)


def test_register_count_is_what_ptxas_reports():
    counts = set()
    for name, (data, report) in sass_cubins.ptxas12_cubins().items():
        cubin = C.Cubin.parse(data)
        (used,) = re.findall(r"Used (\d+) registers", report)
        assert cubin.registers(_only_kernel(cubin)) == int(used), name
        counts.add(int(used))
    for name, data in sass_cubins.cubins().items():
        cubin = C.Cubin.parse(data)
        kernel = _only_kernel(cubin)
        printed = re.findall(r"function: (\S+)\(0x[0-9a-f]+\)\tregister count: (\d+)", _run("cuobjdump", "-elf", data=data))
        assert printed == [(kernel, str(cubin.registers(kernel)))], name
        counts.add(cubin.registers(kernel))
    assert len(counts) >= 8  # kernels of many different counts


def test_sm90_keeps_the_register_count_only_in_its_attribute(all_cubins):
    """Older sm_80 cubins also keep it in the top byte of the text's sh_info; sm_90 ones leave it 0."""
    for name, data in all_cubins.items():
        cubin = C.Cubin.parse(data)
        assert cubin.elf.sections[cubin.kernel(_only_kernel(cubin)).text].info >> 24 == 0, name


def test_with_text_unchanged_is_byte_identical(all_cubins):
    for name, data in all_cubins.items():
        cubin = C.Cubin.parse(data)
        kernel = _only_kernel(cubin)
        assert cubin.with_text(kernel, cubin.text(kernel), lambda offset: offset) == data, name


def _trailing_padding(text: bytes) -> int:
    """Byte offset where the NOPs after the kernel's last real instruction begin."""
    end = len(text)
    while end and text[end - 16:end] == NOP:
        end -= 16
    return end


@pytest.mark.parametrize("name", ["vector_add (no markers)", "warp-specialized TMA matmul", "attention fwd d64"])
@pytest.mark.parametrize("where", ["padding", "start"])
def test_with_text_longer_is_accepted_and_mapped(name, where):
    data = sass_cubins.cubins()[name]
    cubin = C.Cubin.parse(data)
    kernel = _only_kernel(cubin)
    text = cubin.text(kernel)
    at = _trailing_padding(text) if where == "padding" else 0
    count = 8  # keeps the text a multiple of 128 bytes, as ptxas lays it out
    new_text = text[:at] + NOP * count + text[at:]
    out = cubin.with_text(kernel, new_text, lambda offset: offset + 16 * count if offset >= at else offset)
    _run("cuobjdump", "-elf", data=out)
    new = C.Cubin.parse(out)
    assert new.text(kernel) == new_text
    assert new.symbols()[new.kernel(kernel).symbol].size == len(new_text)
    old_listing, new_listing = _listing(data), _listing(out)
    assert len(new_listing) == len(old_listing) + count
    for old, new_record in zip(cubin.attributes(kernel), new.attributes(kernel)):
        assert old.id == new_record.id
        if old.id in C.OFFSET_FIELDS:
            shifted = [offset + 16 * count if offset >= at else offset for offset in old.offsets()]
            assert new_record.offsets() == shifted
            assert [new_listing[o] for o in shifted] == [old_listing[o] for o in old.offsets()]
        else:
            assert old == new_record
    if where == "start":  # every instruction moved by the same amount: relative branches still hold
        assert [new_listing[o + 16 * count] for o in sorted(old_listing)] == [old_listing[o] for o in sorted(old_listing)]
    names = [s.name for s in new.elf.sections]
    assert not [n for n in names if n.startswith(".rela.") and (".debug" in n or "debug_line" in n)]
    assert all(s.size == 0 for s in new.elf.sections if s.name.startswith(C.DEBUG_PREFIXES))
    assert ".nv_debug_ptx_txt" in names


def test_with_text_maps_relocations():
    """ptxas leaves the text relocations of whole-program sm_90 cubins empty: one entry written into
    a real cubin's .rela.text.<kernel> must move with the instruction it patches."""
    data = sass_cubins.cubins()["layernorm fwd"]
    elf = Elf.parse(data)
    rela = elf.index(".rela.text.layer_norm_fwd")
    entry = struct.pack("<QQq", 0x34, 9 << 32 | 2, 0)  # 4 bytes into the instruction at 0x30
    cubin = C.Cubin.parse(elf.with_section_data(rela, entry).to_bytes())
    out = C.Cubin.parse(cubin.with_text("layer_norm_fwd", NOP * 8 + cubin.text("layer_norm_fwd"), lambda o: o + 128))
    assert [(r.offset, r.symbol, r.type, r.addend) for r in out.relocations("layer_norm_fwd")] == [(0x34 + 128, 9, 2, 0)]


SUBROUTINE_PTX = """.version 8.0
.target sm_90a
.address_size 64
.func (.reg .b32 r) twice(.reg .b32 x)
{
 add.s32 r, x, x;
 ret;
}
.visible .entry k(.param .u64 a, .param .u32 n)
{
 .reg .b64 %rd<4>; .reg .b32 %r<3>;
 ld.param.u64 %rd1, [a];
 ld.param.u32 %r1, [n];
 call (%r2), twice, (%r1);
 cvta.to.global.u64 %rd3, %rd1;
 st.global.u32 [%rd3], %r2;
 ret;
}
"""


def test_with_text_maps_a_subroutine_symbol():
    data, _ = sass_cubins.assemble(SUBROUTINE_PTX, sass_cubins.tool("ptxas-blackwell"))
    cubin = C.Cubin.parse(data)
    (sub,) = [s for s in cubin.symbols() if s.name == "$k$twice"]
    at = sub.value + 16  # NOPs inside the subroutine, after its first instruction
    new_text = cubin.text("k")[:at] + NOP * 8 + cubin.text("k")[at:]
    out = C.Cubin.parse(cubin.with_text("k", new_text, lambda o: o + 128 if o >= at else o))
    (moved,) = [s for s in out.symbols() if s.name == "$k$twice"]
    assert (moved.value, moved.size) == (sub.value, sub.size + 128)
    assert out.symbols()[out.kernel("k").symbol].size == len(new_text)
    assert "$k$twice" in _run("nvdisasm", "-c", data=out.elf.to_bytes())


def test_with_text_refuses_a_mapping_that_is_not_monotonic():
    cubin = C.Cubin.parse(sass_cubins.cubins()["vector_add (no markers)"])
    text = cubin.text("vector_add")
    with pytest.raises(SassRewriteError, match="kernel vector_add: new_offset maps instruction 1"):
        cubin.with_text("vector_add", text, lambda offset: 0)
    with pytest.raises(SassRewriteError, match="not whole 16-byte instructions"):
        cubin.with_text("vector_add", text + b"\0" * 8, lambda offset: offset)


def test_with_text_refuses_attributes_it_cannot_map():
    data = sass_cubins.cubins()["vector_add (no markers)"]
    elf = Elf.parse(data)
    info = elf.index(".nv.info.vector_add")
    for record, reason in ((C.Attribute(C.EIFMT_SVAL, C.ID["EIATTR_INDIRECT_BRANCH_TARGETS"], bytes(12)),
                            "EIATTR_INDIRECT_BRANCH_TARGETS may hold code addresses"),
                           (C.Attribute(C.EIFMT_SVAL, 0x70, bytes(4)), "unknown attribute 0x70")):
        odd = C.Cubin.parse(elf.with_section_data(info, elf.sections[info].data + record.pack()).to_bytes())
        with pytest.raises(SassRewriteError, match=reason):
            odd.with_text("vector_add", NOP * 8 + odd.text("vector_add"), lambda offset: offset + 128)
    kept = C.Attribute(C.EIFMT_HVAL, 0x70, b"\x05\x00")  # a 2-byte unknown value is kept as it is
    odd = C.Cubin.parse(elf.with_section_data(info, elf.sections[info].data + kept.pack()).to_bytes())
    out = C.Cubin.parse(odd.with_text("vector_add", NOP * 8 + odd.text("vector_add"), lambda offset: offset + 128))
    assert out.attributes("vector_add")[-1] == kept


def test_with_registers():
    for name in ("vector_add (no markers)", "layernorm bwd dwdb", "grouped GEMM"):
        cubin = C.Cubin.parse(sass_cubins.cubins()[name])
        kernel = _only_kernel(cubin)
        current = cubin.registers(kernel)
        target = min(current + 8, 255)
        out = cubin.with_registers(kernel, target)
        assert C.Cubin.parse(out).registers(kernel) == target
        assert f"register count: {target}" in _run("cuobjdump", "-elf", data=out)
        with pytest.raises(SassRewriteError, match=f"kernel {kernel}: {current - 1} registers is outside"):
            cubin.with_registers(kernel, current - 1)
        with pytest.raises(SassRewriteError, match="256 registers is outside"):
            cubin.with_registers(kernel, 256)
    ws = C.Cubin.parse(sass_cubins.cubins()["warp-specialized TMA matmul"])
    with pytest.raises(SassRewriteError, match="setmaxnreg"):
        ws.with_registers("matmul_tma_ws", 200)


def _with_extra_parameter(ptx: str, kernel: str, declaration: str) -> str:
    start = ptx.index(f".entry {kernel}(")
    close = ptx.index("\n)", start)
    return ptx[:close] + f",\n\t{declaration}" + ptx[close:]


@pytest.mark.parametrize("name", ["vector_add (no markers)", "matmul", "fused softmax", "attention bwd dq"])
@pytest.mark.parametrize("ptxas", ["ptxas-blackwell", "ptxas"])
@pytest.mark.parametrize("size", [8, 4])
def test_with_parameter_matches_ptxas(name, ptxas, size):
    case = next(c for c in sass_cubins.CASES if c.name == name)
    ptx = sass_cubins.compiled(case).asm["ptx"]
    if ptxas == "ptxas":
        ptx = re.sub(r"^\.version \S+", ".version 8.8", ptx, count=1, flags=re.M)
    kernel = case.fn.__name__
    plain, _ = sass_cubins.assemble(ptx, sass_cubins.tool(ptxas))
    extended, _ = sass_cubins.assemble(_with_extra_parameter(ptx, kernel, f".param .u{8 * size} gwatch_extra"),
                                       sass_cubins.tool(ptxas))
    ours, address = C.Cubin.parse(plain).with_parameter(kernel, size=size, align=size)
    ours, theirs = C.Cubin.parse(ours), C.Cubin.parse(extended)
    assert ours.attributes(kernel) == theirs.attributes(kernel)
    assert ours.elf.sections[ours.kernel(kernel).constant0].size == theirs.elf.sections[theirs.kernel(kernel).constant0].size
    last = next(r for r in theirs.attributes(kernel) if r.id == C.ID["EIATTR_KPARAM_INFO"])
    assert address == C.PARAM_BASE + struct.unpack_from("<H", last.payload, 6)[0]
    _run("cuobjdump", "-elf", data=ours.elf.to_bytes())


# --- bad input: each is one line naming what is wrong ------------------------------------------

def _error(data: bytes) -> str:
    with pytest.raises(SassRewriteError) as caught:
        C.Cubin.parse(data)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_another_architecture_is_refused():
    ptx = sass_cubins.compiled(sass_cubins.CASES[0]).asm["ptx"].replace(".target sm_90a", ".target sm_80")
    ptx = re.sub(r"^\.version \S+", ".version 8.8", ptx, count=1, flags=re.M)
    for ptxas in ("ptxas", "ptxas-blackwell"):
        data, _ = sass_cubins.assemble(ptx, sass_cubins.tool(ptxas), arch="sm_80")
        assert _error(data) == "cubin: built for sm_80, the SASS tier reads only sm_90/sm_90a"


@pytest.fixture(scope="module")
def sample():
    return sass_cubins.cubins()["layernorm fwd"]


def test_truncated_cubins_are_refused(sample):
    for length in (0, 10, 63, 64, 1000, len(sample) // 2, len(sample) - 1):
        assert _error(sample[:length]).startswith("cubin: ")


def test_corrupt_headers_are_refused(sample):
    elf = Elf.parse(sample)

    def patched(offset: int, fmt: str, value) -> bytes:
        data = bytearray(sample)
        struct.pack_into(fmt, data, offset, value)
        return bytes(data)
    assert "bad magic" in _error(b"\x7fELG" + sample[4:])
    assert "64-bit little-endian" in _error(patched(4, "<B", 1))
    assert "section header table" in _error(patched(0x28, "<Q", len(sample)))
    assert "section name table index" in _error(patched(0x3E, "<H", 200))
    assert "ELF machine" in _error(patched(0x12, "<H", 62))
    text = elf.index(".text.layer_norm_fwd")
    header = elf.shoff + text * SECTION_HEADER.size
    assert "runs past the end" in _error(patched(header + 24, "<Q", len(sample)))
    assert "links to section" in _error(patched(header + 40, "<I", 999))
    assert "not whole 16-byte instructions" in _error(patched(header + 32, "<Q", elf.sections[text].size - 8))


def test_overlapping_sections_are_refused(sample):
    elf = Elf.parse(sample)
    text = elf.index(".text.layer_norm_fwd")
    data = bytearray(sample)
    previous = max((s for s in elf.sections if s.file_size and s.offset < elf.sections[text].offset),
                   key=lambda s: s.offset)
    struct.pack_into("<Q", data, elf.shoff + text * SECTION_HEADER.size + 24, previous.offset + 4)
    assert "overlaps" in _error(bytes(data))


def test_corrupt_attributes_are_refused(sample):
    elf = Elf.parse(sample)
    info = elf.index(".nv.info.layer_norm_fwd")
    cut = elf.with_section_data(info, elf.sections[info].data + bytes((C.EIFMT_SVAL, 0x1C, 0x40, 0))).to_bytes()
    assert "kernel layer_norm_fwd: attribute EIATTR_EXIT_INSTR_OFFSETS at byte" in _error(cut)
    odd = elf.with_section_data(info, bytes((9, 0x1C, 0, 0)) + elf.sections[info].data).to_bytes()
    assert _error(odd) == "kernel layer_norm_fwd: attribute record at byte 0 has unknown format 0x9"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_corruption_of_the_headers_is_read_or_refused(sample, data):
    """Random bytes written over the ELF header or the section headers: either the cubin still
    reads, or the reader says why in one line; it never fails any other way."""
    elf = Elf.parse(sample)
    region = data.draw(st.sampled_from([(0, 64), (elf.shoff, len(elf.sections) * SECTION_HEADER.size)]))
    at = data.draw(st.integers(region[0], region[0] + region[1] - 1))
    junk = data.draw(st.binary(min_size=1, max_size=8))
    corrupt = bytearray(sample)
    corrupt[at:at + len(junk)] = junk
    try:
        C.Cubin.parse(bytes(corrupt))
    except SassRewriteError as e:
        assert "\n" not in str(e)


TWO_KERNELS_PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry first(.param .u64 a, .param .u32 n)
{
 .reg .b64 %rd<3>; .reg .b32 %r<3>;
 ld.param.u64 %rd1, [a];
 ld.param.u32 %r1, [n];
 cvta.to.global.u64 %rd2, %rd1;
 st.global.u32 [%rd2], %r1;
 ret;
}
.visible .entry second(.param .u64 a, .param .u32 n)
{
 .reg .b64 %rd<3>; .reg .b32 %r<3>; .reg .pred %p<2>;
 ld.param.u64 %rd1, [a];
 ld.param.u32 %r1, [n];
 cvta.to.global.u64 %rd2, %rd1;
 setp.eq.u32 %p1, %r1, 0;
 @%p1 bra DONE;
 add.u32 %r2, %r1, %r1;
 st.global.u32 [%rd2], %r2;
DONE:
 ret;
}
"""


def _kernel_listing(data: bytes, kernel: str) -> list[str]:
    text = _run("nvdisasm", "-c", data=data)
    section = text.split(f".text.{kernel}:", 1)[1].split("//----", 1)[0]
    return re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", section)


def test_a_module_of_two_kernels_keeps_the_other_one():
    data, _ = sass_cubins.assemble(TWO_KERNELS_PTX, sass_cubins.tool("ptxas-blackwell"))
    cubin = C.Cubin.parse(data)
    assert set(cubin.kernels) == {"first", "second"}
    out = cubin.with_text("first", NOP * 8 + cubin.text("first"), lambda offset: offset + 128)
    new = C.Cubin.parse(out)
    assert new.text("second") == cubin.text("second")
    assert new.attributes("second") == cubin.attributes("second")
    assert _kernel_listing(out, "second") == _kernel_listing(data, "second")
    assert _kernel_listing(out, "first") == ["NOP"] * 8 + _kernel_listing(data, "first")
    assert [r.offsets() for r in new.attributes("first") if r.name == "EIATTR_EXIT_INSTR_OFFSETS"] == \
        [[o + 128 for o in r.offsets()] for r in cubin.attributes("first") if r.name == "EIATTR_EXIT_INSTR_OFFSETS"]


def test_removing_a_section_renumbers_what_names_sections(sample):
    elf = Elf.parse(sample)
    gone = elf.index(".rela.debug_line")
    smaller = Elf.parse(elf.without_section(gone).to_bytes())
    assert [s.name for s in smaller.sections] == [s.name for k, s in enumerate(elf.sections) if k != gone]
    by_name = {s.name: k for k, s in enumerate(smaller.sections)}
    for k, s in enumerate(smaller.sections):
        original = elf.sections[elf.index(s.name)]
        assert smaller.sections[s.link].name == elf.sections[original.link].name if s.link else original.link == 0
        if s.info_is_section and s.info:
            assert smaller.sections[s.info].name == elf.sections[original.info].name
        if s.type != 8:
            assert s.data == original.data or s.type == 2  # the symbol table's indices were renumbered
    symtab = by_name[".symtab"]
    for before, after in zip(elf.symbols(elf.index(".symtab")), smaller.symbols(symtab)):
        if 0 < before.shndx < 0xFF00:
            assert smaller.sections[after.shndx].name == elf.sections[before.shndx].name
    assert smaller.sections[smaller.shstrndx].name == ".shstrtab"
    _run("cuobjdump", "-elf", data=smaller.to_bytes())
    with pytest.raises(SassRewriteError, match="a symbol is defined in it"):
        elf.without_section(elf.index(".text.layer_norm_fwd"))
    with pytest.raises(SassRewriteError, match="names it"):
        elf.without_section(elf.index(".strtab"))
