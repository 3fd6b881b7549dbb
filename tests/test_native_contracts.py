"""Contracts the C side and the Python side share, checked where they are defined: the
marker text comes from native/gwatch_format.h, and the header's compile-time asserts
hold the rewriter's vector stores to the field layout (a real C compiler on the real
header)."""
import os
import re
import shutil
import subprocess

import pytest

from gwatch_nb import _native, ptx, triton
from gwatch_nb._native import FORMAT

HEADER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native", "gwatch_format.h")
CC = shutil.which("cc") or shutil.which("gcc")


def _compile_header(tmp_path, text: str) -> subprocess.CompletedProcess:
    (tmp_path / "gwatch_format.h").write_text(text)
    (tmp_path / "check.c").write_text('#include "gwatch_format.h"\nint main(void) { return 0; }\n')
    return subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-fsyntax-only", "-I", str(tmp_path),
                           str(tmp_path / "check.c")], capture_output=True, text=True)


@pytest.mark.skipif(CC is None, reason="needs a C compiler (building gwatch-nb needs one too)")
def test_the_header_compiles_as_it_is(tmp_path):
    done = _compile_header(tmp_path, open(HEADER).read())
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(CC is None, reason="needs a C compiler (building gwatch-nb needs one too)")
@pytest.mark.parametrize("field, moved, store", [
    ("SH_CK_EXIT", 28, "the exit anchors are one v2.u64 store"),
    ("SH_BLOCK_Y", 48, "magic, warp, block x and y are one v4.u32 store"),
    ("SH_RECORDS", 52, "block z, sm, events and records are one v4.u32 store"),
    ("REC_SITE", 8, "the readings and the site of a record are one v4.b32 store"),
])
def test_moving_a_field_a_vector_store_covers_fails_the_build(tmp_path, field, moved, store):
    text, count = re.subn(rf"#define GWATCH_{field} \d+", f"#define GWATCH_{field} {moved}", open(HEADER).read())
    assert count == 1
    done = _compile_header(tmp_path, text)
    assert done.returncode != 0 and store in done.stderr


def test_the_marker_text_is_the_headers():
    assert FORMAT["MARKER_START"] == "// gwatch.scope_start" and FORMAT["MARKER_END"] == "// gwatch.scope_end"
    assert triton.MARKER_TEXT == {"start": FORMAT["MARKER_START"], "end": FORMAT["MARKER_END"]}


def test_the_rewriter_checks_the_scopes_it_is_given():
    with pytest.raises(ValueError, match=r"scope id 40000 is out of range \[0, 32767\]"):
        _native.instrument(".version 8.0\n", [40000])
    with pytest.raises(TypeError):
        _native.instrument(".version 8.0\n", ["dot"])


def test_idle_markers_are_the_rewriters_choice():
    module = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
              f"\t{FORMAT['MARKER_START']} 1\n\t{FORMAT['MARKER_START']} 2\n"
              f"\t{FORMAT['MARKER_END']} 2\n\t{FORMAT['MARKER_END']} 1\n\tret;\n}}\n")
    chosen = ptx.instrument(module, frozenset({2}))
    assert [(s.scope_id, s.kind) for s in chosen.sites] == [(2, "start"), (2, "end")]
    assert f"\t{FORMAT['MARKER_START']} 1\n" in chosen.ptx and f"\t{FORMAT['MARKER_END']} 1\n" in chosen.ptx
    ptx.assemble(chosen.ptx)  # ptxas takes what the rewriter left
    none = ptx.instrument(module, frozenset({3}))
    assert not none.changed and none.ptx is module
