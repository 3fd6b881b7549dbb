"""The SASS tier's one call: a cubin with instructions inserted into one kernel, proven before
it is returned. `rewrite` decodes the kernel (nvdisasm, cached per cubin in the process and on
disk: decode_cache.py), inserts the words and writes the new cubin, then proves the result from
the words of its own ``.text`` section, without decoding it again:

- it holds exactly the original instruction count plus the insertions, 16 bytes each;
- every inserted word is where it was placed, bit for bit;
- every original instruction keeps its 128 bits, except a branch (``BRA``, ``BSSY``,
  ``CALL.REL``, ``RET.REL``) and a call's return-address ``MOV``, of which only the target or
  the immediate may differ: the word with the original's field put back is the original word.
  The branch's new target, read with branches.target_of, is the first instruction inserted
  before its original target; the ``MOV``'s new return address, read with calls.return_address,
  the first instruction inserted before the one after its call;
- those two field readers are first held to nvdisasm on the original kernel: for every branch
  the target branches.target_of reads is the one nvdisasm printed, for every return-address
  ``MOV`` the immediate calls.return_address reads is the one nvdisasm printed; a form where
  they differ is refused, its field reader being unproven there;
- every offset-holding ELF attribute still names the same instruction;
- given the kernel's scoreboard analysis, no inserted instruction touches a register a kernel
  transfer may still be using. What an inserted instruction reads and writes comes from the
  listing its encoder gives with its words (encode.Words.text), which tests/test_sass_encode.py
  holds to nvdisasm's for every form and operand the probes use; an insertion without one is
  refused.

A cubin that fails a check is never returned: the call raises SassRewriteError instead."""
from __future__ import annotations

import hashlib
import re
from collections import OrderedDict

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches, calls, decode_cache
from gwatch_nb.sass.cubin import INSTRUCTION_BYTES, OFFSET_FIELDS, Cubin
from gwatch_nb.sass.disasm import disassemble, from_listing
from gwatch_nb.sass.insert import insert
from gwatch_nb.sass.scoreboards import Scoreboards

DECODE_CACHE_SIZE = 16  # cubins whose decoded instructions are kept in the process, most recent last
_decoded: OrderedDict[bytes, dict] = OrderedDict()


