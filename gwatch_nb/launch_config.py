"""A launch's Triton configuration: the one shape every tier, view and archive uses.

A configuration is a dict ``{"constexprs": {name: value}, "num_warps": int,
"num_stages": int, "num_ctas": int, "maxnreg": int | None}``; a key is left out where
the tier cannot know it (the interpreter has no warps, and learns ``num_warps`` and
the like only from the autotuner's Config; ``constexprs`` is left out where the
compiled kernel that would say is gone). Values are JSON-safe (anything else, a
dtype say, as its ``str``), so the archive stores it as it is."""
from __future__ import annotations

from typing import Mapping

#: The compile options a configuration names, in label order.
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _json_safe(value):
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def make(constexprs: Mapping[str, object] | None, options: Mapping[str, object]) -> dict:
    """A configuration from constexpr values (None: unknown) and whichever of OPTIONS
    are known."""
    config = {} if constexprs is None else {"constexprs": {str(k): _json_safe(v) for k, v in constexprs.items()}}
    config.update({k: _json_safe(options[k]) for k in OPTIONS if k in options})
    return config


def merged(config: Mapping, more: Mapping) -> dict:
    """``config`` with what ``more`` knows added (``more`` wins where both say)."""
    known = "constexprs" in config or "constexprs" in more
    return make({**config.get("constexprs", {}), **more.get("constexprs", {})} if known else None,
                {**{k: config[k] for k in OPTIONS if k in config}, **{k: more[k] for k in OPTIONS if k in more}})


def label(config: Mapping | None) -> str:
    """One line naming the configuration, e.g. ``BLOCK_N=64 num_warps=4 num_stages=3
    num_ctas=1`` (``maxnreg`` only where set); "" for no configuration."""
    if not config:
        return ""
    parts = [f"{k}={v}" for k, v in config.get("constexprs", {}).items()]
    parts += [f"{k}={config[k]}" for k in OPTIONS if k in config and not (k == "maxnreg" and config[k] is None)]
    return " ".join(parts)
