"""One kernel of a cubin made to record its sites on the `sass` tier: its scopes placed on the
final schedule (sites.py) and, when asked, its automatic sites (waits.py); the probes planned
into what the kernel leaves free (probes.py); the cubin rewritten and proven (rewrite.py); the
tier's three parameters appended. What comes back says where every reading went
(`sites`, trace.sites' rows) and what the probes cost in instructions."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.layout import MAX_SCOPE_ID, make_tag
from gwatch_nb.records import SiteTable
from gwatch_nb.sass import pairing, probes, sites as scope_sites, waits
from gwatch_nb.sass.callsites import CallSites
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.lines import line_table
from gwatch_nb.sass.liveness import Liveness
from gwatch_nb.sass.ptx_lines import PtxLines
from gwatch_nb.sass.rewrite import decoded, rewrite

#: Automatic sites take scope ids from here up, one per site (marker ids stay below).
AUTO_SCOPE_BASE = MAX_SCOPE_ID - 4095
#: The parameters the tier appends, in order: (name, bytes).
PARAMETERS = (("slots", 8), ("slot_bytes", 4), ("capacity", 4))
#: A warp's threads: a diverged warp may pass a block once for each of them.
WARP_LANES = 32
#: trace.sites' columns, one row per reading.
SITE_COLUMNS = ("kernel", "site", "scope", "kind", "pair", "origin", "line", "index", "moved", "store", "instruction",
                "block", "loop", "span", "own", "other_scopes", "unscoped", "inferred")

#: Why a scope the source writes has no reading at all (sass_session tells a branch Triton
#: compiled away, whose marker the PTX lacks too, from a scope the line table misses).
NO_CODE = "no instruction of the compiled kernel comes from its source lines"


@dataclass(frozen=True)
class InstrumentedCubin:
    cubin: bytes
    kernel: str
    num_params: int                # the kernel's own parameters (the tier's three follow)
    table: SiteTable
    sites: dict[str, list]         # SITE_COLUMNS -> values, one per reading
    scope_names: dict[int, str]    # names of the automatic scopes
    cost: dict                     # instructions before and inserted, state registers
    seconds: dict[str, float]      # decode, analyse, rewrite
    left_out: list[dict]           # scope pairs not read, and why (no registers, no sound place, no code)
    open_at_exit: dict[int, int]   # scopes a path may leave open at an EXIT (the first such EXIT): they end there
    start_depths: dict[int, list[int]]  # marker scope -> the loop depth of each of its start readings
    inserted: dict[int, int]       # instruction index -> instructions the probes placed before it
    auto_sites: dict               # automatic scope id -> its waits.AutoSite
    most_events: int | None        # the most readings one warp can take (_most_events), None: unbounded


def instrument(cubin: bytes, kernel: str, markers: list, scopes: frozenset | None = None,
               auto: bool = False, shared_bytes: int | None = None,
               callsites: CallSites | None = None, ptx: PtxLines | None = None) -> InstrumentedCubin | None:
    """`kernel` of `cubin` with a reading at every site of the `markers` (of `scopes`, all when
    None) and, with `auto`, at every automatic site; None when there is no site to read.
    `shared_bytes`: the shared memory its launches use, where known (the register count may
    then rise as far as an SM still holds as many of its blocks). `callsites`: the kernel's own
    calls, which place inlined code the line table gives no call site (sites.home_chains). `ptx`:
    the kernel's PTX-line table (ptx_lines.py), which places each copy of a scope by the PTX
    instructions its sentinels delimit (the source lines do without one)."""
    began = time.perf_counter()
    instructions = decoded(cubin).get(kernel)
    if instructions is None:
        raise SassRewriteError(f"kernel {kernel}: not in the cubin")
    view = Cubin.parse(cubin)
    locations = line_table(cubin).get(kernel) or [None] * len(instructions)
    decoded_at = time.perf_counter()
    cfg = ControlFlowGraph(instructions, kernel)
    rows = (by_sentinels(cfg, ptx, scopes) if markers else None) or []
    by_ptx = bool(rows)
    if markers and not by_ptx:
        rows = _marker_rows(scope_sites.place(instructions, locations, markers, kernel, cfg, callsites), scopes)
    names, auto_sites = {}, {}
    if auto:
        # The kernel's own site is read only where it would be the only one: elsewhere every warp's
        # entry and exit, in its header, already give it.
        everything = waits.find(instructions, locations, kernel, cfg)
        found_sites = [f for f in everything if f.kind != "kernel"] or ([] if rows else everything[:1])
        names = waits.distinct_names({AUTO_SCOPE_BASE + k: f.name for k, f in enumerate(found_sites)},
                                     {AUTO_SCOPE_BASE + k: f.instruction for k, f in enumerate(found_sites)})
        for k, found in enumerate(found_sites):
            scope = AUTO_SCOPE_BASE + k
            auto_sites[scope] = found
            common = dict(scope=scope, origin=found.kind, line=found.line, instruction=found.instruction,
                          loop=found.loop, span=None, own=None, other_scopes=None, unscoped=None, inferred=None)
            rows.append(dict(common, kind="start", pair=0, index=found.start, block=cfg.block_of[found.start]))
            # The kernel's scope has no end readings: every path leaves it at an EXIT, where it ends.
            for pair, end in enumerate(found.ends if found.kind != "kernel" else ()):
                at = min(end, len(instructions) - 1)
                rows.append(dict(common, kind="end", pair=pair, index=end, block=cfg.block_of[at]))
    if not rows:
        return None
    # A scope the source writes but no instruction of the final schedule falls in is not read at all.
    written = {m.scope_id for m in markers if scopes is None or m.scope_id in scopes}
    unplaced = [dict(scope=scope, pair=0, instruction=None, reason=NO_CODE)
                for scope in sorted(written - {r["scope"] for r in rows})]
    rows.sort(key=_reading_order(rows))
    num_params, params = _parameters(view, kernel)
    readings = _readings(rows)
    registers = view.registers(kernel)
    block = _block(view, kernel, shared_bytes)
    count, left_out = registers, unplaced
    while True:
        if not rows:
            raise SassRewriteError(f"kernel {kernel}: no site has the registers a reading needs")
        try:
            liveness = Liveness(cfg, count)
            plan = probes.plan(liveness, readings, params, list(range(len(rows))))
            proof = pairing.check(cfg, [pairing.PlacedReading(at, r["scope"], r["kind"] == "end")
                                        for r, at in zip(rows, plan.read_at)])
            unsound = {scope for scope in proof.faults if scope >= AUTO_SCOPE_BASE}
            if not unsound:
                break
            # An automatic site that cannot be read soundly is left out, not the whole kernel.
            for scope in sorted(unsound):
                first = next(r for r in rows if r["scope"] == scope)
                left_out.append(dict(scope=scope, pair=0, instruction=first["index"], reason=proof.faults[scope]))
            rows = [r for r in rows if r["scope"] not in unsound]
            readings = _readings(rows)
        except probes.TooFewRegisters as error:
            more = _more_registers(registers, count, block, view.register_limit(kernel))
            if more is not None:
                count = more
            elif error.reading is None:
                raise
            else:  # leave out the pair (start and its ends) the reading belongs to
                row = rows[error.reading]
                pair = [r for r in rows if r["scope"] == row["scope"] and (r["pair"] == row["pair"] or r["origin"] != "marker")]
                left_out.append(dict(scope=row["scope"], pair=row["pair"], instruction=row["index"], reason=str(error)))
                rows = [r for r in rows if r not in pair]
                readings = _readings(rows)
    raised = count if count != registers else None
    proof.require(kernel)  # a marker scope whose readings do not pair: the kernel is refused
    analysed = time.perf_counter()
    out = rewrite(cubin, kernel, plan.insertions, registers=raised, transfers=liveness.scoreboards)
    for (name, size), expected in zip(PARAMETERS, (params.slots, params.slot_bytes, params.capacity)):
        out, address = Cubin.parse(out).with_parameter(kernel, size, size)
        if address != expected:
            raise SassRewriteError(f"kernel {kernel}: the {name} parameter landed at {address:#x}, not {expected:#x}")
    for number, (row, store, at) in enumerate(zip(rows, plan.stores, plan.read_at)):
        row.update(kernel=kernel, site=number, store=store, moved=at - row["index"], index=at)
    table = SiteTable(np.array([make_tag(r["scope"], r["kind"] == "end") for r in rows], np.uint32),
                      np.array(plan.words, np.int64), np.array(plan.events, np.int64))
    done = time.perf_counter()
    return InstrumentedCubin(
        out, kernel, num_params, table, {c: [r[c] for r in rows] for c in SITE_COLUMNS}, names,
        dict(instructions=len(instructions), inserted=plan.inserted, readings=len(rows),
             placed_by="sentinels" if by_ptx else "source lines",
             state_registers=[f"UR{n}" for n in plan.state], registers=[registers, raised or registers]),
        dict(decode=decoded_at - began, analyse=analysed - decoded_at, rewrite=done - analysed), left_out,
        proof.open_at_exit, _start_depths(cfg, rows), {i: len(items) for i, items in plan.insertions.items()},
        {scope: site for scope, site in auto_sites.items() if scope in {r["scope"] for r in rows}},
        _most_events(cfg, plan.read_at))


def _most_events(cfg: ControlFlowGraph, read_at: list[int]) -> int | None:
    """The most readings one warp can take, where no reading sits on a cycle: each thread passes
    such a reading at most once, so a warp, however it diverges, at most WARP_LANES times. None
    where one does (how often a loop runs only the launch knows)."""
    last = len(cfg.instructions) - 1
    if any(cfg.on_cycle(b) for b in {cfg.block_of[min(at, last)] for at in read_at}):  # one search a block
        return None
    return WARP_LANES * len(read_at)


def by_sentinels(cfg: ControlFlowGraph, ptx: PtxLines | None, scopes: frozenset | None = None) -> list[dict] | None:
    """The marker scopes' rows placed by the PTX's sentinels, where each copy has a sound place
    and their readings pair on every path; None where the source lines place the kernel. Not
    where a copy runs on some iterations of its innermost loop only: ptxas can predicate such
    code into every iteration, where a reading would count each one."""
    if ptx is None or ptx.conditional:
        return None
    try:
        rows = _marker_rows(scope_sites.place(cfg.instructions, ptx.locations, [], cfg.kernel, cfg, copies=ptx.copies,
                                              line_depths=ptx.depths, same_count=ptx.same_count), scopes)
    except SassRewriteError:
        return None
    readings = [pairing.PlacedReading(r["index"], r["scope"], r["kind"] == "end")
                for r in sorted(rows, key=_reading_order(rows))]
    return None if pairing.check(cfg, readings).faults else rows


def _marker_rows(placed, scopes: frozenset | None) -> list[dict]:
    """trace.sites' rows of the marker scopes asked for (all where `scopes` is None)."""
    return [dict(scope=site.scope, kind=site.kind, pair=site.pair, origin="marker", line=None, index=site.index,
                 instruction=site.instruction, block=site.block, loop=site.loop, span=site.span, own=site.own,
                 other_scopes=site.other_scopes, unscoped=site.unscoped, inferred=site.inferred)
            for site in placed if scopes is None or site.scope in scopes]


