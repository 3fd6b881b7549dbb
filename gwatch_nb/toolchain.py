"""Where Triton's bundled CUDA tools live: its ptxas, nvdisasm and cuobjdump.

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
    """The nvdisasm Triton uses (gwatch_nb.toolchain._tool)."""
    return _tool("nvdisasm", capability)


def cuobjdump(capability: int = 90) -> str:
    """The cuobjdump Triton uses (gwatch_nb.toolchain._tool)."""
    return _tool("cuobjdump", capability)


def _tool(name: str, capability: int) -> str:
    """Triton's own knob for the tool (its TRITON_<NAME>_PATH, else the one its wheel ships),
    else the one beside its ptxas. Not beside ptxas first: torch.compile points Triton's ptxas at
    the one torch's CUDA packages ship, which has no nvdisasm beside it."""
    from triton import knobs
    try:  # reading the knob runs the binary it finds, and raises where it finds none
        path = getattr(getattr(knobs, "nvidia", None), name).path
    except (AttributeError, RuntimeError):  # an older Triton without the knob, or no such binary
        path = None
    if path and os.path.exists(path):
        return path
    return os.path.join(os.path.dirname(ptxas(capability)), name)
