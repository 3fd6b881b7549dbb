"""The %%gwatch magic in a real IPython shell, on the interpreter tier (run by
tests/test_interpreter_process.py in a process started with TRITON_INTERPRET=1)."""
import pytest

IPython = pytest.importorskip("IPython")
torch = pytest.importorskip("torch")

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from gwatch_nb import Trace, interpreter

CELL = """
print("from the cell")
out = attention.attention(q, k, v)
value = 41 + 1
value
"""


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext gwatch_nb", store_history=False)
    from examples import attention
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 128, 64, dtype=torch.float16) for _ in range(3))
    shell.user_ns.update(attention=attention, q=q, k=k, v=v)
    return shell


def run(shell, line, cell=CELL):
    with capture_output() as captured:
        result = shell.run_cell(f"%%gwatch {line}\n{cell}", store_history=True)
    return result, captured


def test_cell_runs_as_usual_and_the_trace_is_kept(shell):
    result, captured = run(shell, '-k ".*attn_fwd.*" -n 100=load_kv,101=dot_qk,102=softmax,103=dot_pv -o tr --no-widget')
    assert result.success
    assert "from the cell" in captured.stdout
    assert shell.user_ns["value"] == 42
    assert torch.equal(shell.user_ns["out"], shell.user_ns["attention"].attention(*(shell.user_ns[n] for n in "qkv")))
    assert "42" in captured.stdout  # the last expression is displayed, as without the magic
    trace = shell.user_ns["tr"]
    assert isinstance(trace, Trace) and shell.user_ns["_gwatch"] is trace
    assert set(trace.df.scope.cat.categories) == {"load_kv", "dot_qk", "softmax", "dot_pv"}
    assert "interpreter host time" in captured.stdout
    assert interpreter._active is None


def test_scopes_option_records_only_those_scopes(shell):
    result, _ = run(shell, '-k attn_fwd -n 101=dot_qk,103=dot_pv -s dot_qk,103 -o chosen --no-widget')
    assert result.success
    trace = shell.user_ns["chosen"]
    assert set(trace.df.scope_id) == {101, 103} and trace.meta["scopes_traced"] == [101, 103]


def test_widget_and_charts_are_displayed(shell):
    _, captured = run(shell, "-k attn_fwd")
    kinds = [type(o).__name__ for o in captured.outputs]
    assert any("Timeline" in repr(o.data) or "application/vnd.jupyter.widget-view+json" in o.data
               for o in captured.outputs), kinds


def test_exception_in_the_cell_stops_the_trace(shell):
    result, captured = run(shell, "-k attn_fwd --no-widget", CELL + "\nraise ValueError('cell failed')\n")
    assert not result.success  # the cell fails, as it would without the magic
    assert "ValueError" in captured.stdout and "cell failed" in captured.stdout
    assert "the cell raised ValueError; the trace was stopped and discarded" in captured.stderr
    assert interpreter._active is None
    result, captured = run(shell, "-k attn_fwd --no-widget -o again")
    assert result.success and isinstance(shell.user_ns["again"], Trace)


def test_nothing_matching_fails_the_cell_and_leaves_no_older_trace(shell):
    result, _ = run(shell, "-k attn_fwd --no-widget -o tr_stale")
    assert result.success and isinstance(shell.user_ns["tr_stale"], Trace)
    result, captured = run(shell, "-k no_such_kernel --no-widget -o tr_stale")
    assert not result.success  # Run All stops here
    assert "no launched kernel matched 'no_such_kernel'" in captured.stderr
    assert "attn_fwd (1x)" in captured.stderr
    assert "tr_stale" not in shell.user_ns and "_gwatch" not in shell.user_ns
    assert shell.user_ns["value"] == 42  # the cell itself ran
    shell.user_ns["mine"] = [1, 2]
    result, _ = run(shell, "-k no_such_kernel --no-widget -o mine")
    assert not result.success and shell.user_ns["mine"] == [1, 2]  # not a trace: the user's own, kept


