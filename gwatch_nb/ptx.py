"""PTX instrumentation: the native rewriter, and ptxas for checking its output."""
from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import AbstractSet

from . import _native, toolchain


@dataclass(frozen=True)
class Site:
    """One sentinel the rewriter turned into a clock reading in a trace record."""
    entry: str
    scope_id: int
    kind: str  # "start" or "end"
    line: int  # line of the sentinel in the original PTX
    reading: int  # which clock reading of its record it shares
    record_events: int  # markers of the record this site starts (0: it starts none)


@dataclass(frozen=True)
class Entry:
    name: str
    line: int
    num_params: int  # parameters before the appended trace parameters
    num_sites: int
    num_exits: int


@dataclass(frozen=True)
class InstrumentedPTX:
    ptx: str
    sites: tuple[Site, ...]
    entries: tuple[Entry, ...]

    @property
    def changed(self) -> bool:
        return bool(self.sites)


class PTXRewriteError(ValueError):
    """The PTX holds sentinels the rewriter cannot place (the message names the line)."""


def instrument(ptx: str, scopes: AbstractSet[int] | None = None) -> InstrumentedPTX:
    """Rewrite every gwatch sentinel in a PTX module into a trace record.

    Every .entry of a module with sentinels gains three trailing parameters (the trace
    buffer, the capacity, the records per slot), a prologue and an epilogue; a module
    without sentinels comes back as the very same string. ``sites`` are in the module's
    order: a record names its first marker by its index there. With ``scopes``, only
    the markers of those scope ids are rewritten; the rewriter leaves the others idle
    comments, which ptxas compiles to nothing."""
    try:
        text, sites, entries = _native.instrument(ptx, None if scopes is None else sorted(scopes))
    except ValueError as error:
        raise PTXRewriteError(str(error)) from None
    entry_list = tuple(Entry(*e) for e in entries)
    return InstrumentedPTX(
        ptx=ptx if text is None else text,
        sites=tuple(Site(entry_list[e].name, sid, "end" if end else "start", line, reading, record_events)
                    for e, sid, end, line, reading, record_events in sites),
        entries=entry_list,
    )


def assemble(ptx: str, arch: str = "sm_90a", options: tuple[str, ...] = ()) -> bytes:
    """Assemble PTX to a cubin with Triton's ptxas; raises PTXRewriteError with ptxas's message."""
    with tempfile.TemporaryDirectory(prefix="gwatch-ptxas-") as tmp:
        src, out = os.path.join(tmp, "module.ptx"), os.path.join(tmp, "module.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        capability = int("".join(ch for ch in arch if ch.isdigit()))
        proc = subprocess.run([toolchain.ptxas(capability), f"-arch={arch}", *options, src, "-o", out],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise PTXRewriteError(f"ptxas failed: {proc.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()
