"""The probe instructions' encoders against ptxas and nvdisasm.

ptxas side: PTX written to make ptxas emit every probe form with many registers and predicates
(many live clock readings, many guarded stores, many pointers) is assembled for sm_90a; every
instance of a form in nvdisasm's listing is parsed from its text, encoded by gwatch_nb, and its
128 bits compared with ptxas's (the control field taken from ptxas's own word).
The same holds for every probe-form instance in the corpus kernels' cubins.
nvdisasm side: instructions ptxas did not happen to write (every register R0..R254 and RZ, every
predicate and its negation, every store width, every probe form with every register it may
take, under scheduling controls of every field; random operands under hypothesis) are encoded
and disassembled in one call; each must print as the text it was built from, and that text must
be the listing the encoder gives with its words (Words.text, what rewrite.py's proof reads of an
inserted instruction in place of decoding it). ptxas's own instances carry the same listing.
GPU side: ptxas's kernel with instructions swapped in place for our encodings of variants must
compute what the swapped text says."""
import dataclasses
import os
import re
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gwatch_nb import ptx, toolchain
from gwatch_nb.sass import encode as E
from gwatch_nb.sass.control import NO_BARRIER, Control
from support import nvdisasm

NVDISASM = toolchain.nvdisasm(90)
LISTING = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* (0x[0-9a-f]{16}) \*/\s*\n\s*/\* (0x[0-9a-f]{16}) \*/")
HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"


# ---------------------------------------------------------------- PTX that makes ptxas emit the forms

