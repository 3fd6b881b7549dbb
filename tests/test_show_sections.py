"""`gwatch show`'s sections on traces whose answer is known: the concurrency peak is exact
whatever the width, the pipeline follows --scope and --from/--to, a lightly loaded warp
still shows its scopes, the sass tier's sites are listed as trace.sites has them, and the
section list drives the flags."""
import json

import numpy as np
import pandas as pd
import pytest

import gwatch_nb
from gwatch_nb import analysis
from gwatch_nb.cli import build_parser, main
from gwatch_nb.show import SECTIONS, Selection, SelectionError, parse_threads, parse_ticks, summarize
from support.traces import synthetic_trace

SCOPES = {1: "load", 2: "dot", 3: "outer", 4: "inner"}


def _exact_peak(df) -> int:
    """Most instances open at one instant, by brute force over every start."""
    start, end = df["start_ns"].to_numpy(), df["end_ns"].to_numpy()
    return max(int(((start <= t) & (end > t)).sum()) for t in np.unique(start))


@pytest.mark.parametrize("name", ["attention_4k_h200.json", "matmul_h200.json"])
def test_concurrency_peak_is_exact_at_every_width(fixture_path, name):
    trace = gwatch_nb.load(fixture_path(name))
    peaks = []
    for width in (40, 100, 240):
        series = summarize(trace, Selection(), views=("concurrency",), width=width)["concurrency"]["series"]
        peaks.append({s["scope"]: s["peak"] for s in series})
    assert peaks[0] == peaks[1] == peaks[2]
    sample = trace.df[trace.df["scope"] == trace.df["scope"].iloc[0]].head(20000)
    assert peaks[0][str(sample["scope"].iloc[0])] >= _exact_peak(sample)
    small = synthetic_trace([
        ((0, 0, 0), w, 0, 0, 100, [(10 * w, 1, False), (10 * w + 35, 1, True)]) for w in range(4)], SCOPES)
    for width in (40, 100, 240):
        (load,) = summarize(small, Selection(), views=("concurrency",), width=width)["concurrency"]["series"]
        assert load["peak"] == 4 and load["mean"] == pytest.approx(4 * 35 / 100)


def test_concurrency_peak_in_json_does_not_move_with_width(fixture_path, capsys):
    path = fixture_path("attention_causal_h200.json")
    peaks = []
    for width in ("50", "200"):
        assert main(["show", path, "--concurrency", "--json", "--width", width]) == 0
        (run,) = json.loads(capsys.readouterr().out)["runs"]
        peaks.append([s["peak"] for s in run["concurrency"]["series"]])
    assert peaks[0] == peaks[1]


def test_pipeline_follows_scope_and_window():
    trace = synthetic_trace([
        # load 0-40, dot 70-100 (inner 80-90 inside dot), alive 0-100.
        ((0, 0, 0), 0, 0, 0, 100, [(0, 1, False), (40, 1, True), (70, 2, False), (80, 4, False), (90, 4, True),
                                   (100, 2, True)]),
        ((0, 0, 0), 1, 0, 0, 100, [(0, 1, False), (50, 1, True)]),
    ], SCOPES)
    whole = summarize(trace, Selection(), views=("pipeline",))["pipeline"]
    assert (whole["busy_ns"], whole["idle_ns"]) == (70 + 50, 30 + 50)
    dot = summarize(trace, Selection(scopes=["dot"]), views=("pipeline",))["pipeline"]
    assert (dot["busy_ns"], dot["idle_ns"]) == (30, 70 + 100)
    # A nested scope on its own counts: busy is inside any selected scope.
    inner = summarize(trace, Selection(scopes=["inner"]), views=("pipeline",))["pipeline"]
    assert inner["busy_ns"] == 10
    window = summarize(trace, Selection(start_ns=20, end_ns=80), views=("pipeline",))["pipeline"]
    # Warp 0: load 20-40 and dot 70-80 in a 60 ns life; warp 1: load 20-50.
    assert (window["busy_ns"], window["idle_ns"]) == (30 + 30, 30 + 30)
    (gap,) = [g for g in window["longest_gaps"] if g["warp"] == 0]
    assert (gap["gap_ns"], gap["start_ns"], gap["after"], gap["before"]) == (30, 40, "load", "dot")
    both = summarize(trace, Selection(scopes=["load"], start_ns=20, end_ns=80), views=("pipeline",))["pipeline"]
    assert (both["busy_ns"], both["idle_ns"], both["longest_gaps"]) == (20 + 30, 40 + 30, [])