def test_the_displayed_widget_is_kept_for_python(shell):
    result, _ = run(shell, "-k attn_fwd -o with_widget")
    assert result.success
    widget = shell.user_ns["_gwatch_widget"]
    assert type(widget).__name__ == "TimelineWidget" and widget._trace is shell.user_ns["with_widget"]
    assert widget.selected is None or isinstance(widget.selected, dict)
    result, _ = run(shell, "-k attn_fwd --no-widget")
    assert result.success and "_gwatch_widget" not in shell.user_ns  # no stale widget of an older trace


def test_capacity_is_honoured_on_the_interpreter_tier(shell):
    result, captured = run(shell, "-k attn_fwd -c 4 -o capped --no-widget")
    assert result.success
    trace = shell.user_ns["capped"]
    assert int(trace.warps.events.max()) == 4 and trace.events_dropped == int(trace.warps.dropped.sum()) > 0
    assert any(w.kind == "events_dropped" for w in trace.warnings)
    assert "gwatch warning: events_dropped" in captured.stdout
    assert "would keep them all" in captured.stdout and "capacity=" not in captured.stdout  # the magic says -c


def test_an_interrupt_in_the_traced_code_interrupts_the_cell(shell):
    result, _ = run(shell, "-k attn_fwd --no-widget", "out = attention.attention(q, k, v)\nraise KeyboardInterrupt")
    assert not result.success and isinstance(result.error_in_exec, (KeyboardInterrupt, UsageError))
    assert interpreter._active is None


@pytest.mark.parametrize("line, message", [
    ("", "the following arguments are required: -k/--kernel"),
    ("-k attn -n 100:load", "scope names look like"),
    ("-k attn -o 1x", "-o needs a variable name"),
    ("-k attn -l sometimes", "-l sometimes must be 'first', 'all' or a positive integer"),
    ("-k attn -c 1", "-c 1 must be at least 2 events per warp"),
    ("-k attn -t nvbit", "invalid choice"),
    ("-k attn -t ptx --auto", "--auto needs instrumentation_tier=.sass."),
    ("-k attn(", r"-k attn\( is not a regular expression"),
    ("-k attn -n 101=dot_qk -s dot_pv", r"-s dot_pv is neither a scope id nor a scope name \(names known: dot_qk\)"),
    ("-k attn -n 101=dot_qk -s dot_qk,dot_pv", r"-s dot_qk,dot_pv names 'dot_pv', neither a scope id"),
    ("-k attn -s 40000", r"-s 40000 is out of range \[0, 32767\]"),
    ("-k attn -s ,", "-s , names no scope"),
    ("-k attn --baseline -1", "--baseline -1 must be a whole number of untraced replays"),
])
def test_bad_options_are_usage_errors(shell, line, message):
    with pytest.raises(UsageError, match=message):
        shell.run_cell_magic("gwatch", line, "x = 1")
    assert "x" not in shell.user_ns or shell.user_ns["x"] != 1  # the cell did not run


def test_ptx_tier_without_a_gpu_says_so_before_running_the_cell(shell):
    from gwatch_nb.cuda import driver
    try:
        driver.init()
        pytest.skip("this machine has a GPU")
    except Exception:
        pass
    with pytest.raises(UsageError, match="-t 'interpreter' with TRITON_INTERPRET=1") as caught:
        shell.run_cell_magic("gwatch", "-k attn -t ptx", "ran = True")
    assert "instrumentation_tier" not in str(caught.value)
    assert "ran" not in shell.user_ns


def test_configs_sweep_of_an_autotuned_kernel_is_compared_and_kept(shell):
    import autotuned
    shell.user_ns.update(autotuned=autotuned, xs=torch.arange(48, dtype=torch.float32))
    result, captured = run(shell, "-k add_one -n 1=load,2=store --configs -o sweep", "autotuned.run(xs)")
    assert result.success, captured.stdout
    comparison = shell.user_ns["sweep"]
    assert shell.user_ns["_gwatch"] is comparison and len(comparison.labels) == len(autotuned.CONFIGS)
    assert comparison.labels[0].endswith("(chosen)")
    assert "gwatch: configs compared: " + "; ".join(comparison.labels) in captured.stdout
    assert f"autotune add_one: {len(autotuned.CONFIGS)} configs benchmarked" in captured.stdout
    assert "gwatch: tracing cost: not measured" in captured.stdout