def _clocks_kernel(count: int) -> str:
    """``count`` 64-bit and 32-bit clock/globaltimer readings all live at once (CS2R into many
    register pairs), stored 32/64/128 bits wide under guards of every comparison, plain and negated."""
    body = ["ld.param.u64 %d0, [p];", "mov.u32 %r1, %tid.x;", "mul.wide.u32 %d1, %r1, 4096;",
            "add.s64 %d2, %d0, %d1;"]
    wide, narrow = ("%clock64", "%globaltimer"), ("%clock", "%globaltimer_lo", "%clock_hi", "%globaltimer_hi")
    for i in range(count):
        body.append(f"mov.u64 %d{i + 3}, {wide[i % 2]};")
        body.append(f"mov.u32 %r{i + 4}, {narrow[i % 4]};")
    compares = ("lt", "ge", "ne", "eq", "gt", "le")
    for i in range(count):
        body.append(f"setp.{compares[i % 6]}.u32 %p{i}, %r1, {i * 3 + 1};")
    for i in range(count):
        guard = ("", f"@%p{i} ", f"@!%p{i} ")[(i // 3) % 3]
        if i % 3 == 0:
            body.append(f"{guard}st.global.v2.u32 [%d2+{32 * i}], {{%r{i + 4}, %r1}};")
        elif i % 3 == 1:
            body.append(f"{guard}st.global.u64 [%d2+{32 * i}], %d{i + 3};")
        else:
            body.append(f"{guard}st.global.v2.u64 [%d2+{32 * i}], {{%d{i + 3}, %d{i + 2}}};")
    return _entry("clocks", "p", count, body)


def _narrow_clocks_kernel(count: int) -> str:
    """``count`` 32-bit readings all live at once (CS2R.32 into even and odd registers), each
    stored beside the thread id."""
    body = ["ld.param.u64 %d0, [p];", "mov.u32 %r1, %tid.x;", "mul.wide.u32 %d1, %r1, 4096;",
            "add.s64 %d2, %d0, %d1;"]
    body += [f"mov.u32 %r{i + 4}, {('%clock', '%globaltimer_lo')[i % 2]};" for i in range(count)]
    for i in range(count):
        pair = f"%r{i + 4}, %r1" if i % 2 else f"%r1, %r{i + 4}"
        body.append(f"st.global.v2.u32 [%d2+{8 * i}], {{{pair}}};")
    return _entry("narrow_clocks", "p", count, body)


def _ids_kernel(count: int) -> str:
    """Special registers (thread, lane, CTA, SM, warp ids), pointers plus 32-bit offsets (IADD3 with
    a carry and IMAD.X), pointers plus scaled indices (IMAD.WIDE.U32), constant adds, bound
    compares against registers and moves of immediates, ``count`` times over so many registers live."""
    body = ["ld.param.u64 %d0, [p];", "ld.param.u32 %r0, [n];", "mov.u32 %r1, %tid.x;",
            "mul.wide.u32 %d1, %r1, 8;", "add.s64 %d2, %d0, %d1;", "ld.global.u64 %d3, [%d2];"]
    specials = ("%tid.x", "%tid.y", "%tid.z", "%laneid", "%ctaid.x", "%ctaid.y", "%ctaid.z", "%smid", "%warpid")
    for i in range(count):
        r = 10 + 8 * i
        body += [f"ld.global.u32 %r{r}, [%d2+{8 * i + 8}];",
                 f"mov.u32 %r{r + 1}, {specials[i % len(specials)]};",
                 f"add.u32 %r{r + 2}, %r{r + 1}, {100 + i};",
                 f"cvt.u64.u32 %d{10 + 4 * i}, %r{r};",
                 f"add.s64 %d{11 + 4 * i}, %d3, %d{10 + 4 * i};",
                 f"mul.wide.u32 %d{12 + 4 * i}, %r{r + 1}, {8 << (i % 3)};",
                 f"add.s64 %d{13 + 4 * i}, %d3, %d{12 + 4 * i};",
                 f"setp.{('ge', 'lt', 'ne')[i % 3]}.u32 %p{i}, %r{r}, %r{r + 1};",
                 f"selp.u32 %r{r + 3}, {0x1000 + i}, %r{r + 2}, %p{i};",
                 f"setp.{('lt', 'eq', 'le', 'lt')[i % 4]}.u32 %p{count + i}, %r{r + 1}, {('%r0', i + 5)[i % 2]};",
                 f"{('and', 'or', 'xor')[i % 3]}.pred %p{2 * count + i}, %p{i}, %p{count + i};",
                 f"shr.u32 %r{r + 4}, %r{r}, {1 + i % 31};"]
    for i in range(count):
        r = 10 + 8 * i
        body += [f"st.global.u32 [%d{11 + 4 * i}], %r{r + 3};", f"st.global.u32 [%d{13 + 4 * i}+4], %r{r + 2};",
                 f"@%p{2 * count + i} st.global.u32 [%d{13 + 4 * i}+8], %r{r};",
                 f"st.global.u32 [%d{13 + 4 * i}+12], %r{r + 4};"]
    return _entry("ids", "p", count, body, extra_params=", .param .u32 n")


def _params_kernel(count: int) -> str:
    """``count`` 32-bit and 64-bit kernel parameters read from the constant bank (LDC, LDC.64,
    ULDC, ULDC.64, moves out of uniform registers)."""
    params = "".join(f", .param .u64 q{i}, .param .u32 n{i}" for i in range(count))
    body = ["ld.param.u64 %d0, [p];", "mov.u32 %r1, %tid.x;", "mul.wide.u32 %d1, %r1, 1024;", "add.s64 %d2, %d0, %d1;"]
    for i in range(count):
        body += [f"ld.param.u64 %d{i + 3}, [q{i}];", f"ld.param.u32 %r{i + 4}, [n{i}];"]
    for i in range(count):
        body += [f"add.u32 %r{count + i + 4}, %r{i + 4}, %r1;",
                 f"cvt.u64.u32 %d{count + i + 3}, %r{count + i + 4};",
                 f"shl.b64 %d{2 * count + i + 3}, %d{count + i + 3}, {1 + i % 4};",
                 f"add.s64 %d{3 * count + i + 3}, %d{i + 3}, %d{2 * count + i + 3};",
                 f"st.global.u64 [%d2+{16 * i}], %d{i + 3};", f"st.global.u32 [%d2+{16 * i + 8}], %r{count + i + 4};",
                 f"st.global.u32 [%d{3 * count + i + 3}], {0x12345 * (i + 1)};"]
    return _entry("params", "p", count, body, extra_params=params)


def _entry(name: str, pointer: str, count: int, body: list[str], extra_params: str = "") -> str:
    lines = [f".visible .entry {name}(.param .u64 {pointer}{extra_params})", "{",
             f".reg .b64 %d<{8 * count + 20}>;", f".reg .b32 %r<{16 * count + 20}>;",
             f".reg .pred %p<{3 * count + 1}>;"]
    return "\n".join(lines + body + ["ret;", "}"]) + "\n"


def _listing(cubin: bytes) -> list[tuple[str, int, int]]:
    """(text, low, high) of every instruction of a cubin, as nvdisasm prints them."""
    text = nvdisasm.output(cubin, "-c", "-hex", "-ndf")
    return [(m.group(2).rstrip(" ;"), int(m.group(3), 16), int(m.group(4), 16)) for m in LISTING.finditer(text)]


@pytest.fixture(scope="module")
def ptxas_instructions():
    module = HEADER + _clocks_kernel(100) + _narrow_clocks_kernel(200) + _ids_kernel(24) + _params_kernel(24)
    return _listing(ptx.assemble(module))


# ---------------------------------------------------------------- nvdisasm's text → encoder calls

class OtherShape(Exception):
    """An operand the probe forms never take (a negated or inverted register, a vector form)."""


def _operand(text: str):
    """A register, uniform register, predicate or immediate as nvdisasm prints it."""
    text = text.removesuffix(".reuse")
    if text == "RZ":
        return E.RZ
    if text == "URZ":
        return E.URZ
    if m := re.fullmatch(r"(!?)(U?)(P(\d)|PT)", text):
        kind = E.UPred if m.group(2) else E.Pred
        return kind(7 if m.group(4) is None else int(m.group(4)), negated=bool(m.group(1)))
    if m := re.fullmatch(r"R(\d+)", text):
        return E.Reg(int(m.group(1)))
    if m := re.fullmatch(r"UR(\d+)", text):
        return E.UReg(int(m.group(1)))
    if re.fullmatch(r"-?0x[0-9a-f]+", text):
        return int(text, 16)
    raise OtherShape(text)


def _guard(text: str):
    if not text:
        return None
    return _operand(text[1:])


STORE = re.compile(r"desc\[(UR\d+)\]\[(R\d+)\.64(?:\+(-?0x[0-9a-f]+))?\]")
CONSTANT = re.compile(r"c\[(0x[0-9a-f]+)\]\[(0x[0-9a-f]+)\]")


def _encode_from_text(text: str, control: Control):
    """Our encoding of one instruction of a probe form given its text, or None for other
    instructions (and operand shapes the probes never use)."""
    try:
        return _encode_probe_form(text, control)
    except OtherShape:
        return None


def _encode_probe_form(text: str, control: Control):
    guard_text, _, rest = text.partition(" ") if text.startswith("@") else ("", "", text)
    opcode, _, operand_text = rest.partition(" ")
    ops = [o.strip() for o in operand_text.split(",")] if operand_text else []
    g = dict(guard=_guard(guard_text), control=control)
    if opcode in ("CS2R", "CS2R.32") and ops[1] in E.CLOCK_REGISTERS:
        return E.cs2r(_operand(ops[0]), ops[1], wide=opcode == "CS2R", **g)
    if opcode == "S2R" and ops[1] in E.SPECIAL_REGISTERS:
        return E.s2r(_operand(ops[0]), ops[1], **g)
    if opcode == "S2UR" and ops[1] in E.SPECIAL_REGISTERS:
        return E.s2ur(_operand(ops[0]), ops[1], **g)
    if opcode == "IADD3":
        values = [_operand(o) for o in ops]
        outs = [v for v in values[1:-3] if isinstance(v, E.Pred)]
        return E.iadd3(values[0], *values[-3:], carry_out=outs[0] if outs else None,
                       second_carry_out=outs[1] if len(outs) > 1 else None, **g)
    if opcode == "IADD3.X":
        return E.iadd3_x(*(_operand(o) for o in ops), **g)
    if opcode == "VIADD":
        return E.viadd(*(_operand(o) for o in ops), **g)
    if opcode in ("IMAD.WIDE.U32", "IMAD.WIDE"):
        values = [_operand(o) for o in ops]
        carry = values.pop(1) if isinstance(values[1], E.Pred) else None
        return E.imad(*values, wide=True, signed=opcode == "IMAD.WIDE", carry_out=carry, **g)
    if opcode == "IMAD.X":
        return E.imad_x(*(_operand(o) for o in ops), **g)
    if opcode in ("IMAD.MOV.U32", "IMAD.U32") and ops[1:3] == ["RZ", "RZ"]:
        return E.imad_mov_u32(_operand(ops[0]), _operand(ops[3]), **g)
    if opcode == "LEA" and len(ops) in (4, 5):
        values = [_operand(o) for o in ops]
        carry = values.pop(1) if len(values) == 5 else None
        return E.lea(*values, carry_out=carry, **g)
    if opcode == "LEA.HI.X":
        return E.lea_hi_x(*(_operand(o) for o in ops), **g)
    if m := re.fullmatch(r"SHF\.([LR])(\.W)?\.([SU](?:32|64))(\.HI)?", opcode):
        return E.shf(*(_operand(o) for o in ops), right=m.group(1) == "R", kind=m.group(3), high=bool(m.group(4)),
                     wrap=bool(m.group(2)), **g)
    if m := re.fullmatch(r"ISETP\.(\w+?)(\.U32)?\.(AND|OR|XOR)", opcode):
        pd, pq, ra, b, combine = (_operand(o) for o in ops)
        assert pq == E.PT, text
        return E.isetp(pd, m.group(1), ra, b, unsigned=bool(m.group(2)), op=m.group(3), combine=combine, **g)
    if m := re.fullmatch(r"STG\.E(?:\.(EF|EL|LU|EU|NA))?(?:\.(64|128))?", opcode):
        if not (address := STORE.fullmatch(ops[0])):
            return None
        return E.stg(_operand(address.group(2)), _operand(ops[1]), offset=int(address.group(3) or "0", 16),
                     width=int(m.group(2) or 32), desc=_operand(address.group(1)), eviction=m.group(1) or "", **g)
    if opcode == "MOV" and len(ops) == 2:
        return E.mov(_operand(ops[0]), _operand(ops[1]), **g)
    if opcode == "UIADD3" and len(ops) == 4:
        return E.uiadd3(*(_operand(o) for o in ops), **g)
    if m := re.fullmatch(r"UISETP\.(\w+?)(\.U32)?\.(AND|OR|XOR)", opcode):
        upd, upq, ura, b, combine = (_operand(o) for o in ops)
        assert upq == E.UPT, text
        return E.uisetp(upd, m.group(1), ura, b, unsigned=bool(m.group(2)), op=m.group(3), combine=combine, **g)
    if opcode == "R2UR":
        return E.r2ur(*(_operand(o) for o in ops), **g)
    if opcode == "UMOV":
        return E.umov(_operand(ops[0]), _operand(ops[1]), **g)
    if opcode in ("LDC", "LDC.64", "ULDC", "ULDC.64") and (address := CONSTANT.fullmatch(ops[1])):
        encoder = E.ldc if opcode.startswith("LDC") else E.uldc
        return encoder(_operand(ops[0]), int(address.group(2), 16), bank=int(address.group(1), 16),
                       wide=opcode.endswith(".64"), **g)
    if opcode == "NOP":
        return E.nop(**g)
    return None


def _form(text: str) -> str:
    opcode = text.split()[1] if text.startswith("@") else text.split()[0]
    return opcode


# Every form the probes need, each of which ptxas must have emitted at least this often.
REQUIRED_FORMS = {"CS2R": 60, "CS2R.32": 100, "S2R": 8, "S2UR": 4, "IADD3": 10, "IMAD.X": 10,
                  "IMAD.WIDE.U32": 10, "VIADD": 10, "ISETP.GE.U32.AND": 10,
                  "ISETP.NE.U32.AND": 10, "ISETP.LT.U32.AND": 2, "ISETP.EQ.U32.XOR": 2,
                  "STG.E": 40, "STG.E.64": 40, "STG.E.128": 10, "LDC": 2,
                  "LDC.64": 2, "ULDC": 1, "ULDC.64": 2, "NOP": 4, "MOV": 4, "IMAD.MOV.U32": 10,
                  "IMAD.U32": 10, "LEA": 10, "LEA.HI.X": 10, "SHF.R.U32.HI": 10}


def test_encoders_reproduce_ptxas_bits(ptxas_instructions):
    matched, mismatches, registers, predicates = {}, [], set(), set()
    for text, low, high in ptxas_instructions:
        words = _encode_from_text(text, Control.from_high(high))
        if words is None:
            continue
        matched.setdefault(_form(text), []).append(text)
        registers |= {int(n) for n in re.findall(r"(?<![\w])R(\d+)", text)}
        predicates |= set(re.findall(r"!?P[0-6]", text))
        if (words.low, words.high) != (low, high):
            mismatches.append(f"{text}: ptxas {low:#018x} {high:#018x}, ours {words.low:#018x} {words.high:#018x}")
        elif words.text is not None and words.text != text:
            mismatches.append(f"{text}: our listing {words.text!r}")
    assert not mismatches, "\n".join(mismatches[:20])
    short = {form: len(matched.get(form, [])) for form, least in REQUIRED_FORMS.items()
             if len(matched.get(form, [])) < least}
    assert not short, f"ptxas emitted too few instances of {short}; seen: { {k: len(v) for k, v in matched.items()} }"
    assert len(registers) >= 240, f"only {len(registers)} distinct registers in the forms ptxas emitted"
    # P0..P6 all used, and nearly all of them negated somewhere
    assert {f"P{i}" for i in range(7)} <= predicates and len(predicates) >= 13, sorted(predicates)


# ---------------------------------------------------------------- nvdisasm reads back what ptxas never wrote

def _disassemble(words: list[E.Words]) -> list[str]:
    """nvdisasm's text of raw instructions, one call for all."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "raw.bin")
        with open(path, "wb") as f:
            f.write(b"".join(w.raw for w in words))
        proc = subprocess.run([NVDISASM, "-b", "SM90a", path], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr.strip()
    lines = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;?\s*$", proc.stdout, re.M)
    return [line.rstrip(" ;") for line in lines]


GUARDS = [None] + [E.Pred(i) for i in range(7)] + [E.Pred(i, negated=True) for i in range(7)] + [E.NOT_PT]
UNIFORM_GUARDS = [None] + [E.UPred(i, negated=n) for n in (False, True) for i in range(7)] + [E.UPred(7, negated=True)]


def _guard_text(guard) -> str:
    return "" if guard is None else f"@{guard} "


def _signed_immediate(value: int) -> str:
    """A 32-bit immediate as nvdisasm prints it in IMAD, IADD3 and ISETP: signed (VIADD and
    MOV print theirs unsigned)."""
    return f"{value - (1 << 32):#x}" if value >= 1 << 31 else f"{value:#x}"


def _constant(bank: int, offset: int) -> str:
    """LDC's constant address as nvdisasm prints it (offset 0 shows the RZ index)."""
    return f"c[{bank:#x}][{offset:#x}]" if offset else f"c[{bank:#x}][RZ]"


def _r(i: int) -> E.Reg:
    """R0..R254, then RZ, round and round."""
    return E.Reg(i % 256)


def _round_trip_cases():
    """(words, the text nvdisasm must print) over every register, predicate, width and form."""
    cases = []

    def add(words, text, guard=None):
        cases.append((words, _guard_text(guard) + text))

    for i in range(256):
        rd, ra, rb, rc, g = _r(i), _r(i + 7), _r(i + 101), _r(i + 200), GUARDS[i % len(GUARDS)]
        p, q = E.Pred(i % 7), E.Pred((i + 3) % 7)
        add(E.cs2r(rd, ("SR_CLOCKLO", "SR_GLOBALTIMERLO")[i % 2], wide=False, guard=g),
            f"CS2R.32 {rd}, {('SR_CLOCKLO', 'SR_GLOBALTIMERLO')[i % 2]}", g)
        add(E.s2r(rd, list(E.SPECIAL_REGISTERS)[i % len(E.SPECIAL_REGISTERS)], guard=g),
            f"S2R {rd}, {list(E.SPECIAL_REGISTERS)[i % len(E.SPECIAL_REGISTERS)]}", g)
        add(E.iadd3(rd, ra, rb, rc, guard=g), f"IADD3 {rd}, {ra}, {rb}, {rc}", g)
        imm = i * 0x1234567 % (1 << 32)
        add(E.iadd3(rd, ra, imm, carry_out=p, guard=g), f"IADD3 {rd}, {p}, {ra}, {_signed_immediate(imm)}, RZ", g)
        add(E.iadd3(rd, ra, E.UReg(i % 64), rc, carry_out=p, second_carry_out=q),
            f"IADD3 {rd}, {p}, {q}, {ra}, {E.UReg(i % 64)}, {rc}")
        add(E.iadd3_x(rd, ra, rb, rc, p, guard=g), f"IADD3.X {rd}, {ra}, {rb}, {rc}, {p}, !PT", g)
        add(E.iadd3_x(rd, ra, rb, rc, E.Pred(i % 7, negated=True), q),
            f"IADD3.X {rd}, {ra}, {rb}, {rc}, !{p}, {q}")
        add(E.viadd(rd, ra, imm, guard=g), f"VIADD {rd}, {ra}, {imm:#x}", g)
        add(E.imad_x(rd, E.RZ, E.RZ, ra, p, guard=g), f"IMAD.X {rd}, RZ, RZ, {ra}, {p}", g)
        add(E.imad_mov_u32(rd, ra, guard=g), f"IMAD.MOV.U32 {rd}, RZ, RZ, {ra}", g)
        add(E.imad_mov_u32(rd, imm, guard=g), f"IMAD.MOV.U32 {rd}, RZ, RZ, {_signed_immediate(imm)}", g)
        add(E.mov(rd, ra, guard=g), f"MOV {rd}, {ra}", g)
        kind, right, high = list(E.SHIFT_TYPES)[i % 4], i % 3 != 0, i % 5 < 3
        add(E.shf(rd, ra, i % 64, rc, right=right, kind=kind, high=high, wrap=i % 7 == 0, guard=g),
            f"SHF.{'R' if right else 'L'}{'.W' if i % 7 == 0 else ''}.{kind}{'.HI' if high else ''} "
            f"{rd}, {ra}, {i % 64:#x}, {rc}", g)
        add(E.shf(rd, ra, rb, rc, kind=kind), f"SHF.R.{kind} {rd}, {ra}, {rb}, {rc}")
        add(E.mov(rd, imm, guard=g), f"MOV {rd}, {imm:#x}", g)
        add(E.mov(rd, E.UReg(i % 63), guard=g), f"MOV {rd}, UR{i % 63}", g)
        add(E.ldc(rd, 4 * i, bank=i % 32, guard=g), f"LDC {rd}, {_constant(i % 32, 4 * i)}", g)
        add(E.isetp(p, list(E.COMPARISONS)[i % 8], ra, rb, unsigned=i % 2 == 0, op=list(E.BOOLEAN_OPS)[i % 3],
                    combine=E.Pred((i + 2) % 8, negated=i % 5 == 0), guard=g),
            f"ISETP.{list(E.COMPARISONS)[i % 8]}{'.U32' if i % 2 == 0 else ''}.{list(E.BOOLEAN_OPS)[i % 3]} "
            f"{p}, PT, {ra}, {rb}, {E.Pred((i + 2) % 8, negated=i % 5 == 0)}", g)
        add(E.isetp(p, ("GE", "LT", "NE")[i % 3], ra, imm, guard=g),
            f"ISETP.{('GE', 'LT', 'NE')[i % 3]}.U32.AND {p}, PT, {ra}, {_signed_immediate(imm)}, PT", g)
        add(E.isetp(p, "GE", ra, E.UReg(i % 64)), f"ISETP.GE.U32.AND {p}, PT, {ra}, {E.UReg(i % 64)}, PT")
        add(E.stg(E.Reg(2 * (i % 128) if i % 128 < 127 else 255), rd, offset=4 * (i - 128), desc=E.UReg(2 * (i % 31)),
                  guard=g),
            f"STG.E desc[UR{2 * (i % 31)}][{E.Reg(2 * (i % 128) if i % 128 < 127 else 255)}.64"
            f"{'' if i == 128 else f'+{4 * (i - 128):#x}'.replace('+-0x', '+-0x')}], {rd}", g)
    for i in range(128):
        pair, g = E.Reg(2 * i if i < 127 else 255), GUARDS[i % len(GUARDS)]
        add(E.cs2r(pair, ("SR_CLOCKLO", "SR_GLOBALTIMERLO")[i % 2], guard=g),
            f"CS2R {pair}, {('SR_CLOCKLO', 'SR_GLOBALTIMERLO')[i % 2]}", g)
        add(E.stg(_r(2 * i + 4) if i < 125 else E.Reg(2), pair, offset=-8 * i, width=64, desc=E.UReg(4), guard=g,
                  eviction=list(E.EVICTIONS)[i % 6]),
            f"STG.E{'.' if i % 6 != 1 else ''}{list(E.EVICTIONS)[i % 6]}.64 desc[UR4]"
            f"[{_r(2 * i + 4) if i < 125 else 'R2'}.64{f'+-{8 * i:#x}' if i else ''}], {pair}", g)
        add(E.imad_wide_u32(pair, _r(i + 9), 1 << (i % 32), _r(2 * i + 2) if i < 126 else E.RZ, guard=g),
            f"IMAD.WIDE.U32 {pair}, {_r(i + 9)}, {_signed_immediate(1 << (i % 32))}, "
            f"{_r(2 * i + 2) if i < 126 else 'RZ'}", g)
        add(E.ldc(pair, 8 * i, wide=True, guard=g), f"LDC.64 {pair}, {_constant(0, 8 * i)}", g)
        add(E.lea(_r(i + 50), _r(i + 1), E.UReg(i % 63), i % 32, carry_out=E.Pred(i % 7), guard=g),
            f"LEA {_r(i + 50)}, P{i % 7}, {_r(i + 1)}, UR{i % 63}, {i % 32:#x}", g)
        add(E.lea_hi_x(_r(i + 51), _r(i + 1), _r(i + 90), _r(i + 3), i % 32, E.Pred(i % 7), guard=g),
            f"LEA.HI.X {_r(i + 51)}, {_r(i + 1)}, {_r(i + 90)}, {_r(i + 3)}, {i % 32:#x}, P{i % 7}", g)
    for i in range(64):
        quad, g, ug = E.Reg(4 * i if i < 63 else 255), GUARDS[i % len(GUARDS)], UNIFORM_GUARDS[i % len(UNIFORM_GUARDS)]
        add(E.stg(E.Reg(2 * i), quad, offset=16 * i, width=128, desc=E.UReg(2 * (i % 31)), guard=g),
            f"STG.E.128 desc[UR{2 * (i % 31)}][R{2 * i}.64{f'+{16 * i:#x}' if i else ''}], {quad}", g)
        sr = list(E.SPECIAL_REGISTERS)[i % len(E.SPECIAL_REGISTERS)]
        add(E.s2ur(E.UReg(i), sr, guard=ug), f"S2UR {E.UReg(i)}, {sr}", ug)
        add(E.umov(E.UReg(i), i * 0x100, guard=ug), f"UMOV {E.UReg(i)}, {i * 0x100:#x}", ug)
        add(E.umov(E.UReg(i), E.UReg(63 - i)), f"UMOV {E.UReg(i)}, {E.UReg(63 - i)}")
        add(E.uiadd3(E.UReg(i), E.UReg(63 - i), 16 * i - 0x200, guard=ug),
            f"UIADD3 {E.UReg(i)}, {E.UReg(63 - i)}, {_signed_immediate(16 * i - 0x200)}, URZ", ug)
        add(E.uiadd3(E.UReg(i), E.UReg(i // 2), E.UReg(62 - i // 2), E.UReg((i * 5) % 64)),
            f"UIADD3 {E.UReg(i)}, {E.UReg(i // 2)}, {E.UReg(62 - i // 2)}, {E.UReg((i * 5) % 64)}")
        add(E.r2ur(E.UReg(i), E.Reg(3 * i), guard=g), f"R2UR {E.UReg(i)}, R{3 * i}", g)
        cmp = list(E.COMPARISONS)[i % 8]
        add(E.uisetp(E.UPred(i % 7), cmp, E.UReg(i), i * 3 - 40, unsigned=i % 2 == 0, guard=ug),
            f"UISETP.{cmp}{'.U32' if i % 2 == 0 else ''}.AND UP{i % 7}, UPT, {E.UReg(i)}, "
            f"{_signed_immediate(i * 3 - 40)}, UPT", ug)
        if i < 62 and i % 2 == 0:
            add(E.stg_uniform(E.UReg(i), quad, offset=16 * i - 0x100, width=128, eviction="EF", guard=g),
                f"STG.E.EF.128 [RZ.U32+UR{i}{'' if i == 16 else f'+{16 * i - 0x100:#x}'.replace('+-0x', '+-0x')}], "
                f"{quad}", g)
            add(E.stg_uniform(E.UReg(i), E.Reg(i + 3), offset=4 * i), f"STG.E [RZ.U32+UR{i}"
                f"{'' if i == 0 else f'+{4 * i:#x}'}], R{i + 3}")
        add(E.uldc(E.UReg(i), 4 * i + 0x210, guard=ug), f"ULDC {E.UReg(i)}, c[0x0][{4 * i + 0x210:#x}]", ug)
        if i % 2 == 0 and i < 62:
            add(E.uldc(E.UReg(i), 8 * i, wide=True), f"ULDC.64 {E.UReg(i)}, c[0x0][{8 * i:#x}]")
        add(E.nop(guard=g), "NOP", g)
    cases += _probe_form_cases()
    return cases


def _probe_form_cases():
    """The forms probes.py inserts, each with every register its operands may take (they are
    chosen from what the kernel leaves free) and every guard a kernel's EXIT may have."""
    cases = []

    def add(words, text, guard=None):
        cases.append((words, _guard_text(guard) + text))
    for i in range(256):
        rd, ra, rb, rc, g = _r(i), _r(i + 7), _r(i + 101), _r(i + 200), GUARDS[i % len(GUARDS)]
        add(E.imad(rd, ra, rb, rc), f"IMAD{'.MOV' if E.RZ in (ra, rb) else ''}.U32 {rd}, {ra}, {rb}, {rc}")
        add(E.iadd3(rd, ra, rb, carry_out=E.Pred(i % 7)), f"IADD3 {rd}, P{i % 7}, {ra}, {rb}, RZ")
        add(E.iadd3_x(rd, ra, E.RZ, E.RZ, E.Pred(i % 7)), f"IADD3.X {rd}, {ra}, RZ, RZ, P{i % 7}, !PT")
        add(E.shf(rd, E.RZ, 5, ra, right=True, kind="U32", high=True), f"SHF.R.U32.HI {rd}, RZ, 0x5, {ra}")
        add(E.r2ur(E.UReg(i % 64), rd), f"R2UR {E.UReg(i % 64)}, {rd}")
        add(E.mov(rd, E.UReg(63 - i % 64)), f"MOV {rd}, {E.UReg(63 - i % 64)}")
        add(E.ldc(rd, 4 * (i * 37 % 0x2000)), f"LDC {rd}, {_constant(0, 4 * (i * 37 % 0x2000))}")
        add(E.s2r(rd, ("SR_TID.X", "SR_CTAID.X", "SR_CTAID.Y", "SR_CTAID.Z", "SR_VIRTUALSMID")[i % 5], guard=g),
            f"S2R {rd}, {('SR_TID.X', 'SR_CTAID.X', 'SR_CTAID.Y', 'SR_CTAID.Z', 'SR_VIRTUALSMID')[i % 5]}", g)
        add(E.stg_uniform(E.UReg(2 * (i % 31)), rd, offset=4 * (i - 128), eviction="EF", guard=g),
            f"STG.E.EF [RZ.U32+UR{2 * (i % 31)}{_address_offset(4 * (i - 128))}], {rd}", g)
    for i in range(128):
        pair, g = E.Reg(2 * i if i < 127 else 255), GUARDS[i % len(GUARDS)]
        a, b, c = _r(i + 3), _r(i + 90), E.Reg(2 * ((i + 40) % 127))
        add(E.imad(pair, a, b, c, wide=True), f"IMAD.WIDE.U32 {pair}, {a}, {b}, {c}")
        add(E.ldc(pair, 8 * (i * 29 % 0x1000), wide=True), f"LDC.64 {pair}, {_constant(0, 8 * (i * 29 % 0x1000))}")
        add(E.stg_uniform(E.UReg(2 * (i % 31)), pair, offset=8 * (i - 64), width=64, eviction="EF", guard=g),
            f"STG.E.EF.64 [RZ.U32+UR{2 * (i % 31)}{_address_offset(8 * (i - 64))}], {pair}", g)
        add(E.cs2r(pair, "SR_GLOBALTIMERLO", guard=g), f"CS2R {pair}, SR_GLOBALTIMERLO", g)
    for i in range(64):
        quad, g = E.Reg(4 * i if i < 63 else 255), GUARDS[i % len(GUARDS)]
        add(E.stg_uniform(E.UReg(2 * (i % 31)), quad, offset=16 * (i - 32), width=128, eviction="EF", guard=g),
            f"STG.E.EF.128 [RZ.U32+UR{2 * (i % 31)}{_address_offset(16 * (i - 32))}], {quad}", g)
        add(E.uisetp(E.UPred(i % 7), "GT", E.UReg(i), -i * 0x10, unsigned=False),
            f"UISETP.GT.AND UP{i % 7}, UPT, {E.UReg(i)}, {_signed_immediate(-i * 0x10 & 0xFFFFFFFF)}, UPT")
        add(E.uiadd3(E.UReg(i), E.UReg(i), -i * 0x40, guard=UNIFORM_GUARDS[i % len(UNIFORM_GUARDS)]),
            f"UIADD3 {E.UReg(i)}, {E.UReg(i)}, {_signed_immediate(-i * 0x40 & 0xFFFFFFFF)}, URZ",
            UNIFORM_GUARDS[i % len(UNIFORM_GUARDS)])
        add(E.s2ur(E.UReg(i), "SR_CLOCKLO"), f"S2UR {E.UReg(i)}, SR_CLOCKLO")
    return cases


def _address_offset(offset: int) -> str:
    """A store's byte offset as nvdisasm prints it after its base ("+-0x10" below it)."""
    return f"+{offset:#x}" if offset else ""


# Scheduling controls over every scoreboard and wait mask and the stalls ptxas gives what runs
# (1-11; nvdisasm refuses some opcodes a longer stall with yield), operand reuse aside (an
# encoder gives no listing under reuse flags): an inserted instruction's control leaves its text alone.
CONTROLS = [Control(stall=1 + k % 11, yield_=k % 2 == 1, write_barrier=k % 8, read_barrier=(k * 3) % 8,
                    wait_mask=(k * 11) % 64) for k in range(64)]


STORE_OPCODE = 0x986  # bits 0-11 of STG


def _control_for(words: E.Words, n: int) -> Control:
    """The n-th of CONTROLS, less the write scoreboard where the instruction is a store (it
    writes no register: nvdisasm refuses one)."""
    control = CONTROLS[n % len(CONTROLS)]
    return dataclasses.replace(control, write_barrier=NO_BARRIER) if words.low & 0xFFF == STORE_OPCODE else control


def test_round_trip_through_nvdisasm():
    cases = _round_trip_cases()
    # Each case once under its encoder's own control and once under another: the listing holds for both.
    scheduled = [E.Words(words.low, _control_for(words, n).on_high(words.high), words.text)
                 for n, (words, _) in enumerate(cases)]
    texts = _disassemble([words for words, _ in cases] + scheduled)
    assert len(texts) == 2 * len(cases)
    wrong = [f"expected {want!r}, nvdisasm read {got!r} and {again!r}, the encoder's listing is {words.text!r}"
             for (words, want), got, again in zip(cases, texts, texts[len(cases):])
             if not want == got == again == words.text]
    assert not wrong, f"{len(wrong)} of {len(cases)}:\n" + "\n".join(wrong[:30])


def test_no_listing_is_given_under_operand_reuse_flags():
    words = E.iadd3(E.Reg(1), E.Reg(2), E.Reg(3), control=Control(stall=4, reuse=0b0001))
    assert words.text is None and E.iadd3(E.Reg(1), E.Reg(2), E.Reg(3)).text == "IADD3 R1, R2, R3, RZ"


def test_control_fields_land_in_the_top_23_bits_only():
    control = Control(stall=13, yield_=True, write_barrier=2, read_barrier=5, wait_mask=0x2A, reuse=0b1010)
    for plain, scheduled in ((E.cs2r(E.Reg(6)), E.cs2r(E.Reg(6), control=control)),
                             (E.stg(E.Reg(2), E.Reg(8), desc=E.UReg(4), width=128, guard=E.Pred(3)),
                              E.stg(E.Reg(2), E.Reg(8), desc=E.UReg(4), width=128, guard=E.Pred(3), control=control))):
        assert scheduled.low == plain.low
        assert scheduled.high >> 41 == control.bits
        assert scheduled.high & ((1 << 41) - 1) == plain.high & ((1 << 41) - 1)
        assert Control.from_high(scheduled.high) == control


@pytest.mark.parametrize("build, message", [
    (lambda: E.Reg(256), "register R256 out of range"),
    (lambda: E.UReg(64), "uniform register UR64 out of range"),
    (lambda: E.Pred(8), "predicate P8 out of range"),
    (lambda: E.cs2r(E.Reg(5)), "CS2R destination R5 must be a multiple of 2"),
    (lambda: E.cs2r(E.Reg(254)), "CS2R destination R254 leaves no room for 2 registers"),
    (lambda: E.cs2r(E.Reg(4), "SR_TID.X"), "unknown special register 'SR_TID.X'"),
    (lambda: E.s2r(E.Reg(4), "SR_SMID"), "unknown special register 'SR_SMID'"),
    (lambda: E.s2r(E.UReg(4), "SR_LANEID"), "S2R destination must be a register"),
    (lambda: E.iadd3(E.Reg(1), E.Reg(2), 1 << 32), "IADD3 immediate 4294967296 does not fit in 32 bits"),
    (lambda: E.iadd3(E.Reg(1), E.Reg(2), E.Reg(3), carry_out=E.Pred(0, negated=True)), "cannot be negated"),
    (lambda: E.imad(E.Reg(1), E.Reg(2), 3, 4), "IMAD takes at most one immediate or uniform source"),
    (lambda: E.imad_wide_u32(E.Reg(2), E.Reg(4), 8, E.Reg(3)), "IMAD c R3 must be a multiple of 2"),
    (lambda: E.isetp(E.Pred(0), "GEU", E.Reg(1), 2), "unknown ISETP comparison 'GEU'"),
    (lambda: E.isetp(E.Pred(0), "GE", E.Reg(1), 2, op="NAND"), "unknown ISETP boolean op 'NAND'"),
    (lambda: E.stg(E.Reg(3), E.Reg(4), desc=E.UReg(4)), "STG address R3 must be a multiple of 2"),
    (lambda: E.stg(E.Reg(2), E.Reg(6), width=128, desc=E.UReg(4)), "STG data R6 must be a multiple of 4"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), width=16, desc=E.UReg(4)), "STG width 16 must be 32, 64 or 128 bits"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), offset=1 << 23, desc=E.UReg(4)),
     "STG offset 8388608 does not fit in 24 signed bits"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), offset=4, width=64, desc=E.UReg(4)),
     "STG offset 0x4 is not a multiple of 8 bytes"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), eviction="CS", desc=E.UReg(4)), "unknown STG eviction hint 'CS'"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), desc=E.UReg(5)), "STG descriptor UR5 must be a multiple of 2"),
    (lambda: E.ldc(E.Reg(2), 0x8000), "constant offset 32768 does not fit in 16 signed bits"),
    (lambda: E.ldc(E.Reg(2), 0x214, wide=True), "constant offset 0x214 is not a multiple of 8 bytes"),
    (lambda: E.ldc(E.Reg(2), 0x210, bank=32), "constant bank 32 out of range"),
    (lambda: E.uldc(E.UReg(3), 0x210, wide=True), "ULDC destination UR3 must be a multiple of 2"),
    (lambda: E.umov(E.UReg(3), E.Reg(1)), "UMOV source must be a uniform register or an immediate"),
    (lambda: E.lea(E.Reg(1), E.Reg(2), E.Reg(3), 32), "LEA shift 32 out of range"),
    (lambda: E.shf(E.Reg(1), E.RZ, 64, E.Reg(3)), "SHF shift 64 must be a register or 0..63"),
    (lambda: E.shf(E.Reg(1), E.RZ, 5, E.Reg(3), kind="U16"), "unknown SHF type 'U16'"),
    (lambda: E.s2ur(E.UReg(4), "SR_CTAID.X", guard=E.Pred(0)), "guard must be a uniform predicate UP0..UP6/UPT"),
    (lambda: E.s2r(E.Reg(4), "SR_CTAID.X", guard=E.UPred(0)), "guard must be a predicate P0..P6/PT"),
    (lambda: E.UPred(9), "uniform predicate UP9 out of range"),
])
def test_out_of_range_operands_are_refused_in_one_line(build, message):
    with pytest.raises(E.EncodingError) as error:
        build()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_encoders_reproduce_the_probe_forms_in_real_triton_kernels():
    """Every instance of a probe form in the corpus kernels' sm_90a cubins (Triton's own
    schedules, registers and guards) re-encodes to the same 128 bits."""
    from compile_kernels import _compile
    from corpus import CASES
    seen, mismatches, forms = 0, [], set()
    for case in CASES:
        signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
        kernel = _compile(case.fn, tuple(signature.items()), tuple(case.constexprs.items()),
                          case.num_warps, case.num_stages)
        for text, low, high in _listing(kernel.asm["cubin"]):
            words = _encode_from_text(text, Control.from_high(high))
            if words is None:
                continue
            seen += 1
            forms.add(_form(text))
            if (words.low, words.high) != (low, high):
                mismatches.append(f"{case.name}: {text}: ptxas {low:#018x} {high:#018x}, "
                                  f"ours {words.low:#018x} {words.high:#018x}")
            elif words.text is not None and words.text != text:
                mismatches.append(f"{case.name}: {text}: our listing {words.text!r}")
    assert not mismatches, f"{len(mismatches)} of {seen}:\n" + "\n".join(mismatches[:20])
    assert seen > 3000
    # the forms the synthetic PTX does not make ptxas write, and the signed ones
    assert {"UMOV", "IADD3.X", "IMAD.WIDE", "ISETP.GE.AND", "ISETP.LT.AND", "SHF.L.U32", "SHF.L.U64.HI",
            "SHF.R.S32.HI"} <= forms, sorted(forms)


