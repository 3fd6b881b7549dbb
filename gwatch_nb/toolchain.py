"""Where Triton's bundled CUDA tools live: its ptxas, and nvdisasm and cuobjdump beside it.

Both tiers run them (the ptx tier assembles its rewritten PTX with ptxas, the sass tier
decodes cubins with nvdisasm; the tests read listings with cuobjdump), so they belong to
neither: each tier imports this module, not the other tier. The tools are Triton's own so
that what gwatch-nb assembles and reads is what Triton compiled with."""
from __future__ import annotations

import os


def ptxas(capability: int = 90) -> str:
    """The ptxas Triton itself uses for this compute capability."""
    from .triton_compat import ptxas as triton_ptxas  # imports triton: only when a tool is needed
    return triton_ptxas(capability).path


def nvdisasm(capability: int = 90) -> str:
    """The nvdisasm Triton ships beside that ptxas."""
    return _beside_ptxas("nvdisasm", capability)


def cuobjdump(capability: int = 90) -> str:
    """The cuobjdump Triton ships beside that ptxas."""
    return _beside_ptxas("cuobjdump", capability)


def _beside_ptxas(tool: str, capability: int) -> str:
    return os.path.join(os.path.dirname(ptxas(capability)), tool)
