"""How long the sass tier's first instrument of a kernel takes: every kernel of the H200
fixture archives (tests/fixtures/cubins_h200.npz with its source's markers and automatic
sites, third_party_h200.npz with its markers), each the first instrument() of its cubin in
the process, with the disk cache of decodes as GWATCH_CACHE_DIR leaves it. Run it twice over
one fresh cache folder: the first run is cold (nvdisasm decodes every cubin), the second reads
the decodes back. Prints a line per kernel and the medians; --hashes writes every output's
SHA-256, to show two builds instrument alike.

    GWATCH_CACHE_DIR=$(mktemp -d) python bench/first_instrument.py [--hashes OUT.json]   # twice
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import numpy as np  # noqa: E402

from gwatch_nb.errors import SassRewriteError  # noqa: E402
from gwatch_nb.sass import markers  # noqa: E402
from gwatch_nb.sass.cubin import Cubin  # noqa: E402
from gwatch_nb.sass.instrument import instrument  # noqa: E402
from gwatch_nb.sass.markers import Marker  # noqa: E402
from sass_cubins import CASES, H200_CUBINS  # noqa: E402

THIRD_PARTY = os.path.join(os.path.dirname(H200_CUBINS), "third_party_h200.npz")


def _kernels():
    """(label, cubin, kernel, markers, auto) for every fixture kernel."""
    case = {c.name: c for c in CASES}
    with np.load(H200_CUBINS) as archive:
        for name in archive.files:
            if name == "triton_version":
                continue
            cubin = archive[name].tobytes()
            (kernel,) = Cubin.parse(cubin).kernels
            # The attention builds the corpus no longer lists come from the same function.
            fn = case[name].fn if name in case else case["attention fwd d64"].fn
            yield f"h200: {name}", cubin, kernel, markers.from_source(fn), True
    with np.load(THIRD_PARTY) as data:
        for number, entry in enumerate(json.loads(str(data["index"]))):
            yield (f"third party: {entry['key']}", data[f"cubin_{number}"].tobytes(), entry["key"].rpartition(":")[2],
                   [Marker(*m) for m in entry["markers"]], False)


def _digest(cubin, kernel, found, auto) -> str | None:
    try:
        result = instrument(cubin, kernel, found, None, auto=auto)
    except SassRewriteError as error:
        return f"error: {error}"
    return None if result is None else hashlib.sha256(result.cubin).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hashes", help="write every output's SHA-256 here (JSON)")
    args = parser.parse_args()
    seconds, hashes = {}, {}
    for label, cubin, kernel, found, auto in _kernels():
        began = time.perf_counter()
        hashes[f"{label} auto={auto}"] = _digest(cubin, kernel, found, auto)  # the cubin's first instrument
        seconds[label] = time.perf_counter() - began
        hashes[f"{label} auto={not auto}"] = _digest(cubin, kernel, found, not auto)
        count = len(Cubin.parse(cubin).text(kernel)) // 16
        print(f"{label:64s} {count:6d} instructions {seconds[label]:6.3f} s", flush=True)
    print(f"{len(seconds)} kernels: median {statistics.median(seconds.values()):.3f} s, "
          f"most {max(seconds.values()):.3f} s")
    if args.hashes:
        with open(args.hashes, "w") as f:
            json.dump(hashes, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