# ---------------------------------------------------------------- our words in ptxas's kernel, on the GPU

SWAP_KERNEL = HEADER + """.visible .entry swaps(.param .u64 out)
{
.reg .b64 %d<8>; .reg .b32 %r<8>; .reg .pred %p<2>;
ld.param.u64 %d0, [out];
mov.u32 %r1, %tid.x;
mul.wide.u32 %d1, %r1, 64;
add.s64 %d2, %d0, %d1;
mov.u32 %r2, %laneid;
st.global.u32 [%d2], %r2;
mov.u64 %d3, %clock64;
st.global.u64 [%d2+8], %d3;
mov.u64 %d4, %globaltimer;
st.global.u64 [%d2+16], %d4;
add.u32 %r3, %r1, 1000;
st.global.u32 [%d2+24], %r3;
setp.ge.u32 %p1, %r1, 40;
@%p1 st.global.u32 [%d2+28], %r1;
st.global.u32 [%d2+32], 0x12345;
ret;
}
"""
# Each instruction of ptxas's kernel matching the left is replaced, in place and with ptxas's own
# control bits, by our encoding of the right: the kernel then stores the thread id instead of
# the lane id, the global timer instead of the SM clock, tid + 2000 instead of tid + 1000, stores
# below the bound instead of above it, and 0x54321 four bytes further on (evict-first). Each
# effect lists the forms ptxas may have chosen for it; exactly one instance must be swapped.
SWAPS = [[(r"S2R (R\d+), SR_LANEID", r"S2R \1, SR_TID.X")],
         [(r"CS2R (R\d+), SR_CLOCKLO", r"CS2R \1, SR_GLOBALTIMERLO")],
         [(r"VIADD (R\d+), (R\d+), 0x3e8", r"VIADD \1, \2, 0x7d0"),
          (r"IADD3 (R\d+), (R\d+), 0x3e8, RZ", r"IADD3 \1, \2, 0x7d0, RZ")],
         [(r"ISETP\.GE\.U32\.AND (P\d), PT, (R\d+), 0x28, PT", r"ISETP.LT.U32.AND \1, PT, \2, 0x28, PT")],
         [(r"(IMAD\.MOV\.U32 R\d+, RZ, RZ|MOV R\d+), 0x12345", r"\1, 0x54321")],
         [(r"STG\.E desc\[(UR\d+)\]\[(R\d+)\.64\+0x20\], (R\d+)", r"STG.E.EF desc[\1][\2.64+0x24], \3")]]


