"""The shipped front end (gwatch_nb/static/) must be built from the sources in js/.

js/build.mjs stamps each output with a sha256 of its sources; recomputing it here needs
no node, so a source edit without a rebuild fails wherever the suite runs."""
import hashlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "js"
STATIC = ROOT / "gwatch_nb" / "static"
OUTPUTS = ["widget.js", "widget.css", "runtime.js", "report.css", "compare_widget.js", "compare.css"]
STAMP = re.compile(r"^/\* gwatch-nb front end, built by js/build\.mjs from sources sha256:([0-9a-f]{64}) \*/")


def source_hash() -> str:
    """The hash build.mjs computes: sha256 over "path\\0bytes\\0" of each source, sorted by path."""
    files = ["build.mjs", "package.json", "package-lock.json", "tsconfig.json"]
    files += [p.relative_to(JS).as_posix() for p in (JS / "src").rglob("*") if p.is_file()]
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0".encode())
        digest.update((JS / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@pytest.mark.parametrize("name", OUTPUTS)
def test_bundle_is_built_from_the_current_sources(name):
    text = (STATIC / name).read_text(encoding="utf-8")
    stamp = STAMP.match(text)
    assert stamp, f"static/{name} has no source stamp; build it with `cd js && npm ci && node build.mjs`"
    assert stamp.group(1) == source_hash(), (
        f"static/{name} is stale against js/; rebuild with `cd js && npm ci && node build.mjs`")


def test_static_holds_only_what_the_build_writes():
    # A bundle the build no longer writes would ship stale (and weigh on every install).
    assert sorted(p.name for p in STATIC.iterdir()) == sorted(OUTPUTS)


def test_the_chart_library_ships_once():
    # vega, vega-lite and vega-embed weigh ~900 KB: only runtime.js (the charts widget's
    # module and the exported pages' runtime) carries them.
    carriers = [name for name in OUTPUTS if "vega-embed" in (STATIC / name).read_text(encoding="utf-8")]
    assert carriers == ["runtime.js"]


def test_widget_points_at_the_shipped_bundle():
    pytest.importorskip("anywidget", reason="the widget needs anywidget")
    from gwatch_nb.widget import TimelineWidget
    assert str(TimelineWidget._esm) == (STATIC / "widget.js").read_text(encoding="utf-8")
    assert str(TimelineWidget._css) == (STATIC / "widget.css").read_text(encoding="utf-8")


def test_bundles_can_be_inlined_in_html():
    for name in OUTPUTS:
        text = (STATIC / name).read_text(encoding="utf-8").lower()
        assert "</script" not in text and "</style" not in text, name
