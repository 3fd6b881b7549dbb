"""The tiers behind one protocol, and the frozen options every tier reads (a machine
without a GPU: the interpreter-tier runs are in tests/interpreter)."""
import dataclasses

import pytest

from gwatch_nb import NoGPUError, api, tiers
from gwatch_nb.cuda import driver
from gwatch_nb.cuda.session import TraceSession
from gwatch_nb.errors import OptionError
from gwatch_nb.interpreter import InterpreterRecorder
from gwatch_nb.options import TraceOptions, tier_choices


def _has_gpu() -> bool:
    try:
        return driver.init() > 0
    except NoGPUError:
        return False


@pytest.mark.parametrize("cls, tier", [(TraceSession, "ptx"), (InterpreterRecorder, "interpreter")])
def test_every_tier_implements_the_protocol(cls, tier):
    options = TraceOptions("k", tier, capacity=8, launches="first", scopes=frozenset({3}))
    session = tiers.TIERS[tier].open(options)
    assert type(session) is cls and isinstance(session, tiers.TracingSession)
    assert session.tier == tier and session.options is options and session.interrupted is False
    assert session.records() == [] and session.problems() == [] and dict(session.launched) == {}
    # Nothing a tier answers is an attribute someone else sets: the class itself says its tier.
    assert cls.tier == tier


def test_the_tier_table_is_what_options_accept():
    assert tier_choices() == ("auto", *tiers.TIERS) and api.SUPPORTED_TIERS == tuple(tiers.TIERS)


def test_options_are_frozen_and_normalised():
    options = TraceOptions(r"attn_\w+", launches="3")
    assert options.pattern.search("attn_fwd") and options.max_launches == 3 and options.tier == "auto"
    assert TraceOptions("k", launches="first").max_launches == 1 and TraceOptions("k").max_launches is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.capacity = 4


@pytest.mark.parametrize("arguments, message", [
    ({"kernel_name_pattern": "("}, r"kernel_name_pattern='\(' is not a regular expression"),
    ({"tier": "nvbit"}, r"instrumentation_tier='nvbit' is not supported; supported: auto, ptx, sass, interpreter"),
    ({"tier": "ptx", "auto": True}, r"auto=True needs instrumentation_tier='sass'"),
    ({"capacity": 1}, r"capacity=1 must be at least 2 events per warp"),
    ({"capacity": True}, r"capacity=True must be a whole number"),
    ({"launches": "-2"}, r"launches='-2' must be 'first', 'all' or a positive integer"),
    ({"scopes": {1, 2}}, r"scopes=\{1, 2\} must be the frozenset"),
])
def test_bad_options_name_the_option_the_value_and_why(arguments, message):
    with pytest.raises(OptionError, match=message) as caught:
        TraceOptions(**{"kernel_name_pattern": "k", **arguments})
    flags = {"kernel_name_pattern": "-k", "instrumentation_tier": "-t", "capacity": "-c", "launches": "-l",
             "scopes": "-s", "auto": "--auto"}
    assert caught.value.spelled(flags).startswith(flags[caught.value.option] + " ")


@pytest.mark.skipif(_has_gpu(), reason="checks the decision on a machine without a GPU")
def test_auto_is_the_interpreter_without_a_gpu():
    assert tiers.resolve("auto") == "interpreter" and tiers.resolve("ptx") == "ptx"
    session = api.start(TraceOptions("k", "auto"))
    try:
        assert session.tier == "interpreter" and session.options.tier == "interpreter"
    finally:
        session.stop()


def test_no_module_but_tiers_branches_on_a_tier_name():
    # A tier's facts live in its record: a comparison with a tier's name elsewhere is a fact
    # a new tier would have to find and repeat.
    import re
    from pathlib import Path
    package = Path(tiers.__file__).parent
    name = "|".join(tiers.TIERS)
    branch = re.compile(rf"""[=!]=\s*["']({name})["']|\bin \([^)]*["']({name})["']""")
    found = [f"{path.relative_to(package)}:{n}: {line.strip()}"
             for path in sorted(package.rglob("*.py")) if path.name != "tiers.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if branch.search(line)]
    assert found == []


def test_a_session_problem_is_one_of_the_known_kinds():
    assert tiers.Problem("ptxas_failed", "k", "k: ptxas rejected it").kind == "ptxas_failed"
    with pytest.raises(ValueError, match="unknown session problem kind 'unclosed'"):
        tiers.Problem("unclosed", "k", "a marker problem is not a session problem")


@pytest.mark.parametrize("name", list(tiers.TIERS))
def test_a_trace_takes_its_time_source_and_clock_from_its_tier_record(name):
    from gwatch_nb.trace import Trace
    tier = tiers.TIERS[name]
    trace = Trace([], meta={"tier": name})
    assert trace.meta["time_source"] == tier.time_source and tiers.of(trace) is tier
    assert tier.host_clock == (name == "interpreter") and tier.has_sites == (name == "sass")
