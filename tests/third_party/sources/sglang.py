"""SGLang (sgl-project/sglang): LLM serving kernels. The repository is too large to mirror:
each file was read at the commit its Source pins (the files differ in commit)."""
import torch

from third_party import Case, Source

REPO, LICENCE = "sgl-project/sglang", "Apache-2.0"
_OPS = "python/sglang/srt/layers/attention/triton_ops/"

SOURCES = [
    Source("sglang/decode_attention", REPO, "03cd2ec4af85b66be8ef025238bc73c165416bdb",
           _OPS + "decode_attention.py", LICENCE,
           ("tanh _fwd_kernel_stage1 _fwd_grouped_kernel_stage1 _fwd_kernel_stage2",)),
    Source("sglang/extend_attention", REPO, "01925ca8c3ab348298b25a81a552dd08c448980a",
           _OPS + "extend_attention.py", LICENCE, ("tanh _fwd_kernel",)),
    Source("sglang/merge_state", REPO, "37ab963cd767fd12266a0e4ba32dfd6836040343",
           _OPS + "merge_state.py", LICENCE, ("merge_state_kernel",)),
    Source("sglang/moe_align_block_size", REPO, "0fd46783498fea5e1b750b8e394ac4c904ef5a96",
           "python/sglang/srt/layers/moe/fused_moe_triton/moe_align_block_size.py", LICENCE,
           ("moe_align_block_size_stage1 moe_align_block_size_stage2 moe_align_block_size_stage3 "
            "moe_align_block_size_stage4",)),
    Source("sglang/int8_kernel", REPO, "0267727636eebac4a05d4b748c9cbac78e0d6891",
           "python/sglang/srt/layers/quantization/int8_kernel.py", LICENCE,
           ("_per_token_quant_int8 _per_token_group_quant_int8 _w8a8_block_int8_matmul",)),
]


