"""Two or more traces of a kernel compared: what changed inside it, and how sure that is.

tables.py builds the ``Comparison`` (``compare(a, b, ...)``) from runs.py's per-run
figures, matching.py's scope matching and stats.py's intervals; text.py lays it out for a
terminal, cli.py is ``gwatch diff``, page.py the offline HTML page, charts.py and
widget.py what a notebook shows."""
from .matching import match_scopes
from .tables import Comparison, compare

__all__ = ["Comparison", "compare", "match_scopes"]
