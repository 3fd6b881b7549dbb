"""Scope sites on the final schedule of real corpus kernels (cubins from the Triton installed
here and the H200's 3.6): the attention kernel's four scopes, the matmul's loop scopes, the persistent
matmuls' tile scope (one pair per tile iteration, though the pipeliner copies the load scope's
code into the loop's prologue), and the warp-specialized loop whose markers Triton drops from
the PTX (the Python source still names them), and scopes around code ptxas makes a subroutine of."""
from collections import Counter

import pytest

import corpus

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import markers
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.lines import line_table
from gwatch_nb.sass.markers import Marker
from gwatch_nb.sass.sites import COLUMNS, columns, place
from sass_cubins import CASES, compiled, cubins
from test_sass_lines import h200_cubins

CASE = {case.name: case for case in CASES}
VERSIONS = ["here", "h200"]  # the Triton installed here (3.9 on the CPU machines), the H200's 3.6


def _cubin(name: str, version: str) -> bytes:
    return cubins()[name] if version == "here" else h200_cubins()[name]


_PLACED = {}


def placed(name: str, version: str):
    """(instructions, cfg, sites) of a corpus kernel, its markers read from the Python source."""
    if (name, version) not in _PLACED:
        cubin = _cubin(name, version)
        ((kernel, instructions),) = disassemble(cubin).items()
        (locations,) = line_table(cubin).values()
        cfg = ControlFlowGraph(instructions, kernel)
        _PLACED[name, version] = instructions, cfg, place(instructions, locations,
                                                          markers.from_source(CASE[name].fn), kernel, cfg)
    return _PLACED[name, version]


def _pairs(sites, scope):
    starts = {s.pair: s for s in sites if s.scope == scope and s.kind == "start"}
    ends = {s.pair: s for s in sites if s.scope == scope and s.kind == "end"}
    assert set(starts) == set(ends)
    return [(starts[p], ends[p]) for p in sorted(starts)]


def _consistent(instructions, cfg, sites):
    for site in sites:
        assert site.span == site.own + site.other_scopes + site.unscoped
        assert 0 < site.own <= site.span and 0 <= site.inferred <= site.own
        assert cfg.block_of[site.instruction] == site.block
        assert site.index == site.instruction or (site.kind == "end" and site.index == site.instruction + 1)
    for scope in {s.scope for s in sites}:
        for start, end in _pairs(sites, scope):
            assert start.instruction <= end.instruction and start.loop == end.loop
            assert cfg.dominates(start.block, end.block)


@pytest.mark.parametrize("version", VERSIONS)
def test_attention_scopes_repeat_with_the_main_loop(version):
    instructions, cfg, sites = placed("attention fwd d64", version)
    _consistent(instructions, cfg, sites)
    (main,) = [k for k, loop in enumerate(cfg.loops) if loop.depth == 1]
    for scope in (100, 101, 102, 103):
        in_loop = [p for p in _pairs(sites, scope) if p[0].loop == main]
        assert len(in_loop) == 1, scope
    # the pipeliner issues the first K/V loads before the loop: that code is no iteration of its
    # own, so load_kv is read once per iteration, as often as the source runs it
    assert [p[0].loop for p in _pairs(sites, 100)] == [main]

    def opcodes(scope):
        ((start, end),) = [p for p in _pairs(sites, scope) if p[0].loop == main]
        return Counter(i.base for i in instructions[start.instruction:end.instruction + 1])
    assert opcodes(101)["HGMMA"] and opcodes(103)["HGMMA"]
    assert opcodes(102)["MUFU"]
    assert opcodes(100)["LDG"] or opcodes(100)["LDGSTS"]


@pytest.mark.parametrize("version", VERSIONS)
def test_matmul_loop_scopes(version):
    instructions, cfg, sites = placed("matmul", version)
    _consistent(instructions, cfg, sites)
    assert [p[0].loop for p in _pairs(sites, 101)] == [0]
    assert 0 in [p[0].loop for p in _pairs(sites, 100)]
    assert {p[0].loop for p in _pairs(sites, 102)} == {None}  # the store after the K loop


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["persistent matmul, host TMA descriptors",
                                  "persistent matmul, in-kernel TMA descriptors"])
