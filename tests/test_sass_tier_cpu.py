"""The sass tier where no GPU is: its options (do_trace's and the magic's), the one-line error
before anything runs, and the real H200 traces it made (tests/fixtures/attention_sass*_h200.json)."""
import os

import pytest

from gwatch_nb import NoGPUError, do_trace, load
from gwatch_nb.cuda import driver
from gwatch_nb.errors import OptionError
from gwatch_nb.options import TraceOptions, tier_choices
from gwatch_nb.sass.instrument import AUTO_SCOPE_BASE, SITE_COLUMNS
from gwatch_nb.tiers import TIERS


def _has_gpu() -> bool:
    try:
        return driver.init() > 0
    except NoGPUError:
        return False


no_gpu = pytest.mark.skipif(_has_gpu(), reason="checks a machine without a GPU")


# ---------------------------------------------------------------- options

def test_sass_is_a_tier_and_auto_belongs_to_it():
    assert "sass" in tier_choices()
    assert TraceOptions("attn", tier="sass", auto=True).auto
    for tier in ("ptx", "interpreter"):
        with pytest.raises(OptionError) as caught:
            TraceOptions("attn", tier=tier, auto=True)
        assert caught.value.option == "auto" and "\n" not in str(caught.value)
        assert str(caught.value).startswith("auto=True needs instrumentation_tier='sass'")
        assert str(caught.value).endswith(f"this trace asks for {tier!r}")
    with pytest.raises(OptionError, match=r"^auto='yes' must be True or False$"):
        TraceOptions("attn", tier="sass", auto="yes")


def test_do_trace_refuses_auto_on_the_ptx_tier_before_fn_runs():
    ran = []
    with pytest.raises(OptionError) as caught:
        do_trace(fn=lambda: ran.append(1), kernel_name_pattern="attn_fwd", instrumentation_tier="ptx", auto=True)
    assert caught.value.option == "auto" and not ran


@no_gpu
@pytest.mark.parametrize("auto", [False, True])
def test_do_trace_on_the_sass_tier_without_a_gpu_fails_before_fn_runs(auto):
    ran = []
    with pytest.raises(NoGPUError) as caught:
        do_trace(fn=lambda: ran.append(1), kernel_name_pattern="attn_fwd", instrumentation_tier="sass", auto=auto)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("no CUDA driver on this machine")
    assert not ran


# ---------------------------------------------------------------- the magic

@pytest.fixture(scope="module")
def magic():
    """(parse_argstring, the magic's class, its FLAGS), where IPython is installed."""
    pytest.importorskip("IPython")
    from IPython.core.magic_arguments import parse_argstring
    from gwatch_nb.magic import FLAGS, GwatchMagics
    return parse_argstring, GwatchMagics, FLAGS


@pytest.fixture(scope="module")
def shell(magic):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext gwatch_nb", store_history=False)
    return shell


def _usage_error():
    from IPython.core.error import UsageError
    return UsageError


def test_the_magic_parses_the_sass_tier_and_auto(magic):
    parse_argstring, GwatchMagics, FLAGS = magic
    args = parse_argstring(GwatchMagics.gwatch, '-k ".*attn_fwd.*" -t sass --auto')
    assert (args.tier, args.auto) == ("sass", True)
    args = parse_argstring(GwatchMagics.gwatch, "-k attn -t sass")
    assert (args.tier, args.auto) == ("sass", False)
    assert FLAGS["auto"] == "--auto" and FLAGS["instrumentation_tier"] == "-t"


@pytest.mark.parametrize("tier", ["ptx", "interpreter"])
def test_the_magic_refuses_auto_off_the_sass_tier_before_the_cell_runs(shell, tier):
    shell.user_ns.pop("ran", None)
    with pytest.raises(_usage_error()) as caught:
        shell.run_cell_magic("gwatch", f"-k attn -t {tier} --auto", "ran = True")
    message = str(caught.value)
    assert message.startswith("--auto ") and "\n" not in message and repr(tier) in message
    assert "ran" not in shell.user_ns


@no_gpu
def test_the_magic_on_the_sass_tier_without_a_gpu_says_so_before_the_cell_runs(shell):
    shell.user_ns.pop("ran", None)
    with pytest.raises(_usage_error()) as caught:
        shell.run_cell_magic("gwatch", "-k attn -t sass --auto", "ran = True")
    message = str(caught.value)
    assert message.startswith("no CUDA driver on this machine") and "\n" not in message
    assert "-t 'interpreter'" in message and "instrumentation_tier" not in message
    assert "ran" not in shell.user_ns


