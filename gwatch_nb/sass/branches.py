"""Where sm_90a keeps the code targets of its control-flow instructions, learnt by flipping
each bit of ptxas-made words under ``nvdisasm -b SM90a`` and by assembling PTX (loops,
early exits, noinline calls, ``brx.idx``).

A relative target is a signed byte displacement from the *next* instruction, always a
multiple of 4, split over the 128 bits:

- ``BRA``, ``CALL.REL``, ``RET.REL`` (and ``BRX``): displacement bits 2-9 in bits 16-23,
  bits 10-57 in bits 34-81; bit 81 is the sign (58 bits in all). Bits 24-31 hold ``RET``'s
  and ``BRX``'s register, bits 32-33 ``BRA``'s ``.U``/``.DIV``, bits 87-90 a second guard.
  ``RET.REL``'s displacement names the kernel's start, which its return address counts from.
- ``BSSY``: displacement bits 2-31 in bits 34-63, bit 63 the sign (32 bits); bits 16-19
  hold the convergence barrier ``B0``-``B15``.

``BSYNC`` and ``BREAK`` name only a barrier, ``WARPSYNC`` only a mask, ``EXIT``/``KILL``/
``YIELD``/``NOP`` nothing: their code is free to move. A ``CALL.REL``'s return address is a
code offset ptxas loads into a register with a plain ``MOV``: calls.py finds it, insert.py
writes it anew. What a rewrite cannot re-lay: ``BRX``/``BRXU``/``JMX``/``JMXU`` (targets
from a register or a jump table in a constant bank), ``JMP``/``CALL.ABS``/``RET.ABS``
(absolute addresses) and ``LEPC`` (a code address read into a register)."""
from __future__ import annotations

from gwatch_nb.errors import SassRewriteError

OPCODE_MASK = 0xFFF  # bits 0-11 of the low word name the operation
BRA, CALL_REL, BSSY, RET_REL = 0x947, 0x944, 0x945, 0x950

# (word bit where a piece starts, its width, the displacement bit it holds)
_WIDE = ((16, 8, 2), (34, 48, 10))
_BSSY = ((34, 30, 2),)
_FIELDS = {BRA: (_WIDE, 58), CALL_REL: (_WIDE, 58), BSSY: (_BSSY, 32), RET_REL: (_WIDE, 58)}

RELATIVE_OPCODES = ("BRA", "BSSY", "CALL.REL", "RET.REL")  # as printed; the ones whose target the decoder records
UNSUPPORTED = {  # base opcode -> why a rewrite refuses it
    "BRX": "indirect branch", "BRXU": "indirect branch", "JMX": "indirect branch", "JMXU": "indirect branch",
    "JMP": "absolute branch", "CALL": "subroutine call to an absolute address",
    "RET": "subroutine return to an absolute address", "LEPC": "read of the program counter",
}


def unsupported(opcode: str) -> str | None:
    """Why a rewrite refuses an instruction ("CALL.ABS.NOINC": an absolute call), or None;
    CALL and RET are refused only in their absolute forms."""
    if has_relative_target(opcode):
        return None
    return UNSUPPORTED.get(opcode.split(".", 1)[0])


def has_relative_target(opcode: str) -> bool:
    """Whether an opcode as nvdisasm prints it ("BRA.U", "CALL.REL.NOINC") has a relative code target."""
    return any(opcode == name or opcode.startswith(name + ".") for name in RELATIVE_OPCODES)


def _field(low: int):
    return _FIELDS.get(low & OPCODE_MASK)


def target_of(low: int, high: int) -> int | None:
    """The signed byte displacement from the next instruction to the target; None for an
    instruction without a relative target."""
    field = _field(low)
    if field is None:
        return None
    pieces, width = field
    bits = low | high << 64
    value = 0
    for at, size, shift in pieces:
        value |= (bits >> at & ((1 << size) - 1)) << shift
    return value - (1 << width) if value >> (width - 1) else value


def with_target(low: int, high: int, delta: int) -> tuple[int, int]:
    """(low, high) with the displacement set to ``delta`` bytes from the next instruction."""
    field = _field(low)
    if field is None:
        raise SassRewriteError(f"instruction {low:#018x} {high:#018x} has no relative target")
    pieces, width = field
    if delta % 4 or not -(1 << (width - 1)) <= delta < 1 << (width - 1):
        raise SassRewriteError(f"branch displacement {delta:#x} does not fit its {width}-bit field")
    value = delta & ((1 << width) - 1)
    bits = low | high << 64
    for at, size, shift in pieces:
        mask = (1 << size) - 1
        bits = bits & ~(mask << at) | (value >> shift & mask) << at
    return bits & ((1 << 64) - 1), bits >> 64
