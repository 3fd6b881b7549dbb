"""What NVIDIA's nvdisasm says of a cubin, the reference the analysis tests compare against:
its basic-block graph (`-bbcfg`) and its register life ranges (`-lrm narrow`). nvdisasm
refuses a kernel whose register count is 255
("Invalid register count"): R255 is RZ, so 255 columns do not fit its table; a copy of the
cubin with the count lowered to 254 disassembles, and only R254 is then out of sight."""
import re
import struct
import subprocess

from support import nvdisasm

EIATTR_REGCOUNT = 0x2F
SECTIONS = {"GPR": "R", "PRED": "P", "UGPR": "UR", "UPRED": "UP"}
_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/(.*?);\s*//\s*\|(.*)\|\s*$")


def _lower_register_count(cubin: bytes) -> bytes:
    """The cubin with every EIATTR_REGCOUNT of 255 in `.nv.info` set to 254."""
    data = bytearray(cubin)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    for name_offset, _, _, _, offset, size, *_ in headers:
        if data[names + name_offset:data.index(b"\0", names + name_offset)] != b".nv.info":
            continue
        at = offset
        while at < offset + size:
            form, attribute, length = struct.unpack_from("<BBH", data, at)
            if form != 4:  # a value-only attribute: no payload
                at += 4
                continue
            if attribute == EIATTR_REGCOUNT and data[at + 8] == 255:
                data[at + 8] = 254
            at += 4 + length
    return bytes(data)


def _run(cubin: bytes, *options: str) -> str:
    return nvdisasm.output(_lower_register_count(cubin), *options)


_NODE = re.compile(r'^"([^"]+)"\n\[label="\{<entry>(.*?)\}"\]', re.M | re.S)
_EDGE = re.compile(r'^"([^"]+)":\w+:\w -> "([^"]+)":entry:n', re.M)
_OFFSET = re.compile(r"(?:^|\\l|\|<exit\d+>)([0-9a-f]{4,}):")


def block_graph(cubin: bytes) -> dict[str, tuple[set[int], set[tuple[int, int]]]]:
    """kernel name -> (first instruction index of every block, (block, successor) edges as
    first instruction indices), from nvdisasm's basic-block graph; it leaves out blocks no path
    reaches."""
    text = _run(cubin, "-bbcfg", "-poff")
    kernels = {}
    for cluster in text.split('subgraph "cluster_')[1:]:
        name = cluster.split('"', 1)[0]
        first = {}
        for node, label in _NODE.findall(cluster):
            offsets = _OFFSET.findall(label)
            if offsets:
                first[node] = int(offsets[0], 16) // 16
        edges = {(first[a], first[b]) for a, b in _EDGE.findall(cluster) if a in first and b in first}
        kernels[name] = (set(first.values()), edges)
    return kernels


def _columns(header_rows: list[str]) -> list[int | None]:
    """Register number of each character column of a section, read from its digit rows."""
    width = max(len(r) for r in header_rows)
    rows = [r.ljust(width) for r in header_rows]
    numbers = []
    for position in range(width):
        digits = "".join(r[position] for r in rows if r[position].isdigit())
        numbers.append(int(digits) if rows[-1][position].isdigit() else None)
    return numbers


def life_ranges(cubin: bytes) -> dict[str, dict[int, dict[str, str]]]:
    """kernel name -> instruction index -> {register name: mark} for every register nvdisasm
    marks: '^' written, 'v' read, 'x' read and written, ':' live across. The padding `NOP`s
    after a kernel's last branch have no row."""
    try:
        text = _run(cubin, "-lrm", "narrow", "-c")
    except subprocess.CalledProcessError as error:
        if "flow analysis is disabled" in error.stderr:  # CUDA 13's nvdisasm on a CUDA 12 ELF layout
            import pytest
            pytest.skip("this nvdisasm prints no life ranges for a cubin of the other ELF layout "
                        "(the H200's own nvdisasm does: run there)")
        raise
    kernels: dict[str, dict[int, dict[str, str]]] = {}
    header: list[str] = []
    layout: list[tuple[str, list[int | None]]] = []
    current = None
    for line in text.splitlines():
        if line.startswith("//-----") and ".text." in line:
            current = kernels.setdefault(line.split(".text.", 1)[1].split()[0], {})
            header, layout = [], []
            continue
        match = _LINE.match(line)
        if match:
            marks = {}
            for (prefix, columns), cells in zip(layout, match.group(3).split("|")):
                for number, mark in zip(columns, cells):
                    if number is not None and mark in "^vx:":
                        marks[f"{prefix}{number}"] = mark
            current[int(match.group(1), 16) // 16] = marks
        elif "// |" in line and current is not None and not layout:
            cells = line.split("// |", 1)[1].rstrip().rstrip("|").split("|")
            if any(name in cells[0] for name in SECTIONS):
                header = [cells]
            elif header and "#" in cells[0]:
                header.append(cells)
                sections = [c.strip() for c in header[0]]
                layout = [(SECTIONS[name], _columns([row[k].replace("#", " ") for row in header[1:]]))
                          for k, name in enumerate(sections)]
            elif header:
                header.append(cells)
    return kernels
