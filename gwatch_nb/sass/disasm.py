"""Decode every kernel of an sm_90a cubin into Instructions: the raw 128-bit words straight
from the cubin's ``.text.<kernel>`` sections (read by ``cubin.Cubin``), the opcode, guard and
operands from one run of Triton's nvdisasm over the whole cubin.

nvdisasm's plain listing (``-c``) is read rather than its JSON: both take the same time, but
the listing prints each instruction's offset (checked against the words' positions) and keeps
operands the JSON mangles (``P2R R28, PR, RZ, 0x40`` comes out with ``PR`` as its guard,
``DEPBAR {5,4,3}`` split at its commas)."""
from __future__ import annotations

import os
import re
import struct
import subprocess
import tempfile

from gwatch_nb import toolchain
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass import branches
from gwatch_nb.sass.cubin import Cubin
from gwatch_nb.sass.instruction import SIZE, Instruction

SM = 90
# Code sections only, no dataflow analysis: the same listing on every corpus kernel, a third less time.
OPTIONS = ("-c", "-ndf")
UNKNOWN, INVALID = "???", "INVALID"  # how nvdisasm prints a field value it has no name for

_SECTION = re.compile(r"\s*\.section\s+\.text\.([^,\s]+),")
_LABEL = re.compile(r"\S+:$")
_INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;\s*(?:/\*.*\*/\s*)?$")
_BODY = re.compile(r"(?:(@!?\w+)\s+)?(\S+)\s*(.*)$")
_LABEL_OPERAND = re.compile(r"`\((.+)\)$")
_ERROR_ADDRESS = re.compile(r"at address (0x[0-9a-fA-F]+)")


def nvdisasm_path() -> str:
    """The nvdisasm Triton ships (gwatch_nb/toolchain.py)."""
    return toolchain.nvdisasm(SM)


def disassemble(cubin: bytes) -> dict[str, list[Instruction]]:
    """Kernel name -> its instructions, in order (a kernel's noinline subroutines included:
    ptxas puts them in the kernel's own section)."""
    view = Cubin.parse(cubin)
    sections = {name: view.text(name) for name in view.kernels}
    listing = _run_nvdisasm(cubin, list(sections))
    printed = _parse_listing(listing)
    if set(printed) != set(sections):
        raise SassRewriteError(f"cubin: nvdisasm listed kernels {sorted(printed)}, the ELF has {sorted(sections)}")
    return {kernel: _instructions(kernel, sections[kernel], *printed[kernel]) for kernel in sections}


def from_listing(kernel: str, index: int, low: int, high: int, text: str) -> Instruction:
    """Instruction `index` of `kernel` from its words and a listing line known without running
    nvdisasm (an inserted instruction's, encode.py's), read as nvdisasm's own lines are; it has
    no code target (inserted code may not branch)."""
    predicate, opcode, operands = _split_body(kernel, SIZE * index, text)
    return Instruction(index, low, high, predicate, opcode, operands, None)


def _run_nvdisasm(cubin: bytes, kernels: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="gwatch-sass-") as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        proc = subprocess.run([nvdisasm_path(), *OPTIONS, path], capture_output=True, text=True)
        if proc.returncode == 0:
            return proc.stdout
        culprit = _failing_kernel(path, kernels) if len(kernels) > 1 else f"kernel {kernels[0]}"
    where = _ERROR_ADDRESS.search(proc.stderr)
    reason = next((line for line in proc.stderr.splitlines() if "error" in line or "fatal" in line),
                  proc.stderr.strip() or f"exit status {proc.returncode}")
    at = f" at {int(where.group(1), 16):#x}" if where else ""
    reason = reason.split(":", 1)[-1].strip()
    raise SassRewriteError(f"{culprit}: nvdisasm cannot decode the instruction{at} ({reason})")


