"""Kernel variants for benchmarks: the same example kernel with its markers removed."""
import importlib.util
import os
import re
import sys
import tempfile

MARKER_LINE = re.compile(r"^\s*scope_(start|end)\(\d+\)\s*$")
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def without_markers(module_name: str):
    """Import a copy of examples/<module_name>.py whose scope_start/scope_end lines are gone.

    Triton reads a kernel's source from its file, so the copy is written to disk."""
    with open(os.path.join(EXAMPLES, module_name + ".py")) as f:
        lines = [line for line in f if not MARKER_LINE.match(line)]
    folder = tempfile.mkdtemp(prefix="gwatch-plain-")
    path = os.path.join(folder, f"{module_name}_plain.py")
    with open(path, "w") as f:
        f.writelines(lines)
    spec = importlib.util.spec_from_file_location(f"{module_name}_plain", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
