"""Training throughput of `Module.fit`: the digits convnet, minimx against MXNet 1.9.1.

The same script an MXNet user writes (NDArrayIter, Module.fit with SGD and
momentum, batch 32) trains the same convnet (conv-BN-relu-pool-FC-softmax) on
scikit-learn's digits (1400 training images of 8x8) from the same starting
parameters, once on minimx and once on MXNet 1.9.1's Module in a worker
process of its virtual environment (MINIMX_MXNET_PYTHON, default
/work/venvs/mxnet191/bin/python). Each side reports its time per epoch (the
median of the epochs after the first, which includes binding) and the
validation accuracy at the end. One run, no alternation: the figures are
rough, and on a busy machine rougher still.

Run: python benchmarks/module_fit.py [--epochs 5] [--batch 32] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

import minimx as mx

MXNET_PYTHON = os.environ.get("MINIMX_MXNET_PYTHON", "/work/venvs/mxnet191/bin/python")
WORKER = Path(__file__).with_name("module_fit_mxnet_worker.py")
OPTIMIZER_PARAMS = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}


def convnet() -> mx.sym.Symbol:
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), pad=(1, 1),
                             num_filter=16, name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def write_inputs(folder: Path, batch: int) -> Path:
    """The data (`digits.npz`) and a checkpoint of the starting parameters (`start-*`)."""
    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)[:, None]
    order = np.random.RandomState(0).permutation(len(images))
    images, labels = images[order], bunch.target[order].astype(np.float32)
    np.savez(folder / "digits.npz", train_x=images[:1400], train_y=labels[:1400],
             val_x=images[1400:], val_y=labels[1400:])
    mod = mx.mod.Module(convnet())
    mod.bind(data_shapes=[("data", (batch, 1, 8, 8))], label_shapes=[("softmax_label", (batch,))])
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier(rnd_type="gaussian", magnitude=2))
    mod.save_checkpoint(str(folder / "start"), 0)
    return folder


def run_minimx(folder: Path, epochs: int, batch: int) -> dict:
    """What the MXNet worker does, on minimx (the two must stay alike)."""
    data = np.load(folder / "digits.npz")
    sym, args, auxs = mx.model.load_checkpoint(str(folder / "start"), 0)
    mod = mx.mod.Module(sym)
    train = mx.io.NDArrayIter(data["train_x"], data["train_y"], batch_size=batch)
    ends = [time.perf_counter()]
    mod.fit(train, optimizer="sgd", optimizer_params=OPTIMIZER_PARAMS, num_epoch=epochs,
            arg_params=args, aux_params=auxs,
            epoch_end_callback=lambda *_: ends.append(time.perf_counter()))
    val = mx.io.NDArrayIter(data["val_x"], data["val_y"], batch_size=batch)
    return {"epoch_seconds": np.diff(ends).tolist(),
            "val_acc": float((mod.predict(val).asnumpy().argmax(1) == data["val_y"]).mean())}


def run_mxnet(folder: Path, epochs: int, batch: int) -> dict | None:
    if not Path(MXNET_PYTHON).exists():
        print(f"MXNet: {MXNET_PYTHON} not found; its column is skipped")
        return None
    out = subprocess.run([MXNET_PYTHON, str(WORKER), str(folder), str(epochs), str(batch),
                          json.dumps(OPTIMIZER_PARAMS)], capture_output=True, text=True,
                         check=True, env={**os.environ, "MXNET_SUBGRAPH_BACKEND": "NONE"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both")
    opt = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(opt.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_inputs(Path(tmp), opt.batch)
        results = {"minimx": run_minimx(folder, opt.epochs, opt.batch),
                   "MXNet 1.9.1": run_mxnet(folder, opt.epochs, opt.batch)}
    print(f"digits convnet, Module.fit, SGD momentum, batch {opt.batch}, {opt.epochs} epochs, "
          f"OMP_NUM_THREADS={opt.threads}")
    print(f"{'':12} {'s/epoch':>8} {'samples/s':>10} {'val acc':>8}")
    for name, result in results.items():
        if result is None:
            continue
        per_epoch = statistics.median(result["epoch_seconds"][1:] or result["epoch_seconds"])
        print(f"{name:12} {per_epoch:8.3f} {1400 / per_epoch:10.0f} {result['val_acc']:8.3f}")


if __name__ == "__main__":
    sys.exit(main())
