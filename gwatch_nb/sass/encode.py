"""The sm_90a encodings of the instructions the SASS tier's probes insert: clock and special
register reads, pointer arithmetic and shifts, a bound compare, guarded global stores, moves,
constant loads and NOP. Each function returns the instruction's two 64-bit words and the
text nvdisasm prints for them (tests/test_sass_encode.py holds the two to nvdisasm), which is
how rewrite.py reads what an inserted instruction does without running nvdisasm again.

Bit n below is bit n of the 128-bit instruction (low word = bits 0-63, high word = 64-127),
learnt from ptxas's output (Triton's ptxas, -arch=sm_90a) and by flipping bits under
`nvdisasm -b SM90a`. Fields every instruction shares:

    0-11    opcode; for ALU operations bits 9-11 say which operand slot holds a register (1),
            a 32-bit immediate (4), or a uniform register (6); see the forms below
    12-14   guard predicate (7 = PT: always), 15 guard negated
    16-23   destination register (uniform destinations: 16-21)
    24-31   first source register (a)
    32-39   second source register (b); 32-63 when b is a 32-bit immediate; 32-37 for a uniform b
    64-71   third source register (c)
    91      set when a source is a uniform register
    105-127 scheduling control (gwatch_nb/sass/control.py)

Every function takes the scheduling control as ``control``. Its default, ``Control()``, has a
stall of 0, which ptxas gives, USETMAXREG aside, only to the padding after EXIT (14,448
instructions of the corpus kernels): an inserted instruction that runs needs the stall, the
scoreboards and the waits its place in the schedule asks for.

Registers are `Reg(0..254)` and `RZ`, uniform registers `UReg(0..62)` and `URZ`, predicates
`Pred(0..6)` and `PT`, uniform predicates `UPred(0..6)` and `UPT` (the guards of S2UR, UMOV and
ULDC), each possibly negated; immediates are plain ints."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Union

from .control import Control

WORD = (1 << 64) - 1


class EncodingError(ValueError):
    """An operand does not fit the instruction's field (register out of range, odd register pair,
    immediate too wide, misaligned offset). rewrite.py reports it with the kernel's name."""


@dataclass(frozen=True)
class Reg:
    index: int  # R0..R254; 255 is RZ

    def __post_init__(self):
        if not 0 <= self.index <= 255:
            raise EncodingError(f"register R{self.index} out of range (R0..R254, RZ)")

    def __str__(self):
        return "RZ" if self.index == 255 else f"R{self.index}"


@dataclass(frozen=True)
class UReg:
    index: int  # UR0..UR62; 63 is URZ

    def __post_init__(self):
        if not 0 <= self.index <= 63:
            raise EncodingError(f"uniform register UR{self.index} out of range (UR0..UR62, URZ)")

    def __str__(self):
        return "URZ" if self.index == 63 else f"UR{self.index}"


@dataclass(frozen=True)
class Pred:
    index: int  # P0..P6; 7 is PT
    negated: bool = False

    def __post_init__(self):
        if not 0 <= self.index <= 7:
            raise EncodingError(f"predicate P{self.index} out of range (P0..P6, PT)")

    def __str__(self):
        return ("!" if self.negated else "") + ("PT" if self.index == 7 else f"P{self.index}")


@dataclass(frozen=True)
class UPred:
    index: int  # UP0..UP6; 7 is UPT
    negated: bool = False

    def __post_init__(self):
        if not 0 <= self.index <= 7:
            raise EncodingError(f"uniform predicate UP{self.index} out of range (UP0..UP6, UPT)")

    def __str__(self):
        return ("!" if self.negated else "") + ("UPT" if self.index == 7 else f"UP{self.index}")


RZ, URZ, PT, UPT = Reg(255), UReg(63), Pred(7), UPred(7)
NOT_PT = Pred(7, negated=True)
Source = Union[Reg, UReg, int]


class Words(NamedTuple):
    low: int
    high: int
    # nvdisasm's listing of the instruction ("@!P0 STG.E.EF.64 [RZ.U32+UR4+0x10], R6"); None
    # under operand reuse flags, which it would print as ".reuse" suffixes this text leaves out.
    text: str | None = None

    @property
    def raw(self) -> bytes:
        """The 16 bytes as they lie in a cubin's .text."""
        return self.low.to_bytes(8, "little") + self.high.to_bytes(8, "little")


# Special registers by nvdisasm's name (the value of bits 72-79 in S2R, S2UR and CS2R).
# On sm_90 ptxas reads PTX's %smid as SR_VIRTUALSMID and %warpid as SR_VIRTID.
SPECIAL_REGISTERS = {
    "SR_LANEID": 0x00, "SR_VIRTID": 0x03,
    "SR_TID.X": 0x21, "SR_TID.Y": 0x22, "SR_TID.Z": 0x23,
    "SR_CTAID.X": 0x25, "SR_CTAID.Y": 0x26, "SR_CTAID.Z": 0x27,
    "SR_VIRTUALSMID": 0x43,
    "SR_CLOCKLO": 0x50, "SR_CLOCKHI": 0x51, "SR_GLOBALTIMERLO": 0x52, "SR_GLOBALTIMERHI": 0x53,
}
CLOCK_REGISTERS = ("SR_CLOCKLO", "SR_CLOCKHI", "SR_GLOBALTIMERLO", "SR_GLOBALTIMERHI")

