"""The sass tier's probes on every real corpus kernel and example, as Triton 3.9 (here) and the
H200's Triton 3.6 compiled them, with their markers and the automatic sites (auto=True).

Each rewritten kernel is read back with nvdisasm and aligned against the plain one (the plain
instructions must appear in order, bit for bit but for branch displacements); what is left
over is the probes. Those are then checked against the plain kernel's own liveness and control
bits: the registers they write are free where they hold values, the state uniform registers
are never the kernel's, the prologue and an epilogue before every EXIT write the warp's
header, each record's stores follow its readings in their block, every
fixed-latency result is read only after its latency has passed, every scoreboard a store reads
through is waited on before its registers are written again, and trace.sites' rows and the
SiteTable say what the code does: each record's words at row m of its run, one room test,
room update and advance per run of up to MAX_RUN_RECORDS records. Over the corpus (commit
6cdbe2b, Triton 3.9 here and the H200's 3.6 fixture): 41 kernels, 40,008 plain instructions
compared, 6,066 probes inserted."""
import collections
import functools
import re
from dataclasses import dataclass

import numpy as np
import pytest

from gwatch_nb.errors import SassRewriteError
from gwatch_nb._native import FORMAT
from gwatch_nb.layout import READINGS_PER_RECORD, WARP_MAGIC, make_tag
from gwatch_nb.sass import markers, registers as regs, waits
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.control import NO_BARRIER
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instrument import AUTO_SCOPE_BASE, SITE_COLUMNS, WARP_LANES, free_register_count, instrument
from gwatch_nb.sass.instruction import Instruction
from gwatch_nb.sass.lines import line_table
from gwatch_nb.sass.liveness import Liveness
from gwatch_nb.sass.probes import ADDRESS_LATENCY, MAX_RUN_RECORDS, MAX_SINK, PREDICATE_LATENCY, SITE_WORD
from gwatch_nb.sass.registers import register_use
from gwatch_nb.sass.scoreboards import FIXED_LATENCY, SLOW_LATENCY, UNBARRIERED, released
from gwatch_nb.sass.sites import place
from sass_cubins import CASES, H200_CUBINS, cubins, h200_cubins

CASE = {case.name: case for case in CASES}
with np.load(H200_CUBINS) as _archive:
    _H200_NAMES = set(_archive.files)
KERNELS = [("here", c.name) for c in CASES] + [("h200", c.name) for c in CASES if c.name in _H200_NAMES]
IDS = [f"{version}: {name}" for version, name in KERNELS]
#: Cases with no marker and no wait or loop: instrument() has nothing to read in them.
SITELESS = {"vector_add (no markers)"}
PROBED = [k for k in KERNELS if k[1] not in SITELESS]
PROBED_IDS = [f"{version}: {name}" for version, name in PROBED]

#: Cycles from a CS2R of a clock to a reader of its result: the most ptxas itself leaves (scoreboards.py).
CLOCK_READ_LATENCY = 9
#: What a probe may be, and how many cycles a reader of its result must wait (None: it sets a
#: scoreboard its reader waits on).
PROBE_LATENCY = {"S2R": None, "S2UR": None, "LDC": None, "CS2R": CLOCK_READ_LATENCY, "R2UR": SLOW_LATENCY, "MOV": FIXED_LATENCY,
                 "IMAD": FIXED_LATENCY, "SHF": FIXED_LATENCY, "IADD3": FIXED_LATENCY, "UIADD3": FIXED_LATENCY,
                 "UISETP": PREDICATE_LATENCY, "STG": None, "NOP": None}
_STORE_ADDRESS = re.compile(r"^\[RZ\.U32\+(UR\d+)(?:\+(-?0x[0-9a-f]+))?\]$")


@dataclass
class Probed:
    """A kernel before and after instrument(): `new` is the rewritten kernel as nvdisasm reads
    it; `anchor[n]` is the plain instruction new instruction n is (when not `inserted[n]`) or
    is inserted before; `position[i]` is where plain instruction i went."""
    kernel: str
    plain: list[Instruction]
    cfg: ControlFlowGraph
    liveness: Liveness
    result: object
    new: list[Instruction]
    position: list[int]
    anchor: list[int]
    inserted: list[bool]

    @functools.cached_property
    def uses(self):
        return [register_use(i, self.kernel) for i in self.new]

    def region(self, block) -> range:
        """New indices of a plain block: the probes before its first instruction to its last."""
        start = self.position[block.start]
        while start > 0 and self.inserted[start - 1] and self.anchor[start - 1] == block.start:
            start -= 1
        return range(start, self.position[block.end - 1] + 1)

    def block_of_new(self, n: int):
        return self.cfg.block_at(min(self.anchor[n], len(self.plain) - 1))


def _same(old: Instruction, new: Instruction) -> bool:
    """The same instruction, a branch's displacement aside (its target is compared on its own)."""
    if old.target is None:
        return (old.low, old.high) == (new.low, new.high)

    def untargeted(i):
        return tuple(o for o in i.operands if "`(" not in o)
    return (old.predicate, old.opcode, untargeted(old), old.control) == \
        (new.predicate, new.opcode, untargeted(new), new.control)


def align(plain: list[Instruction], new: list[Instruction]) -> tuple[list[int], list[int], list[bool]]:
    """(position, anchor, inserted): the plain instructions matched in order inside `new`; an
    instruction of `new` that is not the next plain one is inserted before it."""
    position, anchor, inserted = [], [0] * len(new), [True] * len(new)
    n = 0
    for old in plain:
        while n < len(new) and not _same(old, new[n]):
            anchor[n] = old.index
            n += 1
        assert n < len(new), f"plain instruction {old.index} ({old.opcode} {', '.join(old.operands)}) is not in " \
                             "the rewritten kernel"
        position.append(n)
        anchor[n], inserted[n] = old.index, False
        n += 1
    for k in range(n, len(new)):
        anchor[k] = len(plain)
    return position, anchor, inserted


