"""Decoded kernels kept on disk, so that a cubin nvdisasm has read once is not read again in a
later process: one file per cubin, named by the cubin's SHA-256, in ``sass-decode/`` under the
package's cache root (gwatch_nb/cache.py: ``GWATCH_CACHE_DIR``, else ``~/.cache/gwatch_nb``).

A file is JSON after a first line holding the SHA-256 of the rest: the decoder it came from
(`decoder()`), and per kernel its raw words (hex) and, per instruction, what nvdisasm printed
(guard, opcode, operands, target index). It is used only when the digest holds, the decoder is
this one, its kernels are the cubin's with exactly the cubin's words, and every field has its
type and range; a missing, truncated, foreign or stale file is decoded again and written over.
Files are written whole or not at all (a rename)."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os

from gwatch_nb.cache import cache_dir
from gwatch_nb.sass import branches, disasm, instruction
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.instruction import SIZE, Instruction

FOLDER = "sass-decode"


class _Unusable(ValueError):
    """A cache file that does not hold this cubin's decode."""


def folder() -> str:
    return os.path.join(cache_dir(), FOLDER)


def path(key: str) -> str:
    return os.path.join(folder(), key + ".json")


@functools.cache
def decoder() -> str:
    """What a decode depends on besides the cubin: Triton's nvdisasm (path, size, modification
    time) and the source of the listing reader, so that a new tool or reader decodes afresh."""
    tool = disasm.nvdisasm_path()
    stat = os.stat(tool)
    digest = hashlib.sha256(f"{tool}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    for module in (disasm, branches, instruction):
        with open(module.__file__, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def load(cubin: bytes, key: str) -> dict[str, list[Instruction]] | None:
    """The decode kept for `cubin` (whose SHA-256 is `key`), or None where there is none to trust."""
    try:
        with open(path(key), "rb") as f:
            stored = f.read()
    except OSError:
        return None
    digest, _, body = stored.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    try:
        return _instructions(Cubin.parse(cubin), json.loads(body))
    except (_Unusable, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(key: str, decoded: dict[str, list[Instruction]]) -> None:
    """Keep `decoded` for the cubin whose SHA-256 is `key`; a cache that cannot be written is
    skipped (the decode is only slower next time)."""
    body = json.dumps({"decoder": decoder(), "kernels": {
        name: {"words": b"".join(i.raw for i in instructions).hex(),
               "instructions": [[i.predicate, i.opcode, list(i.operands), i.target] for i in instructions]}
        for name, instructions in decoded.items()}}, separators=(",", ":")).encode()
    target = path(key)
    partial = f"{target}.{os.getpid()}.partial"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(partial, "wb") as f:
            f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(partial, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(partial)


def _instructions(view: Cubin, payload: dict) -> dict[str, list[Instruction]]:
    if payload["decoder"] != decoder():
        raise _Unusable("another decoder")
    kernels = payload["kernels"]
    if set(kernels) != set(view.kernels):
        raise _Unusable("other kernels")
    out = {}
    for name in view.kernels:
        text = view.text(name)
        rows = kernels[name]["instructions"]
        if bytes.fromhex(kernels[name]["words"]) != text or len(rows) * SIZE != len(text):
            raise _Unusable(f"other words for kernel {name}")
        out[name] = [_instruction(index, text, row, len(rows)) for index, row in enumerate(rows)]
    return out


def _instruction(index: int, text: bytes, row: list, count: int) -> Instruction:
    predicate, opcode, operands, target = row
    if not (predicate is None or isinstance(predicate, str)) or not isinstance(opcode, str) or not opcode \
            or not all(isinstance(o, str) for o in operands):
        raise _Unusable(f"instruction {index}: fields of the wrong type")
    # A decode records a target exactly for the opcodes with a relative one (disasm.py).
    if (target is not None) != branches.has_relative_target(opcode) or \
            target is not None and (type(target) is not int or not 0 <= target < count):
        raise _Unusable(f"instruction {index}: target {target!r}")
    word = text[index * SIZE:(index + 1) * SIZE]
    return Instruction(index, int.from_bytes(word[:8], "little"), int.from_bytes(word[8:], "little"), predicate,
                       opcode, tuple(operands), target)
