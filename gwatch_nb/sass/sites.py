"""Where each scope's readings go in the final schedule, from where ptxas put the scope's own
instructions (docs/sass/sites.md defines every term and column).

A scope's instructions are those whose source line, at some level of their inlining chain,
lies strictly between the scope's start and end marker lines in the markers' file. Where the
source says how many loops surround the start marker, code ptxas hoisted to fewer loops is no
iteration of the scope, and a scope outside every source loop gets one pair: from the block
outside loops that dominates its code to its last instruction outside loops. Otherwise they are
grouped by the innermost loop around them that is not itself wholly the scope's code (so a
scope around a whole inner loop gets one pair per iteration of the loop outside it); a group
whose first instruction's block dominates the group and whose last instruction's block every
path from there reaches gets one start/end pair; any other group in a loop one pair per
iteration (the loop's header to its back edges), outside loops one pair per block. Where the
PTX's sentinels place the scopes (ptx_lines.py), each copy of a scope is placed so, split into
the iterations ptxas unrolled (`_unrolled`), the copies of one id read in turn (`_in_turn`)."""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass, fields, replace

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.callsites import CallSites
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.lines import Location
from gwatch_nb.sass.markers import Marker

UNSCOPED = -1  # innermost scope of an instruction outside every scope


@dataclass(frozen=True)
class Scope:
    scope_id: int
    file: str
    start_line: int
    end_line: int
    loops: int | None = None  # source loops around its start marker (None: not known)
    lines: frozenset[int] | None = None  # the lines it holds, where not all between its markers (ptx_lines.py)

    def holds(self, name: str, line: int) -> bool:
        """Whether `line` of the file called `name` is the scope's code."""
        inside = line in self.lines if self.lines is not None else self.start_line < line < self.end_line
        return inside and name == os.path.basename(self.file)

    @property
    def size(self) -> int:
        """How many lines it holds: of two scopes holding a line, the smaller is the inner."""
        return len(self.lines) if self.lines is not None else self.end_line - self.start_line


@dataclass(frozen=True)
class Site:
    scope: int            # scope id
    kind: str             # "start" or "end"
    pair: int             # number of the start/end pair within the scope (0, 1, ...)
    index: int            # the reading is inserted just before this instruction index
    instruction: int      # the scope's first (start) or last (end) instruction of the pair
    block: int            # basic block of `instruction`
    loop: int | None      # ControlFlowGraph.loops index the pair repeats with (None: once per run)
    span: int             # instructions from the pair's first to its last, inclusive, in its blocks
    own: int              # of them, the scope's own (nested scopes' included)
    other_scopes: int     # of them, other scopes' instructions ptxas interleaved
    unscoped: int         # of them, instructions of no scope
    inferred: int         # of the own ones, those claimed through a neighbour's line (no inlining chain)


COLUMNS = tuple(f.name for f in fields(Site))


def columns(sites: list[Site]) -> dict[str, list]:
    """The sites as a column table (pandas.DataFrame(columns(sites)) is `trace.sites`)."""
    return {name: [getattr(site, name) for site in sites] for name in COLUMNS}


def scopes_of(markers: list[Marker], kernel: str = "?") -> list[Scope]:
    """Pair each start marker with the end markers of its id that follow it in the same file
    before its next start: a scope closed before an early `return` has several ends, on
    alternative paths, and reaches to the last of them."""
    by_id: dict[tuple[int, str], list[Marker]] = defaultdict(list)
    for marker in sorted(markers, key=lambda m: (m.line, m.kind != "end")):
        by_id[(marker.scope_id, os.path.basename(marker.file))].append(marker)
    scopes = []
    for (scope_id, _), ms in by_id.items():
        open_at, last_end = None, None
        for marker in ms + [None]:
            if marker is None or marker.kind == "start":
                if open_at is not None:
                    if last_end is None and marker is None:
                        raise SassRewriteError(f"kernel {kernel}: scope {scope_id} starts on line {open_at.line} "
                                               f"and never ends")
                    if last_end is None:
                        raise SassRewriteError(f"kernel {kernel}: scope {scope_id} starts again on line {marker.line} "
                                               f"while open since line {open_at.line}")
                    scopes.append(Scope(scope_id, open_at.file, open_at.line, last_end.line, open_at.loops))
                open_at, last_end = marker, None
            elif open_at is None:
                raise SassRewriteError(f"kernel {kernel}: scope {scope_id} ends on line {marker.line} without a start")
            else:
                last_end = marker
    return sorted(scopes, key=lambda s: (s.start_line, -s.end_line))


