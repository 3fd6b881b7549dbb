"""The `sass` tier's session: the ptx tier's launch swap (session.py), with copies made from the
cubin Triton loaded by splicing clock readings into its scheduled code (gwatch_nb/sass/), so the
kernel that runs is the user's own, instruction for instruction, plus the probes."""
from __future__ import annotations

import dataclasses
import hashlib
import threading
import time

from .. import layout, records, sentinels, triton_compat
from ..errors import SassRewriteError, TraceFailedError, UnsupportedGpuError
from ..sass import markers as marker_sources, ptx_lines
from ..sass.callsites import CallSites
from ..sass.cfg import ControlFlowGraph
from ..sass.instrument import NO_CODE, SITE_COLUMNS, by_sentinels, instrument
from ..sass.rewrite import decoded
from ..sass.scope_map import PcOwners
from . import driver
from .instrumented import InstrumentedKernel, resources
from .session import TraceSession

#: The compute capabilities whose cubins the SASS tier reads and writes.
SUPPORTED_CAPABILITIES = ((9, 0),)

_lock = threading.Lock()
# (context, sha of the cubin, scope ids or None, auto) -> the loaded copy (None: no site)
_by_cubin: dict[tuple, InstrumentedKernel | None] = {}


class SassTraceSession(TraceSession):
    """Trace matching launches with probes in their compiled code (a ``tiers.TracingSession``)."""

    tier = "sass"

    def start(self) -> None:
        driver.init()
        problem = supported(driver.device_info(driver.current_device()))
        if problem is not None:
            raise UnsupportedGpuError(problem)
        super().start()

    def _build(self, context: int, function: int, source) -> InstrumentedKernel | None:
        source = self._sources.with_function(source, function)  # its markers are read from its source
        # The count check and the choice of a fallback read the markers' sentinels in the PTX
        # (without them, the readings are placed all the same, unchecked).
        try:
            source = sentinels.ensure(source)
        except TraceFailedError:
            pass
        try:
            kernel = sass_kernel(context, function, source, self.options.scopes, self.options.auto,
                                 reload=self.options.stalls)
        except TraceFailedError as error:
            if not self.options.fallback or error.kind != "rewrite_failed":
                raise
            return self._on_ptx_tier(context, function, source, error.reason)
        miscounted = kernel.extra["miscounted"] if kernel is not None else ""
        if miscounted:
            if self.options.fallback:
                return self._on_ptx_tier(context, function, source, miscounted)
            self._note("sites_miscounted", source.name, f"{source.name}: {miscounted}")
        left_out = kernel.extra["left_out"] if kernel is not None else []
        if left_out:
            shown = ", ".join(f"scope {o['scope']} at instruction {o['instruction']}" if o["instruction"] is not None
                              else f"scope {o['scope']} ({o['reason']})"
                              for o in left_out[:3])
            more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
            why = (f"{len(left_out)} scope pair(s) not read (no free registers, no sound place, no code, or "
                   f"marked elsewhere): {shown}{more}")
            # Worth the ptx tier only where it reads that scope: a marker Triton kept in the PTX.
            if self.options.fallback and {o["scope"] for o in left_out} & kernel.extra["ptx_scopes"]:
                return self._on_ptx_tier(context, function, source, why)
            self._note("sites_left_out", source.name, f"{source.name}: {why} (trace.meta['sass'] lists them)")
        return kernel

    def _on_ptx_tier(self, context: int, function: int, source, why: str) -> InstrumentedKernel | None:
        """The ptx tier's copy of a kernel the sass tier could not trace soundly (tier "auto")."""
        kernel = TraceSession._build(self, context, function, source)
        lost = "; its automatic sites are not traced there" if self.options.auto else ""
        self._note("sass_fallback", source.name, f"{source.name}: traced on the ptx tier, as the sass tier could "
                   f"not trace it soundly ({why}){lost}")
        return kernel

    def collect(self, launch) -> records.LaunchRecords:
        """The ptx tier's collection, then an end at the warp's exit for every scope the kernel's
        placement proved only an exit can leave open (sass/pairing.py)."""
        collected = TraceSession.collect(launch)
        kernel = self._ready.get(launch.key)
        open_at_exit = kernel.extra.get("open_at_exit", {}) if kernel is not None and kernel.extra else {}
        if open_at_exit:
            warps, cycles, tags = records.close_at_exit(collected.warps, collected.cycles, collected.tags,
                                                        open_at_exit)
            collected = records.LaunchRecords(collected.kernel, collected.grid, collected.block, collected.capacity,
                                              warps, cycles, tags, collected.info)
        return collected

    def meta(self) -> dict:
        """The ptx tier's entries, and ``sites`` (trace.sites' rows by column: every reading,
        where it went and how sharp its scope's boundary is), ``scope_names`` (the automatic
        sites' scopes) and ``sass`` (per kernel: instructions inserted, state registers, the
        readings left out for want of registers, the scopes in code Triton compiled away, the
        scopes that end at an exit, build seconds)."""
        out = super().meta()
        kernels = [k for k in self._ready.values() if k is not None and k.buffer.tier == self.tier]
        out["sites"] = {c: [v for k in kernels for v in k.extra["sites"][c]] for c in SITE_COLUMNS}
        out["scope_names"] = {str(s): n for k in kernels for s, n in k.extra["scope_names"].items()}
        out["sass"] = {k.name: dict(k.extra["cost"], left_out=k.extra["left_out"],
                                    compiled_away=k.extra["compiled_away"], seconds=k.extra["seconds"],
                                    open_at_exit={str(s): i for s, i in k.extra["open_at_exit"].items()})
                       for k in kernels}
        return out


