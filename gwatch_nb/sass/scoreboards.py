"""Which of the six scoreboards may be pending at each instruction, which registers an
instruction still in flight may read or write there, and a check that inserted instructions
keep the fixed-latency rule.

sm_90 has two ways to order a result after its producer. A variable-latency instruction
(memory, MUFU, S2R, conversions, ...) names a scoreboard in its control bits that is released
when its result is written (write barrier) or its sources have been read (read barrier); a
later instruction waits for it with its wait mask or with `DEPBAR.LE SBk, 0x0`. A
fixed-latency instruction has no scoreboard: the stall counts of the instructions issued
after it must add up to its latency before anything reads its result. Warpgroup MMAs
(HGMMA, IGMMA, QGMMA) run asynchronously until `WARPGROUP.DEPBAR.LE gsb0, 0x0`.

What this module assumes, erring towards "busy":
- A scoreboard set on any path and not waited on along it may be pending (a may-analysis over
  the control-flow graph). A wait releases it whatever its count: waits test for zero.
  `DEPBAR.LE SBk, N` with N > 0 releases nothing; `DEPBAR {k, ...}` releases the listed ones.
- The registers of a variable-latency instruction stay in flight until a wait on the barrier
  it set, or, barrier or not, until the kernel itself touches them again (a later read or
  write of a result, a later write of a source): ptxas orders the kernel's own accesses, so
  they prove the transfer done. A result or source the kernel never touches again stays in
  flight to the end. A warpgroup MMA's registers stay in flight until `WARPGROUP.DEPBAR.LE gsb0, 0x0`,
  from the `WARPGROUP.ARRIVE` before it on (another warp of the group may start the MMA).
- Fixed latency: an inserted instruction issues at least FIXED_LATENCY cycles (the sum of
  the stall counts in between) after a fixed-latency instruction whose result it reads or
  whose destination it also writes, and no kernel instruction reads or writes its result
  within its latency. FIXED_LATENCY = 6: on the corpus kernels ptxas puts the first
  consumer of a fixed-latency result at most 6 cycles (mostly 4) after its producer, for
  every opcode but SLOW_OPCODES, never seen closer than 7 (USGXT), 13 (R2UR, P2R) or more
  (HFMA2; CS2R, whose corpus uses zero registers long before their use, and whose clock
  readings ptxas follows by 7 to 9 cycles): those get SLOW_LATENCY, the longest stall a
  control field holds, until measured on the GPU.
- An inserted instruction that sets a scoreboard must name one not pending where it goes; a
  variable-latency one that reads registers must set a read barrier, and no kernel
  instruction may rewrite its sources before a wait on it."""
from __future__ import annotations

import functools
import re

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.control import MASK, NO_BARRIER, SCOREBOARDS, SHIFT, Control
from gwatch_nb.sass.registers import GPRS, RegisterUse, register_use

FIXED_LATENCY = 6
SLOW_OPCODES = frozenset({"R2UR", "P2R", "USGXT", "HFMA2", "CS2R"})
SLOW_LATENCY = 15
WARPGROUP = SCOREBOARDS        # slot of the warpgroup MMAs' asynchronous group
UNBARRIERED = SCOREBOARDS + 1  # slot of variable-latency transfers with no scoreboard
_SLOTS = SCOREBOARDS + 2
WARPGROUP_MMA = frozenset({"HGMMA", "IGMMA", "QGMMA"})
# Taken to be variable latency (a result in flight until waited on or touched): memory,
# conversions, transfers, MMAs, doubles; REDUX, DMMA, FCHK, QSPC, B2R and MOVM because ptxas
# gives them a scoreboard in the census kernels (tests/sass_census.py).
VARIABLE_LATENCY = frozenset(
    "LDG LDS LDL LD LDC LDSM MOVM ATOMG ATOMS ATOM RED REDG STG STS STL ST STSM LDGSTS SHFL MUFU S2R S2UR "
    "F2I I2F F2F I2I FRND POPC FLO BREV DADD DMUL DFMA DSETP DMNMX HMMA IMMA DMMA REDUX FCHK QSPC B2R SYNCS "
    "UTMALDG UTMASTG UTMAPF UTMAREDG UTMACCTL UBLKCP UBLKPF UBLKRED MATCH CCTL".split()) | WARPGROUP_MMA


