"""Unsloth (unslothai/unsloth): fused kernels for LLM fine-tuning (unsloth/kernels/)."""
import torch

from third_party import Case, Source

REPO, COMMIT, LICENCE = "unslothai/unsloth", "015bdef0d94a241bcd94eec7a405b1700632180d", "Apache-2.0"
# At COMMIT, cross_entropy_loss.py and rope_embedding.py define each kernel as a plain `def` and
# rebind its name (`f = triton.jit(f)`, then `f = triton.heuristics(...)(f)`), so the taken name
# is the rebinding, not the function; they are taken at the last commit whose kernels are still
# decorated (2024-11-11; the same kernels, with no tl.constexpr on the flags; rope_embedding.py
# was still Apache-2.0 then; at COMMIT it is LGPL-3.0).
DECORATED = "bbe1dda8c092b4ae8007c60f8d3d5d7d2a67ee88"

SOURCES = [
    Source("unsloth/cross_entropy_loss", REPO, DECORATED, "unsloth/kernels/cross_entropy_loss.py", LICENCE,
           ("_cross_entropy_forward _chunked_cross_entropy_forward _cross_entropy_backward",)),
    Source("unsloth/rope_embedding", REPO, DECORATED, "unsloth/kernels/rope_embedding.py", LICENCE,
           ("_rope_embedding",)),
    Source("unsloth/rms_layernorm", REPO, COMMIT, "unsloth/kernels/rms_layernorm.py", LICENCE,
           ("_rms_layernorm_forward",)),
    Source("unsloth/swiglu", REPO, COMMIT, "unsloth/kernels/swiglu.py", LICENCE,
           ("BLOCK_SIZE _DWf_DW_dfg_kernel",)),
    Source("unsloth/layernorm", REPO, COMMIT, "unsloth/kernels/layernorm.py", LICENCE,
           ("layernorm_backward",)),
    Source("unsloth/fp8", REPO, COMMIT, "unsloth/kernels/fp8.py", LICENCE,
           ("act_quant_kernel _w8a8_block_fp8_matmul",)),
]


def _restore(pairs):
    """In-place kernels: put each input back before a launch, so that every launch sees the same."""
    for into, kept in pairs:
        into.copy_(kept)


def _labels(rows, vocab, device, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, vocab, (rows,), generator=g)
    labels[torch.rand(rows, generator=g) < 0.1] = -100  # padding / prompt tokens, as SFT masks them
    return labels.to(device)


def _cross_entropy_forward(module, device):
    # Fast_CrossEntropyLoss.forward for a vocabulary that fits one block (Llama 2, 32000): one
    # program a row, BLOCK_SIZE and num_warps from calculate_settings(32000) = (32768, 32). The
    # heuristics decorator only turned the two flags into bools; they are passed as bools here.
    torch.manual_seed(0)
    rows, vocab = 1024, 32000
    logits = torch.randn(rows, vocab, device=device, dtype=torch.bfloat16)
    labels = _labels(rows, vocab, device, 1)
    losses = torch.empty(rows, device=device, dtype=torch.float32)
    logsumexp = torch.empty(rows, device=device, dtype=torch.float32)

    def launch():
        module._cross_entropy_forward[(rows,)](
            logits, logits.stride(0), losses, logsumexp, labels, VOCAB_SIZE=vocab, BLOCK_SIZE=32768,
            DO_SOFTCAPPING=False, SOFTCAP=0, DO_LOGIT_SCALING=False, LOGIT_SCALE=0, num_warps=32)
        return losses, logsumexp
    return launch


