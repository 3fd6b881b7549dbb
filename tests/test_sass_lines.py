"""The DWARF line reader on the sm_90a cubins of every corpus kernel, from Triton 3.9 here and
from the H200's Triton 3.6 (tests/fixtures/cubins_h200.npz): each instruction's file and line
agree with `nvdisasm -g`, its inlining chain with `nvdisasm -gi`, and bad input is one line."""
import re

import pytest

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.elf import SHT_RELA, Elf
from gwatch_nb.sass.lines import line_table
from sass_cubins import CASES, compiled, cubins, h200_cubins
from support import nvdisasm

_ANNOTATION = re.compile(r'\s*//## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?')
_INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]{4,})\*/")


# cubins of the Triton installed here (3.9 on the CPU machines) and of the H200's Triton 3.6
ALL = {**{f"here {name}": cubin for name, cubin in cubins().items()},
       **{f"h200 {name}": cubin for name, cubin in h200_cubins().items()}}


def _nvdisasm(cubin: bytes, option: str) -> str:
    return nvdisasm.output(cubin, option, "-c")


def _printed(listing: str) -> dict[int, list[tuple[str, int]]]:
    """Instruction index -> the annotations nvdisasm printed right above it (innermost first)."""
    out, pending = {}, []
    for line in listing.splitlines():
        annotation = _ANNOTATION.match(line)
        if annotation:
            pending.append((annotation.group(1), int(annotation.group(2))))
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction and pending:
            out[int(instruction.group(1), 16) // 16], pending = pending, []
    return out


@pytest.mark.parametrize("name", list(ALL))
def test_lines_match_nvdisasm(name):
    cubin = ALL[name]
    (locations,) = line_table(cubin).values()
    flat = _printed(_nvdisasm(cubin, "-g"))
    assert flat, "nvdisasm printed no line information"
    current = None
    for index, location in enumerate(locations):
        current = flat.get(index, [current])[-1]
        assert (location.file, location.line) == current, f"instruction {index}"
    # -gi prints the chain where the innermost line changes (and elides it where only a call site does)
    for index, chain in _printed(_nvdisasm(cubin, "-gi")).items():
        assert [(c.file, c.line) for c in locations[index].chain] == chain, f"instruction {index}"


def test_the_h200s_triton_36_cubins_carry_no_inlining_chain():
    """tl.max in attention line 49 is standard.py code; 3.6's cubin names only standard.py."""
    (locations,) = line_table(h200_cubins()["attention fwd d64"]).values()
    library = [loc for loc in locations if loc.file.endswith("standard.py")]
    assert library and all(loc.inlined_at is None for loc in locations)


def test_the_chain_in_the_ptx_reaches_the_cubin():
    """Where Triton's PTX has `.loc ... inlined_at` (3.9 here), the cubin's line table keeps the
    chain: tl.max's standard.py code is inlined at attention line 49."""
    ptx = compiled(next(c for c in CASES if c.name == "attention fwd d64")).asm["ptx"]
    (locations,) = line_table(cubins()["attention fwd d64"]).values()
    library = [loc for loc in locations if loc.file.endswith("standard.py")]
    assert library
    assert all(len(loc.chain) > 1 for loc in library) == ("inlined_at" in ptx)
    if "inlined_at" in ptx:
        assert ("attention.py", 49) in {(loc.chain[-1].file.rsplit("/", 1)[-1], loc.chain[-1].line) for loc in library}


def test_cubin_without_line_info_is_one_line():
    elf = Elf.parse(cubins()["vector_add_marked"])
    debug = elf.index(".debug_line")
    relocations = next(k for k, s in enumerate(elf.sections) if s.type == SHT_RELA and s.info == debug)
    stripped = elf.without_section(relocations).with_section_data(debug, b"").to_bytes()
    with pytest.raises(SassRewriteError, match=r"^cubin: no line information [^\n]*$"):
        line_table(stripped)
    with pytest.raises(SassRewriteError, match=r"^cubin: "):
        line_table(b"not a cubin")


TWO_KERNELS_PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry first(.param .u64 a, .param .u32 n)
{
 .reg .b64 %rd<3>; .reg .b32 %r<3>;
 .loc 1 3 0
 ld.param.u64 %rd1, [a];
 .loc 1 4 0
 ld.param.u32 %r1, [n];
 .loc 1 5 0
 cvta.to.global.u64 %rd2, %rd1;
 st.global.u32 [%rd2], %r1;
 .loc 1 6 0
 ret;
}
.visible .entry second(.param .u64 a, .param .u32 n)
{
 .reg .b64 %rd<3>; .reg .b32 %r<3>;
 .loc 1 13 0
 ld.param.u64 %rd1, [a];
 .loc 1 14 0
 ld.param.u32 %r1, [n];
 .loc 1 15 0
 add.u32 %r2, %r1, %r1;
 cvta.to.global.u64 %rd2, %rd1;
 .loc 1 16 0
 st.global.u32 [%rd2], %r2;
 ret;
}
.file 1 "/src/two.py"
"""


def test_each_kernel_of_a_module_gets_its_own_sequence():
    """Two kernels, one line program: each sequence's address is relocated to its own text."""
    from sass_cubins import assemble, tool
    cubin, _ = assemble(TWO_KERNELS_PTX, tool("ptxas-blackwell"))
    table = line_table(cubin)
    assert set(table) == {"first", "second"}
    listing = _nvdisasm(cubin, "-g")
    for kernel, locations in table.items():
        section = listing.split(f".text.{kernel}:", 1)[1].split(".section", 1)[0]
        printed, current = _printed(section), None
        assert printed
        for index, location in enumerate(locations):
            current = printed.get(index, [current])[-1]
            assert (location is None and current is None) or (location.file, location.line) == current, (kernel, index)
    assert {loc.line for loc in table["first"] if loc} <= {3, 4, 5, 6}
    assert {loc.line for loc in table["second"] if loc} <= {13, 14, 15, 16}