def released(instruction, control=None) -> int:
    """Scoreboards (bit k = SBk, bit 6 = warpgroup) whose pending work is finished once the
    instruction has issued."""
    mask = (control or control_of(instruction)).wait_mask
    if instruction.base == "DEPBAR":
        operands = ",".join(instruction.operands)
        if instruction.opcode == "DEPBAR.LE":
            board = re.fullmatch(r"SB(\d),0x0", operands.replace(" ", ""))
            if board:
                mask |= 1 << int(board.group(1))
        elif operands.startswith("{"):
            mask |= sum(1 << int(k) for k in re.findall(r"\d", operands))
    if instruction.opcode == "WARPGROUP.DEPBAR.LE" and re.fullmatch(r"gsb0,0x0", ",".join(instruction.operands)
                                                                   .replace(" ", "")):
        mask |= 1 << WARPGROUP
    return mask


@functools.lru_cache(maxsize=4096)
def _control(bits: int) -> Control:
    return Control.from_bits(bits)


def control_of(instruction) -> Control:
    """The instruction's control fields, decoded once per distinct value."""
    return _control(instruction.high >> SHIFT & MASK)


class Scoreboards:
    """Per instruction of a ControlFlowGraph: `pending(i)`, the scoreboards that may be
    pending before it issues (bit k = SBk), and `in_flight(i)` / `in_flight_after(i)`, the
    registers (registers.py mask) a transfer still in flight may read or write before / after
    it issues. Solved per block with composed transfer functions; the per-instruction states
    of a block are worked out when first asked for."""

    def __init__(self, cfg, uses: list[RegisterUse] | None = None):
        self.cfg = cfg
        instructions = cfg.instructions
        self.uses = uses if uses is not None else [register_use(i, cfg.kernel) for i in instructions]
        self._effects = [self._effect(ins, use) for ins, use in zip(instructions, self.uses)]
        #: WARPGROUP.ARRIVE index -> the registers it hands to the MMAs after it (a store still
        #: reading one must be waited on before the arrive, as before a write of it)
        self.fenced = _fenced_by_arrive(cfg, self.uses)
        for arrive, fenced in self.fenced.items():
            freed, sets, untouched, unwritten, transfers = self._effects[arrive]
            self._effects[arrive] = freed, sets, untouched, unwritten, transfers + [(WARPGROUP, fenced, 0)]
        self._block_in = self._solve()
        self._states: dict[int, list] = {}

    @staticmethod
    def _effect(instruction, use):
        """(released, sets, untouched, unwritten, [(slot, results, sources)]) of one instruction."""
        control = control_of(instruction)
        freed = released(instruction, control)
        sets = sum(1 << b for b in (control.write_barrier, control.read_barrier) if b != NO_BARRIER)
        transfers = []
        if instruction.base in WARPGROUP_MMA:
            transfers = [(WARPGROUP, use.writes, use.reads)]
        elif instruction.base in VARIABLE_LATENCY or sets:
            w = control.write_barrier if control.write_barrier != NO_BARRIER else UNBARRIERED
            r = control.read_barrier if control.read_barrier != NO_BARRIER else UNBARRIERED
            transfers = [(w, use.writes, 0), (r, 0, use.reads)]
        return freed, sets, ~(use.reads | use.writes), ~use.writes, transfers

    def _step(self, i: int, pending: int, slots: tuple) -> tuple[int, tuple]:
        """The state (pending scoreboards, per slot (results, sources) in flight) after
        instruction i issues: its waits release first, then what it touches has landed (ptxas
        orders the kernel's own accesses), then its own transfers start."""
        released, sets, untouched, unwritten, transfers = self._effects[i]
        new = [(0, 0) if released >> slot & 1 else (results & untouched, sources & unwritten)
               for slot, (results, sources) in enumerate(slots)]
        for slot, results, sources in transfers:
            old_results, old_sources = new[slot]
            new[slot] = (old_results | results, old_sources | sources)
        return (pending & ~released | sets) & ((1 << SCOREBOARDS) - 1), tuple(new)

    def _summary(self, block):
        """The block's transfer function: per slot x -> (x & keep) | gen for results and sources,
        and the same for the pending mask."""
        keep_results = keep_sources = -1
        keep_pending, gen_pending = -1, 0
        gen = [[0, 0] for _ in range(_SLOTS)]
        dead = 0   # slots released after the instruction being looked at
        for i in range(block.end - 1, block.start - 1, -1):
            released, sets, untouched, unwritten, transfers = self._effects[i]
            for slot, results, sources in transfers:
                if not dead >> slot & 1:
                    gen[slot][0] |= results & keep_results
                    gen[slot][1] |= sources & keep_sources
            gen_pending |= sets & keep_pending
            keep_pending &= ~released
            dead |= released
            keep_results &= untouched
            keep_sources &= unwritten
        keeps = [(0, 0) if dead >> slot & 1 else (keep_results, keep_sources) for slot in range(_SLOTS)]
        return keeps, [tuple(g) for g in gen], keep_pending, gen_pending

    def _solve(self) -> list[tuple[int, tuple]]:
        cfg = self.cfg
        blocks = cfg.blocks
        summaries = [self._summary(b) for b in blocks]
        empty = (0, ((0, 0),) * _SLOTS)
        block_in = [empty] * len(blocks)
        order = cfg.reverse_postorder()
        changed = True
        while changed:
            changed = False
            for b in order:
                pending, slots = block_in[b]
                keeps, gens, keep_pending, gen_pending = summaries[b]
                out_pending = pending & keep_pending | gen_pending
                out = [(r & kr | gr, s & ks | gs) for (r, s), (kr, ks), (gr, gs) in zip(slots, keeps, gens)]
                for succ in blocks[b].successors:
                    old_pending, old = block_in[succ]
                    merged = (old_pending | out_pending, tuple((a | r, c | s) for (a, c), (r, s) in zip(old, out)))
                    if merged != block_in[succ]:
                        block_in[succ], changed = merged, True
        return block_in

    def _state(self, i: int, after: bool = False) -> tuple[int, tuple]:
        b = self.cfg.block_of[i]
        if b not in self._states:
            block = self.cfg.blocks[b]
            state = self._block_in[b]
            states = [state]
            for k in range(block.start, block.end):
                state = self._step(k, *state)
                states.append(state)
            self._states[b] = states
        return self._states[b][i - self.cfg.blocks[b].start + after]

    def in_flight_on(self, i: int, board: int) -> tuple[int, int]:
        """(results, sources) in flight before instruction i that a wait on `board` releases."""
        return self._state(i)[1][board]

    def pending(self, i: int) -> int:
        return self._state(i)[0]

    def in_flight(self, i: int) -> int:
        return _union(self._state(i)[1])

    def in_flight_after(self, i: int) -> int:
        return _union(self._state(i, after=True)[1])

    def check_untouched(self, index: int, inserted) -> None:
        """Raise SassRewriteError unless `inserted` (decoded instructions, in order, placed just
        before kernel instruction `index`) leave alone every register a kernel transfer may still
        read or write there: none writes such a register or reads a result still being written,
        unless a wait before it (or its own) released that transfer's scoreboard. No wait
        releases a transfer that set no scoreboard."""
        if index >= len(self.cfg.instructions):
            return
        slots = self._state(index)[1]
        for k, instruction in enumerate(inserted):
            freed = released(instruction)
            slots = tuple((0, 0) if freed >> slot & 1 else state for slot, state in enumerate(slots))
            use = register_use(instruction, self.cfg.kernel)
            for slot, (results, sources) in enumerate(slots):
                if use.writes & (results | sources) or use.reads & results:
                    how = "no scoreboard" if slot == UNBARRIERED else f"scoreboard {slot}"
                    raise SassRewriteError(
                        f"kernel {self.cfg.kernel}: inserted instruction {k} ({instruction.opcode}) before "
                        f"instruction {index} touches a register a kernel transfer ({how}) may still be using")

    def idle(self, i: int, j: int | None = None) -> list[int]:
        """Scoreboards an inserted instruction may use over instructions i..j of one block: none
        pending before any of them or after j, and none set or waited on by any of them."""
        j = i if j is None else j
        self.cfg.check_window(i, j)
        busy = self._state(j, after=True)[0]
        for k in range(i, j + 1):
            released, sets, *_ = self._effects[k]
            busy |= self.pending(k) | released | sets
        return [k for k in range(SCOREBOARDS) if not busy >> k & 1]


