"""Real Triton kernels with gwatch markers, compiled for sm_90 by the rewriter tests and
traced on the GPU by the gpu-marked tests. Each entry says how to compile the kernel, how
many start/end sites its markers should leave in the PTX (None: not fixed by the
source), the regex that names it at launch, its scope names, and its workload: inputs
built on a device, the launch, a torch reference and, where the loops' trip counts are
known, the events each warp records (the kernels live in corpus_kernels/)."""
from dataclasses import dataclass, field
from typing import Callable

from examples import attention
from examples import matmul
from corpus_kernels import (attention_bwd, basics, cross_entropy, example_workloads, grouped_gemm, layernorm,
                            softmax, tma_matmul)


@dataclass
class Case:
    name: str
    fn: object
    signature: dict
    constexprs: dict = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    starts: int | None = None  # start sites expected in the PTX (None: the compiler may duplicate some)
    scope_ids: frozenset = frozenset()  # ids whose markers reach the PTX (default: scopes less lost_scopes)
    pattern: str = ""  # regex for the kernel's name at launch
    scopes: dict = field(default_factory=dict)  # id -> name of every marker written in the kernel
    workload: Callable | None = None  # device -> corpus_kernels.Workload
    lost_scopes: frozenset = frozenset()  # written in the kernel, but Triton leaves no sentinel for them
    copied_starts: bool = False  # Triton's pipeliner copies start markers: more start sites than end sites
    early_ends: bool = False  # a scope is closed before an early return too: more end sites than start sites
    warnings: frozenset = frozenset()  # Trace.warnings kinds a GPU trace of the workload gives

    def __post_init__(self):
        if not self.scope_ids:
            self.scope_ids = frozenset(self.scopes) - self.lost_scopes


def _sig(pointers: str, ints: str = "", **others) -> dict:
    """Signature from space-separated names: pointers ("NAME:type", default *fp32), i32 scalars, the rest."""
    sig = {}
    for item in pointers.split():
        name, _, ty = item.partition(":")
        sig[name] = ty or "*fp32"
    sig.update({name: "i32" for name in ints.split()})
    sig.update(others)
    return sig


MM_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
          "stride_cm": "i32", "stride_cn": "i32"}
ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
            **{f"stride_{t}{d}": "i32" for t in "qkvo" for d in ("z", "h", "m" if t in "qo" else "n", "d")},
            "H": "i32", "N_CTX": "i32"}
TMA_BLOCKS = tma_matmul.BLOCKS
TMA_SIG = {"a_desc": f"tensordesc<fp16[{TMA_BLOCKS['BLOCK_M']}, {TMA_BLOCKS['BLOCK_K']}]>",
           "b_desc": f"tensordesc<fp16[{TMA_BLOCKS['BLOCK_N']}, {TMA_BLOCKS['BLOCK_K']}]>",
           "c_desc": f"tensordesc<fp16[{TMA_BLOCKS['BLOCK_M']}, {TMA_BLOCKS['BLOCK_N']}]>",
           "M": "i32", "N": "i32", "K": "i32"}
TMA_PTR_SIG = _sig("A:*fp16 B:*fp16 C:*fp16", "M N K")
ATTN_BWD_CONSTS = {"HEAD_DIM": attention_bwd.HEAD_DIM, "BLOCK_M": attention_bwd.BLOCK_M,
                   "BLOCK_N": attention_bwd.BLOCK_N}
H200_SMS = 132