def _ragged(seq_lens, pool, g):
    """SGLang's page-size-1 KV layout: kv_indptr over the requests and kv_indices, distinct
    slots of a token pool of `pool` slots."""
    indptr = torch.zeros(len(seq_lens) + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(torch.tensor(seq_lens), 0)
    indices = torch.randperm(pool, generator=g)[:int(indptr[-1])].to(torch.int32)
    return indptr, indices


# --- decode attention: split-KV stage 1, then the stage-2 reduction ---------------------------------

_STAGE1 = {1: "program", 2: "load_meta", 3: "load_q", 4: "kv_loop", 5: "load_k", 6: "qk",
           7: "load_v", 8: "softmax_acc", 9: "store"}
_STAGE2 = {21: "reduce_program", 22: "reduce_load_meta", 23: "split_loop", 24: "load_split",
           25: "reduce_store"}


def _decode(module, device, grouped):
    import triton
    g = torch.Generator().manual_seed(0)
    max_splits, min_block_kv = 4, 32
    if grouped:  # Gemma-2-9B: 16 query heads on 8 KV heads of 256 dims, logits soft-capped at 50
        batch, heads, kv_heads, d, cap = 8, 16, 8, 256, 50.0
    else:        # Llama-2-7B MHA
        batch, heads, kv_heads, d, cap = 8, 32, 32, 128, 0.0
    seq_lens = torch.randint(40, 2000, (batch,), generator=g).tolist()
    pool = sum(seq_lens) + 1024
    kv_indptr, kv_indices = _ragged(seq_lens, pool, g)
    # as SGLang's get_num_kv_splits chooses them: more splits for longer requests
    num_kv_splits = torch.tensor([min(max_splits, max(1, n // 256)) for n in seq_lens], dtype=torch.int32)
    dt = torch.bfloat16
    q = torch.randn(batch, heads, d, generator=g).to(dt).to(device)
    k_buffer = torch.randn(pool, kv_heads, d, generator=g).to(dt).to(device)
    v_buffer = torch.randn(pool, kv_heads, d, generator=g).to(dt).to(device)
    kv_indptr, kv_indices, num_kv_splits = kv_indptr.to(device), kv_indices.to(device), num_kv_splits.to(device)
    att_out = torch.empty(batch, heads, max_splits, d, dtype=torch.float32, device=device)
    att_lse = torch.empty(batch, heads, max_splits, dtype=torch.float32, device=device)
    o = torch.empty(batch, heads, d, dtype=dt, device=device)
    sm_scale = 1.0 / d ** 0.5
    kv_group_num = heads // kv_heads
    block_d = triton.next_power_of_2(d)

    def launch():
        if grouped:
            # _decode_grouped_att_m_fwd's CUDA launch: BLOCK_N=32, BLOCK_H=16, num_warps=4, num_stages=2
            block_h = 16
            module._fwd_grouped_kernel_stage1[(batch, triton.cdiv(heads, min(block_h, kv_group_num)), max_splits)](
                q, k_buffer, v_buffer, sm_scale, kv_indptr, kv_indices, att_out, att_lse, num_kv_splits,
                q.stride(0), q.stride(1), k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0),
                v_buffer.stride(1), att_out.stride(0), att_out.stride(1), att_out.stride(2),
                kv_group_num=kv_group_num, q_head_num=heads, BLOCK_DMODEL=block_d, BLOCK_DPE=0,
                BLOCK_DV=block_d, BLOCK_N=32, BLOCK_H=block_h, MIN_BLOCK_KV=min_block_kv, logit_cap=cap,
                xai_temperature_len=-1, num_warps=4, num_stages=2, Lk=d, Lv=d)
        else:
            # _decode_att_m_fwd's CUDA launch: BLOCK_N=64, num_warps=4 (MHA), num_stages=2
            module._fwd_kernel_stage1[(batch, heads, max_splits)](
                q, k_buffer, v_buffer, sm_scale, kv_indptr, kv_indices, att_out, att_lse, num_kv_splits,
                q.stride(0), q.stride(1), k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0),
                v_buffer.stride(1), att_out.stride(0), att_out.stride(1), att_out.stride(2),
                kv_group_num=kv_group_num, BLOCK_DMODEL=block_d, BLOCK_DV=block_d, BLOCK_N=64,
                MIN_BLOCK_KV=min_block_kv, logit_cap=cap, xai_temperature_len=-1, num_warps=4,
                num_stages=2, Lk=d, Lv=d)
        # _decode_softmax_reducev_fwd's CUDA launch
        module._fwd_kernel_stage2[(batch, heads)](
            att_out, att_lse, o, 1.0, kv_indptr, num_kv_splits, None, att_out.stride(0),
            att_out.stride(1), att_out.stride(2), o.stride(0), o.stride(1), MAX_KV_SPLITS=max_splits,
            MIN_BLOCK_KV=min_block_kv, BLOCK_DV=block_d, Lv=d, HAS_SINK=False, num_warps=4, num_stages=2)
        return (o,)
    return launch


def _decode_mha(module, device):
    return _decode(module, device, grouped=False)


def _decode_gqa(module, device):
    return _decode(module, device, grouped=True)


# --- extend (prefill with a cached prefix) attention ----------------------------------------------

def _extend(module, device):
    """Four requests extending cached prefixes of 1000/0/517/2000 tokens by 300/129/64/511 new
    ones, Llama-3-8B heads at tensor parallel 4 (8 query on 2 KV heads, 128 dims), the token
    pool addressed through req_to_tokens. extend_attention_fwd's launch on sm90 for Lq <= 256:
    BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=1."""
    import triton
    g = torch.Generator().manual_seed(0)
    prefix, extend = [1000, 0, 517, 2000], [300, 129, 64, 511]
    heads, kv_heads, d = 8, 2, 128
    seq = [p + e for p, e in zip(prefix, extend)]
    pool = sum(seq) + 512
    slots = torch.randperm(pool, generator=g).to(torch.int32)
    req_to_tokens = torch.zeros(len(seq), max(seq), dtype=torch.int32)
    at = 0
    for r, n in enumerate(seq):
        req_to_tokens[r, :n] = slots[at:at + n]
        at += n
    dt = torch.bfloat16
    total = sum(extend)
    q = torch.randn(total, heads, d, generator=g).to(dt).to(device)
    k = torch.randn(total, kv_heads, d, generator=g).to(dt).to(device)
    v = torch.randn(total, kv_heads, d, generator=g).to(dt).to(device)
    k_buffer = torch.randn(pool, kv_heads, d, generator=g).to(dt).to(device)
    v_buffer = torch.randn(pool, kv_heads, d, generator=g).to(dt).to(device)
    o = torch.empty_like(q)
    req_to_tokens = req_to_tokens.to(device)
    b_req_idx = torch.arange(len(seq), dtype=torch.int32, device=device)
    b_seq_len = torch.tensor(seq, dtype=torch.int32, device=device)
    b_seq_len_extend = torch.tensor(extend, dtype=torch.int32, device=device)
    b_start_loc_extend = torch.tensor([0] + list(torch.cumsum(torch.tensor(extend), 0)[:-1]),
                                      dtype=torch.int32, device=device)
    BLOCK_M, BLOCK_N = 128, 64
    grid = (len(seq), heads, triton.cdiv(max(extend), BLOCK_M))

    def launch():
        module._fwd_kernel[grid](
            q, k, v, o, k_buffer, v_buffer, req_to_tokens, b_req_idx, b_seq_len, b_start_loc_extend,
            b_seq_len_extend, 1.0 / d ** 0.5, heads // kv_heads, q.stride(0), q.stride(1), k.stride(0),
            k.stride(1), v.stride(0), v.stride(1), o.stride(0), o.stride(1), k_buffer.stride(0),
            k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1), req_to_tokens.stride(0),
            logit_cap=0.0, BLOCK_DMODEL=d, BLOCK_DPE=0, BLOCK_DV=d, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
            Lq=d, Lv=d, num_warps=8, num_stages=1)
        return (o,)
    return launch


# --- merge_state --------------------------------------------------------------------------------------

def _merge_state(module, device):
    """Two partial attention states of a 256-token chunked prefill merged (DeepSeek-V2-Lite
    prefill heads: 16 x 128), lse laid out [tokens, heads]; the first rows of one side empty
    (lse = inf)."""
    import triton
    g = torch.Generator().manual_seed(0)
    tokens, heads, head_size = 256, 16, 128
    v_a = torch.randn(tokens, heads, head_size, generator=g).to(torch.bfloat16).to(device)
    v_b = torch.randn(tokens, heads, head_size, generator=g).to(torch.bfloat16).to(device)
    s_a = torch.randn(tokens, heads, generator=g) * 3
    s_b = torch.randn(tokens, heads, generator=g) * 3
    s_a[:32] = float("inf")
    s_a, s_b = s_a.to(device), s_b.to(device)
    out = torch.empty_like(v_a)
    out_lse = torch.empty_like(s_a)

    def launch():
        # merge_state's launch
        module.merge_state_kernel[(tokens, heads)](
            out, out_lse, v_a, s_a, v_b, s_b, head_size, triton.next_power_of_2(head_size), True)
        return out, out_lse
    return launch


# --- moe_align_block_size ------------------------------------------------------------------------------

def _moe_align(module, device):
    """The Triton path of moe_align_block_size (ENABLE_MOE_ALIGN_BLOCK_SIZE_TRITON=1): 256 tokens
    routed top-8 over 64 experts (DeepSeek-V2-Lite / OLMoE-sized), block 64: per-expert counts,
    their prefix sums, padded offsets, then the scatter into sorted slots."""
    g = torch.Generator().manual_seed(0)
    tokens, top_k, E, block = 256, 8, 64, 64
    topk_ids = torch.stack([torch.randperm(E, generator=g)[:top_k] for _ in range(tokens)]).to(torch.int32)
    topk_ids = topk_ids.to(device)
    numel = topk_ids.numel()
    padded_max = numel + E * (block - 1)
    sorted_ids = torch.empty(padded_max, dtype=torch.int32, device=device)
    expert_ids = torch.empty(-(-padded_max // block), dtype=torch.int32, device=device)
    post_pad = torch.empty(1, dtype=torch.int32, device=device)
    tokens_cnts = torch.zeros(E + 1, E, dtype=torch.int32, device=device)
    cumsum = torch.zeros(E + 1, dtype=torch.int32, device=device)
    per_thread = -(-numel // E)

    def launch():
        # moe_align_block_size_triton's four launches
        sorted_ids.fill_(numel)
        tokens_cnts.zero_()
        cumsum.zero_()
        module.moe_align_block_size_stage1[(E,)](topk_ids, tokens_cnts, E, numel, per_thread)
        module.moe_align_block_size_stage2[(E,)](tokens_cnts, E)
        module.moe_align_block_size_stage3[(1,)](post_pad, tokens_cnts, cumsum, E, block)
        module.moe_align_block_size_stage4[(E,)](topk_ids, sorted_ids, expert_ids, tokens_cnts, cumsum,
                                                 E, block, numel, per_thread)
        return sorted_ids, expert_ids, post_pad
    return launch


# --- int8 quantisation and the block-scaled int8 GEMM -----------------------------------------------

def _per_token_quant(module, device):
    """Per-token int8 quantisation of 500 rows of Qwen2-7B activations (hidden 3584: the row
    mask has a tail), with the row sums (cal_sum=True). per_token_quant_int8's launch:
    BLOCK=4096, num_warps=8, num_stages=1."""
    import triton
    g = torch.Generator().manual_seed(0)
    rows, hidden = 500, 3584
    x = torch.randn(rows, hidden, generator=g).to(torch.bfloat16).to(device)
    x_q = torch.empty(rows, hidden, dtype=torch.int8, device=device)
    scales = torch.empty(rows, 1, dtype=torch.float32, device=device)
    x_sum = torch.empty(rows, dtype=torch.bfloat16, device=device)
    block = triton.next_power_of_2(hidden)

    def launch():
        module._per_token_quant_int8[(rows,)](
            x, x_q, scales, x_sum, stride_x=x.stride(-2), stride_xq=x_q.stride(-2), N=hidden, CAL_SUM=True,
            BLOCK=block, num_warps=min(max(block // 256, 1), 8), num_stages=1)
        return x_q, scales, x_sum
    return launch


def _per_token_group_quant(module, device):
    """Per-token-group (128) int8 quantisation of a 64-token decode batch of DeepSeek-V3
    activations (hidden 7168: 3584 groups). per_token_group_quant_int8's launch: BLOCK=128, num_warps=1."""
    g = torch.Generator().manual_seed(0)
    tokens, hidden, group = 64, 7168, 128
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16).to(device)
    x_q = torch.empty(tokens, hidden, dtype=torch.int8, device=device)
    x_s = torch.empty(tokens, hidden // group, dtype=torch.float32, device=device)
    info = torch.iinfo(torch.int8)

    def launch():
        module._per_token_group_quant_int8[(tokens * hidden // group,)](
            x, x_q, x_s, group, group, 1e-10, int8_min=info.min, int8_max=info.max, BLOCK=group,
            num_warps=1, num_stages=1)
        return x_q, x_s
    return launch


def _w8a8_block_int8_matmul(module, device):
    """Block-scaled (128x128) int8 GEMM of 200 tokens (not a multiple of BLOCK_SIZE_M: masked
    rows) by a 1536 x 4096 weight. w8a8_block_int8_matmul's default config (no tuned file):
    64/128/128, GROUP_SIZE_M=32, num_warps=4, num_stages=3."""
    import triton
    g = torch.Generator().manual_seed(0)
    M, N, K, bn, bk = 200, 1536, 4096, 128, 128
    A = torch.randint(-127, 128, (M, K), generator=g, dtype=torch.int8).to(device)
    B = torch.randint(-127, 128, (N, K), generator=g, dtype=torch.int8).to(device)
    As = (torch.rand(M, K // bk, generator=g) * 0.01).to(device)
    Bs = (torch.rand(N // bn, K // bk, generator=g) * 0.01).to(device)
    C = torch.empty(M, N, dtype=torch.bfloat16, device=device)
    config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 32,
              "num_warps": 4, "num_stages": 3}
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, bn),)

    def launch():
        module._w8a8_block_int8_matmul[grid](
            A, B, C, As, Bs, M, N, K, bn, bk, A.stride(-2), A.stride(-1), B.stride(1), B.stride(0),
            C.stride(-2), C.stride(-1), As.stride(-2), As.stride(-1), Bs.stride(1), Bs.stride(0), **config)
        return (C,)
    return launch


_EXTEND = {1: "program", 2: "load_meta", 3: "load_q", 4: "prefix_loop", 5: "load_k_prefix",
           6: "dot_qk_prefix", 9: "softmax_prefix", 10: "load_v_prefix", 11: "dot_pv_prefix",
           12: "extend_loop", 13: "load_k", 14: "dot_qk", 17: "softmax", 18: "load_v", 19: "dot_pv",
           20: "store"}
_ALIGN = {1: "count_program", 2: "count_loop", 3: "count_load", 4: "count_store",
          11: "cumsum_program", 12: "cumsum_loop", 13: "cumsum_load", 14: "cumsum_store",
          21: "pad_program", 22: "pad_loop", 23: "pad_load", 24: "pad_store", 25: "pad_store_total",
          31: "scatter_program", 32: "scatter_load_range", 33: "expert_id_loop", 34: "scatter_loop",
          35: "scatter_load", 36: "scatter_store"}

CASES = [
    # MHA decode over ragged kv_indices: per-request split counts (empty splits skip the loop),
    # sum reductions; then the stage-2 reduction.
    Case("sglang/decode_attention_mha", "sglang/decode_attention", r"_fwd_kernel_stage[12]",
         {**_STAGE1, **_STAGE2}, _decode_mha),
    # GQA decode: tl.dot over a 16-row head block of which 2 rows are live (masked), soft-capped
    # logits (tanh); then stage 2.
    Case("sglang/decode_attention_gqa", "sglang/decode_attention", r"_fwd_grouped_kernel_stage1|_fwd_kernel_stage2",
         {**_STAGE1, 6: "dot_qk", 8: "softmax_dot_pv", **_STAGE2}, _decode_gqa),
    # Two data-dependent loops (prefix through req_to_tokens, causal extend part), masked loads, dots.
    Case("sglang/extend_attention", "sglang/extend_attention", r"_fwd_kernel", _EXTEND, _extend),
    Case("sglang/merge_state", "sglang/merge_state", r"merge_state_kernel",
         {1: "program", 2: "load_lse", 3: "store_lse", 4: "load_out", 5: "store_out"}, _merge_state),
    # Scalar loops with loads and stores, a single-program kernel, data-dependent trip counts.
    Case("sglang/moe_align_block_size", "sglang/moe_align_block_size", r"moe_align_block_size_stage[1-4]",
         _ALIGN, _moe_align),
    Case("sglang/per_token_quant_int8", "sglang/int8_kernel", r"_per_token_quant_int8",
         {1: "program", 2: "load", 3: "absmax", 4: "row_sum", 5: "store"}, _per_token_quant),
    Case("sglang/per_token_group_quant_int8", "sglang/int8_kernel", r"_per_token_group_quant_int8",
         {11: "program", 12: "load", 13: "absmax", 14: "store"}, _per_token_group_quant),
    # int8 dots in a K loop with per-block scale loads.
    Case("sglang/w8a8_block_int8_matmul", "sglang/int8_kernel", r"_w8a8_block_int8_matmul",
         {21: "program", 22: "k_loop", 23: "load_ab", 24: "load_scales", 25: "dot", 26: "store"},
         _w8a8_block_int8_matmul),
]
