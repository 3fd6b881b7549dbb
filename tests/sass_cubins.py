"""The sm_90a cubins ptxas makes of the corpus kernels and the examples, for the SASS tier's
tests: `cubins()` maps a case name to its cubin, compiled once per process (Triton's own cache
keeps them across runs)."""
import functools
from dataclasses import dataclass, field

import attention
import corpus
import softmax as softmax_example
from compile_kernels import _compile


@dataclass(frozen=True)
class CubinCase:
    name: str
    fn: object
    signature: dict
    constexprs: dict = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3


def _example_attention(head_dim: int, causal: bool) -> CubinCase:
    """attention fwd as examples/attention.py launches it for this head size."""
    return CubinCase(f"example attention fwd d{head_dim}{' causal' if causal else ''}", attention.attn_fwd,
                     corpus.ATTN_SIG, {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal},
                     num_warps=8 if head_dim >= 128 else 4, num_stages=3 if head_dim <= 64 else 2)


EXAMPLE_SOFTMAX_BLOCK = 4096  # a 4096-column row, as bench/overhead.py runs it
EXAMPLES = [
    _example_attention(64, False), _example_attention(64, True),
    _example_attention(128, False), _example_attention(128, True),
    CubinCase("example softmax", softmax_example.softmax_kernel,
              {"X": "*fp16", "Out": "*fp16", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_out": "i32"},
              {"BLOCK": EXAMPLE_SOFTMAX_BLOCK}, num_warps=8),
]
CASES = [CubinCase(c.name, c.fn, c.signature, c.constexprs, c.num_warps, c.num_stages) for c in corpus.CASES] + EXAMPLES


def compiled(case: CubinCase):
    """Triton's CompiledKernel of `case` for sm_90 (its .asm["cubin"] is the sm_90a cubin)."""
    signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
    return _compile(case.fn, tuple(signature.items()), tuple(case.constexprs.items()), case.num_warps,
                    case.num_stages)


@functools.lru_cache(maxsize=None)
def cubins() -> dict[str, bytes]:
    """Case name -> sm_90a cubin, for every corpus case and example."""
    return {case.name: compiled(case).asm["cubin"] for case in CASES}



