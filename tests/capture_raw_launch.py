"""Save what one real traced launch left on the GPU, for the CPU tests: the example causal
attention traced on an NVIDIA GPU, its raw trace buffer (every warp's header and the
records it wrote, exactly as copied back), the kernel's site table from the rewriter, and
the trace archive the session decoded from them. Run on a GPU machine:

    python tests/capture_raw_launch.py tests/fixtures
"""
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # for `from examples import ...`

from examples import attention  # noqa: E402
from gwatch_nb import do_trace  # noqa: E402
from gwatch_nb.cuda import session  # noqa: E402

N_CTX, HEADS = 512, 2


def main(folder: str) -> None:
    copied = []
    copy_back = session.copy_back

    def keep(launch):
        headers, recs = copy_back(launch)
        copied.append((launch, headers, recs))
        return headers, recs

    session.copy_back = keep
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, N_CTX, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    trace = do_trace(lambda: attention.attention(q, k, v, causal=True), r"^attn_fwd$", scope_name_map=attention.SCOPES)
    (launch, headers, recs), = copied
    os.makedirs(folder, exist_ok=True)
    np.savez_compressed(os.path.join(folder, "attention_causal_raw_h200.npz"),
                        headers=headers, records=recs.view(np.uint8), capacity=launch.capacity,
                        grid=np.array(launch.grid), tags=launch.table.tags, readings=launch.table.readings,
                        record_events=launch.table.record_events, n_ctx=N_CTX)
    trace.save(os.path.join(folder, "attention_causal_raw_h200.json"))
    print(f"saved {len(headers)} warps, {int(recs.size)} record places, {trace.records[0].events_recorded} events")


if __name__ == "__main__":
    main(sys.argv[1])
