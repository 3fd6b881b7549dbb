"""The SASS tier's one call: a cubin with instructions inserted into one kernel, proven before
it is returned. `rewrite` decodes the kernel (nvdisasm, cached per cubin), inserts the words,
writes the new cubin, then decodes the result again and checks that it is exactly the original
instruction sequence plus the insertions, that every branch still reaches the same original
instruction and every call returns to the same place, and that every offset-holding attribute
still names the same instruction; given the kernel's scoreboard analysis, also that no
inserted instruction touches a register a kernel transfer may still be using. A cubin that
fails a check is never returned: the call raises SassRewriteError instead."""
from __future__ import annotations

import hashlib
from collections import OrderedDict

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import calls
from gwatch_nb.sass.control import SHIFT as CONTROL_SHIFT
from gwatch_nb.sass.cubin import INSTRUCTION_BYTES, OFFSET_FIELDS, Cubin
from gwatch_nb.sass.disasm import disassemble
from gwatch_nb.sass.insert import insert
from gwatch_nb.sass.scoreboards import Scoreboards

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


def rewrite(cubin: bytes, kernel: str, insertions: dict, registers: int | None = None,
            transfers: Scoreboards | None = None) -> bytes:
    """`cubin` with, for each `i` in `insertions`, its 16-byte instructions (bytes, or objects with
    `.raw`) placed before instruction `i` of `kernel` (`i` = the instruction count: after the
    last one and its padding, see insert.py). A branch to instruction `i` lands on the first
    instruction inserted before it. `registers`: the kernel's new register count (more can lower
    occupancy; the caller chose it). `transfers`: the kernel's scoreboard analysis; with it, no
    inserted instruction may touch a register a kernel transfer may still be using."""
    view = Cubin.parse(cubin)
    view.kernel(kernel)
    original = decoded(cubin).get(kernel)
    if original is None:
        raise SassRewriteError(f"kernel {kernel}: nvdisasm printed no instructions for it")
    words = {index: [bytes(getattr(word, "raw", word)) for word in items]
             for index, items in insertions.items() if items}
    new_text, new_offset = insert(original, words, kernel)
    out = view.with_text(kernel, new_text, lambda offset: new_offset[offset // INSTRUCTION_BYTES])
    if registers is not None:
        out = Cubin.parse(out).with_registers(kernel, registers)
    _verify(view, out, kernel, original, words, new_offset, transfers)
    return out


def _verify(before: Cubin, out: bytes, kernel: str, original: list, words: dict, new_offset: list[int],
            transfers: Scoreboards | None):
    what = f"kernel {kernel}: the rewritten cubin"
    after = Cubin.parse(out)
    got = disassemble(out).get(kernel, [])
    expected_count = len(original) + sum(map(len, words.values()))
    if len(got) != expected_count:
        raise SassRewriteError(f"{what} decodes to {len(got)} instructions, expected {expected_count}")
    new_index = [offset // INSTRUCTION_BYTES for offset in new_offset]

    def landing(index: int) -> int | None:
        """New index of the first instruction inserted before original `index`."""
        return new_index[index] - len(words.get(index, ())) if index < len(original) else None
    returns = calls.return_addresses(original, kernel) if words else {}  # insert() re-laid them
    for index, items in words.items():
        first = len(got) - len(items) if index == len(original) else new_index[index] - len(items)
        for k, raw in enumerate(items):
            if got[first + k].raw != raw:
                raise SassRewriteError(f"{what} lost inserted instruction {k} before {index}")
        if transfers is not None:
            transfers.check_untouched(index, got[first:first + len(items)])
    for old, new in zip(original, (got[i] for i in new_index)):
        if old.index in returns:
            if (old.low, old.high) != calls.with_return_address(new.low, new.high, calls.return_address(old)) or \
                    calls.return_address(new) != landing(returns[old.index]) * INSTRUCTION_BYTES:
                raise SassRewriteError(f"{what}: the return address loaded at instruction {old.index} no longer "
                                       f"names instruction {returns[old.index]}")
            continue
        if old.target is None:
            if (old.low, old.high) != (new.low, new.high):
                raise SassRewriteError(f"{what} changed instruction {old.index} ({old.opcode} became {new.opcode})")
            continue
        if (old.opcode, old.predicate, old.high >> CONTROL_SHIFT) != (new.opcode, new.predicate,
                                                                     new.high >> CONTROL_SHIFT):
            raise SassRewriteError(f"{what} changed branch {old.index} ({old.opcode} became {new.opcode})")
        if new.target != landing(old.target):
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

