"""Fused attention forward in Triton, with gwatch scopes load_kv, dot_qk, softmax, dot_pv."""
import math

import torch
import triton
import triton.language as tl

from gwatch_nb.triton import scope_end, scope_start

SCOPES = {100: "load_kv", 101: "dot_qk", 102: "softmax", 103: "dot_pv"}


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale,
             stride_qz, stride_qh, stride_qm, stride_qd,
             stride_kz, stride_kh, stride_kn, stride_kd,
             stride_vz, stride_vh, stride_vn, stride_vd,
             stride_oz, stride_oh, stride_om, stride_od,
             H, N_CTX,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    q_base = Q + off_z * stride_qz + off_h * stride_qh
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # fold log2(e): exp2 below
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in tl.range(0, hi, BLOCK_N):
        scope_start(100)
        k = tl.load(k_base + (start_n + offs_n)[None, :] * stride_kn + offs_d[:, None] * stride_kd)
        v = tl.load(v_base + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vd)
        scope_end(100)
        scope_start(101)
        qk = tl.dot(q, k)
        scope_end(101)
        scope_start(102)
        qk = qk * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_ij
        scope_end(102)
        scope_start(103)
        acc = tl.dot(p.to(v.dtype), v, acc)
        scope_end(103)
    acc = acc / l_i[:, None]
    o_base = Out + off_z * stride_oz + off_h * stride_oh
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od, acc.to(Out.dtype.element_ty))


def attention(q, k, v, causal=False, sm_scale=None, block_m=128, block_n=64, num_warps=None, num_stages=None):
    """softmax(q k^T * sm_scale) v for (batch, heads, n_ctx, head_dim) tensors."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    assert N_CTX % block_m == 0 and N_CTX % block_n == 0
    sm_scale = 1.0 / math.sqrt(HEAD_DIM) if sm_scale is None else sm_scale
    out = torch.empty_like(q)
    num_warps = num_warps or (8 if HEAD_DIM >= 128 else 4)
    num_stages = num_stages or (3 if HEAD_DIM <= 64 else 2)
    grid = (N_CTX // block_m, Z * H)
    attn_fwd[grid](q, k, v, out, sm_scale, *q.stride(), *k.stride(), *v.stride(), *out.stride(), H, N_CTX,
                   HEAD_DIM=HEAD_DIM, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                   num_warps=num_warps, num_stages=num_stages)
    return out


def reference(q, k, v, causal=False, sm_scale=None):
    """The same attention in float32 torch, for checking results."""
    sm_scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = (q.float() @ k.float().transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).tril().logical_not(), float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)


def events_per_warp(n_ctx: int, block_m: int = 128, block_n: int = 64, causal: bool = False, start_m: int = 0) -> int:
    """Events each warp of row block ``start_m`` records: 4 scopes × 2 per K/V step."""
    hi = (start_m + 1) * block_m if causal else n_ctx
    return 8 * ((hi + block_n - 1) // block_n)