# Operand forms (opcode bits 9-11) of the ALU operations.
FORM_REG = 1        # b (and c) registers
FORM_IMM_C = 2      # IMAD: c is the 32-bit immediate (bits 32-63), b moves to bits 64-71
FORM_IMM = 4        # b is the 32-bit immediate
FORM_UREG = 6       # b is a uniform register
FORM_UREG_C = 7     # IMAD: c is the uniform register (bits 32-37), b moves to bits 64-71

# ISETP's comparison (bits 76-78) and the boolean op combining with its predicate source (74-75).
COMPARISONS = {"F": 0, "LT": 1, "EQ": 2, "LE": 3, "GT": 4, "NE": 5, "GE": 6, "T": 7}
BOOLEAN_OPS = {"AND": 0, "OR": 1, "XOR": 2}
# STG's cache eviction hint (bits 84-86); "" is ptxas's default for st.global.
EVICTIONS = {"EF": 0, "": 1, "EL": 2, "LU": 3, "EU": 4, "NA": 5}
# Memory access width in bits (bits 73-75 of STG, LDC, ULDC).
ACCESS_SIZES = {32: 4, 64: 5, 128: 6}


def _field(value: int, lo: int, width: int) -> int:
    """``value`` placed at bit ``lo``; the callers have range-checked it."""
    assert 0 <= value < (1 << width), (value, lo, width)
    return value << lo


def _words(bits: int, guard: Pred | UPred | None, control: Control, text: str, uniform: bool = False) -> Words:
    """The two words of ``bits`` under ``guard`` (a uniform predicate for uniform-datapath
    instructions) with the control field ``control``; ``text`` is the listing of the unguarded
    instruction."""
    kind = UPred if uniform else Pred
    guard = kind(7) if guard is None else guard
    if not isinstance(guard, kind):
        raise EncodingError(f"guard must be a {'uniform ' if uniform else ''}predicate "
                            f"{'UP0..UP6/UPT' if uniform else 'P0..P6/PT'}, not {guard!r}")
    if not isinstance(control, Control):
        raise EncodingError(f"control must be a Control, not {control!r}")
    bits |= _field(guard.index, 12, 3) | _field(int(guard.negated), 15, 1)
    shown = "" if guard.index == 7 and not guard.negated else f"@{guard} "  # nvdisasm omits an always-true guard
    return Words(bits & WORD, control.on_high(bits >> 64), None if control.reuse else shown + text)


def _signed_text(value: int) -> str:
    """A 32-bit immediate as IADD3, IMAD, ISETP and their uniform forms print it: signed."""
    value &= 0xFFFFFFFF
    return f"{value - (1 << 32):#x}" if value >> 31 else f"{value:#x}"


def _source_text(source: Source, signed: bool = True) -> str:
    """A register or a 32-bit immediate operand as printed (MOV, UMOV and VIADD print theirs unsigned)."""
    if isinstance(source, (Reg, UReg)):
        return str(source)
    return _signed_text(source) if signed else f"{source & 0xFFFFFFFF:#x}"


def _offset_text(offset: int) -> str:
    """The byte offset after a base in an address: nothing for 0, "+-0x8" below it."""
    return f"+{offset:#x}" if offset else ""


def _reg(what: str, reg: Reg, count: int = 1) -> int:
    """The index of a register (or the first of ``count`` consecutive ones, aligned to
    ``count``; RZ stands for all of them) after checking the constraints of its slot."""
    if not isinstance(reg, Reg):
        raise EncodingError(f"{what} must be a register R0..R254/RZ, not {reg!r}")
    if reg == RZ:
        return reg.index
    if reg.index % count:
        raise EncodingError(f"{what} {reg} must be a multiple of {count} ({32 * count}-bit register group)")
    if reg.index + count - 1 > 254:
        raise EncodingError(f"{what} {reg} leaves no room for {count} registers below RZ")
    return reg.index


def _ureg(what: str, reg: UReg, count: int = 1) -> int:
    if not isinstance(reg, UReg):
        raise EncodingError(f"{what} must be a uniform register UR0..UR62/URZ, not {reg!r}")
    if reg != URZ and (reg.index % count or reg.index + count - 1 > 62):
        raise EncodingError(f"{what} {reg} must be a multiple of {count} below URZ ({32 * count}-bit group)")
    return reg.index


