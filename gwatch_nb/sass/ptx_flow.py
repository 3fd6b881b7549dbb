"""The control flow of a PTX module at the grain of its lines: blocks, their successors and
natural loops. Blocks begin at each function, label and line after a branch or return; a loop
is an edge to a block that dominates its source. (A backward branch alone is no loop: LLVM
lays a loop's tail blocks above its header, and the branches to them jump backwards from
inside one iteration.) A label is known inside the `{ }` scope that declares it: inline
assembly repeats its own (an mbarrier wait's `waitLoop:`) in every copy."""
from __future__ import annotations

import re

from gwatch_nb.sass.dominators import dominators, natural_loop

_LABEL = re.compile(r"^\s*([$\w]+):")
_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+([$\w]+)\s*;")
_RETURN = re.compile(r"^\s*(?:@!?%\w+\s+)?(?:ret|exit|trap)\s*;")
#: The first line of a function (an entry or a subroutine).
FUNCTION = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b")


class PtxFlow:
    """`starts[k]`, `ends[k]`: block k's lines (0-based, end exclusive); `successors[k]`;
    `block_of[n]` per line; `loops`: each natural loop's set of blocks, `latches` the block
    whose back edge closes it; `dominators[k]`: a bit mask of the blocks dominating block k,
    `postdominators[k]` of those every path from it to a return passes (0: it reaches none);
    `depth[n]`: how many loops hold line n; `headers[k]` loop k's header block."""

    def __init__(self, lines: list[str]):
        starts = sorted({0} | {n for n, text in enumerate(lines) if _LABEL.match(text) or FUNCTION.match(text)}
                        | {n + 1 for n, text in enumerate(lines) if _BRANCH.search(text) or _RETURN.search(text)})
        self.starts = [n for n in starts if n < len(lines)] or [0]
        self.ends = self.starts[1:] + [len(lines)]
        self.block_of = [k for k, (a, b) in enumerate(zip(self.starts, self.ends)) for _ in range(a, b)]
        self.successors = self._successors(lines)
        self.loops = self._loops(lines)
        self.postdominators = self._postdominators()
        inside = [sum(k in loop for loop in self.loops) for k in range(len(self.starts))]
        self.depth = [inside[k] for k in self.block_of]

    def every_iteration(self, line: int) -> bool:
        """Whether every iteration of the innermost loop around `line` (0-based) passes it (all
        of its back edges). The loops outside it may skip that loop, but ptxas keeps a loop a
        loop: what it may predicate into every iteration is code of the loop's own body."""
        block = self.block_of[line]
        around = [k for k, loop in enumerate(self.loops) if block in loop]
        if not around:
            return True
        header = self.headers[min(around, key=lambda k: len(self.loops[k]))]
        return all(self.dominators[self.latches[k]] >> block & 1 for k in around if self.headers[k] == header)

    def same_count(self, a: int, b: int) -> bool:
        """Whether lines `a` and `b` (0-based) run equally often on every path: their blocks
        are in the same loops and one dominates the other, which postdominates it (no cycle
        or exit passes one without the other)."""
        x, y = self.block_of[a], self.block_of[b]
        if [x in loop for loop in self.loops] != [y in loop for loop in self.loops]:
            return False
        return any(self.dominators[last] >> first & 1 and self.postdominators[first] >> last & 1
                   for first, last in ((x, y), (y, x)))

    def _successors(self, lines: list[str]) -> list[list[int]]:
        starts, ends = self.starts, self.ends
        block_at = {n: k for k, n in enumerate(starts)}
        scopes, stack, opened = [], [0], 0  # per line, the `{ }` scopes around it, innermost last
        labels: dict[tuple[int, str], int] = {}
        for n, text in enumerate(lines):
            scopes.append(tuple(stack))
            if m := _LABEL.match(text):
                labels[stack[-1], m.group(1)] = block_at[n]
            change = text.count("{") - text.count("}")  # operand lists ({%r1, %r2}) open and close on one line
            for _ in range(change):
                opened += 1
                stack.append(opened)
            for _ in range(-change):
                if len(stack) > 1:
                    stack.pop()

        def target(n: int, label: str) -> list[int]:
            found = [labels[s, label] for s in reversed(scopes[n]) if (s, label) in labels]
            return found[:1]

        self.roots = [k for k, n in enumerate(starts) if n == 0 or (n < len(lines) and FUNCTION.match(lines[n]))]
        successors: list[list[int]] = []
        for k, end in enumerate(ends):
            at = next((n for n in range(end - 1, starts[k] - 1, -1) if lines[n].strip()), starts[k])
            last = lines[at] if at < len(lines) else ""
            falls = [k + 1] if k + 1 < len(starts) and k + 1 not in self.roots else []  # a function's end falls nowhere
            branch, guarded = _BRANCH.search(last), last.lstrip().startswith("@")
            if branch:
                successors.append(target(at, branch.group(1)) + falls * guarded)
            else:
                successors.append(falls * guarded if _RETURN.search(last) else falls)
        return successors

    def _postdominators(self) -> list[int]:
        """Dominators of the reversed graph, its roots the blocks that return or fall off the end."""
        exits = [b for b, targets in enumerate(self.successors) if not targets]
        reached, stack, predecessors = set(), list(exits), self._predecessors()
        while stack:
            b = stack.pop()
            if b not in reached:
                reached.add(b)
                stack.extend(predecessors[b])
        return dominators(self.successors, sorted(reached, reverse=True), exits)

    def _predecessors(self) -> list[list[int]]:
        predecessors: list[list[int]] = [[] for _ in self.starts]
        for b, targets in enumerate(self.successors):
            for t in targets:
                predecessors[t].append(b)
        return predecessors

    def _loops(self, lines: list[str]) -> list[set[int]]:
        predecessors = self._predecessors()
        reached, stack = set(), list(self.roots)
        while stack:
            b = stack.pop()
            if b not in reached:
                reached.add(b)
                stack.extend(self.successors[b])
        dom = self.dominators = dominators(predecessors, sorted(reached), self.roots)
        back_edges = [(tail, header) for tail, targets in enumerate(self.successors) for header in targets
                      if dom[tail] >> header & 1]
        self.latches = [tail for tail, _ in back_edges]  # each back edge's source, one per loop
        self.headers = [header for _, header in back_edges]
        return [natural_loop(header, tail, predecessors, dom) for tail, header in back_edges]