def _failing_kernel(path: str, kernels: list[str]) -> str:
    """The first kernel nvdisasm fails on alone (its errors do not name the section)."""
    for kernel in kernels:
        if subprocess.run([nvdisasm_path(), *OPTIONS, "-fun", kernel, path], capture_output=True).returncode:
            return f"kernel {kernel}"
    return "cubin"


def _parse_listing(listing: str) -> dict[str, tuple[list[tuple[int, str]], dict[str, int]]]:
    """Kernel -> ([(offset, instruction text)], {label: offset}) from nvdisasm's listing."""
    kernels: dict[str, tuple[list, dict]] = {}
    name = None
    pending: list[str] = []  # labels waiting for the instruction they name
    for number, line in enumerate(listing.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        section = _SECTION.match(line)
        if section:
            name, pending = section.group(1), []
            kernels.setdefault(name, ([], {}))
            continue
        if name is None:
            continue  # the file's header, before the first code section
        instruction = _INSTRUCTION.match(line)
        if instruction:
            offset = int(instruction.group(1), 16)
            kernels[name][1].update(dict.fromkeys(pending, offset))
            pending = []
            kernels[name][0].append((offset, instruction.group(2)))
        elif _LABEL.match(stripped):
            pending.append(stripped[:-1])
        elif not stripped.startswith("."):  # a directive: .align, .type, .size, ...
            raise SassRewriteError(f"kernel {name}: cannot read nvdisasm's line {number}: {stripped!r}")
    return kernels


def _instructions(kernel: str, text: bytes, printed: list[tuple[int, str]],
                  labels: dict[str, int]) -> list[Instruction]:
    count = len(text) // SIZE
    if len(printed) != count:
        raise SassRewriteError(f"kernel {kernel}: nvdisasm printed {len(printed)} instructions, "
                               f"the section holds {count}")
    words = struct.unpack(f"<{2 * count}Q", text)
    result = []
    for index, (offset, body) in enumerate(printed):
        if offset != SIZE * index:
            raise SassRewriteError(f"kernel {kernel}: nvdisasm printed offset {offset:#x} for instruction {index} "
                                   f"(expected {SIZE * index:#x})")
        predicate, opcode, operands = _split_body(kernel, offset, body)
        target = None
        if branches.has_relative_target(opcode):
            target = _target_index(kernel, offset, operands, labels, count)
        result.append(Instruction(index, words[2 * index], words[2 * index + 1], predicate, opcode, operands, target))
    return result


def _split_body(kernel: str, offset: int, body: str) -> tuple[str | None, str, tuple[str, ...]]:
    match = _BODY.match(body)
    if match is None or not match.group(2)[0].isalpha():
        raise SassRewriteError(f"kernel {kernel}: cannot read the instruction at {offset:#x}: {body!r}")
    if UNKNOWN in body or INVALID in match.group(2):
        raise SassRewriteError(f"kernel {kernel}: nvdisasm does not know the instruction at {offset:#x}: {body!r}")
    predicate, opcode, rest = match.groups()
    return predicate, opcode, _split_operands(rest)


def _split_operands(text: str) -> tuple[str, ...]:
    """Split at the commas outside brackets; a trailing `(label) is an operand of its own."""
    operands, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            operands.append(text[start:i])
            start = i + 1
    operands.append(text[start:])
    split = []
    for operand in (o.strip() for o in operands):
        head, tick, label = operand.partition(" `(")
        split.extend([head.strip(), tick.strip() + label] if tick else [operand])
    return tuple(o for o in split if o)


def _target_index(kernel: str, offset: int, operands: tuple[str, ...], labels: dict[str, int], count: int) -> int:
    for operand in operands:
        label = _LABEL_OPERAND.match(operand)
        if label:
            at = labels.get(label.group(1))
            if at is None or at % SIZE or not 0 <= at // SIZE < count:
                raise SassRewriteError(f"kernel {kernel}: branch at {offset:#x} names {label.group(1)!r}, "
                                       f"which is no instruction of the kernel")
            return at // SIZE
    raise SassRewriteError(f"kernel {kernel}: branch at {offset:#x} prints no target label")