def _pred(what: str, pred: Pred | None, default: Pred) -> Pred:
    pred = default if pred is None else pred
    if not isinstance(pred, Pred):
        raise EncodingError(f"{what} must be a predicate P0..P6/PT, not {pred!r}")
    return pred


def _pred_bits(pred: Pred, lo: int, negation_bit: int | None = None) -> int:
    bits = _field(pred.index, lo, 3)
    if negation_bit is not None:
        bits |= _field(int(pred.negated), negation_bit, 1)
    elif pred.negated:
        raise EncodingError(f"predicate {pred} cannot be negated here")
    return bits


def _imm32(what: str, value: int) -> int:
    if not isinstance(value, int) or not -(1 << 31) <= value < (1 << 32):
        raise EncodingError(f"{what} {value!r} does not fit in 32 bits")
    return value & 0xFFFFFFFF


def _signed(what: str, value: int, width: int, align: int = 1) -> int:
    if not isinstance(value, int) or not -(1 << (width - 1)) <= value < (1 << (width - 1)):
        raise EncodingError(f"{what} {value!r} does not fit in {width} signed bits")
    if value % align:
        raise EncodingError(f"{what} {value:#x} is not a multiple of {align} bytes")
    return value & ((1 << width) - 1)


def _special(sr: str, allowed=None) -> int:
    if sr not in SPECIAL_REGISTERS or (allowed is not None and sr not in allowed):
        names = ", ".join(allowed or SPECIAL_REGISTERS)
        raise EncodingError(f"unknown special register {sr!r} (known: {names})")
    return SPECIAL_REGISTERS[sr]


def _b_operand(what: str, b: Source) -> tuple[int, int]:
    """(form, bits) of an ALU operation's second source: a register at 32-39, a 32-bit
    immediate at 32-63, or a uniform register at 32-37 with bit 91 set."""
    if isinstance(b, Reg):
        return FORM_REG, _field(b.index, 32, 8)
    if isinstance(b, UReg):
        return FORM_UREG, _field(b.index, 32, 6) | _field(1, 91, 1)
    return FORM_IMM, _field(_imm32(what, b), 32, 32)


# CS2R: 0x805; Rd 16-23; special register 72-79; bit 80 set = 64-bit (Rd, Rd+1), clear = .32.
def cs2r(rd: Reg, sr: str = "SR_CLOCKLO", *, wide: bool = True, guard: Pred | None = None,
         control: Control = Control()) -> Words:
    """``CS2R Rd, SR`` (64 bits into Rd, Rd+1; Rd even) or ``CS2R.32 Rd, SR`` of a clock."""
    rd_index = _reg("CS2R destination", rd, 2 if wide else 1)
    return _words(0x805 | _field(rd_index, 16, 8) | _field(_special(sr, CLOCK_REGISTERS), 72, 8)
                  | _field(int(wide), 80, 1), guard, control, f"CS2R{'' if wide else '.32'} {rd}, {sr}")


