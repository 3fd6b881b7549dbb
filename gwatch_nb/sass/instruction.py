"""One decoded sm_90a instruction: its two 64-bit words as the cubin holds them, and what
nvdisasm printed for them."""
from __future__ import annotations

from dataclasses import dataclass

from gwatch_nb.sass.control import Control

SIZE = 16  # bytes per instruction


@dataclass(frozen=True)
class Instruction:
    index: int                 # position in the kernel's .text (0-based)
    low: int                   # the low 64-bit word (little-endian in the cubin)
    high: int                  # the high 64-bit word
    predicate: str | None      # guard as printed ("@!P1", "@UP0"), None when unguarded
    opcode: str                # with modifiers ("IMAD.WIDE.U32")
    operands: tuple[str, ...]  # as printed ("R3.reuse", "c[0x0][0x210]", "desc[UR4][R2.64]", "`(.L_x_0)")
    target: int | None         # index of the instruction a relative code target points at

    @property
    def offset(self) -> int:
        return SIZE * self.index

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def control(self) -> Control:
        return Control.from_high(self.high)

    @property
    def raw(self) -> bytes:
        return self.low.to_bytes(8, "little") + self.high.to_bytes(8, "little")