def home_chains(locations: list[Location | None], cfg: ControlFlowGraph, files: set[str],
                callsites: CallSites | None = None) -> tuple[list[tuple[tuple[str, int], ...]], list[bool]]:
    """Per instruction, the (file name, line) levels a scope can claim it by, and whether they
    were inferred. Files are compared by name: a cubin Triton's cache hands back keeps the path
    the kernel was first compiled from. Where the line table gives inlined code no call site
    (Triton 3.6), the call site is inferred from the nearest instruction of the same block whose
    chain is the kernel's own (the earlier one on a tie):
    - library code (its chain never reaches a marker file): with `callsites`, the kernel line
      calling its library function nearest that neighbour's line; without, or with no such
      call, the neighbour's chain; none in the block: unclaimed;
    - a `@triton.jit` helper's code (one level, outside the kernel's own lines, a function the
      kernel calls): its own line stays (for scopes marked in the helper) and the call nearest
      the neighbour's line is added; none in the block: the call, where the kernel makes one.
    Of several calls, one among the kernel lines of the instruction's own loop is preferred (a
    helper called in two loops: each loop's copy is its own call's)."""
    names = {os.path.basename(f) for f in files}
    locations = _without_carried_rows(locations, cfg)
    by_location: dict[Location, tuple[tuple[str, int], ...]] = {}
    chains = []
    for location in locations:
        if location is None:
            chains.append(())
            continue
        chain = by_location.get(location)
        if chain is None:
            chain = by_location[location] = tuple((os.path.basename(c.file), c.line) for c in location.chain)
        chains.append(chain)
    reaches = [any(name in names for name, _ in chain) for chain in chains]
    calls = [callsites.lines_calling(loc.file, loc.line) if callsites is not None and loc is not None else ()
             for loc in locations]
    helper = [reaches[i] and len(chains[i]) == 1 and bool(calls[i]) for i in range(len(locations))]
    anchors = [reaches[i] and not helper[i] for i in range(len(locations))]
    # The kernel lines of each loop's own code: a call made in another loop is not this code's.
    lines_in: dict[int | None, list[int]] = defaultdict(list)
    for i, chain in enumerate(chains):
        if anchors[i]:
            lines_in[cfg.loop_of[cfg.block_of[i]]].append(next(line for name, line in reversed(chain) if name in names))
    spans = {loop: (min(lines), max(lines)) for loop, lines in lines_in.items()}
    inferred = [False] * len(locations)
    for block in cfg.blocks:
        anchored = [i for i in range(block.start, block.end) if anchors[i]]
        k = 0
        for i in range(block.start, block.end):
            if anchors[i]:
                continue
            if not anchored:
                if helper[i] and len(calls[i]) == 1:
                    chains[i] = chains[i] + ((os.path.basename(callsites.file), calls[i][0]),)
                    inferred[i] = True
                continue
            while k + 1 < len(anchored) and abs(anchored[k + 1] - i) < abs(anchored[k] - i):
                k += 1
            neighbour = chains[anchored[k]]
            if calls[i]:
                kernel_file, near = next(level for level in reversed(neighbour) if level[0] in names)
                low, high = spans.get(cfg.loop_of[block.index], (near, near))
                chains[i] = chains[i] + ((kernel_file, min(calls[i], key=lambda at: (not low <= at <= high,
                                                                                     abs(at - near), at))),)
            else:
                chains[i] = neighbour
            inferred[i] = True
    return chains, inferred


