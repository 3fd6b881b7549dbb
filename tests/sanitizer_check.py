"""Instrumented kernels under compute-sanitizer, at their natural capacity and at a capacity
so small that most events overflow. Run on a GPU machine:

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python tests/sanitizer_check.py
    compute-sanitizer --tool racecheck --error-exitcode 3 python tests/sanitizer_check.py --quick

and with `--tier sass` for the sass tier's copies (markers and automatic sites).

CUPTI refuses subscribers while a sanitizer is attached (it is such a tool), so this
launches each instrumented copy directly: the arguments Triton passed to the original
(read from Triton's own record of which arguments it kept), then the trace buffer, the
capacity and the records per slot, with the same buffer setup and collection as a trace session. Exit status 0:
every output equals the original kernel's and every warp counted exactly the events its
loops make (the sanitizer itself exits with 3 when it finds anything)."""
import argparse
import ctypes
import os
import re
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # for `from examples import ...`
sys.path.insert(0, os.path.join(ROOT, "tests"))

from examples import attention  # noqa: E402
from examples import matmul  # noqa: E402
from examples import softmax  # noqa: E402
from cuda.bindings import driver as cu  # noqa: E402
from gwatch_nb import layout, sentinels  # noqa: E402
from gwatch_nb.cuda import driver  # noqa: E402
from gwatch_nb.cuda.instrumented import instrument_kernel  # noqa: E402
from gwatch_nb.cuda.sass_session import sass_kernel  # noqa: E402
from gwatch_nb.cuda.session import PendingLaunch, TraceSession, new_buffer  # noqa: E402
from gwatch_nb.sources import from_compiled_kernel  # noqa: E402

CTYPES = {"u64": ctypes.c_uint64, "b64": ctypes.c_uint64, "u32": ctypes.c_uint32, "b32": ctypes.c_uint32,
          "s32": ctypes.c_int32, "f32": ctypes.c_float}


def _param_types(ptx: str, name: str) -> list[str]:
    header = ptx[ptx.index(f".entry {name}("):]
    return re.findall(r"\.param\s+\.(\w+)", header[:header.index(")")])


def _value(argument, kind: str):
    if isinstance(argument, torch.Tensor):
        argument = argument.data_ptr()
    return CTYPES[kind](argument)


def direct_launch(compiled, grid, arguments, capacity, expected_per_warp, tier="ptx"):
    """Launch the instrumented copy (of `tier`) of a launched Triton kernel with the same arguments."""
    source = from_compiled_kernel(compiled)
    context = int(driver.check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent"))
    if tier == "sass":
        kernel = sass_kernel(context, compiled.function, source, None, True)
    else:  # the ptx tier rewrites the copy compiled with the markers' sentinels, as a trace does
        source = sentinels.ensure(source)
        kernel = instrument_kernel(context, compiled.function, source)
    kept = [a for i, a in enumerate(arguments) if (i,) not in compiled.src.constants]
    types = _param_types(source.ptx, compiled.name)
    kept += [0] * (len(types) - len(kept))  # Triton's scratch pointers: these kernels need none
    threads = compiled.metadata.num_warps * 32
    num_slots = int(np.prod(grid)) * compiled.metadata.num_warps
    slot_records = kernel.buffer.slot_records(capacity, kernel.table.min_record_events)
    pointer = new_buffer(capacity, slot_records, num_slots, 0, kernel.buffer.one_window)
    launch = PendingLaunch(compiled.name, tuple(grid), (threads, 1, 1), capacity, slot_records, num_slots,
                           kernel.table, pointer, layout.buffer_bytes(slot_records, num_slots), context, 0, {},
                           buffer=kernel.buffer)
    values = [_value(a, t) for a, t in zip(kept, types)] + list(launch.trace_arguments())
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    driver.check(cu.cuLaunchKernel(kernel.function, *grid, threads, 1, 1, compiled.metadata.shared,
                                   cu.CUstream(0), ctypes.addressof(params), 0), "cuLaunchKernel")
    driver.check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    records = TraceSession.collect(launch)
    driver.free(pointer)
    attempted = records.warps["n_events"].astype(np.int64) + records.warps["n_dropped"]
    if expected_per_warp is None:  # the sass tier: what the kernel attempted at its natural capacity
        expected_per_warp = attempted
    assert (attempted == expected_per_warp).all(), (compiled.name, attempted[:8], expected_per_warp)
    assert (records.warps["n_events"] == np.minimum(expected_per_warp, capacity)).all()
    return records


def cases():
    """(name, kernel, grid, arguments given the output tensor, launch options, output shape, events per warp)."""
    torch.manual_seed(0)
    a = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(1, 2, 256, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    x = torch.randn(96, 1000, device="cuda", dtype=torch.float16)
    causal = np.repeat([attention.events_per_warp(256, causal=True, start_m=m) for m in (0, 1)], 4)
    return [
        ("matmul", matmul.matmul_kernel, (2, 2, 1),
         lambda c: (a, a, c, 256, 256, 256, *a.stride(), *a.stride(), *c.stride(), 128, 128, 64),
         {"num_warps": 8, "num_stages": 3}, (256, 256), np.full(32, matmul.events_per_warp(256))),
        ("attention causal", attention.attn_fwd, (2, 2, 1),
         lambda o: (q, k, v, o, 0.125, *q.stride(), *k.stride(), *v.stride(), *o.stride(), 2, 256, 64, 128, 64, True),
         {"num_warps": 4, "num_stages": 3}, (1, 2, 256, 64), np.tile(causal, 2)),
        ("softmax", softmax.softmax_kernel, (16, 1, 1),
         lambda o: (x, o, 96, 1000, x.stride(0), o.stride(0), 1024),
         {"num_warps": 8}, (96, 1000), np.repeat([softmax.events_per_warp(96, 16, p) for p in range(16)], 8)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one kernel, one capacity (racecheck is slow)")
    parser.add_argument("--tier", choices=["ptx", "sass"], default="ptx",
                        help="sass: the probes spliced into the compiled kernel, markers and automatic sites")
    args = parser.parse_args()
    failures = 0
    for name, kernel, grid, make_arguments, options, shape, per_warp in cases()[:1] if args.quick else cases():
        original = torch.empty(shape, device="cuda", dtype=torch.float16)
        compiled = kernel[grid](*make_arguments(original), **options)
        natural = int(per_warp.max()) if args.tier == "ptx" else None
        expected = per_warp if args.tier == "ptx" else None
        for capacity in (natural,) if args.quick else (natural, 2):
            out = torch.full(shape, float("nan"), device="cuda", dtype=torch.float16)
            if capacity is None:  # the sass tier's readings per warp: room for all of them
                capacity = 1 << 14
            records = direct_launch(compiled, grid, make_arguments(out), capacity, expected, args.tier)
            if expected is None:
                expected = records.warps["n_events"].astype(np.int64) + records.warps["n_dropped"]
            same = torch.equal(out, original)
            failures += not same
            print(f"{name} capacity={capacity}: same output {same}, {records.events_recorded} events kept, "
                  f"{records.events_dropped} dropped", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
