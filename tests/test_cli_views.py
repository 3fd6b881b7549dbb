"""What `gwatch show` draws, checked on small traces whose answer is known exactly."""
import pytest

from gwatch_nb.show import Selection, format_text, parse_block, parse_numbers, parse_time, scope_letters, summarize
from support.traces import synthetic_trace

SCOPES = {1: "load", 2: "dot", 3: "outer", 4: "inner"}


def _timeline(trace, columns=10, **selection):
    """The timeline's rows, with the width chosen to give ``columns`` cells."""
    probe = summarize(trace, Selection(**selection), views=("timeline",), width=200)["timeline"]
    label = max(len(r["label"]) for r in probe["rows"])
    timeline = summarize(trace, Selection(**selection), views=("timeline",), width=label + 5 + columns)["timeline"]
    assert timeline["columns"] == columns
    return timeline


def test_each_cell_shows_the_scope_that_fills_most_of_it():
    trace = synthetic_trace([
        ((0, 0, 0), 0, 0, 0, 100, [(0, 1, False), (50, 1, True), (50, 2, False), (100, 2, True)]),
        # Alive from 20 to 80 ns, inside "load" from 20 to 30 only.
        ((0, 0, 0), 1, 0, 20, 80, [(20, 1, False), (30, 1, True)]),
        # "inner" nested in "outer": the inner scope shows where it covers the cell.
        ((1, 0, 0), 0, 1, 0, 100, [(0, 3, False), (20, 4, False), (80, 4, True), (100, 3, True)]),
    ], SCOPES)
    timeline = _timeline(trace)
    letters = {name: letter for letter, name in timeline["legend"].items()}
    assert letters == {"load": "L", "dot": "D", "outer": "O", "inner": "I"}
    assert [r["line"] for r in timeline["rows"]] == ["LLLLLDDDDD", "  L.....  ", "OOIIIIIIOO"]
    assert [r["label"] for r in timeline["rows"]] == ["b0 w0 sm0", "b0 w1 sm0", "b1 w0 sm1"]


def test_filters_choose_rows_and_letters():
    trace = synthetic_trace([
        ((0, 0, 0), 0, 0, 0, 100, [(0, 1, False), (50, 1, True), (50, 2, False), (100, 2, True)]),
        ((1, 0, 0), 0, 1, 0, 100, [(0, 1, False), (100, 1, True)]),
    ], SCOPES)
    timeline = _timeline(trace, scopes=["dot"], blocks=[(0,)])
    assert [r["line"] for r in timeline["rows"]] == [".....DDDDD"] and timeline["legend"] == {"D": "dot"}
    zoomed = _timeline(trace, start_ns=40, end_ns=60)
    assert zoomed["rows"][0]["line"] == "LLLLLDDDDD"


def test_pipeline_concurrency_and_outliers_count_what_happened():
    trace = synthetic_trace([
        ((0, 0, 0), 0, 0, 0, 100, [(0, 1, False), (40, 1, True), (70, 2, False), (100, 2, True)]),
        ((0, 0, 0), 1, 0, 0, 100, [(0, 1, False), (50, 1, True)]),
    ], SCOPES)
    summary = summarize(trace, Selection(), width=60, top=3)
    pipeline = summary["pipeline"]
    assert (pipeline["busy_ns"], pipeline["idle_ns"]) == (70 + 50, 30 + 50)
    assert [(w["warp"], w["idle_ns"]) for w in pipeline["idlest"]] == [(1, 50), (0, 30)]
    (gap,) = pipeline["longest_gaps"]
    assert (gap["warp"], gap["gap_ns"], gap["start_ns"], gap["after"], gap["before"]) == (0, 30, 40, "load", "dot")
    load = next(s for s in summary["concurrency"]["series"] if s["scope"] == "load")
    assert load["peak"] == pytest.approx(2.0)
    assert [o["duration_ns"] for o in summary["outliers"]] == [50, 40, 30]
    text = format_text(summary, width=60, unicode=False)
    assert "us" in text and "µ" not in text and "▁" not in text


def test_letters_stay_distinct():
    assert scope_letters(["dot_qk", "dot_pv", "load", "Dx"]) == {"dot_qk": "D", "dot_pv": "O", "load": "L",
                                                                "Dx": "X"}
    assert len(set(scope_letters([f"s{i}" for i in range(40)]).values())) == 40


def test_option_values_parse():
    assert parse_time("12.5us") == 12_500 and parse_time("800ns") == 800 and parse_time("1.5ms") == 1_500_000
    assert parse_time("3") == 3_000 and parse_time("2 µs") == 2_000
    assert parse_block("3") == (3,) and parse_block("(3,1,0)") == (3, 1, 0)
    assert parse_numbers("0,2,5-7") == [0, 2, 5, 6, 7]
    for bad, parse in (("soon", parse_time), ("1,2,3,4", parse_block), ("a-b", parse_numbers)):
        with pytest.raises(ValueError):
            parse(bad)
