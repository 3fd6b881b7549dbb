"""flash-linear-attention (fla-org/flash-linear-attention): Triton kernels for linear attention models."""
import math

import torch

from third_party import Case, Source

REPO, COMMIT, LICENCE = "fla-org/flash-linear-attention", "bc3b101dcb713ddc5bd8924b66754eb68b5ccf89", "MIT"

SOURCES = [
    Source("fla/causal_conv1d", REPO, COMMIT, "fla/modules/conv/triton/kernels.py", LICENCE,
           ("causal_conv1d_fwd_kernel",)),
    Source("fla/l2norm", REPO, COMMIT, "fla/modules/l2norm.py", LICENCE,
           ("l2norm_fwd_kernel l2norm_bwd_kernel",)),
    Source("fla/cumsum", REPO, COMMIT, "fla/ops/utils/cumsum.py", LICENCE,
           ("chunk_local_cumsum_vector_kernel",)),
    Source("fla/fused_recurrent", REPO, COMMIT, "fla/ops/common/fused_recurrent.py", LICENCE,
           ("fused_recurrent_fwd_kernel",)),
    Source("fla/layernorm_gated", REPO, COMMIT, "fla/modules/layernorm_gated.py", LICENCE,
           ("layer_norm_fwd_kernel layer_norm_bwd_kernel",)),
    Source("fla/chunk_h", REPO, COMMIT, "fla/ops/common/chunk_h.py", LICENCE,
           ("chunk_fwd_kernel_h",)),
]


def _cu_seqlens(lengths, device):
    return torch.tensor([0] + list(lengths), device=device).cumsum(0)


