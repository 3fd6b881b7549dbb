"""Where each SASS instruction of a kernel came from in the source: file, line, column and the
chain of call sites that inlined it, read from the cubin's DWARF line program (`.debug_line`).

ptxas writes one DWARF 2 line program for the module, one sequence per kernel (its
`DW_LNE_set_address` is relocated to the kernel's text section). NVIDIA adds the extended
opcode 0x90 (inlined at): its operand is the 1-based number of the row, in the program's order,
that is the call site of the rows that follow (0: not inlined). Several rows at one address
are the call-site rows and then the instruction's own row; the last row at an address holds
for every instruction until the next address, as `nvdisasm -g` prints it.

Triton 3.9's cubins carry the chain for `@triton.jit` helpers and library functions
(`tl.max` → standard.py); Triton 3.6's do not: its PTX `.loc`s have no `inlined_at`, so the
line program has no 0x90 rows and an inlined helper's instructions name only the helper's own
line (see docs/sass/sites.md for how sites.py places them)."""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.elf import SHT_RELA
from gwatch_nb.sass.instruction import SIZE

DW_LNE_END_SEQUENCE, DW_LNE_SET_ADDRESS, DW_LNE_NV_INLINED_AT = 1, 2, 0x90
DW_LNS_COPY, DW_LNS_ADVANCE_PC, DW_LNS_ADVANCE_LINE, DW_LNS_SET_FILE, DW_LNS_SET_COLUMN = 1, 2, 3, 4, 5
DW_LNS_CONST_ADD_PC, DW_LNS_FIXED_ADVANCE_PC = 8, 9
_RELA = struct.Struct("<QQq")


@dataclass(frozen=True)
class Location:
    file: str                      # path as the line program names it (directory joined)
    line: int
    column: int                    # 0 when the program gives none
    inlined_at: "Location | None"  # the call site that inlined this code, None in the kernel itself

    @property
    def chain(self) -> tuple["Location", ...]:
        """This location, then each call site outwards; the last is in the kernel's own function."""
        out, at = [], self
        while at is not None:
            out.append(at)
            at = at.inlined_at
        return tuple(out)


