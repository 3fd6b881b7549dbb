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
SiteTable say what the code does. Over the corpus (commit 7df68a4, Triton 3.9 here and the
H200's 3.6 fixture): 41 kernels, 40,008 plain instructions compared, 9,283 probes inserted."""
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
from gwatch_nb.sass.instrument import AUTO_SCOPE_BASE, SITE_COLUMNS, instrument, warps_per_sm
from gwatch_nb.sass.instruction import Instruction
from gwatch_nb.sass.lines import line_table
from gwatch_nb.sass.liveness import Liveness
from gwatch_nb.sass.probes import MAX_SINK, PREDICATE_LATENCY
from gwatch_nb.sass.registers import register_use
from gwatch_nb.sass.scoreboards import FIXED_LATENCY, SLOW_LATENCY, released
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

#: What a probe may be, and how many cycles a reader of its result must wait (None: it sets a
#: scoreboard its reader waits on).
PROBE_LATENCY = {"S2R": None, "LDC": None, "CS2R": SLOW_LATENCY, "R2UR": SLOW_LATENCY, "MOV": FIXED_LATENCY,
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
                              (regs.PREDICATE_BASE, regs.PREDICATE_COUNT, live.free_predicates),
                              (regs.GPR_BASE, regs.GPR_COUNT, live.free_registers)):
        if base <= bit < base + count:
            return bit - base in free(i, j)
    raise AssertionError(f"register bit {bit} is not a general register or a predicate")


def _freed_for_exit(p: Probed, n: int, bit: int) -> bool:
    """Whether probe n, in an EXIT's epilogue, writes a register that only a transfer in flight
    still held, after a NOP that waits for every scoreboard pending there."""
    e = p.anchor[n]
    if p.plain[e].base != "EXIT" or not bit < regs.GPR_COUNT:
        return False
    live = p.liveness
    waited = [m for m in range(p.region(p.cfg.block_at(e)).start, n)
              if p.inserted[m] and p.anchor[m] == e and p.new[m].base == "NOP"]
    pending = live.scoreboards.pending(e)
    busy = live.live_in[e] | live.live_out[e] | live.uses[e].reads | live.uses[e].writes
    return any(p.new[m].control.wait_mask & pending == pending for m in waited) and not busy >> bit & 1


def _readings(p: Probed) -> list[int]:
    """New indices of the record readings (32-bit clock reads), in program order."""
    return [n for n, i in enumerate(p.new) if p.inserted[n] and i.opcode == "CS2R.32" and i.operands[1] == "SR_CLOCKLO"]


def _store_word(instruction: Instruction) -> tuple[str, int]:
    at = _STORE_ADDRESS.match(instruction.operands[0])
    assert at, f"an inserted store addresses {instruction.operands[0]}"
    return at.group(1), int(at.group(2) or "0", 16)


# ---------------------------------------------------------------- the plain kernel plus readings

@pytest.mark.parametrize("version, name", KERNELS, ids=IDS)
def test_the_rewritten_kernel_is_the_plain_kernel_plus_probes(version, name):
    got = probed(version, name)
    if isinstance(got, SassRewriteError):
        assert "\n" not in str(got) and str(got).startswith("kernel ")
        return
    assert (got is None) == (name in SITELESS)
    if got is None:  # nothing to read: no markers, and no wait or loop but the kernel's own
        plain = disassemble(_cubin(version, name))
        ((kernel, instructions),) = plain.items()
        assert not markers.from_source(CASE[name].fn)
        locations = line_table(_cubin(version, name))[kernel]
        assert [s.kind for s in waits.find(instructions, locations, kernel)] == ["kernel"]
        return
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
    # the register count: the kernel's own, or one raised only where it keeps the occupancy
    before, after = cost["registers"]
    assert before == Cubin.parse(_cubin(version, name)).registers(p.kernel)
    assert after == Cubin.parse(p.result.cubin).registers(p.kernel)
    assert after >= before and warps_per_sm(after) == warps_per_sm(before)


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
    p = _probed_or_skip(version, name)
    checked = 0
    for block in p.cfg.blocks:
        region = p.region(block)
        for n in region:
            if not p.inserted[n]:
                continue
            for bit in _bits(p.uses[n].writes & ~regs.UNIFORMS):
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
    assert probes_named & regs.UNIFORMS == state  # the probes keep all their uniform state there, nothing else


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_records_are_stored_after_their_readings_in_their_block(version, name):
    p = _probed_or_skip(version, name)
    sites, table = p.result.sites, p.result.table
    readings = _readings(p)
    assert len(readings) == len(sites["site"]) == len(table.tags) == p.result.cost["readings"]
    assert [p.anchor[n] for n in readings] == sites["index"]
    next_record = p.result.cost["state_registers"][0]
    stores_of = {}
    for k, n in enumerate(readings):
        region = p.region(p.block_of_new(n))
        (bit,) = _bits(p.uses[n].writes)
        store = _last_reader(p, n, bit, region)
        assert p.new[store].base == "STG", f"reading {k}: its register is read by {p.new[store].opcode}, not a store"
        base, offset = _store_word(p.new[store])
        assert (base, offset) == (next_record, 4 * int(table.readings[k]))
        assert p.anchor[store] == sites["store"][k] >= sites["index"][k]
        assert p.cfg.block_of[sites["store"][k]] == p.cfg.block_of[sites["index"][k]]
        stores_of[k] = p.anchor[store]
    # the SiteTable: each record's first site counts its readings, numbered 0.. in one record
    assert table.record_events.sum() == len(readings)
    assert list(table.tags) == [make_tag(s, kind == "end") for s, kind in zip(sites["scope"], sites["kind"])]
    k = 0
    while k < len(readings):
        count = int(table.record_events[k])
        assert 1 <= count <= READINGS_PER_RECORD, f"site {k} starts no record"
        assert list(table.readings[k:k + count]) == list(range(count))
        assert len({stores_of[m] for m in range(k, k + count)}) == 1
        assert not table.record_events[k + 1:k + count].any()
        # the record's last word is its first site's number, set by a MOV in the same block
        (number,) = [m for m in p.region(p.block_of_new(readings[k]))
                     if p.inserted[m] and p.new[m].base == "STG" and p.anchor[m] == stores_of[k]
                     and _store_word(p.new[m]) == (next_record, 4 * READINGS_PER_RECORD)
                     and readings[k] < m < (readings[k + count] if k + count < len(readings) else len(p.new))]
        (data,) = _bits(p.uses[number].reads & ~regs.UNIFORMS)
        source = max(m for m in p.region(p.block_of_new(readings[k])) if m < number and p.uses[m].writes >> data & 1)
        assert p.new[source].opcode == "MOV" and int(p.new[source].operands[1], 16) == k
        k += count


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
    placed = {(s.scope, s.kind, s.pair): s for s in place(p.plain, locations, markers.from_source(CASE[name].fn),
                                                          p.kernel, p.cfg)}
    found = [f for f in waits.find(p.plain, locations, p.kernel, p.cfg) if f.kind != "kernel"]
    kinds = {f.kind for f in found}
    left = {(e["scope"], e["pair"]) for e in p.result.left_out}
    seen = set()
    for k in range(rows):
        row = {c: sites[c][k] for c in SITE_COLUMNS}
        site = row["index"] - row["moved"]
        assert p.cfg.block_of[row["index"]] == p.cfg.block_of[site] and abs(row["moved"]) <= MAX_SINK
        if row["origin"] == "marker":
            s = placed[row["scope"], row["kind"], row["pair"]]
            assert (site, row["instruction"], row["block"], row["loop"], row["span"], row["own"]) == \
                (s.index, s.instruction, s.block, s.loop, s.span, s.own)
            assert row["line"] is None
        else:
            assert row["origin"] in kinds and row["scope"] >= AUTO_SCOPE_BASE
            f = found[row["scope"] - AUTO_SCOPE_BASE]
            assert (row["origin"], row["instruction"], row["loop"]) == (f.kind, f.instruction, f.loop)
            assert site == (f.start if row["kind"] == "start" else f.ends[row["pair"]])
            assert p.result.scope_names[row["scope"]] == f.name and row["line"] == f.line
            assert row["span"] is None
        seen.add((row["scope"], row["kind"], row["pair"]))
    # every site has its row but the pairs left out (an automatic site's readings go together)
    expected = set(placed) | {(AUTO_SCOPE_BASE + k, "start", 0) for k in range(len(found))}
    expected |= {(AUTO_SCOPE_BASE + k, "end", e) for k, f in enumerate(found) for e in range(len(f.ends))}
    left_scopes = {scope for scope, _ in left}
    assert seen == {(scope, kind, pair) for scope, kind, pair in expected
                    if (scope, pair) not in left and not (scope >= AUTO_SCOPE_BASE and scope in left_scopes)}


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
                    if w is None or not p.inserted[w]:
                        continue
                    latency = PROBE_LATENCY[p.new[w].base]
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
    assert checked >= p.result.cost["readings"]


# ---------------------------------------------------------------- readings moved or left out

def _room(p: Probed, i: int) -> bool:
    """Whether a lone reading fits before instruction i: two registers and a uniform predicate."""
    return len(p.liveness.free_registers(i)) >= 2 and bool(p.liveness.free_uniform_predicates(i))


@pytest.mark.parametrize("version, name", PROBED, ids=PROBED_IDS)
def test_moved_and_left_out_readings_had_no_room_at_their_site(version, name):
    p = _probed_or_skip(version, name)
    sites = p.result.sites
    for k, moved in enumerate(sites["moved"]):
        if moved:
            at = sites["index"][k]
            assert not _room(p, at - moved) and _room(p, at), (k, at, moved)
    for entry in p.result.left_out:
        assert set(entry) == {"scope", "pair", "instruction", "reason"} and "\n" not in entry["reason"]
        need = re.fullmatch(rf"kernel {re.escape(p.kernel)}: no (\d+) registers and a uniform predicate are free at "
                            r"instruction (\d+) \(\S+\) for a reading", entry["reason"])
        assert need, entry["reason"]
        if need.group(1) == "2":  # a lone reading: no room where it was tried
            assert not _room(p, int(need.group(2)))


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


@pytest.mark.parametrize("version", ["here", "h200"])
def test_the_warp_specialized_matmul_leaves_readings_out_and_says_so(version):
    """Its consumer warps sit at the register count USETMAXREG gives them: some automatic sites
    find no two registers free. Those pairs are left out, each named with its reason; the rest
    are all read; the markers alone fit."""
    name = "warp-specialized TMA matmul"
    result, placed, automatic = _left_out_case(version, name, auto=True)
    assert len(result.left_out) >= 5
    left = {e["scope"] for e in result.left_out}
    assert left <= set(result.scope_names) and not left & set(result.sites["scope"])
    left_readings = sum(1 + len(f.ends) for k, f in enumerate(automatic) if AUTO_SCOPE_BASE + k in left)
    assert result.cost["readings"] == len(placed) + sum(1 + len(f.ends) for f in automatic) - left_readings
    p = probed(version, name)
    assert len(_readings(p)) == result.cost["readings"]
    markers_only, placed, _ = _left_out_case(version, name, auto=False)
    assert markers_only.left_out == [] and markers_only.cost["readings"] == len(placed)


def test_a_reading_moves_where_its_site_has_no_room():
    """Layer norm's backward dx, as Triton 3.9 schedules it: readings the liveness leaves no
    room for at their site are read at the nearest instruction of the block that has it."""
    p = probed("here", "layernorm bwd dx")
    moved = [(i, m) for i, m in zip(p.result.sites["index"], p.result.sites["moved"]) if m]
    assert len(moved) >= 1
    readings = _readings(p)
    for at, m in moved:
        assert not _room(p, at - m) and _room(p, at)
        assert p.anchor[readings[p.result.sites["index"].index(at)]] == at


def test_left_out_marker_pairs_name_the_instruction_they_were_tried_at():
    """The causal d128 attention forward (Triton 3.9) has no room for some marker readings."""
    result, placed, _ = _left_out_case("here", "attention fwd d128 causal", auto=False)
    assert result.left_out
    index_of = {(s.scope, s.kind, s.pair): s.index for s in placed}
    for entry in result.left_out:
        pair = {index_of[entry["scope"], kind, entry["pair"]] for kind in ("start", "end")}
        assert entry["instruction"] in pair
        assert not any(s == entry["scope"] and pr == entry["pair"]
                       for s, pr in zip(result.sites["scope"], result.sites["pair"]))
    assert result.cost["readings"] == len(placed) - 2 * len(result.left_out)
