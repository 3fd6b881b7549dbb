"""The CUDA view of an sm_90 cubin: its kernels (`.text.<name>` and the function symbol), their
`.nv.info.<name>` attributes, the module-wide `.nv.info` records, the parameter constant bank
(`.nv.constant0.<name>`), relocations and symbols; and the three edits the SASS tier makes:
a kernel's text replaced (`with_text`), its register count raised (`with_registers`), a
parameter appended (`with_parameter`). Every edit returns new cubin bytes; nothing is changed
in place, and a cubin this module cannot edit exactly is refused with a `SassRewriteError`."""
from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import Callable

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.elf import SHT_REL, SHT_RELA, SHT_SYMTAB, Elf, Section, Symbol, pack_symbols

EM_CUDA = 190
ACCEPTED_SM = 90
PARAM_BASE = 0x210  # sm_90 kernels read their parameters from c[0x0][0x210] on
INSTRUCTION_BYTES = 16
STT_SECTION, STT_FUNC = 3, 2
RELA = struct.Struct("<QQq")
REL = struct.Struct("<QQ")

# .nv.info record formats: a format byte, an attribute byte, then a 2-byte value (NVAL, BVAL,
# HVAL) or a 2-byte length and that many bytes (SVAL).
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
FORMATS = {EIFMT_NVAL: "EIFMT_NVAL", EIFMT_BVAL: "EIFMT_BVAL", EIFMT_HVAL: "EIFMT_HVAL", EIFMT_SVAL: "EIFMT_SVAL"}

# Attribute ids as cuobjdump 13.4 names them (learnt by writing each id into a cubin and reading
# `cuobjdump -elf`; tests/test_sass_cubin.py checks this table the same way).
EIATTR = dict(enumerate((
    "ERROR", "PAD", "IMAGE_SLOT", "JUMPTABLE_RELOCS", "CTAIDZ_USED", "MAX_THREADS", "IMAGE_OFFSET", "IMAGE_SIZE",
    "TEXTURE_NORMALIZED", "SAMPLER_INIT", "PARAM_CBANK", "SMEM_PARAM_OFFSETS", "CBANK_PARAM_OFFSETS", "SYNC_STACK",
    "TEXID_SAMPID_MAP", "EXTERNS", "REQNTID", "FRAME_SIZE", "MIN_STACK_SIZE", "SAMPLER_FORCE_UNNORMALIZED",
    "BINDLESS_IMAGE_OFFSETS", "BINDLESS_TEXTURE_BANK", "BINDLESS_SURFACE_BANK", "KPARAM_INFO", "SMEM_PARAM_SIZE",
    "CBANK_PARAM_SIZE", "QUERY_NUMATTRIB", "MAXREG_COUNT", "EXIT_INSTR_OFFSETS", "S2RCTAID_INSTR_OFFSETS",
    "CRS_STACK_SIZE", "NEED_CNP_WRAPPER", "NEED_CNP_PATCH", "EXPLICIT_CACHING", "ISTYPEP_USED", "MAX_STACK_SIZE",
    "SUQ_USED", "LD_CACHEMOD_INSTR_OFFSETS", "LOAD_CACHE_REQUEST", "ATOM_SYS_INSTR_OFFSETS",
    "COOP_GROUP_INSTR_OFFSETS", "COOP_GROUP_MASK_REGIDS", "SW1850030_WAR", "WMMA_USED", "HAS_PRE_V10_OBJECT",
    "ATOMF16_EMUL_INSTR_OFFSETS", "ATOM16_EMUL_INSTR_REG_MAP", "REGCOUNT", "SW2393858_WAR",
    "INT_WARP_WIDE_INSTR_OFFSETS", "SHARED_SCRATCH", "STATISTICS", "INDIRECT_BRANCH_TARGETS", "SW2861232_WAR",
    "SW_WAR", "CUDA_API_VERSION", "NUM_MBARRIERS", "MBARRIER_INSTR_OFFSETS", "COROUTINE_RESUME_ID_OFFSETS",
    "SAM_REGION_STACK_SIZE", "PER_REG_TARGET_PERF_STATS", "CTA_PER_CLUSTER", "EXPLICIT_CLUSTER",
    "MAX_CLUSTER_RANK", "INSTR_REG_MAP", "RESERVED_SMEM_USED", "RESERVED_SMEM_0_SIZE", "UCODE_SECTION_DATA",
    "UNUSED_LOAD_BYTE_OFFSET", "KPARAM_INFO_V2", "SYSCALL_OFFSETS", "SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
    "GRAPHICS_GLOBAL_CBANK", "SHADER_TYPE", "VRC_CTA_INIT_COUNT", "TOOLS_PATCH_FUNC", "NUM_BARRIERS",
    "TEXMODE_INDEPENDENT", "PERF_STATISTICS", "AT_ENTRY_FRAGMENTS", "SPARSE_MMA_MASK", "TCGEN05_1CTA_USED",
    "TCGEN05_2CTA_USED", "GEN_ERRBAR_AT_EXIT", "REG_RECONFIG", "ANNOTATIONS", None, "STACK_CANARY_TRAP_OFFSETS",
    "STUB_FUNCTION_KIND", "LOCAL_CTA_ASYNC_STORE_OFFSETS", "MERCURY_FINALIZER_OPTIONS", "BLOCKS_ARE_CLUSTERS",
    "SANITIZE", "SYSCALLS_FALLBACK", "CUDA_REQ", "MERCURY_ISA_VERSION", None, "RTCORE_ENTRY")))
