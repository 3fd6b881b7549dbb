"""Printing to a terminal for the ``gwatch`` commands: text that stops quietly when the
reader goes away, and whether the terminal can show a set of characters."""
from __future__ import annotations

import os
import sys


def write(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, less) has gone; stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def can_print(characters: str) -> bool:
    try:
        characters.encode(sys.stdout.encoding or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False
