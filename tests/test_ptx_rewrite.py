"""The PTX rewriter on real Triton kernels (compiled for sm_90 here, assembled by ptxas)
and on hand-written PTX for the shapes Triton rarely emits."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compile_kernels import compile_ptx
from corpus import CASES
from gwatch_nb import ptx
from gwatch_nb.layout import BUFFER_PARAM, CAPACITY_PARAM, SLOT_RECORDS_PARAM
from gwatch_nb.records import SiteTable

EXIT_LINES = re.compile(r"^\s*(\$?[\w$]+:\s*)?(@!?%\w+\s+)?(ret|exit)(\.uni)?\s*;", re.M)


def _exits(text: str) -> int:
    return len(EXIT_LINES.findall(text))


ROOM_TEST = re.compile(r"setp\.lt\.and\.u32 \t%gwatch_ok,")
SITE = re.compile(r"// gwatch site (\d+): scope_(start|end)")
CLOCK_READ = re.compile(r"mov\.u32 \t(%gwatch_clk\d+), %clock;")
SITE_VALUE = re.compile(r"mov\.u32 \t%gwatch_site, (\d+);")
STORE = re.compile(r"@%gwatch_ok st\.global\.cs\.v4\.b32 \t\[%gwatch_ptr\+(\d+)\], "
                   r"\{(%gwatch_clk\d+), (%gwatch_clk\d+), (%gwatch_clk\d+), %gwatch_site\};")
ADVANCE_N = re.compile(r"add\.u32 \t%gwatch_n, %gwatch_n, (\d+);")
ADVANCE_PTR = re.compile(r"@%gwatch_ok add\.u64 \t%gwatch_ptr, %gwatch_ptr, (\d+);")
BRANCH = re.compile(r"^\s*(?:[\w$]+:\s*)*(?:@!?%\w+\s+)?br[ax][.\s]")
LABEL = re.compile(r"^\s*([\w$]+):")
NO_TIME = re.compile(r"^\s*(//.*|\.\w.*|[\w$]+:\s*|mov\.u32 \t?%r\d+, 0;|)$")

# What an end marker's reading may wait behind: register arithmetic, no braces on its line,
# whose sources (guard included) are virtual registers the stretch has not written before
# the marker.
ARITHMETIC = {"abs", "add", "addc", "and", "bfe", "bfi", "bfind", "brev", "clz", "cnot", "copysign", "cos",
              "cvt", "cvta", "div", "dp2a", "dp4a", "ex2", "fma", "fns", "lg2", "lop3", "mad", "mad24", "madc",
              "max", "min", "mov", "mul", "mul24", "neg", "not", "or", "popc", "prmt", "rcp", "rem", "rsqrt",
              "sad", "selp", "set", "setp", "shf", "shl", "shr", "sin", "slct", "sqrt", "sub", "subc", "tanh",
              "testp", "xor"}
INSTRUCTION = re.compile(r"^\s*(?:[\w$]+:\s*)*(@!?%\w+\s+)?([a-z][\w.]*)\s+([^;]*);\s*(//.*)?$")
VIRTUAL_REGISTER = re.compile(r"%[a-z]{1,3}\d+")
REGISTER = re.compile(r"%[\w.$]+")
READING_WAIT_MAX = 32


def _split(line: str):
    """(guard, opcode, destination text, source text) of a one-instruction line, or None."""
    match = INSTRUCTION.match(line)
    if not match:
        return None
    guard, opcode, operands = match.group(1) or "", match.group(2), match.group(3)
    depth, cut = 0, len(operands)
    for i, char in enumerate(operands):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            cut = i
            break
    return guard, opcode, operands[:cut], operands[cut:]


def _written(line: str) -> set[str]:
    parts = _split(line)
    return set(REGISTER.findall(parts[2] if parts else line))


def _independent(line: str, computed: set[str]) -> bool:
    parts = _split(line)
    if not parts or parts[1].split(".")[0] not in ARITHMETIC or "{" in line:
        return False
    guard, _, destination, sources = parts
    return all(VIRTUAL_REGISTER.fullmatch(r) for r in REGISTER.findall(destination)) and all(
        VIRTUAL_REGISTER.fullmatch(r) and r not in computed for r in REGISTER.findall(guard + sources))


def _branch_targets(text: str) -> set[str]:
    return set(re.findall(r"\bbra(?:\.uni)?\s+([\w$]+);", text))


def check_groups(text: str, targets: set[str], sites) -> dict:
    """Walk an instrumented entry's lines and check the group discipline against the
    rewriter's site table: a room test opens a group; each start marker takes the clock
    reading made at it, or the one just before it with no instruction run since; an end
    marker does the same, or takes a reading made after at most 32 instructions of
    register arithmetic that read nothing the stretch computed before it; the group's
    records are stored in order at consecutive 16-byte places from the pointer, each
    naming its first site, covering the next markers of the group (as many as the table
    says), with each marker's own reading, still in its register, at the place the table
    gives it; and the counters advance by exactly the group's events and records before
    any branch or branch target. Returns counts of room tests, clock reads, stores,
    markers stored, and instructions end markers' readings waited behind."""
    counts = {"groups": 0, "clocks": 0, "stores": 0, "events": 0, "waited": 0}
    open_group, markers, stored, records, fresh = False, [], 0, 0, False
    readings = {}  # register -> how many times it was read, to spot one overwritten too early
    computed, waited_behind = set(), set()  # registers the stretch wrote; lines a reading came after
    lines = text.splitlines()
    for i, line in enumerate(lines):
        where = f"line {i + 1}"
        label = LABEL.match(line)
        if BRANCH.match(line) or (label and label.group(1) in targets) or "$__gwatch_exit:" in line \
                or "/*" in line or "*/" in line:
            assert not open_group, f"{where}: control leaves a stretch with {len(markers)} events not counted"
            fresh = False
            computed = set()
        if ROOM_TEST.search(line):
            assert not open_group, f"{where}: a group opens inside another"
            open_group, markers, stored, records = True, [], 0, 0
            counts["groups"] += 1
        elif site := SITE.search(line):
            read = CLOCK_READ.search(lines[i + 1])
            if not read and not fresh and site.group(2) == "end":
                for j in range(i + 1, len(lines)):
                    if read := CLOCK_READ.search(lines[j]):
                        break
                    if NO_TIME.match(lines[j]) and not SITE.search(lines[j]):
                        continue
                    assert _independent(lines[j], computed), \
                        f"{where}: the end marker's reading waits behind line {j + 1}, which is not " \
                        "arithmetic independent of the stretch"
                    waited_behind.add(j)
                assert len([j for j in waited_behind if j > i]) <= READING_WAIT_MAX
            assert read or fresh, f"{where}: an instruction ran between the clock read and this marker"
            register = read.group(1) if read else current
            markers.append((int(site.group(1)), register, readings.get(register, 0) + (1 if read else 0)))
        elif read := CLOCK_READ.search(line):
            current, fresh = read.group(1), True
            readings[current] = readings.get(current, 0) + 1
            counts["clocks"] += 1
        elif match := STORE.search(line):
            first = int(SITE_VALUE.search(lines[i - 1]).group(1))
            covered = sites[first].record_events
            assert open_group and int(match.group(1)) == 16 * records, f"{where}: record stored out of place"
            assert covered > 0 and [m[0] for m in markers[stored:stored + covered]] == \
                list(range(first, first + covered)), f"{where}: the record does not cover the next markers"
            places = match.group(2, 3, 4)
            for number, register, generation in markers[stored:stored + covered]:
                assert places[sites[number].reading] == register and readings[register] == generation, \
                    f"{where}: site {number} is stored with another marker's clock reading"
            stored += covered
            records += 1
            counts["stores"] += 1
        elif match := ADVANCE_N.search(line):
            assert open_group and int(match.group(1)) == len(markers) == stored, \
                f"{where}: counters advance by {match.group(1)} after {stored} of {len(markers)} events stored"
            assert int(ADVANCE_PTR.search(lines[i + 1]).group(1)) == 16 * records
            counts["events"] += stored
            open_group = False
        elif "gwatch" not in line and not NO_TIME.match(line) and not line.strip().startswith("@%gwatch_on"):
            fresh = False
            if i in waited_behind:
                counts["waited"] += 1
            else:
                computed |= _written(line)
    assert not open_group
    return counts


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
    if case.copied_starts:
        assert len(starts) > len(ends) > 0
    elif case.early_ends:
        assert len(ends) > len(starts) > 0
    else:
        assert len(starts) == len(ends) > 0
    assert {s.scope_id for s in result.sites} == case.scope_ids
    (entry,) = result.entries
    assert entry.num_sites == len(result.sites)
    assert f".param .u64 {BUFFER_PARAM},\n\t.param .u32 {CAPACITY_PARAM},\n\t.param .u32 {SLOT_RECORDS_PARAM}\n)" \
        in result.ptx
    # Every original exit now branches to the epilogue, whose ret is the only one left.
    assert entry.num_exits == _exits(source) >= 1
    assert _exits(result.ptx) == 1
    assert result.ptx.count("bra") - source.count("bra") >= entry.num_exits
    counts = check_groups(result.ptx, _branch_targets(result.ptx), result.sites)
    assert counts["events"] == len(result.sites)
    assert counts["groups"] <= counts["stores"] <= counts["clocks"] <= len(result.sites)
    ptx.assemble(result.ptx)


