"""Trace records: device buffers → per-warp events → scope intervals.

Everything here works on all events of a launch at once (numpy, and C for expanding
records into events); nothing loops in Python per event or per warp.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _native
from .layout import SLOT_HEADER_DTYPE, TAG_END_BIT, TAG_ID_SHIFT, WARP_MAGIC, make_tag

#: One warp of one launch, in host form (from the device header, or made by the interpreter tier).
WARP_DTYPE = np.dtype([
    ("block_x", "<u4"), ("block_y", "<u4"), ("block_z", "<u4"), ("warp", "<u4"), ("sm", "<u4"),
    ("gt_entry", "<u8"), ("ck_entry", "<u8"), ("gt_exit", "<u8"), ("ck_exit", "<u8"),
    ("n_events", "<u4"), ("n_dropped", "<u4"),
])


@dataclass
class LaunchRecords:
    """What one traced launch left behind: its warps and their events.

    Events are warp-major and in program order inside a warp; ``warps["n_events"]`` says
    how many belong to each warp. ``cycles`` are absolute clock values (SM cycles on the
    GPU; host nanoseconds on the interpreter tier, where globaltimer and clock coincide)."""
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    capacity: int
    warps: np.ndarray
    cycles: np.ndarray
    tags: np.ndarray
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if int(self.warps["n_events"].sum()) != len(self.cycles) or len(self.cycles) != len(self.tags):
            raise ValueError("launch records are inconsistent: event counts do not match the events")

    @property
    def events_recorded(self) -> int:
        return len(self.tags)

    @property
    def events_dropped(self) -> int:
        return int(self.warps["n_dropped"].sum())


class CorruptTraceError(ValueError):
    """A trace buffer holds what the instrumented kernel cannot have written."""


@dataclass(frozen=True)
class SiteTable:
    """What the rewriter told the host about one kernel's markers, by site number (the
    marker's index in its module): the event tag, which reading of its record it shares,
    and for a record's first site how many markers that record covers (0 elsewhere, and
    at every site of the module's other kernels)."""
    tags: np.ndarray           # uint32
    readings: np.ndarray       # int64
    record_events: np.ndarray  # int64

    def __post_init__(self):
        for name, dtype in (("tags", np.uint32), ("readings", np.int64), ("record_events", np.int64)):
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype))

    @classmethod
    def of_entry(cls, sites, entry: str) -> "SiteTable":
        """From ``ptx.instrument``'s sites, for the kernel named ``entry``."""
        return cls(np.array([make_tag(s.scope_id, s.kind == "end") for s in sites], np.uint32),
                   np.array([s.reading for s in sites], np.int64),
                   np.array([s.record_events if s.entry == entry else 0 for s in sites], np.int64))

    @property
    def min_record_events(self) -> int:
        """The fewest markers any of the kernel's records covers (sizes its slots)."""
        covered = self.record_events[self.record_events > 0]
        return int(covered.min()) if len(covered) else 1


