"""PyPI's G-Watch ships a package named ``gwatch`` too. When its distribution is installed
beside gwatch-nb, importing the face says so, naming both, instead of shadowing silently
(a real dist-info directory read by importlib.metadata, in a fresh interpreter)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _import_gwatch(extra_path: str | None) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (ROOT, extra_path, os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-W", "always", "-c", "import gwatch; print(gwatch.__file__)"],
                          env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, timeout=120)


def test_g_watch_installed_beside_is_named(tmp_path):
    info = tmp_path / "gwatch-0.0.35.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gwatch\nVersion: 0.0.35\n")
    done = _import_gwatch(str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.path.join(ROOT, "gwatch", "__init__.py")
    assert "GwatchWarning: G-Watch (gwatch 0.0.35, from PyPI) is installed beside gwatch-nb" in done.stderr
    assert "pip uninstall gwatch" in done.stderr


def test_alone_the_face_says_nothing():
    done = _import_gwatch(None)
    assert done.returncode == 0 and "G-Watch" not in done.stderr, done.stderr