def test_persistent_tile_scope_pairs_once_per_tile(name, version):
    instructions, cfg, sites = placed(name, version)
    _consistent(instructions, cfg, sites)
    (tile_loop,) = [k for k, loop in enumerate(cfg.loops) if loop.depth == 1]
    ((start, end),) = _pairs(sites, 300)
    assert start.loop == end.loop == tile_loop
    # the K loop runs inside the tile scope's pair, and the dot scope repeats with it
    (k_loop,) = [k for k, loop in enumerate(cfg.loops) if loop.depth == 2]
    k_blocks = cfg.loops[k_loop].blocks
    assert all(cfg.dominates(start.block, b) for b in k_blocks)
    ((dot_start, dot_end),) = _pairs(sites, 302)
    assert dot_start.loop == k_loop and dot_start.block in k_blocks
    assert all(p[0].loop in (tile_loop, k_loop) for p in _pairs(sites, 301))
    ((store, _),) = _pairs(sites, 303)
    assert store.loop == tile_loop


@pytest.mark.parametrize("version", VERSIONS)
def test_warp_specialized_loop_scopes_come_from_the_source(version):
    name = "warp-specialized TMA matmul"
    from_ptx = {m.scope_id for m in markers.from_ptx(compiled(CASE[name]).asm["ptx"])}
    assert from_ptx == {300, 303}  # Triton drops the loop's markers
    instructions, cfg, sites = placed(name, version)
    _consistent(instructions, cfg, sites)
    for scope, opcode in ((301, "UTMALDG"), (302, "HGMMA")):
        pairs = _pairs(sites, scope)
        assert pairs and all(p[0].loop is not None for p in pairs), scope
        assert any(opcode in {i.base for i in instructions[s.instruction:e.instruction + 1]} for s, e in pairs)


@pytest.mark.parametrize("case", [c for c in corpus.CASES if c.scopes and not c.lost_scopes], ids=lambda c: c.name)
def test_ptx_and_source_markers_agree(case):
    def key(ms):
        return sorted((m.file.rsplit("/", 1)[-1], m.line, m.kind, m.scope_id) for m in ms)
    assert key(markers.from_ptx(compiled(case).asm["ptx"])) == key(markers.from_source(case.fn))


def test_fallback_without_inlining_chains():
    """Triton 3.6 gives inlined library and helper code no call site. Dropping the chains from
    3.9's cubins and inferring them, as for 3.6, must keep that code in the scope the real chain
    puts it in: from the kernel's own calls of the library function or helper (measured: 1,530
    of 1,534 instructions over the corpus), where block neighbours alone place 688 of them."""
    import dataclasses
    from gwatch_nb.sass.callsites import CallSites
    from gwatch_nb.sass.sites import home_chains, innermost_scopes, scopes_of
    total, agree = 0, Counter()
    for case in CASES:
        found = markers.from_source(case.fn)
        if not found:
            continue
        cubin = cubins()[case.name]
        ((kernel, instructions),) = disassemble(cubin).items()
        (locations,) = line_table(cubin).values()
        cfg = ControlFlowGraph(instructions, kernel)
        scopes = scopes_of(found, kernel)
        files = {s.file for s in scopes}
        if not any(loc and loc.inlined_at for loc in locations):
            continue
        truth, _ = innermost_scopes(home_chains(locations, cfg, files)[0], scopes)
        flat = [dataclasses.replace(loc, inlined_at=None) if loc else None for loc in locations]
        for how, callsites in (("neighbours", None), ("call sites", CallSites(case.fn))):
            chains, inferred = home_chains(flat, cfg, files, callsites)
            guess, _ = innermost_scopes(chains, scopes)
            picked = [i for i, flag in enumerate(inferred) if flag]
            agree[how] += sum(truth[i] == guess[i] for i in picked)
        total += len(picked)
    if not total:
        pytest.skip("this Triton's cubins carry no inlining chain to measure the fallback against")
    assert total > 500
    assert agree["call sites"] / total >= 0.99 and agree["neighbours"] / total >= 0.4, (agree, total)


