"""Small traces built in memory whose every instance is known: for the views' tests."""
import numpy as np

from gwatch_nb.layout import make_tag
from gwatch_nb.records import WARP_DTYPE, LaunchRecords
from gwatch_nb.trace import Trace

BASE_NS = 10**9  # host-time origin of synthetic traces (a zero exit time would mean "never exited")


def synthetic_trace(warps, scope_names=None, grid=(2, 1, 1), kernel="synthetic", tier="interpreter",
                    launch_tier=None) -> Trace:
    """A one-launch Trace (times are ns; interpreter tier unless ``tier`` says otherwise, the
    launch's own tier ``launch_tier`` where it differs, as tier auto records it) from
    [(block, warp, sm, entry_ns, exit_ns, [(ns, scope_id, is_end), ...]), ...]."""
    table = np.zeros(len(warps), WARP_DTYPE)
    cycles, tags = [], []
    for row, (block, warp, sm, entry, exit_, events) in enumerate(warps):
        table[row]["block_x"], table[row]["block_y"], table[row]["block_z"] = block
        table[row]["warp"], table[row]["sm"], table[row]["n_events"] = warp, sm, len(events)
        table[row]["gt_entry"] = table[row]["ck_entry"] = BASE_NS + entry
        table[row]["gt_exit"] = table[row]["ck_exit"] = BASE_NS + exit_
        cycles += [BASE_NS + t for t, _, _ in events]
        tags += [make_tag(sid, end) for _, sid, end in events]
    launch = LaunchRecords(kernel, grid, (64, 1, 1), 64, table, np.array(cycles, np.int64),
                           np.array(tags, np.uint32), {"tier": launch_tier} if launch_tier else {})
    return Trace([launch], scope_names, {"tier": tier})


def nested_trace() -> Trace:
    """Two warps, each: outer(1) { inner(2) inner(2) } outer(1) — nesting depth 0 and 1."""
    events = [(1, 0), (2, 0), (2, 1), (2, 0), (2, 1), (1, 1), (1, 0), (1, 1)]
    warps = np.zeros(2, WARP_DTYPE)
    warps["warp"] = [0, 1]
    warps["sm"] = [3, 3]
    warps["gt_entry"] = warps["ck_entry"] = 1000
    warps["gt_exit"] = warps["ck_exit"] = 2000
    warps["n_events"] = len(events)
    tags = np.array([make_tag(sid, bool(end)) for sid, end in events] * 2, np.uint32)
    cycles = np.array([1010, 1020, 1100, 1200, 1300, 1400, 1500, 1600] * 2, np.int64)
    records = LaunchRecords("nest", (1, 1, 1), (64, 1, 1), 64, warps, cycles, tags)
    return Trace([records], {1: "outer", 2: "inner"}, {"tier": "interpreter"})


def long_loop_trace(iterations: int, long_every: int) -> Trace:
    """One warp running `iterations` instances of "short" (10 ns, 10 ns apart), every
    `long_every`-th one a "long" instance of 2,000 ns instead."""
    long = np.arange(iterations) % long_every == 0
    duration = np.where(long, 2000, 10)
    start = 1000 + np.concatenate(([0], np.cumsum(duration + 10)[:-1]))
    cycles = np.stack([start, start + duration], axis=1).reshape(-1).astype(np.int64)
    ids = np.where(long, 2, 1)
    tags = np.array([make_tag(int(sid), end) for sid in ids for end in (False, True)], np.uint32)
    warps = np.zeros(1, WARP_DTYPE)
    warps["gt_entry"] = warps["ck_entry"] = 1000
    warps["gt_exit"] = warps["ck_exit"] = int(cycles[-1]) + 10
    warps["n_events"] = len(tags)
    records = LaunchRecords("loop", (1, 1, 1), (32, 1, 1), len(tags), warps, cycles, tags)
    return Trace([records], {1: "short", 2: "long"}, {"tier": "interpreter"})


def slow_interpreter_trace():
    """Interpreter-tier times: scopes of 20 to 150 ms, four iterations on each of six warps."""
    warps = []
    for w in range(6):
        events, t = [], 0
        for i in range(4):
            for scope, ms in ((1, 20 + 5 * w), (2, 100 + 10 * i)):
                events += [(t, scope, False), (t + ms * 1_000_000, scope, True)]
                t += ms * 1_000_000 + 1_000_000
        warps.append(((w // 2, 0, 0), w % 2, w, 0, t, events))
    return synthetic_trace(warps, {1: "load", 2: "compute"}, grid=(3, 1, 1))
