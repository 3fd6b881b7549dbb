"""Small kernels that pin down the basic shapes: a vector add with and without markers,
scopes nested three deep in nested loops, a kernel whose later programs return
before their second scope, scopes around code ptxas makes a subroutine of, and a scope in a
loop of constant trip count, which Triton unrolls into four copies."""
import numpy as np
import torch
import triton
import triton.language as tl

from corpus_kernels import Workload, cdiv
from gwatch_nb.triton import scope_end, scope_start

VECTOR_ADD_SCOPES = {1: "load", 2: "store"}
NESTED_SCOPES = {10: "program", 11: "row", 12: "column_block"}
EARLY_RETURN_SCOPES = {20: "load", 21: "store"}
CLOSED_RETURN_SCOPES = {22: "program", 23: "store"}
DIVIDE_SCOPES = {24: "program", 25: "by_d", 26: "by_e"}


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


@triton.jit
def closed_before_return(X, Out, N, LIMIT, BLOCK: tl.constexpr):
    """A whole-program scope closed before the early `return` too, as a user writes it: two
    ends of one start, on alternative paths."""
    scope_start(22)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    if pid >= LIMIT:
        scope_end(22)
        return
    scope_start(23)
    tl.store(Out + offs, x * 2.0, mask=offs < N)
    scope_end(23)
    scope_end(22)


@triton.jit
def divide_in_scopes(X, Q, R, N, D, E, BLOCK: tl.constexpr):
    """64-bit divisions by runtime values in two scopes: ptxas calls one subroutine, after the
    kernel's last EXIT, from both (CALL.REL.NOINC ... RET.REL.NODEC), as in vLLM's fused MoE."""
    scope_start(24)
    pid = tl.program_id(0)
    if pid * BLOCK >= N:
        scope_end(24)
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    scope_start(25)
    q = x // D
    scope_end(25)
    scope_start(26)
    r = x // E
    scope_end(26)
    tl.store(Q + offs, q, mask=offs < N)
    tl.store(R + offs, r, mask=offs < N)
    scope_end(24)


VECTOR_BLOCK, NESTED_BLOCK, EARLY_BLOCK = 1024, 128, 256


@triton.jit
def unrolled_taps(x_ptr, out_ptr, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for tap in range(TAPS):  # a constant trip count: the compiler unrolls it
        scope_start(2)
        acc += tl.load(x_ptr + offsets + tap) * (tap + 1)
        scope_end(2)
    tl.store(out_ptr + offsets, acc)


def _vector_inputs(device):
    torch.manual_seed(9)
    n = 98_432  # not a multiple of the block: the last program is masked
    return torch.randn(n, device=device), torch.randn(n, device=device)


def _vector_add_workload(kernel, device, events_per_warp) -> Workload:
    x, y = _vector_inputs(device)

    def launch():
        out = torch.empty_like(x)
        kernel[(cdiv(len(x), VECTOR_BLOCK),)](x, y, out, len(x), BLOCK=VECTOR_BLOCK, num_warps=4)
        return (out,)
    return Workload(launch, (x + y,), atol=0, rtol=0, events_per_warp=events_per_warp)


def vector_add_workload(device) -> Workload:
    return _vector_add_workload(vector_add, device, None)


def vector_add_marked_workload(device) -> Workload:
    return _vector_add_workload(vector_add_marked, device, lambda warps: np.full(len(warps), 4))


def nested_loops_workload(device) -> Workload:
    torch.manual_seed(10)
    programs, rows, cols = 40, 6, 300
    x = torch.randn(programs, rows, cols, device=device)

    def launch():
        out = torch.empty(programs, NESTED_BLOCK, device=device)
        nested_loops[(programs,)](x, out, rows, cols, BLOCK=NESTED_BLOCK, num_warps=4)
        return (out,)
    blocks = cdiv(cols, NESTED_BLOCK)
    padded = torch.nn.functional.pad(x.double(), (0, blocks * NESTED_BLOCK - cols))
    reference = padded.reshape(programs, rows, blocks, NESTED_BLOCK).sum(dim=(1, 2)).float()
    return Workload(launch, (reference,), atol=1e-4, rtol=1e-5,
                    events_per_warp=lambda warps: np.full(len(warps), 2 + rows * (2 + 2 * blocks)))


def _returning_workload(kernel, device, seed: int) -> Workload:
    """Programs past LIMIT return early: they write nothing and record one scope of two."""
    torch.manual_seed(seed)
    n, limit = 10_000, 25
    x = torch.randn(n, device=device)

    def launch():
        out = torch.full_like(x, -1.0)
        kernel[(cdiv(n, EARLY_BLOCK),)](x, out, n, limit, BLOCK=EARLY_BLOCK, num_warps=4)
        return (out,)
    reference = torch.full_like(x, -1.0)
    reference[:limit * EARLY_BLOCK] = 2 * x[:limit * EARLY_BLOCK]
    return Workload(launch, (reference,), atol=0, rtol=0,
                    events_per_warp=lambda warps: np.where(warps.block_x.to_numpy() < limit, 4, 2))


def early_return_workload(device) -> Workload:
    return _returning_workload(early_return, device, 11)


def closed_before_return_workload(device) -> Workload:
    return _returning_workload(closed_before_return, device, 12)
