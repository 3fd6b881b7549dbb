"""fp16 matmuls on Hopper's tensor memory accelerator (TMA), C = A @ B^T with A (M, K),
B (N, K) and C (M, N) contiguous:

- ``matmul_tma_persistent``: one program per SM walks the output tiles in grouped
  order; the descriptors are built on the host (TensorDescriptor arguments).
- ``matmul_descriptor_persistent``: the same walk with descriptors built in the kernel
  (tl.make_tensor_descriptor; their memory comes from triton.set_allocator).
- ``matmul_tma_persistent_flat``: the tutorials' persistent matmul (09-persistent-matmul):
  the tile loop is ``tl.range(..., flatten=True)``, so Triton flattens it with its K loop
  into one loop and software-pipelines that, and the tile's C coordinates are recomputed
  for the store from a second counter.
- ``matmul_tma_ws``: one tile per program, its K loop warp-specialized
  (``tl.range(..., warp_specialize=True)``: producer warps issue the TMA loads).

Scopes: "tile" around each output tile, nesting "load" (the two TMA loads of a K step),
"dot" (the wgmma) and "store" (the TMA store of the tile).

In the flattened loop the pipeliner copies "tile"'s start into the loop's prologue (4 start
sites, 2 end sites on Triton 3.9): the next tile's start runs while this tile's K steps
still do, so instances of "tile" overlap in every warp (the decoder pairs them first in,
first out and says so).

On sm_90, Triton 3.6 and 3.9 warp-specialize ``matmul_tma_ws``'s loop (384 threads)
but its Hopper partitioning drops the markers inside that loop ("load", "dot") and
hoists "tile" and "store" into the first warp group's set-up, ahead of the loop."""
import numpy as np
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from corpus_kernels import Workload, cdiv
from gwatch_nb.triton import scope_end, scope_start

SCOPES = {300: "tile", 301: "load", 302: "dot", 303: "store"}
WS_LOST_SCOPES = frozenset({301, 302})
BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
GROUP_M = 8
PERSISTENT_WARPS, WS_WARPS = 8, 4
NUM_STAGES = 3


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Grouped order: GROUP_M row tiles share their B columns while they are hot in L2.
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile_id // tiles_per_group) * GROUP_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % tiles_per_group) % group_rows
    pid_n = (tile_id % tiles_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def matmul_tma_persistent(a_desc, b_desc, c_desc, M, N, K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        scope_start(300)
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_steps):
            scope_start(301)
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            scope_end(301)
            scope_start(302)
            acc = tl.dot(a, b.T, acc)
            scope_end(302)
        scope_start(303)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))
        scope_end(303)
        scope_end(300)


@triton.jit
def matmul_descriptor_persistent(A, B, C, M, N, K,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(B, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        scope_start(300)
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_steps):
            scope_start(301)
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            scope_end(301)
            scope_start(302)
            acc = tl.dot(a, b.T, acc)
            scope_end(302)
        scope_start(303)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(C.dtype.element_ty))
        scope_end(303)
        scope_end(300)


@triton.jit
def matmul_tma_persistent_flat(a_desc, b_desc, c_desc, M, N, K,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    store_tile = tl.program_id(0) - NUM_SMS
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        scope_start(300)
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_steps):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        # A second counter for the store's tile, as the tutorial keeps: the flattened
        # loop's epilogue runs apart from its prologue.
        store_tile += NUM_SMS
        pid_m, pid_n = _tile_coords(store_tile, num_pid_m, num_pid_n, GROUP_M)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))
        scope_end(300)