def supported(device: dict) -> str | None:
    """None when the sass tier can trace on this device (driver.device_info's dict), else the
    one-line reason, naming what it supports."""
    capability = (device.get("compute_capability_major", 0), device.get("compute_capability_minor", 0))
    if capability in SUPPORTED_CAPABILITIES:
        return None
    shown = ", ".join(f"sm_{a}{b}" for a, b in SUPPORTED_CAPABILITIES)
    return (f"the sass tier supports {shown} (H100/H200); this GPU, {device.get('device', '?')}, is "
            f"sm_{capability[0]}{capability[1]}; use instrumentation_tier='ptx'")


def sass_kernel(context: int, original_handle: int, source, scopes: frozenset | None,
                auto: bool, reload: bool = False) -> InstrumentedKernel | None:
    """The instrumented copy of a kernel in this context (cached per cubin and choice of sites);
    raises TraceFailedError when its cubin is missing or cannot be rewritten or loaded. With
    `reload`, a copy built before is loaded again, as a module of its own: PC sampling charges
    PCs only to modules it saw load (pc_sampling.Sampler)."""
    if source.cubin is None:
        raise TraceFailedError(f"{source.name}: matched, but the cubin Triton loaded was not found; it ran untraced",
                               "cubin_not_found")
    key = (context, hashlib.sha256(source.cubin).hexdigest(), scopes, auto)
    with _lock:
        built = key not in _by_cubin
        if built:
            _by_cubin[key] = _build(source, scopes, auto)
        kernel = _by_cubin[key]
    if kernel is not None and reload and not built:
        function = driver.get_function(driver.load_cubin(kernel.extra["cubin"]), kernel.name)
        kernel = dataclasses.replace(kernel, function=function, handle=int(function))
    if kernel is not None:
        driver.copy_attributes(original_handle, kernel.function)
    return kernel


def _miscounted(source, start_depths: dict[int, list[int]], by_ptx: bool = False) -> str:
    """Why some scope's readings would not run as often as its markers in the PTX (the ptx
    tier's records, the count a user reasons with), or "": the compiler copied or unrolled its
    code, or moved it into another loop, so its starts sit in other loops or in more or fewer
    places than the PTX's sentinels. Two kinds of sentinel do not count: those of a
    warp-specialized kernel (`setmaxnreg`: Triton moves and drops its markers), and copies the
    pipeliner put before a loop whose body holds the scope too (the ptx tier records those
    peeled stages as instances of their own; the sass tier's readings count iterations).
    `by_ptx`: the PTX's sentinels placed the readings, each copy of a scope on its own and a
    loop ptxas unrolled as its iterations (sites._unrolled, also a loop unrolled away, whose
    copies sit a loop less deep), so the starts outnumber the sentinels: none may sit deeper
    than the scope's sentinels."""
    ptx = source.ptx or ""
    if "setmaxnreg" in ptx:
        return ""
    in_ptx = marker_sources.ptx_start_depths(ptx)
    differ = []
    for scope, depths in sorted(start_depths.items()):
        marked = in_ptx.get(scope, [])
        if min(depths, default=0) > 0 and max(marked, default=0) > 0:
            marked = [d for d in marked if d > 0]
        if marked and (max(depths, default=0) > max(marked) if by_ptx else marked != depths):
            differ.append((scope, marked, depths))
    if not differ:
        return ""
    scope, ptx_depths, depths = differ[0]
    more = f" (and {len(differ) - 1} more scope(s))" if len(differ) > 1 else ""
    return (f"scope {scope} would be counted other than its markers run: its starts sit in loops {depths} of the "
            f"compiled kernel, its sentinels in loops {ptx_depths} of the PTX{more}")


def _ptx_scopes(source) -> set[int]:
    """The scopes whose markers the kernel's PTX holds (what the ptx tier can trace)."""
    try:
        return {m.scope_id for m in marker_sources.from_ptx(source.ptx or "")}
    except SassRewriteError:
        return set()


def markers_of(source) -> list:
    """The kernel's markers: from its Python source where the function is known (markers compile
    to nothing, and the source still names those Triton drops in warp-specialized loops), else
    from the sentinels in its PTX."""
    if source.function is not None:
        try:
            return marker_sources.from_source(source.function)
        except SassRewriteError:
            pass
    return marker_sources.from_ptx(source.ptx)