def test_call_sites_of_unreadable_library_code_are_unknown():
    from gwatch_nb.sass.callsites import CallSites
    sites_of = CallSites(CASE["attention fwd d64"].fn)
    assert sites_of.lines_calling("/nonexistent/standard.py", 170) == ()
    import triton.language.standard as standard
    import inspect
    lines, first = inspect.getsourcelines(getattr(standard.max, "fn", standard.max))
    assert 49 in sites_of.lines_calling(standard.__file__, first + len(lines) - 1)  # tl.max on line 49
    with pytest.raises(SassRewriteError, match=r"^kernel len: no Python source to read its calls from [^\n]*$"):
        CallSites(len)


def test_code_ptxas_makes_a_subroutine_of_holds_no_reading():
    """Two 64-bit divisions in two scopes: ptxas calls one subroutine, after the kernel's EXIT,
    from both, and the graph sends its RET back to both call sites. Every reading stays on the
    kernel's own path, each scope's pair around its own call, and the proof steps over the
    calls. Before, the return edges made scope 26's start dominate both calls and the proof
    refused scope 25's end ("reached with no start before it"); vLLM's fused MoE kernel, whose
    whole-kernel scope ended in the subroutine's RET, was refused the same way."""
    from compile_kernels import compile_kernel
    from corpus_kernels import basics
    from gwatch_nb.sass.instrument import instrument
    cubin = compile_kernel(basics.divide_in_scopes, dict(X="*i64", Q="*i64", R="*i64", N="i32", D="i64", E="i64"),
                           dict(BLOCK=128)).asm["cubin"]
    ((kernel, instructions),) = disassemble(cubin).items()
    cfg = ControlFlowGraph(instructions, kernel)
    calls = [i for i in instructions if i.base == "CALL"]
    assert len(calls) == 2 and len({i.target for i in calls}) == 1 and cfg.in_subroutine[cfg.block_of[calls[0].target]]
    made = instrument(cubin, kernel, markers.from_source(basics.divide_in_scopes))
    assert made.left_out == []
    assert not any(cfg.in_subroutine[b] for b in made.sites["block"])
    at = {(scope, kind): index for scope, kind, index in zip(made.sites["scope"], made.sites["kind"], made.sites["index"])}
    assert set(basics.DIVIDE_SCOPES) == {scope for scope, _ in at}
    for scope, call in zip((25, 26), calls):
        assert at[scope, "start"] <= call.index < at[scope, "end"]
    assert at[25, "end"] <= at[26, "start"]


def test_table():
    cubin = cubins()["attention fwd d128 causal"]
    ((kernel, instructions),) = disassemble(cubin).items()
    (locations,) = line_table(cubin).values()
    sites = place(instructions, locations, markers.from_source(CASE["attention fwd d128 causal"].fn), kernel)
    table = columns(sites)
    assert tuple(table) == COLUMNS and all(len(v) == len(sites) for v in table.values())


def test_unpaired_markers_are_one_line():
    cubin = cubins()["matmul"]
    ((kernel, instructions),) = disassemble(cubin).items()
    (locations,) = line_table(cubin).values()
    open_only = [Marker("matmul.py", 21, "start", 100)]
    with pytest.raises(SassRewriteError, match=r"^kernel matmul_kernel: scope 100 starts on line 21 and never ends$"):
        place(instructions, locations, open_only, kernel)
    twice = [Marker("matmul.py", 21, "start", 100), Marker("matmul.py", 22, "start", 100),
             Marker("matmul.py", 24, "end", 100)]
    with pytest.raises(SassRewriteError, match=r"starts again on line 22 while open since line 21$"):
        place(instructions, locations, twice, kernel)


def test_source_marker_id_must_be_an_integer():
    def kernel(n):
        from gwatch_nb.triton import scope_start
        scope_start(n)
    with pytest.raises(SassRewriteError, match=r"^kernel kernel: the marker on line \d+ needs one integer scope id"):
        markers.from_source(kernel)


def test_documented_columns_are_the_tables():
    import os
    import re
    from gwatch_nb.sass import waits
    doc = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "sass",
                            "sites.md")).read()
    table = doc[doc.index("| column | meaning |"):doc.index("## Automatic sites")]
    documented = [name for row in table.splitlines()[2:] if row.startswith("|")
                  for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert documented == list(COLUMNS)
    for name in waits.COLUMNS:
        assert f"`{name}`" in doc[doc.index("## Automatic sites"):]
