"""Trace a fused attention kernel's scopes on every warp and write a report.

    python3 examples/cuda/trace/trace_triton_attention.py --report trace.html   # for people
    python3 examples/cuda/trace/trace_triton_attention.py --report trace.json   # for agents
    gwatch show trace.json

With an NVIDIA GPU the kernel is traced on the GPU (tier "ptx"). Without one it runs on
Triton's interpreter (TRITON_INTERPRET=1, tier "interpreter": host times per program
instance, not GPU times) at small default sizes. Setting TRITON_INTERPRET=1 yourself
picks the interpreter on a GPU machine too.
"""
import argparse
import math
import os

import torch

ON_GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"
if not ON_GPU:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: kernels then run on the CPU

import gwatch.cuda.xtrace.triton as gw_trace
import gwatch.libpygwatch as pygwatch
from gwatch.cuda.xtrace import do_trace

pygwatch.init_cupti_hooks()  # before the first module load

import triton
import triton.language as tl
from gwatch.common.format import File
from gwatch.cuda.xtrace.format import Section_IntraKernelTrace

SCOPES = {100: "load_kv", 101: "dot_qk", 102: "softmax", 103: "dot_pv"}


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, stride_z, stride_h, stride_n, H, N_CTX,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    # q, k, v and out are contiguous (batch, heads, n_ctx, head_dim) tensors: one set of strides.
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    base = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_n + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp2 below
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in tl.range(0, hi, BLOCK_N):
        gw_trace.scope_start(100)
        k = tl.load(K + base + (start_n + offs_n)[None, :] * stride_n + offs_d[:, None])
        v = tl.load(V + base + (start_n + offs_n)[:, None] * stride_n + offs_d[None, :])
        gw_trace.scope_end(100)
        gw_trace.scope_start(101)
        qk = tl.dot(q, k)
        gw_trace.scope_end(101)
        gw_trace.scope_start(102)
        qk = qk * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_ij
        gw_trace.scope_end(102)
        gw_trace.scope_start(103)
        acc = tl.dot(p.to(v.dtype), v, acc)
        gw_trace.scope_end(103)
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_n + offs_d[None, :], acc.to(Out.dtype.element_ty))


def attention(q, k, v, causal: bool, block_m: int, block_n: int):
    batch, heads, n_ctx, head_dim = q.shape
    out = torch.empty_like(q)
    grid = (n_ctx // block_m, batch * heads)
    attn_fwd[grid](q, k, v, out, 1.0 / math.sqrt(head_dim), q.stride(0), q.stride(1), q.stride(2), heads, n_ctx,
                   HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                   num_warps=8 if head_dim >= 128 else 4, num_stages=3 if head_dim <= 64 else 2)
    return out


def reference(q, k, v, causal: bool):
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).tril().logical_not(), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.float()


def parse_args(argv=None):
    # The interpreter runs every program instance in Python: keep its sizes small.
    small = not ON_GPU
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", default="trace.html",
                        help="where to write: .html, .json (agent archive) or .perfetto.json (default trace.html)")
    parser.add_argument("--batch", type=int, default=1 if small else 2)
    parser.add_argument("--heads", type=int, default=2 if small else 4)
    parser.add_argument("--n-ctx", type=int, default=128 if small else 4096)
    parser.add_argument("--head-dim", type=int, default=32 if small else 64)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--block-m", type=int, default=32 if small else 128)
    parser.add_argument("--block-n", type=int, default=32 if small else 64)
    args = parser.parse_args(argv)
    if args.n_ctx % args.block_m or args.n_ctx % args.block_n:
        parser.error(f"--n-ctx {args.n_ctx} must be a multiple of --block-m and --block-n")
    return args


def report_title(args) -> str:
    """What was traced, as the report's title."""
    causal = ", causal" if args.causal else ""
    return (f"Attention forward (attn_fwd): batch {args.batch}, {args.heads} heads, context {args.n_ctx}, "
            f"head dim {args.head_dim}{causal}")


def main(argv=None) -> None:
    args = parse_args(argv)
    device, dtype = ("cuda", torch.float16) if ON_GPU else ("cpu", torch.float32)
    torch.manual_seed(0)
    q, k, v = (torch.randn(args.batch, args.heads, args.n_ctx, args.head_dim, device=device, dtype=dtype)
               for _ in range(3))
    out = {}
    result = do_trace(fn=lambda: out.setdefault("o", attention(q, k, v, args.causal, args.block_m, args.block_n)),
                      kernel_name_pattern=r".*attn_fwd.*", dsl="triton",
                      scope_name_map=SCOPES, instrumentation_tier="ptx" if ON_GPU else "interpreter")
    error = (out["o"].float() - reference(q, k, v, args.causal)).abs().max().item()

    section = Section_IntraKernelTrace()
    section.add_run(result)
    report = File(title=report_title(args))
    report.add_section(section)
    report.render(args.report)
    print(f"{result} (max abs error {error:.2e})")
    print(f"wrote {os.path.abspath(args.report)}")


if __name__ == "__main__":
    main()
