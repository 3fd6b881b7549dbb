"""Trace archives: one ``.json`` document holding a trace's raw records, losslessly.

Columns travel as zlib-compressed little-endian arrays in base64 (docs/FORMAT.md), so
an archive of millions of scope instances stays compact and loads fast. Loading never
executes anything from the file: it is plain JSON, checked field by field. Files are
written by outputs.py and read by ``gwatch_nb.load`` (report.py), which also reads
report archives."""
from __future__ import annotations

import base64
import json
import os
import zlib
from typing import Any

import numpy as np

from .errors import ArchiveError
from .records import WARP_DTYPE, LaunchRecords
from .tiers import TIERS
from .trace import Trace

FORMAT_NAME = "gwatch-nb-trace"
FORMAT_VERSION = 1
#: Files larger than this are refused before reading (override with max_bytes=).
MAX_ARCHIVE_BYTES = 4 << 30
_DTYPES = {"<u1", "<u2", "<u4", "<u8", "<i1", "<i2", "<i4", "<i8"}
_MAX_ELEMENTS = 1 << 33


# ------------------------------------------------------------------ columns

def encode_column(values: np.ndarray) -> dict:
    values = np.ascontiguousarray(values)
    dtype = values.dtype.newbyteorder("<") if values.dtype.byteorder == ">" else values.dtype
    raw = values.astype(dtype, copy=False).tobytes()
    return {"dtype": dtype.str, "length": int(values.size), "encoding": "zlib+base64",
            "data": base64.b64encode(zlib.compress(raw, 1)).decode("ascii")}


def decode_column(column: Any, where: str) -> np.ndarray:
    if not isinstance(column, dict):
        raise ArchiveError(f"{where}: expected a column object")
    dtype, length, encoding, data = (column.get(k) for k in ("dtype", "length", "encoding", "data"))
    if dtype not in _DTYPES:
        raise ArchiveError(f"{where}: unsupported dtype {dtype!r}")
    if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= _MAX_ELEMENTS:
        raise ArchiveError(f"{where}: bad length {length!r}")
    if encoding != "zlib+base64" or not isinstance(data, str):
        raise ArchiveError(f"{where}: unsupported encoding {encoding!r}")
    expected = length * np.dtype(dtype).itemsize
    try:
        packed = base64.b64decode(data, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, expected + 1)  # bounded: a hostile stream cannot balloon
    except (ValueError, zlib.error) as error:
        raise ArchiveError(f"{where}: corrupt column data ({error})") from None
    if len(raw) != expected or not inflater.eof:
        raise ArchiveError(f"{where}: column holds {len(raw)} bytes, expected {expected}")
    return np.frombuffer(raw, dtype=np.dtype(dtype))


def _narrow(values: np.ndarray) -> np.ndarray:
    if values.size and np.iinfo(np.int32).min <= values.min() and values.max() <= np.iinfo(np.int32).max:
        return values.astype(np.int32)
    return values.astype(np.int64)


# ------------------------------------------------------------------ save

def to_document(trace: Trace) -> dict:
    launches = []
    for r in trace.records:
        entry_clock = np.repeat(r.warps["ck_entry"].astype(np.int64), r.warps["n_events"].astype(np.int64))
        launches.append({
            "kernel": r.kernel, "grid": list(r.grid), "block": list(r.block), "capacity": r.capacity,
            "info": r.info,
            "warps": {name: encode_column(r.warps[name]) for name in WARP_DTYPE.names},
            "events": {"cycle_delta": encode_column(_narrow(r.cycles - entry_clock)),
                       "tag": encode_column(r.tags)},
        })
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "meta": trace.meta,
            "scope_names": {str(k): v for k, v in trace.scope_names.items()}, "launches": launches}


# ------------------------------------------------------------------ load

def read_json(path, max_bytes: int = MAX_ARCHIVE_BYTES) -> Any:
    """The JSON document in a file, refusing files over max_bytes; ArchiveError (one line)."""
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
    except OSError as error:
        raise ArchiveError(f"{path}: cannot read ({error.strerror or error})") from None
    if size > max_bytes:
        raise ArchiveError(f"{path}: {size / 2**30:.1f} GiB is larger than the {max_bytes / 2**30:.1f} GiB "
                           "archive limit (pass max_bytes= to raise it)")
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (ValueError, RecursionError) as error:
        raise ArchiveError(f"{path}: not a gwatch-nb archive (invalid JSON: {str(error)[:80]})") from None
    except OSError as error:
        raise ArchiveError(f"{path}: cannot read ({error.strerror or error})") from None


