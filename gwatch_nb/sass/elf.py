"""An exact reader and writer of the ELF64 little-endian files ptxas writes (cubins): the file
header, the section headers and their data, the program headers. `Elf.parse(data).to_bytes()`
gives back `data` byte for byte. Two edits: replacing a section's data (later sections move,
keeping their alignment, and segments follow the sections they hold) and removing a section
(every section index that names a later section is renumbered). This file knows ELF, not CUDA."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

from gwatch_nb.errors import SassRewriteError

HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
PROGRAM_HEADER = struct.Struct("<IIQQQQQQ")
SYMBOL = struct.Struct("<IBBHQQ")
MAGIC = b"\x7fELF"
ELFCLASS64, ELFDATA2LSB = 2, 1

SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 0, 2, 3, 4, 8, 9
SHF_INFO_LINK = 0x40
SHN_LORESERVE = 0xFF00
PT_PHDR = 6


@dataclass(frozen=True)
class Section:
    name: str
    name_offset: int  # into the section-name string table
    type: int
    flags: int
    addr: int
    offset: int
    size: int  # sh_size: for NOBITS the memory size, no file bytes
    link: int
    info: int
    align: int
    entsize: int
    data: bytes  # the file bytes (b"" for NOBITS)

    @property
    def file_size(self) -> int:
        return 0 if self.type == SHT_NOBITS else self.size

    @property
    def info_is_section(self) -> bool:
        """sh_info names a section (relocations' target, or flagged SHF_INFO_LINK)."""
        return self.type in (SHT_RELA, SHT_REL) or bool(self.flags & SHF_INFO_LINK)


@dataclass(frozen=True)
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int


@dataclass(frozen=True)
class Symbol:
    name: str
    name_offset: int
    info: int
    other: int
    shndx: int
    value: int
    size: int

    @property
    def kind(self) -> int:
        return self.info & 0xF

    def pack(self) -> bytes:
        return SYMBOL.pack(self.name_offset, self.info, self.other, self.shndx, self.value, self.size)


@dataclass(frozen=True)
class Elf:
    ident: bytes
    type: int
    machine: int
    version: int
    entry: int
    flags: int
    ehsize: int
    shstrndx: int
    sections: tuple[Section, ...]
    segments: tuple[Segment, ...]
    phoff: int
    shoff: int
    _blocks: tuple = field(default=(), repr=False, compare=False)  # segment anchors, see _segment_anchors

    @classmethod
    def parse(cls, data: bytes, what: str = "cubin") -> "Elf":
        """Read an ELF64 little-endian file; `what` names it in errors."""
        def fail(reason: str):
            raise SassRewriteError(f"{what}: {reason}")

        if len(data) < HEADER.size:
            fail(f"{len(data)} bytes is too short for an ELF header")
        (ident, etype, machine, version, entry, phoff, shoff, flags, ehsize, phentsize, phnum, shentsize,
         shnum, shstrndx) = HEADER.unpack_from(data)
        if ident[:4] != MAGIC:
            fail("not an ELF file (bad magic)")
        if ident[4] != ELFCLASS64 or ident[5] != ELFDATA2LSB:
            fail("not a 64-bit little-endian ELF")
        if shentsize != SECTION_HEADER.size or (phnum and phentsize != PROGRAM_HEADER.size):
            fail(f"unexpected header entry sizes (section {shentsize}, program {phentsize})")
        for name, offset, size in (("section header table", shoff, shnum * shentsize),
                                   ("program header table", phoff, phnum * phentsize)):
            if offset + size > len(data):
                fail(f"{name} at {offset:#x} ({size} bytes) runs past the end of the file ({len(data)} bytes)")
        if not 0 < shstrndx < shnum:
            fail(f"section name table index {shstrndx} is not a section (there are {shnum})")
        raw = [SECTION_HEADER.unpack_from(data, shoff + k * shentsize) for k in range(shnum)]
        names_header = raw[shstrndx]
        names = data[names_header[4]:names_header[4] + names_header[5]]
        sections = []
        for k, (name_offset, stype, sflags, addr, offset, size, link, info, align, entsize) in enumerate(raw):
            file_size = 0 if stype in (SHT_NOBITS, SHT_NULL) else size
            if offset + file_size > len(data):
                fail(f"section {k} at {offset:#x} ({size} bytes) runs past the end of the file ({len(data)} bytes)")
            if link >= shnum:
                fail(f"section {k} links to section {link}, but there are {shnum}")
            if name_offset >= max(len(names), 1) and stype != SHT_NULL:
                fail(f"section {k}'s name lies outside the section name table")
            end = names.find(b"\0", name_offset)
            name = names[name_offset:end if end >= 0 else len(names)].decode("latin-1")
            sections.append(Section(name, name_offset, stype, sflags, addr, offset, size, link, info, align, entsize,
                                    data[offset:offset + file_size]))
        segments = tuple(Segment(*PROGRAM_HEADER.unpack_from(data, phoff + k * phentsize)) for k in range(phnum))
        elf = cls(ident, etype, machine, version, entry, flags, ehsize, shstrndx, tuple(sections), segments, phoff, shoff)
        elf._check_layout(what)
        return replace(elf, _blocks=elf._segment_anchors(what))

    # --- layout ---------------------------------------------------------------------------------

    def _items(self) -> list[tuple[object, int, int, int]]:
        """Everything with a place in the file: (key, offset, file size, alignment), in file order.
        Keys: a section index, "shdrs", "phdrs"."""
        items = [(k, s.offset, s.file_size, max(s.align, 1)) for k, s in enumerate(self.sections) if k]
        items.append(("shdrs", self.shoff, len(self.sections) * SECTION_HEADER.size, 8))
        if self.segments:
            items.append(("phdrs", self.phoff, len(self.segments) * PROGRAM_HEADER.size, 8))
        # the original order decides ties: headers before the sections that start where they end
        return sorted(items, key=lambda item: (item[1], item[2] > 0, str(item[0])))

    def _check_layout(self, what: str):
        end = HEADER.size
        previous = "the ELF header"
        for key, offset, size, _ in self._items():
            if size == 0:
                continue
            label = self._label(key)
            if offset < end:
                raise SassRewriteError(f"{what}: {label} at {offset:#x} overlaps {previous}")
            end, previous = offset + size, label

    def _label(self, key) -> str:
        if key == "shdrs":
            return "the section header table"
        if key == "phdrs":
            return "the program header table"
        return f"section {key} ({self.sections[key].name})"

    def _segment_anchors(self, what: str) -> tuple:
        """For each segment, the items whose new places decide its new bounds: those starting where
        it starts, and those ending where its file part ends (or, where padding ends it, starting there)."""
        anchors = []
        items = self._items()
        for k, seg in enumerate(self.segments):
            starts = tuple(key for key, offset, size, _ in items if offset == seg.offset
                           and (key in ("phdrs", "shdrs") or self.sections[key].flags & 2 or size == 0))
            end = seg.offset + seg.filesz
            ends = tuple(("end", key) for key, offset, size, _ in items if size and offset + size == end
                         and offset >= seg.offset)
            ends = ends or tuple(("start", key) for key, offset, size, _ in items if offset == end and end > seg.offset)
            if not starts or (seg.filesz and not ends):
                raise SassRewriteError(f"{what}: segment {k} ({seg.offset:#x}, {seg.filesz} bytes) does not start "
                                       "and end at sections")
            anchors.append((starts, ends))
        return tuple(anchors)

    def _relaid(self, sections: list[Section], moved_from: int, what: str) -> "Elf":
        """This file with `sections` (same keys, some resized) laid out again: whatever starts at or
        after `moved_from` moves by the growth before it, rounded up to its alignment."""
        old_items = self._items()
        new = {}
        shift = 0
        for key, offset, size, align in old_items:
            if offset < moved_from:
                new[key] = offset
                continue
            target = offset + shift
            target += -target % align
            new[key] = target
            shift = target - offset
            if isinstance(key, int):
                shift += sections[key].file_size - size
        sections = [s if k == 0 else replace(s, offset=new[k]) for k, s in enumerate(sections)]
        sizes = {k: s.file_size for k, s in enumerate(sections)}
        sizes["shdrs"] = len(sections) * SECTION_HEADER.size
        sizes["phdrs"] = len(self.segments) * PROGRAM_HEADER.size
        segments = []
        for seg, (starts, ends) in zip(self.segments, self._blocks):
            start = min(new[key] for key in starts)
            filesz = max(new[key] + (sizes[key] if side == "end" else 0) for side, key in ends) - start \
                if seg.filesz else 0
            segments.append(replace(seg, offset=start, filesz=filesz, memsz=seg.memsz + filesz - seg.filesz))
        return replace(self, sections=tuple(sections), segments=tuple(segments), shoff=new["shdrs"],
                       phoff=new.get("phdrs", self.phoff))

    # --- edits ----------------------------------------------------------------------------------

    def index(self, name: str) -> int:
        for k, section in enumerate(self.sections):
            if section.name == name:
                return k
        raise KeyError(name)

    def with_section_data(self, index: int, data: bytes, what: str = "cubin") -> "Elf":
        """This file with section `index` holding `data` (its size follows); later sections move."""
        old = self.sections[index]
        if old.type == SHT_NOBITS:
            raise SassRewriteError(f"{what}: section {old.name} has no file data to replace")
        sections = list(self.sections)
        sections[index] = replace(old, data=bytes(data), size=len(data))
        if len(data) == old.size:
            return replace(self, sections=tuple(sections))
        return self._relaid(sections, old.offset, what)

    def with_section(self, index: int, what: str = "cubin", **fields) -> "Elf":
        """This file with header fields of section `index` changed (never its data or offset)."""
        if {"data", "offset", "size"} & set(fields) and self.sections[index].type != SHT_NOBITS:
            raise SassRewriteError(f"{what}: use with_section_data to change a section's contents")
        sections = list(self.sections)
        sections[index] = replace(sections[index], **fields)
        return replace(self, sections=tuple(sections))

    def without_section(self, index: int, what: str = "cubin") -> "Elf":
        """This file without section `index`: every later section index (in sh_link, a section-naming
        sh_info, the symbols' st_shndx, e_shstrndx) is renumbered, later sections move down.
        Refused while a section, a symbol or a segment names it."""
        gone = self.sections[index]
        if index == 0 or index == self.shstrndx:
            raise SassRewriteError(f"{what}: section {index} ({gone.name}) cannot be removed")
        for k, s in enumerate(self.sections):
            if k != index and (s.link == index or (s.info_is_section and s.info == index)):
                raise SassRewriteError(f"{what}: cannot remove {gone.name}: section {s.name} names it")
            if s.type == SHT_SYMTAB and any(sym.shndx == index for sym in self.symbols(k)):
                raise SassRewriteError(f"{what}: cannot remove {gone.name}: a symbol is defined in it")
        if any(index in starts + tuple(key for _, key in ends) for starts, ends in self._blocks):
            raise SassRewriteError(f"{what}: cannot remove {gone.name}: a segment is bounded by it")

        def renumber(key):
            return key - 1 if isinstance(key, int) and key > index else key
        # lay the file out with the section emptied, then leave it out
        emptied = list(self.sections)
        emptied[index] = replace(gone, data=b"", size=0)
        relaid = self._relaid(emptied, gone.offset, what)
        sections = []
        for k, s in enumerate(relaid.sections):
            if k == index:
                continue
            s = replace(s, link=renumber(s.link), info=renumber(s.info) if s.info_is_section else s.info)
            if s.type == SHT_SYMTAB:
                symbols = [sym if sym.shndx >= SHN_LORESERVE else replace(sym, shndx=renumber(sym.shndx))
                           for sym in _unpack_symbols(relaid.sections[k], relaid)]
                s = replace(s, data=pack_symbols(symbols))
            sections.append(s)
        blocks = tuple((tuple(map(renumber, starts)), tuple((side, renumber(key)) for side, key in ends))
                       for starts, ends in self._blocks)
        return replace(relaid, sections=tuple(sections), shstrndx=renumber(self.shstrndx), _blocks=blocks)

    # --- symbols --------------------------------------------------------------------------------

    def symbols(self, symtab: int) -> list[Symbol]:
        return _unpack_symbols(self.sections[symtab], self)

    # --- writing --------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        size = max([HEADER.size] + [offset + size for _, offset, size, _ in self._items()])
        out = bytearray(size)
        phnum = len(self.segments)
        HEADER.pack_into(out, 0, self.ident, self.type, self.machine, self.version, self.entry,
                         self.phoff, self.shoff, self.flags, self.ehsize, PROGRAM_HEADER.size if phnum else 0, phnum,
                         SECTION_HEADER.size, len(self.sections), self.shstrndx)
        for k, s in enumerate(self.sections):
            SECTION_HEADER.pack_into(out, self.shoff + k * SECTION_HEADER.size, s.name_offset, s.type, s.flags,
                                     s.addr, s.offset, s.size, s.link, s.info, s.align, s.entsize)
            out[s.offset:s.offset + len(s.data)] = s.data
        for k, p in enumerate(self.segments):
            PROGRAM_HEADER.pack_into(out, self.phoff + k * PROGRAM_HEADER.size, p.type, p.flags, p.offset, p.vaddr,
                                     p.paddr, p.filesz, p.memsz, p.align)
        return bytes(out)


def _unpack_symbols(symtab: Section, elf: Elf) -> list[Symbol]:
    strings = elf.sections[symtab.link].data
    symbols = []
    for offset in range(0, len(symtab.data) - SYMBOL.size + 1, SYMBOL.size):
        name_offset, info, other, shndx, value, size = SYMBOL.unpack_from(symtab.data, offset)
        end = strings.find(b"\0", name_offset)
        symbols.append(Symbol(strings[name_offset:end if end >= 0 else len(strings)].decode("latin-1"), name_offset,
                              info, other, shndx, value, size))
    return symbols


def pack_symbols(symbols: list[Symbol]) -> bytes:
    return b"".join(sym.pack() for sym in symbols)
