"""Output formats: which writer each file extension gets, and the one way files are written.

Every file gwatch-nb writes (a report, a trace archive, an HTML page, a Perfetto trace)
goes through ``atomic_write``: it is written beside its destination and renamed over it
once complete, so a reader never sees half a file and an interrupted write leaves the
old file as it was. ``FORMATS`` is the table ``Report.render``, ``File.render``,
``Trace.save / to_html / to_perfetto``, ``Comparison.to_html`` and ``gwatch export`` all read."""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterator

import numpy as np

if TYPE_CHECKING:
    from .comparison import Comparison
    from .report import Report
    from .trace import Trace


@contextlib.contextmanager
def atomic_write(path) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` only once the block completes without error.

    An OSError about the file beside it (a folder that does not exist, a folder in the
    way) names ``path``: the user never wrote the name of the temporary file."""
    path = os.fspath(path)
    partial = f"{path}.partial"
    try:
        with open(partial, "wb") as out:
            yield out
        os.replace(partial, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
        if isinstance(error, OSError) and error.filename == partial and error.errno is not None:
            raise type(error)(error.errno, error.strerror, path) from None
        raise


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_json(document: Any, out: BinaryIO) -> None:
    """Compact JSON of a document whose numbers may be numpy scalars."""
    out.write(json.dumps(document, separators=(",", ":"), default=_json_default).encode())


# ------------------------------------------------------------------ the writers

def _archive_report(report: "Report", out: BinaryIO, options: dict) -> None:
    write_json(report.to_document(), out)


def _archive_trace(trace: "Trace", out: BinaryIO, options: dict) -> None:
    from .archive import to_document
    write_json(to_document(trace), out)


def _html_report(report: "Report", out: BinaryIO, options: dict) -> None:
    from .html import page
    out.write(page(report.title, [(s.title, list(s.runs)) for s in report.sections]).encode())


def _html_trace(trace: "Trace", out: BinaryIO, options: dict) -> None:
    from .html import trace_page
    out.write(trace_page(trace, options.get("title")).encode())


def _html_comparison(cmp: "Comparison", out: BinaryIO, options: dict) -> None:
    from .comparison.page import page
    out.write(page(cmp, options.get("title")).encode())


def _perfetto_report(report: "Report", out: BinaryIO, options: dict) -> None:
    from .perfetto import write
    runs = [(report.run_label(s, r), trace) for s, r, _, trace in report.runs()]
    write(runs, out, options.get("group_by", "sm"))


def _perfetto_trace(trace: "Trace", out: BinaryIO, options: dict) -> None:
    from .perfetto import write
    write([("", trace)], out, options.get("group_by", "sm"))


@dataclass(frozen=True)
class OutputFormat:
    """One kind of output file: its name, the extensions that choose it, and its writers
    for a whole report, for one trace and for a comparison of runs, where it has one
    (each given an open binary file)."""
    name: str
    extensions: tuple[str, ...]
    description: str
    write_report: Callable[["Report", BinaryIO, dict], None]
    write_trace: Callable[["Trace", BinaryIO, dict], None]
    write_comparison: Callable[["Comparison", BinaryIO, dict], None] | None = None


#: The output formats; a path's format is the first whose extension ends it
#: (".perfetto.json" is looked at before ".json").
FORMATS = (
    OutputFormat("perfetto", (".perfetto.json",), "Perfetto / Chrome trace", _perfetto_report, _perfetto_trace),
    OutputFormat("html", (".html", ".htm"), "offline HTML page", _html_report, _html_trace, _html_comparison),
    OutputFormat("archive", (".json",), "lossless agent archive", _archive_report, _archive_trace),
)


def supported() -> str:
    """The extensions and what they write, for messages and help texts."""
    return ", ".join(f"{f.extensions[0]} ({f.description})" for f in FORMATS)


def format_of(path) -> OutputFormat:
    """The format a path's extension chooses; ValueError naming the supported ones otherwise."""
    lower = os.fspath(path).lower()
    for output in FORMATS:
        if lower.endswith(output.extensions):
            return output
    raise ValueError(f"cannot tell the format of {os.fspath(path)!r} from its extension; supported: {supported()}")


def named(name: str) -> OutputFormat:
    return next(f for f in FORMATS if f.name == name)


def write_report(report: "Report", path, **options) -> str:
    """Write a report in the format its extension chooses; returns the path written."""
    output = format_of(path)
    with atomic_write(path) as out:
        output.write_report(report, out, options)
    return os.fspath(path)


def write_trace(trace: "Trace", path, name: str, **options) -> None:
    """Write one trace in the named format, whatever the path's extension."""
    with atomic_write(path) as out:
        named(name).write_trace(trace, out, options)


def write_comparison(cmp: "Comparison", path, name: str, **options) -> None:
    """Write a comparison in the named format, whatever the path's extension."""
    with atomic_write(path) as out:
        named(name).write_comparison(cmp, out, options)
