"""What two runs share: scopes matched by id and name, and notes for what differs in shape
(kernels, grids, blocks, launches, time sources, warnings)."""
from __future__ import annotations

from .runs import Run


def _unnamed(scope_id: int, name: str) -> bool:
    return name == str(scope_id)


def match_scopes(base: dict[int, str], other: dict[int, str]) -> tuple[dict[int, int], list[str]]:
    """Baseline scope id -> the other run's id: same id and name, else same name, else the
    same id where one side has no name. Notes say what matched loosely."""
    matched, notes = {}, []
    free = dict(other)
    for sid, name in base.items():
        if free.get(sid) == name:
            matched[sid] = sid
            del free[sid]
    by_name = {name: sid for sid, name in free.items()}
    for sid, name in base.items():
        if sid not in matched and name in by_name:
            matched[sid] = by_name[name]
            notes.append(f"scope {name!r} has id {sid} in one run and {by_name[name]} in the other: matched by name")
            del free[by_name.pop(name)]
    for sid, name in base.items():
        if sid not in matched and sid in free and (_unnamed(sid, name) or _unnamed(sid, free[sid])):
            matched[sid] = sid
            notes.append(f"scope id {sid} is named {name!r} in one run and {free[sid]!r} in the other: matched by id")
            del free[sid]
    return matched, notes


def shape_notes(base: Run, other: Run) -> list[str]:
    notes = []
    la, lb = base.trace.launches, other.trace.launches
    pairs = [("kernels", lambda l: sorted(set(l["kernel"]))), ("grids", lambda l: sorted(set(l["grid"]))),
             ("blocks (threads)", lambda l: sorted(set(l["block"])))]
    for what, of in pairs:
        if len(la) and len(lb) and of(la) != of(lb):
            notes.append(f"{what} differ: {base.label} {listed(of(la))}, {other.label} {listed(of(lb))}")
    if len(la) != len(lb):
        notes.append(f"launches differ: {base.label} {len(la)}, {other.label} {len(lb)}")
    if base.trace.meta["tier"] != other.trace.meta["tier"]:
        notes.append(f"time sources differ ({base.label}: {base.trace.meta['time_source']}; {other.label}: "
                     f"{other.trace.meta['time_source']}): their times are not comparable")
    for run in (base, other):
        if run.trace.warnings:
            kinds = ", ".join(w.kind for w in run.trace.warnings)
            notes.append(f"{run.label} has warnings ({kinds}): its statistics cover what was recorded")
    return notes


def listed(values) -> str:
    return ", ".join(str(v) for v in values)
