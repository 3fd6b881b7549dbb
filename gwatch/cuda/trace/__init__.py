"""``gwatch.cuda.trace``: intra-kernel traces of marked scopes (gwatch_nb.do_trace).

``do_trace`` takes both of G-Watch's documented forms::

    do_trace(fn=..., kernel_name_pattern=r".*my_kernel.*", dsl="triton",
             scope_name_map={100: "load_kv"}, instrumentation_tier="ptx")
    do_trace(fn, warmup, rep, kernel_name_pattern, name_id_map, dump_path="trace.gwatch")

``warmup`` runs of ``fn`` go untraced before the trace, ``rep`` runs are traced,
``name_id_map`` is ``scope_name_map``'s older name, and ``dump_path`` also saves the
Trace as the archive ``gwatch show`` reads. It returns the Trace (G-Watch's older
releases returned a list of result dicts)."""
from gwatch_nb import api
from gwatch_nb.api import SUPPORTED_DSLS, SUPPORTED_TIERS
from gwatch_nb.errors import OptionError

__all__ = ["do_trace", "SUPPORTED_DSLS", "SUPPORTED_TIERS"]


def do_trace(fn, warmup=0, rep=1, kernel_name_pattern=None, name_id_map=None, dump_path=None, *,
             dsl="triton", scope_name_map=None, instrumentation_tier="ptx", capacity=None, launches="all",
             scopes=None, auto=False):
    """gwatch_nb.do_trace in G-Watch's argument order (see the module's docstring)."""
    if kernel_name_pattern is None:
        raise OptionError("kernel_name_pattern", None, "is required: the regular expression of the kernels to trace")
    if name_id_map is not None and scope_name_map is not None:
        raise OptionError("name_id_map", name_id_map, "and scope_name_map both name the scopes; give one of them")
    return api.do_trace(fn, kernel_name_pattern, dsl, scope_name_map if name_id_map is None else name_id_map,
                        instrumentation_tier, capacity, launches, scopes, warmup=warmup, rep=rep, dump_path=dump_path,
                        auto=auto)
