"""Per-row cross-entropy loss over a large vocabulary, with an ignore index: a row whose
label is ignored writes a zero loss and returns early. The log-sum-exp is taken online
over vocabulary blocks (running max and rescaled sum).

Scopes: "label" (reading the row's label), "logsumexp" nesting a "load" per vocabulary
block, and "loss" (the target logit and the store)."""
import numpy as np
import torch
import triton
import triton.language as tl

from corpus_kernels import Workload, cdiv
from gwatch_nb.triton import scope_end, scope_start

SCOPES = {700: "label", 701: "logsumexp", 702: "load", 703: "loss"}
IGNORE_INDEX = -100
BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def cross_entropy_fwd(Logits, Labels, Loss, stride, V, IGNORE_INDEX: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    Logits += row.to(tl.int64) * stride
    scope_start(700)
    label = tl.load(Labels + row)
    scope_end(700)
    if label == IGNORE_INDEX:
        tl.store(Loss + row, 0.0)
        return
    scope_start(701)
    running_max = float("-inf")
    running_sum = 0.0
    for off in range(0, V, BLOCK):
        scope_start(702)
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(Logits + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        scope_end(702)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    lse = running_max + tl.log(running_sum)
    scope_end(701)
    scope_start(703)
    tl.store(Loss + row, lse - tl.load(Logits + label).to(tl.float32))
    scope_end(703)


def cross_entropy(logits, labels):
    n_rows, V = logits.shape
    loss = torch.empty(n_rows, device=logits.device, dtype=torch.float32)
    cross_entropy_fwd[(n_rows,)](logits, labels, loss, logits.stride(0), V, IGNORE_INDEX=IGNORE_INDEX, BLOCK=BLOCK,
                                 num_warps=NUM_WARPS)
    return loss


N_ROWS, VOCAB = 384, 8000  # the last vocabulary block is partial


def workload(device) -> Workload:
    torch.manual_seed(8)
    logits = (3 * torch.randn(N_ROWS, VOCAB, device=device)).to(torch.float16)
    labels = torch.randint(0, VOCAB, (N_ROWS,), device=device)
    labels[torch.rand(N_ROWS, device=device) < 0.25] = IGNORE_INDEX  # padding tokens
    reference = torch.nn.functional.cross_entropy(logits.double(), labels, ignore_index=IGNORE_INDEX,
                                                  reduction="none").float()
    ignored = (labels == IGNORE_INDEX).cpu().numpy()

    def events(warps):  # an ignored row reads its label and leaves
        return np.where(ignored[warps.block_x.to_numpy()], 2, 6 + 2 * cdiv(VOCAB, BLOCK))
    return Workload(lambda: (cross_entropy(logits, labels),), (reference,), atol=1e-3, rtol=1e-4,
                    events_per_warp=events)
