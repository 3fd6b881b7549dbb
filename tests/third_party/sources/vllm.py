"""vLLM (vllm-project/vllm): LLM inference engine kernels. The repository is too large to
mirror: each file was read at the commit its Source pins (the files differ in commit)."""
import torch

from third_party import Case, Source

REPO, LICENCE = "vllm-project/vllm", "Apache-2.0"

SOURCES = [
    Source("vllm/decode_attention", REPO, "0f490657b61ebaa34ed228e1616f9115be2e4adf",
           "vllm/attention/ops/triton_decode_attention.py", LICENCE,
           ("tanh _fwd_kernel_stage1 _fwd_grouped_kernel_stage1 _fwd_kernel_stage2",)),
    Source("vllm/fused_moe", REPO, "000d1458098ebf47491dad470d164d443ab18a9c",
           "vllm/model_executor/layers/fused_moe/fused_moe.py", LICENCE,
           ("write_zeros_to_output fused_moe_kernel",)),
    Source("vllm/merge_attn_states", REPO, "0a345fd0bd5985d65fc4cfe3f8c617c2fd2aa80d",
           "vllm/attention/ops/triton_merge_attn_states.py", LICENCE,
           ("merge_attn_states_kernel",)),
    Source("vllm/sgmv_shrink", REPO, "1628e182a28a5ac6f40672b74d7fd7171f97f3c4",
           "vllm/lora/ops/triton_ops/sgmv_shrink.py", LICENCE,
           ("_sgmv_shrink_kernel",)),
    Source("vllm/prefix_prefill", REPO, "0420dfc4327cbdb71790b094a182ab24d05819ed",
           "vllm/v1/attention/ops/prefix_prefill.py", LICENCE,
           ("float8_info _fwd_kernel",)),
]