def test_a_loop_body_tests_room_once_and_adjacent_markers_share_a_clock():
    """The attention example's loop body is one straight-line stretch: its eight markers
    make one group, the three places where one scope ends right where the next starts
    read the clock once each, the five readings go out in two stores, and the last end
    marker's reading waits behind the next step's address arithmetic."""
    case = next(c for c in CASES if c.name == "attention fwd d64")
    source = compile_ptx(case.fn, case.signature, case.constexprs, case.num_warps, case.num_stages)
    result = ptx.instrument(source)
    assert len(result.sites) == 8
    counts = check_groups(result.ptx, _branch_targets(result.ptx), result.sites)
    assert counts == {"groups": 1, "clocks": 5, "stores": 2, "events": 8, "waited": 4}
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


def test_a_long_run_of_markers_is_cut_into_groups_the_spare_room_can_hold():
    from gwatch_nb.layout import GROUP_MAX_EVENTS
    count = 2 * GROUP_MAX_EVENTS + 1
    body = "\n".join(f"\t// gwatch.scope_{'end' if i % 2 else 'start'} 1" for i in range(count)) + "\n\tret;"
    result = ptx.instrument(_module(body))
    counts = check_groups(result.ptx, set(), result.sites)
    assert counts == {"groups": 3, "clocks": 3, "stores": 3, "events": count, "waited": 0}
    ptx.assemble(result.ptx)