def _start_depths(cfg: ControlFlowGraph, rows: list[dict]) -> dict[int, list[int]]:
    """Per marker scope, how many loops of the compiled kernel surround each of its start
    readings (sorted): with the sentinels' depths in the PTX, this says whether the readings
    run as often as the ptx tier's records (markers.ptx_start_depths)."""
    out: dict[int, list[int]] = {}
    for row in rows:
        if row["origin"] == "marker" and row["kind"] == "start":
            out.setdefault(row["scope"], []).append(cfg.loop_depth(row["index"]))
    return {scope: sorted(depths) for scope, depths in out.items()}


def _readings(rows: list[dict]) -> list[probes.Reading]:
    return [probes.Reading(r["index"], make_tag(r["scope"], r["kind"] == "end")) for r in rows]


def _reading_order(rows: list[dict]):
    """Readings in program order; at one instruction, the ends of pairs that started before it
    first, then each pair that starts there, its start and then any end it has there too (a
    pair whose only instruction ends its block reads before it twice; copies of a scope placed
    in turn can meet at one instruction)."""
    starts = {(r["scope"], r["pair"]): r["index"] for r in rows if r["kind"] == "start"}

    def key(row):
        pair = row["pair"] if row["origin"] == "marker" else 0
        if row["kind"] == "start":
            return row["index"], 1, row["scope"], pair, 0
        if starts.get((row["scope"], pair), -1) == row["index"]:
            return row["index"], 1, row["scope"], pair, 1
        return row["index"], 0, row["scope"], pair, 0
    return key