def _slot_headers(headers: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(headers).view(SLOT_HEADER_DTYPE).reshape(-1)


def _finished(hdr: np.ndarray) -> np.ndarray:
    # The counts are written by the epilogue: only warps that reached it have them.
    return (hdr["magic"] == WARP_MAGIC) & (hdr["gt_exit"] != 0)


def records_written(headers: np.ndarray) -> np.ndarray:
    """Records each slot's warp wrote, from raw (slots, 64) headers."""
    hdr = _slot_headers(headers)
    return np.where(_finished(hdr), hdr["records"].astype(np.int64), 0)


def from_device(headers: np.ndarray, recs: np.ndarray, capacity: int,
                table: SiteTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Turn a launch's copied-back slots into (warps, cycles, tags, missing).

    ``headers``: (slots, SLOT_HEADER_BYTES) uint8, each warp's header.
    ``recs``: (slots, width) RECORD_DTYPE, the first ``width`` records of each slot (at
    least as many as any warp wrote). Each warp keeps the first ``capacity`` events its
    records hold. ``missing`` counts slots no warp wrote (a warp that never started its
    prologue)."""
    hdr = _slot_headers(headers)
    written = hdr["magic"] == WARP_MAGIC
    missing = int(len(hdr) - np.count_nonzero(written))
    if missing:
        hdr, recs = hdr[written], recs[written]
    finished = _finished(hdr)
    attempted = np.where(finished, hdr["events"].astype(np.int64), 0)
    n_records = np.where(finished, hdr["records"].astype(np.int64), 0)
    try:
        clocks, tags, held = _native.expand_records(np.ascontiguousarray(recs), recs.shape[1], n_records,
                                                    table.tags, table.readings, table.record_events)
    except ValueError as error:
        raise CorruptTraceError(f"trace buffer is corrupt: {error}") from None
    clocks, tags, held = np.frombuffer(clocks, np.uint32), np.frombuffer(tags, np.uint32), np.frombuffer(held, np.int64)
    # Each warp keeps the first `capacity` of the events its records hold.
    recorded = np.minimum(np.minimum(attempted, capacity), held)
    if (recorded != held).any():
        first = np.repeat(np.cumsum(held) - held, held)
        keep = np.arange(len(tags)) - first < np.repeat(recorded, held)
        clocks, tags = clocks[keep], tags[keep]

    warps = np.zeros(len(hdr), WARP_DTYPE)
    for name in ("block_x", "block_y", "block_z", "warp", "sm", "gt_entry", "ck_entry", "gt_exit", "ck_exit"):
        warps[name] = hdr[name]
    warps["n_events"] = recorded
    warps["n_dropped"] = attempted - recorded
    cycles = unwrap_clock(clocks, warps["ck_entry"], recorded)
    return warps, cycles, tags, missing


def close_at_exit(warps: np.ndarray, cycles: np.ndarray, tags: np.ndarray,
                  scope_ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The events with an end drawn at the warp's exit clock for each scope of ``scope_ids``
    that the warp's events leave open: scopes the sass tier proved a path can leave only by
    exiting the kernel (sass/pairing.py), so their instance ends when the warp exits. A warp
    that dropped events is left as it is (its open scopes stay reported as unclosed). Ends
    are added innermost first, after the warp's last event. Returns (warps, cycles, tags)."""
    ids = np.asarray(sorted(scope_ids), np.int64)
    counts = warps["n_events"].astype(np.int64)
    if len(ids) == 0 or len(tags) == 0:
        return warps, cycles, tags
    warp_of = np.repeat(np.arange(len(counts)), counts)
    scope = (tags >> TAG_ID_SHIFT).astype(np.int64)
    watched = np.isin(scope, ids) & (warps["n_dropped"] == 0)[warp_of]
    at = np.flatnonzero(watched)
    if len(at) == 0:
        return warps, cycles, tags
    # The last event of each (warp, scope): still open when it is a start.
    key = warp_of[at] * (int(scope.max()) + 1) + scope[at]
    order = np.lexsort((at, key))
    last = np.ones(len(order), bool)
    last[:-1] = key[order][1:] != key[order][:-1]
    final = at[order[last]]
    open_start = final[(tags[final] & TAG_END_BIT) == 0]
    if len(open_start) == 0:
        return warps, cycles, tags
    # Innermost (latest start) first within each warp; each goes just after the warp's last event.
    open_start = open_start[np.lexsort((-open_start, warp_of[open_start]))]
    owner = warp_of[open_start]
    ends_at = np.cumsum(counts)[owner]
    new_tags = np.insert(tags, ends_at, tags[open_start] | TAG_END_BIT)
    new_cycles = np.insert(cycles, ends_at, warps["ck_exit"][owner].astype(cycles.dtype))
    closed = warps.copy()
    closed["n_events"] += np.bincount(owner, minlength=len(warps)).astype(closed["n_events"].dtype)
    return closed, new_cycles, new_tags


def unwrap_clock(clock_lo: np.ndarray, entry_clock: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Rebuild 64-bit clocks from the 32-bit low words each event stored.

    Each step is read as a signed 32-bit difference from the previous event of the same
    warp (the first from the warp's 64-bit entry clock), so wraps every ~2 s at 2 GHz
    and tiny reorderings around the entry read both come out right."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        return np.zeros(0, np.int64)
    first = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    has = counts > 0
    previous = np.empty(n, np.uint32)
    previous[1:] = clock_lo[:-1]
    previous[first[has]] = entry_clock[has].astype(np.uint32)  # low word of the entry clock
    step = (clock_lo.astype(np.uint32) - previous).view(np.int32).astype(np.int64)
    running = np.cumsum(step)
    # Restart the running sum at each warp's first event, from that warp's entry clock.
    base = np.repeat(running[first[has]] - step[first[has]], counts[has])
    return running - base + np.repeat(entry_clock[has].astype(np.int64), counts[has])


@dataclass
class Intervals:
    """Matched scope instances of one launch, ordered by warp and start."""
    warp_row: np.ndarray     # index into the launch's warps
    scope_id: np.ndarray     # int32
    start_cycle: np.ndarray  # int64
    end_cycle: np.ndarray    # int64
    depth: np.ndarray        # int32: the interval's row in its warp (lanes): its nesting depth where it nests
    seq: np.ndarray          # int32: nth instance of this scope in this warp


#: Kinds of marker problems the decoder reports (a session's own problems are
#: tiers.SESSION_PROBLEMS). Only ``crossed`` and ``pipelined`` instances become intervals
#: too; the other problem events never do.
MARKER_PROBLEMS = {
    "unclosed": "scope started but never ended before the warp exited",
    "end_without_start": "scope ended without a matching start",
    "nested_same_id": "scope started again while already open (same id nested in itself)",
    "crossed": "scopes end in another order than they started (not nested)",
    "pipelined": "instances of one scope overlap in a warp, as when Triton's software pipeliner runs the next "
                 "iteration's start marker before this one's end (persistent loops): paired first in, first out",
}


#: Why a scope can measure 0 ns every time (``Trace.warnings`` kind ``zero_length``).
ZERO_LENGTH_REASON = ("every instance measures 0 ns: its start and end markers share one clock reading, as no "
                      "instruction is left between them in the PTX (Triton moved the scope's code elsewhere, "
                      "e.g. around a warp-specialized loop)")


def zero_length_scopes(launches: list[Intervals]) -> list[int]:
    """Scope ids that have instances, all of them 0 cycles long, over all launches (marked
    per id: ids are small, and sorting millions of instances to find them is not)."""
    size = max((int(iv.scope_id.max()) + 1 for iv in launches if len(iv.scope_id)), default=0)
    seen, nonzero = np.zeros(size, bool), np.zeros(size, bool)
    for iv in launches:
        seen[iv.scope_id] = True
        nonzero[iv.scope_id[iv.end_cycle != iv.start_cycle]] = True
    return np.flatnonzero(seen & ~nonzero).tolist()


def _group_reduce(ufunc, values: np.ndarray, group_first: np.ndarray, group_of: np.ndarray) -> np.ndarray:
    """``ufunc`` over each group of consecutive values, spread back to every member."""
    if len(values) == 0:
        return values
    return ufunc.reduceat(values, group_first)[group_of]


def _crosses_pipelined(start_pos, end_pos, overlapped, interval_scope, warp_of, counts):
    """Which unpipelined intervals cross an instance of a pipelined scope of their warp, where
    the level count balances (one instance starts inside, another ends inside). Per pipelined
    scope id, the instances that start inside (start, end) must be those that end inside: their
    ranks in the warp come from prefix sums over program positions, with no loop over events."""
    n = len(warp_of)
    crossed = np.zeros(len(start_pos), bool)
    plain = np.flatnonzero(~overlapped)
    s, e = start_pos[plain], end_pos[plain]
    first = (np.cumsum(counts) - counts)[warp_of[s]]  # each interval's warp's first event
    for scope_id in np.unique(interval_scope[overlapped]):
        instances = overlapped & (interval_scope == scope_id)
        starts, ends = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
        starts[start_pos[instances] + 1] = 1
        ends[end_pos[instances] + 1] = 1
        before_start, before_end = np.cumsum(starts), np.cumsum(ends)  # instances begun / ended before a position
        a1, a2 = before_start[s] - before_start[first], before_start[e] - before_start[first]
        b1, b2 = before_end[s] - before_end[first], before_end[e] - before_end[first]
        crossed[plain] |= ~(((a1 == a2) & (b1 == b2)) | ((a1 == b1) & (a2 == b2)))
    return crossed


def pair_scopes(tags: np.ndarray, cycles: np.ndarray, counts: np.ndarray) -> tuple[Intervals, dict[str, np.ndarray]]:
    """Match the starts and ends of each scope id in each warp.

    A (warp, scope) whose instances overlap (a start while one is open) and never end one
    that was not started is pipelined: its nth start pairs with its nth end. Elsewhere a
    start pairs with an end that directly follows it. Returns the intervals and, per
    problem kind, the warp row of every offending event (one per (warp, scope) for
    ``pipelined``)."""
    counts = np.asarray(counts, dtype=np.int64)
    n = len(tags)
    warp_of = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    scope = (tags >> TAG_ID_SHIFT).astype(np.uint16)
    is_end = (tags & TAG_END_BIT).astype(bool)

    # Group by scope id; a stable radix sort keeps warp-major program order inside each id.
    order = np.argsort(scope, kind="stable")
    s_scope, s_warp, s_end = scope[order], warp_of[order], is_end[order]
    same_group = (s_scope[1:] == s_scope[:-1]) & (s_warp[1:] == s_warp[:-1])
    new_group = np.ones(n, bool)
    new_group[1:] = ~same_group
    group_first = np.flatnonzero(new_group)
    group_of = np.cumsum(new_group, dtype=np.int32)
    group_of -= 1

    # Instances can overlap only where a start follows a start of its group; most launches
    # have none, and skip the rest of this.
    restart = same_group & ~s_end[:-1] & ~s_end[1:]
    pipelined = np.zeros(n, bool)
    if restart.any():
        # Open instances after each event of its group; its lowest and highest over the group.
        step = np.where(s_end, -1, 1).astype(np.int64)
        running = np.cumsum(step)
        open_after = running - (running - step)[group_first][group_of]
        stages = _group_reduce(np.maximum, open_after, group_first, group_of)
        pipelined = (_group_reduce(np.minimum, open_after, group_first, group_of) >= 0) & (stages >= 2)

    # Adjacent pairs outside pipelined groups.
    adjacent = np.flatnonzero(~s_end[:-1] & s_end[1:] & same_group & ~pipelined[:-1])
    start_at, end_at = adjacent, adjacent + 1
    if pipelined.any():
        # First in, first out inside them: the k-th start and the k-th end of the group.
        starts_p = np.flatnonzero(pipelined & ~s_end)
        ends_p = np.flatnonzero(pipelined & s_end)
        start_rank = _rank_in_group(starts_p, group_of)
        ends_of_group = np.bincount(group_of[ends_p], minlength=len(group_first))
        closed = start_rank < ends_of_group[group_of[starts_p]]
        first_end = np.cumsum(ends_of_group) - ends_of_group  # position in ends_p of each group's first end
        fifo_start = starts_p[closed]
        fifo_end = ends_p[first_end[group_of[fifo_start]] + start_rank[closed]]
        by_start = np.argsort(np.concatenate((adjacent, fifo_start)), kind="stable")
        start_at = np.concatenate((adjacent, fifo_start))[by_start]
        end_at = np.concatenate((adjacent + 1, fifo_end))[by_start]

    paired = np.zeros(n, bool)
    paired[start_at] = True
    paired[end_at] = True
    next_in_group_is_start = np.zeros(n, bool)
    next_in_group_is_start[:-1] = same_group & ~s_end[1:]
    lone_start = ~paired & ~s_end
    problems = {
        "nested_same_id": s_warp[lone_start & next_in_group_is_start & ~pipelined],
        "unclosed": s_warp[lone_start & (~next_in_group_is_start | pipelined)],
        "end_without_start": s_warp[~paired & s_end],
        "pipelined": s_warp[group_first[pipelined[group_first]]],
    }

    # seq: rank of each pair inside its (scope, warp) group, pairs being in group order.
    seq = _rank_in_group(start_at, group_of)

    # Back to program order: the running count of matched starts/ends, to find crossings.
    start_pos, end_pos = order[start_at], order[end_at]
    delta = np.zeros(n, np.int32)
    delta[start_pos] = 1
    delta[end_pos] = -1
    level = np.cumsum(delta, dtype=np.int32)
    level -= delta
    overlapped = pipelined[start_at]
    # Properly nested iff every interval encloses a balanced stretch (see docs/FORMAT.md);
    # a pipelined instance overlaps its own scope's next one by design.
    crossed = (level[end_pos] != level[start_pos] + 1) & ~overlapped
    if overlapped.any():
        crossed |= _crosses_pipelined(start_pos, end_pos, overlapped, s_scope[start_at], warp_of, counts)
    problems["crossed"] = s_warp[start_at[crossed]]

    # Reorder the intervals by their start's position (warp-major, program order) in O(n):
    # the starts in program order are where is_start_pos is set; `out` maps them back to pairs.
    is_start_pos = np.zeros(n, bool)
    is_start_pos[start_pos] = True
    starts_in_order = np.flatnonzero(is_start_pos)
    rank = np.cumsum(is_start_pos, dtype=np.int32)[start_pos]
    rank -= 1
    out = np.empty(len(start_at), np.int64)
    out[rank] = np.arange(len(start_at))

    ends_in_order = end_pos[out]
    intervals = Intervals(
        warp_row=warp_of[starts_in_order],
        scope_id=scope[starts_in_order].astype(np.int32),
        start_cycle=cycles[starts_in_order],
        end_cycle=cycles[ends_in_order],
        depth=lanes(starts_in_order, ends_in_order, n),
        seq=seq[out],
    )
    return intervals, problems


def lanes(start_pos: np.ndarray, end_pos: np.ndarray, events: int) -> np.ndarray:
    """Each interval's row in its warp (``Intervals.depth``), from its start's and end's
    positions among the launch's ``events`` (warp-major, program order): an end frees its
    row, a start takes the lowest free one (C: a heap sweep over the events). A properly
    nested interval's row is its nesting depth (the rows below hold the intervals around
    it); one that crosses another, or a pipelined instance overlapping its own scope's
    previous one, takes the next row free, so intervals open at once never share a row, and
    a warp needs no more rows than it ever had intervals open at once."""
    rows = _native.lanes(np.ascontiguousarray(start_pos, np.int64), np.ascontiguousarray(end_pos, np.int64), events)
    return np.frombuffer(rows, np.int32)


def _rank_in_group(positions: np.ndarray, group_of: np.ndarray) -> np.ndarray:
    """For sorted positions: each one's rank among those of its group (int32)."""
    if len(positions) == 0:
        return np.zeros(0, np.int32)
    groups = group_of[positions]
    first = np.ones(len(positions), bool)
    first[1:] = groups[1:] != groups[:-1]
    starts = np.flatnonzero(first).astype(np.int32)
    rank = np.arange(len(positions), dtype=np.int32)
    rank -= np.repeat(starts, np.diff(starts, append=len(positions)))
    return rank
