"""The ``gwatch`` command: read trace archives and reports in a terminal, or convert them.

Errors about the input (missing, truncated, corrupt, wrong-version or foreign files; a
selection the trace does not have: a launch, block, warp or scope) and arguments that
cannot be read print one line on stderr and exit with status 2."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from ._version import __version__
from .comparison.cli import add_diff_command
from .errors import ArchiveError
from .outputs import format_of, supported
from .report import Report, Section, load_report
from .show import (SECTIONS, VIEWS, Selection, SelectionError, format_text, parse_block, parse_numbers,
                   parse_threads, parse_ticks, parse_time, summarize)
from .terminal import can_print, write

EXIT_INPUT_ERROR = 2


class UsageError(Exception):
    """An argument the command cannot use (beyond what argparse checks)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but an argument it cannot read is one line on stderr (exit 2)
    that points at the command's help, not a page of usage before the line that matters."""

    def error(self, message: str):
        self.exit(EXIT_INPUT_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


_SHOW_EXAMPLES = """\
examples:
  gwatch show trace.json                      every view
  gwatch show trace.json --stats --json       per-scope statistics as JSON
  gwatch show trace.json --timeline --block 3 --from 10us --to 25us
  gwatch show trace.json --scope softmax,dot_pv --outliers --top 20
  gwatch show report.json --section 2 --run 1
  gwatch show trace.json --longest softmax --longest-bubble --tid "[0,127]"
  gwatch show trace.json --timeline --sort-by bubble

sections shown when none is given:
  {defaults}.
Times are on each launch's own axis, from its start; a bare number is in
microseconds for --from/--to, in ns (timer ticks) for G-Watch's --stime/--etime.
""".format(defaults=", ".join(s.flags[0] + (f" ({s.only_on[0]})" if s.only_on else "") for s in SECTIONS if s.default))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gwatch",
        description="Read gwatch-nb traces: when each marked scope of a Triton kernel ran on every warp.",
        epilog="Traces come from gwatch_nb.do_trace(...).save('trace.json') or a report rendered to .json. "
               "Run 'gwatch COMMAND --help' for a command's options.")
    parser.add_argument("--version", action="version", version=f"gwatch-nb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    show = commands.add_parser(
        "show", help="print a trace or report as text (or --json) for a terminal or a coding agent",
        description="Print a header, per-scope statistics, a pipeline summary (busy vs idle per warp),\n"
                    "a text timeline of a few warps, concurrency per scope over time and the slowest\n"
                    "scope instances. Statistics cover every launch selected; the timeline and\n"
                    "concurrency show one launch (the first, or --launch N).",
        epilog=_SHOW_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("file", metavar="FILE", help="a trace archive (.json) or a report archive (.json)")
    views = show.add_argument_group("sections (default: " + ", ".join(VIEWS) + ")")
    for section in SECTIONS:
        if section.metavar:
            views.add_argument(*section.flags, action="append", dest=section.name, default=[],
                               metavar=section.metavar, help=section.help.replace("%", "%%"))
        else:
            views.add_argument(*section.flags, action="append_const", dest="views", const=section.name,
                               help=section.help.replace("%", "%%"))
    _add_part_options(show)
    chosen = show.add_argument_group("selection")
    chosen.add_argument("--launch", type=int, metavar="N", help="launch index (0-based; default: the first)")
    chosen.add_argument("--block", action="append", type=_parsed(parse_block), default=[], metavar="X[,Y[,Z]]",
                        help="only this block (repeatable)")
    chosen.add_argument("--warp", action="extend", type=_parsed(parse_numbers), default=[], metavar="LIST",
                        help="only these warps of each block, e.g. 0,2 or 0-3 (repeatable)")
    chosen.add_argument("--scope", action="extend", type=_names, default=[], metavar="NAMES",
                        help="only these scopes, by name or id, e.g. softmax,dot_pv (repeatable)")
    chosen.add_argument("--from", dest="start", type=_parsed(parse_time), metavar="TIME",
                        help="window start, e.g. 12.5us, 800ns, 1ms (bare number: µs)")
    chosen.add_argument("--to", dest="end", type=_parsed(parse_time), metavar="TIME", help="window end")
    chosen.add_argument("--tid", action="extend", dest="warp", type=_parsed(parse_threads), metavar="RANGES",
                        help="G-Watch's thread filter, e.g. '[0,31], [64,95]': the warps holding those threads")
    chosen.add_argument("--stime", dest="start", type=_parsed(parse_ticks), metavar="TICKS",
                        help="G-Watch's window start in timer ticks (ns); same as --from")
    chosen.add_argument("--etime", dest="end", type=_parsed(parse_ticks), metavar="TICKS",
                        help="G-Watch's window end in timer ticks (ns); same as --to")
    chosen.add_argument("--mode", choices=("trace",), help="G-Watch's view kind; only trace exists here")
    layout = show.add_argument_group("output")
    layout.add_argument("--json", action="store_true", help="print the analysis as JSON (times in ns)")
    layout.add_argument("--width", type=_positive, metavar="N",
                        help="line width in characters (default: the terminal's, else 100)")
    layout.add_argument("--rows", "--sample", type=_positive, default=8, metavar="N",
                        help="warps in the timeline (default 8)")
    layout.add_argument("--sort-by", metavar="active|bubble|SCOPE",
                        help="timeline warps: those with the most busy time, idle time or time in SCOPE, first")
    layout.add_argument("--human", action="store_true", help=argparse.SUPPRESS)
    layout.add_argument("--top", type=_positive, default=5, metavar="N",
                        help="rows of idlest warps, gaps and outliers (default 5)")
    show.set_defaults(handler=_show)

    export = commands.add_parser(
        "export", help="write a trace or report as HTML, Perfetto / Chrome trace or agent archive",
        description=f"Convert FILE to OUT; the format follows OUT's extension: {supported()}.")
    export.add_argument("file", metavar="FILE", help="a trace archive or report archive (.json)")
    export.add_argument("out", metavar="OUT", help="where to write, e.g. trace.html or trace.perfetto.json")
    _add_part_options(export)
    export.add_argument("--group-by", choices=("sm", "block"), default="sm",
                        help="Perfetto processes: one per SM (default) or per block; threads are warps")
    export.set_defaults(handler=_export)
    add_diff_command(commands)
    for command in commands.choices.values():
        command.set_defaults(command_parser=command)
    return parser


def _add_part_options(parser: argparse.ArgumentParser) -> None:
    part = parser.add_argument_group("part of a report")
    part.add_argument("--section", metavar="S", help="a section, by number (from 1) or title")
    part.add_argument("--run", type=_positive, metavar="N", help="a run of each chosen section, by number (from 1)")


def _parsed(parse):
    """An argparse type from a parser raising ValueError (argparse shows its message)."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    convert.__name__ = parse.__name__.replace("parse_", "")
    return convert


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


# ------------------------------------------------------------------ commands

def _chosen(report: Report, path: str, section: str | None,
            run: int | None) -> list[tuple[int, int, Section, object]]:
    """(section index, run index, section, trace) of the chosen runs, numbered as in the file."""
    sections = list(enumerate(report.sections))
    if section is not None:
        if section.isdigit() and 1 <= int(section) <= len(sections):
            sections = [sections[int(section) - 1]]
        else:
            sections = [(i, s) for i, s in sections if s.title == section]
            if not sections:
                titles = "; ".join(f"{i + 1}: {s.title}" for i, s in enumerate(report.sections))
                raise SelectionError(f"no section {section!r}; sections: {titles}")
    chosen = []
    for s, part in sections:
        if run is not None and run > len(part.runs):
            raise SelectionError(f"section {part.title!r} has {len(part.runs)} run(s), not {run}")
        runs = range(len(part.runs)) if run is None else [run - 1]
        chosen += [(s, r, part, part.runs[r]) for r in runs]
    if not chosen:
        raise SelectionError(f"{path}: " + ("no runs in this report" if section is None else
                                            f"section {section!r} holds no runs"))
    return chosen


def _show(args) -> int:
    if args.human:
        raise UsageError("--human (ANSI colour) is not supported: gwatch show prints plain text; "
                         "--json gives the data for other tools")
    report = load_report(args.file)
    runs = _chosen(report, args.file, args.section, args.run)
    several = len(list(report.runs())) > 1
    selection = Selection(launch=args.launch, blocks=args.block, warps=args.warp, scopes=args.scope,
                          start_ns=args.start, end_ns=args.end)
    named = {s.name: getattr(args, s.name) for s in SECTIONS if s.metavar}  # e.g. longest=[scopes]
    asked = list(args.views or []) + [name for name, values in named.items() if values]
    views = tuple(dict.fromkeys(asked)) if asked else None  # None: the trace's default sections
    width = args.width or shutil.get_terminal_size((100, 24)).columns
    results = []
    for s, r, section, trace in runs:
        summary = summarize(trace, selection, views, width=width, rows=args.rows, top=args.top,
                            sort_by=args.sort_by, **named)
        results.append(({"section": s + 1, "section_title": section.title, "run": r + 1}, summary))
    if args.json:
        document = {"file": os.fspath(args.file), "title": report.title,
                    "runs": [{**where, **summary} for where, summary in results]}
        write(json.dumps(document, indent=1, allow_nan=False) + "\n")
        return 0
    unicode = can_print("µ█▁·")
    parts = []
    for where, summary in results:
        banner = ""
        if several:
            banner = (f"=== {report.title} | section {where['section']} \"{where['section_title']}\" | "
                      f"run {where['run']} ===\n")
        parts.append(banner + format_text(summary, width=width, unicode=unicode))
    write("\n".join(parts))
    return 0


def _export(args) -> int:
    try:
        format_of(args.out)  # refuse an unknown extension before reading anything
    except ValueError as error:
        raise UsageError(str(error)) from None
    report = load_report(args.file)
    part, sections = Report(report.title), {}
    for s, _, section, trace in _chosen(report, args.file, args.section, args.run):
        if s not in sections:
            sections[s] = part.add_section(section.title)
        sections[s].add_run(trace)
    written = part.render(args.out, group_by=args.group_by)
    print(f"wrote {written}")
    return 0


def main(argv=None) -> int:
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:  # the command's own parser says so: its help is the one to read
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.handler(args)
    except (ArchiveError, SelectionError, UsageError) as error:
        print(f"gwatch: {error}", file=sys.stderr)
    except OSError as error:  # e.g. the output of export cannot be written
        where = f"{error.filename}: " if error.filename else ""
        print(f"gwatch: {where}{error.strerror or error}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
