"""The errors gwatch-nb raises: each says in one line what went wrong and what to do."""


class GwatchError(RuntimeError):
    """Base class of every gwatch-nb error."""


class NoGPUError(GwatchError):
    """No usable CUDA device (the 'interpreter' tier works without one)."""


class CuptiUnavailableError(GwatchError):
    """The CUPTI library could not be found or loaded."""


class CuptiBusyError(GwatchError):
    """Another tool (torch.profiler, Proton, Nsight) holds CUPTI's only subscriber slot."""


class NoMatchingKernelError(GwatchError):
    """No launched kernel matched the pattern; the message lists the kernels that launched."""


class TraceFailedError(GwatchError):
    """Matching launches could not be traced (graph capture, PTX not found, ptxas or JIT failure)."""


class ArchiveError(GwatchError, ValueError):
    """A file is not a readable gwatch trace archive."""


class GwatchWarning(UserWarning):
    """Dropped events or unpaired markers in a trace."""


class SassRewriteError(GwatchError):
    """A cubin could not be read, decoded or rewritten; names the kernel and the reason."""
