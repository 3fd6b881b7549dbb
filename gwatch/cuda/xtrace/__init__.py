"""``gwatch.cuda.xtrace``: intra-kernel traces of marked scopes (gwatch_nb.do_trace)."""
from gwatch_nb.api import SUPPORTED_DSLS, SUPPORTED_TIERS, do_trace

__all__ = ["do_trace", "SUPPORTED_DSLS", "SUPPORTED_TIERS"]
