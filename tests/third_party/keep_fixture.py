"""Keep a corpus run's cubins as a CPU fixture: every kernel whose cubin is the very build
that ran on the GPU (its PTX has no sentinels: markers compiled to nothing), with the markers
its source held there and whether the sass tier instrumented it.
  python tests/third_party/keep_fixture.py RUN_OUT tests/fixtures/third_party_h200.npz"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from gwatch_nb.sentinels import has_sentinels


def main(run: str, out: str) -> None:
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    kept = {}
    for folder in sorted(os.listdir(os.path.join(run, "cubins"))):
        path = os.path.join(run, "cubins", folder)
        name = folder.replace("__", "/")
        sass = results.get(name, {}).get("marked", {}).get("tiers", {}).get("sass", {})
        with open(os.path.join(path, "markers.json")) as f:
            markers = json.load(f)
        for cubin in sorted(f for f in os.listdir(path) if f.endswith(".cubin")):
            kernel = cubin[:-len(".cubin")]
            with open(os.path.join(path, kernel + ".ptx")) as f:
                if has_sentinels(f.read()) or kernel not in markers:
                    continue
            with open(os.path.join(path, cubin), "rb") as f:
                data = f.read()
            refused = "cannot instrument" in sass.get("error", "")
            kept[f"{name}:{kernel}"] = dict(cubin=data, markers=markers[kernel], refused=refused)
    arrays = {}
    for n, (key, item) in enumerate(kept.items()):
        arrays[f"cubin_{n}"] = np.frombuffer(item["cubin"], np.uint8)
    index = [dict(key=key, markers=item["markers"], refused=item["refused"]) for key, item in kept.items()]
    np.savez_compressed(out, index=np.array(json.dumps(index)), **arrays)
    print(f"{len(kept)} cubins kept in {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
