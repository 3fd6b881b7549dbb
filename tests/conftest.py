import os
import shutil
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

# tests/interpreter needs a process that set TRITON_INTERPRET=1 before importing triton;
# tests/test_interpreter_process.py starts one.
collect_ignore = [] if os.environ.get("TRITON_INTERPRET") == "1" else ["interpreter"]


def pytest_configure(config):
    """One folder of nvdisasm runs and one package cache root (GWATCH_CACHE_DIR: cubins, decoded
    kernels) for the whole session, made before the workers start so that they all inherit their
    names (support/nvdisasm.py); nothing is written to the user's own cache."""
    from support import nvdisasm
    if not hasattr(config, "workerinput"):
        config.nvdisasm_folder = tempfile.mkdtemp(prefix="gwatch-test-nvdisasm-")
        os.environ[nvdisasm.FOLDER] = config.nvdisasm_folder
        config.cache_folder = tempfile.mkdtemp(prefix="gwatch-test-cache-")
        os.environ["GWATCH_CACHE_DIR"] = config.cache_folder
    nvdisasm.keep_library_runs()


def pytest_unconfigure(config):
    for folder in ("nvdisasm_folder", "cache_folder"):
        if hasattr(config, folder):
            shutil.rmtree(getattr(config, folder), ignore_errors=True)


def _gpu_available() -> bool:
    try:
        from gwatch_nb.cuda import driver
        return driver.init() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with its driver and CUPTI; none here (README: GPU tests)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fixture_path():
    return lambda name: os.path.join(FIXTURES, name)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by playwright, for a browser test module (skipped, with the
    reason, where either is missing)."""
    from support.browser import CHROMIUM, CHROMIUM_ARGS, require_browser
    with require_browser().sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def session(browser):
    """A page of its own that reaches nothing outside and records errors (support.browser.Session)."""
    from support.browser import Session
    s = Session(browser)
    yield s
    s.context.close()


# Which group each test belongs to, for the summary `make test` prints: the first that
# matches its node id and keywords (a report carries both, from any worker).
GROUPS = (("gpu", lambda path, keywords: "gpu" in keywords),
          ("browser", lambda path, keywords: "browser" in keywords),
          ("interpreter", lambda path, keywords: "interpreter" in path),
          ("sass", lambda path, keywords: os.path.basename(path).startswith("test_sass")),
          ("core", lambda path, keywords: True))
_tally: dict[str, list] = {}  # group -> [tests, seconds, outcomes]


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    group = next(name for name, matches in GROUPS if matches(path, report.keywords))
    tally = _tally.setdefault(group, [0, 0.0, set()])
    tally[1] += report.duration
    if report.when == "call" or (report.when == "setup" and not report.passed):
        tally[0] += 1
        tally[2].add(report.outcome)


def pytest_terminal_summary(terminalreporter):
    if not _tally:
        return
    terminalreporter.section("test groups: tests, and seconds spent in them (summed over workers)")
    for name, _ in GROUPS:
        if name in _tally:
            count, seconds, outcomes = _tally[name]
            terminalreporter.line(f"{name:12} {count:5d} tests {seconds:8.1f} s   {', '.join(sorted(outcomes))}")
