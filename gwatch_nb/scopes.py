"""Which scopes a trace records: the ``scopes`` choice of do_trace and ``%%gwatch -s``.

Each traced marker is a clock reading the compiler schedules nothing across, so a
kernel runs closest to its untraced speed with only the scopes a question needs;
markers of the other scopes stay idle and compile to nothing."""
from __future__ import annotations

import numbers
from typing import Iterable, Mapping

from .errors import OptionError
from .layout import MAX_SCOPE_ID


def chosen_scopes(scopes: Iterable[int | str] | int | str | None,
                  scope_name_map: Mapping[int, str] | None = None) -> frozenset[int] | None:
    """The scope ids ``scopes`` names (ids, or names from ``scope_name_map``); None for
    every scope. Raises OptionError (a ValueError), in one line, for anything it cannot
    resolve."""
    if scopes is None:
        return None
    scopes = [scopes] if isinstance(scopes, (str, numbers.Integral)) else list(scopes)
    by_name = {name: scope_id for scope_id, name in (scope_name_map or {}).items()}
    ids = set()
    for item in scopes:
        if isinstance(item, str) and item.strip() in by_name:
            ids.add(by_name[item.strip()])
        elif isinstance(item, str) and item.strip().isdigit():
            ids.add(_in_range(int(item), scopes))
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            ids.add(_in_range(int(item), scopes))
        else:
            known = f"names known: {', '.join(sorted(by_name))}" if by_name else "no scope names were given"
            raise OptionError("scopes", _shown(scopes),
                              f"{_which(scopes, item)} neither a scope id nor a scope name ({known})")
    if not ids:
        raise OptionError("scopes", _shown(scopes), "names no scope; leave it out to trace every scope")
    return frozenset(ids)


def _shown(scopes) -> str:
    """The choice as typed: 'dot_qk,103'."""
    return ",".join(str(item).strip() for item in scopes)


def _which(scopes: list, item) -> str:
    """How a message names the item at fault: "is" for a choice of one."""
    return "is" if len(scopes) == 1 else f"names {item!r},"


def _in_range(scope_id: int, scopes) -> int:
    if not 0 <= scope_id <= MAX_SCOPE_ID:
        raise OptionError("scopes", _shown(scopes), f"{_which(scopes, scope_id)} out of range [0, {MAX_SCOPE_ID}]")
    return scope_id


def no_markers_message(kernel: str, scopes: frozenset[int] | None) -> str:
    """What a matching kernel with nothing to record says."""
    if scopes is None:
        return f"{kernel}: matched, but it has no scope_start/scope_end markers"
    return (f"{kernel}: matched, but none of its markers is of the scopes traced "
            f"({', '.join(map(str, sorted(scopes)))}); it ran untraced")
