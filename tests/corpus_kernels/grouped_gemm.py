"""Grouped GEMM: one launch multiplies a list of fp16 problems of different shapes.
A fixed grid of programs takes the output tiles of all problems in turn (tile i goes to
program i % PROGRAMS); the problems' addresses, sizes and leading dimensions come
in as device arrays.

Scopes: "tile" around each output tile, nesting "load" and "dot" per K step and
"store"."""
import numpy as np
import torch
import triton
import triton.language as tl

from corpus_kernels import Workload, cdiv
from gwatch_nb.triton import scope_end, scope_start

SCOPES = {500: "tile", 501: "load", 502: "dot", 503: "store"}
BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
PROGRAMS = 32
NUM_WARPS, NUM_STAGES = 4, 3


@triton.jit
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_sizes, group_lds, group_count,
                          PROGRAMS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    tiles_before = 0
    for g in range(group_count):
        m = tl.load(group_sizes + g * 3)
        n = tl.load(group_sizes + g * 3 + 1)
        k = tl.load(group_sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BLOCK_N)
        tiles = tl.cdiv(m, BLOCK_M) * tiles_n
        while tile >= tiles_before and tile < tiles_before + tiles:
            scope_start(500)
            lda = tl.load(group_lds + g * 3)
            ldb = tl.load(group_lds + g * 3 + 1)
            ldc = tl.load(group_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            local = tile - tiles_before
            offs_m = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            offs_k = tl.arange(0, BLOCK_K)
            a_ptrs = a_ptr + offs_m[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_n[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_K)):
                scope_start(501)
                k_left = k - kk * BLOCK_K
                a = tl.load(a_ptrs, mask=(offs_m[:, None] < m) & (offs_k[None, :] < k_left), other=0.0)
                b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < n), other=0.0)
                scope_end(501)
                scope_start(502)
                acc = tl.dot(a, b, acc)
                scope_end(502)
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K * ldb
            scope_start(503)
            c_ptrs = c_ptr + offs_m[:, None] * ldc + offs_n[None, :]
            tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < m) & (offs_n[None, :] < n))
            scope_end(503)
            scope_end(500)
            tile += PROGRAMS
        tiles_before += tiles


def grouped_matmul(a_list, b_list):
    """[a @ b for a, b in zip(a_list, b_list)] in one launch (fp16, row-major)."""
    device = a_list[0].device
    c_list = [torch.empty((a.shape[0], b.shape[1]), device=device, dtype=torch.float16)
              for a, b in zip(a_list, b_list)]
    pointers = [torch.tensor([t.data_ptr() for t in ts], device=device, dtype=torch.int64)
                for ts in (a_list, b_list, c_list)]
    sizes = torch.tensor([[a.shape[0], b.shape[1], a.shape[1]] for a, b in zip(a_list, b_list)],
                         device=device, dtype=torch.int32)
    lds = torch.tensor([[a.stride(0), b.stride(0), c.stride(0)] for a, b, c in zip(a_list, b_list, c_list)],
                       device=device, dtype=torch.int32)
    grouped_matmul_kernel[(PROGRAMS,)](*pointers, sizes, lds, len(a_list), PROGRAMS=PROGRAMS, **BLOCKS,
                                       num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return tuple(c_list)


SHAPES = [(512, 256, 384), (200, 320, 100), (1000, 128, 256), (64, 64, 64)]  # (M, N, K) of each problem


def events_per_warp(warps) -> np.ndarray:
    """Walk each program's tiles as the kernel does: tile and store, plus 2 x K steps."""
    per_tile = []
    for m, n, k in SHAPES:
        tiles = cdiv(m, BLOCKS["BLOCK_M"]) * cdiv(n, BLOCKS["BLOCK_N"])
        per_tile += [4 + 4 * cdiv(k, BLOCKS["BLOCK_K"])] * tiles
    per_program = [sum(per_tile[pid::PROGRAMS]) for pid in range(PROGRAMS)]
    return np.array([per_program[pid] for pid in warps.block_x])


def workload(device) -> Workload:
    torch.manual_seed(6)
    a_list = [torch.randn(m, k, device=device, dtype=torch.float16) for m, n, k in SHAPES]
    b_list = [torch.randn(k, n, device=device, dtype=torch.float16) for m, n, k in SHAPES]
    reference = tuple((a.float() @ b.float()).half() for a, b in zip(a_list, b_list))
    return Workload(lambda: grouped_matmul(a_list, b_list), reference, atol=0.05, rtol=1e-2,
                    events_per_warp=events_per_warp)
