"""The example kernels, importable from the repository root as ``from examples import
attention, matmul, softmax`` (pytest puts the root on the path: see pyproject.toml)."""
