"""Decoding: device slots → events → intervals, checked against a plain Python reference
on random event streams, plus the clock unwrap and the clock model."""
import itertools
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gwatch_nb import layout, records
from gwatch_nb.timebase import fit_clock


def _is_pipelined(ends: list[bool]) -> bool:
    """One (warp, scope)'s events: a start while one is open, and no end before its start."""
    open_counts = list(itertools.accumulate(-1 if is_end else 1 for is_end in ends))
    return min(open_counts) >= 0 and max(open_counts) >= 2


def _reference(warp_events):
    """The pairing rules written the slow, obvious way, one warp at a time."""
    pairs, problems = [], defaultdict(int)
    for warp, events in enumerate(warp_events):
        by_id = defaultdict(list)
        for position, (sid, is_end) in enumerate(events):
            by_id[sid].append((position, is_end))
        for sid, seq in by_id.items():
            if _is_pipelined([is_end for _, is_end in seq]):
                # Pipelined: the nth start with the nth end; starts left over never ended.
                problems["pipelined"] += 1
                starts = [p for p, is_end in seq if not is_end]
                ends = [p for p, is_end in seq if is_end]
                pairs += [(warp, sid, s, e, nth) for nth, (s, e) in enumerate(zip(starts, ends))]
                problems["unclosed"] += len(starts) - len(ends)
                continue
            i, nth = 0, 0
            while i < len(seq):
                position, is_end = seq[i]
                if not is_end and i + 1 < len(seq) and seq[i + 1][1]:
                    pairs.append((warp, sid, position, seq[i + 1][0], nth))
                    nth += 1
                    i += 2
                    continue
                if is_end:
                    problems["end_without_start"] += 1
                elif i + 1 < len(seq):
                    problems["nested_same_id"] += 1
                else:
                    problems["unclosed"] += 1
                i += 1
    return pairs, problems


def _flatten(warp_events, clock_step=7):
    counts = np.array([len(e) for e in warp_events], np.int64)
    tags = np.array([layout.make_tag(sid, end) for events in warp_events for sid, end in events], np.uint32)
    cycles = np.arange(len(tags), dtype=np.int64) * clock_step + 1000
    return tags, cycles, counts


event = st.tuples(st.integers(0, 3), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(event, max_size=30), min_size=1, max_size=6))
def test_pairing_matches_the_reference(warp_events):
    tags, cycles, counts = _flatten(warp_events)
    intervals, problems = records.pair_scopes(tags, cycles, counts)
    expected, expected_problems = _reference(warp_events)

    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    got = sorted(zip(intervals.warp_row.tolist(), intervals.scope_id.tolist(),
                     ((intervals.start_cycle - 1000) // 7 - first[intervals.warp_row]).tolist(),
                     ((intervals.end_cycle - 1000) // 7 - first[intervals.warp_row]).tolist(),
                     intervals.seq.tolist()))
    assert got == sorted(expected)
    for kind in ("end_without_start", "nested_same_id", "unclosed", "pipelined"):
        assert len(problems[kind]) == expected_problems.get(kind, 0)
    # Every event is in exactly one interval or one problem: nothing invented, nothing lost.
    events_in_problems = sum(n for kind, n in expected_problems.items() if kind != "pipelined")
    assert 2 * len(expected) + events_in_problems == len(tags)
    # Intervals come out in warp-major start order.
    order = np.lexsort((intervals.start_cycle, intervals.warp_row))
    assert (order == np.arange(len(order))).all()


def _reference_lanes(spans):
    """Each interval's row, the slow, obvious way: in program order, an end frees its row and
    a start takes the lowest row free (spans: (warp, start, end) positions; one warp's
    intervals never reach into another's)."""
    sweep = sorted([(s, 1, k) for k, (_, s, _) in enumerate(spans)] + [(e, 0, k) for k, (_, _, e) in enumerate(spans)])
    lane, busy = {}, set()
    for _, is_start, k in sweep:
        if is_start:
            lane[k] = min(set(range(len(busy) + 1)) - busy)
            busy.add(lane[k])
        else:
            busy.discard(lane[k])
    return [lane[k] for k in range(len(spans))]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(event, max_size=24), min_size=1, max_size=4))