#: What an SM holds: 64K registers, at most 64 warps; a warp's registers are allocated 256 at a time.
SM_REGISTERS, SM_WARPS, WARP_ALLOCATION, SM_BLOCKS = 65536, 64, 256, 32
#: Shared memory an sm_90 SM holds, and what the system reserves of it per block.
SM_SHARED, BLOCK_SHARED_RESERVED = 228 * 1024, 1024


def warps_per_sm(registers: int) -> int:
    """Warps an SM can hold at this register count (registers alone)."""
    per_warp = -(-registers * 32 // WARP_ALLOCATION) * WARP_ALLOCATION
    return min(SM_WARPS, SM_REGISTERS // per_warp)


def blocks_per_sm(registers: int, warps: int, shared_bytes: int) -> int:
    """Blocks of `warps` warps using `shared_bytes` of shared memory an SM can hold at this
    register count: the least of what its registers, warp slots, shared memory and block
    slots allow."""
    by_shared = SM_SHARED // (shared_bytes + BLOCK_SHARED_RESERVED)
    return min(warps_per_sm(registers) // warps, SM_WARPS // warps, by_shared, SM_BLOCKS)


def free_register_count(registers: int, block: tuple[int, int] | None = None) -> int:
    """The largest register count at which an SM holds as many of the kernel's warps as at
    `registers` (as many blocks, where `block` gives its warps and shared bytes): what the
    probes may raise a kernel's count to when it leaves them too few."""
    def held(count: int) -> int:
        return warps_per_sm(count) if block is None else blocks_per_sm(count, *block)
    now = held(registers)
    return max(count for count in range(registers, 256) if held(count) == now)


def _more_registers(registers: int, count: int, block: tuple[int, int] | None, limit: int) -> int | None:
    """The register count to plan at once `count` left the probes short, at most `limit`: first
    the largest at which an SM holds as many blocks as at the kernel's own `registers`; then the
    largest of the next occupancy down (a reading kept costs occupancy, which the trace reports,
    rather than a scope going unrecorded: a single step gives every probe the kernel's unused
    top registers); None after that."""
    same = min(free_register_count(registers, block), limit)
    if count < same:
        return same
    if count == same < limit:
        return min(free_register_count(same + 1, block), limit)
    return None


def _block(view: Cubin, kernel: str, shared_bytes: int | None) -> tuple[int, int] | None:
    """The kernel's warps per block (its EIATTR_REQNTID) and shared memory bytes, or None
    where either is not known."""
    threads = next((a.words() for a in view.attributes(kernel) if a.name == "EIATTR_REQNTID"), ())
    if shared_bytes is None or len(threads) < 3:
        return None
    x, y, z = threads[:3]
    return -(-x * y * z // 32), shared_bytes


def _parameters(view: Cubin, kernel: str) -> tuple[int, probes.Parameters]:
    """How many parameters the kernel has, and where the appended ones will be."""
    count = sum(1 for a in view.attributes(kernel) if a.name == "EIATTR_KPARAM_INFO")
    out, addresses = view, []
    for name, size in PARAMETERS:
        data, address = out.with_parameter(kernel, size, size)
        out = Cubin.parse(data)
        addresses.append(address)
    return count, probes.Parameters(*addresses)