def _uleb(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _sleb(data: bytes, i: int) -> tuple[int, int]:
    value, j = _uleb(data, i)
    bits = 7 * (j - i)
    return (value - (1 << bits) if value >> (bits - 1) & 1 else value), j


def _cstrings(data: bytes, i: int, fields: int) -> tuple[list[tuple[str, list[int]]], int]:
    """A header table of NUL-terminated names, each followed by `fields` ULEB128s; ends at an empty name."""
    entries = []
    while data[i]:
        end = data.index(0, i)
        name, i = data[i:end].decode(), end + 1
        values = []
        for _ in range(fields):
            value, i = _uleb(data, i)
            values.append(value)
        entries.append((name, values))
    return entries, i + 1


def line_table(cubin: bytes) -> dict[str, list[Location | None]]:
    """Kernel name -> the Location of each of its instructions (None where the program gives none)."""
    view = Cubin.parse(cubin)
    sections = view.elf.sections
    debug = next((k for k, section in enumerate(sections) if section.name == ".debug_line"), None)
    if debug is None or not sections[debug].data:
        raise SassRewriteError("cubin: no line information (.debug_line missing or empty; Triton's ptxas -lineinfo writes it)")
    kernel_of_address_field = _relocated_kernels(view, debug)
    data = sections[debug].data
    sizes = {name: len(view.text(name)) // SIZE for name in view.kernels}
    out: dict[str, list[Location | None]] = {name: [None] * n for name, n in sizes.items()}
    start = 0
    while start < len(data):
        start = _unit(data, start, kernel_of_address_field, out)
    return out


def _relocated_kernels(view: Cubin, debug: int) -> dict[int, str]:
    """Offset in .debug_line of each relocated address -> the kernel whose text it points into."""
    text_kernel = {kernel.text: name for name, kernel in view.kernels.items()}
    symbols = view.symbols()
    out = {}
    for section in view.elf.sections:
        if section.type == SHT_RELA and section.info == debug:  # the relocations of .debug_line
            for at in range(0, len(section.data), _RELA.size):
                offset, info, _ = _RELA.unpack_from(section.data, at)
                shndx = symbols[info >> 32].shndx
                if shndx in text_kernel:
                    out[offset] = text_kernel[shndx]
    return out


def _unit(data: bytes, start: int, kernel_at: dict[int, str], out: dict[str, list]) -> int:
    """Run one line-program unit, filling `out`; returns where the next unit begins."""
    unit_length, version = struct.unpack_from("<IH", data, start)
    if unit_length >= 0xFFFFFFF0 or version not in (2, 3, 4):
        raise SassRewriteError(f"cubin: .debug_line unit at {start:#x}: DWARF version {version} is not read")
    end = start + 4 + unit_length
    header_length, = struct.unpack_from("<I", data, start + 6)
    i = start + 10
    min_length = data[i]
    i += 2 if version < 4 else 3  # (maximum operations per instruction since v4), default is_stmt
    line_base, line_range, opcode_base = struct.unpack_from("<bBB", data, i)
    lengths = data[i + 3:i + 3 + opcode_base - 1]
    directories, j = _cstrings(data, i + 3 + opcode_base - 1, 0)
    files, _ = _cstrings(data, j, 3)
    paths = [name if d == 0 or os.path.isabs(name) else os.path.join(directories[d - 1][0], name)
             for name, (d, _, _) in files]
    i = start + 10 + header_length

    rows: list[Location] = []  # every row of the unit, for the inlined-at numbers
    kernel, address, file, line, column, inlined = None, 0, 1, 1, 0, 0
    placed: list[tuple[int, Location]] = []  # (address, row) of the current kernel's sequence

    def emit():
        call_site = rows[inlined - 1] if 0 < inlined <= len(rows) else None
        if inlined and call_site is None:
            raise SassRewriteError(f"cubin: .debug_line row {len(rows) + 1} is inlined at row {inlined}, not yet seen")
        if not 0 < file <= len(paths):
            raise SassRewriteError(f"cubin: .debug_line names file {file}, its table has {len(paths)}")
        row = Location(paths[file - 1], line, column, call_site)
        rows.append(row)
        placed.append((address, row))

    while i < end:
        op = data[i]
        i += 1
        if op >= opcode_base:
            adjusted = op - opcode_base
            address += adjusted // line_range * min_length
            line += line_base + adjusted % line_range
            emit()
        elif op == 0:
            size, i = _uleb(data, i)
            sub = data[i] if size else None
            if sub == DW_LNE_END_SEQUENCE:
                _spread(kernel, placed, address, out)
                kernel, address, file, line, column, inlined, placed = None, 0, 1, 1, 0, 0, []
            elif sub == DW_LNE_SET_ADDRESS:
                address, = struct.unpack_from("<Q", data, i + 1)
                kernel = kernel_at.get(i + 1, kernel if kernel is not None else _only(out))
            elif sub == DW_LNE_NV_INLINED_AT:
                inlined, _ = _uleb(data, i + 1)
            i += size
        elif op == DW_LNS_COPY:
            emit()
        elif op == DW_LNS_ADVANCE_PC:
            step, i = _uleb(data, i)
            address += step * min_length
        elif op == DW_LNS_ADVANCE_LINE:
            step, i = _sleb(data, i)
            line += step
        elif op == DW_LNS_SET_FILE:
            file, i = _uleb(data, i)
        elif op == DW_LNS_SET_COLUMN:
            column, i = _uleb(data, i)
        elif op == DW_LNS_CONST_ADD_PC:
            address += (255 - opcode_base) // line_range * min_length
        elif op == DW_LNS_FIXED_ADVANCE_PC:
            address += struct.unpack_from("<H", data, i)[0]
            i += 2
        else:  # negate_stmt, basic_block and later standard opcodes: skip their operands
            for _ in range(lengths[op - 1]):
                _, i = _uleb(data, i)
    _spread(kernel, placed, address, out)
    return end


def _only(out: dict) -> str | None:
    """The kernel an unrelocated address means: the only one there is."""
    return next(iter(out)) if len(out) == 1 else None


def _spread(kernel: str | None, placed: list[tuple[int, Location]], end: int, out: dict[str, list]):
    """Give each instruction of the sequence the last row at or before its address."""
    if kernel is None or not placed:
        return
    table = out[kernel]
    for k, (address, row) in enumerate(placed):
        stop = placed[k + 1][0] if k + 1 < len(placed) else max(end, address + SIZE)
        for index in range(address // SIZE, min(-(-stop // SIZE), len(table))):
            table[index] = row
