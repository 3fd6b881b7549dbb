"""Insertion plans for the SASS tier's rewrite tests: for one kernel of a cubin, index -> the
instructions to place before it. NOPs at every 7th instruction, at every block start, before
every branch, inside every loop (blocks and loops from gwatch_nb/sass/cfg.py); and clock
readings (`CS2R.32 Rk, SR_CLOCKLO`) into a register the liveness says is free there."""
import functools
from dataclasses import dataclass

from gwatch_nb.sass import encode, rewrite
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.control import Control
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.liveness import Liveness

NOP = encode.nop().raw
# ptxas gives a clock reading 6 cycles before anything may use its register; the same stall
# here also keeps a later write of that register from landing before the reading's own.
CLOCK_STALL = 6


@dataclass(frozen=True)
class Kernel:
    name: str
    instructions: tuple
    registers: int

    @functools.cached_property
    def cfg(self) -> ControlFlowGraph:
        return ControlFlowGraph(self.instructions, self.name)


def kernel(cubin: bytes, name: str) -> Kernel:
    return Kernel(name, tuple(rewrite.decoded(cubin)[name]), Cubin.parse(cubin).registers(name))


def every_seventh(k: Kernel) -> dict:
    return {i: [NOP] for i in range(0, len(k.instructions), 7)}


def block_starts(k: Kernel) -> dict:
    return {block.start: [NOP] for block in k.cfg.blocks}


def before_branches(k: Kernel) -> dict:
    return {ins.index: [NOP] for ins in k.instructions if ins.target is not None}


def inside_loops(k: Kernel) -> dict:
    """Two NOPs in the middle of every block of every loop, one before its last instruction."""
    plan = {}
    for loop in k.cfg.loops:
        for b in loop.blocks:
            block = k.cfg.blocks[b]
            plan.setdefault((block.start + block.end - 1) // 2, []).extend([NOP, NOP])
            plan.setdefault(block.end - 1, []).append(NOP)
    return plan


def clock_reads(k: Kernel) -> dict:
    """A reading at every block start and every 7th instruction, each into the highest register
    free there (none where no register is free)."""
    live = Liveness(k.cfg, k.registers)
    plan = {}
    for i in sorted({block.start for block in k.cfg.blocks if block.end > block.start}
                    | set(range(0, len(k.instructions), 7))):
        free = live.free_registers(i)
        if free:
            plan[i] = [encode.cs2r(encode.Reg(free[-1]), "SR_CLOCKLO", wide=False,
                                   control=Control(stall=CLOCK_STALL)).raw]
    return plan


PLANS = {"every 7th": every_seventh, "block starts": block_starts, "before branches": before_branches,
         "inside loops": inside_loops, "clock reads": clock_reads}
