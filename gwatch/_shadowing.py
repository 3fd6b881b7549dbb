"""PyPI's G-Watch installs a package named ``gwatch`` too: when it is installed beside
gwatch-nb, one of the two ``gwatch`` packages hides the other (or pip wrote one over the
other's files). Say so once, naming both, instead of letting either run silently."""
from __future__ import annotations

import os
import warnings
from importlib import metadata

#: The distributions G-Watch ships its ``gwatch`` package in.
G_WATCH_DISTRIBUTIONS = ("gwatch", "gwatch-cu128")


def g_watch_installed() -> str | None:
    """'gwatch 0.0.35' when a G-Watch distribution is installed here, else None."""
    for name in G_WATCH_DISTRIBUTIONS:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def message(installed: str, face_path: str) -> str:
    return (f"G-Watch ({installed}, from PyPI) is installed beside gwatch-nb, and both provide the 'gwatch' "
            f"package: 'import gwatch' gives gwatch-nb's G-Watch names ({os.path.dirname(face_path)}), and "
            f"G-Watch's own modules are hidden or overwritten. Keep them in separate environments, or "
            f"'pip uninstall {installed.split()[0]}' and reinstall gwatch-nb.")


def warn_if_shadowing(face_path: str) -> None:
    installed = g_watch_installed()
    if installed is not None:
        from gwatch_nb.errors import GwatchWarning
        warnings.warn(message(installed, face_path), GwatchWarning, stacklevel=3)
