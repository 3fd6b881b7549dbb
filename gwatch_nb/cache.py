"""Where gwatch-nb keeps what it builds between processes: the ptx tier's cubins, the sass
tier's decoded kernels, the PTX of failed rewrites. ``GWATCH_CACHE_DIR``, else
``~/.cache/gwatch_nb``."""
import os


def cache_dir() -> str:
    return os.environ.get("GWATCH_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gwatch_nb")
