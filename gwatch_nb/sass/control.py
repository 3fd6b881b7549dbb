"""The scheduling control fields every sm_90 instruction carries in the top 23 bits of its
high 64-bit word (``high >> 41``): stall cycles, yield, the scoreboard it sets when its result
is written (write barrier) or its sources are read (read barrier), the scoreboards it waits
for, and the operand-reuse flags."""
from __future__ import annotations

from dataclasses import dataclass

SHIFT = 41
MASK = (1 << 23) - 1
NO_BARRIER = 7  # barrier field value meaning "sets no scoreboard"
SCOREBOARDS = 6


@dataclass(frozen=True)
class Control:
    stall: int = 0          # cycles before the next instruction may issue (0-15)
    yield_: bool = False    # bit set: the warp may not be switched out (ptxas prints it as "no yield")
    write_barrier: int = NO_BARRIER  # scoreboard released when the result is written
    read_barrier: int = NO_BARRIER   # scoreboard released when the sources have been read
    wait_mask: int = 0      # bit k: wait until scoreboard k is released before issuing
    reuse: int = 0          # operand reuse cache flags

    def __post_init__(self):
        for name, value, bits in (("stall", self.stall, 4), ("write_barrier", self.write_barrier, 3),
                                  ("read_barrier", self.read_barrier, 3), ("wait_mask", self.wait_mask, 6),
                                  ("reuse", self.reuse, 4)):
            if not 0 <= value < (1 << bits):
                raise ValueError(f"control field {name}={value} does not fit in {bits} bits")

    @classmethod
    def from_bits(cls, bits: int) -> "Control":
        return cls(stall=bits & 0xF, yield_=bool(bits >> 4 & 1), write_barrier=bits >> 5 & 7,
                   read_barrier=bits >> 8 & 7, wait_mask=bits >> 11 & 0x3F, reuse=bits >> 17 & 0xF)

    @classmethod
    def from_high(cls, high: int) -> "Control":
        return cls.from_bits(high >> SHIFT & MASK)

    @property
    def bits(self) -> int:
        return (self.stall | int(self.yield_) << 4 | self.write_barrier << 5 | self.read_barrier << 8
                | self.wait_mask << 11 | self.reuse << 17)

    def on_high(self, high: int) -> int:
        """``high`` with its control field replaced by this one."""
        return (high & ~(MASK << SHIFT) & ((1 << 64) - 1)) | self.bits << SHIFT