@pytest.mark.parametrize("flags, starts", [("-t ptx --stalls", "--stalls needs instrumentation_tier='sass'"),
                                           ("-t sass --stalls --stall-period 3", "--stall-period 3 must be N"),
                                           ("-t sass --stall-period 8", "--stall-period 8 applies only with")])
def test_the_magic_refuses_a_bad_stall_option_before_the_cell_runs(shell, flags, starts):
    shell.user_ns.pop("ran", None)
    with pytest.raises(_usage_error()) as caught:
        shell.run_cell_magic("gwatch", f"-k attn {flags}", "ran = True")
    assert str(caught.value).startswith(starts) and "\n" not in str(caught.value)
    assert "ran" not in shell.user_ns


# ---------------------------------------------------------------- the H200's traces

#: The automatic sites' kinds (waits.py); the kernel's own site takes no readings.
AUTO_KINDS = {"mbarrier", "wgmma", "barrier", "async copy", "loop"}
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


@pytest.fixture(scope="module", params=["attention_sass_h200.json", "attention_sass_auto_h200.json"])
def fixture_trace(request):
    return request.param, load(os.path.join(FIXTURES, request.param))


def test_fixture_is_a_full_sass_trace(fixture_trace):
    _, trace = fixture_trace
    assert trace.meta["tier"] == "sass" and trace.meta["time_source"] == TIERS["sass"].time_source
    assert len(trace.df) > 0 and trace.warps.exited.all()
    assert (trace.warps.dropped == 0).all() and (trace.launches.events_dropped == 0).all()
    assert (trace.launches.missing_warps == 0).all()
    assert not trace.meta["problems"]


def test_fixture_instances_lie_inside_their_warps_lifetime(fixture_trace):
    _, trace = fixture_trace
    keys = ["kernel", "launch", "block_x", "block_y", "block_z", "warp"]
    joined = trace.df.merge(trace.warps[keys + ["start_ns", "end_ns"]], on=keys, suffixes=("", "_warp"),
                            how="left", validate="many_to_one")
    assert joined.start_ns_warp.notna().all()
    assert (joined.start_ns >= joined.start_ns_warp).all() and (joined.end_ns <= joined.end_ns_warp).all()
    assert (joined.start_ns <= joined.end_ns).all()


def test_fixture_sites_say_where_every_reading_went(fixture_trace):
    name, trace = fixture_trace
    sites = trace.sites
    assert len(sites) == sum(k["readings"] for k in trace.meta["sass"].values()) > 0
    # recorded before the `moved` column existed; every other column of SITE_COLUMNS is there
    assert set(SITE_COLUMNS) - {"moved"} <= set(sites.columns) <= set(SITE_COLUMNS) | {"name"}
    assert sites.site.tolist() == list(range(len(sites)))
    automatic = sites[sites.origin != "marker"]
    if "auto" in name:
        assert set(automatic.origin) <= AUTO_KINDS and {"loop", "barrier", "wgmma"} <= set(automatic.origin)
        assert (automatic.scope >= AUTO_SCOPE_BASE).all()
        assert (sites[sites.origin == "marker"].scope < AUTO_SCOPE_BASE).all()
        names = {int(k): v for k, v in trace.meta["scope_names"].items()}
        assert set(automatic.scope) == set(names)
        assert all(n.startswith(f"{origin} ") for n, origin in zip(automatic.name, automatic.origin))
        loops = [n for n in names.values() if n.startswith("loop ")]
        assert loops and all(n.split(" ", 1)[1].startswith("attention.py:") for n in loops)
        assert set(trace.df.scope.astype(str)) >= set(names.values()) | {"load_kv", "dot_qk", "softmax", "dot_pv"}
    else:
        assert automatic.empty and not trace.meta["scope_names"]
        assert set(trace.df.scope.astype(str)) == {"load_kv", "dot_qk", "softmax", "dot_pv"}


def test_the_sass_tier_names_the_gpus_it_supports():
    from gwatch_nb.cuda.sass_session import supported
    a100 = {"device": "NVIDIA A100-SXM4-80GB", "compute_capability_major": 8, "compute_capability_minor": 0}
    assert supported(a100) == ("the sass tier supports sm_90 (H100/H200); this GPU, NVIDIA A100-SXM4-80GB, is sm_80; "
                               "use instrumentation_tier='ptx'")
    assert supported({"device": "NVIDIA H200", "compute_capability_major": 9, "compute_capability_minor": 0}) is None
