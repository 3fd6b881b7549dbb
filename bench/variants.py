"""Kernel variants for benchmarks: the same example kernel with its markers removed, or
with Triton Proton's scopes in their place. Triton reads a kernel's source from its
file, so each variant is written to disk and imported from there."""
import importlib.util
import os
import re
import sys
import tempfile

MARKER_LINE = re.compile(r"^(\s*)scope_(start|end)\((\d+)\)\s*$")
GWATCH_IMPORT = "from gwatch_nb.triton import scope_end, scope_start\n"
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _import_rewritten(module_name: str, suffix: str, rewrite_line, folder: str = EXAMPLES) -> object:
    with open(os.path.join(folder, module_name + ".py")) as f:
        lines = [rewrite_line(line) for line in f]
    name = f"{module_name}_{suffix}"
    path = os.path.join(tempfile.mkdtemp(prefix=f"gwatch-{suffix}-"), name + ".py")
    with open(path, "w") as f:
        f.writelines(line for line in lines if line is not None)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def without_markers(module_name: str, folder: str = EXAMPLES):
    """<folder>/<module_name>.py (examples/ by default) with every scope_start/scope_end line removed."""
    return _import_rewritten(module_name, "plain", lambda line: None if MARKER_LINE.match(line) else line, folder)


def with_proton_scopes(module_name: str, scope_names: dict):
    """examples/<module_name>.py with Proton's enter_scope/exit_scope for each marker."""
    def rewrite(line):
        if line == GWATCH_IMPORT:
            return "import triton.profiler.language as pl\n"
        match = MARKER_LINE.match(line)
        if not match:
            return line
        indent, kind, scope_id = match.groups()
        call = "enter_scope" if kind == "start" else "exit_scope"
        return f'{indent}pl.{call}("{scope_names[int(scope_id)]}")\n'
    return _import_rewritten(module_name, "proton", rewrite)
