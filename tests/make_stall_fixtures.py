"""Trace the bottleneck kernels on the H200 with stall samples and write archives for the CPU
tests (tests/test_stalls.py, tests/test_browser_sites.py):

    python tests/make_stall_fixtures.py OUT_DIR [--third-party]

With --third-party (a GPU machine with .corpus/ built: tests/third_party/assemble.py), two
kernels of the third-party corpus instead: each traced on the sass tier with stall samples
(the archive), sampled untraced (gwatch_nb.stalls), and traced with automatic sites only on
its unmarked build; OUT_DIR/third_party_stalls.json holds what each gave per scope."""
import json
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


#: Corpus cases with different bottlenecks: a chunked recurrence of dots (fla) and a decode
#: attention reading its KV cache through an index (vLLM), two kernels.
THIRD_PARTY = ("fla/chunk_fwd_h", "vllm/decode_attention_mla")


def _scopes(table) -> list[dict]:
    return [dict(kernel=r.kernel, scope=int(r.scope), name=r.name, samples=int(r.samples), top=r.top_reason,
                 share=round(float(r.top_share), 3)) for r in by_scope(table).itertuples()]


def third_party(out: str) -> None:
    from third_party import cases
    found = {c.name: c for c in cases()}
    summary = {}
    for name in THIRD_PARTY:
        case = found[name]
        marked, plain = case.launcher("cuda"), case.launcher("cuda", marked=False)
        marked(), plain()
        torch.cuda.synchronize()
        trace = gwatch_nb.do_trace(marked, case.pattern, scope_name_map=case.scopes, instrumentation_tier="sass",
                                   stalls=True)
        trace.save(os.path.join(out, f"{name.replace('/', '_')}_stalls_h200.json"))
        untraced = gwatch_nb.stalls(marked, case.pattern, case.scopes)
        auto = gwatch_nb.do_trace(plain, case.pattern, instrumentation_tier="sass", auto=True, stalls=True)
        summary[name] = dict(traced=_scopes(trace.stalls), kernels=trace.meta["stalls"]["kernels"],
                             warnings=sorted({w.kind for w in trace.warnings}),
                             untraced=_scopes(untraced), untraced_kernels=untraced.attrs["stalls"]["kernels"],
                             auto=_scopes(auto.stalls), auto_kernels=auto.meta["stalls"]["kernels"],
                             auto_warnings=sorted({w.kind for w in auto.warnings}))
        print(name, len(trace.df), "instances")
        for kind in ("traced", "untraced", "auto"):
            print(" ", kind)
            for row in summary[name][kind]:
                print("   ", row)
    with open(os.path.join(out, "third_party_stalls.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    if "--third-party" in sys.argv:
        return third_party(out)
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
