"""``gwatch.cuda.xtrace``: G-Watch's older name of ``gwatch.cuda.trace`` (the same objects)."""
from gwatch.cuda.trace import SUPPORTED_DSLS, SUPPORTED_TIERS, do_trace

__all__ = ["do_trace", "SUPPORTED_DSLS", "SUPPORTED_TIERS"]