def _paged(seq_lens, page, generator):
    """A block table (batch, max pages) of distinct shuffled page numbers, and the page count."""
    pages = [-(-int(n) // page) for n in seq_lens]
    order = torch.randperm(sum(pages), generator=generator).to(torch.int32)
    table = torch.zeros(len(pages), max(pages), dtype=torch.int32)
    at = 0
    for row, n in enumerate(pages):
        table[row, :n] = order[at:at + n]
        at += n
    return table, sum(pages)


# --- decode attention: split-KV stage 1 over a paged cache, then the stage-2 reduction ----------

_STAGE1 = {1: "program", 2: "load_len", 3: "load_q", 4: "kv_loop", 5: "load_k", 6: "qk",
           7: "load_v", 8: "softmax_acc", 9: "store"}
_GROUPED = {1: "program", 2: "load_len", 3: "load_q", 4: "kv_loop", 5: "load_k", 6: "dot_qk",
            7: "load_v", 8: "softmax_dot_pv", 9: "store", 10: "load_kpe", 11: "dot_qpe"}
_STAGE2 = {21: "reduce_program", 22: "reduce_load_len", 23: "split_loop", 24: "load_split",
           25: "reduce_store"}


def _decode_common(module, device, grouped):
    import triton
    g = torch.Generator().manual_seed(0)
    page, splits = 16, 4
    if grouped:  # DeepSeek MLA decode: 16 query heads on one latent KV head, 512 + 64 rope dims
        batch, heads, kv_heads, lk, lv = 16, 16, 1, 576, 512
        seq_lens = torch.randint(500, 4000, (batch,), generator=g)
    else:        # Llama-2-7B MHA decode
        batch, heads, kv_heads, lk, lv = 8, 32, 32, 128, 128
        seq_lens = torch.randint(60, 2000, (batch,), generator=g)
    table, num_pages = _paged(seq_lens.tolist(), page, g)
    dt = torch.bfloat16
    q = torch.randn(batch, heads, lk, generator=g).to(dt).to(device)
    k_buffer = torch.randn(num_pages, page, kv_heads, lk, generator=g).to(dt).to(device)
    v_buffer = k_buffer[..., :lv] if grouped else \
        torch.randn(num_pages, page, kv_heads, lv, generator=g).to(dt).to(device)
    table, b_seq_len = table.to(device), seq_lens.to(torch.int32).to(device)
    att_out = torch.empty(batch, heads, splits, lv + 1, dtype=torch.float32, device=device)
    o = torch.empty(batch, heads, lv, dtype=dt, device=device)
    sm_scale = 1.0 / (192 ** 0.5 if grouped else lk ** 0.5)
    kv_group_num = heads // kv_heads

    def stage2():
        # _decode_softmax_reducev_fwd's CUDA launch
        module._fwd_kernel_stage2[(batch, heads)](
            att_out, o, b_seq_len, att_out.stride(0), att_out.stride(1), att_out.stride(2),
            o.stride(0), o.stride(1), NUM_KV_SPLITS=splits, BLOCK_DV=triton.next_power_of_2(lv), Lv=lv,
            num_warps=4, num_stages=2)

    def launch_mha():
        # _decode_att_m_fwd's CUDA launch: BLOCK_N=64, num_warps=4 (MHA), num_stages=2
        module._fwd_kernel_stage1[(batch, heads, splits)](
            q, k_buffer, v_buffer, sm_scale, table, b_seq_len, att_out, table.stride(0),
            q.stride(0), q.stride(1), k_buffer.stride(-3), k_buffer.stride(-2), v_buffer.stride(-3),
            v_buffer.stride(-2), att_out.stride(0), att_out.stride(1), att_out.stride(2),
            kv_group_num=kv_group_num, BLOCK_DMODEL=triton.next_power_of_2(lk),
            BLOCK_DV=triton.next_power_of_2(lv), BLOCK_N=64, NUM_KV_SPLITS=splits, PAGE_SIZE=page,
            logit_cap=0.0, num_warps=4, num_stages=2, Lk=lk, Lv=lv)
        stage2()
        return (o,)

    def launch_grouped():
        # _decode_grouped_att_m_fwd's CUDA launch for Lk=576: BLOCK_DMODEL=512, BLOCK_DPE=64,
        # BLOCK_N=32, BLOCK_H=16, num_warps=4, num_stages=2
        block_h = 16
        module._fwd_grouped_kernel_stage1[(batch, triton.cdiv(heads, min(block_h, kv_group_num)), splits)](
            q, k_buffer, v_buffer, sm_scale, table, b_seq_len, att_out, table.stride(0),
            q.stride(0), q.stride(1), k_buffer.stride(-3), k_buffer.stride(-2), v_buffer.stride(-3),
            v_buffer.stride(-2), att_out.stride(0), att_out.stride(1), att_out.stride(2),
            kv_group_num=kv_group_num, q_head_num=heads, BLOCK_DMODEL=512, BLOCK_DPE=64,
            BLOCK_DV=triton.next_power_of_2(lv), BLOCK_N=32, BLOCK_H=block_h, NUM_KV_SPLITS=splits,
            PAGE_SIZE=page, logit_cap=0.0, num_warps=4, num_stages=2, Lk=lk, Lv=lv)
        stage2()
        return (o,)
    return launch_grouped if grouped else launch_mha


def _decode_mha(module, device):
    return _decode_common(module, device, grouped=False)


def _decode_mla(module, device):
    return _decode_common(module, device, grouped=True)


# --- fused MoE -----------------------------------------------------------------------------------

def _moe_align(topk_ids, block, num_experts, expert_map=None):
    """What moe_align_block_size returns: token slots sorted by expert, each expert's run padded
    to a multiple of `block` with the sentinel numel; one expert id per block (-1 where the
    expert is not on this rank)."""
    import triton
    flat = topk_ids.flatten()
    numel = flat.numel()
    padded_max = numel + num_experts * (block - 1)
    sorted_ids = torch.full((padded_max,), numel, dtype=torch.int32)
    expert_ids = torch.full((triton.cdiv(padded_max, block),), -1, dtype=torch.int32)
    at = 0
    for e in range(num_experts):
        slots = (flat == e).nonzero().flatten().to(torch.int32)
        run = triton.cdiv(slots.numel(), block) * block
        sorted_ids[at:at + slots.numel()] = slots
        expert_ids[at // block:(at + run) // block] = e if expert_map is None else expert_map[e]
        at += run
    return sorted_ids, expert_ids, torch.tensor([at], dtype=torch.int32)


def _route(tokens, top_k, num_experts, g):
    logits = torch.randn(tokens, num_experts, generator=g)
    weights, ids = torch.topk(torch.softmax(logits, -1), top_k, dim=-1)
    return (weights / weights.sum(-1, keepdim=True)).float(), ids.to(torch.int32)


def _fused_moe_launch(module, A, B, C, A_scale, B_scale, topk_w, sorted_ids, expert_ids, post_pad,
                      mul_routed_weight, top_k, config, use_fp8, block_shape):
    """invoke_fused_moe_kernel's launch of fused_moe_kernel, config passed as it passes it."""
    import triton
    import triton.language as tl
    config = dict(config)
    EM = sorted_ids.shape[0]
    grid = (triton.cdiv(EM, config["BLOCK_SIZE_M"]) * triton.cdiv(B.shape[1], config["BLOCK_SIZE_N"]),)
    module.fused_moe_kernel[grid](
        A, B, C, A_scale, B_scale, topk_w, sorted_ids, expert_ids, post_pad,
        B.shape[1], B.shape[2], EM, A.shape[0] * top_k,
        A.stride(0), A.stride(1), B.stride(0), B.stride(2), B.stride(1), C.stride(-2), C.stride(-1),
        A_scale.stride(0) if A_scale is not None else 0, A_scale.stride(1) if A_scale is not None else 0,
        B_scale.stride(0) if B_scale is not None else 0, B_scale.stride(2) if B_scale is not None else 0,
        B_scale.stride(1) if B_scale is not None else 0,
        0 if block_shape is None else block_shape[0], 0 if block_shape is None else block_shape[1],
        MUL_ROUTED_WEIGHT=mul_routed_weight, top_k=top_k, compute_type=tl.bfloat16,
        use_fp8_w8a8=use_fp8, use_int8_w8a8=False, use_int8_w8a16=False, per_channel_quant=False,
        **config)


def _fused_moe_bf16(module, device):
    """Mixtral-8x7B down-projection GEMM (TP=8: intermediate 1792 -> hidden 4096) for 128
    tokens routed top-2, the routing weights applied (MUL_ROUTED_WEIGHT, top_k=1 over the
    token slots), as fused_experts_impl's second invoke_fused_moe_kernel runs it. The fixed
    config is the "128" entry of vLLM's tuned E=8,N=1792,device_name=NVIDIA_H200.json
    (64/128/64, GROUP_SIZE_M=1, num_warps=4, num_stages=4)."""
    g = torch.Generator().manual_seed(0)
    tokens, hidden, inter, E, top_k = 128, 4096, 1792, 8, 2
    config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
              "num_warps": 4, "num_stages": 4}
    dt = torch.bfloat16
    topk_w, topk_ids = _route(tokens, top_k, E, g)
    sorted_ids, expert_ids, post_pad = _moe_align(topk_ids, config["BLOCK_SIZE_M"], E)
    w2 = (torch.randn(E, hidden, inter, generator=g) * 0.02).to(dt).to(device)
    act = (torch.randn(tokens * top_k, inter, generator=g) * 0.5).to(dt).to(device)
    c3 = torch.empty(tokens, top_k, hidden, dtype=dt, device=device)
    topk_w, sorted_ids, expert_ids, post_pad = (t.to(device) for t in (topk_w, sorted_ids, expert_ids, post_pad))

    def launch():
        _fused_moe_launch(module, act, w2, c3, None, None, topk_w, sorted_ids, expert_ids, post_pad,
                          True, 1, config, False, None)
        return (c3,)
    return launch


def _fused_moe_fp8_block(module, device):
    """DeepSeek-style fp8 w8a8 with 128x128 block scales, gate/up GEMM, on one rank of two-way
    expert parallelism: 64 experts, 32 of them here (blocks of the others are written zero),
    top-8 of 256 tokens. get_default_config's fp8 block config: 64/128/128, GROUP_SIZE_M=32,
    num_warps=4, num_stages=3."""
    g = torch.Generator().manual_seed(1)
    tokens, hidden, inter, E, local, top_k = 128, 2048, 512, 64, 32, 8
    config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 32,
              "num_warps": 4, "num_stages": 3}
    expert_map = [e - local if e >= local else -1 for e in range(E)]  # rank 1 holds experts 32..63
    topk_w, topk_ids = _route(tokens, top_k, E, g)
    sorted_ids, expert_ids, post_pad = _moe_align(topk_ids, config["BLOCK_SIZE_M"], E, expert_map)
    fp8 = torch.float8_e4m3fn
    a = torch.randn(tokens, hidden, generator=g).to(fp8).to(device)
    a_scale = (torch.rand(tokens, hidden // 128, generator=g) * 0.01 + 0.001).to(device)
    w = (torch.randn(local, 2 * inter, hidden, generator=g)).to(fp8).to(device)
    w_scale = (torch.rand(local, 2 * inter // 128, hidden // 128, generator=g) * 0.001).to(device)
    c = torch.empty(tokens, top_k, 2 * inter, dtype=torch.bfloat16, device=device)
    topk_w, sorted_ids, expert_ids, post_pad = (t.to(device) for t in (topk_w, sorted_ids, expert_ids, post_pad))

    def launch():
        _fused_moe_launch(module, a, w, c, a_scale, w_scale, topk_w, sorted_ids, expert_ids, post_pad,
                          False, top_k, config, True, [128, 128])
        return (c,)
    return launch


# --- merge_attn_states ----------------------------------------------------------------------------

def _merge_attn_states(module, device):
    """Prefix (cached context) and suffix (new tokens) partial attention of a 256-token chunked
    prefill merged, Phi-3-mini heads (32 x 96: the head mask has a tail); a few prefix rows are
    empty (lse = inf, as FA2 writes for zero-length context)."""
    import triton
    g = torch.Generator().manual_seed(0)
    tokens, heads, head_size = 256, 32, 96
    p_out = torch.randn(tokens, heads, head_size, generator=g).to(torch.bfloat16)
    s_out = torch.randn(tokens, heads, head_size, generator=g).to(torch.bfloat16)
    p_lse = torch.randn(heads, tokens, generator=g) * 3
    s_lse = torch.randn(heads, tokens, generator=g) * 3
    p_lse[:, :32] = float("inf")
    p_out, s_out, p_lse, s_lse = (t.to(device) for t in (p_out, s_out, p_lse, s_lse))
    out = torch.empty_like(p_out)
    out_lse = torch.empty_like(p_lse)

    def launch():
        module.merge_attn_states_kernel[(tokens, heads)](
            out, out_lse, p_out, p_lse, s_out, s_lse, head_size, triton.next_power_of_2(head_size), True)
        return out, out_lse
    return launch


# --- LoRA shrink ------------------------------------------------------------------------------------

def _sgmv_shrink(module, device):
    """Multi-LoRA prefill shrink (x @ A^T, rank 16) for 8 sequences of 4 adapters (one sequence
    without one: lora index -1), gpt-oss hidden size 2880 (not a multiple of BLOCK_K * SPLIT_K:
    the masked K loop). _sgmv_shrink's fixed config: BLOCK_M=32, BLOCK_N=16, BLOCK_K=32,
    SPLIT_K=8 (partial sums atomically added)."""
    import triton
    g = torch.Generator().manual_seed(0)
    seq_lens = torch.tensor([512, 37, 300, 1, 129, 256, 77, 400], dtype=torch.int32)
    lora_ids = torch.tensor([0, 1, -1, 2, 3, 0, 1, 2], dtype=torch.int32)
    starts = torch.cumsum(seq_lens, 0).to(torch.int32) - seq_lens
    tokens, hidden, rank, loras = int(seq_lens.sum()), 2880, 16, 4
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16).to(device)
    lora_a = (torch.randn(loras, rank, hidden, generator=g) * 0.02).to(torch.bfloat16).to(device)
    out = torch.zeros(1, tokens, rank, dtype=torch.float32, device=device)
    seq_lens, lora_ids, starts = seq_lens.to(device), lora_ids.to(device), starts.to(device)
    BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K = 32, 16, 32, 8
    grid = (triton.cdiv(512, BLOCK_M) * triton.cdiv(rank, BLOCK_N), SPLIT_K, len(seq_lens))

    def launch():
        out.zero_()
        module._sgmv_shrink_kernel[grid](
            x, lora_a, out, rank, hidden, starts, seq_lens, lora_ids, 0.5,
            x.stride(0), x.stride(1), lora_a.stride(0), lora_a.stride(1), lora_a.stride(2),
            out.stride(0), out.stride(1), out.stride(2),
            BLOCK_M, BLOCK_N, BLOCK_K, hidden % (BLOCK_K * SPLIT_K) == 0, SPLIT_K, 1)
        return (out,)
    return launch


# --- prefix prefill ---------------------------------------------------------------------------------

def _prefix_prefill(module, device):
    """Chunked prefill over a paged prefix cache (vLLM's 5-D K layout, x=8), Llama-3-8B heads
    at tensor parallel 4 (8 query on 2 KV heads, 128 dims), four sequences with cached contexts of 1000/517/2048/0
    tokens and 300/129/64/511 new ones. context_attention_fwd's launch for a power-of-two block
    size: BLOCK_M=128, BLOCK_N=64, BLOCK_SIZE=32, num_warps=4, num_stages=1, unroll 4 and 1."""
    import triton
    g = torch.Generator().manual_seed(0)
    ctx = [1000, 517, 2048, 0]
    qlen = [300, 129, 64, 511]
    heads, kv_heads, d, page, x = 8, 2, 128, 16, 8
    seq = [c + n for c, n in zip(ctx, qlen)]
    table, num_pages = _paged([max(c, 1) for c in ctx], page, g)
    dt = torch.bfloat16
    total = sum(qlen)
    q = torch.randn(total, heads, d, generator=g).to(dt).to(device)
    k = torch.randn(total, kv_heads, d, generator=g).to(dt).to(device)
    v = torch.randn(total, kv_heads, d, generator=g).to(dt).to(device)
    k_cache = torch.randn(num_pages, kv_heads, d // x, page, x, generator=g).to(dt).to(device)
    v_cache = torch.randn(num_pages, kv_heads, d, page, generator=g).to(dt).to(device)
    b_start = torch.tensor([0] + list(torch.cumsum(torch.tensor(qlen), 0)), dtype=torch.int32).to(device)
    b_seq = torch.tensor(seq, dtype=torch.int32).to(device)
    table = table.to(device)
    o = torch.empty_like(q)
    one = torch.ones(1, dtype=torch.float32, device=device)
    BLOCK_M, BLOCK_N = 128, 64
    grid = (len(seq), heads, triton.cdiv(max(qlen), BLOCK_M))

    def launch():
        module._fwd_kernel[grid](
            q, k, v, k_cache, v_cache, None, table, 1.0 / d ** 0.5, one, one, 1.0, b_start, b_seq, x, o,
            table.stride(0), table.stride(1), q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
            o.stride(0), o.stride(1), o.stride(2),
            stride_k_cache_bs=k_cache.stride(0), stride_k_cache_h=k_cache.stride(1),
            stride_k_cache_d=k_cache.stride(2), stride_k_cache_bl=k_cache.stride(3),
            stride_k_cache_x=k_cache.stride(4), stride_v_cache_bs=v_cache.stride(0),
            stride_v_cache_h=v_cache.stride(1), stride_v_cache_d=v_cache.stride(2),
            stride_v_cache_bl=v_cache.stride(3), BLOCK_SIZE=32, PHYSICAL_BLOCK_SIZE=page,
            num_queries_per_kv=heads // kv_heads, IN_PRECISION=None, BLOCK_DMODEL=d,
            BLOCK_DMODEL_PADDED=d, SLIDING_WINDOW=0, SKIP_DECODE=False, USE_FP8=False,
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_unroll_cache=4, num_unroll_request=1,
            num_warps=4, num_stages=1, USE_SINKS=False)
        return (o,)
    return launch


_MOE = {1: "program", 2: "load_padded", 3: "load_ids", 4: "write_zeros", 5: "k_loop", 6: "load_ab",
        7: "load_scales", 8: "dot_scaled", 9: "dot", 10: "load_weight", 11: "store"}
_PREFIX = {1: "program", 2: "load_lens", 3: "load_q", 4: "ctx_loop", 5: "load_blocks", 6: "load_k_cache",
           7: "dot_qk_ctx", 8: "softmax_ctx", 9: "load_v_cache", 10: "dot_pv_ctx", 11: "causal_loop",
           12: "load_k", 13: "dot_qk", 14: "softmax", 15: "load_v", 16: "dot_pv", 17: "store"}

CASES = [
    # MHA decode: stage 1 (masked paged loads, sum reductions, data-dependent loop inside an if),
    # then the stage-2 reduction over the splits.
    Case("vllm/decode_attention_mha", "vllm/decode_attention", r"_fwd_kernel_stage[12]",
         {**_STAGE1, **_STAGE2}, _decode_mha),
    # MLA decode: grouped stage 1 (tl.dot over 16 heads, the rope part as a second dot), stage 2.
    Case("vllm/decode_attention_mla", "vllm/decode_attention", r"_fwd_grouped_kernel_stage1|_fwd_kernel_stage2",
         {**_GROUPED, **_STAGE2}, _decode_mla),
    # bf16 down GEMM: early return past the padded tokens, K loop of dots, routing-weight load.
    Case("vllm/fused_moe_bf16", "vllm/fused_moe", r"fused_moe_kernel",
         {k: v for k, v in _MOE.items() if k not in (4, 7, 8)}, _fused_moe_bf16),
    # fp8 block-scaled with expert parallelism: the -1 expert branch (zeros, early return),
    # per-block scale loads and scaled dots.
    Case("vllm/fused_moe_fp8_block", "vllm/fused_moe", r"fused_moe_kernel",
         {k: v for k, v in _MOE.items() if k not in (9, 10)}, _fused_moe_fp8_block),
    Case("vllm/merge_attn_states", "vllm/merge_attn_states", r"merge_attn_states_kernel",
         {1: "program", 2: "load_lse", 3: "store_lse", 4: "load_out", 5: "store_out"}, _merge_attn_states),
    # Two early returns, masked K loop of dots, split-K atomic adds.
    Case("vllm/sgmv_shrink", "vllm/sgmv_shrink", r"_sgmv_shrink_kernel",
         {1: "program", 2: "load_len", 3: "load_lora", 4: "load_start", 5: "k_loop", 7: "load_masked",
          8: "dot", 10: "atomic_add"}, _sgmv_shrink, exact=False),
    # Two loops (an unrolled one over the paged context, a causal one), runtime-masked loads, dots.
    Case("vllm/prefix_prefill", "vllm/prefix_prefill", r"_fwd_kernel", _PREFIX, _prefix_prefill),
]
