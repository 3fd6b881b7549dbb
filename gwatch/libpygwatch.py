"""``gwatch.libpygwatch``: CUPTI set-up, as G-Watch's workflow calls it."""
from gwatch_nb.cuda import cupti, driver
from gwatch_nb.errors import CuptiUnavailableError, NoGPUError

__all__ = ["init_cupti_hooks"]


def init_cupti_hooks() -> bool:
    """True when GPU tracing (tier "ptx") can work here: a CUDA device and CUPTI are found.

    gwatch-nb subscribes to CUPTI only while ``do_trace`` runs, and finds kernels that were
    loaded before it, so calling this early is harmless but not required. On a machine
    without a GPU, driver or CUPTI it returns False without raising; the "interpreter"
    tier (TRITON_INTERPRET=1) still works there."""
    try:
        driver.init()
        cupti.load()
    except (NoGPUError, CuptiUnavailableError):
        return False
    return True