def _fenced_by_arrive(cfg, uses: list[RegisterUse]) -> dict[int, int]:
    """Per `WARPGROUP.ARRIVE`, the general registers of the warpgroup MMAs after it in its block
    (up to the next arrive): the warpgroup's MMA unit may write a warp's accumulators as soon as
    another warp of the group has issued, so from the arrive on they are the MMA's. On the
    H200 a record stored from accumulators between an arrive and its HGMMA (SGLang's extend
    attention) stored the MMA's results instead, on a few warps of each run."""
    out = {}
    for block in cfg.blocks:
        arrive = None
        for k in range(block.start, block.end):
            instruction = cfg.instructions[k]
            if instruction.opcode == "WARPGROUP.ARRIVE":
                arrive = k
                out[k] = 0
            elif arrive is not None and instruction.base in WARPGROUP_MMA:
                out[arrive] |= (uses[k].reads | uses[k].writes) & GPRS
    return {k: mask for k, mask in out.items() if mask}


def _union(slots) -> int:
    mask = 0
    for results, sources in slots:
        mask |= results | sources
    return mask


def _fixed(instruction) -> bool:
    return control_of(instruction).write_barrier == NO_BARRIER and instruction.base not in VARIABLE_LATENCY


def _backward(cfg, index: int, latency: int):
    """(instruction, cycles from its issue to the issue of instruction `index`) for every kernel
    instruction issued less than `latency` cycles before `index`, along every path."""
    stack = [(cfg.block_of[index], index, 0)] if index < len(cfg.instructions) else []
    seen = set()
    while stack:
        b, end, cycles = stack.pop()
        block = cfg.blocks[b]
        for k in range(end - 1, block.start - 1, -1):
            cycles += control_of(cfg.instructions[k]).stall
            if cycles >= latency:
                break
            yield cfg.instructions[k], cycles
        else:
            for p in block.predecessors:
                if (p, cycles) not in seen:
                    seen.add((p, cycles))
                    stack.append((p, cfg.blocks[p].end, cycles))


