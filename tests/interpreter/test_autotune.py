"""Launch configurations and autotuned kernels on the interpreter tier (run by
tests/test_interpreter_process.py in a process started with TRITON_INTERPRET=1)."""
import pytest
import torch

import autotuned
from gwatch_nb import NoMatchingKernelError, do_trace, load
from gwatch_nb.cli import main
from gwatch_nb.serializers import timeline_payload
from gwatch_nb.errors import OptionError


def _expected_label(config, scale=2) -> str:
    options = f"num_warps={config.num_warps} num_stages={config.num_stages} num_ctas={config.num_ctas}"
    return f"SCALE={scale} BLOCK={config.kwargs['BLOCK']} {options}"


def _fresh_tuning():
    autotuned.add_one.cache.clear()


def test_benchmark_launches_run_untraced_and_the_chosen_launch_is_kept(tmp_path):
    _fresh_tuning()
    x = torch.arange(100, dtype=torch.float32)
    out = {}
    trace = do_trace(lambda: out.setdefault("y", autotuned.run(x)), "add_one", scope_name_map=autotuned.SCOPES,
                     instrumentation_tier="interpreter")
    torch.testing.assert_close(out["y"], x * 2 + 1)
    best = autotuned.add_one.best_config
    launches = trace.launches
    assert len(launches) == 1 and launches.autotune[0] == "chosen"
    assert launches.config[0] == _expected_label(best)
    assert len(trace.warps) == -(-100 // best.kwargs["BLOCK"])  # the chosen config's grid, not a benchmark's
    tuned = trace.meta["autotune"]["add_one"]
    assert tuned["benchmark_launches"] == len(autotuned.CONFIGS) * autotuned.BENCH_RUNS
    assert tuned["configs_tried"] == [_expected_label(c).removeprefix("SCALE=2 ") for c in autotuned.CONFIGS]
    assert tuned["chosen"] == _expected_label(best).removeprefix("SCALE=2 ")
    assert not trace.overhead["measured"] and "interpreter" in trace.overhead["reason"]
    trace.save(tmp_path / "t.json")
    again = load(tmp_path / "t.json")
    assert again.launches.config.tolist() == launches.config.tolist()
    assert again.meta["autotune"] == trace.meta["autotune"] and again.overhead == trace.overhead


def test_every_view_states_the_config_the_autotuning_and_the_untraced_cost(tmp_path, capsys):
    _fresh_tuning()
    x = torch.arange(80, dtype=torch.float32)
    trace = do_trace(lambda: autotuned.run(x), "add_one", scope_name_map=autotuned.SCOPES,
                     instrumentation_tier="interpreter")
    label = _expected_label(autotuned.add_one.best_config)
    tuned = f"autotune add_one: {len(autotuned.CONFIGS)} configs benchmarked"
    cost = "tracing cost: not measured (the interpreter tier records host time"
    trace.save(tmp_path / "t.json")
    assert main(["show", str(tmp_path / "t.json")]) == 0
    text = capsys.readouterr().out
    assert f"config {label} (chosen)" in text and tuned in text and cost in text
    assert main(["show", str(tmp_path / "t.json"), "--json"]) == 0
    header = __import__("json").loads(capsys.readouterr().out)["runs"][0]["header"]
    assert header["launches"][0]["config"] == label and header["overhead"] == trace.overhead
    trace.to_html(tmp_path / "t.html")
    page = (tmp_path / "t.html").read_text()
    assert f"config {label}" in page and tuned in page and cost in page
    payload = timeline_payload(trace)
    assert payload["launches"][0]["config"] == label
    assert payload["notes"][0].startswith(tuned) and payload["notes"][-1].startswith(cost)


def test_a_cached_choice_is_traced_without_benchmarking():
    x = torch.arange(64, dtype=torch.float32)
    autotuned.run(x)  # tunes for n=64
    trace = do_trace(lambda: autotuned.run(x), "add_one", instrumentation_tier="interpreter")
    tuned = trace.meta["autotune"]["add_one"]
    assert tuned["configs_tried"] == [] and tuned["benchmark_launches"] == 0
    assert trace.launches.config.tolist() == [_expected_label(autotuned.add_one.best_config)]


def test_configs_sweep_traces_each_config_once_and_marks_the_chosen_one():
    x = torch.arange(96, dtype=torch.float32)
    autotuned.run(x)  # a cached choice: the sweep must make the autotuner benchmark again
    cmp = do_trace(lambda: autotuned.run(x), "add_one", scope_name_map=autotuned.SCOPES,
                   instrumentation_tier="interpreter", configs=True)
    best = autotuned.add_one.best_config
    sweep = cmp.sweep.launches
    assert sorted(sweep.config) == sorted(_expected_label(c) for c in autotuned.CONFIGS)
    assert (sweep.autotune == "benchmark").all()
    assert sweep.warps.tolist() == [-(-96 // c.kwargs["BLOCK"]) for c in autotuned.CONFIGS]
    assert cmp.labels[0] == _expected_label(best) + " (chosen)"
    assert sorted(cmp.labels[1:]) == sorted(_expected_label(c) for c in autotuned.CONFIGS if c is not best)
    assert not any("(chosen)" in label for label in cmp.labels[1:])
    assert set(cmp.df.scope) >= set(autotuned.SCOPES.values())


def test_a_sweep_of_a_kernel_that_is_not_autotuned_says_so():
    from examples import attention
    q = torch.randn(1, 1, 128, 64, dtype=torch.float16)
    with pytest.raises(NoMatchingKernelError, match=r"configs=True: no autotuner benchmarked a kernel matching "
                                                    r"'attn_fwd' while fn ran"):
        do_trace(lambda: attention.attention(q, q, q), "attn_fwd", instrumentation_tier="interpreter", configs=True)


def test_a_plain_kernel_carries_its_constexprs():
    from examples import attention
    q = torch.randn(1, 1, 128, 64, dtype=torch.float16)
    trace = do_trace(lambda: attention.attention(q, q, q), "attn_fwd", instrumentation_tier="interpreter")
    config = trace.records[0].info["config"]
    assert config["constexprs"]["HEAD_DIM"] == 64 and "autotune" not in trace.records[0].info
    assert "num_warps" not in config  # the interpreter has no warps, and no autotuner said


@pytest.mark.parametrize("option, value", [("configs", "yes"), ("baseline", -1), ("baseline", 2.5)])
def test_bad_sweep_and_baseline_options_are_one_line_errors(option, value):
    with pytest.raises(OptionError, match=option):
        do_trace(lambda: None, "x", instrumentation_tier="interpreter", **{option: value})