def test_every_entry_of_a_module_is_instrumented():
    first = _module("\t// gwatch.scope_start 1\n\t// gwatch.scope_end 1\n\tret;", "first")
    second = _module("\tret;", "second").split(".address_size 64\n", 1)[1]
    result = ptx.instrument(first + second)
    assert [e.name for e in result.entries] == ["first", "second"]
    assert result.ptx.count(f".param .u64 {BUFFER_PARAM}") == 2
    assert result.ptx.count("$__gwatch_exit:") == 2
    ptx.assemble(result.ptx)


def test_each_kernel_of_a_module_gets_its_own_site_table():
    """Sites are numbered across the module; a kernel's table lets only its own records
    start there, and its slots are sized from its own records."""
    first = _module("\t// gwatch.scope_start 1\n\t// gwatch.scope_end 1\n\tret;", "first")
    second = _module("\tmov.u32 \t%r2, %tid.x;\n\tsetp.eq.u32 \t%p1, %r2, 3;\n\t// gwatch.scope_start 2\n"
                     "\t@%p1 bra \t$L__BB1_1;\n$L__BB1_1:\n\t// gwatch.scope_end 2\n\tret;",
                     "second").split(".address_size 64\n", 1)[1]
    result = ptx.instrument(first + second)
    mine, theirs = (SiteTable.of_entry(result.sites, name) for name in ("first", "second"))
    assert mine.record_events.tolist() == [2, 0, 0, 0] and mine.min_record_events == 2
    assert theirs.record_events.tolist() == [0, 0, 1, 1] and theirs.min_record_events == 1
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


