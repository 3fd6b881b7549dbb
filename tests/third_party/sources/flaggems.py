"""FlagGems (FlagOpen/FlagGems): a Triton operator library for PyTorch (aten ops as Triton kernels).
Its kernels are wrapped in its own decorators (libentry, libtuner, autotune/heuristics read from
its runtime configs): the marked modules keep the @triton.jit kernels only, and each launch below
passes the one config FlagGems' NVIDIA heuristics/tune tables would pick (or one of them)."""
import torch

from third_party import Case, Source

REPO, COMMIT, LICENCE = "FlagOpen/FlagGems", "532ff438c70343d7aec9becdabb76a71225a0553", "Apache-2.0"
OPS = "src/flag_gems/ops/"
TLE = "src/flag_gems/utils/triton_lang_extension.py"
LIMITS = "src/flag_gems/utils/limits.py"

SOURCES = [
    Source("flaggems/dropout", REPO, COMMIT, OPS + "dropout.py", LICENCE, ("dropout_forward_kernel",)),
    Source("flaggems/softmax", REPO, COMMIT, OPS + "softmax.py", LICENCE,
           ("prev_multiple_of softmax_kernel_inner", TLE + ":program_id")),
    Source("flaggems/vector_norm", REPO, COMMIT, OPS + "vector_norm.py", LICENCE,
           ("l2_norm_kernel", TLE + ":program_id")),
    Source("flaggems/masked_select", REPO, COMMIT, OPS + "masked_select.py", LICENCE,
           ("mask_part_sum_kernel write_back_kernel",)),
    Source("flaggems/count_nonzero", REPO, COMMIT, OPS + "count_nonzero.py", LICENCE,
           ("count_nonzero_kernel_1", TLE + ":program_id")),
    Source("flaggems/topk", REPO, COMMIT, OPS + "topk.py", LICENCE,
           ("_MIN_FLOAT32_VAL _MAX_FLOAT32_VAL _MIN_FLOAT16_VAL _MAX_FLOAT16_VAL _MIN_BFLOAT16_VAL _MAX_BFLOAT16_VAL"
            " _MIN_INT32_VAL _MAX_INT32_VAL _get_finfo_val topk_stage1_kernel _compare_and_swap _bitonic_merge"
            " argsort topk_stage2_kernel", TLE + ":program_id num_programs")),
    Source("flaggems/argmax", REPO, COMMIT, OPS + "argmax.py", LICENCE,
           ("argmax_kernel", TLE + ":program_id", LIMITS + ":get_dtype_min")),
    Source("flaggems/cumsum", REPO, COMMIT, OPS + "cumsum.py", LICENCE,
           ("get_scan_accum_type reduce_then_scan_block_scan_kernel_row",)),
    Source("flaggems/layernorm", REPO, COMMIT, OPS + "layernorm.py", LICENCE,
           ("prev_multiple_of layer_norm_persistent_kernel layer_norm_loop_kernel", TLE + ":program_id")),
    Source("flaggems/rms_norm", REPO, COMMIT, OPS + "rms_norm.py", LICENCE, ("rms_norm_kernel",)),
    Source("flaggems/embedding", REPO, COMMIT, OPS + "embedding.py", LICENCE,
           ("embedding_kernel embedding_backward_kernel", TLE + ":program_id")),
    Source("flaggems/index_select", REPO, COMMIT, OPS + "index_select.py", LICENCE,
           ("index_select_kernel", TLE + ":program_id")),
    Source("flaggems/mean_ascend", REPO, COMMIT, "src/flag_gems/runtime/backend/_ascend/ops/mean.py", LICENCE,
           ("mean_kernel_1",)),
]



def _dropout(module, device):
    import triton
    torch.manual_seed(0)
    n = 3 * 1024 * 1024 + 1  # a masked tail
    x = torch.randn(n, device=device, dtype=torch.float16)
    y = torch.empty_like(x)
    keep = torch.empty(n, device=device, dtype=torch.bool)
    block = 1024  # the dropout heuristic for N > 1024: BLOCK=1024, num_warps=16

    def launch():
        module.dropout_forward_kernel[(triton.cdiv(n, block * 4),)](x, y, keep, n, 0.3, 1234, 0, BLOCK=block,
                                                                     num_warps=16)
        return y, keep
    return launch


