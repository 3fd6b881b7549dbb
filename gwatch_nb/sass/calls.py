"""Where a subroutine call keeps its return address, so that a rewrite that moves code can
write it anew.

ptxas calls subroutines it puts after the kernel's last EXIT in the kernel's own section —
its own (64-bit integer division, the slow paths of precise division, square roots and
reciprocals, libdevice's trigonometric reduction, ...) and Triton's noinline functions — with
``CALL.REL.NOINC``; the subroutine ends in ``RET.REL.NODEC Rk, `(kernel)```, which jumps to
the kernel's first byte plus Rk (its displacement names the kernel's start: branches.py
re-lays it like any target). The return address, the byte offset of the instruction after
the CALL, is loaded into a register with ``MOV Rk, imm32`` in the CALL's block, a few
instructions before it (1 to 11 in every census kernel, tests/sass_census.py); the callee
may copy it to another register before its RET, so the MOV is found by its value, not its
register."""
from __future__ import annotations

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches
from gwatch_nb.sass.instruction import SIZE

MOV_IMMEDIATE = 0x802  # bits 0-11 of `MOV Rd, imm32`; the immediate is bits 32-63 of the low word
_IMMEDIATE_SHIFT = 32


def _block_boundaries(instructions) -> set[int]:
    """Indices where a block may begin: every target, and the instruction after a transfer."""
    starts = {i.target for i in instructions if i.target is not None}
    starts |= {i.index + 1 for i in instructions
               if i.target is not None or i.base in ("EXIT", "RET", "KILL", "BRX", "BRXU", "JMX", "JMXU", "JMP")}
    return starts


def return_address(instruction) -> int | None:
    """The immediate a `MOV Rd, imm32` loads; None for any other instruction."""
    return loaded_address(instruction.low)


def loaded_address(low: int) -> int | None:
    """return_address of the instruction whose low word is `low`."""
    if low & branches.OPCODE_MASK != MOV_IMMEDIATE:
        return None
    return low >> _IMMEDIATE_SHIFT


def with_return_address(low: int, high: int, offset: int) -> tuple[int, int]:
    """(low, high) of a `MOV Rd, imm32` loading `offset` instead."""
    if not 0 <= offset < 1 << 32:
        raise SassRewriteError(f"return address {offset:#x} does not fit a 32-bit immediate")
    return low & ((1 << _IMMEDIATE_SHIFT) - 1) | offset << _IMMEDIATE_SHIFT, high


def return_addresses(instructions, kernel: str = "?") -> dict[int, int]:
    """Index of each CALL.REL's return-address MOV -> index of the instruction it returns to.
    SassRewriteError where a CALL has no such MOV before it in its block, or a RET.REL counts
    its addresses from anywhere but the kernel's start."""
    for ret in instructions:
        if ret.base == "RET" and branches.has_relative_target(ret.opcode) and ret.target != 0:
            raise SassRewriteError(f"kernel {kernel}: the {ret.opcode} at {ret.offset:#x} counts its return "
                                   "address from inside the kernel, not from its start")
    boundaries = _block_boundaries(instructions)
    found = {}
    for call in instructions:
        if call.base != "CALL" or not branches.has_relative_target(call.opcode):
            continue
        site = call.index + 1
        k = call.index
        while k > 0 and k not in boundaries:
            k -= 1
            if return_address(instructions[k]) == site * SIZE:
                found[k] = site
                break
        else:
            raise SassRewriteError(f"kernel {kernel}: the {call.opcode} at {call.offset:#x} has no MOV of its "
                                   "return address before it in its block")
    return found