def test_depth_and_crossing(warp_events):
    tags, cycles, counts = _flatten(warp_events)
    iv, problems = records.pair_scopes(tags, cycles, counts)
    spans = list(zip(iv.warp_row.tolist(), iv.scope_id.tolist(), iv.start_cycle.tolist(), iv.end_cycle.tolist()))
    # depth is the interval's row: the lowest free when it starts, in program order.
    assert iv.depth.tolist() == _reference_lanes([(w, s, e) for w, _, s, e in spans])
    # Intervals open at once never share a row of their warp.
    for k, (w, _, s, e) in enumerate(spans):
        assert not any(w2 == w and s2 < e and s < e2 and iv.depth[j] == iv.depth[k]
                       for j, (w2, _, s2, e2) in enumerate(spans) if j != k)
    # In a warp where intervals only nest (none crosses another, no pipelined scope's
    # instances overlap), the row is the nesting depth.
    partial = {w for (w, _, s, e) in spans for (w2, _, s2, e2) in spans if w2 == w and s < s2 < e < e2}
    for k, (w, sid, s, e) in enumerate(spans):
        if w not in partial:
            assert iv.depth[k] == sum(1 for (w2, _, s2, e2) in spans if w2 == w and s2 < s < e2)
    # Instances of a pipelined (warp, scope) overlap each other by design: no crossing of theirs.
    overlapping = {(w, sid) for w, events in enumerate(warp_events) for sid in {i for i, _ in events}
                   if _is_pipelined([end for i, end in events if i == sid])}
    crossed_any = any(w2 == w and (s < s2 < e < e2 or s2 < s < e2 < e) for (w, sid, s, e) in spans
                      if (w, sid) not in overlapping for (w2, _, s2, e2) in spans)
    # The cheap test flags at least one interval of every crossing that involves an
    # unpipelined instance, and only when a crossing exists.
    crossing_exists = crossed_any or any(
        w2 == w and (s < s2 < e < e2) and (w, a) != (w2, b)
        for (w, a, s, e) in spans for (w2, b, s2, e2) in spans)
    if crossed_any:
        assert len(problems["crossed"])
    if len(problems["crossed"]):
        assert crossing_exists


def test_lanes_give_a_crossing_interval_the_next_free_row():
    # A [0, 4) crosses B [1, 6); C [5, 7) starts after A ended, D [8, 9) after both.
    events = [(1, False), (2, False), (3, False), (3, True), (1, True), (4, False), (2, True), (4, True),
              (5, False), (5, True)]
    tags, cycles, counts = _flatten([events])
    iv, problems = records.pair_scopes(tags, cycles, counts)
    assert iv.scope_id.tolist() == [1, 2, 3, 4, 5]
    assert iv.depth.tolist() == [0, 1, 2, 0, 0]  # 3 nests in 2 (depth 2); 4 takes A's freed row
    assert len(problems["crossed"]) > 0


def test_lanes_reject_positions_that_make_no_intervals():
    with pytest.raises(ValueError):
        records.lanes(np.array([0, 0]), np.array([1, 2]), 3)  # two instances start at one event
    with pytest.raises(ValueError):
        records.lanes(np.array([2]), np.array([1]), 3)  # an end before its start
    with pytest.raises(ValueError):
        records.lanes(np.array([0]), np.array([3]), 3)  # past the events
    assert records.lanes(np.zeros(0, np.int64), np.zeros(0, np.int64), 0).tolist() == []