EIATTR = {k: f"EIATTR_{name}" for k, name in EIATTR.items() if name}
ID = {name: k for k, name in EIATTR.items()}

# Attributes that hold instruction offsets, and where: (entry bytes, offset field's position).
# Those seen in corpus kernels were checked against the instructions nvdisasm prints there.
OFFSET_FIELDS = {ID[f"EIATTR_{name}"]: (4, 0) for name in (
    "EXIT_INSTR_OFFSETS", "S2RCTAID_INSTR_OFFSETS", "LD_CACHEMOD_INSTR_OFFSETS", "ATOM_SYS_INSTR_OFFSETS",
    "COOP_GROUP_INSTR_OFFSETS", "ATOMF16_EMUL_INSTR_OFFSETS", "INT_WARP_WIDE_INSTR_OFFSETS", "SYSCALL_OFFSETS",
    "SW_WAR_MEMBAR_SYS_INSTR_OFFSETS", "STACK_CANARY_TRAP_OFFSETS", "LOCAL_CTA_ASYNC_STORE_OFFSETS")}
OFFSET_FIELDS[ID["EIATTR_MBARRIER_INSTR_OFFSETS"]] = (16, 0)  # offset, then the barrier's kind and address
OFFSET_FIELDS[ID["EIATTR_ANNOTATIONS"]] = (8, 4)  # (kind, offset) pairs
# (offset, value) pairs seen in the census kernels (tests/sass_census.py): an emulated 16-bit
# atomic's LDG and ATOMG.CAS with a register map; a 128-bit LDS with a byte mask (0xfff).
OFFSET_FIELDS[ID["EIATTR_ATOM16_EMUL_INSTR_REG_MAP"]] = (8, 0)
OFFSET_FIELDS[ID["EIATTR_UNUSED_LOAD_BYTE_OFFSET"]] = (8, 0)
ANNOTATION_SPILL_REFILL = 1  # the only annotation kind seen; others are refused
# Attributes that hold or may hold code addresses in a layout no corpus kernel shows: refused on rewrite.
UNMAPPABLE = {ID[f"EIATTR_{name}"] for name in (
    "JUMPTABLE_RELOCS", "INDIRECT_BRANCH_TARGETS", "COROUTINE_RESUME_ID_OFFSETS",
    "INSTR_REG_MAP", "TOOLS_PATCH_FUNC", "AT_ENTRY_FRAGMENTS", "SYSCALLS_FALLBACK",
    "UCODE_SECTION_DATA", "PER_REG_TARGET_PERF_STATS")}
# Ids cuobjdump does not name, seen in every corpus kernel, whose value is no offset.
UNNAMED_KEPT = {0x66: "4 bytes, 3 in every corpus kernel whatever its size"}

DEBUG_PREFIXES = (".debug_", ".nv_debug_line_sass")  # sections that hold SASS addresses


