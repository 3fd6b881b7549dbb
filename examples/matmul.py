"""A Triton fp16 matmul with gwatch scopes around the loads, the dot and the store."""
import torch
import triton
import triton.language as tl

from gwatch_nb.triton import scope_end, scope_start

SCOPES = {100: "load", 101: "dot", 102: "store"}


@triton.jit
def matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        scope_start(100)
        a = tl.load(A + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak)
        b = tl.load(B + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        scope_end(100)
        scope_start(101)
        acc = tl.dot(a, b, acc)
        scope_end(101)
    scope_start(102)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16))
    scope_end(102)


def matmul(a: torch.Tensor, b: torch.Tensor, block_m=128, block_n=128, block_k=64, num_warps=8, num_stages=3):
    """C = A @ B for fp16 matrices whose sizes are multiples of the blocks."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2 and M % block_m == 0 and N % block_n == 0 and K % block_k == 0
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (M // block_m, N // block_n)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=num_warps,
                        num_stages=num_stages)
    return c


def events_per_warp(K: int, block_k: int = 64) -> int:
    """Events every warp records: start+end of load and dot per K step, plus the store."""
    return 4 * (K // block_k) + 2
