"""Liger-Kernel (linkedin/Liger-Kernel): fused LLM training kernels."""
import torch

from third_party import Case, Source

REPO, COMMIT, LICENCE = "linkedin/Liger-Kernel", "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c", "BSD-2-Clause"

SOURCES = [
    Source("liger/swiglu", REPO, COMMIT, "src/liger_kernel/ops/swiglu.py", LICENCE,
           ("silu _swiglu_forward_kernel", "_swiglu_backward_kernel")),
    Source("liger/geglu", REPO, COMMIT, "src/liger_kernel/ops/geglu.py", LICENCE,
           ("_geglu_tanh_forward_kernel _geglu_tanh_backward_kernel",)),
    Source("liger/rms_norm", REPO, COMMIT, "src/liger_kernel/ops/rms_norm.py", LICENCE,
           ("_CASTING_MODE_NONE _CASTING_MODE_LLAMA _CASTING_MODE_GEMMA _rms_norm_forward_kernel"
            " _rms_norm_backward_kernel",)),
    Source("liger/layer_norm", REPO, COMMIT, "src/liger_kernel/ops/layer_norm.py", LICENCE,
           ("_layer_norm_forward_kernel _layer_norm_backward_kernel",)),
    Source("liger/rope", REPO, COMMIT, "src/liger_kernel/ops/rope.py", LICENCE, ("_triton_rope",)),
    Source("liger/cross_entropy", REPO, COMMIT, "src/liger_kernel/ops/cross_entropy.py", LICENCE,
           ("LOG2_E liger_cross_entropy_kernel",)),
    # fused_linear_cross_entropy.py has no kernel of its own: it runs liger_cross_entropy_kernel on
    # chunks of logits, then scales the gradients with utils.py's element_mul_kernel.
    Source("liger/utils", REPO, COMMIT, "src/liger_kernel/ops/utils.py", LICENCE, ("element_mul_kernel",)),
    Source("liger/kl_div", REPO, COMMIT, "src/liger_kernel/ops/kl_div.py", LICENCE,
           ("_REDUCTION_MODE_NONE _REDUCTION_MODE_SUM _REDUCTION_MODE_MEAN _REDUCTION_MODE_BATCHMEAN"
            " _kldiv_kernel_forward",)),
    Source("liger/jsd", REPO, COMMIT, "src/liger_kernel/ops/jsd.py", LICENCE, ("_jsd_kernel",)),
    Source("liger/dyt", REPO, COMMIT, "src/liger_kernel/ops/dyt.py", LICENCE, ("_dyt_fwd_kernel _dyt_bwd_kernel",)),
    Source("liger/softmax", REPO, COMMIT, "src/liger_kernel/ops/softmax.py", LICENCE,
           ("_softmax_single_block_forward_kernel",)),
    Source("liger/group_norm", REPO, COMMIT, "src/liger_kernel/ops/group_norm.py", LICENCE,
           ("_group_norm_forward_kernel _group_norm_backward_kernel",)),
    Source("liger/tvd", REPO, COMMIT, "src/liger_kernel/ops/tvd.py", LICENCE,
           ("_REDUCTION_MODE_NONE _REDUCTION_MODE_SUM _REDUCTION_MODE_MEAN _REDUCTION_MODE_BATCHMEAN"
            " _tv_distance_kernel",)),
]


def _swiglu_forward(module, device):
    import triton
    torch.manual_seed(0)
    rows, cols = 4 * 511, 3000  # a batch of tokens by an MLP width, not a multiple of the block
    a = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    b = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    block = triton.next_power_of_2(cols)

    def launch():
        module._swiglu_forward_kernel[(rows,)](a, b, c, c.stride(-2), 1.0, n_cols=cols, BLOCK_SIZE=block,
                                               num_warps=4)
        return (c,)
    return launch



def _sms(device):
    """The SM count Liger sizes its persistent grids by (an H200's 132 where there is no GPU)."""
    return torch.cuda.get_device_properties(device).multi_processor_count if str(device).startswith("cuda") else 132


