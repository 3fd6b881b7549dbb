"""Tracing only some scopes: the markers of the other scopes are left to the compiler as
idle markers, so the instrumented kernel reads the clock only for the scopes chosen
(real Triton PTX, assembled by Triton's ptxas, read back with cuobjdump)."""
import re

import pytest

from compile_kernels import compile_ptx, sass_listing
from corpus import CASES
from gwatch_nb import ptx

ATTENTION = next(c for c in CASES if c.name == "attention fwd d64")


def _marker_clock_reads(ptx_text: str) -> int:
    """32-bit clock reads in the SASS: one per marker reading (the prologue and the
    epilogue read the 64-bit clock)."""
    return len(re.findall(r"CS2R\.32 R\d+, SR_CLOCKLO", sass_listing(ptx_text)))


@pytest.fixture(scope="module")
def attention_ptx():
    return compile_ptx(ATTENTION.fn, ATTENTION.signature, ATTENTION.constexprs, ATTENTION.num_warps,
                       ATTENTION.num_stages)


@pytest.mark.parametrize("scopes, readings", [
    (None, 5),                   # s100 | e100 s101 | e101 s102 | e102 s103 | e103
    (frozenset({101}), 2),       # s101 | e101
    (frozenset({101, 102}), 3),  # s101 | e101 s102 | e102
    (frozenset({100, 103}), 4),  # s100 | e100 | s103 | e103
])
def test_only_the_chosen_scopes_read_the_clock(attention_ptx, scopes, readings):
    every = ptx.instrument(attention_ptx)
    chosen = ptx.instrument(attention_ptx, scopes)
    wanted = scopes or {s.scope_id for s in every.sites}
    assert [(s.scope_id, s.kind) for s in chosen.sites] == \
        [(s.scope_id, s.kind) for s in every.sites if s.scope_id in wanted]
    # The loop body is the only place with markers: its readings are all the SASS has.
    assert _marker_clock_reads(chosen.ptx) == readings
    # The rewriter leaves the other scopes' markers as the comments they are.
    idle = {(s.scope_id, s.kind) for s in every.sites} - {(s.scope_id, s.kind) for s in chosen.sites}
    for scope_id, kind in idle:
        assert f"// gwatch.scope_{kind} {scope_id}\n" in chosen.ptx


def test_scopes_with_no_marker_leave_the_kernel_as_it_is(attention_ptx):
    result = ptx.instrument(attention_ptx, frozenset({7}))
    assert not result.changed and not result.sites
    assert result.ptx is attention_ptx  # the very same text: no parameters, no prologue
