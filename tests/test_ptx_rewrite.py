"""The PTX rewriter on real Triton kernels (compiled for sm_90 here, assembled by ptxas)
and on hand-written PTX for the shapes Triton rarely emits."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compile_kernels import compile_ptx
from corpus import CASES
from gwatch_nb import ptx
from gwatch_nb.layout import BUFFER_PARAM, CAPACITY_PARAM

EXIT_LINES = re.compile(r"^\s*(\$?[\w$]+:\s*)?(@!?%\w+\s+)?(ret|exit)(\.uni)?\s*;", re.M)


def _exits(text: str) -> int:
    return len(EXIT_LINES.findall(text))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_kernel_instruments_and_assembles(case):
    source = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    result = ptx.instrument(source)
    starts = [s for s in result.sites if s.kind == "start"]
    ends = [s for s in result.sites if s.kind == "end"]
    if case.starts is not None:
        assert len(starts) == case.starts
    if case.starts == 0:
        assert result.ptx is source and not result.changed
        return
    assert len(starts) == len(ends) > 0
    assert {s.scope_id for s in result.sites} == case.scope_ids
    (entry,) = result.entries
    assert entry.num_sites == len(result.sites)
    assert f".param .u64 {BUFFER_PARAM},\n\t.param .u32 {CAPACITY_PARAM}\n)" in result.ptx
    # Every original exit now branches to the epilogue, whose ret is the only one left.
    assert entry.num_exits == _exits(source) >= 1
    assert _exits(result.ptx) == 1
    assert result.ptx.count("bra") - source.count("bra") >= entry.num_exits
    ptx.assemble(result.ptx)


def test_scope_lines_match_the_sentinels():
    case = next(c for c in CASES if c.name == "nested_loops")
    source = compile_ptx(case.fn, case.signature, case.constexprs)
    result = ptx.instrument(source)
    lines = source.splitlines()
    for site in result.sites:
        assert lines[site.line - 1].strip() == f"// gwatch.scope_{site.kind} {site.scope_id}"


ENTRY = """\
.version 8.0
.target sm_90a
.address_size 64

