"""Diagnostic variants of the instrumentation, as edits of the instrumented PTX: what one
part of a marker costs. Each edit keeps the kernel's own work and changes only what the
rewriter added; bench/overhead.py --diagnose times them beside the real thing."""
import re

CLOCK_READ = re.compile(r"mov\.u32 \t(%gwatch_clk\d+), %clock;")
RECORD_STORE = re.compile(r"@%gwatch_ok st\.global\.cs\.v4\.b32 \t\[%gwatch_ptr\+(\d+)\], "
                          r"\{([^,]*), ([^,]*), ([^,]*), ([^}]*)\};")
RECORDS_WRITTEN = re.compile(r"cvt\.u32\.u64 \t%gwatch_r0, %gwatch_d5;")
EPILOGUE_RET = re.compile(r"(\$__gwatch_exit:(?:.*\n)*?)(\tret;)")
END_SITE = re.compile(r"^\s*// gwatch site \d+: scope_end ")
SITE = re.compile(r"^\s*// gwatch site \d+:")


def _without_stores(ptx: str) -> str:
    """Records not stored, their readings still used: folded into one register the
    epilogue writes to the slot's last record place (so ptxas keeps every clock read);
    the warp reports no records, so the host reads none back."""
    folded = RECORD_STORE.sub(lambda m: "".join(
        f"xor.b32 \t%gwatch_r10, %gwatch_r10, {m.group(i)};\n\t" for i in (2, 3, 4)), ptx)
    folded = RECORDS_WRITTEN.sub("mov.u32 \t%gwatch_r0, 0;", folded)
    return EPILOGUE_RET.sub(r"\1\t@%gwatch_on st.global.u32 \t[%gwatch_d7+-4], %gwatch_r10;\n\2", folded)


def _exact_ends(ptx: str) -> str:
    """Each end marker's reading moved back to the marker itself, in front of the
    independent arithmetic the rewriter lets it wait behind."""
    lines = ptx.split("\n")
    for i, line in enumerate(lines):
        if not END_SITE.match(line):
            continue
        for j in range(i + 1, len(lines)):
            if CLOCK_READ.search(lines[j]):
                lines.insert(i + 1, lines.pop(j))
                break
            if SITE.match(lines[j]) or "gwatch" in lines[j]:
                break  # the reading is shared with an earlier marker
    return "\n".join(lines)


DIAGNOSTIC_EDITS = {
    "no-clock": lambda ptx: CLOCK_READ.sub(r"mov.u32 \t\1, 0;", ptx),
    "no-store": _without_stores,
    # Every record of a warp to the same 16 bytes of its slot (the last record place): the
    # same stores with a memory footprint of one sector per warp.
    "store-in-place": lambda ptx: RECORDS_WRITTEN.sub("mov.u32 \t%gwatch_r0, 0;", RECORD_STORE.sub(
        r"@%gwatch_ok st.global.cs.v4.b32 \t[%gwatch_d7+-16], {\2, \3, \4, \5};", ptx)),
    # Records stored without the streaming hint: what they cost the kernel's own data in
    # the caches.
    "store-cached": lambda ptx: ptx.replace("st.global.cs.v4.b32", "st.global.v4.b32"),
    "exact-ends": _exact_ends,
}
