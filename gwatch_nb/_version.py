"""The package version, in a module that imports nothing (read by pyproject.toml too)."""
__version__ = "0.1.0"
