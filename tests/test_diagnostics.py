"""The benchmark's diagnostic edits (bench/diagnostics.py) apply to what the rewriter
emits today: each changes the instrumented PTX of real kernels and ptxas accepts it."""
import pytest

from compile_kernels import compile_ptx
from corpus import CASES
from diagnostics import CLOCK_READ, DIAGNOSTIC_EDITS
from gwatch_nb import ptx

KERNELS = [c for c in CASES if c.name in ("matmul", "attention fwd d64")]


@pytest.mark.parametrize("case", KERNELS, ids=[c.name for c in KERNELS])
@pytest.mark.parametrize("label", list(DIAGNOSTIC_EDITS))
def test_each_diagnostic_edit_changes_the_instrumentation_and_assembles(case, label):
    source = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    instrumented = ptx.instrument(source).ptx
    edited = DIAGNOSTIC_EDITS[label](instrumented)
    assert edited != instrumented
    assert len(CLOCK_READ.findall(edited)) == (0 if label == "no-clock" else len(CLOCK_READ.findall(instrumented)))
    ptx.assemble(edited)


def _every_reading_right_after_its_marker(text: str) -> bool:
    lines = text.splitlines()
    return all("// gwatch site" in lines[i - 1] for i, line in enumerate(lines) if CLOCK_READ.search(line))


def test_exact_ends_puts_every_reading_back_at_its_marker():
    case = next(c for c in KERNELS if c.name == "attention fwd d64")
    source = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    instrumented = ptx.instrument(source).ptx
    assert not _every_reading_right_after_its_marker(instrumented)
    assert _every_reading_right_after_its_marker(DIAGNOSTIC_EDITS["exact-ends"](instrumented))
