"""The comparison's charts, widget and HTML page, read back as data (tests/test_browser_compare.py
opens the page): charts from aggregates, runs on shared bins, nothing fetched by URL."""
import os

import numpy as np
import pytest

pytest.importorskip("altair", reason="comparison views need altair (pip install altair)")

import gwatch_nb  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from gwatch_nb import compare  # noqa: E402
from gwatch_nb.comparison.charts import all_charts, changes, distributions, trends  # noqa: E402
from gwatch_nb.comparison.widget import CompareWidget  # noqa: E402
from support.pages import Page  # noqa: E402


@pytest.fixture(scope="module")
def cmp():
    return compare(gwatch_nb.load(os.path.join(FIXTURES, "matmul_h200.json")),
                   gwatch_nb.load(os.path.join(FIXTURES, "matmul_cold_h200.json")), labels=("warm", "cold"))


def _data(chart):
    spec = chart.to_dict()
    (rows,) = spec["datasets"].values()
    return rows


def test_distributions_share_bins_and_each_run_sums_to_one(cmp):
    rows = _data(distributions(cmp))
    for scope in ("load", "dot", "store"):
        per_run = {run: [r for r in rows if r["scope"] == scope and r["run"] == run] for run in ("warm", "cold")}
        assert [r["start_ns"] for r in per_run["warm"]] == [r["start_ns"] for r in per_run["cold"]]
        for run, bins in per_run.items():
            assert sum(r["share"] for r in bins) == pytest.approx(1.0)


def test_trends_follow_each_run_and_changes_carry_the_interval(cmp):
    rows = _data(trends(cmp))
    warm = [r for r in rows if r["run"] == "warm" and r["scope"] == "dot"]
    df = cmp.runs[0].df
    expected = df[df["scope"] == "dot"].groupby("seq", observed=True)["duration_ns"].median()
    assert {r["seq"]: r["p50_ns"] for r in warm} == pytest.approx(expected.to_dict())
    bars = changes(cmp).to_dict()
    (data,) = [rows for rows in bars["datasets"].values() if rows and "scope" in rows[0]]
    assert {r["scope"] for r in data} == {"load", "dot", "store"}
    assert all(r["ci_low"] <= r["change"] <= r["ci_high"] and r["significant"] for r in data)
    assert all(len(str(chart.to_dict())) < 200_000 for _, chart in all_charts(cmp))


def test_widget_carries_every_run(cmp):
    widget = cmp.widget(height=600)
    assert isinstance(widget, CompareWidget)
    assert [r["label"] for r in widget.runs] == ["warm", "cold"]
    instances = [int(np.frombuffer(r["payload"]["instances"]["start_ns"]["view"], np.uint8).size > 0) for r in widget.runs]
    assert instances == [1, 1]
    with pytest.raises(ValueError, match="at least 240"):
        cmp.widget(height=100)


def test_page_holds_tables_charts_timelines_and_loads_nothing(cmp, tmp_path):
    path = tmp_path / "cmp.html"
    cmp.to_html(path, title="warm <vs> cold")
    text = path.read_text()
    page = Page(text)
    assert page.loads == [], f"the page loads by URL: {page.loads}"
    assert len(page.charts) == 3 and "gw-compare-data" in page.json
    assert [run["label"] for run in page.json["gw-compare-data"]["runs"]] == ["warm", "cold"]
    assert "warm &lt;vs&gt; cold" in text and "<vs>" not in text
    for verdict in cmp.verdicts:
        assert verdict.split(":")[0] in text


def test_a_page_that_fails_to_write_leaves_the_old_file(cmp, tmp_path):
    path = tmp_path / "cmp.html"
    path.write_text("the page before")
    with pytest.raises(UnicodeEncodeError):
        cmp.to_html(path, title="\ud800")  # a lone surrogate has no UTF-8: the write fails part way
    assert path.read_text() == "the page before" and os.listdir(tmp_path) == ["cmp.html"]
