"""Comparisons of the H200 comparison fixtures (tests/make_gpu_fixtures.py --comparisons-only):
the same attention kernel at BLOCK_N=64 and 128, and a sweep of five configurations."""
import json
import os

import pytest

import gwatch_nb
from conftest import FIXTURES
from gwatch_nb.cli import main

PAIR = [os.path.join(FIXTURES, f"attention_bn{n}_h200.json") for n in (64, 128)]
SWEEP = os.path.join(FIXTURES, "attention_sweep_h200.json")


def _need(*paths):
    missing = [os.path.basename(p) for p in paths if not os.path.exists(p)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not captured yet: run tests/make_gpu_fixtures.py tests/fixtures "
                    "--comparisons-only on the GPU")


def test_twice_the_keys_per_iteration_make_each_iteration_longer():
    _need(*PAIR)
    cmp = gwatch_nb.compare(*(gwatch_nb.load(p) for p in PAIR), labels=("BLOCK_N=64", "BLOCK_N=128"))
    changed = cmp.df[cmp.df["run"] == "BLOCK_N=128"].set_index("scope")
    assert list(changed.index) == ["load_kv", "dot_qk", "softmax", "dot_pv"]
    # Each softmax instance computes on twice the keys with plain arithmetic: longer, and the
    # interval says so (dot_qk and load_kv issue asynchronous work, so theirs may not double).
    assert changed.loc["softmax", "ci_low"] > 0 and "longer in BLOCK_N=128" in changed.loc["softmax", "verdict"]
    # Half the iterations at BLOCK_N=128 (2048 / 128 = 16 of 32): only 0-15 are compared.
    assert sorted(cmp.iterations["seq"].unique()) == list(range(16))
    assert any("seq 16-31 not in every run" in n for n in cmp.notes)
    duration = cmp.kernel.set_index(["measure", "run"]).loc[("duration_ns", "BLOCK_N=128")]
    assert duration["samples"] == 5 and duration["ci_low"] == duration["ci_low"]  # five launches: an interval
    assert duration["samples_of"] == "launches"


def test_the_kernel_table_names_what_its_columns_hold(capsys):
    _need(*PAIR)
    assert main(["diff", *PAIR]) == 0
    text = capsys.readouterr().out
    kernel = text[text.index("\nkernel:\n"):text.index("\nper warp role")].strip().splitlines()[1:]
    header, rows = kernel[0], kernel[1:]
    assert header.split()[:4] == ["measure", "run", "value", "samples"] and "units" not in header
    cmp = gwatch_nb.compare(*(gwatch_nb.load(p) for p in PAIR))
    for row, (_, expected) in zip(rows, cmp.kernel.iterrows()):
        # A time is printed with its unit, under the measure in words (not duration_ns over µs).
        assert row.startswith(expected["what"]) and "_ns" not in row
        assert f"{expected['samples']:,} {expected['samples_of']}" in row
    assert [r["samples_of"] for _, r in cmp.kernel.iterrows()][::2] == ["launches", "(SM, launch) pairs", "launches",
                                                                         "warps"]


def test_the_sweep_compares_every_configuration_with_the_first(capsys):
    _need(SWEEP)
    assert main(["diff", SWEEP, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["labels"][0] == "BLOCK_N=32 num_warps=4 num_stages=3" and len(document["labels"]) == 5
    durations = [r for r in document["kernel"] if r["measure"] == "duration_ns"]
    assert len(durations) == 5 and all(r["ci_low"] is not None for r in durations[1:])
