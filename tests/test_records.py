"""Decoding: device slots → events → intervals, checked against a plain Python reference
on random event streams, plus the clock unwrap and the clock model."""
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gwatch_nb import layout, records
from gwatch_nb.timebase import fit_clock


def _reference(warp_events):
    """The pairing rules written the slow, obvious way, one warp at a time."""
    pairs, problems = [], defaultdict(int)
    for warp, events in enumerate(warp_events):
        by_id = defaultdict(list)
        for position, (sid, is_end) in enumerate(events):
            by_id[sid].append((position, is_end))
        for sid, seq in by_id.items():
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
    for kind in ("end_without_start", "nested_same_id", "unclosed"):
        assert len(problems[kind]) == expected_problems.get(kind, 0)
    # Every event is in exactly one interval or one problem: nothing invented, nothing lost.
    assert 2 * len(expected) + sum(expected_problems.values()) == len(tags)
    # Intervals come out in warp-major start order.
    order = np.lexsort((intervals.start_cycle, intervals.warp_row))
    assert (order == np.arange(len(order))).all()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(event, max_size=24), min_size=1, max_size=4))
def test_depth_and_crossing(warp_events):
    tags, cycles, counts = _flatten(warp_events)
    iv, problems = records.pair_scopes(tags, cycles, counts)
    spans = list(zip(iv.warp_row.tolist(), iv.start_cycle.tolist(), iv.end_cycle.tolist()))
    crossed_any = False
    for k, (w, s, e) in enumerate(spans):
        enclosing = sum(1 for (w2, s2, e2) in spans if w2 == w and s2 < s < e2)
        assert iv.depth[k] == enclosing
        crossed_any |= any(w2 == w and (s < s2 < e < e2 or s2 < s < e2 < e) for (w2, s2, e2) in spans)
    # The cheap test flags at least one interval of every crossing, and only when one exists.
    assert bool(len(problems["crossed"])) == crossed_any


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


def test_from_device_counts_drops_and_ignores_unwritten_slots():
    capacity = 4
    headers = np.zeros(3, layout.SLOT_HEADER_DTYPE)
    headers["magic"] = [layout.WARP_MAGIC, layout.WARP_MAGIC, 0]
    headers["gt_entry"], headers["ck_entry"] = 1000, 5000
    headers["gt_exit"], headers["ck_exit"] = 2000, 7000
    headers["events"] = [3, 9, 0]  # 3 events; 9 attempted with room for 4
    events = np.zeros((3, capacity), layout.EVENT_DTYPE)
    events["clock"] = 5000 + np.arange(capacity) * 10
    events["tag"] = [layout.make_tag(1, i % 2) for i in range(capacity)]
    warps, cycles, tags, missing = records.from_device(headers.view(np.uint8).reshape(3, -1), events, capacity)
    assert missing == 1
    assert warps["n_events"].tolist() == [3, 4]
    assert warps["n_dropped"].tolist() == [0, 5]
    assert cycles.tolist() == [5000, 5010, 5020, 5000, 5010, 5020, 5030]
    assert records.attempted_events(headers.view(np.uint8).reshape(3, -1)).tolist() == [3, 9, 0]


@pytest.mark.parametrize("missing, uniform", [(False, True), (False, False), (True, True), (True, False)])
def test_from_device_matches_a_slot_by_slot_reading(missing, uniform):
    """The vectorised decode (with its shortcuts for launches where every slot was written
    and every warp filled the copied width) equals reading each slot on its own."""
    rng = np.random.default_rng(3)
    slots, width = 6, 8
    headers = np.zeros(slots, layout.SLOT_HEADER_DTYPE)
    headers["magic"] = layout.WARP_MAGIC
    if missing:
        headers["magic"][2] = 0
    headers["ck_entry"] = rng.integers(1 << 33, 1 << 34, slots)
    headers["gt_exit"] = 1  # the warp ran its epilogue, which wrote the count
    headers["events"] = width if uniform else rng.integers(0, width + 3, slots)
    events = np.zeros((slots, width), layout.EVENT_DTYPE)
    events["clock"] = (headers["ck_entry"][:, None].astype(np.int64) + np.cumsum(rng.integers(1, 500, (slots, width)), 1)) & 0xFFFFFFFF
    events["tag"] = rng.integers(0, 1 << 16, (slots, width))
    warps, cycles, tags, lost = records.from_device(headers.view(np.uint8).reshape(slots, -1), events, width)
    want_cycles, want_tags = [], []
    for slot in range(slots):
        if headers["magic"][slot] != layout.WARP_MAGIC:
            continue
        clock = int(headers["ck_entry"][slot])
        for event in events[slot][:min(int(headers["events"][slot]), width)]:
            clock += (int(event["clock"]) - clock) % (1 << 32)  # forward steps below 2^31 cycles
            want_cycles.append(clock)
            want_tags.append(int(event["tag"]))
    assert lost == int(missing)
    assert cycles.tolist() == want_cycles and tags.tolist() == want_tags
    assert len(warps) == slots - int(missing)


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
