"""Triton's own tutorials (triton-lang/triton, python/tutorials/): the kernels Triton teaches with.

The repository is too large to mirror: each file was read at the commit named (the versions
the H200's Triton 3.6 builds) and kept under .corpus/original/."""
import torch

from third_party import Case, Source

REPO, LICENCE = "triton-lang/triton", "MIT"
C01 = "545699290b851e70231ee3017481851170f1583d"  # 01-vector-add.py, 05-layer-norm.py
C02 = "fd237c7cf9a7262f32fedbaa5027ab2736ead134"
C03 = "7649d87cce6c12361bb9da234b9b227b2880b499"  # 03-matrix-multiplication.py, 08-grouped-gemm.py
C04 = "7fd4724371b3a1ab786c0610df19c7683cb6a23b"
C06 = "003da478d84f5bb0f51b3988cf0ea0bbe60282b7"
C06B = "dc6ee3ed2cf9b2b436544d6153351f9bc679cc61"
C09 = "02936a198800b2c0180cf63f2a69e776bcca6d7d"
T = "python/tutorials/"

SOURCES = [
    Source("tutorials/01_vector_add", REPO, C01, T + "01-vector-add.py", LICENCE, ("add_kernel",)),
    Source("tutorials/02_fused_softmax", REPO, C02, T + "02-fused-softmax.py", LICENCE, ("softmax_kernel",)),
    Source("tutorials/03_matrix_multiplication", REPO, C03, T + "03-matrix-multiplication.py", LICENCE,
           ("matmul_kernel leaky_relu",)),
    Source("tutorials/04_low_memory_dropout", REPO, C04, T + "04-low-memory-dropout.py", LICENCE,
           ("_seeded_dropout",)),
    Source("tutorials/05_layer_norm", REPO, C01, T + "05-layer-norm.py", LICENCE,
           ("_layer_norm_fwd_fused _layer_norm_bwd_dx_fused _layer_norm_bwd_dwdb",)),
    # Two versions of 06: the block-pointer forward as of early 2025 (its successor at C06, a
    # single-loop CAUSAL variant, fails Triton 3.6's software pipeliner on sm_90 at every
    # num_stages >= 2), and C06's host tensor-descriptor (TMA) forward.
    Source("tutorials/06_fused_attention_block_ptr", REPO, C06B, T + "06-fused-attention.py", LICENCE,
           ("_attn_fwd_inner _attn_fwd",)),
    Source("tutorials/06_fused_attention", REPO, C06, T + "06-fused-attention.py", LICENCE,
           ("_attn_fwd_inner_tma _attn_fwd_tma",)),
    Source("tutorials/08_grouped_gemm", REPO, C03, T + "08-grouped-gemm.py", LICENCE,
           ("grouped_matmul_kernel grouped_matmul_tma_kernel",)),
    Source("tutorials/09_persistent_matmul", REPO, C09, T + "09-persistent-matmul.py", LICENCE,
           ("_matmul_launch_metadata _compute_pid matmul_kernel_persistent matmul_kernel_descriptor_persistent",)),
]



def _num_sms(device):
    """What the tutorials ask the driver; 132 (the H200) where there is no GPU."""
    return torch.cuda.get_device_properties(device).multi_processor_count if str(device).startswith("cuda") else 132


def _tma_allocator(device):
    """Device-side tensor descriptors need global scratch memory, as the tutorials set it."""
    import triton
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device=device, dtype=torch.int8))


def _vector_add(module, device):
    import triton
    torch.manual_seed(0)
    n = (1 << 22) + 3  # not a multiple of BLOCK_SIZE: the last program's mask cuts its tail
    x = torch.rand(n, device=device)
    y = torch.rand(n, device=device)
    out = torch.empty_like(x)

    def launch():
        module.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        return (out,)
    return launch


