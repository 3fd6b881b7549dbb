"""Autotuned kernels and launch configurations on a real GPU: the autotuner's benchmark
launches run untraced, configs=True traces each config it tries once, labelled, the
chosen one matching kernel.best_config."""
import pytest

torch = pytest.importorskip("torch")

import autotuned
from gwatch_nb import do_trace

pytestmark = pytest.mark.gpu

N = 1 << 16


def _label(config) -> str:
    return (f"SCALE=2 BLOCK={config.kwargs['BLOCK']} num_warps={config.num_warps} "
            f"num_stages={config.num_stages} num_ctas={config.num_ctas}")


@pytest.fixture
def x():
    return torch.arange(N, device="cuda", dtype=torch.float32)


def test_benchmark_launches_run_untraced_and_the_chosen_launch_carries_its_config(x):
    autotuned.add_one.cache.clear()
    out = {}
    trace = do_trace(lambda: out.setdefault("y", autotuned.run(x)), "add_one", scope_name_map=autotuned.SCOPES)
    torch.testing.assert_close(out["y"], x * 2 + 1)
    best = autotuned.add_one.best_config
    launches = trace.launches
    assert len(launches) == 1 and launches.autotune[0] == "chosen"
    assert launches.config[0] == _label(best)
    assert trace.records[0].info["config"] == {"constexprs": {"SCALE": 2, "BLOCK": best.kwargs["BLOCK"]},
                                               "num_warps": best.num_warps, "num_stages": best.num_stages,
                                               "num_ctas": 1, "maxnreg": None}
    assert launches.warps[0] == N // best.kwargs["BLOCK"] * best.num_warps
    tuned = trace.meta["autotune"]["add_one"]
    assert tuned["configs_tried"] == [_label(c).removeprefix("SCALE=2 ") for c in autotuned.CONFIGS]
    assert tuned["benchmark_launches"] > len(autotuned.CONFIGS)  # do_bench runs each config many times
    assert tuned["chosen"] == _label(best).removeprefix("SCALE=2 ")


def test_configs_sweep_traces_each_config_once_and_marks_the_chosen_one(x):
    autotuned.run(x)  # a cached choice: the sweep makes the autotuner benchmark again
    cmp = do_trace(lambda: autotuned.run(x), "add_one", scope_name_map=autotuned.SCOPES, configs=True)
    best = autotuned.add_one.best_config
    sweep = cmp.sweep.launches
    assert sorted(sweep.config) == sorted(_label(c) for c in autotuned.CONFIGS)
    assert len(sweep) == len(autotuned.CONFIGS) and (sweep.autotune == "benchmark").all()
    by_label = {_label(c): c for c in autotuned.CONFIGS}
    for row in sweep.itertuples():
        config = by_label[row.config]
        assert row.warps == N // config.kwargs["BLOCK"] * config.num_warps
    assert cmp.labels[0] == _label(best) + " (chosen)"
    assert sorted(cmp.labels[1:]) == sorted(_label(c) for c in autotuned.CONFIGS if c is not best)
    assert set(cmp.df.scope) >= set(autotuned.SCOPES.values())
    assert not autotuned.add_one.cache_results  # as the user left it
