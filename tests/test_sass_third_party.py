"""The sass tier on cubins the H200 built from kernels other people wrote
(tests/fixtures/third_party_h200.npz, kept by tests/third_party/keep_fixture.py from a corpus
run: the very builds that ran, markers compiled to nothing, with the markers their source
held): each is instrumented here as it was there, refused exactly where the H200 refused it,
and every scope its source marks is either read or named as left out, with a reason."""
import json
import os

import numpy as np
import pytest

from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.instrument import instrument
from gwatch_nb.sass.markers import Marker

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "third_party_h200.npz")
_data = np.load(FIXTURE)
KERNELS = json.loads(str(_data["index"]))


@pytest.mark.parametrize("number", range(len(KERNELS)), ids=[k["key"] for k in KERNELS])
def test_a_third_party_h200_cubin_is_instrumented_as_on_the_h200(number):
    kernel = KERNELS[number]
    name = kernel["key"].rpartition(":")[2]
    cubin = _data[f"cubin_{number}"].tobytes()
    markers = [Marker(*m) for m in kernel["markers"]]
    if kernel["refused"]:
        with pytest.raises(SassRewriteError):
            instrument(cubin, name, markers)
        return
    made = instrument(cubin, name, markers)
    assert made is not None
    read = set(made.sites["scope"])
    left_out = {o["scope"]: o["reason"] for o in made.left_out}
    assert {m.scope_id for m in markers} <= read | set(left_out)
    assert all(reason for reason in left_out.values())
    assert made.cost["inserted"] > 0
