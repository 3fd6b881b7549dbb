"""One module per project: its SOURCES (files taken, pinned by commit) and CASES (launches)."""