@triton.jit
def matmul_tma_ws(A, B, C, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(B, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    scope_start(300)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in tl.range(tl.cdiv(K, BLOCK_K), warp_specialize=True):
        scope_start(301)
        a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
        scope_end(301)
        scope_start(302)
        acc = tl.dot(a, b.T, acc)
        scope_end(302)
    scope_start(303)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(C.dtype.element_ty))
    scope_end(303)
    scope_end(300)


def _scratch(size: int, alignment: int, stream):
    """Global memory for descriptors made in a kernel."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _num_sms(device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _output(a, b):
    (M, K), (N, K2) = a.shape, b.shape
    assert K == K2
    return torch.empty((M, N), device=a.device, dtype=torch.float16), M, N, K


def _tiles(M, N) -> int:
    return cdiv(M, BLOCKS["BLOCK_M"]) * cdiv(N, BLOCKS["BLOCK_N"])


def matmul_tma(a, b):
    c, M, N, K = _output(a, b)
    bm, bn, bk = BLOCKS["BLOCK_M"], BLOCKS["BLOCK_N"], BLOCKS["BLOCK_K"]
    descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
             TensorDescriptor.from_tensor(c, [bm, bn]))
    num_sms = _num_sms(a.device)
    matmul_tma_persistent[(min(num_sms, _tiles(M, N)),)](*descs, M, N, K, **BLOCKS, GROUP_M=GROUP_M,
                                                          NUM_SMS=num_sms, num_warps=PERSISTENT_WARPS,
                                                          num_stages=NUM_STAGES)
    return c


def matmul_tma_flat(a, b):
    c, M, N, K = _output(a, b)
    bm, bn, bk = BLOCKS["BLOCK_M"], BLOCKS["BLOCK_N"], BLOCKS["BLOCK_K"]
    descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
             TensorDescriptor.from_tensor(c, [bm, bn]))
    num_sms = _num_sms(a.device)
    matmul_tma_persistent_flat[(min(num_sms, _tiles(M, N)),)](*descs, M, N, K, **BLOCKS, GROUP_M=GROUP_M,
                                                               NUM_SMS=num_sms, num_warps=PERSISTENT_WARPS,
                                                               num_stages=NUM_STAGES)
    return c


def matmul_descriptor(a, b):
    c, M, N, K = _output(a, b)
    triton.set_allocator(_scratch)
    num_sms = _num_sms(a.device)
    matmul_descriptor_persistent[(min(num_sms, _tiles(M, N)),)](a, b, c, M, N, K, **BLOCKS, GROUP_M=GROUP_M,
                                                                 NUM_SMS=num_sms, num_warps=PERSISTENT_WARPS,
                                                                 num_stages=NUM_STAGES)
    return c


def matmul_ws(a, b):
    c, M, N, K = _output(a, b)
    triton.set_allocator(_scratch)
    matmul_tma_ws[(_tiles(M, N),)](a, b, c, M, N, K, **BLOCKS, GROUP_M=GROUP_M, num_warps=WS_WARPS,
                                   num_stages=NUM_STAGES)
    return c


# Not multiples of the blocks (TMA fills and clips the edges); more tiles than SMs.
M, N, K = 2000, 1496, 520


def _workload(device, multiply, events_per_warp) -> Workload:
    torch.manual_seed(5)
    a = torch.randn(M, K, device=device, dtype=torch.float16)
    b = torch.randn(N, K, device=device, dtype=torch.float16)
    return Workload(lambda: (multiply(a, b),), ((a.float() @ b.float().T).half(),), atol=0.05, rtol=1e-2,
                    events_per_warp=events_per_warp)


def _persistent_events(device):
    """Each program's tiles (every NUM_SMS-th from its id): tile, store and 2 x K steps."""
    tiles, num_sms = _tiles(M, N), _num_sms(device)
    per_tile = 4 + 4 * cdiv(K, BLOCKS["BLOCK_K"])
    return lambda warps: np.array([cdiv(tiles - pid, num_sms) * per_tile for pid in warps.block_x])


def tma_workload(device) -> Workload:
    return _workload(device, matmul_tma, _persistent_events(device))


def flat_workload(device) -> Workload:
    # One "tile" instance (a start and an end) per tile of the program.
    tiles, num_sms = _tiles(M, N), _num_sms(device)
    return _workload(device, matmul_tma_flat,
                     lambda warps: np.array([2 * cdiv(tiles - pid, num_sms) for pid in warps.block_x]))


def descriptor_workload(device) -> Workload:
    return _workload(device, matmul_descriptor, _persistent_events(device))


def ws_workload(device) -> Workload:
    # The hoisted "tile" and "store" markers run once, in the kernel's own warps only;
    # the partitions' extra warps record nothing.
    return _workload(device, matmul_ws, lambda warps: np.where(warps.warp.to_numpy() < WS_WARPS, 4, 0))
