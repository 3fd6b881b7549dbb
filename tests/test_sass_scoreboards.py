"""Scoreboards pending and transfers in flight, against a kernel checked by hand and against
ptxas's own waits on every corpus kernel; the fixed-latency check of inserted instructions."""
import pytest

import sass_census
import sass_cubins
import sass_ptx_kernels
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import registers as regs
from gwatch_nb.sass.cfg import ControlFlowGraph
from gwatch_nb.sass.control import NO_BARRIER, SCOREBOARDS, Control
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.instruction import Instruction
from gwatch_nb.sass.registers import register_use
from gwatch_nb.sass.scoreboards import (FIXED_LATENCY, SLOW_LATENCY, SLOW_OPCODES, VARIABLE_LATENCY, Scoreboards,
                                        check_insertion, control_of)


def _guarded_store():
    kernel, instructions = sass_ptx_kernels.instructions(sass_ptx_kernels.GUARDED_STORE)
    cfg = ControlFlowGraph(instructions, kernel)
    return instructions, cfg, Scoreboards(cfg)


def _names(mask: int) -> set[str]:
    return set(regs.register_names(mask))


def test_hand_checked_guarded_store():
    """S2R's result is waited for by the compare; the address's constant load by the multiply;
    the store reads its sources after it issued, to the end."""
    instructions, cfg, board = _guarded_store()
    at = {i.base: i.index for i in reversed(instructions)}
    s2r, setp, store = at["S2R"], at["ISETP"], at["STG"]
    sb = control_of(instructions[s2r]).write_barrier
    assert sb != NO_BARRIER and control_of(instructions[setp]).wait_mask >> sb & 1
    assert all(board.pending(k) >> sb & 1 for k in range(s2r + 1, setp + 1))
    assert not board.pending(setp + 1) >> sb & 1
    assert instructions[s2r].operands[0] in _names(board.in_flight(setp))
    last_exit = [i.index for i in instructions if i.base == "EXIT"][-1]
    store_sources = _names(register_use(instructions[store]).reads)
    assert store_sources <= _names(board.in_flight(last_exit))
    assert board.idle(last_exit) == list(range(SCOREBOARDS))
    assert sb not in board.idle(s2r + 1)


def _listings(case: str) -> dict:
    if case.startswith("census "):
        return dict([sass_census.decoded(case.removeprefix("census "))])
    return disassemble(sass_cubins.cubins()[case])


CENSUS = [f"census {name}" for name in sass_census.CASE]


@pytest.mark.parametrize("case", sorted(sass_cubins.cubins()) + CENSUS)
def test_ptxas_waits_where_results_are_in_flight(case):
    """Wherever the analysis has a result in flight on scoreboard k and the kernel reads or
    rewrites it, ptxas's own code waits on k first: the model agrees with the schedule (the
    corpus and the census kernels)."""
    checked = 0
    for kernel, instructions in _listings(case).items():
        cfg = ControlFlowGraph(instructions, kernel)
        board = Scoreboards(cfg)
        for i, instruction in enumerate(instructions):
            if not cfg.reachable[cfg.block_of[i]]:
                continue
            use = board.uses[i]
            waits = control_of(instruction).wait_mask
            for k in range(SCOREBOARDS):
                results, _ = board.in_flight_on(i, k)
                if results & (use.reads | use.writes):
                    checked += 1
                    assert waits >> k & 1 or instruction.base == "DEPBAR", \
                        f"{kernel} @{i} {instruction.opcode}: touches {regs.register_names(results & use.reads)} " \
                        f"in flight on SB{k} without waiting"
    assert checked > 0


def _inserted(text: str, stall: int = 1, write_barrier: int = NO_BARRIER, read_barrier: int = NO_BARRIER):
    opcode, _, rest = text.partition(" ")
    high = Control(stall=stall, write_barrier=write_barrier, read_barrier=read_barrier).on_high(0)
    return Instruction(0, 0, high, None, opcode, tuple(o.strip() for o in rest.split(", ")), None)


def test_insertions_that_keep_the_rules_pass():
    instructions, cfg, board = _guarded_store()
    store = next(i.index for i in instructions if i.base == "STG")
    check_insertion(cfg, board, store, [_inserted("CS2R.32 R0, SR_CLOCKLO", stall=SLOW_LATENCY),
                                        _inserted("IADD3 R4, R0, 0x1, RZ")])


def test_insertions_that_break_the_rules_are_refused():
    instructions, cfg, board = _guarded_store()
    at = {i.base: i.index for i in reversed(instructions)}
    multiply, store, constant = at["IMAD"], at["STG"], at["LDC"] + 1  # LDC.64 of the address
    stall = control_of(instructions[multiply]).stall
    assert stall < FIXED_LATENCY
    address = instructions[multiply].operands[0]
    source = instructions[multiply].operands[1]
    cases = [
        (store, [_inserted(f"IADD3 R0, {address}, 0x1, RZ")],
         f"touches a result of {instructions[multiply].opcode} {stall} cycles after it"),
        (store, [_inserted("CS2R.32 R0, SR_CLOCKLO", stall=FIXED_LATENCY), _inserted("IADD3 R4, R0, 0x1, RZ")],
         f"touches a result of CS2R.32 {FIXED_LATENCY} cycles after it"),
        (multiply, [_inserted(f"MOV {source}, 0x1")],
         f"{instructions[multiply].opcode} at {multiply} touches its result"),
        (store + 1, [_inserted("STG.E desc[UR4][R2.64], R0", stall=2)], "must set a read barrier"),
    ]
    pending = next(k for k in range(SCOREBOARDS) if board.pending(constant + 1) >> k & 1)
    cases.append((constant + 1, [_inserted("STG.E desc[UR4][R2.64], R0", read_barrier=pending)],
                  f"sets scoreboard {pending}, which the kernel may have pending"))
    cases.append((0, [_inserted("STG.E desc[UR4][R2.64], R1", read_barrier=3)],
                  "LDC at 0 rewrites a source before scoreboard 3 is waited on"))
    for index, inserted, reason in cases:
        with pytest.raises(SassRewriteError, match=f"^kernel guarded_store: inserted instruction .* before instruction "
                                                   f"{index}: .*{reason}"):
            check_insertion(cfg, board, index, inserted)


def test_fixed_latency_covers_what_ptxas_relies_on():
    """For every fixed-latency opcode of the corpus and the census kernels, the closest ptxas
    puts a consumer of its result (same block) is at most FIXED_LATENCY cycles, or the opcode
    is one of SLOW_OPCODES."""
    closest: dict[str, int] = {}
    for case in sorted(sass_cubins.cubins()) + CENSUS:
        for instructions in _listings(case).values():
            cfg = ControlFlowGraph(instructions)
            uses = [register_use(i) for i in instructions]
            for block in cfg.blocks:
                for p in range(block.start, block.end):
                    producer = instructions[p]
                    control = control_of(producer)
                    if control.write_barrier != NO_BARRIER or producer.base in VARIABLE_LATENCY \
                            or not uses[p].writes:
                        continue
                    cycles = 0
                    for c in range(p + 1, block.end):
                        cycles += control_of(instructions[c - 1]).stall
                        if uses[c].reads & uses[p].writes:
                            closest[producer.base] = min(closest.get(producer.base, cycles), cycles)
                            break
    assert len(closest) > 30
    beyond = {base for base, cycles in closest.items() if cycles > FIXED_LATENCY}
    assert beyond <= SLOW_OPCODES, sorted(beyond - SLOW_OPCODES)
