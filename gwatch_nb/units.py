"""Durations as people read them: one unit per value or per column, the same in the
terminal, the HTML report and the charts."""
from __future__ import annotations

import math

#: (unit, ns per unit), largest first.
_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))


def unit_for(largest_ns: float, ascii: bool = False) -> tuple[str, float]:
    """The largest unit in which ``largest_ns`` is at least 1 (ns for 0), and its ns per unit."""
    unit, scale = next(((u, s) for u, s in _UNITS if abs(float(largest_ns)) >= s), _UNITS[-1])
    return ("us" if ascii and unit == "µs" else unit), scale


def range_unit(largest_ns: float, ascii: bool = False) -> tuple[str, float]:
    """The unit for a chart axis or a table column reaching ``largest_ns``: the largest in
    which it reads at least 10, so values show up to four whole digits rather than 0.2, 0.4, ..."""
    return unit_for(float(largest_ns) / 10, ascii)


def format_ns(ns, ascii: bool = False) -> str:
    """ns as text: about four significant digits in the largest unit that keeps it >= 1
    ("-" for a missing value); ``ascii`` writes us for µs."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    ns = float(ns)
    unit, scale = unit_for(ns, ascii)
    value = ns / scale
    if scale == 1.0 and value.is_integer():
        return f"{value:,.0f} ns"
    digits = max(0, 3 - int(math.floor(math.log10(max(abs(value), 1.0)))))
    return f"{value:,.{digits}f} {unit}"


def format_scaled(value_ns: float, scale: float) -> str:
    """A value of a column already given one unit: about four significant digits, integers
    whole; a value far below the column's unit keeps its digits rather than reading 0.000."""
    value = float(value_ns) / scale
    if value.is_integer():
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude < 1e-3:  # four significant digits however small
        return f"{value:,.{3 - int(math.floor(math.log10(magnitude)))}f}"
    digits = max(0, 3 - int(math.floor(math.log10(max(magnitude, 1.0)))))
    return f"{value:,.{digits}f}"
