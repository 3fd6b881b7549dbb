"""The GPU side of tracing: CUPTI launch callbacks, cuda-python driver calls, trace buffers."""
