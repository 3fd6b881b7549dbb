"""The SASS tier's probes: the instructions that make a kernel's scheduled code record a clock
reading at each site, planned into registers, predicates and scoreboards the kernel leaves free
(docs/sass/probes.md).

Each warp keeps three things in uniform registers the kernel never names, from its prologue to
its exit: the address of its next record, the end of its slot (its header follows), and the room
left (events it may still keep). A record holds the readings of up to READINGS_PER_RECORD sites
of one block and the number of its first site; up to MAX_RUN_RECORDS records of one block form
a run with one room test:

    UISETP.GT.AND UPq, UPT, room, 0x0    once per run of records: UPq, the run has rows of its own
    UIADD3 room, room, -readings         the run's readings count against the room
    MOV Rs, site                         per record: its first site's number (its last word)
    CS2R.32 Rt0, SR_CLOCKLO              each reading just before its site's instruction
    ... the kernel's own instructions, CS2R.32 Rt1 ... ...
    STG.E.EF.128 [RZ.U32+next+16m], Rq   the record's stores (one 128-bit store where a quad
                                         is free), sunk later in the same block
    ... the run's other records ...
    @UPq UIADD3 next, next, 16*records   once per run, after its last stores

A slot holds the rows its records need and SASS_OVERFLOW_ROWS more: once the room is spent,
`next` stays put and later runs overwrite the rows past it, which the host never reads. Every reading counts
against the room, so the events a warp tried are its capacity less the room it has left, kept
or dropped, and the rows it wrote end at `next`; no predicate of the kernel's is needed.
The prologue (before the kernel's first instruction) finds the warp's slot and writes the
header's entry fields; an epilogue before every EXIT writes the exit fields. A final pass over
each block gives every inserted instruction the stall its inputs need and waits on the
scoreboard its stores read through before anything writes their registers again."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from gwatch_nb._native import FORMAT
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import encode as E
from gwatch_nb.sass import registers as regs
from gwatch_nb.sass.control import NO_BARRIER, SCOREBOARDS, Control
from gwatch_nb.sass.liveness import Liveness
from gwatch_nb.sass.scoreboards import FIXED_LATENCY, SLOW_LATENCY, UNBARRIERED, control_of, released

READINGS_PER_RECORD = FORMAT["READINGS_PER_RECORD"]
#: Records of one block that share a room test; the slot's overflow rows hold them all.
MAX_RUN_RECORDS = FORMAT["SASS_OVERFLOW_ROWS"]
SITE_WORD = FORMAT["REC_SITE"] // 4  # a record's readings take the words just before its site's
#: Kernel cycles (stall counts) the probes try to leave between a reading and its stores, so
#: that the reading, the room test and the site number are ready without stalling the warp.
STORE_DISTANCE = SLOW_LATENCY
#: How far (instructions) a store may sink below its reading.
MAX_SINK = 48
PREDICATE_LATENCY = 13    # ISETP to a guard that reads its result (ptxas's own distance)
#: CS2R of the clock to a reader of its result: ptxas itself leaves 7 to 9 cycles (scoreboards.py).
CLOCK_LATENCY = 9
#: A uniform result to a store that takes it as its address: ptxas leaves at least 8 to 9
#: cycles there (UMOV, ULEA to LDS, STS, STG: 351 cases in 113 corpus cubins), though 6
#: (FIXED_LATENCY) to an ALU reader; the advance of `next` to the next run's stores waits this long.
ADDRESS_LATENCY = 9
FIRST_STATE_UR = 0        # ptxas never hands out UR0-UR3, but the H200 runs probes kept there
PROLOGUE_BOARD = 5        # scoreboard of the prologue's S2R and LDC (nothing is pending at entry)
MAX_STALL = 15
#: The read barrier of a record's store until _schedule picks its scoreboard (_store_board).
BOARD_CHOSEN_LATER = -1

_HEADER = FORMAT["SLOT_HEADER_BYTES"]  # the uniform "end" register points just past the header


class TooFewRegisters(SassRewriteError):
    """A probe needs more registers than the kernel's count leaves free where it goes
    (instrument.py may raise the count where that costs no occupancy, or leave the reading
    out). `reading`: the number of the reading, None for the prologue or an epilogue."""

    def __init__(self, message: str, reading: int | None = None):
        super().__init__(message)
        self.reading = reading


@dataclass(frozen=True)
class Reading:
    index: int  # the reading is taken just before this instruction issues
    tag: int    # the event's tag (layout.make_tag)


@dataclass(frozen=True)
class Parameters:
    """Constant-bank addresses of the three parameters the tier appends (docs/FORMAT.md)."""
    slots: int       # u64: the address of the first warp slot
    slot_bytes: int  # u32: bytes per warp slot (its records, then its header)
    capacity: int    # u32: events per warp the host keeps


@dataclass
class _Op:
    """One inserted instruction before it is encoded: what it reads and writes (registers.py
    bits), how long a reader of its result must wait, and its control fields."""
    make: Callable[[Control], E.Words]
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    latency: int = 0
    stall: int = 1
    write_barrier: int = NO_BARRIER
    read_barrier: int = NO_BARRIER
    wait: int = 0
    store: bool = False  # a store: its uniform address must be ADDRESS_LATENCY old

    def words(self) -> E.Words:
        return self.make(Control(stall=self.stall, write_barrier=self.write_barrier,
                                 read_barrier=self.read_barrier, wait_mask=self.wait))


@dataclass
class Plan:
    """The probes of one kernel: instructions to insert before each index (rewrite.rewrite's
    `insertions`), the uniform registers they keep, and per reading where its store went."""
    insertions: dict[int, list[E.Words]]
    state: tuple[int, ...]
    stores: list[int] = field(default_factory=list)  # per reading, the index its stores precede
    read_at: list[int] = field(default_factory=list)  # per reading, the index it is read before (moved
    #                                                   from its site's where no registers were free there)
    words: list[int] = field(default_factory=list)    # per reading, its word in its record
    events: list[int] = field(default_factory=list)   # per reading, the readings of the record it starts (0: none)

    @property
    def inserted(self) -> int:
        return sum(map(len, self.insertions.values()))


# Registers are named by their bit's position in registers.py masks.
def _r(n: int) -> int:
    return regs.GPR_BASE + n


def _ur(n: int) -> int:
    return regs.UNIFORM_BASE + n


def _p(n: int) -> int:
    return regs.PREDICATE_BASE + n


def _up(n: int) -> int:
    return regs.UNIFORM_PREDICATE_BASE + n


def state_registers(liveness: Liveness) -> tuple[int, int, int]:
    """(next pair, end pair, room): uniform registers the kernel never names (pairs even)."""
    named = 0
    for use in liveness.uses:
        named |= use.reads | use.writes
    free = [n for n in range(FIRST_STATE_UR, regs.UNIFORM_COUNT) if not named >> (regs.UNIFORM_BASE + n) & 1]
    pairs = [n for n in free if n % 2 == 0 and n + 1 in free]
    if len(pairs) >= 2:
        first, second = pairs[-1], pairs[-2]
        singles = [n for n in free if n not in (first, first + 1, second, second + 1)]
        if singles:
            return first, second, singles[-1]
    raise SassRewriteError(f"kernel {liveness.cfg.kernel}: the probes need 5 uniform registers the kernel never "
                           f"names (two pairs and one more); it leaves {len(free)} ({', '.join(f'UR{n}' for n in free)})")


def plan(liveness: Liveness, readings: list[Reading], params: Parameters, site_numbers: list[int]) -> Plan:
    """The probes of every reading (`site_numbers[k]`: the site number reading k's record
    names), the prologue and the epilogues, with their stalls and waits settled."""
    cfg = liveness.cfg
    kernel = cfg.kernel
    instructions = cfg.instructions
    if any(i.target == 0 and i.base != "RET" for i in instructions):  # RET.REL counts from the start
        raise SassRewriteError(f"kernel {kernel}: a branch returns to the first instruction, where the prologue goes")
    nxt, end, room = state_registers(liveness)
    ops: dict[int, list[_Op]] = defaultdict(list)
    # Probes placed at one index run in the order they were added: stores of earlier readings
    # first, then the readings (the last reading is the one right before the instruction).
    late: dict[int, list[_Op]] = defaultdict(list)
    _prologue(liveness, params, nxt, end, room, ops)
    state = (nxt, nxt + 1, end, end + 1, room)
    read_at = _positions(liveness, readings, state)
    groups = _groups(liveness, read_at)
    stores, words, events = [0] * len(readings), [0] * len(readings), [0] * len(readings)
    for run in _runs(cfg, read_at, groups):
        _run(liveness, run, read_at, groups, site_numbers, state, ops, late, stores)
        for g in run:
            for m, k in enumerate(groups[g]):
                words[k] = SITE_WORD - len(groups[g]) + m
            events[groups[g][0]] = len(groups[g])
    for instruction in instructions:
        if instruction.base == "EXIT" and instruction.predicate not in ("@!PT", "@!UPT") \
                and cfg.reachable[cfg.block_of[instruction.index]]:
            _epilogue(liveness, instruction, nxt, end, room, late)
    merged = {i: ops.get(i, []) + late.get(i, []) for i in set(ops) | set(late)}
    scheduled = _schedule(liveness, merged, (_ur(nxt), _ur(nxt + 1), _ur(room)))
    return Plan({i: [op.words() for op in items] for i, items in scheduled.items() if items},
                state, stores, read_at, words, events)


# ---------------------------------------------------------------- the three kinds of probe

def _prologue(liveness: Liveness, params: Parameters, nxt: int, end: int, room: int, ops) -> None:
    """Before instruction 0: the warp's slot (slot = ((ctaid.z * nctaid.y + ctaid.y) * nctaid.x
    + ctaid.x) * ntid.x + tid.x) / 32, Triton's blocks being whole warps along x), the state
    registers, and the header's entry fields (timer and clock, magic, warp, block, SM)."""
    take = _Allocator(liveness, 0, "entry, for the prologue")
    times, ids = take(4), take(4)  # (gt lo, gt hi, ck lo, ck hi), (magic, warp, ctaid.x, ctaid.y)
    z_sm, base = take(2), take(2)
    grid_x, grid_y, slot_bytes, capacity, tid, ntid, linear = (take(1) for _ in range(7))
    slot_ptr, hdr = base, (grid_x, grid_y)  # each computed where its inputs are no longer needed
    R, U = E.Reg, E.UReg
    board = PROLOGUE_BOARD
    out = ops[0]

    def variable(make, reg, width=1):
        out.append(_Op(make, writes=tuple(_r(reg + k) for k in range(width)), write_barrier=board))

    variable(lambda c: E.s2r(R(tid), "SR_TID.X", control=c), tid)
    variable(lambda c: E.s2r(R(ids + 2), "SR_CTAID.X", control=c), ids + 2)
    variable(lambda c: E.s2r(R(ids + 3), "SR_CTAID.Y", control=c), ids + 3)
    variable(lambda c: E.s2r(R(z_sm), "SR_CTAID.Z", control=c), z_sm)
    variable(lambda c: E.s2r(R(z_sm + 1), "SR_VIRTUALSMID", control=c), z_sm + 1)
    variable(lambda c: E.ldc(R(grid_x), 0xC, control=c), grid_x)  # nctaid.x
    variable(lambda c: E.ldc(R(grid_y), 0x10, control=c), grid_y)  # nctaid.y
    variable(lambda c: E.ldc(R(ntid), 0x0, control=c), ntid)  # ntid.x
    variable(lambda c: E.ldc(R(base), params.slots, wide=True, control=c), base, 2)
    variable(lambda c: E.ldc(R(slot_bytes), params.slot_bytes, control=c), slot_bytes)
    variable(lambda c: E.ldc(R(capacity), params.capacity, control=c), capacity)
    out.append(_Op(lambda c: E.cs2r(R(times), "SR_GLOBALTIMERLO", control=c), writes=(_r(times), _r(times + 1)),
                   latency=SLOW_LATENCY))
    out.append(_Op(lambda c: E.cs2r(R(times + 2), "SR_CLOCKLO", control=c), writes=(_r(times + 2), _r(times + 3)),
                   latency=SLOW_LATENCY))
    out.append(_Op(lambda c: E.mov(R(ids), FORMAT["WARP_MAGIC"], control=c), writes=(_r(ids),),
                   latency=FIXED_LATENCY))

    def alu(make, reads, writes):
        out.append(_Op(make, reads=tuple(_r(r) for r in reads), writes=tuple(_r(r) for r in writes),
                       latency=FIXED_LATENCY))

    alu(lambda c: E.imad(R(linear), R(z_sm), R(grid_y), R(ids + 3), control=c), (z_sm, grid_y, ids + 3), (linear,))
    alu(lambda c: E.imad(R(linear), R(linear), R(grid_x), R(ids + 2), control=c), (linear, grid_x, ids + 2), (linear,))
    alu(lambda c: E.imad(R(linear), R(linear), R(ntid), R(tid), control=c), (linear, ntid, tid), (linear,))
    alu(lambda c: E.shf(R(linear), E.RZ, 5, R(linear), right=True, kind="U32", high=True, control=c),
        (linear,), (linear,))
    alu(lambda c: E.shf(R(ids + 1), E.RZ, 5, R(tid), right=True, kind="U32", high=True, control=c),
        (tid,), (ids + 1,))
    alu(lambda c: E.imad(R(slot_ptr), R(linear), R(slot_bytes), R(base), wide=True, control=c),
        (linear, slot_bytes, base, base + 1), (slot_ptr, slot_ptr + 1))
    predicates = liveness.free_predicates(0)
    if not predicates:
        raise TooFewRegisters(f"kernel {liveness.cfg.kernel}: no predicate is free at entry, for the prologue")
    carry = predicates[0]
    out.append(_Op(lambda c: E.iadd3(R(hdr[0]), R(slot_ptr), R(slot_bytes), carry_out=E.Pred(carry), control=c),
                   reads=(_r(slot_ptr), _r(slot_bytes)), writes=(_r(hdr[0]), _p(carry)), latency=FIXED_LATENCY))
    alu(lambda c: E.iadd3_x(R(hdr[1]), R(slot_ptr + 1), E.RZ, E.RZ, E.Pred(carry), control=c),
        (slot_ptr + 1,), (hdr[1],))
    out[-1].reads += (_p(carry),)
    for ureg, reg in ((nxt, slot_ptr), (nxt + 1, slot_ptr + 1), (end, hdr[0]), (end + 1, hdr[1]), (room, capacity)):
        out.append(_Op(lambda c, u=ureg, r=reg: E.r2ur(U(u), R(r), control=c), reads=(_r(reg),), writes=(_ur(ureg),),
                       latency=SLOW_LATENCY))
    for offset, data, width in ((FORMAT["SH_GT_ENTRY"], times, 128), (FORMAT["SH_MAGIC"], ids, 128),
                                (FORMAT["SH_BLOCK_Z"], z_sm, 64)):
        out.append(_Op(lambda c, o=offset, d=data, w=width: E.stg_uniform(U(end), R(d), offset=o - _HEADER, width=w,
                                                                          eviction="EF", control=c),
                       reads=(_ur(end), _ur(end + 1)) + tuple(_r(data + k) for k in range(width // 32)),
                       read_barrier=board, store=True))


def _positions(liveness: Liveness, readings: list[Reading], state: tuple[int, ...]) -> list[int]:
    """Where each reading is taken: at its site, or, where neither a general register nor a
    uniform record (_uniform_store) fits there, at the nearest instruction of its block that
    has a general register, between its neighbours (records stay in program order)."""
    cfg = liveness.cfg
    out = []
    for k, reading in enumerate(readings):
        i = reading.index
        if not 0 <= i < len(cfg.instructions):
            raise SassRewriteError(f"kernel {cfg.kernel}: a reading at instruction {i} is outside the kernel")
        limit = readings[k + 1].index if k + 1 < len(readings) else len(cfg.instructions)
        if not _free_for_record(liveness, i, i, 1) and _uniform_store(liveness, [i], limit, state) is None:
            block = cfg.block_at(i)
            span = range(max(block.start, out[-1] if out else 0), min(block.end, limit + 1))
            near = sorted((m for m in span if m != i), key=lambda m: (abs(m - i), m))
            i = next((m for m in near[:MAX_SINK] if _free_for_record(liveness, m, m, 1)), i)
        out.append(i)
    return out


def _groups(liveness: Liveness, read_at: list[int]) -> list[list[int]]:
    """Consecutive readings of one block share a record, READINGS_PER_RECORD at most, while
    registers for all of them (and the site number) stay free from the first to the last."""
    cfg = liveness.cfg
    groups: list[list[int]] = []
    for k, at in enumerate(read_at):
        if groups:
            group = groups[-1]
            first = read_at[group[0]]
            if (len(group) < READINGS_PER_RECORD and cfg.block_of[first] == cfg.block_of[at]
                    and _free_for_record(liveness, first, at, len(group) + 1)):
                group.append(k)
                continue
        groups.append([k])
    return groups


def _runs(cfg, read_at: list[int], groups: list[list[int]]) -> list[list[int]]:
    """Consecutive records of one block (MAX_RUN_RECORDS at most) form a run with one room test."""
    runs: list[list[int]] = []
    for g, group in enumerate(groups):
        block = cfg.block_of[read_at[group[0]]]
        if runs and len(runs[-1]) < MAX_RUN_RECORDS and cfg.block_of[read_at[groups[runs[-1][0]][0]]] == block:
            runs[-1].append(g)
        else:
            runs.append([g])
    return runs


def _run(liveness: Liveness, run: list[int], read_at: list[int], groups: list[list[int]], site_numbers: list[int],
         state: tuple[int, ...], ops, late, stores: list[int]) -> None:
    """The probes of a run of records: one room test and one room update at its first reading,
    record m at row `next` + m, and one advance of `next` past the run's rows after its last
    stores when the test passed. Where no uniform predicate stays free over the whole run, the
    updated room is tested at the run's end instead (room > -readings)."""
    cfg = liveness.cfg
    instructions = cfg.instructions
    nxt, room = state[0], state[4]
    first = read_at[groups[run[0]][0]]
    mark = len(late[first])  # the room test goes before the run's first probes
    placed = []
    for m, g in enumerate(run):
        nxt_first = read_at[groups[g + 1][0]] if g + 1 < len(groups) else len(instructions)
        try:
            placed.append(_record(liveness, [read_at[k] for k in groups[g]], site_numbers[groups[g][0]], m, state,
                                  ops, late, nxt_first))
        except TooFewRegisters as error:
            raise TooFewRegisters(str(error), groups[g][0]) from None
        for k in groups[g]:
            stores[k] = placed[-1][0]
    j, where = placed[-1]
    events = sum(len(groups[g]) for g in run)
    U = E.UReg
    update = _Op(lambda c: E.uiadd3(U(room), U(room), -events, control=c), reads=(_ur(room),), writes=(_ur(room),),
                 latency=FIXED_LATENCY)
    predicates = liveness.free_uniform_predicates(first, max(first, j - 1))
    if predicates:  # the test at the run's start, where its latency passes under the kernel's code
        up = predicates[-1]
        test = _Op(lambda c: E.uisetp(E.UPred(up), "GT", U(room), 0, unsigned=False, control=c), reads=(_ur(room),),
                   writes=(_up(up),), latency=PREDICATE_LATENCY)
        late[first][mark:mark] = [test, update]
    else:  # no uniform predicate stays free over the run: test the updated room at its end
        predicates = liveness.free_uniform_predicates(j)
        if not predicates:
            raise TooFewRegisters(f"kernel {cfg.kernel}: no uniform predicate is free at instruction {j} for a "
                                  "record", groups[run[0]][0])
        up = predicates[-1]
        late[first][mark:mark] = [update]
        where.append(_Op(lambda c: E.uisetp(E.UPred(up), "GT", U(room), -events, unsigned=False, control=c),
                         reads=(_ur(room),), writes=(_up(up),), latency=PREDICATE_LATENCY))
    where.append(_Op(lambda c: E.uiadd3(U(nxt), U(nxt), FORMAT["RECORD_BYTES"] * len(run), guard=E.UPred(up),
                                        control=c), reads=(_ur(nxt), _up(up)), writes=(_ur(nxt),),
                     latency=FIXED_LATENCY))


def _record(liveness: Liveness, read_at: list[int], site: int, row: int, state: tuple[int, ...], ops, late,
            limit: int) -> tuple[int, list]:
    """The probes of one record, row `row` of its run, its readings taken before the
    instructions `read_at` of one block; returns the index its stores go before (sunk at most
    to `limit`, the next record's first reading, so that records are written in program order)
    and the list they are in. Where general registers are short, a uniform record."""
    try:
        return _general_record(liveness, read_at, site, row, state[0], ops, late, limit)
    except TooFewRegisters:
        store = _uniform_store(liveness, read_at, limit, state)
        if store is None:
            raise
        return _uniform_record(liveness, read_at, site, row, state[0], ops, late, store)


def _general_record(liveness: Liveness, read_at: list[int], site: int, row: int, nxt: int, ops, late,
                    limit: int) -> tuple[int, list]:
    """A record whose readings are taken into general registers (CS2R), which hold them up to
    its stores."""
    cfg = liveness.cfg
    first, last, count = read_at[0], read_at[-1], len(read_at)
    block = cfg.block_at(first)
    # Sink the stores as far as STORE_DISTANCE kernel cycles past the last reading, while the
    # registers stay free, within the block.
    def sink(need: int) -> int | None:
        """How far the stores go while `need` registers stay free; None: not even past the last reading."""
        j, cycles = None, 0
        for k in range(last, min(block.end - 1, limit, last + MAX_SINK)):
            if len(liveness.free_registers(first, k)) < need:
                break
            j = k + 1
            cycles += control_of(cfg.instructions[k]).stall
            if cycles >= STORE_DISTANCE:
                break
        if j is None and len(liveness.free_registers(first, last)) >= need:
            j = last  # the stores go right after the last reading, before its instruction
        return j

    # With the site's register free all along where that allows, else the readings' alone.
    j = sink(count + 1)
    if j is None:
        j = sink(count)
    if j is None:
        raise TooFewRegisters(f"kernel {cfg.kernel}: no {count} registers are free at instruction {first} "
                              f"({cfg.instructions[first].opcode}) for a reading")
    window = max(last, j - 1)
    R, U = E.Reg, E.UReg
    if len(liveness.free_registers(first, window)) > count:
        words, vectors = _record_layout(liveness, first, window, block, count)
        rs, times = words[SITE_WORD], [words[SITE_WORD - count + m] for m in range(count)]
        late[first].append(_Op(lambda c: E.mov(R(rs), site, control=c), writes=(_r(rs),), latency=FIXED_LATENCY))
    else:  # registers are short at the readings: the site's number is set nearer its store
        times = sorted(liveness.free_registers(first, window), reverse=True)[:count]
        at, rs = _site_register(liveness, first, window, set(times))
        if rs is None:
            raise TooFewRegisters(f"kernel {cfg.kernel}: no register is free for a record's site between "
                                  f"instructions {first} and {window}")
        vectors = [(SITE_WORD - count + m, rt, 1) for m, rt in enumerate(times)] + [(SITE_WORD, rs, 1)]
        mov = _Op(lambda c: E.mov(R(rs), site, control=c), writes=(_r(rs),), latency=FIXED_LATENCY)
        (late[first] if at == first else ops[at]).append(mov)
    for at, rt in zip(read_at, times):
        late[at].append(_Op(lambda c, rt=rt: E.cs2r(R(rt), "SR_CLOCKLO", wide=False, control=c), writes=(_r(rt),),
                            latency=CLOCK_LATENCY))
    offset = row * FORMAT["RECORD_BYTES"]
    where = late[last] if j == last else ops[j]
    where.extend(_Op(lambda c, d=data, w=word, n=width: E.stg_uniform(U(nxt), R(d), offset=offset + 4 * w,
                                                                      width=32 * n, eviction="EF", control=c),
                     reads=(_ur(nxt), _ur(nxt + 1)) + tuple(_r(data + m) for m in range(width)),
                     read_barrier=BOARD_CHOSEN_LATER, store=True)
                 for word, data, width in vectors)
    return j, where


@dataclass(frozen=True)
class _UniformStore:
    """Where a uniform record's readings are moved into general registers and stored."""
    at: int                   # the stores go before this instruction
    uniforms: tuple[int, ...]  # per reading, the uniform register it is taken into
    board: int                # the scoreboard its S2URs set, waited on by the moves
    registers: list[int]      # general registers free at `at`: one per word, or one for all in turn


def _uniform_store(liveness: Liveness, read_at: list[int], limit: int, state: tuple[int, ...]) -> _UniformStore | None:
    """Where a record of readings at `read_at` (one block) can keep them in uniform registers:
    the first instruction from the last reading on, up to `limit` and before the block's last,
    STORE_DISTANCE kernel cycles past it at which general registers for every word are free
    (else the furthest with them, else the furthest with one), while uniform registers for the
    readings and a scoreboard stay free from the first reading to there. None where there is no
    such place."""
    cfg = liveness.cfg
    first, last, count = read_at[0], read_at[-1], len(read_at)
    block = cfg.block_at(first)
    whole = single = None
    cycles = 0
    # What stays free from the first reading on, grown one instruction at a time: free over a
    # window is free at each of its instructions.
    uniforms = set(liveness.free_uniform_registers(first)) - set(state)
    boards = set(liveness.scoreboards.idle(first))
    grown = first
    for j in range(last, min(block.end - 1, limit) + 1):
        while grown < max(last, j - 1):
            grown += 1
            uniforms &= set(liveness.free_uniform_registers(grown))
            boards &= set(liveness.scoreboards.idle(grown))
        if len(uniforms) < count or not boards:
            break
        free = liveness.free_registers(j)
        if free:
            store = _UniformStore(j, tuple(sorted(uniforms)[-count:]), max(boards), free)
            if len(free) > count:
                whole = store
                if cycles >= STORE_DISTANCE:
                    break
            else:
                single = store
        cycles += control_of(cfg.instructions[j]).stall
    return whole or single


def _uniform_record(liveness: Liveness, read_at: list[int], site: int, row: int, nxt: int, ops, late,
                    store: _UniformStore) -> tuple[int, list]:
    """A record whose readings find no general register free: each taken into a uniform
    register (S2UR, setting a scoreboard), then at `store.at` moved into general registers
    (MOV, which waits on it) with the site's number, and stored. With one register free
    there, each word in turn: the next move waits for the store before it to read it."""
    cfg = liveness.cfg
    first, last, count = read_at[0], read_at[-1], len(read_at)
    j = store.at
    R, U = E.Reg, E.UReg
    for at, u in zip(read_at, store.uniforms):
        late[at].append(_Op(lambda c, u=u: E.s2ur(U(u), "SR_CLOCKLO", control=c), writes=(_ur(u),),
                            write_barrier=store.board))
    values = [(SITE_WORD - count + m, U(u), (_ur(u),)) for m, u in enumerate(store.uniforms)]
    values.append((SITE_WORD, site, ()))
    if len(store.registers) > count:
        words, vectors = _record_layout(liveness, j, j, cfg.block_at(first), count)
    else:
        words, vectors = {w: store.registers[-1] for w, _, _ in values}, None
    where = late[last] if j == last else ops[j]
    offset = row * FORMAT["RECORD_BYTES"]

    def put(word: int, data: int, width: int) -> _Op:
        return _Op(lambda c: E.stg_uniform(U(nxt), R(data), offset=offset + 4 * word, width=32 * width,
                                           eviction="EF", control=c),
                   reads=(_ur(nxt), _ur(nxt + 1)) + tuple(_r(data + m) for m in range(width)),
                   read_barrier=BOARD_CHOSEN_LATER, store=True)
    for word, value, reads in values:
        where.append(_Op(lambda c, r=words[word], v=value: E.mov(R(r), v, control=c), reads=reads,
                         writes=(_r(words[word]),), latency=FIXED_LATENCY))
        if vectors is None:
            where.append(put(word, words[word], 1))
    for word, data, width in vectors or ():
        where.append(put(word, data, width))
    return j, where


def _record_layout(liveness: Liveness, i: int, k: int, block, count: int) -> tuple[dict[int, int], list]:
    """Registers free over i..k for a record of `count` readings, and the stores that write it:
    ({word: register}, [(first word, first register, words)]). The site is the last word, the
    readings the words just before it. One 128-bit store where an aligned quad is free, else a
    64-bit store of the last reading and the site from a free pair (and of the first two
    readings from another), else 32-bit stores. Among free registers, those the kernel writes
    last after k in the block come first (none at all is best): the longer they stay untouched,
    the later the wait on the stores reading them can go, and the likelier the kernel's own
    waits cover it."""
    def next_write(r: int, width: int = 1) -> int:
        return min(next((m for m in range(k + 1, block.end) if liveness.uses[m].writes >> (r + n) & 1),
                        block.end + r) for n in range(width))
    first_word = SITE_WORD - count
    quads = sorted(liveness.free_registers(i, k, width=4), key=lambda r: next_write(r, 4), reverse=True)
    if quads:
        quad = quads[0]
        return {w: quad + w for w in range(first_word, SITE_WORD + 1)}, [(0, quad, 4)]
    words: dict[int, int] = {}
    vectors = []
    pairs = sorted(liveness.free_registers(i, k, width=2), key=lambda r: next_write(r, 2), reverse=True)
    for low in (SITE_WORD - 1, 0):  # words 2-3 (the last reading and the site), then 0-1
        if pairs and low >= first_word:
            pair = pairs.pop(0)
            words.update({low: pair, low + 1: pair + 1})
            vectors.append((low, pair, 2))
    taken = {r for _, first, n in vectors for r in range(first, first + n)}
    singles = sorted((r for r in liveness.free_registers(i, k) if r not in taken), key=next_write, reverse=True)
    for w in range(first_word, SITE_WORD + 1):
        if w not in words:
            words[w] = singles.pop(0)
            vectors.append((w, words[w], 1))
    return words, vectors


def _site_register(liveness: Liveness, first: int, window: int, taken: set[int]) -> tuple[int, int | None]:
    """(where, register): the earliest instruction from `first` on from which a register other
    than `taken` stays free up to `window`, for a record's site number."""
    for at in range(first, window + 1):
        free = [r for r in liveness.free_registers(at, window) if r not in taken]
        if free:
            return at, free[-1]
    return window, None


def _free_for_record(liveness: Liveness, i: int, k: int, readings: int) -> bool:
    """Whether registers for `readings` readings are free over i..k."""
    return len(liveness.free_registers(i, k)) >= readings


def _epilogue(liveness: Liveness, exit_instruction, nxt: int, end: int, room: int, late) -> None:
    """Before an EXIT: the exit timer and clock, the room left and the next record's address,
    stored under the EXIT's own guard (a warp that goes on past a guarded EXIT writes them at
    the one it takes)."""
    e = exit_instruction.index
    guard = _guard(liveness.cfg.kernel, exit_instruction)
    R, U = E.Reg, E.UReg
    where = f"the EXIT at instruction {e}"
    try:
        take = _Allocator(liveness, e, where)
        timer, clock, counts = take(2), take(2), take(2)
    except TooFewRegisters:  # wait for the transfers still reading registers, which frees them
        pending = liveness.scoreboards.pending(e)
        late[e].append(_Op(lambda c: E.nop(control=c), wait=pending))
        take = _Allocator(liveness, e, where, in_flight=False)
        try:
            timer, clock, counts = take(2), take(2), take(2)
        except TooFewRegisters:  # one pair, each value stored before the next is read into it
            take = _Allocator(liveness, e, where, in_flight=False)
            timer = clock = counts = take(2)
    read_timer = [_Op(lambda c: E.cs2r(R(timer), "SR_GLOBALTIMERLO", control=c), writes=(_r(timer), _r(timer + 1)),
                      latency=CLOCK_LATENCY)]
    read_clock = [_Op(lambda c: E.cs2r(R(clock), "SR_CLOCKLO", control=c), writes=(_r(clock), _r(clock + 1)),
                      latency=CLOCK_LATENCY)]
    read_counts = [_Op(lambda c: E.mov(R(counts), U(room), control=c), reads=(_ur(room),), writes=(_r(counts),),
                       latency=FIXED_LATENCY),
                   _Op(lambda c: E.mov(R(counts + 1), U(nxt), control=c), reads=(_ur(nxt),), writes=(_r(counts + 1),),
                       latency=FIXED_LATENCY)]
    stores = [_Op(lambda c, o=offset, d=data: E.stg_uniform(U(end), R(d), offset=o - _HEADER, width=64,
                                                            eviction="EF", guard=guard, control=c),
                  reads=(_ur(end), _ur(end + 1), _r(data), _r(data + 1)), store=True)
              for offset, data in ((FORMAT["SH_GT_EXIT"], timer), (FORMAT["SH_CK_EXIT"], clock),
                                   (FORMAT["SH_EVENTS"], counts))]
    if len({timer, clock, counts}) == 3:  # every value read first, then the three stores
        late[e] += read_timer + read_clock + read_counts + stores
    else:  # each store reads the pair through a scoreboard the next value's reading waits for
        for store in stores[:2]:
            store.read_barrier = BOARD_CHOSEN_LATER
        late[e] += read_timer + stores[:1] + read_clock + stores[1:2] + read_counts + stores[2:]


class _Allocator:
    """Aligned groups of the general registers free at one instruction, handed out once each."""

    def __init__(self, liveness: Liveness, index: int, where: str, in_flight: bool = True):
        if in_flight:
            self.free = set(liveness.free_registers(index))
        else:  # after a wait on every pending scoreboard: what is live or touched here is busy, and
            # what a transfer with no scoreboard may still read or write (no wait ends it)
            results, sources = liveness.scoreboards.in_flight_on(index, UNBARRIERED)
            busy = (liveness.live_in[index] | liveness.uses[index].reads | liveness.uses[index].writes
                    | results | sources)
            self.free = {r for r in range(liveness.register_limit) if not busy >> r & 1}
        self.kernel, self.where = liveness.cfg.kernel, where

    def __call__(self, width: int) -> int:
        for r in sorted(self.free):
            if r % width == 0 and all(r + k in self.free for k in range(width)):
                self.free -= set(range(r, r + width))
                return r
        raise TooFewRegisters(f"kernel {self.kernel}: too few registers free at {self.where}")


def _guard(kernel: str, instruction) -> E.Pred | None:
    text = instruction.predicate
    if text in (None, "@PT"):
        return None
    name = text.lstrip("@")
    negated = name.startswith("!")
    name = name.lstrip("!")
    if not (name.startswith("P") and name[1:].isdigit()):
        raise SassRewriteError(f"kernel {kernel}: the EXIT at instruction {instruction.index} is guarded by {text}, "
                               "which a store cannot take")
    return E.Pred(int(name[1:]), negated)


# ---------------------------------------------------------------- stalls and waits

def _schedule(liveness: Liveness, ops: dict[int, list[_Op]], state: tuple[int, ...]) -> dict[int, list[_Op]]:
    """Walk each block with its probes in place, counting cycles by stall counts: a probe that
    reads a result not ready yet gets a NOP (or a longer stall before it); results are ready by
    the block's end; a variable-latency write is waited on by its first reader; registers a
    store still reads are waited on before anything writes them, and by the block's end."""
    cfg = liveness.cfg
    instructions = cfg.instructions
    out: dict[int, list[_Op]] = {}
    kernel_reads_in = _kernel_reads_in_flight(liveness)
    for block in cfg.blocks:
        cycle = 0
        immediate = 0  # scoreboards to wait on before the next kernel instruction
        ready: dict[int, int] = {}
        # The state may have been written in the block before, ready for an ALU reader at its end.
        address_ready = {r: ADDRESS_LATENCY - FIXED_LATENCY for r in state}
        written_by: dict[int, int] = {}   # register bit -> scoreboard of a variable-latency write
        reading: dict[int, int] = {}      # register bit -> scoreboard a store reads it through
        # Registers the kernel's own stores (and other variable-latency readers) may still be
        # reading, each with the mask of the read scoreboards: a probe that writes one waits first.
        kernel_reading = dict(kernel_reads_in[block.index])
        for p in range(block.start, block.end):
            items: list[_Op] = []
            for op in ops.get(p, []):
                if op.read_barrier == BOARD_CHOSEN_LATER:  # a record store
                    op.read_barrier, now = _store_board(liveness, block, p, op)
                    immediate |= now << op.read_barrier
                need = max((ready.get(r, 0) for r in op.reads), default=0)
                if op.store:
                    need = max([need] + [address_ready.get(r, 0) for r in op.reads if r >= regs.UNIFORM_BASE])
                if need > cycle:
                    cycle = _pad(items, need - cycle, cycle)
                for r in op.reads:
                    if r in written_by:
                        op.wait |= 1 << written_by[r]
                if op.wait:
                    _release(op.wait, written_by, reading)
                hazard = [r for r in op.writes if r in reading or r in kernel_reading]
                if hazard:
                    waits = 0
                    for r in hazard:
                        waits |= (1 << reading[r] if r in reading else 0) | kernel_reading.get(r, 0)
                    op.wait |= waits
                    _release(waits, written_by, reading)
                    _release_reads(waits, kernel_reading)
                items.append(op)
                for r in op.writes:
                    if op.write_barrier != NO_BARRIER:
                        written_by[r] = op.write_barrier
                    ready[r] = cycle + op.latency
                    if regs.UNIFORM_BASE <= r < regs.PREDICATE_BASE:
                        address_ready[r] = cycle + max(op.latency, ADDRESS_LATENCY)
                if op.read_barrier != NO_BARRIER:
                    for r in op.reads:
                        if r < regs.UNIFORM_BASE:
                            reading[r] = op.read_barrier
                cycle += op.stall
            kernel = instructions[p]
            use = liveness.uses[p]
            _release(released(kernel), written_by, reading)  # the kernel's own waits cover the probes' too
            _release_reads(released(kernel), kernel_reading)
            taken = _taken(liveness, p)
            touched = [r for r in reading if taken >> r & 1]
            at_end = p == block.end - 1 and not (kernel.base == "EXIT" and kernel.predicate in (None, "@PT"))
            waits = immediate
            for r in (reading if at_end else touched):
                waits |= 1 << reading[r]
            if waits:
                items.append(_Op(lambda c: E.nop(control=c), wait=waits))
                _release(waits, written_by, reading)
                immediate = 0
                cycle += 1
            if written_by and (at_end or any(use.reads >> r & 1 or use.writes >> r & 1 for r in written_by)):
                raise SassRewriteError(f"kernel {cfg.kernel}: a probe's variable-latency result is still pending at "
                                       f"instruction {p}")
            if at_end:  # only the state registers live on into the next block
                behind = max((ready.get(r, 0) for r in state), default=0) - (cycle + control_of(kernel).stall)
                if behind > 0:
                    cycle = _pad(items, behind, cycle)
            if items:
                out[p] = items
            _note_reads(kernel_reading, kernel, use.reads)
            cycle += control_of(kernel).stall
    return out


def _note_reads(in_flight: dict[int, int], instruction, reads: int) -> None:
    """After `instruction` issues: its general registers stay read through its read scoreboard,
    when it sets one, until an instruction waits on it (values: masks of scoreboards)."""
    board = control_of(instruction).read_barrier
    if board == NO_BARRIER:
        return
    mask = reads & regs.GPRS
    while mask:
        low = mask & -mask
        r = low.bit_length() - 1
        in_flight[r] = in_flight.get(r, 0) | 1 << board
        mask ^= low


def _release_reads(mask: int, in_flight: dict[int, int]) -> None:
    """The scoreboards of `mask` are waited on: reads through them are done."""
    for r in list(in_flight):
        left = in_flight[r] & ~mask
        if left:
            in_flight[r] = left
        else:
            del in_flight[r]


def _kernel_reads_in_flight(liveness: Liveness) -> list[dict[int, int]]:
    """Per block, the registers the kernel's own instructions may still be reading when it
    starts (register bit -> read scoreboard), through every path that reaches it: solved to a
    fixed point over the graph, without the probes."""
    cfg = liveness.cfg
    at_start: list[dict[int, int]] = [{} for _ in cfg.blocks]
    work = [b.index for b in cfg.blocks if cfg.reachable[b.index]]
    while work:
        b = work.pop()
        block = cfg.blocks[b]
        state = dict(at_start[b])
        for p in range(block.start, block.end):
            _release_reads(released(cfg.instructions[p]), state)
            _note_reads(state, cfg.instructions[p], liveness.uses[p].reads)
        for s in block.successors:
            merged = dict(at_start[s])
            for r, boards in state.items():
                merged[r] = merged.get(r, 0) | boards
            if merged != at_start[s]:
                at_start[s] = merged
                work.append(s)
    return at_start


def _taken(liveness: Liveness, k: int) -> int:
    """Registers kernel instruction k takes from whatever still reads them: those it writes, and
    at a WARPGROUP.ARRIVE those it hands to the MMAs after it (scoreboards.py)."""
    return liveness.uses[k].writes | liveness.scoreboards.fenced.get(k, 0)


def _store_board(liveness: Liveness, block, p: int, op: _Op) -> tuple[int, int]:
    """(scoreboard, wait at once) for a record store inserted before instruction p. Best, a
    scoreboard the kernel itself waits on before it next writes a register the store reads:
    that wait covers the store too, and nothing is added. Else one the kernel leaves idle until
    that write (a NOP waits there). Else one idle at p, or SB0, waited on at once."""
    data = [r for r in op.reads if r < regs.UNIFORM_BASE]
    instructions = liveness.cfg.instructions
    write = next((k for k in range(p, block.end) if any(_taken(liveness, k) >> r & 1 for r in data)), block.end)
    for k in range(p, write):
        freed = released(instructions[k]) & ((1 << SCOREBOARDS) - 1)
        if freed:
            return freed.bit_length() - 1, 0
    boards = liveness.scoreboards.idle(p, max(p, write - 1))
    if boards:
        return boards[-1], 0
    boards = liveness.scoreboards.idle(p)
    return (boards[-1] if boards else 0), 1


def _pad(items: list[_Op], cycles: int, cycle: int) -> int:
    """Make `cycles` more cycles pass before the next instruction of `items`: a longer stall on
    the last probe before it, NOPs for the rest."""
    if items and items[-1].stall < MAX_STALL:
        extra = min(cycles, MAX_STALL - items[-1].stall)
        items[-1].stall += extra
        cycles -= extra
        cycle += extra
    while cycles > 0:
        stall = min(cycles, MAX_STALL)
        items.append(_Op(lambda c: E.nop(control=c), stall=stall))
        cycles -= stall
        cycle += stall
    return cycle


def _release(mask: int, *tables: dict[int, int]) -> None:
    for table in tables:
        for r in [r for r, board in table.items() if mask >> board & 1]:
            del table[r]