def _pipelined_stream(draw_order):
    """One scope's events in a warp: starts run ahead of ends by at most a few, as a
    software pipeline issues them; ``draw_order`` is True for a start where one may come."""
    events, open_now, started = [], 0, 0
    for want_start in draw_order:
        if want_start or open_now == 0:
            events.append((7, False))
            open_now += 1
            started += 1
        else:
            events.append((7, True))
            open_now -= 1
    return events + [(7, True)] * open_now


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=40), min_size=1, max_size=4))
def test_pipelined_instances_pair_in_order_on_lanes_that_never_overlap(orders):
    warp_events = [_pipelined_stream(order) for order in orders]
    tags, cycles, counts = _flatten(warp_events)
    iv, problems = records.pair_scopes(tags, cycles, counts)
    assert sum(map(len, problems.values())) == len(problems["pipelined"])
    assert 2 * len(iv.scope_id) == len(tags)
    for w in range(len(warp_events)):
        mine = np.flatnonzero(iv.warp_row == w)
        starts, ends = iv.start_cycle[mine], iv.end_cycle[mine]
        assert (np.diff(starts) > 0).all() and (np.diff(ends) > 0).all()  # first in, first out
        assert iv.seq[mine].tolist() == list(range(len(mine)))
        for lane in np.unique(iv.depth[mine]):
            on_lane = mine[iv.depth[mine] == lane]
            assert (iv.start_cycle[on_lane][1:] > iv.end_cycle[on_lane][:-1]).all()


