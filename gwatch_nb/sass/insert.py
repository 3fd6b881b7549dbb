"""Insert instructions into a decoded kernel and re-lay every relative code target, so each
original instruction keeps its bits (bar a branch's displacement) and each branch still
reaches the same original instruction.

A branch (``BRA``, ``BSSY``, ``CALL.REL``) to original instruction ``i`` lands on the first
instruction inserted before ``i``: a probe at a block's start runs on every entry, by
fall-through or by branch. A call returns the same way, to the first instruction inserted
before the one after it: its return-address ``MOV`` (calls.py) is given that offset, and
``RET.REL`` keeps counting from the kernel's start. ``insertions[len(instructions)]`` goes
after the last original instruction, past the trailing ``BRA``-to-self and ``NOP`` padding
ptxas ends a kernel with; nothing reaches it unless an inserted instruction branches there,
which inserted code may not (it must carry no relative target). Kernels whose code addresses
live in registers or jump tables (``BRX``, ``JMX``, absolute calls, ...: see
``branches.unsupported``) are refused when anything is inserted."""
from __future__ import annotations

import numpy as np

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches, calls
from gwatch_nb.sass.instruction import SIZE, Instruction


def insert(instructions: list[Instruction], insertions: dict[int, list[bytes]],
           kernel: str = "") -> tuple[bytes, list[int]]:
    """(new text, new byte offset of each original instruction) with ``insertions[i]`` (16-byte
    instructions) placed before original instruction ``i``; ``kernel`` names it in errors."""
    count = len(instructions)
    what = f"kernel {kernel}" if kernel else "the kernel"
    added = np.zeros(count + 1, dtype=np.int64)
    for index, words in insertions.items():
        if not isinstance(index, (int, np.integer)) or not 0 <= index <= count:
            raise SassRewriteError(f"{what}: cannot insert before instruction {index!r} (it has {count})")
        added[index] = len(words)
        for word in words:
            _check_inserted(what, index, word)
    if not added.any():
        return b"".join(i.raw for i in instructions), [i.offset for i in instructions]
    for i in instructions:
        why = branches.unsupported(i.opcode)
        if why:
            raise SassRewriteError(f"{what}: {why} at {i.offset:#x} ({i.opcode}): not supported")
    returns = calls.return_addresses(instructions, kernel)
    before = np.cumsum(added) - added  # instructions inserted before position k's own insertions
    landing = np.arange(count + 1) + before  # new index of the first instruction inserted before k
    position = landing + added  # new index of original instruction k
    pieces = []
    for i in instructions:
        pieces.extend(insertions.get(i.index, ()))
        if i.target is not None:
            pieces.append(_relaid(what, i, landing, position))
        elif i.index in returns:
            low, high = calls.with_return_address(i.low, i.high, int(landing[returns[i.index]]) * SIZE)
            pieces.append(low.to_bytes(8, "little") + high.to_bytes(8, "little"))
        else:
            pieces.append(i.raw)
    pieces.extend(insertions.get(count, ()))
    return b"".join(pieces), (position[:count] * SIZE).tolist()


def _check_inserted(what: str, index: int, word: bytes):
    if len(word) != SIZE:
        raise SassRewriteError(f"{what}: an instruction to insert before {index} is {len(word)} bytes, not {SIZE}")
    low, high = int.from_bytes(word[:8], "little"), int.from_bytes(word[8:], "little")
    if branches.target_of(low, high) is not None:
        raise SassRewriteError(f"{what}: an instruction to insert before {index} has a relative code target; "
                               "inserted code may not branch")


def _relaid(what: str, i: Instruction, landing: np.ndarray, position: np.ndarray) -> bytes:
    displacement = branches.target_of(i.low, i.high)
    if displacement is None or i.offset + SIZE + displacement != i.target * SIZE:
        raise SassRewriteError(f"{what}: the {i.opcode} at {i.offset:#x} does not encode its target "
                               f"instruction {i.target} where branches.py reads it")
    delta = int(landing[i.target] - position[i.index] - 1) * SIZE
    try:
        low, high = branches.with_target(i.low, i.high, delta)
    except SassRewriteError as error:
        raise SassRewriteError(f"{what}: the {i.opcode} at {i.offset:#x}: {error}") from None
    return low.to_bytes(8, "little") + high.to_bytes(8, "little")