def _swiglu_backward(module, device):
    import triton
    torch.manual_seed(0)
    rows, cols = 4 * 511, 3000
    a0 = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    b0 = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    dc = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    block = triton.next_power_of_2(cols)  # calculate_settings(3000): 4096, 8 warps

    def launch():
        a, b = a0.clone(), b0.clone()  # the kernel writes da, db over a, b
        module._swiglu_backward_kernel[(rows,)](dc, a, b, dc.stride(-2), 1.0, n_cols=cols, BLOCK_SIZE=block,
                                                num_warps=8)
        return a, b
    return launch


def _geglu(backward):
    def setup(module, device):
        torch.manual_seed(0)
        rows, cols = 4 * 1023, 2752  # tokens by a GeGLU MLP width; BLOCK_SIZE 4096 masks the tail
        a0 = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
        b0 = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
        dc = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)

        def launch():
            if backward:
                a, b = a0.clone(), b0.clone()  # the kernel writes da, db over a, b
                module._geglu_tanh_backward_kernel[(rows,)](dc, a, b, dc.stride(-2), n_cols=cols, BLOCK_SIZE=4096,
                                                            num_warps=8)
                return a, b
            c = torch.empty_like(a0)
            module._geglu_tanh_forward_kernel[(rows,)](a0, b0, c, c.stride(-2), n_cols=cols, BLOCK_SIZE=4096,
                                                       num_warps=8)
            return (c,)
        return launch
    return setup


def _rms_inputs(device):
    torch.manual_seed(0)
    rows, cols = 4 * 1021, 3584  # Qwen2-7B's hidden size; BLOCK_SIZE 4096 masks the tail
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(cols, device=device)).to(torch.bfloat16)
    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
    return rows, cols, x, w, rstd


def _rms_norm_forward(module, device):
    rows, cols, x, w, _ = _rms_inputs(device)

    def launch():
        y = torch.empty_like(x)
        rstd = torch.empty(rows, device=device, dtype=torch.float32)
        # rms_norm_forward's row kernel (BLOCK_SIZE > 256), casting_mode "llama" (0)
        module._rms_norm_forward_kernel[(rows,)](y, y.stride(0), x, x.stride(0), w, w.stride(0), rstd, rstd.stride(0),
                                                 cols, 1e-6, 0.0, 0, elementwise_affine=True, BLOCK_SIZE=4096,
                                                 num_warps=8)
        return y, rstd
    return launch


def _rms_norm_backward(module, device):
    import math
    import triton.language as tl
    rows, cols, x, w, rstd = _rms_inputs(device)
    dy = torch.randn_like(x)
    sms = _sms(device)

    def launch():
        dx = torch.zeros_like(dy)
        dw = torch.empty(sms, cols, device=device, dtype=torch.float32)
        module._rms_norm_backward_kernel[(sms,)](dy, dy.stride(0), dx, dx.stride(0), x, x.stride(0), tl.bfloat16,
                                                  w, w.stride(0), rstd, rstd.stride(0), dw, dw.stride(0), rows, cols,
                                                  0.0, math.ceil(rows / sms), 0, elementwise_affine=True,
                                                  BLOCK_SIZE=4096, num_warps=8)
        return dx, dw
    return launch


def _ln_inputs(device):
    torch.manual_seed(0)
    rows, cols = 8190, 1280  # ViT-H width; BLOCK_SIZE 2048 masks the tail
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(cols, device=device)).to(torch.bfloat16)
    b = (0.1 * torch.randn(cols, device=device)).to(torch.bfloat16)
    return rows, cols, x, w, b


def _layer_norm_forward(module, device):
    rows, cols, x, w, b = _ln_inputs(device)

    def launch():
        y = torch.empty_like(x)
        mean = torch.empty(rows, device=device, dtype=x.dtype)
        rstd = torch.empty(rows, device=device, dtype=x.dtype)
        module._layer_norm_forward_kernel[(rows,)](y, y.stride(0), x, x.stride(0), w, w.stride(0), b, b.stride(0),
                                                   mean, mean.stride(0), rstd, rstd.stride(0), cols, 1e-5,
                                                   BLOCK_SIZE=2048, num_warps=8)
        return y, mean, rstd
    return launch


