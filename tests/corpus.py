"""Real Triton kernels with gwatch markers, compiled for sm_90 by the rewriter tests and
traced on the GPU by the device tests. Each entry says how to compile it and how many
start/end sites its markers should leave in the PTX (None: not fixed by the source)."""
from dataclasses import dataclass, field

import triton
import triton.language as tl

import attention
import matmul
from gwatch_nb.triton import scope_end, scope_start


@triton.jit
def vector_add(X, Y, Out, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(Out + offs, tl.load(X + offs, mask=mask) + tl.load(Y + offs, mask=mask), mask=mask)


@triton.jit
def vector_add_marked(X, Y, Out, N, BLOCK: tl.constexpr):
    scope_start(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    y = tl.load(Y + offs, mask=mask)
    scope_end(1)
    scope_start(2)
    tl.store(Out + offs, x + y, mask=mask)
    scope_end(2)


@triton.jit
def nested_loops(X, Out, ROWS, COLS, BLOCK: tl.constexpr):
    """An outer scope per row, an inner scope per column block, nested three deep."""
    pid = tl.program_id(0)
    scope_start(10)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(0, ROWS):
        scope_start(11)
        for c in range(0, COLS, BLOCK):
            scope_start(12)
            offs = c + tl.arange(0, BLOCK)
            acc += tl.load(X + (pid * ROWS + r) * COLS + offs, mask=offs < COLS, other=0.0)
            scope_end(12)
        scope_end(11)
    tl.store(Out + pid * BLOCK + tl.arange(0, BLOCK), acc)
    scope_end(10)


@triton.jit
def early_return(X, Out, N, LIMIT, BLOCK: tl.constexpr):
    """Programs past LIMIT return before their second scope."""
    pid = tl.program_id(0)
    scope_start(20)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    scope_end(20)
    if pid >= LIMIT:
        return
    scope_start(21)
    tl.store(Out + offs, x * 2.0, mask=offs < N)
    scope_end(21)


@dataclass
class Case:
    name: str
    fn: object
    signature: dict
    constexprs: dict = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    starts: int | None = None  # start sites expected in the PTX (None: the compiler may duplicate some)
    scope_ids: frozenset = frozenset()


MM_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
          "stride_cm": "i32", "stride_cn": "i32"}
ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
            **{f"stride_{t}{d}": "i32" for t in "qkvo" for d in ("z", "h", "m" if t in "qo" else "n", "d")},
            "H": "i32", "N_CTX": "i32"}

CASES = [
    Case("vector_add (no markers)", vector_add, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "N": "i32"},
         {"BLOCK": 1024}, starts=0),
    Case("vector_add_marked", vector_add_marked, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "N": "i32"},
         {"BLOCK": 1024}, starts=2, scope_ids=frozenset({1, 2})),
    Case("nested_loops", nested_loops, {"X": "*fp32", "Out": "*fp32", "ROWS": "i32", "COLS": "i32"},
         {"BLOCK": 128}, scope_ids=frozenset({10, 11, 12})),
    Case("early_return", early_return, {"X": "*fp32", "Out": "*fp32", "N": "i32", "LIMIT": "i32"},
         {"BLOCK": 256}, scope_ids=frozenset({20, 21})),
    Case("matmul", matmul.matmul_kernel, MM_SIG, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
         num_warps=8, num_stages=3, scope_ids=frozenset(matmul.SCOPES)),
    Case("attention fwd d64", attention.attn_fwd, ATTN_SIG,
         {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False},
         num_warps=4, num_stages=3, scope_ids=frozenset(attention.SCOPES)),
    Case("attention fwd d128 causal", attention.attn_fwd, ATTN_SIG,
         {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True},
         num_warps=8, num_stages=2, scope_ids=frozenset(attention.SCOPES)),
]
