"""Flash-attention backward for (batch, heads, n_ctx, head_dim) fp16 tensors, causal or
not, in two kernels that recompute the probabilities from the forward's log-sum-exp:
``attn_bwd_dkdv`` keeps a block of keys and walks the queries, ``attn_bwd_dq`` keeps a
block of queries and walks the keys. Neither uses atomics, so results are reproducible.

Scopes: "step" around each block of the walk, nesting "load", "p" (q k^T and the
recomputed softmax), "dv" (p^T dO), "ds" (dO v^T and the softmax gradient), "dk" / "dq"."""
import math

import numpy as np
import torch
import triton
import triton.language as tl

from corpus_kernels import Workload
from gwatch_nb.triton import scope_end, scope_start

DKDV_SCOPES = {600: "step", 601: "load", 602: "p", 603: "dv", 604: "ds", 605: "dk"}
DQ_SCOPES = {610: "step", 611: "load", 612: "p", 613: "ds", 614: "dq"}
HEAD_DIM, BLOCK_M, BLOCK_N = 64, 64, 64
NUM_WARPS, NUM_STAGES = 4, 2
LOG2E = 1.4426950408889634


@triton.jit
def attn_bwd_dkdv(Q, K, V, DO, LSE2, Delta, DK, DV, sm_scale, N_CTX,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * N_CTX * HEAD_DIM
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k = tl.load(K + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    v = tl.load(V + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    dk = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp2 below; LSE2 is in base 2 too
    lo = start_n if CAUSAL else 0  # earlier queries see none of these keys
    for start_m in range(lo, N_CTX, BLOCK_M):
        scope_start(600)
        scope_start(601)
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q_t = tl.load(Q + base + offs_m[None, :] * HEAD_DIM + offs_d[:, None])
        do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        lse = tl.load(LSE2 + bh * N_CTX + offs_m)
        delta = tl.load(Delta + bh * N_CTX + offs_m)
        scope_end(601)
        scope_start(602)
        p_t = tl.math.exp2(tl.dot(k, q_t) * qk_scale - lse[None, :])
        if CAUSAL:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        scope_end(602)
        scope_start(603)
        dv = tl.dot(p_t.to(tl.float16), do, dv)
        scope_end(603)
        scope_start(604)
        ds_t = p_t * (tl.dot(v, tl.trans(do)) - delta[None, :])
        scope_end(604)
        scope_start(605)
        dk = tl.dot(ds_t.to(tl.float16), tl.trans(q_t), dk)
        scope_end(605)
        scope_end(600)
    tl.store(DK + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], (dk * sm_scale).to(tl.float16))
    tl.store(DV + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dv.to(tl.float16))


@triton.jit
def attn_bwd_dq(Q, K, V, DO, LSE2, Delta, DQ, sm_scale, N_CTX,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    lse = tl.load(LSE2 + bh * N_CTX + offs_m)
    delta = tl.load(Delta + bh * N_CTX + offs_m)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = start_m + BLOCK_M if CAUSAL else N_CTX  # later keys are masked for every query here
    for start_n in range(0, hi, BLOCK_N):
        scope_start(610)
        scope_start(611)
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = tl.load(K + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])
        v_t = tl.load(V + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])
        scope_end(611)
        scope_start(612)
        p = tl.math.exp2(tl.dot(q, k_t) * qk_scale - lse[:, None])
        if CAUSAL:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        scope_end(612)
        scope_start(613)
        ds = p * (tl.dot(do, v_t) - delta[:, None])
        scope_end(613)
        scope_start(614)
        dq = tl.dot(ds.to(tl.float16), tl.trans(k_t), dq)
        scope_end(614)
        scope_end(610)
    tl.store(DQ + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], (dq * sm_scale).to(tl.float16))


def attention_backward(q, k, v, o, do, lse, causal):
    """dq, dk, dv for contiguous fp16 tensors; ``lse`` is the forward's natural-log
    log-sum-exp of each query row (float32, (batch, heads, n_ctx))."""
    Z, H, N_CTX, D = q.shape
    assert D == HEAD_DIM and N_CTX % BLOCK_M == 0 and N_CTX % BLOCK_N == 0 and BLOCK_M == BLOCK_N
    sm_scale = 1.0 / math.sqrt(D)
    lse2 = (lse * LOG2E).contiguous()
    delta = (o.float() * do.float()).sum(-1).contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    meta = dict(HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal, num_warps=NUM_WARPS,
                num_stages=NUM_STAGES)
    attn_bwd_dkdv[(N_CTX // BLOCK_N, Z * H)](q, k, v, do, lse2, delta, dk, dv, sm_scale, N_CTX, **meta)
    attn_bwd_dq[(N_CTX // BLOCK_M, Z * H)](q, k, v, do, lse2, delta, dq, sm_scale, N_CTX, **meta)
    return dq, dk, dv


Z, H, N_CTX = 2, 3, 512


def _workload(device, causal, events_per_warp) -> Workload:
    torch.manual_seed(7)
    q, k, v, do = (torch.randn(Z, H, N_CTX, HEAD_DIM, device=device, dtype=torch.float16) for _ in range(4))
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    scores = qf @ kf.transpose(-1, -2) / math.sqrt(HEAD_DIM)
    if causal:
        scores = scores.masked_fill(torch.ones(N_CTX, N_CTX, dtype=torch.bool, device=device).triu(1),
                                    float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vf
    out.backward(do.float())
    o, lse = out.detach().half(), torch.logsumexp(scores.detach(), dim=-1)
    reference = (qf.grad.half(), kf.grad.half(), vf.grad.half())
    return Workload(lambda: attention_backward(q, k, v, o, do, lse, causal), reference, atol=2e-2, rtol=1e-2,
                    events_per_warp=events_per_warp)


def dkdv_workload(device, causal=True) -> Workload:
    def events(warps):  # 12 per query block from the first one that can see this key block
        first = warps.block_x.to_numpy() * BLOCK_N * int(causal)
        return 12 * ((N_CTX - first) // BLOCK_M)
    return _workload(device, causal, events)


def dq_workload(device, causal=True) -> Workload:
    def events(warps):  # 10 per key block up to this query block's last row
        last = np.where(causal, (warps.block_x.to_numpy() + 1) * BLOCK_M, N_CTX)
        return 10 * (last // BLOCK_N)
    return _workload(device, causal, events)
