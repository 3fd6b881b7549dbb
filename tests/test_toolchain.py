"""Triton's bundled tools, found in one place that neither tier owns."""
import ast
import os
import subprocess
from pathlib import Path

import pytest

import gwatch_nb
from gwatch_nb import toolchain

PACKAGE = Path(gwatch_nb.__file__).parent


@pytest.mark.parametrize("tool", [toolchain.ptxas, toolchain.nvdisasm, toolchain.cuobjdump])
def test_each_tool_is_triton_s_own_and_runs(tool):
    path = tool(90)
    assert Path(path).parent == Path(toolchain.ptxas(90)).parent and "triton" in path
    done = subprocess.run([path, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and "NVIDIA" in done.stdout


def _imports(path: Path) -> set[str]:
    """The gwatch_nb modules a file imports, as dotted names relative to the package."""
    found = set()
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("gwatch_nb")}


def test_the_sass_tier_does_not_reach_into_the_ptx_tier():
    for path in sorted((PACKAGE / "sass").rglob("*.py")) + [PACKAGE / "cuda" / "sass_session.py"]:
        assert "gwatch_nb.ptx" not in _imports(path), path


def test_the_ptx_tier_does_not_reach_into_the_sass_tier():
    for path in (PACKAGE / "ptx.py", PACKAGE / "cuda" / "session.py", PACKAGE / "cuda" / "instrumented.py"):
        assert not any(name.startswith(("gwatch_nb.sass", "gwatch_nb.cuda.sass_session")) for name in _imports(path)), path


def test_nvdisasm_is_found_when_ptxas_lives_where_no_nvdisasm_does(tmp_path, monkeypatch):
    # torch.compile points Triton's ptxas at the one torch's CUDA packages ship, with no nvdisasm
    # beside it (an H200 trace of a torch.compile kernel failed on the missing file).
    own = toolchain.ptxas()
    lone = tmp_path / "bin" / os.path.basename(own)
    lone.parent.mkdir()
    lone.symlink_to(own)
    for knob in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):
        monkeypatch.setenv(knob, str(lone))
    assert toolchain.ptxas() == str(lone)  # the situation is real: ptxas now lives alone
    for tool in (toolchain.nvdisasm(), toolchain.cuobjdump()):
        assert os.path.exists(tool) and not tool.startswith(str(tmp_path))

