"""Register liveness of one kernel, and the registers an inserted instruction may use.

Backward dataflow over the control-flow graph: a register is live before an instruction if
the instruction reads it, or if it is live after and the instruction does not surely write it
(a guarded instruction writes nothing for sure). Reads are over-approximated and writes
under-approximated by registers.py, so an error leaves a register live, never dead. A path
ends at EXIT with only R1 live: the ABI keeps the stack pointer there, and nvdisasm counts it
live throughout. A call is followed into its subroutine (cfg.py joins them: a RET returns
after every CALL): what the subroutine reads is live before the call, and whatever is live
after any call is live throughout every subroutine, one context for all calls, which can only
keep a register live that is not. A RET with no call to return to (an unknown caller) also
keeps the registers the ABI has a callee preserve.

A register is free over instructions i..j of one block when it is not live before any of
them nor after j, no instruction among them reads or writes it, and no transfer still in
flight there may read or write it (scoreboards.py): an inserted instruction may then write it
before i and read it back after j without changing what the kernel computes."""
from __future__ import annotations

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import registers as regs
from gwatch_nb.sass.registers import register_use
from gwatch_nb.sass.scoreboards import Scoreboards

STACK_POINTER = regs.register_bit("R1")
# What a return hands back to an unknown caller: the stack pointer and the registers the ABI
# has a callee preserve (nvdisasm keeps R16-R31 live up to a RET).
CALLEE_SAVED = STACK_POINTER | sum(regs.register_bit(f"R{r}") for r in range(16, 32))


def _surely_executes(instruction) -> bool:
    return not instruction.predicate or not instruction.predicate.startswith("@") or \
        instruction.predicate in ("@PT", "@UPT")


#: The top two registers of a kernel's count are never the kernel's own: ptxas leaves them
#: unused in every kernel it makes (register count = highest register named + 3), and on the
#: H200 a clock reading written into one of them stops the kernel with an illegal instruction.
RESERVED_REGISTERS = 2


class Liveness:
    """`live_in[i]` / `live_out[i]`: registers.py masks of what is live before / after
    instruction i of `cfg`'s kernel. `register_count` (the kernel's own count, or the smallest
    size a USETMAXREG gives a warp) bounds the general registers handed out, less the
    RESERVED_REGISTERS at its top; uniform registers are handed out only below the highest one the
    kernel names, since the cubin states no uniform count."""

    def __init__(self, cfg, register_count: int):
        if not 0 < register_count <= regs.GPR_COUNT:
            raise SassRewriteError(f"kernel {cfg.kernel}: register count {register_count} is outside 1..255")
        self.cfg = cfg
        self.register_count = register_count
        # Warp-specialized kernels resize their warps' registers (USETMAXREG): until the analysis
        # follows which size holds where, only registers every size keeps are handed out.
        sizes = [int(i.operands[-1], 16) for i in cfg.instructions if i.base == "USETMAXREG"]
        self.register_limit = min([register_count, *sizes]) - RESERVED_REGISTERS
        self.uses = [register_use(i, cfg.kernel) for i in cfg.instructions]
        returned = STACK_POINTER if any(i.base == "CALL" for i in cfg.instructions) else CALLEE_SAVED
        self.reads = [use.reads | {"EXIT": STACK_POINTER, "RET": returned}.get(i.base, 0)
                      for i, use in zip(cfg.instructions, self.uses)]
        self.kills = [use.writes if _surely_executes(i) else 0 for i, use in zip(cfg.instructions, self.uses)]
        named = 0
        for use in self.uses:
            named |= use.reads | use.writes
        uniform = named & regs.UNIFORMS
        self.uniform_count = (uniform.bit_length() - regs.UNIFORM_BASE) if uniform else 0
        n = len(cfg.instructions)
        self.live_in = [0] * n
        self.live_out = [0] * n
        self._solve()
        self.scoreboards = Scoreboards(cfg, self.uses)

    def _solve(self):
        cfg, reads, kills, instructions = self.cfg, self.reads, self.kills, self.cfg.instructions
        blocks = cfg.blocks
        gen, kill = [], []
        for block in blocks:
            g = k = 0
            for i in range(block.end - 1, block.start - 1, -1):
                g = reads[i] | (g & ~kills[i])
                k |= kills[i]
            gen.append(g)
            kill.append(k)
        block_in = [0] * len(blocks)
        order = cfg.reverse_postorder()[::-1] + [b.index for b in blocks if not cfg.reachable[b.index]]
        changed = True
        while changed:
            changed = False
            for b in order:
                out = 0
                for s in blocks[b].successors:
                    out |= block_in[s]
                new = gen[b] | (out & ~kill[b])
                if new != block_in[b]:
                    block_in[b], changed = new, True
        for block in blocks:
            live = 0
            for s in block.successors:
                live |= block_in[s]
            for i in range(block.end - 1, block.start - 1, -1):
                self.live_out[i] = live | (reads[i] & STACK_POINTER if instructions[i].base in ("EXIT", "RET")
                                           else 0)
                live = reads[i] | (live & ~kills[i])
                self.live_in[i] = live

    def busy(self, i: int, j: int | None = None) -> int:
        """Every register the kernel may need over instructions i..j of one block (mask)."""
        j = i if j is None else j
        self.cfg.check_window(i, j)
        mask = self.live_out[j] | self.scoreboards.in_flight_after(j)
        for k in range(i, j + 1):
            mask |= self.live_in[k] | self.uses[k].reads | self.uses[k].writes | self.scoreboards.in_flight(k)
        return mask

    def _free(self, mask: int, base: int, count: int, width: int) -> list[int]:
        if width not in (1, 2, 4):
            raise ValueError(f"width {width} is not 1, 2 or 4")
        run = (1 << width) - 1
        return [r for r in range(0, count - width + 1, width) if not mask >> (base + r) & run]

    def free_registers(self, i: int, j: int | None = None, width: int = 1) -> list[int]:
        """General registers (numbers) free over i..j, below the kernel's register count; with
        width 2 or 4, the first of each aligned free pair or quad."""
        return self._free(self.busy(i, j), regs.GPR_BASE, self.register_limit, width)

    def free_uniform_registers(self, i: int, j: int | None = None, width: int = 1) -> list[int]:
        return self._free(self.busy(i, j), regs.UNIFORM_BASE, self.uniform_count, width)

    def free_predicates(self, i: int, j: int | None = None) -> list[int]:
        return self._free(self.busy(i, j), regs.PREDICATE_BASE, regs.PREDICATE_COUNT, 1)

    def free_uniform_predicates(self, i: int, j: int | None = None) -> list[int]:
        return self._free(self.busy(i, j), regs.UNIFORM_PREDICATE_BASE, regs.PREDICATE_COUNT, 1)
