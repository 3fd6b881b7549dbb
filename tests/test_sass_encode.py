"""The probe instructions' encoders against ptxas and nvdisasm.

ptxas side: PTX written to make ptxas emit every probe form with many registers and predicates
(many live clock readings, many guarded stores, many pointers) is assembled for sm_90a; every
instance of a form in nvdisasm's listing is parsed from its text, encoded by gwatch_nb, and its
128 bits compared with ptxas's (the control field taken from ptxas's own word).
nvdisasm side: instructions ptxas did not happen to write (every register R0..R254 and RZ, every
predicate and its negation, every store width) are encoded and disassembled in one call; each
must print as the text it was built from."""
import os
import re
import subprocess
import tempfile

import pytest

from gwatch_nb import ptx
from gwatch_nb.sass import encode as E
from gwatch_nb.sass.control import Control

NVDISASM = os.path.join(os.path.dirname(ptx.ptxas_path(90)), "nvdisasm")
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
                 f"{('and', 'or', 'xor')[i % 3]}.pred %p{2 * count + i}, %p{i}, %p{count + i};"]
    for i in range(count):
        r = 10 + 8 * i
        body += [f"st.global.u32 [%d{11 + 4 * i}], %r{r + 3};", f"st.global.u32 [%d{13 + 4 * i}+4], %r{r + 2};",
                 f"@%p{2 * count + i} st.global.u32 [%d{13 + 4 * i}+8], %r{r};"]
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
             f".reg .b64 %d<{8 * count + 20}>;", f".reg .b32 %r<{16 * count + 20}>;", f".reg .pred %p<{3 * count + 1}>;"]
    return "\n".join(lines + body + ["ret;", "}"]) + "\n"