def _swapped_kernel() -> tuple[bytes, list[str]]:
    """ptxas's cubin of SWAP_KERNEL with SWAPS applied, and the listing it should now have."""
    cubin = ptx.assemble(SWAP_KERNEL)
    listing, expected = _listing(cubin), []
    patched = bytearray(cubin)
    swapped = [0] * len(SWAPS)
    for text, low, high in listing:
        plain = text.replace(".reuse", "")
        hits = [(effect, pattern, new) for effect, forms in enumerate(SWAPS) for pattern, new in forms
                if re.fullmatch(pattern, plain)]
        if not hits:
            expected.append(plain)
            continue
        (effect, pattern, new), = hits
        swapped[effect] += 1
        new_text = re.sub(pattern, new, plain)
        words = _encode_from_text(new_text, Control.from_high(high))
        old = low.to_bytes(8, "little") + high.to_bytes(8, "little")
        assert patched.count(old) == 1, f"{text} occurs {patched.count(old)} times in the cubin"
        at = patched.index(old)
        patched[at:at + 16] = words.raw
        expected.append(new_text)
    assert swapped == [1] * len(SWAPS), f"swaps per effect {swapped}: ptxas wrote other forms than {SWAPS}"
    return bytes(patched), expected


def test_swapped_kernel_disassembles_to_the_swapped_text():
    cubin, expected = _swapped_kernel()
    assert [text.replace(".reuse", "") for text, _, _ in _listing(cubin)] == expected


