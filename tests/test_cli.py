"""`gwatch show` and `gwatch export` on real H200 traces, and one clear line (exit 2) for
every file that is not a readable trace."""
import base64
import json
import subprocess
import sys
import zlib
from importlib.metadata import entry_points

import numpy as np
import pytest

import gwatch_nb
from gwatch_nb import analysis
from gwatch_nb.cli import main
from gwatch_nb.report import Report, Section, load_report


def gwatch(*args, **kwargs) -> subprocess.CompletedProcess:
    """The command as a user runs it: a separate process."""
    return subprocess.run([sys.executable, "-m", "gwatch_nb.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, **kwargs)


def show_json(capsys, *args) -> dict:
    assert main(["show", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_entry_point_is_installed():
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "gwatch"]
    assert script.value == "gwatch_nb.cli:main"


def test_help_describes_commands_and_options():
    top = gwatch("--help")
    assert top.returncode == 0 and "show" in top.stdout and "export" in top.stdout
    show = gwatch("show", "--help")
    assert show.returncode == 0
    for option in ("--stats", "--bubbles", "--timeline", "--concurrency", "--outliers", "--json", "--width",
                   "--launch", "--block", "--warp", "--scope", "--from", "--to", "--section", "--run"):
        assert option in show.stdout


def test_show_prints_every_view(fixture_path, capsys):
    path = fixture_path("attention_4k_h200.json")
    (launch,) = gwatch_nb.load(path).launches.itertuples()
    assert main(["show", path, "--width", "120"]) == 0
    out = capsys.readouterr().out
    for heading in ("SCOPES", "PIPELINE", "TIMELINE", "CONCURRENCY", "OUTLIERS"):
        assert f"\n{heading}" in out
    assert "attn_fwd" in out and "grid (32,8,1) block (128,1,1)" in out and "1,024 warps" in out
    assert "records 524,288" in out and "dropped 0" in out and f"clock {launch.clock_ghz:.2f} GHz" in out
    assert "tier ptx" in out and "warnings: none" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_json_matches_the_analysis(fixture_path, capsys):
    path = fixture_path("attention_4k_h200.json")
    trace = gwatch_nb.load(path)
    result = show_json(capsys, path, "--width", "100")
    (run,) = result["runs"]
    expected = analysis.scope_stats(trace.df)
    assert [s["scope"] for s in run["stats"]] == list(expected["scope"])
    assert [s["count"] for s in run["stats"]] == list(expected["count"])
    assert [s["p95_ns"] for s in run["stats"]] == pytest.approx(list(expected["p95_ns"]))
    assert run["header"]["scope_instances"] == len(trace.df) == 262144
    activity = analysis.warp_activity(trace)
    assert run["pipeline"]["warps"] == len(activity)
    assert run["pipeline"]["idle_ns"] == int(activity["idle_ns"].sum())
    timeline = run["timeline"]
    assert len(timeline["rows"]) == 8 and {len(r["line"]) for r in timeline["rows"]} == {timeline["columns"]}
    assert set(timeline["legend"].values()) == {"load_kv", "dot_qk", "softmax", "dot_pv"}
    slowest = trace.df["duration_ns"].nlargest(5).tolist()
    assert [o["duration_ns"] for o in run["outliers"]] == slowest
    assert {s["scope"] for s in run["concurrency"]["series"]} == set(timeline["legend"].values())


def test_views_and_selection(fixture_path, capsys):
    path = fixture_path("attention_causal_h200.json")
    trace = gwatch_nb.load(path)
    df = trace.df
    run = show_json(capsys, path, "--stats", "--timeline", "--block", "3,1", "--warp", "0-1", "--scope",
                    "softmax,dot_pv", "--rows", "50")["runs"][0]
    assert set(run) == {"header", "stats", "timeline", "section", "section_title", "run"}
    chosen = df[(df.block_x == 3) & (df.block_y == 1) & df.warp.isin([0, 1]) & df.scope.isin(["softmax", "dot_pv"])]
    assert {s["scope"]: s["count"] for s in run["stats"]} == chosen.groupby("scope", observed=True).size().to_dict()
    assert [(r["block_x"], r["block_y"], r["warp"]) for r in run["timeline"]["rows"]] == [(3, 1, 0), (3, 1, 1)]
    assert set(run["timeline"]["legend"].values()) == {"softmax", "dot_pv"}

    window = show_json(capsys, path, "--stats", "--from", "2us", "--to", "6000ns")["runs"][0]
    overlapping = df[(df.end_ns > 2000) & (df.start_ns < 6000)]
    assert window["header"]["selected_instances"] == len(overlapping)
    assert sum(s["count"] for s in window["stats"]) == len(overlapping)

    assert main(["show", path, "--outliers", "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "OUTLIERS" in text and "SCOPES" not in text and "TIMELINE" not in text


def test_sections_and_runs_of_a_report(fixture_path, tmp_path, capsys):
    matmul, attention = (gwatch_nb.load(fixture_path(n)) for n in ("matmul_h200.json", "attention_h200.json"))
    path = Report("pair", [Section("first", [matmul]), Section("second", [matmul, attention])]).render(
        tmp_path / "report.json")
    every = show_json(capsys, path, "--stats")
    assert [(r["section"], r["run"]) for r in every["runs"]] == [(1, 1), (2, 1), (2, 2)]
    picked = show_json(capsys, path, "--section", "second", "--run", "2", "--stats")["runs"]
    assert len(picked) == 1 and picked[0]["header"]["kernels"] == ["attn_fwd"]
    assert main(["show", path, "--section", "2", "--stats"]) == 0
    text = capsys.readouterr().out
    assert text.count("=== pair | section 2") == 2 and "matmul_kernel" in text and "attn_fwd" in text


def test_export_converts_between_formats(fixture_path, tmp_path):
    source = fixture_path("matmul_h200.json")
    result = gwatch("export", source, tmp_path / "t.perfetto.json", "--group-by", "block")
    assert result.returncode == 0 and "wrote" in result.stdout
    events = json.loads((tmp_path / "t.perfetto.json").read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == len(gwatch_nb.load(source).df)
    assert gwatch("export", source, tmp_path / "again.json").returncode == 0
    assert len(load_report(tmp_path / "again.json").sections[0].runs[0].df) == len(gwatch_nb.load(source).df)


def _damaged_archives(fixture_path, tmp_path):
    source = fixture_path("matmul_h200.json")
    text = open(source).read()
    document = json.loads(text)

    def variant(name, change):
        copy = json.loads(text)
        change(copy)
        path = tmp_path / name
        path.write_text(json.dumps(copy))
        return path

    def claim_huge(d):
        # A column that claims 2^33 elements but holds a few bytes: refused without allocating them.
        d["launches"][0]["events"]["tag"].update(length=2**33, data=base64.b64encode(zlib.compress(b"x" * 64)).decode())

    corrupt_bytes = bytearray(base64.b64decode(document["launches"][0]["events"]["tag"]["data"]))
    corrupt_bytes[10:20] = bytes(10)

    paths = {
        "truncated": tmp_path / "truncated.json",
        "corrupt": variant("corrupt.json", lambda d: d["launches"][0]["events"]["tag"].update(
            data=base64.b64encode(bytes(corrupt_bytes)).decode())),
        "wrong-version": variant("version.json", lambda d: d.update(version=99)),
        "non-trace JSON": tmp_path / "other.json",
        "non-trace binary": tmp_path / "image.png",
        "huge-claim": variant("huge.json", claim_huge),
        "missing": tmp_path / "missing.json",
        "directory": tmp_path,
        "inconsistent": variant("inconsistent.json", lambda d: d["launches"][0]["warps"].update(
            n_events=d["launches"][0]["warps"]["n_dropped"])),
    }
    paths["truncated"].write_text(text[: len(text) // 2])
    paths["non-trace JSON"].write_text(json.dumps({"traceEvents": []}))
    paths["non-trace binary"].write_bytes(b"\x89PNG\r\n\x1a\n" + np.arange(256, dtype=np.uint8).tobytes())
    return paths


@pytest.mark.parametrize("kind", ["truncated", "corrupt", "wrong-version", "non-trace JSON", "non-trace binary",
                                  "huge-claim", "missing", "directory", "inconsistent"])
def test_bad_files_give_one_line_and_exit_2(fixture_path, tmp_path, kind):
    path = _damaged_archives(fixture_path, tmp_path)[kind]
    result = gwatch("show", path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gwatch: ") and "Traceback" not in result.stderr
    assert str(path) in lines[0]


@pytest.mark.parametrize("args, message", [
    (["--scope", "nope"], "no scope 'nope' in this trace; scopes: load (100)"),
    (["--launch", "4"], "no launch 4"),
    (["--from", "5us", "--to", "1us"], "window is empty"),
    (["--section", "9"], "no section '9'"),
    (["--run", "2"], "has 1 run(s), not 2"),
])
def test_selections_the_trace_lacks_give_one_line_and_exit_2(fixture_path, capsys, args, message):
    assert main(["show", fixture_path("matmul_h200.json"), *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err


@pytest.mark.parametrize("args, message", [
    (["--block", "999"], "gwatch: no block 999 in this trace (grid 8,4,1: blocks 0,0,0 to 7,3,0)"),
    (["--block", "3,4"], "gwatch: no block 3,4 in this trace (grid 8,4,1: blocks 0,0,0 to 7,3,0)"),
    (["--warp", "9"], "gwatch: no warp 9 in a block of this trace (blocks of 128 threads: warps 0 to 3)"),
    (["--bogus"], "gwatch show: unrecognized arguments: --bogus (see gwatch show --help)"),
    (["--from", "abc"], "gwatch show: argument --from: not a time: 'abc' (write e.g. 12.5us, 800ns, 1.2ms) "
                        "(see gwatch show --help)"),
    (["--warp", "9-3"], "gwatch show: argument --warp: range '9-3' is backwards or longer than 65536 "
                        "(see gwatch show --help)"),
])
def test_arguments_that_select_nothing_or_cannot_be_read_give_one_line(fixture_path, args, message):
    result = gwatch("show", fixture_path("attention_h200.json"), *args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")


def test_a_report_without_runs_gives_one_line(tmp_path, capsys):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"format": "gwatch-nb-report", "version": 1, "title": "t",
                                "sections": [{"title": "a", "runs": []}]}))
    assert main(["show", str(path)]) == 2
    assert capsys.readouterr().err == f"gwatch: {path}: no runs in this report\n"


def test_export_to_an_unknown_format_gives_one_line(fixture_path, tmp_path, capsys):
    assert main(["export", fixture_path("matmul_h200.json"), str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "supported: .perfetto.json" in err


def test_a_trace_of_some_scopes_says_so_in_every_report(fixture_path, tmp_path, capsys):
    trace = gwatch_nb.load(fixture_path("matmul_h200.json"))
    trace.to_html(tmp_path / "all.html")
    assert "only scopes" not in (tmp_path / "all.html").read_text()
    trace.meta["scopes_traced"] = [101]
    trace.save(tmp_path / "some.json")
    assert main(["show", str(tmp_path / "some.json"), "--stats"]) == 0
    assert "only scopes 101 were traced; the kernel's other markers were left idle" in capsys.readouterr().out
    assert show_json(capsys, tmp_path / "some.json", "--stats")["runs"][0]["header"]["scopes_traced"] == [101]
    again = gwatch_nb.load(tmp_path / "some.json")
    again.to_html(tmp_path / "some.html")
    assert "only scopes 101 traced" in (tmp_path / "some.html").read_text()
    again.to_perfetto(tmp_path / "some.perfetto.json")
    about = json.loads((tmp_path / "some.perfetto.json").read_text())["metadata"]["gwatch-nb"]["runs"]
    assert about[0]["scopes_traced"] == [101]