def _listing(cubin: bytes) -> list[tuple[str, int, int]]:
    """(text, low, high) of every instruction of a cubin, as nvdisasm prints them."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        text = subprocess.run([NVDISASM, "-c", "-hex", "-ndf", path], capture_output=True, text=True, check=True).stdout
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
    if m := re.fullmatch(r"(!?)(P(\d)|PT)", text):
        return E.Pred(7 if m.group(3) is None else int(m.group(3)), negated=bool(m.group(1)))
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
                  "ISETP.NE.U32.AND": 10, "ISETP.LT.U32.AND": 2, "ISETP.EQ.U32.XOR": 2, "STG.E": 40, "STG.E.64": 40, "STG.E.128": 10, "LDC": 2,
                  "LDC.64": 2, "ULDC": 1, "ULDC.64": 2, "NOP": 4}


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


def _guard_text(guard) -> str:
    return "" if guard is None else f"@{guard} "


def _imad_immediate(value: int) -> str:
    """IMAD's immediate as nvdisasm prints it: signed."""
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
        add(E.iadd3(rd, ra, i * 0x1234567 % 0x7FFFFFFF, carry_out=p, guard=g),
            f"IADD3 {rd}, {p}, {ra}, {i * 0x1234567 % 0x7FFFFFFF:#x}, RZ", g)
        add(E.iadd3(rd, ra, E.UReg(i % 64), rc, carry_out=p, second_carry_out=q),
            f"IADD3 {rd}, {p}, {q}, {ra}, {E.UReg(i % 64)}, {rc}")
        add(E.iadd3_x(rd, ra, rb, rc, p, guard=g), f"IADD3.X {rd}, {ra}, {rb}, {rc}, {p}, !PT", g)
        add(E.iadd3_x(rd, ra, rb, rc, E.Pred(i % 7, negated=True), q),
            f"IADD3.X {rd}, {ra}, {rb}, {rc}, !{p}, {q}")
        add(E.viadd(rd, ra, i * 0x10001, guard=g), f"VIADD {rd}, {ra}, {i * 0x10001:#x}", g)
        add(E.imad_x(rd, E.RZ, E.RZ, ra, p, guard=g), f"IMAD.X {rd}, RZ, RZ, {ra}, {p}", g)
        add(E.imad_mov_u32(rd, ra, guard=g), f"IMAD.MOV.U32 {rd}, RZ, RZ, {ra}", g)
        add(E.imad_mov_u32(rd, i * 0x3001, guard=g), f"IMAD.MOV.U32 {rd}, RZ, RZ, {i * 0x3001:#x}", g)
        add(E.mov(rd, ra, guard=g), f"MOV {rd}, {ra}", g)
        add(E.mov(rd, i * 0x777, guard=g), f"MOV {rd}, {i * 0x777:#x}", g)
        add(E.mov(rd, E.UReg(i % 63), guard=g), f"MOV {rd}, UR{i % 63}", g)
        add(E.ldc(rd, 4 * i, bank=i % 32, guard=g), f"LDC {rd}, {_constant(i % 32, 4 * i)}", g)
        add(E.isetp(p, list(E.COMPARISONS)[i % 8], ra, rb, unsigned=i % 2 == 0, op=list(E.BOOLEAN_OPS)[i % 3],
                    combine=E.Pred((i + 2) % 8, negated=i % 5 == 0), guard=g),
            f"ISETP.{list(E.COMPARISONS)[i % 8]}{'.U32' if i % 2 == 0 else ''}.{list(E.BOOLEAN_OPS)[i % 3]} "
            f"{p}, PT, {ra}, {rb}, {E.Pred((i + 2) % 8, negated=i % 5 == 0)}", g)
        add(E.isetp(p, ("GE", "LT", "NE")[i % 3], ra, i * 0x101, guard=g),
            f"ISETP.{('GE', 'LT', 'NE')[i % 3]}.U32.AND {p}, PT, {ra}, {i * 0x101:#x}, PT", g)
        add(E.isetp(p, "GE", ra, E.UReg(i % 64)), f"ISETP.GE.U32.AND {p}, PT, {ra}, {E.UReg(i % 64)}, PT")
        add(E.stg(E.Reg(2 * (i % 128) if i % 128 < 127 else 255), rd, offset=4 * (i - 128), desc=E.UReg(2 * (i % 31)),
                  guard=g),
            f"STG.E desc[UR{2 * (i % 31)}][{E.Reg(2 * (i % 128) if i % 128 < 127 else 255)}.64"
            f"{'' if i == 128 else f'+{4 * (i - 128):#x}'.replace('+-0x', '+-0x')}], {rd}", g)
    for i in range(128):
        pair, g = E.Reg(2 * i if i < 127 else 255), GUARDS[i % len(GUARDS)]
        add(E.cs2r(pair, ("SR_CLOCKLO", "SR_GLOBALTIMERLO")[i % 2], guard=g),
            f"CS2R {pair}, {('SR_CLOCKLO', 'SR_GLOBALTIMERLO')[i % 2]}", g)
        add(E.stg(_r(2 * i + 4) if i < 125 else E.Reg(2), pair, offset=-8 * i, width=64, guard=g,
                  eviction=list(E.EVICTIONS)[i % 6]),
            f"STG.E{'.' if i % 6 != 1 else ''}{list(E.EVICTIONS)[i % 6]}.64 desc[UR4]"
            f"[{_r(2 * i + 4) if i < 125 else 'R2'}.64{f'+-{8 * i:#x}' if i else ''}], {pair}", g)
        add(E.imad_wide_u32(pair, _r(i + 9), 1 << (i % 32), _r(2 * i + 2) if i < 126 else E.RZ, guard=g),
            f"IMAD.WIDE.U32 {pair}, {_r(i + 9)}, {_imad_immediate(1 << (i % 32))}, {_r(2 * i + 2) if i < 126 else 'RZ'}", g)
        add(E.ldc(pair, 8 * i, wide=True, guard=g), f"LDC.64 {pair}, {_constant(0, 8 * i)}", g)
        add(E.lea(_r(i + 50), _r(i + 1), E.UReg(i % 63), i % 32, carry_out=E.Pred(i % 7), guard=g),
            f"LEA {_r(i + 50)}, P{i % 7}, {_r(i + 1)}, UR{i % 63}, {i % 32:#x}", g)
        add(E.lea_hi_x(_r(i + 51), _r(i + 1), _r(i + 90), _r(i + 3), i % 32, E.Pred(i % 7), guard=g),
            f"LEA.HI.X {_r(i + 51)}, {_r(i + 1)}, {_r(i + 90)}, {_r(i + 3)}, {i % 32:#x}, P{i % 7}", g)
    for i in range(64):
        quad, g = E.Reg(4 * i if i < 63 else 255), GUARDS[i % len(GUARDS)]
        add(E.stg(E.Reg(2 * i), quad, offset=16 * i, width=128, desc=E.UReg(2 * (i % 31)), guard=g),
            f"STG.E.128 desc[UR{2 * (i % 31)}][R{2 * i}.64{f'+{16 * i:#x}' if i else ''}], {quad}", g)
        add(E.s2ur(E.UReg(i), "SR_CTAID.X"), f"S2UR {E.UReg(i)}, SR_CTAID.X")
        add(E.umov(E.UReg(i), i * 0x100), f"UMOV {E.UReg(i)}, {i * 0x100:#x}")
        add(E.umov(E.UReg(i), E.UReg(63 - i)), f"UMOV {E.UReg(i)}, {E.UReg(63 - i)}")
        add(E.uldc(E.UReg(i), 4 * i + 0x210), f"ULDC {E.UReg(i)}, c[0x0][{4 * i + 0x210:#x}]")
        if i % 2 == 0 and i < 62:
            add(E.uldc(E.UReg(i), 8 * i, wide=True), f"ULDC.64 {E.UReg(i)}, c[0x0][{8 * i:#x}]")
        add(E.nop(guard=g), "NOP", g)
    return cases