_h200_cubins = functools.lru_cache(maxsize=None)(h200_cubins)  # read the archive once


def _cubin(version: str, name: str) -> bytes:
    return cubins()[name] if version == "here" else _h200_cubins()[name]


@functools.lru_cache(maxsize=None)
def probed(version: str, name: str) -> Probed | SassRewriteError | None:
    """The kernel instrumented with its markers and auto=True: a Probed, the one-line error
    instrument() raised, or None where it has no site at all."""
    cubin = _cubin(version, name)
    ((kernel, plain),) = disassemble(cubin).items()
    try:
        result = instrument(cubin, kernel, markers.from_source(CASE[name].fn), None, auto=True)
    except SassRewriteError as error:
        return error
    if result is None:
        return None
    ((_, new),) = disassemble(result.cubin).items()
    position, anchor, inserted = align(plain, new)
    cfg = ControlFlowGraph(plain, kernel)
    return Probed(kernel, plain, cfg, Liveness(cfg, result.cost["registers"][1]), result, new, position, anchor,
                  inserted)


def _probed_or_skip(version: str, name: str) -> Probed:
    got = probed(version, name)
    if isinstance(got, SassRewriteError):  # test_the_corpus_is_covered fails on it
        pytest.skip(f"instrument refused it: {got}")
    assert got is not None, "instrument() found no site to read"
    return got


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _stalls(p: Probed, first: int, last: int) -> int:
    """Cycles from new instruction `first` issuing to `last` issuing (the stall counts in between)."""
    return sum(p.new[k].control.stall for k in range(first, last))


def _last_reader(p: Probed, n: int, bit: int, region: range) -> int:
    """The last inserted instruction after n in its block that reads what n wrote to `bit`
    (before anything writes `bit` again); n when none does."""
    last = n
    for m in range(n + 1, region.stop):
        if p.inserted[m] and p.uses[m].reads >> bit & 1:
            last = m
        if p.uses[m].writes >> bit & 1:
            break
    return last


def _free(p: Probed, bit: int, i: int, j: int) -> bool:
    live = p.liveness
    for base, count, free in ((regs.UNIFORM_PREDICATE_BASE, regs.PREDICATE_COUNT, live.free_uniform_predicates),
                              (regs.UNIFORM_BASE, regs.UNIFORM_COUNT, live.free_uniform_registers),
                              (regs.PREDICATE_BASE, regs.PREDICATE_COUNT, live.free_predicates),
                              (regs.GPR_BASE, regs.GPR_COUNT, live.free_registers)):
        if base <= bit < base + count:
            return bit - base in free(i, j)
    raise AssertionError(f"register bit {bit} is not a register or a predicate")


def _freed_for_exit(p: Probed, n: int, bit: int) -> bool:
    """Whether probe n, in an EXIT's epilogue, writes a register that only a transfer in flight
    through a scoreboard still held, after a NOP that waits for every scoreboard pending there
    (a transfer that set none is ended by no wait)."""
    e = p.anchor[n]
    if p.plain[e].base != "EXIT" or not bit < regs.GPR_COUNT:
        return False
    live = p.liveness
    waited = [m for m in range(p.region(p.cfg.block_at(e)).start, n)
              if p.inserted[m] and p.anchor[m] == e and p.new[m].base == "NOP"]
    pending = live.scoreboards.pending(e)
    busy = live.live_in[e] | live.live_out[e] | live.uses[e].reads | live.uses[e].writes
    for held in live.scoreboards.in_flight_on(e, UNBARRIERED):
        busy |= held
    return any(p.new[m].control.wait_mask & pending == pending for m in waited) and not busy >> bit & 1


def _readings(p: Probed) -> list[int]:
    """New indices of the record readings (32-bit clock reads into a general register, or into
    a uniform one for a uniform record), in program order."""
    return [n for n, i in enumerate(p.new) if p.inserted[n] and i.opcode in ("CS2R.32", "S2UR")
            and i.operands[1] == "SR_CLOCKLO"]


def _store_word(instruction: Instruction) -> tuple[str, int]:
    at = _STORE_ADDRESS.match(instruction.operands[0])
    assert at, f"an inserted store addresses {instruction.operands[0]}"
    return at.group(1), int(at.group(2) or "0", 16)


#: Words a record store writes, by its opcode.
STORE_WORDS = {"STG.E.EF": 1, "STG.E.EF.64": 2, "STG.E.EF.128": 4}


def _register(operand: str) -> int:
    assert re.fullmatch(r"R\d+", operand), operand
    return int(operand[1:])


def _immediate(operand: str) -> int:
    return int(operand, 16)


def _last_writer(p: Probed, n: int, register: str) -> int | None:
    """The last instruction before new instruction n in its block that writes `register`."""
    region, mask = p.region(p.block_of_new(n)), regs.register_bit(register)
    return next((m for m in range(n - 1, region.start - 1, -1) if p.uses[m].writes & mask), None)


@dataclass
class Run:
    """A run of records as the rewritten code has it (new indices): its room update, its advance
    of the next-record register, the room tests found for it (one is right), its readings and
    its record stores."""
    update: int
    advance: int
    tests: list[int]
    readings: list[int]
    stores: list[int]


