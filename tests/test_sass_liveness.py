"""Register liveness and free registers: a kernel checked by hand, NVIDIA's own life ranges on
every corpus kernel (ours may only be larger), a path-search oracle on random programs, and
the time the largest corpus kernel takes."""
import re

import pytest
from hypothesis import given, settings, strategies as st

import sass_census
import sass_cubins
import sass_ptx_kernels
import sass_reference
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import registers as regs
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.control import Control
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instruction import Instruction
from gwatch_nb.sass.liveness import RESERVED_REGISTERS, Liveness


def _names(mask: int) -> set[str]:
    return set(regs.register_names(mask))


def _guarded_store():
    kernel, instructions = sass_ptx_kernels.instructions(sass_ptx_kernels.GUARDED_STORE)
    count = Cubin.parse(sass_ptx_kernels.cubin(sass_ptx_kernels.GUARDED_STORE)).registers(kernel)
    return instructions, Liveness(ControlFlowGraph(instructions, kernel), count)


def test_hand_checked_guarded_store():
    """S2R tid; ISETP P0 = tid >= n; @P0 EXIT; address = out + 4 * tid; STG [address], tid; EXIT."""
    instructions, live = _guarded_store()
    at = {i.base: i.index for i in reversed(instructions)}
    s2r, setp, store = at["S2R"], at["ISETP"], at["STG"]
    tid, predicate = instructions[s2r].operands[0], instructions[setp].operands[0]
    guarded_exit, last_exit = [i.index for i in instructions if i.base == "EXIT"]
    assert tid not in _names(live.live_in[s2r]) and tid in _names(live.live_out[s2r])
    assert all(tid in _names(live.live_in[k]) for k in range(s2r + 1, store + 1))
    assert tid not in _names(live.live_out[store])               # its last read
    assert predicate in _names(live.live_out[setp]) and predicate in _names(live.live_in[guarded_exit])
    assert predicate not in _names(live.live_out[guarded_exit])
    assert _names(live.live_in[last_exit]) == {"R1"}              # only the stack pointer
    # The store still reads its sources after it issued: they are not free before the exit.
    address = instructions[store].operands[0].split("][")[1].split(".")[0]
    busy = {tid, address, f"R{int(address[1:]) + 1}", "R1"}
    free = {f"R{r}" for r in live.free_registers(last_exit)}
    assert not free & busy and free == {f"R{r}" for r in range(live.register_count - RESERVED_REGISTERS)} - busy
    assert all(r % 2 == 0 and f"R{r}" in free and f"R{r + 1}" in free for r in live.free_registers(last_exit, width=2))


def test_windows_stay_inside_one_block():
    instructions, live = _guarded_store()
    guarded_exit = next(i.index for i in instructions if i.base == "EXIT")
    with pytest.raises(SassRewriteError, match="^kernel guarded_store: window 0..%d is not inside one basic block"
                                               % (guarded_exit + 1)):
        live.free_registers(0, guarded_exit + 1)
    assert set(live.free_registers(0, guarded_exit)) <= set(live.free_registers(guarded_exit))


def _corpus():
    cases = dict(sass_cubins.cubins())
    cases.update({f"h200 {name}": cubin for name, cubin in sass_cubins.h200_cubins().items()})
    cases["wide forms (PTX)"] = sass_ptx_kernels.cubin(sass_ptx_kernels.WIDE_FORMS)
    cases["calls (PTX)"] = sass_ptx_kernels.cubin(sass_ptx_kernels.CALLS)
    return cases


# Share of live (register, instruction) pairs beyond nvdisasm's: guarded writes never kill,
# so values under a predicate stay live on the path where it is false (the TMA kernels: up to
# 13.6% here, 15.5% on the H200's ptxas 12.8 build of the in-kernel-descriptor matmul).
CLOSENESS = 0.2


def _cubin(case: str) -> bytes:
    if case.startswith("census "):
        return sass_census.compiled(case.removeprefix("census ")).asm["cubin"]
    return _corpus()[case]


@pytest.mark.parametrize("case", sorted(_corpus()) + [f"census {name}" for name in sass_census.CALLING])
def test_liveness_contains_nvidia_life_ranges(case):
    """Everywhere nvdisasm has a register live, so do we; in a subroutine, but for what nvdisasm
    keeps live through it because its ABI has the subroutine preserve it, for callers we know
    do not need it (nvdisasm has it dead after every call from the kernel's own code)."""
    cubin = _cubin(case)
    reference = sass_reference.life_ranges(cubin)
    cubin_info = Cubin.parse(cubin)
    for kernel, instructions in disassemble(cubin).items():
        cfg = ControlFlowGraph(instructions, kernel)
        live = Liveness(cfg, cubin_info.registers(kernel))
        marks_of = reference[kernel]
        calls = [i for i in instructions if i.base == "CALL"]
        first_subroutine = min((c.target for c in calls), default=len(instructions))
        unneeded = {r for marks in marks_of.values() for r in marks} - \
            {r for c in calls if c.index < first_subroutine for r, m in marks_of.get(c.index + 1, {}).items()
             if m in ":vx"}
        theirs = ours = 0
        for index, marks in marks_of.items():
            if not cfg.reachable[cfg.block_of[index]]:
                continue
            preserved = unneeded if index >= first_subroutine else set()
            live_in = {r for r, m in marks.items() if m in ":vx"} - preserved
            through = {r for r, m in marks.items() if m == ":"} - preserved
            mine = _names(live.live_in[index])
            assert live_in <= mine, f"{kernel} @{index}: {sorted(live_in - mine)} dead here, live for nvdisasm"
            assert through <= _names(live.live_out[index]), f"{kernel} @{index}: dead after, live for nvdisasm"
            theirs += len(live_in)
            ours += len(mine)
        if not calls:  # every caller's live registers are live through every subroutine
            assert ours <= (1 + CLOSENESS) * theirs


