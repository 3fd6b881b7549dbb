"""The sass tier's buffer contract on the host (layout.SassBuffers), on slots built byte by byte
from the format's constants as the probes write them (native/gwatch_format.h): a record gets a
row of its own while the warp has room left, later ones overwrite the row after the last kept
one, and at exit the warp writes the room left (i32) and the low word of its next record's
address where the common header keeps events and records."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gwatch_nb import layout, records
from gwatch_nb._native import FORMAT
from gwatch_nb.layout import PTX_BUFFERS, SASS_BUFFERS, SassBuffers

POINTER = 0x7F12_3450_0000  # a device address with its high word set: only the low word is stored
TIMER, CLOCK = 1_700_000_000_000, 5_000_000


def _put(header: np.ndarray, field: str, value: int, width: int, signed: bool = False):
    offset = FORMAT[field]
    header[offset:offset + width] = np.frombuffer(int(value).to_bytes(width, "little", signed=signed), np.uint8)


def _row_address(slot: int, row: int, records_per_slot: int) -> int:
    return POINTER + layout.GLOBAL_HEADER_BYTES + slot * layout.slot_bytes(records_per_slot) + row * layout.RECORD_BYTES


def sass_header(slot: int, records_per_slot: int, room: int, next_row: int, exited: bool = True,
                started: bool = True) -> np.ndarray:
    """One warp's header as the probes leave it: entry fields from the prologue, exit fields
    (timer, clock, room left, next record's low address word) from an epilogue."""
    header = np.zeros(layout.SLOT_HEADER_BYTES, np.uint8)
    if not started:
        return header
    _put(header, "SH_MAGIC", layout.WARP_MAGIC, 4)
    _put(header, "SH_WARP", slot % 4, 4)
    _put(header, "SH_BLOCK_X", slot // 4, 4)
    _put(header, "SH_GT_ENTRY", TIMER, 8)
    _put(header, "SH_CK_ENTRY", CLOCK, 8)
    if exited:
        _put(header, "SH_GT_EXIT", TIMER + 1000, 8)
        _put(header, "SH_CK_EXIT", CLOCK + 1800, 8)
        _put(header, "SASS_SH_ROOM", room, 4, signed=True)
        _put(header, "SASS_SH_NEXT", _row_address(slot, next_row, records_per_slot) & 0xFFFFFFFF, 4)
    return header


def _fields(headers: np.ndarray):
    return headers.view(layout.SLOT_HEADER_DTYPE).reshape(-1)


CAPACITY, MIN_EVENTS = 20, 1
RECORDS = SASS_BUFFERS.slot_records(CAPACITY, MIN_EVENTS)


def test_warps_within_capacity_report_what_they_tried_and_wrote():
    headers = np.stack([sass_header(0, RECORDS, room=CAPACITY - 7, next_row=5),
                        sass_header(1, RECORDS, room=CAPACITY, next_row=0),  # no site on its path
                        sass_header(2, RECORDS, room=0, next_row=9)])        # exactly full
    out = _fields(SASS_BUFFERS.host_headers(headers, POINTER, CAPACITY, RECORDS))
    assert out["events"].tolist() == [7, 0, CAPACITY]
    assert out["records"].tolist() == [5, 0, 9]
    # every other field as the warp wrote it
    same = [n for n in layout.SLOT_HEADER_DTYPE.names if n not in ("events", "records")]
    assert all((out[n] == _fields(headers)[n]).all() for n in same)


def test_overflowed_warps_count_every_event_tried_and_stop_at_the_overflow_row():
    last = RECORDS - SassBuffers.OVERFLOW_ROWS  # the row past the last kept one, overwritten by the rest
    headers = np.stack([sass_header(0, RECORDS, room=-13, next_row=last),
                        sass_header(1, RECORDS, room=-1, next_row=7)])
    out = _fields(SASS_BUFFERS.host_headers(headers, POINTER, CAPACITY, RECORDS))
    assert out["events"].tolist() == [CAPACITY + 13, CAPACITY + 1]
    assert out["records"].tolist() == [last, 7]


def test_a_warp_that_never_exited_or_never_started_counts_nothing():
    never_exited = sass_header(0, RECORDS, room=3, next_row=2, exited=False)
    # what an exit would have written is garbage here and must not be read
    _put(never_exited, "SASS_SH_ROOM", -99, 4, signed=True)
    _put(never_exited, "SASS_SH_NEXT", 0xDEADBEEF, 4)
    headers = np.stack([never_exited, sass_header(1, RECORDS, 0, 0, started=False)])
    out = _fields(SASS_BUFFERS.host_headers(headers, POINTER, CAPACITY, RECORDS))
    assert out["events"].tolist() == [0, 0] and out["records"].tolist() == [0, 0]


@pytest.mark.parametrize("next_address, room, why", [
    (lambda slot: _row_address(slot, RECORDS, RECORDS), 0, "past the overflow row"),
    (lambda slot: _row_address(slot, 3, RECORDS) + 4, 0, "inside a row"),
    (lambda slot: _row_address(slot + 1, 0, RECORDS), 0, "in the next warp's slot"),
    (lambda slot: _row_address(slot, 0, RECORDS) - layout.RECORD_BYTES, 0, "before the slot"),
    (lambda slot: _row_address(slot, 2, RECORDS), CAPACITY + 1, "more room left than the capacity"),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("bad", [0, 1])
def test_a_corrupt_slot_is_a_one_line_value_error(next_address, room, why, bad):
    headers = np.stack([sass_header(slot, RECORDS, room=0, next_row=1) for slot in range(2)])
    headers[bad] = sass_header(bad, RECORDS, room=room, next_row=0)
    _put(headers[bad], "SASS_SH_NEXT", next_address(bad) & 0xFFFFFFFF, 4)
    said = "it has more room left than the capacity" if room > CAPACITY else "its next record is not inside its own rows"
    with pytest.raises(ValueError, match=rf"^warp slot {bad}: {said}$"):
        SASS_BUFFERS.host_headers(headers, POINTER, CAPACITY, RECORDS)


def test_host_headers_leave_the_copied_headers_alone():
    headers = np.stack([sass_header(0, RECORDS, room=5, next_row=4)])
    before = headers.copy()
    SASS_BUFFERS.host_headers(headers, POINTER, CAPACITY, RECORDS)
    assert (headers == before).all()
    assert PTX_BUFFERS.host_headers(headers, POINTER, CAPACITY, RECORDS) is headers  # the ptx tier's are final


@pytest.mark.parametrize("capacity, min_events", [(1, 1), (20, 1), (4096, 1), (4096, 3), (100, 2)])
def test_slot_records_add_the_overflow_row_to_the_common_count(capacity, min_events):
    common = -(-(capacity + layout.GROUP_MAX_EVENTS - 1) // min_events)
    assert PTX_BUFFERS.slot_records(capacity, min_events) == common
    assert SASS_BUFFERS.slot_records(capacity, min_events) == common + FORMAT["SASS_OVERFLOW_ROWS"]
    assert SassBuffers.OVERFLOW_ROWS == FORMAT["SASS_OVERFLOW_ROWS"] >= 1


def test_arguments_are_slot_zero_the_slot_bytes_and_the_capacity():
    records_per_slot = SASS_BUFFERS.slot_records(CAPACITY, MIN_EVENTS)
    slots, slot_bytes, capacity = SASS_BUFFERS.arguments(POINTER, CAPACITY, records_per_slot)
    assert slots == POINTER + FORMAT["GLOBAL_HEADER_BYTES"]
    assert slot_bytes == records_per_slot * FORMAT["RECORD_BYTES"] + FORMAT["SLOT_HEADER_BYTES"]
    assert capacity == CAPACITY
    assert PTX_BUFFERS.arguments(POINTER, CAPACITY, records_per_slot) == (POINTER, CAPACITY, records_per_slot)
    assert SASS_BUFFERS.tier == "sass" and SASS_BUFFERS.one_window and not PTX_BUFFERS.one_window


# ---------------------------------------------------------------- the whole way, as the probes fill a slot

def _table(sizes: list[int]) -> records.SiteTable:
    """Sites numbered in order, grouped into records of `sizes` readings each."""
    tags, readings, events = [], [], []
    for size in sizes:
        for word in range(size):
            tags.append(layout.make_tag(100 + len(tags), False))
            readings.append(word)
            events.append(size if word == 0 else 0)
    return records.SiteTable(np.array(tags, np.uint32), np.array(readings), np.array(events))


def _run_warp(slot, path, first_site, sizes, capacity, records_per_slot, rows, header):
    """What the probes do for one warp that runs the records `path` (indices into sizes)."""
    room, row, tried = capacity, 0, []
    for r in path:
        assert row < records_per_slot  # never written outside the warp's own rows
        rows[slot, row]["site"] = first_site[r]
        for word in range(sizes[r]):
            clock = CLOCK + 10 * (len(tried) + 1)
            rows[slot, row]["clocks"][word] = clock
            tried.append((first_site[r] + word, clock))
        if room > 0:
            row += 1
        room -= sizes[r]
    header[slot] = sass_header(slot, records_per_slot, room, row)
    return tried


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, layout.READINGS_PER_RECORD), min_size=1, max_size=5),
       st.integers(1, 40), st.data())
def test_probes_slots_decode_to_each_warps_first_capacity_events(sizes, capacity, data):
    """A model of the probes' room test and overflow row, run for a few warps over random paths
    through the kernel's records: the host keeps exactly each warp's first `capacity` events, in
    order, and counts the rest as dropped; no warp needs a row past its slot."""
    first_site = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
    table = _table(sizes)
    records_per_slot = SASS_BUFFERS.slot_records(capacity, table.min_record_events)
    paths = data.draw(st.lists(st.lists(st.integers(0, len(sizes) - 1), max_size=60), min_size=1, max_size=4))
    rows = np.zeros((len(paths), records_per_slot), layout.RECORD_DTYPE)
    headers = np.zeros((len(paths), layout.SLOT_HEADER_BYTES), np.uint8)
    tried = [_run_warp(slot, path, first_site, sizes, capacity, records_per_slot, rows, headers)
             for slot, path in enumerate(paths)]
    host = SASS_BUFFERS.host_headers(headers, POINTER, capacity, records_per_slot)
    written = records.records_written(host)
    assert (written <= records_per_slot - SassBuffers.OVERFLOW_ROWS).all()
    width = int(written.max(initial=0))
    warps, cycles, tags, missing = records.from_device(host, np.ascontiguousarray(rows[:, :width]), capacity, table)
    assert missing == 0
    kept = [t[:capacity] for t in tried]
    assert warps["n_events"].tolist() == [len(k) for k in kept]
    assert warps["n_dropped"].tolist() == [len(t) - len(k) for t, k in zip(tried, kept)]
    assert tags.tolist() == [int(table.tags[site]) for k in kept for site, _ in k]
    assert cycles.tolist() == [clock for k in kept for _, clock in k]
