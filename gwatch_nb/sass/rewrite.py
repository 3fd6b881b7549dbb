"""The SASS tier's one call: a cubin with instructions inserted into one kernel, proven before
it is returned. `rewrite` decodes the kernel (nvdisasm, cached per cubin), inserts the words,
writes the new cubin, then decodes the result again and checks that it is exactly the original
instruction sequence plus the insertions, that every branch still reaches the same original
instruction, and that every offset-holding attribute still names the same instruction. A
cubin that fails a check is never returned: the call raises SassRewriteError instead."""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Iterable

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.cubin import INSTRUCTION_BYTES, OFFSET_FIELDS, Cubin
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.insert import insert

DECODE_CACHE_SIZE = 16  # cubins whose decoded instructions are kept, most recent last
_decoded: OrderedDict[bytes, dict] = OrderedDict()


def decoded(cubin: bytes) -> dict:
    """disassemble(cubin), remembered by the cubin's hash: nvdisasm is the costly part of a rewrite."""
    key = hashlib.sha256(cubin).digest()
    if key in _decoded:
        _decoded.move_to_end(key)
        return _decoded[key]
    result = disassemble(cubin)
    _decoded[key] = result
    if len(_decoded) > DECODE_CACHE_SIZE:
        _decoded.popitem(last=False)
    return result


def _words(kernel: str, index: int, words: Iterable) -> list[bytes]:
    out = []
    for word in words:
        raw = bytes(getattr(word, "raw", word))
        if len(raw) != INSTRUCTION_BYTES:
            raise SassRewriteError(f"kernel {kernel}: an instruction to insert before {index} is {len(raw)} bytes, "
                                   "not 16")
        out.append(raw)
    return out


def rewrite(cubin: bytes, kernel: str, insertions: dict, registers: int | None = None) -> bytes:
    """`cubin` with, for each `i` in `insertions`, its 16-byte instructions (bytes, or objects with
    `.raw`) placed before instruction `i` of `kernel` (`i` = the instruction count: after the
    last one). A branch to instruction `i` lands on the first instruction inserted before it.
    `registers`: the kernel's new register count (more can lower occupancy; the caller chose it)."""
    view = Cubin.parse(cubin)
    view.kernel(kernel)
    original = decoded(cubin).get(kernel)
    if original is None:
        raise SassRewriteError(f"kernel {kernel}: nvdisasm printed no instructions for it")
    words = {}
    for index, items in insertions.items():
        if not isinstance(index, int) or not 0 <= index <= len(original):
            raise SassRewriteError(f"kernel {kernel}: cannot insert before instruction {index!r} "
                                   f"(it has {len(original)})")
        if items:
            words[index] = _words(kernel, index, items)
    new_text, new_offset = insert(original, words)
    out = view.with_text(kernel, new_text, lambda offset: new_offset[offset // INSTRUCTION_BYTES])
    if registers is not None:
        out = Cubin.parse(out).with_registers(kernel, registers)
    _verify(view, out, kernel, original, words, new_offset)
    return out


def _verify(before: Cubin, out: bytes, kernel: str, original: list, words: dict, new_offset: list[int]):
    what = f"kernel {kernel}: the rewritten cubin"
    after = Cubin.parse(out)
    got = disassemble(out).get(kernel, [])
    expected_count = len(original) + sum(map(len, words.values()))
    if len(got) != expected_count:
        raise SassRewriteError(f"{what} decodes to {len(got)} instructions, expected {expected_count}")
    new_index = [offset // INSTRUCTION_BYTES for offset in new_offset]
    for index, items in words.items():
        first = new_index[index] - len(items) if index < len(original) else len(got) - _tail(original, words, index)
        for k, raw in enumerate(items):
            if got[first + k].raw != raw:
                raise SassRewriteError(f"{what} lost inserted instruction {k} before {index}")
    for old, new in zip(original, (got[i] for i in new_index)):
        if (old.opcode, old.predicate, old.control) != (new.opcode, new.predicate, new.control):
            raise SassRewriteError(f"{what} changed instruction {old.index} ({old.opcode} became {new.opcode})")
        if old.target is None:
            if (old.low, old.high) != (new.low, new.high):
                raise SassRewriteError(f"{what} changed the bits of instruction {old.index} ({old.opcode})")
            continue
        landing = new_index[old.target] - len(words.get(old.target, ())) if old.target < len(original) else None
        if new.target != landing:
            raise SassRewriteError(f"{what}: the {old.opcode} at instruction {old.index} no longer reaches "
                                   f"instruction {old.target}")
    for old, new in zip(before.attributes(kernel), after.attributes(kernel)):
        if old.id != new.id or (old.id not in OFFSET_FIELDS and old != new):
            raise SassRewriteError(f"{what} changed attribute {old.name}")
        if old.id in OFFSET_FIELDS:
            for was, now in zip(old.offsets(), new.offsets()):
                if got[now // INSTRUCTION_BYTES].raw != original[was // INSTRUCTION_BYTES].raw \
                        and original[was // INSTRUCTION_BYTES].target is None:
                    raise SassRewriteError(f"{what}: {old.name} no longer names the instruction at {was:#x}")


def _tail(original: list, words: dict, index: int) -> int:
    """Instructions after the first one inserted at the end (`index` = len(original))."""
    return len(words[index]) if index == len(original) else 0

