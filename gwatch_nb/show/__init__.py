"""Terminal views of a trace (``gwatch show``), for people and for coding agents reading a
terminal: selection.py chooses the part of a trace, summaries.py and raster.py compute
the sections as plain data, text.py lays them out, sections.py lists them."""
from .raster import scope_letters
from .sections import SECTIONS, VIEWS, format_text, summarize
from .selection import (Selection, SelectionError, parse_block, parse_numbers, parse_threads, parse_ticks,
                        parse_time)

__all__ = ["SECTIONS", "VIEWS", "Selection", "SelectionError", "format_text", "parse_block", "parse_numbers",
           "parse_threads", "parse_ticks", "parse_time", "scope_letters", "summarize"]