def _chunk_indices(lengths, chunk, device):
    """(sequence, chunk within it) for every chunk of packed sequences, as fla's prepare_chunk_indices gives."""
    pairs = [(n, i) for n, length in enumerate(lengths) for i in range(-(-length // chunk))]
    return torch.tensor(pairs, dtype=torch.int32, device=device).view(-1, 2)


def _causal_conv1d_fwd(module, device):
    import triton
    torch.manual_seed(0)
    lengths = [300, 1000, 57, 700]  # packed sequences of a batch (cu_seqlens), as fla's varlen training runs
    T, D, W, BT = sum(lengths), 2048, 4, 64
    x = torch.randn(1, T, D, device=device, dtype=torch.bfloat16)
    weight = torch.randn(D, W, device=device, dtype=torch.bfloat16) * 0.5
    bias = torch.randn(D, device=device, dtype=torch.bfloat16)
    residual = torch.randn(1, T, D, device=device, dtype=torch.bfloat16)
    initial_state = torch.randn(len(lengths), D, W, device=device, dtype=torch.bfloat16)
    cu_seqlens = _cu_seqlens(lengths, device)
    chunk_indices = _chunk_indices(lengths, BT, device)
    y = torch.empty_like(x)
    BD = 64  # one config of fla's autotune over BD in (16, 32, 64, 128) x num_warps

    def launch():
        module.causal_conv1d_fwd_kernel[(triton.cdiv(D, BD), len(chunk_indices), 1)](
            x=x, y=y, weight=weight, bias=bias, residual=residual, cu_seqlens=cu_seqlens,
            initial_state=initial_state, chunk_indices=chunk_indices, B=1, T=T,
            stride_x_n=x.stride(0), stride_x_t=x.stride(1), stride_x_d=x.stride(2),
            D=D, W=W, BT=BT, BW=triton.next_power_of_2(W), BD=BD, NB=triton.cdiv(T, 1024), ACTIVATION="silu",
            HAS_WEIGHT=True, HAS_BIAS=True, HAS_RESIDUAL=True, USE_INITIAL_STATE=True, IS_VARLEN=True,
            num_warps=4)
        return (y,)
    return launch


def _l2norm_inputs(device):
    torch.manual_seed(0)
    B, T, H, D = 3, 1001, 8, 128  # l2-normalised q of [B, T, H, D], flattened to rows
    return torch.randn(B * T * H, D, device=device, dtype=torch.bfloat16), D


def _l2norm_fwd(module, device):
    import triton
    x, D = _l2norm_inputs(device)
    rows = x.shape[0]
    y, rstd = torch.empty_like(x), torch.empty(rows, device=device, dtype=torch.float32)
    BT = 32  # one config of fla's autotune over BT x num_warps

    def launch():
        module.l2norm_fwd_kernel[(triton.cdiv(rows, BT),)](x=x, y=y, rstd=rstd, eps=1e-6, T=rows, D=D, BD=D,
                                                           NB=triton.cdiv(rows, 2048 * 32), BT=BT, num_warps=4)
        return y, rstd
    return launch


def _l2norm_bwd(module, device):
    import triton
    x, D = _l2norm_inputs(device)
    rows = x.shape[0]
    rstd = 1 / torch.sqrt(x.float().square().sum(-1) + 1e-6)
    y = (x.float() * rstd[:, None]).to(x.dtype)
    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    BT = 32  # one config of fla's autotune over BT x num_warps

    def launch():
        module.l2norm_bwd_kernel[(triton.cdiv(rows, BT),)](y=y, rstd=rstd, dy=dy, dx=dx, eps=1e-6, T=rows, D=D, BD=D,
                                                           NB=triton.cdiv(rows, 2048 * 32), BT=BT, num_warps=4)
        return (dx,)
    return launch


def _chunk_local_cumsum_vector(module, device):
    import triton
    torch.manual_seed(0)
    lengths = [1000, 333, 2048, 515]
    T, H, S, BT = sum(lengths), 16, 128, 64  # GLA's per-key log decay, [1, T, H, K], chunk-local cumsum
    g = -torch.rand(1, T, H, S, device=device, dtype=torch.float32)
    out = torch.empty_like(g)
    cu_seqlens = _cu_seqlens(lengths, device)
    chunk_indices = _chunk_indices(lengths, BT, device)
    BS = 64  # one config of fla's autotune over BS in (32, 64) x num_warps

    def launch():
        module.chunk_local_cumsum_vector_kernel[(triton.cdiv(S, BS), len(chunk_indices), H)](
            s=g, o=out, scale=None, cu_seqlens=cu_seqlens, chunk_indices=chunk_indices, T=T, B=1, H=H, S=S,
            BT=BT, BS=BS, REVERSE=False, HAS_SCALE=False, IS_VARLEN=True, num_warps=4)
        return (out,)
    return launch


def _fused_recurrent_simple_gla_fwd(module, device):
    torch.manual_seed(0)
    lengths = [48, 75, 17, 60]  # short packed sequences, where fla runs the recurrent form
    T, H, K, V = sum(lengths), 16, 128, 128
    q = torch.randn(1, T, H, K, device=device, dtype=torch.bfloat16)
    k = torch.randn(1, T, H, K, device=device, dtype=torch.bfloat16)
    v = torch.randn(1, T, H, V, device=device, dtype=torch.bfloat16)
    g = torch.nn.functional.logsigmoid(torch.randn(1, T, H, device=device, dtype=torch.float32))
    N = len(lengths)
    h0 = torch.randn(N, H, K, V, device=device, dtype=torch.float32)
    cu_seqlens = _cu_seqlens(lengths, device)
    BK, BV = 64, 64  # fla's fused_recurrent_fwd: min(next_power_of_2(K), 64)
    NK, NV = K // BK, V // BV
    o = torch.empty(NK, 1, T, H, V, device=device, dtype=torch.float32)
    ht = torch.empty(N, H, K, V, device=device, dtype=torch.float32)

    def launch():
        module.fused_recurrent_fwd_kernel[(NV * NK * N * H,)](
            q=q, k=k, v=v, g=g, g_gamma=None, gk=None, gv=None, o=o, h0=h0, ht=ht, cu_seqlens=cu_seqlens,
            scale=K ** -0.5, T=T, B=1, H=H, K=K, V=V, BK=BK, BV=BV, REVERSE=False, USE_G=True, USE_G_GAMMA=False,
            USE_GK=False, USE_GV=False, USE_INITIAL_STATE=True, STORE_FINAL_STATE=True, IS_VARLEN=True,
            STATE_V_FIRST=False, num_warps=4)  # one config of fla's autotune over num_warps in (4, 8)
        return o, ht
    return launch


def _rms_norm_gated_fwd(module, device):
    import triton
    torch.manual_seed(0)
    M, N = 4096, 1536  # Mamba2-130m's gated RMSNorm (d_inner 1536, one group, norm after the gate)
    x = torch.randn(M, N, device=device, dtype=torch.bfloat16)
    z = torch.randn(M, N, device=device, dtype=torch.bfloat16)
    weight = torch.randn(N, device=device, dtype=torch.float32)
    out = torch.empty_like(x)
    rstd = torch.empty(M, device=device, dtype=torch.float32)
    BLOCK_N = triton.next_power_of_2(N)

    def launch():
        module.layer_norm_fwd_kernel[(M, 1)](
            x, out, weight, None, z, None, rstd, x.stride(0), out.stride(0), z.stride(0), M, N, 1e-6,
            BLOCK_N=BLOCK_N, HAS_BIAS=False, HAS_Z=True, NORM_BEFORE_GATE=False, IS_RMS_NORM=True,
            num_warps=min(max(BLOCK_N // 256, 1), 8))  # fla's layer_norm_fwd
        return out, rstd
    return launch


def _layer_norm_gated_bwd(module, device):
    import triton
    torch.manual_seed(0)
    M, N, group = 4096, 1536, 768  # gated LayerNorm in two groups, norm before the gate, with bias
    ngroups = N // group
    x = torch.randn(M, N, device=device, dtype=torch.bfloat16)
    z = torch.randn(M, N, device=device, dtype=torch.bfloat16)
    dy = torch.randn(M, N, device=device, dtype=torch.bfloat16)
    weight = torch.randn(N, device=device, dtype=torch.float32)
    bias = torch.randn(N, device=device, dtype=torch.float32)
    xg = x.float().view(M, ngroups, group)
    mean = xg.mean(-1).t().contiguous().view(-1)  # [ngroups * M], group-major, as the forward stores it
    rstd = (1 / torch.sqrt(xg.var(-1, unbiased=False) + 1e-6)).t().contiguous().view(-1)
    BLOCK_N = triton.next_power_of_2(group)
    num_warps = min(max(BLOCK_N // 256, 1), 8)
    nrow_groups = math.ceil(132 * math.ceil(4 / num_warps) / ngroups)  # fla's layer_norm_bwd, on the H200's 132 SMs
    rows_per_program = math.ceil(M / nrow_groups)
    dx, dz = torch.empty_like(x), torch.empty_like(z)
    dw = torch.empty(nrow_groups, N, device=device, dtype=torch.float32)
    db = torch.empty(nrow_groups, N, device=device, dtype=torch.float32)

    def launch():
        module.layer_norm_bwd_kernel[(nrow_groups, ngroups)](
            x, weight, bias, z, None, dy, dx, dw, db, dz, mean, rstd,
            x.stride(0), z.stride(0), 0, dy.stride(0), dx.stride(0), dz.stride(0), dw.stride(0), db.stride(0),
            M, group, 1e-6, rows_per_program, BLOCK_N=BLOCK_N, NORM_BEFORE_GATE=True, IS_RMS_NORM=False,
            HAS_BIAS=True, HAS_Z=True, RECOMPUTE_OUTPUT=False, num_warps=num_warps)
        return dx, dz, dw, db
    return launch


def _chunk_fwd_h(module, device):
    import triton
    torch.manual_seed(0)
    B, T, H, K, V, BT, BS = 2, 1000, 16, 128, 128, 64, 128  # chunk states of simple GLA, stored every 2 chunks
    k = torch.randn(B, T, H, K, device=device, dtype=torch.bfloat16)
    v = torch.randn(B, T, H, V, device=device, dtype=torch.bfloat16)
    decay = torch.nn.functional.logsigmoid(torch.randn(B, T, H, device=device)) / math.log(2)  # log2-space, as fla's chunk ops keep g
    pad = (-T) % BT
    g = torch.nn.functional.pad(decay, (0, 0, 0, pad)).view(B, -1, BT, H).cumsum(2).view(B, -1, H)[:, :T].contiguous()
    h0 = torch.randn(B, H, K, V, device=device, dtype=torch.float32)
    NS = triton.cdiv(T, BS)
    h = torch.empty(B, NS, H, K, V, device=device, dtype=torch.bfloat16)
    ht = torch.empty(B, H, K, V, device=device, dtype=torch.float32)
    BK, BV = 64, 64  # one config of fla's autotune over BK, BV, num_warps, num_stages

    def launch():
        module.chunk_fwd_kernel_h[(triton.cdiv(K, BK), triton.cdiv(V, BV), B * H)](
            k=k, v=v, h=h, g=g, g_gamma=None, gk=None, gv=None, h0=h0, ht=ht, cu_seqlens=None, split_offsets=None,
            T=T, H=H, K=K, V=V, BT=BT, BS=BS, BK=BK, BV=BV, USE_G=True, USE_G_GAMMA=False, USE_GK=False,
            USE_GV=False, USE_INITIAL_STATE=True, STORE_FINAL_STATE=True, IS_VARLEN=False, STATE_V_FIRST=False,
            num_warps=4, num_stages=2)
        return h, ht
    return launch


CASES = [
    Case("fla/causal_conv1d_fwd", "fla/causal_conv1d", r"causal_conv1d_fwd_kernel",
         {1: "program", 2: "varlen_bounds", 3: "load_w", 4: "conv", 5: "tap", 6: "load_x", 7: "weigh",
          8: "conv_first_chunk", 9: "tap_first_chunk", 10: "load_x_state", 11: "weigh_first_chunk",
          12: "load_bias", 13: "load_residual", 14: "store"},
         _causal_conv1d_fwd),
    Case("fla/l2norm_fwd", "fla/l2norm", r"l2norm_fwd_kernel", {1: "program", 2: "load", 3: "norm", 4: "store"},
         _l2norm_fwd),
    Case("fla/l2norm_bwd", "fla/l2norm", r"l2norm_bwd_kernel", {1: "program", 2: "load", 3: "grad", 4: "store"},
         _l2norm_bwd),
    Case("fla/chunk_local_cumsum_vector", "fla/cumsum", r"chunk_local_cumsum_vector_kernel",
         {1: "program", 2: "varlen_bounds", 3: "load", 4: "cumsum", 5: "store"}, _chunk_local_cumsum_vector),
    Case("fla/fused_recurrent_simple_gla_fwd", "fla/fused_recurrent", r"fused_recurrent_fwd_kernel",
         {1: "program", 2: "varlen_bounds", 3: "load_h0", 4: "step", 5: "load_qkv", 6: "decay", 7: "update",
          8: "store_o", 9: "store_ht"},
         _fused_recurrent_simple_gla_fwd),
    Case("fla/rms_norm_gated_fwd", "fla/layernorm_gated", r"layer_norm_fwd_kernel",
         {1: "program", 2: "load_xz", 3: "variance", 4: "store_rstd", 5: "load_w", 6: "store"}, _rms_norm_gated_fwd),
    Case("fla/layer_norm_gated_bwd", "fla/layernorm_gated", r"layer_norm_bwd_kernel",
         {1: "program", 2: "load_wb", 3: "row", 4: "load", 5: "gate", 6: "reduce", 7: "store_dx", 8: "store_dwdb"},
         _layer_norm_gated_bwd),
    Case("fla/chunk_fwd_h", "fla/chunk_h", r"chunk_fwd_kernel_h",
         {1: "program", 2: "load_h0", 3: "chunk", 4: "store_h", 5: "load_kv", 6: "decay", 7: "dot", 8: "store_ht"},
         _chunk_fwd_h),
]
