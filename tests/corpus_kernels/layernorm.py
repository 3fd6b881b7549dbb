"""Layer normalization, forward and backward, for rows wider than one block.

Forward (one program per row): "mean" and "variance" passes, each nesting a "load" per
column block, then "normalize", nesting a "store" per column block.
Backward, in two kernels so that the weight gradients are summed in a fixed order:
``layer_norm_bwd_dx`` gives each program a contiguous run of rows; per row a "row" scope
nests "load", "dx" and "store", and the program's partial dW/dB go out in "partial".
``layer_norm_bwd_dwdb`` sums the partials per column block ("accumulate" per step, then
"store")."""
import numpy as np
import torch
import triton
import triton.language as tl

from corpus_kernels import Workload, cdiv
from gwatch_nb.triton import scope_end, scope_start

FWD_SCOPES = {400: "mean", 401: "variance", 402: "normalize", 403: "load", 404: "store"}
DX_SCOPES = {410: "row", 411: "load", 412: "dx", 413: "store", 414: "partial"}
DWDB_SCOPES = {420: "accumulate", 421: "store"}

FWD_BLOCK = 256
DX_BLOCK = 1024    # a whole row: the backward needs two row reductions
DX_PROGRAMS = 64
DWDB_BLOCK_M = 32
DWDB_BLOCK_N = 128


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    scope_start(400)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        scope_start(403)
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        scope_end(403)
    mean = tl.sum(acc, axis=0) / N
    scope_end(400)
    scope_start(401)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        scope_start(403)
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        scope_end(403)
        centered = tl.where(cols < N, x - mean, 0.0)
        acc += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    scope_end(401)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    scope_start(402)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        scope_start(404)
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)
        scope_end(404)
    scope_end(402)


@triton.jit
def layer_norm_bwd_dx(DX, DY, PartialDW, PartialDB, X, W, Mean, Rstd, stride, M, N, rows_per_program,
                      BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    first = pid * rows_per_program
    for row in range(first, min(first + rows_per_program, M)):
        scope_start(410)
        scope_start(411)
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        scope_end(411)
        scope_start(412)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        scope_end(412)
        scope_start(413)
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        scope_end(413)
        dw += dy * xhat
        db += dy
        scope_end(410)
    scope_start(414)
    tl.store(PartialDW + pid * N + cols, dw, mask=mask)
    tl.store(PartialDB + pid * N + cols, db, mask=mask)
    scope_end(414)


@triton.jit
def layer_norm_bwd_dwdb(PartialDW, PartialDB, FinalDW, FinalDB, M, N,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_M):
        scope_start(420)
        rows = i + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(PartialDW + offs, mask=mask, other=0.0)
        db += tl.load(PartialDB + offs, mask=mask, other=0.0)
        scope_end(420)
    scope_start(421)
    tl.store(FinalDW + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(FinalDB + cols, tl.sum(db, axis=0), mask=cols < N)
    scope_end(421)


def layer_norm(x, weight, bias, eps=1e-5):
    """y, mean and 1/std of each row of a 2-D fp16 tensor."""
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, device=x.device, dtype=torch.float32)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    layer_norm_fwd[(M,)](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK=FWD_BLOCK, num_warps=4)
    return y, mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd, programs=DX_PROGRAMS):
    """dx, dweight and dbias (float32) for the forward's saved mean and 1/std."""
    M, N = x.shape
    assert N <= DX_BLOCK
    rows_per_program = cdiv(M, programs)
    dx = torch.empty_like(x)
    partial_dw = torch.empty((programs, N), device=x.device, dtype=torch.float32)
    partial_db = torch.empty_like(partial_dw)
    dw = torch.empty(N, device=x.device, dtype=torch.float32)
    db = torch.empty_like(dw)
    layer_norm_bwd_dx[(programs,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, x.stride(0), M, N,
                                   rows_per_program, BLOCK=DX_BLOCK, num_warps=8)
    layer_norm_bwd_dwdb[(cdiv(N, DWDB_BLOCK_N),)](partial_dw, partial_db, dw, db, programs, N,
                                                  BLOCK_M=DWDB_BLOCK_M, BLOCK_N=DWDB_BLOCK_N, num_warps=4)
    return dx, dw, db


M, N = 3000, 1000  # N is not a multiple of the blocks; M not of the programs


def _inputs(device):
    torch.manual_seed(3)
    x = torch.randn(M, N, device=device, dtype=torch.float16)
    w = (1 + 0.1 * torch.randn(N, device=device)).to(torch.float16)
    b = (0.1 * torch.randn(N, device=device)).to(torch.float16)
    return x, w, b


def fwd_workload(device) -> Workload:
    x, w, b = _inputs(device)
    ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), eps=1e-5)
    mean = x.double().mean(dim=1)
    rstd = 1 / torch.sqrt(x.double().var(dim=1, unbiased=False) + 1e-5)
    steps = cdiv(N, FWD_BLOCK)
    return Workload(lambda: layer_norm(x, w, b), (ref.half(), mean.float(), rstd.float()), atol=1e-2, rtol=1e-3,
                    events_per_warp=lambda warps: np.full(len(warps), 3 * 2 + 3 * 2 * steps))


def _backward_workload(device, events_per_warp) -> Workload:
    x, w, b = _inputs(device)
    torch.manual_seed(4)
    dy = torch.randn(M, N, device=device, dtype=torch.float16)
    _, mean, rstd = layer_norm(x, w, b)
    xd, wd, bd = (t.double().requires_grad_() for t in (x, w, b))
    torch.nn.functional.layer_norm(xd, (N,), wd, bd, eps=1e-5).backward(dy.double())
    return Workload(lambda: layer_norm_backward(dy, x, w, mean, rstd),
                    (xd.grad.half(), wd.grad.float(), bd.grad.float()), atol=5e-2, rtol=1e-3,
                    events_per_warp=events_per_warp)


def dx_workload(device) -> Workload:
    rows = cdiv(M, DX_PROGRAMS)

    def events(warps):  # 8 per row of the program's run, 2 for its partial sums
        first = warps.block_x.to_numpy() * rows
        return 8 * (np.minimum(first + rows, M) - first) + 2
    return _backward_workload(device, events)


def dwdb_workload(device) -> Workload:
    steps = cdiv(DX_PROGRAMS, DWDB_BLOCK_M)
    return _backward_workload(device, lambda warps: np.full(len(warps), 2 * steps + 2))
