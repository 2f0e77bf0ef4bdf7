"""Train a small conv net on synthetic MNIST-like digits with plain SGD.

No download: each of the ten classes is a fixed random stroke pattern on a
28x28 canvas; samples are shifted by up to two pixels, scaled in brightness
and noised. The net is conv-BN-relu-pool twice, then FullyConnected and
SoftmaxOutput. One executor (bound with ``simple_bind``) trains with
``forward(is_train=True)`` / ``backward()`` and an SGD update per batch, and
evaluates held-out data with ``forward(is_train=False)``. A plain-text
progress bar shows the running loss and accuracy; both improve epoch by epoch.

    python examples/train_mnist_like.py [--epochs 4] [--samples 3000] [--batch 50]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import minimx as mx

CLASSES, SIZE = 10, 28


def make_data(n: int, rng: np.random.Generator, templates: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """`n` noisy, shifted copies of the class templates, and their labels."""
    labels = rng.integers(0, CLASSES, n)
    images = np.empty((n, 1, SIZE, SIZE), np.float32)
    for i, label in enumerate(labels):
        dy, dx = rng.integers(-3, 4, 2)
        image = np.roll(templates[label], (dy, dx), axis=(0, 1)) * rng.uniform(0.7, 1.3)
        images[i, 0] = image + rng.normal(0, 1.0, (SIZE, SIZE))
    return images, labels.astype(np.float32)


def make_templates(rng: np.random.Generator) -> np.ndarray:
    """One pattern of a few random strokes (short thick segments) per class."""
    templates = np.zeros((CLASSES, SIZE, SIZE), np.float32)
    for t in templates:
        for _ in range(4):
            y, x = rng.integers(6, SIZE - 6, 2)
            dy, dx = rng.integers(-1, 2, 2)
            for step in range(8):
                cy, cx = np.clip([y + dy * step, x + dx * step], 1, SIZE - 2)
                t[cy - 1:cy + 2, cx - 1:cx + 2] = 1.0
    return templates


def conv_net() -> mx.sym.Symbol:
    x = mx.sym.Variable("data")
    for i, filters in enumerate((8, 16)):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                               name=f"conv{i}")
        x = mx.sym.BatchNorm(x, fix_gamma=False, name=f"bn{i}")
        x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
        x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=CLASSES, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax", normalization="batch")


def init_params(ex: mx.executor.Executor, rng: np.random.Generator) -> None:
    """Xavier-uniform weights, zero biases and betas, unit gammas and variances."""
    for name, arr in ex.arg_dict.items():
        if name.endswith("weight"):
            fan_in = int(np.prod(arr.shape[1:]))
            fan_out = arr.shape[0] * int(np.prod(arr.shape[2:]))
            bound = np.sqrt(6.0 / (fan_in + fan_out))
            arr[:] = rng.uniform(-bound, bound, arr.shape)
        elif name.endswith("gamma"):
            arr[:] = 1.0
        else:
            arr[:] = 0.0
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0


def progress(epoch: int, done: int, total: int, loss: float, acc: float, start: float) -> None:
    width = 30
    filled = width * done // total
    sys.stdout.write(f"\repoch {epoch} [{'#' * filled}{'.' * (width - filled)}] "
                     f"{done:5d}/{total} loss {loss:.4f} acc {acc:.3f} "
                     f"{time.perf_counter() - start:5.1f}s")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    opt = parser.parse_args()
    rng = np.random.default_rng(opt.seed)
    templates = make_templates(rng)
    train_x, train_y = make_data(opt.samples, rng, templates)
    test_x, test_y = make_data(opt.samples // 5, rng, templates)

    sym = conv_net()
    params = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    ex = sym.simple_bind(mx.cpu(), grad_req={n: "write" for n in params},
                         data=(opt.batch, 1, SIZE, SIZE), softmax_label=(opt.batch,))
    init_params(ex, rng)
    batches = opt.samples // opt.batch
    for epoch in range(1, opt.epochs + 1):
        order = rng.permutation(opt.samples)
        loss_sum, correct, seen, start = 0.0, 0, 0, time.perf_counter()
        for b in range(batches):
            idx = order[b * opt.batch:(b + 1) * opt.batch]
            probs = ex.forward(is_train=True, data=train_x[idx], softmax_label=train_y[idx])[0]
            ex.backward()
            for name in params:
                # Plain SGD, pushed to the engine like any NDArray arithmetic.
                ex.arg_dict[name] -= opt.lr * ex.grad_dict[name]
            p, y = probs.asnumpy(), train_y[idx].astype(int)
            loss_sum += -np.log(p[np.arange(len(y)), y] + 1e-12).sum()
            correct += int((p.argmax(1) == y).sum())
            seen += len(y)
            progress(epoch, seen, batches * opt.batch, loss_sum / seen, correct / seen, start)
        test_correct = 0
        for b in range(len(test_x) // opt.batch):
            sl = slice(b * opt.batch, (b + 1) * opt.batch)
            p = ex.forward(is_train=False, data=test_x[sl])[0].asnumpy()
            test_correct += int((p.argmax(1) == test_y[sl]).sum())
        tested = len(test_x) // opt.batch * opt.batch
        print(f"  held-out acc {test_correct / tested:.3f}")


if __name__ == "__main__":
    main()