def _without_carried_rows(locations: list[Location | None], cfg: ControlFlowGraph) -> list[Location | None]:
    """The locations, less those a block only inherits from the line-table row of code laid out
    before it that never flows into it (a row holds until the next address that has one). A
    block ptxas placed after another path's EXIT or branch often begins with no row of its own,
    and would read as that path's code: tutorial-style early returns put the non-returning path's
    first instructions in the returning scope, whose start then went before the branch. Such
    instructions are placed by their block's neighbours instead (home_chains). A row the program
    repeats at the block is a Location of its own (line_table makes one per row), so `is` tells."""
    out = list(locations)
    for block in cfg.blocks:
        if block.start == 0 or block.index in cfg.block_at(block.start - 1).successors:
            continue
        inherited, i = locations[block.start - 1], block.start
        while inherited is not None and i < block.end and locations[i] is inherited:
            out[i] = None
            i += 1
    return out


def innermost_scopes(chains, scopes: list[Scope]) -> tuple[list[int], list[frozenset[int]]]:
    """Per instruction, the index in `scopes` of its innermost scope (UNSCOPED: none), and every
    scope that holds it."""
    inner, holding, seen = [], [], {}
    for chain in chains:
        if chain not in seen:
            held = frozenset(k for k, s in enumerate(scopes) if any(s.holds(f, line) for f, line in chain))
            seen[chain] = held, (min(held, key=lambda k: scopes[k].size)
                                 if held else UNSCOPED)
        held, innermost = seen[chain]
        holding.append(held)
        inner.append(innermost)
    return inner, holding


def place(instructions, locations: list[Location | None], markers: list[Marker], kernel: str = "?",
          cfg: ControlFlowGraph | None = None, callsites: CallSites | None = None,
          copies: list[Scope] | None = None, line_depths: dict[int, int] | None = None,
          same_count: list[tuple[int, ...]] | None = None) -> list[Site]:
    """The start and end sites of every scope the markers define, on the final schedule
    (`callsites`: the kernel's own calls, to place library code the line table gives no call site).
    `copies`: instead of the markers, the scopes of the PTX's sentinels, with the locations PTX
    lines (ptx_lines.py): each copy Triton made of a scope (an unrolled `tl.static_range` body)
    is placed on its own, and each iteration ptxas unrolled; `line_depths`: the PTX loops
    around each PTX line; `same_count`: per copy, the copies whose start runs as often as it
    (a scope ptxas left no instruction is read at theirs, `_at_neighbours`)."""
    cfg = cfg or ControlFlowGraph(instructions, kernel)
    if len(locations) != len(instructions):
        raise SassRewriteError(f"kernel {kernel}: {len(locations)} line entries for {len(instructions)} instructions")
    scopes = copies if copies is not None else scopes_of(markers, kernel)
    line_depths = line_depths or {}
    chains, inferred = home_chains(locations, cfg, {s.file for s in scopes}, callsites)
    inner, holding = innermost_scopes(chains, scopes)
    claimed = [i for i, chain in enumerate(chains) if chain]
    sites: list[Site] = []
    starts_of: dict[int, list[Site]] = {}  # per copy, its start sites
    for scope_id in dict.fromkeys(s.scope_id for s in scopes):
        ks = [k for k, s in enumerate(scopes) if s.scope_id == scope_id]
        placed: list[Site] = []
        pairs_of: dict[int, range] = {}
        pair = 0  # the next pair's number
        for copy in ([{k} for k in ks] if copies is not None else [set(ks)]):
            members, loops = _members(cfg, scopes, copy, holding, hoisted=copies is not None)
            parts = _unrolled(cfg, members, loops, chains, line_depths) if copies is not None else [members]
            first_pair = pair
            for part in parts:
                made = _place_scope(cfg, scope_id, part, loops, inner, inferred, claimed, pair,
                                    by_depth=copies is not None)
                placed.extend(made)
                pair += sum(site.kind == "start" for site in made)
            pairs_of[min(copy)] = range(first_pair, pair)
        if copies is not None:
            of_id = {i for i, held in enumerate(holding) if held & set(ks)}
            placed = _in_turn(cfg, placed, lambda first, last, loop: _sharpness(
                loop, [i for i in range(first, last + 1) if cfg.dominates(cfg.block_of[first], cfg.block_of[i])],
                of_id, inner, inferred))
            for k, pairs in pairs_of.items():
                starts_of[k] = [site for site in placed if site.kind == "start" and site.pair in pairs]
        sites.extend(placed)
    if copies is not None and same_count is not None:
        sites.extend(_at_neighbours(scopes, same_count, starts_of))
    return sorted(sites, key=lambda s: (s.index, s.kind == "start", s.scope))