def test_a_pipelined_loop_pairs_each_tile_with_its_own_end():
    # The steady state of a pipelined persistent loop: tile t+1 starts before tile t ends.
    events = [(300, False)] + [e for t in range(5) for e in ((300, False), (300, True))] + [(300, True)]
    tags, cycles, counts = _flatten([events])
    iv, problems = records.pair_scopes(tags, cycles, counts)
    assert list(zip(((iv.start_cycle - 1000) // 7).tolist(), ((iv.end_cycle - 1000) // 7).tolist())) == [
        (0, 2), (1, 4), (3, 6), (5, 8), (7, 10), (9, 11)]
    assert iv.depth.tolist() == [0, 1, 0, 1, 0, 1]
    assert {k: len(v) for k, v in problems.items() if len(v)} == {"pipelined": 1}


def test_unwrap_recovers_64_bit_clocks_across_wraps():
    rng = np.random.default_rng(1)
    counts = np.array([0, 5, 300, 1, 40])
    entry = np.array([3, 2**32 - 50, 7 * 2**32 + 12345, 2**40, 2**33 - 1], np.uint64)
    steps = rng.integers(0, 2**30, counts.sum())
    steps[np.concatenate(([0], np.cumsum(counts)[:-1]))[counts > 0]] = rng.integers(0, 100, (counts > 0).sum())
    exact = []
    pos = 0
    for w, n in enumerate(counts):
        exact += list(int(entry[w]) + np.cumsum(steps[pos:pos + n]))
        pos += n
    exact = np.array(exact, np.int64)
    got = records.unwrap_clock((exact & 0xFFFFFFFF).astype(np.uint32), entry, counts)
    assert (got == exact).all()


def test_unwrap_tolerates_an_event_read_just_before_the_entry_clock():
    got = records.unwrap_clock(np.array([95], np.uint32), np.array([100], np.uint64), np.array([1]))
    assert got.tolist() == [95]


def _kernel(groups):
    """A site table as the rewriter would make it for straight-line groups of markers:
    ``groups`` lists, per group, its readings, each a list of (scope_id, is_end) markers
    that share it. Returns the table and, per group, its records as (first site, readings
    in it, markers in it)."""
    tags, readings, covered, layouts = [], [], [], []
    for group in groups:
        records_of_group = []
        for first in range(0, len(group), layout.READINGS_PER_RECORD):
            chunk = group[first:first + layout.READINGS_PER_RECORD]
            site = len(tags)
            for index, markers in enumerate(chunk):
                for sid, end in markers:
                    tags.append(layout.make_tag(sid, end))
                    readings.append(index)
                    covered.append(0)
            covered[site] = len(tags) - site
            records_of_group.append((site, len(chunk), len(tags) - site))
        layouts.append(records_of_group)
    table = records.SiteTable(np.array(tags, np.uint32), np.array(readings, np.int64), np.array(covered, np.int64))
    return table, layouts


def _write_slot(table, layouts, executed, capacity, clock0, steps):
    """What an instrumented warp leaves in its slot when it runs the groups ``executed``
    (a group is written whole when fewer than ``capacity`` events came before it), and the
    (clock, tag) events it attempted, in order."""
    recs, attempted, clock, step = [], [], clock0, iter(steps)
    for g in executed:
        room = len(attempted) < capacity
        for site, n_readings, n_markers in layouts[g]:
            clocks = []
            for _ in range(n_readings):
                clock += next(step)
                clocks.append(clock & 0xFFFFFFFF)
            for k in range(n_markers):
                attempted.append((clocks[table.readings[site + k]], int(table.tags[site + k])))
            if room:
                recs.append((clocks + [clocks[0]] * (layout.READINGS_PER_RECORD - n_readings), site))
    return recs, attempted


def _device_buffers(slots, width):
    headers = np.zeros(len(slots), layout.SLOT_HEADER_DTYPE)
    recs = np.zeros((len(slots), width), layout.RECORD_DTYPE)
    for i, (written, attempted, ck_entry) in enumerate(slots):
        headers[i]["magic"] = layout.WARP_MAGIC
        headers[i]["ck_entry"], headers[i]["gt_exit"] = ck_entry, 1
        headers[i]["events"], headers[i]["records"] = len(attempted), len(written)
        for j, (clocks, site) in enumerate(written):
            recs[i, j] = (clocks, site)
    return headers, recs


marker = st.tuples(st.integers(0, 4), st.booleans())
group = st.lists(st.lists(marker, min_size=1, max_size=3), min_size=1, max_size=7)


@settings(max_examples=200, deadline=None)
@given(st.lists(group, min_size=1, max_size=4), st.data())
def test_from_device_keeps_exactly_the_first_capacity_events(groups, data):
    """Records of random groups, random runs and capacities, against the events each warp
    attempted: every warp keeps exactly its first `capacity` events, each with its own
    clock and scope, and counts the rest as dropped."""
    table, layouts = _kernel(groups)
    capacity = data.draw(st.integers(1, 40), "capacity")
    warps, want = [], []
    for w in range(data.draw(st.integers(1, 5), "warps")):
        executed = data.draw(st.lists(st.integers(0, len(groups) - 1), max_size=8), f"run {w}")
        entry = data.draw(st.integers(0, 1 << 40), f"entry {w}")
        steps = data.draw(st.lists(st.integers(1, 1 << 20), min_size=64, max_size=64), f"steps {w}")
        written, attempted = _write_slot(table, layouts, executed, capacity, entry, steps)
        warps.append((written, attempted, entry))
        want.append(attempted[:capacity])
    width = layout.slot_records(capacity, table.min_record_events)
    assert all(len(w[0]) <= width for w in warps)  # the slot the host sizes holds every record
    headers, recs = _device_buffers(warps, width)
    got, cycles, tags, missing = records.from_device(headers.view(np.uint8).reshape(len(warps), -1), recs,
                                                     capacity, table)
    assert missing == 0
    assert got["n_events"].tolist() == [len(k) for k in want]
    assert got["n_dropped"].tolist() == [len(w[1]) - len(k) for w, k in zip(warps, want)]
    assert tags.tolist() == [tag for kept in want for _, tag in kept]
    assert (cycles & 0xFFFFFFFF).tolist() == [clock for kept in want for clock, _ in kept]
    counts = got["n_events"].astype(np.int64)
    first = np.cumsum(counts) - counts
    assert (cycles[first[counts > 0]] > got["ck_entry"][counts > 0].astype(np.int64)).all()


def test_from_device_counts_drops_and_ignores_unwritten_slots():
    table, layouts = _kernel([[[(1, False)], [(1, True), (2, False)], [(2, True)]]])  # one group, one record
    capacity = 6  # the second run of the group starts below it and is written whole; the third is not
    one, attempted_one = _write_slot(table, layouts, [0], capacity, 5000, [10] * 9)
    three, attempted_three = _write_slot(table, layouts, [0, 0, 0], capacity, 5000, [10] * 9)
    headers, recs = _device_buffers([(one, attempted_one, 5000), (three, attempted_three, 5000),
                                     ([], [], 0)], 3)
    headers["magic"][2] = 0  # a warp that never started
    warps, cycles, tags, missing = records.from_device(headers.view(np.uint8).reshape(3, -1), recs, capacity, table)
    assert missing == 1
    assert warps["n_events"].tolist() == [4, 6]
    assert warps["n_dropped"].tolist() == [0, 6]
    assert cycles.tolist() == [5010, 5020, 5020, 5030] + [5010, 5020, 5020, 5030, 5040, 5050]
    assert records.records_written(headers.view(np.uint8).reshape(3, -1)).tolist() == [1, 2, 0]


def test_a_record_naming_no_record_start_is_refused_in_one_line():
    table, layouts = _kernel([[[(1, False)], [(1, True)]]])
    written, attempted = _write_slot(table, layouts, [0], 8, 0, [5, 5])
    headers, recs = _device_buffers([(written, attempted, 0)], 1)
    recs["site"] = 1  # a site inside the record, not its first
    with pytest.raises(records.CorruptTraceError, match="record 0 names site 1"):
        records.from_device(headers.view(np.uint8).reshape(1, -1), recs, 8, table)
    recs["site"] = 1 << 30
    with pytest.raises(records.CorruptTraceError, match="names site 1073741824"):
        records.from_device(headers.view(np.uint8).reshape(1, -1), recs, 8, table)
    headers["records"] = 2
    with pytest.raises(records.CorruptTraceError, match="reports 2 records, its slot holds 1"):
        records.from_device(headers.view(np.uint8).reshape(1, -1), recs, 8, table)


@pytest.mark.parametrize("field, value", [("readings", 3), ("readings", -1), ("record_events", 5)])
def test_a_site_table_pointing_outside_itself_is_refused(field, value):
    """A table read from a file could send the expansion past its arrays: it is checked first."""
    table, layouts = _kernel([[[(1, False)], [(1, True)]]])
    written, attempted = _write_slot(table, layouts, [0], 8, 0, [5, 5])
    headers, recs = _device_buffers([(written, attempted, 0)], 1)
    getattr(table, field)[1 if field == "readings" else 0] = value
    with pytest.raises(records.CorruptTraceError, match=r"site table: site \d+ has a reading or a record span"):
        records.from_device(headers.view(np.uint8).reshape(1, -1), recs, 8, table)


@pytest.mark.parametrize("missing, uniform", [(False, True), (False, False), (True, True), (True, False)])
def test_from_device_matches_a_slot_by_slot_reading(missing, uniform):
    """The vectorised decode (with its shortcuts for launches where every slot was written
    and every warp filled the copied width) equals reading each slot on its own."""
    rng = np.random.default_rng(3)
    table, layouts = _kernel([[[(0, False)], [(0, True), (1, False)], [(1, True), (2, False)], [(2, True)]],
                              [[(3, False), (3, True)]]])
    slots, capacity = 6, 12
    warps = []
    for slot in range(slots):
        executed = [0, 1] * 3 if uniform else list(rng.integers(0, 2, rng.integers(0, 8)))
        entry = int(rng.integers(1 << 33, 1 << 34))
        warps.append((*_write_slot(table, layouts, executed, capacity, entry, rng.integers(1, 500, 64)), entry))
    width = max(len(w[0]) for w in warps)
    headers, recs = _device_buffers(warps, width)
    if missing:
        headers["magic"][2] = 0
    got, cycles, tags, lost = records.from_device(headers.view(np.uint8).reshape(slots, -1), recs, capacity, table)
    want_cycles, want_tags = [], []
    for slot, (written, attempted, entry) in enumerate(warps):
        if missing and slot == 2:
            continue
        clock = entry
        for event_clock, tag in attempted[:capacity]:
            clock += (event_clock - clock) % (1 << 32)  # forward steps below 2^31 cycles
            want_cycles.append(clock)
            want_tags.append(tag)
    assert lost == int(missing)
    assert cycles.tolist() == want_cycles and tags.tolist() == want_tags
    assert len(got) == slots - int(missing)


def _warps_with_clock(true_entry, true_exit, ghz_of, sm, sm_offset, sm_rate=None):
    """Warps whose SMs count ghz_of(t) * sm_rate[sm] cycles per ns, from their own
    sm_offset, behind a 32 ns globaltimer."""
    sm_rate = np.ones(len(sm_offset)) if sm_rate is None else sm_rate
    grid = np.linspace(0, max(true_exit) + 1, 20001)
    cycles_at = np.concatenate(([0], np.cumsum(ghz_of(grid[:-1]) * np.diff(grid))))
    warps = np.zeros(len(sm), records.WARP_DTYPE)
    warps["sm"] = sm
    for column, when in (("ck_entry", true_entry), ("ck_exit", true_exit)):
        warps[column] = (np.interp(when, grid, cycles_at) * sm_rate[sm]).astype(np.int64) + sm_offset[sm]
    warps["gt_entry"] = (true_entry // 32 * 32 + 5e9).astype(np.uint64)
    warps["gt_exit"] = (true_exit // 32 * 32 + 5e9).astype(np.uint64)
    return warps, grid, cycles_at


@pytest.mark.parametrize("sm_rates_differ", [False, True])
def test_clock_model_aligns_sms_and_follows_a_clock_that_speeds_up(sm_rates_differ):
    rng = np.random.default_rng(7)
    n = 600
    sm = rng.integers(0, 132, n)
    sm_offset = rng.integers(10**9, 10**12, 132)  # each SM's counter started elsewhere
    true_entry = rng.uniform(0, 200_000, n)
    true_exit = true_entry + rng.uniform(20_000, 60_000, n)

    def ghz_of(t):  # warming up: 1.2 GHz ramping to 1.98 GHz over the launch
        return 1.2 + 0.78 * np.clip(t / 150_000, 0, 1)

    sm_rate = rng.uniform(0.995, 1.005, 132) if sm_rates_differ else None  # GPCs a little apart, as on the H200
    warps, grid, cycles_at = _warps_with_clock(true_entry, true_exit, ghz_of, sm, sm_offset, sm_rate)
    model = fit_clock(warps)
    rows = np.arange(n)
    # Anchors map back to their true times within the globaltimer's step.
    base = model.gt_base - 5e9
    for true, clock in ((true_entry, warps["ck_entry"]), (true_exit, warps["ck_exit"])):
        error = model.to_ns(clock, rows) + base - true
        assert error.max() - error.min() < 64  # two globaltimer steps
    # A point inside each warp: off at most by the rate's curvature over the warp's life.
    middle = (true_entry + true_exit) / 2
    inside = (np.interp(middle, grid, cycles_at) * (1 if sm_rate is None else sm_rate[sm])).astype(np.int64)
    assert np.abs(model.to_ns(inside + sm_offset[sm], rows) + base - middle).max() < 64
    assert 1.2 < model.clock_ghz < 1.98 and model.clock_spread_pct > 10


def test_short_warps_borrow_the_launch_rate():
    sm = np.zeros(3, np.int64)
    true_entry = np.array([0.0, 100.0, 50_000.0])
    true_exit = np.array([60_000.0, 900.0, 50_300.0])  # warps 1 and 2 are far too short to rate
    warps, _, _ = _warps_with_clock(true_entry, true_exit, lambda t: np.full_like(t, 1.75), sm, np.array([0]))
    model = fit_clock(warps)
    assert abs(model.clock_ghz - 1.75) < 2e-3
    inside = warps["ck_entry"][1:].astype(np.int64) + 300
    expected = true_entry[1:] + 300 / 1.75
    assert np.abs(model.to_ns(inside, np.array([1, 2])) + model.gt_base - 5e9 - expected).max() < 32


def test_zero_length_scopes_are_those_zero_in_every_launch_that_has_them():
    def intervals(scope_ids, lengths):
        ids, lengths = np.array(scope_ids, np.int32), np.array(lengths, np.int64)
        zeros = np.zeros(len(ids), np.int32)
        return records.Intervals(zeros, ids, np.full(len(ids), 100, np.int64), 100 + lengths, zeros, zeros)
    # 3 is zero in both launches; 7 only in the second, whose ids run higher; 2 is not zero once.
    first = intervals([2, 3, 3, 2], [0, 0, 0, 5])
    second = intervals([7, 3, 7, 9], [0, 0, 0, 4])
    assert records.zero_length_scopes([first, second]) == [3, 7]
    assert records.zero_length_scopes([first]) == [3]
    assert records.zero_length_scopes([]) == [] and records.zero_length_scopes([intervals([], [])]) == []
