"""Kernels torch.compile (Inductor) generates: a LayerNorm + MLP block, compiled on the GPU
by Inductor's own workers, traced with automatic sites only (a user cannot mark generated
code). No Source: the code is generated at run time."""
import torch

from third_party import Case


def _block(width: int):
    return torch.nn.Sequential(torch.nn.LayerNorm(width), torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                               torch.nn.Linear(4 * width, width))


def _layernorm_mlp(module, device):
    torch.manual_seed(0)
    block = _block(768).to(device=device, dtype=torch.float16)
    x = torch.randn(8, 500, 768, device=device, dtype=torch.float16)
    compiled = torch.compile(block)
    with torch.no_grad():
        compiled(x)  # Inductor compiles here, as in a notebook's first run

    def launch():
        with torch.no_grad():
            return (compiled(x),)
    return launch


CASES = [
    Case("inductor/layernorm_mlp", "", r"^triton_", {}, _layernorm_mlp),
]