def _layer_norm_backward(module, device):
    import math
    rows, cols, x, w, _ = _ln_inputs(device)
    dy = torch.randn_like(x)
    mean = x.float().mean(-1).to(x.dtype)
    rstd = torch.rsqrt(x.float().var(-1, unbiased=False) + 1e-5).to(x.dtype)
    sms = _sms(device)

    def launch():
        dx = torch.empty_like(x)
        dw = torch.empty(sms, cols, device=device, dtype=torch.float32)
        db = torch.empty(sms, cols, device=device, dtype=torch.float32)
        module._layer_norm_backward_kernel[(sms,)](x, x.stride(0), w, mean, mean.stride(0), rstd, rstd.stride(0),
                                                   dx, dx.stride(0), dw, dw.stride(0), db, db.stride(0),
                                                   dy, dy.stride(0), rows, cols, rows_per_program=math.ceil(rows / sms),
                                                   BLOCK_SIZE=2048, num_warps=8)
        return dx, dw, db
    return launch


def _rope(module, device):
    torch.manual_seed(0)
    bsz, seq, n_qh, n_kh, hd = 2, 2047, 28, 4, 128  # Qwen2-7B heads: 28 query heads pad to 32
    q0 = torch.randn(bsz, seq, n_qh, hd, device=device, dtype=torch.bfloat16)  # rope_forward's contiguous layout
    k0 = torch.randn(bsz, seq, n_kh, hd, device=device, dtype=torch.bfloat16)
    pos = torch.arange(seq, device=device, dtype=torch.float32)
    inv = 1.0 / (1e6 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
    emb = torch.cat([pos[:, None] * inv[None, :]] * 2, dim=-1)[None]
    cos, sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)

    def launch():
        q, k = q0.clone(), k0.clone()  # rotated in place
        module._triton_rope[(bsz * seq,)](q, q.stride(1), k, k.stride(1), cos, cos.stride(-2), sin, sin.stride(-2),
                                          seq, bsz, 1, n_qh, n_kh, hd, 32, 4, 128, BLOCK_SIZE=32,
                                          BACKWARD_PASS=False)
        return q, k
    return launch


def _cross_entropy(module, device):
    torch.manual_seed(0)
    rows, vocab = 512, 128256  # Llama-3's vocabulary: four 32768-wide blocks a row, the last one masked
    logits0 = torch.randn(rows, vocab, device=device, dtype=torch.bfloat16)
    target = torch.randint(0, vocab, (rows,), device=device)
    target[torch.rand(rows, device=device) < 0.1] = -100  # padding tokens: the kernel's early return
    n_non_ignore = int((target != -100).sum())

    def launch():
        logits = logits0.clone()  # the kernel writes the gradient over the logits
        loss = torch.zeros(rows, device=device, dtype=logits.dtype)
        # cross_entropy_forward with reduction "mean", no weight, z-loss, smoothing or softcap; 32 warps (Hopper)
        module.liger_cross_entropy_kernel[(rows,)](
            X_ptr=logits, X_stride=logits.stride(-2), Y_ptr=target, Y_stride=target.stride(-1), weight_ptr=None,
            loss_ptr=loss, z_loss_ptr=None, loss_stride=loss.stride(-1), token_accuracy_ptr=None,
            token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0, n_cols=vocab,
            n_non_ignore=n_non_ignore, sum_non_ignore_weight=n_non_ignore, ignore_index=-100, weight_sum=0.0,
            lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None, RETURN_Z_LOSS=False,
            RETURN_TOKEN_ACCURACY=False, RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=32768, HAS_WEIGHT=False,
            HAS_SOFTCAPPING=False, HAS_GRADIENTS=True, num_warps=32)
        return loss, logits
    return launch


def _element_mul(module, device):
    torch.manual_seed(0)
    rows, vocab = 512, 128256  # cross_entropy_backward: the logits' gradient times a scalar grad_output
    grad0 = torch.randn(rows, vocab, device=device, dtype=torch.bfloat16) * 1e-3
    grad_output = torch.tensor(0.25, device=device, dtype=torch.bfloat16)

    def launch():
        grad = grad0.clone()  # scaled in place
        module.element_mul_kernel[(rows,)](grad, grad.stride(-2), grad_output, vocab, BLOCK_SIZE=32768, num_warps=32)
        return (grad,)
    return launch