def _softmax(module, device):
    import triton
    torch.manual_seed(0)
    rows, cols = 8191, 781  # the tutorial's irregular width, with more rows than programs
    x = torch.randn(rows, cols, device=device)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    # The tutorial sizes its persistent grid from the compiled kernel's occupancy; fixed here
    # at 4 programs per SM, num_stages=4 as it picks on a GPU with more than 200 KB of shared memory.
    programs = min(4 * _num_sms(device), rows)

    def launch():
        module.softmax_kernel[(programs,)](y, x, x.stride(0), y.stride(0), rows, cols, block, 4, num_warps=8)
        return (y,)
    return launch


def _matmul(activation):
    def setup(module, device):
        import triton
        torch.manual_seed(0)
        M, N, K = 1800, 1800, 1000  # tails in M, N (the stores' masks) and K (the loads' masks)
        a = torch.randn((M, K), device=device, dtype=torch.float16)
        b = torch.randn((K, N), device=device, dtype=torch.float16)
        c = torch.empty((M, N), device=device, dtype=torch.float16)
        # The autotune list's first CUDA config in place of @triton.autotune.
        bm, bn, bk = 128, 256, 64

        def launch():
            module.matmul_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
                a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION=activation,
                num_stages=3, num_warps=8)
            return (c,)
        return launch
    return setup


def _seeded_dropout(module, device):
    import triton
    torch.manual_seed(0)
    n = (1 << 22) + 17
    x = torch.randn(n, device=device)
    out = torch.empty_like(x)

    def launch():
        module._seeded_dropout[(triton.cdiv(n, 1024),)](x, out, n, 0.5, 123, BLOCK_SIZE=1024)
        return (out,)
    return launch


LN_M, LN_N = 3000, 8000  # rows by a feature width not a power of two: every load and store masks


def _layer_norm_inputs(device):
    torch.manual_seed(0)
    x = -2.3 + 0.5 * torch.randn((LN_M, LN_N), device=device, dtype=torch.float16)
    w = torch.rand((LN_N,), device=device, dtype=torch.float16)
    b = torch.rand((LN_N,), device=device, dtype=torch.float16)
    return x, w, b