def test_busy_time_counts_overlapping_instances_once(fixture_path):
    trace = gwatch_nb.load(fixture_path("attention_causal_h200.json"))
    activity = analysis.warp_activity(trace)
    top = trace.df[trace.df["depth"] == 0]
    expected = np.bincount(trace.warp_row[top.index.to_numpy()], top["duration_ns"], minlength=len(trace.warps))
    assert (activity["busy_ns"].to_numpy() == expected).all()


def test_a_lightly_loaded_warp_shows_every_scope_it_ran(fixture_path):
    trace = gwatch_nb.load(fixture_path("matmul_h200.json"))
    timeline = summarize(trace, Selection(), views=("timeline",), width=100)["timeline"]
    df = trace.df[trace.df["end_ns"] > trace.df["start_ns"]]
    edges = timeline["start_ns"] + timeline["ns_per_column"] * np.arange(timeline["columns"] + 1)
    dots = 0
    for row in timeline["rows"]:
        mine = df[(df["block_x"] == row["block_x"]) & (df["block_y"] == row["block_y"]) & (df["warp"] == row["warp"])]
        ran = [bool(((mine["start_ns"] < hi) & (mine["end_ns"] > lo)).any()) for lo, hi in zip(edges, edges[1:])]
        shown = [c not in ". " for c in row["line"]]
        assert shown == ran, row["label"]
        dots += row["line"].count(".")
    # Capitals where scopes fill the column, lower case where they fill less: both appear.
    lines = "".join(r["line"] for r in timeline["rows"])
    assert any(c.islower() for c in lines) and any(c.isupper() for c in lines)
    assert dots < len(lines) / 2


def test_lower_case_marks_a_column_scopes_fill_less_than_half():
    trace = synthetic_trace([((0, 0, 0), 0, 0, 0, 100, [(0, 1, False), (10, 1, True), (42, 2, False),
                                                        (44, 2, True)])], SCOPES)
    probe = summarize(trace, Selection(), views=("timeline",), width=200)["timeline"]
    width = len(probe["rows"][0]["label"]) + 5 + 10
    (row,) = summarize(trace, Selection(), views=("timeline",), width=width)["timeline"]["rows"]
    assert row["line"] == "L...d....."  # 10 ns columns: load fills the first, dot a fifth of the fifth


def test_sort_by_orders_the_timeline_warps():
    trace = synthetic_trace([((0, 0, 0), w, 0, 0, 100, [(0, 1 + w % 2, False), (10 * (w + 1), 1 + w % 2, True)])
                             for w in range(6)], SCOPES)
    def order(key):
        rows = summarize(trace, Selection(), views=("timeline",), rows=3, sort_by=key)["timeline"]["rows"]
        return [r["warp"] for r in rows]
    assert order("active") == [5, 4, 3] and order("bubble") == [0, 1, 2] and order("dot") == [5, 3, 1]
    with pytest.raises(SelectionError, match="no scope 'nothing'"):
        summarize(trace, Selection(), sort_by="nothing")