def _kl_div(module, device):
    torch.manual_seed(0)
    rows, vocab = 1024, 32000  # two 16384-wide blocks a row, the second masked
    y_pred = torch.randn(rows, vocab, device=device).log_softmax(-1)
    y_true = torch.randn(rows, vocab, device=device).softmax(-1)

    def launch():
        loss = torch.zeros(rows, device=device, dtype=torch.float32)
        module._kldiv_kernel_forward[(rows,)](y_pred, y_pred.stride(0), y_true, y_true.stride(0), loss, loss.stride(0),
                                              vocab, eps=1e-10, BLOCK_SIZE=16384, num_warps=16, log_target=False,
                                              reduction=3)  # batchmean
        return (loss,)
    return launch


def _jsd(module, device):
    torch.manual_seed(0)
    rows, vocab = 256, 32000  # one 32768-wide block a row, masked
    x = torch.randn(rows, vocab, device=device).log_softmax(-1).to(torch.bfloat16)
    y = torch.randn(rows, vocab, device=device).log_softmax(-1).to(torch.bfloat16)
    labels = torch.randint(0, vocab, (rows,), device=device)
    labels[torch.rand(rows, device=device) < 0.1] = -100  # ignored tokens: the kernel's early return
    n_non_ignore = int((labels != -100).sum())

    def launch():
        loss = torch.zeros(rows, vocab, device=device, dtype=torch.float32)
        dx = torch.empty_like(x)
        # jsd_forward launches with Triton's default 4 warps, which spill heavily at this block size
        # (~0.45 ms here on an H200); we give it 32, as cross_entropy_forward gives its kernel on Hopper
        module._jsd_kernel[(rows,)](X_ptr=x, X_stride=x.stride(-2), Y_ptr=y, Y_stride=y.stride(-2), loss_ptr=loss,
                                    loss_stride=loss.stride(-2), dX_ptr=dx, dX_stride=dx.stride(-2), label_ptr=labels,
                                    beta=0.5, n_non_ignore=n_non_ignore, ignore_index=-100, n_cols=vocab,
                                    BLOCK_SIZE=32768, HAS_LABEL=True, num_warps=32)
        return loss, dx
    return launch


def _tvd(module, device):
    torch.manual_seed(0)
    rows, vocab = 768, 32000  # two 16384-wide blocks a row, the second masked
    p = torch.randn(rows, vocab, device=device).softmax(-1)
    q = torch.randn(rows, vocab, device=device).softmax(-1)
    labels = torch.randint(0, vocab, (rows,), device=device)
    labels[torch.rand(rows, device=device) < 0.1] = -100  # ignored tokens: the kernel's early return
    scale = 1.0 / int((labels != -100).sum())  # batchmean

    def launch():
        loss = torch.zeros(rows, device=device, dtype=torch.float32)
        grads = torch.empty_like(p)
        module._tv_distance_kernel[(rows,)](p, p.stride(0), q, q.stride(0), loss, loss.stride(0), grads,
                                            grads.stride(0), labels, -100, vocab, scale, BLOCK_SIZE=16384,
                                            HAS_LABEL=True, num_warps=16, reduction=3)  # batchmean
        return loss, grads
    return launch


# _dyt_fwd_kernel and _dyt_bwd_kernel are autotuned over BLOCK_N x num_stages x num_warps; both cases
# launch the one config BLOCK_N=2048, num_stages=1, num_warps=8 from that list.
DYT_BLOCK_N, DYT_STAGES, DYT_WARPS = 2048, 1, 8


def _dyt_inputs(device):
    torch.manual_seed(0)
    rows, cols = 4094, 3584  # two BLOCK_N-wide programs a row, the second masked
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    alpha = torch.tensor([0.5], device=device, dtype=torch.bfloat16)
    gamma = (1 + 0.1 * torch.randn(cols, device=device)).to(torch.bfloat16)
    beta = (0.1 * torch.randn(cols, device=device)).to(torch.bfloat16)
    return rows, cols, x, alpha, gamma, beta


def _dyt_forward(module, device):
    import triton
    rows, cols, x, alpha, gamma, beta = _dyt_inputs(device)

    def launch():
        y = torch.empty_like(x)
        module._dyt_fwd_kernel[(triton.cdiv(cols, DYT_BLOCK_N), rows)](
            x, y, alpha, gamma, beta, True, cols, BLOCK_N=DYT_BLOCK_N, num_stages=DYT_STAGES, num_warps=DYT_WARPS)
        return (y,)
    return launch


