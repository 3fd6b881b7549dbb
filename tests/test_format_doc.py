"""docs/FORMAT.md describes the trace buffer; native/gwatch_format.h defines it. They agree,
the sass tier's use of it included."""
import os
import re

from gwatch_nb._native import FORMAT
from gwatch_nb.layout import RECORD_DTYPE, SLOT_HEADER_DTYPE

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "FORMAT.md")


def _buffer_section() -> str:
    text = open(DOC).read()
    start = text.index("## Trace buffer")
    return text[start:text.index("\n## ", start + 1)]


OFFSET_PREFIXES = ("GH_", "SH_", "REC_", "SASS_SH_")


def _sass_section() -> str:
    """The buffer section's part on the sass tier, its lines joined (a phrase may wrap)."""
    section = _buffer_section()
    return " ".join(section[section.index("### On the sass tier"):].split())


def _rows():
    """(offset, [constant names]) for every table row that names a layout constant."""
    for line in _buffer_section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].isdigit():
            yield int(cells[0]), re.findall(r"`([A-Z_]+)`", cells[-1])


def test_every_documented_offset_is_the_headers():
    rows = list(_rows())
    assert len(rows) >= 18
    for offset, names in rows:
        for name in (n for n in names if n.startswith(OFFSET_PREFIXES)):
            assert FORMAT[name] == offset, f"{name}: header says {FORMAT[name]}, FORMAT.md says {offset}"


def test_every_offset_constant_is_documented():
    documented = {n for _, names in _rows() for n in names}
    offsets = {k for k in FORMAT if k.startswith(OFFSET_PREFIXES)}
    assert offsets <= documented, offsets - documented


def test_documented_magics_and_sizes():
    section = _buffer_section()
    for name in ("BUFFER_MAGIC", "WARP_MAGIC"):
        assert f"0x{FORMAT[name]:08x}" in section.lower()
    assert f"({FORMAT['SLOT_HEADER_BYTES']} bytes, `SLOT_HEADER_BYTES`" in section
    assert f"zero up to {FORMAT['GLOBAL_HEADER_BYTES']} bytes | `GLOBAL_HEADER_BYTES`" in section
    assert f"({FORMAT['RECORD_BYTES']} bytes, `RECORD_BYTES`)" in section
    assert f"Up to {FORMAT['READINGS_PER_RECORD']} readings (`READINGS_PER_RECORD`)" in section
    assert f"u32 × {FORMAT['READINGS_PER_RECORD']} |" in section
    assert f"[0, {FORMAT['MAX_SCOPE_ID']}]" in section
    assert f"format version ({FORMAT['FORMAT_VERSION']})" in section
    assert f"at most {FORMAT['GROUP_MAX_EVENTS']}, `GROUP_MAX_EVENTS`" in section
    assert f"ceil((capacity + {FORMAT['GROUP_MAX_EVENTS'] - 1}) / m)" in section
    assert f"slot_records × {FORMAT['RECORD_BYTES']} + {FORMAT['SLOT_HEADER_BYTES']}" in section
    assert SLOT_HEADER_DTYPE.itemsize == FORMAT["SLOT_HEADER_BYTES"]
    assert RECORD_DTYPE.itemsize == FORMAT["RECORD_BYTES"]


def test_the_sass_tier_section_states_its_constants():
    section = _sass_section()
    assert f"`SASS_OVERFLOW_ROWS` ({FORMAT['SASS_OVERFLOW_ROWS']})" in section
    assert "up to `READINGS_PER_RECORD` sites" in section
    # the exit fields take the places of the events and records counts
    assert FORMAT["SASS_SH_ROOM"] == FORMAT["SH_EVENTS"] and FORMAT["SASS_SH_NEXT"] == FORMAT["SH_RECORDS"]
    assert "`SASS_SH_ROOM` (= `SH_EVENTS`)" in section and "`SASS_SH_NEXT` (= `SH_RECORDS`)" in section
    assert "`slot_records − SASS_OVERFLOW_ROWS`" in section


def test_the_sass_tier_section_names_the_parameters_the_tier_appends():
    from gwatch_nb.sass.instrument import PARAMETERS
    section = _sass_section()
    named = re.findall(r"`(\w+)` \((u\d+):", section)
    assert [(name, int(kind[1:]) // 8) for name, kind in named] == list(PARAMETERS)