def callsites_of(source) -> CallSites | None:
    """The kernel's own calls, where its Python source is known: what places inlined code that
    Triton 3.6's line table gives no call site (sites.home_chains)."""
    if source.function is None:
        return None
    try:
        return CallSites(source.function)
    except SassRewriteError:
        return None


def ptx_lines_of(source) -> ptx_lines.PtxLines | None:
    """The kernel's PTX-line table (sass/ptx_lines.py), where its PTX has sentinels to place
    scopes by; not for a warp-specialized kernel (`setmaxnreg`), whose PTX loses markers."""
    ptx = source.ptx or ""
    if not sentinels.has_sentinels(ptx) or "setmaxnreg" in ptx:
        return None
    return ptx_lines.table(source.cubin, source.name, ptx,
                           lambda text: triton_compat.assemble_like_triton(text, source.metadata),
                           triton_compat.ptxas_identity(source.metadata), source.loaded_ptx)


def placing_lines(source) -> ptx_lines.PtxLines | None:
    """The kernel's PTX-line table where the sass tier places its scopes by it (instrument's
    `by_sentinels`), so that untraced stall samples are charged as a trace's are."""
    lines = ptx_lines_of(source)
    if lines is None:
        return None
    instructions = decoded(source.cubin).get(source.name)
    if instructions is None or by_sentinels(ControlFlowGraph(instructions, source.name), lines) is None:
        return None
    return lines


def marked_elsewhere(in_ptx: set[int], made, scopes: frozenset | None) -> list[int]:
    """Scopes whose markers the PTX holds (`in_ptx`) but the source the sass tier read does not
    (a function the kernel reaches other than by its name, say): it has no reading for them,
    neither placed nor left out, so they are named as left out, and tier auto takes the ptx tier."""
    placed = set(made.sites["scope"]) | {o["scope"] for o in made.left_out} if made is not None else set()
    return sorted(s for s in in_ptx - placed if scopes is None or s in scopes)


def compiled_away_scopes(source, left_out: list[dict], in_ptx: set[int]) -> list[int]:
    """Scopes left out for having no code that the PTX's sentinels lack too: code Triton removed
    (a branch on a constexpr), which no tier records. Not readings left out; known only where the
    PTX has sentinels to tell, and not in a warp-specialized kernel (`setmaxnreg`), whose PTX
    loses markers of code that runs."""
    ptx = source.ptx or ""
    if not sentinels.has_sentinels(ptx) or "setmaxnreg" in ptx:
        return []
    return sorted({o["scope"] for o in left_out if o["reason"] == NO_CODE} - in_ptx)


def _build(source, scopes: frozenset | None, auto: bool) -> InstrumentedKernel | None:
    began = time.perf_counter()
    try:
        shared = source.metadata.get("shared")  # the launches' shared memory (Triton's is all dynamic)
        markers, callsites, lines = markers_of(source), callsites_of(source), ptx_lines_of(source)
        made = instrument(source.cubin, source.name, markers, scopes, auto,
                          shared if isinstance(shared, int) else None, callsites, lines)
    except SassRewriteError as error:
        raise TraceFailedError(f"{source.name}: the sass tier cannot instrument it ({error}); it ran untraced",
                               "rewrite_failed", reason=str(error)) from None
    in_ptx = _ptx_scopes(source)
    unread = marked_elsewhere(in_ptx, made, scopes)
    if unread and made is None:
        why = f"scopes {unread} are marked where the sass tier did not read the kernel's source"
        raise TraceFailedError(f"{source.name}: the sass tier cannot instrument it ({why}); it ran untraced",
                               "rewrite_failed", reason=why)
    if made is None:
        return None
    made.left_out.extend(dict(scope=scope, pair=0, instruction=None, reason="marked where the sass tier did not "
                              "read the kernel's source") for scope in unread)
    compiled_away = compiled_away_scopes(source, made.left_out, in_ptx)
    made.left_out[:] = [o for o in made.left_out if o["scope"] not in compiled_away]
    try:
        module = driver.load_cubin(made.cubin)
        function = driver.get_function(module, source.name)
    except driver.CudaError as error:
        raise TraceFailedError(f"{source.name}: the driver could not load the instrumented cubin ({error}); "
                               "it ran untraced", "load_failed") from None
    placed_by_ptx = made.cost["placed_by"] == "sentinels"  # the placement stall samples are charged by too
    return InstrumentedKernel(
        name=source.name, function=function, handle=int(function), num_params=made.num_params,
        sites=tuple(range(len(made.sites["site"]))), table=made.table, resources=resources(function),
        build_seconds=time.perf_counter() - began, buffer=layout.SASS_BUFFERS, most_events=made.most_events,
        extra=dict(sites=made.sites, scope_names=made.scope_names, cost=made.cost, seconds=made.seconds,
                   left_out=made.left_out, compiled_away=compiled_away, open_at_exit=made.open_at_exit,
                   ptx_scopes=in_ptx, miscounted=_miscounted(source, made.start_depths, placed_by_ptx), cubin=made.cubin,
                   pc_owners=PcOwners(source.cubin, source.name, markers, callsites, made.auto_sites, made.inserted,
                                      lines if placed_by_ptx else None)))