def _runs(p: Probed) -> list[Run]:
    """The runs, read off the rewritten code: each from its room update (`UIADD3 room, room,
    -n`) to its guarded advance (`@UPq UIADD3 next, next, 16r`), with the room tests after the
    previous run's advance."""
    state = p.result.cost["state_registers"]
    nxt, room = state[0], state[4]
    readings = set(_readings(p))
    runs, open_run, tests = [], None, []
    for n, i in enumerate(p.new):
        if not p.inserted[n]:
            continue
        if i.base == "UISETP":
            (tests if open_run is None else open_run.tests).append(n)
        elif i.base == "UIADD3" and i.operands[0] == room:
            assert open_run is None, f"the room update at new {n} comes inside the run at new {open_run.update}"
            assert i.predicate is None and i.operands[1] == room
            open_run, tests = Run(n, -1, tests, [], []), []
        elif i.base == "UIADD3" and i.operands[0] == nxt:
            assert open_run is not None, f"the advance at new {n} belongs to no run"
            open_run.advance = n
            runs.append(open_run)
            open_run = None
        elif n in readings or (i.base == "STG" and _store_word(i)[0] == nxt):
            assert open_run is not None, f"the {i.opcode} at new {n} belongs to no run"
            (open_run.readings if n in readings else open_run.stores).append(n)
    assert open_run is None and not tests
    return runs


# ---------------------------------------------------------------- the plain kernel plus readings

@pytest.mark.parametrize("version, name", KERNELS, ids=IDS)
def test_the_rewritten_kernel_is_the_plain_kernel_plus_probes(version, name):
    got = probed(version, name)
    if isinstance(got, SassRewriteError):
        assert "\n" not in str(got) and str(got).startswith("kernel ")
        return
    assert got is not None, "with auto=True every kernel has a site: its body, at the least"
    if name in SITELESS:  # no markers, no wait or loop: the kernel's body is its scope, ended by its exits
        ((kernel, instructions),) = disassemble(_cubin(version, name)).items()
        assert not markers.from_source(CASE[name].fn)
        locations = line_table(_cubin(version, name))[kernel]
        assert [s.kind for s in waits.find(instructions, locations, kernel)] == ["kernel"]
        sites = got.result.sites
        assert (sites["origin"], sites["kind"], sites["index"]) == (["kernel"], ["start"], [0])
        assert set(got.result.open_at_exit) == set(sites["scope"])
    p = got
    cost = p.result.cost
    assert cost["instructions"] == len(p.plain)
    assert sum(p.inserted) == cost["inserted"] == len(p.new) - len(p.plain)
    strange = {p.new[n].opcode for n in range(len(p.new)) if p.inserted[n] and p.new[n].base not in PROBE_LATENCY}
    assert not strange, f"inserted instructions no probe makes: {strange}"
    for old, at in zip(p.plain, p.position):
        if old.target is None or old.target >= len(p.plain):
            continue
        lands = p.new[at].target
        assert lands is not None and p.anchor[lands] == old.target, \
            f"the {old.opcode} at {old.index} no longer reaches instruction {old.target}"
        assert lands == 0 or p.anchor[lands - 1] < old.target, \
            f"the {old.opcode} at {old.index} skips the probes before instruction {old.target}"
    # the register count: the kernel's own, the most at its occupancy, or the most one step down
    before, after = cost["registers"]
    assert before == Cubin.parse(_cubin(version, name)).registers(p.kernel)
    assert after == Cubin.parse(p.result.cubin).registers(p.kernel)
    same = free_register_count(before)
    assert after in (before, same, free_register_count(same + 1) if same < 255 else same)


def test_the_corpus_is_covered():
    """Every case with a site is instrumented, none refused (the module docstring's totals)."""
    refused = {f"{version} {name}": str(got) for version, name in KERNELS
               if isinstance(got := probed(version, name), SassRewriteError)}
    assert not refused
    compared = [probed(version, name) for version, name in PROBED]
    assert all(isinstance(p, Probed) for p in compared)
    assert sum(len(p.plain) for p in compared) > 30000 and sum(sum(p.inserted) for p in compared) > 5000


# ---------------------------------------------------------------- registers, predicates, records

