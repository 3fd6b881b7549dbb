"""Reports: a title and sections, each holding several traced runs, rendered to one file;
and the one loader of both archive kinds.

``Report.render(path)`` picks the format by the file's extension (outputs.FORMATS):
``.html`` (one offline page for people), ``.perfetto.json`` (a Perfetto / Chrome trace)
or ``.json`` (the lossless agent archive of the whole report; its schema is in
docs/FORMAT.md). ``load_report`` reads a report archive or a trace archive as a Report;
``load`` reads either as one Trace."""
from __future__ import annotations

import datetime
import os
from typing import Any, Iterable, Iterator

from . import archive
from ._version import __version__
from .errors import ArchiveError
from .outputs import write_report
from .trace import Trace

REPORT_FORMAT = "gwatch-nb-report"
REPORT_VERSION = 1


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
        """Write the report; the format follows the extension (outputs.FORMATS). ``group_by``
        ("sm" or "block") chooses the Perfetto processes. Returns the path written."""
        if not any(section.runs for section in self.sections):
            raise ValueError("the report has no runs: add_section(...) then section.add_run(trace)")
        return write_report(self, path, group_by=group_by)

    def to_document(self) -> dict:
        """The agent archive as a JSON-ready dict (docs/FORMAT.md, "Report archive")."""
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


def load_report(path, max_bytes: int = archive.MAX_ARCHIVE_BYTES) -> Report:
    """Read a report archive or a trace archive; ArchiveError (one line) for anything else."""
    return Report.from_document(archive.read_json(path, max_bytes), os.fspath(path))


def load(path, run: int | None = None, max_bytes: int = archive.MAX_ARCHIVE_BYTES) -> Trace:
    """One Trace from a trace archive (``Trace.save``) or a report archive (``render("x.json")``).

    A report holding several runs needs ``run``: its number (from 1) counting the runs of
    all sections in order, as ``gwatch show`` banners them; ArchiveError (one line) otherwise."""
    path = os.fspath(path)
    runs = [trace for _, _, _, trace in load_report(path, max_bytes).runs()]
    if run is None:
        if len(runs) == 1:
            return runs[0]
        raise ArchiveError(f"{path}: the report holds {len(runs)} runs; choose one with load(path, run=N) "
                           "(N from 1), or read them all with gwatch_nb.load_report(path)")
    if isinstance(run, bool) or not isinstance(run, int) or not 1 <= run <= len(runs):
        raise ArchiveError(f"{path}: run={run!r} is not a run of this file (it holds runs 1 to {len(runs)})")
    return runs[run - 1]