def _dyt_backward(module, device):
    import triton
    rows, cols, x, alpha, gamma, beta = _dyt_inputs(device)
    dy = torch.randn_like(x)
    sms = _sms(device)

    def launch():
        da = torch.zeros(sms, triton.cdiv(cols, 512), device=device, dtype=torch.float32)
        dg = torch.empty(sms, cols, device=device, dtype=torch.float32)
        db = torch.empty(sms, cols, device=device, dtype=torch.float32)
        dx = torch.empty_like(dy)
        module._dyt_bwd_kernel[(triton.cdiv(cols, DYT_BLOCK_N), sms)](
            dy, dx, da, dg, db, x, alpha, gamma, True, rows, cols, BLOCK_N=DYT_BLOCK_N, num_stages=DYT_STAGES,
            num_warps=DYT_WARPS)
        return dx, da, dg, db
    return launch


def _softmax(module, device):
    torch.manual_seed(0)
    rows, cols = 8190, 3000  # calculate_settings(3000): BLOCK_SIZE 4096, 8 warps; one block a row
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)

    def launch():
        y = torch.empty_like(x)
        module._softmax_single_block_forward_kernel[(rows,)](y, y.stride(0), x, x.stride(0), cols, BLOCK_SIZE=4096,
                                                             num_warps=8)
        return (y,)
    return launch


def _gn_inputs(device):
    torch.manual_seed(0)
    batch, channels, groups, hidden = 32, 64, 16, 2163  # Liger's "non-aligned hidden" shape, batch 32
    x = torch.randn(batch, channels, hidden, device=device)
    w = 1 + 0.1 * torch.randn(channels, device=device)
    b = 0.1 * torch.randn(channels, device=device)
    return batch, channels, groups, hidden, x, w, b


def _group_norm_forward(module, device):
    import triton
    batch, channels, groups, hidden, x, w, b = _gn_inputs(device)
    xg = x.view(batch, groups, -1)
    group_hidden = xg.shape[-1]

    def launch():
        y = torch.empty_like(xg)
        mean = torch.zeros(batch, groups, device=device, dtype=x.dtype)
        rstd = torch.zeros(batch, groups, device=device, dtype=x.dtype)
        # group_norm_forward launches with Triton's default 4 warps
        module._group_norm_forward_kernel[(batch, groups)](
            y, y.stride(0), y.stride(1), xg, xg.stride(0), xg.stride(1), mean, mean.stride(0), mean.stride(1),
            rstd, rstd.stride(0), rstd.stride(1), w, b, group_hidden, channels // groups, 1e-6,
            BLOCK_SIZE=triton.next_power_of_2(group_hidden))
        return y, mean, rstd
    return launch