def _chunked_cross_entropy_forward(module, device):
    # Fast_CrossEntropyLoss.forward for Gemma 2's 256000 vocabulary, which is over MAX_FUSED_SIZE
    # (65536): 4 chunks a row, 32 warps, and Gemma 2's final logit softcapping (30.0).
    torch.manual_seed(0)
    rows, vocab, block = 256, 256000, 65536
    chunks = -(-vocab // block)
    logits = 8 * torch.randn(rows, vocab, device=device, dtype=torch.bfloat16)
    labels = _labels(rows, vocab, device, 2)
    losses = torch.empty(rows, device=device, dtype=torch.float32)
    logsumexp = torch.empty(rows, chunks, device=device, dtype=torch.float32)

    def launch():
        module._chunked_cross_entropy_forward[(rows, chunks)](
            logits, logits.stride(0), losses, logsumexp, labels, VOCAB_SIZE=vocab, N_CHUNKS=chunks,
            BLOCK_SIZE=block, DO_SOFTCAPPING=True, SOFTCAP=30.0, DO_LOGIT_SCALING=False, LOGIT_SCALE=0,
            num_warps=32)
        return losses, logsumexp
    return launch


def _cross_entropy_backward(module, device):
    # Fast_CrossEntropyLoss.backward: the gradient written over the logits in place, in blocks of
    # 4096 (32000 = 7 blocks and a masked tail), 8 warps; dlosses as loss.sum() / n_items gives.
    torch.manual_seed(0)
    rows, vocab, block = 512, 32000, 4096
    kept = torch.randn(rows, vocab, device=device, dtype=torch.bfloat16)
    logits = kept.clone()
    labels = _labels(rows, vocab, device, 3)
    logsumexp = torch.logsumexp(kept.float(), dim=1)
    dlosses = torch.full((rows,), 1.0 / int((labels != -100).sum()), device=device, dtype=torch.float32)

    def launch():
        _restore([(logits, kept)])
        module._cross_entropy_backward[(rows, -(-vocab // block))](
            logits, logits.stride(0), dlosses, dlosses.stride(0), logsumexp, labels, VOCAB_SIZE=vocab,
            BLOCK_SIZE=block, DO_SOFTCAPPING=False, SOFTCAP=0, DO_LOGIT_SCALING=False, LOGIT_SCALE=0,
            num_warps=8)
        return (logits,)
    return launch


def _rope_embedding(module, device):
    # Fast_RoPE_Embedding.forward on Q of Llama 3 8B (32 heads of 128), in place: a program per
    # token and group of 4 heads; calculate_settings(64) = (64, 4). BACKWARD_PASS was set by a
    # heuristics decorator from the same flag; it is passed as a bool.
    torch.manual_seed(0)
    batch, seq, heads, head_dim = 1, 512, 32, 128
    kept = torch.randn(batch, seq, heads, head_dim, device=device, dtype=torch.bfloat16)
    q = kept.clone().view(batch * seq, heads * head_dim)
    inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    cos = angles.cos().to(device=device, dtype=torch.bfloat16)
    sin = angles.sin().to(device=device, dtype=torch.bfloat16)
    groups = -(-heads // 4)

    def launch():
        _restore([(q, kept.view_as(q))])
        module._rope_embedding[(batch * seq, groups)](
            q, q.stride(0), cos, cos.stride(0), sin, sin.stride(0), seq, head_dim, heads,
            BACKWARD_PASS=False, BLOCK_SIZE=64, num_warps=4)
        return (q,)
    return launch


def _rms_layernorm_forward(module, device):
    # Fast_RMS_Layernorm.forward, Llama 3.2 3B (hidden 3072): calculate_settings(3072) = (4096, 8).
    torch.manual_seed(0)
    rows, cols = 2 * 1024, 3072
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(cols)).to(device=device, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    r = torch.empty(rows, device=device, dtype=torch.float32)

    def launch():
        module._rms_layernorm_forward[(rows,)](y, y.stride(0), x, x.stride(0), w, w.stride(0), r, r.stride(0),
                                               cols, 1e-5, BLOCK_SIZE=4096, num_warps=8)
        return y, r
    return launch


def _swiglu_backward(module, device):
    # swiglu_DWf_DW_dfg_kernel: the SwiGLU MLP's backward, in place over its three buffers, for
    # Llama 2 7B's intermediate width (11008) and 255 tokens; BLOCK_SIZE = 1024 (the module's).
    torch.manual_seed(0)
    rows, cols = 255, 11008
    kept = [torch.randn(rows, cols, device=device, dtype=torch.bfloat16) for _ in range(3)]
    dw, e, g = (t.clone() for t in kept)
    n = e.numel()

    def launch():
        _restore(zip((dw, e, g), kept))
        module._DWf_DW_dfg_kernel[(-(-n // module.BLOCK_SIZE),)](dw, e, g, n, BLOCK_SIZE=module.BLOCK_SIZE,
                                                                  LONG_INDEXING=0)
        return dw, e, g
    return launch


def _layernorm_backward(module, device):
    # Fast_Layernorm.backward (dX written over dY) for a ViT-B / BERT-base width (768):
    # calculate_settings(768) = (1024, 4); r and mu as the forward kernel saves them.
    torch.manual_seed(0)
    rows, cols = 4 * 1024, 768
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(cols)).to(device=device, dtype=torch.bfloat16)
    b = (0.1 * torch.randn(cols)).to(device=device, dtype=torch.bfloat16)
    mu = x.float().mean(dim=1)
    r = torch.rsqrt(x.float().var(dim=1, unbiased=False) + 1e-5)
    kept = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    dy = kept.clone()

    def launch():
        _restore([(dy, kept)])
        module.layernorm_backward[(rows,)](dy, dy.stride(0), x, x.stride(0), w, b, r, mu, cols, 1e-5,
                                           BLOCK_SIZE=1024, num_warps=4)
        return (dy,)
    return launch


def _act_quant(module, device):
    # act_quant: activations to float8_e4m3fn with a scale per 128 values (block_size = 128).
    torch.manual_seed(0)
    tokens, hidden = 256, 4096
    x = torch.randn(tokens, hidden, device=device, dtype=torch.bfloat16)
    x[:, :128] = 0  # all-zero blocks, which keep a scale of 1
    y = torch.empty_like(x, dtype=torch.float8_e4m3fn)
    s = torch.empty(tokens, hidden // 128, device=device, dtype=torch.float32)

    def launch():
        module.act_quant_kernel[(x.numel() // 128,)](x, y, s, BLOCK_SIZE=128)
        return y.view(torch.uint8), s
    return launch


def _w8a8_block_fp8_matmul(module, device):
    # w8a8_block_fp8_matmul_triton: block-quantized (128 x 128) fp8 weights times fp8 activations
    # with a scale per token and 128 columns, into bfloat16; the launch config it picks for
    # M >= 128 (BLOCK 128 x 128 x 128, GROUP_SIZE_M 8, Triton's default warps and stages).
    torch.manual_seed(0)
    m, n, k, blk = 1000, 4096, 4096, 128
    a = torch.randn(m, k).clamp(-448, 448).to(torch.float8_e4m3fn).to(device)
    b = torch.randn(n, k).clamp(-448, 448).to(torch.float8_e4m3fn).to(device)
    a_s = (0.01 * torch.rand(m, k // blk) + 1e-3).to(device)
    b_s = (0.01 * torch.rand(n // blk, k // blk) + 1e-3).to(device)
    c = torch.empty(m, n, device=device, dtype=torch.bfloat16)
    grid = (-(-m // 128) * (n // 128),)

    def launch():
        module._w8a8_block_fp8_matmul[grid](
            a, b, c, a_s, b_s, m, n, k, blk, blk, a.stride(-2), a.stride(-1), b.stride(1), b.stride(0),
            c.stride(-2), c.stride(-1), a_s.stride(-2), a_s.stride(-1), b_s.stride(1), b_s.stride(0),
            BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=8)
        return (c,)
    return launch


_CE = {1: "program", 2: "load", 3: "logsumexp", 4: "label_logit", 5: "store"}
CASES = [
    Case("unsloth/cross_entropy_forward", "unsloth/cross_entropy_loss", r"^_cross_entropy_forward", _CE,
         _cross_entropy_forward),
    Case("unsloth/chunked_cross_entropy_forward", "unsloth/cross_entropy_loss", r"_chunked_cross_entropy_forward",
         {**_CE, 4: "first_chunk"}, _chunked_cross_entropy_forward),
    Case("unsloth/cross_entropy_backward", "unsloth/cross_entropy_loss", r"_cross_entropy_backward",
         {1: "program", 2: "load", 3: "grad", 4: "store"}, _cross_entropy_backward),
    Case("unsloth/rope_embedding", "unsloth/rope_embedding", r"_rope_embedding",
         {1: "program", 2: "load_sincos", 3: "head", 4: "load_q", 5: "store_q"}, _rope_embedding),
    Case("unsloth/rms_layernorm_forward", "unsloth/rms_layernorm", r"_rms_layernorm_forward",
         {1: "program", 2: "load", 3: "sum_sq", 4: "store_r", 5: "store_y"}, _rms_layernorm_forward),
    Case("unsloth/swiglu_backward", "unsloth/swiglu", r"_DWf_DW_dfg_kernel",
         {1: "program", 2: "load", 3: "store"}, _swiglu_backward),
    Case("unsloth/layernorm_backward", "unsloth/layernorm", r"layernorm_backward",
         {1: "program", 2: "load", 3: "grad", 4: "store"}, _layernorm_backward),
    Case("unsloth/act_quant", "unsloth/fp8", r"act_quant_kernel",
         {1: "program", 2: "load", 3: "absmax", 4: "store"}, _act_quant),
    Case("unsloth/w8a8_block_fp8_matmul", "unsloth/fp8", r"_w8a8_block_fp8_matmul",
         {1: "program", 2: "k_loop", 3: "load", 4: "dot", 5: "store"}, _w8a8_block_fp8_matmul),
]