@pytest.mark.gpu
def test_swapped_instructions_do_on_the_gpu_what_their_text_says():
    import ctypes

    torch = pytest.importorskip("torch")
    from cuda.bindings import driver as cu

    from gwatch_nb.cuda import driver

    cubin, _ = _swapped_kernel()
    threads, sentinel = 64, 0x7EEEEEEE
    out = torch.full((threads, 16), sentinel, dtype=torch.int32, device="cuda")
    module = driver.load_cubin(cubin)
    try:
        function = driver.get_function(module, "swaps")
        pointer = ctypes.c_uint64(out.data_ptr())
        params = (ctypes.c_void_p * 1)(ctypes.addressof(pointer))
        driver.check(cu.cuLaunchKernel(function, 1, 1, 1, threads, 1, 1, 0, cu.CUstream(0),
                                       ctypes.addressof(params), 0), "cuLaunchKernel")
        driver.check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    finally:
        cu.cuModuleUnload(module)
    words = out.cpu().numpy().view("uint32")
    wide = words.view("uint64")
    tid = list(range(threads))
    assert words[:, 0].tolist() == tid                                  # SR_TID.X, not SR_LANEID
    assert (abs(wide[:, 1].astype("int64") - wide[:, 2].astype("int64")) < 10**9).all()  # global timer, ns
    assert words[:, 6].tolist() == [t + 2000 for t in tid]              # VIADD 0x7d0
    assert words[:, 7].tolist() == [t if t < 40 else sentinel for t in tid]  # ISETP.LT
    assert words[:, 8].tolist() == [sentinel] * threads and words[:, 9].tolist() == [0x54321] * threads


