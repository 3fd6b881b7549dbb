"""Where gwatch-nb keeps what it builds between processes: the ptx tier's cubins, the sass
tier's decoded kernels and PTX-line copies, the PTX of failed rewrites. ``GWATCH_CACHE_DIR``,
else ``~/.cache/gwatch_nb``."""
import os
from typing import Callable


def cache_dir() -> str:
    return os.environ.get("GWATCH_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gwatch_nb")


def kept(folder: str, name: str, make: Callable[[], bytes]) -> bytes:
    """The bytes kept as `name` in the cache root's `folder`, made by `make()` and kept the
    first time (written beside it and moved in place, so processes building the same thing
    at once never read half of it). What `make` raises is raised, and nothing is kept."""
    path = os.path.join(cache_dir(), folder, name)
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    data = make()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)
    return data