def _at_neighbours(copies: list[Scope], same_count: list[tuple[int, ...]],
                   starts_of: dict[int, list[Site]]) -> list[Site]:
    """Zero-length pairs for the scopes none of whose copies kept an instruction (an empty
    body, a load the pipeliner moved elsewhere): each copy read at every start reading of the
    nearest copy with readings whose start runs as often as it. A scope with a copy that has
    no such neighbour stays unread."""
    out: list[Site] = []
    for scope_id in dict.fromkeys(c.scope_id for c in copies):
        ks = [k for k, c in enumerate(copies) if c.scope_id == scope_id]
        if any(starts_of.get(k) for k in ks):
            continue
        anchors = [next((starts_of[j] for j in same_count[k] if starts_of.get(j)), None) for k in ks]
        if any(a is None for a in anchors):
            continue
        pair = 0
        for at in (site for anchor in anchors for site in sorted(anchor, key=lambda s: s.index)):
            common = dict(index=at.index, instruction=at.instruction, block=at.block, loop=at.loop, span=0, own=0,
                          other_scopes=0, unscoped=0, inferred=0)
            out += [Site(scope_id, "start", pair, **common), Site(scope_id, "end", pair, **common)]
            pair += 1
    return out


def _in_turn(cfg: ControlFlowGraph, sites: list[Site], sharpness) -> list[Site]:
    """The pairs of a scope's copies one after another: ptxas interleaves the copies of an
    unrolled body (their loads first, say), and the readings of one id must alternate. A copy
    whose code ends in a block some paths from its start skip (the body of an `if` ptxas made a
    branch) ends at the first block after it that every such path reaches. Taken in the order
    their code ends, each copy then starts where the one before it ended, if its own code began
    earlier and every path to its end passes that one's (an instance ends when its copy's last
    instruction issues). A pair so moved gets its sharpness again (`sharpness(first, last,
    loop)`: Site's span fields over its new bounds)."""
    pairs: dict[int, list[Site]] = defaultdict(list)
    for site in sites:
        pairs[site.pair].append(site)
    out, before = [], None
    for pair in sorted(pairs.values(), key=lambda p: max(s.index for s in p if s.kind == "end")):
        start = next(s for s in pair if s.kind == "start")
        ends = [_joined(cfg, start, s) if s.kind == "end" and len(pair) == 2 else s for s in pair if s.kind == "end"]
        if before is not None and start.index < before.index and all(
                cfg.dominates(_reading_block(cfg, before.index), _reading_block(cfg, e.index)) for e in ends):
            start = replace(start, index=before.index)
        if start.index != start.instruction or any(e.index not in (e.instruction, e.instruction + 1) for e in ends):
            last = max(e.index for e in ends) - 1
            if last >= start.index:
                counts = sharpness(start.index, last, start.loop)
                start, ends = replace(start, **counts), [replace(e, **counts) for e in ends]
        out.append(start)
        out.extend(ends)
        before = ends[0] if len(ends) == 1 else None
    return out


