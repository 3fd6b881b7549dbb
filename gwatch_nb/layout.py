"""The trace buffer's layout as numpy dtypes, built from the native module's constants
(native/gwatch_format.h is the one source of truth; docs/FORMAT.md describes it)."""
import numpy as np

from ._native import FORMAT

EVENT_BYTES = FORMAT["EVENT_BYTES"]
GLOBAL_HEADER_BYTES = FORMAT["GLOBAL_HEADER_BYTES"]
SLOT_HEADER_BYTES = FORMAT["SLOT_HEADER_BYTES"]
WARP_MAGIC = FORMAT["WARP_MAGIC"]
MAX_SCOPE_ID = FORMAT["MAX_SCOPE_ID"]
TAG_ID_SHIFT = FORMAT["TAG_ID_SHIFT"]
TAG_END_BIT = FORMAT["TAG_END_BIT"]
SLOT_SPARE_EVENTS = FORMAT["SLOT_SPARE_EVENTS"]
GROUP_MAX_EVENTS = FORMAT["GROUP_MAX_EVENTS"]
BUFFER_PARAM = FORMAT["BUFFER_PARAM"]
CAPACITY_PARAM = FORMAT["CAPACITY_PARAM"]

_U64_FIELDS = ("GT_ENTRY", "CK_ENTRY", "GT_EXIT", "CK_EXIT")
_U32_FIELDS = ("MAGIC", "WARP", "BLOCK_X", "BLOCK_Y", "BLOCK_Z", "SM", "EVENTS", "RESERVED")

#: One warp's header as the device writes it (at the end of its slot).
SLOT_HEADER_DTYPE = np.dtype({
    "names": [f.lower() for f in _U64_FIELDS + _U32_FIELDS],
    "formats": ["<u8"] * len(_U64_FIELDS) + ["<u4"] * len(_U32_FIELDS),
    "offsets": [FORMAT["SH_" + f] for f in _U64_FIELDS + _U32_FIELDS],
    "itemsize": SLOT_HEADER_BYTES,
})

#: One event as the device writes it.
EVENT_DTYPE = np.dtype({
    "names": ["clock", "tag"],
    "formats": ["<u4", "<u4"],
    "offsets": [FORMAT["EV_CLOCK"], FORMAT["EV_TAG"]],
    "itemsize": EVENT_BYTES,
})


def global_header(capacity: int, num_slots: int) -> bytes:
    """The header the host writes at the start of a launch's buffer."""
    header = bytearray(GLOBAL_HEADER_BYTES)
    for key, value, width in (
        ("GH_MAGIC", FORMAT["BUFFER_MAGIC"], 4),
        ("GH_VERSION", FORMAT["FORMAT_VERSION"], 4),
        ("GH_CAPACITY", capacity, 4),
        ("GH_SLOT_BYTES", slot_bytes(capacity), 4),
        ("GH_NUM_SLOTS", num_slots, 8),
    ):
        offset = FORMAT[key]
        header[offset:offset + width] = int(value).to_bytes(width, "little")
    return bytes(header)


def header_offset(capacity: int) -> int:
    """Where a warp's header starts inside its slot: after its events and the spare room a
    group of markers that starts just below the capacity may fill."""
    return (capacity + SLOT_SPARE_EVENTS) * EVENT_BYTES


def slot_bytes(capacity: int) -> int:
    return header_offset(capacity) + SLOT_HEADER_BYTES


def buffer_bytes(capacity: int, num_slots: int) -> int:
    return GLOBAL_HEADER_BYTES + num_slots * slot_bytes(capacity)


def make_tag(scope_id: int, is_end: bool) -> int:
    return (scope_id << TAG_ID_SHIFT) | (TAG_END_BIT if is_end else 0)
