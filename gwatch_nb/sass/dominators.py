"""Dominators and natural loops of a control-flow graph given as predecessor lists: the one
algorithm behind the SASS graph (cfg.py) and the PTX's (ptx_flow.py)."""
from __future__ import annotations

from collections.abc import Sequence


def dominators(predecessors: Sequence[Sequence[int]], order: Sequence[int], roots: Sequence[int]) -> list[int]:
    """Per node, a bit mask of the nodes that dominate it, over the nodes of `order` (a reverse
    postorder converges fastest); each root is dominated by itself alone. A node outside
    `order` gets 0 and is no way into the others."""
    everything = (1 << len(predecessors)) - 1
    dom = [0] * len(predecessors)
    for b in order:
        dom[b] = 1 << b if b in roots else everything
    changed = True
    while changed:
        changed = False
        for b in order:
            if b in roots:
                continue
            new = everything
            for p in predecessors[b]:
                if dom[p]:
                    new &= dom[p]
            new |= 1 << b
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


def natural_loop(header: int, tail: int, predecessors: Sequence[Sequence[int]], dom: list[int]) -> set[int]:
    """The nodes of the loop the back edge tail → header closes: the header and every node that
    reaches the tail without passing it (nodes outside the graph, `dom` 0, left out)."""
    body, stack = {header}, [tail]
    while stack:
        b = stack.pop()
        if b not in body:
            body.add(b)
            stack.extend(p for p in predecessors[b] if dom[p])
    return body