def _joined(cfg: ControlFlowGraph, start: Site, end: Site) -> Site:
    """`end`, or where every path from `start` meets again after it, if some skip its block."""
    head, tail = _reading_block(cfg, start.index), _reading_block(cfg, end.index)
    region, header = _region(cfg, end.loop)
    if _always_reaches(cfg, head, tail, region, header):
        return end
    join = _join_after(cfg, head, tail, end.loop)
    return end if join is None else replace(end, index=cfg.blocks[join].start)


def _region(cfg: ControlFlowGraph, loop: int | None) -> tuple[set[int], int | None]:
    """The blocks of `loop` (every block, for None) and its header."""
    if loop is None:
        return set(range(len(cfg.blocks))), None
    return cfg.loops[loop].blocks, cfg.loops[loop].header


def _join_after(cfg: ControlFlowGraph, head: int, tail: int, loop: int | None) -> int | None:
    """The first block laid out after `tail` in `loop` (not its header) that every path from
    `head` reaches before leaving the loop or going round it; None where there is none."""
    region, header = _region(cfg, loop)
    return next((b for b in range(tail + 1, len(cfg.blocks)) if b in region and b != header
                 and _always_reaches(cfg, head, b, region, header)), None)


def _reading_block(cfg: ControlFlowGraph, index: int) -> int:
    """The block a reading just before instruction `index` is taken in."""
    return cfg.block_of[min(index, len(cfg.block_of) - 1)]


def _members(cfg: ControlFlowGraph, scopes: list[Scope], ks: set[int], holding,
             hoisted: bool = False) -> tuple[list[int], int | None]:
    """The instructions of the scopes `ks` (all of one id) and the source loops around them;
    without code ptxas hoisted out of the scope's own loop unless `hoisted`."""
    # A subroutine's code runs inside whichever scope calls it: its readings are the caller's.
    members = [i for i, held in enumerate(holding) if held & ks and cfg.on_own_path(cfg.block_of[i])]
    loops = min((scopes[k].loops for k in ks if scopes[k].loops is not None), default=None)
    if loops is not None and not hoisted:
        # Code ptxas hoisted out of the scope's own loop (invariants, address set-up) is not an iteration.
        members = [i for i in members if cfg.loop_depth(i) >= loops] or members
    return members, loops


#: Memory instructions: one PTX load or store is one of them, in each iteration ptxas unrolled.
_MEMORY = ("LDG", "STG", "LDS", "STS", "LD", "ST", "ATOM", "ATOMG", "ATOMS", "RED", "LDGSTS", "LDSM", "STSM")