def _group_norm_backward(module, device):
    import triton
    import triton.language as tl
    batch, channels, groups, hidden, x, w, b = _gn_inputs(device)
    xg = x.view(batch, groups, -1)
    mean = xg.mean(-1)
    rstd = torch.rsqrt(xg.var(-1, unbiased=False) + 1e-6)
    dy = torch.randn_like(x)

    def launch():
        dx = torch.empty_like(x)
        dw = torch.zeros(channels, device=device, dtype=w.dtype)  # accumulated by atomic adds
        db = torch.zeros(channels, device=device, dtype=b.dtype)
        module._group_norm_backward_kernel[(batch, groups)](
            x, x.stride(0), x.stride(1), w, mean, mean.stride(0), mean.stride(1), rstd, dx, dw, db, dy,
            hidden, channels // groups, BLOCK_SIZE=triton.next_power_of_2(hidden), dtype=tl.float32)
        return dx, dw, db
    return launch

CASES = [
    Case("liger/swiglu_forward", "liger/swiglu", r"_swiglu_forward_kernel", {1: "program", 2: "load", 3: "store"},
         _swiglu_forward),
    Case("liger/swiglu_backward", "liger/swiglu", r"_swiglu_backward_kernel", {1: "program", 2: "load", 3: "store"},
         _swiglu_backward),
    Case("liger/geglu_forward", "liger/geglu", r"_geglu_tanh_forward_kernel", {1: "program", 2: "load", 3: "store"},
         _geglu(backward=False)),
    Case("liger/geglu_backward", "liger/geglu", r"_geglu_tanh_backward_kernel", {1: "program", 2: "load", 3: "store"},
         _geglu(backward=True)),
    Case("liger/rms_norm_forward", "liger/rms_norm", r"_rms_norm_forward_kernel",
         {1: "program", 2: "load", 3: "reduce", 4: "store_rstd", 5: "store_y"}, _rms_norm_forward),
    Case("liger/rms_norm_backward", "liger/rms_norm", r"_rms_norm_backward_kernel",
         {1: "program", 2: "load_w", 3: "row", 4: "load", 5: "reduce", 6: "store_dx", 7: "store_dw"},
         _rms_norm_backward),
    Case("liger/layer_norm_forward", "liger/layer_norm", r"_layer_norm_forward_kernel",
         {1: "program", 2: "load_wb", 3: "load_x", 4: "reduce", 5: "store_stats", 6: "store_y"}, _layer_norm_forward),
    Case("liger/layer_norm_backward", "liger/layer_norm", r"_layer_norm_backward_kernel",
         {1: "program", 2: "load_w", 3: "row", 4: "load", 5: "reduce", 6: "store_dx", 7: "store_dw_db"},
         _layer_norm_backward),
    Case("liger/rope_forward", "liger/rope", r"_triton_rope",
         {1: "program", 2: "load_cos_sin", 3: "load_qk", 4: "store"}, _rope),
    Case("liger/cross_entropy", "liger/cross_entropy", r"liger_cross_entropy_kernel",
         {1: "program", 2: "load_y", 3: "ignored", 4: "zero_loop", 5: "load_x_y", 6: "max_sum_loop", 7: "load",
          8: "max", 9: "sum", 10: "grad_loop", 11: "load", 12: "store_grad", 13: "store_dx_y", 14: "store_loss"},
         _cross_entropy),
    Case("liger/element_mul", "liger/utils", r"element_mul_kernel",
         {1: "program", 2: "load_grad_output", 3: "loop", 4: "load", 5: "store"}, _element_mul),
    Case("liger/kl_div_forward", "liger/kl_div", r"_kldiv_kernel_forward",
         {1: "program", 2: "loop", 3: "load", 4: "reduce", 5: "store"}, _kl_div),
    Case("liger/jsd", "liger/jsd", r"_jsd_kernel",
         {1: "program", 2: "load_label", 3: "ignored", 4: "zero_loop", 5: "loop", 6: "load", 7: "max", 8: "store"},
         _jsd),
    Case("liger/tvd", "liger/tvd", r"_tv_distance_kernel",
         {1: "program", 2: "load_label", 3: "ignored", 4: "zero_loop", 5: "loop", 6: "load", 7: "store_grad",
          8: "reduce", 9: "store_loss"}, _tvd),
    Case("liger/dyt_forward", "liger/dyt", r"_dyt_fwd_kernel",
         {1: "program", 2: "load", 3: "load_beta", 4: "store"}, _dyt_forward),
    Case("liger/dyt_backward", "liger/dyt", r"_dyt_bwd_kernel",
         {1: "program", 2: "load", 3: "row", 4: "load_row", 5: "reduce", 6: "store_dx", 7: "store_partials"},
         _dyt_backward),
    Case("liger/softmax_forward", "liger/softmax", r"_softmax_single_block_forward_kernel",
         {1: "program", 2: "load", 3: "reduce", 4: "store"}, _softmax),
    Case("liger/group_norm_forward", "liger/group_norm", r"_group_norm_forward_kernel",
         {1: "program", 2: "stats_loop", 3: "load", 4: "reduce", 5: "norm_loop", 6: "load_xwb", 7: "store_y",
          8: "store_stats"}, _group_norm_forward),
    Case("liger/group_norm_backward", "liger/group_norm", r"_group_norm_backward_kernel",
         {1: "program", 2: "load_stats", 3: "channel_sums", 4: "sums_loop", 5: "load", 6: "reduce", 7: "atomic_dw_db",
          8: "channel_dx", 9: "dx_loop", 10: "load", 11: "store_dx"}, _group_norm_backward, exact=False),
]