# S2R: 0x919; Rd 16-23; special register 72-79.
def s2r(rd: Reg, sr: str, *, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``S2R Rd, SR``: a special register (SM id, thread, lane, CTA, warp) into a register;
    its result is ready only when its write scoreboard is released."""
    return _words(0x919 | _field(_reg("S2R destination", rd), 16, 8) | _field(_special(sr), 72, 8), guard, control,
                  f"S2R {rd}, {sr}")


# S2UR: 0x9c3; URd 16-21; special register 72-79.
def s2ur(urd: UReg, sr: str, *, guard: UPred | None = None, control: Control = Control()) -> Words:
    """``S2UR URd, SR``: a warp-uniform special register into a uniform register."""
    return _words(0x9C3 | _field(_ureg("S2UR destination", urd), 16, 6) | _field(_special(sr), 72, 8),
                  guard, control, f"S2UR {urd}, {sr}", uniform=True)


# IADD3 (0x010 | form << 9): Rd 16-23, Ra 24-31, b (register/immediate/uniform) 32+, Rc 64-71;
# bit 74 .X; carry-outs 81-83 and 84-86 (7 = none); carry-ins (.X) 87-89 with negation 90,
# and 77-79 with negation 80 (unused carry-ins read !PT).
def iadd3(rd: Reg, ra: Reg, b: Source, rc: Reg = RZ, *, carry_out: Pred | None = None,
          second_carry_out: Pred | None = None, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``IADD3 Rd, [Pcarry, [Pcarry2,]] Ra, b, Rc``: the low half of a 64-bit pointer plus a 32-bit
    offset (``carry_out`` catches the carry for IADD3.X / IMAD.X; a three-way sum can carry
    twice), or any 32-bit sum."""
    return _iadd3(rd, ra, b, rc, (carry_out, second_carry_out), None, guard, control)


def iadd3_x(rd: Reg, ra: Reg, b: Source, rc: Reg, carry_in: Pred, second_carry_in: Pred = NOT_PT, *,
            guard: Pred | None = None, control: Control = Control()) -> Words:
    """``IADD3.X Rd, Ra, b, Rc, Pcarry, Pcarry2``: the high half of a 64-bit sum, adding the
    carries of the low half (the second one, !PT when unused, of a three-way sum)."""
    return _iadd3(rd, ra, b, rc, (None, None), _pred("IADD3.X carry-in", carry_in, PT),
                  guard, control, _pred("IADD3.X second carry-in", second_carry_in, NOT_PT))


def _iadd3(rd, ra, b, rc, carry_outs, carry_in, guard, control, second_carry_in=NOT_PT) -> Words:
    form, b_bits = _b_operand("IADD3 immediate", b)
    first, second = (_pred("IADD3 carry-out", p, PT) for p in carry_outs)
    bits = (0x010 | form << 9 | _field(_reg("IADD3 destination", rd), 16, 8) | _field(_reg("IADD3 a", ra), 24, 8)
            | b_bits | _field(_reg("IADD3 c", rc), 64, 8) | _pred_bits(first, 81) | _pred_bits(second, 84)
            | _pred_bits(second_carry_in, 77, 80))
    if carry_in is None:
        bits |= _pred_bits(NOT_PT, 87, 90)
        carries = [str(p) for p in (first, second) if p != PT]  # only the carry-outs in use are printed
        text = f"IADD3 {', '.join([str(rd), *carries, str(ra), _source_text(b), str(rc)])}"
    else:
        bits |= _field(1, 74, 1) | _pred_bits(carry_in, 87, 90)
        text = f"IADD3.X {rd}, {ra}, {_source_text(b)}, {rc}, {carry_in}, {second_carry_in}"
    return _words(bits, guard, control, text)


# VIADD (0x036 | form << 9): Rd 16-23, Ra 24-31, b at 32+ (what ptxas emits for add.u32 of a
# constant or a uniform value).
def viadd(rd: Reg, ra: Reg, b: Source, *, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``VIADD Rd, Ra, b``: Rd = Ra + b."""
    form, b_bits = _b_operand("VIADD immediate", b)
    return _words(0x036 | form << 9 | _field(_reg("VIADD destination", rd), 16, 8) | _field(_reg("VIADD a", ra), 24, 8)
                  | b_bits, guard, control, f"VIADD {rd}, {ra}, {_source_text(b, signed=False)}")


# IMAD (0x024 | form << 9), IMAD.WIDE (0x025 | form << 9): Rd 16-23, Ra 24-31; b and c by form:
# (reg, reg) b 32-39 c 64-71; (imm, reg) b 32-63 c 64-71; (reg, imm) c 32-63 b 64-71;
# (ureg, reg) b 32-37 c 64-71; (reg, ureg) c 32-37 b 64-71; bit 91 with a uniform source.
# Bit 73 signed (clear = .U32), 74 .X, 75 negates c; carry-out 81-83 (7 = none);
# carry-in 87-89 with negation 90 (unused: !PT).
def imad(rd: Reg, ra: Reg, b: Source, c: Source, *, wide: bool = False, signed: bool = False,
         carry_in: Pred | None = None, carry_out: Pred | None = None, guard: Pred | None = None,
         control: Control = Control()) -> Words:
    """``IMAD[.WIDE][.U32][.X] Rd, [Pcarry,] Ra, b, c[, Pcarry]``: Rd = Ra * b + c; with ``wide``
    the 64-bit product plus the pair (c, c+1) goes to (Rd, Rd+1); at most one of b and c is an
    immediate or a uniform register."""
    group = 2 if wide else 1
    if isinstance(b, Reg) and not isinstance(c, Reg):
        if isinstance(c, UReg):
            form, bc = FORM_UREG_C, _field(c.index, 32, 6) | _field(1, 91, 1)
        else:
            form, bc = FORM_IMM_C, _field(_imm32("IMAD immediate", c), 32, 32)
        bc |= _field(b.index, 64, 8)
    elif isinstance(c, Reg):
        form, bc = _b_operand("IMAD immediate", b)
        bc |= _field(_reg("IMAD c", c, group), 64, 8)
    else:
        raise EncodingError(f"IMAD takes at most one immediate or uniform source, not b={b!r}, c={c!r}")
    bits = ((0x025 if wide else 0x024) | form << 9 | _field(_reg("IMAD destination", rd, group), 16, 8)
            | _field(_reg("IMAD a", ra), 24, 8) | bc | _field(int(signed), 73, 1)
            | _pred_bits(_pred("IMAD carry-out", carry_out, PT), 81))
    if carry_in is None:
        bits |= _pred_bits(NOT_PT, 87, 90)
    else:
        bits |= _field(1, 74, 1) | _pred_bits(_pred("IMAD carry-in", carry_in, PT), 87, 90)
    return _words(bits, guard, control, _imad_text(rd, ra, b, c, wide, signed, carry_in, carry_out))


def _imad_text(rd, ra, b, c, wide, signed, carry_in, carry_out) -> str:
    """nvdisasm names a product with a zero factor, no carry-in and no uniform addend a move
    (IMAD.MOV), and prints a carry-out only on the wide form."""
    move = not wide and carry_in is None and RZ in (ra, b) and not isinstance(c, UReg)
    name = "IMAD" + (".WIDE" if wide else "") + (".MOV" if move else "") + ("" if signed else ".U32") \
        + (".X" if carry_in is not None else "")
    carries = [str(carry_out)] if wide and carry_out not in (None, PT) else []
    operands = [str(rd), *carries, str(ra), _source_text(b), _source_text(c)]
    if carry_in is not None:
        operands.append(str(carry_in))
    return f"{name} {', '.join(operands)}"


def imad_wide_u32(rd: Reg, ra: Reg, b: Source, rc: Reg, *, carry_out: Pred | None = None,
                  guard: Pred | None = None, control: Control = Control()) -> Words:
    """``IMAD.WIDE.U32 Rd, Ra, b, Rc``: (Rd, Rd+1) = Ra * b + (Rc, Rc+1), the 64-bit pointer plus a
    scaled 32-bit index that ptxas makes of mul.wide.u32 + add.s64."""
    return imad(rd, ra, b, rc, wide=True, carry_out=carry_out, guard=guard, control=control)


def imad_x(rd: Reg, ra: Reg, b: Source, c: Source, carry_in: Pred, *, guard: Pred | None = None,
           control: Control = Control()) -> Words:
    """``IMAD.X Rd, Ra, b, c, Pcarry``: the high half of a 64-bit pointer plus a 32-bit offset, as
    ptxas writes it (``IMAD.X Rd, RZ, RZ, Rhi, P``) after an IADD3 with a carry-out."""
    return imad(rd, ra, b, c, signed=True, carry_in=carry_in, guard=guard, control=control)


def imad_mov_u32(rd: Reg, src: Source, *, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``IMAD.MOV.U32 Rd, RZ, RZ, src`` (nvdisasm prints ``IMAD.U32`` for a uniform src): a move
    ptxas issues on the multiply-add pipe."""
    return imad(rd, RZ, RZ, src, guard=guard, control=control)


# LEA (0x011 | form << 9): Rd 16-23, Ra 24-31, b 32+, Rc (high part of a .HI) 64-71; bit 74 .X,
# shift 75-79, bit 80 .HI; carry-out 81-83 (7 = none); carry-in 87-89 with negation 90 (unused: !PT).
def lea(rd: Reg, ra: Reg, b: Union[Reg, UReg], shift: int, *, carry_out: Pred | None = None,
        guard: Pred | None = None, control: Control = Control()) -> Words:
    """``LEA Rd, [Pcarry,] Ra, b, shift``: Rd = (Ra << shift) + b, the low half of a pointer plus a
    scaled index."""
    return _lea(rd, ra, b, RZ, shift, False, _pred("LEA carry-out", carry_out, PT), None, guard, control)


def lea_hi_x(rd: Reg, ra: Reg, b: Union[Reg, UReg], rc: Reg, shift: int, carry_in: Pred, *,
             guard: Pred | None = None, control: Control = Control()) -> Words:
    """``LEA.HI.X Rd, Ra, b, Rc, shift, Pcarry``: the high half: Rd = ((Rc:Ra) << shift) >> 32 + b + carry."""
    return _lea(rd, ra, b, rc, shift, True, PT, _pred("LEA.HI.X carry-in", carry_in, PT), guard, control)


def _lea(rd, ra, b, rc, shift, high, carry_out, carry_in, guard, control) -> Words:
    if not isinstance(b, (Reg, UReg)):
        raise EncodingError(f"LEA b must be a register or a uniform register, not {b!r}")
    if not isinstance(shift, int) or not 0 <= shift < 32:
        raise EncodingError(f"LEA shift {shift!r} out of range (0..31)")
    form, b_bits = _b_operand("LEA b", b)
    bits = (0x011 | form << 9 | _field(_reg("LEA destination", rd), 16, 8) | _field(_reg("LEA a", ra), 24, 8)
            | b_bits | _field(_reg("LEA c", rc), 64, 8) | _field(shift, 75, 5) | _field(int(high), 80, 1)
            | _pred_bits(carry_out, 81))
    if carry_in is None:
        bits |= _pred_bits(NOT_PT, 87, 90)
        carries = [str(carry_out)] if carry_out != PT else []
        text = f"LEA {', '.join([str(rd), *carries, str(ra), str(b), f'{shift:#x}'])}"
    else:
        bits |= _field(1, 74, 1) | _pred_bits(carry_in, 87, 90)
        text = f"LEA.HI.X {rd}, {ra}, {b}, {rc}, {shift:#x}, {carry_in}"
    return _words(bits, guard, control, text)


# SHF (0x019 | form << 9): Rd 16-23, low source Ra 24-31, shift b at 32+ (register or immediate),
# high source Rc 64-71; operand type 73-74, bit 75 .W (shift count wraps), 76 right, 80 .HI.
SHIFT_TYPES = {"S64": 0, "U64": 1, "S32": 2, "U32": 3}


def shf(rd: Reg, ra: Reg, shift: Union[Reg, int], rc: Reg, *, right: bool = True, kind: str = "U32",
        high: bool = False, wrap: bool = False, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``SHF.{L|R}[.W].<kind>[.HI] Rd, Ra, shift, Rc``: the funnel shift of the pair (Rc:Ra);
    ``SHF.R.U32.HI Rd, RZ, 0x5, Ra`` is ptxas's Ra >> 5 (a warp index from a thread id)."""
    if kind not in SHIFT_TYPES:
        raise EncodingError(f"unknown SHF type {kind!r} (known: {', '.join(SHIFT_TYPES)})")
    if isinstance(shift, UReg) or (isinstance(shift, int) and not 0 <= shift < 64):
        raise EncodingError(f"SHF shift {shift!r} must be a register or 0..63")
    form, shift_bits = _b_operand("SHF shift", shift)
    return _words(0x019 | form << 9 | _field(_reg("SHF destination", rd), 16, 8) | _field(_reg("SHF a", ra), 24, 8)
                  | shift_bits | _field(_reg("SHF c", rc), 64, 8) | _field(SHIFT_TYPES[kind], 73, 2)
                  | _field(int(wrap), 75, 1) | _field(int(right), 76, 1) | _field(int(high), 80, 1), guard, control,
                  f"SHF.{'R' if right else 'L'}{'.W' if wrap else ''}.{kind}{'.HI' if high else ''} "
                  f"{rd}, {ra}, {shift if isinstance(shift, Reg) else f'{shift:#x}'}, {rc}")


# ISETP (0x00c | form << 9): Ra 24-31, b 32+; bit 72 .EX, 73 signed (clear = .U32), boolean op
# 74-75, comparison 76-78; Pd 81-83, second destination 84-86 (PT), predicate source 87-89
# with negation 90; bits 68-70 hold PT (the .EX predicate source, unused here).
def isetp(pd: Pred, cmp: str, ra: Reg, b: Source, *, unsigned: bool = True, op: str = "AND",
          combine: Pred = PT, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``ISETP.<cmp>[.U32].<op> Pd, PT, Ra, b, combine``: Pd = (Ra cmp b) op combine, the bound
    test that guards a record store."""
    if cmp not in COMPARISONS:
        raise EncodingError(f"unknown ISETP comparison {cmp!r} (known: {', '.join(COMPARISONS)})")
    if op not in BOOLEAN_OPS:
        raise EncodingError(f"unknown ISETP boolean op {op!r} (known: {', '.join(BOOLEAN_OPS)})")
    pd = _pred("ISETP destination", pd, PT)
    if pd.negated:
        raise EncodingError(f"ISETP destination {pd} cannot be negated")
    form, b_bits = _b_operand("ISETP immediate", b)
    bits = (0x00C | form << 9 | _field(_reg("ISETP a", ra), 24, 8) | b_bits | _pred_bits(PT, 68)
            | _field(int(not unsigned), 73, 1) | _field(BOOLEAN_OPS[op], 74, 2) | _field(COMPARISONS[cmp], 76, 3)
            | _pred_bits(pd, 81) | _pred_bits(PT, 84) | _pred_bits(_pred("ISETP source", combine, PT), 87, 90))
    return _words(bits, guard, control, f"ISETP.{cmp}{'.U32' if unsigned else ''}.{op} {pd}, PT, {ra}, "
                                        f"{_source_text(b)}, {_pred('ISETP source', combine, PT)}")


def uisetp(upd: UPred, cmp: str, ura: UReg, b: Union[UReg, int], *, unsigned: bool = True, op: str = "AND",
           combine: UPred = UPT, guard: UPred | None = None, control: Control = Control()) -> Words:
    """``UISETP.<cmp>[.U32].<op> UPd, UPT, URa, b, combine``: ISETP on the uniform datapath
    (opcode 0x08c, bit 91 set), whose result guards uniform instructions."""
    if cmp not in COMPARISONS:
        raise EncodingError(f"unknown UISETP comparison {cmp!r} (known: {', '.join(COMPARISONS)})")
    if op not in BOOLEAN_OPS:
        raise EncodingError(f"unknown UISETP boolean op {op!r} (known: {', '.join(BOOLEAN_OPS)})")
    for what, pred in (("UISETP destination", upd), ("UISETP source", combine)):
        if not isinstance(pred, UPred):
            raise EncodingError(f"{what} must be a uniform predicate UP0..UP6/UPT, not {pred!r}")
    if upd.negated:
        raise EncodingError(f"UISETP destination {upd} cannot be negated")
    if isinstance(b, Reg):
        raise EncodingError(f"UISETP b must be a uniform register or an immediate, not {b}")
    form, b_bits = (FORM_REG, _field(b.index, 32, 6)) if isinstance(b, UReg) else \
        (FORM_IMM, _field(_imm32("UISETP immediate", b), 32, 32))
    bits = (0x08C | form << 9 | _field(_ureg("UISETP a", ura), 24, 6) | b_bits | _field(7, 68, 3)
            | _field(int(not unsigned), 73, 1) | _field(BOOLEAN_OPS[op], 74, 2) | _field(COMPARISONS[cmp], 76, 3)
            | _field(upd.index, 81, 3) | _field(7, 84, 3) | _field(combine.index, 87, 3)
            | _field(int(combine.negated), 90, 1) | _field(1, 91, 1))
    return _words(bits, guard, control, f"UISETP.{cmp}{'.U32' if unsigned else ''}.{op} {upd}, UPT, {ura}, "
                                        f"{_source_text(b)}, {combine}", uniform=True)


# STG: 0x986; address register Ra 24-31 (a 64-bit pair), data Rb 32-39, signed 24-bit byte offset
# 40-63, descriptor UR 64-69; bit 72 .E (64-bit address), access size 73-75, bit 76 desc[] form,
# ordering 77-80 (0: weak, ptxas's st.global), eviction 84-86, bits 90-91 set in every form.
def stg(address: Reg, data: Reg, *, desc: UReg, offset: int = 0, width: int = 32, eviction: str = "",
        guard: Pred | None = None, control: Control = Control()) -> Words:
    """``[@P] STG.E[.EF][.64|.128] desc[URx][Ra.64+offset], Rb``: a global store of 32, 64 or 128
    bits from Rb (Rb, Rb+1 / Rb..Rb+3) through the memory descriptor pair URx (the kernel loads
    it with ``ULDC.64 URx, c[0x0][0x208]``)."""
    return _stg(_field(_reg("STG address", address, 2), 24, 8) | _field(_ureg("STG descriptor", desc, 2), 64, 6)
                | _field(1, 76, 1) | _field(3, 90, 2), data, offset, width, eviction, guard, control,
                f"desc[{desc}][{address}.64{_offset_text(offset)}]")


def stg_uniform(base: UReg, data: Reg, *, offset: int = 0, width: int = 32, eviction: str = "",
                guard: Pred | None = None, control: Control = Control()) -> Words:
    """``[@P] STG.E[.EF][.64|.128] [RZ.U32+URx+offset], Rb``: a global store to the 64-bit address
    in the uniform pair URx (plus offset), with no general register in the address: the form
    with bit 76 clear has no descriptor, and bits 90-91 = 2 read the address register as a
    32-bit offset, RZ."""
    return _stg(_field(RZ.index, 24, 8) | _field(_ureg("STG base", base, 2), 64, 6) | _field(2, 90, 2),
                data, offset, width, eviction, guard, control, f"[RZ.U32+{base}{_offset_text(offset)}]")


def _stg(address_bits: int, data: Reg, offset: int, width: int, eviction: str, guard, control,
         address_text: str) -> Words:
    if width not in ACCESS_SIZES:
        raise EncodingError(f"STG width {width!r} must be 32, 64 or 128 bits")
    if eviction not in EVICTIONS:
        raise EncodingError(f"unknown STG eviction hint {eviction!r} (known: {', '.join(filter(None, EVICTIONS))})")
    bits = (0x986 | address_bits | _field(_reg("STG data", data, width // 32), 32, 8)
            | _field(_signed("STG offset", offset, 24, width // 8), 40, 24)
            | _field(1, 72, 1) | _field(ACCESS_SIZES[width], 73, 3) | _field(EVICTIONS[eviction], 84, 3))
    name = "STG.E" + (f".{eviction}" if eviction else "") + ("" if width == 32 else f".{width}")
    return _words(bits, guard, control, f"{name} {address_text}, {data}")


# UIADD3 (0x090 | form << 9): URd 16-21, URa 24-29, b (immediate 32-63, uniform register 32-37),
# URc 64-69; carry-outs 81-83 and 84-86 (7 = none); carry-ins 77-79 and 87-89 with negations
# 80 and 90 (unused: !UPT).
def uiadd3(urd: UReg, ura: UReg, b: Union[UReg, int], urc: UReg = URZ, *, guard: UPred | None = None,
           control: Control = Control()) -> Words:
    """``UIADD3 URd, URa, b, URc``: a 32-bit sum on the uniform datapath (a record pointer or a
    count a warp keeps across the whole kernel)."""
    if isinstance(b, Reg):
        raise EncodingError(f"UIADD3 b must be a uniform register or an immediate, not {b}")
    form, b_bits = (FORM_REG, _field(b.index, 32, 6)) if isinstance(b, UReg) else \
        (FORM_IMM, _field(_imm32("UIADD3 immediate", b), 32, 32))
    bits = (0x090 | form << 9 | _field(_ureg("UIADD3 destination", urd), 16, 6) | _field(_ureg("UIADD3 a", ura), 24, 6)
            | b_bits | _field(_ureg("UIADD3 c", urc), 64, 6) | _field(0xF, 77, 4) | _field(7, 81, 3)
            | _field(7, 84, 3) | _field(0xF, 87, 4) | _field(1, 91, 1))
    return _words(bits, guard, control, f"UIADD3 {urd}, {ura}, {_source_text(b)}, {urc}", uniform=True)


# R2UR: 0x2ca; URd 16-21, Ra 24-31; bits 81-83 = 7.
def r2ur(urd: UReg, ra: Reg, *, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``R2UR URd, Ra``: a warp-uniform general register into a uniform register (ptxas follows
    it by at least 13 cycles before a reader)."""
    return _words(0x2CA | 1 << 9 | _field(_ureg("R2UR destination", urd), 16, 6) | _field(_reg("R2UR source", ra), 24, 8)
                  | _field(7, 81, 3), guard, control, f"R2UR {urd}, {ra}")


# MOV (0x002 | form << 9): Rd 16-23, source at 32+ (register, immediate or uniform); lane mask 72-75 (0xf: all).
def mov(rd: Reg, src: Source, *, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``MOV Rd, src`` of a register, a 32-bit immediate or a uniform register."""
    form, src_bits = _b_operand("MOV immediate", src)
    return _words(0x002 | form << 9 | _field(_reg("MOV destination", rd), 16, 8) | src_bits | _field(0xF, 72, 4),
                  guard, control, f"MOV {rd}, {_source_text(src, signed=False)}")


# UMOV (0x082 | form << 9): URd 16-21, source at 32+ (immediate or uniform register).
def umov(urd: UReg, src: Union[UReg, int], *, guard: UPred | None = None, control: Control = Control()) -> Words:
    """``UMOV URd, src`` of a 32-bit immediate or a uniform register."""
    if isinstance(src, Reg):
        raise EncodingError(f"UMOV source must be a uniform register or an immediate, not {src}")
    form, src_bits = _b_operand("UMOV immediate", src)
    return _words(0x082 | form << 9 | _field(_ureg("UMOV destination", urd), 16, 6) | src_bits, guard, control,
                  f"UMOV {urd}, {_source_text(src, signed=False)}", uniform=True)


# LDC: 0xb82; Rd 16-23, index register 24-31 (RZ: none), signed 16-bit byte offset 38-53, bank 54-58,
# access size 73-75.  ULDC: 0xab9; URd 16-21, offset 38-53, bank 54-58, access size 73-75.
def ldc(rd: Reg, offset: int, *, bank: int = 0, wide: bool = False, index: Reg = RZ,
        guard: Pred | None = None, control: Control = Control()) -> Words:
    """``LDC[.64] Rd, c[bank][index+offset]``: a kernel parameter (bank 0) into Rd (and Rd+1)."""
    width = 64 if wide else 32
    # nvdisasm prints the index register only where it is not RZ, the offset only where it is not 0
    where = f"{offset:#x}" if index == RZ and offset else "RZ" if index == RZ else f"{index}{_offset_text(offset)}"
    return _words(0xB82 | _field(_reg("LDC destination", rd, width // 32), 16, 8)
                  | _field(_reg("LDC index", index), 24, 8)
                  | _constant_address(offset, bank, width) | _field(ACCESS_SIZES[width], 73, 3), guard, control,
                  f"LDC{'.64' if wide else ''} {rd}, c[{bank:#x}][{where}]")


def uldc(urd: UReg, offset: int, *, bank: int = 0, wide: bool = False, guard: UPred | None = None,
         control: Control = Control()) -> Words:
    """``ULDC[.64] URd, c[bank][offset]``: a kernel parameter (bank 0) into uniform registers."""
    width = 64 if wide else 32
    return _words(0xAB9 | _field(_ureg("ULDC destination", urd, width // 32), 16, 6)
                  | _constant_address(offset, bank, width) | _field(ACCESS_SIZES[width], 73, 3), guard, control,
                  f"ULDC{'.64' if wide else ''} {urd}, c[{bank:#x}][{offset:#x}]", uniform=True)


def _constant_address(offset: int, bank: int, width: int) -> int:
    if not isinstance(bank, int) or not 0 <= bank < 32:
        raise EncodingError(f"constant bank {bank!r} out of range (0..31)")
    return _field(_signed("constant offset", offset, 16, width // 8), 38, 16) | _field(bank, 54, 5)


# NOP: 0x918, no operands.
def nop(*, guard: Pred | None = None, control: Control = Control()) -> Words:
    """``NOP``."""
    return _words(0x918, guard, control, "NOP")
