"""The markdown table of a corpus run (run_corpus.py's results.json), a line per case:
  python tests/third_party/table.py RESULTS.json"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

COLUMNS = ("ptx", "sass", "auto")


def _cell(run: dict | None, tier: str) -> str:
    if run is None:
        return ""
    if run.get("crashed"):
        return "crashed: " + run["crashed"][:80]
    result = run.get("tiers", {}).get(tier)
    return result["verdict"] if result else ""


def table(results: dict) -> str:
    from third_party import cases
    origin = {c.name: c.source for c in cases()}
    lines = ["| kernel | from | ptx | sass | auto | unmarked (sass, auto=True) |", "| --- | --- | --- | --- | --- | --- |"]
    tally = {column: Counter() for column in COLUMNS + ("unmarked",)}
    for name, runs in results.items():
        cells = [_cell(runs.get("marked"), t) for t in COLUMNS] + [_cell(runs.get("unmarked"), "sass")]
        for column, cell in zip(tally, cells):
            if cell:
                tally[column]["clean" if cell.startswith("clean") else "not"] += 1
        lines.append(f"| {name} | {origin.get(name, '?')} | " + " | ".join(cells) + " |")
    summary = ", ".join(f"{column} {t['clean']} of {t['clean'] + t['not']} clean" for column, t in tally.items())
    return summary + "\n\n" + "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(table(json.load(f)))