def check_version(version: Any, current: int, what: str, where: str) -> None:
    """A document's schema version must be one this gwatch-nb reads."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ArchiveError(f"{where}: bad {what} version {version!r}")
    if version > current:
        raise ArchiveError(f"{where}: {what} version {version} is newer than this gwatch-nb reads "
                           f"({current}); upgrade gwatch-nb")


def from_document(document: Any, where: str = "archive") -> Trace:
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise ArchiveError(f"{where}: not a gwatch trace archive")
    check_version(document.get("version"), FORMAT_VERSION, "archive", where)
    meta = document.get("meta", {})
    names = document.get("scope_names", {})
    launches = document.get("launches")
    if not isinstance(meta, dict) or meta.get("tier", "ptx") not in TIERS:
        raise ArchiveError(f"{where}: bad metadata")
    if not isinstance(names, dict) or not all(isinstance(v, str) for v in names.values()):
        raise ArchiveError(f"{where}: bad scope names")
    try:
        scope_names = {int(k): v for k, v in names.items()}
    except ValueError:
        raise ArchiveError(f"{where}: scope names must be keyed by integer ids") from None
    if not isinstance(launches, list):
        raise ArchiveError(f"{where}: no launches list")
    if len(set(scope_names.values())) < len(scope_names):
        scope_names = _distinct_names(scope_names, meta)
        if isinstance(meta.get("scope_names"), dict):  # the session's own list of the automatic scopes
            meta = {**meta, "scope_names": {k: scope_names.get(int(k), v) if str(k).isdigit() else v
                                            for k, v in meta["scope_names"].items()}}
    records = [_launch_records(item, f"{where}: launch {i}") for i, item in enumerate(launches)]
    try:
        return Trace(records, scope_names, meta)
    except (ValueError, IndexError, TypeError) as error:
        raise ArchiveError(f"{where}: inconsistent records ({error})") from None


def _distinct_names(scope_names: dict[int, str], meta: dict) -> dict[int, str]:
    """An archive written before names were unique may give several automatic scopes one name:
    they are told apart as the sass tier now names them, by the instruction of each one's site
    (meta["sites"]). The names the user gave the markers' scopes are left as they are."""
    from .sass.waits import distinct_names
    sites = meta.get("sites") if isinstance(meta.get("sites"), dict) else {}
    instruction_of = {}
    for scope, origin, instruction in zip(sites.get("scope") or [], sites.get("origin") or [],
                                          sites.get("instruction") or []):
        if origin != "marker" and isinstance(scope, int) and scope in scope_names:
            instruction_of.setdefault(scope, instruction)
    automatic = {scope: scope_names[scope] for scope in instruction_of}
    return {**scope_names, **distinct_names(automatic, instruction_of)}


def _triple(value: Any, where: str) -> tuple[int, int, int]:
    if (not isinstance(value, list) or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
        raise ArchiveError(f"{where}: expected three non-negative integers")
    return tuple(value)


def _launch_records(item: Any, where: str) -> LaunchRecords:
    if not isinstance(item, dict):
        raise ArchiveError(f"{where}: expected an object")
    kernel, capacity, info = item.get("kernel"), item.get("capacity"), item.get("info", {})
    if not isinstance(kernel, str) or not isinstance(capacity, int) or not isinstance(info, dict):
        raise ArchiveError(f"{where}: bad kernel, capacity or info")
    columns, events = item.get("warps"), item.get("events")
    if not isinstance(columns, dict) or not isinstance(events, dict):
        raise ArchiveError(f"{where}: missing warps or events")
    decoded = {}
    for name in WARP_DTYPE.names:
        if name not in columns:
            raise ArchiveError(f"{where}: warps lack the {name!r} column")
        decoded[name] = decode_column(columns[name], f"{where} warps.{name}")
    count = len(decoded["block_x"])
    if any(len(v) != count for v in decoded.values()):
        raise ArchiveError(f"{where}: warp columns differ in length")
    warps = np.zeros(count, WARP_DTYPE)
    for name, values in decoded.items():
        warps[name] = values
    delta = decode_column(events.get("cycle_delta"), f"{where} events.cycle_delta")
    tags = decode_column(events.get("tag"), f"{where} events.tag").astype(np.uint32, copy=False)
    n_events = warps["n_events"].astype(np.int64)
    if int(n_events.sum()) != len(delta) or len(delta) != len(tags):
        raise ArchiveError(f"{where}: event columns do not match the warps' event counts")
    # Built in place in its final int64: each temporary of a million events is paid for in
    # fresh pages, which is most of what loading costs.
    cycles = np.repeat(warps["ck_entry"].astype(np.int64), n_events)
    np.add(cycles, delta, out=cycles, casting="unsafe")
    return LaunchRecords(kernel, _triple(item.get("grid"), f"{where} grid"),
                         _triple(item.get("block"), f"{where} block"), capacity, warps, cycles, tags, info)
