"""GluonNLP's LSTM language models: minimx DNNL (RNN on oneDNN's LSTM primitive)
against minimx numpy, and INT8 in DNNL (MXNet's INT8 LSTM on oneDNN's int8 LSTM),
forward only.

The graphs are the fixtures MXNet 1.9.1 exported (tests/fixtures/families:
standard_lstm_lm_200, awd_lstm_lm_600) with random weights, run on a batch of
token sequences (default 35 steps of 16, GluonNLP's bptt). The INT8 graph is
`quantize_model_mkldnn`'s (naive calibration on the same tokens; the LSTMs and the
decoder quantized, as MXNet 1.9.1 quantizes them). The paths are bound once and
timed in alternating rounds of --iters forwards each; the figure is the median
forward time. Timings on a
busy machine say little: check the load first.

Run: python benchmarks/dnnl_rnn.py [--steps 35] [--batch 16] [--rounds 5] [--iters 5]
"""
from __future__ import annotations

import argparse
import gzip
import os
import statistics
import time
from pathlib import Path

# numpy's OpenBLAS threads spin on after each product and take the cores from
# oneDNN's threads in the rounds that follow (DNNL float32 7.9 against 5.0 ms a
# forward, standard_lstm_lm_200, in two runs, not alternated): one BLAS thread
# keeps the DNNL figures their own, and makes the numpy path single-threaded.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import minimx as mx  # noqa: E402
from minimx.contrib.quantization import quantize_model_mkldnn  # noqa: E402

FAMILIES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "families"
MODELS = ["standard_lstm_lm_200", "awd_lstm_lm_600"]
VOCAB = 2004


def executors(name: str, steps: int, batch: int) -> dict:
    """The model bound on the numpy path and partitioned by DNNL, with one set of
    random weights and tokens."""
    sym = mx.sym.load_json(gzip.decompress((FAMILIES / f"{name}-symbol.json.gz").read_bytes()))
    shapes = {"data": (steps, batch)}
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    rng = np.random.default_rng(0)
    args = {n: mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.1)
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)}
    args["data"] = mx.nd.array(rng.integers(0, VOCAB, shapes["data"]).astype(np.float32))
    part = mx.subgraph.partition(sym, "DNNL", shapes=shapes)
    exes = {label: s.bind(mx.cpu(), dict(args), grad_req="null")
            for label, s in (("numpy", sym), ("DNNL", part))}
    params = {k: v for k, v in args.items() if k != "data"}
    qsym, qargs, _ = quantize_model_mkldnn(
        sym, params, {}, label_names=(), calib_mode="naive",
        calib_data=mx.io.NDArrayIter(args["data"].asnumpy(), batch_size=steps),
        num_calib_examples=steps)
    exes["INT8"] = mx.subgraph.partition(qsym, "DNNL", shapes=shapes).bind(
        mx.cpu(), {**qargs, "data": args["data"]}, grad_req="null")
    return exes


def timed(ex) -> float:
    start = time.perf_counter()
    ex.forward()[0].asnumpy()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    # Several forwards a round: the first after another path's pays for the caches
    # and the OpenMP threads that path left cold, which a short forward feels most.
    parser.add_argument("--iters", type=int, default=5)
    opts = parser.parse_args()
    print(f"| model (T={opts.steps}, N={opts.batch}) | numpy ms | DNNL ms | speed-up | "
          "DNNL INT8 ms | INT8 / fp32 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in MODELS:
        exes = executors(name, opts.steps, opts.batch)
        outs = {label: ex.forward()[0].asnumpy() for label, ex in exes.items()}
        np.testing.assert_allclose(outs["DNNL"], outs["numpy"], rtol=1e-3, atol=1e-3)
        times: dict[str, list[float]] = {label: [] for label in exes}
        for _ in range(opts.rounds):
            for label, ex in exes.items():
                times[label] += [timed(ex) for _ in range(opts.iters)]
        numpy_ms, dnnl_ms, int8_ms = (1e3 * statistics.median(times[k])
                                      for k in ("numpy", "DNNL", "INT8"))
        print(f"| {name} | {numpy_ms:.1f} | {dnnl_ms:.1f} | {numpy_ms / dnnl_ms:.1f}x | "
              f"{int8_ms:.1f} | {dnnl_ms / int8_ms:.2f}x |")


if __name__ == "__main__":
    main()
