"""Compile every corpus kernel (and the examples' other variants) for sm_90a with the Triton
of the machine it runs on, and keep the cubins in one .npz: the H200's Triton makes other
cubins than the CPU machines' (another ptxas), and the SASS tier's CPU tests read both.
  python tests/capture_cubins.py OUT.npz"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # tests/ and the root (`from examples import ...`)

import corpus  # noqa: E402
from compile_kernels import _compile  # noqa: E402

#: The example kernels' variants the corpus does not list (the corpus has d64 and d128 causal).
EXTRA = [("attention fwd d64 causal", "attention fwd d64", {"CAUSAL": True}),
         ("attention fwd d128", "attention fwd d128 causal", {"CAUSAL": False})]


def cases():
    by_name = {case.name: case for case in corpus.CASES}
    for case in corpus.CASES:
        yield case.name, case, case.constexprs
    for name, base, change in EXTRA:
        yield name, by_name[base], dict(by_name[base].constexprs, **change)


def main(out: str) -> None:
    import triton
    cubins = {}
    for name, case, constexprs in cases():
        signature = dict(case.signature, **{key: "constexpr" for key in constexprs})
        kernel = _compile(case.fn, tuple(signature.items()), tuple(constexprs.items()), case.num_warps,
                          case.num_stages)
        cubins[name] = np.frombuffer(kernel.asm["cubin"], np.uint8)
        print(f"{name}: {kernel.name}, {len(kernel.asm['cubin'])} bytes")
    np.savez_compressed(out, triton_version=np.array(triton.__version__), **cubins)


if __name__ == "__main__":
    main(sys.argv[1])