def _unrolled(cfg: ControlFlowGraph, members: list[int], loops: int | None, chains,
              line_depths: dict[int, int]) -> list[list[int]]:
    """A scope copy's instructions as the iterations ptxas made of them. Each PTX load or store
    of the copy's own loop loops (`line_depths`: the PTX loops around each line; an inner
    loop's are no iteration of this one) is a fixed number e of memory instructions per
    iteration: e is the fewest of a line in any one place ptxas put the copy's code (the loop,
    an iteration it peeled before it, a chunk of two after it under a test of the trip count, a
    remainder loop). A place holding U times that is U iterations (U the most common ratio over
    its memory lines); of a line's c occurrences there, in program order, the j-th is iteration
    j * U // c's, and each iteration is read on its own, so every place's trips times U add up
    to the source's. Where the copy's code lies in its loop alone, no ratio is known and nothing
    is split; where ptxas unrolled the loop away, its trip count is unknown and the copy is
    refused (SassRewriteError: the source lines place the kernel). Code outside the
    copy's loop is a peeled iteration where it holds every load and store the loop has, else
    hoisted (invariants, the loop's control), no iteration. Loops deeper than the copy's start
    run within one of its instances."""
    if loops is None:
        return [members]

    def memory_of(ins: list[int]) -> Counter:
        return Counter(chains[i] for i in ins if cfg.instructions[i].opcode.split(".")[0] in _MEMORY
                       and bool(chains[i]) and line_depths.get(chains[i][0][1]) == loops)

    deep = [i for i in members if cfg.loop_depth(i) >= loops]
    if members and not deep:
        # ptxas unrolled the loop away: its trip count is not known here (on the H200 a
        # 64-trip loop's copies counted 63 on some warps), so the source lines place it.
        raise SassRewriteError(f"a copy's loop (depth {loops}) was unrolled away")
    in_loop = set(memory_of(deep))
    # A loop's code is one place; code outside the copy's loop a place per block.
    units: dict[tuple, list[int]] = defaultdict(list)
    for i in members:
        loop = cfg.loop_of[cfg.block_of[i]]
        depth = cfg.loops[loop].depth if loop is not None else 0
        units[(depth, loop) if depth >= loops else (depth, loop, cfg.block_of[i])].append(i)
    places = {key: (ins, memory_of(ins)) for key, ins in units.items()
              if key[0] >= loops or (in_loop and in_loop <= set(memory_of(ins)))}  # the rest: hoisted
    repeating = [memory for key, (_, memory) in places.items() if key[0] <= loops and memory]
    fewest: dict[tuple, int] = {}
    for memory in repeating:
        for line, n in memory.items():
            fewest[line] = min(fewest.get(line, n), n)
    parts: list[list[int]] = [[]]
    for (depth, *_), (ins, memory) in places.items():
        unroll = 1
        if memory and depth <= loops and len(repeating) > 1:
            ratios = Counter(n // fewest[line] for line, n in memory.items() if n % fewest[line] == 0)
            unroll = min(ratios.most_common(), key=lambda item: (-item[1], item[0]))[0] if ratios else 1
        counts = Counter(chains[i] for i in ins)
        seen: dict[tuple, int] = defaultdict(int)
        for i in sorted(ins):
            k = seen[chains[i]] * unroll // counts[chains[i]]
            seen[chains[i]] += 1
            while len(parts) <= k:
                parts.append([])
            parts[k].append(i)
    return [sorted(part) for part in parts if part]


def _place_scope(cfg: ControlFlowGraph, scope_id: int, members: list[int], loops: int | None, inner, inferred,
                 claimed: list[int], pair: int, by_depth: bool = False) -> list[Site]:
    """The sites of one scope's instructions `members`, numbering their pairs from `pair`.
    `by_depth`: `loops` is the PTX's count around the scope's start, so every loop deeper than
    that runs within one instance (ptxas sinks a few instructions of the loop around into an
    inner one, which would make it no loop of the scope's alone)."""
    sites: list[Site] = []
    member_set = set(members)
    if loops == 0 and _outside_loops(cfg, members):
        first, last, blocks = _once(cfg, members)
        span = [i for i in range(first, last + 1) if cfg.block_of[i] in blocks]
        counts = _sharpness(None, span, member_set, inner, inferred)
        return [Site(scope_id, "start", pair, first, first, cfg.block_of[first], **counts),
                Site(scope_id, "end", pair, _end_index(cfg, last), last, cfg.block_of[last], **counts)]
    inside = _loops_inside(cfg, member_set, claimed)
    if by_depth and loops is not None:
        inside |= {k for k, loop in enumerate(cfg.loops) if loop.depth > loops}
    groups: dict[int | None, list[int]] = defaultdict(list)
    for i in members:
        groups[_key(cfg, cfg.loop_of[cfg.block_of[i]], inside)].append(i)
    for loop, group in groups.items():
        # Read per iteration only where no other group of the scope repeats inside this loop.
        alone = loop is not None and not any(other is not None and other != loop and
                                             cfg.loops[other].blocks < cfg.loops[loop].blocks for other in groups)
        for first, lasts, blocks, iteration in _pairs(cfg, loop, group, alone):
            join = None
            if iteration and by_depth:
                # A copy runs every iteration of its PTX loop (ptx_lines' `conditional` sends the
                # others to the source lines): spread over paths (a zero-trip test before an
                # inner loop), it is read from the block every iteration passes that holds its
                # first instruction to where its paths meet again, never per iteration of a loop
                # an unrolled copy shares.
                first, last, join, blocks = _to_join(cfg, scope_id, loop, group)
                lasts = (last,)
            if iteration and join is None:  # every instruction of the loop, wherever ptxas laid its blocks
                span = [i for b in sorted(blocks) for i in range(cfg.blocks[b].start, cfg.blocks[b].end)]
            elif join is not None:
                span = [i for i in range(first, join) if cfg.block_of[i] in blocks]
            else:
                span = [i for i in range(first, lasts[0] + 1) if cfg.block_of[i] in blocks]
            counts = _sharpness(loop, span, member_set, inner, inferred)
            sites.append(Site(scope_id, "start", pair, first, first, cfg.block_of[first], **counts))
            for last in lasts:
                end = join if join is not None else _end_index(cfg, last)
                sites.append(Site(scope_id, "end", pair, end, last, cfg.block_of[last], **counts))
            pair += 1
    return sites


def _to_join(cfg: ControlFlowGraph, scope_id: int, loop: int | None,
             group: list[int]) -> tuple[int, int, int, set[int]]:
    """(first, last, join, blocks) of a copy whose code in `loop` lies on paths not all taken:
    its first and last instructions at the loop's level, the first in a block that dominates
    the rest of its code and every back edge of the loop (so it runs once per iteration); the
    start of the first block after the last that every path from there reaches before going
    round; the blocks between. SassRewriteError where there is no such start or join."""
    level = [i for i in group if cfg.loop_of[cfg.block_of[i]] == loop] or group
    first, last = min(level), max(level)
    head = cfg.block_of[first]
    latches = [tail for tail, _ in cfg.loops[loop].back_edges] if loop is not None else []
    join = _join_after(cfg, head, cfg.block_of[last], loop)
    if join is None or not all(cfg.dominates(head, cfg.block_of[i]) for i in group) \
            or not all(cfg.dominates(head, t) for t in latches):
        raise SassRewriteError(f"scope {scope_id}: a copy's code lies on paths of loop {loop} not taken in "
                               "every iteration")
    return first, last, cfg.blocks[join].start, {b for b in _region(cfg, loop)[0] if cfg.dominates(head, b)}


def _sharpness(loop: int | None, span: list[int], members: set[int], inner: list[int], inferred: list[bool]) -> dict:
    """A pair's Site fields besides its place: its loop and how much of its span is its own."""
    own = sum(i in members for i in span)
    other = sum(i not in members and inner[i] != UNSCOPED for i in span)
    return dict(loop=loop, span=len(span), own=own, other_scopes=other, unscoped=len(span) - own - other,
                inferred=sum(inferred[i] for i in span if i in members))


def _outside_loops(cfg: ControlFlowGraph, members: list[int]) -> bool:
    """Whether some of a scope's code lies outside every loop (where its one pair can go)."""
    return any(cfg.loop_of[cfg.block_of[i]] is None for i in members)


def _once(cfg: ControlFlowGraph, members: list[int]) -> tuple[int, int, set[int]]:
    """(first, last, blocks) of the one pair of a scope outside every source loop: the start where
    every path to its code passes (the nearest block outside loops that dominates all of it), the
    end after its last instruction outside loops; a path that leaves by an EXIT before reaching
    the end ends the scope there (pairing.py)."""
    blocks = {cfg.block_of[i] for i in members}
    common = ~0
    for b in blocks:
        common &= cfg.dominators[b]
    candidates = [b for b in range(len(cfg.blocks)) if common >> b & 1 and cfg.loop_of[b] is None]
    head = max(candidates, key=lambda b: bin(cfg.dominators[b]).count("1"))
    in_head = [i for i in members if cfg.block_of[i] == head]
    first = min(in_head) if in_head else cfg.blocks[head].end - 1
    last = max(i for i in members if cfg.loop_of[cfg.block_of[i]] is None)
    return first, last, {b for b in range(len(cfg.blocks)) if cfg.dominates(head, b)}


def _end_index(cfg: ControlFlowGraph, last: int) -> int:
    """Just after `last`, unless that is no longer its own path: when `last` ends its block by a
    branch or exit, or falls into a block other paths enter too, the reading goes just before it."""
    block = cfg.block_at(last)
    if last + 1 < block.end:
        return last + 1
    following = cfg.block_of[last + 1] if last + 1 < len(cfg.block_of) else None
    if block.successors == (following,) and cfg.blocks[following].predecessors == (block.index,):
        return last + 1
    return last


def _loops_inside(cfg: ControlFlowGraph, members: set[int], claimed: list[int]) -> set[int]:
    """Loops every claimed instruction of which is the scope's: they run within one scope instance."""
    claimed_in: dict[int, list[int]] = defaultdict(list)
    for i in claimed:
        b = cfg.block_of[i]
        for k, loop in enumerate(cfg.loops):
            if b in loop.blocks:
                claimed_in[k].append(i)
    return {k for k, ins in claimed_in.items() if all(i in members for i in ins)}


def _key(cfg: ControlFlowGraph, loop: int | None, inside: set[int]) -> int | None:
    while loop is not None and loop in inside:
        loop = cfg.loops[loop].parent
    return loop


def _pairs(cfg: ControlFlowGraph, loop: int | None, group: list[int], alone: bool):
    """(first, lasts, blocks, iteration) of each start/end pair of one group. First and last are taken among
    the instructions at the group's own loop level: the code of loops inside the scope runs
    between them, wherever ptxas laid its blocks out. A group in a loop whose first block does not
    lead to its last on every path (ptxas spread the scope over blocks taken one after another,
    or on alternative paths, in each iteration) is read once per iteration of the loop, from its
    header to each back edge, when the scope has no other group repeating inside that loop
    (`alone`). Any other such group gets one pair per block (the alternative paths of a
    warp-specialized kernel's partitions)."""
    level = [i for i in group if cfg.loop_of[cfg.block_of[i]] == loop] or group
    first, last = min(level), max(level)
    region, header = _region(cfg, loop)
    head, tail = cfg.block_of[first], cfg.block_of[last]
    blocks = {cfg.block_of[i] for i in group}
    if all(cfg.dominates(head, b) for b in blocks) and _always_reaches(cfg, head, tail, region, header):
        between = {b for b in region if cfg.dominates(head, b)}
        return [(first, (last,), between, False)]
    if alone:
        latches = tuple(cfg.blocks[tail_block].end - 1 for tail_block, _ in cfg.loops[loop].back_edges)
        return [(cfg.blocks[header].start, latches, set(region), True)]
    out = []
    for b in sorted(blocks):
        inb = [i for i in group if cfg.block_of[i] == b]
        out.append((min(inb), (max(inb),), {b}, False))
    return out


def _always_reaches(cfg: ControlFlowGraph, head: int, tail: int, region, header) -> bool:
    """Whether every path from block `head` meets block `tail` before it leaves `region` or goes
    round the region's loop again (a path ending in the kernel's exit counts as leaving)."""
    if head == tail:
        return True
    seen, stack = {head}, [head]
    while stack:
        b = stack.pop()
        successors = cfg.blocks[b].successors
        if not successors:
            return False
        for s in successors:
            if s == tail:
                continue
            if s not in region or s == header:
                return False
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return True