def test_longest_and_longest_bubble(fixture_path, capsys):
    path = fixture_path("attention_h200.json")
    trace = gwatch_nb.load(path)
    assert main(["show", path, "--longest", "softmax", "--longest-bubble", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert set(run) >= {"longest", "longest_bubble"} and "stats" not in run
    (longest,) = run["longest"]
    softmax = trace.df[trace.df["scope"] == "softmax"]
    assert longest["duration_ns"] == softmax["duration_ns"].max() and longest["instances"] == len(softmax)
    gaps = summarize(trace, Selection(), views=("pipeline",), top=1)["pipeline"]["longest_gaps"]
    assert run["longest_bubble"] == gaps[0]
    assert main(["show", path, "--longest", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "LONGEST" in out and "SCOPES" not in out
    assert main(["show", path, "--longest", "nothing"]) == 2
    assert "no scope 'nothing'" in capsys.readouterr().err


def test_gwatch_spellings_select_what_ours_do(fixture_path, capsys):
    path = fixture_path("attention_h200.json")
    def run(*args):
        assert main(["show", path, "--stats", "--json", *args]) == 0
        return json.loads(capsys.readouterr().out)["runs"][0]
    assert parse_threads("[0,31], [64,95]") == [0, 2] and parse_threads("0-127") == [0, 1, 2, 3]
    assert parse_ticks("1500") == 1500 and parse_ticks("2us") == 2000
    assert run("--tid", "[0,63]")["stats"] == run("--warp", "0-1")["stats"]
    assert run("--stime", "2000", "--etime", "9000")["stats"] == run("--from", "2us", "--to", "9us")["stats"]
    assert run("--mode", "trace", "--run", "1")["stats"] == run()["stats"]
    assert main(["show", path, "--human"]) == 2
    assert "--human" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["show", path, "--mode", "profile"])
    assert "invalid choice: 'profile'" in capsys.readouterr().err


def test_the_section_list_drives_the_flags_and_the_output(fixture_path, capsys):
    help_text = build_parser()._subparsers._group_actions[0].choices["show"].format_help()
    for section in SECTIONS:
        for flag in section.flags:
            assert flag in help_text
    path = fixture_path("matmul_h200.json")
    assert main(["show", path, "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    # A ptx trace: every default section but those of the sass tier and of stall samples.
    assert [k for k in run if k not in ("section", "section_title", "run", "header")] == \
        [s.name for s in SECTIONS if s.default and s.only_on is None]
    assert main(["show", path, "--bubbles", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert "pipeline" in run and "stats" not in run
    with pytest.raises(ValueError, match="unknown section"):
        summarize(gwatch_nb.load(path), Selection(), views=("nope",))


def _sites_by_number(run) -> dict[int, dict]:
    return {r["site"]: r for scope in run["sites"]["scopes"] for r in scope["readings"]}


@pytest.mark.parametrize("name", ["attention_sass_h200.json", "attention_sass_auto_h200.json"])
def test_sites_list_every_reading_of_trace_sites(fixture_path, capsys, name):
    path = fixture_path(name)
    trace = gwatch_nb.load(path)
    assert main(["show", path, "--json"]) == 0  # shown by default on the sass tier
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    shown = _sites_by_number(run)
    sites = trace.sites
    assert sorted(shown) == sorted(sites["site"]) and len(shown) == len(sites)
    for row in sites.itertuples():
        r = shown[row.site]
        assert (r["kernel"], r["scope_id"], r["scope"], r["kind"], r["pair"], r["origin"], r["index"], r["store"]) == \
            (row.kernel, row.scope, row.name, row.kind, row.pair, row.origin, row.index, row.store)
        for column in ("loop", "span", "own", "other_scopes", "unscoped"):
            value = getattr(row, column)
            assert r[column] == (None if pd.isna(value) else int(value)), column
        if pd.isna(row.span):
            assert r["sharpness"] is None and row.origin != "marker"
        else:
            share = row.own / row.span
            assert r["sharpness"] == ("sharp" if share == 1 else "tight" if share >= 0.9 else
                                      "mixed" if share >= 0.5 else "blurred")
    # Grouped per scope, each scope's readings by pair, its start first.
    for scope in run["sites"]["scopes"]:
        assert {r["scope_id"] for r in scope["readings"]} == {scope["scope_id"]}
        order = [(r["pair"], r["kind"] != "start") for r in scope["readings"]]
        assert order == sorted(order)


def test_sites_text_shows_each_scope_and_how_sharp_it_is(fixture_path, capsys):
    path = fixture_path("attention_sass_h200.json")
    assert main(["show", path, "--sites", "--width", "100"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "tier sass: GPU: SM clock cycles read by probes in the compiled kernel" in out
    clock = gwatch_nb.load(path).launches.clock_ghz[0]
    assert f"clock {clock:.2f} GHz" in out and "host clock" not in out
    start = lines.index("SITES (per scope, where its clock readings landed in the compiled kernel)")
    assert "SCOPES" not in out
    table = lines[start:]
    assert max(len(line) for line in table) <= 100
    # Each scope's first row is its first start reading in trace.sites, with its sharpness word:
    # on the H200's attention dot_qk's first pair spans only its own instructions, dot_pv's is
    # mostly softmax's code.
    sites = gwatch_nb.load(path).sites
    for name, word in (("dot_qk", "sharp"), ("dot_pv", "blurred")):
        row = sites[(sites["name"] == name) & (sites["kind"] == "start")].iloc[0]
        loop = "-" if row.loop != row.loop else str(int(row.loop))
        expected = ["start", "marker", str(row.pair), str(row["index"]), str(row.store), loop, str(row.span),
                    str(row.own), str(row.other_scopes), str(row.unscoped), word, f"{round(100 * row.own / row.span)}%"]
        assert table[table.index(f"  {name}") + 1].split() == expected
    assert "moved" not in table[0] + "".join(table[1:])  # no reading moved


def test_sites_follow_the_scope_selection_and_every_scope_has_its_own_name(fixture_path, capsys):
    path = fixture_path("attention_sass_auto_h200.json")
    trace = gwatch_nb.load(path)
    assert main(["show", path, "--sites", "--scope", "softmax,loop attention.py:37", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert [s["scope"] for s in run["sites"]["scopes"]] == ["loop attention.py:37", "softmax"]
    assert main(["show", path, "--sites", "--width", "100"]) == 0
    out = capsys.readouterr().out
    barriers = trace.sites[trace.sites["name"].str.startswith("barrier attention.py:39")]
    assert sorted(set(barriers.scope)) == [28672, 28675, 28677]
    for at in sorted(set(barriers.instruction)):
        assert f"\n  barrier attention.py:39 @{at}\n" in out  # no id needed to tell them apart


@pytest.mark.parametrize("name", ["attention_h200.json", "matmul_h200.json"])
def test_other_tiers_show_no_sites_unless_asked(fixture_path, capsys, name):
    path = fixture_path(name)
    assert main(["show", path]) == 0
    assert "SITES" not in capsys.readouterr().out
    assert main(["show", path, "--sites"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == ("SITES: none (the ptx tier reads no sites; instrumentation_tier='sass' places "
                                    "readings in the compiled kernel)")


def test_sharpness_words_follow_own_over_span():
    from gwatch_nb.site_rows import sharpness
    cases = {(10, 10): "sharp", (9, 10): "tight", (90, 100): "tight", (89, 100): "mixed", (1, 2): "mixed",
             (49, 100): "blurred", (0, 5): "blurred", (0, 0): None, (None, None): None}
    assert {case: sharpness(*case) for case in cases} == cases


def test_a_reading_that_moved_shows_by_how_much(fixture_path, capsys, tmp_path):
    trace = gwatch_nb.load(fixture_path("attention_sass_h200.json"))
    sites = dict(trace.meta["sites"])
    sites["moved"] = [2 if site == 4 else 0 for site in sites["site"]]  # load_kv's second start, 2 later
    sites["index"] = [i + m for i, m in zip(sites["index"], sites["moved"])]
    moved = gwatch_nb.Trace(trace.records, trace.scope_names, {**trace.meta, "sites": sites})
    moved.save(tmp_path / "moved.json")
    assert main(["show", str(tmp_path / "moved.json"), "--sites", "--scope", "load_kv", "--width", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.split()[:5] == ["kind", "origin", "pair", "at", "moved"])
    assert "moved: how far it moved from its site" in "\n".join(lines)
    rows = [line.split() for line in lines[lines.index(header) + 2:]]
    index, store = sites["index"][4], sites["store"][4]
    assert rows[2][:6] == ["start", "marker", "1", str(index), "+2", str(store)]
    assert rows[0][:5] == ["start", "marker", "0", str(sites["index"][0]), str(sites["store"][0])]  # an empty moved cell
