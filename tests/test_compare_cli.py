"""`gwatch diff` on real H200 traces and reports: the same tables as compare(), as text and
JSON, and one clear line (exit 2) for inputs it cannot compare."""
import json
import os
import subprocess
import sys

import pytest

import gwatch_nb
from conftest import FIXTURES
from gwatch_nb.cli import main
from gwatch_nb import compare
from gwatch_nb.report import Report, Section

SMALL = os.path.join(FIXTURES, "attention_h200.json")
LARGE = os.path.join(FIXTURES, "attention_4k_h200.json")


def diff_json(capsys, *args) -> dict:
    assert main(["diff", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_diff_prints_what_compare_finds():
    done = subprocess.run([sys.executable, "-m", "gwatch_nb.cli", "diff", SMALL, LARGE], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    expected = compare(gwatch_nb.load(SMALL), gwatch_nb.load(LARGE),
                       labels=("attention_h200.json", "attention_4k_h200.json"))
    assert expected.verdicts
    for verdict in expected.verdicts:
        assert verdict in done.stdout
    assert "grids differ" in done.stdout and "per scope:" in done.stdout and "kernel:" in done.stdout


def test_json_holds_the_tables_and_scope_limits_them(capsys):
    document = diff_json(capsys, SMALL, LARGE, "--scope", "softmax", "--labels", "small,large")
    assert document["labels"] == ["small", "large"]
    assert {r["scope"] for r in document["scopes"]} == {"softmax"}
    assert {r["scope"] for r in document["iterations"]} == {"softmax"}
    large = next(r for r in document["scopes"] if r["run"] == "large")
    assert large["ci_low"] > 0 and large["verdict"].startswith("softmax: ")
    assert all(not v.startswith(("load_kv", "dot_qk", "dot_pv")) for v in document["verdicts"])
    assert {r["measure"] for r in document["kernel"]} == {"duration_ns", "sm_busy_ns", "tail_ns", "idle_share"}


def test_labels_do_not_move_the_intervals(capsys):
    plain, named = diff_json(capsys, SMALL, LARGE), diff_json(capsys, SMALL, LARGE, "--labels", "A,B")
    expected = compare(gwatch_nb.load(SMALL), gwatch_nb.load(LARGE)).to_dict()
    for table in ("scopes", "kernel", "roles", "iterations"):
        intervals = [[(r["ci_low"], r["ci_high"]) for r in document[table]] for document in (plain, named, expected)]
        assert intervals[0] == intervals[1] == intervals[2] and any(low is not None for low, _ in intervals[0])


def test_a_report_adds_each_of_its_runs(tmp_path, capsys):
    path = tmp_path / "sweep.json"
    Report("sweep", [Section("BLOCK_N=64", [gwatch_nb.load(SMALL), gwatch_nb.load(SMALL)]),
                     Section("BLOCK_N=128", [gwatch_nb.load(LARGE)])]).render(path)
    document = diff_json(capsys, path)
    assert document["labels"] == ["BLOCK_N=64 · run 1", "BLOCK_N=64 · run 2", "BLOCK_N=128"]
    same = [r for r in document["scopes"] if r["run"] == "BLOCK_N=64 · run 2"]
    assert same and all(r["change"] == 0 and r["verdict"] is None for r in same)
    assert any(v.endswith(")") and "in BLOCK_N=128 than in BLOCK_N=64 · run 1" in v for v in document["verdicts"])
    document = diff_json(capsys, SMALL, path)
    assert document["labels"][0] == "attention_h200.json" and document["labels"][1] == "sweep.json: BLOCK_N=64 · run 1"


@pytest.mark.parametrize("args, message", [
    ([SMALL], "holds one run; diff needs two or more"),
    ([SMALL, LARGE, "--scope", "nope"], "no scope 'nope' shared by the runs; shared: load_kv"),
    ([SMALL, LARGE, "--labels", "one"], "--labels names 1 runs, the files hold 2"),
    ([SMALL, "missing.json"], "missing.json: cannot read"),
])
def test_inputs_it_cannot_compare_get_one_line(capsys, args, message):
    assert main(["diff", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