def test_a_stretch_with_more_readings_than_registers_stores_them_on_the_way():
    """Ten markers, each after an instruction: one group, ten readings; those waiting are
    stored when the registers for them run out, and every marker is stored once."""
    body = "".join(f"\tadd.s32 \t%r2, %r2, 1;\n\t// gwatch.scope_{'end' if i % 2 else 'start'} 1\n"
                   for i in range(10)) + "\tret;"
    result = ptx.instrument(_module(body))
    counts = check_groups(result.ptx, set(), result.sites)
    assert counts == {"groups": 1, "clocks": 10, "stores": 4, "events": 10, "waited": 0}
    ptx.assemble(result.ptx)


WAIT_BODY = """\t.reg .b32 \t%s<8>;
\t.reg .b64 \t%sd<2>;
\tld.param.u64 \t%sd1, [k_param_0];
\t// gwatch.scope_start 1
\tld.global.u32 \t%s1, [%sd1];
\tsetp.eq.u32 \t%p2, %s1, 0;
\t// gwatch.scope_end 1
{after}
\tst.global.u32 \t[%sd1], %s7;
\tret;"""


@pytest.mark.parametrize("after, waited, clocks", [
    # independent arithmetic, then one that reads the load of the scope
    (["add.s32 \t%s2, %s6, 1;", "shl.b32 \t%s3, %s2, 2;", "add.s32 \t%s7, %s1, %s3;"], 2, 2),
    (["mov.u32 \t%s2, %tid.y;"], 0, 2),  # a special register
    (["@%p2 add.s32 \t%s2, %s6, 1;"], 0, 2),  # guarded by a predicate the scope computed
    (["ld.global.u32 \t%s2, [%sd1];"], 0, 2),  # memory
    (["add.s32 \t%s2, %s2, 1;"] * 40, 32, 2),  # at most 32
    # the next scope starts right after the arithmetic: one reading for both markers
    (["add.s32 \t%s2, %s6, 1;", "// gwatch.scope_start 2", "add.s32 \t%s7, %s2, 1;", "// gwatch.scope_end 2"],
     1, 3),
], ids=["independent-then-dependent", "special-register", "guard", "memory", "cap", "next-scope-shares"])
def test_an_end_marker_reads_the_clock_after_the_independent_arithmetic_that_follows(after, waited, clocks):
    result = ptx.instrument(_module(WAIT_BODY.format(after="\n".join("\t" + line for line in after))))
    counts = check_groups(result.ptx, set(), result.sites)
    assert (counts["waited"], counts["clocks"]) == (waited, clocks)
    lines = result.ptx.splitlines()
    end = next(i for i, line in enumerate(lines) if "scope_end 1" in line)
    read = next(i for i in range(end, len(lines)) if CLOCK_READ.search(lines[i]))
    assert [line.strip() for line in lines[end + 1:read] if not NO_TIME.match(line)] == after[:waited]
    ptx.assemble(result.ptx)


def test_a_start_marker_reads_the_clock_where_it_stands():
    result = ptx.instrument(_module("\t// gwatch.scope_start 1\n\tadd.s32 \t%r2, %r3, 1;\n"
                                    "\t// gwatch.scope_end 1\n\tret;"))
    lines = result.ptx.splitlines()
    start = next(i for i, line in enumerate(lines) if "scope_start 1" in line)
    assert CLOCK_READ.search(lines[start + 1])
    assert check_groups(result.ptx, set(), result.sites)["waited"] == 0


# ------------------------------------------------------------------ property-based

line = st.one_of(
    st.tuples(st.just("start"), st.integers(0, 5)),
    st.tuples(st.just("end"), st.integers(0, 5)),
    st.just(("ret", None)), st.just(("pret", None)), st.just(("exit", None)),
    st.just(("inst", None)), st.just(("block", None)),
    st.just(("label", None)), st.just(("target", None)), st.just(("bra", None)), st.just(("value", None)),
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
        "label": f"$L__tmp{index}:\n\t.loc\t1 {index + 1} 7\n\t// begin inline asm",
        "target": f"$L__BB0_T{index}:",
        "bra": "\t@%p1 bra \t$L__BB0_END;",
        "value": "\tmov.u32 %r3, 0;",
    }[kind]


