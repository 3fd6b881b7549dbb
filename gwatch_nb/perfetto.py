"""Perfetto / Chrome trace export (the Trace Event Format, JSON).

Processes are SMs (or blocks), threads are warps, and every scope instance is one
complete ("X") event, in microseconds since its launch started. Instances whose markers
crossed (see ``Trace.warnings``) cannot nest on a thread; they become async ("b"/"e")
events of their process instead, so the file stays valid and nothing is lost.

The events are written as fixed-width JSON lines assembled in a numpy byte matrix:
numbers are right-aligned in fields padded with spaces (JSON whitespace), so millions
of events are written without a Python loop per event."""
from __future__ import annotations

import json
from typing import BinaryIO, Sequence

import numpy as np
import pandas as pd

from .trace import Trace

GROUPINGS = ("sm", "block")
_CHUNK = 1 << 18  # events formatted at a time: bounds the byte matrix to tens of MB
_SPACE, _ZERO = ord(" "), ord("0")
_POWERS_OF_TEN = 10 ** np.arange(1, 19, dtype=np.int64)


# ------------------------------------------------------------------ fixed-width JSON lines

def _width(values: np.ndarray, negative: bool | None = None) -> int:
    """Characters the widest of ``values`` needs, with a sign when any is negative."""
    if not len(values):
        return 1
    negative = bool((values < 0).any()) if negative is None else negative
    return len(str(int(np.abs(values).max()))) + negative


class _Lines:
    """``n`` JSON lines of equal width, built field by field in an (n, width) byte matrix."""

    def __init__(self, n: int):
        self.n = n
        self.fields: list[tuple[int, object]] = []  # (width, writer(buf, col))

    def text(self, text: str) -> "_Lines":
        raw = np.frombuffer(text.encode(), np.uint8)

        def write(buf, col):
            buf[:, col:col + len(raw)] = raw

        self.fields.append((len(raw), write))
        return self

    def choice(self, codes: np.ndarray, texts: Sequence[str]) -> "_Lines":
        """One of a few texts per line (e.g. a JSON-quoted scope name), padded with spaces after it."""
        encoded = [t.encode() for t in texts]
        width = max(map(len, encoded), default=0)
        table = np.full((max(len(encoded), 1), width), _SPACE, np.uint8)
        for row, raw in enumerate(encoded):
            table[row, :len(raw)] = np.frombuffer(raw, np.uint8)

        def write(buf, col):
            buf[:, col:col + width] = table[codes]

        self.fields.append((width, write))
        return self

    def integer(self, values: np.ndarray) -> "_Lines":
        values = np.asarray(values, np.int64)
        width = _width(values)
        self.fields.append((width, lambda buf, col: _put_integer(buf, col, width, values)))
        return self

    def microseconds(self, ns: np.ndarray) -> "_Lines":
        """Integer ns written as µs with three decimals and a trailing 1 (0.1 ns): readers
        that truncate ts*1000 (Perfetto does, for JSON doubles) then land on the exact ns,
        and exact-decimal readers drop the digit."""
        ns = np.asarray(ns, np.int64)
        whole = np.abs(ns) // 1000 * np.sign(ns)
        width = _width(whole, negative=bool((ns < 0).any()))
        fraction = np.abs(ns) % 1000

        def write(buf, col):
            _put_integer(buf, col, width, whole, negative=ns < 0)
            buf[:, col + width] = ord(".")
            for k, power in enumerate((100, 10, 1)):
                buf[:, col + width + 1 + k] = _ZERO + fraction // power % 10
            buf[:, col + width + 4] = ord("1")

        self.fields.append((width + 5, write))
        return self

    def render(self) -> bytes:
        """The lines, each starting with ",\\n" (they follow at least one earlier element)."""
        width = 2 + sum(w for w, _ in self.fields)
        buf = np.empty((self.n, width), np.uint8)
        buf[:, 0], buf[:, 1] = ord(","), ord("\n")
        col = 2
        for field_width, write in self.fields:
            write(buf, col)
            col += field_width
        return buf.tobytes()


def _put_integer(buf: np.ndarray, col: int, width: int, values: np.ndarray, negative=None) -> None:
    """Right-aligned decimal digits, leading zeros as spaces, a '-' before negative numbers."""
    negative = values < 0 if negative is None else negative
    magnitude = np.abs(values)
    shown = 1 + np.searchsorted(_POWERS_OF_TEN, magnitude, side="right")  # digits of each number
    remaining = magnitude.copy()
    for k in range(width - 1, -1, -1):
        position = width - k  # 1 for the last digit
        digit = (_ZERO + remaining % 10).astype(np.uint8)
        remaining //= 10
        blank = position > shown
        sign = blank & negative & (position == shown + 1)
        buf[:, col + k] = np.where(sign, ord("-"), np.where(blank, _SPACE, digit))


# ------------------------------------------------------------------ what goes where

def nested_properly(df: pd.DataFrame, warp_row: np.ndarray) -> np.ndarray:
    """True for the instances that nest on their warp's thread: inside their parent (the
    last earlier instance one level up in the same warp), itself nested properly.

    Instances of a warp are in program order of their start markers, so an instance and
    all its ancestors passing this test form a properly nested family."""
    depth = df["depth"].to_numpy()
    start, end = df["start_ns"].to_numpy(), df["end_ns"].to_numpy()
    index = np.arange(len(df))
    ok = depth == 0
    for level in range(1, int(depth.max()) + 1 if len(df) else 0):
        parent = np.maximum.accumulate(np.where(depth == level - 1, index, -1))
        here = np.flatnonzero(depth == level)
        p = parent[here]
        found = p >= 0
        p = np.where(found, p, 0)
        ok[here] = (found & ok[p] & (warp_row[p] == warp_row[here])
                    & (start[p] <= start[here]) & (end[here] <= end[p]))
    return ok