def _here_and_h200() -> dict[str, bytes]:
    return {**{f"here {n}": c for n, c in sass_cubins.cubins().items()},
            **{f"h200 {n}": c for n, c in sass_cubins.h200_cubins().items()}}


@pytest.mark.parametrize("case", sorted(_here_and_h200()))
def test_the_top_two_registers_are_never_the_kernels_nor_handed_out(case):
    """ptxas leaves the top RESERVED_REGISTERS of every kernel's count unused (a kernel that
    sets its own maximum with setmaxnreg may use fewer); free_registers never offers them."""
    cubin = _here_and_h200()[case]
    cubin_info = Cubin.parse(cubin)
    for kernel, instructions in disassemble(cubin).items():
        count = cubin_info.registers(kernel)
        named = {int(r) for i in instructions for op in i.operands for r in re.findall(r"\bR(\d+)\b", op)}
        assert max(named) <= count - 1 - RESERVED_REGISTERS, f"{kernel}: R{max(named)} of {count}"
        live = Liveness(ControlFlowGraph(instructions, kernel), count)
        assert max(r for i in range(0, len(instructions), 13) for r in live.free_registers(i) or [0]) \
            < count - RESERVED_REGISTERS
        resized = [int(i.operands[-1], 16) for i in instructions if i.base == "USETMAXREG"]
        if resized:  # a warp given fewer registers by setmaxnreg is offered none above them
            assert live.register_limit == min(resized) - RESERVED_REGISTERS
            assert all(r < live.register_limit for i in range(len(instructions)) for r in live.free_registers(i))


def test_a_value_overwritten_before_any_read_is_dead():
    """On the corpus: where a register's next access in the block is an unguarded write that
    does not read it, the value written before is dead in between."""
    checked = 0
    for cubin in sass_cubins.cubins().values():
        for kernel, instructions in disassemble(cubin).items():
            cfg = ControlFlowGraph(instructions, kernel)
            live = Liveness(cfg, regs.GPR_COUNT)
            for block in cfg.blocks:
                for i in range(block.start, block.end):
                    pending = live.kills[i]
                    for k in range(i + 1, block.end):
                        if not pending:
                            break
                        overwritten = pending & live.kills[k] & ~live.reads[k]
                        for bit in regs.register_names(overwritten):
                            assert bit not in _names(live.live_out[i]), f"{kernel} @{i}: {bit}"
                            checked += 1
                        pending &= ~(live.reads[k] | live.uses[k].writes)
    assert checked > 20


# Random programs over R0-R5 and P0-P1: moves and adds (some guarded), compares, branches
# anywhere (some guarded), exits (some guarded), ending in EXIT.
_GUARDS = st.sampled_from([None, "@P0", "@!P1"])
_REGISTER = st.integers(0, 5).map(lambda r: f"R{r}")
_PREDICATE = st.sampled_from(["P0", "P1"])


@st.composite
def _programs(draw):
    n = draw(st.integers(2, 24))
    body = []
    for index in range(n - 1):
        kind = draw(st.sampled_from(["add", "add", "mov", "setp", "bra", "exit"]))
        guard = draw(_GUARDS)
        if kind == "add":
            body.append((guard, "IADD3", (draw(_REGISTER), draw(_REGISTER), draw(_REGISTER), "RZ"), None))
        elif kind == "mov":
            body.append((guard, "MOV", (draw(_REGISTER), "0x1"), None))
        elif kind == "setp":
            body.append((guard, "ISETP.GE.AND", (draw(_PREDICATE), "PT", draw(_REGISTER), draw(_REGISTER), "PT"), None))
        elif kind == "bra":
            body.append((guard, "BRA", ("`(.L_x_0)",), draw(st.integers(0, n - 1))))
        else:
            body.append((guard, "EXIT", (), None))
    body.append((None, "EXIT", (), None))
    high = Control().on_high(0)
    return [Instruction(k, 0, high, guard, opcode, operands, target)
            for k, (guard, opcode, operands, target) in enumerate(body)]


def _oracle_live_before(program, index: int, register: str) -> bool:
    """Whether some path from `index` reads `register` before an unguarded write of it."""
    def reads(ins):
        sources = ins.operands[1:] if ins.base in ("IADD3", "MOV") else ins.operands[2:] if ins.base == "ISETP" else ()
        return register in sources or (ins.predicate or "").lstrip("@!") == register or \
            (ins.base == "EXIT" and register == "R1")

    def successors(k):
        ins = program[k]
        if ins.base == "BRA":
            return [ins.target] + ([k + 1] if ins.predicate else [])
        if ins.base == "EXIT":
            return [k + 1] if ins.predicate else []
        return [k + 1]

    stack, seen = [index], set()
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        ins = program[k]
        if reads(ins):
            return True
        if ins.predicate is None and ins.base in ("IADD3", "MOV", "ISETP") and ins.operands[0] == register:
            continue
        stack.extend(successors(k))
    return False


@settings(max_examples=150, deadline=None)
@given(_programs())
def test_liveness_equals_a_path_search(program):
    live = Liveness(ControlFlowGraph(program, "random"), 8)
    for index in range(len(program)):
        for register in [f"R{r}" for r in range(6)] + ["P0", "P1"]:
            expected = _oracle_live_before(program, index, register)
            assert (register in _names(live.live_in[index])) == expected, (index, register)
