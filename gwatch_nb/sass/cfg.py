"""Basic blocks, the control-flow graph, dominators and natural loops of one kernel's
instructions.

Leaders are the entry, every instruction's code target (branch targets, and the
reconvergence points BSSY names, as nvdisasm's own graph has them) and the instruction after
any control transfer. Successors: a BRA/JMP goes to its target and, when guarded, also falls
through; EXIT, RET, KILL and BPT.TRAP end the path unless guarded; CALL enters its target and
returns to the next instruction, a RET returns to the instruction after every CALL; BSSY,
BSYNC, BREAK and WARPSYNC fall through (they steer reconvergence, not the path a thread
takes). An indirect branch (BRX, JMX, a BRA or JMP through a register) has no known target:
SassRewriteError. Dominators and loops are those of the kernel's own path, each call stepped
over: a subroutine's blocks (`in_subroutine`) are reached only through its CALL."""
from __future__ import annotations

import re
from dataclasses import dataclass

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.dominators import dominators, natural_loop

_JUMPS = {"BRA", "JMP"}
_ENDS = {"EXIT", "RET", "KILL"}
_INDIRECT = {"BRX", "JMX"}
_CALLS = {"CALL"}
_REGISTER = re.compile(r"(?<![A-Za-z0-9_.])U?R\d+\b")


def _guarded(instruction) -> bool:
    return bool(instruction.predicate) and instruction.predicate.startswith("@") and instruction.predicate != "@PT"


def _never(instruction) -> bool:
    return instruction.predicate in ("@!PT", "@!UPT")


def _transfers(instruction) -> bool:
    """Whether the instruction can move control anywhere but to the next instruction."""
    base = instruction.base
    return (base in _JUMPS | _ENDS | _INDIRECT | _CALLS or instruction.opcode.startswith("BPT.TRAP")) \
        and not _never(instruction)


@dataclass(frozen=True)
class Block:
    index: int
    start: int                       # first instruction index
    end: int                         # one past the last instruction index
    successors: tuple[int, ...]      # block indices
    predecessors: tuple[int, ...]


@dataclass(frozen=True)
class Loop:
    header: int                      # block index
    blocks: frozenset[int]           # the header and every block of the body
    back_edges: tuple[tuple[int, int], ...]  # (tail block, header block)
    parent: int | None               # index in ControlFlowGraph.loops of the innermost enclosing loop
    depth: int                       # 1 for an outermost loop


