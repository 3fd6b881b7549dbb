"""``gwatch diff``: two or more traced runs compared, as text or JSON (registered by ../cli.py)."""
from __future__ import annotations

import argparse
import json
import os

from ..report import load_report
from ..show import SelectionError
from ..terminal import write

_EXAMPLES = """\
examples:
  gwatch diff before.json after.json
  gwatch diff before.json after.json --scope softmax --json
  gwatch diff sweep_report.json                 every run of a report, each against the first
  gwatch diff a.json b.json c.json --labels 64,128,256

Each run is compared with the first: per scope count, p50, p95, mean, total and share of
warp time, the change of the mean with a 95% percentile-bootstrap interval over warps, and
a verdict only where that interval excludes 0; then kernel duration, busy time per SM,
tail and idle share, per warp role and per iteration. Exit status 2 on a bad input.
"""


def add_diff_command(commands) -> None:
    diff = commands.add_parser(
        "diff", help="compare two or more traced runs: per-scope changes with confidence intervals",
        description="Compare traced runs of a kernel, each with the first.",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    diff.add_argument("files", nargs="+", metavar="FILE",
                      help="trace archives or report archives (.json); a report adds each of its runs")
    diff.add_argument("--scope", action="extend", type=_names, default=[], metavar="NAMES",
                      help="only these scopes in the scope, role and iteration tables, e.g. softmax,dot_pv")
    diff.add_argument("--labels", type=_names, metavar="A,B,...", help="names of the runs (default: from the files)")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON (times in ns)")
    diff.set_defaults(handler=run_diff)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _runs(paths: list[str]) -> list[tuple[str, object]]:
    """(label, trace) for every run of every file: a file of one run is named by the file,
    a report's runs by their section (and run number), after the file if there are several."""
    runs = []
    for path in paths:
        report = load_report(path)
        found = list(report.runs())
        name = os.path.basename(path)
        for s, r, section, trace in found:
            if len(found) == 1:
                runs.append((name, trace))
                continue
            label = section.title if len(section.runs) == 1 else f"{section.title} · run {r + 1}"
            runs.append((f"{name}: {label}" if len(paths) > 1 else label, trace))
    return runs


def run_diff(args) -> int:
    from .tables import compare
    from .text import format_text

    runs = _runs(args.files)
    if len(runs) < 2:
        raise SelectionError(f"{args.files[0]}: holds one run; diff needs two or more (give a second file)")
    labels = args.labels or [label for label, _ in runs]
    if len(labels) != len(runs):
        raise SelectionError(f"--labels names {len(labels)} runs, the files hold {len(runs)}")
    if len(set(labels)) != len(labels):
        labels = [f"{i}: {label}" for i, label in enumerate(labels)]
    cmp = compare([trace for _, trace in runs], labels=labels)
    scopes = None
    if args.scope:
        known = list(cmp.df["scope"].unique())
        unknown = [s for s in args.scope if s not in known]
        if unknown:
            raise SelectionError(f"no scope {', '.join(map(repr, unknown))} shared by the runs; shared: "
                                 f"{', '.join(known) or 'none'}")
        scopes = args.scope
    summary = cmp.to_dict(scopes=scopes)
    if args.json:
        text = json.dumps({"files": args.files, **summary}, indent=1, allow_nan=False) + "\n"
    else:
        text = format_text(summary)
    write(text)
    return 0
