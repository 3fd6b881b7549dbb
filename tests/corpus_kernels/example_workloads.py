"""Workloads for the kernels of examples/ (matmul.py and attention.py)."""
import numpy as np
import torch

from examples import attention
from examples import matmul
from corpus_kernels import Workload


def matmul_workload(device) -> Workload:
    torch.manual_seed(12)
    a = torch.randn(512, 256, device=device, dtype=torch.float16)
    b = torch.randn(256, 384, device=device, dtype=torch.float16)
    return Workload(lambda: (matmul.matmul(a, b),), ((a.float() @ b.float()).half(),), atol=0.05, rtol=1e-2,
                    events_per_warp=lambda warps: np.full(len(warps), matmul.events_per_warp(256)))


def attention_fwd_workload(device, head_dim, causal) -> Workload:
    torch.manual_seed(13)
    q, k, v = (torch.randn(2, 3, 512, head_dim, device=device, dtype=torch.float16) for _ in range(3))

    def events(warps):
        return np.array([attention.events_per_warp(512, causal=causal, start_m=m) for m in warps.block_x])
    return Workload(lambda: (attention.attention(q, k, v, causal=causal),),
                    (attention.reference(q, k, v, causal=causal),), atol=2e-2, rtol=0, events_per_warp=events)