class ControlFlowGraph:
    """The blocks of `instructions` (one kernel, in order) and what follows from them."""

    def __init__(self, instructions, kernel: str = "?"):
        self.kernel = kernel
        self.instructions = list(instructions)
        self.blocks = self._blocks()
        self.block_of = [0] * len(self.instructions)
        for block in self.blocks:
            for i in range(block.start, block.end):
                self.block_of[i] = block.index
        self.reachable = self._reachable()
        self.in_subroutine = self._in_subroutine()
        self.dominators = self._dominators()
        self.loops = self._loops()
        # innermost loop (index into self.loops) of each block, None outside every loop
        self.loop_of: list[int | None] = [None] * len(self.blocks)
        for k in sorted(range(len(self.loops)), key=lambda k: -len(self.loops[k].blocks)):
            for b in self.loops[k].blocks:
                self.loop_of[b] = k

    def _fail(self, instruction, reason: str):
        raise SassRewriteError(f"kernel {self.kernel}: instruction {instruction.index} ({instruction.opcode}): "
                               f"{reason}")

    def _instruction_successors(self, i: int, return_sites: list[int]) -> list[int]:
        instruction = self.instructions[i]
        base = instruction.base
        following = [i + 1] if i + 1 < len(self.instructions) else []
        if not _transfers(instruction):
            return following
        if base in _INDIRECT or (base in _JUMPS and any(_REGISTER.search(op) for op in instruction.operands)):
            self._fail(instruction, "an indirect branch has no known target")
        if base in _JUMPS | _CALLS:
            if instruction.target is None:
                self._fail(instruction, "an absolute call has no known target" if base in _CALLS
                           else "a branch without a decoded target")
            if not 0 <= instruction.target < len(self.instructions):
                self._fail(instruction, f"branch target {instruction.target} is outside the kernel")
            if base in _CALLS:
                return [instruction.target] + following
            return [instruction.target] + (following if _guarded(instruction) else [])
        exits = return_sites if base == "RET" else []
        return exits + (following if _guarded(instruction) else [])

    def _blocks(self) -> list[Block]:
        n = len(self.instructions)
        if n == 0:
            return []
        leaders = {0}
        return_sites = [i + 1 for i, ins in enumerate(self.instructions) if ins.base in _CALLS and i + 1 < n]
        for i, instruction in enumerate(self.instructions):
            if instruction.target is not None and 0 <= instruction.target < n:
                leaders.add(instruction.target)
            if _transfers(instruction) and i + 1 < n:
                leaders.add(i + 1)
        starts = sorted(leaders)
        ends = starts[1:] + [n]
        block_at = {start: k for k, start in enumerate(starts)}
        successors = []
        for start, end in zip(starts, ends):
            targets = self._instruction_successors(end - 1, return_sites)
            successors.append(tuple(dict.fromkeys(block_at[t] for t in targets)))
        predecessors: list[list[int]] = [[] for _ in starts]
        for k, succ in enumerate(successors):
            for s in succ:
                predecessors[s].append(k)
        return [Block(k, start, end, successors[k], tuple(predecessors[k]))
                for k, (start, end) in enumerate(zip(starts, ends))]

    def _reachable(self) -> list[bool]:
        seen = [False] * len(self.blocks)
        stack = [0] if self.blocks else []
        while stack:
            b = stack.pop()
            if not seen[b]:
                seen[b] = True
                stack.extend(self.blocks[b].successors)
        return seen

    def _in_subroutine(self) -> list[bool]:
        """Per block: whether it is reached only through a CALL (a subroutine ptxas put after the
        kernel's last EXIT), not on the kernel's own path. Its RET leads back to every call
        site, so code placed in it would run once per call, from whichever scope called it."""
        own = [False] * len(self.blocks)
        stack = [0] if self.blocks else []
        while stack:
            b = stack.pop()
            if own[b]:
                continue
            own[b] = True
            block, last = self.blocks[b], self.instructions[self.blocks[b].end - 1]
            called = last.target if last.base in _CALLS else None
            stack.extend(s for s in block.successors if self.blocks[s].start != called)
        return [self.reachable[b] and not own[b] for b in range(len(self.blocks))]

    def reverse_postorder(self) -> list[int]:
        """Reachable blocks, each before its successors except along back edges."""
        order, seen = [], [False] * len(self.blocks)
        if not self.blocks:
            return order
        stack = [(0, iter(self.blocks[0].successors))]
        seen[0] = True
        while stack:
            block, successors = stack[-1]
            for s in successors:
                if not seen[s]:
                    seen[s] = True
                    stack.append((s, iter(self.blocks[s].successors)))
                    break
            else:
                order.append(block)
                stack.pop()
        return order[::-1]

    def on_own_path(self, b: int) -> bool:
        """Whether block b is reached on the kernel's own path (not unreachable, not in a subroutine)."""
        return self.reachable[b] and not self.in_subroutine[b]

    def _dominators(self) -> list[int]:
        """Per block, a bit mask of the blocks that dominate it on the kernel's own path, each
        call stepped over (a subroutine's RET, which the graph sends to every call site, is no
        way into a return site); blocks off that path (unreachable, subroutines): 0."""
        order = [b for b in self.reverse_postorder() if self.on_own_path(b)]
        return dominators([block.predecessors for block in self.blocks], order, (0,))

    def dominates(self, a: int, b: int) -> bool:
        """Whether block a dominates block b."""
        return bool(self.dominators[b] >> a & 1)

    def _loops(self) -> list[Loop]:
        """Natural loops of the kernel's own path, one per header (back edges to one header
        merged), outermost first."""
        bodies: dict[int, set[int]] = {}
        edges: dict[int, list[tuple[int, int]]] = {}
        predecessors = [block.predecessors for block in self.blocks]
        for block in self.blocks:
            if not self.on_own_path(block.index):
                continue
            for s in block.successors:
                if self.dominates(s, block.index):
                    edges.setdefault(s, []).append((block.index, s))
                    bodies[s] = bodies.get(s, set()) | natural_loop(s, block.index, predecessors, self.dominators)
        headers = sorted(bodies, key=lambda h: (-len(bodies[h]), h))
        loops: list[Loop] = []
        for h in headers:
            parents = [k for k, outer in enumerate(loops) if h in outer.blocks and bodies[h] <= outer.blocks]
            parent = max(parents, key=lambda k: loops[k].depth) if parents else None
            loops.append(Loop(h, frozenset(bodies[h]), tuple(edges[h]), parent,
                              1 if parent is None else loops[parent].depth + 1))
        return loops

    def on_cycle(self, b: int) -> bool:
        """Whether a path leaving block b can come back to it (a loop's, or a subroutine's that
        two calls share), so that one thread may pass it more than once."""
        seen, stack = set(), list(self.blocks[b].successors)
        while stack:
            s = stack.pop()
            if s == b:
                return True
            if s not in seen:
                seen.add(s)
                stack.extend(self.blocks[s].successors)
        return False

    def check_window(self, i: int, j: int):
        """Raise SassRewriteError unless instructions i..j lie in one block."""
        if not 0 <= i <= j < len(self.instructions) or self.block_of[i] != self.block_of[j]:
            raise SassRewriteError(f"kernel {self.kernel}: window {i}..{j} is not inside one basic block")

    def block_at(self, instruction_index: int) -> Block:
        return self.blocks[self.block_of[instruction_index]]

    def loop_depth(self, instruction_index: int) -> int:
        """How many loops the instruction sits in (0: none)."""
        k = self.loop_of[self.block_of[instruction_index]]
        return 0 if k is None else self.loops[k].depth