def _ln_block(x):
    import triton
    # LayerNorm.forward's heuristics: the whole row in one block, a warp per 256 elements (8 at most).
    block = min(65536 // x.element_size(), triton.next_power_of_2(LN_N))
    return block, min(max(block // 256, 1), 8)


def _layer_norm_fwd(module, device):
    x, w, b = _layer_norm_inputs(device)
    y = torch.empty_like(x)
    mean = torch.empty((LN_M,), dtype=torch.float32, device=device)
    rstd = torch.empty((LN_M,), dtype=torch.float32, device=device)
    block, warps = _ln_block(x)

    def launch():
        module._layer_norm_fwd_fused[(LN_M,)](x, y, w, b, mean, rstd, x.stride(0), LN_N, 1e-5,
                                              BLOCK_SIZE=block, num_warps=warps, num_ctas=1)
        return y, mean, rstd
    return launch


def _layer_norm_bwd_dx(module, device):
    x, w, _ = _layer_norm_inputs(device)
    dy = .1 * torch.randn_like(x)
    xf = x.float()
    mean = xf.mean(dim=1)
    rstd = 1 / torch.sqrt(xf.var(dim=1, unbiased=False) + 1e-5)
    group = 96  # LayerNorm.backward's GROUP_SIZE_M for N <= 8192
    locks = torch.zeros(2 * group, dtype=torch.int32, device=device)
    dw_part = torch.zeros((group, LN_N), dtype=x.dtype, device=device)
    db_part = torch.zeros((group, LN_N), dtype=x.dtype, device=device)
    dx = torch.empty_like(dy)
    block, warps = _ln_block(x)

    def launch():
        locks.zero_()  # the lock and count words, and the partial sums, start from zero each backward
        dw_part.zero_()
        db_part.zero_()
        module._layer_norm_bwd_dx_fused[(LN_M,)](dx, dy, dw_part, db_part, x, w, mean, rstd, locks, x.stride(0), LN_N,
                                                 BLOCK_SIZE_N=block, GROUP_SIZE_M=group, num_warps=warps)
        return dx, dw_part, db_part
    return launch


def _layer_norm_bwd_dwdb(module, device):
    import triton
    torch.manual_seed(0)
    group = 96
    dw_part = torch.randn((group, LN_N), dtype=torch.float16, device=device)
    db_part = torch.randn((group, LN_N), dtype=torch.float16, device=device)
    dw = torch.empty((LN_N,), dtype=torch.float16, device=device)
    db = torch.empty((LN_N,), dtype=torch.float16, device=device)

    def launch():
        module._layer_norm_bwd_dwdb[(triton.cdiv(LN_N, 128),)](dw_part, db_part, dw, db, group, LN_N,
                                                               BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, num_ctas=1)
        return dw, db
    return launch


ATTN_Z, ATTN_H, ATTN_N, ATTN_D = 1, 32, 1024, 64  # Z = 1: _attn_fwd_tma's row offset (off_z + off_h * N_CTX) assumes it


def _attention_inputs(device):
    torch.manual_seed(20)
    shape = (ATTN_Z, ATTN_H, ATTN_N, ATTN_D)
    q, k, v = (torch.empty(shape, dtype=torch.float16, device=device).normal_(mean=0.0, std=0.5) for _ in range(3))
    o = torch.empty_like(q)
    m = torch.empty((ATTN_Z, ATTN_H, ATTN_N), device=device, dtype=torch.float32)
    return q, k, v, o, m


def _attn_fwd(causal):
    def setup(module, device):
        import triton
        q, k, v, o, m = _attention_inputs(device)
        bm, bn = 128, 64  # one of the tutorial's autotune configs (num_stages=3, num_warps=4)

        def launch():
            module._attn_fwd[(triton.cdiv(ATTN_N, bm), ATTN_Z * ATTN_H, 1)](
                q, k, v, 0.5, m, o,
                q.stride(0), q.stride(1), q.stride(2), q.stride(3),
                k.stride(0), k.stride(1), k.stride(2), k.stride(3),
                v.stride(0), v.stride(1), v.stride(2), v.stride(3),
                o.stride(0), o.stride(1), o.stride(2), o.stride(3),
                ATTN_Z, ATTN_H, N_CTX=ATTN_N, HEAD_DIM=ATTN_D, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1,
                num_stages=3, num_warps=4)
            return o, m
        return launch
    return setup


def _attn_fwd_tma(causal):
    def setup(module, device):
        import triton
        from triton.tools.tensor_descriptor import TensorDescriptor
        q, k, v, o, m = _attention_inputs(device)
        bm, bn = 128, 64  # one of configs_tma (num_stages=3, num_warps=4); the pre-hook's block shapes set here
        rows = ATTN_Z * ATTN_H * ATTN_N
        desc_q, desc_k, desc_v, desc_o = (TensorDescriptor(t, shape=[rows, ATTN_D], strides=[ATTN_D, 1],
                                                           block_shape=[bs, ATTN_D])
                                          for t, bs in ((q, bm), (k, bn), (v, bn), (o, bm)))

        def launch():
            module._attn_fwd_tma[(triton.cdiv(ATTN_N, bm), ATTN_Z * ATTN_H, 1)](
                0.5, m, ATTN_Z, ATTN_H, desc_q, desc_k, desc_v, desc_o, N_CTX=ATTN_N, HEAD_DIM=ATTN_D,
                BLOCK_M=bm, BLOCK_N=bn, FP8_OUTPUT=False, STAGE=3 if causal else 1, num_stages=3, num_warps=4)
            return o, m
        return launch
    return setup


def _grouped_inputs(device, transposed_b):
    torch.manual_seed(0)
    sizes = [1024, 512, 256, 128]  # the tutorial's group: square problems, whole tiles as its kernel assumes
    a = [torch.rand((s, s), device=device, dtype=torch.float16) for s in sizes]
    b = [torch.rand((s, s), device=device, dtype=torch.float16) for s in sizes]
    if transposed_b:
        b = [t.T.contiguous() for t in b]
    c = [torch.empty((s, s), device=device, dtype=torch.float16) for s in sizes]
    ptrs = [torch.tensor([t.data_ptr() for t in group], device=device) for group in (a, b, c)]
    g_sizes = torch.tensor([d for s in sizes for d in (s, s, s)], dtype=torch.int32, device=device)
    g_lds = torch.tensor([d for x, y, z in zip(a, b, c) for d in (x.stride(0), y.stride(0), z.stride(0))],
                         dtype=torch.int32, device=device)
    return (a, b, c), ptrs, g_sizes, g_lds, len(sizes)


def _grouped_gemm(module, device):
    keep, (pa, pb, pc), g_sizes, g_lds, groups = _grouped_inputs(device, transposed_b=False)
    sms = _num_sms(device)

    def launch():
        # The autotune list's 128x128x64 config with NUM_SM = the SM count (num_warps=4, num_stages=3).
        module.grouped_matmul_kernel[(sms,)](pa, pb, pc, g_sizes, g_lds, groups, NUM_SM=sms,
                                             BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)
        return tuple(keep[2])
    return launch


def _grouped_gemm_tma(module, device):
    keep, (pa, pb, pc), g_sizes, g_lds, groups = _grouped_inputs(device, transposed_b=True)
    sms = _num_sms(device)
    _tma_allocator(device)

    def launch():
        # One of tma_configs: 128x128x64, num_stages=3, num_warps=4.
        module.grouped_matmul_tma_kernel[(sms,)](pa, pb, pc, g_sizes, g_lds, groups, NUM_SM=sms,
                                                 BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, FP8=False,
                                                 num_stages=3, num_warps=4)
        return tuple(keep[2])
    return launch


PM_M, PM_N, PM_K = 3000, 3000, 1000  # tails in every dimension: the kernels clamp or mask them


def _persistent_matmul(module, device):
    import triton
    torch.manual_seed(0)
    a = torch.randn((PM_M, PM_K), device=device, dtype=torch.float16)
    b = torch.randn((PM_K, PM_N), device=device, dtype=torch.float16)
    c = torch.empty((PM_M, PM_N), device=device, dtype=torch.float16)
    sms = _num_sms(device)
    bm, bn, bk = 128, 256, 64  # one of matmul_get_configs (num_stages=3, num_warps=8)

    def launch():
        module.matmul_kernel_persistent[(min(sms, triton.cdiv(PM_M, bm) * triton.cdiv(PM_N, bn)),)](
            a, b, c, PM_M, PM_N, PM_K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=sms, num_stages=3, num_warps=8)
        return (c,)
    return launch


def _descriptor_persistent_matmul(module, device):
    import triton
    torch.manual_seed(0)
    a = torch.randn((PM_M, PM_K), device=device, dtype=torch.float16)
    b = torch.randn((PM_N, PM_K), device=device, dtype=torch.float16)  # b transposed, as the tutorial passes it
    c = torch.empty((PM_M, PM_N), device=device, dtype=torch.float16)
    sms = _num_sms(device)
    _tma_allocator(device)
    bm, bn, bk = 128, 256, 64  # one of matmul_tma_persistent_get_configs (num_stages=3, num_warps=8)

    def launch():
        module.matmul_kernel_descriptor_persistent[(min(sms, triton.cdiv(PM_M, bm) * triton.cdiv(PM_N, bn)),)](
            a, b, c, PM_M, PM_N, PM_K, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
            EPILOGUE_SUBTILE=False, NUM_SMS=sms, WARP_SPECIALIZE=False, num_stages=3, num_warps=8)
        return (c,)
    return launch


MATMUL = {1: "program", 2: "k_loop", 3: "load_ab", 4: "dot", 5: "activation", 6: "store"}
LN_FWD = {1: "program", 2: "mean_loop", 3: "load_mean", 4: "sum_mean", 5: "var_loop", 6: "load_var", 7: "sum_var",
          8: "store_stats", 9: "norm_loop", 10: "load_norm", 11: "store_y"}
LN_DX = {1: "program", 2: "load", 3: "sum", 4: "store_dx", 5: "acquire", 6: "spin", 7: "load_partial",
         8: "store_partial", 9: "release"}
ATTN = {1: "program", 2: "load_q", 3: "kv_loop", 4: "load_k", 5: "dot_qk", 6: "softmax", 7: "load_v", 8: "dot_pv",
        9: "store"}
GROUPED = {1: "program", 2: "problem", 3: "load_sizes", 4: "tile", 5: "load_ptrs", 6: "k_loop", 7: "load_ab",
           8: "dot", 9: "store"}
PERSISTENT = {1: "program", 2: "tile", 3: "k_loop", 4: "load_ab", 5: "dot", 6: "store"}

CASES = [
    Case("tutorials/01_vector_add", "tutorials/01_vector_add", r"^add_kernel$",
         {1: "program", 2: "load", 3: "store"}, _vector_add),
    Case("tutorials/02_softmax", "tutorials/02_fused_softmax", r"^softmax_kernel$",
         {1: "program", 2: "row", 3: "load", 4: "max", 5: "exp_sum", 6: "store"}, _softmax),
    Case("tutorials/03_matmul", "tutorials/03_matrix_multiplication", r"^matmul_kernel$", MATMUL, _matmul("")),
    Case("tutorials/03_matmul_leaky_relu", "tutorials/03_matrix_multiplication", r"^matmul_kernel$", MATMUL,
         _matmul("leaky_relu")),
    Case("tutorials/04_seeded_dropout", "tutorials/04_low_memory_dropout", r"^_seeded_dropout$",
         {1: "program", 2: "load", 3: "rand", 4: "store"}, _seeded_dropout),
    Case("tutorials/05_layer_norm_fwd", "tutorials/05_layer_norm", r"^_layer_norm_fwd_fused$", LN_FWD,
         _layer_norm_fwd),
    # The partial dW/dB sums are added under a spin lock in whatever order the rows take it.
    Case("tutorials/05_layer_norm_bwd_dx", "tutorials/05_layer_norm", r"^_layer_norm_bwd_dx_fused$", LN_DX,
         _layer_norm_bwd_dx, exact=False),
    Case("tutorials/05_layer_norm_bwd_dwdb", "tutorials/05_layer_norm", r"^_layer_norm_bwd_dwdb$",
         {1: "program", 2: "row_loop", 3: "load", 4: "sum", 5: "store"}, _layer_norm_bwd_dwdb),
    Case("tutorials/06_attn_fwd_tma", "tutorials/06_fused_attention", r"^_attn_fwd_tma$", ATTN, _attn_fwd_tma(False)),
    Case("tutorials/06_attn_fwd_tma_causal", "tutorials/06_fused_attention", r"^_attn_fwd_tma$", ATTN,
         _attn_fwd_tma(True)),
    Case("tutorials/08_grouped_gemm", "tutorials/08_grouped_gemm", r"^grouped_matmul_kernel$", GROUPED,
         _grouped_gemm),
    Case("tutorials/08_grouped_gemm_tma", "tutorials/08_grouped_gemm", r"^grouped_matmul_tma_kernel$", GROUPED,
         _grouped_gemm_tma),
    Case("tutorials/09_persistent_matmul", "tutorials/09_persistent_matmul", r"^matmul_kernel_persistent$",
         PERSISTENT, _persistent_matmul),
    Case("tutorials/09_descriptor_persistent_matmul", "tutorials/09_persistent_matmul",
         r"^matmul_kernel_descriptor_persistent$", {**PERSISTENT, 7: "make_desc"},
         _descriptor_persistent_matmul),
]

# _attn_fwd reads q, k, v through block pointers, which Triton removed after 3.6 (make_block_ptr
# raises NotImplementedError in 3.9): its two cases exist where the Triton at hand still has them.
if "removed" not in (__import__("triton.language", fromlist=["make_block_ptr"]).make_block_ptr.__doc__ or ""):
    CASES[8:8] = [
        Case("tutorials/06_attn_fwd", "tutorials/06_fused_attention_block_ptr", r"^_attn_fwd$", ATTN,
             _attn_fwd(False)),
        Case("tutorials/06_attn_fwd_causal", "tutorials/06_fused_attention_block_ptr", r"^_attn_fwd$", ATTN,
             _attn_fwd(True)),
    ]