CASES = [
    Case("vector_add (no markers)", basics.vector_add, _sig("X Y Out", "N"), {"BLOCK": basics.VECTOR_BLOCK},
         starts=0, pattern=r"^vector_add$", workload=basics.vector_add_workload),
    Case("vector_add_marked", basics.vector_add_marked, _sig("X Y Out", "N"), {"BLOCK": basics.VECTOR_BLOCK},
         starts=2, pattern=r"^vector_add_marked$", scopes=basics.VECTOR_ADD_SCOPES,
         workload=basics.vector_add_marked_workload),
    Case("nested_loops", basics.nested_loops, _sig("X Out", "ROWS COLS"), {"BLOCK": basics.NESTED_BLOCK},
         pattern=r"^nested_loops$", scopes=basics.NESTED_SCOPES, workload=basics.nested_loops_workload),
    Case("early_return", basics.early_return, _sig("X Out", "N LIMIT"), {"BLOCK": basics.EARLY_BLOCK},
         pattern=r"^early_return$", scopes=basics.EARLY_RETURN_SCOPES, workload=basics.early_return_workload),
    Case("closed_before_return", basics.closed_before_return, _sig("X Out", "N LIMIT"), {"BLOCK": basics.EARLY_BLOCK},
         pattern=r"^closed_before_return$", scopes=basics.CLOSED_RETURN_SCOPES, early_ends=True,
         workload=basics.closed_before_return_workload),
    Case("matmul", matmul.matmul_kernel, MM_SIG, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
         num_warps=8, num_stages=3, pattern=r"^matmul_kernel$", scopes=matmul.SCOPES,
         workload=example_workloads.matmul_workload),
    Case("attention fwd d64", attention.attn_fwd, ATTN_SIG,
         {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False},
         num_warps=4, num_stages=3, pattern=r"^attn_fwd$", scopes=attention.SCOPES,
         workload=lambda device: example_workloads.attention_fwd_workload(device, 64, causal=False)),
    Case("attention fwd d128 causal", attention.attn_fwd, ATTN_SIG,
         {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True},
         num_warps=8, num_stages=2, pattern=r"^attn_fwd$", scopes=attention.SCOPES,
         workload=lambda device: example_workloads.attention_fwd_workload(device, 128, causal=True)),
    Case("fused softmax", softmax.softmax_kernel, _sig("Out X", "x_row_stride out_row_stride n_rows n_cols"),
         {"BLOCK": softmax.BLOCK, "NUM_STAGES": softmax.NUM_STAGES}, num_warps=softmax.NUM_WARPS,
         starts=4, pattern=r"^softmax_kernel$", scopes=softmax.SCOPES, workload=softmax.workload),
    Case("layernorm fwd", layernorm.layer_norm_fwd,
         _sig("X:*fp16 Y:*fp16 W:*fp16 B:*fp16 Mean Rstd", "stride N", eps="fp32"), {"BLOCK": layernorm.FWD_BLOCK},
         starts=6, pattern=r"^layer_norm_fwd$", scopes=layernorm.FWD_SCOPES, workload=layernorm.fwd_workload),
    Case("layernorm bwd dx", layernorm.layer_norm_bwd_dx,
         _sig("DX:*fp16 DY:*fp16 PartialDW PartialDB X:*fp16 W:*fp16 Mean Rstd", "stride M N rows_per_program"),
         {"BLOCK": layernorm.DX_BLOCK}, num_warps=8, starts=5, pattern=r"^layer_norm_bwd_dx$",
         scopes=layernorm.DX_SCOPES, workload=layernorm.dx_workload),
    Case("layernorm bwd dwdb", layernorm.layer_norm_bwd_dwdb, _sig("PartialDW PartialDB FinalDW FinalDB", "M N"),
         {"BLOCK_M": layernorm.DWDB_BLOCK_M, "BLOCK_N": layernorm.DWDB_BLOCK_N}, starts=2,
         pattern=r"^layer_norm_bwd_dwdb$", scopes=layernorm.DWDB_SCOPES, workload=layernorm.dwdb_workload),
    Case("persistent matmul, host TMA descriptors", tma_matmul.matmul_tma_persistent, TMA_SIG,
         {**TMA_BLOCKS, "GROUP_M": tma_matmul.GROUP_M, "NUM_SMS": H200_SMS}, num_warps=tma_matmul.PERSISTENT_WARPS,
         num_stages=tma_matmul.NUM_STAGES, starts=4, pattern=r"^matmul_tma_persistent$",
         scopes=tma_matmul.SCOPES, workload=tma_matmul.tma_workload),
    Case("persistent matmul, in-kernel TMA descriptors", tma_matmul.matmul_descriptor_persistent, TMA_PTR_SIG,
         {**TMA_BLOCKS, "GROUP_M": tma_matmul.GROUP_M, "NUM_SMS": H200_SMS}, num_warps=tma_matmul.PERSISTENT_WARPS,
         num_stages=tma_matmul.NUM_STAGES, starts=4, pattern=r"^matmul_descriptor_persistent$",
         scopes=tma_matmul.SCOPES, workload=tma_matmul.descriptor_workload),
    # The tutorials' flattened, pipelined persistent loop: "tile" instances overlap.
    Case("flattened persistent matmul", tma_matmul.matmul_tma_persistent_flat, TMA_SIG,
         {**TMA_BLOCKS, "GROUP_M": tma_matmul.GROUP_M, "NUM_SMS": H200_SMS}, num_warps=tma_matmul.PERSISTENT_WARPS,
         num_stages=tma_matmul.NUM_STAGES, pattern=r"^matmul_tma_persistent_flat$",
         scopes={300: tma_matmul.SCOPES[300]}, workload=tma_matmul.flat_workload, copied_starts=True,
         warnings=frozenset({"pipelined"})),
    # Triton drops the markers inside the warp-specialized loop and hoists the others
    # together, so "tile" and "store" measure 0 ns (see tma_matmul's docstring).
    Case("warp-specialized TMA matmul", tma_matmul.matmul_tma_ws, TMA_PTR_SIG,
         {**TMA_BLOCKS, "GROUP_M": tma_matmul.GROUP_M}, num_warps=tma_matmul.WS_WARPS,
         num_stages=tma_matmul.NUM_STAGES, starts=2, pattern=r"^matmul_tma_ws$", scopes=tma_matmul.SCOPES,
         lost_scopes=tma_matmul.WS_LOST_SCOPES, workload=tma_matmul.ws_workload,
         warnings=frozenset({"zero_length"})),
    Case("grouped GEMM", grouped_gemm.grouped_matmul_kernel,
         _sig("group_a_ptrs:*i64 group_b_ptrs:*i64 group_c_ptrs:*i64 group_sizes:*i32 group_lds:*i32", "group_count"),
         {"PROGRAMS": grouped_gemm.PROGRAMS, **grouped_gemm.BLOCKS}, num_warps=grouped_gemm.NUM_WARPS,
         num_stages=grouped_gemm.NUM_STAGES, starts=4, pattern=r"^grouped_matmul_kernel$",
         scopes=grouped_gemm.SCOPES, workload=grouped_gemm.workload),
    Case("attention bwd dkdv causal", attention_bwd.attn_bwd_dkdv,
         _sig("Q:*fp16 K:*fp16 V:*fp16 DO:*fp16 LSE2 Delta DK:*fp16 DV:*fp16", "", sm_scale="fp32", N_CTX="i32"),
         {**ATTN_BWD_CONSTS, "CAUSAL": True}, num_warps=attention_bwd.NUM_WARPS,
         num_stages=attention_bwd.NUM_STAGES, starts=6, pattern=r"^attn_bwd_dkdv$", scopes=attention_bwd.DKDV_SCOPES,
         workload=lambda device: attention_bwd.dkdv_workload(device, causal=True)),
    Case("attention bwd dq", attention_bwd.attn_bwd_dq,
         _sig("Q:*fp16 K:*fp16 V:*fp16 DO:*fp16 LSE2 Delta DQ:*fp16", "", sm_scale="fp32", N_CTX="i32"),
         {**ATTN_BWD_CONSTS, "CAUSAL": False}, num_warps=attention_bwd.NUM_WARPS,
         num_stages=attention_bwd.NUM_STAGES, starts=5, pattern=r"^attn_bwd_dq$", scopes=attention_bwd.DQ_SCOPES,
         workload=lambda device: attention_bwd.dq_workload(device, causal=False)),
    Case("cross entropy with ignored rows", cross_entropy.cross_entropy_fwd,
         _sig("Logits:*fp16 Labels:*i64 Loss", "stride V"),
         {"IGNORE_INDEX": cross_entropy.IGNORE_INDEX, "BLOCK": cross_entropy.BLOCK},
         num_warps=cross_entropy.NUM_WARPS, starts=4, pattern=r"^cross_entropy_fwd$", scopes=cross_entropy.SCOPES,
         workload=cross_entropy.workload),
]
