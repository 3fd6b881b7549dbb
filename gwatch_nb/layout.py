"""The trace buffer's layout as numpy dtypes, built from the native module's constants
(native/gwatch_format.h is the one source of truth; docs/FORMAT.md describes it)."""
import numpy as np

from ._native import FORMAT

RECORD_BYTES = FORMAT["RECORD_BYTES"]
READINGS_PER_RECORD = FORMAT["READINGS_PER_RECORD"]
GLOBAL_HEADER_BYTES = FORMAT["GLOBAL_HEADER_BYTES"]
SLOT_HEADER_BYTES = FORMAT["SLOT_HEADER_BYTES"]
WARP_MAGIC = FORMAT["WARP_MAGIC"]
MAX_SCOPE_ID = FORMAT["MAX_SCOPE_ID"]
GROUP_MAX_EVENTS = FORMAT["GROUP_MAX_EVENTS"]
BUFFER_PARAM = FORMAT["BUFFER_PARAM"]
CAPACITY_PARAM = FORMAT["CAPACITY_PARAM"]
SLOT_RECORDS_PARAM = FORMAT["SLOT_RECORDS_PARAM"]

#: Events on the host (decoded records, archives) carry tag = scope_id << 1 | is_end.
TAG_ID_SHIFT, TAG_END_BIT = 1, 1

_U64_FIELDS = ("GT_ENTRY", "CK_ENTRY", "GT_EXIT", "CK_EXIT")
_U32_FIELDS = ("MAGIC", "WARP", "BLOCK_X", "BLOCK_Y", "BLOCK_Z", "SM", "EVENTS", "RECORDS")

#: One warp's header as the device writes it (at the end of its slot).
SLOT_HEADER_DTYPE = np.dtype({
    "names": [f.lower() for f in _U64_FIELDS + _U32_FIELDS],
    "formats": ["<u8"] * len(_U64_FIELDS) + ["<u4"] * len(_U32_FIELDS),
    "offsets": [FORMAT["SH_" + f] for f in _U64_FIELDS + _U32_FIELDS],
    "itemsize": SLOT_HEADER_BYTES,
})

#: One record as the device writes it.
RECORD_DTYPE = np.dtype({
    "names": ["clocks", "site"],
    "formats": [("<u4", (READINGS_PER_RECORD,)), "<u4"],
    "offsets": [FORMAT["REC_CLOCKS"], FORMAT["REC_SITE"]],
    "itemsize": RECORD_BYTES,
})


def slot_records(capacity: int, min_record_events: int) -> int:
    """Records a warp slot needs to hold every group that starts below ``capacity``
    events (at most capacity + GROUP_MAX_EVENTS - 1 events), when each of the kernel's
    records covers at least ``min_record_events`` markers."""
    return -(-(capacity + GROUP_MAX_EVENTS - 1) // max(1, min_record_events))


def global_header(capacity: int, records: int, num_slots: int) -> bytes:
    """The header the host writes at the start of a launch's buffer."""
    header = bytearray(GLOBAL_HEADER_BYTES)
    for key, value, width in (
        ("GH_MAGIC", FORMAT["BUFFER_MAGIC"], 4),
        ("GH_VERSION", FORMAT["FORMAT_VERSION"], 4),
        ("GH_CAPACITY", capacity, 4),
        ("GH_SLOT_BYTES", slot_bytes(records), 4),
        ("GH_NUM_SLOTS", num_slots, 8),
        ("GH_SLOT_RECORDS", records, 4),
    ):
        offset = FORMAT[key]
        header[offset:offset + width] = int(value).to_bytes(width, "little")
    return bytes(header)


def header_offset(records: int) -> int:
    """Where a warp's header starts inside its slot: after its records."""
    return records * RECORD_BYTES


def slot_bytes(records: int) -> int:
    return header_offset(records) + SLOT_HEADER_BYTES


def buffer_bytes(records: int, num_slots: int) -> int:
    return GLOBAL_HEADER_BYTES + num_slots * slot_bytes(records)


def make_tag(scope_id: int, is_end: bool) -> int:
    return (scope_id << TAG_ID_SHIFT) | (TAG_END_BIT if is_end else 0)


class PtxBuffers:
    """How the ptx tier's kernels lay out and fill a launch's buffer."""
    tier = "ptx"
    #: Whether every slot must lie inside one 4 GiB window (the probes add to a low word).
    one_window = False

    @staticmethod
    def slot_records(capacity: int, min_record_events: int) -> int:
        return slot_records(capacity, min_record_events)

    @staticmethod
    def arguments(pointer: int, capacity: int, records: int) -> tuple[int, int, int]:
        """The values of the parameters the rewriter appends: buffer, capacity, records per slot."""
        return pointer, capacity, records

    @staticmethod
    def host_headers(headers: np.ndarray, pointer: int, capacity: int, records: int) -> np.ndarray:
        """The slot headers in the form records.from_device reads (these already are)."""
        return headers


class SassBuffers:
    """How the sass tier's probes lay out and fill a launch's buffer (native/gwatch_format.h)."""
    tier = "sass"
    one_window = True
    OVERFLOW_ROWS = FORMAT["SASS_OVERFLOW_ROWS"]

    @classmethod
    def slot_records(cls, capacity: int, min_record_events: int) -> int:
        return slot_records(capacity, min_record_events) + cls.OVERFLOW_ROWS

    @staticmethod
    def arguments(pointer: int, capacity: int, records: int) -> tuple[int, int, int]:
        """The three parameters the tier appends: slot 0's address, bytes per slot, capacity."""
        return pointer + GLOBAL_HEADER_BYTES, slot_bytes(records), capacity

    @classmethod
    def host_headers(cls, headers: np.ndarray, pointer: int, capacity: int, records: int) -> np.ndarray:
        """Headers with the events tried (capacity less the room left) and the records written
        (up to the next record's address) in place of the room and that address; raises
        ValueError where the address is not inside the warp's own rows (a corrupt slot)."""
        out = np.array(headers, np.uint8, copy=True)
        view = out.view(SLOT_HEADER_DTYPE).reshape(-1)
        tried = capacity - view["events"].view(np.int32).astype(np.int64)
        first = pointer + GLOBAL_HEADER_BYTES + np.arange(len(view), dtype=np.int64) * slot_bytes(records)
        offset = (view["records"].astype(np.int64) - first) & 0xFFFFFFFF
        written = (view["magic"] == WARP_MAGIC) & (view["gt_exit"] != 0)
        more_room = written & (tried < 0)
        if more_room.any():
            raise ValueError(f"warp slot {int(np.flatnonzero(more_room)[0])}: it has more room left than the capacity")
        bad = written & ((offset % RECORD_BYTES != 0) | (offset // RECORD_BYTES > records - cls.OVERFLOW_ROWS))
        if bad.any():
            raise ValueError(f"warp slot {int(np.flatnonzero(bad)[0])}: its next record is not inside its own rows")
        view["events"] = np.where(written, tried, 0).astype(np.uint32)
        view["records"] = np.where(written, offset // RECORD_BYTES, 0).astype(np.uint32)
        return out


PTX_BUFFERS, SASS_BUFFERS = PtxBuffers(), SassBuffers()
