"""``gwatch.cuda``: tracing CUDA kernels (see ``gwatch.cuda.trace``; ``gwatch.cuda.xtrace`` is its older name)."""
