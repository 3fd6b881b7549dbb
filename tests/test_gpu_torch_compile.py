"""A block torch.compile built (a LayerNorm + MLP: Inductor's own kernels, compiled by its
workers and launched by its own launcher) traced with automatic sites: every kernel it
launches is traced, outputs are bit-identical with the untraced run, and each warp's life
is recorded."""
import pytest

torch = pytest.importorskip("torch")

from gwatch_nb import do_trace  # noqa: E402

pytestmark = pytest.mark.gpu


def test_a_torch_compile_block_is_traced_with_automatic_sites():
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.LayerNorm(768), torch.nn.Linear(768, 3072), torch.nn.GELU(),
                                torch.nn.Linear(3072, 768)).to("cuda", torch.float16)
    x = torch.randn(8, 500, 768, device="cuda", dtype=torch.float16)
    compiled = torch.compile(block)
    with torch.no_grad():
        untraced = compiled(x).clone()
        traced = {}
        trace = do_trace(lambda: traced.setdefault("out", compiled(x).clone()), r"^triton_",
                         instrumentation_tier="sass", auto=True)
    assert torch.equal(traced["out"], untraced)
    assert len(trace.launches) >= 2 and set(trace.launches["tier"]) == {"sass"}
    assert trace.events_dropped == 0 and len(trace.df) > 0
    assert all(name.startswith("triton_") for name in trace.launches["kernel"])
    assert trace.warps.exited.all()
