"""The errors gwatch-nb raises: each says in one line what went wrong and what to do."""


class GwatchError(RuntimeError):
    """Base class of every gwatch-nb error."""

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show in place of the traceback: the one line itself."""
        return [f"{type(self).__name__}: {self}"]


class NoGPUError(GwatchError):
    """No usable CUDA device (the 'interpreter' tier works without one)."""


class CuptiUnavailableError(GwatchError):
    """The CUPTI library could not be found or loaded."""


class CuptiBusyError(GwatchError):
    """Another tool (torch.profiler, Proton, Nsight) holds CUPTI's only subscriber slot."""


class NoMatchingKernelError(GwatchError):
    """No launched kernel matched the pattern; the message lists the kernels that launched."""


class TraceFailedError(GwatchError):
    """Matching launches could not be traced (graph capture, PTX not found, ptxas or JIT failure).

    ``kind`` names the step that failed (a key of ``tiers.SESSION_PROBLEMS``); ``reason``, the
    cause alone, without the kernel's name and what became of the launch."""

    def __init__(self, message: str, kind: str = "trace_failed", reason: str = ""):
        super().__init__(message)
        self.kind = kind
        self.reason = reason or message


class UnsupportedGpuError(GwatchError):
    """A tier cannot trace on this GPU; names what it supports."""


class UnsupportedTritonError(GwatchError):
    """This Triton lacks what a tier needs; names the version and what to install."""


class OptionError(GwatchError, ValueError):
    """A tracing option has a value it cannot take; names the option, the value and why.

    ``str()`` names the option as Python spells it (``capacity=1 must be ...``);
    ``spelled`` names it as another front end does (``-c 1 must be ...``)."""

    def __init__(self, option: str, value, problem: str):
        self.option, self.value, self.problem = option, value, problem
        super().__init__(f"{option}={value!r} {problem}")

    def spelled(self, names: dict[str, str], typed: dict[str, str] | None = None) -> str:
        """The message with the option named ``names[option]`` and its value as ``typed``
        gives it (else as the option holds it)."""
        value = (typed or {}).get(self.option, self.value)
        return " ".join(str(part) for part in (names.get(self.option, self.option), value, self.problem) if part != "")


class ArchiveError(GwatchError, ValueError):
    """A file is not a readable gwatch trace archive."""


class GwatchWarning(UserWarning):
    """Dropped events or unpaired markers in a trace."""


class SassRewriteError(GwatchError):
    """A cubin could not be read, decoded or rewritten; names the kernel and the reason."""
