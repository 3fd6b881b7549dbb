"""Trace the bottleneck kernels on the H200 with stall samples and write archives for the CPU
tests (tests/test_stalls.py, tests/test_browser_sites.py):

    python tests/make_stall_fixtures.py OUT_DIR"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import torch  # noqa: E402

import gwatch_nb  # noqa: E402
from corpus_kernels import bottlenecks  # noqa: E402
from gwatch_nb.stall_reasons import by_scope  # noqa: E402

#: name -> (run, scope names, do_trace options). The barrier loop is traced small, at a finer
#: period: its full size records a million scope instances.
CASES = {
    "copy_loop": (bottlenecks.run_copy, bottlenecks.COPY_SCOPES, {}),
    "barrier_loop": (lambda: bottlenecks.run_barrier(programs=132, rounds=32), bottlenecks.BARRIER_SCOPES,
                     {"stall_period": 8}),
    "dot_loop": (bottlenecks.run_dot, bottlenecks.DOT_SCOPES, {}),
}


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    for name, (run, names, options) in CASES.items():
        run()
        torch.cuda.synchronize()
        trace = gwatch_nb.do_trace(run, name, scope_name_map=names, instrumentation_tier="sass", stalls=True,
                                   **options)
        trace.save(os.path.join(out, f"{name}_stalls_h200.json"))
        print(name, len(trace.df), "instances,", trace.meta["stalls"]["kernels"])
        print(by_scope(trace.stalls).to_string())


if __name__ == "__main__":
    main(sys.argv[1])