def _expected_counts(lines) -> tuple[int, int, int, int]:
    """What the rewriter should emit for a body: a room test per group (a group ends at a
    branch, a branch target, an exit, or after 16 events), a clock read per run of
    markers with no instruction between them, and a store per three readings of a group
    (and one for the rest). An end marker that takes a reading of its own, while fewer
    than six wait to be stored, takes it after the `inst` lines that follow it (at most
    32) as long as no `inst` line of the stretch came before: those add to a register the
    stretch has not written yet; a marker right after them shares that reading."""
    groups = clocks = stores = in_group = readings = pending = waited = waited_behind = 0
    fresh = owed = written = False

    def close():
        nonlocal stores, in_group, readings, pending, fresh, owed
        stores += -(-readings // 3)
        in_group = readings = pending = 0
        fresh = owed = False

    for kind, _ in lines:
        if kind in ("start", "end"):
            owed = False
            if in_group == 16:
                close()
            if not in_group:
                groups += 1
                fresh = False
            if not fresh:
                clocks += 1
                readings += 1
                owed, waited = kind == "end" and pending < 6, 0
                pending = pending % 6 + 1
            in_group += 1
            fresh = True
        elif kind == "inst" and owed and not written and waited < 32:
            waited += 1
            waited_behind += 1
        elif kind in ("inst", "block"):
            owed = fresh = False
            written = written or kind == "inst"
        elif kind in ("ret", "pret", "exit", "target", "bra"):
            close()
            written = False
    close()
    return groups, clocks, stores, waited_behind


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, max_size=40))
def test_random_bodies_keep_every_site_and_exit_and_assemble(lines):
    targets = {f"$L__BB0_T{i}" for i, (kind, _) in enumerate(lines) if kind == "target"} | {"$L__BB0_END"}
    jumps = "".join(f"\t@%p1 bra \t{name};\n" for name in sorted(targets))
    body = "\tmov.u32 \t%r2, %tid.x;\n\tsetp.eq.u32 \t%p1, %r2, 3;\n" + jumps + \
           "\n".join(_render(kind, value, i) for i, (kind, value) in enumerate(lines)) + "\n$L__BB0_END:\n\tret;"
    source = _module(body)
    result = ptx.instrument(source)
    sentinels = [(k, v) for k, v in lines if k in ("start", "end")]
    assert [(s.kind, s.scope_id) for s in result.sites] == sentinels
    if not sentinels:
        assert result.ptx is source
        return
    assert result.entries[0].num_exits == 1 + sum(k in ("ret", "pret", "exit") for k, _ in lines)
    assert _exits(result.ptx) == 1
    counts = check_groups(result.ptx, targets, result.sites)
    assert (counts["groups"], counts["clocks"], counts["stores"], counts["waited"]) == _expected_counts(lines)
    assert counts["events"] == len(sentinels)
    ptx.assemble(result.ptx)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, max_size=40), st.frozensets(st.integers(0, 5)))
def test_idle_markers_are_as_if_absent(lines, traced):
    """With ``scopes``, the rewriter passes the other scopes' markers as the comments they
    are: the records, readings and stores are those of the body without them."""
    def idle(kind, value):
        return kind in ("start", "end") and value not in traced
    targets = {f"$L__BB0_T{i}" for i, (kind, _) in enumerate(lines) if kind == "target"} | {"$L__BB0_END"}
    jumps = "".join(f"\t@%p1 bra \t{name};\n" for name in sorted(targets))
    body = "\tmov.u32 \t%r2, %tid.x;\n\tsetp.eq.u32 \t%p1, %r2, 3;\n" + jumps + \
           "\n".join(_render(kind, value, i) for i, (kind, value) in enumerate(lines)) + "\n$L__BB0_END:\n\tret;"
    source = _module(body)
    result = ptx.instrument(source, traced)
    kept = [(k, v) for k, v in lines if not idle(k, v)]
    sentinels = [(k, v) for k, v in kept if k in ("start", "end")]
    assert [(s.kind, s.scope_id) for s in result.sites] == sentinels
    if not sentinels:
        assert result.ptx is source
        return
    for kind, value in {(k, v) for k, v in lines if idle(k, v)}:
        assert f"\t// gwatch.scope_{kind} {value}\n" in result.ptx
    counts = check_groups(result.ptx, targets, result.sites)
    assert (counts["groups"], counts["clocks"], counts["stores"], counts["waited"]) == _expected_counts(kept)
    ptx.assemble(result.ptx)
