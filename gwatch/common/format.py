"""``gwatch.common.format``: report files (gwatch_nb.report)."""
from gwatch_nb.report import Report, load_report

#: A titled report of sections; ``render(path)`` writes .html, .perfetto.json or the .json archive.
File = Report

__all__ = ["File", "load_report"]