def _group_keys(warps: pd.DataFrame, group_by: str) -> tuple[np.ndarray, list[str], list[str]]:
    """Process number (0-based) of each warp, the process names, and the thread names."""
    launch = warps["launch"].to_numpy()
    several_launches = len(np.unique(launch)) > 1
    prefix = [f"launch {l} · " if several_launches else "" for l in launch]
    block = [f"({x},{y},{z})" for x, y, z in zip(warps["block_x"], warps["block_y"], warps["block_z"])]
    if group_by == "sm":
        keys = pd.MultiIndex.from_arrays([launch, warps["sm"].to_numpy()])
        labels = [f"{p}SM {s}" for p, s in zip(prefix, warps["sm"])]
        threads = [f"block {b} warp {w}" for b, w in zip(block, warps["warp"])]
    else:
        keys = pd.MultiIndex.from_arrays([launch, warps["block_z"], warps["block_y"], warps["block_x"]])
        labels = [f"{p}block {b}" for p, b in zip(prefix, block)]
        threads = [f"warp {w} (SM {s})" for w, s in zip(warps["warp"], warps["sm"])]
    codes, uniques = pd.factorize(keys, sort=True)
    names = [""] * len(uniques)
    for code, label in zip(codes, labels):
        names[code] = label
    return codes, names, threads


# ------------------------------------------------------------------ writing

def write(runs: Sequence[tuple[str, Trace]], out: BinaryIO, group_by: str = "sm") -> None:
    """Write one trace file holding every run to a binary file; ``runs`` pairs a label (may
    be empty) with a Trace. pids, tids and async ids are numbered on across runs, so they
    never collide."""
    if group_by not in GROUPINGS:
        raise ValueError(f"group_by={group_by!r} is not supported; supported: {', '.join(GROUPINGS)}")
    first_pid = first_tid = 1
    first_id = 0
    separator = b"\n"
    about = []
    out.write(b'{"traceEvents":[')
    for label, trace in runs:
        process_of_warp, process_names, thread_names = _group_keys(trace.warps, group_by)
        if thread_names:
            # Event lines start with ",\n": they always follow these metadata events.
            metadata = _metadata(label, process_of_warp, process_names, thread_names, first_pid, first_tid)
            out.write(separator + ",\n".join(metadata).encode())
            separator = b",\n"
            for chunk in _event_chunks(trace, first_pid + process_of_warp, first_tid, first_id):
                out.write(chunk)
        first_pid, first_tid, first_id = first_pid + len(process_names), first_tid + len(thread_names), \
            first_id + len(trace.df)
        about.append({"label": label, "tier": trace.meta.get("tier"), "time_source": trace.meta.get("time_source"),
                      "scopes_traced": trace.meta.get("scopes_traced"),
                      "kernels": sorted(set(trace.launches["kernel"])) if len(trace.launches) else [],
                      "warnings": [str(w) for w in trace.warnings]})
    out.write(b'\n],"metadata":' + _json({"gwatch-nb": {"runs": about}}).encode() + b"}\n")


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _metadata(label: str, process_of_warp: np.ndarray, process_names: list[str], thread_names: list[str],
              first_pid: int, first_tid: int) -> list[str]:
    """Process and thread names and sort orders, as JSON texts (a few per warp, not per event)."""
    prefix = f"{label} · " if label else ""
    metadata = []
    for number, name in enumerate(process_names):
        pid = first_pid + number
        metadata.append(_json({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": prefix + name}}))
        metadata.append(_json({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}))
    for row, name in enumerate(thread_names):
        pid, tid = first_pid + int(process_of_warp[row]), first_tid + row
        metadata.append(_json({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}))
        metadata.append(_json({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                               "args": {"sort_index": tid}}))
    return metadata


def _event_chunks(trace: Trace, pid_of_warp: np.ndarray, first_tid: int, first_id: int):
    """The scope instances as chunks of event lines, in the DataFrame's order (a warp's
    instances in program order: a parent always comes before a child with the same ts)."""
    df = trace.df
    if df.empty:
        return
    warp_row = trace.warp_row
    nested = nested_properly(df, warp_row)
    scope_codes = df["scope"].cat.codes.to_numpy()
    names = [_json(str(name)) for name in df["scope"].cat.categories]
    pid, tid = pid_of_warp[warp_row], first_tid + warp_row
    start, duration = df["start_ns"].to_numpy(), df["duration_ns"].to_numpy()
    scope_id, seq = df["scope_id"].to_numpy(), df["seq"].to_numpy()

    def lines(rows: np.ndarray, phase: str, at: np.ndarray, with_args: bool) -> bytes:
        built = _Lines(len(rows)).text(f'{{"ph":"{phase}","name":').choice(scope_codes[rows], names)
        if phase == "X":
            built.text(',"cat":"scope","ts":').microseconds(at).text(',"dur":').microseconds(duration[rows])
        else:
            built.text(',"cat":"unnested scope","id":').integer(first_id + rows)
            built.text(',"ts":').microseconds(at)
        built.text(',"pid":').integer(pid[rows]).text(',"tid":').integer(tid[rows])
        if with_args:
            built.text(',"args":{"scope_id":').integer(scope_id[rows]).text(',"seq":').integer(seq[rows]).text("}")
        return built.text("}").render()

    for lo in range(0, len(df), _CHUNK):
        rows = np.arange(lo, min(lo + _CHUNK, len(df)))
        kept, crossed = rows[nested[rows]], rows[~nested[rows]]
        if len(kept):
            yield lines(kept, "X", start[kept], True)
        if len(crossed):
            yield lines(crossed, "b", start[crossed], True)
            yield lines(crossed, "e", start[crossed] + duration[crossed], False)
