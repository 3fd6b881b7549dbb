"""A memory-bound Triton kernel: row-wise softmax, with scopes around the load, the
reductions and the store."""
import torch
import triton
import triton.language as tl

from gwatch_nb.triton import scope_end, scope_start

SCOPES = {200: "load", 201: "reduce", 202: "store"}


@triton.jit
def softmax_kernel(X, Out, n_rows, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    """Each program handles rows pid, pid + grid, ... (a grid-stride loop over rows)."""
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        scope_start(200)
        x = tl.load(X + row * stride_x + cols, mask=mask, other=float("-inf")).to(tl.float32)
        scope_end(200)
        scope_start(201)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        scope_end(201)
        scope_start(202)
        tl.store(Out + row * stride_out + cols, y.to(Out.dtype.element_ty), mask=mask)
        scope_end(202)


def softmax(x: torch.Tensor, programs: int | None = None, num_warps: int = 8) -> torch.Tensor:
    """softmax(x, dim=-1) for a 2-D tensor whose rows fit one block."""
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    programs = programs or min(n_rows, 4 * 132)
    softmax_kernel[(programs,)](x, out, n_rows, n_cols, x.stride(0), out.stride(0),
                                BLOCK=triton.next_power_of_2(n_cols), num_warps=num_warps)
    return out


def events_per_warp(n_rows: int, programs: int, program: int) -> int:
    """Events each warp of `program` records: three scopes per row it handles."""
    rows = len(range(program, n_rows, programs))
    return 6 * rows