@dataclass(frozen=True)
class Attribute:
    format: int
    id: int
    payload: bytes  # 2 bytes for NVAL/BVAL/HVAL, the value bytes for SVAL

    @property
    def name(self) -> str:
        return EIATTR.get(self.id, f"EIATTR_{self.id:#x}")

    @property
    def value(self) -> int:
        """The integer value of a fixed-size record (NVAL, BVAL, HVAL)."""
        return int.from_bytes(self.payload, "little")

    def words(self) -> tuple[int, ...]:
        return struct.unpack(f"<{len(self.payload) // 4}I", self.payload[:len(self.payload) // 4 * 4])

    def offsets(self) -> list[int]:
        """The instruction offsets an offset-holding attribute names, in order."""
        stride, field = OFFSET_FIELDS[self.id]
        return [struct.unpack_from("<I", self.payload, at + field)[0] for at in range(0, len(self.payload), stride)]

    def pack(self) -> bytes:
        if self.format == EIFMT_SVAL:
            return bytes((self.format, self.id)) + struct.pack("<H", len(self.payload)) + self.payload
        return bytes((self.format, self.id)) + self.payload


def parse_attributes(data: bytes, what: str) -> tuple[Attribute, ...]:
    records, i = [], 0
    while i < len(data):
        if i + 4 > len(data):
            raise SassRewriteError(f"{what}: attribute record at byte {i} is cut short")
        fmt, attr = data[i], data[i + 1]
        if fmt not in FORMATS:
            raise SassRewriteError(f"{what}: attribute record at byte {i} has unknown format {fmt:#x}")
        if fmt == EIFMT_SVAL:
            size = struct.unpack_from("<H", data, i + 2)[0]
            if i + 4 + size > len(data):
                raise SassRewriteError(f"{what}: attribute {EIATTR.get(attr, hex(attr))} at byte {i} runs past "
                                       "the section's end")
            records.append(Attribute(fmt, attr, data[i + 4:i + 4 + size]))
            i += 4 + size
        else:
            records.append(Attribute(fmt, attr, data[i + 2:i + 4]))
            i += 4
    return tuple(records)


def pack_attributes(records) -> bytes:
    return b"".join(r.pack() for r in records)


@dataclass(frozen=True)
class Kernel:
    name: str
    text: int      # index of .text.<name>
    symbol: int    # index of the function symbol in .symtab
    info: int | None       # index of .nv.info.<name>
    constant0: int | None  # index of .nv.constant0.<name>
    shared: int | None     # index of .nv.shared.<name>
    relocations: tuple[int, ...]  # REL/RELA sections that patch the text


@dataclass(frozen=True)
class Relocation:
    section: int  # the REL/RELA section it is in
    offset: int
    symbol: int
    type: int
    addend: int | None  # None for REL


@dataclass(frozen=True)
class Cubin:
    elf: Elf
    kernels: dict  # name -> Kernel
    symtab: int

    @classmethod
    def parse(cls, data: bytes) -> "Cubin":
        """Read an sm_90 cubin; anything else, or a malformed file, is one SassRewriteError."""
        elf = Elf.parse(bytes(data), "cubin")
        if elf.machine != EM_CUDA:
            raise SassRewriteError(f"cubin: ELF machine {elf.machine} is not NVIDIA CUDA ({EM_CUDA})")
        sm = architecture(elf)
        if sm != ACCEPTED_SM:
            raise SassRewriteError(f"cubin: built for sm_{sm}, the SASS tier reads only sm_90/sm_90a")
        symtabs = [k for k, s in enumerate(elf.sections) if s.type == SHT_SYMTAB]
        if len(symtabs) != 1:
            raise SassRewriteError(f"cubin: {len(symtabs)} symbol tables, expected 1")
        symtab = symtabs[0]
        symbols = elf.symbols(symtab)
        kernels = {}
        for k, section in enumerate(elf.sections):
            if not section.name.startswith(".text."):
                continue
            name = section.name[len(".text."):]
            what = f"kernel {name}"
            if section.size % INSTRUCTION_BYTES:
                raise SassRewriteError(f"{what}: text of {section.size} bytes is not whole 16-byte instructions")
            matches = [i for i, sym in enumerate(symbols)
                       if sym.name == name and sym.kind == STT_FUNC and sym.shndx == k]
            if len(matches) != 1:
                raise SassRewriteError(f"{what}: {len(matches)} function symbols for its text, expected 1")
            if (section.info & 0xFFFFFF) != matches[0]:
                raise SassRewriteError(f"{what}: its text names symbol {section.info & 0xFFFFFF}, "
                                       f"not its function symbol {matches[0]}")

            def named(prefix: str) -> int | None:
                return next((i for i, s in enumerate(elf.sections) if s.name == prefix + name), None)
            relocations = tuple(i for i, s in enumerate(elf.sections) if s.type in (SHT_REL, SHT_RELA) and s.info == k)
            kernels[name] = Kernel(name, k, matches[0], named(".nv.info."), named(".nv.constant0."),
                                   named(".nv.shared."), relocations)
            if kernels[name].info is not None:
                parse_attributes(elf.sections[kernels[name].info].data, what)
        if not kernels:
            raise SassRewriteError("cubin: no kernel (.text.<name> section) in it")
        info = cls._global_info_index(elf)
        if info is not None:
            parse_attributes(elf.sections[info].data, "cubin .nv.info")
        return cls(elf, kernels, symtab)

    # --- reading --------------------------------------------------------------------------------

    def kernel(self, name: str) -> Kernel:
        try:
            return self.kernels[name]
        except KeyError:
            raise SassRewriteError(f"kernel {name}: not in this cubin (it holds {', '.join(self.kernels)})") from None

    def text(self, name: str) -> bytes:
        return self.elf.sections[self.kernel(name).text].data

    def attributes(self, name: str) -> tuple[Attribute, ...]:
        """The kernel's .nv.info.<name> records, in order."""
        kernel = self.kernel(name)
        if kernel.info is None:
            return ()
        return parse_attributes(self.elf.sections[kernel.info].data, f"kernel {name}")

    def module_attributes(self) -> tuple[Attribute, ...]:
        """The module-wide .nv.info records (REGCOUNT, FRAME_SIZE, ... of every function)."""
        index = self._global_info_index(self.elf)
        return () if index is None else parse_attributes(self.elf.sections[index].data, "cubin .nv.info")

    def function_values(self, name: str) -> dict[str, int]:
        """The module-wide records about this kernel: attribute name -> value (REGCOUNT, FRAME_SIZE, ...)."""
        symbol = self.kernel(name).symbol
        return {r.name: r.words()[1] for r in self.module_attributes()
                if r.format == EIFMT_SVAL and len(r.payload) == 8 and r.words()[0] == symbol}

    def registers(self, name: str) -> int:
        """The kernel's register count (EIATTR_REGCOUNT; older cubins also keep it in the top byte
        of the text section's sh_info, and then the two must agree)."""
        values = self.function_values(name)
        if "EIATTR_REGCOUNT" not in values:
            raise SassRewriteError(f"kernel {name}: no EIATTR_REGCOUNT record")
        count = values["EIATTR_REGCOUNT"]
        in_info = self.elf.sections[self.kernel(name).text].info >> 24
        if in_info and in_info != count:
            raise SassRewriteError(f"kernel {name}: register count {count} in .nv.info but {in_info} in its "
                                   "text header")
        return count

    def symbols(self) -> list[Symbol]:
        return self.elf.symbols(self.symtab)

    def relocations(self, name: str) -> list[Relocation]:
        out = []
        for index in self.kernel(name).relocations:
            section = self.elf.sections[index]
            entry = RELA if section.type == SHT_RELA else REL
            for at in range(0, len(section.data) - entry.size + 1, entry.size):
                fields = entry.unpack_from(section.data, at)
                out.append(Relocation(index, fields[0], fields[1] >> 32, fields[1] & 0xFFFFFFFF,
                                      fields[2] if section.type == SHT_RELA else None))
        return out

    def parameter_bytes(self, name: str) -> int:
        """Bytes of kernel parameters (EIATTR_CBANK_PARAM_SIZE)."""
        sizes = [r.value for r in self.attributes(name) if r.id == ID["EIATTR_CBANK_PARAM_SIZE"]]
        if len(sizes) != 1:
            raise SassRewriteError(f"kernel {name}: {len(sizes)} EIATTR_CBANK_PARAM_SIZE records, expected 1")
        return sizes[0]

    @staticmethod
    def _global_info_index(elf: Elf) -> int | None:
        return next((k for k, s in enumerate(elf.sections) if s.name == ".nv.info"), None)

    # --- edits ----------------------------------------------------------------------------------

    def with_text(self, name: str, new_text: bytes, new_offset: Callable[[int], int]) -> bytes:
        """The cubin with kernel `name`'s code replaced by `new_text`. `new_offset(old)` maps the byte
        offset of an original instruction to where that instruction is in `new_text` (monotonic).
        Mapped through it: the function symbol's size and any symbol inside the text (subroutines), relocation
        offsets, and every attribute holding instruction offsets. Attributes that might hold code
        addresses in an unknown layout are refused. Debug sections that hold SASS addresses
        (`.debug_line`, `.debug_frame`, `.nv_debug_line_sass`, ...) would be stale: a changed
        text leaves them empty and drops their relocations (`.nv_debug_ptx_txt`, which holds
        none, is kept), so line information is lost in the rewritten cubin."""
        kernel = self.kernel(name)
        what = f"kernel {name}"
        old_text = self.text(name)
        if len(new_text) % INSTRUCTION_BYTES:
            raise SassRewriteError(f"{what}: new text of {len(new_text)} bytes is not whole 16-byte instructions")
        offsets = [new_offset(old) for old in range(0, len(old_text), INSTRUCTION_BYTES)]
        for old, new in enumerate(offsets):
            if new % INSTRUCTION_BYTES or not 0 <= new < len(new_text) or (old and new <= offsets[old - 1]):
                raise SassRewriteError(f"{what}: new_offset maps instruction {old} to {new:#x}, not a later "
                                       f"instruction of the new text ({len(new_text)} bytes)")
        if bytes(new_text) == old_text and all(new == 16 * old for old, new in enumerate(offsets)):
            return self.elf.to_bytes()

        def mapped(offset: int, field: str) -> int:
            if offset % INSTRUCTION_BYTES or not 0 <= offset < len(old_text):
                raise SassRewriteError(f"{what}: {field} names offset {offset:#x}, not an instruction of its text")
            return offsets[offset // INSTRUCTION_BYTES]

        elf = self.elf.with_section_data(kernel.text, bytes(new_text), what)
        if kernel.info is not None:
            records = tuple(_mapped_attribute(r, mapped, what) for r in self.attributes(name))
            elf = elf.with_section_data(kernel.info, pack_attributes(records), what)
        def mapped_end(end: int) -> int:
            return len(new_text) if end == len(old_text) else mapped(end, "a symbol's end")
        symbols = []
        for k, sym in enumerate(self.symbols()):
            if k == kernel.symbol:  # the entry: still the whole text, from its first (maybe inserted) word
                if sym.value != 0 or sym.size != len(old_text):
                    raise SassRewriteError(f"{what}: its symbol does not span its text")
                sym = replace(sym, size=len(new_text))
            elif sym.shndx == kernel.text and sym.kind != STT_SECTION:
                start = mapped(sym.value, f"symbol {sym.name}")
                sym = replace(sym, value=start, size=mapped_end(sym.value + sym.size) - start if sym.size else 0)
            symbols.append(sym)
        elf = elf.with_section_data(self.symtab, pack_symbols(symbols), what)
        for index in kernel.relocations:
            elf = elf.with_section_data(index, _mapped_relocations(elf.sections[index], mapped, what), what)
        self._check_no_code_references(kernel, what)
        return _without_debug(elf, what).to_bytes()

    def _check_no_code_references(self, kernel: Kernel, what: str):
        """Relocations elsewhere that point into this text at an offset would need mapping: refuse them."""
        inside = {k for k, sym in enumerate(self.symbols()) if sym.shndx == kernel.text}
        for k, section in enumerate(self.elf.sections):
            if section.type not in (SHT_REL, SHT_RELA) or k in kernel.relocations:
                continue
            if _is_debug(self.elf.sections[section.info].name):
                continue
            entry = RELA if section.type == SHT_RELA else REL
            for at in range(0, len(section.data) - entry.size + 1, entry.size):
                fields = entry.unpack_from(section.data, at)
                if fields[1] >> 32 in inside and section.type == SHT_RELA and fields[2]:
                    raise SassRewriteError(f"{what}: {section.name} points {fields[2]:#x} bytes into its code")

    def register_limit(self, name: str) -> int:
        """The most registers kernel `name` may declare: its EIATTR_MAXREG_COUNT (maxnreg, or
        what its launch bounds leave), else 255."""
        limits = [r.value for r in self.attributes(name) if r.id == ID["EIATTR_MAXREG_COUNT"]]
        return min(limits + [255])

    def with_registers(self, name: str, count: int) -> bytes:
        """The cubin with kernel `name` declaring `count` registers (EIATTR_REGCOUNT, and the text
        header where older cubins keep it). More registers can lower occupancy: the caller asked."""
        kernel = self.kernel(name)
        what = f"kernel {name}"
        current = self.registers(name)
        limit = self.register_limit(name)
        if any(r.id == ID["EIATTR_REG_RECONFIG"] for r in self.attributes(name)):
            raise SassRewriteError(f"{what}: it sets its warps' register counts itself (setmaxnreg); "
                                   "its register count cannot change")
        if not current <= count <= limit:
            raise SassRewriteError(f"{what}: {count} registers is outside {current} (what it uses) .. {limit} "
                                   "(its limit)")
        info = self._global_info_index(self.elf)
        records = []
        for r in self.module_attributes():
            if r.id == ID["EIATTR_REGCOUNT"] and r.words()[0] == kernel.symbol:
                r = replace(r, payload=struct.pack("<II", kernel.symbol, count))
            records.append(r)
        elf = self.elf.with_section_data(info, pack_attributes(records), what)
        text = elf.sections[kernel.text]
        if text.info >> 24:
            elf = elf.with_section(kernel.text, what, info=(text.info & 0xFFFFFF) | count << 24)
        return elf.to_bytes()

    def with_parameter(self, name: str, size: int = 8, align: int = 8) -> tuple[bytes, int]:
        """The cubin with one more parameter of `size` bytes (aligned to `align`) after kernel `name`'s
        own, and the constant-bank address the kernel finds it at (c[0x0][address]). The records
        follow what ptxas writes for a PTX kernel declaring one more `.param .u64` (or .u32)."""
        kernel = self.kernel(name)
        what = f"kernel {name}"
        if size not in (4, 8) or align not in (4, 8) or align < size:
            raise SassRewriteError(f"{what}: a parameter of {size} bytes aligned to {align} is not supported "
                                   "(4 or 8 bytes, naturally aligned)")
        if kernel.constant0 is None:
            raise SassRewriteError(f"{what}: no .nv.constant0.{name} parameter bank")
        records = self.attributes(name)
        old_size = self.parameter_bytes(name)
        offset = old_size + (-old_size % align)
        new_size = offset + size
        params = [r for r in records if r.id == ID["EIATTR_KPARAM_INFO"]]
        ordinal = len(params)
        if any(len(r.payload) != 12 for r in params):
            raise SassRewriteError(f"{what}: an EIATTR_KPARAM_INFO record is not 12 bytes")
        if ordinal and sorted(struct.unpack_from("<H", r.payload, 4)[0] for r in params) != list(range(ordinal)):
            raise SassRewriteError(f"{what}: its EIATTR_KPARAM_INFO ordinals are not 0..{ordinal - 1}")
        # index 0, ordinal, offset; then size in bits 18+, the constant bank (0x1f) in bits 12-16
        new_param = Attribute(EIFMT_SVAL, ID["EIATTR_KPARAM_INFO"],
                              struct.pack("<IHHI", 0, ordinal, offset, size << 18 | 0x1F << 12))
        out, placed = [], False
        for r in records:
            if r.id == ID["EIATTR_KPARAM_INFO"] and not placed:
                out.append(new_param)  # ptxas lists parameters last to first
                placed = True
            if r.id == ID["EIATTR_CBANK_PARAM_SIZE"]:
                r = replace(r, payload=struct.pack("<H", new_size))
            elif r.id == ID["EIATTR_PARAM_CBANK"]:
                symbol, packed = r.words()
                if packed & 0xFFFF != PARAM_BASE or packed >> 16 != old_size:
                    raise SassRewriteError(f"{what}: EIATTR_PARAM_CBANK says {packed >> 16:#x} bytes at "
                                           f"{packed & 0xFFFF:#x}, not {old_size:#x} at {PARAM_BASE:#x}")
                r = replace(r, payload=struct.pack("<II", symbol, new_size << 16 | PARAM_BASE))
            out.append(r)
        if not placed:
            out.insert(0, new_param)
        elf = self.elf.with_section_data(kernel.info, pack_attributes(out), what)
        bank = elf.sections[kernel.constant0]
        if bank.size != PARAM_BASE + old_size:
            raise SassRewriteError(f"{what}: its parameter bank is {bank.size:#x} bytes, not "
                                   f"{PARAM_BASE:#x} + {old_size:#x}")
        elf = elf.with_section_data(kernel.constant0, bank.data + bytes(PARAM_BASE + new_size - bank.size), what)
        return elf.to_bytes(), PARAM_BASE + offset


def architecture(elf: Elf) -> int:
    """The SM version an ELF from ptxas was built for: ABI 7 keeps it in e_flags' low byte, ABI 8
    (ptxas 13) in its second byte."""
    abi = elf.ident[8]
    if abi == 7:
        return elf.flags & 0xFF
    if abi == 8:
        return elf.flags >> 8 & 0xFF
    raise SassRewriteError(f"cubin: unknown CUDA ELF ABI version {abi}")


def _mapped_attribute(record: Attribute, mapped, what: str) -> Attribute:
    if record.id in UNMAPPABLE:
        raise SassRewriteError(f"{what}: attribute {record.name} may hold code addresses in a layout this "
                               "rewriter does not know")
    if record.id not in EIATTR and record.format == EIFMT_SVAL and record.id not in UNNAMED_KEPT:
        raise SassRewriteError(f"{what}: unknown attribute {record.id:#x} ({len(record.payload)} bytes) might "
                               "hold instruction offsets")
    if record.id not in OFFSET_FIELDS:
        return record
    stride, field = OFFSET_FIELDS[record.id]
    if len(record.payload) % stride:
        raise SassRewriteError(f"{what}: attribute {record.name} of {len(record.payload)} bytes is not "
                               f"{stride}-byte entries")
    payload = bytearray(record.payload)
    for at in range(0, len(payload), stride):
        if record.id == ID["EIATTR_ANNOTATIONS"]:
            kind = struct.unpack_from("<I", payload, at)[0]
            if kind != ANNOTATION_SPILL_REFILL:
                raise SassRewriteError(f"{what}: annotation kind {kind} is not known")
        old = struct.unpack_from("<I", payload, at + field)[0]
        struct.pack_into("<I", payload, at + field, mapped(old, record.name))
    return replace(record, payload=bytes(payload))


def _mapped_relocations(section: Section, mapped, what: str) -> bytes:
    entry = RELA if section.type == SHT_RELA else REL
    data = bytearray(section.data)
    for at in range(0, len(data) - entry.size + 1, entry.size):
        offset = struct.unpack_from("<Q", data, at)[0]
        within = offset % INSTRUCTION_BYTES
        struct.pack_into("<Q", data, at, mapped(offset - within, section.name) + within)
    return bytes(data)


def _is_debug(name: str) -> bool:
    return name.startswith(DEBUG_PREFIXES)


def _without_debug(elf: Elf, what: str) -> Elf:
    """Debug sections emptied (their section symbols still name them) and their relocations removed."""
    for k in range(len(elf.sections) - 1, 0, -1):
        section = elf.sections[k]
        if section.type in (SHT_REL, SHT_RELA) and _is_debug(elf.sections[section.info].name):
            elf = elf.without_section(k, what)
    for k, section in enumerate(elf.sections):
        if _is_debug(section.name) and section.size:
            elf = elf.with_section_data(k, b"", what)
    return elf