@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_probes_write_only_what_the_kernel_leaves_free(version, name):
    """Every register a probe writes but the state's: general registers and predicates, and the
    uniform registers a uniform record holds its readings in."""
    p = _probed_or_skip(version, name)
    state = sum(regs.register_bit(r) for r in p.result.cost["state_registers"])
    checked = 0
    for block in p.cfg.blocks:
        region = p.region(block)
        for n in region:
            if not p.inserted[n]:
                continue
            for bit in _bits(p.uses[n].writes & ~state):
                last = _last_reader(p, n, bit, region)
                first_kernel, last_kernel = p.anchor[n], max(p.anchor[n], p.anchor[last] - 1)
                assert _free(p, bit, first_kernel, last_kernel) or _freed_for_exit(p, n, bit), \
                    f"{p.new[n].opcode} (new {n}) writes {regs.register_names(1 << bit)} over instructions " \
                    f"{first_kernel}..{last_kernel}, where the kernel is not done with it"
                checked += 1
    assert checked >= p.result.cost["readings"] + 2  # each record: its readings, its site number, its predicate


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_state_registers_are_never_the_kernels(version, name):
    p = _probed_or_skip(version, name)
    state = sum(regs.register_bit(r) for r in p.result.cost["state_registers"])
    assert len(p.result.cost["state_registers"]) == 5 and bin(state).count("1") == 5
    named = 0
    for n, use in enumerate(p.uses):
        if not p.inserted[n]:
            named |= use.reads | use.writes
    assert not named & state, regs.register_names(named & state)
    probes_named = 0
    for n, use in enumerate(p.uses):
        if p.inserted[n]:
            probes_named |= use.reads | use.writes
    # the probes keep all their uniform state there; any other uniform register a probe names
    # holds a uniform record's reading, from its S2UR of the clock to the MOV that stores it
    assert probes_named & state == state
    for n, use in enumerate(p.uses):
        if p.inserted[n] and use.writes & regs.UNIFORMS & ~state:
            assert p.new[n].opcode == "S2UR" and p.new[n].operands[1] == "SR_CLOCKLO", p.new[n].opcode
        elif p.inserted[n] and use.reads & regs.UNIFORMS & ~state:
            assert p.new[n].base == "MOV" and p.new[n].operands[0].startswith("R"), p.new[n].opcode


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_records_are_stored_after_their_readings_in_their_block(version, name):
    """Each record's words (its readings, then its first site's number in SITE_WORD) are
    stored, at row m of its run, by stores that read the registers its readings and its MOV
    wrote, after its last reading and before the next record's first, in the same block."""
    p = _probed_or_skip(version, name)
    sites, table = p.result.sites, p.result.table
    readings = _readings(p)
    assert len(readings) == len(sites["site"]) == len(table.tags) == p.result.cost["readings"]
    assert [p.anchor[n] for n in readings] == sites["index"]
    assert table.record_events.sum() == len(readings)
    assert list(table.tags) == [make_tag(s, kind == "end") for s, kind in zip(sites["scope"], sites["kind"])]
    starts = [k for k in range(len(readings)) if table.record_events[k]]
    runs = _runs(p)
    run_of = {n: r for r, run in enumerate(runs) for n in run.readings}
    row_in_run: dict[int, int] = {}
    for number, k in enumerate(starts):
        count = int(table.record_events[k])
        assert starts[0] == 0 and 1 <= count <= READINGS_PER_RECORD and k + count == \
            (starts[number + 1] if number + 1 < len(starts) else len(readings)), f"site {k} starts no whole record"
        record = readings[k:k + count]
        assert list(table.readings[k:k + count]) == list(range(SITE_WORD - count, SITE_WORD))
        assert len({run_of[n] for n in record}) == 1, f"record {number} straddles runs"
        run = runs[run_of[record[0]]]
        row = row_in_run[run_of[record[0]]] = row_in_run.get(run_of[record[0]], -1) + 1
        block = p.block_of_new(record[0])
        assert all(p.block_of_new(n) is block for n in record)
        stores = [s for s in run.stores if _store_word(p.new[s])[1] // FORMAT["RECORD_BYTES"] == row]
        assert stores, f"record {number} has no store at row {row} of its run"
        # the words the stores cover: the whole record in one 128-bit store, else each word once
        covered: dict[int, tuple[int, int]] = {}  # word -> (store, register)
        for s in stores:
            offset = _store_word(p.new[s])[1] - row * FORMAT["RECORD_BYTES"]
            width, first_word, data = STORE_WORDS[p.new[s].opcode], offset // 4, _register(p.new[s].operands[1])
            assert offset % (4 * width) == 0 and data % width == 0, f"a misaligned {p.new[s].opcode} at new {s}"
            for w in range(first_word, first_word + width):
                assert w not in covered, f"record {number}: word {w} is stored twice"
                covered[w] = (s, data + w - first_word)
        words = set(range(SITE_WORD - count, SITE_WORD + 1))
        assert set(covered) == words or (set(covered) == set(range(4)) and len(stores) == 1), \
            f"record {number} ({count} readings) stores the words {sorted(covered)}"
        uniform = p.new[record[0]].opcode == "S2UR"  # a uniform record: readings moved to general registers to be stored
        assert all((p.new[n].opcode == "S2UR") == uniform for n in record)
        for m, n in enumerate(record):
            s, register = covered[SITE_WORD - count + m]
            writer = _last_writer(p, s, f"R{register}")
            if uniform:  # the store reads a MOV of the uniform register the reading wrote
                assert writer is not None and p.inserted[writer] and p.new[writer].base == "MOV"
                writer = _last_writer(p, writer, p.new[writer].operands[1])
            assert writer == n, \
                f"reading {k + m}: the store at new {s} reads R{register}, which the reading did not write last"
        s, register = covered[SITE_WORD]
        mov = _last_writer(p, s, f"R{register}")
        assert mov is not None and p.inserted[mov] and p.new[mov].base == "MOV" and \
            _immediate(p.new[mov].operands[1]) == sites["site"][k], f"record {number}: no MOV of its site number"
        assert run.update < mov < s
        # where the stores went: one place, past the last reading, within MAX_SINK (a uniform
        # record: anywhere before the block's last instruction), in the block, before the next
        # record's first reading
        (store_at,) = {p.anchor[s] for s in stores}
        assert all(sites["store"][m] == store_at for m in range(k, k + count))
        first, last = sites["index"][k], sites["index"][k + count - 1]
        block = p.cfg.block_at(first)
        assert last <= store_at <= (block.end - 1 if uniform else last + MAX_SINK) and block.start <= store_at < block.end
        assert max(stores) > record[-1]
        if k + count < len(readings):
            assert max(stores) < readings[k + count]
        if uniform:  # no general register for the readings from the first to the stores
            assert len(p.liveness.free_registers(first, max(last, store_at - 1))) <= count
            wide = [s for s in stores if p.new[s].opcode != "STG.E.EF"]
            assert wide or len({_register(p.new[s].operands[1]) for s in stores}) in (1, count + 1)
            continue
        # the widest stores the registers free from the first reading to the stores allow
        window = max(last, store_at - 1)
        free = p.liveness.free_registers(first, window)
        quads, pairs = p.liveness.free_registers(first, window, 4), p.liveness.free_registers(first, window, 2)
        if len(free) > count:
            wide = sorted(STORE_WORDS[p.new[s].opcode] for s in stores if STORE_WORDS[p.new[s].opcode] > 1)
            expected = [4] if quads else [2] * min(len(pairs), 2 if count == 3 else 1)
            assert wide == expected, f"record {number}: stores of {wide} words where {expected} fit"
        else:  # registers are short: the readings take them all, the site's MOV comes later
            assert all(p.new[s].opcode == "STG.E.EF" for s in stores)
        # the MOV goes at the first reading, or where a register beside the readings' first stays free
        taken = {covered[w][1] for w in words - {SITE_WORD}}
        earliest = next(a for a in range(first, window + 1)
                        if set(p.liveness.free_registers(a, window)) - taken)
        assert p.anchor[mov] == earliest, f"record {number}: its MOV is at {p.anchor[mov]}, not {earliest}"
        if earliest == first:
            assert mov < record[0]


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_each_run_has_one_room_test_one_room_update_and_one_advance(version, name):
    """Up to MAX_RUN_RECORDS records of one block share one `UISETP` of the room into one UPq
    (before the update, against 0; or at the run's end, after its stores, against -readings),
    one `UIADD3 room, room, -readings` and one `@UPq UIADD3 next, next, 16*records`; a new run
    starts only in a new block or after a full one."""
    p = _probed_or_skip(version, name)
    room = p.result.cost["state_registers"][4]
    table = p.result.table
    index = {n: k for k, n in enumerate(_readings(p))}
    runs = _runs(p)
    assert sum(len(run.readings) for run in runs) == len(index)
    for r, run in enumerate(runs):
        region = p.region(p.block_of_new(run.update))
        assert run.readings and all(n in region for n in (run.update, run.advance, *run.readings, *run.stores))
        records = sum(1 for n in run.readings if table.record_events[index[n]])
        assert table.record_events[index[run.readings[0]]] and 1 <= records <= MAX_RUN_RECORDS
        update, advance = p.new[run.update], p.new[run.advance]
        assert _immediate(update.operands[2]) == -len(run.readings), f"run {r}: the room update {update.operands}"
        assert _immediate(advance.operands[2]) == FORMAT["RECORD_BYTES"] * records and advance.operands[3] == "URZ"
        assert len(run.tests) == 1, f"run {r} has {len(run.tests)} room tests"
        (t,) = run.tests
        test = p.new[t]
        guard = advance.predicate
        assert guard == f"@{test.operands[0]}" and test.opcode == "UISETP.GT.AND", (guard, test.opcode)
        assert test.operands[1] == "UPT" and test.operands[2] == room and test.operands[4] == "UPT"
        if t < run.update:  # the room before the run's readings is above 0
            assert _immediate(test.operands[3]) == 0
        else:  # the room after them is above -readings
            assert max(run.stores) < t < run.advance and _immediate(test.operands[3]) == -len(run.readings)
        assert _last_writer(p, run.advance, test.operands[0]) == t, f"run {r}: UPq is written again before the advance"
        if r + 1 < len(runs) and p.block_of_new(runs[r + 1].update) is p.block_of_new(run.update):
            assert records == MAX_RUN_RECORDS, f"run {r + 1} starts in the block of a run of {records} records"


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_the_most_readings_a_warp_can_take_is_read_off_the_rewritten_code(version, name):
    """The bound that sizes a warp's slot, checked against the binary: where no room update sits
    on a cycle of the rewritten kernel's graph, a thread passes each at most once, so a warp
    takes at most WARP_LANES times the readings the updates count; where one does, no bound."""
    p = _probed_or_skip(version, name)
    cfg = ControlFlowGraph(p.new, p.kernel)
    runs = _runs(p)
    counted = -sum(_immediate(p.new[run.update].operands[2]) for run in runs)
    looping = any(cfg.on_cycle(cfg.block_of[run.update]) for run in runs)
    assert p.result.most_events == (None if looping else WARP_LANES * counted)


def test_both_bounded_and_looping_kernels_are_in_the_corpus():
    bounds = [p.result.most_events for version, name in PROBED if isinstance(p := probed(version, name), Probed)]
    assert None in bounds and any(bound for bound in bounds)


def _header_stores(p: Probed, anchor: int) -> dict[int, Instruction]:
    """The header fields stored by the probes before plain instruction `anchor`, by header offset
    (the state's end register points just past the header)."""
    end = p.result.cost["state_registers"][2]
    out = {}
    for n, i in enumerate(p.new):
        if p.inserted[n] and p.anchor[n] == anchor and i.base == "STG":
            base, offset = _store_word(i)
            if base == end:
                out[offset + FORMAT["SLOT_HEADER_BYTES"]] = i
    return out


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_the_prologue_and_every_exit_write_the_warps_header(version, name):
    p = _probed_or_skip(version, name)
    entry = _header_stores(p, 0)
    assert {k: i.opcode for k, i in entry.items()} == {FORMAT["SH_GT_ENTRY"]: "STG.E.EF.128",
                                                       FORMAT["SH_MAGIC"]: "STG.E.EF.128",
                                                       FORMAT["SH_BLOCK_Z"]: "STG.E.EF.64"}
    assert any(p.inserted[n] and p.anchor[n] == 0 and i.opcode == "MOV" and int(i.operands[1], 16) == WARP_MAGIC
               for n, i in enumerate(p.new))
    exits = [i for i in p.plain if i.base == "EXIT" and i.predicate not in ("@!PT", "@!UPT")
             and p.cfg.reachable[p.cfg.block_of[i.index]]]
    assert exits
    for exit_instruction in exits:
        stored = _header_stores(p, exit_instruction.index)
        assert sorted(stored) == sorted(FORMAT[f] for f in ("SH_GT_EXIT", "SH_CK_EXIT", "SASS_SH_ROOM")), \
            f"the EXIT at {exit_instruction.index} has no epilogue"
        # the exit fields are written only by a warp that takes this EXIT
        assert all(i.predicate == exit_instruction.predicate for i in stored.values())
    # nothing else writes a header field
    everywhere = [n for n, i in enumerate(p.new) if p.inserted[n] and i.base == "STG"
                  and _store_word(i)[0] == p.result.cost["state_registers"][2]]
    assert len(everywhere) == 3 + 3 * len(exits)


# ---------------------------------------------------------------- trace.sites

@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_trace_sites_columns_say_where_each_reading_went(version, name):
    p = _probed_or_skip(version, name)
    sites = p.result.sites
    rows = p.result.cost["readings"]
    assert tuple(sites) == SITE_COLUMNS and all(len(column) == rows for column in sites.values())
    assert sites["kernel"] == [p.kernel] * rows and sites["site"] == list(range(rows))
    cubin = _cubin(version, name)
    locations = line_table(cubin)[p.kernel]
    # a pair may have several ends (one per path out of its scope): sites are told apart by instruction
    placed = {(s.scope, s.kind, s.pair, s.index): s for s in place(p.plain, locations,
                                                                   markers.from_source(CASE[name].fn), p.kernel, p.cfg)}
    found = [f for f in waits.find(p.plain, locations, p.kernel, p.cfg) if f.kind != "kernel"]
    kinds = {f.kind for f in found}
    shared = collections.Counter(f.name for f in found)  # one source line's sites, told apart by instruction
    left = {(e["scope"], e["pair"]) for e in p.result.left_out}
    seen = collections.Counter()
    for k in range(rows):
        row = {c: sites[c][k] for c in SITE_COLUMNS}
        site = row["index"] - row["moved"]
        assert p.cfg.block_of[row["index"]] == p.cfg.block_of[site] and abs(row["moved"]) <= MAX_SINK
        if row["origin"] == "marker":
            s = placed[row["scope"], row["kind"], row["pair"], site]
            assert (site, row["instruction"], row["block"], row["loop"], row["span"], row["own"]) == \
                (s.index, s.instruction, s.block, s.loop, s.span, s.own)
            assert row["line"] is None
        else:
            assert row["origin"] in kinds and row["scope"] >= AUTO_SCOPE_BASE
            f = found[row["scope"] - AUTO_SCOPE_BASE]
            assert (row["origin"], row["instruction"], row["loop"]) == (f.kind, f.instruction, f.loop)
            assert site == (f.start if row["kind"] == "start" else f.ends[row["pair"]])
            own_name = f.name if shared[f.name] == 1 else f"{f.name} @{f.instruction}"
            assert p.result.scope_names[row["scope"]] == own_name and row["line"] == f.line
            assert row["span"] is None
        seen[row["scope"], row["kind"], row["pair"], site] += 1
    assert len(set(p.result.scope_names.values())) == len(p.result.scope_names)
    # every site has one row but the pairs left out (an automatic site's readings go together)
    expected = set(placed) | {(AUTO_SCOPE_BASE + k, "start", 0, f.start) for k, f in enumerate(found)}
    expected |= {(AUTO_SCOPE_BASE + k, "end", e, end) for k, f in enumerate(found) for e, end in enumerate(f.ends)}
    left_scopes = {scope for scope, _ in left}
    assert seen == collections.Counter(key for key in expected if (key[0], key[2]) not in left
                                       and not (key[0] >= AUTO_SCOPE_BASE and key[0] in left_scopes))


# ---------------------------------------------------------------- latencies and scoreboards

@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_probe_results_are_read_only_once_ready(version, name):
    p = _probed_or_skip(version, name)
    state = sum(regs.register_bit(r) for r in p.result.cost["state_registers"])
    checked = 0
    for block in p.cfg.blocks:
        region = p.region(block)
        writer: dict[int, int] = {}
        for n in region:
            if p.inserted[n]:
                for bit in _bits(p.uses[n].reads):
                    w = writer.get(bit)
                    address = p.new[n].base == "STG" and regs.UNIFORM_BASE <= bit < regs.PREDICATE_BASE
                    if w is None and address:  # written in a block before, ready for an ALU reader at its end
                        assert _stalls(p, region.start, n) >= ADDRESS_LATENCY - FIXED_LATENCY, \
                            f"the store at new {n} takes its address from the block before too soon"
                    if w is None or not p.inserted[w]:
                        continue
                    latency = PROBE_LATENCY[p.new[w].base]
                    if address:
                        latency = max(latency, ADDRESS_LATENCY)
                    board = p.new[w].control.write_barrier
                    if board != NO_BARRIER:
                        waited = any(released(p.new[m]) >> board & 1 for m in range(w + 1, n + 1))
                        assert waited, f"{p.new[n].opcode} (new {n}) reads the {p.new[w].opcode} at {w} before " \
                                       f"SB{board} is waited on"
                    else:
                        assert _stalls(p, w, n) >= latency, \
                            f"{p.new[n].opcode} (new {n}) reads {regs.register_names(1 << bit)} " \
                            f"{_stalls(p, w, n)} cycles after the {p.new[w].opcode} at {w} ({latency} needed)"
                    checked += 1
            for bit in _bits(p.uses[n].writes):
                writer[bit] = n
        # the state registers are ready by the block's end, for the blocks after it
        last = p.plain[block.end - 1]
        if last.base == "EXIT" and last.predicate in (None, "@PT"):
            continue
        for bit in _bits(state):
            w = writer.get(bit)
            if w is not None and p.inserted[w]:
                assert _stalls(p, w, region.stop) >= PROBE_LATENCY[p.new[w].base], \
                    f"{regs.register_names(1 << bit)} is not ready at the end of block {block.index}"
    assert checked >= p.result.cost["readings"]


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_store_registers_are_not_rewritten_before_the_store_has_read_them(version, name):
    p = _probed_or_skip(version, name)
    checked = 0
    for block in p.cfg.blocks:
        region = p.region(block)
        last = p.plain[block.end - 1]
        ends_the_warp = last.base == "EXIT" and last.predicate in (None, "@PT")
        for s in region:
            if not (p.inserted[s] and p.new[s].base == "STG"):
                continue
            data = p.uses[s].reads & ((1 << regs.GPR_COUNT) - 1)
            board = p.new[s].control.read_barrier
            checked += 1
            if board == NO_BARRIER:  # an exit field: stored under the guard of the EXIT right after
                exit_at = p.position[p.anchor[s]]
                assert p.new[exit_at].base == "EXIT" and p.new[exit_at].predicate == p.new[s].predicate
                assert not any(p.uses[m].writes & data for m in range(s + 1, exit_at))
                continue
            for m in range(s + 1, region.stop):
                if released(p.new[m]) >> board & 1:
                    break
                assert not p.uses[m].writes & data, \
                    f"the {p.new[m].opcode} at new {m} writes {regs.register_names(p.uses[m].writes & data)} " \
                    f"before the store at {s} is known to have read it (SB{board})"
            else:
                assert ends_the_warp, f"the store at new {s} may still be reading at the end of block {block.index}"
    assert checked >= int((p.result.table.record_events > 0).sum())  # each record has a store at least


# ---------------------------------------------------------------- readings moved or left out

def _room(p: Probed, i: int) -> bool:
    """Whether a reading fits before instruction i: a register for its value."""
    return len(p.liveness.free_registers(i)) >= 1


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_moved_and_left_out_readings_had_no_room_at_their_site(version, name):
    p = _probed_or_skip(version, name)
    sites = p.result.sites
    for k, moved in enumerate(sites["moved"]):
        if moved:
            at = sites["index"][k]
            site = at - moved
            assert not _room(p, site) and _room(p, at), (k, at, moved)
            # the nearest instruction with room, between the readings before and after it, in its block
            block = p.cfg.block_at(site)
            low = max(block.start, sites["index"][k - 1] if k else 0)
            high = min(block.end, sites["index"][k + 1] - sites["moved"][k + 1] + 1 if k + 1 < len(sites["index"])
                       else len(p.plain))
            near = sorted((m for m in range(low, high) if m != site), key=lambda m: (abs(m - site), m))
            assert at in near[:MAX_SINK] and not any(_room(p, m) for m in near[:near.index(at)]), (k, at, moved)
    for entry in p.result.left_out:
        assert set(entry) == {"scope", "pair", "instruction", "reason"} and "\n" not in entry["reason"]
        kernel = re.escape(p.kernel)
        reading = re.fullmatch(rf"kernel {kernel}: no (\d+) registers are free at instruction (\d+) \(\S+\) for a "
                               r"reading", entry["reason"])
        site = re.fullmatch(rf"kernel {kernel}: no register is free for a record's site between instructions "
                            r"(\d+) and (\d+)", entry["reason"])
        predicate = re.fullmatch(rf"kernel {kernel}: no uniform predicate is free at instruction (\d+) for a "
                                 r"record", entry["reason"])
        # an automatic site whose readings would not pair on every path (pairing.py), or a scope with no code
        unpaired = re.fullmatch(r"scope \d+: an? (end|start) at instruction \d+ is reached (with no start before it|"
                                r"again before its end)", entry["reason"])
        no_code = entry["instruction"] is None and "no instruction of the compiled kernel" in entry["reason"]
        assert reading or site or predicate or unpaired or no_code, entry["reason"]
        if reading and reading.group(1) == "1":  # a lone reading: no room where it was tried
            assert not _room(p, int(reading.group(2)))
        elif site:  # the readings took every register free there, and none frees up later
            first, window = int(site.group(1)), int(site.group(2))
            free = set(p.liveness.free_registers(first, window))
            assert 1 <= len(free) <= READINGS_PER_RECORD
            assert all(set(p.liveness.free_registers(a, window)) == free for a in range(first, window + 1))
        elif predicate:
            assert not p.liveness.free_uniform_predicates(int(predicate.group(1)))


def _left_out_case(version: str, name: str, auto: bool):
    cubin = _cubin(version, name)
    ((kernel, plain),) = disassemble(cubin).items()
    found = markers.from_source(CASE[name].fn)
    result = instrument(cubin, kernel, found, None, auto=auto)
    cfg = ControlFlowGraph(plain, kernel)
    placed = place(plain, line_table(cubin)[kernel], found, kernel, cfg)
    automatic = [f for f in waits.find(plain, line_table(cubin)[kernel], kernel, cfg) if f.kind != "kernel"] \
        if auto else []
    return result, placed, automatic


def test_the_warp_specialized_matmul_leaves_readings_out_and_says_so():
    """As the H200's Triton 3.6 schedules it, the automatic sites at its consumer's BAR.SYNCs
    find no uniform predicate free for their room test, and some waits' readings would not pair
    on every path of its partitions. Those sites are left out, each named with its reason; the
    rest are all read; the markers alone fit."""
    name = "warp-specialized TMA matmul"
    result, placed, automatic = _left_out_case("h200", name, auto=True)
    assert len(result.left_out) >= 5
    no_room = rf"kernel {result.kernel}: no uniform predicate is free at instruction \d+ for a record"
    unpaired = r"scope \d+: an? (end|start) at instruction \d+ is reached (with no start before it|again before its end)"
    assert all(re.fullmatch(no_room, e["reason"]) or re.fullmatch(unpaired, e["reason"]) for e in result.left_out)
    assert any(re.fullmatch(no_room, e["reason"]) for e in result.left_out)
    left = {e["scope"] for e in result.left_out}
    assert left <= set(result.scope_names) and not left & set(result.sites["scope"])
    assert all(result.scope_names[scope].startswith("barrier ") for scope in left
               if re.fullmatch(no_room, next(e["reason"] for e in result.left_out if e["scope"] == scope)))
    left_readings = sum(1 + len(f.ends) for k, f in enumerate(automatic) if AUTO_SCOPE_BASE + k in left)
    assert result.cost["readings"] == len(placed) + sum(1 + len(f.ends) for f in automatic) - left_readings
    p = probed("h200", name)
    assert len(_readings(p)) == result.cost["readings"]
    markers_only, placed, _ = _left_out_case("h200", name, auto=False)
    assert markers_only.left_out == [] and markers_only.cost["readings"] == len(placed)


def test_a_reading_moves_where_its_site_has_no_room():
    """The causal d128 attention forward with its automatic sites, as Triton 3.9 schedules it
    here: a reading whose site leaves no general register and no room for a uniform record
    (uniform registers and a scoreboard free up to general registers free later in the block)
    is read at the nearest instruction of the block that has a general register."""
    p = probed("here", "attention fwd d128 causal")
    moved = [(i, m) for i, m in zip(p.result.sites["index"], p.result.sites["moved"]) if m]
    assert len(moved) >= 1
    readings = _readings(p)
    for at, m in moved:
        assert not _room(p, at - m) and _room(p, at)
        assert p.anchor[readings[p.result.sites["index"].index(at)]] == at


def test_a_reading_with_no_general_register_is_taken_into_a_uniform_one():
    """The causal d128 attention forward, as the H200's Triton 3.6 schedules it, leaves no
    general registers for some marker readings from their site to any store. Those readings
    are taken at their site (not moved) by an S2UR of the clock into a uniform register the kernel leaves free, and stored later in
    the block through MOVs into general registers free there."""
    p = probed("h200", "attention fwd d128 causal")
    sites = p.result.sites
    readings = _readings(p)
    uniform = [k for k, n in enumerate(readings) if p.new[n].opcode == "S2UR"]
    assert uniform and not any(sites["moved"])
    for k in uniform:
        n, at = readings[k], sites["index"][k]
        assert p.anchor[n] == at
        assert p.new[n].control.write_barrier != NO_BARRIER
        moves = [m for m in range(n + 1, len(p.new)) if p.inserted[m] and p.new[m].base == "MOV"
                 and p.new[m].operands[1] == p.new[n].operands[0]]
        assert moves and p.anchor[moves[0]] == sites["store"][k]
        assert p.new[moves[0]].control.wait_mask >> p.new[n].control.write_barrier & 1 or any(
            released(p.new[w]) >> p.new[n].control.write_barrier & 1 for w in range(n + 1, moves[0]))


def test_left_out_marker_pairs_name_the_instruction_they_were_tried_at():
    """The causal d128 attention forward (the H200's Triton 3.6) has no room for a marker reading."""
    result, placed, _ = _left_out_case("h200", "attention fwd d128 causal", auto=False)
    assert result.left_out
    index_of = {(s.scope, s.kind, s.pair): s.index for s in placed}
    for entry in result.left_out:
        pair = {index_of[entry["scope"], kind, entry["pair"]] for kind in ("start", "end")}
        assert entry["instruction"] in pair
        assert not any(s == entry["scope"] and pr == entry["pair"]
                       for s, pr in zip(result.sites["scope"], result.sites["pair"]))
    assert result.cost["readings"] == len(placed) - 2 * len(result.left_out)


def test_registers_rise_as_far_as_an_sm_holds_as_many_blocks():
    """With the block's warps and shared memory known, the count may rise until an SM holds
    fewer blocks: a 4-warp block of 100 KB shared memory fits twice per SM (228 KB, 1 KB of
    it reserved per block) whatever its registers, so any count up to 255 is free; with
    registers alone the same 127-register kernel could not rise at all."""
    from gwatch_nb.sass.instrument import blocks_per_sm, free_register_count
    assert blocks_per_sm(127, 4, 100 * 1024) == 2
    assert free_register_count(127, (4, 100 * 1024)) == 255
    assert free_register_count(127) == 128
    # 40 registers is a boundary of the 256-register allocation: 12 blocks of 4 warps at 40,
    # 10 at 41 to 48.
    assert blocks_per_sm(40, 4, 0) == 12 and blocks_per_sm(41, 4, 0) == 10
    assert free_register_count(40, (4, 0)) == 40


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_no_probe_touches_a_warpgroup_mmas_registers_after_its_arrive(version, name):
    """From a `WARPGROUP.ARRIVE` to the MMAs after it, their accumulators are the warpgroup's
    MMA unit's (another warp's HGMMA may write them): no probe there writes or reads one, and a
    record store reading one before the arrive is waited on before it."""
    p = _probed_or_skip(version, name)
    plain_uses = p.liveness.uses
    for arrive in (k for k, i in enumerate(p.plain) if i.opcode == "WARPGROUP.ARRIVE"):
        block = p.cfg.block_at(arrive)
        following = next((k for k in range(arrive + 1, block.end) if p.plain[k].opcode == "WARPGROUP.ARRIVE"),
                         block.end)
        mmas = [k for k in range(arrive, following) if p.plain[k].base in ("HGMMA", "IGMMA", "QGMMA")]
        if not mmas:
            continue
        last_mma, mask = mmas[-1], 0
        for k in mmas:
            mask |= (plain_uses[k].reads | plain_uses[k].writes) & regs.GPRS
        for n in range(p.position[arrive], p.position[last_mma]):
            if p.inserted[n]:
                assert not (p.uses[n].reads | p.uses[n].writes) & mask, \
                    f"the {p.new[n].opcode} at new {n} touches {regs.register_names((p.uses[n].reads | p.uses[n].writes) & mask)} " \
                    f"between the arrive at {arrive} and its MMA"
        region = p.region(block)
        for s in range(region.start, p.position[arrive]):
            if p.inserted[s] and p.new[s].base == "STG" and p.uses[s].reads & mask:
                board = p.new[s].control.read_barrier
                assert any(released(p.new[m]) >> board & 1 for m in range(s + 1, p.position[arrive] + 1)), \
                    f"the store at new {s} may still be reading an MMA's register at the arrive at {arrive}"
