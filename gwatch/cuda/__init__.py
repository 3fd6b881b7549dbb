"""``gwatch.cuda``: tracing CUDA kernels (see ``gwatch.cuda.xtrace``)."""
