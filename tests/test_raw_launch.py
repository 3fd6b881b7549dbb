"""The decoder on the raw trace buffer of a real H200 launch (the example causal attention,
saved by tests/capture_raw_launch.py): decoded here, the records the warps wrote give each
warp exactly the events its loop makes, in program order, between its own entry and exit
clocks, and the very events the trace session decoded on the GPU machine."""
import os

import numpy as np
import pytest

from examples import attention
import gwatch_nb
from gwatch_nb import layout, records

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
RAW = os.path.join(FIXTURES, "attention_causal_raw_h200.npz")
DECODED = os.path.join(FIXTURES, "attention_causal_raw_h200.json")


def _raw():
    data = np.load(RAW)
    table = records.SiteTable(data["tags"], data["readings"], data["record_events"])
    recs = np.array(data["records"]).view(layout.RECORD_DTYPE)
    return data["headers"], recs, int(data["capacity"]), table, int(data["n_ctx"])


def test_every_warp_holds_its_loop_s_events_in_program_order():
    headers, recs, capacity, table, n_ctx = _raw()
    warps, cycles, tags, missing = records.from_device(headers, recs, capacity, table)
    assert missing == 0 and not warps["n_dropped"].any()
    want = [attention.events_per_warp(n_ctx, causal=True, start_m=int(b)) for b in warps["block_x"]]
    assert warps["n_events"].tolist() == want
    loop = [layout.make_tag(scope, end) for scope in sorted(attention.SCOPES) for end in (False, True)]
    first = np.cumsum(warps["n_events"].astype(np.int64)) - warps["n_events"]
    for row, (start, count) in enumerate(zip(first.tolist(), warps["n_events"].tolist())):
        assert tags[start:start + count].tolist() == loop * (count // len(loop))
        clocks = cycles[start:start + count]
        assert (np.diff(clocks) >= 0).all()
        assert warps["ck_entry"][row] <= clocks[0] and clocks[-1] <= warps["ck_exit"][row]


def test_the_same_events_as_the_session_decoded_on_the_gpu_machine():
    headers, recs, capacity, table, _ = _raw()
    warps, cycles, tags, _ = records.from_device(headers, recs, capacity, table)
    (there,) = gwatch_nb.load(DECODED).records
    for name in ("block_x", "block_y", "warp", "sm", "ck_entry", "ck_exit", "n_events", "n_dropped"):
        assert warps[name].tolist() == there.warps[name].tolist(), name
    assert cycles.tolist() == there.cycles.tolist() and tags.tolist() == there.tags.tolist()


def test_a_damaged_record_is_reported_in_one_line():
    headers, recs, capacity, table, _ = _raw()
    recs = recs.copy()
    recs["site"][3, 1] += 1  # now names a marker inside a record, not a record's first
    with pytest.raises(records.CorruptTraceError, match=r"^trace buffer is corrupt: record \d+ names site \d+"):
        records.from_device(headers, recs, capacity, table)
