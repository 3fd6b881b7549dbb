"""``Trace.sites`` as every view shows it (``gwatch show``'s sites section, the timeline's
details panel in the widget and the HTML report): one plain record per reading, grouped by
scope, with one word for how sharp its pair's boundary is.

The word is the one source of the rule; the views print it, none recomputes it."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .trace import Trace

#: (lowest own/span share, word), sharpest first: a pair gets the first word its share reaches.
SHARPNESS = ((1.0, "sharp"), (0.9, "tight"), (0.5, "mixed"), (0.0, "blurred"))
SHARPNESS_RULE = ("sharpness = own / span, the share of the instructions between a pair's readings that are "
                  "the scope's own: " + ", ".join(f"{word} {'100%' if lowest == 1 else f'>= {lowest:.0%}'}"
                                                 for lowest, word in SHARPNESS if lowest > 0)
                  + f", {SHARPNESS[-1][1]} below (its readings time mostly other code)")
#: What each record holds, in the order the views list it (trace.sites' columns, docs/sass/sites.md).
FIELDS = ("kernel", "scope_id", "scope", "site", "kind", "pair", "origin", "line", "index", "moved", "store",
          "instruction", "block", "loop", "span", "own", "other_scopes", "unscoped", "inferred", "sharpness")


def sharpness(own, span) -> str | None:
    """The word for a pair with ``own`` of ``span`` instructions its scope's; None where the
    site has no span (an automatic site)."""
    if own is None or span is None or not span > 0:
        return None
    share = own / span
    return next(word for lowest, word in SHARPNESS if share >= lowest)


def label(record: dict) -> str:
    """A record's sharpness as the views print it: "mixed 56%", or "-" without a span."""
    if record["sharpness"] is None:
        return "-"
    # Halves round up, as the timeline's details (Math.round) print them.
    return f"{record['sharpness']} {math.floor(100 * record['own'] / record['span'] + 0.5)}%"


def _plain(value):
    """JSON-ready: NaN and None to None, integral floats (pandas widens columns with gaps) to int."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def records(trace: "Trace") -> list[dict]:
    """One record per reading (``FIELDS``), in trace.sites' order; empty on tiers without sites.
    ``moved`` is 0 in archives written before readings could move."""
    out = []
    for row in trace.sites.to_dict("records"):
        record = {key: _plain(row.get(key)) for key in FIELDS}
        # trace.sites' "scope" is the id and "name" its name: the records say scope for the name.
        record.update(scope_id=int(row["scope"]), scope=str(row["name"]), moved=record["moved"] or 0)
        record["sharpness"] = sharpness(record["own"], record["span"])
        out.append(record)
    return out


def by_scope(rows: list[dict]) -> list[dict]:
    """The records grouped per (kernel, scope id), in order of each scope's first reading:
    ``{kernel, scope_id, scope, readings}``, readings by pair, then start before end."""
    groups: dict[tuple, dict] = {}
    for row in rows:
        key = (row["kernel"], row["scope_id"])
        if key not in groups:
            groups[key] = {"kernel": row["kernel"], "scope_id": row["scope_id"], "scope": row["scope"], "readings": []}
        groups[key]["readings"].append(row)
    for group in groups.values():
        group["readings"].sort(key=lambda r: (r["pair"], r["kind"] != "start", r["site"]))
    return list(groups.values())
