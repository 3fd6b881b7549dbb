"""The registers an sm_90a instruction reads and writes, from its opcode and operand texts.

Registers are bits of one integer so that sets of them combine with `|`, `&` and `~`:
general registers R0-R254 are bits 0-254 (RZ, R255, is none), uniform registers UR0-UR62 bits
256-318 (URZ none), predicates P0-P6 bits 320-326 (PT none), uniform predicates UP0-UP6 bits
328-334 (UPT none). Reads are over-approximated where the form leaves doubt (a liveness built
on them errs on "live"); writes are those the instruction always makes when it executes. The
widths (register pairs, quads, MMA fragments, TMA coordinate runs) were read off NVIDIA's own
life ranges (`nvdisasm -plr`) on the corpus kernels and the census of what ptxas emits
(tests/sass_census.py). Each opcode belongs to one family of operand roles (`_FAMILIES`); an
opcode or width form not modelled here raises SassRewriteError rather than being guessed."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gwatch_nb.errors import SassRewriteError

GPR_BASE, UNIFORM_BASE, PREDICATE_BASE, UNIFORM_PREDICATE_BASE = 0, 256, 320, 328
GPR_COUNT, UNIFORM_COUNT, PREDICATE_COUNT = 255, 63, 7
GPRS = (1 << GPR_COUNT) - 1
UNIFORMS = ((1 << UNIFORM_COUNT) - 1) << UNIFORM_BASE
PREDICATES = ((1 << PREDICATE_COUNT) - 1) << PREDICATE_BASE
UNIFORM_PREDICATES = ((1 << PREDICATE_COUNT) - 1) << UNIFORM_PREDICATE_BASE
_CLASSES = (("UP", UNIFORM_PREDICATE_BASE, PREDICATE_COUNT), ("UR", UNIFORM_BASE, UNIFORM_COUNT),
            ("P", PREDICATE_BASE, PREDICATE_COUNT), ("R", GPR_BASE, GPR_COUNT))

# A register token inside an operand: R7, UR4, P2, UP0, RZ, URZ, PT, UPT, and the R2P/P2R "PR".
_TOKEN = re.compile(r"(?<![A-Za-z0-9_.])(UR|UP|R|P)(\d+|Z|T|R)\b(\.64)?")


def register_bit(name: str) -> int:
    """The bit of one register name ("R4", "UR5", "P0", "UP1"); 0 for RZ, URZ, PT, UPT."""
    for prefix, base, count in _CLASSES:
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            number = int(name[len(prefix):])
            if number >= count:
                raise ValueError(f"no register {name}")
            return 1 << (base + number)
    if name in ("RZ", "URZ", "PT", "UPT"):
        return 0
    raise ValueError(f"not a register name: {name!r}")


def register_names(mask: int) -> list[str]:
    """The register names of a mask, general registers first, then uniform, predicates,
    uniform predicates."""
    names = []
    for prefix, base, count in sorted(_CLASSES, key=lambda c: c[1]):
        bits = mask >> base & ((1 << count) - 1)
        while bits:
            low = bits & -bits
            names.append(f"{prefix}{low.bit_length() - 1}")
            bits ^= low
    return names


def _run(prefix: str, number: int, width: int) -> int:
    """Bits of `width` consecutive registers from prefix+number (nothing for the zero register)."""
    for name, base, count in _CLASSES:
        if name == prefix:
            if number >= count:
                return 0
            return ((1 << min(width, count - number)) - 1) << (base + number)
    raise AssertionError(prefix)


@dataclass(frozen=True)
class RegisterUse:
    reads: int    # registers it may read (the guard included)
    writes: int   # registers it writes when it executes

    @property
    def read_names(self) -> list[str]:
        return register_names(self.reads)

    @property
    def write_names(self) -> list[str]:
        return register_names(self.writes)


def _is_predicate(operand: str) -> bool:
    return re.fullmatch(r"!?U?P(\d|T)", operand) is not None


def _is_memory(operand: str) -> bool:
    return "[" in operand


@functools.lru_cache(maxsize=65536)
def _bits(operand: str, width: int = 1, address_width: int = 1) -> int:
    """Registers named in one operand. A plain register spans `width`; inside [...] a register
    spans `address_width` unless it says `.64`; a desc[URx] descriptor is a pair, a gdesc[URx]
    pair of descriptors four; "PR" (all predicates) is P0-P6."""
    mask = 0
    memory = _is_memory(operand)
    for match in _TOKEN.finditer(operand):
        prefix, number, wide = match.groups()
        if number == "R":
            if prefix == "P":
                mask |= PREDICATES
            elif prefix == "UP":
                mask |= UNIFORM_PREDICATES
            continue
        if number in ("Z", "T"):
            continue
        before = operand[:match.start()]
        if prefix in ("P", "UP"):
            span = 1
        elif before.endswith("gdesc["):
            span = 4
        elif before.endswith("desc["):
            span = 2
        elif wide:
            span = 2
        elif memory and before.rfind("[") > before.rfind("]"):
            span = address_width
        else:
            span = width
        mask |= _run(prefix, int(number), span)
    return mask


def _modifiers(opcode: str) -> list[str]:
    return opcode.split(".")[1:]


def _data_width(opcode: str) -> int:
    """Registers per data operand of a load, store or atomic: .64 (or a 64-bit type, as in
    `ATOMG.E.ADD.F64.RN`, `ATOMG.E.MAX.S64`) a pair, .128 a quad."""
    mods = set(_modifiers(opcode))
    return 4 if "128" in mods else 2 if mods & {"64", "F64", "S64", "U64"} else 1


class _Unmodelled(Exception):
    """A form of a known opcode whose registers this module does not model."""


def _leading_destinations(operands: tuple[str, ...]) -> int:
    """How many leading operands are destinations in the "P?, Rd, P?" pattern: predicates
    before the first register (LOP3's P0, SHFL's PT), that register, and predicates right
    after it (IADD3's and LEA's carry-outs)."""
    k = 0
    while k < len(operands) and _is_predicate(operands[k]):
        k += 1
    if k < len(operands) and not _is_memory(operands[k]) and _TOKEN.search(operands[k]):
        k += 1
        while k < len(operands) and _is_predicate(operands[k]):
            k += 1
    return k


def _use(operands, destinations: int, dst_width: int = 1, src_width: int = 1, address_width: int = 1,
         widths: dict[int, int] | None = None) -> tuple[int, int]:
    """(reads, writes) with the first `destinations` operands written and the rest read;
    `widths` overrides the width of single operands by position."""
    widths = widths or {}
    reads = writes = 0
    for k, operand in enumerate(operands):
        if k < destinations:
            writes |= _bits(operand, widths.get(k, dst_width))
        else:
            reads |= _bits(operand, widths.get(k, src_width), address_width)
    return reads, writes


def _plain(opcode, operands):
    if set(_modifiers(opcode)) & {"64", "128", "WIDE"}:
        raise _Unmodelled("wide form")
    return _use(operands, 1)


def _carry(opcode, operands):
    """Integer arithmetic that may write carry-out predicates; IMAD.WIDE writes a pair and adds
    a pair, IMAD.HI (the high word of a*b + c) adds a pair; (U)IADD3.64 (ptxas 12.8's 64-bit
    add) writes a pair and reads pairs."""
    mods = _modifiers(opcode)
    n = _leading_destinations(operands)
    if "64" in mods and opcode.split(".")[0] in ("IADD3", "UIADD3") and "128" not in mods:
        return _use(operands, n, dst_width=2, src_width=2)
    if set(mods) & {"64", "128"}:
        raise _Unmodelled("wide form")
    if "WIDE" in mods:
        return _use(operands, n, dst_width=2, widths={n + 2: 2})
    if "HI" in mods and opcode.split(".")[0] in ("IMAD", "UIMAD"):
        return _use(operands, n, widths={n + 2: 2})
    return _use(operands, n)


def _two_predicates(opcode, operands):
    """Compares and predicate logic: two predicate results, then sources (doubles: pairs)."""
    width = 2 if opcode.startswith("DSETP") else 1
    return _use(operands, 2, src_width=width)


def _double(opcode, operands):
    return _use(operands, 1, dst_width=2, src_width=2)


_INT_TYPES = {"U8", "S8", "U16", "S16", "U32", "S32", "U64", "S64"}
_FLOAT_TYPES = {"F16", "BF16", "F32", "F64", "TF32", "E4M3", "E5M2"}


def _convert(opcode, operands):
    """F2F / F2I / I2F / I2FP / I2I / FRND: 64-bit types use pairs. F2I's integer type is its
    result's, I2F's its source's; F2F and I2I name the result's type first."""
    base, mods = opcode.split(".")[0], _modifiers(opcode)
    ints = [m for m in mods if m in _INT_TYPES]
    floats = [m for m in mods if m in _FLOAT_TYPES]
    if base == "F2I":
        dst, src = (ints or ["S32"])[0], (floats or ["F32"])[0]
    elif base in ("I2F", "I2FP"):
        dst, src = (floats or ["F32"])[0], (ints or ["S32"])[0]
    else:
        types = [m for m in mods if m in _INT_TYPES | _FLOAT_TYPES] or ["32"]
        dst, src = types[0], types[-1]
    width = lambda t: 2 if t.endswith("64") else 1
    return _use(operands, 1, dst_width=width(dst), src_width=width(src))


def _cs2r(opcode, operands):
    return _use(operands, 1, dst_width=1 if "32" in _modifiers(opcode) else 2)


def _load(opcode, operands):
    """Global/local/shared/constant loads (and QSPC, whose result is the predicate "this
    generic address is in that space"): the data result spans the access width; global and
    generic addresses are 64-bit even when printed without `.64`."""
    address = 2 if opcode.split(".")[0] in _GLOBAL_ADDRESS else 1
    return _use(operands, _leading_destinations(operands), dst_width=_data_width(opcode), address_width=address)


def _store(opcode, operands):
    address = 2 if opcode.split(".")[0] in _GLOBAL_ADDRESS else 1
    return _use(operands, 0, src_width=_data_width(opcode), address_width=address)


def _atomic(opcode, operands):
    """Atomics: optional predicate and data results, address, data (CAS: two data operands)."""
    address = 2 if opcode.split(".")[0] in _GLOBAL_ADDRESS else 1
    width = _data_width(opcode)
    return _use(operands, _leading_destinations(operands), dst_width=width, src_width=width,
                address_width=address)


_GLOBAL_ADDRESS = {"LDG", "STG", "LD", "ST", "ATOMG", "ATOM", "RED", "REDG", "CCTL", "QSPC"}


def _matrix_count(opcode):
    """LDSM/STSM/MOVM: a trailing .2/.4 is the number of 8x8 matrices, one register each; none
    (`LDSM.16.M88`, `STSM.16.MT88`) is one."""
    counts = [m for m in _modifiers(opcode) if m in ("1", "2", "4")]
    if len(counts) > 1:
        raise _Unmodelled("matrix count")
    return int(counts[0]) if counts else 1


def _ldsm(opcode, operands):
    return _use(operands, 1, dst_width=_matrix_count(opcode))


def _stsm(opcode, operands):
    return _use(operands, 0, src_width=_matrix_count(opcode))


_ELEMENT_BITS = {"F16": 16, "BF16": 16, "TF32": 32, "F32": 32, "S8": 8, "U8": 8, "E4M3": 8, "E5M2": 8,
                 "S4": 4, "U4": 4, "S32": 32, "F64": 64}
# MMAs whose modifiers name only the input types: the accumulator is implied.
_IMPLIED_ACCUMULATOR = {"IGMMA": "S32", "IMMA": "S32", "DMMA": "F64"}
_WARP_SHAPES = {"16816": (16, 8, 16), "1688": (16, 8, 8), "884": (8, 8, 4), "16832": (16, 8, 32),
                "8816": (8, 8, 16), "8832": (8, 8, 32), "16864": (16, 8, 64)}


def _mma_shape_and_bits(opcode) -> tuple[tuple[int, int, int], int, int]:
    """((M, N, K), accumulator bits, input bits) of an MMA: the shape is `MxNxK` or the warp
    MMAs' packed digits; the types follow it, the accumulator's first unless implied
    (integer MMAs: S32, DMMA: F64); inputs default to F16 (DMMA: F64)."""
    base, mods = opcode.split(".")[0], _modifiers(opcode)
    spelled = re.fullmatch(r"(\d+)x(\d+)x(\d+)", mods[0]) if mods else None
    shape = tuple(map(int, spelled.groups())) if spelled else _WARP_SHAPES.get(mods[0] if mods else "")
    types = [m for m in mods[1:] if m in _ELEMENT_BITS]
    implied = _IMPLIED_ACCUMULATOR.get(base)
    if implied:
        types = [implied] + (types or [implied])
    if not shape or not types:
        raise _Unmodelled("shape or type")
    return shape, _ELEMENT_BITS[types[0]], _ELEMENT_BITS[types[1]] if len(types) > 1 else 16


def _warpgroup_mma(opcode, operands):
    """Warpgroup MMA `HGMMA/IGMMA/QGMMA.MxNxK.types D, A, gdesc[UR], C[, scale-d or gsb0]`: D
    and C are M*N/128 accumulators per thread (F16 accumulators pack two per register), A from
    registers M*K/128 elements packed in 32-bit registers, gdesc[URx] reads URx-URx+3."""
    (m, n, k), d_bits, a_bits = _mma_shape_and_bits(opcode)
    accumulator = m * n * d_bits // (128 * 32)
    a_in_registers = len(operands) > 1 and "gdesc" not in operands[1]
    c = 3 if a_in_registers else 2
    return _use(operands, 1, dst_width=accumulator, widths={1: m * k * a_bits // (128 * 32), c: accumulator})


def _warp_mma(opcode, operands):
    """Warp MMA `HMMA/IMMA/DMMA.shape.types D, A, B, C`: fragments of M*K, K*N and M*N
    elements over 32 threads in 32-bit registers."""
    (m, n, k), d_bits, in_bits = _mma_shape_and_bits(opcode)
    regs = lambda rows, cols, bits: max(1, rows * cols * bits // 1024)
    d = regs(m, n, d_bits)
    return _use(operands, 1, dst_width=d, widths={1: regs(m, k, in_bits), 2: regs(k, n, in_bits), 3: d})


def _tma(opcode, operands):
    """UTMALDG/UTMAPF/UTMASTG/UTMAREDG.nD [URa], [URd]: a load reads its shared address, its
    barrier and n coordinates from URa onwards (a store n+1, having no barrier); URd is the
    64-bit tensor-map address. Other TMA modes are not modelled."""
    base, mods = opcode.split(".")[0], _modifiers(opcode)
    dims = [int(m[0]) for m in mods if re.fullmatch(r"[1-5]D", m)]
    if len(dims) != 1 or set(mods) - {"1D", "2D", "3D", "4D", "5D", "MULTICAST", "ADD", "MIN", "MAX", "INC",
                                      "DEC", "AND", "OR", "XOR", "E"}:
        raise _Unmodelled("TMA mode")
    run = dims[0] + (1 if base in ("UTMASTG", "UTMAREDG") else 2)
    reads = 0
    for k, operand in enumerate(operands):
        reads |= _bits(operand, address_width=run if k == 0 else 2)
    return reads, 0


def _uniform_pair_address(opcode, operands):
    """UTMACCTL [URx] (a tensor map's address), UBLKCP/UBLKPF/UBLKRED [URd], [URs], URn (bulk
    copies): every address is read as a pair (a global one is 64-bit; nvdisasm has a shared
    one read with the register after it too)."""
    return _use(operands, 0, address_width=2)


def _writes_only(opcode, operands):
    """B2R.RESULT Rd[, Pd]: a barrier reduction's results, from no register."""
    return _use(operands, len(operands))


def _syncs(opcode, operands):
    """Shared-memory barrier operations: a predicate (TRYWAIT) or 64-bit state (ARRIVE, EXCH)
    result before the address; EXCH.64 writes a 64-bit value."""
    n = 0 if not operands or _is_memory(operands[0]) else 1
    width = 2 if ".64" in opcode or "TRANS64" in opcode else 1
    return _use(operands, n, dst_width=width, src_width=2 if ".EXCH.64" in opcode else 1)


def _all_but_last(opcode, operands):
    """VOTE Rd, Pd, Ps / VOTEU URd?, UPd, Ps: every operand but the source predicate is a result."""
    return _use(operands, len(operands) - 1)


def _first_two(opcode, operands):
    return _use(operands, 2)


def _p2r(opcode, operands):
    """P2R Rd, PR, Rs, mask: reads the predicates the mask names (all when it is not a
    constant) and Rs; writes Rd."""
    registers = [op for op in operands if op != "PR"]
    reads = _bits(registers[1]) if len(registers) > 1 else 0
    mask = _immediate(registers[-1])
    reads |= PREDICATES if mask is None else (mask & 0x7F) << PREDICATE_BASE
    return reads, _bits(registers[0])


def _r2p(opcode, operands):
    """R2P PR, Rs, mask: reads Rs (and a mask from a register). Its writes of the predicates
    the mask names are left out: nvdisasm's life ranges keep those predicates live across it
    (it does not follow PR), and a write left out only keeps a predicate live."""
    registers = [op for op in operands if op != "PR"]
    mask = _immediate(registers[-1])
    return _bits(registers[0]) | (0 if mask is not None else _bits(registers[-1])), 0


def _immediate(operand: str) -> int | None:
    try:
        return int(operand, 0)
    except ValueError:
        return None


def _reads_only(opcode, operands):
    return _use(operands, 0)


def _leading(opcode, operands):
    return _use(operands, _leading_destinations(operands))


def _reads_pair(opcode, operands):
    """RET R20: the 64-bit return address."""
    return _use(operands, 0, src_width=2)


def _call(opcode, operands):
    """CALL.REL enters a subroutine of the kernel's own text, which the control-flow graph
    follows (cfg.py): what the subroutine reads is live before the call through that edge. The
    call itself reads R0 and the stack pointer R1, as nvdisasm has every call read them. An
    absolute call (code outside the kernel) hands every register over: all are read."""
    if opcode.startswith("CALL.REL"):
        return _bits("R0") | _bits("R1"), 0
    return GPRS | UNIFORMS | PREDICATES | UNIFORM_PREDICATES, 0


_FAMILIES = {
    _plain: "FADD FMUL FFMA FMNMX FSEL FSET FSWZADD FCHK F2FP HADD2 HMUL2 HFMA2 HMNMX2 HSET2 VHMNMX PRMT SHF SGXT "
            "IABS MUFU MOV SEL VIADD VIMNMX VIMNMX3 VIADDMNMX IDP VABSDIFF4 I2IP POPC FLO BREV BMSK IMNMX S2R "
            "S2UR R2UR REDUX UMOV USEL USHF USGXT UPRMT UFLO UPOPC UBMSK UBREV BMOV",
    _carry: "IADD3 UIADD3 IMAD UIMAD LEA ULEA LOP3 ULOP3",
    _two_predicates: "ISETP FSETP DSETP HSETP2 UISETP PLOP3 UPLOP3",
    _double: "DADD DMUL DFMA DMNMX",
    _convert: "F2F F2I I2F I2FP I2I FRND",
    _cs2r: "CS2R",
    _load: "LDG LDS LDL LD LDC ULDC QSPC",
    _store: "STG STS STL ST CCTL",
    _atomic: "ATOMG ATOMS ATOM RED REDG",
    _ldsm: "LDSM MOVM",
    _stsm: "STSM",
    _warpgroup_mma: "HGMMA IGMMA QGMMA",
    _warp_mma: "HMMA IMMA DMMA",
    _tma: "UTMALDG UTMASTG UTMAPF UTMAREDG",
    _uniform_pair_address: "UTMACCTL UBLKCP UBLKPF UBLKRED",
    _writes_only: "B2R",
    _syncs: "SYNCS",
    _all_but_last: "VOTE VOTEU",
    _first_two: "ELECT",
    _leading: "SHFL MATCH USETMAXREG",
    _p2r: "P2R",
    _r2p: "R2P",
    _reads_only: "BRA BAR NOP EXIT DEPBAR WARPGROUP FENCE MEMBAR LDGDEPBAR UTMACMDFLUSH WARPSYNC BSSY BSYNC "
                 "BREAK BPT KILL YIELD NANOSLEEP ERRBAR CGAERRBAR ACQBULK PREEXIT LDGSTS",
    _reads_pair: "RET",
    _call: "CALL",
}
_HANDLERS = {name: family for family, names in _FAMILIES.items() for name in names.split()}
KNOWN_OPCODES = frozenset(_HANDLERS)


def guard_register(predicate: str | None) -> int:
    """The guard predicate's bit ("@!P1" -> P1); 0 for none or PT."""
    if not predicate:
        return 0
    return register_bit(predicate.lstrip("@!"))


def register_use(instruction, kernel: str = "?") -> RegisterUse:
    """The registers `instruction` (a sass.instruction.Instruction) reads and writes; raises
    SassRewriteError naming the kernel and the instruction for a form not modelled."""
    base = instruction.opcode.split(".")[0]
    handler = _HANDLERS.get(base)
    where = f"kernel {kernel}: instruction {instruction.index} ({instruction.opcode})"
    if handler is None:
        raise SassRewriteError(f"{where}: the registers of opcode {base} are not modelled")
    operands = tuple(instruction.operands)
    try:
        reads, writes = handler(instruction.opcode, operands)
    except _Unmodelled as reason:
        raise SassRewriteError(f"{where}: its {reason} is not modelled") from None
    except (ValueError, IndexError) as error:
        raise SassRewriteError(f"{where}: operands {', '.join(operands)} not understood ({error})") from None
    return RegisterUse(reads | guard_register(instruction.predicate), writes)