def _random_store(draw):
    width = draw(st.sampled_from([32, 64, 128]))
    group = width // 32
    data = E.Reg(draw(st.integers(0, (254 - group + 1) // group)) * group)
    address = E.Reg(draw(st.integers(0, 126)) * 2)
    offset = draw(st.integers(-(1 << 23) // (width // 8), ((1 << 23) - 1) // (width // 8))) * (width // 8)
    desc, eviction = E.UReg(draw(st.integers(0, 30)) * 2), draw(st.sampled_from(list(E.EVICTIONS)))
    guard = draw(st.sampled_from(GUARDS))
    where = f"{address}.64" + ("" if offset == 0 else f"+{'-' if offset < 0 else ''}{abs(offset):#x}")
    text = (f"STG.E{'.' + eviction if eviction else ''}{'' if width == 32 else f'.{width}'} "
            f"desc[{desc}][{where}], {data}")
    return E.stg(address, data, desc=desc, offset=offset, width=width, eviction=eviction, guard=guard), \
        _guard_text(guard) + text


def _random_compare(draw):
    cmp, op, unsigned = (draw(st.sampled_from(list(E.COMPARISONS))), draw(st.sampled_from(list(E.BOOLEAN_OPS))),
                         draw(st.booleans()))
    pd, ra = E.Pred(draw(st.integers(0, 6))), E.Reg(draw(st.integers(0, 255)))
    b = draw(st.one_of(st.integers(0, 255).map(E.Reg), st.integers(0, (1 << 32) - 1)))
    combine = E.Pred(draw(st.integers(0, 7)), negated=draw(st.booleans()))
    b_text = str(b) if isinstance(b, E.Reg) else _signed_immediate(b)
    return (E.isetp(pd, cmp, ra, b, unsigned=unsigned, op=op, combine=combine),
            f"ISETP.{cmp}{'.U32' if unsigned else ''}.{op} {pd}, PT, {ra}, {b_text}, {combine}")


def _random_parameter_load(draw):
    wide = draw(st.booleans())
    size = 8 if wide else 4
    offset, bank = draw(st.integers(0, 0x7FFF // size)) * size, draw(st.integers(0, 31))
    rd = E.Reg(draw(st.integers(0, 126)) * 2 if wide else draw(st.integers(0, 254)))
    return E.ldc(rd, offset, bank=bank, wide=wide), f"LDC{'.64' if wide else ''} {rd}, {_constant(bank, offset)}"


@st.composite
def _random_instructions(draw):
    return [draw(st.sampled_from([_random_store, _random_compare, _random_parameter_load]))(draw) for _ in range(60)]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_random_instructions())
def test_random_operands_read_back_through_nvdisasm(cases):
    texts = _disassemble([words for words, _ in cases])
    assert texts == [want for _, want in cases] == [words.text for words, _ in cases]