def _forward(cfg, index: int, cycles: int, latency: int):
    """(instruction, cycles) for every kernel instruction from `index` on that issues less
    than `latency` cycles after the point before `index` (reached `cycles` cycles after the
    producer), along every path."""
    stack = [(cfg.block_of[index], index, cycles)] if index < len(cfg.instructions) else []
    seen = set()
    while stack:
        b, k, cycles = stack.pop()
        block = cfg.blocks[b]
        for k in range(k, block.end):
            if cycles >= latency:
                break
            yield cfg.instructions[k], cycles
            cycles += control_of(cfg.instructions[k]).stall
        else:
            for s in block.successors:
                if (s, cycles) not in seen:
                    seen.add((s, cycles))
                    stack.append((s, cfg.blocks[s].start, cycles))


def _until_released(cfg, index: int, barrier: int):
    """Kernel instructions from `index` on, along every path, up to (not including) the first
    that waits on `barrier`; each block once."""
    stack = [(cfg.block_of[index], index)] if index < len(cfg.instructions) else []
    seen = set()
    while stack:
        b, k = stack.pop()
        block = cfg.blocks[b]
        for k in range(k, block.end):
            if released(cfg.instructions[k]) >> barrier & 1:
                break
            yield cfg.instructions[k]
        else:
            for s in block.successors:
                if s not in seen:
                    seen.add(s)
                    stack.append((s, cfg.blocks[s].start))


def check_insertion(cfg, board: Scoreboards, index: int, inserted, latency: int = FIXED_LATENCY):
    """Raise SassRewriteError unless `inserted` (instructions in order, each with `control`,
    `opcode`, `operands` and `predicate`), placed just before kernel instruction `index`, keep
    the rules of the module docstring with the kernel's instructions and among themselves."""
    uses = [register_use(ins, cfg.kernel) for ins in inserted]
    kernel_uses = board.uses

    def fail(k, reason):
        raise SassRewriteError(f"kernel {cfg.kernel}: inserted instruction {k} ({inserted[k].opcode}) before "
                               f"instruction {index}: {reason}")

    context = list(_backward(cfg, index, max(latency, SLOW_LATENCY)))
    for k, use in enumerate(uses):
        cycles = 0
        producers = []
        for back in range(k - 1, -1, -1):
            cycles += control_of(inserted[back]).stall
            producers.append((inserted[back], uses[back], cycles))
        producers += [(ins, kernel_uses[ins.index], cycles + c) for ins, c in context]
        for producer, produced, distance in producers:
            limit = max(latency, SLOW_LATENCY) if producer.base in SLOW_OPCODES else latency
            if distance < limit and _fixed(producer) and produced.writes & (use.reads | use.writes):
                fail(k, f"touches a result of {producer.opcode} {distance} cycles after it (fixed latency {limit})")
        control = control_of(inserted[k])
        for barrier in (control.write_barrier, control.read_barrier):
            if barrier != NO_BARRIER and board.pending(min(index, len(cfg.instructions) - 1)) >> barrier & 1:
                fail(k, f"sets scoreboard {barrier}, which the kernel may have pending there")
        if not _fixed(inserted[k]) and use.reads and control.read_barrier == NO_BARRIER:
            fail(k, "a variable-latency instruction reading registers must set a read barrier")
        if _fixed(inserted[k]) and use.writes:
            cycles = sum(control_of(ins).stall for ins in inserted[k:])
            for consumer, distance in _forward(cfg, index, cycles, latency):
                if use.writes & (kernel_uses[consumer.index].reads | kernel_uses[consumer.index].writes):
                    fail(k, f"{consumer.opcode} at {consumer.index} touches its result {distance} cycles after it")
        barrier = control.read_barrier
        if barrier != NO_BARRIER and not any(released(ins) >> barrier & 1 for ins in inserted[k + 1:]):
            for consumer in _until_released(cfg, index, barrier):
                if kernel_uses[consumer.index].writes & use.reads:
                    fail(k, f"{consumer.opcode} at {consumer.index} rewrites a source before scoreboard "
                            f"{barrier} is waited on")
