"""Reports: a title and sections, each holding several traced runs, rendered to one file.

``Report.render(path)`` picks the format by the file's extension: ``.html`` (one offline
page for people), ``.perfetto.json`` (a Perfetto / Chrome trace) or ``.json`` (the
lossless agent archive of the whole report, read back by ``load_report`` and
``gwatch show``; its schema is in docs/FORMAT.md)."""
from __future__ import annotations

import datetime
import json
import os
from typing import Any, Iterable, Iterator

from . import archive
from .errors import ArchiveError
from .trace import Trace

REPORT_FORMAT = "gwatch-nb-report"
REPORT_VERSION = 1
#: Extensions render() understands, longest first (".perfetto.json" before ".json").
FORMATS = {".perfetto.json": "Perfetto / Chrome trace", ".html": "offline HTML page", ".htm": "offline HTML page",
           ".json": "lossless agent archive"}


class Section:
    """A titled group of runs (Traces) shown together, e.g. one kernel under several configs."""

    def __init__(self, title: str = "Intra-kernel trace", runs: Iterable[Trace] = ()):
        self.title = str(title)
        self.runs: list[Trace] = []
        for run in runs:
            self.add_run(run)

    def add_run(self, trace: Trace) -> "Section":
        if not isinstance(trace, Trace):
            raise TypeError(f"add_run expects a Trace (what do_trace returns), got {type(trace).__name__}")
        self.runs.append(trace)
        return self

    def __repr__(self) -> str:
        return f"<Section {self.title!r}: {len(self.runs)} run(s)>"


class Report:
    """A titled report of sections; ``render(path)`` writes it as HTML, Perfetto or an archive."""

    def __init__(self, title: str = "gwatch-nb trace", sections: Iterable[Section] = ()):
        self.title = str(title)
        self.sections: list[Section] = []
        for section in sections:
            self.add_section(section)

    def add_section(self, section: Section | str = "Intra-kernel trace") -> Section:
        """Add a Section (or a new empty one with this title) and return it."""
        if isinstance(section, str):
            section = Section(section)
        if not isinstance(section, Section):
            raise TypeError(f"add_section expects a Section or a title, got {type(section).__name__}")
        self.sections.append(section)
        return section

    def runs(self) -> Iterator[tuple[int, int, Section, Trace]]:
        """(section index, run index, section, trace) for every run, in order."""
        for s, section in enumerate(self.sections):
            for r, trace in enumerate(section.runs):
                yield s, r, section, trace

    def run_label(self, section_index: int, run_index: int) -> str:
        """How a run is named where runs share one view: section title and run number."""
        section = self.sections[section_index]
        if len(self.sections) == 1 and len(section.runs) == 1:
            return ""
        return f"{section.title} · run {run_index + 1}"

    # ------------------------------------------------------------ output

    def render(self, path, group_by: str = "sm") -> str:
        """Write the report; the format follows the extension (see FORMATS). ``group_by``
        ("sm" or "block") chooses the Perfetto processes. Returns the path written."""
        path = os.fspath(path)
        kind = format_of(path)
        if not any(section.runs for section in self.sections):
            raise ValueError("the report has no runs: add_section(...) then section.add_run(trace)")
        if kind == ".perfetto.json":
            from .perfetto import write
            write([(self.run_label(s, r), trace) for s, r, _, trace in self.runs()], path, group_by)
        elif kind in (".html", ".htm"):
            from .html import render_document
            render_document(self.title, [(section.title, list(section.runs)) for section in self.sections], path)
        else:
            partial = f"{path}.partial"
            with open(partial, "w") as f:
                json.dump(self.to_document(), f, separators=(",", ":"), default=archive._json_default)
            os.replace(partial, path)
        return path

    def to_document(self) -> dict:
        """The agent archive as a JSON-ready dict (docs/FORMAT.md, "Report archive")."""
        from . import __version__
        return {
            "format": REPORT_FORMAT, "version": REPORT_VERSION, "title": self.title,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gwatch_nb_version": __version__,
            "sections": [{"title": section.title, "runs": [archive.to_document(run) for run in section.runs]}
                         for section in self.sections],
        }

    @classmethod
    def from_document(cls, document: Any, where: str = "report") -> "Report":
        """A Report from a report archive, or from a plain trace archive (one section, one run)."""
        kind = document.get("format") if isinstance(document, dict) else None
        if kind == archive.FORMAT_NAME:
            trace = archive.from_document(document, where)
            return cls(_title_of(trace), [Section(runs=[trace])])
        if kind != REPORT_FORMAT:
            raise ArchiveError(f"{where}: not a gwatch-nb report or trace archive")
        archive.check_version(document.get("version"), REPORT_VERSION, "report", where)
        title, sections = document.get("title"), document.get("sections")
        if not isinstance(title, str) or not isinstance(sections, list):
            raise ArchiveError(f"{where}: report lacks a title or a sections list")
        report = cls(title)
        for s, item in enumerate(sections):
            if not isinstance(item, dict) or not isinstance(item.get("title"), str) \
                    or not isinstance(item.get("runs"), list):
                raise ArchiveError(f"{where}: section {s} lacks a title or a runs list")
            report.add_section(Section(item["title"], [archive.from_document(run, f"{where}: section {s} run {r}")
                                                       for r, run in enumerate(item["runs"])]))
        return report

    def __repr__(self) -> str:
        runs = sum(len(section.runs) for section in self.sections)
        return f"<Report {self.title!r}: {len(self.sections)} section(s), {runs} run(s)>"


def _title_of(trace: Trace) -> str:
    kernels = sorted(set(trace.launches["kernel"])) if len(trace.launches) else []
    return ", ".join(kernels) or "gwatch-nb trace"


def format_of(path: str) -> str:
    """The FORMATS key matching the path's extension; ValueError naming them otherwise."""
    lower = os.fspath(path).lower()
    for extension in FORMATS:
        if lower.endswith(extension):
            return extension
    supported = ", ".join(f"{ext} ({what})" for ext, what in FORMATS.items() if ext != ".htm")
    raise ValueError(f"cannot tell the format of {path!r} from its extension; supported: {supported}")


def load_report(path, max_bytes: int = archive.MAX_ARCHIVE_BYTES) -> Report:
    """Read a report archive or a trace archive; ArchiveError (one line) for anything else."""
    return Report.from_document(archive.read_json(path, max_bytes), os.fspath(path))
