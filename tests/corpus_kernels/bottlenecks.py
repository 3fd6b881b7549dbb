"""Kernels each written to wait on one thing inside one scope, so that a stall sampler has a
known answer: a copy loop that waits on memory, a loop that waits at barriers, a dot loop
that waits on the tensor cores."""
import torch
import triton
import triton.language as tl

from gwatch_nb.triton import scope_end, scope_start

COPY_SCOPES = {1: "copy"}
BARRIER_SCOPES = {2: "arith", 3: "barrier"}
DOT_SCOPES = {4: "load", 5: "dot"}


@triton.jit
def copy_loop(X, Out, N, CHUNKS, BLOCK: tl.constexpr):
    """Each program copies CHUNKS blocks spaced a grid apart: every store waits on its load."""
    base = tl.program_id(0) * BLOCK
    stride = tl.num_programs(0) * BLOCK
    for c in range(CHUNKS):
        scope_start(1)
        offs = base + c * stride + tl.arange(0, BLOCK)
        tl.store(Out + offs, tl.load(X + offs, mask=offs < N), mask=offs < N)
        scope_end(1)


@triton.jit
def barrier_loop(X, Out, ROUNDS, BLOCK: tl.constexpr):
    """A little arithmetic, then a block-wide barrier, ROUNDS times: the warps wait for each other."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    for r in range(ROUNDS):
        scope_start(2)
        x = x * 1.0001 + 0.5
        scope_end(2)
        scope_start(3)
        tl.debug_barrier()
        scope_end(3)
    tl.store(Out + offs, x)


@triton.jit
def dot_loop(A, B, C, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
             REPEAT: tl.constexpr):
    """One tile of A times B, its K loop's dot repeated on the same tiles: the tensor cores bound it."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        scope_start(4)
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BLOCK_N * tl.num_programs(1) + rn[None, :])
        scope_end(4)
        scope_start(5)
        for _ in range(REPEAT):
            acc = tl.dot(a, b, acc)
        scope_end(5)
    tl.store(C + rm[:, None] * BLOCK_N * tl.num_programs(1) + rn[None, :], acc)


def run_copy(device="cuda", n=1 << 26, block=1024, chunks=16):
    x = torch.arange(n, device=device, dtype=torch.float32)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, block * chunks),)
    copy_loop[grid](x, out, n, chunks, BLOCK=block)
    return x, out


def run_barrier(device="cuda", programs=1056, block=1024, rounds=256):
    x = torch.rand(programs * block, device=device)
    out = torch.empty_like(x)
    barrier_loop[(programs,)](x, out, rounds, BLOCK=block, num_warps=8)
    return x, out


def run_dot(device="cuda", m=4096, n=4096, k=256, repeat=64):
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    b = torch.randn(k, n, device=device, dtype=torch.float16)
    c = torch.empty(m, n, device=device, dtype=torch.float32)
    dot_loop[(m // 128, n // 128)](a, b, c, k, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, REPEAT=repeat, num_warps=4)
    return a, b, c