def _softmax(rows, cols, dtype):
    def setup(module, device):
        import triton
        torch.manual_seed(0)
        x = torch.randn(rows, cols, device=device, dtype=dtype)
        out = torch.empty_like(x)
        # the softmax_inner heuristics: TILE_N = next_power_of_2(N) up to 32K columns, else 4096;
        # ONE_TILE_PER_CTA = TILE_N >= N; num_warps 4 / 8 / 16 for TILE_N < 2048 / < 4096 / larger
        tile = triton.next_power_of_2(cols) if cols <= 32 * 1024 else 4096
        warps = 4 if tile < 2048 else 8 if tile < 4096 else 16

        def launch():
            module.softmax_kernel_inner[(rows, 1, 1)](out, x, rows, cols, TILE_N=tile, ONE_TILE_PER_CTA=tile >= cols,
                                                      num_warps=warps)
            return (out,)
        return launch
    return setup


def _vector_norm(module, device):
    import triton
    torch.manual_seed(0)
    rows, cols = 4096, 3000  # torch.linalg.vector_norm(x, 2, dim=-1) over rows not a multiple of BLOCK_N
    x = torch.randn(rows, cols, device=device, dtype=torch.float16)
    out = torch.empty(rows, 1, device=device, dtype=torch.float16)
    block_m, block_n = 4, 1024  # one of the "vector_norm" tune configs: BLOCK_M in 1/2/4/8, BLOCK_N=1024, 4 warps

    def launch():
        module.l2_norm_kernel[(triton.cdiv(rows, block_m),)](x, out, rows, cols, BLOCK_M=block_m, BLOCK_N=block_n,
                                                             num_warps=4)
        return (out,)
    return launch


H200_SMS = 132  # torch_device_fn.get_device_properties(...).multi_processor_count on the H200