def test_round_trip_through_nvdisasm():
    cases = _round_trip_cases()
    texts = _disassemble([words for words, _ in cases])
    assert len(texts) == len(cases)
    wrong = [f"expected {want!r}, nvdisasm read {got!r}" for (_, want), got in zip(cases, texts) if want != got]
    assert not wrong, f"{len(wrong)} of {len(cases)}:\n" + "\n".join(wrong[:30])


def test_control_fields_land_in_the_top_23_bits_only():
    control = Control(stall=13, yield_=True, write_barrier=2, read_barrier=5, wait_mask=0x2A, reuse=0b1010)
    for plain, scheduled in ((E.cs2r(E.Reg(6)), E.cs2r(E.Reg(6), control=control)),
                             (E.stg(E.Reg(2), E.Reg(8), width=128, guard=E.Pred(3)),
                              E.stg(E.Reg(2), E.Reg(8), width=128, guard=E.Pred(3), control=control))):
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
    (lambda: E.stg(E.Reg(3), E.Reg(4)), "STG address R3 must be a multiple of 2"),
    (lambda: E.stg(E.Reg(2), E.Reg(6), width=128), "STG data R6 must be a multiple of 4"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), width=16), "STG width 16 must be 32, 64 or 128 bits"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), offset=1 << 23), "STG offset 8388608 does not fit in 24 signed bits"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), offset=4, width=64), "STG offset 0x4 is not a multiple of 8 bytes"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), eviction="CS"), "unknown STG eviction hint 'CS'"),
    (lambda: E.stg(E.Reg(2), E.Reg(4), desc=E.UReg(5)), "STG descriptor UR5 must be a multiple of 2"),
    (lambda: E.ldc(E.Reg(2), 0x8000), "constant offset 32768 does not fit in 16 signed bits"),
    (lambda: E.ldc(E.Reg(2), 0x214, wide=True), "constant offset 0x214 is not a multiple of 8 bytes"),
    (lambda: E.ldc(E.Reg(2), 0x210, bank=32), "constant bank 32 out of range"),
    (lambda: E.uldc(E.UReg(3), 0x210, wide=True), "ULDC destination UR3 must be a multiple of 2"),
    (lambda: E.umov(E.UReg(3), E.Reg(1)), "UMOV source must be a uniform register or an immediate"),
    (lambda: E.lea(E.Reg(1), E.Reg(2), E.Reg(3), 32), "LEA shift 32 out of range"),
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
    seen, mismatches = 0, []
    for case in CASES:
        signature = dict(case.signature, **{name: "constexpr" for name in case.constexprs})
        kernel = _compile(case.fn, tuple(signature.items()), tuple(case.constexprs.items()),
                          case.num_warps, case.num_stages)
        for text, low, high in _listing(kernel.asm["cubin"]):
            words = _encode_from_text(text, Control.from_high(high))
            if words is None:
                continue
            seen += 1
            if (words.low, words.high) != (low, high):
                mismatches.append(f"{case.name}: {text}: ptxas {low:#018x} {high:#018x}, "
                                  f"ours {words.low:#018x} {words.high:#018x}")
    assert not mismatches, f"{len(mismatches)} of {seen}:\n" + "\n".join(mismatches[:20])
    assert seen > 3000
