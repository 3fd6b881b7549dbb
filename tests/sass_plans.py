"""Insertion plans for the SASS tier's rewrite tests: for a kernel's decoded instructions,
index -> the instructions to place before it. NOPs at every 7th instruction, at every block
start (entry, branch targets, after each branch), before every branch, inside every loop."""
from gwatch_nb.sass import encode

NOP = encode.nop().raw


def every_seventh(instructions) -> dict:
    return {i: [NOP] for i in range(0, len(instructions), 7)}


def block_starts(instructions) -> dict:
    starts = {0} | {ins.target for ins in instructions if ins.target is not None}
    starts |= {ins.index + 1 for ins in instructions if ins.target is not None and ins.index + 1 < len(instructions)}
    return {i: [NOP] for i in sorted(starts)}


def before_branches(instructions) -> dict:
    return {ins.index: [NOP] for ins in instructions if ins.target is not None}


def inside_loops(instructions) -> dict:
    """Two NOPs in the middle of every loop body and one before each loop's back edge."""
    plan = {}
    for ins in instructions:
        if ins.target is not None and ins.target <= ins.index and ins.base == "BRA":
            plan.setdefault((ins.target + ins.index) // 2, []).extend([NOP, NOP])
            plan.setdefault(ins.index, []).append(NOP)
    return plan


PLANS = {"every 7th": every_seventh, "block starts": block_starts, "before branches": before_branches,
         "inside loops": inside_loops}