def _masked_select_plan(device):
    """masked_select's launch plan for N > 4096 (its own arithmetic), on inputs with a masked tail."""
    import triton
    torch.manual_seed(0)
    n = 4 * 1024 * 1024 + 37
    inp = torch.randn(n, device=device, dtype=torch.float32)
    mask = torch.rand(n, device=device) < 0.5
    block = 4096  # bracket_next_power_of_2(N, 128, 4096)
    warps = min(16, block // 32)
    n_blocks = triton.cdiv(n, block)
    rows = min(n_blocks, H200_SMS)
    per_row = triton.cdiv(n_blocks, rows)
    rows = triton.cdiv(n_blocks, per_row)
    return inp, mask, n, n_blocks, per_row, rows, triton.next_power_of_2(rows), block, warps


def _masked_select_part_sum(module, device):
    inp, mask, n, n_blocks, per_row, rows, np_block, block, warps = _masked_select_plan(device)
    part_sums = torch.empty(rows + 1, dtype=torch.int32, device=device)
    counter = torch.zeros([], dtype=torch.int32, device=device)

    def launch():
        counter.zero_()  # the last program to arrive (atomic counter) scans the per-program sums
        module.mask_part_sum_kernel[(rows,)](inp, mask, part_sums, counter, n, n_blocks, per_row, NP_BLOCK=np_block,
                                             BLOCK_SIZE=block, num_warps=warps)
        return (part_sums,)
    return launch


def _masked_select_write_back(module, device):
    inp, mask, n, n_blocks, per_row, rows, np_block, block, warps = _masked_select_plan(device)
    # what mask_part_sum_kernel leaves in part_sums: each program's exclusive prefix, then the total
    counts = torch.nn.functional.pad(mask.to(torch.int32), (0, rows * per_row * block - n)).view(rows, -1).sum(1)
    part_sums = torch.cat([counts.cumsum(0) - counts, counts.sum().view(1)]).to(torch.int32)
    out = torch.empty(int(mask.sum()), dtype=inp.dtype, device=device)

    def launch():
        module.write_back_kernel[(rows,)](inp, mask, part_sums, out, n, n_blocks, per_row, NP_BLOCK=np_block,
                                          BLOCK_SIZE=block, num_warps=warps)
        return (out,)
    return launch


def _count_nonzero(module, device):
    import triton
    torch.manual_seed(0)
    n = 5 * 1000 * 1000 + 3
    x = torch.randn(n, device=device) * (torch.rand(n, device=device) < 0.3)
    out = torch.zeros(1, dtype=torch.int64, device=device)
    block = 1024  # count_nonzero(x) with dim=None: BLOCK_SIZE=1024

    def launch():
        out.zero_()
        module.count_nonzero_kernel_1[(triton.cdiv(n, block),)](x, out, n, BLOCK_SIZE=block)
        return (out,)
    return launch


def _topk_plan(module, device):
    import triton
    torch.manual_seed(0)
    batch, n, k = 128, 32000, 8  # top-8 over a vocabulary's logits, per row
    x = torch.randn(batch, n, device=device, dtype=torch.float32)
    chunk = 1024  # topk's chunk_size for rows of 1024 or more
    chunks = triton.cdiv(n, chunk)
    y1 = torch.empty(batch * chunks * k, device=device, dtype=x.dtype)
    i1 = torch.empty(batch * chunks * k, device=device, dtype=torch.int64)

    def stage1():
        module.topk_stage1_kernel[(batch, chunks)](y1, i1, x, k, n, chunk, True)
        return y1, i1
    return batch, chunks, k, x, stage1


def _topk_stage1(module, device):
    return _topk_plan(module, device)[-1]


def _topk_stage2(module, device):
    import triton
    batch, chunks, k, x, stage1 = _topk_plan(module, device)
    y1, i1 = stage1()  # the per-chunk candidates stage 2 sorts
    y2 = torch.empty(batch, k, device=device, dtype=x.dtype)
    i2 = torch.empty(batch, k, device=device, dtype=torch.int64)
    m = chunks * k

    def launch():
        module.topk_stage2_kernel[(batch,)](y2, i2, y1, i1, 1, k, m, triton.next_power_of_2(m), True)
        return y2, i2
    return launch


def _argmax(module, device):
    import triton
    torch.manual_seed(0)
    m, n = 1024, 32000  # argmax(logits, dim=-1)
    x = torch.randn(m, n, device=device, dtype=torch.float16)
    out = torch.empty(m, dtype=torch.int64, device=device)
    block_m, block_n = 4, 4096  # the argmax heuristics: BLOCK_M 4 below 4096 rows, BLOCK_N min(4096, next_pow2(N))

    def launch():
        module.argmax_kernel[(triton.cdiv(m, block_m), 1)](x, out, m, n, 1, BLOCK_M=block_m, BLOCK_N=block_n)
        return (out,)
    return launch


def _cumsum(module, device):
    import triton
    torch.manual_seed(0)
    m, n = 4, 4 * 1000 * 1000 + 7  # cumsum(x, dim=-1) over long rows: reduce_then_scan_row's 3-kernel path
    x = torch.randn(m, n, device=device, dtype=torch.float32)
    out = torch.empty_like(x)
    tile = 4096
    warps = 8
    tiles = triton.cdiv(n, tile)
    ctas = min(tiles, H200_SMS * 4)
    per_cta = triton.cdiv(tiles, ctas)
    # what its first two kernels leave for the third: the inclusive prefix of each CTA's block sum
    sums = torch.nn.functional.pad(x, (0, ctas * per_cta * tile - n)).view(m, ctas, -1).sum(-1)
    prefix = sums.cumsum(-1)

    def launch():
        module.reduce_then_scan_block_scan_kernel_row[(m, ctas, 1)](x, prefix, out, n, ctas, per_cta, tile,
                                                                    num_warps=warps)
        return (out,)
    return launch


def _layernorm(rows, cols, tile, warps, kernel):
    def setup(module, device):
        torch.manual_seed(0)
        x = torch.randn(rows, cols, device=device, dtype=torch.float16)
        w = torch.randn(cols, device=device, dtype=torch.float16)
        b = torch.randn(cols, device=device, dtype=torch.float16)
        y = torch.empty_like(x)
        mean = torch.empty(rows, device=device, dtype=x.dtype)
        rstd = torch.empty(rows, device=device, dtype=x.dtype)

        def launch():
            getattr(module, kernel)[(rows, 1, 1)](x, y, w, b, mean, rstd, rows, cols, 1e-5, TILE_N=tile,
                                                  num_warps=warps)
            return y, mean, rstd
        return launch
    return setup


def _rms_norm(module, device):
    import triton
    torch.manual_seed(0)
    m, n = 4096, 5120  # tokens by a Llama-13B hidden size
    x = torch.randn(m, n, device=device, dtype=torch.bfloat16)
    w = torch.randn(n, device=device, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    inv_rms = torch.empty(m, device=device, dtype=torch.float32)

    def launch():
        module.rms_norm_kernel[(m,)](y, inv_rms, x, w, n, 1, n, 1, n, 1e-5, triton.next_power_of_2(n))
        return y, inv_rms
    return launch


def _embedding(module, device):
    import triton
    torch.manual_seed(0)
    vocab, n = 32000, 4096
    ids = torch.randint(0, vocab, (8, 512), device=device)
    weight = torch.randn(vocab, n, device=device, dtype=torch.float16)
    out = torch.empty(8, 512, n, device=device, dtype=weight.dtype)

    def launch():
        module.embedding_kernel[(ids.numel(),)](out, ids, weight, n, triton.next_power_of_2(n))
        return (out,)
    return launch


def _embedding_backward(module, device):
    import triton
    torch.manual_seed(0)
    vocab, n = 8000, 1000
    ids = torch.randint(0, vocab, (8, 512), device=device)
    ids[:, 480:] = 0  # padded tail of each sequence: padding_idx 0 takes no gradient
    grad_out = torch.randn(8, 512, n, device=device, dtype=torch.float32)
    grad_in = torch.zeros(vocab, n, device=device, dtype=torch.float32)

    def launch():
        grad_in.zero_()
        module.embedding_backward_kernel[(ids.numel(),)](grad_in, grad_out, ids, 0, True, n, triton.next_power_of_2(n))
        return (grad_in,)
    return launch


def _index_select(module, device):
    import triton
    torch.manual_seed(0)
    m, n, picked = 4096, 8192, 3000
    x = torch.randn(m, n, device=device, dtype=torch.float16)
    index = torch.randint(0, n, (picked,), device=device)
    out = torch.empty(m, picked, device=device, dtype=x.dtype)
    # the index_select heuristics: BLOCK_M = min(4, next_pow2(cdiv(256, N))), BLOCK_N = max(16, min(512, next_pow2(cdiv(N, 16))))
    block_m = min(4, triton.next_power_of_2(triton.cdiv(256, n)))
    block_n = max(min(triton.next_power_of_2(triton.cdiv(n, 16)), 512), 16)

    def launch():
        module.index_select_kernel[(triton.cdiv(m, block_m), triton.cdiv(picked, block_n))](
            x, out, m, n, index, picked, BLOCK_M=block_m, BLOCK_N=block_n)
        return (out,)
    return launch


def _mean(module, device):
    import triton
    torch.manual_seed(0)
    n = 16 * 1024 * 1024 + 3
    x = torch.randn(n, device=device, dtype=torch.float32)
    out = torch.zeros([], device=device, dtype=torch.float32)
    block = triton.next_power_of_2(triton.cdiv(n, 4096))  # ascend's BLOCK_SIZE = next_pow2(ceil(sqrt(M))): 4096
    # a grid capped at the cores, as FlagGems' cambricon mean (the same kernel) does with TOTAL_CORE_NUM: 4 per SM
    grid = min(triton.cdiv(n, block), H200_SMS * 4)

    def launch():
        out.zero_()
        module.mean_kernel_1[(grid, 1, 1)](x, out, n, block)
        return (out,)
    return launch


CASES = [
    Case("flaggems/dropout_forward", "flaggems/dropout", r"dropout_forward_kernel",
         {1: "program", 2: "philox", 3: "load", 4: "store"}, _dropout),
    Case("flaggems/softmax_inner_one_tile", "flaggems/softmax", r"softmax_kernel_inner",
         {1: "program", 2: "load", 3: "reduce", 4: "store"}, _softmax(4096, 1000, torch.float16)),
    Case("flaggems/softmax_inner_loop", "flaggems/softmax", r"softmax_kernel_inner",
         {1: "program", 5: "max_loop", 6: "load", 7: "tail", 8: "reduce", 9: "first_out", 10: "out_loop",
          11: "store"}, _softmax(256, 50257, torch.float32)),
    Case("flaggems/vector_norm_l2", "flaggems/vector_norm", r"l2_norm_kernel",
         {1: "program", 2: "loop", 3: "load", 4: "reduce", 5: "store"}, _vector_norm),
    Case("flaggems/masked_select_part_sum", "flaggems/masked_select", r"mask_part_sum_kernel",
         {1: "program", 2: "loop", 3: "load_tail", 4: "reduce", 5: "store", 6: "atomic", 7: "last_scan"},
         _masked_select_part_sum),
    Case("flaggems/masked_select_write_back", "flaggems/masked_select", r"write_back_kernel",
         {11: "program", 12: "loop", 13: "load", 14: "scan", 15: "store", 16: "tail"}, _masked_select_write_back),
    Case("flaggems/count_nonzero", "flaggems/count_nonzero", r"count_nonzero_kernel_1",
         {1: "program", 2: "load", 3: "reduce", 4: "atomic"}, _count_nonzero),
    Case("flaggems/topk_stage1", "flaggems/topk", r"topk_stage1_kernel",
         {1: "program", 2: "load", 3: "k_loop", 4: "select", 5: "store"}, _topk_stage1),
    Case("flaggems/topk_stage2_sort", "flaggems/topk", r"topk_stage2_kernel",
         {11: "program", 12: "load", 13: "argsort", 14: "store"}, _topk_stage2),
    Case("flaggems/argmax", "flaggems/argmax", r"argmax_kernel",
         {1: "program", 2: "loop", 3: "load", 4: "reduce", 5: "store"}, _argmax),
    Case("flaggems/cumsum_block_scan", "flaggems/cumsum", r"reduce_then_scan_block_scan_kernel_row",
         {1: "program", 2: "load_prefix", 3: "loop", 4: "load", 5: "scan", 6: "store"}, _cumsum),
    # "layer_norm_persistent" tune configs: num_warps 4 / 8 / 16 (8 taken); TILE_N = next_power_of_2(N)
    Case("flaggems/layernorm_persistent", "flaggems/layernorm", r"layer_norm_persistent_kernel",
         {1: "program", 2: "load", 3: "reduce", 4: "store_stats", 5: "load_wb", 6: "store"},
         _layernorm(4096, 2560, 4096, 8, "layer_norm_persistent_kernel")),
    # "layer_norm_loop" tune configs: TILE_N 1024..8192, num_warps 4 / 8 / 16 (TILE_N=2048, 8 warps taken)
    Case("flaggems/layernorm_loop", "flaggems/layernorm", r"layer_norm_loop_kernel",
         {1: "program", 2: "welford", 3: "load", 4: "last_step", 5: "reduce", 6: "store_stats", 7: "first_out",
          8: "out_loop", 9: "load_out", 10: "store"}, _layernorm(2048, 8000, 2048, 8, "layer_norm_loop_kernel")),
    Case("flaggems/rms_norm", "flaggems/rms_norm", r"rms_norm_kernel",
         {1: "program", 2: "load", 3: "reduce", 4: "load_w", 5: "store"}, _rms_norm),
    Case("flaggems/embedding", "flaggems/embedding", r"embedding_kernel",
         {1: "program", 2: "load_index", 3: "load_row", 4: "store"}, _embedding),
    Case("flaggems/embedding_backward", "flaggems/embedding", r"embedding_backward_kernel",
         {11: "program", 12: "load_index", 15: "not_padding", 16: "load_grad", 17: "atomic"}, _embedding_backward,
         exact=False),
    Case("flaggems/index_select", "flaggems/index_select", r"index_select_kernel",
         {1: "program", 2: "load_index", 3: "gather", 4: "store"}, _index_select),
    Case("flaggems/mean_atomic", "flaggems/mean_ascend", r"mean_kernel_1",
         {1: "program", 2: "loop", 3: "load", 4: "reduce", 5: "atomic"}, _mean, exact=False),
]
