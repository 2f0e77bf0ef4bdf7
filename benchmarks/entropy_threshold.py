"""Entropy calibration's threshold search: minimx against MXNet 1.9.1's C++.

The search (`get_optimal_threshold`, MXNet's ``_contrib_calibrate_entropy``) is
what entropy calibration spends its time on once the histograms are made: for
each layer, every window of an 8001-bin histogram. This times it on three
layer-like histograms (normal, relu'd normal, laplace; 200k values each) in
alternating rounds: minimx in this process, MXNet 1.9.1 in its venv
(MINIMX_MXNET_PYTHON, default /work/venvs/mxnet191/bin/python) on the same
counts and edges. Both must choose the same thresholds; prints the median
seconds per layer of each.

Run: python benchmarks/entropy_threshold.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from minimx.contrib.quantization import Histogram, get_optimal_threshold

MXNET_PYTHON = os.environ.get("MINIMX_MXNET_PYTHON", "/work/venvs/mxnet191/bin/python")
# Run by MXNet's python: the seconds per layer of its operator, then its thresholds.
MXNET_SIDE = """
import sys, time, numpy as np, mxnet as mx
with np.load(sys.argv[1]) as npz:
    hists = [(mx.nd.array(npz[f"counts{i}"]), mx.nd.array(npz[f"edges{i}"]))
             for i in range(len(npz.files) // 2)]
start, found = time.perf_counter(), []
for counts, edges in hists:
    threshold, _ = mx.nd.contrib.calibrate_entropy(counts, edges, num_quantized_bins=255)
    found.append(float(threshold.asscalar()))
print((time.perf_counter() - start) / len(hists), *found)
"""


def histograms() -> list[Histogram]:
    rng = np.random.default_rng(0)
    normal = rng.normal(size=200_000).astype(np.float32)
    return [Histogram.of(values) for values in
            (normal, np.maximum(normal, 0), rng.laplace(size=200_000).astype(np.float32))]


def minimx_round(hists: list[Histogram]) -> tuple[float, list[float]]:
    start = time.perf_counter()
    found = [get_optimal_threshold(h, "int8").threshold for h in hists]
    return (time.perf_counter() - start) / len(hists), found


def mxnet_round(path: Path) -> tuple[float, list[float]]:
    out = subprocess.run([MXNET_PYTHON, "-c", MXNET_SIDE, str(path)], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), [float(v) for v in out[1:]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    hists = histograms()
    have_mxnet = os.path.exists(MXNET_PYTHON)
    times: dict[str, list[float]] = {"minimx": [], "MXNet 1.9.1": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hists.npz"
        np.savez(path, **{f"{k}{i}": getattr(h, k).astype(np.float32)
                          for i, h in enumerate(hists) for k in ("counts", "edges")})
        for _ in range(args.rounds):
            seconds, ours = minimx_round(hists)
            times["minimx"].append(seconds)
            if have_mxnet:
                seconds, theirs = mxnet_round(path)
                times["MXNet 1.9.1"].append(seconds)
                if np.float32(ours).tolist() != np.float32(theirs).tolist():
                    print(f"thresholds differ: minimx {ours}, MXNet {theirs}")
                    return 1
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; seconds per layer "
          f"(8001 bins, 255 levels), median of {args.rounds} rounds:")
    for who, values in times.items():
        if values:
            print(f"  {who}: {statistics.median(values):.3f}")
    if not have_mxnet:
        print(f"  (no MXNet at {MXNET_PYTHON})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