.visible .entry {name}(
\t.param .u64 {name}_param_0
)
{{
\t.reg .pred \t%p<3>;
\t.reg .b32 \t%r<4>;
{body}
}}
"""


def _module(body: str, name: str = "k") -> str:
    return ENTRY.format(name=name, body=body)


def test_predicated_ret_exit_and_labels_all_reach_the_epilogue():
    body = "\n".join([
        "\tmov.u32 \t%r1, %tid.x;",
        "\tsetp.eq.u32 \t%p1, %r1, 0;",
        "\t// gwatch.scope_start 7",
        "\t@%p1 ret;",
        "\t@!%p1 bra \t$L__BB0_2;",
        "\texit;",
        "$L__BB0_2:",
        "\t// gwatch.scope_end 7",
        "$L__BB0_3: ret.uni;",
    ])
    source = _module(body)
    result = ptx.instrument(source)
    assert [(s.scope_id, s.kind) for s in result.sites] == [(7, "start"), (7, "end")]
    assert result.entries[0].num_exits == 3
    assert "\t@%p1 bra \t$__gwatch_exit;" in result.ptx
    assert "$L__BB0_3: bra.uni \t$__gwatch_exit;" in result.ptx
    assert _exits(result.ptx) == 1
    ptx.assemble(result.ptx)


def test_every_entry_of_a_module_is_instrumented():
    first = _module("\t// gwatch.scope_start 1\n\t// gwatch.scope_end 1\n\tret;", "first")
    second = _module("\tret;", "second").split(".address_size 64\n", 1)[1]
    result = ptx.instrument(first + second)
    assert [e.name for e in result.entries] == ["first", "second"]
    assert result.ptx.count(f".param .u64 {BUFFER_PARAM}") == 2
    assert result.ptx.count("$__gwatch_exit:") == 2
    ptx.assemble(result.ptx)


def test_entry_without_parameters_gains_the_buffer_parameter():
    source = _module("\t// gwatch.scope_start 3\n\t// gwatch.scope_end 3\n\tret;").replace(
        "\t.param .u64 k_param_0\n", "")
    result = ptx.instrument(source)
    assert result.entries[0].num_params == 0
    ptx.assemble(result.ptx)


def test_braces_in_comments_and_strings_do_not_confuse_the_rewriter():
    body = "\t// a comment with { and }\n\t/* block { comment\n still } open { */\n" \
           "\t// gwatch.scope_start 4\n\t{\n\t.reg .b32 %t;\n\tmov.u32 %t, 1;\n\t}\n\t// gwatch.scope_end 4\n\tret;"
    source = _module(body) + '\t.file\t1 "/tmp/dir{with}brace.py"\n'
    result = ptx.instrument(source)
    assert len(result.sites) == 2
    ptx.assemble(result.ptx)


@pytest.mark.parametrize("text, message", [
    ("\t// gwatch.scope_start x1", "malformed gwatch sentinel"),
    ("\t// gwatch.scope_start 40000", "malformed gwatch sentinel"),
    ("\tmov.u32 %r1, 0; // gwatch.scope_end 2", "malformed gwatch sentinel"),
])
def test_malformed_sentinels_are_reported_with_their_line(text, message):
    with pytest.raises(ptx.PTXRewriteError, match=rf"PTX line 11: {message}"):
        ptx.instrument(_module(text + "\n\tret;"))


def test_sentinel_in_a_device_function_is_refused():
    source = _module("\tret;") + ".func helper()\n{\n\t// gwatch.scope_start 1\n\tret;\n}\n"
    with pytest.raises(ptx.PTXRewriteError, match=r"non-inlined device function"):
        ptx.instrument(source)


def test_sentinel_outside_functions_is_refused():
    with pytest.raises(ptx.PTXRewriteError, match="outside any function"):
        ptx.instrument("// gwatch.scope_start 1\n" + _module("\tret;"))


def test_text_without_sentinels_is_the_same_object():
    source = _module("\tret;")
    assert ptx.instrument(source).ptx is source


# ------------------------------------------------------------------ property-based

line = st.one_of(
    st.tuples(st.just("start"), st.integers(0, 5)),
    st.tuples(st.just("end"), st.integers(0, 5)),
    st.just(("ret", None)), st.just(("pret", None)), st.just(("exit", None)),
    st.just(("inst", None)), st.just(("block", None)),
)


def _render(kind, value, index):
    return {
        "start": f"\t// gwatch.scope_start {value}",
        "end": f"\t// gwatch.scope_end {value}",
        "ret": f"$L__BB0_{index}: ret;",
        "pret": "\t@%p1 ret;",
        "exit": "\texit;",
        "inst": "\tadd.s32 \t%r2, %r2, 1;",
        "block": "\t{\n\t.reg .b32 %q;\n\tmov.u32 %q, %r2;\n\t}",
    }[kind]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, max_size=25))
def test_random_bodies_keep_every_site_and_exit_and_assemble(lines):
    body = "\tmov.u32 \t%r2, %tid.x;\n\tsetp.eq.u32 \t%p1, %r2, 3;\n" + \
           "\n".join(_render(kind, value, i) for i, (kind, value) in enumerate(lines)) + "\n\tret;"
    source = _module(body)
    result = ptx.instrument(source)
    sentinels = [(k, v) for k, v in lines if k in ("start", "end")]
    assert [(s.kind, s.scope_id) for s in result.sites] == sentinels
    if not sentinels:
        assert result.ptx is source
        return
    assert result.entries[0].num_exits == 1 + sum(k in ("ret", "pret", "exit") for k, _ in lines)
    assert _exits(result.ptx) == 1
    ptx.assemble(result.ptx)
