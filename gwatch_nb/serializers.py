"""A Trace as the timeline front end receives it: columns as binary little-endian arrays.

Instances keep ``Trace.df``'s row order (grouped by warp, in start order within a warp),
so an instance's position is its DataFrame row. Times are ns from each launch's start:
uint32 while they fit (4.29 s), float64 beyond, which is exact to 2**53 ns either way.
In a widget the arrays travel as binary comm buffers; in an HTML file as zlib + base64."""
from __future__ import annotations

import base64
import json
import zlib
from typing import TYPE_CHECKING

import numpy as np

from . import site_rows, tiers
from .notes import notes
from .palette import scope_colours, stall_reason_colours

if TYPE_CHECKING:
    from .trace import Trace

PAYLOAD_VERSION = 1


def binary_array(values: np.ndarray) -> dict:
    """A numpy array as ``{dtype, shape, view}``, ``view`` a memoryview of its little-endian bytes."""
    values = np.ascontiguousarray(values)
    if values.dtype.byteorder == ">":
        values = values.astype(values.dtype.newbyteorder("<"))
    return {"dtype": values.dtype.name, "shape": list(values.shape), "view": memoryview(values).cast("B")}


def _unsigned(values: np.ndarray) -> np.ndarray:
    """The narrowest unsigned integer type (up to 32 bits) that holds non-negative values."""
    values = np.asarray(values)
    top = int(values.max()) if values.size else 0
    if values.size and int(values.min()) < 0:
        raise ValueError("negative values where counts or ids were expected")
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    raise OverflowError(f"value {top} does not fit 32 bits")


def _times(ns: np.ndarray) -> np.ndarray:
    """uint32 ns while every value fits, else float64 (exact below 2**53 ns, 104 days)."""
    ns = np.asarray(ns, np.int64)
    if ns.size == 0 or (ns.min() >= 0 and ns.max() <= np.iinfo(np.uint32).max):
        return ns.astype(np.uint32)
    if np.abs(ns).max() > 2 ** 53:
        raise OverflowError("times beyond 2**53 ns cannot be shown exactly")
    return ns.astype(np.float64)


def timeline_payload(trace: "Trace") -> dict:
    """Everything the timeline draws, as small JSON plus binary arrays; on the sass tier also
    ``sites``: every reading (site_rows.py records, a few dozen) for the details of a selection,
    and where the trace sampled them ``stalls``: each scope's stall reasons (trace.stalls' rows)."""
    df, warps, launches, warp_row = trace.df, trace.warps, trace.launches, trace.warp_row
    if np.any(np.diff(warp_row) < 0):
        raise ValueError("the trace's scope instances are not grouped by warp in warp order")
    first = np.zeros(len(warps) + 1, np.int64)
    np.cumsum(np.bincount(warp_row, minlength=len(warps)), out=first[1:])

    names = [str(name) for name in df["scope"].cat.categories]
    last_end = df.groupby("launch")["end_ns"].max()
    launch_info = []
    for row in launches.itertuples():
        # A warp that never exited has no exit time: its last scope still bounds the launch.
        duration = max(int(row.duration_ns), int(last_end.get(row.launch, 0)))
        launch_info.append({"kernel": str(row.kernel), "grid": [int(g) for g in row.grid],
                            "block": [int(b) for b in row.block], "duration_ns": duration,
                            "warps": int(row.warps), "instances": int(row.scope_instances),
                            "config": str(row.config)})
    payload = {
        "version": PAYLOAD_VERSION,
        "tier": trace.meta["tier"],
        "time_source": trace.meta["time_source"],
        "launches": launch_info,
        "scopes": {"names": names, "colors": scope_colours(len(names))},
        "warnings": [str(w) for w in trace.warnings],
        "notes": notes(trace),
        "warps": {
            "launch": binary_array(_unsigned(warps["launch"])),
            "sm": binary_array(_unsigned(warps["sm"])),
            "block_x": binary_array(_unsigned(warps["block_x"])),
            "block_y": binary_array(_unsigned(warps["block_y"])),
            "block_z": binary_array(_unsigned(warps["block_z"])),
            "warp": binary_array(_unsigned(warps["warp"])),
            "start_ns": binary_array(warps["start_ns"].to_numpy(np.float64)),
            "end_ns": binary_array(warps["end_ns"].to_numpy(np.float64)),
            "first": binary_array(first.astype(np.uint32)),
        },
        "instances": {
            "start_ns": binary_array(_times(df["start_ns"].to_numpy())),
            "duration_ns": binary_array(_times(df["duration_ns"].to_numpy())),
            "scope": binary_array(_unsigned(df["scope"].cat.codes.to_numpy())),
            "depth": binary_array(_unsigned(df["depth"].to_numpy())),
            "seq": binary_array(_unsigned(df["seq"].to_numpy())),
        },
    }
    if tiers.of(trace).has_sites:
        grouped = site_rows.by_scope(site_rows.records(trace))
        payload["sites"] = {"rule": site_rows.SHARPNESS_RULE, "rows": [r for g in grouped for r in g["readings"]]}
    if trace.meta.get("stalls"):
        table = trace.stalls
        payload["stalls"] = {"period": int(trace.meta["stalls"]["period"]), "rows": [
            {"kernel": str(r.kernel), "scope": str(r.name), "reason": str(r.reason), "samples": int(r.samples),
             "share": float(r.share), "colour": colour}
            for r, colour in zip(table.itertuples(), stall_reason_colours(list(table["reason"])))]}
    return payload


def payload_nbytes(payload: dict) -> int:
    """Bytes of all binary arrays in a payload."""
    return sum(column["view"].nbytes for table in ("warps", "instances") for column in payload[table].values())


def _pack_buffers(value):
    if isinstance(value, dict):
        if isinstance(value.get("view"), memoryview):
            packed = base64.b64encode(zlib.compress(value["view"], 6)).decode("ascii")
            return {**value, "view": {"$zlib_base64": packed}}
        return {k: _pack_buffers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_pack_buffers(v) for v in value]
    return value


def script_json(value) -> str:
    """JSON safe inside an HTML ``<script type="application/json">``: no ``<`` can end it."""
    return (json.dumps(value, separators=(",", ":"), allow_nan=False)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def embedded_state(payload: dict, **traits) -> str:
    """A widget state (the payload and other traits) for an HTML page, binary arrays as zlib + base64."""
    return script_json({"payload": _pack_buffers(payload), **traits})