def decoded(cubin: bytes) -> dict:
    """disassemble(cubin), remembered by the cubin's hash in the process and on disk: nvdisasm
    is the costly part of a rewrite."""
    key = hashlib.sha256(cubin).digest()
    if key in _decoded:
        _decoded.move_to_end(key)
        return _decoded[key]
    result = decode_cache.load(cubin, key.hex())
    if result is None:
        result = disassemble(cubin)
        decode_cache.store(key.hex(), result)
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
    inserted instruction may touch a register a kernel transfer may still be using, and each
    must come with its listing (encode.Words)."""
    view = Cubin.parse(cubin)
    view.kernel(kernel)
    original = decoded(cubin).get(kernel)
    if original is None:
        raise SassRewriteError(f"kernel {kernel}: nvdisasm printed no instructions for it")
    chosen = {index: list(items) for index, items in insertions.items() if items}
    words = {index: [bytes(getattr(item, "raw", item)) for item in items] for index, items in chosen.items()}
    new_text, new_offset = insert(original, words, kernel)
    out = view.with_text(kernel, new_text, lambda offset: new_offset[offset // INSTRUCTION_BYTES])
    if registers is not None:
        out = Cubin.parse(out).with_registers(kernel, registers)
    listings = None if transfers is None else {
        index: [_listing(kernel, index, k, item) for k, item in enumerate(items)] for index, items in chosen.items()}
    _verify(view, out, kernel, original, words, new_offset, transfers, listings)
    return out


def _listing(kernel: str, index: int, k: int, item) -> str:
    text = getattr(item, "text", None)
    if not isinstance(text, str):
        raise SassRewriteError(f"kernel {kernel}: inserted instruction {k} before {index} comes without its "
                               "listing (encode.Words.text), which the register check reads")
    return text


def _verify(before: Cubin, out: bytes, kernel: str, original: list, words: dict, new_offset: list[int],
            transfers: Scoreboards | None, listings: dict | None):
    what = f"kernel {kernel}: the rewritten cubin"
    after = Cubin.parse(out)
    text = after.text(kernel)
    count = len(text) // INSTRUCTION_BYTES
    expected_count = len(original) + sum(map(len, words.values()))
    if len(text) != expected_count * INSTRUCTION_BYTES:
        raise SassRewriteError(f"{what} holds {len(text)} bytes of code, expected {expected_count} instructions")

    def raw(n: int) -> bytes:
        return text[n * INSTRUCTION_BYTES:(n + 1) * INSTRUCTION_BYTES]

    def pair(n: int) -> tuple[int, int]:
        word = raw(n)
        return int.from_bytes(word[:8], "little"), int.from_bytes(word[8:], "little")
    new_index = [offset // INSTRUCTION_BYTES for offset in new_offset]

    def landing(index: int) -> int | None:
        """New index of the first instruction inserted before original `index`."""
        return new_index[index] - len(words.get(index, ())) if index < len(original) else None
    returns = calls.return_addresses(original, kernel) if words else {}  # insert() re-laid them
    _hold_field_readers_to_nvdisasm(kernel, original, returns)
    for index, items in words.items():
        first = count - len(items) if index == len(original) else new_index[index] - len(items)
        for k, item in enumerate(items):
            if raw(first + k) != item:
                raise SassRewriteError(f"{what} lost inserted instruction {k} before {index}")
        if transfers is not None:
            transfers.check_untouched(index, [from_listing(kernel, first + k, *pair(first + k), listing)
                                              for k, listing in enumerate(listings[index])])
    for old, n in zip(original, new_index):
        if old.index in returns:
            low, high = pair(n)
            address = calls.loaded_address(low)
            if (old.low, old.high) != calls.with_return_address(low, high, calls.return_address(old)) or \
                    address != landing(returns[old.index]) * INSTRUCTION_BYTES:
                raise SassRewriteError(f"{what}: the return address loaded at instruction {old.index} no longer "
                                       f"names instruction {returns[old.index]}")
        elif old.target is None:
            if raw(n) != old.raw:
                raise SassRewriteError(f"{what} changed instruction {old.index} ({old.opcode})")
        else:
            low, high = pair(n)
            displacement = branches.target_of(low, high)
            if displacement is None or (low ^ old.low) & branches.OPCODE_MASK or \
                    branches.with_target(low, high, branches.target_of(old.low, old.high)) != (old.low, old.high):
                raise SassRewriteError(f"{what} changed branch {old.index} ({old.opcode}) beyond its target")
            if displacement % INSTRUCTION_BYTES or n + 1 + displacement // INSTRUCTION_BYTES != landing(old.target):
                raise SassRewriteError(f"{what}: the {old.opcode} at instruction {old.index} no longer reaches "
                                       f"instruction {old.target}")
    for old, new in zip(before.attributes(kernel), after.attributes(kernel)):
        if old.id != new.id or (old.id not in OFFSET_FIELDS and old != new):
            raise SassRewriteError(f"{what} changed attribute {old.name}")
        if old.id in OFFSET_FIELDS:
            for was, now in zip(old.offsets(), new.offsets()):
                named = original[was // INSTRUCTION_BYTES]
                if raw(now // INSTRUCTION_BYTES) != named.raw and named.target is None:
                    raise SassRewriteError(f"{what}: {old.name} no longer names the instruction at {was:#x}")


def _hold_field_readers_to_nvdisasm(kernel: str, original: list, returns: dict[int, int]):
    """The proof reads the rewritten branches' targets and return addresses with the project's
    field readers: on the original kernel, each must read what nvdisasm printed."""
    for i in original:
        if i.target is None:
            continue
        displacement = branches.target_of(i.low, i.high)
        if displacement is None or displacement % INSTRUCTION_BYTES or \
                i.index + 1 + displacement // INSTRUCTION_BYTES != i.target:
            raise SassRewriteError(f"kernel {kernel}: the {i.opcode} at {i.offset:#x} targets instruction {i.target} "
                                   "in nvdisasm's listing, not where branches.py reads it: the field reader is "
                                   "not proven for that form")
    for index in returns:
        mov = original[index]
        printed = mov.operands[1] if mov.opcode == "MOV" and len(mov.operands) == 2 else None
        if printed is None or not re.fullmatch(r"0x[0-9a-f]+", printed) or int(printed, 16) != calls.return_address(mov):
            raise SassRewriteError(f"kernel {kernel}: the return address at {mov.offset:#x} ({mov.opcode} "
                                   f"{', '.join(mov.operands)}) is not what calls.py reads: the field reader is not "
                                   "proven for that form")
